/* The model: torch.nn.RNN | LSTM | GRU (batch_first=True, num_layers=L, dropout=p) followed
 * by the linear head V applied at every time step, exactly as Darts' _RNNModule, with its
 * MSE loss. CPU reference implementation; numerics follow PyTorch (DESIGN.md §4).
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

#include "tsrnn/arena.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/rng.h"

#define TSRNN_MODEL_MAX_LAYERS 64 /* the config's n_rnn_layers limit */
#define TSRNN_PARAM_NAME_MAX   40

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

/* --- one layer's cache and the cells --------------------------------------------------- */

/* What a layer's forward keeps for its backward, for one window of T steps. */
struct tsrnn_layer_cache {
    const float *input; /* (T, B, I) the layer's input (after dropout of the layer below) */
    float *gates;       /* (T, B, G*H) activated gates; RNN: the new h */
    float *h;           /* (T+1, B, H) h[0] = initial state */
    float *c;           /* LSTM (T+1, B, H) c[0] = initial cell state; else NULL */
    float *aux;         /* LSTM tanh(c[t+1]); GRU W_hn h[t] + b_hn; (T, B, H); RNN NULL */
    float *w_ih_t;      /* (I, G*H) W_ih transposed at the start of each forward, so that */
    float *w_hh_t;      /* (H, G*H) the GEMM loops run along contiguous gate rows */
    float *w_hh_packed; /* W_hh^T packed for tsrnn_cpu_gemm_packed(); NULL unless the model
                           uses packed products */
};

/* One time step of a cell over a batch: views into a layer cache at step t. */
struct tsrnn_cell_step {
    float *gates;        /* (B, G*H) in: input projection + bias; out: activated gates */
    const float *hg;     /* (B, G*H) W_hh h_prev + b_hh */
    const float *h_prev; /* (B, H) */
    float *h;            /* (B, H) out */
    const float *c_prev; /* LSTM (B, H) */
    float *c;            /* LSTM (B, H) out */
    float *aux;          /* LSTM / GRU (B, H) out, see tsrnn_layer_cache */
};

/* The gradients of one step, (B, .). backward reads dh (and dc) and writes the rest. */
struct tsrnn_cell_grads {
    const float *dh; /* (B, H) dLoss/dh of this step's output (from above and from t+1) */
    float *dc;       /* LSTM (B, H) in: dLoss/dc from t+1; out: dLoss/dc_prev */
    float *d_xg;     /* (B, G*H) out: dLoss/d(input projection) */
    float *d_hg;     /* (B, G*H) out: dLoss/d(W_hh h_prev + b_hh); may alias d_xg (RNN, LSTM) */
    float *dh_prev;  /* (B, H) out: the part of dLoss/dh_prev that bypasses W_hh (GRU's z*dh;
                        zero for RNN and LSTM) */
};

/* The math of one cell kind: PyTorch's gate order and equations, forward and backward. */
struct tsrnn_cell {
    const char *name; /* "RNN", "LSTM", "GRU": PyTorch's module name */
    size_t gate_count;
    bool has_cell_state;  /* LSTM */
    bool separate_d_hg;   /* GRU: d_hg differs from d_xg */
    bool has_direct_path; /* GRU: dh_prev gets z * dh */
    void (*forward)(const struct tsrnn_cell_step *s, size_t batch_count, size_t hidden_count);
    void (*backward)(const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                     size_t batch_count, size_t hidden_count);
};

extern const struct tsrnn_cell tsrnn_cell_rnn;
extern const struct tsrnn_cell tsrnn_cell_lstm;
extern const struct tsrnn_cell tsrnn_cell_gru;

const struct tsrnn_cell *tsrnn_cell_for(enum tsrnn_model_kind kind);

/* --- the whole model ------------------------------------------------------------------- */

