/* Darts' metrics of probabilistic forecasts (include/tsrnn/quantile_metrics.h). Kept apart
 * from the point metrics (forecast.c's score()) on purpose: they read samples, not values. */
#include "tsrnn/quantile_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double tsrnn_quantile_of_sorted_f64(const float *sorted, size_t count, double q)
{
    double index = (double)(count - 1) * q;
    if (!(index > 0.0))
        return (double)sorted[0];
    if (index >= (double)(count - 1))
        return (double)sorted[count - 1];
    double below = floor(index), t = index - below;
    size_t i = (size_t)below;
    double a = (double)sorted[i], b = (double)sorted[i + 1], diff = b - a;
    return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

void tsrnn_quantile_scores_compute(struct tsrnn_quantile_scores *out, const float *actual,
                                   const float *samples, size_t S, size_t stride, size_t n,
                                   size_t C, const double *quantiles, size_t quantile_count,
                                   double low, double high, float *scratch)
{
    double loss[TSRNN_QUANTILE_METRICS_MAX] = { 0 }, covered = 0.0, width = 0.0;
    out->quantile_count = quantile_count;
    out->low = low;
    out->high = high;
    for (size_t k = 0; k < quantile_count; k++)
        out->quantiles[k] = quantiles[k];
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < C; c++) {
            for (size_t s = 0; s < S; s++)
                scratch[s] = samples[(s * stride + t) * C + c];
            qsort(scratch, S, sizeof(float), compare_floats);
            double a = (double)actual[t * C + c];
            for (size_t k = 0; k < quantile_count; k++) {
                double q = quantiles[k], e = a - tsrnn_quantile_of_sorted_f64(scratch, S, q);
                loss[k] += 2.0 * fmax((q - 1.0) * e, q * e);
            }
            double lo = tsrnn_quantile_of_sorted_f64(scratch, S, low);
            double hi = tsrnn_quantile_of_sorted_f64(scratch, S, high);
            covered += lo <= a && a <= hi ? 1.0 : 0.0;
            width += hi - lo;
        }
    double count = (double)(n * C);
    for (size_t k = 0; k < quantile_count; k++)
        out->mql[k] = count > 0 ? loss[k] / count : NAN;
    out->mic = count > 0 ? covered / count : NAN;
    out->miw = count > 0 ? width / count : NAN;
}

void tsrnn_quantile_scores_mean(struct tsrnn_quantile_scores *mean,
                                const struct tsrnn_quantile_scores *each, size_t count)
{
    *mean = each[0];
    for (size_t k = 0; k < mean->quantile_count; k++) {
        double sum = 0.0;
        for (size_t i = 0; i < count; i++)
            sum += each[i].mql[k];
        mean->mql[k] = sum / (double)count;
    }
    double mic = 0.0, miw = 0.0;
    for (size_t i = 0; i < count; i++) {
        mic += each[i].mic;
        miw += each[i].miw;
    }
    mean->mic = mic / (double)count;
    mean->miw = miw / (double)count;
}

void tsrnn_quantile_name(double q, char *out, size_t out_nbytes)
{
    snprintf(out, out_nbytes, "q%.3f", q);
}

void tsrnn_quantile_interval_name(double low, double high, char *out, size_t out_nbytes)
{
    snprintf(out, out_nbytes, "q%.3f_q%.3f", low, high);
}

void tsrnn_quantile_scores_header(FILE *out, const struct tsrnn_quantile_scores *s)
{
    char name[64];
    for (size_t k = 0; k < s->quantile_count; k++) {
        tsrnn_quantile_name(s->quantiles[k], name, sizeof(name));
        fprintf(out, ",mql_%s", name);
    }
    tsrnn_quantile_interval_name(s->low, s->high, name, sizeof(name));
    fprintf(out, ",mic_%s,miw_%s", name, name);
}

void tsrnn_quantile_scores_row(FILE *out, const struct tsrnn_quantile_scores *s)
{
    for (size_t k = 0; k < s->quantile_count; k++)
        fprintf(out, ",%.9g", s->mql[k]);
    fprintf(out, ",%.9g,%.9g", s->mic, s->miw);
}
