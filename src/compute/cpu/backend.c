/* The CPU backend's table (backend.h): its context, memory (host memory, 64-byte aligned),
 * and the optimizers' elementwise operations (Adam's, the L2 penalty, SGD's with Nesterov,
 * RMSprop's, Adagrad's). The model's operations are in model.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define ALIGN_NBYTES 64 /* a cache line, and enough for any vector load */

static enum tsrnn_status cpu_create(struct tsrnn_compute **ctx,
                                    const struct tsrnn_compute_options *options)
{
    struct tsrnn_cpu *cpu = malloc(sizeof(*cpu));
    if (cpu == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the CPU backend");
    enum tsrnn_status status = tsrnn_cpu_init(cpu, options->thread_count);
    if (status != TSRNN_OK) {
        free(cpu);
        return status;
    }
    *ctx = &cpu->base;
    return TSRNN_OK;
}

static void cpu_destroy(struct tsrnn_compute *ctx)
{
    tsrnn_cpu_finish((struct tsrnn_cpu *)ctx);
    free(ctx);
}

static enum tsrnn_status cpu_alloc(struct tsrnn_compute *ctx, void **buf, size_t nbytes)
{
    (void)ctx;
    size_t rounded = (nbytes + ALIGN_NBYTES - 1) / ALIGN_NBYTES * ALIGN_NBYTES;
    *buf = nbytes > 0 && rounded >= nbytes ? aligned_alloc(ALIGN_NBYTES, rounded) : NULL;
    if (*buf == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory: %zu bytes for the CPU backend", nbytes);
    return TSRNN_OK;
}

static void cpu_free(struct tsrnn_compute *ctx, void *buf)
{
    (void)ctx;
    free(buf);
}

static enum tsrnn_status cpu_copy(struct tsrnn_compute *ctx, void *dst, const void *src,
                                  size_t nbytes)
{
    (void)ctx;
    memmove(dst, src, nbytes);
    return TSRNN_OK;
}

static enum tsrnn_status cpu_zero(struct tsrnn_compute *ctx, void *buf, size_t nbytes)
{
    (void)ctx;
    memset(buf, 0, nbytes);
    return TSRNN_OK;
}

static enum tsrnn_status cpu_synchronize(struct tsrnn_compute *ctx)
{
    (void)ctx; /* every operation completes before it returns */
    return TSRNN_OK;
}

/* Whether any element is NaN or infinite (its exponent bits all ones): an OR over the
 * elements, which vectorizes, where a float sum would be one chain of additions. */
static bool any_nonfinite(const float *buf, size_t count)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, buf + i, sizeof(bits));
        bad |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return bad != 0;
}

enum tsrnn_status tsrnn_cpu_scale_check(struct tsrnn_compute *ctx, float *buf, size_t count,
                                        float scale, bool *finite)
{
    (void)ctx;
    if (scale != 1.0f)
        for (size_t i = 0; i < count; i++)
            buf[i] *= scale;
    *finite = !any_nonfinite(buf, count);
    return TSRNN_OK;
}

/* The elementwise update of torch.optim.Adam (src/optim/adam.c has the step), over arrays
 * that do not overlap (so it vectorises; every lane computes what the scalar code would). */
TSRNN_CPU_BODY adam_update_body(float *restrict params, float *restrict exp_avg,
                                float *restrict exp_avg_sq, const float *restrict grads,
                                size_t count, float beta1, float one_minus_beta1, float beta2,
                                float one_minus_beta2, float bc2_sqrt, float eps,
                                float neg_step_size)
{
    for (size_t i = 0; i < count; i++) {
        float g = grads[i];
        float m = exp_avg[i] * beta1 + one_minus_beta1 * g;
        float v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
        float denom = sqrtf(v) / bc2_sqrt + eps;
        params[i] = params[i] + neg_step_size * m / denom;
    }
}

