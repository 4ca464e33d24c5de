/* What follows the fit: the validation forecast of every series and its scores
 * (validation.csv with several series), and the [forecast] section's files (forecast.csv,
 * forecast_samples.csv, the pictures), as Darts' predict() after fit(). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/forecast.h"
#include "tsrnn/plot.h"

/* Series i of the run as a forecast source: its scaler, covariates and training part's end. */
static struct tsrnn_forecast_source forecast_source(const struct tsrnn_dataset *ds, size_t i)
{
    const struct tsrnn_dataset_series *item = &ds->items[i];
    return (struct tsrnn_forecast_source){
        .series = &item->series,
        .scaler = &item->scaler,
        .origin = item->train_length,
        .id = tsrnn_trainer_named_series(ds) ? item->id : NULL,
        .covariates = ds->covariates,
        .cov_scaler = &item->cov_scaler,
    };
}

/* [forecast] n past the last date tsrnn can write or past a series' covariate columns fails
 * before the run folder is touched, on every rank (the data is the same everywhere), not
 * after training. */
enum tsrnn_status tsrnn_trainer_check_forecast(const struct trainer *tr)
{
    if (tr->cfg->forecast_n <= 0)
        return TSRNN_OK;
    for (size_t i = 0; i < tr->ds->series_count; i++) {
        struct tsrnn_forecast_source src = forecast_source(tr->ds, i);
        enum tsrnn_status status = tsrnn_forecast_check_range(&src, (size_t)tr->cfg->forecast_n);
        if (status != TSRNN_OK)
            return tsrnn_forecast_error_series(
                tsrnn_error_append(status, " ([forecast] n = %d, %s)", tr->cfg->forecast_n,
                                   tsrnn_config_origin(tr->cfg, "forecast", "n")),
                src.id);
        TSRNN_TRY(tsrnn_forecast_check_covariates(&src, (size_t)tr->cfg->input_chunk_length,
                                                  (size_t)tr->cfg->forecast_n));
    }
    return TSRNN_OK;
}

/* The id column's header in the forecast files: [data] id_col, else "series". */
static const char *id_column(const struct tsrnn_config *cfg)
{
    return cfg->id_col[0] != '\0' ? cfg->id_col : "series";
}

/* validation.csv (named series): each series' scores, then the mean over them under an
 * empty id. */
static enum tsrnn_status write_validation(const struct trainer *tr,
                                          const struct tsrnn_forecast_scores *each,
                                          const struct tsrnn_forecast_scores *mean,
                                          const struct tsrnn_quantile_scores *q_each,
                                          const struct tsrnn_quantile_scores *q_mean)
{
    const struct tsrnn_dataset *ds = tr->ds;
    char path[PATH_MAX + 32];
    struct tsrnn_atomic_file af = { 0 };
    enum tsrnn_status status = TSRNN_OK;
    snprintf(path, sizeof(path), "%s/validation.csv", tr->folder.dir);
    status = tsrnn_atomic_file_open(&af, path);
    if (status != TSRNN_OK)
        goto out;
    fprintf(af.file, "%s,steps,mape,mae,rmse", id_column(tr->cfg));
    if (q_each != NULL)
        tsrnn_quantile_scores_header(af.file, q_mean);
    fputc('\n', af.file);
    for (size_t i = 0; i <= ds->series_count; i++) {
        bool all = i == ds->series_count;
        const struct tsrnn_forecast_scores *sc = all ? mean : &each[i];
        size_t steps = 0;
        for (size_t k = all ? 0 : i; k < (all ? ds->series_count : i + 1); k++)
            steps += ds->items[k].val_length;
        fprintf(af.file, "%s,%zu,%.9g,%.9g,%.9g", all ? "" : ds->items[i].id, steps, sc->mape,
                sc->mae, sc->rmse);
        if (q_each != NULL)
            tsrnn_quantile_scores_row(af.file, all ? q_mean : &q_each[i]);
        fputc('\n', af.file);
    }
    if (fflush(af.file) != 0 || ferror(af.file))
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno != 0 ? errno : EIO, "cannot write %s",
                                   tsrnn_display_path(path));
out:
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

/* How the run's model forecasts with a likelihood ([forecast] num_samples, ...): Darts'
 * predict() call number `call` after fit() (1: draws 4 and 5 of random_state's RandomState;
 * each later call two more), batch_size the model's. */
static void forecast_options(const struct trainer *tr, unsigned call, bool parameters,
                             struct tsrnn_forecast_options *opt)
{
    uint32_t seed = tsrnn_darts_seed((uint32_t)tr->cfg->random_state,
                                     TSRNN_DARTS_PREDICT_DRAW + 2 * (call - 1));
    tsrnn_forecast_options_from_config(opt, tr->cfg, seed, parameters);
}

