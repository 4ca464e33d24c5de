/* The CUDA backend's workspace, recurrent layers, head and loss (backend.h).
 *
 * Layers: cuDNN's RNN API, the path PyTorch's nn.RNN/LSTM/GRU take on a GPU —
 * cudnnRNNForward, cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8, one call per layer
 * (the table's layer ops run the whole time loop; dropout between layers is the model's
 * mask, drawn on the host as for the CPU, so both backends drop the same units). Each layer
 * is a one-layer cuDNN RNN: tanh RNN, LSTM or GRU, two bias vectors, unidirectional, float32
 * data and math, CUDNN_FMA_MATH (CUDNN_DEFAULT_MATH would allow TF32 tensor cores on Ampere
 * and newer), the standard algorithm.
 *
 * Weights: cuDNN's weight space of a one-layer RNN is W_ih (all gates), W_hh (all gates),
 * b_ih, b_hh, gates in PyTorch's order (LSTM i,f,g,o = cuDNN's input, forget, new memory,
 * output; GRU r,z,n = cuDNN's reset, update, new memory, with r applied to W_hn h + b_hn as
 * in PyTorch) — exactly a layer's span of the model's flat buffer in state_dict order. When
 * the workspace is created, every gate's matrix and bias is located with
 * cudnnGetRNNWeightParams and mapped to PyTorch's offset (map_weights); where the two agree,
 * cuDNN gets the layer's span of the flat parameter and gradient buffers as its weight
 * space: no copies, and checkpoints keep PyTorch's names, order and bytes. Where they do not
 * (another cuDNN's layout), or where a span does not start on WEIGHT_ALIGN_NBYTES (layers
 * above the first can start anywhere), the layer goes through an aligned copy in cuDNN's
 * layout instead: weights copied in before each call; the gradients go to a zeroed copy
 * (cuDNN 9 only accumulates: CUDNN_WGRAD_MODE_SET is refused) and are added back after.
 * Whether cuDNN would take 4-byte-aligned spaces directly (what its argument check asks) is
 * to be measured on a GPU (docs/gpu.md).
 *
 * Activations are time-major, (T, B, .): cuDNN's packed sequence-major layout with every
 * sequence T long. The head is two cuBLAS products; the loss and a few elementwise steps
 * are kernels.cu's. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

#define WEIGHT_ALIGN_NBYTES   16

#define CUDNN(ws, call, what) TSRNN_TRY(tsrnn_cudnn_check((call), (ws)->cuda, (what)))
#define CUDA(ws, call, what)  TSRNN_TRY(tsrnn_cuda_check((call), (ws)->cuda, (what)))

static cudnnRNNMode_t cell_mode(enum tsrnn_model_kind kind)
{
    switch (kind) {
    case TSRNN_MODEL_LSTM:
        return CUDNN_LSTM;
    case TSRNN_MODEL_GRU:
        return CUDNN_GRU;
    case TSRNN_MODEL_RNN:
        break;
    }
    return CUDNN_RNN_TANH;
}

/* --- the cuDNN calls (cuda.h): no handle needed until a call runs -------------------------- */

enum tsrnn_status tsrnn_cuda_rnn_describe(struct tsrnn_cuda_rnn *rnn, enum tsrnn_model_kind kind,
                                          size_t input_count, size_t hidden_count,
                                          cudnnDropoutDescriptor_t dropout)
{
    const char *what = "describing a recurrent layer to cuDNN";
    size_t G = tsrnn_model_gate_count(kind), H = hidden_count, I = input_count;
    *rnn = (struct tsrnn_cuda_rnn){ .input_count = input_count };
    /* PyTorch's span of the layer, until map_weights asks cuDNN for its own. */
    rnn->weight_nbytes = (G * H * (I + H) + 2 * G * H) * sizeof(float);
    TSRNN_TRY(tsrnn_cudnn_check(DL(cudnnCreateRNNDescriptor)(&rnn->desc), NULL, what));
    TSRNN_TRY(tsrnn_cudnn_check(DL(cudnnCreateRNNDataDescriptor)(&rnn->x_desc), NULL, what));
    return tsrnn_cudnn_check(DL(cudnnSetRNNDescriptor_v8)(
                                 rnn->desc, CUDNN_RNN_ALGO_STANDARD, cell_mode(kind),
                                 CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT,
                                 CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, (int32_t)I,
                                 (int32_t)H, (int32_t)H, 1, dropout, CUDNN_RNN_PADDED_IO_DISABLED),
                             NULL, what);
}

void tsrnn_cuda_rnn_destroy(struct tsrnn_cuda_rnn *rnn)
{
    if (rnn->x_desc != NULL)
        (void)DL(cudnnDestroyRNNDataDescriptor)(rnn->x_desc);
    if (rnn->desc != NULL)
        (void)DL(cudnnDestroyRNNDescriptor)(rnn->desc);
    *rnn = (struct tsrnn_cuda_rnn){ 0 };
}

