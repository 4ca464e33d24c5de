/* torch.optim.Adam, single-tensor path (include/tsrnn/optim.h), operation by operation:
 *     exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
 *     exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *     denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
 *     param.addcdiv_(exp_avg, denom, value=-step_size)
 * Each Python-float scalar becomes a float32 operand, as in ATen's CPU kernels. */
#include <math.h>
#include <stdlib.h>

#include "tsrnn/compute.h" /* TSRNN_VECTOR_CLONES */
#include "tsrnn/optim.h"

enum tsrnn_status tsrnn_adam_init(struct tsrnn_adam *adam, size_t count, double lr)
{
    *adam = (struct tsrnn_adam){ .lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 };
    adam->count = count;
    adam->exp_avg = calloc(count ? count : 1, sizeof(float));
    adam->exp_avg_sq = calloc(count ? count : 1, sizeof(float));
    if (adam->exp_avg == NULL || adam->exp_avg_sq == NULL) {
        tsrnn_adam_finish(adam);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for Adam's moments (%zu parameters)",
                           count);
    }
    return TSRNN_OK;
}

void tsrnn_adam_finish(struct tsrnn_adam *adam)
{
    if (adam == NULL)
        return;
    free(adam->exp_avg);
    free(adam->exp_avg_sq);
    *adam = (struct tsrnn_adam){ 0 };
}

/* The elementwise update, over arrays that do not overlap (so it vectorises; every lane
 * computes what the scalar code would). */
TSRNN_VECTOR_CLONES static void adam_update(float *restrict params, float *restrict exp_avg,
                                            float *restrict exp_avg_sq, const float *restrict grads,
                                            size_t count, float beta1, float one_minus_beta1,
                                            float beta2, float one_minus_beta2, float bc2_sqrt,
                                            float eps, float neg_step_size)
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

void tsrnn_adam_step(struct tsrnn_adam *adam, float *params, const float *grads)
{
    adam->step++;
    double step = (double)adam->step;
    double bias_correction1 = 1.0 - pow(adam->beta1, step);
    double bias_correction2 = 1.0 - pow(adam->beta2, step);
    adam_update(params, adam->exp_avg, adam->exp_avg_sq, grads, adam->count, (float)adam->beta1,
                (float)(1.0 - adam->beta1), (float)adam->beta2, (float)(1.0 - adam->beta2),
                (float)sqrt(bias_correction2), (float)adam->eps,
                (float)-(adam->lr / bias_correction1));
}
