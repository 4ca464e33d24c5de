/* The whole model of one rank: the stack of recurrent layers, dropout between them, the head
 * and the loss; forward, backward and Darts-style prediction. The cell math lives in
 * rnn.c / lstm.c / gru.c, the head and loss in linear.c / mse.c. */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "tsrnn/compute.h"
#include "tsrnn/model.h"

/* Activations above this are refused up front (and size_t products below cannot overflow). */
#define MAX_CACHE_NBYTES (1ull << 40)

/* Layers with this few inputs (a univariate series has 1) do their input projection and its
 * gradients step by step, while the step's rows are in cache; wider inputs get one GEMM over
 * all steps, which does more with the memory it reads. Same products either way. */
#define STEPWISE_MAX_INPUTS 8

/* From this many recurrent weights (H x G*H) on, the per-step products run on packed weights;
 * below it they stay in the reference loops (the Darts guide's model among them). */
#define PACKED_MIN_WEIGHTS (128 * 128)

static void layout_cache(struct tsrnn_model_cache *c, struct tsrnn_arena *arena,
                         const struct tsrnn_model_dims *dims, const struct tsrnn_cell *cell,
                         size_t B, size_t T, bool packed)
{
    size_t GH = cell->gate_count * dims->hidden_count, H = dims->hidden_count;
    size_t L = dims->layer_count;

    *c = (struct tsrnn_model_cache){ 0 };
    c->x = tsrnn_arena_floats(arena, T * B * dims->input_count);
    c->y = tsrnn_arena_floats(arena, T * B * dims->output_count);
    c->out = tsrnn_arena_floats(arena, T * B * dims->output_count);
    c->d_out = tsrnn_arena_floats(arena, T * B * dims->output_count);
    for (size_t l = 0; l < L; l++) {
        struct tsrnn_layer_cache *lc = &c->layers[l];
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
    }
    if (packed)
        c->w_hh_packed_bwd = tsrnn_arena_floats(arena, tsrnn_cpu_packed_count(GH, H));
    if (L > 1 && dims->dropout > 0.0f) {
        c->mask = tsrnn_arena_floats(arena, (L - 1) * T * B * H);
        c->dropped = tsrnn_arena_floats(arena, (L - 1) * T * B * H);
    }
    c->d_h = tsrnn_arena_floats(arena, T * B * H);
    c->d_xg = tsrnn_arena_floats(arena, T * B * GH);
    c->d_hg = cell->separate_d_hg ? tsrnn_arena_floats(arena, T * B * GH) : c->d_xg;
    c->d_w_ih_t = tsrnn_arena_floats(arena, STEPWISE_MAX_INPUTS * GH);
    c->hg = tsrnn_arena_floats(arena, B * GH);
    c->dh_step = tsrnn_arena_floats(arena, B * H);
    c->dh_carry = tsrnn_arena_floats(arena, B * H);
    c->dh_direct = tsrnn_arena_floats(arena, B * H);
    c->dc = tsrnn_arena_floats(arena, B * H);
    c->state_h = tsrnn_arena_floats(arena, L * B * H);
    if (cell->has_cell_state)
        c->state_c = tsrnn_arena_floats(arena, L * B * H);
}

