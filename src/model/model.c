/* The whole model of one rank, device-independent (include/tsrnn/model.h): its parameters on
 * the device and their import and export, the dropout masks, validation, Darts-style
 * prediction, all through the compute door (include/tsrnn/compute.h), which alone runs the
 * layers. Dropout masks are drawn here, on the host, from tsrnn's own generator, so that
 * every backend drops the same units. */
#include <stdlib.h>
#include <string.h>

#include "tsrnn/compute.h"
#include "tsrnn/model.h"

static bool has_dropout(const struct tsrnn_model_dims *dims)
{
    return dims->layer_count > 1 && dims->dropout > 0.0f;
}

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

    size_t nbytes = model->table.total_count * sizeof(float);
    enum tsrnn_status status = tsrnn_compute_workspace_create(
        &model->ws, compute, dims, batch_capacity, step_capacity, TSRNN_MODEL_RESULTS_CAPACITY);
    if (status == TSRNN_OK)
        status = tsrnn_compute_alloc(compute, (void **)&model->params, nbytes);
    if (status == TSRNN_OK)
        status = tsrnn_compute_zero(compute, model->params, nbytes);
    if (status == TSRNN_OK && has_dropout(dims)) {
        model->dropout_masks = malloc((dims->layer_count - 1) * step_capacity * batch_capacity *
                                      dims->hidden_count * sizeof(float));
        if (model->dropout_masks == NULL)
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the dropout masks");
    }
    if (status != TSRNN_OK) {
        tsrnn_model_finish(model);
        return status;
    }
    tsrnn_model_params_view(&model->p, dims, model->params);
    return TSRNN_OK;
}

void tsrnn_model_finish(struct tsrnn_model *model)
{
    if (model == NULL || model->compute == NULL)
        return;
    tsrnn_compute_workspace_destroy(model->ws);
    tsrnn_compute_free(model->compute, model->params);
    free(model->dropout_masks);
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

const float *tsrnn_model_dropout(struct tsrnn_model *model, size_t batch_count, size_t step_count,
                                 struct tsrnn_rng *rng)
{
    const struct tsrnn_model_dims *d = &model->dims;
    if (model->dropout_masks == NULL || batch_count > model->batch_capacity ||
        step_count > model->step_capacity)
        return NULL;
    /* Inverted dropout (torch.nn.functional.dropout in training): keep with probability
     * 1 - p, scale kept values by 1 / (1 - p); layer 1's input first, as the forward reads
     * them. */
    size_t n = (d->layer_count - 1) * step_count * batch_count * d->hidden_count;
    float p = d->dropout, scale = (float)(1.0 / (1.0 - (double)p));
    for (size_t i = 0; i < n; i++)
        model->dropout_masks[i] = tsrnn_rng_uniform(rng) < p ? 0.0f : scale;
    return model->dropout_masks;
}

enum tsrnn_status tsrnn_model_evaluate(struct tsrnn_model *model, const float *x, const float *y,
                                       size_t batch_count, size_t step_count, double *sums)
{
    TSRNN_TRY(tsrnn_compute_forward(model->ws, model->params, x, y, batch_count, step_count,
                                    TSRNN_FORWARD_ZERO));
    return tsrnn_compute_window_errors(model->ws, model->loss, model->loss_delta, sums);
}

enum tsrnn_status tsrnn_model_window_errors(struct tsrnn_model *model, enum tsrnn_loss_kind loss,
                                            float delta, double *sums)
{
    return tsrnn_compute_window_errors(model->ws, loss, delta, sums);
}

enum tsrnn_status tsrnn_model_forward_backward(struct tsrnn_model *model, const float *x,
                                               const float *y, size_t batch_count,
                                               size_t step_count, struct tsrnn_rng *dropout_rng,
                                               float *loss)
{
    const float *masks = dropout_rng != NULL
                             ? tsrnn_model_dropout(model, batch_count, step_count, dropout_rng)
                             : NULL;
    TSRNN_TRY(tsrnn_compute_batch_load(model->ws, x, y, batch_count, step_count));
    return tsrnn_compute_forward_backward(model->ws, model->params, masks, model->loss,
                                          model->loss_delta, loss);
}

enum tsrnn_status tsrnn_model_download_grads(struct tsrnn_model *model, float *grads)
{
    return tsrnn_compute_download_grads(model->ws, grads);
}

enum tsrnn_status tsrnn_model_download_output(struct tsrnn_model *model, size_t t, float *out)
{
    return tsrnn_compute_output(model->ws, t, out);
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
    enum tsrnn_status status = tsrnn_compute_forward(model->ws, model->params, context, NULL, B,
                                                     context_count, TSRNN_FORWARD_ZERO);
    if (status == TSRNN_OK)
        status = tsrnn_model_download_output(model, context_count - 1, forecast);
    /* Step k's (B, O) outputs are the next input, (B, 1, I) batch-first, from the states
     * the step before ended in. */
    for (size_t k = 1; status == TSRNN_OK && k < horizon; k++) {
        const float *input = forecast + (k - 1) * BO;
        if (K > 0) {
            for (size_t b = 0; b < B; b++) {
                memcpy(rows + b * I, input + b * O, O * sizeof(float));
                memcpy(rows + b * I + O, covariates + ((k - 1) * B + b) * K, K * sizeof(float));
            }
            input = rows;
        }
        status =
            tsrnn_compute_forward(model->ws, model->params, input, NULL, B, 1, TSRNN_FORWARD_SAVED);
        if (status == TSRNN_OK)
            status = tsrnn_model_download_output(model, 0, forecast + k * BO);
    }
    free(rows);
    return status;
}
