/* tsrnn-predict --backtest: Darts' historical_forecasts(retrain=False) and backtest() of
 * every series: the plan, the forecasts, backtest.csv, backtest_errors.csv, the pictures, and
 * backtest()'s values on standard output. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "predict.h"
#include "tsrnn/fs.h"
#include "tsrnn/plot.h"

/* Where each series' first backtest forecast starts, and how many forecasts a batch holds. */
enum tsrnn_status predict_backtest_plan(const struct options *o, const struct tsrnn_checkpoint *ck,
                                        const struct tsrnn_forecast_source *sources, size_t count,
                                        size_t *firsts, size_t *batch)
{
    return tsrnn_backtest_plan(firsts, batch, sources, count, o->start,
                               o->series_path ? "the end of the series (no --start)"
                                              : "the validation part's start (no --start)",
                               " with --start", (size_t)ck->input_chunk_length, (size_t)o->horizon,
                               (size_t)o->stride,
                               ck->config.batch_size > 0 ? (size_t)ck->config.batch_size : 1);
}

/* A score as the CSVs write it. */
static void print_score(FILE *out, const char *name, double value)
{
    if (isnan(value))
        fprintf(out, " %s nan", name);
    else
        fprintf(out, " %s %.9g", name, value);
}

/* Darts' backtest() value: "backtest[ ID]: MAPE x MAE y RMSE z" on standard output. */
static void print_backtest(const char *id, const struct tsrnn_forecast_scores *s)
{
    printf("backtest%s%s:", id ? " " : "", id ? id : "");
    print_score(stdout, "MAPE", s->mape);
    print_score(stdout, "MAE", s->mae);
    print_score(stdout, "RMSE", s->rmse);
    printf("\n");
}

static void print_plan(const struct tsrnn_backtest *bt, const struct tsrnn_series *s,
                       const char *id)
{
    char from[64], to[64];
    tsrnn_time_format(s->times[bt->first], s->time_unit, from, sizeof(from));
    tsrnn_time_format(s->times[bt->first + (bt->forecast_count - 1) * bt->stride], s->time_unit, to,
                      sizeof(to));
    if (id != NULL)
        fprintf(stderr, "Series %s: ", id);
    fprintf(stderr,
            "%s: %zu forecast%s of %zu steps starting %s .. %s, stride %zu "
            "(historical_forecasts(retrain=False, last_points_only=%s))\n",
            id ? "backtest" : "Backtest", bt->forecast_count, bt->forecast_count == 1 ? "" : "s",
            bt->horizon, from, to, bt->stride, bt->last_points_only ? "True" : "False");
}

/* The pictures: --plot FILE (one series), DIR/backtest.png of the one unnamed series, or
 * DIR/backtest_<id>.png of the first TSRNN_FORECAST_PLOTS named ones; none without cairo. */
static enum tsrnn_status plot_backtests(const struct options *o, const struct tsrnn_checkpoint *ck,
                                        const struct tsrnn_backtest_part *parts, size_t count,
                                        const char *dir, size_t *drawn)
{
    char why[1024];
    *drawn = 0;
    if (o->plot_path == NULL && !tsrnn_plot_usable(why, sizeof(why))) {
        /* the default picture: skipped where cairo cannot draw (--plot was checked up front) */
        tsrnn_warn("the backtest picture is not drawn: %s", why);
        return TSRNN_OK;
    }
    size_t plots = count < TSRNN_FORECAST_PLOTS ? count : TSRNN_FORECAST_PLOTS;
    const char *ids[TSRNN_FORECAST_PLOTS];
    for (size_t i = 0; i < plots; i++) {
        char path[PATH_MAX], file_id[TSRNN_NAME_MAX], title[3 * TSRNN_NAME_MAX + 32];
        ids[i] = parts[i].id;
        if (parts[i].id != NULL)
            tsrnn_forecast_plot_file_id(ids, i, file_id, sizeof(file_id));
        int length = o->plot_path ? snprintf(path, sizeof(path), "%s", o->plot_path)
                     : parts[i].id
                         ? snprintf(path, sizeof(path), "%s/backtest_%s.png", dir, file_id)
                         : snprintf(path, sizeof(path), "%s/backtest.png", dir);
        if (length >= (int)sizeof(path))
            return tsrnn_error(TSRNN_ERR_USAGE, "%s: the path is too long", path);
        predict_plot_title(ck, parts[i].id, title, sizeof(title));
        TSRNN_TRY(
            tsrnn_backtest_plot(parts[i].bt, parts[i].series, title, o->width, o->height, path));
        ++*drawn;
    }
    return TSRNN_OK;
}

/* What a backtest reports once its files are written: the files on standard error, Darts'
 * backtest() values on standard output (each series', then the mean over them; one series:
 * its own value), and the quantile scores' mean with a likelihood. */
