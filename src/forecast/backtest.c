/* Backtests (include/tsrnn/forecast.h): Darts' historical_forecasts(retrain=False) and
 * backtest() of a trained model, their scores, CSV files and pictures. The forecasts
 * themselves are forecast.c's; what both share is internal.h. */
#include "internal.h"

#include "tsrnn/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
void tsrnn_backtest_score(struct tsrnn_backtest *bt, const struct tsrnn_series *series)
{
    size_t C = bt->component_count, H = bt->horizon, S = bt->stride, F = bt->forecast_count;
    const float *actual = series->values + bt->first * C;
    size_t skip = bt->last_points_only ? H - 1 : 0; /* steps not scored */

    for (size_t f = 0; f < F; f++)
        tsrnn_forecast_point_scores(actual + (f * S + skip) * C, C, bt->values + (f * H + skip) * C,
                                    C, H - skip, C, &bt->scores[f], NULL);
    if (bt->last_points_only) {
        tsrnn_forecast_point_scores(actual + (H - 1) * C, S * C, bt->values + (H - 1) * C, H * C, F,
                                    C, &bt->overall, NULL);
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
    if (tsrnn_forecast_covariate_count(src) > 0) {
        status = tsrnn_forecast_covariate_rows(&cov, src, 0, L, L - 1);
        if (status != TSRNN_OK)
            goto out;
    }
    for (size_t f0 = 0; f0 < F; f0 += batch) {
        size_t count = F - f0 < batch ? F - f0 : batch;
        for (size_t i = 0; i < count; i++)
            origins[i] = first + (f0 + i) * stride;
        status = tsrnn_forecast_predict_after(model, src, cov, 0, origins, count,
                                              input_chunk_length, H, bt->values + f0 * H * C);
        if (status != TSRNN_OK)
            goto out;
    }
    tsrnn_backtest_score(bt, series);
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

    tsrnn_forecast_put_id(out, files->id_name);
    if (!bt0->last_points_only)
        fputs("start,", out);
    tsrnn_forecast_put_header(out, files->parts[0].series, NULL);
    for (size_t i = 0; i < files->count; i++) {
        const struct tsrnn_backtest *bt = files->parts[i].bt;
        const struct tsrnn_series *series = files->parts[i].series;
        const char *id = files->id_name ? files->parts[i].id : NULL;
        size_t H = bt->horizon, C = bt->component_count;
        for (size_t f = 0; f < bt->forecast_count; f++)
            for (size_t k = bt->last_points_only ? H - 1 : 0; k < H; k++) {
                tsrnn_forecast_put_id(out, id);
                if (!bt->last_points_only) {
                    tsrnn_forecast_put_time(out, series, backtest_time(bt, series, f, 0));
                    fputc(',', out);
                }
                tsrnn_forecast_put_row(out, series, backtest_time(bt, series, f, k),
                                       bt->values + (f * H + k) * C);
            }
    }
    return tsrnn_forecast_flushed(out, "the backtest's forecasts");
}

enum tsrnn_status tsrnn_backtest_save_csv(const struct tsrnn_backtest_part *parts, size_t count,
                                          const char *id_name, const char *path)
{
    const struct backtest_files files = backtest_files(parts, count, id_name, NULL);
    return tsrnn_forecast_save_csv_file(write_backtest, &files, path);
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

    tsrnn_forecast_put_id(out, files->id_name);
    fputs("start,mape,mae,rmse", out);
    if (quantiles)
        tsrnn_quantile_scores_header(out, &files->parts[0].bt->quantile_overall);
    fputc('\n', out);
    for (size_t i = 0; i < files->count; i++) {
        const struct tsrnn_backtest *bt = files->parts[i].bt;
        const char *id = files->id_name ? files->parts[i].id : NULL;
        for (size_t f = 0; f < bt->forecast_count; f++) {
            tsrnn_forecast_put_id(out, id);
            tsrnn_forecast_put_time(out, files->parts[i].series,
                                    backtest_time(bt, files->parts[i].series, f, 0));
            put_scores(out, &bt->scores[f], quantiles ? &bt->quantile_scores[f] : NULL);
        }
        tsrnn_forecast_put_id(out, id);
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
    return tsrnn_forecast_flushed(out, "the backtest's errors");
}

enum tsrnn_status tsrnn_backtest_save_errors(const struct tsrnn_backtest_part *parts, size_t count,
                                             const char *id_name,
                                             const struct tsrnn_forecast_scores *mean,
                                             const char *path)
{
    const struct backtest_files files = backtest_files(parts, count, id_name, mean);
    return tsrnn_forecast_save_csv_file(write_errors, &files, path);
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
    status = tsrnn_forecast_plot_lines(series, full_title, lines, line_count, width, height, path);
out:
    free(lines);
    free(times);
    free(last);
    return status;
}
