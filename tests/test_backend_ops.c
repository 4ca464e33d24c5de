/* The compute backends' conformance test (DESIGN.md §9; ggml's test-backend-ops): every
 * operation of every compiled backend's table (src/compute/backend.h) against a plain
 * reference written here, in double precision, on random shapes and inputs from a seeded
 * generator (src/core/rng.h).
 *
 * Every backend registered in compute.c runs through the compute door (compute.h's
 * per-operation calls, which check their arguments and reach the table), so a
 * backend added there (cuda/) is tested the same way; one this machine cannot run (built, but
 * no device visible) is skipped with the reason, and the program exits 77 only when no
 * backend could run at all. The CPU backend runs four times: its fast paths (AUTO: packed AVX2
 * products for large H, OpenBLAS for big products) and its reference loops (LOOPS), each with
 * one thread and with two; choosing that is the only thing done outside the table.
 *
 * What each op is checked through (the workspace's activations are the backend's own, so ops
 * that leave results there are seen through the op that reads them):
 *   batch_load + layer_forward  a "probe" model, the same layers with a head V = identity
 *                               (O = H): its outputs are the top layer's h, bit for bit
 *   state_save                  the probe's next batch from TSRNN_STATE_SAVED
 *   head_forward                the outputs of the real model (O = C)
 *   output_download             every step, twice, in two orders: the same bits; nothing
 *                               written past B * O
 *   mse_forward, window_squared_errors   the loss and each window's sum
 *   mse_backward                V.bias's gradient: the sum of dLoss/d(out) over the batch
 *   head_backward               V.weight's gradient, and dLoss/dh through the layers below
 *   layer_backward              every layer's four gradients (from zero and from saved state)
 *   l1_forward, l1_backward, window_abs_errors, huber_forward, huber_backward,
 *   window_huber_errors (HuberLoss and SmoothL1Loss)  the loss, each window's sum, and the
 *                               backward through head_backward's V.bias gradient
 *   scale_check, adam_update, l2_decay, nesterov_update, rmsprop_update, adagrad_update,
 *   alloc/upload/download/zero on buffers of their own; the door's step with each optimizer
 *   rule against forward_backward and the rule's operations, bit for bit.
 *
 * Poison: every output is NaN before the op writes it. Host arrays are filled with NaN;
 * device outputs get NaN uploaded; the workspace (activations, saved state, derived weights,
 * dropout masks) is filled with NaN by a forward and backward over NaN inputs, NaN weights
 * and NaN masks at full capacity before the real ones. Gradients, which backward ops
 * accumulate into, start from known random values instead, so that the test sees them added
 * to and not overwritten.
 *
 * Tolerance: |got - want| <= RTOL * m + ATOL, m the magnitude of the terms the reference
 * summed (struct dm below). Output is a table: per backend, configuration and op the number
 * of elements checked, the worst |error| and the worst error / tolerance.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/compute/cpu/cpu.h" /* the CPU configurations: gemm_path, packed products */
#include "src/core/rng.h"
#include "testutil.h"
#include "tsrnn/compute.h"
#include "tsrnn/model.h"

/* |got - want| <= RTOL * m + ATOL, m the magnitude of the terms (struct dm). RTOL is ~80 float
 * ulps of m: room for the order of summation (the CPU's plain loops sum a weight gradient's
 * T*B terms one after the other) and for the errors a value brings from the steps and layers
 * before (dm_face). ATOL only matters where every term is an exact zero (a dropped input, a
 * zero state): it is below float's normal range, so only a flushed denormal may differ. */
#define RTOL        1e-5
#define ATOL        1e-30

#define SEED        20250611u
#define GUARD_COUNT 4 /* floats after a host output that the op must not write */

/* --- reference numbers: a value and the magnitude of what went into it ------------------- */

/* v is the exact (double) result. m is the magnitude that float32 rounding errors of the same
 * computation are proportional to, as in a first-order error analysis without the signs: an
 * input counts |v|, a sum m_a + m_b, a product |a| m_b + |b| m_a, a function f(u)
 * |f'(u)| m_u + |f(u)|; always m >= |v|. A correct float32 implementation's error is a small
 * multiple of float's epsilon (1.2e-7) times m: it grows with the length of a sum, but with
 * its square root where roundings are random, whatever the order of summation. */
struct dm {
    double v, m;
};

static struct dm dm_in(double v)
{
    return (struct dm){ v, fabs(v) };
}

static struct dm dm_add(struct dm a, struct dm b)
{
    return (struct dm){ a.v + b.v, a.m + b.m };
}

static struct dm dm_sub(struct dm a, struct dm b)
{
    return (struct dm){ a.v - b.v, a.m + b.m };
}

static struct dm dm_mul(struct dm a, struct dm b)
{
    return (struct dm){ a.v * b.v, fabs(a.v) * b.m + fabs(b.v) * a.m };
}

static struct dm dm_div(struct dm a, struct dm b)
{
    double q = a.v / b.v;
    return (struct dm){ q, (a.m + fabs(q) * b.m) / fabs(b.v) };
}

static struct dm dm_abs(struct dm a)
{
    return (struct dm){ fabs(a.v), a.m };
}

static struct dm dm_sqrt(struct dm a)
{
    double s = sqrt(a.v);
    return (struct dm){ s, s > 0.0 ? a.m / (2.0 * s) + s : 0.0 };
}

static struct dm dm_tanh(struct dm a)
{
    double t = tanh(a.v);
    return (struct dm){ t, (1.0 - t * t) * a.m + fabs(t) };
}

static struct dm dm_sigmoid(struct dm a)
{
    double s = 1.0 / (1.0 + exp(-a.v));
    return (struct dm){ s, s * (1.0 - s) * a.m + s };
}

/* A recurrence's carried state (h and c forward, dLoss/dh and dLoss/dc backward) enters each
 * step at face value: a magnitude that followed the carry through every step would grow
 * geometrically (|W_hh| has a spectral radius near sqrt(H)/2) while the errors themselves do
 * not (W_hh, drawn like PyTorch's init, contracts). So each step's tolerance covers its own
 * arithmetic, and RTOL's headroom what the carry brings along. */
static struct dm dm_face(struct dm a)
{
    return dm_in(a.v);
}

/* bias + w . x over n terms. */
static struct dm dm_dot(float bias, const float *w, const struct dm *x, size_t n)
{
    struct dm s = dm_in(bias);
    for (size_t i = 0; i < n; i++)
        s = dm_add(s, dm_mul(dm_in(w[i]), x[i]));
    return s;
}

static struct dm *dm_alloc(size_t count)
{
    struct dm *a = calloc(count ? count : 1, sizeof(*a));
    assert_non_null(a);
    return a;
}

/* --- the reference model ------------------------------------------------------------------
 *
 * torch.nn.RNN / LSTM / GRU (batch_first) and the head Linear(H, O) at every step, with MSE,
 * written the plain way: one window, one step, one unit at a time, PyTorch's equations
 * (DESIGN.md §4), activations time-major (T, B, .) like the backends'. */

struct ref_layer {
    size_t I;
    struct dm *in;     /* (T, B, I) the layer's input, after the dropout mask */
    const float *mask; /* (T, B, I) that mask, or NULL */
    struct dm *h;      /* (T+1, B, H) h[0] the initial state */
    struct dm *c;      /* LSTM (T+1, B, H); else NULL */
    struct dm *gates;  /* (T, B, G*H) activated: RNN h', LSTM i f g o, GRU r z n */
    struct dm *hn;     /* GRU (T, B, H) W_hn h + b_hn; else NULL */
};

struct ref_model {
    struct tsrnn_model_dims dims;
    struct tsrnn_param_table table;
    struct tsrnn_model_params p; /* host views of the parameters */
    size_t B, T, G, H, O;
    struct ref_layer layers[TSRNN_MODEL_MAX_LAYERS];
    struct dm *out;         /* (T, B, O) */
    struct dm loss;         /* nn.MSELoss() */
    struct dm *se;          /* (B) each window's sum of squared errors */
    struct dm *d_out;       /* (T, B, O) dLoss/d(out) */
    struct dm *d_h, *d_in;  /* (T, B, H) dLoss/d(outputs), dLoss/d(input) of a layer */
    struct dm *d_xg, *d_hg; /* (T, B, G*H) dLoss/d(input projection), d(W_hh h + b_hh) */
    struct dm *grads;       /* (table.total_count) in the parameters' layout */
};

static void ref_init(struct ref_model *r, const struct tsrnn_model_dims *dims, float *params,
                     size_t B, size_t T)
{
    *r = (struct ref_model){ .dims = *dims, .B = B, .T = T };
    r->G = tsrnn_model_gate_count(dims->kind);
    r->H = dims->hidden_count;
    r->O = dims->output_count;
    tsrnn_param_table_init(&r->table, dims);
    tsrnn_model_params_view(&r->p, dims, params);
    size_t H = r->H, GH = r->G * H;
    for (size_t l = 0; l < dims->layer_count; l++) {
        struct ref_layer *rl = &r->layers[l];
        rl->I = l == 0 ? dims->input_count : H;
        rl->in = dm_alloc(T * B * rl->I);
        rl->h = dm_alloc((T + 1) * B * H);
        rl->gates = dm_alloc(T * B * GH);
        if (dims->kind == TSRNN_MODEL_LSTM)
            rl->c = dm_alloc((T + 1) * B * H);
        if (dims->kind == TSRNN_MODEL_GRU)
            rl->hn = dm_alloc(T * B * H);
    }
    r->out = dm_alloc(T * B * r->O);
    r->se = dm_alloc(B);
    r->d_out = dm_alloc(T * B * r->O);
    r->d_h = dm_alloc(T * B * H);
    r->d_in = dm_alloc(T * B * H);
    r->d_xg = dm_alloc(T * B * GH);
    r->d_hg = dm_alloc(T * B * GH);
    r->grads = dm_alloc(r->table.total_count);
}

static void ref_finish(struct ref_model *r)
{
    for (size_t l = 0; l < r->dims.layer_count; l++) {
        struct ref_layer *rl = &r->layers[l];
        free(rl->in);
        free(rl->h);
        free(rl->c);
        free(rl->gates);
        free(rl->hn);
    }
    free(r->out);
    free(r->se);
    free(r->d_out);
    free(r->d_h);
    free(r->d_in);
    free(r->d_xg);
    free(r->d_hg);
    free(r->grads);
}

/* Layer l over its input rl->in, from h0 (and c0) (B, H), or from zeros when NULL. */
static void ref_layer_forward(struct ref_model *r, size_t l, const struct dm *h0,
                              const struct dm *c0)
{
    struct ref_layer *rl = &r->layers[l];
    const struct tsrnn_layer_params *p = &r->p.layers[l];
    size_t B = r->B, T = r->T, H = r->H, GH = r->G * H, I = rl->I;
    struct dm *xg = dm_alloc(GH), *hg = dm_alloc(GH), *hp = dm_alloc(H);
    const struct dm one = dm_in(1.0);

    for (size_t i = 0; i < B * H; i++) {
        rl->h[i] = h0 ? dm_face(h0[i]) : dm_in(0.0);
        if (rl->c)
            rl->c[i] = c0 ? dm_face(c0[i]) : dm_in(0.0);
    }
    for (size_t t = 0; t < T; t++) {
        for (size_t b = 0; b < B; b++) {
            size_t row = t * B + b; /* h[t] of window b is row `row` of h, h[t+1] row + B */
            const struct dm *x = rl->in + row * I;
            struct dm *h = rl->h + (row + B) * H, *gates = rl->gates + row * GH;
            for (size_t j = 0; j < H; j++)
                hp[j] = dm_face(rl->h[row * H + j]);
            for (size_t k = 0; k < GH; k++) {
                xg[k] = dm_dot(p->b_ih[k], p->w_ih + k * I, x, I);
                hg[k] = dm_dot(p->b_hh[k], p->w_hh + k * H, hp, H);
            }
            for (size_t j = 0; j < H; j++) {
                switch (r->dims.kind) {
                case TSRNN_MODEL_RNN:
                    h[j] = gates[j] = dm_tanh(dm_add(xg[j], hg[j]));
                    break;
                case TSRNN_MODEL_LSTM: {
                    struct dm i = dm_sigmoid(dm_add(xg[j], hg[j]));
                    struct dm f = dm_sigmoid(dm_add(xg[H + j], hg[H + j]));
                    struct dm g = dm_tanh(dm_add(xg[2 * H + j], hg[2 * H + j]));
                    struct dm o = dm_sigmoid(dm_add(xg[3 * H + j], hg[3 * H + j]));
                    struct dm *c = rl->c + (row + B) * H;
                    c[j] = dm_add(dm_mul(f, dm_face(rl->c[row * H + j])), dm_mul(i, g));
                    h[j] = dm_mul(o, dm_tanh(c[j]));
                    gates[j] = i;
                    gates[H + j] = f;
                    gates[2 * H + j] = g;
                    gates[3 * H + j] = o;
                    break;
                }
                case TSRNN_MODEL_GRU: {
                    struct dm rr = dm_sigmoid(dm_add(xg[j], hg[j]));
                    struct dm z = dm_sigmoid(dm_add(xg[H + j], hg[H + j]));
                    struct dm n = dm_tanh(dm_add(xg[2 * H + j], dm_mul(rr, hg[2 * H + j])));
                    h[j] = dm_add(dm_mul(dm_sub(one, z), n), dm_mul(z, hp[j]));
                    rl->hn[row * H + j] = hg[2 * H + j];
                    gates[j] = rr;
                    gates[H + j] = z;
                    gates[2 * H + j] = n;
                    break;
                }
                }
            }
        }
    }
    free(xg);
    free(hg);
    free(hp);
}

