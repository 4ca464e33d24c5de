/* The compute door (include/tsrnn/compute.h): the registered backends, the checks of every
 * argument, and the calls that reach their tables. The only place that lists backends;
 * step.c composes the step and the forward of a backend with per-layer operations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "tsrnn/likelihood.h"
#include "tsrnn_build.h"

static const struct tsrnn_compute_backend *const backends[] = {
    &tsrnn_compute_backend_cpu,
#if TSRNN_HAVE_CUDA_BACKEND
    &tsrnn_compute_backend_cuda,
#endif
#if TSRNN_HAVE_PJRT_BACKEND
    &tsrnn_compute_backend_pjrt,
#endif
};

static const struct tsrnn_compute_backend *find_backend(enum tsrnn_compute_kind kind)
{
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (backends[i]->kind == kind)
            return backends[i];
    return NULL;
}

const char *tsrnn_compute_kind_name(enum tsrnn_compute_kind kind)
{
    switch (kind) {
    case TSRNN_COMPUTE_CPU:
        return "cpu";
    case TSRNN_COMPUTE_CUDA:
        return "cuda";
    case TSRNN_COMPUTE_PJRT:
        return "pjrt";
    }
    return "?";
}

bool tsrnn_compute_compiled(enum tsrnn_compute_kind kind)
{
    return find_backend(kind) != NULL;
}

bool tsrnn_compute_available(enum tsrnn_compute_kind kind, char *why, size_t why_nbytes)
{
    const struct tsrnn_compute_backend *b = find_backend(kind);
    if (b == NULL) {
        if (why != NULL && why_nbytes > 0)
            snprintf(why, why_nbytes, "this tsrnn has no %s compute backend%s",
                     tsrnn_compute_kind_name(kind),
                     kind == TSRNN_COMPUTE_CUDA ? " (it was built without the CUDA toolkit: nvcc, "
                                                  "cuBLAS and cuDNN 9; this build trains on CPUs)"
                     : kind == TSRNN_COMPUTE_PJRT
                         ? " (it was built without the PJRT header: run scripts/install-deps.sh, "
                           "then reconfigure with -Dpjrt=enabled)"
                         : "");
        return false;
    }
    return b->probe == NULL || b->probe(why, why_nbytes);
}

/* A table's operations against its capabilities (compute.h): a backend that says it has a
 * thing has every operation of it. Checked once, when a context is created: a table that
 * breaks this is a bug in tsrnn, reported as such rather than met as a NULL call later. */
static const char *table_gap(const struct tsrnn_compute_backend *b)
{
    const struct tsrnn_compute_caps *c = &b->caps;
    if (!b->create || !b->destroy || !b->alloc || !b->free || !b->upload || !b->download ||
        !b->zero || !b->synchronize || !b->workspace_create || !b->workspace_destroy ||
        !b->batch_load || !b->state_save || !b->window_squared_errors || !b->output_download)
        return "a memory, workspace, state or output operation";
    if (c->layer_ops &&
        (!b->layer_forward || !b->layer_backward || !b->head_forward || !b->head_backward ||
         !b->mse_forward || !b->mse_backward || !b->scale_check || !b->adam_update))
        return "a per-layer operation (caps.layer_ops)";
    if (!c->layer_ops && (!b->forward || !b->step))
        return "a forward and a step of its own (it has no per-layer operations)";
    if (c->l1_loss && (!b->l1_forward || !b->l1_backward || !b->window_abs_errors))
        return "an L1Loss operation (caps.l1_loss)";
    if (c->likelihoods && (!c->layer_ops || !b->likelihood_forward || !b->likelihood_backward ||
                           !b->window_likelihood_losses))
        return "a likelihood operation (caps.likelihoods, which the composed step runs)";
    if (c->huber_loss && (!b->huber_forward || !b->huber_backward || !b->window_huber_errors))
        return "a HuberLoss operation (caps.huber_loss)";
    if (c->layer_ops &&
        ((c->l2_weight_decay && !b->l2_decay) || (c->nesterov && !b->nesterov_update) ||
         (c->rmsprop && !b->rmsprop_update) || (c->adagrad && !b->adagrad_update)))
        return "an optimizer's update (caps.l2_weight_decay, nesterov, rmsprop, adagrad)";
    if (c->clipping && b->step == NULL && !b->clip_grad_norm)
        return "clip_grad_norm (caps.clipping)";
    if (b->step != NULL && !c->immediate_results && !b->step_results)
        return "step_results (its step keeps its results)";
    return NULL;
}