enum tsrnn_status tsrnn_model_init(struct tsrnn_model *model, const struct tsrnn_model_dims *dims,
                                   size_t batch_capacity, size_t step_capacity)
{
    *model = (struct tsrnn_model){ 0 };
    model->dims = *dims;
    model->cell = tsrnn_cell_for(dims->kind);
    model->batch_capacity = batch_capacity;
    model->step_capacity = step_capacity;
    model->packed_recurrence =
        tsrnn_cpu_packed_kernel_available() &&
        dims->hidden_count * model->cell->gate_count * dims->hidden_count >= PACKED_MIN_WEIGHTS;
    tsrnn_param_table_init(&model->table, dims);

    /* A bound on the cache's floats, in double so that absurd configs cannot overflow. */
    double per_sample_step = (double)model->cell->gate_count * (double)dims->hidden_count *
                                 (2.0 * (double)dims->layer_count + 2.0) +
                             (double)dims->hidden_count * (4.0 * (double)dims->layer_count + 8.0) +
                             4.0 * ((double)dims->input_count + (double)dims->output_count);
    double bound_nbytes =
        4.0 * per_sample_step * (double)batch_capacity * ((double)step_capacity + 1.0);
    if (bound_nbytes > (double)MAX_CACHE_NBYTES)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the model's activations would need %.3g GB (batch_size %zu x "
                           "training_length %zu x hidden_dim %zu x n_rnn_layers %zu); reduce "
                           "one of them",
                           bound_nbytes * 1e-9, batch_capacity, step_capacity, dims->hidden_count,
                           dims->layer_count);

    size_t count = model->table.total_count;
    model->params = calloc(count, sizeof(float));
    model->grads = calloc(count, sizeof(float));
    if (model->params == NULL || model->grads == NULL) {
        tsrnn_model_finish(model);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu parameters", count);
    }
    tsrnn_model_params_view(&model->p, dims, model->params);
    tsrnn_model_params_view(&model->g, dims, model->grads);

    struct tsrnn_arena measure;
    tsrnn_arena_measure(&measure);
    layout_cache(&model->cache, &measure, dims, model->cell, batch_capacity, step_capacity,
                 model->packed_recurrence);
    enum tsrnn_status status =
        tsrnn_arena_init(&model->arena, measure.used_nbytes, "the model's activations");
    if (status != TSRNN_OK) {
        tsrnn_model_finish(model);
        return status;
    }
    layout_cache(&model->cache, &model->arena, dims, model->cell, batch_capacity, step_capacity,
                 model->packed_recurrence);
    return TSRNN_OK;
}

