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
enum tsrnn_status tsrnn_forecast_run(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                     const struct tsrnn_scaler *scaler,
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

/* --- the forecasts of several series (Darts' global models) ------------------------------
 * One CSV in the long layout: a header `<id_name>,<time_col>,<component>...` and each
 * series' rows after the previous series', its id in the first column (quoted when it holds
 * a comma or a quote). */

/* One series to forecast: its values as read, where its history ends and its scaler. */
struct tsrnn_forecast_source {
    const struct tsrnn_series *series;
    const struct tsrnn_scaler *scaler;
    size_t origin;
    const char *id; /* NULL: the one unnamed series of a run, written without an id column */
};

/* Forecasts each of sources[0..count) `n` steps with tsrnn_forecast_run() and writes them
 * all to `out`: the single-series layout of tsrnn_forecast_write_csv() for one source without
 * an id, else the long layout under the header `id_name`. */
enum tsrnn_status tsrnn_forecast_write_all(struct tsrnn_model *model,
                                           const struct tsrnn_forecast_source *sources,
                                           size_t count, size_t input_chunk_length, size_t n,
                                           const char *id_name, FILE *out);

/* The same into the file `path`, replaced atomically. */
enum tsrnn_status tsrnn_forecast_save_all(struct tsrnn_model *model,
                                          const struct tsrnn_forecast_source *sources, size_t count,
                                          size_t input_chunk_length, size_t n, const char *id_name,
                                          const char *path);

/* Darts' metric(actual_list, pred_list, series_reduction=np.mean): the mean over the series
 * of each one's score; mape NaN when one series' is (an actual value of 0). */
struct tsrnn_forecast_scores {
    double mape, mae, rmse;
};
void tsrnn_forecast_scores_mean(struct tsrnn_forecast_scores *mean,
                                const struct tsrnn_forecast_scores *each, size_t count);

/* A file name part for a series' id: its bytes, with every one but letters, digits, '.', '-'
 * and '_' replaced by '_' ("store 1/a" -> "store_1_a"). */
void tsrnn_forecast_file_id(const char *id, char *out, size_t capacity);

/* Draws history (the last points before the forecast), actual values and the forecast into a
 * PNG of width x height (tsrnn_plot_png()), titled `title` followed by the MAPE when there
 * are actual values. */
enum tsrnn_status tsrnn_forecast_plot(const struct tsrnn_forecast *f,
                                      const struct tsrnn_series *series, const char *title,
                                      int width, int height, const char *path);

#endif
