/* Forecasts in the original scale, as Darts' RNNModel.predict(n) gives them, with the time
 * stamps that continue the series, scores against actual values where the series has them,
 * and the files a user looks at: a CSV (TimeSeries.to_csv layout) and a PNG.
 */
#ifndef TSRNN_FORECAST_H
#define TSRNN_FORECAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/model.h"
#include "tsrnn/quantile_metrics.h"
#include "tsrnn/sampling.h"

/* Darts' metrics of a forecast against actual values, original scale: each component scored
 * over the points, then the components' scores averaged (darts.metrics' component_reduction
 * = np.nanmean): mape = 100 * mean |(a - p) / a| over the points whose actual value is not 0
 * (Darts 0.48's zero_division="warn": a / 0 is NaN and left out, 0 / 0 counts as 0), mae =
 * mean |a - p|, rmse = sqrt(mean (a - p)^2) per component (not pooled); NaN where there is
 * nothing to score. */
struct tsrnn_forecast_scores {
    double mape, mae, rmse;
};

struct tsrnn_forecast {
    size_t length;          /* n: steps forecast */
    size_t component_count; /* C */
    size_t origin;          /* the series points [0, origin) were the history */
    int64_t *times;         /* (n) owned */
    float *values;          /* (n, C) owned, original scale */
    size_t actual_count;    /* leading steps the series has actual values for */
    const float *actual;    /* (actual_count, C): series values from `origin` on; not owned */
    /* Darts' metrics over the actual_count steps, per component then averaged over the
     * components, original scale (struct tsrnn_forecast_scores); all NaN when actual_count is
     * 0. */
    double mape, mae, rmse;
    size_t zero_actual_count; /* actual values that are 0: left out of mape, as Darts does */
    /* A model with a likelihood (tsrnn_forecast_predict()): */
    size_t sample_count;         /* S: the paths drawn; 1 for a point forecast or one path */
    float *samples;              /* (S, n, C) owned when S > 1, original scale; `values` holds their
                            median, the point metrics score it (Darts' default q = 0.5) */
    size_t quantile_count;       /* Q: the [forecast] quantiles, with S > 1 */
    float *quantile_values;      /* (n, C, Q) owned: TimeSeries.quantile() of the samples */
    float *band_low, *band_high; /* (n, C) owned with S > 1: the picture's band */
    bool has_quantile_scores;    /* S > 1 and actual values: */
    struct tsrnn_quantile_scores quantile_scores;
    size_t param_count; /* P when `values` holds the likelihood's parameters of the first step
                           instead (predict_likelihood_parameters): (1, C*P), the model's
                           scale; else 0 */
};

/* How a model with a likelihood forecasts, and what the files show of it: Darts'
 * predict(num_samples, predict_likelihood_parameters) and TimeSeries.quantile() / plot(). */
#define TSRNN_FORECAST_MAX_QUANTILES TSRNN_QUANTILE_METRICS_MAX
struct tsrnn_forecast_options {
    struct tsrnn_sampling sampling;
    size_t quantile_count; /* forecast.csv's columns with S > 1, and mql's q */
    double quantiles[TSRNN_FORECAST_MAX_QUANTILES];
    double low_quantile, high_quantile; /* the band of the picture; mic's and miw's interval */
};

struct tsrnn_covariates;
struct tsrnn_forecast_source;

/* Forecasts `n` steps after the first src->origin points of src->series from their last
 * `input_chunk_length` points (scaled with src->scaler, the one the model was trained with),
 * with `model` (built for batch 1 and at least input_chunk_length steps). The forecast's
 * time stamps continue the series' frequency (series->freq, tsrnn_freq_advance()). Errors:
 * TSRNN_ERR_USAGE when origin < input_chunk_length or when the stamps would pass the last one
 * tsrnn writes (an int64 index, the year 9999), TSRNN_ERR_NOMEM.
 * With covariates (src->covariates) they are computed from the input_chunk_length points
 * before the forecast to its last step, 'position' counted from point origin - 1, as Darts'
 * predict() encodes them (encode_inference). */
