/* The compute backend table (DESIGN.md §9), private to libtsrnn: what a device must do for
 * tsrnn to train on it. A backend is a context plus this table of operations, registered in
 * compute.c, chosen once at start-up (tsrnn_compute_create); the model (src/model/model.c)
 * and Adam (src/optim/adam.c) drive it and never see the device's layout.
 *
 * Contracts every backend keeps:
 * - Every operation returns a status; a device error is reported where it happens, naming
 *   the operation and the device.
 * - Pointers to parameters, gradients, moments and buffers are device pointers
 *   (include/tsrnn/compute.h). The typed views (struct tsrnn_layer_params) point into the flat
 *   buffers in PyTorch's state_dict order, so a layer's weights are W_ih (G*H, I), W_hh
 *   (G*H, H), b_ih (G*H), b_hh (G*H), gates in PyTorch's order.
 * - Activations live in a workspace the backend lays out for batches up to B and windows up
 *   to T (created once: no allocation inside a training step). The layer ops run the whole
 *   time loop inside the op, t = 0..T-1 forward and T-1..0 backward, so that a GPU backend
 *   can hand the recurrence to a library (cuDNN) or a persistent kernel.
 * - Backward operations accumulate into the gradients they are given (the model zeroes them
 *   first) and say so; everything else overwrites.
 * - Numbers: the CPU backend is the specification (tested against PyTorch); a fast path
 *   equals it within float rounding, and where it claims "bit-identical" a test holds it to
 *   that.
 */
#ifndef TSRNN_COMPUTE_BACKEND_H
#define TSRNN_COMPUTE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/compute.h"
#include "tsrnn/model.h"

/* The activations of one model on one device; the backend's own layout. */
struct tsrnn_workspace;

/* How a layer's recurrence starts (tsrnn_compute_backend.layer_forward). */
enum tsrnn_initial_state {
    TSRNN_STATE_ZERO,  /* h[0] = 0 (and c[0] = 0): training, validation, a forecast's context */
    TSRNN_STATE_SAVED, /* the state state_save() kept: a forecast's next step */
};

/* Adam's scalars for one step, as float32 operands the way PyTorch passes Python floats
 * (include/tsrnn/optim.h has the update). */
struct tsrnn_adam_scalars {
    float beta1, one_minus_beta1;
    float beta2, one_minus_beta2;
    float bias_correction2_sqrt;
    float eps;
    float neg_step_size; /* -lr / bias_correction1 */
};

struct tsrnn_compute_backend {
    enum tsrnn_compute_kind kind;
    const char *name; /* "cpu", "cuda" */

    /* Whether this machine can run the backend; on false fills `why`. */
    bool (*probe)(char *why, size_t why_nbytes);
    enum tsrnn_status (*create)(struct tsrnn_compute **ctx,
                                const struct tsrnn_compute_options *options);
    void (*destroy)(struct tsrnn_compute *ctx);
    bool host_memory; /* device pointers are host pointers */
    void *(*stream)(const struct tsrnn_compute *ctx);
    /* TPU cores in use (optional: NULL = 0) */
    size_t (*tpu_cores)(const struct tsrnn_compute *ctx);
    /* GPU name and memory in use / in all (optional: NULL = not a GPU; false = unknown) */
    bool (*device_memory)(const struct tsrnn_compute *ctx, char *name, size_t name_nbytes,
                          size_t *used_nbytes, size_t *total_nbytes);
    /* Optional: one line on what the context computes with (tsrnn_compute_describe). */
    size_t (*describe)(const struct tsrnn_compute *ctx, char *dst, size_t dst_nbytes);

    /* --- memory ------------------------------------------------------------------------ */
    enum tsrnn_status (*alloc)(struct tsrnn_compute *ctx, void **buf, size_t nbytes);
    void (*free)(struct tsrnn_compute *ctx, void *buf);
    enum tsrnn_status (*upload)(struct tsrnn_compute *ctx, void *dst, const void *src,
                                size_t nbytes);
    enum tsrnn_status (*download)(struct tsrnn_compute *ctx, void *dst, const void *src,
                                  size_t nbytes);
    enum tsrnn_status (*zero)(struct tsrnn_compute *ctx, void *buf, size_t nbytes);
    enum tsrnn_status (*synchronize)(struct tsrnn_compute *ctx);

