/* Forecasts, their scores and their files (include/tsrnn/forecast.h). */
#include "tsrnn/forecast.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/encoders.h"
#include "tsrnn/plot.h"

/* Darts' metrics (see the header) over `count` points of C components: actual[i * a_step +
 * c] against values[i * v_step + c], original scale; NaN for none. Steps in floats let the
 * backtest score every forecast's last point where they lie. Each component is scored over
 * time (np.nanmean), then the components are averaged (component_reduction=np.nanmean), as
 * darts.metrics' multivariate_support does: a root mean square per component, not pooled.
 * *zeros gets the points whose actual value is 0, which mape() (zero_division="warn")
 * leaves out: their percentage error is NaN, or 0 where the forecast is 0 too. */
void tsrnn_forecast_point_scores(const float *actual, size_t a_step, const float *values,
                                 size_t v_step, size_t count, size_t C,
                                 struct tsrnn_forecast_scores *out, size_t *zeros)
{
    double mape_sum = 0.0, mae_sum = 0.0, rmse_sum = 0.0;
    size_t mape_count = 0;

    *out = (struct tsrnn_forecast_scores){ NAN, NAN, NAN };
    if (zeros != NULL)
        *zeros = 0;
    if (count * C == 0)
        return;
    for (size_t c = 0; c < C; c++) {
        double abs_sum = 0.0, sq_sum = 0.0, pct_sum = 0.0;
        size_t pct_count = 0;
        for (size_t i = 0; i < count; i++) {
            double a = (double)actual[i * a_step + c], e = a - (double)values[i * v_step + c];
            abs_sum += fabs(e);
            sq_sum += e * e;
            if (a != 0.0 || e == 0.0) { /* 0 / 0 counts as 0; x / 0 is NaN, left out */
                pct_sum += a != 0.0 ? fabs(e / a) : 0.0;
                pct_count++;
            }
            if (a == 0.0 && zeros != NULL)
                (*zeros)++;
        }
        mae_sum += abs_sum / (double)count;
        rmse_sum += sqrt(sq_sum / (double)count);
        if (pct_count > 0) {
            mape_sum += 100.0 * pct_sum / (double)pct_count;
            mape_count++;
        }
    }
    out->mae = mae_sum / (double)C;
    out->rmse = rmse_sum / (double)C;
    out->mape = mape_count > 0 ? mape_sum / (double)mape_count : NAN;
}

/* The covariates K of a source (0: none). */
static size_t covariate_count(const struct tsrnn_forecast_source *src)
{
    return src->covariates != NULL ? src->covariates->count : 0;
}

/* Points [first, first + length) of the source's covariates (length, K), scaled with its
 * cov_scaler, 'position' counted from point `reference`; owned. */
