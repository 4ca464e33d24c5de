/* The pjrt compute backend (docs/architecture.md "The pjrt backend"): the model as StableHLO
 * programs (emit.h) run by a PJRT plugin (runtime.h): XLA's CPU plugin, libtpu on a TPU, any
 * other plugin exporting GetPjrtApi.
 *
 * It provides the two whole operations of the table (step: forward, loss, backward and Adam
 * as one program, parameters and moments donated; forward: the stack and the head for
 * validation and forecasts) and none of the per-layer ones (caps.layer_ops false): a compiled
 * program is the unit an XLA device runs well.
 *
 * Memory: a "device pointer" is the host copy of a region (alloc); the region also holds its
 * device buffers, one per replica, once a program used it. Which copy is newer is tracked,
 * and upload / download / zero go through the host copy, so the rest of tsrnn (checkpoints,
 * offsets into the flat buffers) sees the same contract as on every backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "emit.h"
#include "runtime.h"

enum where {
    HOST_NEWER,   /* device buffers absent or stale */
    BOTH_CURRENT, /* host and device equal */
    DEVICE_NEWER, /* a program wrote the device buffers */
};

struct region {
    float *host;
    size_t nbytes;
    struct tsrnn_pjrt_buffer *dev[TSRNN_PJRT_MAX_DEVICES];
    enum where where;
    struct region *next;
};

struct pjrt_ctx {
    struct tsrnn_compute base;
    struct tsrnn_pjrt *rt;
    size_t replica_count;
    struct region *regions;
};

/* One compiled program of a workspace, found by what it was emitted for. */
struct cached {
    int what; /* 0 train step, 1 forward */
    size_t batch_count, step_count;
    struct tsrnn_pjrt_program *prog;
};

#define CACHE_SLOTS 16

/* Programs run on padded batches: the forward on batch_capacity windows, the training step
 * on replica_rows windows per replica, so that one program serves every batch of a run (the
 * short last one, one split unevenly over replicas). Padding windows are zeros; the training
 * step weighs them 0, the forward's outputs for them are not read. */
struct pjrt_workspace {
    struct tsrnn_model_dims dims;
    size_t batch_capacity, step_capacity;
    size_t replica_rows; /* Br = ceil(batch_capacity / replicas) */
    size_t batch_count, step_count;
    float *x, *y; /* (Bcap, T, C), (B, T, O) as loaded, x zero-padded */
    bool have_y;
    float *out;               /* (T, Bcap, O) of the last forward */
    float *h_last, *c_last;   /* (L, Bcap, H) after the last forward */
    float *h_saved, *c_saved; /* state_save's copy */
    float *zeros;             /* (L, Bcap, H) */
    float *xr, *yr, *wr;      /* one replica's (Br, T, C), (Br, T, O), (Br) */
    float *sq;                /* (T, Br, O) one replica's squared errors */
    float *mask_part;         /* (L-1, T, Br, H) one replica's dropout masks */
    struct cached cache[CACHE_SLOTS];
    size_t cache_count;
};

static struct pjrt_ctx *ctx_of(struct tsrnn_compute *ctx)
{
    return (struct pjrt_ctx *)ctx;
}

struct tsrnn_pjrt *tsrnn_pjrt_of(struct tsrnn_compute *ctx)
{
    return ctx_of(ctx)->rt;
}

static bool pjrt_probe(char *why, size_t why_nbytes)
{
    (void)why;
    (void)why_nbytes;
    return true; /* the plugin is looked for at create, where its path is known */
}

static enum tsrnn_status pjrt_create(struct tsrnn_compute **out,
                                     const struct tsrnn_compute_options *options)
{
    struct pjrt_ctx *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the pjrt backend");
    c->base.backend = &tsrnn_compute_backend_pjrt;
    c->replica_count = options->replica_count > 0 ? (size_t)options->replica_count : 1;
    enum tsrnn_status status =
        tsrnn_pjrt_open(&c->rt, options->plugin_path, true, options->cpu_device_count);
    if (status != TSRNN_OK)
        goto out;
    if (options->platform != NULL && strcmp(tsrnn_pjrt_platform(c->rt), options->platform) != 0) {
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "the PJRT plugin's platform is %s, %s was asked for (its plugin: "
                             "[trainer] pjrt_plugin, TSRNN_PJRT_PLUGIN or TPU_LIBRARY_PATH)",
                             tsrnn_pjrt_platform(c->rt), options->platform);
        goto out;
    }
    if (c->replica_count > tsrnn_pjrt_device_count(c->rt))
        status = tsrnn_error(
            TSRNN_ERR_USAGE, "%zu replicas asked for, the %s plugin has %zu devices",
            c->replica_count, tsrnn_pjrt_platform(c->rt), tsrnn_pjrt_device_count(c->rt));
