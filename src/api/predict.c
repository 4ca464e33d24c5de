/* Forecasts and backtests of a run's model (include/tsrnn/tsrnn.h), as tsrnn-predict makes
 * them (src/forecast/): the series to forecast from are the fit's, a loaded checkpoint's
 * training data, or a series set; what comes out is a prediction that owns copies of
 * everything it shows, so that it outlives the run and the set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/model.h"
#include "tsrnn/plot.h"
#include "tsrnn/torch_rng.h"

/* --- the series to forecast from -------------------------------------------------------- */

/* The sources of one call: each forecast source over a series this file owns (an extended
 * copy for covariates past the series' end) or the run's; `scored` false where the values
 * after the origin are not the series' (the extension). */
struct sources {
    size_t count;
    struct tsrnn_forecast_source *src;
    struct tsrnn_series *own; /* (count) owned extensions; length 0 where unused */
    bool *scored;
    char (*ids)[TSRNN_NAME_MAX];
};

static void sources_finish(struct sources *s)
{
    for (size_t i = 0; s->own != NULL && i < s->count; i++) {
        s->own[i].component_names = NULL; /* the set's */
        tsrnn_series_finish(&s->own[i]);
    }
    free(s->src);
    free(s->own);
    free(s->scored);
    free(s->ids);
    memset(s, 0, sizeof(*s));
}