/* Every series of the run as a forecast source (forecast_source()), into a malloc'd array. */
static enum tsrnn_status all_sources(const struct tsrnn_dataset *ds,
                                     struct tsrnn_forecast_source **sources)
{
    *sources = malloc(ds->series_count * sizeof(**sources));
    if (*sources == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' forecasts",
                           ds->series_count);
    for (size_t i = 0; i < ds->series_count; i++)
        (*sources)[i] = forecast_source(ds, i);
    return TSRNN_OK;
}

/* The validation forecasts' scores into r (each series' into each[] and q_each[]), and the
 * warnings for MAPE's values of 0, as Darts' mape() leaves them out. */
static void score_validation(const struct trainer *tr, const struct tsrnn_forecast_set *set,
                             struct tsrnn_forecast_scores *each,
                             struct tsrnn_quantile_scores *q_each, struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count;
    bool sampled = tr->model.likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    r->forecast_count = 0;
    r->has_quantile_scores = sampled;
    for (size_t i = 0; i < S; i++) {
        const struct tsrnn_forecast *f = &set->f[i];
        const char *id = S > 1 ? ds->items[i].id : "";
        each[i] = (struct tsrnn_forecast_scores){ f->mape, f->mae, f->rmse };
        r->forecast_count += f->length;
        r->has_quantile_scores &= f->has_quantile_scores;
        if (f->has_quantile_scores)
            q_each[i] = f->quantile_scores;
        if (!sampled && f->zero_actual_count > 0)
            tsrnn_warn("MAPE leaves out the %zu value%s of 0 in the validation part%s%s%s, as "
                       "Darts' mape() does (their percentage error is NaN, or 0 where the "
                       "forecast is 0 too)%s",
                       f->zero_actual_count, f->zero_actual_count > 1 ? "s" : "",
                       S > 1 ? " of series '" : "", id, S > 1 ? "'" : "",
                       isnan(f->mape) ? ": none is left, MAPE is undefined" : "");
        else if (sampled && isnan(f->mape))
            tsrnn_warn("MAPE is undefined: the validation part%s%s%s holds a 0 (Darts' mape() "
                       "needs actual values that are not 0)",
                       S > 1 ? " of series '" : "", id, S > 1 ? "'" : "");
    }
    struct tsrnn_forecast_scores mean;
    tsrnn_forecast_scores_mean(&mean, each, S);
    r->mape = mean.mape;
    r->mae = mean.mae;
    r->rmse = mean.rmse;
    if (r->has_quantile_scores)
        tsrnn_quantile_scores_mean(&r->quantile_scores, q_each, S);
}

/* Darts' RNNModel.predict(n = validation length, series = training part) of every series,
 * in the original scale, scored with Darts' mape(actual, pred) = 100 * mean |(a - p) / a|,
 * mae and rmse, each per component then averaged over the components; several series'
 * scores are averaged as Darts' metric(actual_list, pred_list, series_reduction=np.mean)
 * does. With a likelihood: predict(n = the longest validation part, num_samples) as one call
 * (the second predict() after fit(): the first is [forecast]'s), each series' forecast cut to
 * its validation part; the point metrics on the median, the quantile metrics on the
 * samples. */
enum tsrnn_status tsrnn_trainer_forecast_validation(struct trainer *tr,
                                                    struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count, n = 0;
    struct tsrnn_forecast_source *sources = NULL;
    size_t *lengths = calloc(S, sizeof(*lengths));
    struct tsrnn_forecast_scores *each = calloc(S, sizeof(*each));
    struct tsrnn_quantile_scores *q_each = calloc(S, sizeof(*q_each));
    struct tsrnn_forecast_set set = { 0 };
    struct tsrnn_forecast_options opt;
    enum tsrnn_status status = TSRNN_OK;
    if (lengths == NULL || each == NULL || q_each == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' scores", S);
        goto out;
    }
    status = all_sources(ds, &sources);
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < S; i++) {
        lengths[i] = ds->items[i].val_length;
        n = lengths[i] > n ? lengths[i] : n;
    }
    forecast_options(tr, 2, false, &opt);
    status = tsrnn_forecast_set_predict(&set, &tr->model, sources, S,
                                        (size_t)tr->cfg->input_chunk_length, n, lengths, &opt);
    if (status != TSRNN_OK)
        goto out;
    score_validation(tr, &set, each, q_each, r);
    if (tr->world.writes_files && tsrnn_trainer_named_series(ds)) {
        struct tsrnn_forecast_scores mean = { r->mape, r->mae, r->rmse };
        status = write_validation(tr, each, &mean, r->has_quantile_scores ? q_each : NULL,
                                  &r->quantile_scores);
    }