out:
    if (status == TSRNN_OK) {
        *out = &c->base;
    } else {
        tsrnn_pjrt_close(c->rt);
        free(c);
        if (options->platform != NULL && status != TSRNN_ERR_NOMEM) {
            char why[1024];
            snprintf(why, sizeof(why), "%s", tsrnn_last_error());
            status =
                tsrnn_error(TSRNN_ERR_USAGE, "no %s could be used: %s", options->platform, why);
        }
    }
    return status;
}

static size_t pjrt_tpu_cores(const struct tsrnn_compute *ctx)
{
    const struct pjrt_ctx *c = (const struct pjrt_ctx *)ctx;
    return strcmp(tsrnn_pjrt_platform(c->rt), "tpu") == 0 ? c->replica_count : 0;
}

static void drop_device(struct pjrt_ctx *c, struct region *r)
{
    for (size_t i = 0; i < TSRNN_PJRT_MAX_DEVICES; i++) {
        tsrnn_pjrt_buffer_destroy(c->rt, r->dev[i]);
        r->dev[i] = NULL;
    }
    r->where = HOST_NEWER;
}

static void pjrt_destroy(struct tsrnn_compute *ctx)
{
    struct pjrt_ctx *c = ctx_of(ctx);
    while (c->regions != NULL) {
        struct region *r = c->regions;
        c->regions = r->next;
        drop_device(c, r);
        free(r->host);
        free(r);
    }
    tsrnn_pjrt_close(c->rt);
    free(c);
}

static struct region *find_region(struct pjrt_ctx *c, const void *p)
{
    const char *q = p;
    for (struct region *r = c->regions; r != NULL; r = r->next)
        if (q >= (const char *)r->host && q < (const char *)r->host + r->nbytes)
            return r;
    return NULL;
}

static enum tsrnn_status pjrt_alloc(struct tsrnn_compute *ctx, void **buf, size_t nbytes)
{
    struct pjrt_ctx *c = ctx_of(ctx);
    struct region *r = calloc(1, sizeof(*r));
    float *host = malloc(nbytes ? nbytes : 1);
    if (r == NULL || host == NULL) {
        free(r);
        free(host);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu bytes of pjrt memory", nbytes);
    }
    r->host = host;
    r->nbytes = nbytes;
    r->next = c->regions;
    c->regions = r;
    *buf = host;
    return TSRNN_OK;
}

static void pjrt_free(struct tsrnn_compute *ctx, void *buf)
{
    struct pjrt_ctx *c = ctx_of(ctx);
    for (struct region **pr = &c->regions; *pr != NULL; pr = &(*pr)->next)
        if ((*pr)->host == buf) {
            struct region *r = *pr;
            *pr = r->next;
            drop_device(c, r);
            free(r->host);
            free(r);
            return;
        }
}

/* Makes the host copy current (device -> host when a program wrote the region). */
static enum tsrnn_status to_host(struct pjrt_ctx *c, struct region *r)
{
    if (r->where != DEVICE_NEWER)
        return TSRNN_OK;
    TSRNN_TRY(tsrnn_pjrt_buffer_download(c->rt, r->dev[0], r->host, r->nbytes));
    r->where = BOTH_CURRENT;
    return TSRNN_OK;
}

/* Makes the device buffers current (host -> every replica's device). */
static enum tsrnn_status to_device(struct pjrt_ctx *c, struct region *r)
{
    if (r->where != HOST_NEWER)
        return TSRNN_OK;
    drop_device(c, r);
    int64_t dims[1] = { (int64_t)(r->nbytes / sizeof(float)) };
    for (size_t i = 0; i < c->replica_count; i++)
        TSRNN_TRY(tsrnn_pjrt_buffer_upload(c->rt, &r->dev[i], i, r->host, dims, 1));
    r->where = BOTH_CURRENT;
    return TSRNN_OK;
}