static enum tsrnn_status sources_alloc(struct sources *s, size_t count)
{
    memset(s, 0, sizeof(*s));
    s->count = count;
    s->src = calloc(count ? count : 1, sizeof(*s->src));
    s->own = calloc(count ? count : 1, sizeof(*s->own));
    s->scored = calloc(count ? count : 1, sizeof(*s->scored));
    s->ids = calloc(count ? count : 1, sizeof(*s->ids));
    if (s->src == NULL || s->own == NULL || s->scored == NULL || s->ids == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", count);
    return TSRNN_OK;
}

/* A loaded checkpoint's training series, read as its training read them: only where its
 * run asked for that data, as tsrnn-predict decides (tsrnn_checkpoint_check_data()). */
static enum tsrnn_status load_stored_data(struct tsrnn_run *run)
{
    const struct tsrnn_checkpoint *ck = run->ck;
    char run_dir[PATH_MAX];
    if (run->stored_loaded)
        return TSRNN_OK;
    if (ck->config.data_path[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: the model was trained on series given to its fit, which the "
                           "checkpoint does not hold; pass the series to forecast from",
                           tsrnn_display_path(ck->path));
    tsrnn_checkpoint_run_folder(ck->path, run_dir, sizeof(run_dir));
    TSRNN_TRY(tsrnn_checkpoint_check_data(ck, run_dir, "libtsrnn"));
    TSRNN_TRY(tsrnn_checkpoint_load_data(&run->stored, ck));
    run->stored_loaded = true;
    return TSRNN_OK;
}

/* The model's series whose scaler forecasts a series named `id`: the one of that id; for a
 * model of one unnamed series, that one; for other series, the first where every scaler is
 * the identity (a model trained on series scaled by the caller). NULL, with the error,
 * otherwise. */
static const struct tsrnn_checkpoint_series *model_series(const struct tsrnn_checkpoint *ck,
                                                          const char *id)
{
    bool named = ck->series_list[0].id[0] != '\0';
    if (!named)
        return &ck->series_list[0];
    for (size_t k = 0; k < ck->series_count; k++)
        if (strcmp(ck->series_list[k].id, id) == 0)
            return &ck->series_list[k];
    if (ck->config.scaler == TSRNN_SCALER_NONE &&
        (ck->covariates.column_count == 0 || ck->config.cov_scaler == TSRNN_SCALER_NONE))
        return &ck->series_list[0];
    tsrnn_error(TSRNN_ERR_USAGE,
                "series '%s': the model was trained on %zu series, each scaled by its own "
                "scaler ([data] scaler = minmax); accepted: a series named as one of them "
                "('%s', ...)",
                id, ck->series_count, ck->series_list[0].id);
    return NULL;
}

/* Series `s` of a set as a source forecasting n steps (n 0: a backtest, inside the series):
 * with the model's covariate columns, a copy extended to the n points after it, whose values
 * there are NaN (not scored) and whose covariates come from the set. */
static enum tsrnn_status set_source(struct sources *out, size_t i, const struct api_series *s,
                                    const struct tsrnn_checkpoint *ck, size_t n)
{
    const struct tsrnn_series *series = &s->series;
    char label[TSRNN_NAME_MAX + 16];
    snprintf(label, sizeof(label), s->id[0] ? "series '%s'" : "the series%s", s->id);
    const struct tsrnn_checkpoint_series *cs = model_series(ck, s->id);
    if (cs == NULL)
        return TSRNN_ERR_USAGE;
    if (cs->freq.kind != TSRNN_FREQ_NONE && !tsrnn_freq_equal(&cs->freq, &series->freq)) {
        char have[TSRNN_FREQ_NAME_MAX], want[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&series->freq, have, sizeof(have));
        tsrnn_freq_name(&cs->freq, want, sizeof(want));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: its frequency is %s, but the model was trained on series of freq "
                           "%s; accepted: a series of freq %s",
                           label, have, want, want);
    }
    if (series->component_count != ck->series.component_count)
        return tsrnn_error(TSRNN_ERR_DATA, "%s has %zu components; the model forecasts %zu", label,
                           series->component_count, ck->series.component_count);
    size_t Kc = ck->covariates.column_count, icl = (size_t)ck->input_chunk_length;
    if (s->cov_count != Kc)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s has %zu covariate columns; the model takes %zu future covariates "
                           "besides its encoders'",
                           label, s->cov_count, Kc);
    snprintf(out->ids[i], TSRNN_NAME_MAX, "%s", s->id);
    out->scored[i] = true;
    out->src[i] = (struct tsrnn_forecast_source){
        .series = series,
        .scaler = &cs->scaler,
        .origin = series->length,
        .id = s->id[0] != '\0' ? out->ids[i] : NULL,
        .covariates = &ck->covariates,
        .cov_scaler = &cs->cov_scaler,
    };
    if (Kc == 0)
        return TSRNN_OK;
    /* The covariate columns beside the values, over the series and the n points after it. */
    size_t L = series->length, C = series->component_count, Lx = L + n;
    struct tsrnn_series *x = &out->own[i];
    *x = *series;
    x->length = Lx;
    x->values = malloc(Lx * C * sizeof(float));
    x->times = malloc(Lx * sizeof(int64_t));
    x->covariates = calloc(Lx * Kc, sizeof(float));
    x->component_names = NULL; /* the set's; not freed here */
    x->covariate_count = Kc;
    if (x->values == NULL || x->times == NULL || x->covariates == NULL) {
        free(x->values);
        free(x->times);
        free(x->covariates);
        memset(x, 0, sizeof(*x));
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s's covariates", label);
    }
    x->component_names = series->component_names;
    memcpy(x->values, series->values, L * C * sizeof(float));
    for (size_t k = L * C; k < Lx * C; k++)
        x->values[k] = NAN;
    memcpy(x->times, series->times, L * sizeof(int64_t));
    for (size_t t = L; t < Lx; t++)
        if (!tsrnn_freq_advance(&series->freq, series->times[L - 1], (int64_t)(t - L + 1),
                                &x->times[t]))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: the forecast's stamps pass the last one tsrnn writes", label);
    /* Every row the forecast reads: the icl points before it and its n steps. */
    size_t need_from = n > 0 && L >= icl ? L - icl + 1 : 0;
    for (size_t t = 0; t < Lx; t++) {
        size_t row;
        if (api_covariate_row(s, x->times[t], &row)) {
            memcpy(x->covariates + t * Kc, s->cov_values + row * Kc, Kc * sizeof(float));
        } else if (t >= need_from) {
            char stamp[64], end[64];
            tsrnn_time_format(x->times[t], series->time_unit, stamp, sizeof(stamp));
            tsrnn_time_format(s->cov_times[s->cov_length - 1], series->time_unit, end, sizeof(end));
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: its future covariates end at %s, but a forecast of %zu steps "
                               "needs them at %s too: accepted: covariates over the input_chunk_"
                               "length = %zu points before the forecast and its steps (Darts' "
                               "future_covariates)",
                               label, end, n, stamp, icl);
        }
    }
    out->src[i].series = x;
    out->scored[i] = false;
    if (n == 0) { /* a backtest: the series itself with its covariates */
        x->length = L;
        out->scored[i] = true;
    }
    return TSRNN_OK;
}