TSRNN_CPU_ISA_VARIANTS(adam_update,
                       (float *restrict params, float *restrict exp_avg, float *restrict exp_avg_sq,
                        const float *restrict grads, size_t count, float beta1,
                        float one_minus_beta1, float beta2, float one_minus_beta2, float bc2_sqrt,
                        float eps, float neg_step_size),
                       (params, exp_avg, exp_avg_sq, grads, count, beta1, one_minus_beta1, beta2,
                        one_minus_beta2, bc2_sqrt, eps, neg_step_size))

enum tsrnn_status tsrnn_cpu_adam_update(struct tsrnn_compute *ctx, float *params, float *exp_avg,
                                        float *exp_avg_sq, const float *grads, size_t count,
                                        const struct tsrnn_adam_scalars *s)
{
    (void)ctx;
    adam_update(params, exp_avg, exp_avg_sq, grads, count, s->beta1, s->one_minus_beta1, s->beta2,
                s->one_minus_beta2, s->bias_correction2_sqrt, s->eps, s->neg_step_size);
    return TSRNN_OK;
}

/* The L2 penalty of Adam, SGD, RMSprop and Adagrad: PyTorch's grad = grad.add(param,
 * alpha=weight_decay), one rounding of the product and one of the sum (ATen's scalar path;
 * its vector path fuses them). */
TSRNN_CPU_BODY l2_decay_body(float *restrict grads, const float *restrict params, size_t count,
                             float weight_decay)
{
    for (size_t i = 0; i < count; i++)
        grads[i] = grads[i] + weight_decay * params[i];
}

TSRNN_CPU_ISA_VARIANTS(l2_decay,
                       (float *restrict grads, const float *restrict params, size_t count,
                        float weight_decay),
                       (grads, params, count, weight_decay))

enum tsrnn_status tsrnn_cpu_l2_decay(struct tsrnn_compute *ctx, float *grads, const float *params,
                                     size_t count, float weight_decay)
{
    (void)ctx;
    l2_decay(grads, params, count, weight_decay);
    return TSRNN_OK;
}

/* torch.optim.SGD with nesterov (dampening 0), single-tensor path:
 *     buf.mul_(momentum).add_(grad)          (the first step's clone(grad): 0 * m + g)
 *     grad = grad.add(buf, alpha=momentum)
 *     param.add_(grad, alpha=-lr) */
TSRNN_CPU_BODY nesterov_update_body(float *restrict params, float *restrict momentum_buffer,
                                    const float *restrict grads, size_t count, float momentum,
                                    float neg_lr)
{
    for (size_t i = 0; i < count; i++) {
        float g = grads[i];
        float b = momentum_buffer[i] * momentum + g;
        momentum_buffer[i] = b;
        params[i] = params[i] + neg_lr * (g + momentum * b);
    }
}

TSRNN_CPU_ISA_VARIANTS(nesterov_update,
                       (float *restrict params, float *restrict momentum_buffer,
                        const float *restrict grads, size_t count, float momentum, float neg_lr),
                       (params, momentum_buffer, grads, count, momentum, neg_lr))

enum tsrnn_status tsrnn_cpu_nesterov_update(struct tsrnn_compute *ctx, float *params,
                                            float *momentum_buffer, const float *grads,
                                            size_t count, const struct tsrnn_nesterov_scalars *s)
{
    (void)ctx;
    nesterov_update(params, momentum_buffer, grads, count, s->momentum, s->neg_lr);
    return TSRNN_OK;
}

/* torch.optim.RMSprop, single-tensor path, operation by operation:
 *     square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
 *     centered: grad_avg.lerp_(grad, 1 - alpha)        (ATen's lerp: w < 0.5 ? a + w (g - a)
 *               avg = square_avg.addcmul(grad_avg,       : g - (g - a) (1 - w); its vector
 *                     grad_avg, value=-1).sqrt_()         path fuses the first)
 *     else:     avg = square_avg.sqrt()
 *     avg.add_(eps)
 *     momentum > 0: buf.mul_(momentum).addcdiv_(grad, avg); param.add_(buf, alpha=-lr)
 *     else:         param.addcdiv_(grad, avg, value=-lr)
 * `centered` and `with_momentum` are constants in each instance below, so every loop is
 * branch-free and vectorises. */