enum tsrnn_status tsrnn_cuda_batch_desc_create(struct tsrnn_cuda_batch_desc *bd, size_t capacity)
{
    const char *what = "describing a batch to cuDNN";
    *bd = (struct tsrnn_cuda_batch_desc){ .capacity = capacity };
    bd->lengths = calloc(capacity ? capacity : 1, sizeof(int));
    if (bd->lengths == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu sequence lengths", capacity);
    TSRNN_TRY(tsrnn_cudnn_check(DL(cudnnCreateRNNDataDescriptor)(&bd->y_desc), NULL, what));
    return tsrnn_cudnn_check(DL(cudnnCreateTensorDescriptor)(&bd->h_desc), NULL, what);
}

void tsrnn_cuda_batch_desc_destroy(struct tsrnn_cuda_batch_desc *bd)
{
    if (bd->y_desc != NULL)
        (void)DL(cudnnDestroyRNNDataDescriptor)(bd->y_desc);
    if (bd->h_desc != NULL)
        (void)DL(cudnnDestroyTensorDescriptor)(bd->h_desc);
    free(bd->lengths);
    *bd = (struct tsrnn_cuda_batch_desc){ 0 };
}

enum tsrnn_status tsrnn_cuda_batch_describe(struct tsrnn_cuda_batch_desc *bd,
                                            struct tsrnn_cuda_rnn *const *rnns, size_t rnn_count,
                                            size_t B, size_t T, size_t H)
{
    const char *what = "describing the batch to cuDNN";
    if (B > bd->capacity)
        return tsrnn_error(TSRNN_ERR_USAGE, "a batch of %zu windows, cuDNN's lengths hold %zu", B,
                           bd->capacity);
    /* Every window is T long: the packed sequence-major layout, (T, B, .) as tsrnn's own. */
    for (size_t b = 0; b < B; b++)
        bd->lengths[b] = (int)T;
    for (size_t k = 0; k < rnn_count; k++)
        TSRNN_TRY(tsrnn_cudnn_check(
            DL(cudnnSetRNNDataDescriptor)(rnns[k]->x_desc, CUDNN_DATA_FLOAT,
                                          CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, (int)T, (int)B,
                                          (int)rnns[k]->input_count, bd->lengths, NULL),
            NULL, what));
    TSRNN_TRY(
        tsrnn_cudnn_check(DL(cudnnSetRNNDataDescriptor)(bd->y_desc, CUDNN_DATA_FLOAT,
                                                        CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                                        (int)T, (int)B, (int)H, bd->lengths, NULL),
                          NULL, what));
    int dims[3] = { 1, (int)B, (int)H }, strides[3] = { (int)(B * H), (int)H, 1 };
    return tsrnn_cudnn_check(
        DL(cudnnSetTensorNdDescriptor)(bd->h_desc, CUDNN_DATA_FLOAT, 3, dims, strides), NULL, what);
}

cudnnStatus_t tsrnn_cuda_rnn_forward(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                     const struct tsrnn_cuda_batch_desc *bd,
                                     const struct tsrnn_cuda_rnn_call *c)
{
    return DL(cudnnRNNForward)(handle, rnn->desc, CUDNN_FWD_MODE_TRAINING, c->seq_lengths,
                               rnn->x_desc, c->x, bd->y_desc, c->y, bd->h_desc, c->hx, c->hy,
                               bd->h_desc, c->cx, c->cy, rnn->weight_nbytes, c->weights,
                               c->work_nbytes, c->work, c->reserve_nbytes, c->reserve);
}

cudnnStatus_t tsrnn_cuda_rnn_backward_data(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                           const struct tsrnn_cuda_batch_desc *bd,
                                           const struct tsrnn_cuda_rnn_call *c)
{
    /* No gradient flows into the final states (dhy, dcy NULL: zero) nor out of the initial
     * ones (dhx, dcx NULL: not computed); the model's loss reads the outputs only. */
    return DL(cudnnRNNBackwardData_v8)(
        handle, rnn->desc, c->seq_lengths, bd->y_desc, c->y, c->dy, rnn->x_desc, c->dx, bd->h_desc,
        c->hx, NULL, NULL, bd->h_desc, c->cx, NULL, NULL, rnn->weight_nbytes, c->weights,
        c->work_nbytes, c->work, c->reserve_nbytes, c->reserve);
}

cudnnStatus_t tsrnn_cuda_rnn_backward_weights(cudnnHandle_t handle,
                                              const struct tsrnn_cuda_rnn *rnn,
                                              const struct tsrnn_cuda_batch_desc *bd,
                                              const struct tsrnn_cuda_rnn_call *c)
{
    /* ADD, always: cuDNN 9 refuses CUDNN_WGRAD_MODE_SET (CUDNN_STATUS_NOT_SUPPORTED, before
     * it even looks at the handle); a span that must start from zero is zeroed first. */
    return DL(cudnnRNNBackwardWeights_v8)(handle, rnn->desc, CUDNN_WGRAD_MODE_ADD, c->seq_lengths,
                                          rnn->x_desc, c->x, bd->h_desc, c->hx, bd->y_desc, c->y,
                                          rnn->weight_nbytes, c->dweights, c->work_nbytes, c->work,
                                          c->reserve_nbytes, c->reserve);
}

cudnnStatus_t tsrnn_cuda_rnn_temp_sizes(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                        size_t *work_nbytes, size_t *reserve_nbytes)
{
    return DL(cudnnGetRNNTempSpaceSizes)(handle, rnn->desc, CUDNN_FWD_MODE_TRAINING, rnn->x_desc,
                                         work_nbytes, reserve_nbytes);
}

cudnnStatus_t tsrnn_cuda_rnn_weight_space_size(cudnnHandle_t handle,
                                               const struct tsrnn_cuda_rnn *rnn, size_t *nbytes)
{
    return DL(cudnnGetRNNWeightSpaceSize)(handle, rnn->desc, nbytes);
}

cudnnStatus_t tsrnn_cuda_rnn_weight_params(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                           size_t space_nbytes, const void *space, int32_t id,
                                           cudnnTensorDescriptor_t m_desc, void **m_addr,
                                           cudnnTensorDescriptor_t b_desc, void **b_addr)
{
    return DL(cudnnGetRNNWeightParams)(handle, rnn->desc, 0, space_nbytes, space, id, m_desc,
                                       m_addr, b_desc, b_addr);
}

/* --- the workspace --------------------------------------------------------------------------- */

static enum tsrnn_status ws_malloc(struct cuda_workspace *ws, void *buf, size_t nbytes)
{
    return tsrnn_cuda_malloc(ws->cuda, (void **)buf, nbytes, ws->setting);
}

/* The element count a cuDNN tensor descriptor describes. */
static enum tsrnn_status described_count(struct cuda_workspace *ws, cudnnTensorDescriptor_t desc,
                                         size_t *count)
{
    cudnnDataType_t type;
    int dims[8], strides[8], rank = 0;
    CUDNN(ws, DL(cudnnGetTensorNdDescriptor)(desc, 8, &type, &rank, dims, strides),
          "reading the shape of a weight tensor");
    *count = 1;
    for (int i = 0; i < rank && i < 8; i++)
        *count *= (size_t)(dims[i] > 0 ? dims[i] : 0);
    return TSRNN_OK;
}

/* Locates every gate's matrix and bias of one layer in cuDNN's weight space
 * (cudnnGetRNNWeightParams) and maps it to PyTorch's layout of the layer: W_ih (G*H, I),
 * W_hh (G*H, H), b_ih (G*H), b_hh (G*H), gate g's rows at g*H. cuDNN is expected to use this
 * layout, as far as PyTorch's own views into it show (same_layout); another one is served
 * through a copy (layer_weights). */
static enum tsrnn_status map_weights(struct cuda_workspace *ws, struct tsrnn_cuda_rnn *k)
{
    size_t G = ws->gate_count, H = ws->dims.hidden_count, I = k->input_count;
    size_t want_count = G * H * (I + H) + 2 * G * H;
    const char *what = "locating PyTorch's tensors in cuDNN's weight space";
    CUDNN(ws, tsrnn_cuda_rnn_weight_space_size(ws->cuda->cudnn, k, &k->weight_nbytes), what);
    /* cuDNN may pad its weight space; then the copy path serves (same_layout below). */
    size_t space_count = k->weight_nbytes / sizeof(float);
    if (space_count < want_count)
        return tsrnn_error(TSRNN_ERR_IO,
                           "cuDNN %zu's weight space for a %s layer (%zu inputs, hidden_dim %zu) "
                           "is %zu bytes, smaller than PyTorch's %zu bytes of parameters: tsrnn "
                           "cannot map one onto the other",
                           DL(cudnnGetVersion)(), tsrnn_model_kind_name(ws->dims.kind), I, H,
                           k->weight_nbytes, want_count * sizeof(float));

