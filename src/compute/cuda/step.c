/* The CUDA backend's training step (backend.h step and step_results; compute.h's contract):
 * one door, no host round trip inside it, a CUDA graph per batch shape.
 *
 * A step is its plan (plan_* below): stages in the order they are queued on the context's one
 * stream. Outside the captured region: the batch, the dropout masks and the step's scalars
 * (Adam's bias corrections, the learning rate, AdamW's decay, this rank's stop flag, 1/W)
 * copied into pinned staging memory and up to the device, and cuDNN's batch descriptors set on
 * the host. Inside it: our kernels, cuDNN's RNN calls, cuBLAS's products, a memset and the
 * reduction where it is queued on the stream (NCCL). Every value that changes from step to step
 * is read from device memory there, so that one graph serves every step of a batch shape: the
 * full batches' and the short last one's. The first step of a shape runs the stages one by one
 * (cuDNN and cuBLAS settle their own allocations), the second captures them
 * (cudaStreamBeginCapture, thread-local) and launches the graph, the later ones launch it. A
 * reduction staged through the host (Gloo, MPI) cannot be captured: those steps run their
 * stages one by one. A capture that fails (a library call that cannot be captured) turns the
 * graphs off for the workspace, with one warning, and the step runs its stages instead;
 * TSRNN_CUDA_GRAPHS=0 turns them off from the start (the GPU check compares both).
 *
 * Results stay on the device: each step writes its loss into a ring and, when its gradients
 * or loss are not finite or the ranks agreed to stop, the halt into a status word, which later
 * steps read to leave the parameters alone (kernels.cu skip_update). tsrnn_cuda_step_results
 * waits for the last step (watching the reduction's health and the steps' progress, a counter
 * the device writes into mapped host memory, when the reduction is queued: a peer that died or
 * stopped ends the wait within timeout_s of the last finished step) and reads them. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda.h"

#define STAGING_SLOTS 3 /* steps whose inputs may be in flight at once */
#define GRAPHS_MAX    4 /* batch shapes kept: the full batches', the short last one's, ... */

/* One step's inputs in pinned memory: x, y, masks, then the scalars. */
struct staging_slot {
    float *x, *y, *masks;
    struct tsrnn_cuda_step_consts *consts;
    cudaEvent_t copied; /* its copies up are done: the slot may be written again */
    bool in_flight;
};

struct step_graph {
    size_t batch_count, step_count;
    float clip_max_norm;
    struct tsrnn_step_state state; /* the buffers a graph captured */
    bool seen;                     /* a step of the shape ran uncaptured */
    bool captured;                 /* exec holds its graph */
    cudaGraphExec_t exec;          /* NULL until captured */
};

struct cuda_step {
    /* device */
    struct tsrnn_cuda_step_consts *consts;
    struct tsrnn_cuda_step_status *status;
    float *losses; /* (results_capacity) */
    float *masks;  /* (L-1, T, B, H) at capacity; NULL without dropout */
    float *clip_scratch;
    size_t *clip_layout; /* the tensors' offsets, then their counts */
    size_t tensor_count;
    /* host */
    void *pinned;
    struct staging_slot slots[STAGING_SLOTS];
    size_t next_slot;
    volatile int64_t *progress; /* pinned, mapped: the device writes steps_done there */
    int64_t *progress_device;
    struct tsrnn_cuda_step_status *status_host; /* pinned */
    float *losses_host;                         /* pinned (results_capacity) */
    cudaEvent_t done;                           /* after the last step */
    size_t taken;                               /* steps since the last read */
    const struct tsrnn_step_reduce *reduce;     /* the last step's */
    bool graphs;
    struct step_graph shapes[GRAPHS_MAX];
    size_t shape_count;
};

#define CUDA(ws, call, what) TSRNN_TRY(tsrnn_cuda_check((call), (ws)->cuda, (what)))

/* --- the plan ------------------------------------------------------------------------------- */