static enum tsrnn_status region_of(struct pjrt_ctx *c, struct region **r, const void *p,
                                   size_t nbytes)
{
    *r = find_region(c, p);
    if (*r == NULL || (const char *)p + nbytes > (const char *)(*r)->host + (*r)->nbytes)
        return tsrnn_error(TSRNN_ERR_USAGE, "pjrt: %zu bytes at %p are not memory of this context",
                           nbytes, p);
    return TSRNN_OK;
}

static enum tsrnn_status pjrt_upload(struct tsrnn_compute *ctx, void *dst, const void *src,
                                     size_t nbytes)
{
    struct pjrt_ctx *c = ctx_of(ctx);
    struct region *r;
    TSRNN_TRY(region_of(c, &r, dst, nbytes));
    TSRNN_TRY(to_host(c, r));
    memcpy(dst, src, nbytes);
    drop_device(c, r);
    return TSRNN_OK;
}

static enum tsrnn_status pjrt_download(struct tsrnn_compute *ctx, void *dst, const void *src,
                                       size_t nbytes)
{
    struct pjrt_ctx *c = ctx_of(ctx);
    struct region *r;
    TSRNN_TRY(region_of(c, &r, src, nbytes));
    TSRNN_TRY(to_host(c, r));
    memcpy(dst, src, nbytes);
    return TSRNN_OK;
}

static enum tsrnn_status pjrt_zero(struct tsrnn_compute *ctx, void *buf, size_t nbytes)
{
    struct pjrt_ctx *c = ctx_of(ctx);
    struct region *r;
    TSRNN_TRY(region_of(c, &r, buf, nbytes));
    TSRNN_TRY(to_host(c, r));
    memset(buf, 0, nbytes);
    drop_device(c, r);
    return TSRNN_OK;
}

static enum tsrnn_status pjrt_synchronize(struct tsrnn_compute *ctx)
{
    (void)ctx; /* every execute and copy waits for its end */
    return TSRNN_OK;
}

/* --- workspace ------------------------------------------------------------------------- */

static void pjrt_workspace_destroy(struct tsrnn_compute *ctx, void *workspace)
{
    struct pjrt_workspace *ws = workspace;
    (void)ctx;
    if (ws == NULL)
        return;
    free(ws->x);
    free(ws->y);
    free(ws->out);
    free(ws->h_last);
    free(ws->c_last);
    free(ws->h_saved);
    free(ws->c_saved);
    free(ws->zeros);
    free(ws->xr);
    free(ws->yr);
    free(ws->wr);
    free(ws->sq);
    free(ws->mask_part);
    free(ws);
}

static enum tsrnn_status pjrt_workspace_create(struct tsrnn_compute *ctx, void **out,
                                               const struct tsrnn_model_dims *dims,
                                               size_t batch_capacity, size_t step_capacity,
                                               size_t results_capacity)
{
    (void)results_capacity; /* its results are on the host: the door records them */
    struct pjrt_ctx *c = ctx_of(ctx);
    struct pjrt_workspace *ws = calloc(1, sizeof(*ws));
    if (ws == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the pjrt workspace");
    size_t B = batch_capacity ? batch_capacity : 1, T = step_capacity ? step_capacity : 1;
    size_t L = dims->layer_count, H = dims->hidden_count, R = c->replica_count;
    size_t Br = (B + R - 1) / R, C = dims->input_count, O = dims->output_count;
    ws->dims = *dims;
    ws->batch_capacity = B;
    ws->step_capacity = T;
    ws->replica_rows = Br;
    ws->x = calloc(B * T * C, sizeof(float));
    ws->y = calloc(B * T * O, sizeof(float));
    ws->out = calloc(B * T * O, sizeof(float));
    ws->h_last = calloc(L * B * H, sizeof(float));
    ws->c_last = calloc(L * B * H, sizeof(float));
    ws->h_saved = calloc(L * B * H, sizeof(float));
    ws->c_saved = calloc(L * B * H, sizeof(float));
    ws->zeros = calloc(L * B * H, sizeof(float));
    ws->xr = calloc(Br * T * C, sizeof(float));
    ws->yr = calloc(Br * T * O, sizeof(float));
    ws->wr = calloc(Br, sizeof(float));
    ws->sq = calloc(Br * T * O, sizeof(float));
    ws->mask_part = calloc((L > 1 ? L - 1 : 1) * T * Br * H, sizeof(float));
    if (ws->x == NULL || ws->y == NULL || ws->out == NULL || ws->h_last == NULL ||
        ws->c_last == NULL || ws->h_saved == NULL || ws->c_saved == NULL || ws->zeros == NULL ||
        ws->xr == NULL || ws->yr == NULL || ws->wr == NULL || ws->sq == NULL ||
        ws->mask_part == NULL) {
        pjrt_workspace_destroy(ctx, ws);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the pjrt workspace");
    }
    *out = ws;
    return TSRNN_OK;
}

static enum tsrnn_status pjrt_batch_load(struct tsrnn_compute *ctx, void *workspace, const float *x,
                                         const float *y, size_t batch_count, size_t step_count)
{
    struct pjrt_workspace *ws = workspace;
    (void)ctx;
    if (batch_count > ws->batch_capacity || step_count > ws->step_capacity)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "pjrt: a batch of %zu windows of %zu steps, the workspace holds %zu "
                           "of %zu",
                           batch_count, step_count, ws->batch_capacity, ws->step_capacity);
    ws->batch_count = batch_count;
    ws->step_count = step_count;
    size_t row = step_count * ws->dims.input_count;
    memcpy(ws->x, x, batch_count * row * sizeof(float));
    memset(ws->x + batch_count * row, 0, (ws->batch_capacity - batch_count) * row * sizeof(float));
    ws->have_y = y != NULL;
    if (y != NULL)
        memcpy(ws->y, y, batch_count * step_count * ws->dims.output_count * sizeof(float));
    return TSRNN_OK;
}

