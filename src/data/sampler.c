/* Per-epoch, per-rank batches with PyTorch DistributedSampler semantics
 * (include/tsrnn/data.h; reference distributed.md "DistributedSampler"). */
#include "tsrnn/data.h"

#include <stdlib.h>
#include <string.h>

#include "tsrnn/torch_rng.h"

enum tsrnn_status tsrnn_sampler_init(struct tsrnn_sampler *s, size_t sample_count,
                                     size_t batch_size, const struct tsrnn_shuffle *shuffle,
                                     size_t rank, size_t world_size)
{
    memset(s, 0, sizeof(*s));
    if (world_size == 0 || rank >= world_size || batch_size == 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "sampler: rank %zu, world size %zu, batch_size %zu; accepted: "
                           "0 <= rank < world size, batch_size >= 1",
                           rank, world_size, batch_size);
    s->sample_count = sample_count;
    s->batch_size = batch_size;
    s->rank = rank;
    s->world_size = world_size;
    s->shuffle = shuffle != NULL;
    if (shuffle)
        s->order_source = *shuffle;
    s->generator_epoch = UINT64_MAX;
    s->local_count = (sample_count + world_size - 1) / world_size;
    s->order = malloc((sample_count ? sample_count : 1) * sizeof(*s->order));
    s->local = malloc((s->local_count ? s->local_count : 1) * sizeof(*s->local));
    if (s->order == NULL || s->local == NULL) {
        tsrnn_sampler_finish(s);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a sampler of %zu samples",
                           sample_count);
    }
    tsrnn_sampler_set_epoch(s, 0);
    return TSRNN_OK;
}

void tsrnn_sampler_finish(struct tsrnn_sampler *s)
{
    if (s == NULL)
        return;
    free(s->order);
    free(s->local);
    memset(s, 0, sizeof(*s));
}

void tsrnn_sampler_set_epoch(struct tsrnn_sampler *s, uint64_t epoch)
{
    size_t n = s->sample_count;
    if (n == 0)
        return;
    if (s->shuffle) {
        /* The next epoch continues from the last one's generator; any other jumps there. */
        const struct tsrnn_shuffle *src = &s->order_source;
        if (s->generator_epoch != UINT64_MAX && epoch == s->generator_epoch + 1)
            tsrnn_darts_loader_next_epoch(&s->generator, src->validation, src->epoch_draws);
        else
            tsrnn_darts_loader_generator(&s->generator, src->random_state, src->param_count, epoch,
                                         src->validation, src->sanity_check_draws,
                                         src->epoch_draws);
        tsrnn_torch_random_sampler(s->order, n, &s->generator);
        s->generator_epoch = epoch;
    } else {
        for (size_t i = 0; i < n; i++)
            s->order[i] = i;
    }
    /* Padded position p holds order[p % n]; rank r owns positions r, r + W, ... */
    for (size_t k = 0; k < s->local_count; k++)
        s->local[k] = s->order[(s->rank + k * s->world_size) % n];
}

size_t tsrnn_sampler_batch_count(const struct tsrnn_sampler *s)
{
    return (s->local_count + s->batch_size - 1) / s->batch_size;
}

size_t tsrnn_sampler_batch(const struct tsrnn_sampler *s, size_t batch_idx, const size_t **idx)
{
    size_t first = batch_idx * s->batch_size;
    *idx = s->local + (first < s->local_count ? first : s->local_count);
    if (first >= s->local_count)
        return 0;
    size_t count = s->local_count - first;
    return count < s->batch_size ? count : s->batch_size;
}
