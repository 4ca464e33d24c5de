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
static void score(const float *actual, size_t a_step, const float *values, size_t v_step,
                  size_t count, size_t C, struct tsrnn_forecast_scores *out, size_t *zeros)
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
    score(actual, a_step, values, v_step, count, C, out, zeros);
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
static enum tsrnn_status predict_after(struct tsrnn_model *model,
                                       const struct tsrnn_forecast_source *src, const float *cov,
                                       size_t cov_first, const size_t *origins, size_t count,
                                       size_t icl, size_t n, float *values)
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
        status = predict_after(model, src, cov, origin - icl + 1, &origin, 1, icl, n, f->values);
        if (status != TSRNN_OK)
            goto out;
    }
    status = tsrnn_forecast_stamps(f->times, series, origin, n);
    if (status != TSRNN_OK)
        goto out;
    f->actual = series->values + origin * C;
    f->actual_count = series->length - origin < n ? series->length - origin : n;
    struct tsrnn_forecast_scores scores;
    score(f->actual, C, f->values, C, f->actual_count, C, &scores, &f->zero_actual_count);
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
static void put_id(FILE *out, const char *id)
{
    if (id != NULL) {
        put_field(out, id);
        fputc(',', out);
    }
}

/* TimeSeries.to_csv()'s header, `<time_col>,<component>...` ("time" without a time column),
 * after the id column `id_name` (NULL: none). */
static void put_header(FILE *out, const struct tsrnn_series *series, const char *id_name)
{
    put_id(out, id_name);
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
static void put_row(FILE *out, const struct tsrnn_series *series, int64_t t, const float *values)
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
        put_id(out, id);
        put_row(out, series, f->times[i], f->values + i * f->component_count);
    }
}

/* The errno of this thread's last failed flushed(), for the message that names the file. */
static _Thread_local int flush_errno;

static enum tsrnn_status flushed(FILE *out, const char *what)
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
    put_header(out, series, NULL);
    write_rows(out, f, series, NULL);
    return flushed(out, "the forecast");
}

enum tsrnn_status tsrnn_forecast_write_all(struct tsrnn_model *model,
                                           const struct tsrnn_forecast_source *sources,
                                           size_t count, size_t input_chunk_length, size_t n,
                                           const char *id_name, FILE *out)
{
    bool named = count > 1 || sources[0].id != NULL;
    put_header(out, sources[0].series, named ? id_name : NULL);
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_forecast_source *src = &sources[i];
        struct tsrnn_forecast f;
        enum tsrnn_status status = tsrnn_forecast_run(&f, model, src, input_chunk_length, n);
        if (status != TSRNN_OK)
            return tsrnn_forecast_error_series(status, named ? src->id : NULL);
        write_rows(out, &f, src->series, named ? src->id : NULL);
        tsrnn_forecast_finish(&f);
    }
    return flushed(out, "the forecasts");
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
typedef enum tsrnn_status (*csv_writer)(const void *what, FILE *out);

static enum tsrnn_status save_csv(csv_writer write, const void *what, const char *path)
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
    return save_csv(write_forecast, &file, path);
}

/* Draws `lines` over `series`' time axis and components into the PNG `path`. */
static enum tsrnn_status plot_lines(const struct tsrnn_series *series, const char *title,
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
    return plot_lines(series, full_title, lines, sizeof(lines) / sizeof(lines[0]), width, height,
                      path);
}

/* --- backtests -------------------------------------------------------------------------- */

/* Point p of the series for messages: "1959-02 (position 121)"; a stamp is at most 63
 * characters. */
#define POINT_TEXT_MAX 128

static const char *point_text(const struct tsrnn_series *series, size_t p, char *out,
                              size_t capacity)
{
    char stamp[64];
    tsrnn_time_format(series->times[p], series->time_unit, stamp, sizeof(stamp));
    snprintf(out, capacity, "%s%.63s (position %zu)",
             series->time_unit == TSRNN_TIME_INDEX ? "index " : "", stamp, p);
    return out;
}

/* The position of `t` among the series' strictly increasing times: -1 before the first, L
 * after the last; TSRNN_ERR_USAGE between two of them. */