void tsrnn_model_finish(struct tsrnn_model *model)
{
    if (model == NULL)
        return;
    free(model->params);
    free(model->grads);
    tsrnn_arena_finish(&model->arena);
    *model = (struct tsrnn_model){ 0 };
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
static struct tsrnn_cell_step step_view(const struct tsrnn_layer_cache *lc, size_t t, size_t B,
                                        size_t H, size_t GH, size_t r0)
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

/* One layer's recurrence, which tsrnn_cpu_parallel() may split by batch rows: a window's
 * steps read and write only its own rows, so the parts need no synchronisation, and each
 * row's arithmetic is the same however the batch is split. */
struct recurrence {
    struct tsrnn_model *model;
    size_t l;
    const float *input;
    size_t input_count;
    bool zero_initial_state;
    bool stepwise_sums; /* backward: the per-step weight and bias sums inside the loop */
    enum tsrnn_gemm_path gemm_path;
};

/* A layer's recurrence is split among the compute threads from this many multiply-adds per
 * pass over the batch (~1.5 ms of work) on, in parts of at least 8 rows. Waking a helper
 * costs ~0.1 ms on the 2-core VM: LSTM-64 at batch 16 (5 M) was slower split. */
#define SPLIT_MIN_PASS_MACS (1u << 25)
#define SPLIT_MIN_PART_ROWS 8

static size_t recurrence_parts(const struct tsrnn_model *model, size_t B, size_t T)
{
    size_t H = model->dims.hidden_count, GH = model->cell->gate_count * H;
    size_t parts = (size_t)tsrnn_cpu_thread_count();
    if (parts < 2 || B * T * H * GH < SPLIT_MIN_PASS_MACS)
        return 1;
    return parts < B / SPLIT_MIN_PART_ROWS ? parts : B / SPLIT_MIN_PART_ROWS;
}

/* Part `part` of `parts` of [0, count): [*lo, *hi), starting on multiples of `align` (the GEMM
 * tiles' height for batch rows, a 16-column panel for gate columns). */
static void part_range(size_t count, size_t part, size_t parts, size_t align, size_t *lo,
                       size_t *hi)
{
    *lo = count * part / parts / align * align;
    *hi = part + 1 == parts ? count : count * (part + 1) / parts / align * align;
}

/* Inverted dropout (torch.nn.functional.dropout in training): keep with probability 1 - p,
 * scale kept values by 1 / (1 - p). */
static void draw_dropout(float *mask, float *dropped, const float *h, size_t n, float p,
                         struct tsrnn_rng *rng)
{
    float scale = (float)(1.0 / (1.0 - (double)p));
    for (size_t i = 0; i < n; i++) {
        mask[i] = tsrnn_rng_uniform(rng) < p ? 0.0f : scale;
        dropped[i] = h[i] * mask[i];
    }
}

/* The time loop of layer_forward() for one part of the batch. */
static void forward_rows(void *arg, size_t part, size_t parts)
{
    const struct recurrence *rc = arg;
    const struct tsrnn_model *model = rc->model;
    const struct tsrnn_cell *cell = model->cell;
    const struct tsrnn_model_cache *c = &model->cache;
    const struct tsrnn_layer_cache *lc = &c->layers[rc->l];
    const struct tsrnn_layer_params *p = &model->p.layers[rc->l];
    size_t B = c->batch_count, T = c->step_count, H = model->dims.hidden_count;
    size_t GH = cell->gate_count * H, I = rc->input_count, r0, r1;

    part_range(B, part, parts, 4, &r0, &r1);
    size_t n = r1 - r0;
    float *hg = c->hg + r0 * GH;
    tsrnn_cpu_set_gemm_path(rc->gemm_path); /* a thread-local setting */
    for (size_t t = 0; t < T && n > 0; t++) {
        struct tsrnn_cell_step s = step_view(lc, t, B, H, GH, r0);
        if (I <= STEPWISE_MAX_INPUTS)
            tsrnn_cpu_gemm_bias(n, GH, I, rc->input + (t * B + r0) * I, I, lc->w_ih_t, GH, p->b_ih,
                                s.gates, GH);
        bool zero_state = t == 0 && rc->zero_initial_state; /* then W_hh h adds exact zeros */
        if (zero_state || c->packed_products)
            tsrnn_cpu_fill_rows(hg, p->b_hh, n, GH);
        if (!zero_state && c->packed_products)
            tsrnn_cpu_gemm_packed(n, GH, H, s.h_prev, H, lc->w_hh_packed, hg, GH);
        else if (!zero_state)
            tsrnn_cpu_gemm_bias(n, GH, H, s.h_prev, H, lc->w_hh_t, GH, p->b_hh, hg, GH);
        s.hg = hg;
        cell->forward(&s, n, H);
    }
}

/* reuse_transposed: the weights have not changed since the last forward, whose transposed
 * and packed copies are still in the cache (the steps of a forecast). */
static void layer_forward(struct tsrnn_model *model, size_t l, const float *input,
                          size_t input_count, const float *h0, const float *c0,
                          bool reuse_transposed)
{
    const struct tsrnn_cell *cell = model->cell;
    struct tsrnn_model_cache *c = &model->cache;
    struct tsrnn_layer_cache *lc = &c->layers[l];
    const struct tsrnn_layer_params *p = &model->p.layers[l];
    size_t B = c->batch_count, T = c->step_count, H = model->dims.hidden_count;
    size_t GH = cell->gate_count * H;

    bool packed = c->packed_products;
    lc->input = input;
    if (!reuse_transposed) {
        transpose(lc->w_ih_t, p->w_ih, GH, input_count);
        if (packed)
            tsrnn_cpu_pack(lc->w_hh_packed, p->w_hh, H, H, GH, true);
        else
            transpose(lc->w_hh_t, p->w_hh, GH, H);
    }
    /* The input projection, gates = input W_ih^T + b_ih: for all T steps in one GEMM, or
     * step by step for few inputs (in the loop below). */
    bool stepwise = input_count <= STEPWISE_MAX_INPUTS;
    if (!stepwise)
        tsrnn_cpu_gemm_bias(T * B, GH, input_count, input, input_count, lc->w_ih_t, GH, p->b_ih,
                            lc->gates, GH);

    if (h0)
        memcpy(lc->h, h0 + l * B * H, B * H * sizeof(float));
    else
        memset(lc->h, 0, B * H * sizeof(float));
    if (lc->c && c0)
        memcpy(lc->c, c0 + l * B * H, B * H * sizeof(float));
    else if (lc->c)
        memset(lc->c, 0, B * H * sizeof(float));

    struct recurrence rc = {
        .model = model,
        .l = l,
        .input = input,
        .input_count = input_count,
        .zero_initial_state = h0 == NULL,
        .gemm_path = tsrnn_cpu_gemm_path(),
    };
    tsrnn_cpu_parallel(forward_rows, &rc, recurrence_parts(model, B, T));
}

static void forward(struct tsrnn_model *model, const float *x, size_t batch_count,
                    size_t step_count, bool training, struct tsrnn_rng *dropout_rng,
                    const float *h0, const float *c0, bool reuse_transposed)
{
    struct tsrnn_model_cache *c = &model->cache;
    const struct tsrnn_model_dims *d = &model->dims;
    size_t B = batch_count, T = step_count, H = d->hidden_count;

    c->batch_count = B;
    c->step_count = T;
    c->dropout_applied = training && d->dropout > 0.0f && d->layer_count > 1;
    c->zero_initial_state = h0 == NULL;
    if (!reuse_transposed) /* a forecast's later steps keep the first step's choice */
        c->packed_products = model->packed_recurrence && tsrnn_cpu_gemm_path() != TSRNN_GEMM_LOOPS;
    to_time_major(c->x, x, B, T, d->input_count);

    const float *input = c->x;
    size_t input_count = d->input_count;
    for (size_t l = 0; l < d->layer_count; l++) {
        layer_forward(model, l, input, input_count, h0, c0, reuse_transposed);
        input = c->layers[l].h + B * H; /* h[1..T] */
        input_count = H;
        if (c->dropout_applied && l + 1 < d->layer_count) {
            float *mask = c->mask + l * T * B * H, *dropped = c->dropped + l * T * B * H;
            draw_dropout(mask, dropped, input, T * B * H, d->dropout, dropout_rng);
            input = dropped;
        }
    }
    tsrnn_linear_forward(c->out, input, model->p.v_w, model->p.v_b, T * B, H, d->output_count);
}

void tsrnn_model_forward(struct tsrnn_model *model, const float *x, size_t batch_count,
                         size_t step_count, bool training, struct tsrnn_rng *dropout_rng,
                         const float *h0, const float *c0)
{
    forward(model, x, batch_count, step_count, training, dropout_rng, h0, c0, false);
}

float tsrnn_model_loss(struct tsrnn_model *model, const float *y)
{
    struct tsrnn_model_cache *c = &model->cache;
    size_t O = model->dims.output_count;
    to_time_major(c->y, y, c->batch_count, c->step_count, O);
    return tsrnn_mse_forward(c->out, c->y, c->step_count * c->batch_count * O);
}

void tsrnn_model_window_squared_errors(const struct tsrnn_model *model, const float *y, double *se)
{
    const struct tsrnn_model_cache *c = &model->cache;
    size_t B = c->batch_count, T = c->step_count, O = model->dims.output_count;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                float e = c->out[(t * B + b) * O + o] - y[(b * T + t) * O + o];
                sum += (double)(e * e);
            }
        se[b] = sum;
    }
}

