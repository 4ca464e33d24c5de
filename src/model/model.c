/* The whole model of one rank, device-independent (include/tsrnn/model.h): the stack of
 * recurrent layers, dropout between them, the head and the loss, forward, backward and
 * Darts-style prediction, as a sequence of compute-backend operations
 * (src/compute/backend.h). Dropout masks are drawn here, on the host, from tsrnn's own
 * generator, so that every backend drops the same units. */
#include <stdlib.h>
#include <string.h>

#include "src/compute/backend.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"

/* The backend table and context of a model. */
#define OPS(model) ((model)->compute->backend)
#define CTX(model) ((model)->compute)

enum tsrnn_status tsrnn_model_init(struct tsrnn_model *model, struct tsrnn_compute *compute,
                                   const struct tsrnn_model_dims *dims, size_t batch_capacity,
                                   size_t step_capacity)
{
    *model = (struct tsrnn_model){ 0 };
    model->dims = *dims;
    model->compute = compute;
    model->batch_capacity = batch_capacity;
    model->step_capacity = step_capacity;
    tsrnn_param_table_init(&model->table, dims);

    size_t count = model->table.total_count;
    enum tsrnn_status status =
        OPS(model)->workspace_create(CTX(model), &model->ws, dims, batch_capacity, step_capacity);
    if (status == TSRNN_OK)
        status = tsrnn_compute_alloc(compute, (void **)&model->params, count * sizeof(float));
    if (status == TSRNN_OK)
        status = tsrnn_compute_alloc(compute, (void **)&model->grads, (count + 2) * sizeof(float));
    if (status == TSRNN_OK)
        status = tsrnn_compute_zero(compute, model->params, count * sizeof(float));
    if (status == TSRNN_OK)
        status = tsrnn_compute_zero(compute, model->grads, (count + 2) * sizeof(float));
    if (status == TSRNN_OK && dims->layer_count > 1 && dims->dropout > 0.0f) {
        /* One layer's draw at a time; a whole-step program takes all L-1 at once. */
        size_t layers = OPS(model)->train_step != NULL ? dims->layer_count - 1 : 1;
        model->dropout_mask =
            malloc(layers * step_capacity * batch_capacity * dims->hidden_count * sizeof(float));
        if (model->dropout_mask == NULL)
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the dropout masks");
    }
    if (status != TSRNN_OK) {
        tsrnn_model_finish(model);
        return status;
    }
    tsrnn_model_params_view(&model->p, dims, model->params);
    tsrnn_model_params_view(&model->g, dims, model->grads);
    return TSRNN_OK;
}

void tsrnn_model_finish(struct tsrnn_model *model)
{
    if (model == NULL || model->compute == NULL)
        return;
    if (model->ws != NULL)
        OPS(model)->workspace_destroy(CTX(model), model->ws);
    tsrnn_compute_free(model->compute, model->params);
    tsrnn_compute_free(model->compute, model->grads);
    free(model->dropout_mask);
    *model = (struct tsrnn_model){ 0 };
}

enum tsrnn_status tsrnn_model_upload_params(struct tsrnn_model *model, const float *params)
{
    return tsrnn_compute_upload(model->compute, model->params, params,
                                model->table.total_count * sizeof(float));
}

enum tsrnn_status tsrnn_model_download_params(struct tsrnn_model *model, float *params)
{
    return tsrnn_compute_download(model->compute, params, model->params,
                                  model->table.total_count * sizeof(float));
}

enum tsrnn_status tsrnn_model_load_batch(struct tsrnn_model *model, const float *x, const float *y,
                                         size_t batch_count, size_t step_count)
{
    model->batch_count = batch_count;
    model->step_count = step_count;
    return OPS(model)->batch_load(CTX(model), model->ws, x, y, batch_count, step_count);
}

/* Inverted dropout (torch.nn.functional.dropout in training): keep with probability 1 - p,
 * scale kept values by 1 / (1 - p). */
static void draw_dropout(float *mask, size_t n, float p, struct tsrnn_rng *rng)
{
    float scale = (float)(1.0 / (1.0 - (double)p));
    for (size_t i = 0; i < n; i++)
        mask[i] = tsrnn_rng_uniform(rng) < p ? 0.0f : scale;
}