static enum tsrnn_status find_time(const struct tsrnn_series *series, int64_t t, const char *start,
                                   int64_t *pos)
{
    size_t lo = 0, hi = series->length; /* the first time >= t lies in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (series->times[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < series->length && series->times[lo] == t) {
        *pos = (int64_t)lo;
        return TSRNN_OK;
    }
    if (lo == 0 || lo == series->length) {
        *pos = lo == 0 ? -1 : (int64_t)series->length;
        return TSRNN_OK;
    }
    char before[POINT_TEXT_MAX], after[POINT_TEXT_MAX];
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "--start %s is not a point of the series: it lies between %s and %s; "
                       "accepted: %s of the series",
                       start, point_text(series, lo - 1, before, sizeof(before)),
                       point_text(series, lo, after, sizeof(after)),
                       series->time_unit == TSRNN_TIME_INDEX ? "an index value" : "a time stamp");
}

/* The position `start` names (tsrnn_backtest_first()), possibly outside the series. */
static enum tsrnn_status locate_start(const struct tsrnn_series *series, const char *start,
                                      int64_t *pos)
{
    int64_t value, t;
    enum tsrnn_time_unit unit;
    bool integer = tsrnn_parse_int64(start, &value);

    if (strpbrk(start, ".eE") != NULL && !integer) {
        char *end;
        double fraction = strtod(start, &end);
        if (end == start || *end != '\0' || !(fraction >= 0.0 && fraction <= 1.0))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "--start %s: accepted as a fraction of the series: 0 to 1", start);
        /* Darts' TimeSeries.get_index_at_point(float) */
        *pos = (int64_t)((double)(series->length - 1) * fraction);
        return TSRNN_OK;
    }
    if (series->time_unit != TSRNN_TIME_INDEX && tsrnn_time_parse(start, &t, &unit))
        return find_time(series, t, start, pos);
    if (integer && series->time_unit == TSRNN_TIME_INDEX)
        return find_time(series, value, start, pos);
    if (integer) { /* a position, as Darts takes an integer for a time-stamped series */
        *pos = value < 0 ? (int64_t)series->length + value : value;
        return TSRNN_OK;
    }
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "--start %s: not %s, an integer position or a fraction of the series; "
                       "e.g. --start %s",
                       start, series->time_unit == TSRNN_TIME_INDEX ? "an index value" : "a date",
                       series->time_unit == TSRNN_TIME_INDEX ? "0.75" : "1959-02 or 0.75");
}

enum tsrnn_status tsrnn_backtest_first(const struct tsrnn_series *series, const char *start,
                                       size_t fallback, const char *fallback_what,
                                       size_t input_chunk_length, size_t horizon, size_t *first)
{
    size_t L = series->length, icl = input_chunk_length;
    char what[2 * POINT_TEXT_MAX], lo_text[POINT_TEXT_MAX], hi_text[POINT_TEXT_MAX];
    char at[POINT_TEXT_MAX + 8] = "";

    if (horizon < 1 || L < icl + horizon)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the series has %zu points: too few for a backtest of %zu-step "
                           "forecasts, which needs input_chunk_length = %zu points before the "
                           "first forecast and %zu from it on; accepted: --horizon 1 .. %zu",
                           L, horizon, icl, horizon, L > icl ? L - icl : 0);
    int64_t pos = (int64_t)fallback;
    if (start != NULL)
        TSRNN_TRY(locate_start(series, start, &pos));
    if (pos >= 0 && pos < (int64_t)L) { /* " = 1959-02 (position 121)", the stamp if not typed */
        char stamp[64];
        tsrnn_time_format(series->times[pos], series->time_unit, stamp, sizeof(stamp));
        if (start != NULL && strcmp(start, stamp) == 0)
            snprintf(at, sizeof(at), " (position %zu)", (size_t)pos);
        else
            snprintf(at, sizeof(at), " = %s",
                     point_text(series, (size_t)pos, lo_text, sizeof(lo_text)));
    }
    snprintf(what, sizeof(what), "%s%.100s%s", start ? "--start " : "",
             start ? start : fallback_what, at);
    point_text(series, icl, lo_text, sizeof(lo_text));
    point_text(series, L - horizon, hi_text, sizeof(hi_text));
    if (pos < (int64_t)icl)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s is before the first point a forecast can start from: each "
                           "forecast needs the input_chunk_length = %zu points before it; "
                           "accepted: %s .. %s",
                           what, icl, lo_text, hi_text);
    if (pos > (int64_t)(L - horizon)) {
        char end[POINT_TEXT_MAX];
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s is after the last point a forecast can start from: a %zu-step "
                           "forecast from there would pass the end of the series, %s; "
                           "accepted: %s .. %s",
                           what, horizon, point_text(series, L - 1, end, sizeof(end)), lo_text,
                           hi_text);
    }
    *first = (size_t)pos;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_backtest_plan(size_t *firsts, size_t *batch,
                                      const struct tsrnn_forecast_source *sources, size_t count,
                                      const char *start, const char *fallback_what,
                                      const char *start_hint, size_t input_chunk_length,
                                      size_t horizon, size_t stride, size_t batch_size)
{
    size_t most = 1;
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_series *s = sources[i].series;
        enum tsrnn_status status = tsrnn_backtest_first(s, start, sources[i].origin, fallback_what,
                                                        input_chunk_length, horizon, &firsts[i]);
        if (status != TSRNN_OK && start == NULL)
            tsrnn_error_append(status, "; choose the first forecast's start%s", start_hint);
        if (status != TSRNN_OK)
            return tsrnn_forecast_error_series(status, sources[i].id);
        size_t forecasts = (s->length - horizon - firsts[i]) / stride + 1;
        most = forecasts > most ? forecasts : most;
    }
    /* As many windows per batch as training took (of training_length >= input_chunk_length
     * steps, so the workspace fits where training's did), as Darts predicts with the
     * model's batch_size. */
    batch_size = batch_size > 0 ? batch_size : 1;
    *batch = most < batch_size ? most : batch_size;
    return TSRNN_OK;
}