/* The sources of a call: the set's series, else the fit's series after their training part,
 * else a loaded checkpoint's training data. */
static enum tsrnn_status make_sources(struct sources *out, struct tsrnn_run *run,
                                      const struct tsrnn_series_set *set, size_t n)
{
    const struct tsrnn_checkpoint *ck = run->ck;
    if (set != NULL) {
        if (set->count == 0)
            return tsrnn_error(TSRNN_ERR_USAGE, "the series set is empty");
        TSRNN_TRY(sources_alloc(out, set->count));
        for (size_t i = 0; i < set->count; i++)
            TSRNN_TRY(set_source(out, i, &set->items[i], ck, n));
        return TSRNN_OK;
    }
    if (run->ds != NULL) { /* the fit's: its scalers and covariates, as training forecasts */
        const struct tsrnn_dataset *ds = run->ds;
        TSRNN_TRY(sources_alloc(out, ds->series_count));
        for (size_t i = 0; i < ds->series_count; i++) {
            const struct tsrnn_dataset_series *item = &ds->items[i];
            snprintf(out->ids[i], TSRNN_NAME_MAX, "%s", item->id);
            out->scored[i] = true;
            out->src[i] = (struct tsrnn_forecast_source){
                .series = &item->series,
                .scaler = &item->scaler,
                .origin = item->train_length,
                .id = item->id[0] != '\0' ? out->ids[i] : NULL,
                .covariates = ds->covariates,
                .cov_scaler = &item->cov_scaler,
            };
        }
        return TSRNN_OK;
    }
    TSRNN_TRY(load_stored_data(run));
    const struct tsrnn_dataset *ds = &run->stored;
    TSRNN_TRY(sources_alloc(out, ck->series_count));
    for (size_t k = 0; k < ck->series_count; k++) {
        const struct tsrnn_checkpoint_series *cs = &ck->series_list[k];
        const struct tsrnn_dataset_series *item;
        TSRNN_TRY(tsrnn_checkpoint_data_series(&item, ck, ds, k));
        snprintf(out->ids[k], TSRNN_NAME_MAX, "%s", cs->id);
        out->scored[k] = true;
        out->src[k] = (struct tsrnn_forecast_source){
            .series = &item->series,
            .scaler = &cs->scaler,
            .origin = item->train_length,
            .id = cs->id[0] != '\0' ? out->ids[k] : NULL,
            .covariates = &ck->covariates,
            .cov_scaler = &cs->cov_scaler,
        };
    }
    return TSRNN_OK;
}

/* --- the model -------------------------------------------------------------------------- */

/* The checkpoint's model on the CPU for `batch` windows at a time (a forecast is one window
 * after another: the CPU's work, whatever trained the model). */
static enum tsrnn_status make_model(struct tsrnn_model *model, struct tsrnn_compute **compute,
                                    const struct tsrnn_checkpoint *ck, size_t batch)
{
    struct tsrnn_compute_options device = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    TSRNN_TRY(tsrnn_compute_create(compute, &device));
    return tsrnn_checkpoint_model_init(model, *compute, ck, batch);
}

static enum tsrnn_status need_model(const struct tsrnn_run *run)
{
    if (run->ck != NULL)
        return TSRNN_OK;
    if (run->fitted)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the fit kept no model: it ran with [output] save_checkpoints = "
                           "false, and tsrnn's model after a fit is its last checkpoint; fit with "
                           "save_checkpoints = true (docs/api.md)");
    return tsrnn_error(TSRNN_ERR_USAGE, "no model yet: fit the run or load a checkpoint first");
}