/* The layer stack and the head. initial_state and weights_unchanged as the backend's
 * layer_forward takes them (a forecast's steps carry the state and keep the weights). */
static enum tsrnn_status forward(struct tsrnn_model *model, bool training,
                                 struct tsrnn_rng *dropout_rng,
                                 enum tsrnn_initial_state initial_state, bool weights_unchanged)
{
    const struct tsrnn_model_dims *d = &model->dims;
    size_t mask_count = model->step_count * model->batch_count * d->hidden_count;

    model->dropout_applied = training && model->dropout_mask != NULL && d->dropout > 0.0f;
    if (OPS(model)->model_forward != NULL) {
        if (model->dropout_applied)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "the %s backend trains through "
                               "tsrnn_model_train_step(), not a training forward",
                               OPS(model)->name);
        return OPS(model)->model_forward(CTX(model), model->ws, model->params, initial_state);
    }
    for (size_t l = 0; l < d->layer_count; l++) {
        const float *mask = NULL;
        if (l > 0 && model->dropout_applied) {
            draw_dropout(model->dropout_mask, mask_count, d->dropout, dropout_rng);
            mask = model->dropout_mask;
        }
        TSRNN_TRY(OPS(model)->layer_forward(CTX(model), model->ws, l, &model->p.layers[l],
                                            initial_state, mask, weights_unchanged));
    }
    return OPS(model)->head_forward(CTX(model), model->ws, model->p.v_w, model->p.v_b);
}

enum tsrnn_status tsrnn_model_forward(struct tsrnn_model *model, bool training,
                                      struct tsrnn_rng *dropout_rng)
{
    return forward(model, training, dropout_rng, TSRNN_STATE_ZERO, false);
}

/* The backend, which must have the L1Loss ops (tsrnn_model_check_loss() said so). */
static const struct tsrnn_compute_backend *l1_op(const struct tsrnn_model *model)
{
    return OPS(model);
}

enum tsrnn_status tsrnn_model_check_loss(const struct tsrnn_model *model)
{
    const struct tsrnn_compute_backend *ops = OPS(model);
    if (model->loss == TSRNN_LOSS_L1 &&
        (ops->l1_forward == NULL || ops->l1_backward == NULL || ops->window_abs_errors == NULL))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "[training] loss_fn = L1Loss: the %s compute backend has no L1Loss "
                           "yet; accepted here: MSELoss, or [trainer] accelerator = cpu",
                           ops->name);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_model_loss(struct tsrnn_model *model, float *loss)
{
    float *slot = model->grads + TSRNN_MODEL_LOSS_SLOT(model);
    if (model->loss == TSRNN_LOSS_L1)
        TSRNN_TRY(l1_op(model)->l1_forward(CTX(model), model->ws, slot));
    else
        TSRNN_TRY(OPS(model)->mse_forward(CTX(model), model->ws, slot));
    return tsrnn_compute_download(model->compute, loss, slot, sizeof(float));
}

enum tsrnn_status tsrnn_model_window_squared_errors(struct tsrnn_model *model, double *se)
{
    return OPS(model)->window_squared_errors(CTX(model), model->ws, se);
}

enum tsrnn_status tsrnn_model_window_errors(struct tsrnn_model *model, double *sums)
{
    if (model->loss == TSRNN_LOSS_L1)
        return l1_op(model)->window_abs_errors(CTX(model), model->ws, sums);
    return OPS(model)->window_squared_errors(CTX(model), model->ws, sums);
}

