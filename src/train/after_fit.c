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
    struct tsrnn_atomic_file af;
    snprintf(path, sizeof(path), "%s/validation.csv", tr->folder.dir);
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
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
    if (fflush(af.file) != 0 || ferror(af.file)) {
        int err = errno != 0 ? errno : EIO;
        tsrnn_atomic_file_abort(&af);
        return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s", tsrnn_display_path(path));
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

/* The validation forecast of a model with a likelihood: Darts' predict(n = the longest
 * validation part, series = the training parts, num_samples) as one call (the second
 * predict() after fit(): the first is [forecast]'s), each series' forecast cut to its
 * validation part; the point metrics on the median, the quantile metrics on the samples. */
static enum tsrnn_status sampled_validation(struct trainer *tr, struct tsrnn_forecast_scores *each,
                                            struct tsrnn_quantile_scores *q_each,
                                            struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count, n = 0;
    struct tsrnn_forecast *f = calloc(S, sizeof(*f));
    struct tsrnn_forecast_source *sources = calloc(S, sizeof(*sources));
    size_t *lengths = calloc(S, sizeof(*lengths));
    struct tsrnn_forecast_options opt;
    enum tsrnn_status status = TSRNN_OK;
    if (f == NULL || sources == NULL || lengths == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' forecasts", S);
    for (size_t i = 0; status == TSRNN_OK && i < S; i++) {
        sources[i] = forecast_source(ds, i);
        lengths[i] = ds->items[i].val_length;
        n = lengths[i] > n ? lengths[i] : n;
    }
    forecast_options(tr, 2, false, &opt);
    if (status == TSRNN_OK)
        status = tsrnn_forecast_predict(f, &tr->model, sources, S,
                                        (size_t)tr->cfg->input_chunk_length, n, lengths, &opt);
    r->has_quantile_scores = status == TSRNN_OK;
    for (size_t i = 0; status == TSRNN_OK && i < S; i++) {
        each[i] = (struct tsrnn_forecast_scores){ f[i].mape, f[i].mae, f[i].rmse };
        r->forecast_count += f[i].length;
        r->has_quantile_scores &= f[i].has_quantile_scores;
        if (f[i].has_quantile_scores)
            q_each[i] = f[i].quantile_scores;
        tsrnn_forecast_finish(&f[i]);
    }
    free(f);
    free(sources);
    free(lengths);
    return status;
}

/* Darts' RNNModel.predict(n = validation length, series = training part) of every series,
 * in the original scale, scored with Darts' mape(actual, pred) = 100 * mean |(a - p) / a|,
 * mae and rmse, each per component then averaged over the components; several series'
 * scores are averaged as Darts' metric(actual_list, pred_list, series_reduction=np.mean)
 * does. */
enum tsrnn_status tsrnn_trainer_forecast_validation(struct trainer *tr,
                                                    struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count;
    struct tsrnn_forecast_scores *each = calloc(S, sizeof(*each)), mean;
    struct tsrnn_quantile_scores *q_each = calloc(S, sizeof(*q_each));
    if (each == NULL || q_each == NULL) {
        free(each);
        free(q_each);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' scores", S);
    }
    enum tsrnn_status status = TSRNN_OK;
    r->forecast_count = 0;
    bool sampled = tr->model.likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    if (sampled)
        status = sampled_validation(tr, each, q_each, r);
    for (size_t i = 0; !sampled && i < S && status == TSRNN_OK; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        struct tsrnn_forecast f;
        struct tsrnn_forecast_source src = forecast_source(ds, i);
        status = tsrnn_forecast_run(&f, &tr->model, &src, (size_t)tr->cfg->input_chunk_length,
                                    item->val_length);
        if (status != TSRNN_OK)
            break;
        each[i] = (struct tsrnn_forecast_scores){ f.mape, f.mae, f.rmse };
        r->forecast_count += f.length;
        if (f.zero_actual_count > 0)
            tsrnn_warn("MAPE leaves out the %zu value%s of 0 in the validation part%s%s%s, as "
                       "Darts' mape() does (their percentage error is NaN, or 0 where the "
                       "forecast is 0 too)%s",
                       f.zero_actual_count, f.zero_actual_count > 1 ? "s" : "",
                       S > 1 ? " of series '" : "", S > 1 ? item->id : "", S > 1 ? "'" : "",
                       isnan(f.mape) ? ": none is left, MAPE is undefined" : "");
        tsrnn_forecast_finish(&f);
    }
    for (size_t i = 0; sampled && status == TSRNN_OK && i < S; i++)
        if (isnan(each[i].mape))
            tsrnn_warn("MAPE is undefined: the validation part%s%s%s holds a 0 (Darts' mape() "
                       "needs actual values that are not 0)",
                       S > 1 ? " of series '" : "", S > 1 ? ds->items[i].id : "", S > 1 ? "'" : "");
    if (status == TSRNN_OK) {
        tsrnn_forecast_scores_mean(&mean, each, S);
        r->mape = mean.mape;
        r->mae = mean.mae;
        r->rmse = mean.rmse;
        if (r->has_quantile_scores)
            tsrnn_quantile_scores_mean(&r->quantile_scores, q_each, S);
        if (tr->world.writes_files && tsrnn_trainer_named_series(ds))
            status = write_validation(tr, each, &mean, r->has_quantile_scores ? q_each : NULL,
                                      &r->quantile_scores);
    }
    free(each);
    free(q_each);
    return status;
}

/* The forecast plots of f (one per series): forecast.png of the one series, or
 * forecast_<id>.png of each of the first TSRNN_FORECAST_PLOTS named series. */
static enum tsrnn_status plot_forecasts(struct trainer *tr, const struct tsrnn_forecast *f,
                                        size_t *drawn)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t count =
        ds->series_count < TSRNN_FORECAST_PLOTS ? ds->series_count : TSRNN_FORECAST_PLOTS;
    const char *ids[TSRNN_FORECAST_PLOTS];
    *drawn = 0;
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        char path[PATH_MAX + TSRNN_NAME_MAX + 32], title[TSRNN_NAME_MAX * 3],
            file_id[TSRNN_NAME_MAX];
        ids[i] = item->id;
        tsrnn_forecast_plot_file_id(ids, i, file_id, sizeof(file_id));
        if (tsrnn_trainer_named_series(ds)) {
            snprintf(path, sizeof(path), "%s/forecast_%s.png", tr->folder.dir, file_id);
            snprintf(title, sizeof(title), "%s %s, series %s", cfg->model_name,
                     tsrnn_model_kind_name(cfg->model), item->id);
        } else {
            snprintf(path, sizeof(path), "%s/forecast.png", tr->folder.dir);
            snprintf(title, sizeof(title), "%s %s", cfg->model_name,
                     tsrnn_model_kind_name(cfg->model));
        }
        TSRNN_TRY(tsrnn_forecast_plot(&f[i], &item->series, title, PLOT_WIDTH, PLOT_HEIGHT, path));
        (*drawn)++;
    }
    return TSRNN_OK;
}