static inline __attribute__((always_inline)) void
rmsprop_loop(float *restrict params, float *restrict square_avg, float *restrict momentum_buffer,
             float *restrict grad_avg, const float *restrict grads, size_t count, float alpha,
             float one_minus_alpha, float eps, float momentum, float neg_lr, bool centered,
             bool with_momentum)
{
    bool small = fabsf(one_minus_alpha) < 0.5f; /* ATen's is_lerp_weight_small */
    float w = one_minus_alpha, w_rest = 1.0f - one_minus_alpha;
    for (size_t i = 0; i < count; i++) {
        float g = grads[i];
        float v = square_avg[i] * alpha + one_minus_alpha * g * g;
        square_avg[i] = v;
        float avg;
        if (centered) {
            float a = grad_avg[i];
            a = small ? a + w * (g - a) : g - (g - a) * w_rest;
            grad_avg[i] = a;
            avg = sqrtf(v + -1.0f * a * a);
        } else {
            avg = sqrtf(v);
        }
        avg = avg + eps;
        if (with_momentum) {
            float b = momentum_buffer[i] * momentum + g / avg;
            momentum_buffer[i] = b;
            params[i] = params[i] + neg_lr * b;
        } else {
            params[i] = params[i] + neg_lr * g / avg;
        }
    }
}

#define RMSPROP_VARIANT(name, centered, with_momentum)                                             \
    TSRNN_CPU_BODY name##_body(float *restrict params, float *restrict square_avg,                 \
                               float *restrict momentum_buffer, float *restrict grad_avg,          \
                               const float *restrict grads, size_t count,                          \
                               const struct tsrnn_rmsprop_scalars *s)                              \
    {                                                                                              \
        rmsprop_loop(params, square_avg, momentum_buffer, grad_avg, grads, count, s->alpha,        \
                     s->one_minus_alpha, s->eps, s->momentum, s->neg_lr, centered, with_momentum); \
    }                                                                                              \
    TSRNN_CPU_ISA_VARIANTS(name,                                                                   \
                           (float *restrict params, float *restrict square_avg,                    \
                            float *restrict momentum_buffer, float *restrict grad_avg,             \
                            const float *restrict grads, size_t count,                             \
                            const struct tsrnn_rmsprop_scalars *s),                                \
                           (params, square_avg, momentum_buffer, grad_avg, grads, count, s))
RMSPROP_VARIANT(rmsprop_plain, false, false)
RMSPROP_VARIANT(rmsprop_momentum, false, true)
RMSPROP_VARIANT(rmsprop_centered, true, false)
RMSPROP_VARIANT(rmsprop_centered_momentum, true, true)
#undef RMSPROP_VARIANT

enum tsrnn_status tsrnn_cpu_rmsprop_update(struct tsrnn_compute *ctx, float *params,
                                           float *square_avg, float *momentum_buffer,
                                           float *grad_avg, const float *grads, size_t count,
                                           const struct tsrnn_rmsprop_scalars *s)
{
    (void)ctx;
    bool with_momentum = s->momentum > 0.0f; /* PyTorch's `if momentum > 0` */
    if (s->centered && with_momentum)
        rmsprop_centered_momentum(params, square_avg, momentum_buffer, grad_avg, grads, count, s);
    else if (s->centered)
        rmsprop_centered(params, square_avg, momentum_buffer, grad_avg, grads, count, s);
    else if (with_momentum)
        rmsprop_momentum(params, square_avg, momentum_buffer, grad_avg, grads, count, s);
    else
        rmsprop_plain(params, square_avg, momentum_buffer, grad_avg, grads, count, s);
    return TSRNN_OK;
}

