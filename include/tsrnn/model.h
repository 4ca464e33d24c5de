/* The model of one rank: torch.nn.RNN | LSTM | GRU (batch_first=True, num_layers=L,
 * dropout=p) followed by the linear head V applied at every time step, exactly as Darts'
 * _RNNModule, with its loss; numerics follow PyTorch (DESIGN.md §4).
 *
 * What the model is (its kind, dimensions, parameter table and views, initialisation, losses
 * and likelihoods) is include/tsrnn/nn.h, below the compute door; this module is the model
 * running on a compute backend (include/tsrnn/compute.h): its parameters, gradients and
 * activations live in the backend's memory, and the host sees them through
 * tsrnn_model_upload_params() / tsrnn_model_download_params() and friends. The dropout
 * masks are drawn here, on the host. Shape letters: include/tsrnn/nn.h.
 */
#ifndef TSRNN_MODEL_H
#define TSRNN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"
#include "tsrnn/likelihood.h"
#include "tsrnn/nn.h"
#include "tsrnn/torch_rng.h"

/* --- the whole model ------------------------------------------------------------------- */

struct tsrnn_compute;   /* include/tsrnn/compute.h */
struct tsrnn_workspace; /* the device's activations, gradients and step results (compute.h) */

/* How many training steps may pass between two reads of their results (the trainer reads at
 * least this often: include/tsrnn/compute.h tsrnn_compute_step_results). */
#define TSRNN_MODEL_RESULTS_CAPACITY 1024

struct tsrnn_model {
    struct tsrnn_model_dims dims;
    enum tsrnn_loss_kind loss;          /* what tsrnn_model_evaluate / _forward_backward compute */
    float loss_delta;                   /* its argument: HuberLoss's delta, SmoothL1Loss's beta */
    struct tsrnn_likelihood likelihood; /* kind NONE: a point forecast (tsrnn_model_likelihood) */
    struct tsrnn_param_table table;
    struct tsrnn_compute *compute; /* the device it runs on; not owned */
    struct tsrnn_workspace *ws;
    float *params;                        /* device (table.total_count) */
    struct tsrnn_model_params p;          /* typed views into params */
    size_t batch_capacity, step_capacity; /* the largest B and T the workspace holds */
    /* Dropout between layers, drawn on the host for a training step: (L-1, T, B, H), each 0
     * or 1/(1-p), at capacity; NULL for a model without dropout. */
    float *dropout_masks;
};

/* Allocates the parameters (zero) on `compute` and a workspace for batches up to
 * batch_capacity windows of up to step_capacity steps. TSRNN_ERR_USAGE when the activations
 * cannot fit, TSRNN_ERR_NOMEM, or the device's failure. */
enum tsrnn_status tsrnn_model_init(struct tsrnn_model *model, struct tsrnn_compute *compute,
                                   const struct tsrnn_model_dims *dims, size_t batch_capacity,
                                   size_t step_capacity);

/* Frees everything; accepts a zeroed model. */
void tsrnn_model_finish(struct tsrnn_model *model);

/* Makes the model Darts' RNNModel(likelihood=...): its loss becomes the likelihood's
 * (TSRNN_LOSS_LIKELIHOOD), its forecasts draw from it. The dims' param_count must be the
 * likelihood's P. TSRNN_ERR_USAGE on a backend without likelihoods (the message says so). */
enum tsrnn_status tsrnn_model_likelihood(struct tsrnn_model *model,
                                         const struct tsrnn_likelihood *lik);

/* The parameters, (table.total_count) floats in the table's layout, from or to the host: the
 * only way they cross (checkpoints, broadcasts of rank 0's weights, forecasts' callers). */
enum tsrnn_status tsrnn_model_upload_params(struct tsrnn_model *model, const float *params);
enum tsrnn_status tsrnn_model_download_params(struct tsrnn_model *model, float *params);