/* np.nanmean: the mean of the values that are not NaN; NaN for none. */
struct nanmean {
    double sum;
    size_t count;
};

static void nanmean_add(struct nanmean *m, double v)
{
    if (!isnan(v)) {
        m->sum += v;
        m->count++;
    }
}

static double nanmean_value(const struct nanmean *m)
{
    return m->count ? m->sum / (double)m->count : NAN;
}

/* Each forecast's scores and Darts' backtest values (see the header). */
static void score_backtest(struct tsrnn_backtest *bt, const struct tsrnn_series *series)
{
    size_t C = bt->component_count, H = bt->horizon, S = bt->stride, F = bt->forecast_count;
    const float *actual = series->values + bt->first * C;
    size_t skip = bt->last_points_only ? H - 1 : 0; /* steps not scored */

    for (size_t f = 0; f < F; f++)
        score(actual + (f * S + skip) * C, C, bt->values + (f * H + skip) * C, C, H - skip, C,
              &bt->scores[f], NULL);
    if (bt->last_points_only) {
        score(actual + (H - 1) * C, S * C, bt->values + (H - 1) * C, H * C, F, C, &bt->overall,
              NULL);
        return;
    }
    struct nanmean mape = { 0 }, mae = { 0 }, rmse = { 0 };
    for (size_t f = 0; f < F; f++) {
        nanmean_add(&mape, bt->scores[f].mape);
        nanmean_add(&mae, bt->scores[f].mae);
        nanmean_add(&rmse, bt->scores[f].rmse);
    }
    bt->overall = (struct tsrnn_forecast_scores){ nanmean_value(&mape), nanmean_value(&mae),
                                                  nanmean_value(&rmse) };
}

enum tsrnn_status tsrnn_backtest_run(struct tsrnn_backtest *bt, struct tsrnn_model *model,
                                     const struct tsrnn_forecast_source *src, size_t first,
                                     size_t input_chunk_length, size_t horizon, size_t stride,
                                     bool last_points_only)
{
    const struct tsrnn_series *series = src->series;
    size_t L = series->length, C = series->component_count, H = horizon;
    size_t batch = model->batch_capacity;

    memset(bt, 0, sizeof(*bt));
    if (H < 1 || stride < 1 || batch < 1 || first < input_chunk_length || first > L ||
        L - first < H)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a backtest of %zu-step forecasts with stride %zu cannot start at "
                           "point %zu of a %zu-point series (input_chunk_length %zu)",
                           H, stride, first, L, input_chunk_length);
    size_t F = (L - H - first) / stride + 1;
    *bt = (struct tsrnn_backtest){
        .forecast_count = F,
        .horizon = H,
        .stride = stride,
        .first = first,
        .component_count = C,
        .last_points_only = last_points_only,
    };
    if (batch > F)
        batch = F;
    bt->values = malloc(F * H * C * sizeof(float));
    bt->scores = malloc(F * sizeof(*bt->scores));
    size_t *origins = malloc(batch * sizeof(size_t));
    float *cov = NULL;
    enum tsrnn_status status = TSRNN_OK;
    if (bt->values == NULL || bt->scores == NULL || origins == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecasts of %zu steps", F, H);
        goto out;
    }
    /* Darts' historical_forecasts() encodes the whole series once (encode_train_inference),
     * 'position' counted from its last point: every forecast takes its rows from these. */
    if (covariate_count(src) > 0) {
        status = covariate_rows(&cov, src, 0, L, L - 1);
        if (status != TSRNN_OK)
            goto out;
    }
    for (size_t f0 = 0; f0 < F; f0 += batch) {
        size_t count = F - f0 < batch ? F - f0 : batch;
        for (size_t i = 0; i < count; i++)
            origins[i] = first + (f0 + i) * stride;
        status = predict_after(model, src, cov, 0, origins, count, input_chunk_length, H,
                               bt->values + f0 * H * C);
        if (status != TSRNN_OK)
            goto out;
    }
    score_backtest(bt, series);