/* torch.optim.Adagrad, single-tensor path (dense gradients):
 *     state_sum.addcmul_(grad, grad, value=1)
 *     std = state_sum.sqrt().add_(eps)
 *     param.addcdiv_(grad, std, value=-clr) */
TSRNN_CPU_BODY adagrad_update_body(float *restrict params, float *restrict state_sum,
                                   const float *restrict grads, size_t count, float eps,
                                   float neg_clr)
{
    for (size_t i = 0; i < count; i++) {
        float g = grads[i];
        float sum = state_sum[i] + 1.0f * g * g;
        state_sum[i] = sum;
        params[i] = params[i] + neg_clr * g / (sqrtf(sum) + eps);
    }
}

TSRNN_CPU_ISA_VARIANTS(adagrad_update,
                       (float *restrict params, float *restrict state_sum,
                        const float *restrict grads, size_t count, float eps, float neg_clr),
                       (params, state_sum, grads, count, eps, neg_clr))

enum tsrnn_status tsrnn_cpu_adagrad_update(struct tsrnn_compute *ctx, float *params,
                                           float *state_sum, const float *grads, size_t count,
                                           const struct tsrnn_adagrad_scalars *s)
{
    (void)ctx;
    adagrad_update(params, state_sum, grads, count, s->eps, s->neg_clr);
    return TSRNN_OK;
}

/* torch.nn.utils.clip_grad_norm_ (backend.h): each tensor's 2-norm and their 2-norm, summed
 * in double, rounded to float where PyTorch's float32 tensors round them. */
static enum tsrnn_status cpu_clip_grad_norm(struct tsrnn_compute *ctx, float *grads,
                                            const struct tsrnn_param_table *table, float max_norm)
{
    double total_sq = 0.0;
    for (size_t e = 0; e < table->entry_count; e++) {
        const float *g = grads + table->entries[e].offset;
        double sq = 0.0;
        for (size_t i = 0; i < table->entries[e].count; i++)
            sq += (double)g[i] * (double)g[i];
        float norm = (float)sqrt(sq);
        total_sq += (double)norm * (double)norm;
    }
    float total = (float)sqrt(total_sq);
    float coef = (1.0f / (total + 1e-6f)) * max_norm;
    if (!(coef < 1.0f))
        return TSRNN_OK; /* clamp(max=1): multiplying by 1 changes nothing */
    bool finite;
    return tsrnn_cpu_scale_check(ctx, grads, table->total_count, coef, &finite);
}

static size_t cpu_describe(const struct tsrnn_compute *ctx, char *dst, size_t dst_nbytes)
{
    const struct tsrnn_cpu *cpu = (const struct tsrnn_cpu *)ctx;
    const char *recurrence = tsrnn_cpu_packed_kernel_available() ? "packed" : "loops";
    /* With AVX-512 kernels no product goes to BLAS (cpu.h, tsrnn_cpu_own_products), and
     * OpenBLAS is not loaded to be named. Otherwise the large products are its: it is loaded
     * to name its core, and where it cannot be, tsrnn's loops take them (blas.c). */
    bool own = tsrnn_cpu_own_products(cpu);
    const char *large = own                     ? "tsrnn's blocked GEMM"
                        : tsrnn_cpu_blas_load() ? "BLAS"
                                                : "tsrnn's loops";
    return (size_t)snprintf(
        dst, dst_nbytes,
        "CPU kernels %s (recurrent products %s, other large products %s), %d thread%s; BLAS %s",
        tsrnn_cpu_isa_name(tsrnn_cpu_isa), recurrence, large, cpu->thread_count,
        cpu->thread_count == 1 ? "" : "s",
        tsrnn_cpu_blas_describe(own ? "no product goes to it with AVX-512 kernels" : NULL));
}

/* OpenBLAS matters only where the products go to BLAS: not with AVX-512 kernels
 * (tsrnn_cpu_own_products), which tsrnn_cpu_isa_detect() tells before any context exists
 * (in the launcher too); there it is not even loaded. */