/* [forecast] num_samples and predict_likelihood_parameters for this model, and the draws. */
static enum tsrnn_status forecast_options(struct tsrnn_forecast_options *opt,
                                          const struct tsrnn_run *run, unsigned draw, size_t n)
{
    const struct tsrnn_config *cfg = run->cfg;
    bool parameters = cfg->predict_likelihood_parameters;
    if (run->ck->likelihood.kind == TSRNN_LIKELIHOOD_NONE && (cfg->num_samples > 1 || parameters))
        return tsrnn_error(
            TSRNN_ERR_USAGE,
            "%s: the model has no likelihood ([model] likelihood = none): its "
            "forecast is one path, as Darts' point forecasts; accepted: "
            "num_samples = 1",
            cfg->num_samples > 1
                ? tsrnn_config_origin(cfg, "forecast", "num_samples")
                : tsrnn_config_origin(cfg, "forecast", "predict_likelihood_parameters"));
    if (parameters && (cfg->num_samples != 1 || n != 1))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "predict_likelihood_parameters predicts the first step's parameters: "
                           "it needs n = 1 and num_samples = 1 (here n = %zu, num_samples %d), as "
                           "Darts'",
                           n, cfg->num_samples);
    uint32_t seed = run->predict_seed >= 0
                        ? tsrnn_darts_seed((uint32_t)run->predict_seed, 1)
                        : tsrnn_darts_seed((uint32_t)run->ck->config.random_state, draw);
    tsrnn_forecast_options_from_config(opt, cfg, seed, parameters);
    return TSRNN_OK;
}

/* --- predictions ------------------------------------------------------------------------ */

void tsrnn_prediction_destroy(struct tsrnn_prediction *p)
{
    if (p == NULL)
        return;
    for (size_t s = 0; s < p->series_count; s++) {
        if (p->f != NULL)
            tsrnn_forecast_finish(&p->f[s]);
        if (p->bt != NULL)
            tsrnn_backtest_finish(&p->bt[s]);
        if (p->series != NULL)
            tsrnn_series_finish(&p->series[s]);
    }
    for (size_t i = 0; p->times != NULL && i < p->count; i++)
        free(p->times[i]);
    free(p->f);
    free(p->bt);
    free(p->series);
    free(p->ids);
    free(p->sources);
    free(p->scalers);
    free(p->cov_scalers);
    free(p->forecast_series);
    free(p->forecast_index);
    free(p->times);
    free(p);
}

