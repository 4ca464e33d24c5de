/* The compute backend table (DESIGN.md §9), private to src/compute/: what a device must do
 * for tsrnn to train on it. A backend is a context plus this table of operations, registered
 * in compute.c, chosen once at start-up (tsrnn_compute_create). Only src/compute/ calls a
 * table: compute.c's door checks every argument once, for every backend alike, and step.c
 * composes the training step and the forward from the per-layer operations where a backend
 * has no whole operation of its own (include/tsrnn/compute.h).
 *
 * What a backend provides is data: its `caps` (struct tsrnn_compute_caps), which compute.c
 * holds the table to when a context is created (layer_ops: every per-layer operation is
 * there; l1_loss: the three L1 operations; huber_loss: the three Huber operations;
 * likelihoods: the three likelihood operations; each optimizer rule its update; no layer_ops: a
 * forward and a step of its own).
 *
 * Contracts every backend keeps:
 * - Every operation returns a status; a device error is reported where it happens, naming
 *   the operation and the device. The door has checked the arguments: an operation sees
 *   batches within its workspace's capacity, existing layers, supported losses.
 * - Pointers to parameters, gradients, moments and buffers are device pointers
 *   (include/tsrnn/compute.h). The typed views (struct tsrnn_layer_params) point into the flat
 *   buffers in PyTorch's state_dict order, so a layer's weights are W_ih (G*H, I), W_hh
 *   (G*H, H), b_ih (G*H), b_hh (G*H), gates in PyTorch's order.
 * - Activations live in the backend's workspace (`void *ws` below: its own type), laid out
 *   for batches up to B and windows up to T when it is created: no allocation inside a
 *   training step. The layer ops run the whole time loop inside the op, t = 0..T-1 forward
 *   and T-1..0 backward, so that a GPU backend can hand the recurrence to a library (cuDNN)
 *   or a persistent kernel.
 * - Backward operations accumulate into the gradients they are given and say so; everything
 *   else overwrites.
 * - Numbers: the CPU backend is the specification (tested against PyTorch); a fast path
 *   equals it within float rounding, and where it claims "bit-identical" a test holds it to
 *   that.
 */
#ifndef TSRNN_COMPUTE_BACKEND_H
#define TSRNN_COMPUTE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/compute.h"
#include "tsrnn/nn.h"

/* What the step hands a backend's own step: the state it updates and the workspace's
 * gradient buffer, (table.total_count + 2) floats: the gradients, then the loss and the stop
 * flag, which one reduction carries with them (TSRNN_STEP_LOSS_SLOT, TSRNN_STEP_STOP_SLOT). */
struct tsrnn_step_buffers {
    struct tsrnn_step_state state;
    const struct tsrnn_likelihood *likelihood; /* the workspace's (TSRNN_LOSS_LIKELIHOOD) */
    float *grads;
    const struct tsrnn_model_dims *dims;
    const struct tsrnn_param_table *table;
    struct tsrnn_model_params p, g; /* views into state.params and grads */
};
#define TSRNN_STEP_LOSS_SLOT(table) ((table)->total_count)
#define TSRNN_STEP_STOP_SLOT(table) ((table)->total_count + 1)

/* A step's results where the backend has them on the host when the step returns
 * (caps.immediate_results): the door records them. */
struct tsrnn_step_record {
    float loss;
    bool finite, stop;
};

struct tsrnn_compute_backend {
    enum tsrnn_compute_kind kind;
    const char *name; /* "cpu", "cuda", "pjrt" */
    struct tsrnn_compute_caps caps;

    /* Whether this machine can run the backend; on false fills `why`. */
    bool (*probe)(char *why, size_t why_nbytes);
    enum tsrnn_status (*create)(struct tsrnn_compute **ctx,
                                const struct tsrnn_compute_options *options);
    void (*destroy)(struct tsrnn_compute *ctx);
    void *(*stream)(const struct tsrnn_compute *ctx); /* optional */
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
    /* A workspace for batches of up to batch_capacity windows of up to step_capacity steps
     * whose step results (a backend with its own step) are read at least every
     * results_capacity steps. TSRNN_ERR_USAGE when that cannot fit (the message names the
     * config keys). */
    enum tsrnn_status (*workspace_create)(struct tsrnn_compute *ctx, void **ws,
                                          const struct tsrnn_model_dims *dims,
                                          size_t batch_capacity, size_t step_capacity,
                                          size_t results_capacity);
    void (*workspace_destroy)(struct tsrnn_compute *ctx, void *ws);