/* What a stage works on. */
struct step_run {
    struct cuda_workspace *ws;
    struct cuda_step *st;
    const struct tsrnn_step_buffers *buf;
    const struct tsrnn_step_args *args;
};

static enum tsrnn_status stage_time_major(struct step_run *r)
{
    return tsrnn_cuda_batch_to_time_major(r->ws, true);
}

static enum tsrnn_status stage_layers_forward(struct step_run *r)
{
    struct cuda_workspace *ws = r->ws;
    size_t per_layer = ws->step_count * ws->batch_count * ws->dims.hidden_count;
    for (size_t l = 0; l < ws->dims.layer_count; l++) {
        const float *mask =
            l > 0 && r->st->masks != NULL ? r->st->masks + (l - 1) * per_layer : NULL;
        TSRNN_TRY(tsrnn_cuda_layer_forward_device_mask(ws, l, &r->buf->p.layers[l], mask));
    }
    return TSRNN_OK;
}

static enum tsrnn_status stage_head_forward(struct step_run *r)
{
    return tsrnn_cuda_head_forward(&r->ws->cuda->base, r->ws, r->buf->p.v_w, r->buf->p.v_b);
}

static enum tsrnn_status stage_zero_grads(struct step_run *r)
{
    CUDA(r->ws,
         cudaMemsetAsync(r->buf->grads, 0, r->buf->table->total_count * sizeof(float),
                         r->ws->cuda->stream),
         "zeroing the gradients");
    return TSRNN_OK;
}

static enum tsrnn_status stage_loss_backward(struct step_run *r)
{
    return tsrnn_cuda_mse_backward(&r->ws->cuda->base, r->ws);
}

static enum tsrnn_status stage_head_backward(struct step_run *r)
{
    return tsrnn_cuda_head_backward(&r->ws->cuda->base, r->ws, r->buf->p.v_w, r->buf->g.v_w,
                                    r->buf->g.v_b);
}

static enum tsrnn_status stage_layers_backward(struct step_run *r)
{
    struct tsrnn_model_params g = r->buf->g;
    for (size_t l = r->ws->dims.layer_count; l-- > 0;)
        TSRNN_TRY(tsrnn_cuda_layer_backward(&r->ws->cuda->base, r->ws, l, &r->buf->p.layers[l],
                                            &g.layers[l]));
    return TSRNN_OK;
}

static enum tsrnn_status stage_loss(struct step_run *r)
{
    const struct tsrnn_param_table *t = r->buf->table;
    TSRNN_TRY(
        tsrnn_cuda_mse_forward(&r->ws->cuda->base, r->ws, r->buf->grads + TSRNN_STEP_LOSS_SLOT(t)));
    CUDA(r->ws,
         tsrnn_kernel_step_begin(r->st->status, r->st->consts,
                                 r->buf->grads + TSRNN_STEP_STOP_SLOT(t), r->ws->cuda->stream),
         "putting the stop flag beside the loss");
    return TSRNN_OK;
}

static enum tsrnn_status stage_reduce(struct step_run *r)
{
    const struct tsrnn_step_reduce *reduce = r->args->reduce;
    if (reduce == NULL)
        return TSRNN_OK;
    return reduce->allreduce_sum(reduce->ctx, r->buf->grads, r->buf->table->total_count + 2);
}

static enum tsrnn_status stage_scale_check(struct step_run *r)
{
    CUDA(r->ws,
         tsrnn_kernel_step_scale_check(r->buf->grads, r->buf->table->total_count + 2, r->st->consts,
                                       r->st->status, r->ws->cuda->stream),
         "scaling and checking the gradients");
    return TSRNN_OK;
}

static enum tsrnn_status stage_record(struct step_run *r)
{
    CUDA(r->ws,
         tsrnn_kernel_step_record(r->st->status,
                                  r->buf->grads + TSRNN_STEP_LOSS_SLOT(r->buf->table),
                                  r->st->losses, r->st->progress_device, r->ws->cuda->stream),
         "recording the step's loss");
    return TSRNN_OK;
}