static enum tsrnn_status covariate_rows(float **rows, const struct tsrnn_forecast_source *src,
                                        size_t first, size_t length, size_t reference)
{
    size_t K = covariate_count(src);
    *rows = malloc((length ? length : 1) * K * sizeof(float));
    if (*rows == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu covariate rows", length);
    enum tsrnn_status status = tsrnn_covariates_compute(
        *rows, src->covariates, src->cov_scaler, src->series, src->id, first, length, reference);
    if (status != TSRNN_OK) {
        free(*rows);
        *rows = NULL;
    }
    return status;
}

/* The covariates of an n-step forecast after src->origin (origin >= icl) into *rows (owned;
 * NULL without covariates): Darts' predict() encodes the points origin - icl + 1 .. origin +
 * n - 1, 'position' counted from the history's end (encode_inference). */
static enum tsrnn_status forecast_covariates(float **rows, const struct tsrnn_forecast_source *src,
                                             size_t icl, size_t n)
{
    *rows = NULL;
    if (covariate_count(src) == 0 || n == 0)
        return TSRNN_OK;
    return covariate_rows(rows, src, src->origin - icl + 1, icl + n - 1, src->origin - 1);
}

enum tsrnn_status tsrnn_forecast_check_covariates(const struct tsrnn_forecast_source *src,
                                                  size_t input_chunk_length, size_t n)
{
    float *rows;
    if (src->origin < input_chunk_length)
        return TSRNN_OK; /* tsrnn_forecast_run() refuses it on its own */
    TSRNN_TRY(forecast_covariates(&rows, src, input_chunk_length, n));
    free(rows);
    return TSRNN_OK;
}

/* --- for src/forecast/ (internal.h) --------------------------------------------------- */

/* The stamp `k` steps after `last` at the series' frequency; false (with the message) past
 * the last stamp tsrnn can write. */
static enum tsrnn_status stamp_after(const struct tsrnn_series *series, int64_t last, size_t k,
                                     size_t n, int64_t *out)
{
    if (k <= (size_t)INT64_MAX && tsrnn_freq_advance(&series->freq, last, (int64_t)k, out))
        return TSRNN_OK;
    char name[TSRNN_FREQ_NAME_MAX], from[64];
    tsrnn_freq_name(&series->freq, name, sizeof(name));
    tsrnn_time_format(last, series->time_unit, from, sizeof(from));
    return tsrnn_error(
        TSRNN_ERR_USAGE,
        "a %zu-step forecast at freq %s after %s would pass the last %s tsrnn can "
        "write (%s); accepted: a shorter forecast",
        n, name, from, series->time_unit == TSRNN_TIME_INDEX ? "integer index" : "stamp",
        series->time_unit == TSRNN_TIME_INDEX ? "9223372036854775807" : "9999-12-31 23:59:59");
}

enum tsrnn_status tsrnn_forecast_stamps(int64_t *times, const struct tsrnn_series *series,
                                        size_t origin, size_t n)
{
    /* The stamps after the history, as pandas' date_range(last, periods=n + 1, freq) goes on:
     * month ends stay month ends, business days skip weekends. */
    int64_t last = series->times[origin - 1]; /* origin >= icl >= 1 */
    for (size_t i = 0; i < n; i++)
        TSRNN_TRY(stamp_after(series, last, i + 1, n, &times[i]));
    return TSRNN_OK;
}

void tsrnn_forecast_score_points(const float *actual, size_t a_step, const float *values,
                                 size_t v_step, size_t count, size_t C,
                                 struct tsrnn_forecast_scores *out, size_t *zeros)
{
    tsrnn_forecast_point_scores(actual, a_step, values, v_step, count, C, out, zeros);
}

size_t tsrnn_forecast_covariate_count(const struct tsrnn_forecast_source *src)
{
    return covariate_count(src);
}

enum tsrnn_status tsrnn_forecast_covariates(float **rows, const struct tsrnn_forecast_source *src,
                                            size_t icl, size_t n)
{
    return forecast_covariates(rows, src, icl, n);
}

void tsrnn_forecast_inputs(const struct tsrnn_forecast_source *src, const float *cov,
                           size_t cov_first, const size_t *origins, size_t count, size_t icl,
                           size_t n, float *context, size_t stride, float *future)
{
    const struct tsrnn_series *series = src->series;
    size_t C = series->component_count, K = covariate_count(src), I = C + K;
    for (size_t b = 0; b < count; b++) {
        float *window = context + b * icl * I;
        for (size_t t = 0; t < icl; t++) {
            size_t p = origins[b] - icl + t; /* the series point of input step t */
            memcpy(window + t * I, series->values + p * C, C * sizeof(float));
            tsrnn_scaler_transform(src->scaler, window + t * I, 1);
            if (K > 0)
                memcpy(window + t * I + C, cov + (p + 1 - cov_first) * K, K * sizeof(float));
        }
        for (size_t k = 1; K > 0 && k < n; k++) /* step k's input: cov of point origin + k */
            memcpy(future + ((k - 1) * stride + b) * K, cov + (origins[b] + k - cov_first) * K,
                   K * sizeof(float));
    }
}

/* Forecasts n steps after each of the `count` origins of src's series in one batch of the model
 * (count <= model->batch_capacity), from the icl points before each, scaled with its scaler:
 * values (count, n, C), original scale. With K covariates, `cov` (rows, K) holds them from
 * series point `cov_first` on, up to each origin + n - 1: the input of step t is (y[t],
 * cov[t + 1]) (Darts' RNNModel). */
enum tsrnn_status tsrnn_forecast_predict_after(struct tsrnn_model *model,
                                               const struct tsrnn_forecast_source *src,
                                               const float *cov, size_t cov_first,
                                               const size_t *origins, size_t count, size_t icl,
                                               size_t n, float *values)
{
    const struct tsrnn_series *series = src->series;
    size_t C = series->component_count, K = covariate_count(src), I = C + K, B = count;
    float *context = malloc(B * icl * I * sizeof(float));               /* (B, icl, I) */
    float *steps = B == 1 ? values : malloc(n * B * C * sizeof(float)); /* (n, B, C) */
    float *future =
        K > 0 && n > 1 ? malloc((n - 1) * B * K * sizeof(float)) : NULL; /* (n-1, B, K) */
    enum tsrnn_status status = TSRNN_OK;

    if (context == NULL || steps == NULL || (K > 0 && n > 1 && future == NULL)) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecasts of %zu steps", B, n);
        goto out;
    }
    tsrnn_forecast_inputs(src, cov, cov_first, origins, B, icl, n, context, B, future);
    status = tsrnn_model_predict_covariates(model, steps, context, B, icl, future, n);
    if (status != TSRNN_OK)
        goto out;
    if (steps != values) /* time-major to one forecast after another */
        for (size_t b = 0; b < B; b++)
            for (size_t k = 0; k < n; k++)
                memcpy(values + (b * n + k) * C, steps + (k * B + b) * C, C * sizeof(float));
    tsrnn_scaler_inverse(src->scaler, values, B * n);
out:
    free(context);
    free(future);
    if (steps != values)
        free(steps);
    return status;
}

