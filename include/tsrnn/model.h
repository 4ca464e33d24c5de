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
 *   G  gates: RNN 1, GRU 3 (r,z,n),       O  outputs of the head (= C, the targets)
 *      LSTM 4 (i,f,g,o)                   C  components of the series
 *
 * Activations are time-major, (T, B, .), so one GEMM covers the input projection of all
 * steps and one covers each weight gradient; only the recurrence walks the steps.
 */
#ifndef TSRNN_MODEL_H
#define TSRNN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/compute.h"
#include "tsrnn/core.h"
#include "tsrnn/rng.h"

#define TSRNN_MODEL_MAX_LAYERS 64 /* the config's n_rnn_layers limit */
#define TSRNN_PARAM_NAME_MAX   40

enum tsrnn_model_kind {
    TSRNN_MODEL_RNN,
    TSRNN_MODEL_LSTM,
    TSRNN_MODEL_GRU,
};

/* "RNN", "LSTM", "GRU": PyTorch's module name, and Darts' RNNModel(model=...). */
const char *tsrnn_model_kind_name(enum tsrnn_model_kind kind);

struct tsrnn_model_dims {
    enum tsrnn_model_kind kind;
    size_t input_count;  /* I of layer 0 */
    size_t hidden_count; /* H */
    size_t layer_count;  /* L */
    size_t output_count; /* O */
    float dropout;       /* between layers, training only */
};

/* G for a model kind. */
size_t tsrnn_model_gate_count(enum tsrnn_model_kind kind);

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

struct tsrnn_workspace; /* the backend's activations (src/compute/backend.h) */

/* The training loss ([training] loss_fn). */
enum tsrnn_loss_kind {
    TSRNN_LOSS_MSE, /* nn.MSELoss(): the default, 0 */
    TSRNN_LOSS_L1,  /* nn.L1Loss() */
};

struct tsrnn_model {
    struct tsrnn_model_dims dims;
    enum tsrnn_loss_kind loss; /* what tsrnn_model_loss/_backward/_window_errors compute */
    struct tsrnn_param_table table;
    struct tsrnn_compute *compute; /* the device it runs on; not owned */
    struct tsrnn_workspace *ws;
    /* Device memory (include/tsrnn/compute.h). grads holds table.total_count gradients, then
     * the batch loss (tsrnn_model_loss) and a stop flag: the one buffer that data-parallel
     * training allreduces per step. */
    float *params;                        /* (table.total_count) */
    float *grads;                         /* (table.total_count + 2) */
    struct tsrnn_model_params p, g;       /* typed views into params and grads */
    size_t batch_capacity, step_capacity; /* the largest B and T the workspace holds */
    size_t batch_count, step_count;       /* B, T of the batch loaded */
    /* Dropout between layers, drawn on the host for one layer's input at a time: (T, B, H),
     * 0 or 1/(1-p); NULL for a model without dropout. Holds the last layer's draw. */
    float *dropout_mask;
    bool dropout_applied; /* the last forward drew masks */
};

/* The index of the loss and of the stop flag in model->grads. */
#define TSRNN_MODEL_LOSS_SLOT(model) ((model)->table.total_count)
#define TSRNN_MODEL_STOP_SLOT(model) ((model)->table.total_count + 1)

/* Allocates parameters and gradients (zero) on `compute` and a workspace for batches up to
 * batch_capacity windows of up to step_capacity steps. TSRNN_ERR_USAGE when the activations
 * cannot fit, TSRNN_ERR_NOMEM, or the device's failure. */
enum tsrnn_status tsrnn_model_init(struct tsrnn_model *model, struct tsrnn_compute *compute,
                                   const struct tsrnn_model_dims *dims, size_t batch_capacity,
                                   size_t step_capacity);

/* Frees everything; accepts a zeroed model. */
void tsrnn_model_finish(struct tsrnn_model *model);

/* The parameters, (table.total_count) floats in the table's layout, from or to the host. */
enum tsrnn_status tsrnn_model_upload_params(struct tsrnn_model *model, const float *params);
enum tsrnn_status tsrnn_model_download_params(struct tsrnn_model *model, float *params);

/* Loads one batch of B windows of T steps: x (B, T, C) and, for the loss, y (B, T, O) (may
 * be NULL), batch-first as the dataset gathers them. */
enum tsrnn_status tsrnn_model_load_batch(struct tsrnn_model *model, const float *x, const float *y,
                                         size_t batch_count, size_t step_count);

/* Forward over the batch loaded, from zero initial states. With `training`, dropout between
 * layers draws its masks from `dropout_rng` (which may be NULL without training or without
 * dropout). */
enum tsrnn_status tsrnn_model_forward(struct tsrnn_model *model, bool training,
                                      struct tsrnn_rng *dropout_rng);

/* The loss of the last forward against the batch's y, PyTorch's nn.MSELoss() or, with
 * model->loss = TSRNN_LOSS_L1, nn.L1Loss() (mean over B*T*O), into model->grads' loss slot
 * and *loss. TSRNN_ERR_USAGE when the backend has no L1Loss. */
enum tsrnn_status tsrnn_model_loss(struct tsrnn_model *model, float *loss);

/* TSRNN_ERR_USAGE when model->loss needs ops the compute backend lacks (L1Loss is optional). */
enum tsrnn_status tsrnn_model_check_loss(const struct tsrnn_model *model);

/* Each window's sum of squared errors of the last forward against y, in double: se[b] for
 * window b, independent of the other windows of the batch, so validation can add them up in
 * one fixed order however the windows were spread over batches and ranks. */
enum tsrnn_status tsrnn_model_window_squared_errors(struct tsrnn_model *model, double *se);

/* The same for the model's loss: squared errors (MSELoss) or absolute errors (L1Loss). */
enum tsrnn_status tsrnn_model_window_errors(struct tsrnn_model *model, double *sums);

/* Backward of the last forward + loss: overwrites the gradients with dLoss/dparams. */
enum tsrnn_status tsrnn_model_backward(struct tsrnn_model *model);

/* grads, loss and stop flag *= scale (1/W after the allreduce; nothing for 1), and *finite
 * = every one of them is finite. */
enum tsrnn_status tsrnn_model_scale_grads(struct tsrnn_model *model, float scale, bool *finite);

/* The outputs of step t of the last forward, (B, O), to the host. */
enum tsrnn_status tsrnn_model_download_output(struct tsrnn_model *model, size_t t, float *out);

struct tsrnn_adam;

/* Whether the model's backend runs the training step as one program (pjrt): then
 * tsrnn_model_train_step() replaces forward + loss + backward + Adam, and the gradients are
 * not materialised (nor allreduced across processes: replicas live inside the program). */
bool tsrnn_model_fused_step(const struct tsrnn_model *model);

/* One optimizer step on the batch loaded, as one program: dropout masks drawn from
 * dropout_rng in the order tsrnn_model_forward() draws them, the MSE into *loss, *finite =
 * every gradient was finite (when not, nothing was updated), Adam's step counted. Only for a
 * model whose tsrnn_model_fused_step() is true. */
enum tsrnn_status tsrnn_model_train_step(struct tsrnn_model *model, struct tsrnn_adam *adam,
                                         struct tsrnn_rng *dropout_rng, float *loss, bool *finite);

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