    cudnnTensorDescriptor_t m_desc = NULL, b_desc = NULL;
    char *base = NULL;
    size_t covered = 0;
    k->segment_count = 0;
    k->same_layout = space_count == want_count;
    enum tsrnn_status status =
        tsrnn_cudnn_check(DL(cudnnCreateTensorDescriptor)(&m_desc), ws->cuda, what);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_cudnn_check(DL(cudnnCreateTensorDescriptor)(&b_desc), ws->cuda, what);
    if (status != TSRNN_OK)
        goto out;
    status = ws_malloc(ws, &base, k->weight_nbytes);
    if (status != TSRNN_OK)
        goto out;
    for (size_t id = 0; id < 2 * G; id++) {
        void *addr[2] = { NULL, NULL };
        status = tsrnn_cudnn_check(tsrnn_cuda_rnn_weight_params(ws->cuda->cudnn, k,
                                                                k->weight_nbytes, base, (int32_t)id,
                                                                m_desc, &addr[0], b_desc, &addr[1]),
                                   ws->cuda, what);
        if (status != TSRNN_OK)
            goto out;
        /* linLayerID 0..G-1: the input side's gates, G..2G-1: the recurrent side's. */
        bool recurrent = id >= G;
        size_t gate = recurrent ? id - G : id;
        size_t torch_offset[2] = {
            recurrent ? G * H * I + gate * H * H : gate * H * I,
            G * H * (I + H) + (recurrent ? G * H : 0) + gate * H,
        };
        size_t want[2] = { recurrent ? H * H : H * I, H };
        for (int b = 0; b < 2; b++) {
            size_t count = 0;
            status = described_count(ws, b ? b_desc : m_desc, &count);
            if (status != TSRNN_OK)
                goto out;
            size_t offset = (size_t)((char *)addr[b] - base) / sizeof(float);
            if (addr[b] == NULL || count != want[b] || offset + count > space_count) {
                status = tsrnn_error(TSRNN_ERR_IO,
                                     "cuDNN %zu's %s of gate %zu of a %s layer's %s side has "
                                     "%zu floats at float %zu of %zu; PyTorch's has %zu: tsrnn "
                                     "cannot map one onto the other",
                                     DL(cudnnGetVersion)(), b ? "bias" : "matrix", gate,
                                     tsrnn_model_kind_name(ws->dims.kind),
                                     recurrent ? "recurrent" : "input", count, offset, want_count,
                                     want[b]);
                goto out;
            }
            k->segments[k->segment_count++] =
                (struct tsrnn_cuda_weight_segment){ offset, torch_offset[b], count };
            k->same_layout = k->same_layout && offset == torch_offset[b];
            covered += count;
        }
    }
    if (covered != want_count)
        status = tsrnn_error(TSRNN_ERR_IO,
                             "cuDNN %zu's weight tensors of a %s layer cover %zu of its %zu "
                             "floats: tsrnn cannot map them onto PyTorch's",
                             DL(cudnnGetVersion)(), tsrnn_model_kind_name(ws->dims.kind), covered,
                             want_count);
out:
    if (base != NULL)
        (void)cudaFree(base);
    if (m_desc != NULL)
        (void)DL(cudnnDestroyTensorDescriptor)(m_desc);
    if (b_desc != NULL)
        (void)DL(cudnnDestroyTensorDescriptor)(b_desc);
    return status;
}

/* The layers' rnns: layer 0's, and the one of the layers above when there are any. */
static size_t rnn_list(struct cuda_workspace *ws, struct tsrnn_cuda_rnn **rnns)
{
    rnns[0] = &ws->rnns[0];
    rnns[1] = &ws->rnns[1];
    return ws->dims.layer_count > 1 ? 2 : 1;
}

/* The data descriptors for B windows of T steps (and the device's copy of the lengths). */
enum tsrnn_status tsrnn_cuda_describe_batch(struct cuda_workspace *ws, size_t B, size_t T)
{
    const char *what = "describing the batch to cuDNN";
    if (ws->desc_batch == B && ws->desc_steps == T)
        return TSRNN_OK;
    struct tsrnn_cuda_rnn *rnns[2];
    size_t rnn_count = rnn_list(ws, rnns);
    TSRNN_TRY(tsrnn_cuda_batch_describe(&ws->bd, rnns, rnn_count, B, T, ws->dims.hidden_count));
    /* The temporary spaces were sized at capacity; a smaller batch must not need more. */
    for (size_t k = 0; k < rnn_count; k++) {
        size_t work = 0, reserve = 0;
        CUDNN(ws, tsrnn_cuda_rnn_temp_sizes(ws->cuda->cudnn, rnns[k], &work, &reserve), what);
        if (work > ws->work_nbytes || reserve > rnns[k]->reserve_nbytes)
            return tsrnn_error(TSRNN_ERR_IO,
                               "cuDNN asks for more scratch memory for a batch of %zu x %zu "
                               "steps (%zu + %zu bytes) than at the workspace's capacity of "
                               "%zu x %zu (%zu + %zu)",
                               B, T, work, reserve, ws->batch_capacity, ws->step_capacity,
                               ws->work_nbytes, rnns[k]->reserve_nbytes);
    }
    CUDA(ws, tsrnn_kernel_fill_int(ws->seq_lengths, B, (int32_t)T, ws->cuda->stream), what);
    ws->desc_batch = B;
    ws->desc_steps = T;
    return TSRNN_OK;
}

static enum tsrnn_status create_rnns(struct cuda_workspace *ws)
{
    const char *what = "setting up cuDNN's RNN";
    struct tsrnn_cuda *cuda = ws->cuda;
    size_t states_nbytes = 0;
    size_t B = ws->batch_capacity, T = ws->step_capacity, H = ws->dims.hidden_count;

