/* What forecast.c shares with the rest of src/forecast/ (probabilistic.c), private to it. */
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

/* A backtest's scores from its values (forecast.c's score_backtest). */
void tsrnn_backtest_score(struct tsrnn_backtest *bt, const struct tsrnn_series *series);

/* A CSV field (quoted when it must be), and a stamp in the series' own format. */
void tsrnn_forecast_put_field(FILE *out, const char *text);
void tsrnn_forecast_put_time(FILE *out, const struct tsrnn_series *series, int64_t t);

#endif