static enum tsrnn_status stage_clip(struct step_run *r)
{
    struct cuda_step *st = r->st;
    if (!(r->args->clip_max_norm > 0.0f))
        return TSRNN_OK;
    CUDA(r->ws,
         tsrnn_kernel_clip(r->buf->grads, r->buf->table->total_count, st->clip_scratch,
                           st->clip_scratch + st->tensor_count, st->clip_layout,
                           st->clip_layout + st->tensor_count, st->tensor_count,
                           r->args->clip_max_norm, st->status, r->ws->cuda->stream),
         "clipping the gradients");
    return TSRNN_OK;
}

static enum tsrnn_status stage_update(struct step_run *r)
{
    const struct tsrnn_step_buffers *b = r->buf;
    CUDA(r->ws,
         tsrnn_kernel_step_update(b->state.params, b->state.exp_avg, b->state.exp_avg_sq, b->grads,
                                  b->table->total_count, r->st->consts, r->st->status,
                                  r->ws->cuda->stream),
         "updating the parameters (Adam)");
    return TSRNN_OK;
}

/* The stages that queue device work, with the kind each one is; the two plans place them
 * between what is done before and after. */
#define DEVICE_STAGES(reduce_kind)                                                                 \
    { "the batch laid out time-major", TSRNN_CUDA_STAGE_KERNEL, stage_time_major },                \
        { "the layers forward (cuDNN; dropout masks applied)", TSRNN_CUDA_STAGE_CUDNN,             \
          stage_layers_forward },                                                                  \
        { "the head forward (cuBLAS)", TSRNN_CUDA_STAGE_CUBLAS, stage_head_forward },              \
        { "the gradients zeroed", TSRNN_CUDA_STAGE_MEMSET, stage_zero_grads },                     \
        { "the loss's gradient", TSRNN_CUDA_STAGE_KERNEL, stage_loss_backward },                   \
        { "the head backward (cuBLAS)", TSRNN_CUDA_STAGE_CUBLAS, stage_head_backward },            \
        { "the layers backward (cuDNN)", TSRNN_CUDA_STAGE_CUDNN, stage_layers_backward },          \
        { "the loss, and this rank's stop flag beside it", TSRNN_CUDA_STAGE_KERNEL, stage_loss },  \
        { "the sum over the ranks", reduce_kind, stage_reduce },                                   \
        { "1/W and the finite check", TSRNN_CUDA_STAGE_KERNEL, stage_scale_check },                \
        { "the loss recorded, a halt decided", TSRNN_CUDA_STAGE_KERNEL, stage_record },            \
        { "clipping", TSRNN_CUDA_STAGE_KERNEL, stage_clip },                                       \
    {                                                                                              \
        "AdamW's decay and Adam's update", TSRNN_CUDA_STAGE_KERNEL, stage_update                   \
    }

static const struct tsrnn_cuda_stage plan_captured[] = {
    { "cuDNN's batch descriptors", TSRNN_CUDA_STAGE_HOST, NULL },
    { "the batch, masks and scalars into pinned staging", TSRNN_CUDA_STAGE_HOST, NULL },
    { "the staging copied up", TSRNN_CUDA_STAGE_COPY_UP, NULL },
    { "the graph of the batch shape: captured or launched", TSRNN_CUDA_STAGE_CAPTURE_BEGIN, NULL },
    DEVICE_STAGES(TSRNN_CUDA_STAGE_REDUCE_QUEUED),
    { "the graph ends", TSRNN_CUDA_STAGE_CAPTURE_END, NULL },
    { "the step's event", TSRNN_CUDA_STAGE_RECORD, NULL },
};

