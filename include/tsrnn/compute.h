/* tsrnn compute: the device a model trains on, behind one backend table (DESIGN.md §9).
 *
 *     cpu    this process's cores: the reference loops, packed AVX2 products, OpenBLAS
 *     cuda   one NVIDIA GPU: cuDNN's RNN API, cuBLAS, own kernels (src/compute/cuda/)
 *     pjrt   any XLA device through a PJRT plugin (libtpu.so for TPUs, XLA's CPU plugin):
 *            the training step compiled from StableHLO as one program
 *
 * A compute context owns its device's memory: the model's parameters, gradients, Adam's
 * moments and activations live there, and the rest of tsrnn reaches host copies only through
 * tsrnn_compute_upload() / tsrnn_compute_download() (called by model/ and optim/'s import and
 * export). A pointer into device memory ("device pointer" below) may be offset and passed
 * around, but only the backend dereferences it; on the CPU backend it is an ordinary host
 * pointer.
 *
 * This header is the one door to the backends (DESIGN.md §9, docs/architecture.md "The
 * compute door"): src/compute/ alone calls a backend's table (src/compute/backend.h). A
 * backend declares what it provides as data (struct tsrnn_compute_caps, checked once when a
 * context is created), and every argument is checked here, once, for every backend alike.
 * The training step is one operation, tsrnn_compute_step(): forward, loss, backward, the
 * gradient reduction (a callback from comm/), scale by 1/W, the finite check, clipping and
 * the optimizer's update; a backend runs it as its own program (pjrt), as a captured graph
 * (cuda), or the door composes it from the per-layer operations (cpu). Its results (the loss,
 * whether it diverged or the ranks agreed to stop) stay on the device until
 * tsrnn_compute_step_results() reads them.
 *
 * One thread drives a context; the backend may use more internally (the CPU backend's
 * num_threads, a GPU's stream).
 */
#ifndef TSRNN_COMPUTE_H
#define TSRNN_COMPUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/core.h"
#include "tsrnn/nn.h"

enum tsrnn_compute_kind {
    TSRNN_COMPUTE_CPU,
    TSRNN_COMPUTE_CUDA,
    TSRNN_COMPUTE_PJRT,
};

struct tsrnn_compute_options {
    enum tsrnn_compute_kind kind;
    int thread_count; /* cpu: threads for the recurrence and large products (>= 1) */
    int device_index; /* cuda: which visible GPU (0 under tsrnn-launch: it sets
                         CUDA_VISIBLE_DEVICES to the worker's one) */
    /* pjrt: the plugin (NULL: $TSRNN_PJRT_PLUGIN, $TPU_LIBRARY_PATH, libtpu.so), the platform
     * it must be (NULL: any; "tpu" for accelerator = tpu), replicas of the training step
     * inside this process (one per device; 0 = 1, -1 = every device), and the CPU plugin's
     * device count (0: its default) */
    const char *plugin_path;
    const char *platform;
    int replica_count;
    int cpu_device_count;
};

struct tsrnn_compute;

/* The backend's name as the config and messages spell it: "cpu", "cuda", "pjrt". */
const char *tsrnn_compute_kind_name(enum tsrnn_compute_kind kind);

/* Whether this build has the backend, without asking the machine (no CUDA call: the launcher
 * uses it before it forks). */
bool tsrnn_compute_compiled(enum tsrnn_compute_kind kind);

/* Whether this build has the backend and this machine can run it. On false, `why` (when not
 * NULL) gets a sentence a user can act on ("this tsrnn was built without CUDA ..."). */
bool tsrnn_compute_available(enum tsrnn_compute_kind kind, char *why, size_t why_nbytes);

/* Starts a context. TSRNN_ERR_USAGE for a backend this build or machine lacks (the message
 * says why), TSRNN_ERR_NOMEM, or the device's own failure. Sets *compute to NULL on failure. */
enum tsrnn_status tsrnn_compute_create(struct tsrnn_compute **compute,
                                       const struct tsrnn_compute_options *options);

/* Frees the context; accepts NULL. Every buffer must have been freed first. */
void tsrnn_compute_destroy(struct tsrnn_compute *compute);

/* The backend a context runs on (the banner's "GPU used"). */
enum tsrnn_compute_kind tsrnn_compute_kind(const struct tsrnn_compute *compute);