/* The program for (what, B, T), emitted and compiled once per workspace (B: the rows it
 * runs, padding included). */
static enum tsrnn_status program_for(struct pjrt_ctx *c, struct pjrt_workspace *ws, int what,
                                     size_t B, size_t T, struct tsrnn_pjrt_program **prog)
{
    for (size_t i = 0; i < ws->cache_count; i++)
        if (ws->cache[i].what == what && ws->cache[i].batch_count == B &&
            ws->cache[i].step_count == T) {
            *prog = ws->cache[i].prog;
            return TSRNN_OK;
        }
    bool dropout = ws->dims.layer_count > 1 && ws->dims.dropout > 0.0f;
    char *text = what == 0 ? tsrnn_pjrt_emit_train_step(&ws->dims, B, T, c->replica_count, dropout)
                           : tsrnn_pjrt_emit_forward(&ws->dims, B, T);
    if (text == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a StableHLO program");
    enum tsrnn_status status =
        tsrnn_pjrt_compile(c->rt, prog, text, what == 0 ? (int)c->replica_count : 1);
    free(text);
    TSRNN_TRY(status);
    if (ws->cache_count < CACHE_SLOTS)
        ws->cache[ws->cache_count++] = (struct cached){ what, B, T, *prog };
    return TSRNN_OK;
}

static void destroy_all(struct pjrt_ctx *c, struct tsrnn_pjrt_buffer **bufs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tsrnn_pjrt_buffer_destroy(c->rt, bufs[i]);
        bufs[i] = NULL;
    }
}

static enum tsrnn_status pjrt_forward(struct tsrnn_compute *ctx, void *workspace,
                                      const float *params, enum tsrnn_initial_state initial_state,
                                      bool weights_unchanged)
{
    (void)weights_unchanged; /* the program reads the weights each time */
    struct pjrt_workspace *ws = workspace;
    struct pjrt_ctx *c = ctx_of(ctx);
    const struct tsrnn_model_dims *d = &ws->dims;
    size_t B = ws->batch_capacity, T = ws->step_count, L = d->layer_count, H = d->hidden_count;
    bool lstm = d->kind == TSRNN_MODEL_LSTM;
    struct tsrnn_pjrt_program *prog;
    struct region *pr;
    TSRNN_TRY(region_of(c, &pr, params, sizeof(float)));
    TSRNN_TRY(to_device(c, pr));
    TSRNN_TRY(program_for(c, ws, 1, B, T, &prog));

    struct tsrnn_pjrt_buffer *args[4] = { pr->dev[0] }, *outs[3] = { 0 };
    int64_t xdims[3] = { (int64_t)B, (int64_t)T, (int64_t)d->input_count };
    int64_t sdims[3] = { (int64_t)L, (int64_t)B, (int64_t)H };
    bool saved = initial_state == TSRNN_STATE_SAVED;
    size_t nargs = lstm ? 4 : 3, nouts = lstm ? 3 : 2;
    enum tsrnn_status status = tsrnn_pjrt_buffer_upload(c->rt, &args[1], 0, ws->x, xdims, 3);
    if (status != TSRNN_OK)
        goto out;
    status =
        tsrnn_pjrt_buffer_upload(c->rt, &args[2], 0, saved ? ws->h_saved : ws->zeros, sdims, 3);
    if (status != TSRNN_OK)
        goto out;
    if (lstm) {
        status =
            tsrnn_pjrt_buffer_upload(c->rt, &args[3], 0, saved ? ws->c_saved : ws->zeros, sdims, 3);
        if (status != TSRNN_OK)
            goto out;
    }
    status = tsrnn_pjrt_execute(c->rt, prog, 1, args, nargs, outs, nouts);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_pjrt_buffer_download(c->rt, outs[0], ws->out,
                                        T * B * d->output_count * sizeof(float));
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_pjrt_buffer_download(c->rt, outs[1], ws->h_last, L * B * H * sizeof(float));
    if (status != TSRNN_OK)
        goto out;
    if (lstm)
        status = tsrnn_pjrt_buffer_download(c->rt, outs[2], ws->c_last, L * B * H * sizeof(float));
out:
    destroy_all(c, args + 1, nargs - 1);
    destroy_all(c, outs, nouts);
    return status;
}