/* The input weights' and the biases' share of step t of layer l's backward, for few inputs:
 * sums over the batch rows, for gate columns [j0, j1). */
static void add_stepwise_sums(struct tsrnn_model *model, size_t l, size_t input_count, size_t t,
                              size_t j0, size_t j1)
{
    struct tsrnn_model_cache *c = &model->cache;
    const struct tsrnn_layer_cache *lc = &c->layers[l];
    struct tsrnn_layer_params *g = &model->g.layers[l];
    size_t B = c->batch_count, GH = model->cell->gate_count * model->dims.hidden_count;
    const float *d_xg = c->d_xg + t * B * GH + j0, *d_hg = c->d_hg + t * B * GH + j0;

    tsrnn_cpu_gemm(true, false, input_count, j1 - j0, B, 1.0f, lc->input + t * B * input_count,
                   input_count, d_xg, GH, 1.0f, c->d_w_ih_t + j0, GH);
    tsrnn_cpu_add_column_sums(g->b_ih + j0, d_xg, B, j1 - j0, GH);
    if (d_hg != d_xg)
        tsrnn_cpu_add_column_sums(g->b_hh + j0, d_hg, B, j1 - j0, GH);
}

/* After a split backward loop: the per-step sums of all steps, in the loop's order, each part
 * of the threads taking a block of gate columns (every column's sums run as on one thread). */
static void stepwise_sums_columns(void *arg, size_t part, size_t parts)
{
    const struct recurrence *rc = arg;
    struct tsrnn_model *model = rc->model;
    size_t GH = model->cell->gate_count * model->dims.hidden_count;
    size_t j0, j1;
    part_range(GH, part, parts, 16, &j0, &j1);
    for (size_t t = model->cache.step_count; j1 > j0 && t-- > 0;)
        add_stepwise_sums(model, rc->l, rc->input_count, t, j0, j1);
}

