/* What a run needs in memory, sized before anything big is allocated, and what the machine has
 * (src/train/memory.c; the machine's side, tsrnn_memory_available(), is include/tsrnn/core.h).
 *
 * A model too large for the machine used to allocate until the kernel killed it (LSTM
 * hidden_dim = 20000: 41.6 s, then exit 137 at 24.3 GB, no message), and batch buffers were
 * sized by batch_size whatever the windows (batch_size = 1048576 on AirPassengers' 101
 * windows: 9.1 GB). Here the trainer and tsrnn-predict estimate their need from the model's
 * dimensions, per backend, compare it with the memory this process can have, and refuse with
 * TSRNN_ERR_USAGE (exit 2) naming the setting that drives the largest part.
 *
 * The estimate is a bound: it follows the buffers the code allocates (src/compute/cpu/model.c's
 * workspace layout, the trainer's batches, the most snapshots the checkpoint writer can
 * hold), rounded up where a choice depends on the CPU (the packed recurrent weights are
 * counted whenever a layer is large enough to use them). tests/test_memory.c holds it against
 * the peak memory of real runs (never below, at most twice). It leaves out what does not grow with the model: the program, its libraries and the
 * data set (read before the check, and counted by the memory it already holds).
 */
#ifndef TSRNN_MEMORY_H
#define TSRNN_MEMORY_H

#include <stddef.h>

#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/model.h"

/* Bytes, in double so that no configuration can overflow them. */
struct tsrnn_memory_need {
    double weights_nbytes;     /* parameters and gradients */
    double optimizer_nbytes;   /* Adam's / AdamW's two moments, SGD's momentum */
    double activations_nbytes; /* the workspace: B x T activations of every layer, their
                                  gradients, the weights' transposed and packed copies */
    double batches_nbytes;     /* host: the input and target batches, validation errors */
    double copies_nbytes;      /* host: checkpoint snapshots or a resumed checkpoint, the
                                  clipping copy, the initial weights */
    double forecast_nbytes;    /* tsrnn-predict: the forecasts' and backtests' values */
    double device_nbytes;      /* of the above, what lives on a GPU (0 on the CPU) */
    double host_nbytes;        /* the rest */
};

/* The largest batch a rank of a world of `world_size` can meet: batch_size, or the windows
 * it holds when there are fewer (ceil(count / world_size) of the training or the validation
 * windows). Buffers are sized by it. */
size_t tsrnn_train_batch_capacity(const struct tsrnn_config *cfg, const struct tsrnn_dataset *ds,
                                  size_t world_size);

/* A training run's need: a model of `dims` on backend `kind`, batches of batch_capacity
 * windows of T steps, with cfg's optimizer, clipping, checkpoints and resume. */
void tsrnn_memory_need_training(struct tsrnn_memory_need *need, const struct tsrnn_config *cfg,
                                const struct tsrnn_dataset *ds, const struct tsrnn_model_dims *dims,
                                enum tsrnn_compute_kind kind, size_t batch_capacity);

/* tsrnn-predict's need: a model of `dims` (no optimizer) for batches of batch_capacity
 * windows of icl steps on backend `kind`, and `forecast_values` floats of forecasts (with
 * their time stamps, one per C values). */
void tsrnn_memory_need_predict(struct tsrnn_memory_need *need, const struct tsrnn_model_dims *dims,
                               enum tsrnn_compute_kind kind, size_t batch_capacity, size_t icl,
                               double forecast_values);

/* Compares `need` with the host memory (`processes` processes of the run on this machine,
 * each needing as much) and, when `compute` is a GPU whose driver says, with that GPU's free
 * memory. TSRNN_ERR_USAGE when it does not fit: "the run needs about X GB (...) but ... has Y
 * GB available (source); <what drives it>; `advice`". `advice` names the setting that drives
 * the largest part and what to do (the caller knows its settings). */
enum tsrnn_status tsrnn_memory_check(const struct tsrnn_memory_need *need,
                                     struct tsrnn_compute *compute, size_t processes,
                                     const char *what, const char *advice);

/* The trainer's check: its need, the machine's memory, and a message naming [model]
 * hidden_dim / n_rnn_layers or [training] batch_size / [model] training_length with their
 * origins, whichever part is largest. `local_processes`: the run's workers on this machine. */
enum tsrnn_status tsrnn_train_check_memory(const struct tsrnn_config *cfg,
                                           const struct tsrnn_dataset *ds,
                                           const struct tsrnn_model_dims *dims,
                                           struct tsrnn_compute *compute, size_t batch_capacity,
                                           size_t local_processes);

#endif
