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
/* The same state also runs PyTorch's two other optimizers ([training] optimizer_cls), with
 * the same elementwise op:
 *   AdamW: p = p * (1 - lr * weight_decay) first (a float32 scalar), then Adam's update.
 *   SGD:   buf = buf * momentum + g (buf = g on the first step: PyTorch's clone, exactly
 *          what 0 * momentum + g gives), p = p + (-lr) * buf; dampening 0, not Nesterov.
 *          exp_avg holds PyTorch's momentum_buffer; exp_avg_sq stays 0. On the backend it is
 *          Adam's op with beta1 = momentum, 1 - beta1 = 1, beta2 = 1 - beta2 = 0, eps 1,
 *          step size lr: m = m * momentum + 1 * g, v = 0, denom = 0 / 1 + 1 = 1, p + (-lr) * m
 *          / 1 — every operation exact but those PyTorch also rounds. */
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
    double weight_decay;           /* AdamW's */
    double momentum;               /* SGD's */
    uint64_t step;                 /* updates done so far */
    size_t count;                  /* parameters */
    struct tsrnn_compute *compute; /* where the moments live; not owned */
    float *exp_avg;                /* (count) device: first moment, PyTorch's "exp_avg" */
    float *exp_avg_sq;             /* (count) device: second moment, "exp_avg_sq" */
};

/* Zero moments for `count` parameters on `compute`; betas (0.9, 0.999), eps 1e-8. */
enum tsrnn_status tsrnn_adam_init(struct tsrnn_adam *adam, struct tsrnn_compute *compute,
                                  size_t count, double lr);

/* Switches to optimizer `kind` (before the first step); weight_decay < 0 takes PyTorch's
 * default for the kind (AdamW 0.01). */
void tsrnn_adam_set_rule(struct tsrnn_adam *adam, enum tsrnn_optimizer_kind kind,
                         double weight_decay, double momentum);

/* Accepts a zeroed struct. */
void tsrnn_adam_finish(struct tsrnn_adam *adam);

/* Counts one more step and gives its update (compute.h) by the optimizer's rule at the
 * current adam->lr (a scheduler may change it between steps): for tsrnn_compute_step. */
void tsrnn_adam_next_update(struct tsrnn_adam *adam, struct tsrnn_step_update *update);

/* One update of params (count) from grads (count), both device memory of adam->compute, by
 * the optimizer's rule at the current adam->lr, outside a training step (tests). */
enum tsrnn_status tsrnn_adam_step(struct tsrnn_adam *adam, float *params, const float *grads);

/* The moments, (count) floats each, from or to the host: the only way they cross
 * (checkpoints, an imported Darts model's state). */
enum tsrnn_status tsrnn_adam_export(const struct tsrnn_adam *adam, float *exp_avg,
                                    float *exp_avg_sq);
enum tsrnn_status tsrnn_adam_import(struct tsrnn_adam *adam, const float *exp_avg,
                                    const float *exp_avg_sq);

/* --- learning-rate schedulers ([training] lr_scheduler_cls) --------------------------------
 * PyTorch's, stepped once after every epoch (Darts' interval "epoch", frequency 1), in double
 * as PyTorch keeps a param group's lr as a Python float:
 *   ExponentialLR: lr = lr * gamma
 *   StepLR:        lr = lr * gamma after every step_size-th epoch (last_epoch % step_size == 0)
 *   ReduceLROnPlateau(metric): the metric improves when, for mode min, metric < best * (1 -
 *       threshold) (rel) or metric < best - threshold (abs) — max mirrored; else one more bad
 *       epoch; during cooldown the bad epochs stay 0; more than `patience` of them: lr =
 *       max(lr * factor, min_lr) when that lowers it by more than eps 1e-8, then cooldown. */
struct tsrnn_lr_scheduler {
    enum tsrnn_lr_scheduler_kind kind;
    double gamma;
    int64_t step_size;
    double factor, threshold, min_lr;
    int64_t patience, cooldown;
    enum tsrnn_threshold_mode threshold_mode;
    enum tsrnn_monitor_mode mode;
    /* The state a checkpoint keeps (PyTorch's state_dict): */
    int64_t last_epoch;       /* epochs stepped */
    double best;              /* ReduceLROnPlateau: best metric so far (+-inf before one) */
    int64_t num_bad_epochs;   /* ReduceLROnPlateau */
    int64_t cooldown_counter; /* ReduceLROnPlateau */
};

/* The scheduler the config's [training] lr_scheduler_cls and [lr_scheduler_kwargs] describe,
 * at epoch 0. */
void tsrnn_lr_scheduler_init(struct tsrnn_lr_scheduler *sched, const struct tsrnn_config *cfg);

/* Steps after an epoch: returns the learning rate for the next epoch, from the current `lr`
 * and (ReduceLROnPlateau) the epoch's monitored metric, a float32 value as Lightning logs it. */
double tsrnn_lr_scheduler_step(struct tsrnn_lr_scheduler *sched, double lr, double metric);

#endif
