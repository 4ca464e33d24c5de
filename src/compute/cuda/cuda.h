/* The CUDA compute backend, private to src/compute/cuda/: its context, error reporting, and
 * the launchers of its own kernels (kernels.cu; everything else is cuDNN and cuBLAS).
 *
 * The host side is C against the C APIs of the CUDA runtime, cuBLAS and cuDNN; only
 * kernels.cu is compiled by nvcc, and it exports plain C launchers that queue a kernel on
 * a stream and return cudaGetLastError(). Every operation is queued on the context's one
 * stream; nothing waits for the device except the operations whose contract is a host
 * result (download, window_squared_errors, output_download, scale_check's flag) and the
 * reading of the training steps' results (step.c).
 */
#ifndef TSRNN_COMPUTE_CUDA_H
#define TSRNN_COMPUTE_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- the step on the device (step.c) -------------------------------------------------------
 * What a training step reads that changes from step to step, copied up with its batch: */
struct tsrnn_cuda_step_consts {
    float inv_world;     /* 1/W */
    float stop_flag;     /* this rank asks to stop: 1, else 0 */
    float decay;         /* AdamW's 1 - lr * weight_decay; 1: none */
    float clip_max_norm; /* 0: no clipping */
    float beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
};
/* ... and what the steps leave for the host to read (tsrnn_compute_step_results): */
struct tsrnn_cuda_step_status {
    int32_t taken;     /* steps since the last read (their losses are in the ring) */
    int32_t halt;      /* 0 ran, 1 diverged, 2 stopped (enum tsrnn_step_halt's order) */
    int32_t halted_at; /* the step that halted, in [0, taken) */
    int32_t finite;    /* its gradients were finite */
    int32_t nonfinite; /* this step's check: a reduced gradient, the loss or the flag is not */
    int32_t unused;
    int64_t steps_done; /* every step since the workspace began: its progress */
};

/* --- kernels.cu: each queues one kernel on `stream` (nothing for a count of 0) ---------- */

/* dst (T, B, n) = src (B, T, n): a batch-first batch to time-major. */
cudaError_t tsrnn_kernel_to_time_major(float *dst, const float *src, size_t B, size_t T, size_t n,
                                       cudaStream_t stream);
/* dst[i] = src[i] * mask[i] (dst may be src). */
cudaError_t tsrnn_kernel_multiply(float *dst, const float *src, const float *mask, size_t count,
                                  cudaStream_t stream);
/* dst[i] += src[i]. */
cudaError_t tsrnn_kernel_add(float *dst, const float *src, size_t count, cudaStream_t stream);
/* rows (M, N): every row = bias (N). */
cudaError_t tsrnn_kernel_fill_rows(float *rows, const float *bias, size_t m, size_t n,
                                   cudaStream_t stream);
/* bias_grad (N) += the column sums of rows (M, N). */
cudaError_t tsrnn_kernel_add_column_sums(float *bias_grad, const float *rows, size_t m, size_t n,
                                         cudaStream_t stream);
/* *loss = (float)(sum over i of (double)((out[i] - y[i])^2 in float) / count). */
cudaError_t tsrnn_kernel_mse_forward(float *loss, const float *out, const float *y, size_t count,
                                     cudaStream_t stream);
/* d_out[i] = (out[i] - y[i]) * norm. */
cudaError_t tsrnn_kernel_mse_backward(float *d_out, const float *out, const float *y, size_t count,
                                      float norm, cudaStream_t stream);
/* se[b] = sum over t, then o of (double)((out - y)^2 in float), (T, B, O) time-major. */
cudaError_t tsrnn_kernel_window_squared_errors(double *se, const float *out, const float *y,
                                               size_t B, size_t T, size_t O, cudaStream_t stream);
/* buf *= scale (unless scale is 1); *flag = 1 where an element is NaN or inf afterwards
 * (the caller zeroes *flag first). */
cudaError_t tsrnn_kernel_scale_check(float *buf, size_t count, float scale, int *flag,
                                     cudaStream_t stream);
/* torch.optim.Adam's elementwise update, operation for operation as the CPU backend's. */
cudaError_t tsrnn_kernel_adam_update(float *params, float *exp_avg, float *exp_avg_sq,
                                     const float *grads, size_t count, float beta1,
                                     float one_minus_beta1, float beta2, float one_minus_beta2,
                                     float bias_correction2_sqrt, float eps, float neg_step_size,
                                     cudaStream_t stream);