enum tsrnn_status tsrnn_compute_create(struct tsrnn_compute **compute,
                                       const struct tsrnn_compute_options *options)
{
    char why[256] = "";
    *compute = NULL;
    if (!tsrnn_compute_available(options->kind, why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s", why);
    const struct tsrnn_compute_backend *b = find_backend(options->kind);
    const char *gap = table_gap(b);
    if (gap != NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the %s compute backend's table lacks %s (a bug in tsrnn: please "
                           "report it)",
                           b->name, gap);
    return b->create(compute, options);
}

void tsrnn_compute_destroy(struct tsrnn_compute *compute)
{
    if (compute != NULL)
        compute->backend->destroy(compute);
}

enum tsrnn_compute_kind tsrnn_compute_kind(const struct tsrnn_compute *compute)
{
    return compute->backend->kind;
}

bool tsrnn_compute_host_memory(const struct tsrnn_compute *compute)
{
    return compute->backend->caps.host_memory;
}

const struct tsrnn_compute_caps *tsrnn_compute_caps(const struct tsrnn_compute *compute)
{
    return &compute->backend->caps;
}

size_t tsrnn_compute_describe(const struct tsrnn_compute *compute, char *dst, size_t dst_nbytes)
{
    if (compute->backend->describe != NULL)
        return compute->backend->describe(compute, dst, dst_nbytes);
    return (size_t)snprintf(dst, dst_nbytes, "%s", compute->backend->name);
}

void *tsrnn_compute_stream(const struct tsrnn_compute *compute)
{
    return compute->backend->stream ? compute->backend->stream(compute) : NULL;
}

bool tsrnn_compute_device_memory(const struct tsrnn_compute *compute, char *name,
                                 size_t name_nbytes, size_t *used_nbytes, size_t *total_nbytes)
{
    return compute->backend->device_memory != NULL &&
           compute->backend->device_memory(compute, name, name_nbytes, used_nbytes, total_nbytes);
}

size_t tsrnn_compute_tpu_cores(const struct tsrnn_compute *compute)
{
    return compute->backend->tpu_cores ? compute->backend->tpu_cores(compute) : 0;
}

enum tsrnn_status tsrnn_compute_alloc(struct tsrnn_compute *compute, void **buf, size_t nbytes)
{
    return compute->backend->alloc(compute, buf, nbytes);
}

void tsrnn_compute_free(struct tsrnn_compute *compute, void *buf)
{
    if (buf != NULL)
        compute->backend->free(compute, buf);
}

enum tsrnn_status tsrnn_compute_upload(struct tsrnn_compute *compute, void *dst, const void *src,
                                       size_t nbytes)
{
    return nbytes == 0 ? TSRNN_OK : compute->backend->upload(compute, dst, src, nbytes);
}

enum tsrnn_status tsrnn_compute_download(struct tsrnn_compute *compute, void *dst, const void *src,
                                         size_t nbytes)
{
    return nbytes == 0 ? TSRNN_OK : compute->backend->download(compute, dst, src, nbytes);
}

enum tsrnn_status tsrnn_compute_zero(struct tsrnn_compute *compute, void *buf, size_t nbytes)
{
    return nbytes == 0 ? TSRNN_OK : compute->backend->zero(compute, buf, nbytes);
}

enum tsrnn_status tsrnn_compute_synchronize(struct tsrnn_compute *compute)
{
    return compute->backend->synchronize(compute);
}

/* [training] loss_fn's names of the loss kinds (include/tsrnn/nn.h). */
static const char *loss_name(enum tsrnn_loss_kind loss)
{
    static const char *const names[] = { "MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss",
                                         "a likelihood" };
    return (size_t)loss < sizeof(names) / sizeof(names[0]) ? names[loss] : "?";
}

/* --- what training needs ----------------------------------------------------------------------- */

enum tsrnn_status tsrnn_compute_check_needs(const struct tsrnn_compute *compute,
                                            const struct tsrnn_compute_needs *needs)
{
    const struct tsrnn_compute_backend *b = compute->backend;
    const char *name = b->name;
#define ORIGIN(o) ((o) != NULL ? (o) : "")
    if (needs->loss == TSRNN_LOSS_LIKELIHOOD && !b->caps.likelihoods)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [model] likelihood = %s: the %s compute backend has no likelihood "
                           "losses (it trains point forecasts only); accepted there: likelihood "
                           "= none, or [trainer] accelerator = cpu",
                           ORIGIN(needs->likelihood_origin),
                           needs->likelihood != NULL ? needs->likelihood : "?", name);
    if (needs->loss == TSRNN_LOSS_L1 && !b->caps.l1_loss)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] loss_fn = L1Loss: the %s compute backend has no "
                           "L1Loss; accepted there: MSELoss, or [trainer] accelerator = cpu",
                           ORIGIN(needs->loss_origin), name);
    if ((needs->loss == TSRNN_LOSS_HUBER || needs->loss == TSRNN_LOSS_SMOOTH_L1) &&
        !b->caps.huber_loss)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] loss_fn = %s: the %s compute backend has no %s; "
                           "accepted there: MSELoss%s, or [trainer] accelerator = cpu",
                           ORIGIN(needs->loss_origin), loss_name(needs->loss), name,
                           loss_name(needs->loss), b->caps.l1_loss ? ", L1Loss" : "");
    if (needs->other_optimizer && !b->caps.optimizers)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] optimizer_cls: the %s compute backend's training "
                           "step has Adam only; accepted there: optimizer_cls = Adam (or "
                           "[trainer] accelerator = cpu)",
                           ORIGIN(needs->optimizer_origin), name);
    if ((needs->rule == TSRNN_UPDATE_RMSPROP && !b->caps.rmsprop) ||
        (needs->rule == TSRNN_UPDATE_ADAGRAD && !b->caps.adagrad))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] optimizer_cls = %s: the %s compute backend's training "
                           "step has no %s; accepted there: Adam%s (or [trainer] accelerator = "
                           "cpu)",
                           ORIGIN(needs->optimizer_origin),
                           needs->rule == TSRNN_UPDATE_RMSPROP ? "RMSprop" : "Adagrad", name,
                           needs->rule == TSRNN_UPDATE_RMSPROP ? "RMSprop" : "Adagrad",
                           b->caps.optimizers ? ", AdamW, SGD" : "");
    if (needs->rule == TSRNN_UPDATE_NESTEROV && !b->caps.nesterov)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] nesterov = true: the %s compute backend's training "
                           "step has no Nesterov momentum; accepted there: nesterov = false (or "
                           "[trainer] accelerator = cpu)",
                           ORIGIN(needs->nesterov_origin), name);
    if (needs->l2_weight_decay && !b->caps.l2_weight_decay)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] weight_decay: the %s compute backend's training step "
                           "has no L2 penalty (Adam's, SGD's, RMSprop's or Adagrad's "
                           "weight_decay); accepted there: weight_decay = 0%s (or [trainer] "
                           "accelerator = cpu)",
                           ORIGIN(needs->weight_decay_origin), name,
                           b->caps.optimizers ? ", or optimizer_cls = AdamW" : "");
    if (needs->abs_errors && !b->caps.l1_loss)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [early_stopping] monitor = val_MeanAbsoluteError: the %s compute "
                           "backend has no absolute errors (L1Loss's operations); accepted "
                           "there: val_loss, train_loss or val_MeanSquaredError (or [trainer] "
                           "accelerator = cpu)",
                           ORIGIN(needs->monitor_origin), name);
    if (needs->clipping && !b->caps.clipping)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] gradient_clip_val: the %s compute backend's training "
                           "step has no gradient clipping; accepted there: gradient_clip_val "
                           "= 0 (or [trainer] accelerator = cpu)",
                           ORIGIN(needs->clip_origin), name);
    if (needs->world_size > 1 && !b->caps.reduction)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the %s backend trains in one process (its replicas live inside the "
                           "program); run tsrnn-worker alone, not %d workers",
                           name, needs->world_size);
