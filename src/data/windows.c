/* Darts' ShiftedTorchTrainingDataset windows (include/tsrnn/data.h; reference
 * darts-semantics.md §2: end_of_output = L - i, output = y[end-T, end), input one step
 * earlier). */
#include "tsrnn/data.h"

#include <string.h>

void tsrnn_windows_init(struct tsrnn_windows *w, const float *values, size_t length,
                        size_t component_count, size_t training_length)
{
    w->values = values;
    w->length = length;
    w->component_count = component_count;
    w->training_length = training_length;
    w->count = length > training_length ? length - training_length : 0;
    w->covariates = NULL;
    w->covariate_count = 0;
}

size_t tsrnn_windows_start(const struct tsrnn_windows *w, size_t idx)
{
    return w->length - w->training_length - 1 - idx;
}

void tsrnn_windows_set_covariates(struct tsrnn_windows *w, const float *covariates,
                                  size_t covariate_count)
{
    w->covariates = covariate_count > 0 ? covariates : NULL;
    w->covariate_count = covariate_count;
}

void tsrnn_windows_gather(const struct tsrnn_windows *w, const size_t *idx, size_t batch_count,
                          float *input, float *target)
{
    size_t T = w->training_length, C = w->component_count, K = w->covariate_count;
    size_t row_count = T * C;
    for (size_t b = 0; b < batch_count; b++) {
        size_t s = tsrnn_windows_start(w, idx[b]);
        const float *src = w->values + s * C;
        memcpy(target + b * row_count, src + C, row_count * sizeof(float));
        if (K == 0) {
            memcpy(input + b * row_count, src, row_count * sizeof(float));
            continue;
        }
        float *in = input + b * T * (C + K); /* (T, C + K) */
        for (size_t t = 0; t < T; t++) {
            memcpy(in + t * (C + K), src + t * C, C * sizeof(float));
            memcpy(in + t * (C + K) + C, w->covariates + (s + t + 1) * K, K * sizeof(float));
        }
    }
}

enum tsrnn_status tsrnn_window_list_init(struct tsrnn_window_list *list,
                                         const struct tsrnn_windows *series, size_t series_count,
                                         size_t max_samples_per_ts)
{
    size_t most = 0;
    *list = (struct tsrnn_window_list){ .series = series, .series_count = series_count };
    for (size_t s = 0; s < series_count; s++)
        most = series[s].count > most ? series[s].count : most;
    if (most == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "none of the %zu series is long enough for one window of "
                           "training_length %zu + 1 points",
                           series_count, series_count ? series[0].training_length : 0);
    for (size_t s = 0; s < series_count; s++)
        if (series[s].count == 0)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "series %zu has %zu points, too few for one window of "
                               "training_length %zu + 1 points (Darts refuses it too)",
                               s, series[s].length, series[s].training_length);
    list->samples_per_series =
        max_samples_per_ts > 0 && max_samples_per_ts < most ? max_samples_per_ts : most;
    list->count = series_count * list->samples_per_series;
    return TSRNN_OK;
}

void tsrnn_window_list_locate(const struct tsrnn_window_list *list, size_t idx, size_t *series_idx,
                              size_t *window_idx)
{
    size_t M = list->samples_per_series;
    *series_idx = idx / M;
    *window_idx = (idx % M) % list->series[*series_idx].count;
}

void tsrnn_window_list_gather(const struct tsrnn_window_list *list, const size_t *idx,
                              size_t batch_count, float *input, float *target)
{
    const struct tsrnn_windows *first = &list->series[0];
    size_t T = first->training_length, C = first->component_count, K = first->covariate_count;
    for (size_t b = 0; b < batch_count; b++) {
        size_t s, w;
        tsrnn_window_list_locate(list, idx[b], &s, &w);
        tsrnn_windows_gather(&list->series[s], &w, 1, input + b * T * (C + K), target + b * T * C);
    }
}
