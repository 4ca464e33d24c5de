/* Forecasts in the original scale, as Darts' RNNModel.predict(n) gives them, with the time
 * stamps that continue the series, scores against actual values where the series has them,
 * and the files a user looks at: a CSV (TimeSeries.to_csv layout) and a PNG.
 */
#ifndef TSRNN_FORECAST_H
#define TSRNN_FORECAST_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/model.h"

struct tsrnn_forecast {
    size_t length;          /* n: steps forecast */
    size_t component_count; /* C */
    size_t origin;          /* the series points [0, origin) were the history */
    int64_t *times;         /* (n) owned */
    float *values;          /* (n, C) owned, original scale */
    size_t actual_count;    /* leading steps the series has actual values for */
    const float *actual;    /* (actual_count, C): series values from `origin` on; not owned */
    /* Darts' metrics over the actual_count steps and every component, original scale:
     * mape = 100 * mean |(a - p) / a| (NaN when an actual value is 0), mae = mean |a - p|,
     * rmse = sqrt(mean (a - p)^2); all NaN when actual_count is 0. */
    double mape, mae, rmse;
};

/* Forecasts `n` steps after the first `origin` points of `series` from their last
 * `input_chunk_length` points (scaled with `scaler`, the one the model was trained with),
 * with `model` (built for batch 1 and at least input_chunk_length steps). The forecast's
 * time stamps continue the series' frequency (series->freq, tsrnn_freq_advance()). Errors:
 * TSRNN_ERR_USAGE when origin < input_chunk_length or when the stamps would pass the last one
 * tsrnn writes (an int64 index, the year 9999), TSRNN_ERR_NOMEM. */
struct tsrnn_covariates;

/* `cov` (NULL or count 0: none): the model's future covariates; they are computed from the
 * input_chunk_length points before the forecast to its last step, 'position' counted from
 * point origin - 1, as Darts' predict() encodes them (encode_inference). */
enum tsrnn_status tsrnn_forecast_run(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                     const struct tsrnn_scaler *scaler,
                                     const struct tsrnn_covariates *cov,
                                     const struct tsrnn_series *series, size_t origin,
                                     size_t input_chunk_length, size_t n);

/* Accepts a zeroed struct. */
void tsrnn_forecast_finish(struct tsrnn_forecast *f);

/* Writes the forecast as TimeSeries.to_csv() would: a header `<time_col>,<component>...`
 * ("time" without a time column) and one row per step, times in the series' own format,
 * values with 9 significant digits (float32 round trip). */
enum tsrnn_status tsrnn_forecast_write_csv(const struct tsrnn_forecast *f,
                                           const struct tsrnn_series *series, FILE *out);

/* The same into the file `path`, replaced atomically. TSRNN_ERR_IO naming it. */
enum tsrnn_status tsrnn_forecast_save_csv(const struct tsrnn_forecast *f,
                                          const struct tsrnn_series *series, const char *path);

/* Draws history (the last points before the forecast), actual values and the forecast into a
 * PNG of width x height (tsrnn_plot_png()), titled `title` followed by the MAPE when there
 * are actual values. */
enum tsrnn_status tsrnn_forecast_plot(const struct tsrnn_forecast *f,
                                      const struct tsrnn_series *series, const char *title,
                                      int width, int height, const char *path);

#endif