const char *tsrnn_compute_cpu_blas_coretype(void)
{
    return tsrnn_cpu_isa_detect() == TSRNN_CPU_ISA_AVX512 ? NULL : tsrnn_cpu_blas_coretype_hint();
}

const char *tsrnn_compute_cpu_blas_warning(void)
{
    static _Thread_local char line[1024]; /* a caller per thread: two runs may ask at once */
    const char *load_error =
        tsrnn_cpu_isa_detect() == TSRNN_CPU_ISA_AVX512 ? NULL : tsrnn_cpu_blas_load_error();
    if (load_error != NULL) {
        snprintf(line, sizeof(line),
                 "%s; until then tsrnn's loops run the large products, at a fraction of "
                 "OpenBLAS's speed",
                 load_error);
        return line;
    }
    const char *hint = tsrnn_compute_cpu_blas_coretype();
    if (hint == NULL)
        return NULL;
    enum tsrnn_cpu_isa level = tsrnn_cpu_isa_supported();
    snprintf(line, sizeof(line),
             "OpenBLAS runs its generic %s kernels on this %s CPU (its release does not know "
             "the CPU), so the large products run at half the CPU's speed or less; set "
             "OPENBLAS_CORETYPE=%s for every rank",
             tsrnn_cpu_blas_core(), tsrnn_cpu_isa_name(level), hint);
    return line;
}

const struct tsrnn_compute_backend tsrnn_compute_backend_cpu = {
    .kind = TSRNN_COMPUTE_CPU,
    .name = "cpu",
    .caps = {
        .host_memory = true,
        .layer_ops = true, /* the door composes its step and forward (src/compute/step.c) */
        .l1_loss = true,
        .huber_loss = true,
        .optimizers = true,
        .l2_weight_decay = true,
        .nesterov = true,
        .rmsprop = true,
        .adagrad = true,
        .clipping = true,
        .reduction = true,
        .immediate_results = true,
        .step_graphs = false,
        .likelihoods = true,
    },
    .probe = NULL, /* always there */
    .create = cpu_create,
    .destroy = cpu_destroy,
    .stream = NULL,
    .describe = cpu_describe,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_synchronize,
    .workspace_create = tsrnn_cpu_workspace_create,
    .workspace_destroy = tsrnn_cpu_workspace_destroy,
    .batch_load = tsrnn_cpu_batch_load,
    .layer_forward = tsrnn_cpu_layer_forward,
    .layer_backward = tsrnn_cpu_layer_backward,
    .state_save = tsrnn_cpu_state_save,
    .head_forward = tsrnn_cpu_head_forward,
    .head_backward = tsrnn_cpu_head_backward,
    .mse_forward = tsrnn_cpu_mse_forward,
    .mse_backward = tsrnn_cpu_mse_backward,
    .window_squared_errors = tsrnn_cpu_window_squared_errors,
    .l1_forward = tsrnn_cpu_l1_forward,
    .l1_backward = tsrnn_cpu_l1_backward,
    .window_abs_errors = tsrnn_cpu_window_abs_errors,
    .likelihood_forward = tsrnn_cpu_likelihood_forward,
    .likelihood_backward = tsrnn_cpu_likelihood_backward,
    .window_likelihood_losses = tsrnn_cpu_window_likelihood_losses,
    .huber_forward = tsrnn_cpu_huber_forward,
    .huber_backward = tsrnn_cpu_huber_backward,
    .window_huber_errors = tsrnn_cpu_window_huber_errors,
    .output_download = tsrnn_cpu_output_download,
    .scale_check = tsrnn_cpu_scale_check,
    .adam_update = tsrnn_cpu_adam_update,
    .l2_decay = tsrnn_cpu_l2_decay,
    .nesterov_update = tsrnn_cpu_nesterov_update,
    .rmsprop_update = tsrnn_cpu_rmsprop_update,
    .adagrad_update = tsrnn_cpu_adagrad_update,
    .clip_grad_norm = cpu_clip_grad_norm,
};