enum tsrnn_status tsrnn_forecast_run(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                     const struct tsrnn_forecast_source *src,
                                     size_t input_chunk_length, size_t n);

/* Whether the stamps of an n-step forecast after src->origin stay within what tsrnn can write
 * (the year 9999, or an integer index's int64): TSRNN_OK, or the TSRNN_ERR_USAGE that
 * tsrnn_forecast_run() would return, at once, before any work. */
enum tsrnn_status tsrnn_forecast_check_range(const struct tsrnn_forecast_source *src, size_t n);

/* What tsrnn_forecast_run() would find missing of src's covariates for `n` steps: TSRNN_OK,
 * or its TSRNN_ERR_DATA naming the covariate columns, the series and the missing dates. Lets
 * the trainer refuse a [forecast] n before it trains rather than after. */
enum tsrnn_status tsrnn_forecast_check_covariates(const struct tsrnn_forecast_source *src,
                                                  size_t input_chunk_length, size_t n);

/* Appends " (series 'ID')" to this thread's error message, unless `id` is NULL or the
 * message names that series already (the covariates' "of series 'ID'"); returns `status`. */
enum tsrnn_status tsrnn_forecast_error_series(enum tsrnn_status status, const char *id);

/* Accepts a zeroed struct. */
void tsrnn_forecast_finish(struct tsrnn_forecast *f);

struct tsrnn_config;

/* The options of a config's [forecast] section (num_samples, quantiles, low_quantile,
 * high_quantile; predict_likelihood_parameters as `parameters` says), sampling with torch
 * seed `seed` (tsrnn_darts_seed()) in batches of [training] batch_size, as Darts' predict()
 * defaults to the model's batch_size. */
void tsrnn_forecast_options_from_config(struct tsrnn_forecast_options *opt,
                                        const struct tsrnn_config *cfg, uint32_t seed,
                                        bool parameters);

/* Darts' predict(n, series=[...], num_samples=S) of every source in one call: f[0..count).
 * A model without a likelihood: each source's tsrnn_forecast_run(), `opt` unused (may be
 * NULL). With one: the sample paths of all sources drawn together as Darts draws them
 * (tsrnn_sample_forecasts(), opt->sampling), inverse-scaled; with `lengths` (NULL: n each),
 * forecast i is cut to lengths[i] <= n steps afterwards (Darts' predict(n = the longest) then
 * a slice). Errors as tsrnn_forecast_run() and tsrnn_sample_forecasts(); nothing to finish
 * on failure. */
enum tsrnn_status tsrnn_forecast_predict(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                         const struct tsrnn_forecast_source *sources, size_t count,
                                         size_t input_chunk_length, size_t n, const size_t *lengths,
                                         const struct tsrnn_forecast_options *opt);

/* Writes forecasts f[0..count) of `sources` (tsrnn_forecast_predict() with `lik` and `opt`)
 * as one CSV, the layout of tsrnn_forecast_write_all() (an id column `id_name` for named
 * sources), its value columns: each component's quantiles, `<component>_q0.050` ... (Darts'
 * TimeSeries.quantile() names, component by component) with S > 1; the likelihood's
 * parameters, `<component>_mu`, `<component>_sigma` ... with param_count; else the
 * components. */
enum tsrnn_status tsrnn_forecast_write_set(const struct tsrnn_forecast *f,
                                           const struct tsrnn_forecast_source *sources,
                                           size_t count, const char *id_name,
                                           const struct tsrnn_likelihood *lik,
                                           const struct tsrnn_forecast_options *opt, FILE *out);

/* Every sample path of f[0..count) (S > 1) as Darts' TimeSeries.to_dataframe() lays out a
 * stochastic series: `<time>,<component>_s0,<component>_s1,...` (component by component),
 * after the id column for named sources. */
enum tsrnn_status tsrnn_forecast_write_samples(const struct tsrnn_forecast *f,
                                               const struct tsrnn_forecast_source *sources,
                                               size_t count, const char *id_name, FILE *out);

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

/* One series to forecast: its values as read, where its history ends, its scaler and its
 * future covariates. */
