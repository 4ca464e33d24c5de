/* The CUDA backend's own kernels (cuda.h): only what no library does. Compiled with
 * --fmad=false and IEEE division and square root, so that each float operation rounds as the
 * CPU backend's does (-ffp-contract=off): Adam is then the CPU's update bit for bit, and the
 * loss's sums differ from the CPU's only in their order. Reductions run in one fixed order
 * (a block's tree), so every run gives the same bits. */
#include "cuda.h"

namespace
{

constexpr unsigned threads_per_block = 256;
constexpr size_t max_blocks = 4096;

unsigned blocks_for(size_t count)
{
    size_t blocks = (count + threads_per_block - 1) / threads_per_block;
    return (unsigned)(blocks < max_blocks ? blocks : max_blocks);
}

/* The sum of every thread's `value` over the block, in one fixed order (a tree over `part`,
 * threads_per_block slots of shared memory): the same bits every run. Every thread of the
 * block calls it; thread 0's result is the block's. */
template <typename T> __device__ T block_sum(T *part, T value)
{
    part[threadIdx.x] = value;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    return part[0];
}

/* for (i = this thread's first; i < count; i += every thread of the grid) */
#define GRID_STRIDE(i, count)                                                                      \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (count);                    \
         i += (size_t)gridDim.x * blockDim.x)

__global__ void to_time_major_kernel(float *dst, const float *src, size_t B, size_t T, size_t n)
{
    GRID_STRIDE(i, B * T * n)
    {
        size_t k = i % n, tb = i / n, b = tb % B, t = tb / B;
        dst[i] = src[(b * T + t) * n + k];
    }
}

__global__ void multiply_kernel(float *dst, const float *src, const float *mask, size_t count)
{
    GRID_STRIDE(i, count)
    {
        dst[i] = src[i] * mask[i];
    }
}

__global__ void add_kernel(float *dst, const float *src, size_t count)
{
    GRID_STRIDE(i, count)
    {
        dst[i] += src[i];
    }
}

__global__ void fill_rows_kernel(float *rows, const float *bias, size_t m, size_t n)
{
    GRID_STRIDE(i, m * n)
    {
        rows[i] = bias[i % n];
    }
}

/* One block per column: each thread sums a strided share of the rows, then the block's tree. */
__global__ void add_column_sums_kernel(float *bias_grad, const float *rows, size_t m, size_t n)
{
    __shared__ float part[threads_per_block];
    size_t col = blockIdx.x;
    float sum = 0.0f;
    for (size_t r = threadIdx.x; r < m; r += blockDim.x)
        sum += rows[r * n + col];
    sum = block_sum(part, sum);
    if (threadIdx.x == 0)
        bias_grad[col] += sum;
}

/* One block: each square rounded to float (as the CPU's), summed in double. */
__global__ void mse_forward_kernel(float *loss, const float *out, const float *y, size_t count)
{
    __shared__ double part[threads_per_block];
    double sum = 0.0;
    for (size_t i = threadIdx.x; i < count; i += blockDim.x) {
        float e = out[i] - y[i];
        sum += (double)(e * e);
    }
    sum = block_sum(part, sum);
    if (threadIdx.x == 0)
        *loss = (float)(sum / (double)count);
}

__global__ void mse_backward_kernel(float *d_out, const float *out, const float *y, size_t count,
                                    float norm)
{
    GRID_STRIDE(i, count)
    {
        d_out[i] = (out[i] - y[i]) * norm;
    }
}

/* One thread per window, in the CPU's order (t, then o). */
__global__ void window_squared_errors_kernel(double *se, const float *out, const float *y, size_t B,
                                             size_t T, size_t O)
{
    GRID_STRIDE(b, B)
    {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                float e = out[(t * B + b) * O + o] - y[(t * B + b) * O + o];
                sum += (double)(e * e);
            }
        se[b] = sum;
    }
}

/* buf[i] *= scale (unless 1), and *flag = 1 where the result is not finite (every writer
 * writes the same value). */
