/* The network as data: what a model is, below the compute door. torch.nn.RNN | LSTM | GRU
 * (batch_first=True, num_layers=L, dropout=p) followed by the linear head V applied at every
 * time step, as Darts' _RNNModule: its kind and dimensions, the parameter table (PyTorch's
 * state_dict names, order and shapes), typed views into the flat buffers the table lays out,
 * PyTorch's default initialisation, and the training losses; Darts' likelihoods are
 * include/tsrnn/likelihood.h, of the same module (src/nn/).
 *
 * No device and no memory of its own: the compute backends (include/tsrnn/compute.h) run
 * what this describes, and the model (include/tsrnn/model.h) drives them.
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
#ifndef TSRNN_NN_H
#define TSRNN_NN_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/config.h" /* enum tsrnn_model_kind, enum tsrnn_loss_kind: the choices of its keys */

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

#endif