struct tsrnn_forecast_source {
    const struct tsrnn_series *series;
    const struct tsrnn_scaler *scaler;
    size_t origin;
    const char *id; /* NULL: the one unnamed series of a run, written without an id column */
    const struct tsrnn_covariates *covariates; /* NULL or count 0: none */
    const struct tsrnn_scaler *cov_scaler;     /* (K) the series' covariate scaler */
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
 * of each one's score; mape NaN when one series' is (every actual value of it 0). */
void tsrnn_forecast_scores_mean(struct tsrnn_forecast_scores *mean,
                                const struct tsrnn_forecast_scores *each, size_t count);

/* How many series of a run of several get a picture of their forecast (training's
 * forecast_<id>.png) or backtest (tsrnn-predict's backtest_<id>.png): the first ones. */
#define TSRNN_FORECAST_PLOTS 4

/* A file name part for a series' id: its bytes, with every one but letters, digits, '.', '-'
 * and '_' replaced by '_' ("store 1/a" -> "store_1_a"). */
void tsrnn_forecast_file_id(const char *id, char *out, size_t capacity);

/* Series i's part of its picture's file name among the series ids[0..i]: its
 * tsrnn_forecast_file_id(), and its index too ("_<i>") when an earlier series' id gives the
 * same name ("a b" and "a_b"). */
void tsrnn_forecast_plot_file_id(const char *const *ids, size_t i, char *out, size_t capacity);

/* Draws history (the last points before the forecast), actual values and the forecast into a
 * PNG of width x height (tsrnn_plot_png()), titled `title` followed by the MAPE when there
 * are actual values. */
enum tsrnn_status tsrnn_forecast_plot(const struct tsrnn_forecast *f,
                                      const struct tsrnn_series *series, const char *title,
                                      int width, int height, const char *path);

/* --- backtests ------------------------------------------------------------------------
 * Darts' historical_forecasts(series, start, forecast_horizon=H, stride=S, retrain=False,
 * overlap_end=False, last_points_only) and backtest() for one series: F forecasts of H steps
 * starting at series points first, first + S, ..., each from the input_chunk_length points
 * before it (scaled with the model's scaler, as tsrnn_forecast_run()), all inside the series:
 * the last starts at or before L - H. */
struct tsrnn_backtest {
    size_t forecast_count; /* F */
    size_t horizon;        /* H */
    size_t stride;         /* S */
    size_t first;          /* series point where the first forecast starts */
    size_t component_count;
    bool last_points_only; /* Darts' last_points_only: score the series of last points */
    float *values;         /* (F, H, C) owned, original scale */
    /* (F) owned: forecast f's scores over its H points, or with last_points_only over its
     * last point alone (what backtest(reduction=None) gives per forecast). */
    struct tsrnn_forecast_scores *scores;
    /* Darts' backtest() value of each metric: the mean of the forecasts' scores leaving NaN
     * out (reduction=np.nanmean); with last_points_only the score of the one series of last
     * points. */
    struct tsrnn_forecast_scores overall;
    /* A model with a likelihood (tsrnn_backtest_run_sampled): S paths per forecast, `values`
     * their median; with S > 1 the quantile metrics of each forecast (F, owned) and overall,
     * as the point metrics above. */
    size_t sample_count;
    bool has_quantile_scores;
    struct tsrnn_quantile_scores *quantile_scores;
    struct tsrnn_quantile_scores quantile_overall;
};

/* Where the first forecast starts: `start` as tsrnn-predict's --start takes it, Darts'
 * `start` with start_format="value" -- a fraction of the series ("0.75": point
 * int((L - 1) * 0.75)), a time stamp of the series ("1959-02"), or an integer: for a series
 * with an integer index its value, otherwise a position (negative: from the end) -- or, with
 * `start` NULL, point `fallback` (named `fallback_what` in messages). TSRNN_ERR_USAGE, naming
 * the start and the accepted range, when it is not a point of the series or lies outside
 * [input_chunk_length, L - horizon] (Darts moves a start before the first forecastable point
 * forward by whole strides; tsrnn asks for one inside). */
enum tsrnn_status tsrnn_backtest_first(const struct tsrnn_series *series, const char *start,
                                       size_t fallback, const char *fallback_what,
                                       size_t input_chunk_length, size_t horizon, size_t *first);

/* The plan of a backtest of sources[0..count): each one's first forecast (firsts[i]:
 * tsrnn_backtest_first() of its series from `start`, or with `start` NULL from its origin,
 * named `fallback_what`), and how many windows a batch holds (*batch): as many as the series
 * with the most forecasts has (every `stride`-th from its first, `horizon` steps inside it),
 * at most `batch_size` (training's, as Darts predicts with the model's batch_size; 0: 1). A
 * failure names its series (tsrnn_forecast_error_series()); one from the default start ends
 * in "; choose the first forecast's start" and `start_hint` (how the caller's user does). */
enum tsrnn_status tsrnn_backtest_plan(size_t *firsts, size_t *batch,
                                      const struct tsrnn_forecast_source *sources, size_t count,
                                      const char *start, const char *fallback_what,
                                      const char *start_hint, size_t input_chunk_length,
                                      size_t horizon, size_t stride, size_t batch_size);

/* Runs the forecasts of src's series (its scaler and covariates; its origin unused),
 * model->batch_capacity of them per batch (each one's numbers do not depend on the others:
 * tsrnn_model_predict()), and scores them. Covariates are computed over the whole series
 * once, 'position' counted from its last point, as Darts' historical_forecasts() encodes
 * them (encode_train_inference). `first` as
 * tsrnn_backtest_first() gives it; horizon and stride >= 1. TSRNN_ERR_USAGE for arguments
 * out of range, TSRNN_ERR_NOMEM, or the model's error. */
enum tsrnn_status tsrnn_backtest_run(struct tsrnn_backtest *bt, struct tsrnn_model *model,
                                     const struct tsrnn_forecast_source *src, size_t first,
                                     size_t input_chunk_length, size_t horizon, size_t stride,
                                     bool last_points_only);

/* The same for a model with a likelihood: Darts' historical_forecasts(num_samples=S) as one
 * predict_from_dataset() call over all F forecast windows (tsrnn_sample_forecasts() with
 * opt->sampling; the windows in batches of its batch_size), their paths inverse-scaled and
 * scored: the point metrics on the median, the quantile metrics (opt's quantiles and
 * interval) on the samples. A model without a likelihood: tsrnn_backtest_run(). */
enum tsrnn_status tsrnn_backtest_run_sampled(struct tsrnn_backtest *bt, struct tsrnn_model *model,
                                             const struct tsrnn_forecast_source *src, size_t first,
                                             size_t input_chunk_length, size_t horizon,
                                             size_t stride, bool last_points_only,
                                             const struct tsrnn_forecast_options *opt);

/* Accepts a zeroed struct. */
void tsrnn_backtest_finish(struct tsrnn_backtest *bt);

/* One series' backtest in the files of one or several: `bt` over `series`, named `id` (NULL:
 * the one unnamed series of a run). */
struct tsrnn_backtest_part {
    const struct tsrnn_backtest *bt;
    const struct tsrnn_series *series;
    const char *id;
};

/* The mean over parts[0..count) of their backtests' overall quantile scores
 * (series_reduction=np.mean). */
void tsrnn_backtest_quantile_mean(struct tsrnn_quantile_scores *mean,
                                  const struct tsrnn_backtest_part *parts, size_t count);

/* The forecasts of parts[0..count) (all with the same last_points_only) as one CSV, replaced
 * atomically: with last_points_only the series of last points in TimeSeries.to_csv()'s
 * layout (as tsrnn_forecast_write_csv()); otherwise `start,<time_col>,<component>...`, one
 * row per forecast and step, `start` the stamp of the forecast's first point. Named parts
 * (several, or one with an id) get the id column `id_name` first, each series' rows after the
 * previous one's (the long layout of tsrnn_forecast_write_all()). Values with 9 significant
 * digits. TSRNN_ERR_IO naming the file. */
enum tsrnn_status tsrnn_backtest_save_csv(const struct tsrnn_backtest_part *parts, size_t count,
                                          const char *id_name, const char *path);

/* The scores as a CSV, replaced atomically: `start,mape,mae,rmse` (after the id column for
 * named parts), one row per forecast (`start` the stamp of its first point), then the row
 * `backtest` with the series' backtest values; for named parts with `mean` not NULL a last
 * row with an empty id and `backtest`: the mean over the series (Darts' backtest() of a list
 * gives one value per series). With quantile scores (a likelihood, S > 1) the columns
 * tsrnn_quantile_scores_header() names follow. NaN as `nan`. TSRNN_ERR_IO naming the file. */
enum tsrnn_status tsrnn_backtest_save_errors(const struct tsrnn_backtest_part *parts, size_t count,
                                             const char *id_name,
                                             const struct tsrnn_forecast_scores *mean,
                                             const char *path);

/* Draws the actual series (from max(3 * the backtested span, 240) points before the first
 * forecast) and the forecasts, or the series of last points, into a PNG (tsrnn_plot_png()),
 * titled `title` followed by the backtest's MAPE (MAE without one). */
enum tsrnn_status tsrnn_backtest_plot(const struct tsrnn_backtest *bt,
                                      const struct tsrnn_series *series, const char *title,
                                      int width, int height, const char *path);

/* --- a forecast of every series and its files ------------------------------------------
 * The one orchestration of the training's forecasts after the fit and tsrnn-predict's
 * forecast: every source forecast in one Darts predict() call (tsrnn_forecast_predict()),
 * then the files the caller names: the CSV (tsrnn_forecast_write_set()), the sample paths
 * (tsrnn_forecast_write_samples()) and the pictures (tsrnn_forecast_plot()). */
struct tsrnn_forecast_set {
    const struct tsrnn_forecast_source *sources; /* (count) not owned */
    size_t count;
    struct tsrnn_forecast *f;                  /* (count) owned */
    const struct tsrnn_likelihood *likelihood; /* the model's */
    struct tsrnn_forecast_options opt;         /* as forecast; zeroed without */
};

/* tsrnn_forecast_predict() of sources[0..count) into set->f, with `opt` (NULL for a model
 * without a likelihood) copied into the set. Errors as tsrnn_forecast_predict(), and
 * TSRNN_ERR_NOMEM; the set needs tsrnn_forecast_set_finish() in every case. */
enum tsrnn_status tsrnn_forecast_set_predict(struct tsrnn_forecast_set *set,
                                             struct tsrnn_model *model,
                                             const struct tsrnn_forecast_source *sources,
                                             size_t count, size_t input_chunk_length, size_t n,
                                             const size_t *lengths,
                                             const struct tsrnn_forecast_options *opt);

/* Accepts a zeroed struct. */
void tsrnn_forecast_set_finish(struct tsrnn_forecast_set *set);

/* Where a set's files go; NULL: not written. Each file is replaced atomically. */
struct tsrnn_forecast_files {
    const char *csv_path;     /* the forecasts' CSV */
    FILE *csv_stream;         /* or, without csv_path, the CSV into this stream (standard output) */
    const char *id_name;      /* the id column of named sources */
    const char *samples_path; /* every sample path (S > 1) */
    /* The pictures: the first source's at plot_path, or, without it, each of the first
     * TSRNN_FORECAST_PLOTS sources' in the folder plot_dir: forecast.png for the one source
     * without an id, forecast_<id>.png (tsrnn_forecast_plot_file_id()) for named ones. Their
     * title: `title` (", series <id>" after it for named sources); width x height pixels. */
    const char *plot_path;
    const char *plot_dir;
    const char *title;
    int width, height;
};

/* Writes the files `files` names from set (tsrnn_forecast_set_predict()): the stream first,
 * the CSV files on a helper thread while this thread draws the pictures; *drawn gets how many
 * pictures were drawn. Errors: TSRNN_ERR_IO naming the file that could not be written (a
 * file's failure wins over a picture's), the pictures' errors (tsrnn_forecast_plot()). */
enum tsrnn_status tsrnn_forecast_set_save(const struct tsrnn_forecast_set *set,
                                          const struct tsrnn_forecast_files *files, size_t *drawn);

#endif
