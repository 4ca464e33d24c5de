/* The training step and the forward composed from a backend's per-layer operations
 * (backend.h): the CPU's, and any backend with caps.layer_ops and no whole operations of its
 * own. One step, in the order its results depend on:
 *
 *     batch -> layers and head forward -> loss backward, head backward, layers backward
 *     -> the loss (and this rank's stop flag) beside the gradients
 *     -> reduction over the ranks (sum), scale by 1/W, finite check
 *     -> clipping -> the optimizer's update (AdamW's decay, the L2 penalty, then the rule's
 *        elementwise step: Adam's, SGD's with Nesterov, RMSprop's or Adagrad's)
 *
 * The loss is computed after the backward, which does not need it; the numbers are the same
 * either way. Every operation is the backend's; this file only orders them. */
#include <math.h>

#include "backend.h"

enum tsrnn_status tsrnn_compute_composed_forward(struct tsrnn_compute *ctx, void *ws,
                                                 const struct tsrnn_model_params *p,
                                                 size_t layer_count,
                                                 enum tsrnn_initial_state initial_state,
                                                 const float *dropout_masks, size_t mask_count,
                                                 bool weights_unchanged)
{
    const struct tsrnn_compute_backend *b = ctx->backend;
    for (size_t l = 0; l < layer_count; l++) {
        /* Layer l > 0 reads the layer below through its mask, (L-1) of them in order. */
        const float *mask =
            l > 0 && dropout_masks != NULL ? dropout_masks + (l - 1) * mask_count : NULL;
        TSRNN_TRY(
            b->layer_forward(ctx, ws, l, &p->layers[l], initial_state, mask, weights_unchanged));
    }
    return b->head_forward(ctx, ws, p->v_w, p->v_b);
}

/* dLoss/d(out) and the loss of the last forward, by the step's loss (the door has mapped
 * SmoothL1Loss with beta 0 to L1Loss). */
static enum tsrnn_status loss_backward(struct tsrnn_compute *ctx, void *ws,
                                       const struct tsrnn_step_buffers *buf,
                                       const struct tsrnn_step_args *a)
{
    const struct tsrnn_compute_backend *b = ctx->backend;
    switch (a->loss) {
    case TSRNN_LOSS_LIKELIHOOD:
        return b->likelihood_backward(ctx, ws, buf->likelihood);
    case TSRNN_LOSS_L1:
        return b->l1_backward(ctx, ws);
    case TSRNN_LOSS_HUBER:
    case TSRNN_LOSS_SMOOTH_L1:
        return b->huber_backward(ctx, ws, a->loss, a->loss_delta);
    case TSRNN_LOSS_MSE:
        break;
    }
    return b->mse_backward(ctx, ws);
}

static enum tsrnn_status loss_forward(struct tsrnn_compute *ctx, void *ws,
                                      const struct tsrnn_step_buffers *buf,
                                      const struct tsrnn_step_args *a, float *loss)
{
    const struct tsrnn_compute_backend *b = ctx->backend;
    switch (a->loss) {
    case TSRNN_LOSS_LIKELIHOOD:
        return b->likelihood_forward(ctx, ws, buf->likelihood, loss);
    case TSRNN_LOSS_L1:
        return b->l1_forward(ctx, ws, loss);
    case TSRNN_LOSS_HUBER:
    case TSRNN_LOSS_SMOOTH_L1:
        return b->huber_forward(ctx, ws, a->loss, a->loss_delta, loss);
    case TSRNN_LOSS_MSE:
        break;
    }
    return b->mse_forward(ctx, ws, loss);
}

/* PyTorch's optimizer.step() on the (reduced, clipped) gradients: AdamW's param.mul_(1 - lr *
 * weight_decay), the others' grad = grad.add(param, alpha=weight_decay), then the rule. */