/* The forward of the whole model over x (B, T, C): layer l > 0 takes the outputs of l-1
 * times masks[l] (T, B, H) when masks and masks[l] are not NULL; the layers start from the
 * final state of `from`'s forward (the same B) or from zeros; then the head. */
static void ref_forward(struct ref_model *r, const float *x, float *const *masks,
                        const struct ref_model *from)
{
    size_t B = r->B, T = r->T, H = r->H, C = r->dims.input_count;
    struct ref_layer *first = &r->layers[0];
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            for (size_t i = 0; i < C; i++)
                first->in[(t * B + b) * C + i] = dm_in(x[(b * T + t) * C + i]);
    for (size_t l = 0; l < r->dims.layer_count; l++) {
        struct ref_layer *rl = &r->layers[l];
        if (l > 0) {
            const struct dm *below = r->layers[l - 1].h + B * H; /* h[1..T] */
            rl->mask = masks ? masks[l] : NULL;
            for (size_t i = 0; i < T * B * H; i++)
                rl->in[i] = rl->mask ? dm_mul(below[i], dm_in(rl->mask[i])) : below[i];
        }
        const struct dm *h0 = NULL, *c0 = NULL;
        if (from != NULL) {
            const struct ref_layer *fl = &from->layers[l];
            h0 = fl->h + from->T * B * H;
            c0 = fl->c ? fl->c + from->T * B * H : NULL;
        }
        ref_layer_forward(r, l, h0, c0);
    }
    const struct dm *top = r->layers[r->dims.layer_count - 1].h + B * H;
    for (size_t row = 0; row < T * B; row++)
        for (size_t o = 0; o < r->O; o++)
            r->out[row * r->O + o] = dm_dot(r->p.v_b[o], r->p.v_w + o * H, top + row * H, H);
}

/* Against y (B, T, O): the loss, each window's squared errors, dLoss/d(out). */
static void ref_loss(struct ref_model *r, const float *y)
{
    size_t B = r->B, T = r->T, O = r->O, n = B * T * O;
    struct dm sum = dm_in(0.0);
    for (size_t b = 0; b < B; b++) {
        r->se[b] = dm_in(0.0);
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                size_t i = (t * B + b) * O + o;
                struct dm e = dm_sub(r->out[i], dm_in(y[(b * T + t) * O + o]));
                r->se[b] = dm_add(r->se[b], dm_mul(e, e));
                r->d_out[i] = dm_mul(e, dm_in(2.0 / (double)n));
            }
        sum = dm_add(sum, r->se[b]);
    }
    r->loss = (struct dm){ sum.v / (double)n, sum.m / (double)n };
}

static struct dm *ref_grad(struct ref_model *r, size_t entry)
{
    return r->grads + r->table.entries[entry].offset;
}

/* Layer l's backward from r->d_h = dLoss/d(its outputs h[1..T]): accumulates its gradients
 * and, for l > 0, writes dLoss/d(its input) through the mask into r->d_in. */
static void ref_layer_backward(struct ref_model *r, size_t l)
{
    struct ref_layer *rl = &r->layers[l];
    const struct tsrnn_layer_params *p = &r->p.layers[l];
    size_t B = r->B, T = r->T, H = r->H, GH = r->G * H, I = rl->I;
    struct dm *carry_h = dm_alloc(B * H), *carry_c = dm_alloc(B * H);
    struct dm *dh = dm_alloc(H), *direct = dm_alloc(H);
    const struct dm one = dm_in(1.0);

    for (size_t t = T; t-- > 0;) {
        for (size_t b = 0; b < B; b++) {
            size_t row = t * B + b;
            const struct dm *gates = rl->gates + row * GH;
            struct dm *d_xg = r->d_xg + row * GH, *d_hg = r->d_hg + row * GH;
            for (size_t j = 0; j < H; j++)
                dh[j] = dm_add(r->d_h[row * H + j], dm_face(carry_h[b * H + j]));
            for (size_t j = 0; j < H; j++) {
                switch (r->dims.kind) {
                case TSRNN_MODEL_RNN: {
                    struct dm hj = gates[j];
                    d_xg[j] = d_hg[j] = dm_mul(dh[j], dm_sub(one, dm_mul(hj, hj)));
                    break;
                }
                case TSRNN_MODEL_LSTM: {
                    struct dm i = gates[j], f = gates[H + j], g = gates[2 * H + j];
                    struct dm o = gates[3 * H + j], c_prev = rl->c[row * H + j];
                    struct dm tc = dm_tanh(rl->c[(row + B) * H + j]);
                    struct dm dc = dm_add(dm_face(carry_c[b * H + j]),
                                          dm_mul(dm_mul(dh[j], o), dm_sub(one, dm_mul(tc, tc))));
                    d_xg[j] = dm_mul(dm_mul(dc, g), dm_mul(i, dm_sub(one, i)));
                    d_xg[H + j] = dm_mul(dm_mul(dc, c_prev), dm_mul(f, dm_sub(one, f)));
                    d_xg[2 * H + j] = dm_mul(dm_mul(dc, i), dm_sub(one, dm_mul(g, g)));
                    d_xg[3 * H + j] = dm_mul(dm_mul(dh[j], tc), dm_mul(o, dm_sub(one, o)));
                    for (size_t q = 0; q < 4; q++)
                        d_hg[q * H + j] = d_xg[q * H + j];
                    carry_c[b * H + j] = dm_mul(dc, f);
                    break;
                }
                case TSRNN_MODEL_GRU: {
                    struct dm rr = gates[j], z = gates[H + j], n = gates[2 * H + j];
                    struct dm h_prev = rl->h[row * H + j], hn = rl->hn[row * H + j];
                    struct dm dn = dm_mul(dm_mul(dh[j], dm_sub(one, z)), dm_sub(one, dm_mul(n, n)));
                    struct dm dz =
                        dm_mul(dm_mul(dh[j], dm_sub(h_prev, n)), dm_mul(z, dm_sub(one, z)));
                    struct dm dr = dm_mul(dm_mul(dn, hn), dm_mul(rr, dm_sub(one, rr)));
                    d_xg[j] = d_hg[j] = dr;
                    d_xg[H + j] = d_hg[H + j] = dz;
                    d_xg[2 * H + j] = dn;
                    d_hg[2 * H + j] = dm_mul(dn, rr);
                    direct[j] = dm_mul(dh[j], z);
                    break;
                }
                }
            }
            if (t == 0)
                continue;
            /* dLoss/dh[t] for step t-1: through W_hh, and GRU's z * dh directly */
            for (size_t j = 0; j < H; j++) {
                struct dm s = r->dims.kind == TSRNN_MODEL_GRU ? direct[j] : dm_in(0.0);
                for (size_t k = 0; k < GH; k++)
                    s = dm_add(s, dm_mul(dm_in(p->w_hh[k * H + j]), d_hg[k]));
                carry_h[b * H + j] = s;
            }
        }
    }

    /* The weight and bias gradients: sums over every step and window. h[t] is the state step
     * t started from (zeros or the given state at t = 0). */
    struct dm *g_w_ih = ref_grad(r, 4 * l), *g_w_hh = ref_grad(r, 4 * l + 1);
    struct dm *g_b_ih = ref_grad(r, 4 * l + 2), *g_b_hh = ref_grad(r, 4 * l + 3);
    for (size_t k = 0; k < GH; k++) {
        for (size_t i = 0; i < I; i++)
            for (size_t row = 0; row < T * B; row++)
                g_w_ih[k * I + i] =
                    dm_add(g_w_ih[k * I + i], dm_mul(r->d_xg[row * GH + k], rl->in[row * I + i]));
        for (size_t j = 0; j < H; j++)
            for (size_t row = 0; row < T * B; row++)
                g_w_hh[k * H + j] =
                    dm_add(g_w_hh[k * H + j], dm_mul(r->d_hg[row * GH + k], rl->h[row * H + j]));
        for (size_t row = 0; row < T * B; row++) {
            g_b_ih[k] = dm_add(g_b_ih[k], r->d_xg[row * GH + k]);
            g_b_hh[k] = dm_add(g_b_hh[k], r->d_hg[row * GH + k]);
        }
    }
    if (l > 0)
        for (size_t row = 0; row < T * B; row++)
            for (size_t i = 0; i < I; i++) {
                struct dm s = dm_in(0.0);
                for (size_t k = 0; k < GH; k++)
                    s = dm_add(s, dm_mul(dm_in(p->w_ih[k * I + i]), r->d_xg[row * GH + k]));
                r->d_in[row * I + i] = rl->mask ? dm_mul(s, dm_in(rl->mask[row * I + i])) : s;
            }
    free(carry_h);
    free(carry_c);
    free(dh);
    free(direct);
}

/* The backward of the last forward and ref_loss(): gradients = prefill + dLoss/dparams. */
static void ref_backward(struct ref_model *r, const float *prefill)
{
    size_t B = r->B, T = r->T, H = r->H, O = r->O, L = r->dims.layer_count;
    for (size_t i = 0; i < r->table.total_count; i++)
        r->grads[i] = dm_in(prefill[i]);

    /* the head: V's gradients, and dLoss/dh of the top layer */
    const struct dm *top = r->layers[L - 1].h + B * H;
    struct dm *g_v_w = ref_grad(r, 4 * L), *g_v_b = ref_grad(r, 4 * L + 1);
    for (size_t o = 0; o < O; o++)
        for (size_t row = 0; row < T * B; row++) {
            struct dm d = r->d_out[row * O + o];
            for (size_t j = 0; j < H; j++)
                g_v_w[o * H + j] = dm_add(g_v_w[o * H + j], dm_mul(d, top[row * H + j]));
            g_v_b[o] = dm_add(g_v_b[o], d);
        }
    for (size_t row = 0; row < T * B; row++)
        for (size_t j = 0; j < H; j++) {
            struct dm s = dm_in(0.0);
            for (size_t o = 0; o < O; o++)
                s = dm_add(s, dm_mul(dm_in(r->p.v_w[o * H + j]), r->d_out[row * O + o]));
            r->d_h[row * H + j] = s;
        }

    for (size_t l = L; l-- > 0;) {
        ref_layer_backward(r, l);
        struct dm *swap = r->d_h; /* dLoss/d(input of l) is dLoss/d(outputs of l-1) */
        r->d_h = r->d_in;
        r->d_in = swap;
    }
}

/* --- the table of results ----------------------------------------------------------------- */

enum op {
    OP_FORWARD,
    OP_FORWARD_MASKED,
    OP_FORWARD_SAVED,
    OP_HEAD_FORWARD,
    OP_OUTPUT_DOWNLOAD,
    OP_MSE_FORWARD,
    OP_WINDOW_SQUARED_ERRORS,
    OP_MSE_BACKWARD,
    OP_HEAD_BACKWARD,
    OP_LAYER_BACKWARD,
    OP_LAYER_BACKWARD_SAVED,
    OP_L1_LOSS,
    OP_HUBER_LOSS,
    OP_SMOOTH_L1_LOSS,
    OP_SCALE_CHECK,
    OP_ADAM_UPDATE,
    OP_L2_DECAY,
    OP_NESTEROV_UPDATE,
    OP_RMSPROP_UPDATE,
    OP_ADAGRAD_UPDATE,
    OP_MEMORY,
    OP_DOOR_FORWARD,
    OP_DOOR_STEP,
    OP_DOOR_STEP_CLIPPED,
    OP_DOOR_HALTS,
    OP_DOOR_RULES,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    [OP_FORWARD] = "batch_load+layer_forward",
    [OP_FORWARD_MASKED] = "layer_forward, input mask",
    [OP_FORWARD_SAVED] = "state_save+layer_forward, saved",
    [OP_HEAD_FORWARD] = "head_forward",
    [OP_OUTPUT_DOWNLOAD] = "output_download",
    [OP_MSE_FORWARD] = "mse_forward",
    [OP_WINDOW_SQUARED_ERRORS] = "window_squared_errors",
    [OP_MSE_BACKWARD] = "mse_backward (V.bias grad)",
    [OP_HEAD_BACKWARD] = "head_backward",
    [OP_LAYER_BACKWARD] = "layer_backward",
    [OP_LAYER_BACKWARD_SAVED] = "layer_backward, saved state",
    [OP_L1_LOSS] = "l1_* (loss, windows, V.bias grad)",
    [OP_HUBER_LOSS] = "huber_*, HuberLoss",
    [OP_SMOOTH_L1_LOSS] = "huber_*, SmoothL1Loss",
    [OP_SCALE_CHECK] = "scale_check",
    [OP_ADAM_UPDATE] = "adam_update",
    [OP_L2_DECAY] = "l2_decay",
    [OP_NESTEROV_UPDATE] = "nesterov_update",
    [OP_RMSPROP_UPDATE] = "rmsprop_update",
    [OP_ADAGRAD_UPDATE] = "adagrad_update",
    [OP_MEMORY] = "alloc/upload/download/zero",
    [OP_DOOR_FORWARD] = "door: forward + window errors",
    [OP_DOOR_STEP] = "door: step (params, loss)",
    [OP_DOOR_STEP_CLIPPED] = "door: step, clipped",
    [OP_DOOR_HALTS] = "door: step's stop, divergence",
    [OP_DOOR_RULES] = "door: step, other optimizers",
};