/* A prediction over `src`: copies of the series (the first `lengths` points) and scalers. */
static enum tsrnn_status prediction_new(struct tsrnn_prediction **out, const struct sources *src,
                                        const struct tsrnn_run *run, bool backtest)
{
    size_t S = src->count;
    struct tsrnn_prediction *p = calloc(1, sizeof(*p));
    *out = p;
    if (p == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a prediction");
    p->backtest = backtest;
    p->series = calloc(S, sizeof(*p->series));
    p->ids = calloc(S, sizeof(*p->ids));
    p->sources = calloc(S, sizeof(*p->sources));
    p->scalers = calloc(S, sizeof(*p->scalers));
    p->cov_scalers = calloc(S, sizeof(*p->cov_scalers));
    if (backtest)
        p->bt = calloc(S, sizeof(*p->bt));
    else
        p->f = calloc(S, sizeof(*p->f));
    if (p->series == NULL || p->ids == NULL || p->sources == NULL || p->scalers == NULL ||
        p->cov_scalers == NULL || (backtest ? p->bt == NULL : p->f == NULL))
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a prediction");
    p->series_count = S;
    p->covariates = run->ck->covariates;
    p->likelihood = run->ck->likelihood;
    snprintf(p->id_name, sizeof(p->id_name), "%s",
             run->ck->config.id_col[0] != '\0' ? run->ck->config.id_col : "series");
    for (size_t s = 0; s < S; s++) {
        const struct tsrnn_forecast_source *from = &src->src[s];
        struct tsrnn_series view = *from->series;
        /* An extension past the series (covariates for the forecast) is not the series. */
        if (!src->scored[s])
            view.length = from->origin;
        TSRNN_TRY(api_series_copy(&p->series[s], &view));
        snprintf(p->ids[s], TSRNN_NAME_MAX, "%s", src->ids[s]);
        p->scalers[s] = *from->scaler;
        p->cov_scalers[s] = from->cov_scaler != NULL ? *from->cov_scaler : *from->scaler;
        p->sources[s] = (struct tsrnn_forecast_source){
            .series = &p->series[s],
            .scaler = &p->scalers[s],
            .origin = from->origin,
            .id = from->id != NULL ? p->ids[s] : NULL,
            .covariates = &p->covariates,
            .cov_scaler = &p->cov_scalers[s],
        };
    }
    return TSRNN_OK;
}

/* The list of forecasts in order, and a backtest's stamps of each. */
static enum tsrnn_status index_forecasts(struct tsrnn_prediction *p)
{
    size_t count = 0;
    for (size_t s = 0; s < p->series_count; s++)
        count += p->backtest ? p->bt[s].forecast_count : 1;
    p->forecast_series = calloc(count ? count : 1, sizeof(size_t));
    p->forecast_index = calloc(count ? count : 1, sizeof(size_t));
    p->times = calloc(count ? count : 1, sizeof(int64_t *));
    if (p->forecast_series == NULL || p->forecast_index == NULL || p->times == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecasts", count);
    p->count = count;
    size_t i = 0;
    for (size_t s = 0; s < p->series_count; s++) {
        size_t F = p->backtest ? p->bt[s].forecast_count : 1;
        for (size_t k = 0; k < F; k++, i++) {
            p->forecast_series[i] = s;
            p->forecast_index[i] = k;
            if (!p->backtest)
                continue;
            const struct tsrnn_backtest *bt = &p->bt[s];
            size_t H = bt->horizon, first = bt->first + k * bt->stride;
            if ((p->times[i] = malloc(H * sizeof(int64_t))) == NULL)
                return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecasts", count);
            memcpy(p->times[i], p->series[s].times + first, H * sizeof(int64_t));
        }
    }
    return TSRNN_OK;
}

static enum tsrnn_status predict(struct tsrnn_run *run, size_t n,
                                 const struct tsrnn_series_set *set, struct tsrnn_prediction **out)
{
    *out = NULL;
    TSRNN_TRY(need_model(run));
    if (n == 0 || n > 100000000)
        return tsrnn_error(TSRNN_ERR_USAGE, "n = %zu steps to forecast; accepted: 1 to 100000000",
                           n);
    const struct tsrnn_checkpoint *ck = run->ck;
    struct tsrnn_forecast_options opt;
    TSRNN_TRY(forecast_options(&opt, run, TSRNN_DARTS_PREDICT_DRAW + 2 * run->predict_calls, n));
    struct sources src = { 0 };
    struct tsrnn_prediction *p = NULL;
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_model model = { 0 };
    bool sampled = ck->likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    size_t batch = sampled && ck->config.batch_size > 1 ? (size_t)ck->config.batch_size : 1;
    enum tsrnn_status status = make_sources(&src, run, set, n);
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < src.count; i++) {
        status =
            tsrnn_forecast_error_series(tsrnn_forecast_check_range(&src.src[i], n), src.src[i].id);
        if (status != TSRNN_OK)
            goto out;
    }
    status = prediction_new(&p, &src, run, false);
    if (status != TSRNN_OK)
        goto out;
    status = make_model(&model, &compute, ck, batch);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_forecast_predict(p->f, &model, src.src, src.count,
                                    (size_t)ck->input_chunk_length, n, NULL, &opt);
    if (status != TSRNN_OK) { /* nothing to finish: tsrnn_forecast_predict() cleaned up */
        memset(p->f, 0, p->series_count * sizeof(*p->f));
        goto out;
    }
    for (size_t s = 0; s < src.count; s++) {
        struct tsrnn_forecast *f = &p->f[s];
        const struct tsrnn_series *copy = &p->series[s];
        /* Actual values: the copy's (the source may be the run's or an extension). */
        f->actual_count = copy->length > f->origin ? copy->length - f->origin : 0;
        f->actual_count = f->actual_count < f->length ? f->actual_count : f->length;
        f->actual = copy->values + f->origin * copy->component_count;
        if (f->actual_count == 0) {
            f->mape = f->mae = f->rmse = NAN;
            f->has_quantile_scores = false;
        }
    }
    status = index_forecasts(p);
    if (status != TSRNN_OK)
        goto out;
    p->options = opt;
    run->predict_calls++;
    *out = p;
    p = NULL;
out:
    tsrnn_model_finish(&model);
    tsrnn_compute_destroy(compute);
    sources_finish(&src);
    tsrnn_prediction_destroy(p);
    return status;
}

enum tsrnn_status tsrnn_run_predict(struct tsrnn_run *run, size_t n,
                                    const struct tsrnn_series_set *series,
                                    struct tsrnn_prediction **prediction)
{
    tsrnn_error_clear();
    return api_result(run->message, predict(run, n, series, prediction));
}

static enum tsrnn_status backtest(struct tsrnn_run *run, const struct tsrnn_series_set *set,
                                  const char *start, size_t horizon, size_t stride,
                                  bool last_points_only, struct tsrnn_prediction **out)
{
    *out = NULL;
    TSRNN_TRY(need_model(run));
    if (horizon == 0 || stride == 0 || horizon > 100000000 || stride > 100000000)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "horizon %zu, stride %zu: accepted: integers from 1 to 100000000",
                           horizon, stride);
    const struct tsrnn_checkpoint *ck = run->ck;
    size_t icl = (size_t)ck->input_chunk_length;
    struct tsrnn_forecast_options opt;
    /* historical_forecasts() right after fit() draws 4 (its predict_from_dataset()). */
    TSRNN_TRY(forecast_options(&opt, run, TSRNN_DARTS_PREDICT_DRAW - 1, horizon));
    struct sources src = { 0 };
    size_t *firsts = NULL;
    struct tsrnn_prediction *p = NULL;
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_model model = { 0 };
    enum tsrnn_status status = make_sources(&src, run, set, 0);
    if (status != TSRNN_OK)
        goto out;
    if ((firsts = calloc(src.count ? src.count : 1, sizeof(size_t))) == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t batch_size = ck->config.batch_size > 0 ? (size_t)ck->config.batch_size : 1, batch;
    status = tsrnn_backtest_plan(firsts, &batch, src.src, src.count, start,
                                 set != NULL ? "the end of the series (no start)"
                                             : "the validation part's start (no start)",
                                 "", icl, horizon, stride, batch_size);
    if (status != TSRNN_OK)
        goto out;
    status = prediction_new(&p, &src, run, true);
    if (status != TSRNN_OK)
        goto out;
    if (ck->likelihood.kind != TSRNN_LIKELIHOOD_NONE) /* as Darts tiles its sampled paths */
        batch = batch_size;
    status = make_model(&model, &compute, ck, batch);
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < src.count; i++) {
        status = tsrnn_forecast_error_series(
            tsrnn_backtest_run_sampled(&p->bt[i], &model, &p->sources[i], firsts[i], icl, horizon,
                                       stride, last_points_only, &opt),
            p->sources[i].id);
        if (status != TSRNN_OK)
            goto out;
    }
    status = index_forecasts(p);
    if (status != TSRNN_OK)
        goto out;
    p->options = opt;
    *out = p;
    p = NULL;
out:
    tsrnn_model_finish(&model);
    tsrnn_compute_destroy(compute);
    free(firsts);
    sources_finish(&src);
    tsrnn_prediction_destroy(p);
    return status;
}