static void print_backtests(const struct options *o, const struct tsrnn_backtest_part *parts,
                            size_t count, const struct tsrnn_forecast_scores *mean, const char *dir,
                            const char *csv, const char *errors, size_t drawn)
{
    bool named = parts[0].id != NULL;
    fprintf(stderr, "Wrote %s, %s", tsrnn_display_path(csv), tsrnn_display_path(errors));
    if (o->plot_path != NULL)
        fprintf(stderr, ", %s", tsrnn_display_path(o->plot_path));
    else if (drawn > 0 && !named)
        fprintf(stderr, ", %s/backtest.png", tsrnn_display_path(dir));
    else if (drawn > 0)
        fprintf(stderr, " and the plots of the first %zu series (backtest_<series>.png)", drawn);
    else
        fprintf(stderr, " (no picture: see the warning above)");
    fprintf(stderr, "\n");
    for (size_t i = 0; i < count && named; i++)
        print_backtest(parts[i].id, &parts[i].bt->overall);
    print_backtest(NULL, mean);
    if (parts[0].bt->has_quantile_scores) {
        struct tsrnn_quantile_scores q;
        tsrnn_backtest_quantile_mean(&q, parts, count);
        printf("backtest quantiles:");
        for (size_t k = 0; k < q.quantile_count; k++)
            printf(" MQL_%g %.9g", q.quantiles[k], q.mql[k]);
        printf(" MIC %.9g MIW %.9g\n", q.mic, q.miw);
    }
}

/* The backtest of every source, its files in --out DIR (or the run folder), and Darts'
 * backtest values on standard output: each series', and their mean over several. */
enum tsrnn_status predict_backtest(const struct options *o, const struct tsrnn_checkpoint *ck,
                                   const char *path, struct tsrnn_model *model,
                                   const struct tsrnn_forecast_source *sources, size_t count,
                                   const size_t *firsts)
{
    const char *dir = o->out_path ? o->out_path : o->run_dir;
    char csv[PATH_MAX], errors[PATH_MAX];
    struct tsrnn_backtest *bts = calloc(count, sizeof(*bts));
    struct tsrnn_backtest_part *parts = calloc(count, sizeof(*parts));
    struct tsrnn_forecast_scores *each = calloc(count, sizeof(*each)), mean;
    struct tsrnn_forecast_options opt;
    size_t drawn = 0;
    enum tsrnn_status status = TSRNN_OK;
    if (bts == NULL || parts == NULL || each == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (snprintf(csv, sizeof(csv), "%s/backtest.csv", dir) >= (int)sizeof(csv) ||
        snprintf(errors, sizeof(errors), "%s/backtest_errors.csv", dir) >= (int)sizeof(errors)) {
        status = tsrnn_error(TSRNN_ERR_USAGE, "--out %s: the path is too long", dir);
        goto out;
    }
    /* A model with a likelihood: each series' forecasts sampled as historical_forecasts()
     * right after fit() draws them (its predict_from_dataset() is draw 4). */
    predict_sampling_options(&opt, o, ck, TSRNN_DARTS_PREDICT_DRAW - 1);
    for (size_t i = 0; i < count; i++) {
        status = tsrnn_forecast_error_series(
            tsrnn_backtest_run_sampled(&bts[i], model, &sources[i], firsts[i],
                                       (size_t)ck->input_chunk_length, (size_t)o->horizon,
                                       (size_t)o->stride, o->last_points_only, &opt),
            sources[i].id);
        if (status != TSRNN_OK)
            goto out;
        parts[i] = (struct tsrnn_backtest_part){ &bts[i], sources[i].series, sources[i].id };
        each[i] = bts[i].overall;
    }
    predict_print_loaded(ck, path);
    for (size_t i = 0; i < count; i++)
        print_plan(&bts[i], sources[i].series, sources[i].id);
    tsrnn_forecast_scores_mean(&mean, each, count);
    status = tsrnn_make_dirs(dir);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_backtest_save_csv(parts, count, predict_id_name(ck), csv);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_backtest_save_errors(parts, count, predict_id_name(ck), count > 1 ? &mean : NULL,
                                        errors);
    if (status != TSRNN_OK)
        goto out;
    status = plot_backtests(o, ck, parts, count, dir, &drawn);
    if (status != TSRNN_OK)
        goto out;
    print_backtests(o, parts, count, &mean, dir, csv, errors, drawn);
    if (fflush(stdout) != 0)
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write to standard output");
out:
    for (size_t i = 0; bts != NULL && i < count; i++)
        tsrnn_backtest_finish(&bts[i]);
    free(bts);
    free(parts);
    free(each);
    return status;
}
