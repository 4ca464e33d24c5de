/* The CUDA compute backend, private to src/compute/cuda/: its context, error reporting, and
 * the launchers of its own kernels (kernels.cu; everything else is cuDNN and cuBLAS).
 *
 * The host side is C against the C APIs of the CUDA runtime, cuBLAS and cuDNN; only
 * kernels.cu is compiled by nvcc, and it exports plain C launchers that queue a kernel on
 * a stream and return cudaGetLastError(). Every operation is queued on the context's one
 * stream; nothing waits for the device except the operations whose contract is a host
 * result (download, window_squared_errors, output_download, scale_check's flag).
 */
#ifndef TSRNN_COMPUTE_CUDA_H
#define TSRNN_COMPUTE_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#ifndef __CUDACC__
#include "src/compute/backend.h"

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
    int *flag;      /* device: scale_check's "not finite" flag */
    int *flag_host; /* pinned */
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

/* layers.c: the workspace, the recurrent layers (cuDNN), the head (cuBLAS) and the loss. */
enum tsrnn_status tsrnn_cuda_workspace_create(struct tsrnn_compute *ctx,
                                              struct tsrnn_workspace **ws,
                                              const struct tsrnn_model_dims *dims,
                                              size_t batch_capacity, size_t step_capacity);
void tsrnn_cuda_workspace_destroy(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);
enum tsrnn_status tsrnn_cuda_batch_load(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                        const float *x, const float *y, size_t batch_count,
                                        size_t step_count);
enum tsrnn_status tsrnn_cuda_layer_forward(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                           size_t l, const struct tsrnn_layer_params *p,
                                           enum tsrnn_initial_state initial_state,
                                           const float *input_mask, bool weights_unchanged);
enum tsrnn_status tsrnn_cuda_layer_backward(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                            size_t l, const struct tsrnn_layer_params *p,
                                            struct tsrnn_layer_params *g);
enum tsrnn_status tsrnn_cuda_state_save(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);
enum tsrnn_status tsrnn_cuda_head_forward(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                          const float *v_w, const float *v_b);
enum tsrnn_status tsrnn_cuda_head_backward(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                           const float *v_w, float *g_v_w, float *g_v_b);
enum tsrnn_status tsrnn_cuda_mse_forward(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                         float *loss);
enum tsrnn_status tsrnn_cuda_mse_backward(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);
enum tsrnn_status tsrnn_cuda_window_squared_errors(struct tsrnn_compute *ctx,
                                                   struct tsrnn_workspace *ws, double *se);
enum tsrnn_status tsrnn_cuda_output_download(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                             size_t t, float *out);
#endif

#endif