out:
    free(origins);
    free(cov);
    if (status != TSRNN_OK)
        tsrnn_backtest_finish(bt);
    return status;
}

void tsrnn_backtest_finish(struct tsrnn_backtest *bt)
{
    free(bt->values);
    free(bt->scores);
    free(bt->quantile_scores);
    memset(bt, 0, sizeof(*bt));
}

/* The stamp of forecast f's step k. */
static int64_t backtest_time(const struct tsrnn_backtest *bt, const struct tsrnn_series *series,
                             size_t f, size_t k)
{
    return series->times[bt->first + f * bt->stride + k];
}

/* The parts of a backtest's files, the id column's name when they are named, and the mean
 * over the series when there are several. */
struct backtest_files {
    const struct tsrnn_backtest_part *parts;
    size_t count;
    const char *id_name; /* NULL: one unnamed series, no id column */
    const struct tsrnn_forecast_scores *mean;
};

static struct backtest_files backtest_files(const struct tsrnn_backtest_part *parts, size_t count,
                                            const char *id_name,
                                            const struct tsrnn_forecast_scores *mean)
{
    bool named = count > 1 || parts[0].id != NULL;
    return (struct backtest_files){ parts, count, named ? id_name : NULL, mean };
}

static enum tsrnn_status write_backtest(const void *what, FILE *out)
{
    const struct backtest_files *files = what;
    const struct tsrnn_backtest *bt0 = files->parts[0].bt;

    put_id(out, files->id_name);
    if (!bt0->last_points_only)
        fputs("start,", out);
    put_header(out, files->parts[0].series, NULL);
    for (size_t i = 0; i < files->count; i++) {
        const struct tsrnn_backtest *bt = files->parts[i].bt;
        const struct tsrnn_series *series = files->parts[i].series;
        const char *id = files->id_name ? files->parts[i].id : NULL;
        size_t H = bt->horizon, C = bt->component_count;
        for (size_t f = 0; f < bt->forecast_count; f++)
            for (size_t k = bt->last_points_only ? H - 1 : 0; k < H; k++) {
                put_id(out, id);
                if (!bt->last_points_only) {
                    put_time(out, series, backtest_time(bt, series, f, 0));
                    fputc(',', out);
                }
                put_row(out, series, backtest_time(bt, series, f, k), bt->values + (f * H + k) * C);
            }
    }
    return flushed(out, "the backtest's forecasts");
}

enum tsrnn_status tsrnn_backtest_save_csv(const struct tsrnn_backtest_part *parts, size_t count,
                                          const char *id_name, const char *path)
{
    const struct backtest_files files = backtest_files(parts, count, id_name, NULL);
    return save_csv(write_backtest, &files, path);
}

/* A score with 9 significant digits; NaN as pandas writes it. */
static void put_scores(FILE *out, const struct tsrnn_forecast_scores *s,
                       const struct tsrnn_quantile_scores *q)
{
    const double v[3] = { s->mape, s->mae, s->rmse };
    for (size_t i = 0; i < 3; i++)
        if (isnan(v[i]))
            fputs(",nan", out);
        else
            fprintf(out, ",%.9g", v[i]);
    if (q != NULL)
        tsrnn_quantile_scores_row(out, q);
    fputc('\n', out);
}

static enum tsrnn_status write_errors(const void *what, FILE *out)
{
    const struct backtest_files *files = what;
    bool quantiles = files->parts[0].bt->has_quantile_scores;