    /* --- the model's activations ------------------------------------------------------- */
    /* A workspace for batches of up to batch_capacity windows of up to step_capacity steps.
     * TSRNN_ERR_USAGE when that cannot fit (the message names the config keys). */
    enum tsrnn_status (*workspace_create)(struct tsrnn_compute *ctx, struct tsrnn_workspace **ws,
                                          const struct tsrnn_model_dims *dims,
                                          size_t batch_capacity, size_t step_capacity);
    void (*workspace_destroy)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);

    /* Takes one batch from the host: x (B, T, C) and, unless NULL, the targets y (B, T, O),
     * batch-first as the dataset gathers them. The following ops work on B and T. */
    enum tsrnn_status (*batch_load)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                    const float *x, const float *y, size_t batch_count,
                                    size_t step_count);

    /* --- one layer, the time loop inside ---------------------------------------------- */
    /* Layer l's forward over the batch: its input is the batch (l = 0) or layer l-1's
     * outputs, multiplied first by input_mask (T, B, I) when it is not NULL (inverted
     * dropout, drawn by the model on the host: 0 or 1/(1-p)). weights_unchanged: the
     * parameters are those of the previous forward (a forecast's steps), so layouts derived
     * from them may be reused. */
    enum tsrnn_status (*layer_forward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                       size_t l, const struct tsrnn_layer_params *p,
                                       enum tsrnn_initial_state initial_state,
                                       const float *input_mask, bool weights_unchanged);
    /* Layer l's backward of the last forward, given dLoss/d(its outputs) from the op above
     * (head_backward for the top layer, layer_backward of l+1 below it): ACCUMULATES g, and
     * for l > 0 leaves dLoss/d(layer l-1's outputs) for the next call (through the dropout
     * mask of the forward). */
    enum tsrnn_status (*layer_backward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                        size_t l, const struct tsrnn_layer_params *p,
                                        struct tsrnn_layer_params *g);
    /* Keeps every layer's final state h[T] (and c[T]) of the last forward for a forward with
     * TSRNN_STATE_SAVED. */
    enum tsrnn_status (*state_save)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);

    /* --- the head V and the loss ------------------------------------------------------- */
    /* out (T, B, O) = top layer's h[1..T] v_w^T + v_b. */
    enum tsrnn_status (*head_forward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                      const float *v_w, const float *v_b);
    /* From dLoss/d(out) (mse_backward): ACCUMULATES g_v_w (O, H), g_v_b (O); overwrites
     * dLoss/d(top layer's outputs) for layer_backward. */
    enum tsrnn_status (*head_backward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                       const float *v_w, float *g_v_w, float *g_v_b);
    /* nn.MSELoss() of out against the batch's y into *loss (a device float): the mean over
     * B*T*O, summed in double, rounded once. */
    enum tsrnn_status (*mse_forward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                     float *loss);
    /* dLoss/d(out) = (out - y) * (2 / (B*T*O)), overwritten. */
    enum tsrnn_status (*mse_backward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);
    /* Each window's sum of squared errors, in double, into the host array se (B): the sum
     * over t then o of (out - y)^2, each square rounded to float first. */
    enum tsrnn_status (*window_squared_errors)(struct tsrnn_compute *ctx,
                                               struct tsrnn_workspace *ws, double *se);
    /* nn.L1Loss(), optional (NULL: the backend has none; training with it is refused):
     * l1_forward: the mean of |out - y| over B*T*O, summed in double, rounded once;
     * l1_backward: dLoss/d(out) = sign(out - y) * (1 / (B*T*O)) (sign(0) = 0, as
     * torch.sgn), overwritten; window_abs_errors: each window's sum of |out - y| in double
     * (as window_squared_errors). */
    enum tsrnn_status (*l1_forward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                    float *loss);
    enum tsrnn_status (*l1_backward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws);
    enum tsrnn_status (*window_abs_errors)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                           double *ae);
    /* Copies the outputs of step t, (B, O), to the host. */
    enum tsrnn_status (*output_download)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                         size_t t, float *out);

    /* --- the optimizer step ------------------------------------------------------------ */
    /* buf (count) *= scale (skipped for scale 1), and *finite = no element is NaN or inf
     * (after scaling); *finite is a host bool. */
    enum tsrnn_status (*scale_check)(struct tsrnn_compute *ctx, float *buf, size_t count,
                                     float scale, bool *finite);
    /* torch.optim.Adam's elementwise update over count parameters (src/optim/adam.c). */
    enum tsrnn_status (*adam_update)(struct tsrnn_compute *ctx, float *params, float *exp_avg,
                                     float *exp_avg_sq, const float *grads, size_t count,
                                     const struct tsrnn_adam_scalars *s);

    /* --- whole programs (optional; NULL where the backend runs the ops above) ----------- */
    /* A backend that compiles the model into programs (pjrt: XLA runs a whole program well
     * and a chain of small ones badly) provides these two instead of the per-layer ops,
     * which then answer TSRNN_ERR_USAGE (docs/architecture.md "The pjrt backend").
     * model_forward: the layer stack and the head over the batch loaded, no dropout, from
     * zero or saved states; leaves the outputs and final states as the layer ops would.
     * train_step: forward, MSE, backward and Adam on the batch loaded, in place on params,
     * exp_avg and exp_avg_sq (whole flat buffers); masks (L-1, T, B, H) the dropout draws
     * (NULL without dropout). *loss the batch's MSE (a host float), *finite whether every
     * gradient was finite; when not, the parameters and moments are left unchanged. */
    enum tsrnn_status (*model_forward)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                       const float *params, enum tsrnn_initial_state initial_state);
    enum tsrnn_status (*train_step)(struct tsrnn_compute *ctx, struct tsrnn_workspace *ws,
                                    float *params, float *exp_avg, float *exp_avg_sq,
                                    const float *masks, const struct tsrnn_adam_scalars *s,
                                    float *loss, bool *finite);
};

/* The table of a context's backend: every context begins with it (as its first member). */
struct tsrnn_compute {
    const struct tsrnn_compute_backend *backend;
};

/* The backends a build may register (compute.c's list; cuda/ where the toolkit was found). */
extern const struct tsrnn_compute_backend tsrnn_compute_backend_cpu;
extern const struct tsrnn_compute_backend tsrnn_compute_backend_cuda;
extern const struct tsrnn_compute_backend tsrnn_compute_backend_pjrt;

struct tsrnn_adam;
/* Counts one more Adam step and gives its scalars (src/optim/adam.c): for a backend's
 * train_step, which runs the update inside its program. */
void tsrnn_adam_next_scalars(struct tsrnn_adam *adam, struct tsrnn_adam_scalars *s);

#endif