enum tsrnn_status tsrnn_run_backtest(struct tsrnn_run *run, const struct tsrnn_series_set *series,
                                     const char *start, size_t horizon, size_t stride,
                                     bool last_points_only, struct tsrnn_prediction **prediction)
{
    tsrnn_error_clear();
    return api_result(run->message,
                      backtest(run, series, start, horizon, stride, last_points_only, prediction));
}

void tsrnn_run_set_predict_seed(struct tsrnn_run *run, int64_t random_state)
{
    run->predict_seed = random_state >= 0 && random_state <= UINT32_MAX ? random_state : -1;
}

/* --- what a prediction holds ------------------------------------------------------------ */

const char *tsrnn_prediction_error(const struct tsrnn_prediction *p)
{
    return p != NULL ? p->message : "no prediction (NULL)";
}

size_t tsrnn_prediction_count(const struct tsrnn_prediction *p)
{
    return p->count;
}

size_t tsrnn_prediction_series_count(const struct tsrnn_prediction *p)
{
    return p->series_count;
}

size_t tsrnn_prediction_component_count(const struct tsrnn_prediction *p)
{
    return p->series_count > 0 ? p->series[0].component_count : 0;
}

size_t tsrnn_prediction_sample_count(const struct tsrnn_prediction *p)
{
    if (p->series_count == 0 || p->backtest)
        return 1;
    return p->f[0].sample_count > 0 ? p->f[0].sample_count : 1;
}