/* Whether the context's device pointers are host memory (the CPU backend): a comm backend
 * can then hand them to the network as they are. */
bool tsrnn_compute_host_memory(const struct tsrnn_compute *compute);

/* One line on what the context computes with, for the banner (CPU: "CPU kernels AVX2 (...),
 * 1 thread; BLAS OpenBLAS 0.3.21, core Haswell (OPENBLAS_CORETYPE=Haswell)"; with AVX-512
 * kernels "...; BLAS OpenBLAS (not loaded: no product goes to it with AVX-512 kernels)").
 * Returns what snprintf does. */
size_t tsrnn_compute_describe(const struct tsrnn_compute *compute, char *dst, size_t dst_nbytes);

/* The CPU backend's BLAS on this machine. OpenBLAS releases older than the CPU run generic
 * SSE kernels on it (Debian 12's 0.3.21 on recent Xeons) unless OPENBLAS_CORETYPE names a
 * core, which OpenBLAS reads once, when the process loads it (these functions load it, below
 * AVX-512 kernels; nothing else does until a product goes to it):
 *   tsrnn_compute_cpu_blas_coretype: the OPENBLAS_CORETYPE that gives OpenBLAS this CPU's
 *     vector level ("SkylakeX", "Haswell"), or NULL when it has it already, when there is no
 *     BLAS, or when tsrnn's kernels are AVX-512 (then no product goes to BLAS, and results do
 *     not depend on its core); nothing in tsrnn sets the variable (a rank must compute the
 *     same under tsrnn-launch and mpirun);
 *   tsrnn_compute_cpu_blas_warning: a sentence saying so, with what it costs and what to
 *     do; or that OpenBLAS cannot be loaded (which library, what to install; tsrnn's loops
 *     take its products); or NULL. */
const char *tsrnn_compute_cpu_blas_coretype(void);
const char *tsrnn_compute_cpu_blas_warning(void);

/* The queue a comm backend orders its work on (a cudaStream_t), or NULL (CPU). */
void *tsrnn_compute_stream(const struct tsrnn_compute *compute);

/* The TPU cores the context trains on (pjrt on a "tpu" platform: its replicas), else 0;
 * for Lightning's "TPU available: True, using: N TPU cores". */
size_t tsrnn_compute_tpu_cores(const struct tsrnn_compute *compute);

/* A GPU context's device for the end-of-training summary: its name, and the memory in use
 * and in all, in bytes, as the driver counts them for the whole device (this process's
 * context, buffers and workspaces, and any other process's on the same GPU); read at the end
 * of training, when every buffer of the run is still allocated. false: not a GPU (cpu,
 * pjrt), or the driver could not say. */
bool tsrnn_compute_device_memory(const struct tsrnn_compute *compute, char *name,
                                 size_t name_nbytes, size_t *used_nbytes, size_t *total_nbytes);

/* Device memory: nbytes (> 0) uninitialised; free accepts NULL. */
enum tsrnn_status tsrnn_compute_alloc(struct tsrnn_compute *compute, void **buf, size_t nbytes);
void tsrnn_compute_free(struct tsrnn_compute *compute, void *buf);

/* Copies nbytes host -> device (upload) or device -> host (download); both complete before
 * they return. zero sets nbytes of device memory to 0. */
enum tsrnn_status tsrnn_compute_upload(struct tsrnn_compute *compute, void *dst, const void *src,
                                       size_t nbytes);
enum tsrnn_status tsrnn_compute_download(struct tsrnn_compute *compute, void *dst, const void *src,
                                         size_t nbytes);
enum tsrnn_status tsrnn_compute_zero(struct tsrnn_compute *compute, void *buf, size_t nbytes);

/* Waits for everything queued on the context; reports a device error that happened since. */
enum tsrnn_status tsrnn_compute_synchronize(struct tsrnn_compute *compute);

/* --- what a backend provides ----------------------------------------------------------------- */

