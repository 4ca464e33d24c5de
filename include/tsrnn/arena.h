/* A bump allocator for the activations of a training step: sized once, reset never, so a
 * step allocates nothing.
 *
 * Layouts are written once and run twice: first against a measuring arena (no memory; every
 * allocation returns NULL and only counts bytes), then against an arena of exactly the
 * measured size. Allocations are 64-byte aligned (a cache line, and enough for any SIMD
 * load) and zero-filled.
 */
#ifndef TSRNN_ARENA_H
#define TSRNN_ARENA_H

#include <stddef.h>

#include "tsrnn/core.h"

struct tsrnn_arena {
    unsigned char *base; /* NULL for a measuring arena */
    size_t capacity_nbytes;
    size_t used_nbytes;
};

/* A measuring arena: allocations count bytes and return NULL. */
void tsrnn_arena_measure(struct tsrnn_arena *arena);

/* Allocates `capacity_nbytes` zeroed bytes. TSRNN_ERR_NOMEM names `what` on failure. */
enum tsrnn_status tsrnn_arena_init(struct tsrnn_arena *arena, size_t capacity_nbytes,
                                   const char *what);

/* Frees the memory; accepts a zeroed or measuring arena. */
void tsrnn_arena_finish(struct tsrnn_arena *arena);

/* `count` floats, 64-byte aligned. Returns NULL on a measuring arena; on a real arena the
 * layout must fit (it was measured with the same dimensions), else NULL. */
float *tsrnn_arena_floats(struct tsrnn_arena *arena, size_t count);

#endif
