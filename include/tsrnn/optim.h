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
#ifndef TSRNN_OPTIM_H
#define TSRNN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/compute.h"
#include "tsrnn/core.h"

struct tsrnn_adam {
    double lr, beta1, beta2, eps;
    uint64_t step;                 /* updates done so far */
    size_t count;                  /* parameters */
    struct tsrnn_compute *compute; /* where the moments live; not owned */
    float *exp_avg;                /* (count) device: first moment, PyTorch's "exp_avg" */
    float *exp_avg_sq;             /* (count) device: second moment, "exp_avg_sq" */
};

/* Zero moments for `count` parameters on `compute`; betas (0.9, 0.999), eps 1e-8. */
enum tsrnn_status tsrnn_adam_init(struct tsrnn_adam *adam, struct tsrnn_compute *compute,
                                  size_t count, double lr);

/* Accepts a zeroed struct. */
void tsrnn_adam_finish(struct tsrnn_adam *adam);

/* One update of params (count) from grads (count), both device memory of adam->compute. */
enum tsrnn_status tsrnn_adam_step(struct tsrnn_adam *adam, float *params, const float *grads);

#endif