struct op_stat {
    size_t checked;
    double max_err, max_ratio;
    char worst[160]; /* the draw and element of max_ratio */
};

/* One configuration of one backend: a context and what its checks found. */
struct config {
    const char *name;
    int thread_count;
    int gemm_path; /* enum tsrnn_gemm_path for the CPU backend, -1 for the others */
    struct tsrnn_compute *ctx;
    struct op_stat stats[OP_COUNT];
    size_t packed_draws; /* CPU: draws whose forward ran the packed products */
};

/* What the checks name in their messages. */
static struct config *cur_config;
static const char *cur_backend = "";
static const char *cur_draw = "";

/* "cpu (auto, 1 thread), LSTM B=16 ..." for messages. */
static const char *where(void)
{
    static char text[256];
    snprintf(text, sizeof(text), "%s (%s)%s%s", cur_backend, cur_config->name,
             *cur_draw ? ", " : "", cur_draw);
    return text;
}

#define OK(expr)                                                                                   \
    do {                                                                                           \
        enum tsrnn_status ok_status_ = (expr);                                                     \
        if (ok_status_ != TSRNN_OK)                                                                \
            fail_msg("%s on %s: %s: %s", #expr, where(), tsrnn_status_name(ok_status_),            \
                     tsrnn_last_error());                                                          \
    } while (0)

/* "[t=3][b=0][j=7]" for flat index idx of a tensor of `shape`; labels names the axes ("tbj"),
 * or NULL for bare indices. */
static void element_name(char *buf, size_t nbytes, const char *labels, const size_t *shape,
                         size_t rank, size_t idx)
{
    size_t coord[4] = { 0 };
    for (size_t a = rank; a-- > 0;) {
        coord[a] = idx % shape[a];
        idx /= shape[a];
    }
    size_t used = 0;
    buf[0] = '\0';
    for (size_t a = 0; a < rank && used < nbytes; a++) {
        if (labels != NULL)
            used += (size_t)snprintf(buf + used, nbytes - used, "[%c=%zu]", labels[a], coord[a]);
        else
            used += (size_t)snprintf(buf + used, nbytes - used, "[%zu]", coord[a]);
    }
}

/* The worst element out of tolerance of the tensor being compared (check_end() reports it). */
static struct {
    size_t count;
    double ratio;
    char message[512];
} out_of_tolerance;

/* One element against the reference; NaN (a poisoned element the op did not write) fails. */
static void check_value(enum op op, const char *what, const char *labels, const size_t *shape,
                        size_t rank, size_t idx, double got, struct dm want)
{
    struct op_stat *st = &cur_config->stats[op];
    double err = fabs(got - want.v), tol = RTOL * want.m + ATOL;
    double ratio = isnan(err) ? INFINITY : err / tol;
    st->checked++;
    if (err > st->max_err)
        st->max_err = err;
    if (ratio > 1.0) {
        out_of_tolerance.count++;
        if (ratio <= out_of_tolerance.ratio)
            return;
        char element[96];
        element_name(element, sizeof(element), labels, shape, rank, idx);
        out_of_tolerance.ratio = ratio;
        snprintf(out_of_tolerance.message, sizeof(out_of_tolerance.message),
                 "%s on %s: %s%s = %.9g, the reference says %.9g (|err| %.3g > "
                 "tolerance %.3g)",
                 op_names[op], where(), what, element, got, want.v, err, tol);
        return;
    }
    if (ratio <= st->max_ratio)
        return;
    char element[96];
    element_name(element, sizeof(element), labels, shape, rank, idx);
    st->max_ratio = ratio;
    snprintf(st->worst, sizeof(st->worst), "%s%s%s%s", cur_draw, *cur_draw ? " " : "", what,
             element);
}

/* Fails with the worst element out of tolerance since the last call, if any. */
static void check_end(void)
{
    size_t count = out_of_tolerance.count;
    out_of_tolerance.count = 0;
    out_of_tolerance.ratio = 0.0;
    if (count > 0)
        fail_msg("%s; %zu element%s out of tolerance", out_of_tolerance.message, count,
                 count == 1 ? "" : "s");
}

static void check_floats(enum op op, const char *what, const char *labels, const size_t *shape,
                         size_t rank, const float *got, const struct dm *want)
{
    size_t count = 1;
    for (size_t a = 0; a < rank; a++)
        count *= shape[a];
    for (size_t i = 0; i < count; i++)
        check_value(op, what, labels, shape, rank, i, got[i], want[i]);
    check_end();
}

/* Elements that must be bit-identical (copies, a scale by 1, a single rounded product); two
 * NaNs count as equal. */
static void check_bits(enum op op, const char *what, const float *got, const float *want,
                       size_t count)
{
    for (size_t i = 0; i < count; i++) {
        cur_config->stats[op].checked++;
        if (isnan(got[i]) && isnan(want[i]))
            continue;
        uint32_t got_bits, want_bits;
        memcpy(&got_bits, &got[i], sizeof(got_bits));
        memcpy(&want_bits, &want[i], sizeof(want_bits));
        if (got_bits != want_bits)
            fail_msg("%s on %s: %s[%zu] = %.9g (bits %08x), expected exactly %.9g "
                     "(bits %08x)",
                     op_names[op], where(), what, i, (double)got[i], (unsigned)got_bits,
                     (double)want[i], (unsigned)want_bits);
    }
}

/* --- host helpers ------------------------------------------------------------------------- */

static float *host_floats(size_t count)
{
    float *a = malloc((count ? count : 1) * sizeof(*a));
    assert_non_null(a);
    return a;
}

static float *nan_floats(size_t count)
{
    float *a = host_floats(count);
    for (size_t i = 0; i < count; i++)
        a[i] = NAN;
    return a;
}

static float *random_floats(struct tsrnn_rng *rng, size_t count, float lo, float hi)
{
    float *a = host_floats(count);
    for (size_t i = 0; i < count; i++)
        a[i] = lo + (hi - lo) * tsrnn_rng_uniform(rng);
    return a;
}

static size_t random_in(struct tsrnn_rng *rng, size_t lo, size_t hi)
{
    return lo + (size_t)tsrnn_rng_below(rng, hi - lo + 1);
}

static void *dev_alloc(size_t nbytes)
{
    void *buf = NULL;
    OK(tsrnn_compute_alloc(cur_config->ctx, &buf, nbytes));
    assert_non_null(buf);
    return buf;
}

static void dev_upload(void *dst, const void *src, size_t nbytes)
{
    OK(tsrnn_compute_upload(cur_config->ctx, dst, src, nbytes));
}

static void dev_download(void *dst, const void *src, size_t nbytes)
{
    OK(tsrnn_compute_download(cur_config->ctx, dst, src, nbytes));
}

static void dev_free(void *buf)
{
    tsrnn_compute_free(cur_config->ctx, buf);
}

/* --- the draws ---------------------------------------------------------------------------- */

/* A model and batch shape; 0 (and dropout < 0) are drawn at random. device_only: shapes for
 * a GPU backend (the hidden 256, batch 100, T 64, one or two at a time: all three at
 * once takes the reference minutes, and its 6400-term weight-gradient sums exceed this
 * test's tolerance model in the CPU's sequential loops); the CPU backend skips them to keep
 * its run short (they pass on it: checked when they were added). */
struct draw_spec {
    enum tsrnn_model_kind kind;
    size_t B, T, C, H, L;
    float dropout;
    const char *why;
    bool device_only;
};

/* Random draws per cell kind, then the shapes the backends branch on: univariate and tiny H,
 * C > 8 (the CPU's input projection as one GEMM instead of step by step), H large enough for
 * the packed AVX2 products, a batch and window that the CPU splits between threads and hands
 * to OpenBLAS, and a forecast's B = T = 1. */
static const struct draw_spec draw_specs[] = {
    { TSRNN_MODEL_RNN, 0, 0, 0, 0, 0, -1.0f, "random", false },
    { TSRNN_MODEL_LSTM, 0, 0, 0, 0, 0, -1.0f, "random", false },
    { TSRNN_MODEL_GRU, 0, 0, 0, 0, 0, -1.0f, "random", false },
    { TSRNN_MODEL_RNN, 0, 0, 1, 0, 2, 0.25f, "univariate, dropout", false },
    { TSRNN_MODEL_LSTM, 0, 0, 1, 2, 2, 0.25f, "univariate, tiny H, dropout", false },
    { TSRNN_MODEL_GRU, 0, 0, 1, 1, 2, 0.5f, "H = 1, dropout", false },
    { TSRNN_MODEL_LSTM, 0, 0, 11, 0, 2, 0.0f, "C > 8: input projection in one GEMM", false },
    { TSRNN_MODEL_GRU, 0, 0, 9, 0, 3, 0.25f, "C > 8, three layers, dropout", false },
    { TSRNN_MODEL_RNN, 5, 3, 2, 128, 2, 0.25f, "H = 128: packed products", false },
    { TSRNN_MODEL_GRU, 4, 4, 1, 80, 2, 0.0f, "H = 80: packed products", false },
    { TSRNN_MODEL_LSTM, 16, 32, 1, 128, 2, 0.25f, "split recurrence, BLAS, dropout", false },
    { TSRNN_MODEL_GRU, 16, 44, 2, 128, 1, 0.0f, "split recurrence, BLAS", false },
    { TSRNN_MODEL_LSTM, 1, 1, 3, 5, 2, 0.25f, "B = T = 1", false },
    { TSRNN_MODEL_LSTM, 16, 20, 1, 256, 1, 0.0f, "device: H = 256", true },
    { TSRNN_MODEL_RNN, 100, 20, 2, 64, 2, 0.25f, "device: B = 100, dropout", true },
    { TSRNN_MODEL_GRU, 16, 64, 3, 20, 3, 0.25f, "device: T = 64, three layers", true },
    { TSRNN_MODEL_LSTM, 100, 64, 1, 20, 1, 0.0f, "device: B = 100, T = 64", true },
    { TSRNN_MODEL_GRU, 1, 20, 1, 1, 1, 0.0f, "device: H = 1, B = 1", true },
};
#define DRAW_COUNT (sizeof(draw_specs) / sizeof(draw_specs[0]))

/* One draw: the model, its inputs, and the reference's results.
 *   real   the model (O = C): a training step from zero state, with dropout masks when
 *          `masked`
 *   probe  the same layers with head V = identity (O = H), so that its outputs are the top
 *          layer's h: the training forward again, then state_save and a forward of x2
 *          (B, T2) from the saved state, and its backward against y2 */
struct draw {
    char label[96];
    const char *why;
    struct tsrnn_model_dims dims, probe_dims;
    size_t B, T, T2, batch_capacity, step_capacity;
    bool masked;
    bool weights_unchanged; /* passed to the saved-state forward */
    float *params, *probe_params;
    float *x, *y, *x2, *y2;
    float *masks[TSRNN_MODEL_MAX_LAYERS]; /* (T, B, H) for l >= 1 when masked */
    float *prefill, *probe_prefill;       /* the gradients before the backward */
    struct ref_model real, saved; /* the reference's: the real model, the probe's second batch */
};

