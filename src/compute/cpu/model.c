/* The CPU backend's workspace, recurrent layers and head (backend.h): activations
 * time-major, (T, B, .), so that one GEMM covers the input projection of all steps and one
 * covers each weight gradient; only the recurrence walks the steps, split by batch rows among
 * the context's threads for large layers. The cell math lives in rnn.c / lstm.c / gru.c, the
 * losses over the head's outputs in loss.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "tsrnn/arena.h"
#include "workspace.h"

/* Activations above this are refused up front (and size_t products below cannot overflow). */
#define MAX_CACHE_NBYTES (1ull << 40)

/* Layers with this few inputs (a univariate series has 1) do their input projection and its
 * gradients step by step, while the step's rows are in cache; wider inputs get one GEMM over
 * all steps, which does more with the memory it reads. Same products either way. */
#define STEPWISE_MAX_INPUTS 8

/* From this many recurrent weights (H x G*H) on, the per-step products run on packed weights;
 * below it they stay in the reference loops (the Darts guide's model among them). */
#define PACKED_MIN_WEIGHTS (128 * 128)

/* Whether layer l can run tsrnn_cpu_rnn_lanes_forward(): an RNN layer of few units and inputs
 * (the input projection step by step). */
static bool rnn_lanes_fits(const struct tsrnn_model_dims *dims, size_t l)
{
    size_t input_count = l == 0 ? dims->input_count : dims->hidden_count;
    return dims->kind == TSRNN_MODEL_RNN && dims->hidden_count <= TSRNN_CPU_RNN_LANES_MAX_HIDDEN &&
           input_count <= TSRNN_CPU_RNN_LANES_MAX_INPUTS && input_count <= STEPWISE_MAX_INPUTS;
}

const struct tsrnn_cell *tsrnn_cell_for(enum tsrnn_model_kind kind)
{
    switch (kind) {
    case TSRNN_MODEL_LSTM:
        return &tsrnn_cell_lstm;
    case TSRNN_MODEL_GRU:
        return &tsrnn_cell_gru;
    case TSRNN_MODEL_RNN:
        break;
    }
    return &tsrnn_cell_rnn;
}

static void layout(struct cpu_workspace *ws, struct tsrnn_arena *arena, size_t B, size_t T)
{
    const struct tsrnn_model_dims *dims = &ws->dims;
    const struct tsrnn_cell *cell = ws->cell;
    size_t GH = cell->gate_count * dims->hidden_count, H = dims->hidden_count;
    size_t L = dims->layer_count;
    bool packed = ws->packed_recurrence, dropout = L > 1 && dims->dropout > 0.0f;

    ws->x = tsrnn_arena_floats(arena, T * B * dims->input_count);
    ws->y = tsrnn_arena_floats(arena, T * B * dims->output_count);
    ws->out = tsrnn_arena_floats(arena, T * B * tsrnn_model_head_count(dims));
    ws->d_out = tsrnn_arena_floats(arena, T * B * tsrnn_model_head_count(dims));
    for (size_t l = 0; l < L; l++) {
        struct layer_cache *lc = &ws->layers[l];
        *lc = (struct layer_cache){ 0 };
        lc->gates = tsrnn_arena_floats(arena, T * B * GH);
        lc->h = tsrnn_arena_floats(arena, (T + 1) * B * H);
        if (cell->has_cell_state)
            lc->c = tsrnn_arena_floats(arena, (T + 1) * B * H);
        if (cell->has_cell_state || cell->separate_d_hg)
            lc->aux = tsrnn_arena_floats(arena, T * B * H);
        lc->w_ih_t = tsrnn_arena_floats(arena, (l == 0 ? dims->input_count : H) * GH);
        lc->w_hh_t = tsrnn_arena_floats(arena, H * GH);
        if (packed)
            lc->w_hh_packed = tsrnn_arena_floats(arena, tsrnn_cpu_packed_count(H, GH));
        if (rnn_lanes_fits(dims, l)) {
            lc->w_lanes = tsrnn_arena_floats(
                arena, tsrnn_cpu_rnn_lanes_count(l == 0 ? dims->input_count : H, H));
            lc->h_lanes = tsrnn_arena_floats(arena, T * H * B);
        }
    }
    if (packed)
        ws->w_hh_packed_bwd = tsrnn_arena_floats(arena, tsrnn_cpu_packed_count(GH, H));
    for (size_t l = 1; dropout && l < L; l++) {
        ws->layers[l].mask = tsrnn_arena_floats(arena, T * B * H);
        ws->layers[l].dropped = tsrnn_arena_floats(arena, T * B * H);
    }
    ws->d_h = tsrnn_arena_floats(arena, T * B * H);
    ws->d_xg = tsrnn_arena_floats(arena, T * B * GH);
    ws->d_hg = cell->separate_d_hg ? tsrnn_arena_floats(arena, T * B * GH) : ws->d_xg;
    ws->d_w_ih_t = tsrnn_arena_floats(arena, STEPWISE_MAX_INPUTS * GH);
    ws->hg = tsrnn_arena_floats(arena, B * GH);
    ws->dh_step = tsrnn_arena_floats(arena, B * H);
    ws->dh_carry = tsrnn_arena_floats(arena, B * H);
    ws->dh_direct = tsrnn_arena_floats(arena, B * H);
    ws->dc = tsrnn_arena_floats(arena, B * H);
    ws->state_h = tsrnn_arena_floats(arena, L * B * H);
    if (cell->has_cell_state)
        ws->state_c = tsrnn_arena_floats(arena, L * B * H);
}

