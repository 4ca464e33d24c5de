/* The model: torch.nn.RNN | LSTM | GRU (batch_first=True, num_layers=L, dropout=p) followed
 * by the linear head V applied at every time step, exactly as Darts' _RNNModule, with its
 * MSE loss; numerics follow PyTorch (DESIGN.md §4).
 *
 * This module is device-independent: the dimensions, the parameter table (PyTorch's names,
 * order and shapes), initialisation, loading, the layer stack and the dropout policy. The
 * arithmetic runs on a compute backend (include/tsrnn/compute.h): the model's parameters,
 * gradients and activations live in its memory, and the host sees them through
 * tsrnn_model_upload_params() / tsrnn_model_download_params() and friends.
 *
 * Shape letters, used in every shape comment of tsrnn:
 *   B  batch (samples of one step)        T  time steps of a window
 *   I  inputs of a layer (C at layer 0,   H  hidden units
 *      H above)                           L  layers
 *   G  gates: RNN 1, GRU 3 (r,z,n),       O  targets of the head (= C, the components)
 *      LSTM 4 (i,f,g,o)                   C  components of the series
 *   P  the head's outputs per target: a likelihood's parameters (Darts' nr_params; 1 without
 *      one), so the head V has O*P outputs
 *
 * Activations are time-major, (T, B, .), so one GEMM covers the input projection of all
 * steps and one covers each weight gradient; only the recurrence walks the steps.
 */
#ifndef TSRNN_MODEL_H
#define TSRNN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/config.h" /* enum tsrnn_model_kind, enum tsrnn_loss_kind */
#include "tsrnn/core.h"
#include "tsrnn/likelihood.h"
#include "tsrnn/torch_rng.h"

#define TSRNN_MODEL_MAX_LAYERS 64 /* the config's n_rnn_layers limit */
#define TSRNN_PARAM_NAME_MAX   40

/* "RNN", "LSTM", "GRU": PyTorch's module name, and Darts' RNNModel(model=...). */
const char *tsrnn_model_kind_name(enum tsrnn_model_kind kind);

struct tsrnn_model_dims {
    enum tsrnn_model_kind kind;
    size_t input_count;  /* I of layer 0 */
    size_t hidden_count; /* H */
    size_t layer_count;  /* L */
    size_t output_count; /* O: targets */
    double dropout;      /* between layers, training only: Darts' float, as torch gets it */
    size_t param_count;  /* P: the head's outputs per target (Darts' nr_params, a likelihood's
                            parameters, include/tsrnn/likelihood.h); 0 and 1 both mean one */
};

/* G for a model kind. */
size_t tsrnn_model_gate_count(enum tsrnn_model_kind kind);

/* O*P: the head's outputs (V.weight's rows), dims->param_count 0 counting as 1. */
size_t tsrnn_model_head_count(const struct tsrnn_model_dims *dims);

/* --- parameters ------------------------------------------------------------------------ */

/* One tensor of the state_dict: its PyTorch name, shape and place in the flat buffer. */
struct tsrnn_param_entry {
    char name[TSRNN_PARAM_NAME_MAX]; /* "rnn.weight_ih_l0", ..., "V.weight", "V.bias" */
    size_t rank;                     /* 1 or 2 */
    int64_t shape[2];
    size_t offset; /* in floats, into the flat buffer */
    size_t count;  /* floats */
};

/* PyTorch's state_dict order: per layer weight_ih, weight_hh, bias_ih, bias_hh; then V. */
struct tsrnn_param_table {
    size_t entry_count;
    struct tsrnn_param_entry entries[4 * TSRNN_MODEL_MAX_LAYERS + 2];
    size_t total_count; /* floats in the flat buffer */
    size_t rnn_count;   /* floats of the recurrent part ("rnn" in the summary) */
    size_t head_count;  /* floats of V */
};

void tsrnn_param_table_init(struct tsrnn_param_table *table, const struct tsrnn_model_dims *dims);

/* The entry called `name`, or NULL. */
const struct tsrnn_param_entry *tsrnn_param_table_find(const struct tsrnn_param_table *table,
                                                       const char *name);

/* Typed views into one flat buffer laid out by the table. The same layout serves the
 * parameters, their gradients and both Adam moments. */
struct tsrnn_layer_params {
    float *w_ih; /* (G*H, I) */
    float *w_hh; /* (G*H, H) */
    float *b_ih; /* (G*H) */
    float *b_hh; /* (G*H) */
};

struct tsrnn_model_params {
    struct tsrnn_layer_params layers[TSRNN_MODEL_MAX_LAYERS];
    float *v_w; /* (O, H) */
    float *v_b; /* (O) */
};

void tsrnn_model_params_view(struct tsrnn_model_params *view, const struct tsrnn_model_dims *dims,
                             float *flat);

/* The initial weights Darts' RNNModel(random_state=random_state).fit() creates, bit for bit:
 * PyTorch's default initialisation (every recurrent tensor U(-1/sqrt(H), 1/sqrt(H)), V's
 * weight and bias U(-1/sqrt(H), 1/sqrt(H))) in state_dict order, drawn from torch's generator
 * as Darts seeds it (tsrnn_darts_init_params() in include/tsrnn/torch_rng.h). */
void tsrnn_model_init_params(float *flat, const struct tsrnn_param_table *table,
                             const struct tsrnn_model_dims *dims, uint32_t random_state);

/* Loads every tensor of the table from a safetensors file by PyTorch name, checking that
 * each is present, F32 and of the right shape, and that the file holds no other tensor
 * (names under "optim." are skipped: they belong to checkpoints). TSRNN_ERR_DATA names the
 * file, the tensor, what was expected and what was found. */
enum tsrnn_status tsrnn_model_load_params(float *flat, const struct tsrnn_param_table *table,
                                          const char *path);

struct tsrnn_safetensors;

/* Copies the table's tensors named `prefix` + PyTorch name ("" for the weights,
 * "optim.exp_avg." for Adam's first moments) from a file already read (`path` names it in
 * messages), with the checks above; other tensors in the file are not looked at. */
enum tsrnn_status tsrnn_model_read_tensors(float *flat, const struct tsrnn_param_table *table,
                                           const struct tsrnn_safetensors *st, const char *prefix,
                                           const char *path);

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
