/* PyTorch's learning-rate schedulers (include/tsrnn/optim.h), operation by operation as
 * torch.optim.lr_scheduler (torch 2.15) computes them in Python floats (double), so that the
 * rate every step trains with is PyTorch's to the last bit:
 *   the "chainable" forms of ExponentialLR, StepLR, CosineAnnealingLR and LinearLR (each step
 *   computes the next rate from the current one), the closed forms of OneCycleLR and
 *   CosineAnnealingWarmRestarts (from the step count alone), and
 *   ReduceLROnPlateau.step(metrics).
 * Lightning steps them per epoch or per optimizer step (the lr scheduler config's interval,
 * which Darts takes from lr_scheduler_kwargs), every `frequency` of them
 * (training_epoch_loop.py's _update_learning_rates). */
#include <math.h>

#include "tsrnn/optim.h"

void tsrnn_lr_scheduler_init(struct tsrnn_lr_scheduler *sched, const struct tsrnn_config *cfg)
{
    *sched = (struct tsrnn_lr_scheduler){
        .kind = cfg->lr_scheduler_cls,
        .interval = cfg->lr_interval,
        .frequency = cfg->lr_frequency,
        .base_lr = cfg->lr,
        .gamma = cfg->lr_gamma,
        .step_size = cfg->lr_step_size,
        .factor = cfg->lr_factor,
        .threshold = cfg->lr_threshold,
        .min_lr = cfg->lr_min_lr,
        .patience = cfg->lr_patience,
        .cooldown = cfg->lr_cooldown,
        .threshold_mode = cfg->lr_threshold_mode,
        .mode = cfg->lr_mode,
        .T_max = cfg->lr_T_max,
        .eta_min = cfg->lr_eta_min,
        .T_0 = cfg->lr_T_0,
        .T_mult = cfg->lr_T_mult,
        .max_lr = cfg->lr_max_lr,
        .total_steps = cfg->lr_total_steps > 0
                           ? cfg->lr_total_steps
                           : (int64_t)cfg->lr_epochs * (int64_t)cfg->lr_steps_per_epoch,
        .pct_start = cfg->lr_pct_start,
        .anneal_linear = cfg->lr_anneal_strategy == TSRNN_ANNEAL_LINEAR,
        .cycle_momentum = cfg->lr_cycle_momentum,
        .base_momentum = cfg->lr_base_momentum,
        .max_momentum = cfg->lr_max_momentum,
        .three_phase = cfg->lr_three_phase,
        .start_factor = cfg->lr_start_factor,
        .end_factor = cfg->lr_end_factor,
        .total_iters = cfg->lr_total_iters,
        /* mode_worse: the first metric always improves on it */
        .best = cfg->lr_mode == TSRNN_MONITOR_MIN ? INFINITY : -INFINITY,
    };
    /* OneCycleLR's param-group entries: initial_lr = max_lr / div_factor, min_lr =
     * initial_lr / final_div_factor (ReduceLROnPlateau's min_lr is its own key). */
    if (sched->kind == TSRNN_LR_SCHEDULER_ONE_CYCLE) {
        sched->base_lr = cfg->lr_max_lr / cfg->lr_div_factor;
        sched->cycle_min_lr = sched->base_lr / cfg->lr_final_div_factor;
    }
}

/* ReduceLROnPlateau.is_better(a, best). */
static bool plateau_better(const struct tsrnn_lr_scheduler *s, double a)
{
    bool rel = s->threshold_mode == TSRNN_THRESHOLD_REL;
    if (s->mode == TSRNN_MONITOR_MIN)
        return rel ? a < s->best * (1.0 - s->threshold) : a < s->best - s->threshold;
    return rel ? a > s->best * (s->threshold + 1.0) : a > s->best + s->threshold;
}

static double plateau_step(struct tsrnn_lr_scheduler *s, double lr, double metric)
{
    if (plateau_better(s, metric)) {
        s->best = metric;
        s->num_bad_epochs = 0;
    } else {
        s->num_bad_epochs++;
    }
    if (s->cooldown_counter > 0) {
        s->cooldown_counter--;
        s->num_bad_epochs = 0;
    }
    if (s->num_bad_epochs > s->patience) {
        double new_lr = fmax(lr * s->factor, s->min_lr);
        if (lr - new_lr > 1e-8)
            lr = new_lr;
        s->cooldown_counter = s->cooldown;
        s->num_bad_epochs = 0;
    }
    return lr;
}