enum tsrnn_status tsrnn_cpu_workspace_create(struct tsrnn_compute *ctx, void **out,
                                             const struct tsrnn_model_dims *dims,
                                             size_t batch_capacity, size_t step_capacity,
                                             size_t results_capacity)
{
    (void)results_capacity; /* the door records the composed step's results */
    const struct tsrnn_cell *cell = tsrnn_cell_for(dims->kind);
    *out = NULL;

    /* A bound on the cache's floats, in double so that absurd configs cannot overflow. */
    double per_sample_step =
        (double)cell->gate_count * (double)dims->hidden_count *
            (2.0 * (double)dims->layer_count + 2.0) +
        (double)dims->hidden_count * (4.0 * (double)dims->layer_count + 8.0) +
        4.0 * ((double)dims->input_count + (double)tsrnn_model_head_count(dims));
    double bound_nbytes =
        4.0 * per_sample_step * (double)batch_capacity * ((double)step_capacity + 1.0);
    if (bound_nbytes > (double)MAX_CACHE_NBYTES)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the model's activations would need %.3g GB (batch_size %zu x "
                           "training_length %zu x hidden_dim %zu x n_rnn_layers %zu); reduce "
                           "one of them",
                           bound_nbytes * 1e-9, batch_capacity, step_capacity, dims->hidden_count,
                           dims->layer_count);

    struct cpu_workspace *ws = calloc(1, sizeof(*ws));
    if (ws == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the model's workspace");
    ws->cpu = (struct tsrnn_cpu *)ctx;
    ws->dims = *dims;
    ws->cell = cell;
    ws->packed_recurrence =
        tsrnn_cpu_packed_kernel_available() &&
        dims->hidden_count * cell->gate_count * dims->hidden_count >= PACKED_MIN_WEIGHTS;

    struct tsrnn_arena measure;
    tsrnn_arena_measure(&measure);
    layout(ws, &measure, batch_capacity, step_capacity);
    enum tsrnn_status status =
        tsrnn_arena_init(&ws->arena, measure.used_nbytes, "the model's activations");
    if (status != TSRNN_OK) {
        free(ws);
        return status;
    }
    layout(ws, &ws->arena, batch_capacity, step_capacity);
    *out = ws;
    return TSRNN_OK;
}

void tsrnn_cpu_workspace_destroy(struct tsrnn_compute *ctx, void *workspace)
{
    struct cpu_workspace *ws = workspace;
    (void)ctx;
    if (ws == NULL)
        return;
    tsrnn_arena_finish(&ws->arena);
    free(ws);
}

bool tsrnn_cpu_workspace_packed(struct tsrnn_workspace *door)
{
    const struct cpu_workspace *ws = tsrnn_compute_backend_workspace(door);
    return ws->packed_recurrence;
}

bool tsrnn_cpu_workspace_packed_products(struct tsrnn_workspace *door)
{
    const struct cpu_workspace *ws = tsrnn_compute_backend_workspace(door);
    return ws->packed_products;
}

/* (B, T, n) batch-first -> (T, B, n) time-major. */
static void to_time_major(float *dst, const float *src, size_t B, size_t T, size_t n)
{
    if (n == 1) { /* a univariate series: a plain transpose, not B * T calls to memcpy */
        for (size_t b = 0; b < B; b++)
            for (size_t t = 0; t < T; t++)
                dst[t * B + b] = src[b * T + t];
        return;
    }
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            memcpy(dst + (t * B + b) * n, src + (b * T + t) * n, n * sizeof(*dst));
}

enum tsrnn_status tsrnn_cpu_batch_load(struct tsrnn_compute *ctx, void *workspace, const float *x,
                                       const float *y, size_t batch_count, size_t step_count)
{
    struct cpu_workspace *ws = workspace;
    (void)ctx;
    ws->batch_count = batch_count;
    ws->step_count = step_count;
    ws->likelihood_sum_valid = false;
    to_time_major(ws->x, x, batch_count, step_count, ws->dims.input_count);
    if (y != NULL)
        to_time_major(ws->y, y, batch_count, step_count, ws->dims.output_count);
    return TSRNN_OK;
}

/* dst (n, m) = src (m, n) transposed, in 32 x 32 tiles so that both sides stay in cache. */
static void transpose(float *dst, const float *src, size_t m, size_t n)
{
    const size_t tile = 32;
    for (size_t i0 = 0; i0 < m; i0 += tile)
        for (size_t j0 = 0; j0 < n; j0 += tile)
            for (size_t i = i0; i < m && i < i0 + tile; i++)
                for (size_t j = j0; j < n && j < j0 + tile; j++)
                    dst[j * m + i] = src[i * n + j];
}

/* The views of step t of layer cache lc, from batch row r0 on. */
static struct tsrnn_cell_step step_view(const struct layer_cache *lc, size_t t, size_t B, size_t H,
                                        size_t GH, size_t r0)
{
    return (struct tsrnn_cell_step){
        .gates = lc->gates + (t * B + r0) * GH,
        .h_prev = lc->h + (t * B + r0) * H,
        .h = lc->h + ((t + 1) * B + r0) * H,
        .c_prev = lc->c ? lc->c + (t * B + r0) * H : NULL,
        .c = lc->c ? lc->c + ((t + 1) * B + r0) * H : NULL,
        .aux = lc->aux ? lc->aux + (t * B + r0) * H : NULL,
    };
}