    /* Takes one batch from the host: x (B, T, C) and, unless NULL, the targets y (B, T, O),
     * batch-first as the dataset gathers them. The following ops work on B and T. */
    enum tsrnn_status (*batch_load)(struct tsrnn_compute *ctx, void *ws, const float *x,
                                    const float *y, size_t batch_count, size_t step_count);

    /* --- whole operations (optional; the door composes the per-layer ops where NULL) ---- */
    /* The layer stack and the head over the batch loaded, no dropout, from zero or saved
     * states; leaves the outputs and final states as the layer ops would. */
    enum tsrnn_status (*forward)(struct tsrnn_compute *ctx, void *ws, const float *params,
                                 enum tsrnn_initial_state initial_state, bool weights_unchanged);
    /* The whole training step (compute.h's contract), batch included. A backend with
     * caps.immediate_results fills *now; the others keep their results for step_results. */
    enum tsrnn_status (*step)(struct tsrnn_compute *ctx, void *ws,
                              const struct tsrnn_step_buffers *buffers,
                              const struct tsrnn_step_args *args, struct tsrnn_step_record *now);
    /* Waits for the steps since the last call and reads their results (compute.h). */
    enum tsrnn_status (*step_results)(struct tsrnn_compute *ctx, void *ws, float *losses,
                                      size_t losses_capacity, struct tsrnn_step_results *results);

    /* --- one layer, the time loop inside (caps.layer_ops) ------------------------------ */
    /* Layer l's forward over the batch: its input is the batch (l = 0) or layer l-1's
     * outputs, multiplied first by input_mask (T, B, I) when it is not NULL (inverted
     * dropout, drawn by the model on the host: 0 or 1/(1-p); host memory). weights_unchanged:
     * the parameters are those of the previous forward (a forecast's steps), so layouts
     * derived from them may be reused. */
    enum tsrnn_status (*layer_forward)(struct tsrnn_compute *ctx, void *ws, size_t l,
                                       const struct tsrnn_layer_params *p,
                                       enum tsrnn_initial_state initial_state,
                                       const float *input_mask, bool weights_unchanged);
    /* Layer l's backward of the last forward, given dLoss/d(its outputs) from the op above
     * (head_backward for the top layer, layer_backward of l+1 below it): ACCUMULATES g, and
     * for l > 0 leaves dLoss/d(layer l-1's outputs) for the next call (through the dropout
     * mask of the forward). */
    enum tsrnn_status (*layer_backward)(struct tsrnn_compute *ctx, void *ws, size_t l,
                                        const struct tsrnn_layer_params *p,
                                        struct tsrnn_layer_params *g);
    /* Keeps every layer's final state h[T] (and c[T]) of the last forward for a forward with
     * TSRNN_STATE_SAVED. */
    enum tsrnn_status (*state_save)(struct tsrnn_compute *ctx, void *ws);