size_t tsrnn_prediction_series_index(const struct tsrnn_prediction *p, size_t i)
{
    return i < p->count ? p->forecast_series[i] : 0;
}

const char *tsrnn_prediction_series_id(const struct tsrnn_prediction *p, size_t s)
{
    return s < p->series_count ? p->ids[s] : "";
}

size_t tsrnn_prediction_length(const struct tsrnn_prediction *p, size_t i)
{
    if (i >= p->count)
        return 0;
    size_t s = p->forecast_series[i];
    return p->backtest ? p->bt[s].horizon : p->f[s].length;
}

const int64_t *tsrnn_prediction_times(const struct tsrnn_prediction *p, size_t i)
{
    if (i >= p->count)
        return NULL;
    return p->backtest ? p->times[i] : p->f[p->forecast_series[i]].times;
}

const float *tsrnn_prediction_values(const struct tsrnn_prediction *p, size_t i)
{
    if (i >= p->count)
        return NULL;
    size_t s = p->forecast_series[i];
    if (!p->backtest)
        return p->f[s].values;
    const struct tsrnn_backtest *bt = &p->bt[s];
    return bt->values + p->forecast_index[i] * bt->horizon * bt->component_count;
}

const float *tsrnn_prediction_samples(const struct tsrnn_prediction *p, size_t i)
{
    if (i >= p->count || p->backtest)
        return NULL;
    const struct tsrnn_forecast *f = &p->f[p->forecast_series[i]];
    return f->sample_count > 1 ? f->samples : NULL;
}

static bool put_scores(const struct tsrnn_forecast_scores *sc, bool have, double *mape, double *mae,
                       double *rmse)
{
    if (mape != NULL)
        *mape = have ? sc->mape : NAN;
    if (mae != NULL)
        *mae = have ? sc->mae : NAN;
    if (rmse != NULL)
        *rmse = have ? sc->rmse : NAN;
    return have;
}

bool tsrnn_prediction_scores(const struct tsrnn_prediction *p, size_t i, double *mape, double *mae,
                             double *rmse)
{
    struct tsrnn_forecast_scores none = { NAN, NAN, NAN };
    if (i >= p->count)
        return put_scores(&none, false, mape, mae, rmse);
    size_t s = p->forecast_series[i];
    if (p->backtest)
        return put_scores(&p->bt[s].scores[p->forecast_index[i]], true, mape, mae, rmse);
    const struct tsrnn_forecast *f = &p->f[s];
    struct tsrnn_forecast_scores sc = { f->mape, f->mae, f->rmse };
    return put_scores(&sc, f->actual_count > 0, mape, mae, rmse);
}

bool tsrnn_prediction_backtest_scores(const struct tsrnn_prediction *p, size_t s, double *mape,
                                      double *mae, double *rmse)
{
    struct tsrnn_forecast_scores none = { NAN, NAN, NAN };
    if (!p->backtest || s >= p->series_count)
        return put_scores(&none, false, mape, mae, rmse);
    return put_scores(&p->bt[s].overall, true, mape, mae, rmse);
}