#undef ORIGIN
    return TSRNN_OK;
}

/* --- the workspace ----------------------------------------------------------------------------- */

struct tsrnn_workspace {
    struct tsrnn_compute *compute;
    const struct tsrnn_compute_backend *b;
    void *impl; /* the backend's workspace */
    struct tsrnn_model_dims dims;
    struct tsrnn_param_table table;
    struct tsrnn_likelihood likelihood; /* TSRNN_LOSS_LIKELIHOOD's; kind NONE: not set */
    size_t batch_capacity, step_capacity, results_capacity;
    size_t batch_count, step_count; /* the batch loaded (0: none) */
    bool have_y;                    /* ... with targets */
    bool have_forward;              /* a forward ran over it */
    float *grads;                   /* device (table.total_count + 2): the loss and stop slots */
    struct tsrnn_step_buffers step; /* the bound state, the gradients and their views */
    bool bound;
    /* The steps since the last read, where the door records them (the composed step and
     * backends with immediate results): losses (results_capacity) on the host. */
    float *losses;
    size_t taken;
    struct tsrnn_step_results halted; /* halt != TSRNN_STEP_RAN once a step halted */
};

enum tsrnn_status tsrnn_compute_workspace_create(struct tsrnn_workspace **out,
                                                 struct tsrnn_compute *compute,
                                                 const struct tsrnn_model_dims *dims,
                                                 size_t batch_capacity, size_t step_capacity,
                                                 size_t results_capacity)
{
    *out = NULL;
    if (dims->layer_count < 1 || dims->layer_count > TSRNN_MODEL_MAX_LAYERS ||
        dims->hidden_count < 1 || dims->input_count < 1 || dims->output_count < 1 ||
        batch_capacity < 1 || step_capacity < 1 || results_capacity < 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a workspace for %zu layers of %zu units, %zu inputs, %zu outputs, "
                           "batches of %zu x %zu steps, results every %zu steps: every count "
                           "must be at least 1 (layers at most %d)",
                           dims->layer_count, dims->hidden_count, dims->input_count,
                           dims->output_count, batch_capacity, step_capacity, results_capacity,
                           TSRNN_MODEL_MAX_LAYERS);
    if (dims->param_count > 1 && !compute->backend->caps.likelihoods)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a head of %zu outputs per target (a likelihood's parameters): the %s "
                           "compute backend has no likelihoods; accepted there: [model] "
                           "likelihood = none, or [trainer] accelerator = cpu",
                           dims->param_count, compute->backend->name);
    struct tsrnn_workspace *ws = calloc(1, sizeof(*ws));
    if (ws == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the model's workspace");
    ws->compute = compute;
    ws->b = compute->backend;
    ws->dims = *dims;
    tsrnn_param_table_init(&ws->table, dims);
    ws->batch_capacity = batch_capacity;
    ws->step_capacity = step_capacity;
    ws->results_capacity = results_capacity;
    size_t nbytes = (ws->table.total_count + 2) * sizeof(float);
    enum tsrnn_status status = ws->b->workspace_create(compute, &ws->impl, dims, batch_capacity,
                                                       step_capacity, results_capacity);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_alloc(compute, (void **)&ws->grads, nbytes);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_zero(compute, ws->grads, nbytes);
    if (status != TSRNN_OK)
        goto out;
    ws->losses = malloc(results_capacity * sizeof(float));
    if (ws->losses == NULL)
        status =
            tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu step results", results_capacity);
out:
    if (status != TSRNN_OK)
        tsrnn_compute_workspace_destroy(ws);
    else
        *out = ws;
    return status;
}

void tsrnn_compute_workspace_destroy(struct tsrnn_workspace *ws)
{
    if (ws == NULL)
        return;
    if (ws->impl != NULL)
        ws->b->workspace_destroy(ws->compute, ws->impl);
    tsrnn_compute_free(ws->compute, ws->grads);
    free(ws->losses);
    free(ws);
}

enum tsrnn_status tsrnn_compute_workspace_likelihood(struct tsrnn_workspace *ws,
                                                     const struct tsrnn_likelihood *lik)
{
    size_t P = tsrnn_likelihood_param_count(lik);
    size_t have = ws->dims.param_count > 1 ? ws->dims.param_count : 1;
    if (!ws->b->caps.likelihoods)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the %s compute backend has no likelihood losses; accepted there: "
                           "[model] likelihood = none, or [trainer] accelerator = cpu",
                           ws->b->name);
    if (lik->kind == TSRNN_LIKELIHOOD_NONE || P != have)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "likelihood %s has %zu parameters per target; the workspace's head "
                           "has %zu",
                           tsrnn_likelihood_name(lik->kind), P, have);
    ws->likelihood = *lik;
    return TSRNN_OK;
}

