/* torch.optim.Adam, single-tensor path (include/tsrnn/optim.h), operation by operation:
 *     exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
 *     exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *     denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
 *     param.addcdiv_(exp_avg, denom, value=-step_size)
 * and the other optimizers' rules on the same state (AdamW, SGD, RMSprop, Adagrad: optim.h).
 * Each Python-float scalar becomes a float32 operand, as in ATen's kernels; the compute
 * backend applies them elementwise, inside its training step (tsrnn_compute_step). */
#include <math.h>
#include <stdlib.h>

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
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_alloc(compute, (void **)&adam->exp_avg_sq, nbytes);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_zero(compute, adam->exp_avg, nbytes);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_zero(compute, adam->exp_avg_sq, nbytes);
out:
    if (status != TSRNN_OK) {
        tsrnn_adam_finish(adam);
        status = tsrnn_error_append(status, " (Adam's moments for %zu parameters)", count);
    }
    return status;
}

enum tsrnn_status tsrnn_adam_set_rule(struct tsrnn_adam *adam, const struct tsrnn_config *cfg)
{
    enum tsrnn_optimizer_kind kind = cfg->optimizer_cls;
    adam->kind = kind;
    adam->weight_decay = cfg->weight_decay >= 0.0        ? cfg->weight_decay
                         : kind == TSRNN_OPTIMIZER_ADAMW ? 0.01
                                                         : 0.0;
    adam->momentum = cfg->momentum;
    adam->nesterov = cfg->nesterov;
    adam->eps = cfg->eps >= 0.0 ? cfg->eps : kind == TSRNN_OPTIMIZER_ADAGRAD ? 1e-10 : 1e-8;
    adam->alpha = cfg->alpha;
    adam->centered = kind == TSRNN_OPTIMIZER_RMSPROP && cfg->centered;
    adam->lr_decay = cfg->lr_decay;
    size_t nbytes = (adam->count ? adam->count : 1) * sizeof(float);
    if (adam->centered && adam->grad_avg == NULL) {
        TSRNN_TRY(tsrnn_compute_alloc(adam->compute, (void **)&adam->grad_avg, nbytes));
        TSRNN_TRY(tsrnn_compute_zero(adam->compute, adam->grad_avg, nbytes));
    }
    /* Adagrad's state["sum"] = torch.full_like(p, initial_accumulator_value) */
    if (kind == TSRNN_OPTIMIZER_ADAGRAD && cfg->initial_accumulator_value != 0.0) {
        float *fill = malloc(nbytes);
        if (fill == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for Adagrad's sums");
        for (size_t i = 0; i < adam->count; i++)
            fill[i] = (float)cfg->initial_accumulator_value;
        enum tsrnn_status status = tsrnn_compute_upload(adam->compute, adam->exp_avg_sq, fill,
                                                        adam->count * sizeof(float));
        free(fill);
        TSRNN_TRY(status);
    }
    return TSRNN_OK;
}

enum tsrnn_update_rule tsrnn_optimizer_rule(enum tsrnn_optimizer_kind kind, bool nesterov)
{
    switch (kind) {
    case TSRNN_OPTIMIZER_SGD:
        return nesterov ? TSRNN_UPDATE_NESTEROV : TSRNN_UPDATE_ADAM;
    case TSRNN_OPTIMIZER_RMSPROP:
        return TSRNN_UPDATE_RMSPROP;
    case TSRNN_OPTIMIZER_ADAGRAD:
        return TSRNN_UPDATE_ADAGRAD;
    case TSRNN_OPTIMIZER_ADAM:
    case TSRNN_OPTIMIZER_ADAMW:
        break;
    }
    return TSRNN_UPDATE_ADAM;
}

void tsrnn_adam_finish(struct tsrnn_adam *adam)
{
    if (adam == NULL || adam->compute == NULL)
        return;
    tsrnn_compute_free(adam->compute, adam->exp_avg);
    tsrnn_compute_free(adam->compute, adam->exp_avg_sq);
    tsrnn_compute_free(adam->compute, adam->grad_avg);
    *adam = (struct tsrnn_adam){ 0 };
}

struct tsrnn_step_state tsrnn_adam_step_state(const struct tsrnn_adam *adam, float *params)
{
    return (struct tsrnn_step_state){ params, adam->exp_avg, adam->exp_avg_sq, adam->grad_avg };
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
    *u = (struct tsrnn_step_update){ .rule = tsrnn_optimizer_rule(adam->kind, adam->nesterov),
                                     .decay = 1.0f };
    /* AdamW: param.mul_(1 - lr * weight_decay), the Python float a float32 operand; the
     * others: grad = grad.add(param, alpha=weight_decay). */
    if (adam->kind == TSRNN_OPTIMIZER_ADAMW) {
        if (adam->weight_decay != 0.0)
            u->decay = (float)(1.0 - adam->lr * adam->weight_decay);
    } else {
        u->weight_decay = (float)adam->weight_decay;
    }
    switch (u->rule) {
    case TSRNN_UPDATE_NESTEROV:
        u->nesterov = (struct tsrnn_nesterov_scalars){ (float)adam->momentum, (float)-adam->lr };
        break;
    case TSRNN_UPDATE_RMSPROP:
        u->rmsprop = (struct tsrnn_rmsprop_scalars){
            .alpha = (float)adam->alpha,
            .one_minus_alpha = (float)(1.0 - adam->alpha),
            .eps = (float)adam->eps,
            .momentum = (float)adam->momentum,
            .neg_lr = (float)-adam->lr,
            .centered = adam->centered,
        };
        break;
    case TSRNN_UPDATE_ADAGRAD: {
        /* clr = lr / (1 + (step - 1) * lr_decay), Python floats */
        double clr = adam->lr / (1.0 + ((double)adam->step - 1.0) * adam->lr_decay);
        u->adagrad = (struct tsrnn_adagrad_scalars){ (float)adam->eps, (float)-clr };
        break;
    }
    case TSRNN_UPDATE_ADAM:
        u->adam = adam->kind == TSRNN_OPTIMIZER_SGD ? sgd_scalars(adam) : adam_scalars(adam);
        break;
    }
}

enum tsrnn_status tsrnn_adam_step(struct tsrnn_adam *adam, float *params, float *grads)
{
    struct tsrnn_step_update u;
    tsrnn_adam_next_update(adam, &u);
    struct tsrnn_step_state state = tsrnn_adam_step_state(adam, params);
    return tsrnn_compute_update(adam->compute, &state, grads, adam->count, &u);
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