enum tsrnn_status tsrnn_forecast_check_range(const struct tsrnn_forecast_source *src, size_t n)
{
    const struct tsrnn_series *series = src->series;
    int64_t end;
    if (n == 0 || src->origin < 1 || src->origin > series->length)
        return TSRNN_OK; /* nothing to stamp, or tsrnn_forecast_run() refuses the origin */
    /* The stamps increase: the last one fits when all do. */
    return stamp_after(series, series->times[src->origin - 1], n, n, &end);
}

enum tsrnn_status tsrnn_forecast_run(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                     const struct tsrnn_forecast_source *src,
                                     size_t input_chunk_length, size_t n)
{
    const struct tsrnn_series *series = src->series;
    size_t C = series->component_count, icl = input_chunk_length, origin = src->origin;

    memset(f, 0, sizeof(*f));
    if (origin < icl || origin > series->length)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the forecast needs the last input_chunk_length = %zu points before "
                           "it; the series has %zu",
                           icl, origin < series->length ? origin : series->length);
    TSRNN_TRY(tsrnn_forecast_check_range(src, n)); /* before the work, not after it */
    f->length = n;
    f->component_count = C;
    f->origin = origin;
    f->times = malloc((n ? n : 1) * sizeof(int64_t));
    f->values = malloc((n ? n : 1) * C * sizeof(float));
    float *cov = NULL;
    enum tsrnn_status status = TSRNN_OK;
    if (f->times == NULL || f->values == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a %zu-step forecast", n);
        goto out;
    }
    status = forecast_covariates(&cov, src, icl, n);
    if (status != TSRNN_OK)
        goto out;
    if (n > 0) {
        status = tsrnn_forecast_predict_after(model, src, cov, origin - icl + 1, &origin, 1, icl, n,
                                              f->values);
        if (status != TSRNN_OK)
            goto out;
    }
    status = tsrnn_forecast_stamps(f->times, series, origin, n);
    if (status != TSRNN_OK)
        goto out;
    f->actual = series->values + origin * C;
    f->actual_count = series->length - origin < n ? series->length - origin : n;
    struct tsrnn_forecast_scores scores;
    tsrnn_forecast_point_scores(f->actual, C, f->values, C, f->actual_count, C, &scores,
                                &f->zero_actual_count);
    f->mape = scores.mape;
    f->mae = scores.mae;
    f->rmse = scores.rmse;
out:
    free(cov);
    if (status != TSRNN_OK)
        tsrnn_forecast_finish(f);
    return status;
}

