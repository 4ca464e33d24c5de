/* Forecasts, their scores and their files (include/tsrnn/forecast.h). */
#include "tsrnn/forecast.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/encoders.h"
#include "tsrnn/plot.h"

/* Darts' metrics over the steps that have actual values (see the header). */
static void score(struct tsrnn_forecast *f)
{
    size_t count = f->actual_count * f->component_count;
    double abs_sum = 0.0, sq_sum = 0.0, pct_sum = 0.0;
    bool zero = false;

    f->mape = f->mae = f->rmse = NAN;
    if (count == 0)
        return;
    for (size_t i = 0; i < count; i++) {
        double a = (double)f->actual[i], e = a - (double)f->values[i];
        abs_sum += fabs(e);
        sq_sum += e * e;
        zero |= a == 0.0;
        pct_sum += fabs(e / a);
    }
    f->mae = abs_sum / (double)count;
    f->rmse = sqrt(sq_sum / (double)count);
    f->mape = zero ? NAN : 100.0 * pct_sum / (double)count;
}

/* The model's input rows for a forecast at `origin`: context (icl, C + K), each row the
 * scaled y[t] beside cov[t + 1], and *future (n - 1, K), the covariates of the steps after
 * the first (owned; NULL when K = 0). */
static enum tsrnn_status forecast_inputs(float *context, float **future,
                                         const struct tsrnn_scaler *scaler,
                                         const struct tsrnn_covariates *cov,
                                         const struct tsrnn_series *series, size_t origin,
                                         size_t icl, size_t n)
{
    size_t C = series->component_count, K = cov != NULL ? cov->count : 0;
    *future = NULL;
    for (size_t t = 0; t < icl; t++)
        memcpy(context + t * (C + K), series->values + (origin - icl + t) * C, C * sizeof(float));
    for (size_t t = 0; t < icl; t++)
        tsrnn_scaler_transform(scaler, context + t * (C + K), 1);
    if (K == 0)
        return TSRNN_OK;
    size_t rows = icl + n - 1; /* the stamps origin - icl + 1 .. origin + n - 1 */
    float *all = malloc(rows * K * sizeof(float));
    if (all == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu covariate rows", rows);
    enum tsrnn_status status =
        tsrnn_covariates_compute(all, cov, series, origin - icl + 1, rows, origin - 1);
    if (status != TSRNN_OK) {
        free(all);
        return status;
    }
    for (size_t t = 0; t < icl; t++)
        memcpy(context + t * (C + K) + C, all + t * K, K * sizeof(float));
    memmove(all, all + icl * K, (n - 1) * K * sizeof(float));
    *future = all;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_forecast_run(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                     const struct tsrnn_scaler *scaler,
                                     const struct tsrnn_covariates *cov,
                                     const struct tsrnn_series *series, size_t origin,
                                     size_t input_chunk_length, size_t n)
{
    size_t C = series->component_count, icl = input_chunk_length;
    size_t K = cov != NULL ? cov->count : 0;

    memset(f, 0, sizeof(*f));
    if (origin < icl || origin > series->length)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the forecast needs the last input_chunk_length = %zu points before "
                           "it; the series has %zu",
                           icl, origin < series->length ? origin : series->length);
    f->length = n;
    f->component_count = C;
    f->origin = origin;
    f->times = malloc((n ? n : 1) * sizeof(int64_t));
    f->values = malloc((n ? n : 1) * C * sizeof(float));
    float *context = malloc(icl * (C + K) * sizeof(float)), *future = NULL;
    if (f->times == NULL || f->values == NULL || context == NULL) {
        free(context);
        tsrnn_forecast_finish(f);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a %zu-step forecast", n);
    }
    enum tsrnn_status status =
        n > 0 ? forecast_inputs(context, &future, scaler, cov, series, origin, icl, n) : TSRNN_OK;
    if (status == TSRNN_OK)
        status = tsrnn_model_predict_covariates(model, f->values, context, icl, future, n);
    free(context);
    free(future);
    if (status != TSRNN_OK) {
        tsrnn_forecast_finish(f);
        return status;
    }
    tsrnn_scaler_inverse(scaler, f->values, n);

    /* The stamps after the history, as pandas' date_range(last, periods=n + 1, freq) goes on:
     * month ends stay month ends, business days skip weekends. */
    int64_t last = series->times[origin - 1]; /* origin >= icl >= 1 */
    for (size_t i = 0; i < n; i++)
        if (!tsrnn_freq_advance(&series->freq, last, (int64_t)i + 1, &f->times[i])) {
            char name[TSRNN_FREQ_NAME_MAX], from[64];
            tsrnn_freq_name(&series->freq, name, sizeof(name));
            tsrnn_time_format(last, series->time_unit, from, sizeof(from));
            tsrnn_forecast_finish(f);
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "a %zu-step forecast at freq %s after %s would pass the last %s "
                               "tsrnn can write (%s); accepted: a shorter forecast",
                               n, name, from,
                               series->time_unit == TSRNN_TIME_INDEX ? "integer index" : "stamp",
                               series->time_unit == TSRNN_TIME_INDEX ? "9223372036854775807"
                                                                     : "9999-12-31 23:59:59");
        }
    f->actual = series->values + origin * C;
    f->actual_count = series->length - origin < n ? series->length - origin : n;
    score(f);
    return TSRNN_OK;
}