    put_id(out, files->id_name);
    fputs("start,mape,mae,rmse", out);
    if (quantiles)
        tsrnn_quantile_scores_header(out, &files->parts[0].bt->quantile_overall);
    fputc('\n', out);
    for (size_t i = 0; i < files->count; i++) {
        const struct tsrnn_backtest *bt = files->parts[i].bt;
        const char *id = files->id_name ? files->parts[i].id : NULL;
        for (size_t f = 0; f < bt->forecast_count; f++) {
            put_id(out, id);
            put_time(out, files->parts[i].series, backtest_time(bt, files->parts[i].series, f, 0));
            put_scores(out, &bt->scores[f], quantiles ? &bt->quantile_scores[f] : NULL);
        }
        put_id(out, id);
        fputs("backtest", out);
        put_scores(out, &bt->overall, quantiles ? &bt->quantile_overall : NULL);
    }
    if (files->mean != NULL && files->id_name != NULL) { /* under an empty id */
        struct tsrnn_quantile_scores q_mean;
        if (quantiles)
            tsrnn_backtest_quantile_mean(&q_mean, files->parts, files->count);
        fputs(",backtest", out);
        put_scores(out, files->mean, quantiles ? &q_mean : NULL);
    }
    return flushed(out, "the backtest's errors");
}

enum tsrnn_status tsrnn_backtest_save_errors(const struct tsrnn_backtest_part *parts, size_t count,
                                             const char *id_name,
                                             const struct tsrnn_forecast_scores *mean,
                                             const char *path)
{
    const struct backtest_files files = backtest_files(parts, count, id_name, mean);
    return save_csv(write_errors, &files, path);
}

enum tsrnn_status tsrnn_backtest_plot(const struct tsrnn_backtest *bt,
                                      const struct tsrnn_series *series, const char *title,
                                      int width, int height, const char *path)
{
    size_t F = bt->forecast_count, H = bt->horizon, C = bt->component_count;
    size_t L = series->length, span = L - bt->first;
    size_t keep = 3 * span > 240 ? 3 * span : 240;
    size_t from = bt->first > keep ? bt->first - keep : 0;
    size_t line_count = bt->last_points_only ? 2 : 1 + F;
    struct tsrnn_plot_line *lines = calloc(line_count, sizeof(*lines));
    int64_t *times = bt->last_points_only ? malloc(F * sizeof(int64_t)) : NULL;
    float *last = bt->last_points_only ? malloc(F * C * sizeof(float)) : NULL;
    char label[96], full_title[512];
    enum tsrnn_status status = TSRNN_OK;

    if (lines == NULL || (bt->last_points_only && (times == NULL || last == NULL))) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory drawing %s", tsrnn_display_path(path));
        goto out;
    }
    lines[0] = (struct tsrnn_plot_line){
        "actual", TSRNN_PLOT_BLUE, series->times + from, series->values + from * C, L - from, NULL,
        NULL
    };
    if (bt->last_points_only) {
        for (size_t f = 0; f < F; f++) {
            times[f] = backtest_time(bt, series, f, H - 1);
            memcpy(last + f * C, bt->values + (f * H + H - 1) * C, C * sizeof(float));
        }
        snprintf(label, sizeof(label), "step %zu of %zu forecasts", H, F);
        lines[1] = (struct tsrnn_plot_line){ label, TSRNN_PLOT_GREEN, times, last, F, NULL, NULL };
    } else {
        /* one legend entry for all the forecasts */
        snprintf(label, sizeof(label), "%zu forecasts of %zu steps", F, H);
        for (size_t f = 0; f < F; f++)
            lines[1 + f] = (struct tsrnn_plot_line){ f == 0 ? label : NULL,
                                                     TSRNN_PLOT_GREEN,
                                                     series->times + bt->first + f * bt->stride,
                                                     bt->values + f * H * C,
                                                     H,
                                                     NULL,
                                                     NULL };
    }
    if (!isnan(bt->overall.mape))
        snprintf(full_title, sizeof(full_title), "%s (backtest MAPE %.2f%%)", title,
                 bt->overall.mape);
    else
        snprintf(full_title, sizeof(full_title), "%s (backtest MAE %.4g)", title, bt->overall.mae);
    status = plot_lines(series, full_title, lines, line_count, width, height, path);
out:
    free(lines);
    free(times);
    free(last);
    return status;
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

void tsrnn_backtest_score(struct tsrnn_backtest *bt, const struct tsrnn_series *series)
{
    score_backtest(bt, series);
}
