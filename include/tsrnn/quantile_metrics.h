/* Darts' metrics of probabilistic forecasts (darts/metrics/metrics.py), in the original
 * scale, over a forecast's points and every component, from its samples' quantiles
 * (numpy.quantile, method "linear", of each step's and component's S samples):
 *
 *     mql(q)      2 mean max((q - 1) e, q e), e = a - quantile_q: the quantile (pinball)
 *                 loss; mql(0.5) is the median's MAE
 *     mic(lo, hi) the share of actual values inside [quantile_lo, quantile_hi]
 *     miw(lo, hi) the mean width quantile_hi - quantile_lo
 *
 * Each the mean over the components of their means over time (Darts' component_reduction
 * and time reduction, np.nanmean), i.e. over every point when nothing is NaN; several series
 * average as series_reduction=np.mean. */
#ifndef TSRNN_QUANTILE_METRICS_H
#define TSRNN_QUANTILE_METRICS_H

#include <stddef.h>
#include <stdio.h>

#define TSRNN_QUANTILE_METRICS_MAX 99

struct tsrnn_quantile_scores {
    size_t quantile_count;
    double quantiles[TSRNN_QUANTILE_METRICS_MAX]; /* mql's q */
    double mql[TSRNN_QUANTILE_METRICS_MAX];
    double low, high; /* mic's and miw's interval */
    double mic, miw;
};

/* numpy.quantile(x, q) of `count` float32 values sorted ascending, as numpy computes it with
 * a float64 q (Darts' metrics): the index (count - 1) q and the interpolation in double. */
double tsrnn_quantile_of_sorted_f64(const float *sorted, size_t count, double q);

/* The scores of the first n steps of one forecast with C components: actual (n, C), samples
 * (S, stride, C) (S >= 2, n <= stride: a forecast running past the actual values is scored
 * where they overlap, as Darts' metrics intersect the series), mql at
 * quantiles[0..quantile_count), mic and miw of (low, high). All NaN for n = 0. Uses `scratch`
 * (S floats). */
void tsrnn_quantile_scores_compute(struct tsrnn_quantile_scores *out, const float *actual,
                                   const float *samples, size_t S, size_t stride, size_t n,
                                   size_t C, const double *quantiles, size_t quantile_count,
                                   double low, double high, float *scratch);

/* The mean of `count` forecasts' scores (series_reduction=np.mean). */
void tsrnn_quantile_scores_mean(struct tsrnn_quantile_scores *mean,
                                const struct tsrnn_quantile_scores *each, size_t count);

/* CSV columns of the scores: the header's ",mql_q0.050,...,mic_q0.050_q0.950,miw_q0.050_q0.950"
 * (Darts' metric and quantile names) and a row's values (%.9g, NaN as nan), each after a
 * comma, for files whose other columns come first. */
void tsrnn_quantile_scores_header(FILE *out, const struct tsrnn_quantile_scores *s);
void tsrnn_quantile_scores_row(FILE *out, const struct tsrnn_quantile_scores *s);

/* Darts' names: "q0.050" of a quantile, "q0.050_q0.950" of an interval, into out. */
void tsrnn_quantile_name(double q, char *out, size_t out_nbytes);
void tsrnn_quantile_interval_name(double low, double high, char *out, size_t out_nbytes);

#endif