/* dst[i] = value for i < count. */
cudaError_t tsrnn_kernel_fill_int(int32_t *dst, size_t count, int32_t value, cudaStream_t stream);

/* The step's kernels (step.c), each reading the step's consts and status on the device, so
 * that one captured graph serves every step of a batch shape:
 *   step_begin       status->nonfinite = 0; *stop_slot = this rank's stop flag
 *   step_scale_check buf (count) *= 1/W; status->nonfinite where one is not finite
 *   step_record      losses[taken] = the loss (NaN after a halt), the halt it causes, taken++,
 *                    steps_done++ (also into *progress, host memory mapped for the device,
 *                    when not NULL)
 *   clip             torch.nn.utils.clip_grad_norm_ over the tensors (offsets, counts) of
 *                    grads (count): norms (tensor_count) and coef scratch on the device
 *   step_update      params *= decay (AdamW), then Adam's update
 * clip and step_update do nothing for a step that updates nothing (status: a halt before
 * it, or its own divergence); with status NULL they always run. */
cudaError_t tsrnn_kernel_step_begin(struct tsrnn_cuda_step_status *status,
                                    const struct tsrnn_cuda_step_consts *consts, float *stop_slot,
                                    cudaStream_t stream);
cudaError_t tsrnn_kernel_step_scale_check(float *buf, size_t count,
                                          const struct tsrnn_cuda_step_consts *consts,
                                          struct tsrnn_cuda_step_status *status,
                                          cudaStream_t stream);
cudaError_t tsrnn_kernel_step_record(struct tsrnn_cuda_step_status *status, const float *loss_slot,
                                     float *losses, volatile int64_t *progress,
                                     cudaStream_t stream);
cudaError_t tsrnn_kernel_clip(float *grads, size_t count, float *norms, float *coef,
                              const size_t *offsets, const size_t *counts, size_t tensor_count,
                              float max_norm, const struct tsrnn_cuda_step_status *status,
                              cudaStream_t stream);
