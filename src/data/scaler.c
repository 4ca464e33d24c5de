/* MinMax scaling per component, as sklearn's MinMaxScaler on float32 input
 * (include/tsrnn/data.h). Every operation is a separate float32 rounding, in sklearn's order,
 * so the scaled series matches `Scaler().fit_transform(series.astype(np.float32))` bit for
 * bit; the build forbids contracting them into FMAs (-ffp-contract=off). */
#include "tsrnn/data.h"

#include <float.h>
#include <math.h>

static void min_max(struct tsrnn_scaler *scaler, const float *values, size_t length,
                    size_t component_count)
{
    scaler->component_count = component_count;
    for (size_t c = 0; c < component_count; c++) {
        float lo = values[c], hi = values[c];
        for (size_t t = 1; t < length; t++) {
            float v = values[t * component_count + c];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        scaler->data_min[c] = lo;
        scaler->data_max[c] = hi;
    }
}

void tsrnn_scaler_fit(struct tsrnn_scaler *scaler, const float *values, size_t length,
                      size_t component_count)
{
    min_max(scaler, values, length, component_count);
    for (size_t c = 0; c < component_count; c++) {
        float range = scaler->data_max[c] - scaler->data_min[c];
        if (range == 0.0f)
            range = 1.0f; /* sklearn's _handle_zeros_in_scale */
        scaler->scale[c] = 1.0f / range;
        scaler->offset[c] = 0.0f - scaler->data_min[c] * scaler->scale[c];
    }
}

void tsrnn_scaler_identity(struct tsrnn_scaler *scaler, const float *values, size_t length,
                           size_t component_count)
{
    min_max(scaler, values, length, component_count);
    for (size_t c = 0; c < component_count; c++) {
        scaler->scale[c] = 1.0f;
        scaler->offset[c] = 0.0f;
    }
}

void tsrnn_scaler_transform(const struct tsrnn_scaler *scaler, float *values, size_t length)
{
    size_t C = scaler->component_count;
    for (size_t t = 0; t < length; t++)
        for (size_t c = 0; c < C; c++) {
            float x = values[t * C + c] * scaler->scale[c];
            values[t * C + c] = x + scaler->offset[c];
        }
}

void tsrnn_scaler_inverse(const struct tsrnn_scaler *scaler, float *values, size_t length)
{
    size_t C = scaler->component_count;
    for (size_t t = 0; t < length; t++)
        for (size_t c = 0; c < C; c++) {
            float x = values[t * C + c] - scaler->offset[c];
            values[t * C + c] = x / scaler->scale[c];
        }
}

enum tsrnn_status tsrnn_scaler_fit_series(struct tsrnn_scaler *scaler, enum tsrnn_scaler_kind kind,
                                          const struct tsrnn_series *series, size_t train_length,
                                          const char *label)
{
    size_t C = series->component_count;
    if (kind == TSRNN_SCALER_MINMAX)
        tsrnn_scaler_fit(scaler, series->values, train_length, C);
    else
        tsrnn_scaler_identity(scaler, series->values, train_length, C);
    for (size_t c = 0; c < C; c++)
        if (!isfinite(scaler->data_max[c] - scaler->data_min[c]) ||
            !(scaler->scale[c] >= FLT_MIN) || !isfinite(1.0f / scaler->scale[c]))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: column '%s' spans %g .. %g in the training part, a range "
                               "float32 cannot hold; accepted: values whose range is below "
                               "3.4e38 (rescale the column)",
                               label, series->component_names[c], (double)scaler->data_min[c],
                               (double)scaler->data_max[c]);
    return TSRNN_OK;
}