enum tsrnn_status tsrnn_model_backward(struct tsrnn_model *model)
{
    TSRNN_TRY(
        tsrnn_compute_zero(model->compute, model->grads, model->table.total_count * sizeof(float)));
    if (model->loss == TSRNN_LOSS_L1)
        TSRNN_TRY(l1_op(model)->l1_backward(CTX(model), model->ws));
    else
        TSRNN_TRY(OPS(model)->mse_backward(CTX(model), model->ws));
    TSRNN_TRY(
        OPS(model)->head_backward(CTX(model), model->ws, model->p.v_w, model->g.v_w, model->g.v_b));
    for (size_t l = model->dims.layer_count; l-- > 0;)
        TSRNN_TRY(OPS(model)->layer_backward(CTX(model), model->ws, l, &model->p.layers[l],
                                             &model->g.layers[l]));
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_model_scale_grads(struct tsrnn_model *model, float scale, bool *finite)
{
    return OPS(model)->scale_check(CTX(model), model->grads, model->table.total_count + 2, scale,
                                   finite);
}

enum tsrnn_status tsrnn_model_download_output(struct tsrnn_model *model, size_t t, float *out)
{
    return OPS(model)->output_download(CTX(model), model->ws, t, out);
}

bool tsrnn_model_fused_step(const struct tsrnn_model *model)
{
    return OPS(model)->train_step != NULL;
}

enum tsrnn_status tsrnn_model_train_step(struct tsrnn_model *model, struct tsrnn_adam *adam,
                                         struct tsrnn_rng *dropout_rng, float *loss, bool *finite)
{
    const struct tsrnn_model_dims *d = &model->dims;
    const float *masks = NULL;
    if (model->dropout_mask != NULL && d->dropout > 0.0f) {
        size_t per_layer = model->step_count * model->batch_count * d->hidden_count;
        for (size_t l = 1; l < d->layer_count; l++)
            draw_dropout(model->dropout_mask + (l - 1) * per_layer, per_layer, d->dropout,
                         dropout_rng);
        masks = model->dropout_mask;
    }
    struct tsrnn_adam_scalars s;
    tsrnn_adam_next_scalars(adam, &s);
    return OPS(model)->train_step(CTX(model), model->ws, model->params, adam->exp_avg,
                                  adam->exp_avg_sq, masks, &s, loss, finite);
}

enum tsrnn_status tsrnn_model_predict(struct tsrnn_model *model, float *forecast,
                                      const float *context, size_t batch_count,
                                      size_t context_count, size_t horizon)
{
    return tsrnn_model_predict_covariates(model, forecast, context, batch_count, context_count,
                                          NULL, horizon);
}

enum tsrnn_status tsrnn_model_predict_covariates(struct tsrnn_model *model, float *forecast,
                                                 const float *context, size_t batch_count,
                                                 size_t context_count, const float *covariates,
                                                 size_t horizon)
{
    size_t O = model->dims.output_count, I = model->dims.input_count, K = I - O;
    size_t B = batch_count, BO = B * O;

    if (horizon == 0)
        return TSRNN_OK;
    if (K > 0 && covariates == NULL && horizon > 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a forecast with %zu inputs and %zu outputs needs %zu future "
                           "covariates per step",
                           I, O, K);
    /* (B, I): each window's last forecast beside its next covariates; without covariates
     * the forecasts are the input as they lie. */
    float *rows = K > 0 ? malloc(B * I * sizeof(float)) : NULL;
    if (K > 0 && rows == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecast inputs", B);
    enum tsrnn_status status = tsrnn_model_load_batch(model, context, NULL, B, context_count);
    if (status == TSRNN_OK)
        status = forward(model, false, NULL, TSRNN_STATE_ZERO, false);
    if (status == TSRNN_OK)
        status = tsrnn_model_download_output(model, context_count - 1, forecast);
    /* Step k's (B, O) outputs are the next input, (B, 1, I) batch-first. */
    for (size_t k = 1; status == TSRNN_OK && k < horizon; k++) {
        const float *input = forecast + (k - 1) * BO;
        if (K > 0) {
            for (size_t b = 0; b < B; b++) {
                memcpy(rows + b * I, input + b * O, O * sizeof(float));
                memcpy(rows + b * I + O, covariates + ((k - 1) * B + b) * K, K * sizeof(float));
            }
            input = rows;
        }
        status = OPS(model)->state_save(CTX(model), model->ws);
        if (status == TSRNN_OK)
            status = tsrnn_model_load_batch(model, input, NULL, B, 1);
        if (status == TSRNN_OK)
            status = forward(model, false, NULL, TSRNN_STATE_SAVED, true);
        if (status == TSRNN_OK)
            status = tsrnn_model_download_output(model, 0, forecast + k * BO);
    }
    free(rows);
    return status;
}