    CUDNN(ws, DL(cudnnCreateDropoutDescriptor)(&ws->dropout), what);
    CUDNN(ws, DL(cudnnDropoutGetStatesSize)(cuda->cudnn, &states_nbytes), what);
    TSRNN_TRY(ws_malloc(ws, &ws->dropout_states, states_nbytes));
    CUDNN(ws,
          DL(cudnnSetDropoutDescriptor)(ws->dropout, cuda->cudnn, 0.0f, ws->dropout_states,
                                        states_nbytes, 0),
          what);
    TSRNN_TRY(tsrnn_cuda_batch_desc_create(&ws->bd, B));
    struct tsrnn_cuda_rnn *rnns[2];
    size_t rnn_count = rnn_list(ws, rnns);
    for (size_t k = 0; k < rnn_count; k++) {
        TSRNN_TRY(tsrnn_cuda_rnn_describe(rnns[k], ws->dims.kind, k == 0 ? ws->dims.input_count : H,
                                          H, ws->dropout));
        TSRNN_TRY(map_weights(ws, rnns[k]));
    }
    /* The scratch and reserve spaces at capacity. */
    ws->desc_batch = ws->desc_steps = 0;
    TSRNN_TRY(tsrnn_cuda_batch_describe(&ws->bd, rnns, rnn_count, B, T, H));
    size_t work_max = 0;
    for (size_t k = 0; k < rnn_count; k++) {
        size_t work = 0;
        CUDNN(ws, tsrnn_cuda_rnn_temp_sizes(cuda->cudnn, rnns[k], &work, &rnns[k]->reserve_nbytes),
              what);
        work_max = work > work_max ? work : work_max;
    }
    ws->work_nbytes = work_max;
    return ws_malloc(ws, &ws->work, work_max);
}

static enum tsrnn_status create_buffers(struct cuda_workspace *ws)
{
    size_t B = ws->batch_capacity, T = ws->step_capacity;
    size_t C = ws->dims.input_count, O = ws->dims.output_count, H = ws->dims.hidden_count;
    size_t L = ws->dims.layer_count, f = sizeof(float);
    bool dropout = L > 1 && ws->dims.dropout > 0.0f, lstm = ws->dims.kind == TSRNN_MODEL_LSTM;