/* Python's a % b for b > 0: never negative. */
static int64_t py_mod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return r < 0 ? r + b : r;
}

/* CosineAnnealingLR.get_lr() at last_epoch k >= 1 (the recursive form; the closed form
 * eta_min + (base_lr - eta_min) (1 + cos(pi k / T_max)) / 2 differs in the last bits). */
static double cosine_step(const struct tsrnn_lr_scheduler *s, double lr, int64_t k)
{
    double T = (double)s->T_max;
    if (py_mod(k - 1 - s->T_max, 2 * s->T_max) == 0)
        return lr + (s->base_lr - s->eta_min) * (1.0 - cos(M_PI / T)) / 2.0;
    return (1.0 + cos(M_PI * (double)k / T)) / (1.0 + cos(M_PI * (double)(k - 1) / T)) *
               (lr - s->eta_min) +
           s->eta_min;
}

/* CosineAnnealingWarmRestarts after k steps without an explicit epoch: T_cur counts up from 0
 * and wraps at T_i, which then grows T_mult times. */
static double warm_restarts_lr(const struct tsrnn_lr_scheduler *s, int64_t k)
{
    int64_t T_i = s->T_0, T_cur = k;
    while (T_cur >= T_i) {
        T_cur -= T_i;
        T_i *= s->T_mult;
    }
    return s->eta_min +
           (s->base_lr - s->eta_min) * (1.0 + cos(M_PI * (double)T_cur / (double)T_i)) / 2.0;
}

/* OneCycleLR._annealing_cos / _annealing_linear. */
static double anneal(const struct tsrnn_lr_scheduler *s, double start, double end, double pct)
{
    if (s->anneal_linear)
        return (end - start) * pct + start;
    double cos_out = cos(M_PI * pct) + 1.0;
    return end + (start - end) / 2.0 * cos_out;
}

/* One phase of OneCycleLR: its end step, and the rate and momentum it anneals between. */
struct one_cycle_phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
};

/* OneCycleLR.get_lr() at step_num k: the rate and (cycle_momentum) the momentum. */
static void one_cycle_at(const struct tsrnn_lr_scheduler *s, int64_t k, double *lr,
                         double *momentum)
{
    double total = (double)s->total_steps;
    struct one_cycle_phase two[2] = {
        { s->pct_start * total - 1.0, s->base_lr, s->max_lr, s->max_momentum, s->base_momentum },
        { total - 1.0, s->max_lr, s->cycle_min_lr, s->base_momentum, s->max_momentum },
    };
    struct one_cycle_phase three[3] = {
        two[0],
        { 2.0 * s->pct_start * total - 2.0, s->max_lr, s->base_lr, s->base_momentum,
          s->max_momentum },
        { total - 1.0, s->base_lr, s->cycle_min_lr, s->max_momentum, s->max_momentum },
    };
    const struct one_cycle_phase *phases = s->three_phase ? three : two;
    size_t count = s->three_phase ? 3 : 2;
    double start_step = 0.0, step = (double)k;
    for (size_t i = 0; i < count; i++) {
        const struct one_cycle_phase *p = &phases[i];
        if (step <= p->end_step || i == count - 1) {
            double pct = (step - start_step) / (p->end_step - start_step);
            *lr = anneal(s, p->start_lr, p->end_lr, pct);
            *momentum = anneal(s, p->start_momentum, p->end_momentum, pct);
            return;
        }
        start_step = p->end_step;
    }
}

double tsrnn_lr_scheduler_initial_lr(const struct tsrnn_lr_scheduler *sched, double lr)
{
    double momentum;
    switch (sched->kind) {
    case TSRNN_LR_SCHEDULER_LINEAR:
        return lr * sched->start_factor;
    case TSRNN_LR_SCHEDULER_ONE_CYCLE:
        one_cycle_at(sched, 0, &lr, &momentum);
        return lr;
    case TSRNN_LR_SCHEDULER_WARM_RESTARTS:
        return warm_restarts_lr(sched, 0);
    default:
        return lr;
    }
}

bool tsrnn_lr_scheduler_momentum(const struct tsrnn_lr_scheduler *sched, double *momentum)
{
    if (sched->kind != TSRNN_LR_SCHEDULER_ONE_CYCLE || !sched->cycle_momentum)
        return false;
    double lr;
    one_cycle_at(sched, sched->last_epoch, &lr, momentum);
    return true;
}