static const struct tsrnn_cuda_stage plan_host_reduce[] = {
    { "cuDNN's batch descriptors", TSRNN_CUDA_STAGE_HOST, NULL },
    { "the batch, masks and scalars into pinned staging", TSRNN_CUDA_STAGE_HOST, NULL },
    { "the staging copied up", TSRNN_CUDA_STAGE_COPY_UP, NULL },
    DEVICE_STAGES(TSRNN_CUDA_STAGE_REDUCE_HOST),
    { "the step's event", TSRNN_CUDA_STAGE_RECORD, NULL },
};

const struct tsrnn_cuda_stage *tsrnn_cuda_step_plan(bool capturable, size_t *count)
{
    *count = capturable ? sizeof(plan_captured) / sizeof(plan_captured[0])
                        : sizeof(plan_host_reduce) / sizeof(plan_host_reduce[0]);
    return capturable ? plan_captured : plan_host_reduce;
}

bool tsrnn_cuda_stage_capturable(enum tsrnn_cuda_stage_kind kind)
{
    switch (kind) {
    case TSRNN_CUDA_STAGE_KERNEL:
    case TSRNN_CUDA_STAGE_MEMSET:
    case TSRNN_CUDA_STAGE_CUDNN:
    case TSRNN_CUDA_STAGE_CUBLAS:
    case TSRNN_CUDA_STAGE_REDUCE_QUEUED:
        return true;
    case TSRNN_CUDA_STAGE_HOST:
    case TSRNN_CUDA_STAGE_COPY_UP:
    case TSRNN_CUDA_STAGE_CAPTURE_BEGIN:
    case TSRNN_CUDA_STAGE_CAPTURE_END:
    case TSRNN_CUDA_STAGE_REDUCE_HOST:
    case TSRNN_CUDA_STAGE_RECORD:
        break;
    }
    return false;
}

/* Queues the plan's device stages, in order. While capturing, a stage of a kind that cannot be
 * captured is refused before it runs (the plan is checked without a GPU, tests/test_cuda_plan.c;
 * this holds the code to it on one). */
static enum tsrnn_status run_device_stages(struct step_run *r, bool capturable, bool capturing)
{
    size_t count;
    const struct tsrnn_cuda_stage *plan = tsrnn_cuda_step_plan(capturable, &count);
    for (size_t i = 0; i < count; i++) {
        if (plan[i].run == NULL)
            continue;
        if (capturing && !tsrnn_cuda_stage_capturable(plan[i].kind))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "the training step's stage '%s' cannot be captured in a graph",
                               plan[i].name);
        TSRNN_TRY(plan[i].run(r));
    }
    return TSRNN_OK;
}

/* --- the step's buffers -------------------------------------------------------------------- */

void tsrnn_cuda_step_destroy(struct cuda_workspace *ws)
{
    struct cuda_step *st = ws->step;
    if (st == NULL)
        return;
    (void)cudaStreamSynchronize(ws->cuda->stream);
    for (size_t i = 0; i < st->shape_count; i++)
        if (st->shapes[i].exec != NULL)
            (void)cudaGraphExecDestroy(st->shapes[i].exec);
    for (size_t i = 0; i < STAGING_SLOTS; i++)
        if (st->slots[i].copied != NULL)
            (void)cudaEventDestroy(st->slots[i].copied);
    if (st->done != NULL)
        (void)cudaEventDestroy(st->done);
    void *device[] = { st->consts, st->status,       st->losses,
                       st->masks,  st->clip_scratch, st->clip_layout };
    for (size_t i = 0; i < sizeof(device) / sizeof(device[0]); i++)
        if (device[i] != NULL)
            (void)cudaFree(device[i]);
    void *pinned[] = { st->pinned, (void *)st->progress, st->status_host, st->losses_host };
    for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++)
        if (pinned[i] != NULL)
            (void)cudaFreeHost(pinned[i]);
    free(st);
    ws->step = NULL;
}