struct tsrnn_compute_caps {
    bool host_memory;       /* device pointers are host pointers (a comm backend may send them) */
    bool layer_ops;         /* the per-layer operations below: the door composes forward and step
                               from them where the backend has no whole operation */
    bool l1_loss;           /* nn.L1Loss beside nn.MSELoss */
    bool huber_loss;        /* nn.HuberLoss and nn.SmoothL1Loss */
    bool optimizers;        /* AdamW and SGD beside Adam (a decay and SGD's scalars) */
    bool l2_weight_decay;   /* Adam's, SGD's, RMSprop's and Adagrad's weight_decay (l2_decay) */
    bool nesterov;          /* SGD with nesterov (nesterov_update) */
    bool rmsprop;           /* RMSprop (rmsprop_update) */
    bool adagrad;           /* Adagrad (adagrad_update) */
    bool clipping;          /* gradient_clip_val */
    bool reduction;         /* the step takes a gradient reduction: data-parallel processes */
    bool immediate_results; /* a step's results are on the host when it returns: reading them
                               costs nothing, so the trainer reads every step */
    bool step_graphs;       /* the step is captured as a graph per batch shape and replayed */
    bool likelihoods;       /* Darts' likelihoods: a head of P outputs per target and their
                               losses (include/tsrnn/likelihood.h) */
};

/* The context's capabilities (its backend's table, checked when the context was created). */
const struct tsrnn_compute_caps *tsrnn_compute_caps(const struct tsrnn_compute *compute);

/* The optimizer's elementwise rule for a step (src/optim/adam.c chooses it from
 * [training] optimizer_cls; include/tsrnn/optim.h has the arithmetic). Each is an operation
 * of the backend, declared by its caps; Adam's is every backend's. */
enum tsrnn_update_rule {
    TSRNN_UPDATE_ADAM,     /* adam_update: Adam, AdamW (after its decay), and SGD without
                              Nesterov (Adam's operation with SGD's scalars) */
    TSRNN_UPDATE_NESTEROV, /* nesterov_update: SGD with nesterov (caps.nesterov) */
    TSRNN_UPDATE_RMSPROP,  /* rmsprop_update (caps.rmsprop) */
    TSRNN_UPDATE_ADAGRAD,  /* adagrad_update (caps.adagrad) */
};

/* Whether training with these settings can run on the context, before anything is allocated:
 * TSRNN_ERR_USAGE naming the first setting the backend lacks ("[training] loss_fn = L1Loss:
 * the pjrt backend has no L1Loss; accepted: MSELoss, or [trainer] accelerator = cpu") with
 * the config's origin of it. */
struct tsrnn_compute_needs {
    enum tsrnn_loss_kind loss; /* TSRNN_LOSS_LIKELIHOOD: `likelihood` names it */
    const char *likelihood;    /* "gaussian", ...: [model] likelihood */
    bool other_optimizer;      /* any but Adam (caps.optimizers: AdamW and SGD) */
    enum tsrnn_update_rule rule;
    bool l2_weight_decay; /* a weight_decay added to the gradient (not AdamW's) */
    bool abs_errors;      /* validation's absolute errors (EarlyStopping on MeanAbsoluteError) */
    bool clipping;
    int world_size; /* processes: > 1 needs a step with a reduction */
    /* the config keys' origins (tsrnn_config_origin) for the message; NULL: "" */
    const char *loss_origin, *optimizer_origin, *clip_origin, *likelihood_origin;
    const char *weight_decay_origin, *nesterov_origin, *monitor_origin;
};
enum tsrnn_status tsrnn_compute_check_needs(const struct tsrnn_compute *compute,
                                            const struct tsrnn_compute_needs *needs);

/* --- the model's workspace ------------------------------------------------------------------- */

/* The activations of one model on one device, the gradients (with two more floats: the
 * loss and the stop flag, which one allreduce carries with them) and the step's results. */
struct tsrnn_workspace;

/* A workspace for batches of up to batch_capacity windows of up to step_capacity steps, whose
 * step results are read at least every results_capacity steps. TSRNN_ERR_USAGE when the
 * activations cannot fit (the message names the config keys), TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_compute_workspace_create(struct tsrnn_workspace **ws,
                                                 struct tsrnn_compute *compute,
                                                 const struct tsrnn_model_dims *dims,
                                                 size_t batch_capacity, size_t step_capacity,
                                                 size_t results_capacity);
void tsrnn_compute_workspace_destroy(struct tsrnn_workspace *ws); /* accepts NULL */

struct tsrnn_likelihood;

/* The likelihood whose loss TSRNN_LOSS_LIKELIHOOD means on this workspace (copied). Its P
 * (tsrnn_likelihood_param_count) must be the dims' param_count. TSRNN_ERR_USAGE on a backend
 * without caps.likelihoods ("the cuda compute backend has no likelihood losses ..."). */