cudaError_t tsrnn_kernel_step_update(float *params, float *exp_avg, float *exp_avg_sq,
                                     const float *grads, size_t count,
                                     const struct tsrnn_cuda_step_consts *consts,
                                     const struct tsrnn_cuda_step_status *status,
                                     cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#ifndef __CUDACC__
/* The host side only: nvcc compiles kernels.cu without cuBLAS's and cuDNN's headers, which
 * may live elsewhere than the toolkit's (NVIDIA's pip wheels). */
#include <cublas_v2.h>
#include <cudnn.h>

#include "../backend.h"

/* cuBLAS and cuDNN are loaded with dlopen when the backend is first probed, not linked: they
 * are hundreds of megabytes, and a process that trains on the CPU (or only asks whether a GPU
 * is there) should not pay their loading (~0.3 s per process start). cudart, which is small,
 * is linked, and loads the driver itself only when first called. Every cuBLAS and cuDNN
 * function the backend calls is listed here and called as DL(name)(...). */
/* clang-format off */
#define TSRNN_CUBLAS_FUNCTIONS(X) \
    X(cublasCreate)               \
    X(cublasDestroy)              \
    X(cublasSetStream)            \
    X(cublasSetMathMode)          \
    X(cublasSetWorkspace)         \
    X(cublasGetStatusString)      \
    X(cublasGetProperty)          \
    X(cublasSgemm)
#define TSRNN_CUDNN_FUNCTIONS(X)     \
    X(cudnnCreate)                   \
    X(cudnnDestroy)                  \
    X(cudnnSetStream)                \
    X(cudnnGetErrorString)           \
    X(cudnnGetLastErrorString)       \
    X(cudnnGetVersion)               \
    X(cudnnCreateDropoutDescriptor)  \
    X(cudnnDestroyDropoutDescriptor) \
    X(cudnnDropoutGetStatesSize)     \
    X(cudnnSetDropoutDescriptor)     \
    X(cudnnCreateRNNDescriptor)      \
    X(cudnnDestroyRNNDescriptor)     \
    X(cudnnSetRNNDescriptor_v8)      \
    X(cudnnCreateRNNDataDescriptor)  \
    X(cudnnDestroyRNNDataDescriptor) \
    X(cudnnSetRNNDataDescriptor)     \
    X(cudnnCreateTensorDescriptor)   \
    X(cudnnDestroyTensorDescriptor)  \
    X(cudnnSetTensorNdDescriptor)    \
    X(cudnnGetTensorNdDescriptor)    \
    X(cudnnGetRNNWeightSpaceSize)    \
    X(cudnnGetRNNWeightParams)       \
    X(cudnnGetRNNTempSpaceSizes)     \
    X(cudnnRNNForward)               \
    X(cudnnRNNBackwardData_v8)       \
    X(cudnnRNNBackwardWeights_v8)
/* clang-format on */

#define TSRNN_CUDA_LIB_POINTER(name) __typeof__(name) *name;
struct tsrnn_cuda_libs {
    TSRNN_CUBLAS_FUNCTIONS(TSRNN_CUDA_LIB_POINTER)
    TSRNN_CUDNN_FUNCTIONS(TSRNN_CUDA_LIB_POINTER)
};
extern struct tsrnn_cuda_libs tsrnn_cuda_libs;
#define DL(name) (tsrnn_cuda_libs.name)

/* Loads cuBLAS and cuDNN (once; later calls return the first answer). On false fills `why`. */
bool tsrnn_cuda_libs_load(char *why, size_t why_nbytes);

/* After a successful load: the versions and files loaded, "cuBLAS 13.1.0 (/path/libcublas.so.13),
 * cuDNN 9.19.0 (/path/libcudnn.so.9)"; "" before. */
const char *tsrnn_cuda_libs_describe(void);

/* The backend's context: one device, one stream, one cuBLAS and one cuDNN handle. */
struct tsrnn_cuda {
    struct tsrnn_compute base;
    int device; /* the CUDA device index (of the visible ones) */
    char device_name[256];
    cudaStream_t stream;
    cublasHandle_t cublas;
    cudnnHandle_t cudnn;
    int *flag;              /* device: scale_check's "not finite" flag */
    int *flag_host;         /* pinned */
    void *cublas_workspace; /* cuBLAS's, set once: a captured product allocates nothing */
    size_t cublas_workspace_nbytes;
    /* clip_grad_norm's scratch outside a step: (tensors) norms and the coefficient */
    float *clip_scratch;
    size_t *clip_layout; /* device: the tensors' offsets, then their counts */
    size_t clip_tensor_capacity;
};

/* A status from a CUDA runtime / cuBLAS / cuDNN result: TSRNN_OK, or an error naming what was
 * being done, on which device, and the library's own message (out of memory:
 * TSRNN_ERR_NOMEM). */
enum tsrnn_status tsrnn_cuda_check(cudaError_t e, const struct tsrnn_cuda *cuda, const char *what);
enum tsrnn_status tsrnn_cublas_check(cublasStatus_t s, const struct tsrnn_cuda *cuda,
                                     const char *what);
enum tsrnn_status tsrnn_cudnn_check(cudnnStatus_t s, const struct tsrnn_cuda *cuda,
                                    const char *what);

/* Device memory for the backend's own buffers: nbytes, with `for_what` in the message when
 * it does not fit (which model setting drives the size). */
enum tsrnn_status tsrnn_cuda_malloc(struct tsrnn_cuda *cuda, void **buf, size_t nbytes,
                                    const char *for_what);

/* --- layers.c: cuDNN's RNNs, called the way the backend calls them --------------------------
 * A layer is a one-layer cuDNN RNN of its input size: layer 0's and the one of the layers
 * above. Its descriptors are set without a cuDNN handle, and each cuDNN call the backend
 * makes goes through one function below, so that tests/test_cudnn_args.c can make the same
 * calls with the same descriptors and a NULL handle on a machine without a GPU: cuDNN checks
 * its arguments before the handle, and a call that fails on an argument (an unsupported mode,
 * a descriptor it refuses) fails there, not first on a GPU. */

/* Where one of PyTorch's per-gate blocks (a gate's matrix or bias) sits in cuDNN's weight
 * space and in the layer's span of the flat buffer, in floats. */
struct tsrnn_cuda_weight_segment {
    size_t cudnn_offset, torch_offset, count;
};

struct tsrnn_cuda_rnn {
    cudnnRNNDescriptor_t desc;
    cudnnRNNDataDescriptor_t x_desc;
    size_t input_count;
    size_t weight_nbytes;  /* PyTorch's layer span until map_weights asks cuDNN */
    size_t reserve_nbytes; /* at capacity */
    /* Every gate's matrix and bias (2G + 2G segments); same_layout: each at PyTorch's offset,
     * so the layer's span of the flat buffer can be cuDNN's weight space as it is. */
    struct tsrnn_cuda_weight_segment segments[16];
    size_t segment_count;
    bool same_layout;
};

/* The descriptors of a batch that every layer shares: y (T, B, H), h and c (1, B, H). */
struct tsrnn_cuda_batch_desc {
    cudnnRNNDataDescriptor_t y_desc;
    cudnnTensorDescriptor_t h_desc;
    int *lengths; /* host (capacity): every window T long */
    size_t capacity;
};

/* The buffers of one layer's call; NULL where the call takes none (hx = NULL: zero state). */
struct tsrnn_cuda_rnn_call {
    const int32_t *seq_lengths; /* device (B) */
    const float *x;             /* (T, B, I) */
    float *y;                   /* (T, B, H) */
    const float *hx, *cx;       /* (B, H) initial states */
    float *hy, *cy;             /* (B, H) final states */
    const float *dy;            /* (T, B, H) dLoss/dy */
    float *dx;                  /* (T, B, I) dLoss/dx */
    const void *weights;        /* cuDNN's weight space, weight_nbytes */
    void *dweights;             /* its gradient, accumulated (CUDNN_WGRAD_MODE_ADD) */
    void *work;
    size_t work_nbytes;
    void *reserve;
    size_t reserve_nbytes;
};

/* Creates and sets the RNN and input descriptors of a layer: `kind`'s cell, two bias vectors,
 * unidirectional, float32 data and math, CUDNN_FMA_MATH, the standard algorithm, dropout
 * through `dropout` (p = 0: the model's own masks), padded I/O off. No handle needed. */
enum tsrnn_status tsrnn_cuda_rnn_describe(struct tsrnn_cuda_rnn *rnn, enum tsrnn_model_kind kind,
                                          size_t input_count, size_t hidden_count,
                                          cudnnDropoutDescriptor_t dropout);
void tsrnn_cuda_rnn_destroy(struct tsrnn_cuda_rnn *rnn); /* accepts a zeroed one */

enum tsrnn_status tsrnn_cuda_batch_desc_create(struct tsrnn_cuda_batch_desc *bd, size_t capacity);
void tsrnn_cuda_batch_desc_destroy(struct tsrnn_cuda_batch_desc *bd);
/* Describes B windows of T steps of hidden_count units to cuDNN: y, h, and each rnn's x. */
enum tsrnn_status tsrnn_cuda_batch_describe(struct tsrnn_cuda_batch_desc *bd,
                                            struct tsrnn_cuda_rnn *const *rnns, size_t rnn_count,
                                            size_t batch_count, size_t step_count,
                                            size_t hidden_count);

/* The cuDNN calls, with the backend's modes: training forward, backward data, backward
 * weights accumulating (CUDNN_WGRAD_MODE_ADD: cuDNN 9 refuses SET), and the scratch sizes of
 * a training forward. */
cudnnStatus_t tsrnn_cuda_rnn_forward(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                     const struct tsrnn_cuda_batch_desc *bd,
                                     const struct tsrnn_cuda_rnn_call *c);
cudnnStatus_t tsrnn_cuda_rnn_backward_data(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                           const struct tsrnn_cuda_batch_desc *bd,
                                           const struct tsrnn_cuda_rnn_call *c);
cudnnStatus_t tsrnn_cuda_rnn_backward_weights(cudnnHandle_t handle,
                                              const struct tsrnn_cuda_rnn *rnn,
                                              const struct tsrnn_cuda_batch_desc *bd,
                                              const struct tsrnn_cuda_rnn_call *c);
cudnnStatus_t tsrnn_cuda_rnn_temp_sizes(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                        size_t *work_nbytes, size_t *reserve_nbytes);
cudnnStatus_t tsrnn_cuda_rnn_weight_space_size(cudnnHandle_t handle,
                                               const struct tsrnn_cuda_rnn *rnn, size_t *nbytes);
cudnnStatus_t tsrnn_cuda_rnn_weight_params(cudnnHandle_t handle, const struct tsrnn_cuda_rnn *rnn,
                                           size_t space_nbytes, const void *space, int32_t id,
                                           cudnnTensorDescriptor_t m_desc, void **m_addr,
                                           cudnnTensorDescriptor_t b_desc, void **b_addr);

/* --- layers.c: the workspace, the recurrent layers, the head (cuBLAS) and the loss ----------- */

/* What a layer's forward keeps for its backward. */
struct cuda_layer {
    float *out;         /* (T, B, H) h[1..T] (cuDNN's y) */
    float *mask;        /* l > 0 with dropout: (T, B, H) 0 or 1/(1-p); else NULL */
    float *dropped;     /* likewise: the masked outputs of the layer below */
    const float *input; /* (T, B, I) what the last forward read */
    bool masked;
    const float *mask_in_use; /* the device mask the last forward applied (mask, or the step's) */
    float *h0, *c0;           /* (B, H) a saved initial state; unused from zero */
    bool zero_state;          /* the last forward started from h = 0 (cuDNN: hx = NULL) */
    float *hy, *cy;           /* (B, H) the final state (cy: LSTM) */
    void *reserve;            /* cuDNN's reserve space: forward -> backward */
};

struct cuda_step; /* step.c: the training step's own buffers and graphs */

struct cuda_workspace {
    struct tsrnn_cuda *cuda;
    struct tsrnn_model_dims dims;
    size_t gate_count;
    size_t batch_capacity, step_capacity, results_capacity;
    size_t batch_count, step_count; /* B, T of the batch loaded */
    size_t desc_batch, desc_steps;  /* what the data descriptors describe (0: nothing yet) */
    char setting[200];              /* the model setting behind the sizes, for messages */

    cudnnDropoutDescriptor_t dropout; /* p = 0: dropout is the model's mask */
    void *dropout_states;
    struct tsrnn_cuda_rnn rnns[2]; /* [0] layer 0, [1] layers above (when L > 1) */
    struct tsrnn_cuda_batch_desc bd;
    int32_t *seq_lengths; /* device (B): every window T long */
    void *work;
    size_t work_nbytes;
    float *weight_copy, *grad_copy; /* aligned weight spaces for layers whose span is not */

    struct cuda_layer layers[TSRNN_MODEL_MAX_LAYERS];
    float *x, *y;             /* (T, B, C), (T, B, O) time-major */
    float *x_batch, *y_batch; /* the batch as uploaded, (B, T, .) */
    float *out, *d_out;       /* (T, B, O) */
    float *d_a, *d_b;         /* (T, B, H) dLoss/d(a layer's outputs), one for each of two layers */
    float *d_h;               /* d_a or d_b: the one the next layer_backward reads */
    float *dx0;               /* (T, B, C) layer 0's input gradient, which nobody reads */
    double *se;               /* device (B) */
    float *state_h, *state_c; /* (L, B, H) carried between a forecast's steps */
    struct cuda_step *step;   /* made by the first training step */
};

enum tsrnn_status tsrnn_cuda_workspace_create(struct tsrnn_compute *ctx, void **ws,
                                              const struct tsrnn_model_dims *dims,
                                              size_t batch_capacity, size_t step_capacity,
                                              size_t results_capacity);
void tsrnn_cuda_workspace_destroy(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cuda_batch_load(struct tsrnn_compute *ctx, void *ws, const float *x,
                                        const float *y, size_t batch_count, size_t step_count);
enum tsrnn_status tsrnn_cuda_layer_forward(struct tsrnn_compute *ctx, void *ws, size_t l,
                                           const struct tsrnn_layer_params *p,
                                           enum tsrnn_initial_state initial_state,
                                           const float *input_mask, bool weights_unchanged);
enum tsrnn_status tsrnn_cuda_layer_backward(struct tsrnn_compute *ctx, void *ws, size_t l,
                                            const struct tsrnn_layer_params *p,
                                            struct tsrnn_layer_params *g);
enum tsrnn_status tsrnn_cuda_state_save(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cuda_head_forward(struct tsrnn_compute *ctx, void *ws, const float *v_w,
                                          const float *v_b);
enum tsrnn_status tsrnn_cuda_head_backward(struct tsrnn_compute *ctx, void *ws, const float *v_w,
                                           float *g_v_w, float *g_v_b);
enum tsrnn_status tsrnn_cuda_mse_forward(struct tsrnn_compute *ctx, void *ws, float *loss);
enum tsrnn_status tsrnn_cuda_mse_backward(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cuda_window_squared_errors(struct tsrnn_compute *ctx, void *ws, double *se);
enum tsrnn_status tsrnn_cuda_output_download(struct tsrnn_compute *ctx, void *ws, size_t t,
                                             float *out);

/* For the step (step.c): the batch already in x_batch / y_batch on the device to time-major
 * (to_time_major kernels only: capturable), after tsrnn_cuda_describe_batch (host-side
 * descriptors and the lengths' fill, outside a capture); and layer l's forward with its
 * dropout mask already on the device (NULL: none). */
enum tsrnn_status tsrnn_cuda_describe_batch(struct cuda_workspace *ws, size_t batch_count,
                                            size_t step_count);
enum tsrnn_status tsrnn_cuda_batch_to_time_major(struct cuda_workspace *ws, bool with_y);
enum tsrnn_status tsrnn_cuda_layer_forward_device_mask(struct cuda_workspace *ws, size_t l,
                                                       const struct tsrnn_layer_params *p,
                                                       const float *device_mask);

/* --- step.c: the training step (backend.h's step and step_results) ------------------------- */
enum tsrnn_status tsrnn_cuda_step(struct tsrnn_compute *ctx, void *ws,
                                  const struct tsrnn_step_buffers *buffers,
                                  const struct tsrnn_step_args *args,
                                  struct tsrnn_step_record *now);
enum tsrnn_status tsrnn_cuda_step_results(struct tsrnn_compute *ctx, void *ws, float *losses,
                                          size_t losses_capacity,
                                          struct tsrnn_step_results *results);
void tsrnn_cuda_step_destroy(struct cuda_workspace *ws);

/* The step's plan: its stages in the order they are queued, and where the captured region
 * begins and ends, as data a test reads without a GPU (tests/test_cuda_plan.c). A stage's
 * kind says what it does to the stream; inside the region only kernels, cuDNN and cuBLAS
 * calls, memsets, device-to-device copies and a reduction queued on the device may be. */
enum tsrnn_cuda_stage_kind {
    TSRNN_CUDA_STAGE_HOST,          /* host work: staging into pinned memory, descriptors */
    TSRNN_CUDA_STAGE_COPY_UP,       /* a copy from pinned host memory to the device */
    TSRNN_CUDA_STAGE_CAPTURE_BEGIN, /* the graph's region begins (or a graph is launched) */
    TSRNN_CUDA_STAGE_KERNEL,        /* our kernels */
    TSRNN_CUDA_STAGE_MEMSET,        /* cudaMemsetAsync */
    TSRNN_CUDA_STAGE_CUDNN,         /* cuDNN's RNN calls (and device-to-device copies) */
    TSRNN_CUDA_STAGE_CUBLAS,        /* cuBLAS products */
    TSRNN_CUDA_STAGE_REDUCE_QUEUED, /* the reduction queued on the stream (NCCL) */
    TSRNN_CUDA_STAGE_CAPTURE_END,   /* the graph's region ends */
    TSRNN_CUDA_STAGE_REDUCE_HOST,   /* a reduction staged through the host (Gloo, MPI) */
    TSRNN_CUDA_STAGE_RECORD,        /* the step's event */
};
struct step_run; /* step.c: what a stage works on */
struct tsrnn_cuda_stage {
    const char *name;
    enum tsrnn_cuda_stage_kind kind;
    enum tsrnn_status (*run)(struct step_run *run); /* NULL: done outside run_device_stages */
};
/* The stages of a step with (device_queued or no reduction) or without (host-staged) a
 * capturable reduction; *count gets their number. */
const struct tsrnn_cuda_stage *tsrnn_cuda_step_plan(bool capturable, size_t *count);
/* Whether a stage kind may run inside the captured region. */
bool tsrnn_cuda_stage_capturable(enum tsrnn_cuda_stage_kind kind);
#endif

#endif