static void draw_init(struct draw *d, size_t index)
{
    const struct draw_spec *spec = &draw_specs[index];
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, SEED, index);
    *d = (struct draw){ .why = spec->why };

    size_t C = spec->C ? spec->C : random_in(&rng, 1, 12);
    size_t H = spec->H ? spec->H : random_in(&rng, 1, 24);
    size_t L = spec->L ? spec->L : random_in(&rng, 1, 3);
    float dropout = spec->dropout >= 0.0f ? spec->dropout : 0.25f * (float)random_in(&rng, 0, 1);
    d->dims = (struct tsrnn_model_dims){ spec->kind, C, H, L, C, dropout, 1 };
    d->probe_dims = d->dims;
    d->probe_dims.output_count = H;
    d->B = spec->B ? spec->B : random_in(&rng, 1, 8);
    d->T = spec->T ? spec->T : random_in(&rng, 1, 9);
    d->batch_capacity = d->B + random_in(&rng, 0, 2);
    d->step_capacity = d->T + random_in(&rng, 0, 2);
    d->T2 = random_in(&rng, 1, d->step_capacity);
    d->masked = L > 1 && dropout > 0.0f;
    d->weights_unchanged = index % 2 == 0;
    snprintf(d->label, sizeof(d->label), "%s B=%zu T=%zu C=%zu H=%zu L=%zu p=%g",
             tsrnn_model_kind_name(spec->kind), d->B, d->T, C, H, L, (double)dropout);

    /* PyTorch's init range for every weight, inputs and targets of order 1 */
    size_t B = d->B, T = d->T, T2 = d->T2;
    float k = 1.0f / sqrtf((float)H);
    struct tsrnn_param_table table, probe_table;
    tsrnn_param_table_init(&table, &d->dims);
    tsrnn_param_table_init(&probe_table, &d->probe_dims);
    d->params = random_floats(&rng, table.total_count, -k, k);
    d->probe_params = host_floats(probe_table.total_count);
    memcpy(d->probe_params, d->params, table.rnn_count * sizeof(float));
    for (size_t i = 0; i < H * H + H; i++) /* V = identity, bias 0 */
        d->probe_params[table.rnn_count + i] = i < H * H && i % (H + 1) == 0 ? 1.0f : 0.0f;
    d->x = random_floats(&rng, B * T * C, -2.0f, 2.0f);
    d->y = random_floats(&rng, B * T * C, -1.0f, 1.0f);
    d->x2 = random_floats(&rng, B * T2 * C, -2.0f, 2.0f);
    d->y2 = random_floats(&rng, B * T2 * H, -1.0f, 1.0f);
    float keep = (float)(1.0 / (1.0 - (double)dropout)); /* inverted dropout, as model.c */
    for (size_t l = 1; d->masked && l < L; l++) {
        d->masks[l] = host_floats(T * B * H);
        for (size_t i = 0; i < T * B * H; i++)
            d->masks[l][i] = tsrnn_rng_uniform(&rng) < dropout ? 0.0f : keep;
    }
    d->prefill = random_floats(&rng, table.total_count, -0.05f, 0.05f);
    d->probe_prefill = random_floats(&rng, probe_table.total_count, -0.05f, 0.05f);

    ref_init(&d->real, &d->dims, d->params, B, T);
    ref_forward(&d->real, d->x, d->masks, NULL);
    ref_loss(&d->real, d->y);
    ref_backward(&d->real, d->prefill);
    ref_init(&d->saved, &d->probe_dims, d->probe_params, B, T2);
    ref_forward(&d->saved, d->x2, NULL, &d->real);
    ref_loss(&d->saved, d->y2);
    ref_backward(&d->saved, d->probe_prefill);
}

static void draw_finish(struct draw *d)
{
    ref_finish(&d->real);
    ref_finish(&d->saved);
    free(d->params);
    free(d->probe_params);
    free(d->x);
    free(d->y);
    free(d->x2);
    free(d->y2);
    for (size_t l = 0; l < TSRNN_MODEL_MAX_LAYERS; l++)
        free(d->masks[l]);
    free(d->prefill);
    free(d->probe_prefill);
}

/* --- one draw on one configuration -------------------------------------------------------- */

/* A model on the backend: its workspace, parameters and gradients in device memory. */
struct subject {
    const struct tsrnn_model_dims *dims;
    struct tsrnn_param_table table;
    struct tsrnn_workspace *ws;
    float *params, *grads; /* device (table.total_count) */
    struct tsrnn_model_params p, g;
};

/* Fills the workspace with NaN: a training step at full capacity over NaN inputs, targets,
 * weights and dropout masks (and state_save of its NaN final state). Whatever the real ops
 * then leave unwritten stays NaN and fails the comparison, as do weights derived from the
 * last call's (weights_unchanged = false must derive them again) and a stale mask (a forward
 * without one must not apply the last). */
static void poison_workspace(struct subject *s, const struct draw *d)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    const struct tsrnn_model_dims *dims = s->dims;
    size_t B = d->batch_capacity, T = d->step_capacity, total = s->table.total_count;
    size_t widest = dims->hidden_count;
    if (dims->input_count > widest)
        widest = dims->input_count;
    if (dims->output_count > widest)
        widest = dims->output_count;
    float *nan = nan_floats(B * T * widest > total ? B * T * widest : total);
    float *nan_params = dev_alloc(total * sizeof(float));
    float *nan_grads = dev_alloc(total * sizeof(float));
    float *nan_loss = dev_alloc(sizeof(float));
    dev_upload(nan_params, nan, total * sizeof(float));
    dev_upload(nan_grads, nan, total * sizeof(float));
    dev_upload(nan_loss, nan, sizeof(float));
    struct tsrnn_model_params p, g;
    tsrnn_model_params_view(&p, dims, nan_params);
    tsrnn_model_params_view(&g, dims, nan_grads);

    OK(tsrnn_compute_batch_load(s->ws, nan, nan, B, T));
    for (size_t l = 0; l < dims->layer_count; l++) {
        const float *mask = l > 0 && dims->dropout > 0.0f ? nan : NULL;
        OK(tsrnn_compute_layer_forward(s->ws, l, &p.layers[l], TSRNN_STATE_ZERO, mask, false));
    }
    OK(tsrnn_compute_head_forward(s->ws, p.v_w, p.v_b));
    OK(tsrnn_compute_state_save(s->ws));
    OK(tsrnn_compute_loss_forward(s->ws, TSRNN_LOSS_MSE, 0.0f, nan_loss));
    OK(tsrnn_compute_loss_backward(s->ws, TSRNN_LOSS_MSE, 0.0f));
    OK(tsrnn_compute_head_backward(s->ws, p.v_w, g.v_w, g.v_b));
    for (size_t l = dims->layer_count; l-- > 0;)
        OK(tsrnn_compute_layer_backward(s->ws, l, &p.layers[l], &g.layers[l]));
    OK(tsrnn_compute_synchronize(ctx));
    dev_free(nan_params);
    dev_free(nan_grads);
    dev_free(nan_loss);
    free(nan);
}

static void subject_init(struct subject *s, const struct draw *d,
                         const struct tsrnn_model_dims *dims, const float *params)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    *s = (struct subject){ .dims = dims };
    tsrnn_param_table_init(&s->table, dims);
    size_t nbytes = s->table.total_count * sizeof(float);
    OK(tsrnn_compute_workspace_create(&s->ws, ctx, dims, d->batch_capacity, d->step_capacity, 1));
    s->params = dev_alloc(nbytes);
    s->grads = dev_alloc(nbytes);
    dev_upload(s->params, params, nbytes);
    tsrnn_model_params_view(&s->p, dims, s->params);
    tsrnn_model_params_view(&s->g, dims, s->grads);
    poison_workspace(s, d);
}

static void subject_finish(struct subject *s)
{
    tsrnn_compute_workspace_destroy(s->ws);
    dev_free(s->params);
    dev_free(s->grads);
}

/* The outputs of the last forward, (T, B, O), each step downloaded into a NaN-poisoned buffer
 * with guards behind it; then every step again in the opposite order, which must give the
 * same bits. */
static void download_outputs(struct subject *s, size_t B, size_t T, float *out)
{
    size_t rows = B * s->dims->output_count;
    float *step = host_floats(rows + GUARD_COUNT);
    float guard[GUARD_COUNT];
    for (size_t i = 0; i < GUARD_COUNT; i++)
        guard[i] = -1234.5f - (float)i;
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t n = 0; n < T; n++) {
            size_t t = pass == 0 ? n : T - 1 - n;
            for (size_t i = 0; i < rows; i++)
                step[i] = NAN;
            memcpy(step + rows, guard, sizeof(guard));
            OK(tsrnn_compute_output(s->ws, t, step));
            check_bits(OP_OUTPUT_DOWNLOAD, "past the end of a step", step + rows, guard,
                       GUARD_COUNT);
            if (pass == 0)
                memcpy(out + t * rows, step, rows * sizeof(float));
            else
                check_bits(OP_OUTPUT_DOWNLOAD, "a step downloaded again", step, out + t * rows,
                           rows);
        }
    free(step);
}

/* The gradients after the backward: V.bias is mse_backward's sum over the batch, V.weight
 * head_backward's, the layers' `layer_op`'s. */
static void check_grads(struct subject *s, const struct ref_model *ref, enum op layer_op)
{
    const struct tsrnn_param_table *table = &s->table;
    float *got = nan_floats(table->total_count);
    dev_download(got, s->grads, table->total_count * sizeof(float));
    for (size_t e = 0; e < table->entry_count; e++) {
        const struct tsrnn_param_entry *entry = &table->entries[e];
        enum op op = layer_op;
        if (strcmp(entry->name, "V.bias") == 0)
            op = OP_MSE_BACKWARD;
        else if (strcmp(entry->name, "V.weight") == 0)
            op = OP_HEAD_BACKWARD;
        size_t shape[2] = { (size_t)entry->shape[0],
                            entry->rank > 1 ? (size_t)entry->shape[1] : 1 };
        check_floats(op, entry->name, NULL, shape, entry->rank, got + entry->offset,
                     ref->grads + entry->offset);
    }
    free(got);
}

static void run_backward(struct subject *s, const float *prefill)
{
    dev_upload(s->grads, prefill, s->table.total_count * sizeof(float));
    OK(tsrnn_compute_loss_backward(s->ws, TSRNN_LOSS_MSE, 0.0f));
    OK(tsrnn_compute_head_backward(s->ws, s->p.v_w, s->g.v_w, s->g.v_b));
    for (size_t l = s->dims->layer_count; l-- > 0;)
        OK(tsrnn_compute_layer_backward(s->ws, l, &s->p.layers[l], &s->g.layers[l]));
}

/* One element of a loss of the out - y error e (dm): its value and dLoss/d(out) for the mean
 * over n elements (backend.h). delta: HuberLoss's delta, SmoothL1Loss's beta. */
static void ref_element_loss(enum tsrnn_loss_kind loss, double delta, struct dm e, size_t n,
                             struct dm *value, struct dm *d_out)
{
    struct dm z = dm_abs(e), norm = dm_in(1.0 / (double)n);
    double sign = e.v > 0.0 ? 1.0 : -1.0;
    if (loss == TSRNN_LOSS_L1) {
        *value = z;
        *d_out = dm_in(e.v == 0.0 ? 0.0 : sign / (double)n);
    } else if (z.v < delta) {
        struct dm half_sq = dm_mul(dm_mul(dm_in(0.5), z), z);
        *value = loss == TSRNN_LOSS_HUBER ? half_sq : dm_div(half_sq, dm_in(delta));
        *d_out = loss == TSRNN_LOSS_HUBER ? dm_mul(norm, e) : dm_mul(norm, dm_div(e, dm_in(delta)));
    } else {
        struct dm excess = dm_sub(z, dm_in(0.5 * delta));
        *value = loss == TSRNN_LOSS_HUBER ? dm_mul(dm_in(delta), excess) : excess;
        *d_out = dm_in(sign * (loss == TSRNN_LOSS_HUBER ? delta : 1.0) / (double)n);
    }
}

/* L1Loss, HuberLoss and SmoothL1Loss (where the backend has them) of the forward in the
 * workspace: the loss, each window's sum, and dLoss/d(out) seen through head_backward's
 * V.bias gradient (the sum over t and b), from zero gradients. SmoothL1Loss with beta 0 must
 * be L1Loss, bit for bit (the door's mapping). */