    TSRNN_TRY(ws_malloc(ws, &ws->seq_lengths, B * sizeof(int32_t)));
    size_t weight_max = ws->rnns[0].weight_nbytes;
    if (L > 1 && ws->rnns[1].weight_nbytes > weight_max)
        weight_max = ws->rnns[1].weight_nbytes;
    TSRNN_TRY(ws_malloc(ws, &ws->weight_copy, weight_max));
    TSRNN_TRY(ws_malloc(ws, &ws->grad_copy, weight_max));
    TSRNN_TRY(ws_malloc(ws, &ws->x, T * B * C * f));
    TSRNN_TRY(ws_malloc(ws, &ws->x_batch, T * B * C * f));
    TSRNN_TRY(ws_malloc(ws, &ws->y, T * B * O * f));
    TSRNN_TRY(ws_malloc(ws, &ws->y_batch, T * B * O * f));
    TSRNN_TRY(ws_malloc(ws, &ws->out, T * B * O * f));
    TSRNN_TRY(ws_malloc(ws, &ws->d_out, T * B * O * f));
    TSRNN_TRY(ws_malloc(ws, &ws->d_a, T * B * H * f));
    TSRNN_TRY(ws_malloc(ws, &ws->d_b, T * B * H * f));
    TSRNN_TRY(ws_malloc(ws, &ws->dx0, T * B * C * f));
    TSRNN_TRY(ws_malloc(ws, &ws->se, B * sizeof(double)));
    TSRNN_TRY(ws_malloc(ws, &ws->state_h, L * B * H * f));
    if (lstm)
        TSRNN_TRY(ws_malloc(ws, &ws->state_c, L * B * H * f));
    for (size_t l = 0; l < L; l++) {
        struct cuda_layer *lc = &ws->layers[l];
        TSRNN_TRY(ws_malloc(ws, &lc->out, T * B * H * f));
        TSRNN_TRY(ws_malloc(ws, &lc->h0, B * H * f));
        TSRNN_TRY(ws_malloc(ws, &lc->hy, B * H * f));
        if (lstm) {
            TSRNN_TRY(ws_malloc(ws, &lc->c0, B * H * f));
            TSRNN_TRY(ws_malloc(ws, &lc->cy, B * H * f));
        }
        if (dropout && l > 0) {
            TSRNN_TRY(ws_malloc(ws, &lc->mask, T * B * H * f));
            TSRNN_TRY(ws_malloc(ws, &lc->dropped, T * B * H * f));
        }
        TSRNN_TRY(ws_malloc(ws, &lc->reserve, ws->rnns[l == 0 ? 0 : 1].reserve_nbytes));
    }
    return TSRNN_OK;
}

void tsrnn_cuda_workspace_destroy(struct tsrnn_compute *ctx, void *workspace)
{
    struct cuda_workspace *ws = workspace;
    (void)ctx;
    if (ws == NULL)
        return;
    (void)cudaStreamSynchronize(ws->cuda->stream);
    tsrnn_cuda_step_destroy(ws);
    void *buffers[] = { ws->dropout_states,
                        ws->work,
                        ws->seq_lengths,
                        ws->weight_copy,
                        ws->grad_copy,
                        ws->x,
                        ws->x_batch,
                        ws->y,
                        ws->y_batch,
                        ws->out,
                        ws->d_out,
                        ws->d_a,
                        ws->d_b,
                        ws->dx0,
                        ws->se,
                        ws->state_h,
                        ws->state_c };
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++)
        if (buffers[i] != NULL)
            (void)cudaFree(buffers[i]);
    for (size_t l = 0; l < TSRNN_MODEL_MAX_LAYERS; l++) {
        struct cuda_layer *lc = &ws->layers[l];
        void *own[] = {
            lc->out, lc->mask, lc->dropped, lc->h0, lc->c0, lc->hy, lc->cy, lc->reserve
        };
        for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
            if (own[i] != NULL)
                (void)cudaFree(own[i]);
    }
    for (size_t k = 0; k < 2; k++)
        tsrnn_cuda_rnn_destroy(&ws->rnns[k]);
    tsrnn_cuda_batch_desc_destroy(&ws->bd);
    if (ws->dropout != NULL)
        (void)DL(cudnnDestroyDropoutDescriptor)(ws->dropout);
    free(ws);
}

enum tsrnn_status tsrnn_cuda_workspace_create(struct tsrnn_compute *ctx, void **out,
                                              const struct tsrnn_model_dims *dims,
                                              size_t batch_capacity, size_t step_capacity,
                                              size_t results_capacity)
{
    *out = NULL;
    size_t G = tsrnn_model_gate_count(dims->kind), H = dims->hidden_count;
    size_t B = batch_capacity ? batch_capacity : 1, T = step_capacity ? step_capacity : 1;
    /* cuDNN and cuBLAS take int sizes: every product of dimensions they see must fit. */
    double biggest =
        (double)T * (double)B * (double)(H > dims->input_count ? H : dims->input_count);
    if (biggest * (double)G >= (double)INT_MAX || (double)G * (double)H * (double)H >= INT_MAX)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the model's activations are too large for cuDNN's int sizes "
                           "(batch_size %zu x training_length %zu x hidden_dim %zu); reduce one "
                           "of them",
                           B, T, H);

    struct cuda_workspace *ws = calloc(1, sizeof(*ws));
    if (ws == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the model's workspace");
    ws->cuda = (struct tsrnn_cuda *)ctx;
    ws->dims = *dims;
    ws->gate_count = G;
    ws->batch_capacity = B;
    ws->step_capacity = T;
    ws->results_capacity = results_capacity ? results_capacity : 1;
    snprintf(ws->setting, sizeof(ws->setting),
             "the activations of a %s with batch_size %zu, training_length %zu, hidden_dim %zu, "
             "n_rnn_layers %zu",
             tsrnn_model_kind_name(dims->kind), B, T, H, dims->layer_count);

    enum tsrnn_status status = create_rnns(ws);
    if (status != TSRNN_OK)
        goto out;
    status = create_buffers(ws);
out:
    if (status != TSRNN_OK)
        tsrnn_cuda_workspace_destroy(ctx, ws);
    else
        *out = ws;
    return status;
}

