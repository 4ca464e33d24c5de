/* torch.optim.Adam, single-tensor path (include/tsrnn/optim.h), operation by operation:
 *     exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
 *     exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *     denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
 *     param.addcdiv_(exp_avg, denom, value=-step_size)
 * Each Python-float scalar becomes a float32 operand, as in ATen's kernels; the compute
 * backend applies them elementwise, inside its training step (tsrnn_compute_step). */
#include <math.h>

#include "tsrnn/compute.h"
#include "tsrnn/optim.h"

enum tsrnn_status tsrnn_adam_init(struct tsrnn_adam *adam, struct tsrnn_compute *compute,
                                  size_t count, double lr)
{
    *adam = (struct tsrnn_adam){ .lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 };
    adam->count = count;
    adam->compute = compute;
    size_t nbytes = (count ? count : 1) * sizeof(float);
    enum tsrnn_status status = tsrnn_compute_alloc(compute, (void **)&adam->exp_avg, nbytes);
    if (status == TSRNN_OK)
        status = tsrnn_compute_alloc(compute, (void **)&adam->exp_avg_sq, nbytes);
    if (status == TSRNN_OK)
        status = tsrnn_compute_zero(compute, adam->exp_avg, nbytes);
    if (status == TSRNN_OK)
        status = tsrnn_compute_zero(compute, adam->exp_avg_sq, nbytes);
    if (status != TSRNN_OK) {
        tsrnn_adam_finish(adam);
        return tsrnn_error_append(status, " (Adam's moments for %zu parameters)", count);
    }
    return TSRNN_OK;
}

void tsrnn_adam_set_rule(struct tsrnn_adam *adam, enum tsrnn_optimizer_kind kind,
                         double weight_decay, double momentum)
{
    adam->kind = kind;
    adam->weight_decay = weight_decay >= 0.0             ? weight_decay
                         : kind == TSRNN_OPTIMIZER_ADAMW ? 0.01
                                                         : 0.0;
    adam->momentum = momentum;
}

void tsrnn_adam_finish(struct tsrnn_adam *adam)
{
    if (adam == NULL || adam->compute == NULL)
        return;
    tsrnn_compute_free(adam->compute, adam->exp_avg);
    tsrnn_compute_free(adam->compute, adam->exp_avg_sq);
    *adam = (struct tsrnn_adam){ 0 };
}

/* torch.optim.SGD (single-tensor path, dampening 0) through Adam's op: see optim.h. */
static struct tsrnn_adam_scalars sgd_scalars(const struct tsrnn_adam *adam)
{
    return (struct tsrnn_adam_scalars){
        .beta1 = (float)adam->momentum,
        .one_minus_beta1 = 1.0f,
        .beta2 = 0.0f,
        .one_minus_beta2 = 0.0f,
        .bias_correction2_sqrt = 1.0f,
        .eps = 1.0f,
        .neg_step_size = (float)-adam->lr,
    };
}

static struct tsrnn_adam_scalars adam_scalars(const struct tsrnn_adam *adam)
{
    double step = (double)adam->step;
    double bias_correction1 = 1.0 - pow(adam->beta1, step);
    double bias_correction2 = 1.0 - pow(adam->beta2, step);
    return (struct tsrnn_adam_scalars){
        .beta1 = (float)adam->beta1,
        .one_minus_beta1 = (float)(1.0 - adam->beta1),
        .beta2 = (float)adam->beta2,
        .one_minus_beta2 = (float)(1.0 - adam->beta2),
        .bias_correction2_sqrt = (float)sqrt(bias_correction2),
        .eps = (float)adam->eps,
        .neg_step_size = (float)-(adam->lr / bias_correction1),
    };
}

void tsrnn_adam_next_update(struct tsrnn_adam *adam, struct tsrnn_step_update *u)
{
    adam->step++;
    /* AdamW: param.mul_(1 - lr * weight_decay), the Python float a float32 operand. */
    u->decay = adam->kind == TSRNN_OPTIMIZER_ADAMW && adam->weight_decay != 0.0
                   ? (float)(1.0 - adam->lr * adam->weight_decay)
                   : 1.0f;
    u->adam = adam->kind == TSRNN_OPTIMIZER_SGD ? sgd_scalars(adam) : adam_scalars(adam);
}

enum tsrnn_status tsrnn_adam_step(struct tsrnn_adam *adam, float *params, const float *grads)
{
    struct tsrnn_step_update u;
    tsrnn_adam_next_update(adam, &u);
    if (u.decay != 1.0f) {
        bool finite;
        TSRNN_TRY(tsrnn_compute_scale_check(adam->compute, params, adam->count, u.decay, &finite));
    }
    return tsrnn_compute_adam_update(adam->compute, params, adam->exp_avg, adam->exp_avg_sq, grads,
                                     adam->count, &u.adam);
}

enum tsrnn_status tsrnn_adam_export(const struct tsrnn_adam *adam, float *exp_avg,
                                    float *exp_avg_sq)
{
    size_t nbytes = adam->count * sizeof(float);
    TSRNN_TRY(tsrnn_compute_download(adam->compute, exp_avg, adam->exp_avg, nbytes));
    return tsrnn_compute_download(adam->compute, exp_avg_sq, adam->exp_avg_sq, nbytes);
}

enum tsrnn_status tsrnn_adam_import(struct tsrnn_adam *adam, const float *exp_avg,
                                    const float *exp_avg_sq)
{
    size_t nbytes = adam->count * sizeof(float);
    TSRNN_TRY(tsrnn_compute_upload(adam->compute, adam->exp_avg, exp_avg, nbytes));
    return tsrnn_compute_upload(adam->compute, adam->exp_avg_sq, exp_avg_sq, nbytes);
}
