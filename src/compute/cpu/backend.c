/* The CPU backend's table (backend.h): its context, memory (host memory, 64-byte aligned),
 * and the optimizer's elementwise operations. The model's operations are in model.c. */
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
    static char line[1024];
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
        .optimizers = true,
        .clipping = true,
        .reduction = true,
        .immediate_results = true,
        .step_graphs = false,
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
    .output_download = tsrnn_cpu_output_download,
    .scale_check = tsrnn_cpu_scale_check,
    .adam_update = tsrnn_cpu_adam_update,
    .clip_grad_norm = cpu_clip_grad_norm,
};
