/* tsrnn-predict's forecast: Darts' predict(n) of every series in one call
 * (tsrnn_forecast_set_predict(), the orchestration the trainer's forecasts share), the
 * scores on standard error, the CSV, the sample paths and the picture; and what the
 * backtest shares of its printing. */
#include <math.h>
#include <stdio.h>

#include "predict.h"

/* "Forecast 24 steps, 1959-02 .. 1961-01" and the scores against the actual values it has,
 * led by the series' id when it has one. */
static void print_scores(const struct tsrnn_forecast *f, const struct tsrnn_series *s,
                         const char *id)
{
    char first[64], last[64];
    tsrnn_time_format(f->times[0], s->time_unit, first, sizeof(first));
    tsrnn_time_format(f->times[f->length - 1], s->time_unit, last, sizeof(last));
    if (id != NULL)
        fprintf(stderr, "Series %s: ", id);
    fprintf(stderr, "Forecast %zu steps, %s .. %s%s", f->length, first, last,
            id != NULL && f->actual_count > 0 ? "; " : "\n");
    if (f->actual_count == 0)
        return;
    fprintf(stderr, "%sgainst the %zu actual values:", id != NULL ? "a" : "A", f->actual_count);
    if (!isnan(f->mape))
        fprintf(stderr, " MAPE %.2f%%", f->mape);
    fprintf(stderr, " MAE %.6g RMSE %.6g\n", f->mae, f->rmse);
}

void predict_print_loaded(const struct tsrnn_checkpoint *ck, const char *path)
{
    if (ck->state.global_step == 0)
        fprintf(stderr, "Loaded %s (%s, untrained: saved by a max_steps = 0 run)\n",
                tsrnn_display_path(path), tsrnn_model_kind_name(ck->dims.kind));
    else
        fprintf(stderr, "Loaded %s (%s, epoch %lld, %s %.6g)\n", tsrnn_display_path(path),
                tsrnn_model_kind_name(ck->dims.kind), (long long)ck->state.epoch, ck->state.monitor,
                ck->state.monitor_value);
}

/* "<model_name> <kind>[, series <id>]": the pictures' title. */
void predict_plot_title(const struct tsrnn_checkpoint *ck, const char *id, char *out,
                        size_t capacity)
{
    snprintf(out, capacity, "%s %s%s%s", ck->config.model_name,
             tsrnn_model_kind_name(ck->dims.kind), id ? ", series " : "", id ? id : "");
}

/* The id column's name in the files of several series. */
const char *predict_id_name(const struct tsrnn_checkpoint *ck)
{
    return ck->config.id_col[0] != '\0' ? ck->config.id_col : "series";
}

/* The forecast options of a model with a likelihood: the run's [forecast] keys (with the
 * command line's over them, applied to ck->config by apply_sampling_options), drawing as
 * Darts' first predict() after fit() does (torch seed draw `draw`: 5 for predict(), 4 for
 * historical_forecasts()), or as predict(random_state=R). */
void predict_sampling_options(struct tsrnn_forecast_options *opt, const struct options *o,
                              const struct tsrnn_checkpoint *ck, unsigned draw)
{
    uint32_t seed = o->random_state >= 0
                        ? tsrnn_darts_seed((uint32_t)o->random_state, 1)
                        : tsrnn_darts_seed((uint32_t)ck->config.random_state, draw);
    tsrnn_forecast_options_from_config(opt, &ck->config, seed, o->likelihood_parameters);
}

/* "MQL 0.05: ..., 5-95% interval: coverage (MIC) ..., width (MIW) ..." after `lead`. */
static void print_quantile_scores(const char *lead, const struct tsrnn_quantile_scores *q)
{
    fprintf(stderr, "%sMQL", lead);
    for (size_t k = 0; k < q->quantile_count; k++)
        fprintf(stderr, "%s %g: %.6g", k ? "," : "", q->quantiles[k], q->mql[k]);
    fprintf(stderr, "; %g-%g%% interval: coverage (MIC) %.6g, width (MIW) %.6g\n", 100 * q->low,
            100 * q->high, q->mic, q->miw);
}