/* The gradient views of step t, from batch row r0 on: dLoss/dh of the step and the cell's
 * outputs into the workspace (dc carried across steps, dh_prev the cell's direct path). */
static struct tsrnn_cell_grads grads_view(const struct cpu_workspace *ws, size_t t, size_t B,
                                          size_t H, size_t GH, size_t r0)
{
    return (struct tsrnn_cell_grads){
        .dh = ws->dh_step + r0 * H,
        .dc = ws->dc ? ws->dc + r0 * H : NULL,
        .d_xg = ws->d_xg + (t * B + r0) * GH,
        .d_hg = ws->d_hg + (t * B + r0) * GH,
        .dh_prev = ws->dh_direct + r0 * H,
    };
}

/* One layer's recurrence, which tsrnn_cpu_parallel() may split by batch rows: a window's
 * steps read and write only its own rows, so the parts need no synchronisation, and each
 * row's arithmetic is the same however the batch is split. */
struct recurrence {
    struct cpu_workspace *ws;
    size_t l;
    const struct tsrnn_layer_params *p;
    struct tsrnn_layer_params *g;
    size_t input_count;
    bool stepwise_sums; /* backward: the per-step weight and bias sums inside the loop */
    bool lanes;         /* tsrnn_cpu_rnn_lanes_forward() / _backward_step() */
};

/* The cell's backward for rows b0 .. b0 + n of step t, dLoss/dh of those rows already in
 * dh_step: returns the step's gradient views (d_hg feeds the carry's product). */
static struct tsrnn_cell_grads cell_backward_rows(const struct recurrence *rc, size_t t, size_t b0,
                                                  size_t n)
{
    struct cpu_workspace *ws = rc->ws;
    const struct tsrnn_cell *cell = ws->cell;
    size_t B = ws->batch_count, H = ws->dims.hidden_count, GH = cell->gate_count * H;
    struct tsrnn_cell_step s = step_view(&ws->layers[rc->l], t, B, H, GH, b0);
    struct tsrnn_cell_grads cg = grads_view(ws, t, B, H, GH, b0);
    cell->backward(&cg, &s, n, H);
    return cg;
}

/* After the carry's product d_hg W_hh: the cell's direct path to h_prev (GRU's z * dh), if it
 * has one; `count` floats. */
static void add_direct_path(const struct tsrnn_cell *cell, float *dh_carry, const float *dh_direct,
                            size_t count)
{
    if (cell->has_direct_path)
        for (size_t i = 0; i < count; i++)
            dh_carry[i] += dh_direct[i];
}

/* A layer's recurrence is split among the compute threads from this many multiply-adds per
 * pass over the batch (~1.5 ms of work) on, in parts of at least 8 rows. Waking a helper
 * costs ~0.1 ms on the 2-core VM: LSTM-64 at batch 16 (5 M) was slower split. */
#define SPLIT_MIN_PASS_MACS (1u << 25)
#define SPLIT_MIN_PART_ROWS 8

static size_t recurrence_parts(const struct cpu_workspace *ws)
{
    size_t B = ws->batch_count, T = ws->step_count;
    size_t H = ws->dims.hidden_count, GH = ws->cell->gate_count * H;
    size_t parts = (size_t)ws->cpu->thread_count;
    if (parts < 2 || B * T * H * GH < SPLIT_MIN_PASS_MACS)
        return 1;
    return parts < B / SPLIT_MIN_PART_ROWS ? parts : B / SPLIT_MIN_PART_ROWS;
}

/* The most batch rows one of `parts` parts holds (part_range() rounds to 4): what bounds the
 * per-step products a part's kernels are asked for. */
static size_t part_rows_max(const struct cpu_workspace *ws, size_t parts)
{
    return (ws->batch_count + parts - 1) / parts + 4;
}

/* Part `part` of `parts` of [0, count): [*lo, *hi), starting on multiples of `align` (the GEMM
 * tiles' height for batch rows, a 16-column panel for gate columns). */
static void part_range(size_t count, size_t part, size_t parts, size_t align, size_t *lo,
                       size_t *hi)
{
    *lo = count * part / parts / align * align;
    *hi = part + 1 == parts ? count : count * (part + 1) / parts / align * align;
}

/* The packed path walks a step's rows in blocks of PACKED_BLOCK_ROWS: a block's input
 * projection, recurrent product and cell run one after the other while its rows of hg and the
 * gates (2 x 64 KiB at G*H = 1024) are still in cache, instead of three passes over the whole
 * batch. Each block streams the packed W_hh once more, so only while it stays in L2: up to
 * PACKED_BLOCK_MAX_WEIGHTS (LSTM-256's 1 MiB); above (LSTM-512's 4 MiB: 22 % slower in blocks
 * of 16) a step's rows are one block. */
#define PACKED_BLOCK_ROWS        16
#define PACKED_BLOCK_MAX_WEIGHTS (256 * 1024)