static void check_other_losses(struct subject *s, const struct draw *d)
{
    const struct tsrnn_compute_caps *caps = tsrnn_compute_caps(cur_config->ctx);
    size_t B = d->B, T = d->T, O = d->dims.output_count, n = B * T * O;
    const struct tsrnn_param_table *table = &s->table;
    const struct tsrnn_param_entry *v_b = &table->entries[table->entry_count - 1];
    static const struct {
        enum tsrnn_loss_kind loss;
        float delta;
        enum op op;
    } losses[] = { { TSRNN_LOSS_L1, 0.0f, OP_L1_LOSS },
                   { TSRNN_LOSS_HUBER, 0.5f, OP_HUBER_LOSS },
                   { TSRNN_LOSS_HUBER, 0.05f, OP_HUBER_LOSS },
                   { TSRNN_LOSS_SMOOTH_L1, 0.5f, OP_SMOOTH_L1_LOSS },
                   { TSRNN_LOSS_SMOOTH_L1, 2.0f, OP_SMOOTH_L1_LOSS } };
    float *zeros = calloc(table->total_count, sizeof(float)), *got = nan_floats(table->total_count);
    double *sums = malloc(B * sizeof(double)), *l1_sums = malloc(B * sizeof(double));
    struct dm *win = dm_alloc(B), *grad = dm_alloc(O);
    assert_true(zeros && sums && l1_sums);
    for (size_t k = 0; k < sizeof(losses) / sizeof(losses[0]); k++) {
        enum tsrnn_loss_kind kind = losses[k].loss;
        float delta = losses[k].delta;
        if (!(kind == TSRNN_LOSS_L1 ? caps->l1_loss : caps->huber_loss))
            continue;
        struct dm total = dm_in(0.0);
        for (size_t o = 0; o < O; o++)
            grad[o] = dm_in(0.0);
        for (size_t b = 0; b < B; b++) {
            win[b] = dm_in(0.0);
            for (size_t t = 0; t < T; t++)
                for (size_t o = 0; o < O; o++) {
                    struct dm e =
                        dm_sub(d->real.out[(t * B + b) * O + o], dm_in(d->y[(b * T + t) * O + o]));
                    struct dm value, d_out;
                    ref_element_loss(kind, delta, e, n, &value, &d_out);
                    win[b] = dm_add(win[b], value);
                    grad[o] = dm_add(grad[o], d_out);
                }
            total = dm_add(total, win[b]);
        }
        struct dm mean = { total.v / (double)n, total.m / (double)n };

        float loss = NAN, *dev_loss = dev_alloc(sizeof(float));
        dev_upload(dev_loss, &loss, sizeof(float));
        OK(tsrnn_compute_loss_forward(s->ws, kind, delta, dev_loss));
        dev_download(&loss, dev_loss, sizeof(float));
        dev_free(dev_loss);
        check_floats(losses[k].op, "loss", NULL, (size_t[]){ 1 }, 1, &loss, &mean);
        for (size_t b = 0; b < B; b++)
            sums[b] = NAN;
        OK(tsrnn_compute_window_errors(s->ws, kind, delta, sums));
        for (size_t b = 0; b < B; b++)
            check_value(losses[k].op, "window sum", "b", (size_t[]){ B }, 1, b, sums[b], win[b]);
        check_end();
        dev_upload(s->grads, zeros, table->total_count * sizeof(float));
        OK(tsrnn_compute_loss_backward(s->ws, kind, delta));
        OK(tsrnn_compute_head_backward(s->ws, s->p.v_w, s->g.v_w, s->g.v_b));
        dev_download(got, s->grads, table->total_count * sizeof(float));
        check_floats(losses[k].op, "V.bias grad", NULL, (size_t[]){ O }, 1, got + v_b->offset,
                     grad);
        if (kind == TSRNN_LOSS_L1) { /* SmoothL1Loss(beta=0) is L1Loss */
            memcpy(l1_sums, sums, B * sizeof(double));
            OK(tsrnn_compute_window_errors(s->ws, TSRNN_LOSS_SMOOTH_L1, 0.0f, sums));
            cur_config->stats[OP_L1_LOSS].checked += B;
            if (memcmp(sums, l1_sums, B * sizeof(double)) != 0)
                fail_msg("SmoothL1Loss with beta 0 on %s: not L1Loss's window sums", where());
        }
    }
    free(zeros);
    free(got);
    free(sums);
    free(l1_sums);
    free(win);
    free(grad);
}

static void run_draw(struct draw *d)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    size_t B = d->B, T = d->T, T2 = d->T2, C = d->dims.input_count, H = d->dims.hidden_count;
    size_t L = d->dims.layer_count;
    float *const *masks = d->masked ? d->masks : NULL;
    struct subject s;
    cur_draw = d->label;

    /* The real model: a training step from zero state. */
    subject_init(&s, d, &d->dims, d->params);
    OK(tsrnn_compute_batch_load(s.ws, d->x, d->y, B, T));
    for (size_t l = 0; l < L; l++)
        OK(tsrnn_compute_layer_forward(s.ws, l, &s.p.layers[l], TSRNN_STATE_ZERO,
                                       masks && l > 0 ? masks[l] : NULL, false));
    OK(tsrnn_compute_head_forward(s.ws, s.p.v_w, s.p.v_b));
    if (tsrnn_compute_kind(ctx) == TSRNN_COMPUTE_CPU) {
        bool packed = tsrnn_cpu_workspace_packed_products(s.ws);
        if (cur_config->gemm_path == TSRNN_GEMM_LOOPS && packed)
            fail_msg("%s: the packed products ran on the reference loops' path", where());
        cur_config->packed_draws += packed;
    }

    float *out = nan_floats(T * B * C);
    download_outputs(&s, B, T, out);
    check_floats(OP_HEAD_FORWARD, "out", "tbo", (size_t[]){ T, B, C }, 3, out, d->real.out);
    free(out);

    float loss = NAN, *dev_loss = dev_alloc(sizeof(float));
    dev_upload(dev_loss, &loss, sizeof(float));
    OK(tsrnn_compute_loss_forward(s.ws, TSRNN_LOSS_MSE, 0.0f, dev_loss));
    dev_download(&loss, dev_loss, sizeof(float));
    dev_free(dev_loss);
    check_floats(OP_MSE_FORWARD, "loss", NULL, (size_t[]){ 1 }, 1, &loss, &d->real.loss);

    double *se = malloc((B + GUARD_COUNT) * sizeof(double));
    assert_non_null(se);
    for (size_t b = 0; b < B + GUARD_COUNT; b++)
        se[b] = b < B ? NAN : -1.0;
    OK(tsrnn_compute_window_errors(s.ws, TSRNN_LOSS_MSE, 0.0f, se));
    for (size_t b = 0; b < B; b++)
        check_value(OP_WINDOW_SQUARED_ERRORS, "se", "b", (size_t[]){ B }, 1, b, se[b],
                    d->real.se[b]);
    check_end();
    for (size_t b = B; b < B + GUARD_COUNT; b++)
        if (se[b] != -1.0)
            fail_msg("window_squared_errors on %s: wrote se[%zu], past B = %zu", where(), b, B);
    free(se);

    run_backward(&s, d->prefill);
    check_grads(&s, &d->real, OP_LAYER_BACKWARD);
    check_other_losses(&s, d);
    subject_finish(&s);

    /* The probe: the same forward, seen through V = identity; then a next batch from the
     * state it ends in (a forecast's next step), and that batch's backward. */
    subject_init(&s, d, &d->probe_dims, d->probe_params);
    OK(tsrnn_compute_batch_load(s.ws, d->x, NULL, B, T));
    for (size_t l = 0; l < L; l++)
        OK(tsrnn_compute_layer_forward(s.ws, l, &s.p.layers[l], TSRNN_STATE_ZERO,
                                       masks && l > 0 ? masks[l] : NULL, false));
    OK(tsrnn_compute_head_forward(s.ws, s.p.v_w, s.p.v_b));
    float *h = nan_floats(T * B * H);
    download_outputs(&s, B, T, h);
    char what[32];
    snprintf(what, sizeof(what), "h of layer %zu", L - 1);
    check_floats(d->masked ? OP_FORWARD_MASKED : OP_FORWARD, what, "tbj", (size_t[]){ T, B, H }, 3,
                 h, d->real.layers[L - 1].h + B * H);
    free(h);

    OK(tsrnn_compute_state_save(s.ws));
    OK(tsrnn_compute_batch_load(s.ws, d->x2, d->y2, B, T2));
    for (size_t l = 0; l < L; l++)
        OK(tsrnn_compute_layer_forward(s.ws, l, &s.p.layers[l], TSRNN_STATE_SAVED, NULL,
                                       d->weights_unchanged));
    OK(tsrnn_compute_head_forward(s.ws, s.p.v_w, s.p.v_b));
    h = nan_floats(T2 * B * H);
    download_outputs(&s, B, T2, h);
    check_floats(OP_FORWARD_SAVED, what, "tbj", (size_t[]){ T2, B, H }, 3, h, d->saved.out);
    free(h);
    run_backward(&s, d->probe_prefill);
    check_grads(&s, &d->saved, OP_LAYER_BACKWARD_SAVED);
    subject_finish(&s);
    cur_draw = "";
}

/* --- the door's whole operations ------------------------------------------------------------ */

#define DOOR_LR 0.5f /* the step's learning rate: large, so that the update shows */

/* SGD's scalars on Adam's operation (include/tsrnn/optim.h): p' = p - lr g exactly, linear in
 * the gradient, so that the reference's gradient and its tolerance carry over. */
static struct tsrnn_step_update sgd_update(void)
{
    return (struct tsrnn_step_update){
        .decay = 1.0f,
        .adam = { .beta1 = 0.0f,
                  .one_minus_beta1 = 1.0f,
                  .beta2 = 0.0f,
                  .one_minus_beta2 = 0.0f,
                  .bias_correction2_sqrt = 1.0f,
                  .eps = 1.0f,
                  .neg_step_size = -DOOR_LR },
    };
}

/* The draw's dropout masks as the step takes them, (L-1, T, B, H); NULL without. */
static float *step_masks(const struct draw *d)
{
    if (!d->masked)
        return NULL;
    size_t n = d->T * d->B * d->dims.hidden_count, L = d->dims.layer_count;
    float *masks = host_floats((L - 1) * n);
    for (size_t l = 1; l < L; l++)
        memcpy(masks + (l - 1) * n, d->masks[l], n * sizeof(float));
    return masks;
}

/* One step through the door from the draw's parameters and zero moments; its results read
 * back. Returns the parameters after it (host). */
static float *door_step(struct tsrnn_workspace *ws, const struct draw *d, const float *x,
                        const float *masks, float clip, bool stop, size_t steps,
                        struct tsrnn_step_results *res, float *losses)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    size_t n = d->real.table.total_count, nbytes = n * sizeof(float);
    struct tsrnn_step_state state = { .params = dev_alloc(nbytes),
                                      .exp_avg = dev_alloc(nbytes),
                                      .exp_avg_sq = dev_alloc(nbytes) };
    dev_upload(state.params, d->params, nbytes);
    OK(tsrnn_compute_zero(ctx, state.exp_avg, nbytes));
    OK(tsrnn_compute_zero(ctx, state.exp_avg_sq, nbytes));
    OK(tsrnn_compute_bind_state(ws, &state));
    for (size_t k = 0; k < steps; k++) {
        struct tsrnn_step_args args = {
            .x = x,
            .y = d->y,
            .batch_count = d->B,
            .step_count = d->T,
            .dropout_masks = masks,
            .loss = TSRNN_LOSS_MSE,
            .clip_max_norm = clip,
            .update = sgd_update(),
            .stop_requested = stop && k == 0,
        };
        OK(tsrnn_compute_step(ws, &args));
    }
    OK(tsrnn_compute_step_results(ws, losses, steps, res));
    float *after = host_floats(n);
    dev_download(after, state.params, nbytes);
    dev_free(state.params);
    dev_free(state.exp_avg);
    dev_free(state.exp_avg_sq);
    return after;
}

/* The door's step with each other optimizer rule and an L2 weight_decay, from a state of
 * earlier steps (random moments, Adagrad's sums positive), against the same gradient from
 * forward_backward with l2_decay and the rule's operation applied by hand: the same bits, so
 * the step orders the penalty before the rule and hands each rule its buffers (RMSprop:
 * square_avg in exp_avg_sq, momentum_buffer in exp_avg, grad_avg; Adagrad: its sum in
 * exp_avg_sq). */
static void check_door_rules(struct tsrnn_workspace *ws, const struct draw *d, const float *masks)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    const struct tsrnn_compute_caps *caps = tsrnn_compute_caps(ctx);
    size_t n = d->real.table.total_count, nbytes = n * sizeof(float);
    struct tsrnn_step_update rules[3] = {
        { .rule = TSRNN_UPDATE_NESTEROV,
          .decay = 1.0f,
          .weight_decay = 0.01f,
          .nesterov = { 0.9f, -0.05f } },
        { .rule = TSRNN_UPDATE_RMSPROP,
          .decay = 1.0f,
          .weight_decay = 0.01f,
          .rmsprop = { 0.9f, 0.1f, 1e-6f, 0.5f, -1e-3f, true } },
        { .rule = TSRNN_UPDATE_ADAGRAD,
          .decay = 1.0f,
          .weight_decay = 0.01f,
          .adagrad = { 1e-10f, -0.05f } },
    };
    bool has[3] = { caps->nesterov, caps->rmsprop, caps->adagrad };
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, SEED, 2000);
    for (size_t r = 0; r < 3; r++) {
        if (!has[r] || !caps->l2_weight_decay)
            continue;
        float *host[4] = { d->params, random_floats(&rng, n, -0.01f, 0.01f),
                           random_floats(&rng, n, 0.0f, 1e-3f),
                           random_floats(&rng, n, -0.001f, 0.001f) };
        float *door[4], *mine[4];
        for (size_t k = 0; k < 4; k++) {
            door[k] = dev_alloc(nbytes);
            mine[k] = dev_alloc(nbytes);
            dev_upload(door[k], host[k], nbytes);
            dev_upload(mine[k], host[k], nbytes);
        }
        struct tsrnn_step_state state = { door[0], door[1], door[2], door[3] };
        OK(tsrnn_compute_bind_state(ws, &state));
        struct tsrnn_step_args args = { .x = d->x,
                                        .y = d->y,
                                        .batch_count = d->B,
                                        .step_count = d->T,
                                        .dropout_masks = masks,
                                        .loss = TSRNN_LOSS_MSE,
                                        .update = rules[r] };
        OK(tsrnn_compute_step(ws, &args));
        float loss;
        struct tsrnn_step_results res;
        OK(tsrnn_compute_step_results(ws, &loss, 1, &res));
        if (res.updated != 1)
            fail_msg("a step with rule %d on %s updated nothing", (int)rules[r].rule, where());

        OK(tsrnn_compute_batch_load(ws, d->x, d->y, d->B, d->T));
        OK(tsrnn_compute_forward_backward(ws, mine[0], masks, TSRNN_LOSS_MSE, 0.0f, &loss));
        float *grads = host_floats(n), *g = dev_alloc(nbytes);
        OK(tsrnn_compute_download_grads(ws, grads));
        dev_upload(g, grads, nbytes);
        OK(tsrnn_compute_l2_decay(ctx, g, mine[0], n, rules[r].weight_decay));
        if (r == 0)
            OK(tsrnn_compute_nesterov_update(ctx, mine[0], mine[1], g, n, &rules[r].nesterov));
        else if (r == 1)
            OK(tsrnn_compute_rmsprop_update(ctx, mine[0], mine[2], mine[1], mine[3], g, n,
                                            &rules[r].rmsprop));
        else
            OK(tsrnn_compute_adagrad_update(ctx, mine[0], mine[2], g, n, &rules[r].adagrad));
        static const char *const names[4] = { "params", "exp_avg", "exp_avg_sq", "grad_avg" };
        float *a = host_floats(n), *b = host_floats(n);
        for (size_t k = 0; k < 4; k++) {
            dev_download(a, door[k], nbytes);
            dev_download(b, mine[k], nbytes);
            check_bits(OP_DOOR_RULES, names[k], a, b, n);
            dev_free(door[k]);
            dev_free(mine[k]);
        }
        if (memcmp(a, host[3], nbytes) == 0 && r == 1)
            fail_msg("a centered RMSprop step on %s left grad_avg as it was", where());
        for (size_t k = 1; k < 4; k++)
            free(host[k]);
        free(a);
        free(b);
        free(grads);
        dev_free(g);
    }
}