__device__ void scale_check_one(float *buf, size_t i, float scale, int *flag)
{
    float v = buf[i];
    if (scale != 1.0f) {
        v *= scale;
        buf[i] = v;
    }
    if (!isfinite(v))
        *flag = 1;
}

__global__ void scale_check_kernel(float *buf, size_t count, float scale, int *flag)
{
    GRID_STRIDE(i, count)
    {
        scale_check_one(buf, i, scale, flag);
    }
}

/* Adam's update of element i, operation for operation as the CPU backend's. */
__device__ void adam_one(size_t i, float *params, float *exp_avg, float *exp_avg_sq,
                         const float *grads, float beta1, float one_minus_beta1, float beta2,
                         float one_minus_beta2, float bc2_sqrt, float eps, float neg_step_size)
{
    float g = grads[i];
    float m = exp_avg[i] * beta1 + one_minus_beta1 * g;
    float v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    float denom = sqrtf(v) / bc2_sqrt + eps;
    params[i] = params[i] + neg_step_size * m / denom;
}

__global__ void adam_update_kernel(float *params, float *exp_avg, float *exp_avg_sq,
                                   const float *grads, size_t count, float beta1,
                                   float one_minus_beta1, float beta2, float one_minus_beta2,
                                   float bc2_sqrt, float eps, float neg_step_size)
{
    GRID_STRIDE(i, count)
    {
        adam_one(i, params, exp_avg, exp_avg_sq, grads, beta1, one_minus_beta1, beta2,
                 one_minus_beta2, bc2_sqrt, eps, neg_step_size);
    }
}

/* --- the training step's own kernels (cuda.h "the step on the device") -------------------- */

/* Whether this step leaves the parameters alone: one diverged (now or earlier), or the ranks
 * agreed to stop after an earlier step (the step that stopped updates). The step's index is
 * status->taken - 1 once step_record ran. */
__device__ bool skip_update(const tsrnn_cuda_step_status *status)
{
    return status != nullptr &&
           (status->halt == 1 || (status->halt == 2 && status->halted_at != status->taken - 1));
}

/* One thread: the step's flags reset, this rank's stop request beside the loss. */
__global__ void step_begin_kernel(tsrnn_cuda_step_status *status,
                                  const tsrnn_cuda_step_consts *consts, float *stop_slot)
{
    status->nonfinite = 0;
    *stop_slot = consts->stop_flag;
}

/* grads (count) *= 1/W (unless 1), and status->nonfinite where one is not finite. */
__global__ void step_scale_check_kernel(float *buf, size_t count,
                                        const tsrnn_cuda_step_consts *consts,
                                        tsrnn_cuda_step_status *status)
{
    float scale = consts->inv_world;
    GRID_STRIDE(i, count)
    {
        scale_check_one(buf, i, scale, &status->nonfinite);
    }
}

/* One thread: the step's loss into the ring, and the halt it causes (compute.h's contract:
 * not finite -> diverged, updates nothing; the ranks' stop -> stopped after it). */
__global__ void step_record_kernel(tsrnn_cuda_step_status *status, const float *loss_slot,
                                   float *losses, volatile int64_t *progress)
{
    int32_t k = status->taken;
    if (status->halt != 0) {
        losses[k] = __int_as_float(0x7fc00000); /* NaN: a step after the halt */
    } else {
        float loss = loss_slot[0];
        bool finite = status->nonfinite == 0;
        losses[k] = loss;
        if (!finite || !isfinite(loss)) {
            status->halt = 1;
            status->halted_at = k;
            status->finite = finite;
        } else if (loss_slot[1] > 0.0f) {
            status->halt = 2;
            status->halted_at = k;
            status->finite = 1;
        }
    }
    status->taken = k + 1;
    status->steps_done++;
    if (progress != nullptr)
        *progress = status->steps_done; /* the host watches it without waiting */
}

/* One block per tensor: its squared sum in double, its norm rounded to float (as the CPU's
 * clip_grad_norm), unless the step skips its update. */