enum tsrnn_status tsrnn_compute_composed_update(struct tsrnn_compute *ctx,
                                                const struct tsrnn_step_state *state, float *grads,
                                                size_t n, const struct tsrnn_step_update *u)
{
    const struct tsrnn_compute_backend *b = ctx->backend;
    if (u->decay != 1.0f) {
        bool decayed_finite;
        TSRNN_TRY(b->scale_check(ctx, state->params, n, u->decay, &decayed_finite));
    }
    if (u->weight_decay != 0.0f)
        TSRNN_TRY(b->l2_decay(ctx, grads, state->params, n, u->weight_decay));
    switch (u->rule) {
    case TSRNN_UPDATE_NESTEROV:
        return b->nesterov_update(ctx, state->params, state->exp_avg, grads, n, &u->nesterov);
    case TSRNN_UPDATE_RMSPROP:
        return b->rmsprop_update(ctx, state->params, state->exp_avg_sq, state->exp_avg,
                                 state->grad_avg, grads, n, &u->rmsprop);
    case TSRNN_UPDATE_ADAGRAD:
        return b->adagrad_update(ctx, state->params, state->exp_avg_sq, grads, n, &u->adagrad);
    case TSRNN_UPDATE_ADAM:
        break;
    }
    return b->adam_update(ctx, state->params, state->exp_avg, state->exp_avg_sq, grads, n,
                          &u->adam);
}

enum tsrnn_status tsrnn_compute_composed_step(struct tsrnn_compute *ctx, void *ws,
                                              const struct tsrnn_step_buffers *buf,
                                              const struct tsrnn_step_args *a,
                                              struct tsrnn_step_record *now)
{
    const struct tsrnn_compute_backend *b = ctx->backend;
    const struct tsrnn_param_table *table = buf->table;
    size_t n = table->total_count, layer_count = buf->dims->layer_count;
    size_t mask_count = a->step_count * a->batch_count * buf->dims->hidden_count;
    float *loss = buf->grads + TSRNN_STEP_LOSS_SLOT(table);
    float *stop = buf->grads + TSRNN_STEP_STOP_SLOT(table);

    TSRNN_TRY(b->batch_load(ctx, ws, a->x, a->y, a->batch_count, a->step_count));
    TSRNN_TRY(tsrnn_compute_composed_forward(ctx, ws, &buf->p, layer_count, TSRNN_STATE_ZERO,
                                             a->dropout_masks, mask_count, false));
    TSRNN_TRY(b->zero(ctx, buf->grads, n * sizeof(float)));
    TSRNN_TRY(loss_backward(ctx, ws, buf, a));
    TSRNN_TRY(b->head_backward(ctx, ws, buf->p.v_w, buf->g.v_w, buf->g.v_b));
    struct tsrnn_model_params g = buf->g; /* views of the workspace's gradients */
    for (size_t l = layer_count; l-- > 0;)
        TSRNN_TRY(b->layer_backward(ctx, ws, l, &buf->p.layers[l], &g.layers[l]));
    TSRNN_TRY(loss_forward(ctx, ws, buf, a, loss));

    /* One reduction carries the gradients, the loss and the stop flag: every rank then holds
     * the same mean gradient, mean loss and decision, and all of them fail, stop or go on
     * together. Without one (a world of one) the flag is this rank's. */
    float flag = a->stop_requested ? 1.0f : 0.0f, slots[2];
    TSRNN_TRY(b->upload(ctx, stop, &flag, sizeof(flag)));
    int world_size = a->reduce != NULL ? a->reduce->world_size : 1;
    if (a->reduce != NULL)
        TSRNN_TRY(a->reduce->allreduce_sum(a->reduce->ctx, buf->grads, n + 2));
    bool finite;
    TSRNN_TRY(b->scale_check(ctx, buf->grads, n + 2, 1.0f / (float)world_size, &finite));
    TSRNN_TRY(b->download(ctx, slots, loss, sizeof(slots)));
    now->loss = slots[0];
    now->stop = slots[1] > 0.0f;
    now->finite = finite;
    if (!finite || !isfinite(slots[0]))
        return TSRNN_OK; /* diverged: nothing is updated (the door records it) */

    /* After the reduction, on the mean gradient: DDP has reduced the gradients before
     * Lightning clips them. */
    if (a->clip_max_norm > 0.0f)
        TSRNN_TRY(b->clip_grad_norm(ctx, buf->grads, table, a->clip_max_norm));
    return tsrnn_compute_composed_update(ctx, &buf->state, buf->grads, n, &a->update);
}