/* The door's forward (validation's), its step (with SGD's scalars, and clipped where the
 * backend clips) against the reference, and the step's halts: a stop agreed at the first of
 * two steps updates once; a step over a NaN input updates nothing; with `rules`, the step
 * with each other optimizer rule (check_door_rules: the wiring, which no shape changes, so
 * the first draw of each cell kind). */
static void run_door(struct draw *d, bool halts, bool rules)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    const struct tsrnn_compute_caps *caps = tsrnn_compute_caps(ctx);
    size_t B = d->B, T = d->T, C = d->dims.input_count, n = d->real.table.total_count;
    struct tsrnn_workspace *ws;
    cur_draw = d->label;
    OK(tsrnn_compute_workspace_create(&ws, ctx, &d->dims, d->batch_capacity, d->step_capacity, 4));

    /* Validation's forward: no dropout, so only where the reference drew none. */
    if (!d->masked) {
        float *params = dev_alloc(n * sizeof(float));
        dev_upload(params, d->params, n * sizeof(float));
        OK(tsrnn_compute_forward(ws, params, d->x, d->y, B, T, TSRNN_FORWARD_ZERO));
        float *out = nan_floats(T * B * C), *step = host_floats(B * C);
        for (size_t t = 0; t < T; t++) {
            OK(tsrnn_compute_output(ws, t, step));
            memcpy(out + t * B * C, step, B * C * sizeof(float));
        }
        check_floats(OP_DOOR_FORWARD, "out", "tbo", (size_t[]){ T, B, C }, 3, out, d->real.out);
        double *se = malloc(B * sizeof(double));
        assert_non_null(se);
        OK(tsrnn_compute_window_errors(ws, TSRNN_LOSS_MSE, 0.0f, se));
        for (size_t b = 0; b < B; b++)
            check_value(OP_DOOR_FORWARD, "se", "b", (size_t[]){ B }, 1, b, se[b], d->real.se[b]);
        check_end();
        free(se);
        free(out);
        free(step);
        dev_free(params);
    }

    /* One step: p - lr g, g the reference's gradient (without the prefill the per-layer
     * check accumulated onto). */
    float *masks = step_masks(d), loss;
    struct dm *want = malloc(n * sizeof(*want));
    assert_non_null(want);
    double norm_sq = 0.0, norm_m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = d->real.grads[i].v - (double)d->prefill[i];
        norm_sq += g * g;
        norm_m += fabs(g) * d->real.grads[i].m;
        want[i] = (struct dm){ (double)d->params[i] - DOOR_LR * g,
                               fabs((double)d->params[i]) + DOOR_LR * d->real.grads[i].m };
    }
    struct tsrnn_step_results res;
    float *after = door_step(ws, d, d->x, masks, 0.0f, false, 1, &res, &loss);
    if (res.taken != 1 || res.updated != 1 || res.halt != TSRNN_STEP_RAN)
        fail_msg("step on %s: %zu taken, %zu updated, halt %d", where(), res.taken, res.updated,
                 (int)res.halt);
    check_floats(OP_DOOR_STEP, "params", NULL, (size_t[]){ n }, 1, after, want);
    check_value(OP_DOOR_STEP, "loss", NULL, (size_t[]){ 1 }, 1, 0, loss, d->real.loss);
    check_end();
    free(after);

    /* Clipped to half the gradient's norm: p - lr coef g, coef = max_norm / (norm + 1e-6). */
    if (caps->clipping && norm_sq > 0.0) {
        double norm = sqrt(norm_sq), max_norm = 0.5 * norm, coef = max_norm / (norm + 1e-6);
        double coef_m = coef * norm_m / norm_sq; /* the norm's first-order error, relative */
        for (size_t i = 0; i < n; i++) {
            double g = d->real.grads[i].v - (double)d->prefill[i];
            want[i] = (struct dm){ (double)d->params[i] - DOOR_LR * coef * g,
                                   fabs((double)d->params[i]) +
                                       DOOR_LR * (coef * d->real.grads[i].m + fabs(g) * coef_m) };
        }
        after = door_step(ws, d, d->x, masks, (float)max_norm, false, 1, &res, &loss);
        check_floats(OP_DOOR_STEP_CLIPPED, "params", NULL, (size_t[]){ n }, 1, after, want);
        free(after);
    }

    if (halts) {
        /* The ranks (here: this one) agree to stop at the first of two steps: it updates, the
         * second does not. */
        float losses[2], *once = door_step(ws, d, d->x, masks, 0.0f, false, 1, &res, losses);
        float *twice = door_step(ws, d, d->x, masks, 0.0f, true, 2, &res, losses);
        if (res.taken != 2 || res.updated != 1 || res.halt != TSRNN_STEP_STOPPED ||
            res.halted_at != 0)
            fail_msg("a stop at the first of two steps on %s: %zu taken, %zu updated, halt %d at "
                     "%zu",
                     where(), res.taken, res.updated, (int)res.halt, res.halted_at);
        check_bits(OP_DOOR_HALTS, "params after a stop", twice, once, n);
        free(once);
        free(twice);
        /* A NaN in the input: the loss and gradients are not finite; nothing is updated. */
        float *x = host_floats(B * T * C);
        memcpy(x, d->x, B * T * C * sizeof(float));
        x[0] = NAN;
        float *none = door_step(ws, d, x, masks, 0.0f, false, 2, &res, losses);
        if (res.taken != 2 || res.updated != 0 || res.halt != TSRNN_STEP_DIVERGED ||
            res.halted_at != 0 || !isnan(losses[0]) || !isnan(losses[1]))
            fail_msg("a step over a NaN on %s: %zu taken, %zu updated, halt %d at %zu, losses "
                     "%g %g",
                     where(), res.taken, res.updated, (int)res.halt, res.halted_at,
                     (double)losses[0], (double)losses[1]);
        check_bits(OP_DOOR_HALTS, "params after a divergence", none, d->params, n);
        free(none);
        free(x);
    }
    if (rules)
        check_door_rules(ws, d, masks);
    free(want);
    free(masks);
    tsrnn_compute_workspace_destroy(ws);
    cur_draw = "";
}

/* --- the optimizer's ops and memory, on buffers of their own ------------------------------ */

/* buf *= scale, and whether every element is finite after it; scale 1 must leave the bits. */
static void run_scale_check(struct tsrnn_rng *rng)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    static const size_t counts[] = { 1, 7, 1003 };
    static const float scales[] = { 1.0f, 0.25f, 1.0f / 3.0f, 4.0f }; /* 4: 3e38 overflows */
    enum {
        SPECIAL_NONE,
        SPECIAL_NAN,
        SPECIAL_INF,
        SPECIAL_MINUS_INF,
        SPECIAL_OVERFLOW,
        SPECIAL_COUNT
    };

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t count = counts[c];
        float *base = random_floats(rng, count, -2.0f, 2.0f);
        float *host = host_floats(count), *want = host_floats(count), *got = host_floats(count);
        float *dev = dev_alloc(count * sizeof(float));
        for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++)
            for (int special = SPECIAL_NONE; special < SPECIAL_COUNT; special++)
                for (size_t place = 0; place < (special == SPECIAL_NONE ? 1u : 3u); place++) {
                    memcpy(host, base, count * sizeof(float));
                    size_t at = place == 0 ? 0 : place == 1 ? count / 2 : count - 1;
                    float value[] = { 0.0f, NAN, INFINITY, -INFINITY, 3e38f };
                    if (special != SPECIAL_NONE)
                        host[at] = value[special];
                    bool want_finite = true;
                    for (size_t i = 0; i < count; i++) {
                        want[i] = scales[s] == 1.0f ? host[i] : host[i] * scales[s];
                        want_finite = want_finite && isfinite(want[i]);
                    }
                    dev_upload(dev, host, count * sizeof(float));
                    bool finite = !want_finite;
                    OK(tsrnn_compute_scale_check(ctx, dev, count, scales[s], &finite));
                    for (size_t i = 0; i < count; i++)
                        got[i] = NAN;
                    dev_download(got, dev, count * sizeof(float));
                    check_bits(OP_SCALE_CHECK, "buf", got, want, count);
                    cur_config->stats[OP_SCALE_CHECK].checked++;
                    if (finite != want_finite)
                        fail_msg("scale_check on %s: count %zu, scale %g, element %zu = "
                                 "%g: finite %d, expected %d",
                                 where(), count, (double)scales[s], at, (double)host[at], finite,
                                 want_finite);
                }
        dev_free(dev);
        free(base);
        free(host);
        free(want);
        free(got);
    }
}

/* Adam's scalars for step `step` as src/optim/adam.c makes them. */
static struct tsrnn_adam_scalars adam_scalars(double lr, uint64_t step)
{
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double bias_correction1 = 1.0 - pow(beta1, (double)step);
    double bias_correction2 = 1.0 - pow(beta2, (double)step);
    return (struct tsrnn_adam_scalars){
        .beta1 = (float)beta1,
        .one_minus_beta1 = (float)(1.0 - beta1),
        .beta2 = (float)beta2,
        .one_minus_beta2 = (float)(1.0 - beta2),
        .bias_correction2_sqrt = (float)sqrt(bias_correction2),
        .eps = (float)eps,
        .neg_step_size = (float)-(lr / bias_correction1),
    };
}

/* torch.optim.Adam's update (include/tsrnn/optim.h) on the float32 scalars the op is given. */
static void run_adam_update(struct tsrnn_rng *rng)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    const size_t count = 1003;
    static const struct {
        double lr;
        uint64_t step;
    } cases[] = { { 1e-3, 1 }, { 0.05, 7 } };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct tsrnn_adam_scalars s = adam_scalars(cases[c].lr, cases[c].step);
        bool first = cases[c].step == 1; /* the moments start at zero */
        float *p = random_floats(rng, count, -0.1f, 0.1f);
        float *m = random_floats(rng, count, -0.01f, 0.01f);
        float *v = random_floats(rng, count, 0.0f, 1e-4f);
        float *g = random_floats(rng, count, -0.1f, 0.1f);
        for (size_t i = 0; i < count; i++) {
            if (first)
                m[i] = v[i] = 0.0f;
            if (i % 97 == 0)
                g[i] = 0.0f;
            if (i % 3 == 0) /* the update alone: its tolerance is not the parameter's */
                p[i] = 0.0f;
        }
        struct dm *want_p = dm_alloc(count), *want_m = dm_alloc(count), *want_v = dm_alloc(count);
        for (size_t i = 0; i < count; i++) {
            struct dm gi = dm_in(g[i]);
            want_m[i] =
                dm_add(dm_mul(dm_in(m[i]), dm_in(s.beta1)), dm_mul(dm_in(s.one_minus_beta1), gi));
            want_v[i] = dm_add(dm_mul(dm_in(v[i]), dm_in(s.beta2)),
                               dm_mul(dm_mul(dm_in(s.one_minus_beta2), gi), gi));
            struct dm denom =
                dm_add(dm_div(dm_sqrt(want_v[i]), dm_in(s.bias_correction2_sqrt)), dm_in(s.eps));
            want_p[i] =
                dm_add(dm_in(p[i]), dm_div(dm_mul(dm_in(s.neg_step_size), want_m[i]), denom));
        }

        float *bufs[4] = { p, m, v, g }, *dev[4];
        for (size_t b = 0; b < 4; b++) {
            dev[b] = dev_alloc(count * sizeof(float));
            dev_upload(dev[b], bufs[b], count * sizeof(float));
        }
        OK(tsrnn_compute_adam_update(ctx, dev[0], dev[1], dev[2], dev[3], count, &s));
        float *got = nan_floats(count);
        static const char *const names[3] = { "params", "exp_avg", "exp_avg_sq" };
        const struct dm *want[3] = { want_p, want_m, want_v };
        for (size_t b = 0; b < 3; b++) {
            for (size_t i = 0; i < count; i++)
                got[i] = NAN;
            dev_download(got, dev[b], count * sizeof(float));
            check_floats(OP_ADAM_UPDATE, names[b], NULL, (size_t[]){ count }, 1, got, want[b]);
        }
        dev_download(got, dev[3], count * sizeof(float));
        check_bits(OP_ADAM_UPDATE, "grads (an input)", got, g, count);
        for (size_t b = 0; b < 4; b++) {
            dev_free(dev[b]);
            free(bufs[b]);
        }
        free(got);
        free(want_p);
        free(want_m);
        free(want_v);
    }
}