/* What a forecast prints before its files (standard error): the checkpoint, and each series'
 * scores against the actual values it has; with a likelihood the sample paths' count and
 * their quantile scores, without one the mean of several series' scores (Darts'
 * series_reduction=np.mean). A forecast of the likelihood's parameters has no scores. */
static void print_forecast(const struct tsrnn_forecast_set *set, const struct tsrnn_checkpoint *ck,
                           const char *path)
{
    const struct tsrnn_forecast *f = set->f;
    bool sampled = set->likelihood->kind != TSRNN_LIKELIHOOD_NONE;
    struct tsrnn_forecast_scores mean = { 0 };
    size_t scored = 0;
    predict_print_loaded(ck, path);
    if (sampled)
        fprintf(stderr, "%zu sample path%s per forecast (%s)\n", f[0].sample_count,
                f[0].sample_count == 1 ? "" : "s",
                tsrnn_likelihood_darts_class(set->likelihood->kind));
    for (size_t i = 0; i < set->count && f[0].param_count == 0; i++) {
        const char *id = set->sources[i].id;
        print_scores(&f[i], set->sources[i].series, id);
        if (f[i].has_quantile_scores)
            print_quantile_scores(id != NULL ? "  " : "", &f[i].quantile_scores);
        if (f[i].actual_count == 0)
            continue;
        /* the running sum of the scored series, in order: tsrnn_forecast_scores_mean()'s */
        mean.mape += f[i].mape;
        mean.mae += f[i].mae;
        mean.rmse += f[i].rmse;
        scored++;
    }
    if (sampled || scored < 2)
        return;
    fprintf(stderr, "Mean over the %zu series with actual values:", scored);
    if (!isnan(mean.mape))
        fprintf(stderr, " MAPE %.2f%%", mean.mape / (double)scored);
    fprintf(stderr, " MAE %.6g RMSE %.6g\n", mean.mae / (double)scored, mean.rmse / (double)scored);
}

/* The forecast of every source: Darts' predict() (with a likelihood: every source's paths in
 * one call), its scores, the CSV (the quantiles', or the likelihood's parameters', with one)
 * into --out or standard output, the paths with --samples, the picture with --plot. */
enum tsrnn_status predict_forecast(const struct options *o, const struct tsrnn_checkpoint *ck,
                                   const char *path, struct tsrnn_model *model,
                                   const struct tsrnn_forecast_source *sources, size_t count)
{
    struct tsrnn_forecast_set set = { 0 };
    struct tsrnn_forecast_options opt;
    char title[3 * TSRNN_NAME_MAX + 32];
    size_t drawn = 0;
    predict_sampling_options(&opt, o, ck, TSRNN_DARTS_PREDICT_DRAW);
    /* Every forecast before anything is printed: one that cannot be made is the error alone. */
    enum tsrnn_status status = tsrnn_forecast_set_predict(
        &set, model, sources, count, (size_t)ck->input_chunk_length, (size_t)o->n, NULL, &opt);
    if (status != TSRNN_OK)
        goto out;
    print_forecast(&set, ck, path);
    /* What cannot be written is refused before anything is. */
    if (o->samples_path != NULL && set.f[0].sample_count < 2) {
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "--samples %s: a forecast of %zu path has no samples to write; "
                             "accepted with --num-samples 2 or more",
                             o->samples_path, set.f[0].sample_count);
        goto out;
    }
    if (o->plot_path != NULL && set.f[0].param_count > 0) {
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "--plot %s: a forecast of the likelihood's parameters has no "
                             "picture; leave out --likelihood-parameters or --plot",
                             o->plot_path);
        goto out;
    }
    predict_plot_title(ck, NULL, title, sizeof(title));
    struct tsrnn_forecast_files files = {
        .csv_path = o->out_path,
        .csv_stream = stdout,
        .id_name = predict_id_name(ck),
        .samples_path = o->samples_path,
        .plot_path = o->plot_path,
        .title = title,
        .width = o->width,
        .height = o->height,
    };
    status = tsrnn_forecast_set_save(&set, &files, &drawn);
out:
    tsrnn_forecast_set_finish(&set);
    return status;
}