enum tsrnn_status tsrnn_compute_workspace_likelihood(struct tsrnn_workspace *ws,
                                                     const struct tsrnn_likelihood *lik);

/* The backend's own workspace inside the door's, for a backend's tests (the CPU's
 * tsrnn_cpu_workspace_packed()); nothing else looks into it. */
void *tsrnn_compute_backend_workspace(struct tsrnn_workspace *ws);

/* The gradients of the last step or tsrnn_compute_forward_backward() (the table's layout),
 * to the host: for tests and gradient checks. */
enum tsrnn_status tsrnn_compute_download_grads(struct tsrnn_workspace *ws, float *grads);

/* --- the training step ------------------------------------------------------------------------- */

/* Adam's scalars for one step, as float32 operands the way PyTorch passes Python floats
 * (include/tsrnn/optim.h has the update; SGD runs through the same operation). */
struct tsrnn_adam_scalars {
    float beta1, one_minus_beta1;
    float beta2, one_minus_beta2;
    float bias_correction2_sqrt;
    float eps;
    float neg_step_size; /* -lr / bias_correction1 */
};

/* SGD with Nesterov momentum (dampening 0): the momentum and -lr as float32 operands. */
struct tsrnn_nesterov_scalars {
    float momentum, neg_lr;
};

/* RMSprop: alpha, 1 - alpha (the lerp weight of grad_avg too), eps, momentum, -lr; centered
 * keeps grad_avg. */
struct tsrnn_rmsprop_scalars {
    float alpha, one_minus_alpha, eps, momentum, neg_lr;
    bool centered;
};

/* Adagrad: eps and -clr, clr = lr / (1 + (step - 1) * lr_decay) in double, as PyTorch. */
struct tsrnn_adagrad_scalars {
    float eps, neg_clr;
};

/* The optimizer's update of one step (src/optim/adam.c fills it), in PyTorch's order:
 * params *= decay first (AdamW's 1 - lr * weight_decay; exactly 1 for none), grads +=
 * weight_decay * params (the L2 penalty of Adam, SGD, RMSprop and Adagrad: PyTorch's
 * grad.add(param, alpha=weight_decay); 0 for none), then the rule's elementwise update with
 * its scalars (the others' are not read). A zeroed struct with decay 1 is Adam's rule. */
struct tsrnn_step_update {
    enum tsrnn_update_rule rule;
    float decay;
    float weight_decay;
    struct tsrnn_adam_scalars adam;
    struct tsrnn_nesterov_scalars nesterov;
    struct tsrnn_rmsprop_scalars rmsprop;
    struct tsrnn_adagrad_scalars adagrad;
};

/* The gradient reduction the trainer hands over from comm/ (tsrnn_comm_step_reduce):
 * allreduce_sum sums `count` floats of device memory over every rank, in place.
 * device_queued: the sum is only queued on the context's stream and completes there (NCCL),
 * so a backend may capture it in a graph; reading the step's results then waits for it,
 * asking health() (a peer's failure, without waiting) as it polls, and calls abort() when no
 * step has finished for timeout_s. */
struct tsrnn_step_reduce {
    enum tsrnn_status (*allreduce_sum)(void *ctx, float *buf, size_t count);
    enum tsrnn_status (*health)(void *ctx);
    void (*abort)(void *ctx);
    void *ctx;
    int world_size;
    bool device_queued;
    double timeout_s;
};

/* The state a step updates in place: device memory of the context, each (table.total_count)
 * floats in the parameter table's layout. Bound to the workspace once
 * (tsrnn_compute_bind_state): the steps that follow update it, and a backend that captures its
 * step (CUDA graphs) captures these buffers. What each rule keeps where: Adam exp_avg and
 * exp_avg_sq; SGD its momentum_buffer in exp_avg; RMSprop its momentum_buffer in exp_avg,
 * square_avg in exp_avg_sq and, centered, grad_avg in grad_avg (NULL otherwise); Adagrad its
 * sum in exp_avg_sq. */
struct tsrnn_step_state {
    float *params, *exp_avg, *exp_avg_sq;
    float *grad_avg;
};
enum tsrnn_status tsrnn_compute_bind_state(struct tsrnn_workspace *ws,
                                           const struct tsrnn_step_state *state);