out:
    tsrnn_forecast_set_finish(&set);
    free(sources);
    free(lengths);
    free(each);
    free(q_each);
    return status;
}

/* "Forecast 24 steps (1959-02 .. 1961-01): <run>/forecast.csv and forecast.png", or its
 * line for several series. */
static void print_forecast(const struct trainer *tr, const struct tsrnn_forecast_set *set,
                           const struct tsrnn_forecast_files *files, size_t drawn)
{
    const struct tsrnn_forecast *f = &set->f[0];
    FILE *out = tr->report.out;
    const char *samples = files->samples_path != NULL ? ", forecast_samples.csv" : "";
    if (!tsrnn_trainer_named_series(tr->ds)) {
        const struct tsrnn_series *series = set->sources[0].series;
        char first[64], last[64];
        tsrnn_time_format(f->times[0], series->time_unit, first, sizeof(first));
        tsrnn_time_format(f->times[f->length - 1], series->time_unit, last, sizeof(last));
        fprintf(out, "Forecast %zu steps (%s .. %s", f->length, first, last);
        if (f->sample_count > 1)
            fprintf(out, ", %zu sample paths", f->sample_count);
        fprintf(out, "): %s/forecast.csv%s%s\n", tsrnn_display_path(tr->folder.dir), samples,
                files->plot_dir != NULL ? " and forecast.png" : "");
        return;
    }
    fprintf(out, "Forecast %d steps of each of the %zu series", tr->cfg->forecast_n, set->count);
    if (f->sample_count > 1)
        fprintf(out, ", %zu sample paths each", f->sample_count);
    fprintf(out, ": %s/forecast.csv%s", tsrnn_display_path(tr->folder.dir), samples);
    if (drawn > 0)
        fprintf(out, " and the plots of the first %zu (forecast_<series>.png)", drawn);
    fputc('\n', out);
}

/* The [forecast] section: n steps after each series' training part, as forecast.csv and
 * (with plot = true and a build with cairo) the plots in the run folder; with a likelihood,
 * Darts' first predict() after fit(), num_samples paths each (and forecast_samples.csv with
 * samples = true). */
enum tsrnn_status tsrnn_trainer_write_forecast(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    struct tsrnn_forecast_source *sources = NULL;
    struct tsrnn_forecast_set set = { 0 };
    struct tsrnn_forecast_options opt;
    char csv[PATH_MAX + 16], samples[PATH_MAX + 32], title[2 * TSRNN_NAME_MAX + 16], why[1024];
    enum tsrnn_status status = all_sources(tr->ds, &sources);
    if (status != TSRNN_OK)
        goto out;
    forecast_options(tr, 1, cfg->predict_likelihood_parameters, &opt);
    status = tsrnn_forecast_set_predict(&set, &tr->model, sources, tr->ds->series_count,
                                        (size_t)cfg->input_chunk_length, (size_t)cfg->forecast_n,
                                        NULL, &opt);
    if (status != TSRNN_OK)
        goto out;
    /* plot = true is the default: where cairo cannot draw (a build without it, a machine
     * without libcairo.so.2) the picture is skipped with a warning; asked for explicitly, it
     * was refused before training (setup.c's check_plot). A forecast of the likelihood's
     * parameters has no picture. */
    bool parameters = set.f[0].param_count > 0;
    bool draw = cfg->forecast_plot && !parameters && tsrnn_plot_usable(why, sizeof(why));
    if (cfg->forecast_plot && !parameters && !draw)
        tsrnn_warn(
            "%s not drawn: %s; [forecast] plot = false silences this",
            tsrnn_trainer_named_series(tr->ds) ? "the forecast plots are" : "forecast.png is", why);
    snprintf(csv, sizeof(csv), "%s/forecast.csv", tr->folder.dir);
    snprintf(samples, sizeof(samples), "%s/forecast_samples.csv", tr->folder.dir);
    snprintf(title, sizeof(title), "%s %s", cfg->model_name, tsrnn_model_kind_name(cfg->model));
    struct tsrnn_forecast_files files = {
        .csv_path = csv,
        .id_name = id_column(cfg),
        .samples_path = cfg->forecast_samples && set.f[0].sample_count > 1 ? samples : NULL,
        .plot_dir = draw ? tr->folder.dir : NULL,
        .title = title,
        .width = PLOT_WIDTH,
        .height = PLOT_HEIGHT,
    };
    size_t drawn = 0;
    status = tsrnn_forecast_set_save(&set, &files, &drawn);
    if (status != TSRNN_OK)
        goto out;
    if (tr->report.out != NULL)
        print_forecast(tr, &set, &files, drawn);
out:
    tsrnn_forecast_set_finish(&set);
    free(sources);
    return status;
}