enum tsrnn_status tsrnn_cuda_batch_to_time_major(struct cuda_workspace *ws, bool with_y)
{
    const char *what = "laying a batch out time-major";
    cudaStream_t stream = ws->cuda->stream;
    size_t B = ws->batch_count, T = ws->step_count;
    CUDA(ws, tsrnn_kernel_to_time_major(ws->x, ws->x_batch, B, T, ws->dims.input_count, stream),
         what);
    if (with_y)
        CUDA(ws,
             tsrnn_kernel_to_time_major(ws->y, ws->y_batch, B, T, ws->dims.output_count, stream),
             what);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_batch_load(struct tsrnn_compute *ctx, void *workspace, const float *x,
                                        const float *y, size_t batch_count, size_t step_count)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    const char *what = "copying a batch to the GPU";
    size_t C = ws->dims.input_count, O = ws->dims.output_count, f = sizeof(float);
    TSRNN_TRY(tsrnn_cuda_describe_batch(ws, batch_count, step_count));
    ws->batch_count = batch_count;
    ws->step_count = step_count;
    /* From pageable memory the copy returns once the host's bytes are staged: the caller may
     * reuse x and y at once. (Validation and forecasts; the training step stages its batch
     * in pinned memory, step.c.) */
    CUDA(ws,
         cudaMemcpyAsync(ws->x_batch, x, batch_count * step_count * C * f, cudaMemcpyHostToDevice,
                         cuda->stream),
         what);
    if (y != NULL)
        CUDA(ws,
             cudaMemcpyAsync(ws->y_batch, y, batch_count * step_count * O * f,
                             cudaMemcpyHostToDevice, cuda->stream),
             what);
    return tsrnn_cuda_batch_to_time_major(ws, y != NULL);
}

static bool aligned(const void *p)
{
    return (uintptr_t)p % WEIGHT_ALIGN_NBYTES == 0;
}

/* Whether cuDNN can take the layer's span of the flat buffer at `span` as its weight space. */
static bool direct(const struct tsrnn_cuda_rnn *k, const void *span)
{
    return k->same_layout && aligned(span);
}

/* The weight space cuDNN reads for a layer: its span of the parameters, or the aligned copy,
 * filled here in cuDNN's layout, where the span cannot serve as it is. */
static enum tsrnn_status layer_weights(struct cuda_workspace *ws, const struct tsrnn_cuda_rnn *k,
                                       const struct tsrnn_layer_params *p, const void **weights)
{
    const char *what = "copying a layer's weights into cuDNN's layout";
    *weights = p->w_ih;
    if (direct(k, p->w_ih))
        return TSRNN_OK;
    if (k->same_layout) {
        CUDA(ws,
             cudaMemcpyAsync(ws->weight_copy, p->w_ih, k->weight_nbytes, cudaMemcpyDeviceToDevice,
                             ws->cuda->stream),
             what);
    } else {
        for (size_t i = 0; i < k->segment_count; i++) {
            const struct tsrnn_cuda_weight_segment *sg = &k->segments[i];
            CUDA(ws,
                 cudaMemcpyAsync(ws->weight_copy + sg->cudnn_offset, p->w_ih + sg->torch_offset,
                                 sg->count * sizeof(float), cudaMemcpyDeviceToDevice,
                                 ws->cuda->stream),
                 what);
        }
    }
    *weights = ws->weight_copy;
    return TSRNN_OK;
}

/* After cudnnRNNBackwardWeights_v8 wrote a layer's gradients into the aligned copy: adds them
 * to the layer's span of the gradient buffer, block by block where the layouts differ. */
static enum tsrnn_status add_layer_grads(struct cuda_workspace *ws, const struct tsrnn_cuda_rnn *k,
                                         struct tsrnn_layer_params *g)
{
    const char *what = "adding a layer's weight gradients";
    if (k->same_layout) {
        CUDA(ws,
             tsrnn_kernel_add(g->w_ih, ws->grad_copy, k->weight_nbytes / sizeof(float),
                              ws->cuda->stream),
             what);
        return TSRNN_OK;
    }
    for (size_t i = 0; i < k->segment_count; i++) {
        const struct tsrnn_cuda_weight_segment *sg = &k->segments[i];
        CUDA(ws,
             tsrnn_kernel_add(g->w_ih + sg->torch_offset, ws->grad_copy + sg->cudnn_offset,
                              sg->count, ws->cuda->stream),
             what);
    }
    return TSRNN_OK;
}

/* Layer l's forward: its input (through the dropout mask already on the device, when there is
 * one), from zero states or from the saved ones (initial_state). */
