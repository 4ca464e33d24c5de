/* What forecast.c shares with the rest of src/forecast/ (backtest.c, probabilistic.c),
 * private to it. */
#ifndef TSRNN_FORECAST_INTERNAL_H
#define TSRNN_FORECAST_INTERNAL_H

#include <stdio.h>

#include "tsrnn/forecast.h"

/* Darts' point metrics (forecast.h) over `count` points of C components: actual[i * a_step +
 * c] against values[i * v_step + c]; NaN for none. *zeros (when not NULL) gets the actual
 * values that are 0, which mape leaves out. */
void tsrnn_forecast_score_points(const float *actual, size_t a_step, const float *values,
                                 size_t v_step, size_t count, size_t C,
                                 struct tsrnn_forecast_scores *out, size_t *zeros);

/* The covariates K of a source (0: none), and those of an n-step forecast after its origin
 * (rows (icl + n - 1, K) from point origin - icl + 1; *rows NULL without covariates). */
size_t tsrnn_forecast_covariate_count(const struct tsrnn_forecast_source *src);
enum tsrnn_status tsrnn_forecast_covariates(float **rows, const struct tsrnn_forecast_source *src,
                                            size_t icl, size_t n);

/* The model's inputs of `count` forecasts of n steps after `origins` of src's series: context
 * (count, icl, I) scaled with its scaler, each step beside the next point's covariates (`cov`
 * (rows, K) from series point cov_first on), and future ((n - 1, stride, K), this source's
 * `count` columns first) the covariates of steps 1 .. n-1; future untouched without K. */
void tsrnn_forecast_inputs(const struct tsrnn_forecast_source *src, const float *cov,
                           size_t cov_first, const size_t *origins, size_t count, size_t icl,
                           size_t n, float *context, size_t stride, float *future);

/* The n stamps after point origin - 1 of the series (its frequency); TSRNN_ERR_USAGE past the
 * last one tsrnn writes. */
enum tsrnn_status tsrnn_forecast_stamps(int64_t *times, const struct tsrnn_series *series,
                                        size_t origin, size_t n);

/* Points [first, first + length) of the source's covariates, scaled, 'position' counted from
 * point `reference` (rows owned). */
enum tsrnn_status tsrnn_forecast_covariate_rows(float **rows,
                                                const struct tsrnn_forecast_source *src,
                                                size_t first, size_t length, size_t reference);

/* A backtest's scores from its values (backtest.c). */
void tsrnn_backtest_score(struct tsrnn_backtest *bt, const struct tsrnn_series *series);

/* A CSV field (quoted when it must be), and a stamp in the series' own format. */
void tsrnn_forecast_put_field(FILE *out, const char *text);
void tsrnn_forecast_put_time(FILE *out, const struct tsrnn_series *series, int64_t t);

/* --- forecast.c's, for backtest.c ------------------------------------------------------ */

/* Darts' point metrics of one forecast (tsrnn_forecast_score_points()) into `out`. */
void tsrnn_forecast_point_scores(const float *actual, size_t a_step, const float *values,
                                 size_t v_step, size_t count, size_t C,
                                 struct tsrnn_forecast_scores *out, size_t *zeros);

/* Forecasts n steps after each of the `count` origins of src's series in one batch of the
 * model (values: (count, n, C), inverse-scaled), the covariates `cov` from point cov_first. */
enum tsrnn_status tsrnn_forecast_predict_after(struct tsrnn_model *model,
                                               const struct tsrnn_forecast_source *src,
                                               const float *cov, size_t cov_first,
                                               const size_t *origins, size_t count, size_t icl,
                                               size_t n, float *values);

/* The CSV layout of TimeSeries.to_csv(): the header, the id field, one row. */
void tsrnn_forecast_put_header(FILE *out, const struct tsrnn_series *series, const char *id_name);
void tsrnn_forecast_put_id(FILE *out, const char *id);
void tsrnn_forecast_put_row(FILE *out, const struct tsrnn_series *series, int64_t t,
                            const float *values);

/* A stream flushed and checked; the failure remembered for the file's message. */
enum tsrnn_status tsrnn_forecast_flushed(FILE *out, const char *what);

/* Writes `path` atomically with write(what, file). */
typedef enum tsrnn_status (*tsrnn_forecast_csv_writer)(const void *what, FILE *out);
enum tsrnn_status tsrnn_forecast_save_csv_file(tsrnn_forecast_csv_writer write, const void *what,
                                               const char *path);

/* Draws `lines` over `series`' time axis and components into the PNG `path`. */
struct tsrnn_plot_line;
enum tsrnn_status tsrnn_forecast_plot_lines(const struct tsrnn_series *series, const char *title,
                                            const struct tsrnn_plot_line *lines, size_t line_count,
                                            int width, int height, const char *path);

#endif