static enum tsrnn_status step_create(struct cuda_workspace *ws, const struct tsrnn_param_table *t)
{
    struct tsrnn_cuda *cuda = ws->cuda;
    const char *what = "setting up the training step's buffers";
    size_t B = ws->batch_capacity, T = ws->step_capacity, L = ws->dims.layer_count;
    size_t C = ws->dims.input_count, O = ws->dims.output_count, H = ws->dims.hidden_count;
    size_t mask_count = L > 1 && ws->dims.dropout > 0.0f ? (L - 1) * T * B * H : 0;
    struct cuda_step *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the training step");
    ws->step = st;
    const char *graphs = getenv("TSRNN_CUDA_GRAPHS");
    st->graphs = graphs == NULL || strcmp(graphs, "0") != 0;
    st->tensor_count = t->entry_count;
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, (void **)&st->consts, sizeof(*st->consts), ws->setting));
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, (void **)&st->status, sizeof(*st->status), ws->setting));
    CUDA(ws, cudaMemsetAsync(st->status, 0, sizeof(*st->status), cuda->stream), what);
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, (void **)&st->losses, ws->results_capacity * sizeof(float),
                                ws->setting));
    if (mask_count > 0)
        TSRNN_TRY(
            tsrnn_cuda_malloc(cuda, (void **)&st->masks, mask_count * sizeof(float), ws->setting));
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, (void **)&st->clip_scratch,
                                (st->tensor_count + 1) * sizeof(float), ws->setting));
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, (void **)&st->clip_layout,
                                2 * st->tensor_count * sizeof(size_t), ws->setting));
    size_t *layout = malloc(2 * st->tensor_count * sizeof(size_t));
    if (layout == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the tensors' layout");
    for (size_t e = 0; e < st->tensor_count; e++) {
        layout[e] = t->entries[e].offset;
        layout[st->tensor_count + e] = t->entries[e].count;
    }
    enum tsrnn_status status =
        tsrnn_cuda_check(cudaMemcpy(st->clip_layout, layout, 2 * st->tensor_count * sizeof(size_t),
                                    cudaMemcpyHostToDevice),
                         cuda, what);
    free(layout);
    TSRNN_TRY(status);

    /* The staging slots, one pinned block: x, y, masks, the scalars, each 16-byte aligned. */
    size_t counts[3] = { B * T * C, B * T * O, mask_count }, slot_nbytes = 0;
    for (size_t i = 0; i < 3; i++)
        slot_nbytes += (counts[i] * sizeof(float) + 15) / 16 * 16;
    slot_nbytes += (sizeof(struct tsrnn_cuda_step_consts) + 15) / 16 * 16;
    CUDA(ws, cudaMallocHost(&st->pinned, STAGING_SLOTS * slot_nbytes), what);
    for (size_t s = 0; s < STAGING_SLOTS; s++) {
        char *p = (char *)st->pinned + s * slot_nbytes;
        float **dst[3] = { &st->slots[s].x, &st->slots[s].y, &st->slots[s].masks };
        for (size_t i = 0; i < 3; i++) {
            *dst[i] = counts[i] > 0 ? (float *)p : NULL;
            p += (counts[i] * sizeof(float) + 15) / 16 * 16;
        }
        st->slots[s].consts = (struct tsrnn_cuda_step_consts *)p;
        CUDA(ws, cudaEventCreateWithFlags(&st->slots[s].copied, cudaEventDisableTiming), what);
    }
    CUDA(ws, cudaEventCreateWithFlags(&st->done, cudaEventDisableTiming), what);
    /* The progress counter the device writes and the host reads without waiting. */
    CUDA(ws, cudaHostAlloc((void **)&st->progress, sizeof(int64_t), cudaHostAllocMapped), what);
    *st->progress = 0;
    CUDA(ws, cudaHostGetDevicePointer((void **)&st->progress_device, (void *)st->progress, 0),
         what);
    CUDA(ws, cudaMallocHost((void **)&st->status_host, sizeof(*st->status_host)), what);
    CUDA(ws, cudaMallocHost((void **)&st->losses_host, ws->results_capacity * sizeof(float)), what);
    return TSRNN_OK;
}

/* --- one step -------------------------------------------------------------------------------- */