struct tsrnn_step_args {
    const float *x, *y; /* host: (B, T, I) inputs and (B, T, O) targets, batch-first */
    size_t batch_count, step_count;
    const float *dropout_masks; /* host: (L-1, T, B, H) 0 or 1/(1-p); NULL without dropout */
    enum tsrnn_loss_kind loss;
    float loss_delta;    /* HuberLoss's delta, SmoothL1Loss's beta (nn.h) */
    float clip_max_norm; /* torch.nn.utils.clip_grad_norm_'s max_norm; 0: no clipping */
    struct tsrnn_step_update update;
    const struct tsrnn_step_reduce *reduce; /* NULL: a world of one */
    bool stop_requested; /* this rank asks to stop: the ranks agree after the step */
};

/* One optimizer step on a batch, on the bound state: forward, loss, backward, the reduction
 * (sum over ranks, then 1/W), the finite check, clipping, the update. Queued: nothing waits for the device. A step
 * whose gradients or loss are not finite updates nothing, nor does any step after it until
 * the results are read; so does every step after one at which the ranks agreed to stop (that
 * one updates). TSRNN_ERR_USAGE for arguments the workspace or backend cannot take. */
enum tsrnn_status tsrnn_compute_step(struct tsrnn_workspace *ws,
                                     const struct tsrnn_step_args *args);

enum tsrnn_step_halt {
    TSRNN_STEP_RAN,      /* every step updated the model */
    TSRNN_STEP_DIVERGED, /* step `halted_at` had a non-finite loss or gradient: it and the
                            ones after it updated nothing */
    TSRNN_STEP_STOPPED,  /* the ranks agreed to stop after step `halted_at`, which updated; the
                            ones after it did not */
};

struct tsrnn_step_results {
    size_t taken;   /* steps since the last read */
    size_t updated; /* of those, how many updated the model (all of them unless halted) */
    enum tsrnn_step_halt halt;
    size_t halted_at; /* the index, in [0, taken), of the step that halted */
    bool finite;      /* the halted step's gradients were finite (its loss may not be) */
};

/* Waits for the steps taken since the last read and reads what they did: losses[k] (k <
 * taken, at most losses_capacity) the mean loss over the ranks of the k-th. Then starts
 * counting afresh. Must be called at least every results_capacity steps. */
enum tsrnn_status tsrnn_compute_step_results(struct tsrnn_workspace *ws, float *losses,
                                             size_t losses_capacity,
                                             struct tsrnn_step_results *results);

/* --- the forward: validation and forecasts --------------------------------------------------- */

/* Loads x (B, T, I) (and, for the errors, y (B, T, O); may be NULL) batch-first from the host
 * and runs the layers and the head over it, without dropout: from zero states, or from the
 * states the last forward ended in (TSRNN_FORWARD_SAVED: a forecast's next steps, with the
 * same parameters). */
enum tsrnn_forward_start {
    TSRNN_FORWARD_ZERO,
    TSRNN_FORWARD_SAVED,
};
enum tsrnn_status tsrnn_compute_forward(struct tsrnn_workspace *ws, const float *params,
                                        const float *x, const float *y, size_t batch_count,
                                        size_t step_count, enum tsrnn_forward_start start);

/* Each window's sum over t, then o of the loss's error of the last forward against y, in
 * double, into the host array sums (B): squared errors (MSELoss), absolute errors (L1Loss),
 * each element's Huber / smooth L1 loss (`delta` their argument, nn.h) or the likelihood's
 * terms (tsrnn_likelihood_term), each term rounded to float first. Independent of the other
 * windows of the batch. */
enum tsrnn_status tsrnn_compute_window_errors(struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                              float delta, double *sums);

/* The head's outputs of step t of the last forward, (B, O*P), to the host. */
enum tsrnn_status tsrnn_compute_output(struct tsrnn_workspace *ws, size_t t, float *out);

/* --- the operations one at a time ---------------------------------------------------------------
 * What the door composes the step and the forward of a backend with layer_ops from, each
 * checked here; the conformance test (tests/test_backend_ops.c) drives every backend through
 * them. src/compute/backend.h has their contracts. */
enum tsrnn_initial_state {
    TSRNN_STATE_ZERO,  /* h[0] = 0 (and c[0] = 0) */
    TSRNN_STATE_SAVED, /* the state tsrnn_compute_state_save() kept */
};
enum tsrnn_status tsrnn_compute_batch_load(struct tsrnn_workspace *ws, const float *x,
                                           const float *y, size_t batch_count, size_t step_count);
