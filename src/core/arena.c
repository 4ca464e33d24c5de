/* Bump allocator for activations (include/tsrnn/arena.h). */
#include <stdlib.h>
#include <string.h>

#include "tsrnn/arena.h"

#define ARENA_ALIGN_NBYTES 64

void tsrnn_arena_measure(struct tsrnn_arena *arena)
{
    *arena = (struct tsrnn_arena){ 0 };
}

enum tsrnn_status tsrnn_arena_init(struct tsrnn_arena *arena, size_t capacity_nbytes,
                                   const char *what)
{
    *arena = (struct tsrnn_arena){ 0 };
    size_t rounded =
        (capacity_nbytes + ARENA_ALIGN_NBYTES - 1) / ARENA_ALIGN_NBYTES * ARENA_ALIGN_NBYTES;
    if (rounded == 0)
        rounded = ARENA_ALIGN_NBYTES;
    arena->base = aligned_alloc(ARENA_ALIGN_NBYTES, rounded);
    if (arena->base == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory: %s needs %zu bytes", what, rounded);
    memset(arena->base, 0, rounded);
    arena->capacity_nbytes = rounded;
    return TSRNN_OK;
}

void tsrnn_arena_finish(struct tsrnn_arena *arena)
{
    if (arena == NULL)
        return;
    free(arena->base);
    *arena = (struct tsrnn_arena){ 0 };
}

float *tsrnn_arena_floats(struct tsrnn_arena *arena, size_t count)
{
    size_t nbytes = count * sizeof(float);
    size_t start = arena->used_nbytes;
    size_t padded = (nbytes + ARENA_ALIGN_NBYTES - 1) / ARENA_ALIGN_NBYTES * ARENA_ALIGN_NBYTES;

    arena->used_nbytes = start + padded;
    if (arena->base == NULL || arena->used_nbytes > arena->capacity_nbytes)
        return NULL;
    return (float *)(arena->base + start);
}