void tsrnn_forecast_finish(struct tsrnn_forecast *f)
{
    free(f->times);
    free(f->values);
    free(f->samples);
    free(f->quantile_values);
    free(f->band_low);
    free(f->band_high);
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

/* The id column's field and its comma; nothing for `id` NULL (a series without an id). */
void tsrnn_forecast_put_id(FILE *out, const char *id)
{
    if (id != NULL) {
        put_field(out, id);
        fputc(',', out);
    }
}

/* TimeSeries.to_csv()'s header, `<time_col>,<component>...` ("time" without a time column),
 * after the id column `id_name` (NULL: none). */
void tsrnn_forecast_put_header(FILE *out, const struct tsrnn_series *series, const char *id_name)
{
    tsrnn_forecast_put_id(out, id_name);
    put_field(out, series->time_name[0] ? series->time_name : "time");
    for (size_t c = 0; c < series->component_count; c++) {
        fputc(',', out);
        put_field(out, series->component_names[c]);
    }
    fputc('\n', out);
}

/* The stamp `t` in the series' own format. */
static void put_time(FILE *out, const struct tsrnn_series *series, int64_t t)
{
    char stamp[64];
    tsrnn_time_format(t, series->time_unit, stamp, sizeof(stamp));
    fputs(stamp, out);
}

/* One row of that layout: the stamp, then the C values (float32 round trip). */
void tsrnn_forecast_put_row(FILE *out, const struct tsrnn_series *series, int64_t t,
                            const float *values)
{
    put_time(out, series, t);
    for (size_t c = 0; c < series->component_count; c++)
        fprintf(out, ",%.9g", (double)values[c]);
    fputc('\n', out);
}

/* One row per step; `id` NULL: no id column. */
static void write_rows(FILE *out, const struct tsrnn_forecast *f, const struct tsrnn_series *series,
                       const char *id)
{
    for (size_t i = 0; i < f->length; i++) {
        tsrnn_forecast_put_id(out, id);
        tsrnn_forecast_put_row(out, series, f->times[i], f->values + i * f->component_count);
    }
}

/* The errno of this thread's last failed tsrnn_forecast_flushed(), for the message that names the file. */
static _Thread_local int flush_errno;

enum tsrnn_status tsrnn_forecast_flushed(FILE *out, const char *what)
{
    if (fflush(out) != 0 || ferror(out)) {
        flush_errno = errno != 0 ? errno : EIO;
        return tsrnn_error_errno(TSRNN_ERR_IO, flush_errno, "cannot write %s", what);
    }
    return TSRNN_OK;
}

/* A writer's failure into the file `path`: a write error is named by the file, with its
 * reason (a full disk); anything else (a forecast that cannot be made) passes as it is. */
static enum tsrnn_status file_failed(enum tsrnn_status status, const char *path)
{
    if (status != TSRNN_ERR_IO)
        return status;
    return tsrnn_error_errno(TSRNN_ERR_IO, flush_errno, "cannot write %s",
                             tsrnn_display_path(path));
}

enum tsrnn_status tsrnn_forecast_error_series(enum tsrnn_status status, const char *id)
{
    char named[TSRNN_NAME_MAX + 16];
    if (id == NULL)
        return status;
    snprintf(named, sizeof(named), "series '%s'", id);
    if (strstr(tsrnn_last_error(), named) != NULL)
        return status;
    return tsrnn_error_append(status, " (%s)", named);
}

enum tsrnn_status tsrnn_forecast_write_csv(const struct tsrnn_forecast *f,
                                           const struct tsrnn_series *series, FILE *out)
{
    tsrnn_forecast_put_header(out, series, NULL);
    write_rows(out, f, series, NULL);
    return tsrnn_forecast_flushed(out, "the forecast");
}

enum tsrnn_status tsrnn_forecast_write_all(struct tsrnn_model *model,
                                           const struct tsrnn_forecast_source *sources,
                                           size_t count, size_t input_chunk_length, size_t n,
                                           const char *id_name, FILE *out)
{
    bool named = count > 1 || sources[0].id != NULL;
    tsrnn_forecast_put_header(out, sources[0].series, named ? id_name : NULL);
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_forecast_source *src = &sources[i];
        struct tsrnn_forecast f;
        enum tsrnn_status status = tsrnn_forecast_run(&f, model, src, input_chunk_length, n);
        if (status != TSRNN_OK)
            return tsrnn_forecast_error_series(status, named ? src->id : NULL);
        write_rows(out, &f, src->series, named ? src->id : NULL);
        tsrnn_forecast_finish(&f);
    }
    return tsrnn_forecast_flushed(out, "the forecasts");
}