enum tsrnn_status tsrnn_compute_layer_forward(struct tsrnn_workspace *ws, size_t l,
                                              const struct tsrnn_layer_params *p,
                                              enum tsrnn_initial_state initial_state,
                                              const float *input_mask, bool weights_unchanged);
enum tsrnn_status tsrnn_compute_layer_backward(struct tsrnn_workspace *ws, size_t l,
                                               const struct tsrnn_layer_params *p,
                                               struct tsrnn_layer_params *g);
enum tsrnn_status tsrnn_compute_state_save(struct tsrnn_workspace *ws);
enum tsrnn_status tsrnn_compute_head_forward(struct tsrnn_workspace *ws, const float *v_w,
                                             const float *v_b);
enum tsrnn_status tsrnn_compute_head_backward(struct tsrnn_workspace *ws, const float *v_w,
                                              float *g_v_w, float *g_v_b);
/* The loss of the last forward into *loss (a device float) and dLoss/d(out); `delta` is the
 * loss's argument (nn.h). */
enum tsrnn_status tsrnn_compute_loss_forward(struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                             float delta, float *device_loss);
enum tsrnn_status tsrnn_compute_loss_backward(struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                              float delta);
/* buf (count, device) *= scale, *finite = no element NaN or inf afterwards. */
enum tsrnn_status tsrnn_compute_scale_check(struct tsrnn_compute *compute, float *buf, size_t count,
                                            float scale, bool *finite);
/* Adam's elementwise update (optim.h) over count parameters, all device memory. */
enum tsrnn_status tsrnn_compute_adam_update(struct tsrnn_compute *compute, float *params,
                                            float *exp_avg, float *exp_avg_sq, const float *grads,
                                            size_t count, const struct tsrnn_adam_scalars *s);
/* The other rules' elementwise updates (optim.h), over count parameters, all device memory;
 * TSRNN_ERR_USAGE where the backend lacks the rule (its caps). l2_decay: grads += weight_decay
 * * params (the L2 penalty, before the rule). */
enum tsrnn_status tsrnn_compute_l2_decay(struct tsrnn_compute *compute, float *grads,
                                         const float *params, size_t count, float weight_decay);
enum tsrnn_status tsrnn_compute_nesterov_update(struct tsrnn_compute *compute, float *params,
                                                float *momentum_buffer, const float *grads,
                                                size_t count,
                                                const struct tsrnn_nesterov_scalars *s);
enum tsrnn_status tsrnn_compute_rmsprop_update(struct tsrnn_compute *compute, float *params,
                                               float *square_avg, float *momentum_buffer,
                                               float *grad_avg, const float *grads, size_t count,
                                               const struct tsrnn_rmsprop_scalars *s);
enum tsrnn_status tsrnn_compute_adagrad_update(struct tsrnn_compute *compute, float *params,
                                               float *state_sum, const float *grads, size_t count,
                                               const struct tsrnn_adagrad_scalars *s);
/* A whole update outside a step (tsrnn_adam_step): the decay, the L2 penalty (into grads,
 * which it overwrites), then the rule, on `state` (count parameters), as a step runs them. */
enum tsrnn_status tsrnn_compute_update(struct tsrnn_compute *compute,
                                       const struct tsrnn_step_state *state, float *grads,
                                       size_t count, const struct tsrnn_step_update *update);
/* torch.nn.utils.clip_grad_norm_(max_norm) over the table's tensors of grads (device). */
enum tsrnn_status tsrnn_compute_clip_grad_norm(struct tsrnn_compute *compute, float *grads,
                                               const struct tsrnn_param_table *table,
                                               float max_norm);

/* The forward and backward alone, for tests and gradient checks: the layers and the head
 * over the loaded batch (dropout masks (L-1, T, B, H) on the host, or NULL), then the loss
 * into *loss (host) and the gradients of the workspace (tsrnn_compute_download_grads). */
enum tsrnn_status tsrnn_compute_forward_backward(struct tsrnn_workspace *ws, const float *params,
                                                 const float *dropout_masks,
                                                 enum tsrnn_loss_kind loss, float delta,
                                                 float *host_loss);

#endif
