/* The dropout masks' stream in Darts' global generator (src/train/dropout.h). */
#include "dropout.h"

void tsrnn_dropout_stream_init(struct tsrnn_dropout_stream *s, const struct tsrnn_darts_fit *fit,
                               uint64_t window_draws, size_t windows_per_rank, size_t rank,
                               size_t world_size)
{
    *s = (struct tsrnn_dropout_stream){ .fit = *fit, .window_draws = window_draws };
    s->fit.epoch_draws = window_draws * windows_per_rank * world_size;
    s->rank = rank;
    s->world_size = world_size;
    s->epoch = -1;
}

void tsrnn_dropout_stream_seek(struct tsrnn_dropout_stream *s, int64_t epoch, size_t windows_done)
{
    if (s->window_draws == 0)
        return;
    if (windows_done == 0 && s->whole_epoch && epoch == s->epoch + 1) {
        tsrnn_mt19937_discard(&s->g, tsrnn_darts_fit_between_epochs(&s->fit));
    } else {
        tsrnn_torch_manual_seed(&s->g, tsrnn_darts_fit_seed(s->fit.random_state));
        tsrnn_mt19937_discard(&s->g, tsrnn_darts_fit_epoch_start(&s->fit, (uint64_t)epoch) +
                                         s->window_draws * windows_done * s->world_size);
    }
    s->epoch = epoch;
    s->whole_epoch = false;
}

const float *tsrnn_dropout_stream_next(struct tsrnn_dropout_stream *s, struct tsrnn_model *model,
                                       size_t batch_count, size_t step_count, bool last_batch)
{
    if (s->window_draws == 0)
        return NULL;
    const float *masks =
        tsrnn_model_dropout(model, batch_count, step_count, &s->g, s->rank, s->world_size);
    s->whole_epoch = last_batch;
    return masks;
}