__global__ void clip_norms_kernel(float *norms, const float *grads, const size_t *offsets,
                                  const size_t *counts, const tsrnn_cuda_step_status *status)
{
    __shared__ double part[threads_per_block];
    if (skip_update(status))
        return;
    const float *g = grads + offsets[blockIdx.x];
    size_t count = counts[blockIdx.x];
    double sum = 0.0;
    for (size_t i = threadIdx.x; i < count; i += blockDim.x)
        sum += (double)g[i] * (double)g[i];
    sum = block_sum(part, sum);
    if (threadIdx.x == 0)
        norms[blockIdx.x] = (float)sqrt(sum);
}

/* One thread: the total norm of the tensors' norms and torch's clip_coef, clamped to 1. */
__global__ void clip_coef_kernel(float *coef, const float *norms, size_t tensor_count,
                                 float max_norm, const tsrnn_cuda_step_status *status)
{
    if (skip_update(status))
        return;
    double total_sq = 0.0;
    for (size_t e = 0; e < tensor_count; e++)
        total_sq += (double)norms[e] * (double)norms[e];
    float total = (float)sqrt(total_sq);
    float c = (1.0f / (total + 1e-6f)) * max_norm;
    *coef = c < 1.0f ? c : 1.0f;
}

__global__ void clip_scale_kernel(float *grads, size_t count, const float *coef,
                                  const tsrnn_cuda_step_status *status)
{
    if (skip_update(status))
        return;
    float c = *coef;
    if (c == 1.0f)
        return;
    GRID_STRIDE(i, count)
    {
        grads[i] *= c;
    }
}

/* AdamW's decay, then Adam's update, from the step's scalars on the device. */
__global__ void step_decay_kernel(float *params, size_t count, const tsrnn_cuda_step_consts *c,
                                  const tsrnn_cuda_step_status *status)
{
    if (skip_update(status) || c->decay == 1.0f)
        return;
    float decay = c->decay;
    GRID_STRIDE(i, count)
    {
        params[i] *= decay;
    }
}

__global__ void step_adam_kernel(float *params, float *exp_avg, float *exp_avg_sq,
                                 const float *grads, size_t count, const tsrnn_cuda_step_consts *c,
                                 const tsrnn_cuda_step_status *status)
{
    if (skip_update(status))
        return;
    /* The scalars read once: the compiler cannot know that c does not alias the buffers. */
    float beta1 = c->beta1, one_minus_beta1 = c->one_minus_beta1, beta2 = c->beta2;
    float one_minus_beta2 = c->one_minus_beta2, bc2_sqrt = c->bc2_sqrt, eps = c->eps;
    float neg_step_size = c->neg_step_size;
    GRID_STRIDE(i, count)
    {
        adam_one(i, params, exp_avg, exp_avg_sq, grads, beta1, one_minus_beta1, beta2,
                 one_minus_beta2, bc2_sqrt, eps, neg_step_size);
    }
}

__global__ void fill_int_kernel(int32_t *dst, size_t count, int32_t value)
{
    GRID_STRIDE(i, count)
    {
        dst[i] = value;
    }
}

} // namespace