static enum tsrnn_status pjrt_state_save(struct tsrnn_compute *ctx, void *workspace)
{
    struct pjrt_workspace *ws = workspace;
    (void)ctx;
    size_t n = ws->dims.layer_count * ws->batch_capacity * ws->dims.hidden_count;
    memcpy(ws->h_saved, ws->h_last, n * sizeof(float));
    memcpy(ws->c_saved, ws->c_last, n * sizeof(float));
    return TSRNN_OK;
}

/* Replica r's windows [r*Br, (r+1)*Br) of the batch: inputs, targets, weights (1 for a
 * window of the batch, 0 for padding) and dropout masks ((L-1, T, B, H) -> (L-1, T, Br, H)),
 * padding zero. Returns how many are real. */
static size_t replica_part(struct pjrt_workspace *ws, const float *masks, size_t r)
{
    size_t L = ws->dims.layer_count, T = ws->step_count, B = ws->batch_count;
    size_t H = ws->dims.hidden_count, C = ws->dims.input_count, O = ws->dims.output_count;
    size_t Br = ws->replica_rows, first = r * Br;
    size_t real = first >= B ? 0 : (B - first < Br ? B - first : Br);
    memset(ws->xr, 0, Br * T * C * sizeof(float));
    memset(ws->yr, 0, Br * T * O * sizeof(float));
    memcpy(ws->xr, ws->x + first * T * C, real * T * C * sizeof(float));
    memcpy(ws->yr, ws->y + first * T * O, real * T * O * sizeof(float));
    for (size_t i = 0; i < Br; i++)
        ws->wr[i] = i < real ? 1.0f : 0.0f;
    if (masks != NULL) {
        memset(ws->mask_part, 0, (L - 1) * T * Br * H * sizeof(float));
        for (size_t l = 0; l + 1 < L; l++)
            for (size_t t = 0; t < T; t++)
                memcpy(ws->mask_part + (l * T + t) * Br * H, masks + ((l * T + t) * B + first) * H,
                       real * H * sizeof(float));
    }
    return real;
}

/* The training step's program (emit.h), per replica: its arguments (the parameters, both
 * moments, the replica's inputs, targets and window weights, the update's scalars, the dropout
 * masks when there is dropout) and its outputs (the parameters and moments written, the squared
 * errors (T, Br, O), 1 if every gradient was finite, else 0). */
enum {
    STEP_MAX_ARGS = 8,
    STEP_OUTS = 5
};

/* Runs the training step's program on every replica, replica r on its part of the batch
 * (replica_part; real[r]: how many of its windows are real). The parameters and moments of reg
 * are donated to it and gone whatever happens: their handles become the program's outputs
 * (outs[r * STEP_OUTS + 0..2]), or on failure go too, and then the host copies are what is left
 * (stale by this step only if a program had written them since the last download). The other
 * outputs (outs[r * STEP_OUTS + 3..4]) are the caller's. */