/* The backtest parts of the files of several series. */
static struct tsrnn_backtest_part *backtest_parts(const struct tsrnn_prediction *p)
{
    struct tsrnn_backtest_part *parts = calloc(p->series_count, sizeof(*parts));
    for (size_t s = 0; parts != NULL && s < p->series_count; s++)
        parts[s] = (struct tsrnn_backtest_part){ &p->bt[s], &p->series[s], p->sources[s].id };
    if (parts == NULL)
        tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    return parts;
}

static enum tsrnn_status write_csv(struct tsrnn_prediction *p, const char *path)
{
    if (p->backtest) {
        if (path == NULL)
            return tsrnn_error(TSRNN_ERR_USAGE, "a backtest's CSV file needs a path");
        struct tsrnn_backtest_part *parts = backtest_parts(p);
        if (parts == NULL)
            return TSRNN_ERR_NOMEM;
        enum tsrnn_status status =
            tsrnn_backtest_save_csv(parts, p->series_count, p->id_name, path);
        free(parts);
        return status;
    }
    struct tsrnn_atomic_file af;
    FILE *out = stdout;
    if (path != NULL) {
        TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
        out = af.file;
    }
    enum tsrnn_status status = tsrnn_forecast_write_set(
        p->f, p->sources, p->series_count, p->id_name, &p->likelihood, &p->options, out);
    if (path == NULL)
        return fflush(stdout) == 0 || status != TSRNN_OK
                   ? status
                   : tsrnn_error(TSRNN_ERR_IO, "cannot write to standard output");
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

enum tsrnn_status tsrnn_prediction_write_csv(struct tsrnn_prediction *p, const char *path)
{
    tsrnn_error_clear();
    return api_result(p->message, write_csv(p, path));
}

static enum tsrnn_status write_scores_csv(const struct tsrnn_prediction *p, const char *path)
{
    if (!p->backtest || path == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "a backtest's scores go to a file: a backtest and a "
                                            "path are needed");
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_forecast_scores *each = calloc(p->series_count, sizeof(*each)), mean;
    struct tsrnn_backtest_part *parts = backtest_parts(p);
    if (each == NULL || parts == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t s = 0; s < p->series_count; s++)
        each[s] = p->bt[s].overall;
    tsrnn_forecast_scores_mean(&mean, each, p->series_count);
    status = tsrnn_backtest_save_errors(parts, p->series_count, p->id_name,
                                        p->series_count > 1 ? &mean : NULL, path);
out:
    free(each);
    free(parts);
    return status;
}

enum tsrnn_status tsrnn_prediction_write_scores_csv(struct tsrnn_prediction *p, const char *path)
{
    tsrnn_error_clear();
    return api_result(p->message, write_scores_csv(p, path));
}

static enum tsrnn_status plot(struct tsrnn_prediction *p, size_t s, const char *title, int width,
                              int height, const char *path)
{
    char why[1024];
    if (s >= p->series_count || path == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "series %zu of %zu, path %s: nothing to draw", s,
                           p->series_count, path ? path : "(NULL)");
    if (width < TSRNN_PLOT_WIDTH_MIN || height < TSRNN_PLOT_HEIGHT_MIN ||
        width > TSRNN_PLOT_SIZE_MAX || height > TSRNN_PLOT_SIZE_MAX)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a picture of %dx%d pixels: accepted: from %dx%d to %dx%d", width,
                           height, TSRNN_PLOT_WIDTH_MIN, TSRNN_PLOT_HEIGHT_MIN, TSRNN_PLOT_SIZE_MAX,
                           TSRNN_PLOT_SIZE_MAX);
    if (!tsrnn_plot_usable(why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: the picture cannot be drawn here: %s", path, why);
    title = title != NULL ? title : "";
    if (p->backtest)
        return tsrnn_backtest_plot(&p->bt[s], &p->series[s], title, width, height, path);
    if (p->f[s].param_count > 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: a forecast of the likelihood's parameters has no picture", path);
    return tsrnn_forecast_plot(&p->f[s], &p->series[s], title, width, height, path);
}

enum tsrnn_status tsrnn_prediction_plot(struct tsrnn_prediction *p, size_t s, const char *title,
                                        int width, int height, const char *path)
{
    tsrnn_error_clear();
    return api_result(p->message, plot(p, s, title, width, height, path));
}