void *tsrnn_compute_backend_workspace(struct tsrnn_workspace *ws)
{
    return ws->impl;
}

enum tsrnn_status tsrnn_compute_download_grads(struct tsrnn_workspace *ws, float *grads)
{
    return tsrnn_compute_download(ws->compute, grads, ws->grads,
                                  ws->table.total_count * sizeof(float));
}

/* --- the door's checks ------------------------------------------------------------------------- */

static enum tsrnn_status check_batch(const struct tsrnn_workspace *ws, const float *x,
                                     size_t batch_count, size_t step_count)
{
    if (x == NULL || batch_count == 0 || step_count == 0 || batch_count > ws->batch_capacity ||
        step_count > ws->step_capacity)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a batch of %zu windows of %zu steps%s does not fit the workspace made "
                           "for up to %zu windows of up to %zu steps",
                           batch_count, step_count, x == NULL ? " (no inputs)" : "",
                           ws->batch_capacity, ws->step_capacity);
    return TSRNN_OK;
}

static enum tsrnn_status check_layer_ops(const struct tsrnn_workspace *ws, const char *op)
{
    if (!ws->b->caps.layer_ops)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the %s backend has no %s operation: it runs the training step and "
                           "the forward as whole programs (docs/architecture.md \"The pjrt "
                           "backend\")",
                           ws->b->name, op);
    return TSRNN_OK;
}

/* SmoothL1Loss with beta 0 is L1Loss (torch.nn.functional.smooth_l1_loss calls l1_loss). */
static enum tsrnn_loss_kind effective_loss(enum tsrnn_loss_kind loss, float delta)
{
    return loss == TSRNN_LOSS_SMOOTH_L1 && delta == 0.0f ? TSRNN_LOSS_L1 : loss;
}

/* A loss (after effective_loss) the backend has, with an argument PyTorch takes. */
static enum tsrnn_status check_loss(const struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                    float delta)
{
    bool huber = loss == TSRNN_LOSS_HUBER || loss == TSRNN_LOSS_SMOOTH_L1;
    if (loss == TSRNN_LOSS_L1 && !ws->b->caps.l1_loss)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s compute backend has no L1Loss", ws->b->name);
    if (huber && !ws->b->caps.huber_loss)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s compute backend has no %s", ws->b->name,
                           loss_name(loss));
    if (huber && !(delta > 0.0f && isfinite(delta)))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s's %s = %g; accepted: a finite number > 0%s",
                           loss_name(loss), loss == TSRNN_LOSS_HUBER ? "delta" : "beta",
                           (double)delta, loss == TSRNN_LOSS_HUBER ? "" : " (0: L1Loss)");
    if (loss == TSRNN_LOSS_LIKELIHOOD && ws->likelihood.kind == TSRNN_LIKELIHOOD_NONE)
        return tsrnn_error(TSRNN_ERR_USAGE, "a likelihood loss on a workspace without a likelihood "
                                            "(tsrnn_compute_workspace_likelihood)");
    if (loss != TSRNN_LOSS_LIKELIHOOD && ws->dims.param_count > 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s of a head with %zu outputs per target: its loss is its "
                           "likelihood's",
                           loss_name(loss), ws->dims.param_count);
    if (loss != TSRNN_LOSS_MSE && loss != TSRNN_LOSS_L1 && !huber && loss != TSRNN_LOSS_LIKELIHOOD)
        return tsrnn_error(TSRNN_ERR_USAGE, "unknown loss %d", (int)loss);
    return TSRNN_OK;
}

static enum tsrnn_status check_forward_ran(const struct tsrnn_workspace *ws, bool with_y,
                                           const char *what)
{
    if (!ws->have_forward || (with_y && !ws->have_y))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s needs a forward over a batch%s first", what,
                           with_y ? " with targets" : "");
    return TSRNN_OK;
}

static bool model_has_dropout(const struct tsrnn_model_dims *dims)
{
    return dims->layer_count > 1 && dims->dropout > 0.0f;
}

/* --- the training step ------------------------------------------------------------------------- */

enum tsrnn_status tsrnn_compute_bind_state(struct tsrnn_workspace *ws,
                                           const struct tsrnn_step_state *state)
{
    if (state == NULL || state->params == NULL || state->exp_avg == NULL ||
        state->exp_avg_sq == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "a training step's state needs parameters and both "
                                            "moments");
    struct tsrnn_step_buffers *buf = &ws->step;
    buf->state = *state;
    buf->likelihood = &ws->likelihood;
    buf->grads = ws->grads;
    buf->dims = &ws->dims;
    buf->table = &ws->table;
    tsrnn_model_params_view(&buf->p, &ws->dims, state->params);
    tsrnn_model_params_view(&buf->g, &ws->dims, ws->grads);
    ws->bound = true;
    return TSRNN_OK;
}