/* The inverted dropout masks of one training step of B windows of T steps, as
 * nn.RNN|LSTM|GRU(dropout=p) draws them in training on a CPU (aten's dropout: noise =
 * bernoulli_(1 - p), then noise / (1 - p) in float): for each layer output but the top one,
 * (T, B', H) in memory order, one tsrnn_torch_uniform_double() from `g` per element, kept
 * (1 / (1 - p)) when it is below 1 - p, else 0. B' = world_size * B: the batch of one
 * process that a data-parallel world shares out (DistributedSampler: this rank's row i is its
 * row rank + world_size * i); the other ranks' rows are skipped in the stream, so every rank
 * holds the masks that one process would draw for its rows. Layer 1's input first, (L-1, T,
 * B, H); host memory, valid until the next call; NULL for a model without dropout (nothing
 * drawn). Draws tsrnn_model_dropout_draws() outputs. */
const float *tsrnn_model_dropout(struct tsrnn_model *model, size_t batch_count, size_t step_count,
                                 struct tsrnn_mt19937 *g, size_t rank, size_t world_size);

/* The outputs of torch's generator one window of T steps takes in tsrnn_model_dropout():
 * 2 (L-1) T H with dropout, else 0. */
uint64_t tsrnn_model_dropout_draws(const struct tsrnn_model_dims *dims, size_t step_count);

/* Validation: the forward over x (B, T, C) without dropout, from zero states, and each
 * window's sum of the loss's errors against y (B, T, O) in double into sums (B): squared
 * errors (MSELoss), absolute errors (L1Loss) or the elements' Huber / smooth L1 losses, each
 * window independent of the others, so that validation adds them up in one fixed order
 * however the windows were spread. */
enum tsrnn_status tsrnn_model_evaluate(struct tsrnn_model *model, const float *x, const float *y,
                                       size_t batch_count, size_t step_count, double *sums);

/* The same windows of the last tsrnn_model_evaluate() under another loss (`delta` its
 * argument), without a forward: a validation metric beside the loss (torchmetrics'
 * MeanAbsoluteError: L1Loss's sums; MeanSquaredError: MSELoss's). */
enum tsrnn_status tsrnn_model_window_errors(struct tsrnn_model *model, enum tsrnn_loss_kind loss,
                                            float delta, double *sums);

/* For tests and gradient checks: the forward over x (with dropout drawn from dropout_g when
 * it is not NULL, as one process's tsrnn_model_dropout()), the loss against y into *loss, and
 * the backward: the gradients (tsrnn_model_download_grads) of the loss. */
enum tsrnn_status tsrnn_model_forward_backward(struct tsrnn_model *model, const float *x,
                                               const float *y, size_t batch_count,
                                               size_t step_count, struct tsrnn_mt19937 *dropout_g,
                                               float *loss);
enum tsrnn_status tsrnn_model_download_grads(struct tsrnn_model *model, float *grads);

/* The head's outputs of step t of the last forward, (B, O*P), to the host. */
enum tsrnn_status tsrnn_model_download_output(struct tsrnn_model *model, size_t t, float *out);

/* Darts' RNNModel.predict for B windows at once (one series' forecast, or Darts' batches of
 * historical forecasts): feeds `context` (B, T0, C) from zero state, takes the output of the
 * last step as the first forecast, then feeds each forecast back as the next input carrying
 * the hidden state, `horizon` times. forecast is (horizon, B, O), time-major, host memory;
 * each window's rows depend on its context alone. Needs O == C and a workspace with room for
 * B and T = T0. */
enum tsrnn_status tsrnn_model_predict(struct tsrnn_model *model, float *forecast,
                                      const float *context, size_t batch_count,
                                      size_t context_count, size_t horizon);

/* The same with K = I - O future covariates: `context` is (B, T0, I), each row (y[t],
 * cov[t+1]); step k >= 1 feeds each window's (forecast[k-1], covariates[k-1]),
 * `covariates` (horizon - 1, B, K) time-major like the forecast, the covariates of the
 * steps after the first forecast, as Darts' _RNNModule concatenates the next future
 * covariate to the last prediction. */
enum tsrnn_status tsrnn_model_predict_covariates(struct tsrnn_model *model, float *forecast,
                                                 const float *context, size_t batch_count,
                                                 size_t context_count, const float *covariates,
                                                 size_t horizon);

#endif
