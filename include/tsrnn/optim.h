/* Adam exactly as torch.optim.Adam (PyTorch 1.13+, single-tensor path, weight_decay 0,
 * amsgrad off), over the flat parameter buffer:
 *     step += 1
 *     m = m * beta1 + g * (1 - beta1)
 *     v = v * beta2 + (1 - beta2) * g * g
 *     denom = sqrt(v) / sqrt(1 - beta2^step) + eps
 *     p = p + (-lr / (1 - beta1^step)) * m / denom
 * The bias corrections are computed in double and applied as float32 scalars, as PyTorch
 * does with Python floats. This file holds the semantics; the elementwise update runs on the
 * compute backend that holds the parameters, and the moments live there too. */
/* The same state also runs PyTorch's other optimizers ([training] optimizer_cls), each
 * single-tensor code path operation by operation, every Python float a float32 operand:
 *   Adam with weight_decay (its L2 penalty, as SGD's, RMSprop's and Adagrad's): g = g +
 *          weight_decay * p first (PyTorch's grad.add(param, alpha=weight_decay), a new
 *          gradient), then the update below on it.
 *   AdamW: p = p * (1 - lr * weight_decay) first (a float32 scalar), then Adam's update.
 *   SGD:   buf = buf * momentum + g (buf = g on the first step: PyTorch's clone, exactly
 *          what 0 * momentum + g gives), p = p + (-lr) * buf; dampening 0. exp_avg holds
 *          PyTorch's momentum_buffer; exp_avg_sq stays 0. On the backend it is Adam's op
 *          with beta1 = momentum, 1 - beta1 = 1, beta2 = 1 - beta2 = 0, eps 1, step size lr:
 *          m = m * momentum + 1 * g, v = 0, denom = 0 / 1 + 1 = 1, p + (-lr) * m / 1 — every
 *          operation exact but those PyTorch also rounds.
 *          With nesterov (its own op): buf as above, then p = p + (-lr) * (g + momentum * buf).
 *   RMSprop (alpha 0.99, eps 1e-8, momentum 0, centered off by default): exp_avg_sq holds
 *          square_avg, exp_avg the momentum_buffer, grad_avg (centered only) grad_avg:
 *          v = v * alpha + (1 - alpha) * g * g;
 *          centered: a = lerp(a, g, 1 - alpha), avg = sqrt(v - a * a); else avg = sqrt(v);
 *          avg = avg + eps;
 *          momentum > 0: buf = buf * momentum + g / avg, p = p + (-lr) * buf;
 *          else p = p + (-lr) * g / avg.
 *   Adagrad (lr_decay 0, initial_accumulator_value 0, eps 1e-10): exp_avg_sq holds the sum,
 *          starting at initial_accumulator_value: clr = lr / (1 + (step - 1) * lr_decay) in
 *          double, sum = sum + g * g, p = p + (-clr) * g / (sqrt(sum) + eps). */
#ifndef TSRNN_OPTIM_H
#define TSRNN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/compute.h"
#include "tsrnn/config.h" /* enum tsrnn_optimizer_kind */
#include "tsrnn/core.h"

struct tsrnn_adam {
    enum tsrnn_optimizer_kind kind; /* Adam unless tsrnn_adam_set_rule() says otherwise */
    double lr, beta1, beta2, eps;
    double weight_decay;           /* AdamW's decoupled; the others' L2 penalty */
    double momentum;               /* SGD's, RMSprop's */
    bool nesterov;                 /* SGD's */
    double alpha;                  /* RMSprop's */
    bool centered;                 /* RMSprop's: grad_avg is kept */
    double lr_decay;               /* Adagrad's */
    uint64_t step;                 /* updates done so far */
    size_t count;                  /* parameters */
    struct tsrnn_compute *compute; /* where the moments live; not owned */
    float *exp_avg;                /* (count) device: first moment, PyTorch's "exp_avg" */
    float *exp_avg_sq;             /* (count) device: second moment, "exp_avg_sq" */
    float *grad_avg;               /* (count) device: centered RMSprop's "grad_avg"; else NULL */
};

/* Zero moments for `count` parameters on `compute`; betas (0.9, 0.999), eps 1e-8. */
enum tsrnn_status tsrnn_adam_init(struct tsrnn_adam *adam, struct tsrnn_compute *compute,
                                  size_t count, double lr);