void tsrnn_forecast_finish(struct tsrnn_forecast *f)
{
    free(f->times);
    free(f->values);
    memset(f, 0, sizeof(*f));
}

/* A CSV field: quoted (RFC 4180) when it holds a comma, quote or line break. */
static void put_field(FILE *out, const char *text)
{
    if (strpbrk(text, ",\"\r\n") == NULL) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

enum tsrnn_status tsrnn_forecast_write_csv(const struct tsrnn_forecast *f,
                                           const struct tsrnn_series *series, FILE *out)
{
    put_field(out, series->time_name[0] ? series->time_name : "time");
    for (size_t c = 0; c < f->component_count; c++) {
        fputc(',', out);
        put_field(out, series->component_names[c]);
    }
    fputc('\n', out);
    for (size_t i = 0; i < f->length; i++) {
        char stamp[64];
        tsrnn_time_format(f->times[i], series->time_unit, stamp, sizeof(stamp));
        fputs(stamp, out);
        for (size_t c = 0; c < f->component_count; c++)
            fprintf(out, ",%.9g", (double)f->values[i * f->component_count + c]);
        fputc('\n', out);
    }
    if (fflush(out) != 0 || ferror(out))
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write the forecast");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_forecast_save_csv(const struct tsrnn_forecast *f,
                                          const struct tsrnn_series *series, const char *path)
{
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    enum tsrnn_status status = tsrnn_forecast_write_csv(f, series, af.file);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return tsrnn_error(TSRNN_ERR_IO, "cannot write %s", tsrnn_display_path(path));
    }
    return tsrnn_atomic_file_commit(&af);
}

enum tsrnn_status tsrnn_forecast_plot(const struct tsrnn_forecast *f,
                                      const struct tsrnn_series *series, const char *title,
                                      int width, int height, const char *path)
{
    /* The history as Darts' guide shows it, but at most the last 3n (and 240 or more) points:
     * a long series would squeeze the forecast into a sliver. */
    size_t keep = 3 * f->length > 240 ? 3 * f->length : 240;
    size_t first = f->origin > keep ? f->origin - keep : 0;
    size_t C = f->component_count;
    char full_title[512];

    if (!isnan(f->mape))
        snprintf(full_title, sizeof(full_title), "%s (MAPE %.2f%%)", title, f->mape);
    else if (!isnan(f->mae))
        snprintf(full_title, sizeof(full_title), "%s (MAE %.4g)", title, f->mae);
    else
        snprintf(full_title, sizeof(full_title), "%s", title);
    const struct tsrnn_plot_line lines[] = {
        { "history", TSRNN_PLOT_BLUE, series->times + first, series->values + first * C,
          f->origin - first },
        { "actual", TSRNN_PLOT_ORANGE, series->times + f->origin, f->actual, f->actual_count },
        { "forecast", TSRNN_PLOT_GREEN, f->times, f->values, f->length },
    };
    const struct tsrnn_plot plot = {
        .title = full_title,
        .time_unit = series->time_unit,
        .time_name = series->time_name,
        .component_count = C,
        .component_names = (const char(*)[TSRNN_NAME_MAX])series->component_names,
        .lines = lines,
        .line_count = sizeof(lines) / sizeof(lines[0]),
        .width = width,
        .height = height,
    };
    return tsrnn_plot_png(&plot, path);
}