/* The step's inputs into the next pinned slot (after that slot's last copies up are done, so
 * at most STAGING_SLOTS steps' inputs are in flight) and up to the device, in stream order:
 * the step that reads them runs after their copy, the one before it has read its own. */
static enum tsrnn_status stage_inputs(struct cuda_workspace *ws, const struct tsrnn_step_args *a)
{
    struct cuda_step *st = ws->step;
    struct tsrnn_cuda *cuda = ws->cuda;
    const char *what = "copying a training step's inputs to the GPU";
    struct staging_slot *slot = &st->slots[st->next_slot];
    st->next_slot = (st->next_slot + 1) % STAGING_SLOTS;
    if (slot->in_flight)
        CUDA(ws, cudaEventSynchronize(slot->copied), what);
    size_t B = a->batch_count, T = a->step_count, f = sizeof(float);
    size_t x_nbytes = B * T * ws->dims.input_count * f,
           y_nbytes = B * T * ws->dims.output_count * f;
    size_t mask_nbytes =
        st->masks != NULL ? (ws->dims.layer_count - 1) * T * B * ws->dims.hidden_count * f : 0;
    int world_size = a->reduce != NULL ? a->reduce->world_size : 1;
    memcpy(slot->x, a->x, x_nbytes);
    memcpy(slot->y, a->y, y_nbytes);
    if (mask_nbytes > 0)
        memcpy(slot->masks, a->dropout_masks, mask_nbytes);
    *slot->consts = (struct tsrnn_cuda_step_consts){
        .inv_world = 1.0f / (float)world_size,
        .stop_flag = a->stop_requested ? 1.0f : 0.0f,
        .decay = a->update.decay,
        .clip_max_norm = a->clip_max_norm,
        .beta1 = a->update.adam.beta1,
        .one_minus_beta1 = a->update.adam.one_minus_beta1,
        .beta2 = a->update.adam.beta2,
        .one_minus_beta2 = a->update.adam.one_minus_beta2,
        .bc2_sqrt = a->update.adam.bias_correction2_sqrt,
        .eps = a->update.adam.eps,
        .neg_step_size = a->update.adam.neg_step_size,
    };
    cudaStream_t s = cuda->stream;
    CUDA(ws, cudaMemcpyAsync(ws->x_batch, slot->x, x_nbytes, cudaMemcpyHostToDevice, s), what);
    CUDA(ws, cudaMemcpyAsync(ws->y_batch, slot->y, y_nbytes, cudaMemcpyHostToDevice, s), what);
    if (mask_nbytes > 0)
        CUDA(ws, cudaMemcpyAsync(st->masks, slot->masks, mask_nbytes, cudaMemcpyHostToDevice, s),
             what);
    CUDA(
        ws,
        cudaMemcpyAsync(st->consts, slot->consts, sizeof(*slot->consts), cudaMemcpyHostToDevice, s),
        what);
    CUDA(ws, cudaEventRecord(slot->copied, s), what);
    slot->in_flight = true;
    return TSRNN_OK;
}

/* The graph of a batch shape, clipping and bound state (a state bound anew, as the tests do,
 * must not replay a graph of the old buffers). */
static struct step_graph *shape_of(struct cuda_step *st, const struct tsrnn_step_buffers *b,
                                   const struct tsrnn_step_args *a)
{
    for (size_t i = 0; i < st->shape_count; i++)
        if (st->shapes[i].batch_count == a->batch_count &&
            st->shapes[i].step_count == a->step_count &&
            st->shapes[i].clip_max_norm == a->clip_max_norm &&
            memcmp(&st->shapes[i].state, &b->state, sizeof(b->state)) == 0)
            return &st->shapes[i];
    if (st->shape_count == GRAPHS_MAX)
        return NULL; /* more shapes than kept: the rest run uncaptured */
    struct step_graph *g = &st->shapes[st->shape_count++];
    *g = (struct step_graph){ .batch_count = a->batch_count,
                              .step_count = a->step_count,
                              .clip_max_norm = a->clip_max_norm,
                              .state = b->state };
    return g;
}