enum tsrnn_status tsrnn_forecast_save_all(struct tsrnn_model *model,
                                          const struct tsrnn_forecast_source *sources, size_t count,
                                          size_t input_chunk_length, size_t n, const char *id_name,
                                          const char *path)
{
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    enum tsrnn_status status =
        tsrnn_forecast_write_all(model, sources, count, input_chunk_length, n, id_name, af.file);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return file_failed(status, path);
    }
    return tsrnn_atomic_file_commit(&af);
}

void tsrnn_forecast_scores_mean(struct tsrnn_forecast_scores *mean,
                                const struct tsrnn_forecast_scores *each, size_t count)
{
    *mean = (struct tsrnn_forecast_scores){ 0 };
    for (size_t i = 0; i < count; i++) {
        mean->mape += each[i].mape;
        mean->mae += each[i].mae;
        mean->rmse += each[i].rmse;
    }
    mean->mape /= (double)count;
    mean->mae /= (double)count;
    mean->rmse /= (double)count;
}

void tsrnn_forecast_file_id(const char *id, char *out, size_t capacity)
{
    size_t i = 0;
    for (; id[i] != '\0' && i + 1 < capacity; i++) {
        char c = id[i];
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
        out[i] = keep ? c : '_';
    }
    if (capacity > 0)
        out[i] = '\0';
}

void tsrnn_forecast_plot_file_id(const char *const *ids, size_t i, char *out, size_t capacity)
{
    char earlier[TSRNN_NAME_MAX];
    tsrnn_forecast_file_id(ids[i], out, capacity);
    for (size_t j = 0; j < i; j++) {
        tsrnn_forecast_file_id(ids[j], earlier, sizeof(earlier));
        if (strcmp(earlier, out) == 0) {
            size_t len = strlen(out);
            snprintf(out + len, capacity - len, "_%zu", i);
            return;
        }
    }
}

/* Writes `path` atomically with write(what, file). */

enum tsrnn_status tsrnn_forecast_save_csv_file(tsrnn_forecast_csv_writer write, const void *what,
                                               const char *path)
{
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    enum tsrnn_status status = write(what, af.file);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return file_failed(status, path);
    }
    return tsrnn_atomic_file_commit(&af);
}

struct forecast_file {
    const struct tsrnn_forecast *f;
    const struct tsrnn_series *series;
};

static enum tsrnn_status write_forecast(const void *what, FILE *out)
{
    const struct forecast_file *file = what;
    return tsrnn_forecast_write_csv(file->f, file->series, out);
}

enum tsrnn_status tsrnn_forecast_save_csv(const struct tsrnn_forecast *f,
                                          const struct tsrnn_series *series, const char *path)
{
    const struct forecast_file file = { f, series };
    return tsrnn_forecast_save_csv_file(write_forecast, &file, path);
}

/* Draws `lines` over `series`' time axis and components into the PNG `path`. */
enum tsrnn_status tsrnn_forecast_plot_lines(const struct tsrnn_series *series, const char *title,
                                            const struct tsrnn_plot_line *lines, size_t line_count,
                                            int width, int height, const char *path)
{
    const struct tsrnn_plot plot = {
        .title = title,
        .time_unit = series->time_unit,
        .time_name = series->time_name,
        .component_count = series->component_count,
        .component_names = (const char(*)[TSRNN_NAME_MAX])series->component_names,
        .lines = lines,
        .line_count = line_count,
        .width = width,
        .height = height,
    };
    return tsrnn_plot_png(&plot, path);
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
          f->origin - first, NULL, NULL },
        { "actual", TSRNN_PLOT_ORANGE, series->times + f->origin, f->actual, f->actual_count, NULL,
          NULL },
        { "forecast", TSRNN_PLOT_GREEN, f->times, f->values, f->length, f->band_low, f->band_high },
    };
    return tsrnn_forecast_plot_lines(series, full_title, lines, sizeof(lines) / sizeof(lines[0]),
                                     width, height, path);
}

void tsrnn_forecast_put_field(FILE *out, const char *text)
{
    put_field(out, text);
}

void tsrnn_forecast_put_time(FILE *out, const struct tsrnn_series *series, int64_t t)
{
    put_time(out, series, t);
}

enum tsrnn_status tsrnn_forecast_covariate_rows(float **rows,
                                                const struct tsrnn_forecast_source *src,
                                                size_t first, size_t length, size_t reference)
{
    return covariate_rows(rows, src, first, length, reference);
}