    /* --- the head V and the loss ------------------------------------------------------- */
    /* out (T, B, O) = top layer's h[1..T] v_w^T + v_b. */
    enum tsrnn_status (*head_forward)(struct tsrnn_compute *ctx, void *ws, const float *v_w,
                                      const float *v_b);
    /* From dLoss/d(out) (mse_backward): ACCUMULATES g_v_w (O, H), g_v_b (O); overwrites
     * dLoss/d(top layer's outputs) for layer_backward. */
    enum tsrnn_status (*head_backward)(struct tsrnn_compute *ctx, void *ws, const float *v_w,
                                       float *g_v_w, float *g_v_b);
    /* nn.MSELoss() of out against the batch's y into *loss (a device float): the mean over
     * B*T*O, summed in double, rounded once. */
    enum tsrnn_status (*mse_forward)(struct tsrnn_compute *ctx, void *ws, float *loss);
    /* dLoss/d(out) = (out - y) * (2 / (B*T*O)), overwritten. */
    enum tsrnn_status (*mse_backward)(struct tsrnn_compute *ctx, void *ws);
    /* Each window's sum of squared errors, in double, into the host array se (B): the sum
     * over t then o of (out - y)^2, each square rounded to float first. (Also without
     * layer_ops: validation reads it after the backend's forward.) */
    enum tsrnn_status (*window_squared_errors)(struct tsrnn_compute *ctx, void *ws, double *se);
    /* nn.L1Loss() (caps.l1_loss): l1_forward: the mean of |out - y| over B*T*O, summed in
     * double, rounded once; l1_backward: dLoss/d(out) = sign(out - y) * (1 / (B*T*O))
     * (sign(0) = 0, as torch.sgn), overwritten; window_abs_errors: each window's sum of
     * |out - y| in double (as window_squared_errors). */
    enum tsrnn_status (*l1_forward)(struct tsrnn_compute *ctx, void *ws, float *loss);
    enum tsrnn_status (*l1_backward)(struct tsrnn_compute *ctx, void *ws);
    enum tsrnn_status (*window_abs_errors)(struct tsrnn_compute *ctx, void *ws, double *ae);
    /* Darts' likelihoods (caps.likelihoods; include/tsrnn/likelihood.h), over out (T, B, O*P)
     * and y (T, B, O): likelihood_forward: the mean over B*T*O of tsrnn_likelihood_term(),
     * summed in double, rounded once, into *loss (a device float); likelihood_backward:
     * dLoss/d(out) = each term's gradient / (B*T*O), overwritten; window_likelihood_losses:
     * each window's sum of its terms in double (as window_squared_errors). */
    enum tsrnn_status (*likelihood_forward)(struct tsrnn_compute *ctx, void *ws,
                                            const struct tsrnn_likelihood *lik, float *loss);
    enum tsrnn_status (*likelihood_backward)(struct tsrnn_compute *ctx, void *ws,
                                             const struct tsrnn_likelihood *lik);
    enum tsrnn_status (*window_likelihood_losses)(struct tsrnn_compute *ctx, void *ws,
                                                  const struct tsrnn_likelihood *lik, double *sums);
    /* nn.HuberLoss(delta) and nn.SmoothL1Loss(beta) (caps.huber_loss), `loss` saying which and
     * `delta` its argument (> 0; the door runs SmoothL1Loss with beta 0 as L1Loss), each
     * element's loss as ATen's huber / smooth_l1 kernels: z = |out - y|, z < delta ? 0.5 z z
     * : delta (z - 0.5 delta), and z < beta ? 0.5 z z / beta : z - 0.5 beta.
     * huber_forward: their mean over B*T*O, summed in double, rounded once; huber_backward:
     * dLoss/d(out) = norm * (|x| >= delta ? sign(x) delta : x), and norm * (|x| >= beta ?
     * sign(x) : x / beta), x = out - y, norm = float(1 / (B*T*O)), overwritten;
     * window_huber_errors: each window's sum of the elements' losses in double (as
     * window_squared_errors). */
    enum tsrnn_status (*huber_forward)(struct tsrnn_compute *ctx, void *ws,
                                       enum tsrnn_loss_kind loss, float delta, float *loss_out);
    enum tsrnn_status (*huber_backward)(struct tsrnn_compute *ctx, void *ws,
                                        enum tsrnn_loss_kind loss, float delta);
    enum tsrnn_status (*window_huber_errors)(struct tsrnn_compute *ctx, void *ws,
                                             enum tsrnn_loss_kind loss, float delta, double *sums);
    /* Copies the head's outputs of step t, (B, O*P), to the host. (Also without layer_ops.) */
    enum tsrnn_status (*output_download)(struct tsrnn_compute *ctx, void *ws, size_t t, float *out);