/* Device copies of host buffers, an op on them, their results checked against references:
 * the helper of the optimizer ops below. */
struct op_buffers {
    size_t count, n;
    float *host[5], *dev[5];
};

static void op_buffers_init(struct op_buffers *b, size_t count, float *const *host, size_t n)
{
    *b = (struct op_buffers){ .count = count, .n = n };
    for (size_t i = 0; i < n; i++) {
        b->host[i] = host[i];
        b->dev[i] = dev_alloc(count * sizeof(float));
        dev_upload(b->dev[i], host[i], count * sizeof(float));
    }
}

/* Buffer i against want (NULL: must be unchanged, bit for bit), then everything freed. */
static void op_buffers_check(struct op_buffers *b, enum op op, const char *const *names,
                             struct dm *const *want)
{
    float *got = nan_floats(b->count);
    for (size_t i = 0; i < b->n; i++) {
        for (size_t k = 0; k < b->count; k++)
            got[k] = NAN;
        dev_download(got, b->dev[i], b->count * sizeof(float));
        if (want[i] != NULL)
            check_floats(op, names[i], NULL, (size_t[]){ b->count }, 1, got, want[i]);
        else
            check_bits(op, names[i], got, b->host[i], b->count);
        dev_free(b->dev[i]);
        free(b->host[i]);
        free(want[i]);
    }
    free(got);
}

/* grads + weight_decay * params (PyTorch's grad.add(param, alpha=weight_decay)). */
static void run_l2_decay(struct tsrnn_rng *rng)
{
    const size_t count = 1003;
    float *g = random_floats(rng, count, -0.1f, 0.1f), *p = random_floats(rng, count, -1, 1);
    const float wd = 0.01f;
    struct dm *want = dm_alloc(count);
    for (size_t i = 0; i < count; i++)
        want[i] = dm_add(dm_in(g[i]), dm_mul(dm_in(wd), dm_in(p[i])));
    struct op_buffers b;
    op_buffers_init(&b, count, (float *[]){ g, p }, 2);
    OK(tsrnn_compute_l2_decay(cur_config->ctx, b.dev[0], b.dev[1], count, wd));
    op_buffers_check(&b, OP_L2_DECAY, (const char *[]){ "grads", "params (an input)" },
                     (struct dm *[]){ want, NULL });
}

/* SGD with Nesterov momentum (include/tsrnn/optim.h), from a momentum buffer of earlier
 * steps and from zero (the first step). */
static void run_nesterov_update(struct tsrnn_rng *rng)
{
    const size_t count = 1003;
    for (int first = 0; first < 2; first++) {
        const struct tsrnn_nesterov_scalars sc = { 0.9f, -0.05f };
        float *p = random_floats(rng, count, -0.5f, 0.5f);
        float *buf = random_floats(rng, count, -0.05f, 0.05f);
        float *g = random_floats(rng, count, -0.1f, 0.1f);
        struct dm *want_p = dm_alloc(count), *want_b = dm_alloc(count);
        for (size_t i = 0; i < count; i++) {
            if (first)
                buf[i] = 0.0f;
            if (i % 3 == 0)
                p[i] = 0.0f; /* the update alone */
            struct dm gi = dm_in(g[i]);
            want_b[i] = dm_add(dm_mul(dm_in(buf[i]), dm_in(sc.momentum)), gi);
            struct dm step = dm_add(gi, dm_mul(dm_in(sc.momentum), want_b[i]));
            want_p[i] = dm_add(dm_in(p[i]), dm_mul(dm_in(sc.neg_lr), step));
        }
        struct op_buffers b;
        op_buffers_init(&b, count, (float *[]){ p, buf, g }, 3);
        OK(tsrnn_compute_nesterov_update(cur_config->ctx, b.dev[0], b.dev[1], b.dev[2], count,
                                         &sc));
        op_buffers_check(&b, OP_NESTEROV_UPDATE,
                         (const char *[]){ "params", "momentum_buffer", "grads (an input)" },
                         (struct dm *[]){ want_p, want_b, NULL });
    }
}

/* RMSprop (optim.h) in its four forms, and alpha below 0.5 (ATen's other lerp branch);
 * square_avg >= grad_avg^2, as the running averages keep it. */
static void run_rmsprop_update(struct tsrnn_rng *rng)
{
    const size_t count = 1003;
    static const struct tsrnn_rmsprop_scalars cases[] = {
        { 0.99f, 0.01f, 1e-8f, 0.0f, -1e-3f, false }, { 0.99f, 0.01f, 1e-8f, 0.9f, -1e-3f, false },
        { 0.9f, 0.1f, 1e-6f, 0.0f, -1e-3f, true },    { 0.9f, 0.1f, 1e-6f, 0.5f, -1e-2f, true },
        { 0.3f, 0.7f, 1e-8f, 0.5f, -1e-3f, true },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct tsrnn_rmsprop_scalars *sc = &cases[c];
        float *p = random_floats(rng, count, -0.5f, 0.5f);
        float *v = random_floats(rng, count, 5e-5f, 1e-4f);
        float *buf = random_floats(rng, count, -0.05f, 0.05f);
        float *a = random_floats(rng, count, -0.005f, 0.005f);
        float *g = random_floats(rng, count, -0.1f, 0.1f);
        struct dm *want_p = dm_alloc(count), *want_v = dm_alloc(count);
        struct dm *want_b = sc->momentum > 0.0f ? dm_alloc(count) : NULL;
        struct dm *want_a = sc->centered ? dm_alloc(count) : NULL;
        double w = sc->one_minus_alpha;
        for (size_t i = 0; i < count; i++) {
            if (i % 3 == 0)
                p[i] = 0.0f;
            if (i % 97 == 0)
                g[i] = 0.0f;
            struct dm gi = dm_in(g[i]);
            want_v[i] =
                dm_add(dm_mul(dm_in(v[i]), dm_in(sc->alpha)), dm_mul(dm_mul(dm_in(w), gi), gi));
            struct dm avg;
            if (sc->centered) {
                struct dm ai = dm_in(a[i]), diff = dm_sub(gi, ai);
                want_a[i] = fabs(w) < 0.5 ? dm_add(ai, dm_mul(dm_in(w), diff))
                                          : dm_sub(gi, dm_mul(diff, dm_in((float)(1.0 - w))));
                avg = dm_sqrt(dm_sub(want_v[i], dm_mul(want_a[i], want_a[i])));
            } else {
                avg = dm_sqrt(want_v[i]);
            }
            avg = dm_add(avg, dm_in(sc->eps));
            if (sc->momentum > 0.0f) {
                want_b[i] = dm_add(dm_mul(dm_in(buf[i]), dm_in(sc->momentum)), dm_div(gi, avg));
                want_p[i] = dm_add(dm_in(p[i]), dm_mul(dm_in(sc->neg_lr), want_b[i]));
            } else {
                want_p[i] = dm_add(dm_in(p[i]), dm_div(dm_mul(dm_in(sc->neg_lr), gi), avg));
            }
        }
        struct op_buffers b;
        op_buffers_init(&b, count, (float *[]){ p, v, buf, a, g }, 5);
        OK(tsrnn_compute_rmsprop_update(cur_config->ctx, b.dev[0], b.dev[1], b.dev[2], b.dev[3],
                                        b.dev[4], count, sc));
        op_buffers_check(&b, OP_RMSPROP_UPDATE,
                         (const char *[]){ "params", "square_avg", "momentum_buffer", "grad_avg",
                                           "grads (an input)" },
                         (struct dm *[]){ want_p, want_v, want_b, want_a, NULL });
    }
}

/* Adagrad (optim.h), from sums of earlier steps and from initial_accumulator_value 0. */
static void run_adagrad_update(struct tsrnn_rng *rng)
{
    const size_t count = 1003;
    for (int first = 0; first < 2; first++) {
        const struct tsrnn_adagrad_scalars sc = { 1e-10f, first ? -0.05f : -0.0123f };
        float *p = random_floats(rng, count, -0.5f, 0.5f);
        float *sum = random_floats(rng, count, 0.0f, 0.5f);
        float *g = random_floats(rng, count, -0.1f, 0.1f);
        struct dm *want_p = dm_alloc(count), *want_s = dm_alloc(count);
        for (size_t i = 0; i < count; i++) {
            if (first)
                sum[i] = 0.0f;
            if (i % 3 == 0)
                p[i] = 0.0f;
            if (i % 97 == 0)
                g[i] = 0.0f; /* 0 / (0 + eps) */
            struct dm gi = dm_in(g[i]);
            want_s[i] = dm_add(dm_in(sum[i]), dm_mul(gi, gi));
            struct dm std = dm_add(dm_sqrt(want_s[i]), dm_in(sc.eps));
            want_p[i] = dm_add(dm_in(p[i]), dm_div(dm_mul(dm_in(sc.neg_clr), gi), std));
        }
        struct op_buffers b;
        op_buffers_init(&b, count, (float *[]){ p, sum, g }, 3);
        OK(tsrnn_compute_adagrad_update(cur_config->ctx, b.dev[0], b.dev[1], b.dev[2], count, &sc));
        op_buffers_check(&b, OP_ADAGRAD_UPDATE,
                         (const char *[]){ "params", "state_sum", "grads (an input)" },
                         (struct dm *[]){ want_p, want_s, NULL });
    }
}

/* alloc, upload, download and zero, whole buffers and ranges at odd offsets into them. */
static void run_memory(struct tsrnn_rng *rng)
{
    struct tsrnn_compute *ctx = cur_config->ctx;
    static const size_t sizes[] = { 1, 3, 64, 1001, (1u << 20) + 5 };

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s], off = n / 3, len = n - off - n / 4;
        unsigned char *buf = dev_alloc(n);
        unsigned char *want = malloc(n), *got = malloc(n), *part = malloc(n);
        assert_true(want && got && part);
        for (size_t i = 0; i < n; i++) {
            want[i] = (unsigned char)tsrnn_rng_next(rng);
            part[i] = (unsigned char)tsrnn_rng_next(rng);
        }
        dev_upload(buf, want, n);
        for (int step = 0; step < 4; step++) {
            if (step == 1 && len > 0) { /* a range, through an offset device pointer */
                dev_upload(buf + off, part, len);
                memcpy(want + off, part, len);
            } else if (step == 2 && len > 0) {
                OK(tsrnn_compute_zero(ctx, buf + off, len));
                memset(want + off, 0, len);
            } else if (step == 3) {
                OK(tsrnn_compute_zero(ctx, buf, n));
                memset(want, 0, n);
            }
            OK(tsrnn_compute_synchronize(ctx));
            memset(got, 0xA5, n);
            dev_download(got, buf, n);
            cur_config->stats[OP_MEMORY].checked += n;
            for (size_t i = 0; i < n; i++)
                if (got[i] != want[i])
                    fail_msg("memory on %s: %zu bytes, step %d: byte %zu = 0x%02x, expected "
                             "0x%02x",
                             where(), n, step, i, got[i], want[i]);
            if (len > 0) { /* a range back from an offset */
                memset(got, 0xA5, n);
                dev_download(got, buf + off, len);
                cur_config->stats[OP_MEMORY].checked += len;
                if (memcmp(got, want + off, len) != 0 || (len < n && got[len] != 0xA5))
                    fail_msg("memory on %s: %zu bytes from offset %zu of %zu, step %d, "
                             "differ",
                             where(), len, off, n, step);
            }
        }
        dev_free(buf);
        free(want);
        free(got);
        free(part);
    }
}

/* --- per backend -------------------------------------------------------------------------- */