/* Switches to the config's [training] optimizer_cls with its kwargs (weight_decay, momentum,
 * nesterov, eps, alpha, centered, lr_decay, initial_accumulator_value; a negative
 * weight_decay or eps takes PyTorch's default for the optimizer: AdamW 0.01, Adagrad eps
 * 1e-10), before the first step: allocates centered RMSprop's grad_avg (zero) and fills
 * Adagrad's sum with initial_accumulator_value. TSRNN_ERR_NOMEM or the device's failure. */
enum tsrnn_status tsrnn_adam_set_rule(struct tsrnn_adam *adam, const struct tsrnn_config *cfg);

/* The elementwise rule (compute.h) of optimizer `kind` (SGD: with or without Nesterov
 * momentum), for tsrnn_compute_check_needs() before anything is allocated. */
enum tsrnn_update_rule tsrnn_optimizer_rule(enum tsrnn_optimizer_kind kind, bool nesterov);

/* Accepts a zeroed struct. */
void tsrnn_adam_finish(struct tsrnn_adam *adam);

/* Counts one more step and gives its update (compute.h) by the optimizer's rule at the
 * current adam->lr (a scheduler may change it between steps): for tsrnn_compute_step. */
void tsrnn_adam_next_update(struct tsrnn_adam *adam, struct tsrnn_step_update *update);

/* One update of params (count) from grads (count), both device memory of adam->compute, by
 * the optimizer's rule at the current adam->lr, outside a training step (tests). With an L2
 * weight_decay, grads is overwritten with grads + weight_decay * params, as in a step. */
enum tsrnn_status tsrnn_adam_step(struct tsrnn_adam *adam, float *params, float *grads);

/* The moments, (count) floats each, from or to the host: the only way they cross
 * (checkpoints, an imported Darts model's state). grad_avg (centered RMSprop) crosses by its
 * own calls. */
enum tsrnn_status tsrnn_adam_export(const struct tsrnn_adam *adam, float *exp_avg,
                                    float *exp_avg_sq);
enum tsrnn_status tsrnn_adam_import(struct tsrnn_adam *adam, const float *exp_avg,
                                    const float *exp_avg_sq);

/* The state a training step updates: the parameters and the optimizer's buffers. */
struct tsrnn_step_state tsrnn_adam_step_state(const struct tsrnn_adam *adam, float *params);

/* --- learning-rate schedulers ([training] lr_scheduler_cls) --------------------------------
 * PyTorch's, in double as PyTorch keeps a param group's lr as a Python float, stepped as
 * Lightning steps Darts' scheduler: once per epoch (interval "epoch", Darts' default) or after
 * every optimizer step (interval "step"), every `frequency` of them. k is the scheduler's
 * step count after the step (PyTorch's last_epoch), base_lr the rate it was built with:
 *   ExponentialLR: lr = lr * gamma
 *   StepLR:        lr = lr * gamma after every step_size-th step (k % step_size == 0)
 *   ReduceLROnPlateau(metric): the metric improves when, for mode min, metric < best * (1 -
 *       threshold) (rel) or metric < best - threshold (abs) — max mirrored; else one more bad
 *       epoch; during cooldown the bad epochs stay 0; more than `patience` of them: lr =
 *       max(lr * factor, min_lr) when that lowers it by more than eps 1e-8, then cooldown.
 *   CosineAnnealingLR (recursive form): at k with (k - 1 - T_max) % (2 T_max) == 0,
 *       lr += (base_lr - eta_min) (1 - cos(pi / T_max)) / 2; else lr = (1 + cos(pi k /
 *       T_max)) / (1 + cos(pi (k - 1) / T_max)) (lr - eta_min) + eta_min.
 *   CosineAnnealingWarmRestarts: T_cur counts steps and wraps at T_i (T_0, then T_mult
 *       times the last); lr = eta_min + (base_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2,
 *       also when built (k = 0).
 *   LinearLR: built, lr = lr * start_factor; then for k <= total_iters lr = lr * (1 +
 *       (end_factor - start_factor) / (total_iters start_factor + (k - 1) (end_factor -
 *       start_factor))).
 *   OneCycleLR: two (or three_phase: three) phases ending at steps pct_start total - 1,
 *       (2 pct_start total - 2,) total - 1; in a phase from step a to b, pct = (k - a) / (b -
 *       a) anneals the rate from max_lr / div_factor up to max_lr, down to that /
 *       final_div_factor (cos: end + (start - end) / 2 (cos(pi pct) + 1); linear: (end -
 *       start) pct + start), from k = 0 on whatever lr says; with cycle_momentum the momentum
 *       anneals the other way between max_momentum and base_momentum: Adam's and AdamW's
 *       beta1, SGD's and RMSprop's momentum (Adagrad has neither: refused). */
