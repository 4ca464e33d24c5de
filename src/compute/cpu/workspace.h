/* Private to src/compute/cpu/: the CPU backend's workspace (the door's workspace of the CPU
 * backend), laid out by model.c, which runs the recurrent layers and the head over it; the
 * losses (loss.c) read its outputs and targets and write the head's output gradients. */
#ifndef TSRNN_COMPUTE_CPU_WORKSPACE_H
#define TSRNN_COMPUTE_CPU_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "cpu.h"
#include "tsrnn/arena.h"

/* What a layer's forward keeps for its backward, for one window of T steps. */
struct layer_cache {
    const float *input;         /* (T, B, I) the layer's input (after dropout of the layer below) */
    bool input_masked;          /* input = the layer below's outputs times mask */
    float *mask;                /* l > 0 with dropout: (T, B, H) 0 or 1/(1-p); else NULL */
    float *dropped;             /* likewise: the masked outputs of the layer below */
    float *gates;               /* (T, B, G*H) activated gates; RNN: the new h (not written by
                           tsrnn_cpu_rnn_lanes_forward(): nothing reads an RNN's) */
    float *h;                   /* (T+1, B, H) h[0] = initial state */
    float *c;                   /* LSTM (T+1, B, H) c[0] = initial cell state; else NULL */
    float *aux;                 /* LSTM tanh(c[t+1]); GRU W_hn h[t] + b_hn; (T, B, H); RNN NULL */
    float *w_ih_t;              /* (I, G*H) W_ih transposed at the start of each forward, so that */
    float *w_hh_t;              /* (H, G*H) the GEMM loops run along contiguous gate rows */
    float *w_hh_packed;         /* W_hh^T packed for tsrnn_cpu_gemm_packed(); NULL unless the model
                           uses packed products */
    bool rows_weights_current;  /* w_ih_t, w_hh_t / w_hh_packed hold the current weights */
    bool lanes_weights_current; /* w_lanes does */
    float *w_lanes;             /* the weights packed for tsrnn_cpu_rnn_lanes_forward(); NULL unless
                           the layer is small enough (rnn_lanes_fits) */
    float *h_lanes;             /* (T, H, B) h[1..T] transposed by tsrnn_cpu_rnn_lanes_forward() */
    bool lanes_ran;             /* the last forward ran it (so h_lanes holds that forward's h) */
};

struct cpu_workspace {
    struct tsrnn_cpu *cpu;
    struct tsrnn_model_dims dims;
    const struct tsrnn_cell *cell;
    bool packed_recurrence; /* large H on an AVX2 + FMA CPU: the per-step products use packed
                               weights (tsrnn_cpu_gemm_packed) instead of BLAS or the loops */
    struct tsrnn_arena arena;

    size_t batch_count, step_count; /* B, T of the batch loaded */
    bool zero_initial_state;        /* the last forward started from h = 0 */
    bool packed_products;           /* the last forward used the packed recurrent products */
    bool lanes_top;                 /* the last forward's top layer ran the lanes kernel, so
                                       its h_lanes holds its outputs */
    struct layer_cache layers[TSRNN_MODEL_MAX_LAYERS];
    float *x;               /* (T, B, C) input, time-major */
    float *y;               /* (T, B, O) target, time-major */
    float *out;             /* (T, B, O) head output */
    float *d_out;           /* (T, B, O) */
    float *d_h;             /* (T, B, H) dLoss/d(outputs of the layer being walked back) */
    const float *d_h_head;  /* V_w (O, H) when the head's backward left d_h = d_out V_w of the
                               top layer to its packed backward (head_d_h_deferred); else NULL */
    float *d_xg;            /* (T, B, G*H) */
    float *d_hg;            /* (T, B, G*H) GRU; aliases d_xg otherwise */
    float *d_w_ih_t;        /* (I, G*H) dW_ih^T gathered step by step for layers with few inputs */
    float *hg;              /* (B, G*H) scratch: W_hh h_prev + b_hh */
    float *dh_step;         /* (B, H) scratch: dLoss/dh at the current step */
    float *dh_carry;        /* (B, H) dLoss/dh_prev flowing from step t to t-1 */
    float *dh_direct;       /* (B, H) scratch: GRU's bypass part of dLoss/dh_prev */
    float *dc;              /* (B, H) LSTM dLoss/dc running backwards */
    float *w_hh_packed_bwd; /* W_hh packed for the backward's d_hg W_hh; NULL likewise */
    /* The sum of the likelihood's terms the last likelihood_backward computed with the
     * gradients (the composed step asks for the loss after the backward): valid until the
     * next head_forward. */
    bool likelihood_sum_valid;
    double likelihood_sum;
    float *state_h; /* (L, B, H) carried state between predict steps */
    float *state_c; /* (L, B, H) LSTM, likewise; NULL otherwise */
};

#endif
