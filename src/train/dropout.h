/* Where a training step's dropout masks come from, private to src/train/: Darts' fit() draws
 * them inside each step from PyTorch's global generator, between the DataLoaders' own draws
 * (include/tsrnn/torch_rng.h, struct tsrnn_darts_fit), so the stream of step s of epoch e
 * is a position in that generator, known from the config alone: a resumed run, and every
 * rank of a data-parallel one, finds it without saved state.
 *
 * Data-parallel: each rank takes the rows of one process's batch of W * B windows that it
 * holds (tsrnn_model_dropout()), so the world draws what one process with batch W * B would
 * (docs/distributed.md). */
#ifndef TSRNN_TRAIN_DROPOUT_H
#define TSRNN_TRAIN_DROPOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/model.h"
#include "tsrnn/torch_rng.h"

struct tsrnn_dropout_stream {
    struct tsrnn_darts_fit fit; /* epoch_draws: every rank's windows of an epoch */
    uint64_t window_draws;      /* one window's: tsrnn_model_dropout_draws() */
    size_t rank, world_size;
    struct tsrnn_mt19937 g; /* Darts' global generator, at the next step's first draw */
    int64_t epoch;          /* the epoch g is in; -1: not positioned */
    bool whole_epoch;       /* every batch of `epoch` has drawn (g is at its end) */
};

/* A stream for a model whose windows draw `window_draws` each (0: no dropout: nothing is ever
 * drawn), `windows_per_rank` windows per epoch on each of `world_size` ranks. `fit` without
 * its epoch_draws, which this fills in. */
void tsrnn_dropout_stream_init(struct tsrnn_dropout_stream *s, const struct tsrnn_darts_fit *fit,
                               uint64_t window_draws, size_t windows_per_rank, size_t rank,
                               size_t world_size);

/* Positions the stream at the first draw of epoch `epoch` after `windows_done` of this rank's
 * windows (whole batches) have trained: from the previous epoch's end in O(1), else from the
 * seed (O(position / 624)). */
void tsrnn_dropout_stream_seek(struct tsrnn_dropout_stream *s, int64_t epoch, size_t windows_done);

/* The masks of the next step of `batch_count` windows of T steps (tsrnn_model_dropout() from
 * the stream); `last_batch`: the epoch's last, after which the stream is at its end. NULL
 * without dropout. */
const float *tsrnn_dropout_stream_next(struct tsrnn_dropout_stream *s, struct tsrnn_model *model,
                                       size_t batch_count, size_t step_count, bool last_batch);

#endif