/* The time loop of layer_backward() for one part of the batch. */
static void backward_rows(void *arg, size_t part, size_t parts)
{
    const struct recurrence *rc = arg;
    struct tsrnn_model *model = rc->model;
    const struct tsrnn_cell *cell = model->cell;
    struct tsrnn_model_cache *c = &model->cache;
    const struct tsrnn_layer_cache *lc = &c->layers[rc->l];
    const struct tsrnn_layer_params *p = &model->p.layers[rc->l];
    size_t B = c->batch_count, T = c->step_count, H = model->dims.hidden_count;
    size_t GH = cell->gate_count * H, r0, r1;

    part_range(B, part, parts, 4, &r0, &r1);
    size_t n = r1 - r0;
    if (n == 0)
        return;
    float *dh_step = c->dh_step + r0 * H, *dh_carry = c->dh_carry + r0 * H;
    float *dh_direct = c->dh_direct + r0 * H, *dc = c->dc ? c->dc + r0 * H : NULL;
    tsrnn_cpu_set_gemm_path(rc->gemm_path); /* a thread-local setting */
    memset(dh_carry, 0, n * H * sizeof(float));
    if (cell->has_cell_state)
        memset(dc, 0, n * H * sizeof(float));
    for (size_t t = T; t-- > 0;) {
        const float *d_h_t = c->d_h + (t * B + r0) * H;
        for (size_t i = 0; i < n * H; i++)
            dh_step[i] = d_h_t[i] + dh_carry[i];
        struct tsrnn_cell_step s = step_view(lc, t, B, H, GH, r0);
        struct tsrnn_cell_grads cg = {
            .dh = dh_step,
            .dc = dc,
            .d_xg = c->d_xg + (t * B + r0) * GH,
            .d_hg = c->d_hg + (t * B + r0) * GH,
            .dh_prev = dh_direct,
        };
        cell->backward(&cg, &s, n, H);
        if (rc->stepwise_sums)
            add_stepwise_sums(model, rc->l, rc->input_count, t, 0, GH);
        if (t == 0)
            break; /* nobody asks for dLoss/dh[0] */
        /* dLoss/dh_prev through the recurrent weights: d_hg W_hh. */
        if (c->packed_products) {
            memset(dh_carry, 0, n * H * sizeof(float));
            tsrnn_cpu_gemm_packed(n, H, GH, cg.d_hg, GH, c->w_hh_packed_bwd, dh_carry, H);
        } else {
            tsrnn_cpu_gemm(false, false, n, H, GH, 1.0f, cg.d_hg, GH, p->w_hh, H, 0.0f, dh_carry,
                           H);
        }
        if (cell->has_direct_path)
            for (size_t i = 0; i < n * H; i++)
                dh_carry[i] += dh_direct[i];
    }
}

/* Walks layer l back over t = T-1..0, given d_h (T, B, H) = dLoss/d(its outputs); accumulates
 * its parameter gradients and, when d_input is not NULL, overwrites d_input (T, B, I). */