double tsrnn_lr_scheduler_step(struct tsrnn_lr_scheduler *sched, double lr, double metric)
{
    int64_t k = ++sched->last_epoch;
    double momentum;
    switch (sched->kind) {
    case TSRNN_LR_SCHEDULER_NONE:
        return lr;
    case TSRNN_LR_SCHEDULER_EXPONENTIAL:
        return lr * sched->gamma;
    case TSRNN_LR_SCHEDULER_STEP:
        return k % sched->step_size == 0 ? lr * sched->gamma : lr;
    case TSRNN_LR_SCHEDULER_PLATEAU:
        return plateau_step(sched, lr, metric);
    case TSRNN_LR_SCHEDULER_COSINE:
        return cosine_step(sched, lr, k);
    case TSRNN_LR_SCHEDULER_ONE_CYCLE:
        one_cycle_at(sched, k, &lr, &momentum);
        return lr;
    case TSRNN_LR_SCHEDULER_WARM_RESTARTS:
        return warm_restarts_lr(sched, k);
    case TSRNN_LR_SCHEDULER_LINEAR:
        break;
    }
    if (k > sched->total_iters)
        return lr;
    double span = sched->end_factor - sched->start_factor;
    return lr * (1.0 + span / ((double)sched->total_iters * sched->start_factor +
                               (double)(k - 1) * span));
}

void tsrnn_lr_scheduler_apply_momentum(const struct tsrnn_lr_scheduler *sched,
                                       struct tsrnn_adam *adam)
{
    double momentum;
    if (!tsrnn_lr_scheduler_momentum(sched, &momentum))
        return;
    /* PyTorch's OneCycleLR sets betas[0] where the optimizer has betas, else momentum. */
    if (adam->kind == TSRNN_OPTIMIZER_SGD || adam->kind == TSRNN_OPTIMIZER_RMSPROP)
        adam->momentum = momentum;
    else
        adam->beta1 = momentum;
}

void tsrnn_lr_scheduler_update(struct tsrnn_lr_scheduler *sched, struct tsrnn_adam *adam,
                               enum tsrnn_lr_interval interval, int64_t index, double metric)
{
    if (sched->kind == TSRNN_LR_SCHEDULER_NONE || sched->interval != interval ||
        (index + 1) % sched->frequency != 0)
        return;
    adam->lr = tsrnn_lr_scheduler_step(sched, adam->lr, metric);
    tsrnn_lr_scheduler_apply_momentum(sched, adam);
}

enum tsrnn_status tsrnn_lr_scheduler_check_steps(const struct tsrnn_lr_scheduler *sched,
                                                 const struct tsrnn_config *cfg,
                                                 int64_t steps_per_epoch)
{
    if (sched->kind != TSRNN_LR_SCHEDULER_ONE_CYCLE || steps_per_epoch < 1)
        return TSRNN_OK;
    /* The most scheduler steps the run takes: every frequency-th epoch, or every
     * frequency-th batch of each epoch; max_steps may end the run inside an epoch, whose
     * epoch-end step then does not happen. */
    int64_t f = sched->frequency, epochs = cfg->n_epochs, partial = 0;
    if (cfg->max_steps >= 0 && cfg->max_steps < epochs * steps_per_epoch) {
        epochs = cfg->max_steps / steps_per_epoch;
        partial = cfg->max_steps % steps_per_epoch;
    }
    int64_t steps = sched->interval == TSRNN_LR_INTERVAL_EPOCH
                        ? epochs / f
                        : epochs * (steps_per_epoch / f) + partial / f;
    if (steps <= sched->total_steps)
        return TSRNN_OK;
    return tsrnn_error(
        TSRNN_ERR_USAGE,
        "%s: OneCycleLR's cycle has %lld steps, but this run steps it %lld times "
        "([lr_scheduler_kwargs] interval = %s, %lld optimizer steps per epoch), "
        "where PyTorch raises \"Tried to step %lld times\"; accepted: "
        "total_steps (or epochs x steps_per_epoch) >= %lld, or a shorter run",
        tsrnn_config_origin(cfg, "training", "lr_scheduler_cls"), (long long)sched->total_steps,
        (long long)steps, sched->interval == TSRNN_LR_INTERVAL_EPOCH ? "epoch" : "step",
        (long long)steps_per_epoch, (long long)sched->total_steps + 1, (long long)steps);
}