extern "C" {

cudaError_t tsrnn_kernel_to_time_major(float *dst, const float *src, size_t B, size_t T, size_t n,
                                       cudaStream_t stream)
{
    if (B * T * n > 0)
        to_time_major_kernel<<<blocks_for(B * T * n), threads_per_block, 0, stream>>>(dst, src, B,
                                                                                      T, n);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_multiply(float *dst, const float *src, const float *mask, size_t count,
                                  cudaStream_t stream)
{
    if (count > 0)
        multiply_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(dst, src, mask, count);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_add(float *dst, const float *src, size_t count, cudaStream_t stream)
{
    if (count > 0)
        add_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(dst, src, count);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_fill_rows(float *rows, const float *bias, size_t m, size_t n,
                                   cudaStream_t stream)
{
    if (m * n > 0)
        fill_rows_kernel<<<blocks_for(m * n), threads_per_block, 0, stream>>>(rows, bias, m, n);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_add_column_sums(float *bias_grad, const float *rows, size_t m, size_t n,
                                         cudaStream_t stream)
{
    if (n > 0)
        add_column_sums_kernel<<<(unsigned)n, threads_per_block, 0, stream>>>(bias_grad, rows, m,
                                                                              n);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_mse_forward(float *loss, const float *out, const float *y, size_t count,
                                     cudaStream_t stream)
{
    mse_forward_kernel<<<1, threads_per_block, 0, stream>>>(loss, out, y, count);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_mse_backward(float *d_out, const float *out, const float *y, size_t count,
                                      float norm, cudaStream_t stream)
{
    if (count > 0)
        mse_backward_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(d_out, out, y,
                                                                                 count, norm);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_window_squared_errors(double *se, const float *out, const float *y,
                                               size_t B, size_t T, size_t O, cudaStream_t stream)
{
    if (B > 0)
        window_squared_errors_kernel<<<blocks_for(B), threads_per_block, 0, stream>>>(se, out, y, B,
                                                                                      T, O);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_scale_check(float *buf, size_t count, float scale, int *flag,
                                     cudaStream_t stream)
{
    if (count > 0)
        scale_check_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(buf, count, scale,
                                                                                flag);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_adam_update(float *params, float *exp_avg, float *exp_avg_sq,
                                     const float *grads, size_t count, float beta1,
                                     float one_minus_beta1, float beta2, float one_minus_beta2,
                                     float bias_correction2_sqrt, float eps, float neg_step_size,
                                     cudaStream_t stream)
{
    if (count > 0)
        adam_update_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(
            params, exp_avg, exp_avg_sq, grads, count, beta1, one_minus_beta1, beta2,
            one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_step_begin(tsrnn_cuda_step_status *status,
                                    const tsrnn_cuda_step_consts *consts, float *stop_slot,
                                    cudaStream_t stream)
{
    step_begin_kernel<<<1, 1, 0, stream>>>(status, consts, stop_slot);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_step_scale_check(float *buf, size_t count,
                                          const tsrnn_cuda_step_consts *consts,
                                          tsrnn_cuda_step_status *status, cudaStream_t stream)
{
    if (count > 0)
        step_scale_check_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(
            buf, count, consts, status);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_step_record(tsrnn_cuda_step_status *status, const float *loss_slot,
                                     float *losses, volatile int64_t *progress, cudaStream_t stream)
{
    step_record_kernel<<<1, 1, 0, stream>>>(status, loss_slot, losses, progress);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_clip(float *grads, size_t count, float *norms, float *coef,
                              const size_t *offsets, const size_t *counts, size_t tensor_count,
                              float max_norm, const tsrnn_cuda_step_status *status,
                              cudaStream_t stream)
{
    if (tensor_count == 0)
        return cudaSuccess;
    clip_norms_kernel<<<(unsigned)tensor_count, threads_per_block, 0, stream>>>(
        norms, grads, offsets, counts, status);
    clip_coef_kernel<<<1, 1, 0, stream>>>(coef, norms, tensor_count, max_norm, status);
    if (count > 0)
        clip_scale_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(grads, count, coef,
                                                                               status);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_step_update(float *params, float *exp_avg, float *exp_avg_sq,
                                     const float *grads, size_t count,
                                     const tsrnn_cuda_step_consts *consts,
                                     const tsrnn_cuda_step_status *status, cudaStream_t stream)
{
    if (count == 0)
        return cudaSuccess;
    step_decay_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(params, count, consts,
                                                                           status);
    step_adam_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(
        params, exp_avg, exp_avg_sq, grads, count, consts, status);
    return cudaGetLastError();
}

cudaError_t tsrnn_kernel_fill_int(int32_t *dst, size_t count, int32_t value, cudaStream_t stream)
{
    if (count > 0)
        fill_int_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(dst, count, value);
    return cudaGetLastError();
}

} // extern "C"