static void layer_backward(struct tsrnn_model *model, size_t l, size_t input_count, float *d_input)
{
    const struct tsrnn_cell *cell = model->cell;
    struct tsrnn_model_cache *c = &model->cache;
    const struct tsrnn_layer_cache *lc = &c->layers[l];
    const struct tsrnn_layer_params *p = &model->p.layers[l];
    struct tsrnn_layer_params *g = &model->g.layers[l];
    size_t B = c->batch_count, T = c->step_count, H = model->dims.hidden_count;
    size_t GH = cell->gate_count * H;

    bool stepwise = input_count <= STEPWISE_MAX_INPUTS;
    if (stepwise) /* dW_ih^T, (I, G*H): its rows are what a step's product fills */
        memset(c->d_w_ih_t, 0, input_count * GH * sizeof(float));
    if (c->packed_products)
        tsrnn_cpu_pack(c->w_hh_packed_bwd, p->w_hh, H, GH, H, false);
    size_t parts = recurrence_parts(model, B, T);
    struct recurrence rc = {
        .model = model,
        .l = l,
        .input = lc->input,
        .input_count = input_count,
        .stepwise_sums = stepwise && parts == 1,
        .gemm_path = tsrnn_cpu_gemm_path(),
    };
    tsrnn_cpu_parallel(backward_rows, &rc, parts);
    /* Split, the per-step sums over the batch follow, split by columns. */
    if (stepwise && parts > 1)
        tsrnn_cpu_parallel(stepwise_sums_columns, &rc, parts);

    /* Weight gradients of all steps at once (the input side already done for few inputs). */
    if (stepwise) {
        for (size_t i = 0; i < GH; i++)
            for (size_t j = 0; j < input_count; j++)
                g->w_ih[i * input_count + j] += c->d_w_ih_t[j * GH + i];
    } else {
        tsrnn_cpu_gemm(true, false, GH, input_count, T * B, 1.0f, c->d_xg, GH, lc->input,
                       input_count, 1.0f, g->w_ih, input_count);
        tsrnn_cpu_add_column_sums(g->b_ih, c->d_xg, T * B, GH, GH);
        if (c->d_hg != c->d_xg)
            tsrnn_cpu_add_column_sums(g->b_hh, c->d_hg, T * B, GH, GH);
    }
    /* From a zero initial state, step 0 adds nothing to dW_hh: sum over steps 1..T-1 only. */
    size_t first = c->zero_initial_state ? 1 : 0;
    tsrnn_cpu_gemm(true, false, GH, H, (T - first) * B, 1.0f, c->d_hg + first * B * GH, GH,
                   lc->h + first * B * H, H, 1.0f, g->w_hh, H);
    if (c->d_hg == c->d_xg) /* RNN, LSTM: both biases get the same gradient */
        memcpy(g->b_hh, g->b_ih, GH * sizeof(float));
    if (d_input)
        tsrnn_cpu_gemm(false, false, T * B, input_count, GH, 1.0f, c->d_xg, GH, p->w_ih,
                       input_count, 0.0f, d_input, input_count);
}

void tsrnn_model_backward(struct tsrnn_model *model)
{
    struct tsrnn_model_cache *c = &model->cache;
    const struct tsrnn_model_dims *d = &model->dims;
    size_t B = c->batch_count, T = c->step_count, H = d->hidden_count, L = d->layer_count;
    size_t O = d->output_count;

    memset(model->grads, 0, model->table.total_count * sizeof(float));
    tsrnn_mse_backward(c->d_out, c->out, c->y, T * B * O);
    tsrnn_linear_backward(c->d_h, model->g.v_w, model->g.v_b, c->d_out, c->layers[L - 1].h + B * H,
                          model->p.v_w, T * B, H, O);
    for (size_t l = L; l-- > 0;) {
        size_t input_count = l == 0 ? d->input_count : H;
        /* Below layer 0 nobody needs the gradient; above it, it is the next d_h. The d_h
         * buffer is free again once the cell backward of this layer has run, so the GEMM
         * inside layer_backward may overwrite it. */
        layer_backward(model, l, input_count, l > 0 ? c->d_h : NULL);
        if (l > 0 && c->dropout_applied) {
            const float *mask = c->mask + (l - 1) * T * B * H;
            for (size_t i = 0; i < T * B * H; i++)
                c->d_h[i] *= mask[i];
        }
    }
}

void tsrnn_model_final_state(const struct tsrnn_model *model, float *h, float *c)
{
    const struct tsrnn_model_cache *cache = &model->cache;
    size_t B = cache->batch_count, T = cache->step_count, H = model->dims.hidden_count;

    for (size_t l = 0; l < model->dims.layer_count; l++) {
        const struct tsrnn_layer_cache *lc = &cache->layers[l];
        if (h)
            memcpy(h + l * B * H, lc->h + T * B * H, B * H * sizeof(float));
        if (c && lc->c)
            memcpy(c + l * B * H, lc->c + T * B * H, B * H * sizeof(float));
    }
}

void tsrnn_model_predict(struct tsrnn_model *model, float *forecast, const float *context,
                         size_t context_count, size_t horizon)
{
    struct tsrnn_model_cache *c = &model->cache;
    size_t O = model->dims.output_count;

    if (horizon == 0)
        return;
    tsrnn_model_forward(model, context, 1, context_count, false, NULL, NULL, NULL);
    memcpy(forecast, c->out + (context_count - 1) * O, O * sizeof(float));
    for (size_t k = 1; k < horizon; k++) {
        tsrnn_model_final_state(model, c->state_h, c->state_c);
        forward(model, forecast + (k - 1) * O, 1, 1, false, NULL, c->state_h, c->state_c, true);
        memcpy(forecast + k * O, c->out, O * sizeof(float));
    }
}