static enum tsrnn_status layer_forward(struct cuda_workspace *ws, size_t l,
                                       const struct tsrnn_layer_params *p,
                                       enum tsrnn_initial_state initial_state,
                                       const float *device_mask)
{
    struct tsrnn_cuda *cuda = ws->cuda;
    struct cuda_layer *lc = &ws->layers[l];
    const struct tsrnn_cuda_rnn *k = &ws->rnns[l == 0 ? 0 : 1];
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    size_t f = sizeof(float);
    bool lstm = ws->dims.kind == TSRNN_MODEL_LSTM;

    lc->input = l == 0 ? ws->x : ws->layers[l - 1].out;
    lc->masked = device_mask != NULL && lc->dropped != NULL;
    if (lc->masked) { /* inverted dropout between layers, the model's draw */
        CUDA(ws,
             tsrnn_kernel_multiply(lc->dropped, lc->input, device_mask, T * B * H, cuda->stream),
             "applying dropout");
        lc->mask_in_use = device_mask;
        lc->input = lc->dropped;
    }
    lc->zero_state = initial_state == TSRNN_STATE_ZERO;
    if (!lc->zero_state) {
        CUDA(ws,
             cudaMemcpyAsync(lc->h0, ws->state_h + l * B * H, B * H * f, cudaMemcpyDeviceToDevice,
                             cuda->stream),
             "restoring the saved state");
        if (lstm)
            CUDA(ws,
                 cudaMemcpyAsync(lc->c0, ws->state_c + l * B * H, B * H * f,
                                 cudaMemcpyDeviceToDevice, cuda->stream),
                 "restoring the saved state");
    }
    const void *weights;
    TSRNN_TRY(layer_weights(ws, k, p, &weights));
    struct tsrnn_cuda_rnn_call call = {
        .seq_lengths = ws->seq_lengths,
        .x = lc->input,
        .y = lc->out,
        .hx = lc->zero_state ? NULL : lc->h0, /* NULL: cuDNN starts from zeros */
        .cx = lc->zero_state || !lstm ? NULL : lc->c0,
        .hy = lc->hy,
        .cy = lstm ? lc->cy : NULL,
        .weights = weights,
        .work = ws->work,
        .work_nbytes = ws->work_nbytes,
        .reserve = lc->reserve,
        .reserve_nbytes = k->reserve_nbytes,
    };
    CUDNN(ws, tsrnn_cuda_rnn_forward(cuda->cudnn, k, &ws->bd, &call),
          "running a recurrent layer forward (cudnnRNNForward)");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_layer_forward_device_mask(struct cuda_workspace *ws, size_t l,
                                                       const struct tsrnn_layer_params *p,
                                                       const float *device_mask)
{
    return layer_forward(ws, l, p, TSRNN_STATE_ZERO, device_mask);
}

enum tsrnn_status tsrnn_cuda_layer_forward(struct tsrnn_compute *ctx, void *workspace, size_t l,
                                           const struct tsrnn_layer_params *p,
                                           enum tsrnn_initial_state initial_state,
                                           const float *input_mask, bool weights_unchanged)
{
    struct cuda_workspace *ws = workspace;
    struct cuda_layer *lc = &ws->layers[l];
    (void)weights_unchanged; /* cuDNN derives nothing from the weights between calls */
    const float *device_mask = NULL;
    if (input_mask != NULL && lc->mask != NULL) { /* the model's draw, from the host */
        size_t n = ws->step_count * ws->batch_count * ws->dims.hidden_count;
        CUDA(ws,
             cudaMemcpyAsync(lc->mask, input_mask, n * sizeof(float), cudaMemcpyHostToDevice,
                             ((struct tsrnn_cuda *)ctx)->stream),
             "copying a dropout mask to the GPU");
        device_mask = lc->mask;
    }
    return layer_forward(ws, l, p, initial_state, device_mask);
}

enum tsrnn_status tsrnn_cuda_layer_backward(struct tsrnn_compute *ctx, void *workspace, size_t l,
                                            const struct tsrnn_layer_params *p,
                                            struct tsrnn_layer_params *g)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    struct cuda_layer *lc = &ws->layers[l];
    const struct tsrnn_cuda_rnn *k = &ws->rnns[l == 0 ? 0 : 1];
    size_t B = ws->batch_count, T = ws->step_count, H = ws->dims.hidden_count;
    bool lstm = ws->dims.kind == TSRNN_MODEL_LSTM;
    /* dLoss/d(input): the other of the two buffers, or a scratch one for layer 0. */
    float *dx = l == 0 ? ws->dx0 : ws->d_h == ws->d_a ? ws->d_b : ws->d_a;
    const void *weights;
    TSRNN_TRY(layer_weights(ws, k, p, &weights));
    /* The layer's span of the gradient buffer is its weight space too, and cuDNN adds to it;
     * where it cannot be, cuDNN adds to a zeroed aligned copy, which is then added. */
    bool grads_direct = direct(k, g->w_ih);
    if (!grads_direct)
        CUDA(ws, cudaMemsetAsync(ws->grad_copy, 0, k->weight_nbytes, cuda->stream),
             "zeroing a layer's gradient copy");
    struct tsrnn_cuda_rnn_call call = {
        .seq_lengths = ws->seq_lengths,
        .x = lc->input,
        .y = lc->out,
        .dy = ws->d_h,
        .dx = dx,
        .hx = lc->zero_state ? NULL : lc->h0,
        .cx = lc->zero_state || !lstm ? NULL : lc->c0,
        .weights = weights,
        .dweights = grads_direct ? (void *)g->w_ih : (void *)ws->grad_copy,
        .work = ws->work,
        .work_nbytes = ws->work_nbytes,
        .reserve = lc->reserve,
        .reserve_nbytes = k->reserve_nbytes,
    };
    CUDNN(ws, tsrnn_cuda_rnn_backward_data(cuda->cudnn, k, &ws->bd, &call),
          "running a recurrent layer backward (cudnnRNNBackwardData_v8)");
    CUDNN(ws, tsrnn_cuda_rnn_backward_weights(cuda->cudnn, k, &ws->bd, &call),
          "computing a recurrent layer's weight gradients (cudnnRNNBackwardWeights_v8)");
    if (!grads_direct)
        TSRNN_TRY(add_layer_grads(ws, k, g));
    if (l == 0)
        return TSRNN_OK;
    if (lc->masked)
        CUDA(ws, tsrnn_kernel_multiply(dx, dx, lc->mask_in_use, T * B * H, cuda->stream),
             "applying dropout's mask to the gradient");
    ws->d_h = dx;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_state_save(struct tsrnn_compute *ctx, void *workspace)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    size_t B = ws->batch_count, H = ws->dims.hidden_count, f = sizeof(float);
    for (size_t l = 0; l < ws->dims.layer_count; l++) {
        const struct cuda_layer *lc = &ws->layers[l];
        CUDA(ws,
             cudaMemcpyAsync(ws->state_h + l * B * H, lc->hy, B * H * f, cudaMemcpyDeviceToDevice,
                             cuda->stream),
             "saving the final state");
        if (ws->state_c != NULL)
            CUDA(ws,
                 cudaMemcpyAsync(ws->state_c + l * B * H, lc->cy, B * H * f,
                                 cudaMemcpyDeviceToDevice, cuda->stream),
                 "saving the final state");
    }
    return TSRNN_OK;
}