static size_t packed_block_rows(const struct cpu_workspace *ws)
{
    size_t H = ws->dims.hidden_count, GH = ws->cell->gate_count * H;
    return H * GH <= PACKED_BLOCK_MAX_WEIGHTS ? PACKED_BLOCK_ROWS : ws->batch_count;
}

/* Step t of the packed path for batch rows [r0, r1), in blocks of packed_block_rows() rows;
 * every row's arithmetic is that of one pass over all rows. */
static void packed_forward_step(const struct recurrence *rc, size_t t, size_t r0, size_t r1,
                                float *hg)
{
    const struct cpu_workspace *ws = rc->ws;
    const struct tsrnn_cell *cell = ws->cell;
    const struct layer_cache *lc = &ws->layers[rc->l];
    const struct tsrnn_layer_params *p = rc->p;
    size_t B = ws->batch_count, H = ws->dims.hidden_count;
    size_t GH = cell->gate_count * H, I = rc->input_count;
    bool zero_state = t == 0 && ws->zero_initial_state; /* then W_hh h adds exact zeros */
    size_t block = packed_block_rows(ws);
    for (size_t b0 = r0; b0 < r1; b0 += block) {
        size_t n = r1 - b0 < block ? r1 - b0 : block;
        struct tsrnn_cell_step s = step_view(lc, t, B, H, GH, b0);
        if (I <= STEPWISE_MAX_INPUTS)
            tsrnn_cpu_gemm_bias(ws->cpu, n, GH, I, lc->input + (t * B + b0) * I, I, lc->w_ih_t, GH,
                                p->b_ih, s.gates, GH);
        if (zero_state)
            tsrnn_cpu_fill_rows(hg, p->b_hh, n, GH);
        else
            tsrnn_cpu_gemm_packed_bias(ws->cpu, n, GH, H, s.h_prev, H, lc->w_hh_packed, p->b_hh, hg,
                                       GH);
        s.hg = hg;
        cell->forward(&s, n, H);
    }
}

/* The time loop of tsrnn_cpu_layer_forward() for one part of the batch. */
static void forward_rows(void *arg, size_t part, size_t parts)
{
    const struct recurrence *rc = arg;
    const struct cpu_workspace *ws = rc->ws;
    const struct tsrnn_cpu *cpu = ws->cpu;
    const struct tsrnn_cell *cell = ws->cell;
    const struct layer_cache *lc = &ws->layers[rc->l];
    const struct tsrnn_layer_params *p = rc->p;
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    size_t GH = cell->gate_count * H, I = rc->input_count, r0, r1;

    part_range(B, part, parts, 4, &r0, &r1);
    size_t n = r1 - r0;
    if (rc->lanes) {
        tsrnn_cpu_rnn_lanes_forward(lc->w_lanes, lc->input, I, lc->h, lc->h_lanes, B, T, H, r0, r1,
                                    ws->zero_initial_state);
        return;
    }
    float *hg = ws->hg + r0 * GH;
    for (size_t t = 0; t < T && n > 0; t++) {
        if (ws->packed_products) {
            packed_forward_step(rc, t, r0, r1, hg);
            continue;
        }
        struct tsrnn_cell_step s = step_view(lc, t, B, H, GH, r0);
        if (I <= STEPWISE_MAX_INPUTS)
            tsrnn_cpu_gemm_bias(cpu, n, GH, I, lc->input + (t * B + r0) * I, I, lc->w_ih_t, GH,
                                p->b_ih, s.gates, GH);
        if (t == 0 && ws->zero_initial_state) /* then W_hh h adds exact zeros */
            tsrnn_cpu_fill_rows(hg, p->b_hh, n, GH);
        else
            tsrnn_cpu_gemm_bias(cpu, n, GH, H, s.h_prev, H, lc->w_hh_t, GH, p->b_hh, hg, GH);
        s.hg = hg;
        cell->forward(&s, n, H);
    }
}