static enum tsrnn_status step_execute(struct pjrt_ctx *c, struct pjrt_workspace *ws,
                                      struct tsrnn_pjrt_program *prog, struct region *const *reg,
                                      const float *scalars, const float *masks, size_t *real,
                                      struct tsrnn_pjrt_buffer **outs)
{
    const struct tsrnn_model_dims *d = &ws->dims;
    size_t R = c->replica_count, T = ws->step_count, Br = ws->replica_rows;
    size_t C = d->input_count, O = d->output_count, L = d->layer_count, H = d->hidden_count;
    bool dropout = L > 1 && d->dropout > 0.0f;
    struct tsrnn_pjrt_buffer *args[TSRNN_PJRT_MAX_DEVICES * STEP_MAX_ARGS] = { 0 };
    size_t nargs = dropout ? 8 : 7;
    int64_t xdims[3] = { (int64_t)Br, (int64_t)T, (int64_t)C };
    int64_t ydims[3] = { (int64_t)Br, (int64_t)T, (int64_t)O };
    int64_t wdims[1] = { (int64_t)Br }, sdims[1] = { 8 };
    int64_t mdims[3] = { (int64_t)(L > 1 ? L - 1 : 1), (int64_t)(T * Br), (int64_t)H };
    enum tsrnn_status status = TSRNN_OK;
    for (size_t r = 0; r < R; r++) {
        struct tsrnn_pjrt_buffer **a = args + r * nargs;
        a[0] = reg[0]->dev[r];
        a[1] = reg[1]->dev[r];
        a[2] = reg[2]->dev[r];
        real[r] = replica_part(ws, dropout ? masks : NULL, r);
        status = tsrnn_pjrt_buffer_upload(c->rt, &a[3], r, ws->xr, xdims, 3);
        if (status != TSRNN_OK)
            goto out;
        status = tsrnn_pjrt_buffer_upload(c->rt, &a[4], r, ws->yr, ydims, 3);
        if (status != TSRNN_OK)
            goto out;
        status = tsrnn_pjrt_buffer_upload(c->rt, &a[5], r, ws->wr, wdims, 1);
        if (status != TSRNN_OK)
            goto out;
        status = tsrnn_pjrt_buffer_upload(c->rt, &a[6], r, scalars, sdims, 1);
        if (status != TSRNN_OK)
            goto out;
        if (dropout) {
            status = tsrnn_pjrt_buffer_upload(c->rt, &a[7], r, ws->mask_part, mdims, 3);
            if (status != TSRNN_OK)
                goto out;
        }
    }
    status = tsrnn_pjrt_execute(c->rt, prog, R, args, nargs, outs, STEP_OUTS);
out:
    for (size_t r = 0; r < R; r++) {
        destroy_all(c, args + r * nargs + 3, nargs - 3);
        for (int i = 0; i < 3; i++) {
            tsrnn_pjrt_buffer_destroy(c->rt, reg[i]->dev[r]);
            reg[i]->dev[r] = status == TSRNN_OK ? outs[r * STEP_OUTS + i] : NULL;
        }
    }
    for (int i = 0; i < 3; i++)
        reg[i]->where = status == TSRNN_OK ? DEVICE_NEWER : HOST_NEWER;
    return status;
}

static enum tsrnn_status pjrt_step(struct tsrnn_compute *ctx, void *workspace,
                                   const struct tsrnn_step_buffers *buffers,
                                   const struct tsrnn_step_args *step,
                                   struct tsrnn_step_record *now)
{
    struct pjrt_workspace *ws = workspace;
    struct pjrt_ctx *c = ctx_of(ctx);
    const struct tsrnn_adam_scalars *s = &step->update.adam;
    float *params = buffers->state.params, *exp_avg = buffers->state.exp_avg;
    float *exp_avg_sq = buffers->state.exp_avg_sq;
    TSRNN_TRY(pjrt_batch_load(ctx, ws, step->x, step->y, step->batch_count, step->step_count));
    size_t R = c->replica_count, B = ws->batch_count, T = ws->step_count, Br = ws->replica_rows;
    size_t O = ws->dims.output_count;

    struct region *reg[3];
    float *bufs[3] = { params, exp_avg, exp_avg_sq };
    for (int i = 0; i < 3; i++) {
        TSRNN_TRY(region_of(c, &reg[i], bufs[i], sizeof(float)));
        if (reg[i]->host != bufs[i] || reg[i]->nbytes != reg[0]->nbytes)
            return tsrnn_error(TSRNN_ERR_USAGE, "pjrt: the training step takes whole buffers");
        TSRNN_TRY(to_device(c, reg[i]));
    }
    struct tsrnn_pjrt_program *prog;
    TSRNN_TRY(program_for(c, ws, 0, Br, T, &prog));