/* A file's whole text, for write_text_job. */
struct text_file {
    const char *path;
    char *text; /* malloc'd */
    size_t nbytes;
};

static enum tsrnn_status write_text_job(void *arg)
{
    const struct text_file *t = arg;
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, t->path));
    if (fwrite(t->text, 1, t->nbytes, af.file) != t->nbytes) {
        int err = errno != 0 ? errno : EIO;
        tsrnn_atomic_file_abort(&af);
        return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s", tsrnn_display_path(t->path));
    }
    return tsrnn_atomic_file_commit(&af);
}

/* forecast.csv's text (quantile columns with samples: tsrnn_forecast_write_set), or with
 * `samples` forecast_samples.csv's, from the forecasts f of every series, into `csv`. */
static enum tsrnn_status forecast_text(struct trainer *tr, const struct tsrnn_forecast *f,
                                       const struct tsrnn_forecast_source *sources,
                                       const struct tsrnn_forecast_options *opt, bool samples,
                                       struct text_file *csv)
{
    FILE *mem = open_memstream(&csv->text, &csv->nbytes);
    if (mem == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s", tsrnn_display_path(csv->path));
    size_t S = tr->ds->series_count;
    const char *id_name = id_column(tr->cfg);
    enum tsrnn_status status =
        samples ? tsrnn_forecast_write_samples(f, sources, S, id_name, mem)
                : tsrnn_forecast_write_set(f, sources, S, id_name, &tr->model.likelihood, opt, mem);
    if (fclose(mem) != 0 && status == TSRNN_OK)
        status = TSRNN_ERR_IO;
    if (status == TSRNN_ERR_IO) /* memory, with a stream in memory */
        status =
            tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s", tsrnn_display_path(csv->path));
    return status;
}

/* The [forecast] section: n steps after each series' training part, as forecast.csv and
 * (with plot = true and a build with cairo) the plots in the run folder; with a likelihood,
 * Darts' first predict() after fit(), num_samples paths each (and forecast_samples.csv with
 * samples = true). */
enum tsrnn_status tsrnn_trainer_write_forecast(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count;
    char path[PATH_MAX + 16], samples_path[PATH_MAX + 32];
    struct tsrnn_forecast_options opt;
    forecast_options(tr, 1, cfg->predict_likelihood_parameters, &opt);

    struct tsrnn_forecast_source *sources = calloc(S, sizeof(*sources));
    struct tsrnn_forecast *f = calloc(S, sizeof(*f));
    if (sources == NULL || f == NULL) {
        free(sources);
        free(f);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' forecasts", S);
    }
    for (size_t i = 0; i < S; i++)
        sources[i] = forecast_source(ds, i);
    snprintf(path, sizeof(path), "%s/forecast.csv", tr->folder.dir);
    snprintf(samples_path, sizeof(samples_path), "%s/forecast_samples.csv", tr->folder.dir);
    /* The forecasts here (they run the model, this thread's); the files with their fsyncs
     * beside the pictures, on the helper thread. */
    struct text_file csv = { .path = path }, samples = { .path = samples_path };
    enum tsrnn_status status =
        tsrnn_forecast_predict(f, &tr->model, sources, S, (size_t)cfg->input_chunk_length,
                               (size_t)cfg->forecast_n, NULL, &opt);
    bool have_forecasts = status == TSRNN_OK;
    bool write_samples = cfg->forecast_samples && f[0].sample_count > 1;
    if (status == TSRNN_OK)
        status = forecast_text(tr, f, sources, &opt, false, &csv);
    if (status == TSRNN_OK)
        status = tsrnn_jobs_add(&tr->folder.jobs, write_text_job, &csv);
    if (status == TSRNN_OK && write_samples)
        status = forecast_text(tr, f, sources, &opt, true, &samples);
    if (status == TSRNN_OK && write_samples)
        status = tsrnn_jobs_add(&tr->folder.jobs, write_text_job, &samples);
    tsrnn_jobs_start(&tr->folder.jobs);
    /* plot = true is the default: where cairo cannot draw (a build without it, a machine
     * without libcairo.so.2) the picture is skipped with a warning; asked for explicitly, it
     * was refused before training (check_plot). A forecast of the likelihood's parameters has
     * no picture. */
    char why[1024];
    bool parameters = have_forecasts && f[0].param_count > 0;
    bool draw = cfg->forecast_plot && !parameters && tsrnn_plot_usable(why, sizeof(why));
    if (cfg->forecast_plot && !parameters && !draw)
        tsrnn_warn("%s not drawn: %s; [forecast] plot = false silences this",
                   tsrnn_trainer_named_series(ds) ? "the forecast plots are" : "forecast.png is",
                   why);
    size_t drawn = 0;
    if (status == TSRNN_OK && draw)
        status = plot_forecasts(tr, f, &drawn);
    status = tsrnn_trainer_finish_jobs(tr, status);
    free(csv.text);
    free(samples.text);
    if (status == TSRNN_OK && tr->report.out != NULL && !tsrnn_trainer_named_series(ds)) {
        const struct tsrnn_dataset_series *item = &ds->items[0];
        char first[64], last[64];
        tsrnn_time_format(f[0].times[0], item->series.time_unit, first, sizeof(first));
        tsrnn_time_format(f[0].times[f[0].length - 1], item->series.time_unit, last, sizeof(last));
        fprintf(tr->report.out, "Forecast %zu steps (%s .. %s", f[0].length, first, last);
        if (f[0].sample_count > 1)
            fprintf(tr->report.out, ", %zu sample paths", f[0].sample_count);
        fprintf(tr->report.out, "): %s/forecast.csv%s%s\n", tsrnn_display_path(tr->folder.dir),
                write_samples ? ", forecast_samples.csv" : "", draw ? " and forecast.png" : "");
    } else if (status == TSRNN_OK && tr->report.out != NULL) {
        fprintf(tr->report.out, "Forecast %d steps of each of the %zu series", cfg->forecast_n, S);
        if (f[0].sample_count > 1)
            fprintf(tr->report.out, ", %zu sample paths each", f[0].sample_count);
        fprintf(tr->report.out, ": %s/forecast.csv%s", tsrnn_display_path(tr->folder.dir),
                write_samples ? ", forecast_samples.csv" : "");
        if (drawn > 0)
            fprintf(tr->report.out, " and the plots of the first %zu (forecast_<series>.png)",
                    drawn);
        fputc('\n', tr->report.out);
    }
    for (size_t i = 0; have_forecasts && i < S; i++)
        tsrnn_forecast_finish(&f[i]);
    free(f);
    free(sources);
    return status;
}