static void print_table(const char *backend, struct config *configs, size_t config_count,
                        size_t draw_count)
{
    printf("# %s: %zu draws; tolerance |err| <= %g * magnitude + %g\n", backend, draw_count, RTOL,
           ATOL);
    printf("# %-16s %-34s %9s %10s %8s  %s\n", "config", "op", "checked", "max |err|", "err/tol",
           "worst at");
    for (size_t c = 0; c < config_count; c++)
        for (size_t op = 0; op < OP_COUNT; op++) {
            const struct op_stat *st = &configs[c].stats[op];
            printf("# %-16s %-34s %9zu %10.3g %8.4f  %s\n", configs[c].name, op_names[op],
                   st->checked, st->max_err, st->max_ratio, st->worst);
        }
}

static const enum tsrnn_compute_kind kinds[] = { TSRNN_COMPUTE_CPU, TSRNN_COMPUTE_CUDA,
                                                 TSRNN_COMPUTE_PJRT };

/* pjrt: its plugin (TSRNN_PJRT_PLUGIN, else where scripts/install-deps.sh unpacks XLA's CPU
 * plugin), or NULL with the reason. */
static const char *pjrt_plugin(char *why, size_t why_nbytes)
{
    const char *env = getenv("TSRNN_PJRT_PLUGIN");
    const char *path = env != NULL && env[0] ? env : getenv("TSRNN_PJRT_PLUGIN_DEFAULT");
    if (path == NULL || access(path, R_OK) != 0) {
        snprintf(why, why_nbytes, "no PJRT plugin at %s (scripts/install-deps.sh caches one)",
                 path ? path : "(TSRNN_PJRT_PLUGIN unset)");
        return NULL;
    }
    return path;
}

static void test_backend(void **state)
{
    enum tsrnn_compute_kind kind = *(const enum tsrnn_compute_kind *)*state;
    char why[256] = "";
    cur_backend = tsrnn_compute_kind_name(kind);
    const char *plugin = NULL;
    if (!tsrnn_compute_available(kind, why, sizeof(why)) ||
        (kind == TSRNN_COMPUTE_PJRT && (plugin = pjrt_plugin(why, sizeof(why))) == NULL)) {
        printf("# %s: skipped: %s\n", cur_backend, why);
        skip();
    }
    if (kind == TSRNN_COMPUTE_PJRT) {
        /* No per-layer operations (caps.layer_ops): its whole ones through the door (each
         * draw's programs compiled anew: the first three draws, one of each cell), and memory.
         * test_pjrt checks its steps against the CPU backend's over whole runs. */
        struct config pjrt = { .name = "XLA CPU plugin", .thread_count = 1, .gemm_path = -1 };
        struct tsrnn_compute_options options = { .kind = kind, .plugin_path = plugin };
        struct tsrnn_rng rng;
        cur_config = &pjrt;
        OK(tsrnn_compute_create(&pjrt.ctx, &options));
        for (size_t i = 0; i < 3; i++) {
            struct draw d;
            draw_init(&d, i);
            run_door(&d, i == 0, i < 3);
            draw_finish(&d);
        }
        tsrnn_rng_init(&rng, SEED, 1000);
        run_memory(&rng);
        print_table(cur_backend, &pjrt, 1, 3);
        tsrnn_compute_destroy(pjrt.ctx);
        return;
    }

    struct config cpu_configs[] = {
        { .name = "auto, 1 thread", .thread_count = 1, .gemm_path = TSRNN_GEMM_AUTO },
        { .name = "auto, 2 threads", .thread_count = 2, .gemm_path = TSRNN_GEMM_AUTO },
        { .name = "loops, 1 thread", .thread_count = 1, .gemm_path = TSRNN_GEMM_LOOPS },
        { .name = "loops, 2 threads", .thread_count = 2, .gemm_path = TSRNN_GEMM_LOOPS },
    };
    struct config device_configs[] = { { .name = "device 0", .thread_count = 1, .gemm_path = -1 } };
    bool cpu = kind == TSRNN_COMPUTE_CPU;
    struct config *configs = cpu ? cpu_configs : device_configs;
    size_t config_count = cpu ? sizeof(cpu_configs) / sizeof(cpu_configs[0]) : 1;

    for (size_t c = 0; c < config_count; c++) {
        struct tsrnn_compute_options options = { .kind = kind,
                                                 .thread_count = configs[c].thread_count };
        cur_config = &configs[c];
        OK(tsrnn_compute_create(&configs[c].ctx, &options));
        if (cpu)
            ((struct tsrnn_cpu *)configs[c].ctx)->gemm_path =
                (enum tsrnn_gemm_path)configs[c].gemm_path;
    }
    size_t draw_count = 0;
    for (size_t i = 0; i < DRAW_COUNT; i++) {
        if (cpu && draw_specs[i].device_only)
            continue;
        draw_count++;
        struct draw d;
        draw_init(&d, i);
        printf("# draw %2zu: %-34s T2=%zu capacity %zux%zu: %s\n", i, d.label, d.T2,
               d.batch_capacity, d.step_capacity, d.why);
        for (size_t c = 0; c < config_count; c++) {
            cur_config = &configs[c];
            run_draw(&d);
            run_door(&d, i == 0, i < 3);
        }
        draw_finish(&d);
    }
    for (size_t c = 0; c < config_count; c++) {
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, SEED, 1000);
        cur_config = &configs[c];
        run_scale_check(&rng);
        run_adam_update(&rng);
        const struct tsrnn_compute_caps *caps = tsrnn_compute_caps(configs[c].ctx);
        if (caps->l2_weight_decay)
            run_l2_decay(&rng);
        if (caps->nesterov)
            run_nesterov_update(&rng);
        if (caps->rmsprop)
            run_rmsprop_update(&rng);
        if (caps->adagrad)
            run_adagrad_update(&rng);
        run_memory(&rng);
    }
    print_table(cur_backend, configs, config_count, draw_count);

    /* The fast path must have been under test where this CPU has it. */
    if (cpu && tsrnn_cpu_packed_kernel_available()) {
        printf("# packed products ran in %zu of %zu draws (auto)\n", configs[0].packed_draws,
               draw_count);
        assert_true(configs[0].packed_draws > 0 && configs[1].packed_draws > 0);
    }
    for (size_t c = 0; c < config_count; c++)
        tsrnn_compute_destroy(configs[c].ctx);
}

/* What the door refuses, for every backend alike, before a backend sees it: a batch larger
 * than the workspace (on the CPU backend that was a heap overflow: its batch_load copied
 * whatever it was given), a window longer than it, an empty batch, a step without its bound
 * state or targets, masks where the model has no dropout and none where it has, more steps
 * than the results hold unread, a forward from saved states with another batch, a loss the
 * backend lacks. */
static void test_door_refuses(void **state)
{
    (void)state;
    struct config cpu = { .name = "door", .thread_count = 1, .gemm_path = TSRNN_GEMM_AUTO };
    struct tsrnn_compute_options options = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    cur_config = &cpu;
    cur_backend = "cpu";
    OK(tsrnn_compute_create(&cpu.ctx, &options));
    const size_t B = 3, T = 4, C = 2, H = 5;
    struct tsrnn_model_dims dims = { TSRNN_MODEL_GRU, C, H, 2, C, 0.25, 1 };
    struct tsrnn_workspace *ws;
    OK(tsrnn_compute_workspace_create(&ws, cpu.ctx, &dims, B, T, 2));
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, SEED, 77);
    float *x = random_floats(&rng, (B + 1) * (T + 1) * C, -1, 1);
    float *y = random_floats(&rng, (B + 1) * (T + 1) * C, -1, 1);
    float *masks = random_floats(&rng, (B + 1) * (T + 1) * H, 0, 1);
#define REFUSED(call, text)                                                                        \
    do {                                                                                           \
        assert_int_equal((call), TSRNN_ERR_USAGE);                                                 \
        tu_expect_in(tsrnn_last_error(), text);                                                    \
    } while (0)
    REFUSED(tsrnn_compute_batch_load(ws, x, y, B + 1, T),
            "a batch of 4 windows of 4 steps does not fit the workspace made for up to 3 windows "
            "of up to 4 steps");
    REFUSED(tsrnn_compute_batch_load(ws, x, y, B, T + 1), "of 5 steps does not fit");
    REFUSED(tsrnn_compute_batch_load(ws, x, y, 0, T), "a batch of 0 windows");
    struct tsrnn_step_args args = { .x = x,
                                    .y = y,
                                    .batch_count = B,
                                    .step_count = T,
                                    .dropout_masks = masks,
                                    .update = { .decay = 1.0f } };
    REFUSED(tsrnn_compute_step(ws, &args), "the state bound to its workspace");
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &dims);
    size_t nbytes = table.total_count * sizeof(float);
    struct tsrnn_step_state st = { dev_alloc(nbytes), dev_alloc(nbytes), dev_alloc(nbytes), NULL };
    float *zeros = calloc(table.total_count, sizeof(float));
    dev_upload(st.params, zeros, nbytes);
    dev_upload(st.exp_avg, zeros, nbytes);
    dev_upload(st.exp_avg_sq, zeros, nbytes);
    OK(tsrnn_compute_bind_state(ws, &st));
    args.batch_count = B + 1;
    REFUSED(tsrnn_compute_step(ws, &args), "does not fit the workspace");
    args.batch_count = B;
    args.dropout_masks = NULL;
    REFUSED(tsrnn_compute_step(ws, &args), "a model with dropout takes its dropout masks");
    args.dropout_masks = masks;
    args.y = NULL;
    REFUSED(tsrnn_compute_step(ws, &args), "needs targets");
    args.y = y;
    /* a centered RMSprop step without grad_avg bound; a Huber delta PyTorch refuses */
    args.update = (struct tsrnn_step_update){ .rule = TSRNN_UPDATE_RMSPROP,
                                              .decay = 1.0f,
                                              .rmsprop = { .alpha = 0.99f, .centered = true } };
    REFUSED(tsrnn_compute_step(ws, &args),
            "a centered RMSprop update needs its grad_avg buffer in the step's state");
    args.update = (struct tsrnn_step_update){ .rule = (enum tsrnn_update_rule)9, .decay = 1.0f };
    REFUSED(tsrnn_compute_step(ws, &args), "unknown optimizer rule 9");
    args.update = (struct tsrnn_step_update){ .decay = 1.0f };
    args.loss = TSRNN_LOSS_HUBER;
    REFUSED(tsrnn_compute_step(ws, &args), "HuberLoss's delta = 0; accepted: a finite number > 0");
    args.loss = TSRNN_LOSS_SMOOTH_L1;
    args.loss_delta = -1.0f;
    REFUSED(tsrnn_compute_step(ws, &args), "SmoothL1Loss's beta = -1");
    args.loss = TSRNN_LOSS_MSE;
    args.loss_delta = 0.0f;
    OK(tsrnn_compute_step(ws, &args));
    OK(tsrnn_compute_step(ws, &args));
    REFUSED(tsrnn_compute_step(ws, &args), "2 steps since their results were read");
    float losses[2];
    struct tsrnn_step_results res;
    REFUSED(tsrnn_compute_step_results(ws, losses, 1, &res), "room for 1 step losses");
    OK(tsrnn_compute_step_results(ws, losses, 2, &res));
    assert_int_equal(res.taken, 2);
    OK(tsrnn_compute_forward(ws, st.params, x, NULL, B, T, TSRNN_FORWARD_ZERO));
    REFUSED(tsrnn_compute_forward(ws, st.params, x, NULL, B - 1, 1, TSRNN_FORWARD_SAVED),
            "takes the last forward's 3 windows, not 2");
    REFUSED(tsrnn_compute_window_errors(ws, TSRNN_LOSS_MSE, 0.0f, NULL), "with targets first");
    REFUSED(tsrnn_compute_layer_forward(ws, 0, NULL, TSRNN_STATE_ZERO, NULL, false),
            "layer_forward of layer 0");
    REFUSED(tsrnn_compute_layer_forward(ws, 2, NULL, TSRNN_STATE_ZERO, NULL, false),
            "of a model of 2 layers");
#undef REFUSED
    free(zeros);
    free(x);
    free(y);
    free(masks);
    dev_free(st.params);
    dev_free(st.exp_avg);
    dev_free(st.exp_avg_sq);
    tsrnn_compute_workspace_destroy(ws);
    tsrnn_compute_destroy(cpu.ctx);
}

int main(void)
{
    size_t kind_count = sizeof(kinds) / sizeof(kinds[0]);
    struct CMUnitTest tests[sizeof(kinds) / sizeof(kinds[0]) + 1];
    bool any = false;
    for (size_t k = 0; k < kind_count; k++) {
        any = any || tsrnn_compute_available(kinds[k], NULL, 0);
        tests[k] = (struct CMUnitTest){ .name = tsrnn_compute_kind_name(kinds[k]),
                                        .test_func = test_backend,
                                        .initial_state = (void *)&kinds[k] };
    }
    if (!any) {
        printf("# no compute backend can run here\n");
        return 77;
    }
    tests[kind_count] =
        (struct CMUnitTest){ .name = "door_refuses", .test_func = test_door_refuses };
    return _cmocka_run_group_tests("backend_ops", tests, kind_count + 1, NULL, NULL);
}