    float scalars[8] = { s->beta1,
                         s->one_minus_beta1,
                         s->beta2,
                         s->one_minus_beta2,
                         s->bias_correction2_sqrt,
                         s->eps,
                         s->neg_step_size,
                         (float)(2.0 / (double)(B * T * O)) };
    struct tsrnn_pjrt_buffer *outs[TSRNN_PJRT_MAX_DEVICES * STEP_OUTS] = { 0 };
    size_t real[TSRNN_PJRT_MAX_DEVICES];
    /* The loss from the real windows' squared errors, in double: t, then b, then o, as the
     * CPU backend sums them (replica by replica when there are several). */
    double sum = 0.0;
    bool all_finite = true;
    enum tsrnn_status status =
        step_execute(c, ws, prog, reg, scalars, step->dropout_masks, real, outs);
    if (status != TSRNN_OK)
        goto out;
    for (size_t r = 0; r < R; r++) {
        float f = 0.0f;
        status = tsrnn_pjrt_buffer_download(c->rt, outs[r * STEP_OUTS + 3], ws->sq,
                                            T * Br * O * sizeof(float));
        if (status != TSRNN_OK)
            goto out;
        status = tsrnn_pjrt_buffer_download(c->rt, outs[r * STEP_OUTS + 4], &f, sizeof(f));
        if (status != TSRNN_OK)
            goto out;
        for (size_t t = 0; t < T; t++)
            for (size_t i = 0; i < real[r] * O; i++)
                sum += (double)ws->sq[t * Br * O + i];
        all_finite = all_finite && f != 0.0f;
    }
    /* One process (caps.reduction is false): this rank's stop flag is the decision. */
    now->loss = (float)(sum / (double)(B * T * O));
    now->finite = all_finite;
    now->stop = step->stop_requested;
out:
    for (size_t r = 0; r < R; r++)
        destroy_all(c, outs + r * STEP_OUTS + 3, 2);
    return status;
}

static enum tsrnn_status pjrt_window_squared_errors(struct tsrnn_compute *ctx, void *workspace,
                                                    double *se)
{
    struct pjrt_workspace *ws = workspace;
    size_t B = ws->batch_count, T = ws->step_count, O = ws->dims.output_count;
    size_t Bp = ws->batch_capacity;
    (void)ctx;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                float e = ws->out[(t * Bp + b) * O + o] - ws->y[(b * T + t) * O + o];
                sum += (double)(e * e);
            }
        se[b] = sum;
    }
    return TSRNN_OK;
}

static enum tsrnn_status pjrt_output_download(struct tsrnn_compute *ctx, void *workspace, size_t t,
                                              float *out)
{
    struct pjrt_workspace *ws = workspace;
    (void)ctx;
    size_t O = ws->dims.output_count;
    memcpy(out, ws->out + t * ws->batch_capacity * O, ws->batch_count * O * sizeof(float));
    return TSRNN_OK;
}

const struct tsrnn_compute_backend tsrnn_compute_backend_pjrt = {
    .kind = TSRNN_COMPUTE_PJRT,
    .name = "pjrt",
    /* Whole programs only: Adam and MSELoss inside the compiled step, no clipping, replicas
     * inside the program rather than processes; its results are on the host. */
    .caps = {
        .host_memory = false,
        .layer_ops = false,
        .l1_loss = false,
        .optimizers = false,
        .clipping = false,
        .reduction = false,
        .immediate_results = true,
        .step_graphs = false,
    },
    .probe = pjrt_probe,
    .create = pjrt_create,
    .destroy = pjrt_destroy,
    .tpu_cores = pjrt_tpu_cores,
    .alloc = pjrt_alloc,
    .free = pjrt_free,
    .upload = pjrt_upload,
    .download = pjrt_download,
    .zero = pjrt_zero,
    .synchronize = pjrt_synchronize,
    .workspace_create = pjrt_workspace_create,
    .workspace_destroy = pjrt_workspace_destroy,
    .batch_load = pjrt_batch_load,
    .forward = pjrt_forward,
    .step = pjrt_step,
    .state_save = pjrt_state_save,
    .window_squared_errors = pjrt_window_squared_errors,
    .output_download = pjrt_output_download,
};