struct tsrnn_lr_scheduler {
    enum tsrnn_lr_scheduler_kind kind;
    enum tsrnn_lr_interval interval;
    int64_t frequency;
    double base_lr; /* PyTorch's base_lrs[0] (OneCycleLR: initial_lr = max_lr / div_factor) */
    double gamma;
    int64_t step_size;
    double factor, threshold, min_lr;
    int64_t patience, cooldown;
    enum tsrnn_threshold_mode threshold_mode;
    enum tsrnn_monitor_mode mode;
    int64_t T_max, T_0, T_mult;
    double eta_min;
    double max_lr, cycle_min_lr, pct_start, base_momentum, max_momentum; /* OneCycleLR */
    int64_t total_steps;
    bool anneal_linear, cycle_momentum, three_phase;
    double start_factor, end_factor; /* LinearLR */
    int64_t total_iters;
    /* The state a checkpoint keeps (PyTorch's state_dict; the current rate is the optimizer's
     * lr, and everything else follows from these): */
    int64_t last_epoch;       /* scheduler steps taken */
    double best;              /* ReduceLROnPlateau: best metric so far (+-inf before one) */
    int64_t num_bad_epochs;   /* ReduceLROnPlateau */
    int64_t cooldown_counter; /* ReduceLROnPlateau */
};

/* The scheduler the config's [training] lr_scheduler_cls and [lr_scheduler_kwargs] describe,
 * not stepped yet. */
void tsrnn_lr_scheduler_init(struct tsrnn_lr_scheduler *sched, const struct tsrnn_config *cfg);

/* The rate the optimizer has once the scheduler is built on an optimizer with rate `lr`
 * (PyTorch's constructor steps it once): lr, but LinearLR's lr * start_factor, OneCycleLR's
 * and CosineAnnealingWarmRestarts' first rates. */
double tsrnn_lr_scheduler_initial_lr(const struct tsrnn_lr_scheduler *sched, double lr);

/* One scheduler step: returns the learning rate after it, from the current `lr` and
 * (ReduceLROnPlateau) the epoch's monitored metric, a float32 value as Lightning logs it. */
double tsrnn_lr_scheduler_step(struct tsrnn_lr_scheduler *sched, double lr, double metric);

/* OneCycleLR with cycle_momentum: true, and *momentum at the scheduler's current step;
 * otherwise false (the optimizer keeps its own). */
bool tsrnn_lr_scheduler_momentum(const struct tsrnn_lr_scheduler *sched, double *momentum);

/* Sets adam's beta1 (Adam, AdamW) or momentum (SGD, RMSprop) to
 * tsrnn_lr_scheduler_momentum()'s, if the scheduler cycles it: after building, resuming or
 * stepping. */
void tsrnn_lr_scheduler_apply_momentum(const struct tsrnn_lr_scheduler *sched,
                                       struct tsrnn_adam *adam);

/* Lightning's _update_learning_rates(interval): when `interval` is the scheduler's and index
 * + 1 (the epoch, or the batch of the epoch, counted from 1) is a multiple of its frequency,
 * steps it and sets adam's lr (and momentum). */
void tsrnn_lr_scheduler_update(struct tsrnn_lr_scheduler *sched, struct tsrnn_adam *adam,
                               enum tsrnn_lr_interval interval, int64_t index, double metric);

/* OneCycleLR raises when stepped past its total_steps: TSRNN_ERR_USAGE, before training, when
 * the run (n_epochs, max_steps, of steps_per_epoch optimizer steps) would step it more often;
 * TSRNN_OK otherwise and for the other schedulers. */
enum tsrnn_status tsrnn_lr_scheduler_check_steps(const struct tsrnn_lr_scheduler *sched,
                                                 const struct tsrnn_config *cfg,
                                                 int64_t steps_per_epoch);

#endif