/* Captures the device stages of a step into g's graph. On failure the graphs are turned off
 * for the workspace, with one warning: the step then runs its stages one by one. */
static void capture(struct step_run *r, struct step_graph *g)
{
    struct cuda_step *st = r->st;
    cudaStream_t s = r->ws->cuda->stream;
    cudaGraph_t graph = NULL;
    char why[512] = "";
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    enum tsrnn_status status = e == cudaSuccess ? run_device_stages(r, true, true) : TSRNN_ERR_IO;
    if (status != TSRNN_OK)
        snprintf(why, sizeof(why), "%s",
                 e != cudaSuccess ? cudaGetErrorString(e) : tsrnn_last_error());
    if (e == cudaSuccess) {
        cudaError_t end = cudaStreamEndCapture(s, &graph);
        if (end != cudaSuccess && why[0] == '\0')
            snprintf(why, sizeof(why), "ending the capture: %s", cudaGetErrorString(end));
    }
    if (why[0] == '\0') {
        e = cudaGraphInstantiate(&g->exec, graph, 0);
        if (e != cudaSuccess) {
            g->exec = NULL;
            snprintf(why, sizeof(why), "instantiating the graph: %s", cudaGetErrorString(e));
        }
    }
    if (graph != NULL)
        (void)cudaGraphDestroy(graph);
    if (why[0] != '\0') {
        (void)cudaGetLastError(); /* the capture's errors are not the stream's */
        tsrnn_error_clear();
        st->graphs = false;
        tsrnn_warn("the training step cannot be captured as a CUDA graph (%s): it runs without "
                   "graphs",
                   why);
        return;
    }
    g->captured = true;
}

enum tsrnn_status tsrnn_cuda_step(struct tsrnn_compute *ctx, void *workspace,
                                  const struct tsrnn_step_buffers *buffers,
                                  const struct tsrnn_step_args *args, struct tsrnn_step_record *now)
{
    struct cuda_workspace *ws = workspace;
    (void)ctx, (void)now; /* the results stay on the device: tsrnn_cuda_step_results */
    if (ws->step == NULL)
        TSRNN_TRY(step_create(ws, buffers->table));
    struct cuda_step *st = ws->step;
    struct step_run run = { .ws = ws, .st = st, .buf = buffers, .args = args };
    bool capturable = args->reduce == NULL || args->reduce->device_queued;

    /* Outside the graph: the inputs, then cuDNN's descriptors for the batch's shape. */
    TSRNN_TRY(tsrnn_cuda_describe_batch(ws, args->batch_count, args->step_count));
    ws->batch_count = args->batch_count;
    ws->step_count = args->step_count;
    TSRNN_TRY(stage_inputs(ws, args));
    st->reduce = args->reduce;
    /* The graph of the shape: its first step runs uncaptured, its second is captured. */
    struct step_graph *g = capturable && st->graphs ? shape_of(st, buffers, args) : NULL;
    if (g != NULL && g->seen && !g->captured)
        capture(&run, g);
    if (g != NULL && g->captured) {
        CUDA(ws, cudaGraphLaunch(g->exec, ws->cuda->stream), "launching the training step's graph");
    } else {
        TSRNN_TRY(run_device_stages(&run, capturable, false));
        if (g != NULL)
            g->seen = true;
    }
    CUDA(ws, cudaEventRecord(st->done, ws->cuda->stream), "recording the training step");
    st->taken++;
    return TSRNN_OK;
}

/* --- the results ------------------------------------------------------------------------------ */

/* A short pause between polls: yield for the first millisecond, then sleep up to 200 µs. */
static void pause_poll(double waited_s)
{
    struct timespec ts = { 0, waited_s < 1e-3 ? 0 : 200000 };
    nanosleep(&ts, NULL);
}