    /* --- the optimizer step (caps.layer_ops) ------------------------------------------- */
    /* buf (count) *= scale (skipped for scale 1), and *finite = no element is NaN or inf
     * (after scaling); *finite is a host bool. */
    enum tsrnn_status (*scale_check)(struct tsrnn_compute *ctx, float *buf, size_t count,
                                     float scale, bool *finite);
    /* torch.optim.Adam's elementwise update over count parameters (src/optim/adam.c). */
    enum tsrnn_status (*adam_update)(struct tsrnn_compute *ctx, float *params, float *exp_avg,
                                     float *exp_avg_sq, const float *grads, size_t count,
                                     const struct tsrnn_adam_scalars *s);
    /* The other optimizers' elementwise updates (include/tsrnn/optim.h has their arithmetic,
     * PyTorch's single-tensor code paths operation by operation), each declared by its caps:
     * l2_decay (caps.l2_weight_decay): grads = grads + weight_decay * params;
     * nesterov_update (caps.nesterov): SGD with Nesterov momentum;
     * rmsprop_update (caps.rmsprop): momentum_buffer is read only with s->momentum > 0,
     *   grad_avg only when s->centered;
     * adagrad_update (caps.adagrad). */
    enum tsrnn_status (*l2_decay)(struct tsrnn_compute *ctx, float *grads, const float *params,
                                  size_t count, float weight_decay);
    enum tsrnn_status (*nesterov_update)(struct tsrnn_compute *ctx, float *params,
                                         float *momentum_buffer, const float *grads, size_t count,
                                         const struct tsrnn_nesterov_scalars *s);
    enum tsrnn_status (*rmsprop_update)(struct tsrnn_compute *ctx, float *params, float *square_avg,
                                        float *momentum_buffer, float *grad_avg, const float *grads,
                                        size_t count, const struct tsrnn_rmsprop_scalars *s);
    enum tsrnn_status (*adagrad_update)(struct tsrnn_compute *ctx, float *params, float *state_sum,
                                        const float *grads, size_t count,
                                        const struct tsrnn_adagrad_scalars *s);
    /* torch.nn.utils.clip_grad_norm_(parameters, max_norm) as Lightning's gradient_clip_val
     * calls it, over the table's tensors of grads (caps.clipping): each tensor's 2-norm
     * (float32), the 2-norm of those (float32), clip_coef = (total + 1e-6)^-1 * max_norm
     * (Tensor.__rtruediv__ is reciprocal() * other), clamped to 1, multiplying every
     * gradient (not the loss and stop slots). */
    enum tsrnn_status (*clip_grad_norm)(struct tsrnn_compute *ctx, float *grads,
                                        const struct tsrnn_param_table *table, float max_norm);
};

/* The table of a context's backend: every context begins with it (as its first member). */
struct tsrnn_compute {
    const struct tsrnn_compute_backend *backend;
};

/* The backends a build may register (compute.c's list; cuda/ where the toolkit was found). */
extern const struct tsrnn_compute_backend tsrnn_compute_backend_cpu;
extern const struct tsrnn_compute_backend tsrnn_compute_backend_cuda;
extern const struct tsrnn_compute_backend tsrnn_compute_backend_pjrt;

/* step.c: the step and the forward composed from the per-layer operations, for a backend
 * with layer_ops and without whole operations of its own. */
enum tsrnn_status tsrnn_compute_composed_step(struct tsrnn_compute *ctx, void *ws,
                                              const struct tsrnn_step_buffers *buffers,
                                              const struct tsrnn_step_args *args,
                                              struct tsrnn_step_record *now);
/* The optimizer's update of a step on `state` from grads (count parameters): AdamW's decay,
 * the L2 penalty into grads, the rule's operation (compute.h struct tsrnn_step_update). */
enum tsrnn_status tsrnn_compute_composed_update(struct tsrnn_compute *ctx,
                                                const struct tsrnn_step_state *state, float *grads,
                                                size_t count,
                                                const struct tsrnn_step_update *update);
enum tsrnn_status tsrnn_compute_composed_forward(struct tsrnn_compute *ctx, void *ws,
                                                 const struct tsrnn_model_params *p,
                                                 size_t layer_count,
                                                 enum tsrnn_initial_state initial_state,
                                                 const float *dropout_masks, size_t mask_count,
                                                 bool weights_unchanged);

#endif
