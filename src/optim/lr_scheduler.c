/* PyTorch's learning-rate schedulers, stepped per epoch (include/tsrnn/optim.h): the
 * "chainable" forms of torch.optim.lr_scheduler.ExponentialLR and StepLR (each step
 * multiplies the current rate), and ReduceLROnPlateau.step(metrics) operation by
 * operation. */
#include <math.h>

#include "tsrnn/optim.h"

void tsrnn_lr_scheduler_init(struct tsrnn_lr_scheduler *sched, const struct tsrnn_config *cfg)
{
    *sched = (struct tsrnn_lr_scheduler){
        .kind = cfg->lr_scheduler_cls,
        .gamma = cfg->lr_gamma,
        .step_size = cfg->lr_step_size,
        .factor = cfg->lr_factor,
        .threshold = cfg->lr_threshold,
        .min_lr = cfg->lr_min_lr,
        .patience = cfg->lr_patience,
        .cooldown = cfg->lr_cooldown,
        .threshold_mode = cfg->lr_threshold_mode,
        .mode = cfg->lr_mode,
        /* mode_worse: the first metric always improves on it */
        .best = cfg->lr_mode == TSRNN_MONITOR_MIN ? INFINITY : -INFINITY,
    };
}

/* ReduceLROnPlateau.is_better(a, best). */
static bool plateau_better(const struct tsrnn_lr_scheduler *s, double a)
{
    bool rel = s->threshold_mode == TSRNN_THRESHOLD_REL;
    if (s->mode == TSRNN_MONITOR_MIN)
        return rel ? a < s->best * (1.0 - s->threshold) : a < s->best - s->threshold;
    return rel ? a > s->best * (s->threshold + 1.0) : a > s->best + s->threshold;
}

double tsrnn_lr_scheduler_step(struct tsrnn_lr_scheduler *sched, double lr, double metric)
{
    sched->last_epoch++;
    switch (sched->kind) {
    case TSRNN_LR_SCHEDULER_NONE:
        return lr;
    case TSRNN_LR_SCHEDULER_EXPONENTIAL:
        return lr * sched->gamma;
    case TSRNN_LR_SCHEDULER_STEP:
        return sched->last_epoch % sched->step_size == 0 ? lr * sched->gamma : lr;
    case TSRNN_LR_SCHEDULER_PLATEAU:
        break;
    }
    if (plateau_better(sched, metric)) {
        sched->best = metric;
        sched->num_bad_epochs = 0;
    } else {
        sched->num_bad_epochs++;
    }
    if (sched->cooldown_counter > 0) {
        sched->cooldown_counter--;
        sched->num_bad_epochs = 0;
    }
    if (sched->num_bad_epochs > sched->patience) {
        double new_lr = fmax(lr * sched->factor, sched->min_lr);
        if (lr - new_lr > 1e-8)
            lr = new_lr;
        sched->cooldown_counter = sched->cooldown;
        sched->num_bad_epochs = 0;
    }
    return lr;
}