/* Waits for the last step. With a reduction queued on the stream, a peer that died or stopped
 * would keep it waiting forever: the wait asks the reduction's health as it polls, and gives
 * up timeout_s after the last step that finished (the device's progress counter), aborting
 * the communicator so that every rank's wait ends. */
static enum tsrnn_status wait_steps(struct cuda_workspace *ws)
{
    struct cuda_step *st = ws->step;
    const struct tsrnn_step_reduce *reduce = st->reduce;
    const char *what = "waiting for the training steps";
    if (reduce == NULL || !reduce->device_queued) {
        CUDA(ws, cudaEventSynchronize(st->done), what);
        return TSRNN_OK;
    }
    double started_s = tsrnn_clock_now_s(), progress_s = started_s;
    int64_t seen = *st->progress;
    for (;;) {
        cudaError_t e = cudaEventQuery(st->done);
        if (e == cudaSuccess)
            return TSRNN_OK;
        if (e != cudaErrorNotReady)
            return tsrnn_cuda_check(e, ws->cuda, what);
        if (reduce->health != NULL)
            TSRNN_TRY(reduce->health(reduce->ctx));
        double now_s = tsrnn_clock_now_s();
        int64_t done = *st->progress;
        if (done != seen) {
            seen = done;
            progress_s = now_s;
        }
        if (now_s - progress_s > reduce->timeout_s) {
            if (reduce->abort != NULL)
                reduce->abort(reduce->ctx);
            return tsrnn_error(TSRNN_ERR_COMM,
                               "no training step finished on the GPU for %.0f s (timeout_s): a "
                               "peer is gone or stopped; the communicator is aborted",
                               reduce->timeout_s);
        }
        pause_poll(now_s - started_s);
    }
}

enum tsrnn_status tsrnn_cuda_step_results(struct tsrnn_compute *ctx, void *workspace, float *losses,
                                          size_t losses_capacity, struct tsrnn_step_results *r)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    struct cuda_step *st = ws->step;
    const char *what = "reading the training steps' results";
    *r = (struct tsrnn_step_results){ .halt = TSRNN_STEP_RAN, .finite = true };
    if (st == NULL || st->taken == 0)
        return TSRNN_OK;
    TSRNN_TRY(wait_steps(ws));
    CUDA(ws,
         cudaMemcpyAsync(st->status_host, st->status, sizeof(*st->status), cudaMemcpyDeviceToHost,
                         cuda->stream),
         what);
    CUDA(ws,
         cudaMemcpyAsync(st->losses_host, st->losses, st->taken * sizeof(float),
                         cudaMemcpyDeviceToHost, cuda->stream),
         what);
    /* The next steps count afresh (steps_done, the progress, goes on). */
    CUDA(ws,
         cudaMemsetAsync(st->status, 0, offsetof(struct tsrnn_cuda_step_status, nonfinite),
                         cuda->stream),
         what);
    CUDA(ws, cudaStreamSynchronize(cuda->stream), what);
    const struct tsrnn_cuda_step_status *status = st->status_host;
    if ((size_t)status->taken != st->taken || st->taken > losses_capacity)
        return tsrnn_error(TSRNN_ERR_IO,
                           "the GPU counted %d training steps since the last read, the host %zu",
                           (int)status->taken, st->taken);
    memcpy(losses, st->losses_host, st->taken * sizeof(float));
    r->taken = st->taken;
    r->halt = status->halt == 1   ? TSRNN_STEP_DIVERGED
              : status->halt == 2 ? TSRNN_STEP_STOPPED
                                  : TSRNN_STEP_RAN;
    r->halted_at = (size_t)status->halted_at;
    r->finite = r->halt == TSRNN_STEP_RAN || status->finite != 0;
    r->updated = r->halt == TSRNN_STEP_RAN       ? r->taken
                 : r->halt == TSRNN_STEP_STOPPED ? r->halted_at + 1
                                                 : r->halted_at;
    st->taken = 0;
    return TSRNN_OK;
}