/* An update's rule and penalty the backend has, with the state the rule keeps. */
static enum tsrnn_status check_update(const struct tsrnn_compute_backend *b,
                                      const struct tsrnn_step_update *u,
                                      const struct tsrnn_step_state *state)
{
    static const char *const rules[] = { "Adam", "SGD with Nesterov momentum", "RMSprop",
                                         "Adagrad" };
    const struct tsrnn_compute_caps *c = &b->caps;
    if ((unsigned)u->rule >= sizeof(rules) / sizeof(rules[0]))
        return tsrnn_error(TSRNN_ERR_USAGE, "unknown optimizer rule %d", (int)u->rule);
    bool has = u->rule == TSRNN_UPDATE_ADAM || (u->rule == TSRNN_UPDATE_NESTEROV && c->nesterov) ||
               (u->rule == TSRNN_UPDATE_RMSPROP && c->rmsprop) ||
               (u->rule == TSRNN_UPDATE_ADAGRAD && c->adagrad);
    if (!has)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend's step has no %s update", b->name,
                           rules[u->rule]);
    if (u->weight_decay != 0.0f && !c->l2_weight_decay)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the %s backend's step has no L2 penalty (weight_decay %g)", b->name,
                           (double)u->weight_decay);
    if (u->rule == TSRNN_UPDATE_RMSPROP && u->rmsprop.centered && state->grad_avg == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "a centered RMSprop update needs its grad_avg "
                                            "buffer in the step's state");
    return TSRNN_OK;
}