enum tsrnn_status tsrnn_cpu_layer_forward(struct tsrnn_compute *ctx, void *workspace, size_t l,
                                          const struct tsrnn_layer_params *p,
                                          enum tsrnn_initial_state initial_state,
                                          const float *input_mask, bool weights_unchanged)
{
    struct cpu_workspace *ws = workspace;
    struct tsrnn_cpu *cpu = (struct tsrnn_cpu *)ctx;
    const struct tsrnn_cell *cell = ws->cell;
    struct layer_cache *lc = &ws->layers[l];
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    size_t GH = cell->gate_count * H, input_count = l == 0 ? ws->dims.input_count : H;

    if (l == 0) {
        ws->zero_initial_state = initial_state == TSRNN_STATE_ZERO;
        if (!weights_unchanged) /* a forecast's later steps keep the first step's choice */
            ws->packed_products = ws->packed_recurrence && cpu->gemm_path != TSRNN_GEMM_LOOPS;
    }
    lc->input = l == 0 ? ws->x : ws->layers[l - 1].h + B * H; /* h[1..T] of the layer below */
    lc->input_masked = input_mask != NULL && lc->mask != NULL;
    if (lc->input_masked) { /* inverted dropout between layers */
        size_t n = T * B * H;
        memcpy(lc->mask, input_mask, n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            lc->dropped[i] = lc->input[i] * lc->mask[i];
        lc->input = lc->dropped;
    }

    /* The lanes kernel where the loops would run every product of a step (the largest part's
     * rows bound them all). */
    bool packed = ws->packed_products;
    size_t parts = recurrence_parts(ws), rows = part_rows_max(ws, parts);
    bool lanes = lc->w_lanes != NULL && !packed && tsrnn_cpu_rnn_lanes_available() &&
                 tsrnn_cpu_loops_take(cpu, rows, GH, input_count, input_count, GH, GH) &&
                 tsrnn_cpu_loops_take(cpu, rows, GH, H, H, GH, GH);
    /* The weights in the form this forward's kernels read, made once per change of the
     * weights (a forecast's later steps keep them). */
    if (!weights_unchanged)
        lc->rows_weights_current = lc->lanes_weights_current = false;
    if (lanes && !lc->lanes_weights_current) {
        tsrnn_cpu_rnn_lanes_pack(lc->w_lanes, p->w_ih, p->w_hh, p->b_ih, p->b_hh, input_count, H);
        lc->lanes_weights_current = true;
    } else if (!lanes && !lc->rows_weights_current) {
        transpose(lc->w_ih_t, p->w_ih, GH, input_count);
        if (packed)
            tsrnn_cpu_pack(lc->w_hh_packed, p->w_hh, H, H, GH, true);
        else
            transpose(lc->w_hh_t, p->w_hh, GH, H);
        lc->rows_weights_current = true;
    }
    /* The input projection, gates = input W_ih^T + b_ih: for all T steps in one GEMM, or
     * step by step for few inputs (in the loop of forward_rows). */
    if (input_count > STEPWISE_MAX_INPUTS)
        tsrnn_cpu_gemm_bias(cpu, T * B, GH, input_count, lc->input, input_count, lc->w_ih_t, GH,
                            p->b_ih, lc->gates, GH);

    if (initial_state == TSRNN_STATE_SAVED)
        memcpy(lc->h, ws->state_h + l * B * H, B * H * sizeof(float));
    else
        memset(lc->h, 0, B * H * sizeof(float));
    if (lc->c && initial_state == TSRNN_STATE_SAVED)
        memcpy(lc->c, ws->state_c + l * B * H, B * H * sizeof(float));
    else if (lc->c)
        memset(lc->c, 0, B * H * sizeof(float));

    lc->lanes_ran = lanes;
    if (l + 1 == ws->dims.layer_count)
        ws->lanes_top = lanes;
    struct recurrence rc = { .ws = ws, .l = l, .p = p, .input_count = input_count, .lanes = lanes };
    tsrnn_cpu_parallel(cpu, forward_rows, &rc, parts);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_state_save(struct tsrnn_compute *ctx, void *workspace)
{
    struct cpu_workspace *ws = workspace;
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    (void)ctx;
    for (size_t l = 0; l < ws->dims.layer_count; l++) {
        const struct layer_cache *lc = &ws->layers[l];
        memcpy(ws->state_h + l * B * H, lc->h + T * B * H, B * H * sizeof(float));
        if (lc->c)
            memcpy(ws->state_c + l * B * H, lc->c + T * B * H, B * H * sizeof(float));
    }
    return TSRNN_OK;
}

/* The input weights' and the biases' share of step t of the layer's backward, for few inputs:
 * sums over the batch rows, for gate columns [j0, j1). */
static void add_stepwise_sums(const struct recurrence *rc, size_t t, size_t j0, size_t j1)
{
    struct cpu_workspace *ws = rc->ws;
    const struct layer_cache *lc = &ws->layers[rc->l];
    struct tsrnn_layer_params *g = rc->g;
    size_t B = ws->batch_count, GH = ws->cell->gate_count * ws->dims.hidden_count;
    size_t I = rc->input_count;
    const float *d_xg = ws->d_xg + t * B * GH + j0, *d_hg = ws->d_hg + t * B * GH + j0;

    /* b_hh gets its own sums even where d_hg aliases d_xg (RNN, LSTM): the gradients it
     * accumulates into need not equal b_ih's (backend.h: backward ops accumulate), and from
     * equal ones (the model's zeros) the same additions give the same bits. */
    tsrnn_cpu_stepwise_sums(ws->cpu, ws->d_w_ih_t + j0, GH, g->b_ih + j0, g->b_hh + j0,
                            lc->input + t * B * I, I, d_xg, d_hg, GH, B, j1 - j0);
}

/* After a split backward loop: the per-step sums of all steps, in the loop's order, each part
 * of the threads taking a block of gate columns (every column's sums run as on one thread). */
static void stepwise_sums_columns(void *arg, size_t part, size_t parts)
{
    const struct recurrence *rc = arg;
    const struct cpu_workspace *ws = rc->ws;
    size_t GH = ws->cell->gate_count * ws->dims.hidden_count;
    size_t j0, j1;
    part_range(GH, part, parts, 16, &j0, &j1);
    for (size_t t = ws->step_count; j1 > j0 && t-- > 0;)
        add_stepwise_sums(rc, t, j0, j1);
}

/* dh (n, H) = d_out (n, O) v_w (O, H) + carry: the head's share of dLoss/dh with the
 * reference loops' k-sum (from 0, in order of o; what tsrnn_cpu_head_backward() would have
 * left in d_h), plus what flows back from step t+1. */
TSRNN_CPU_BODY head_dh_body(float *restrict dh, const float *restrict d_out,
                            const float *restrict v_w, const float *restrict carry, size_t n,
                            size_t H, size_t O)
{
    for (size_t i = 0; i < n; i++) {
        float *restrict row = dh + i * H;
        float d = d_out[i * O];
        for (size_t j = 0; j < H; j++)
            row[j] = 0.0f + d * v_w[j];
        for (size_t o = 1; o < O; o++) {
            d = d_out[i * O + o];
            for (size_t j = 0; j < H; j++)
                row[j] += d * v_w[o * H + j];
        }
        for (size_t j = 0; j < H; j++)
            row[j] += carry[i * H + j];
    }
}

TSRNN_CPU_ISA_VARIANTS(head_dh,
                       (float *restrict dh, const float *restrict d_out, const float *restrict v_w,
                        const float *restrict carry, size_t n, size_t H, size_t O),
                       (dh, d_out, v_w, carry, n, H, O))

/* Step t of the packed path's backward for batch rows [r0, r1), in blocks of
 * packed_block_rows() rows as packed_forward_step(): a block's dLoss/dh, cell backward and
 * product with W_hh follow one another while its rows are in cache. */
static void packed_backward_step(const struct recurrence *rc, size_t t, size_t r0, size_t r1)
{
    struct cpu_workspace *ws = rc->ws;
    const struct tsrnn_cell *cell = ws->cell;
    size_t B = ws->batch_count, H = ws->dims.hidden_count, GH = cell->gate_count * H;
    size_t block = packed_block_rows(ws);
    for (size_t b0 = r0; b0 < r1; b0 += block) {
        size_t n = r1 - b0 < block ? r1 - b0 : block;
        float *dh_step = ws->dh_step + b0 * H, *dh_carry = ws->dh_carry + b0 * H;
        float *dh_direct = ws->dh_direct + b0 * H;
        if (ws->d_h_head != NULL) {
            size_t O = tsrnn_model_head_count(&ws->dims); /* O*P */
            head_dh(dh_step, ws->d_out + (t * B + b0) * O, ws->d_h_head, dh_carry, n, H, O);
        } else {
            const float *d_h_t = ws->d_h + (t * B + b0) * H;
            for (size_t i = 0; i < n * H; i++)
                dh_step[i] = d_h_t[i] + dh_carry[i];
        }
        struct tsrnn_cell_grads cg = cell_backward_rows(rc, t, b0, n);
        if (t == 0)
            continue; /* nobody asks for dLoss/dh[0] */
        memset(dh_carry, 0, n * H * sizeof(float));
        tsrnn_cpu_gemm_packed(ws->cpu, n, H, GH, cg.d_hg, GH, ws->w_hh_packed_bwd, dh_carry, H);
        add_direct_path(cell, dh_carry, dh_direct, n * H);
    }
    if (rc->stepwise_sums)
        add_stepwise_sums(rc, t, 0, GH);
}

/* The time loop of tsrnn_cpu_layer_backward() for one part of the batch. */
static void backward_rows(void *arg, size_t part, size_t parts)
{
    const struct recurrence *rc = arg;
    struct cpu_workspace *ws = rc->ws;
    const struct tsrnn_cpu *cpu = ws->cpu;
    const struct tsrnn_cell *cell = ws->cell;
    const struct layer_cache *lc = &ws->layers[rc->l];
    const struct tsrnn_layer_params *p = rc->p;
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    size_t GH = cell->gate_count * H, r0, r1;

    part_range(B, part, parts, 4, &r0, &r1);
    size_t n = r1 - r0;
    if (n == 0)
        return;
    float *dh_step = ws->dh_step + r0 * H, *dh_carry = ws->dh_carry + r0 * H;
    float *dh_direct = ws->dh_direct + r0 * H, *dc = ws->dc ? ws->dc + r0 * H : NULL;
    if (rc->lanes) { /* the carry transposed, (H, B): this part's rows of each unit */
        for (size_t j = 0; j < H; j++)
            memset(ws->dh_carry + j * B + r0, 0, n * sizeof(float));
        for (size_t t = T; t-- > 0;) {
            tsrnn_cpu_rnn_lanes_backward_step(ws->d_h + t * B * H, lc->h_lanes + t * H * B,
                                              ws->dh_carry, p->w_hh, ws->d_xg + t * B * GH, B, H,
                                              r0, r1, t > 0);
            if (rc->stepwise_sums)
                add_stepwise_sums(rc, t, 0, GH);
        }
        return;
    }
    memset(dh_carry, 0, n * H * sizeof(float));
    if (cell->has_cell_state)
        memset(dc, 0, n * H * sizeof(float));
    for (size_t t = T; t-- > 0;) {
        if (ws->packed_products) {
            packed_backward_step(rc, t, r0, r1);
            continue;
        }
        const float *d_h_t = ws->d_h + (t * B + r0) * H;
        for (size_t i = 0; i < n * H; i++)
            dh_step[i] = d_h_t[i] + dh_carry[i];
        struct tsrnn_cell_grads cg = cell_backward_rows(rc, t, r0, n);
        if (rc->stepwise_sums)
            add_stepwise_sums(rc, t, 0, GH);
        if (t == 0)
            break; /* nobody asks for dLoss/dh[0] */
        /* dLoss/dh_prev through the recurrent weights: d_hg W_hh. */
        tsrnn_cpu_gemm(cpu, false, false, n, H, GH, 1.0f, cg.d_hg, GH, p->w_hh, H, 0.0f, dh_carry,
                       H);
        add_direct_path(cell, dh_carry, dh_direct, n * H);
    }
}

/* d_h (T*B, H) = d_out V_w: dLoss/d(the top layer's outputs) through the head. */
static void head_d_h(struct cpu_workspace *ws, const float *v_w)
{
    size_t rows = ws->step_count * ws->batch_count, H = ws->dims.hidden_count;
    size_t O = tsrnn_model_head_count(&ws->dims); /* O*P */
    tsrnn_cpu_gemm(ws->cpu, false, false, rows, H, O, 1.0f, ws->d_out, O, v_w, H, 0.0f, ws->d_h, H);
}

/* Whether a model with packed products would run this product of the head (alpha 1) on the
 * reference loops, not on BLAS nor the blocked kernel: then the head's own loops below, which
 * repeat the loops' sums in another traversal, give the same bits. */
static bool head_product_on_loops(const struct cpu_workspace *ws, size_t m, size_t n, size_t k,
                                  size_t lda, size_t ldb, size_t ldc)
{
    return ws->packed_products && !tsrnn_cpu_blocked_takes(ws->cpu, m, n, k, 1.0f) &&
           !tsrnn_cpu_blas_takes(ws->cpu, m, n, k, lda, ldb, ldc);
}

/* Whether the head's backward leaves d_h to the top layer's packed backward, which forms each
 * block of rows as it needs them (head_dh): a (T, B, H) array less to write and to read back
 * from memory, 4 MiB at LSTM-256 B64 T64. */
static bool head_d_h_deferred(const struct cpu_workspace *ws)
{
    size_t rows = ws->step_count * ws->batch_count, H = ws->dims.hidden_count;
    size_t O = tsrnn_model_head_count(&ws->dims); /* O*P */
    return head_product_on_loops(ws, rows, H, O, O, H, H);
}

enum tsrnn_status tsrnn_cpu_layer_backward(struct tsrnn_compute *ctx, void *workspace, size_t l,
                                           const struct tsrnn_layer_params *p,
                                           struct tsrnn_layer_params *g)
{
    struct cpu_workspace *ws = workspace;
    struct tsrnn_cpu *cpu = (struct tsrnn_cpu *)ctx;
    const struct layer_cache *lc = &ws->layers[l];
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    size_t GH = ws->cell->gate_count * H, input_count = l == 0 ? ws->dims.input_count : H;

    if (ws->d_h_head != NULL && l + 1 != ws->dims.layer_count) { /* the top layer's, not l's */
        head_d_h(ws, ws->d_h_head);
        ws->d_h_head = NULL;
    }
    bool stepwise = input_count <= STEPWISE_MAX_INPUTS;
    if (stepwise) /* dW_ih^T, (I, G*H): its rows are what a step's product fills */
        memset(ws->d_w_ih_t, 0, input_count * GH * sizeof(float));
    if (ws->packed_products)
        tsrnn_cpu_pack(ws->w_hh_packed_bwd, p->w_hh, H, GH, H, false);
    size_t parts = recurrence_parts(ws), rows = part_rows_max(ws, parts);
    /* The lanes kernel after a lanes forward, where the loops would run the carry's product. */
    bool lanes = lc->lanes_ran && tsrnn_cpu_rnn_lanes_available() &&
                 tsrnn_cpu_loops_take(cpu, rows, H, GH, GH, H, H);
    struct recurrence rc = {
        .ws = ws,
        .l = l,
        .p = p,
        .g = g,
        .input_count = input_count,
        .stepwise_sums = stepwise && parts == 1,
        .lanes = lanes,
    };
    tsrnn_cpu_parallel(cpu, backward_rows, &rc, parts);
    ws->d_h_head = NULL; /* used up: below, d_h is this layer's input gradient */
    /* Split, the per-step sums over the batch follow, split by columns. */
    if (stepwise && parts > 1)
        tsrnn_cpu_parallel(cpu, stepwise_sums_columns, &rc, parts);

    /* Weight gradients of all steps at once (the input side already done for few inputs). */
    if (stepwise) {
        for (size_t i = 0; i < GH; i++)
            for (size_t j = 0; j < input_count; j++)
                g->w_ih[i * input_count + j] += ws->d_w_ih_t[j * GH + i];
    } else {
        tsrnn_cpu_gemm(cpu, true, false, GH, input_count, T * B, 1.0f, ws->d_xg, GH, lc->input,
                       input_count, 1.0f, g->w_ih, input_count);
        tsrnn_cpu_add_column_sums(g->b_ih, ws->d_xg, T * B, GH, GH);
        tsrnn_cpu_add_column_sums(g->b_hh, ws->d_hg, T * B, GH, GH); /* as add_stepwise_sums */
    }
    /* From a zero initial state, step 0 adds nothing to dW_hh: sum over steps 1..T-1 only. */
    size_t first = ws->zero_initial_state ? 1 : 0;
    tsrnn_cpu_gemm(cpu, true, false, GH, H, (T - first) * B, 1.0f, ws->d_hg + first * B * GH, GH,
                   lc->h + first * B * H, H, 1.0f, g->w_hh, H);
    if (l == 0)
        return TSRNN_OK; /* below layer 0 nobody needs the gradient */
    /* dLoss/d(input) is the next d_h: the d_h buffer is free again once the cell backward of
     * this layer has run, so the GEMM may overwrite it. */
    tsrnn_cpu_gemm(cpu, false, false, T * B, input_count, GH, 1.0f, ws->d_xg, GH, p->w_ih,
                   input_count, 0.0f, ws->d_h, input_count);
    if (lc->input_masked)
        for (size_t i = 0; i < T * B * H; i++)
            ws->d_h[i] *= lc->mask[i];
    return TSRNN_OK;
}

/* --- the head: over the workspace's top layer ---------------------------------------------
 *
 * The head V = torch.nn.Linear(H, O), applied to the hidden state of every step:
 *     out = h V_w^T + V_b        over all T*B rows at once;
 * its outputs go to the loss (loss.c), which leaves d_out for the head's backward. */

static const float *top_outputs(const struct cpu_workspace *ws)
{
    return ws->layers[ws->dims.layer_count - 1].h + ws->batch_count * ws->dims.hidden_count;
}

enum tsrnn_status tsrnn_cpu_head_forward(struct tsrnn_compute *ctx, void *workspace,
                                         const float *v_w, const float *v_b)
{
    struct cpu_workspace *ws = workspace;
    size_t rows = ws->step_count * ws->batch_count, H = ws->dims.hidden_count;
    size_t O = tsrnn_model_head_count(&ws->dims); /* O*P */
    (void)ctx;
    ws->likelihood_sum_valid = false; /* new outputs */
    if (ws->lanes_top && tsrnn_cpu_loops_take(ws->cpu, rows, O, H, H, H, O)) {
        const struct layer_cache *top = &ws->layers[ws->dims.layer_count - 1];
        tsrnn_cpu_rnn_lanes_head(top->h_lanes, v_w, v_b, ws->out, ws->batch_count, ws->step_count,
                                 H, O);
        return TSRNN_OK;
    }
    tsrnn_cpu_fill_rows(ws->out, v_b, rows, O);
    tsrnn_cpu_gemm(ws->cpu, false, true, rows, O, H, 1.0f, top_outputs(ws), H, v_w, H, 1.0f,
                   ws->out, O);
    return TSRNN_OK;
}

/* g_v_w (O, H) += d_out^T (rows, O) h (rows, H), every element summed in row order from its
 * value: the reference loops' sums (tsrnn_cpu_gemm), walked row after row of h instead of in
 * 16-column strips down all rows, which read h (4 MiB at LSTM-256 B64 T64) 1 KiB apart. */
TSRNN_CPU_BODY head_weight_grad_body(float *restrict g_v_w, const float *restrict d_out,
                                     const float *restrict h, size_t rows, size_t H, size_t O)
{
    for (size_t o = 0; o < O; o++) {
        float *restrict g = g_v_w + o * H;
        for (size_t i = 0; i < rows; i++) {
            float d = d_out[i * O + o];
            for (size_t j = 0; j < H; j++)
                g[j] += d * h[i * H + j];
        }
    }
}

TSRNN_CPU_ISA_VARIANTS(head_weight_grad,
                       (float *restrict g_v_w, const float *restrict d_out, const float *restrict h,
                        size_t rows, size_t H, size_t O),
                       (g_v_w, d_out, h, rows, H, O))

enum tsrnn_status tsrnn_cpu_head_backward(struct tsrnn_compute *ctx, void *workspace,
                                          const float *v_w, float *g_v_w, float *g_v_b)
{
    struct cpu_workspace *ws = workspace;
    size_t rows = ws->step_count * ws->batch_count, H = ws->dims.hidden_count;
    size_t O = tsrnn_model_head_count(&ws->dims); /* O*P */
    (void)ctx;
    tsrnn_cpu_add_column_sums(g_v_b, ws->d_out, rows, O, O);
    /* A small one-output head (seedstep's lanes layers) and a head whose d_h the packed
     * recurrence forms block by block (head_dh) never meet: the first needs H <= 32, the
     * second packed layers. */
    if (O == 1 && !head_d_h_deferred(ws) &&
        tsrnn_cpu_head1_backward(ws->cpu, rows, H, ws->d_out, top_outputs(ws), v_w, g_v_w, ws->d_h))
        return TSRNN_OK;
    if (head_product_on_loops(ws, O, H, rows, O, H, H))
        head_weight_grad(g_v_w, ws->d_out, top_outputs(ws), rows, H, O);
    else
        tsrnn_cpu_gemm(ws->cpu, true, false, O, H, rows, 1.0f, ws->d_out, O, top_outputs(ws), H,
                       1.0f, g_v_w, H);
    if (head_d_h_deferred(ws)) {
        ws->d_h_head = v_w;
        return TSRNN_OK;
    }
    head_d_h(ws, v_w);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_output_download(struct tsrnn_compute *ctx, void *workspace, size_t t,
                                            float *out)
{
    struct cpu_workspace *ws = workspace;
    size_t rows = ws->batch_count * tsrnn_model_head_count(&ws->dims);
    (void)ctx;
    memcpy(out, ws->out + t * rows, rows * sizeof(float));
    return TSRNN_OK;
}