/* --- the head and the loss ------------------------------------------------------------------
 *
 * cuBLAS is column-major: a row-major (M, N) matrix is its column-major (N, M) transpose, so
 * each row-major product C = A B is asked for as C^T = B^T A^T. */

static const float *top_outputs(const struct cuda_workspace *ws)
{
    return ws->layers[ws->dims.layer_count - 1].out;
}

enum tsrnn_status tsrnn_cuda_head_forward(struct tsrnn_compute *ctx, void *workspace,
                                          const float *v_w, const float *v_b)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    int rows = (int)(ws->step_count * ws->batch_count), H = (int)ws->dims.hidden_count;
    int O = (int)ws->dims.output_count;
    const float one = 1.0f;
    const char *what = "running the head V forward";
    CUDA(ws, tsrnn_kernel_fill_rows(ws->out, v_b, (size_t)rows, (size_t)O, cuda->stream), what);
    /* out (rows, O) += h (rows, H) V_w^T: out^T (O, rows) = V_w (O, H) h^T (H, rows). */
    TSRNN_TRY(
        tsrnn_cublas_check(DL(cublasSgemm)(cuda->cublas, CUBLAS_OP_T, CUBLAS_OP_N, O, rows, H, &one,
                                           v_w, H, top_outputs(ws), H, &one, ws->out, O),
                           cuda, what));
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_head_backward(struct tsrnn_compute *ctx, void *workspace,
                                           const float *v_w, float *g_v_w, float *g_v_b)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    int rows = (int)(ws->step_count * ws->batch_count), H = (int)ws->dims.hidden_count;
    int O = (int)ws->dims.output_count;
    const float one = 1.0f, zero = 0.0f;
    const char *what = "running the head V backward";
    /* g_v_w (O, H) += d_out^T (O, rows) h (rows, H): its transpose h^T d_out. */
    TSRNN_TRY(
        tsrnn_cublas_check(DL(cublasSgemm)(cuda->cublas, CUBLAS_OP_N, CUBLAS_OP_T, H, O, rows, &one,
                                           top_outputs(ws), H, ws->d_out, O, &one, g_v_w, H),
                           cuda, what));
    CUDA(ws, tsrnn_kernel_add_column_sums(g_v_b, ws->d_out, (size_t)rows, (size_t)O, cuda->stream),
         what);
    /* d_h (rows, H) = d_out (rows, O) V_w (O, H): d_h^T = V_w^T d_out^T. */
    ws->d_h = ws->d_a;
    TSRNN_TRY(tsrnn_cublas_check(DL(cublasSgemm)(cuda->cublas, CUBLAS_OP_N, CUBLAS_OP_N, H, rows, O,
                                                 &one, v_w, H, ws->d_out, O, &zero, ws->d_h, H),
                                 cuda, what));
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_mse_forward(struct tsrnn_compute *ctx, void *workspace, float *loss)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    CUDA(ws, tsrnn_kernel_mse_forward(loss, ws->out, ws->y, n, cuda->stream), "computing the loss");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_mse_backward(struct tsrnn_compute *ctx, void *workspace)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    float norm = (float)(2.0 / (double)n);
    CUDA(ws, tsrnn_kernel_mse_backward(ws->d_out, ws->out, ws->y, n, norm, cuda->stream),
         "computing the loss's gradient");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_window_squared_errors(struct tsrnn_compute *ctx, void *workspace,
                                                   double *se)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    size_t B = ws->batch_count;
    const char *what = "computing each window's squared error";
    CUDA(ws,
         tsrnn_kernel_window_squared_errors(ws->se, ws->out, ws->y, B, ws->step_count,
                                            ws->dims.output_count, cuda->stream),
         what);
    CUDA(ws, cudaMemcpyAsync(se, ws->se, B * sizeof(double), cudaMemcpyDeviceToHost, cuda->stream),
         what);
    CUDA(ws, cudaStreamSynchronize(cuda->stream), what);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cuda_output_download(struct tsrnn_compute *ctx, void *workspace, size_t t,
                                             float *out)
{
    struct cuda_workspace *ws = workspace;
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    size_t rows = ws->batch_count * ws->dims.output_count;
    const char *what = "copying the outputs from the GPU";
    CUDA(ws,
         cudaMemcpyAsync(out, ws->out + t * rows, rows * sizeof(float), cudaMemcpyDeviceToHost,
                         cuda->stream),
         what);
    CUDA(ws, cudaStreamSynchronize(cuda->stream), what);
    return TSRNN_OK;
}