struct tsrnn_model_cache {
    size_t batch_count, step_count; /* B, T of the last forward */
    bool dropout_applied;           /* the last forward drew dropout masks */
    bool zero_initial_state;        /* the last forward started from h = 0 */
    bool packed_products;           /* the last forward used the packed recurrent products */
    struct tsrnn_layer_cache layers[TSRNN_MODEL_MAX_LAYERS];
    float *x;         /* (T, B, C) input, time-major */
    float *y;         /* (T, B, O) target, time-major */
    float *out;       /* (T, B, O) head output */
    float *mask;      /* (L-1, T, B, H) dropout masks (0 or 1/(1-p)); NULL without dropout */
    float *dropped;   /* (L-1, T, B, H) masked outputs feeding the next layer; NULL likewise */
    float *d_out;     /* (T, B, O) */
    float *d_h;       /* (T, B, H) dLoss/d(outputs of the layer being walked back) */
    float *d_xg;      /* (T, B, G*H) */
    float *d_hg;      /* (T, B, G*H) GRU; aliases d_xg otherwise */
    float *d_w_ih_t;  /* (I, G*H) dW_ih^T gathered step by step for layers with few inputs */
    float *hg;        /* (B, G*H) scratch: W_hh h_prev + b_hh */
    float *dh_step;   /* (B, H) scratch: dLoss/dh at the current step */
    float *dh_carry;  /* (B, H) dLoss/dh_prev flowing from step t to t-1 */
    float *dh_direct; /* (B, H) scratch: GRU's bypass part of dLoss/dh_prev */
    float *dc;        /* (B, H) LSTM dLoss/dc running backwards */
    float *w_hh_packed_bwd; /* W_hh packed for the backward's d_hg W_hh; NULL likewise */
    float *state_h;         /* (L, B, H) carried state between predict steps */
    float *state_c;         /* (L, B, H) LSTM, likewise; NULL otherwise */
};

struct tsrnn_model {
    struct tsrnn_model_dims dims;
    const struct tsrnn_cell *cell;
    struct tsrnn_param_table table;
    float *params; /* (table.total_count) */
    float *grads;  /* (table.total_count) */
    struct tsrnn_model_params p, g;
    size_t batch_capacity, step_capacity; /* the largest B and T the cache holds */
    bool packed_recurrence; /* large H on an AVX2 + FMA CPU: the per-step products use packed
                               weights (tsrnn_cpu_gemm_packed) instead of BLAS or the loops */
    struct tsrnn_arena arena;
    struct tsrnn_model_cache cache;
};

/* Allocates parameters (zero), gradients and a cache for batches up to batch_capacity
 * windows of up to step_capacity steps. */
enum tsrnn_status tsrnn_model_init(struct tsrnn_model *model, const struct tsrnn_model_dims *dims,
                                   size_t batch_capacity, size_t step_capacity);

/* Frees everything; accepts a zeroed model. */
void tsrnn_model_finish(struct tsrnn_model *model);

/* Forward over a batch of B windows of T steps: x (B, T, C) batch-first as the dataset
 * gathers it. With `training`, dropout between layers draws its masks from `dropout_rng`
 * (which may be NULL without training or without dropout). The initial states are zero
 * unless `h0` (L, B, H) (and for LSTM `c0` (L, B, H)) is given. The outputs stay in
 * model->cache.out (T, B, O). */
void tsrnn_model_forward(struct tsrnn_model *model, const float *x, size_t batch_count,
                         size_t step_count, bool training, struct tsrnn_rng *dropout_rng,
                         const float *h0, const float *c0);

/* The MSE of the last forward against y (B, T, O), PyTorch's nn.MSELoss() (mean over
 * B*T*O). Keeps the time-major target for tsrnn_model_backward(). */
float tsrnn_model_loss(struct tsrnn_model *model, const float *y);

/* Each window's sum of squared errors of the last forward against y (B, T, O), in double:
 * se[b] for window b, independent of the other windows of the batch, so validation can add
 * them up in one fixed order however the windows were spread over batches and ranks. */
void tsrnn_model_window_squared_errors(const struct tsrnn_model *model, const float *y, double *se);

/* Backward of the last forward + loss: overwrites model->grads with dLoss/dparams. */
void tsrnn_model_backward(struct tsrnn_model *model);

/* The final states of the last forward: h (L, B, H) and for LSTM c (L, B, H); either
 * pointer may be NULL. */
void tsrnn_model_final_state(const struct tsrnn_model *model, float *h, float *c);

/* Darts' RNNModel.predict for one series: feeds `context` (T0, C) from zero state, takes the
 * output of the last step as the first forecast, then feeds each forecast back as the next
 * input carrying the hidden state, `horizon` times. forecast is (horizon, O). Needs O == C
 * and a cache with room for B = 1 and T = T0. */
void tsrnn_model_predict(struct tsrnn_model *model, float *forecast, const float *context,
                         size_t context_count, size_t horizon);

#endif
