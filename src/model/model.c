/* The whole model of one rank, device-independent (include/tsrnn/model.h): its parameters on
 * the device and their import and export, the dropout masks, validation, Darts-style
 * prediction, all through the compute door (include/tsrnn/compute.h), which alone runs the
 * layers. Dropout masks are drawn here, on the host, from PyTorch's CPU generator as
 * nn.LSTM(dropout=p) draws them, so that every backend drops the units Darts drops. */
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
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_alloc(compute, (void **)&model->params, nbytes);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_zero(compute, model->params, nbytes);
    if (status != TSRNN_OK)
        goto out;
    if (has_dropout(dims)) {
        model->dropout_masks = malloc((dims->layer_count - 1) * step_capacity * batch_capacity *
                                      dims->hidden_count * sizeof(float));
        if (model->dropout_masks == NULL) {
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the dropout masks");
            goto out;
        }
    }
    tsrnn_model_params_view(&model->p, dims, model->params);
out:
    if (status != TSRNN_OK)
        tsrnn_model_finish(model); /* the model is the caller's only when it is whole */
    return status;
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

enum tsrnn_status tsrnn_model_likelihood(struct tsrnn_model *model,
                                         const struct tsrnn_likelihood *lik)
{
    TSRNN_TRY(tsrnn_compute_workspace_likelihood(model->ws, lik));
    model->likelihood = *lik;
    model->loss = TSRNN_LOSS_LIKELIHOOD;
    return TSRNN_OK;
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

uint64_t tsrnn_model_dropout_draws(const struct tsrnn_model_dims *dims, size_t step_count)
{
    if (!has_dropout(dims))
        return 0;
    return 2 * (uint64_t)(dims->layer_count - 1) * step_count * dims->hidden_count;
}

const float *tsrnn_model_dropout(struct tsrnn_model *model, size_t batch_count, size_t step_count,
                                 struct tsrnn_mt19937 *g, size_t rank, size_t world_size)
{
    const struct tsrnn_model_dims *d = &model->dims;
    if (model->dropout_masks == NULL || batch_count > model->batch_capacity ||
        step_count > model->step_capacity || world_size == 0 || rank >= world_size)
        return NULL;
    /* aten's _dropout_impl on a CPU: noise.bernoulli_(1 - p) (one double uniform per
     * element, 1 when below 1 - p), noise.div_(1 - p) in float, input * noise. */
    double keep = 1.0 - d->dropout;
    float scale = 1.0f / (float)keep;
    size_t H = d->hidden_count, rows = world_size * batch_count;
    uint64_t row_draws = 2 * (uint64_t)H; /* random64 per element */
    float *mask = model->dropout_masks;
    for (size_t l = 1; l < d->layer_count; l++)
        for (size_t t = 0; t < step_count; t++)
            for (size_t j = 0; j < rows; j++) {
                if (j % world_size != rank) {
                    tsrnn_mt19937_discard(g, row_draws);
                    continue;
                }
                for (size_t h = 0; h < H; h++)
                    *mask++ = tsrnn_torch_uniform_double(g) < keep ? scale : 0.0f;
            }
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
                                               size_t step_count, struct tsrnn_mt19937 *dropout_g,
                                               float *loss)
{
    const float *masks = dropout_g != NULL
                             ? tsrnn_model_dropout(model, batch_count, step_count, dropout_g, 0, 1)
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
    enum tsrnn_status status = TSRNN_OK;
    /* (B, I): each window's last forecast beside its next covariates; without covariates
     * the forecasts are the input as they lie. */
    float *rows = NULL;
    if (K > 0) {
        rows = malloc(B * I * sizeof(float));
        if (rows == NULL) {
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecast inputs", B);
            goto out;
        }
    }
    status = tsrnn_compute_forward(model->ws, model->params, context, NULL, B, context_count,
                                   TSRNN_FORWARD_ZERO);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_model_download_output(model, context_count - 1, forecast);
    if (status != TSRNN_OK)
        goto out;
    /* Step k's (B, O) outputs are the next input, (B, 1, I) batch-first, from the states
     * the step before ended in. */
    for (size_t k = 1; k < horizon; k++) {
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
        if (status != TSRNN_OK)
            goto out;
        status = tsrnn_model_download_output(model, 0, forecast + k * BO);
        if (status != TSRNN_OK)
            goto out;
    }
out:
    free(rows);
    return status;
}