static enum tsrnn_status check_step(const struct tsrnn_workspace *ws,
                                    const struct tsrnn_step_args *a)
{
    const struct tsrnn_compute_caps *caps = &ws->b->caps;
    TSRNN_TRY(check_batch(ws, a->x, a->batch_count, a->step_count));
    TSRNN_TRY(check_loss(ws, a->loss, a->loss_delta));
    if (a->y == NULL || !ws->bound)
        return tsrnn_error(TSRNN_ERR_USAGE, "a training step needs targets and the state bound "
                                            "to its workspace (tsrnn_compute_bind_state)");
    if (model_has_dropout(&ws->dims) != (a->dropout_masks != NULL))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a training step of a model %s dropout takes %s dropout masks",
                           model_has_dropout(&ws->dims) ? "with" : "without",
                           model_has_dropout(&ws->dims) ? "its" : "no");
    if (!(a->clip_max_norm >= 0.0f) || (a->clip_max_norm > 0.0f && !caps->clipping))
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend cannot clip gradients to %g",
                           ws->b->name, (double)a->clip_max_norm);
    if (a->update.decay != 1.0f && !caps->optimizers)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend's step has Adam only (no decay)",
                           ws->b->name);
    TSRNN_TRY(check_update(ws->b, &a->update, &ws->step.state));
    if (a->reduce != NULL && (a->reduce->world_size < 1 || a->reduce->allreduce_sum == NULL ||
                              (a->reduce->world_size > 1 && !caps->reduction)))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the %s backend's step cannot reduce gradients over %d processes",
                           ws->b->name, a->reduce->world_size);
    if (ws->taken >= ws->results_capacity)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%zu steps since their results were read: read them at least every "
                           "%zu steps (tsrnn_compute_step_results)",
                           ws->taken, ws->results_capacity);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_step(struct tsrnn_workspace *ws,
                                     const struct tsrnn_step_args *given)
{
    struct tsrnn_step_args normalized = *given, *args = &normalized;
    normalized.loss = effective_loss(given->loss, given->loss_delta);
    TSRNN_TRY(check_step(ws, args));
    bool recorded = ws->b->step == NULL || ws->b->caps.immediate_results;
    ws->have_forward = false; /* the step's activations are not a forward's to read */
    ws->batch_count = ws->step_count = 0;
    if (recorded && ws->halted.halt != TSRNN_STEP_RAN) {
        /* Halted since the last read: nothing runs (on every rank alike: the halt was agreed
         * through the reduction), as a backend with its own step skips on the device. */
        ws->losses[ws->taken++] = NAN;
        return TSRNN_OK;
    }
    struct tsrnn_step_record now = { .loss = NAN };
    TSRNN_TRY(ws->b->step != NULL
                  ? ws->b->step(ws->compute, ws->impl, &ws->step, args, &now)
                  : tsrnn_compute_composed_step(ws->compute, ws->impl, &ws->step, args, &now));
    if (recorded) {
        size_t k = ws->taken;
        ws->losses[k] = now.loss;
        if (!now.finite || !isfinite(now.loss)) {
            ws->halted.halt = TSRNN_STEP_DIVERGED;
            ws->halted.halted_at = k;
            ws->halted.finite = now.finite;
        } else if (now.stop) {
            ws->halted.halt = TSRNN_STEP_STOPPED;
            ws->halted.halted_at = k;
            ws->halted.finite = true;
        }
    }
    ws->taken++;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_step_results(struct tsrnn_workspace *ws, float *losses,
                                             size_t losses_capacity, struct tsrnn_step_results *r)
{
    if (losses_capacity < ws->taken)
        return tsrnn_error(TSRNN_ERR_USAGE, "room for %zu step losses, %zu steps were taken",
                           losses_capacity, ws->taken);
    if (ws->b->step != NULL && !ws->b->caps.immediate_results) {
        TSRNN_TRY(ws->b->step_results(ws->compute, ws->impl, losses, losses_capacity, r));
        if (r->taken != ws->taken)
            return tsrnn_error(TSRNN_ERR_IO,
                               "the %s backend reports %zu steps since the last read, the door "
                               "counted %zu",
                               ws->b->name, r->taken, ws->taken);
    } else {
        *r = ws->halted;
        r->taken = ws->taken;
        r->updated = r->halt == TSRNN_STEP_RAN       ? ws->taken
                     : r->halt == TSRNN_STEP_STOPPED ? r->halted_at + 1
                                                     : r->halted_at;
        if (r->halt == TSRNN_STEP_RAN)
            r->finite = true;
        memcpy(losses, ws->losses, ws->taken * sizeof(float));
    }
    ws->taken = 0;
    ws->halted = (struct tsrnn_step_results){ .halt = TSRNN_STEP_RAN };
    return TSRNN_OK;
}

/* --- the forward --------------------------------------------------------------------------------- */

enum tsrnn_status tsrnn_compute_batch_load(struct tsrnn_workspace *ws, const float *x,
                                           const float *y, size_t batch_count, size_t step_count)
{
    TSRNN_TRY(check_batch(ws, x, batch_count, step_count));
    ws->have_forward = false;
    ws->batch_count = ws->step_count = 0;
    TSRNN_TRY(ws->b->batch_load(ws->compute, ws->impl, x, y, batch_count, step_count));
    ws->batch_count = batch_count;
    ws->step_count = step_count;
    ws->have_y = y != NULL;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_forward(struct tsrnn_workspace *ws, const float *params,
                                        const float *x, const float *y, size_t batch_count,
                                        size_t step_count, enum tsrnn_forward_start start)
{
    if (params == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "a forward needs the parameters");
    if (start == TSRNN_FORWARD_SAVED) {
        /* The states the last forward ended in: a forecast's next steps, same weights. */
        TSRNN_TRY(check_forward_ran(ws, false, "a forward from saved states"));
        if (batch_count != ws->batch_count)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "a forward from saved states takes the last forward's %zu "
                               "windows, not %zu",
                               ws->batch_count, batch_count);
        TSRNN_TRY(ws->b->state_save(ws->compute, ws->impl));
    }
    TSRNN_TRY(tsrnn_compute_batch_load(ws, x, y, batch_count, step_count));
    enum tsrnn_initial_state initial =
        start == TSRNN_FORWARD_SAVED ? TSRNN_STATE_SAVED : TSRNN_STATE_ZERO;
    bool unchanged = start == TSRNN_FORWARD_SAVED;
    if (ws->b->forward != NULL) {
        TSRNN_TRY(ws->b->forward(ws->compute, ws->impl, params, initial, unchanged));
    } else {
        struct tsrnn_model_params p;
        tsrnn_model_params_view(&p, &ws->dims, (float *)params);
        TSRNN_TRY(tsrnn_compute_composed_forward(ws->compute, ws->impl, &p, ws->dims.layer_count,
                                                 initial, NULL, 0, unchanged));
    }
    ws->have_forward = true;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_window_errors(struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                              float delta, double *sums)
{
    loss = effective_loss(loss, delta);
    TSRNN_TRY(check_loss(ws, loss, delta));
    TSRNN_TRY(check_forward_ran(ws, true, "the windows' errors"));
    if (loss == TSRNN_LOSS_LIKELIHOOD)
        return ws->b->window_likelihood_losses(ws->compute, ws->impl, &ws->likelihood, sums);
    if (loss == TSRNN_LOSS_L1)
        return ws->b->window_abs_errors(ws->compute, ws->impl, sums);
    if (loss == TSRNN_LOSS_HUBER || loss == TSRNN_LOSS_SMOOTH_L1)
        return ws->b->window_huber_errors(ws->compute, ws->impl, loss, delta, sums);
    return ws->b->window_squared_errors(ws->compute, ws->impl, sums);
}

enum tsrnn_status tsrnn_compute_output(struct tsrnn_workspace *ws, size_t t, float *out)
{
    TSRNN_TRY(check_forward_ran(ws, false, "an output"));
    if (t >= ws->step_count)
        return tsrnn_error(TSRNN_ERR_USAGE, "step %zu of a forward over %zu steps", t,
                           ws->step_count);
    return ws->b->output_download(ws->compute, ws->impl, t, out);
}

/* --- the operations one at a time ---------------------------------------------------------------- */

static enum tsrnn_status check_layer(const struct tsrnn_workspace *ws, size_t l, const void *p,
                                     const char *op)
{
    TSRNN_TRY(check_layer_ops(ws, op));
    if (l >= ws->dims.layer_count || p == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s of layer %zu of a model of %zu layers", op, l,
                           ws->dims.layer_count);
    if (ws->batch_count == 0)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s needs a batch loaded first", op);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_layer_forward(struct tsrnn_workspace *ws, size_t l,
                                              const struct tsrnn_layer_params *p,
                                              enum tsrnn_initial_state initial_state,
                                              const float *input_mask, bool weights_unchanged)
{
    TSRNN_TRY(check_layer(ws, l, p, "layer_forward"));
    if (input_mask != NULL && (l == 0 || !model_has_dropout(&ws->dims)))
        return tsrnn_error(TSRNN_ERR_USAGE, "a dropout mask for layer %zu of a model %s", l,
                           l == 0 ? "(the first layer's input is never dropped)"
                                  : "without dropout");
    return ws->b->layer_forward(ws->compute, ws->impl, l, p, initial_state, input_mask,
                                weights_unchanged);
}

enum tsrnn_status tsrnn_compute_layer_backward(struct tsrnn_workspace *ws, size_t l,
                                               const struct tsrnn_layer_params *p,
                                               struct tsrnn_layer_params *g)
{
    TSRNN_TRY(check_layer(ws, l, p, "layer_backward"));
    return ws->b->layer_backward(ws->compute, ws->impl, l, p, g);
}

enum tsrnn_status tsrnn_compute_state_save(struct tsrnn_workspace *ws)
{
    TSRNN_TRY(check_layer_ops(ws, "state_save"));
    return ws->b->state_save(ws->compute, ws->impl);
}

enum tsrnn_status tsrnn_compute_head_forward(struct tsrnn_workspace *ws, const float *v_w,
                                             const float *v_b)
{
    TSRNN_TRY(check_layer(ws, ws->dims.layer_count - 1, v_w, "head_forward"));
    TSRNN_TRY(ws->b->head_forward(ws->compute, ws->impl, v_w, v_b));
    ws->have_forward = true;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_head_backward(struct tsrnn_workspace *ws, const float *v_w,
                                              float *g_v_w, float *g_v_b)
{
    TSRNN_TRY(check_layer(ws, ws->dims.layer_count - 1, v_w, "head_backward"));
    return ws->b->head_backward(ws->compute, ws->impl, v_w, g_v_w, g_v_b);
}

enum tsrnn_status tsrnn_compute_loss_forward(struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                             float delta, float *device_loss)
{
    loss = effective_loss(loss, delta);
    TSRNN_TRY(check_layer_ops(ws, "loss_forward"));
    TSRNN_TRY(check_loss(ws, loss, delta));
    TSRNN_TRY(check_forward_ran(ws, true, "the loss"));
    if (loss == TSRNN_LOSS_LIKELIHOOD)
        return ws->b->likelihood_forward(ws->compute, ws->impl, &ws->likelihood, device_loss);
    if (loss == TSRNN_LOSS_L1)
        return ws->b->l1_forward(ws->compute, ws->impl, device_loss);
    if (loss == TSRNN_LOSS_HUBER || loss == TSRNN_LOSS_SMOOTH_L1)
        return ws->b->huber_forward(ws->compute, ws->impl, loss, delta, device_loss);
    return ws->b->mse_forward(ws->compute, ws->impl, device_loss);
}

enum tsrnn_status tsrnn_compute_loss_backward(struct tsrnn_workspace *ws, enum tsrnn_loss_kind loss,
                                              float delta)
{
    loss = effective_loss(loss, delta);
    TSRNN_TRY(check_layer_ops(ws, "loss_backward"));
    TSRNN_TRY(check_loss(ws, loss, delta));
    TSRNN_TRY(check_forward_ran(ws, true, "the loss's gradient"));
    if (loss == TSRNN_LOSS_LIKELIHOOD)
        return ws->b->likelihood_backward(ws->compute, ws->impl, &ws->likelihood);
    if (loss == TSRNN_LOSS_L1)
        return ws->b->l1_backward(ws->compute, ws->impl);
    if (loss == TSRNN_LOSS_HUBER || loss == TSRNN_LOSS_SMOOTH_L1)
        return ws->b->huber_backward(ws->compute, ws->impl, loss, delta);
    return ws->b->mse_backward(ws->compute, ws->impl);
}

enum tsrnn_status tsrnn_compute_scale_check(struct tsrnn_compute *compute, float *buf, size_t count,
                                            float scale, bool *finite)
{
    if (compute->backend->scale_check == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend has no scale_check operation",
                           compute->backend->name);
    *finite = true;
    return count == 0 ? TSRNN_OK
                      : compute->backend->scale_check(compute, buf, count, scale, finite);
}

enum tsrnn_status tsrnn_compute_adam_update(struct tsrnn_compute *compute, float *params,
                                            float *exp_avg, float *exp_avg_sq, const float *grads,
                                            size_t count, const struct tsrnn_adam_scalars *s)
{
    if (compute->backend->adam_update == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend has no adam_update operation",
                           compute->backend->name);
    if (count == 0)
        return TSRNN_OK;
    return compute->backend->adam_update(compute, params, exp_avg, exp_avg_sq, grads, count, s);
}

/* The other rules' operations, one at a time (tests), refused where the caps lack them. */
static enum tsrnn_status check_rule_op(const struct tsrnn_compute *compute, bool has,
                                       const char *op)
{
    if (!has || !compute->backend->caps.layer_ops)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend has no %s operation",
                           compute->backend->name, op);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_compute_l2_decay(struct tsrnn_compute *compute, float *grads,
                                         const float *params, size_t count, float weight_decay)
{
    TSRNN_TRY(check_rule_op(compute, compute->backend->caps.l2_weight_decay, "l2_decay"));
    return count == 0 ? TSRNN_OK
                      : compute->backend->l2_decay(compute, grads, params, count, weight_decay);
}

enum tsrnn_status tsrnn_compute_nesterov_update(struct tsrnn_compute *compute, float *params,
                                                float *momentum_buffer, const float *grads,
                                                size_t count,
                                                const struct tsrnn_nesterov_scalars *s)
{
    TSRNN_TRY(check_rule_op(compute, compute->backend->caps.nesterov, "nesterov_update"));
    return count == 0 ? TSRNN_OK
                      : compute->backend->nesterov_update(compute, params, momentum_buffer, grads,
                                                          count, s);
}

enum tsrnn_status tsrnn_compute_rmsprop_update(struct tsrnn_compute *compute, float *params,
                                               float *square_avg, float *momentum_buffer,
                                               float *grad_avg, const float *grads, size_t count,
                                               const struct tsrnn_rmsprop_scalars *s)
{
    TSRNN_TRY(check_rule_op(compute, compute->backend->caps.rmsprop, "rmsprop_update"));
    if ((s->centered && grad_avg == NULL) || (s->momentum > 0.0f && momentum_buffer == NULL))
        return tsrnn_error(TSRNN_ERR_USAGE, "an RMSprop update%s%s needs its buffer",
                           s->centered ? ", centered" : "",
                           s->momentum > 0.0f ? ", with momentum" : "");
    return count == 0
               ? TSRNN_OK
               : compute->backend->rmsprop_update(compute, params, square_avg, momentum_buffer,
                                                  grad_avg, grads, count, s);
}

enum tsrnn_status tsrnn_compute_adagrad_update(struct tsrnn_compute *compute, float *params,
                                               float *state_sum, const float *grads, size_t count,
                                               const struct tsrnn_adagrad_scalars *s)
{
    TSRNN_TRY(check_rule_op(compute, compute->backend->caps.adagrad, "adagrad_update"));
    return count == 0
               ? TSRNN_OK
               : compute->backend->adagrad_update(compute, params, state_sum, grads, count, s);
}

enum tsrnn_status tsrnn_compute_update(struct tsrnn_compute *compute,
                                       const struct tsrnn_step_state *state, float *grads,
                                       size_t count, const struct tsrnn_step_update *update)
{
    const struct tsrnn_compute_backend *b = compute->backend;
    if (!b->caps.layer_ops)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend has no update outside its step",
                           b->name);
    if (update->decay != 1.0f && !b->caps.optimizers)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend has no decay (AdamW)", b->name);
    TSRNN_TRY(check_update(b, update, state));
    if (state->params == NULL || state->exp_avg == NULL || state->exp_avg_sq == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "an update needs the parameters and both moments");
    return count == 0 ? TSRNN_OK
                      : tsrnn_compute_composed_update(compute, state, grads, count, update);
}

enum tsrnn_status tsrnn_compute_clip_grad_norm(struct tsrnn_compute *compute, float *grads,
                                               const struct tsrnn_param_table *table,
                                               float max_norm)
{
    if (compute->backend->clip_grad_norm == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "the %s backend has no clip_grad_norm operation",
                           compute->backend->name);
    if (!(max_norm > 0.0f))
        return tsrnn_error(TSRNN_ERR_USAGE, "clipping to a max_norm of %g; accepted: > 0",
                           (double)max_norm);
    return compute->backend->clip_grad_norm(compute, grads, table, max_norm);
}

enum tsrnn_status tsrnn_compute_forward_backward(struct tsrnn_workspace *ws, const float *params,
                                                 const float *dropout_masks,
                                                 enum tsrnn_loss_kind loss, float delta,
                                                 float *host_loss)
{
    TSRNN_TRY(check_layer_ops(ws, "forward_backward"));
    TSRNN_TRY(check_loss(ws, effective_loss(loss, delta), delta));
    if (ws->batch_count == 0 || !ws->have_y)
        return tsrnn_error(TSRNN_ERR_USAGE, "a forward and backward needs a batch with targets");
    if (dropout_masks != NULL && !model_has_dropout(&ws->dims))
        return tsrnn_error(TSRNN_ERR_USAGE, "dropout masks for a model without dropout");
    struct tsrnn_model_params p, g;
    tsrnn_model_params_view(&p, &ws->dims, (float *)params);
    tsrnn_model_params_view(&g, &ws->dims, ws->grads);
    size_t mask_count = ws->step_count * ws->batch_count * ws->dims.hidden_count;
    TSRNN_TRY(tsrnn_compute_composed_forward(ws->compute, ws->impl, &p, ws->dims.layer_count,
                                             TSRNN_STATE_ZERO, dropout_masks, mask_count, false));
    ws->have_forward = true;
    size_t n = ws->table.total_count;
    TSRNN_TRY(tsrnn_compute_zero(ws->compute, ws->grads, n * sizeof(float)));
    TSRNN_TRY(tsrnn_compute_loss_backward(ws, loss, delta));
    TSRNN_TRY(ws->b->head_backward(ws->compute, ws->impl, p.v_w, g.v_w, g.v_b));
    for (size_t l = ws->dims.layer_count; l-- > 0;)
        TSRNN_TRY(ws->b->layer_backward(ws->compute, ws->impl, l, &p.layers[l], &g.layers[l]));
    TSRNN_TRY(
        tsrnn_compute_loss_forward(ws, loss, delta, ws->grads + TSRNN_STEP_LOSS_SLOT(&ws->table)));
    return tsrnn_compute_download(ws->compute, host_loss,
                                  ws->grads + TSRNN_STEP_LOSS_SLOT(&ws->table), sizeof(float));
}
