/* Forecasts of a model with a likelihood (include/tsrnn/forecast.h, tsrnn_forecast_predict):
 * every source's sample paths drawn in one Darts predict() call, inverse-scaled, their
 * median, quantiles and band, the scores, and the files. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tsrnn/config.h"
#include "tsrnn/forecast.h"

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* f's median (values), quantiles and band from its samples (S > 1), as TimeSeries.quantile()
 * computes them (float32), and the scores against its actual values. `sorted` holds S
 * floats. */
static void summarize(struct tsrnn_forecast *f, const struct tsrnn_forecast_options *opt,
                      float *sorted)
{
    size_t S = f->sample_count, n = f->length, C = f->component_count, Q = f->quantile_count;
    for (size_t t = 0; t < n; t++)
        for (size_t c = 0; c < C; c++) {
            for (size_t s = 0; s < S; s++)
                sorted[s] = f->samples[(s * n + t) * C + c];
            qsort(sorted, S, sizeof(float), compare_floats);
            size_t at = t * C + c;
            f->values[at] = tsrnn_quantile_of_sorted(sorted, S, 0.5f);
            for (size_t q = 0; q < Q; q++)
                f->quantile_values[at * Q + q] =
                    tsrnn_quantile_of_sorted(sorted, S, (float)opt->quantiles[q]);
            f->band_low[at] = tsrnn_quantile_of_sorted(sorted, S, (float)opt->low_quantile);
            f->band_high[at] = tsrnn_quantile_of_sorted(sorted, S, (float)opt->high_quantile);
        }
    f->has_quantile_scores = f->actual_count > 0;
    if (f->has_quantile_scores)
        tsrnn_quantile_scores_compute(&f->quantile_scores, f->actual, f->samples, S, n,
                                      f->actual_count, C, opt->quantiles, opt->quantile_count,
                                      opt->low_quantile, opt->high_quantile, sorted);
}

/* Forecast i of the call: its n_i steps of the samples (S, n, C) drawn for n steps, scaled. */
static enum tsrnn_status take(struct tsrnn_forecast *f, const struct tsrnn_forecast_source *src,
                              const float *drawn, size_t S, size_t n, size_t length,
                              const struct tsrnn_forecast_options *opt, float *sorted)
{
    const struct tsrnn_series *series = src->series;
    size_t C = series->component_count, Q = opt->quantile_count;
    memset(f, 0, sizeof(*f));
    f->length = length;
    f->component_count = C;
    f->origin = src->origin;
    f->sample_count = S;
    f->quantile_count = S > 1 ? Q : 0;
    f->times = malloc((length ? length : 1) * sizeof(int64_t));
    f->values = malloc((length ? length : 1) * C * sizeof(float));
    if (S > 1) {
        f->samples = malloc(S * length * C * sizeof(float));
        f->quantile_values = malloc((length ? length : 1) * C * (Q ? Q : 1) * sizeof(float));
        f->band_low = malloc((length ? length : 1) * C * sizeof(float));
        f->band_high = malloc((length ? length : 1) * C * sizeof(float));
    }
    enum tsrnn_status status = TSRNN_OK;
    if (f->times == NULL || f->values == NULL ||
        (S > 1 && (f->samples == NULL || f->quantile_values == NULL || f->band_low == NULL ||
                   f->band_high == NULL))) {
        status =
            tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu paths of %zu steps", S, length);
        goto out;
    }
    float *paths = S > 1 ? f->samples : f->values;
    for (size_t s = 0; s < S; s++) {
        memcpy(paths + s * length * C, drawn + s * n * C, length * C * sizeof(float));
        tsrnn_scaler_inverse(src->scaler, paths + s * length * C, length);
    }
    status = tsrnn_forecast_stamps(f->times, series, src->origin, length);
    if (status != TSRNN_OK)
        goto out;
    f->actual = series->values + src->origin * C;
    f->actual_count = series->length - src->origin < length ? series->length - src->origin : length;
    if (S > 1)
        summarize(f, opt, sorted);
    struct tsrnn_forecast_scores scores;
    tsrnn_forecast_score_points(f->actual, C, f->values, C, f->actual_count, C, &scores,
                                &f->zero_actual_count);
    f->mape = scores.mape;
    f->mae = scores.mae;
    f->rmse = scores.rmse;
out:
    if (status != TSRNN_OK)
        tsrnn_forecast_finish(f);
    return status;
}

/* The likelihood's parameters of the first step of each source, (1, C*P) as they are. */
static enum tsrnn_status take_params(struct tsrnn_forecast *f,
                                     const struct tsrnn_forecast_source *src, const float *params,
                                     size_t P)
{
    size_t C = src->series->component_count;
    memset(f, 0, sizeof(*f));
    f->length = 1;
    f->component_count = C;
    f->origin = src->origin;
    f->sample_count = 1;
    f->param_count = P;
    f->times = malloc(sizeof(int64_t));
    f->values = malloc(C * P * sizeof(float));
    enum tsrnn_status status = TSRNN_OK;
    if (f->times == NULL || f->values == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a forecast's parameters");
        goto out;
    }
    memcpy(f->values, params, C * P * sizeof(float));
    f->mape = f->mae = f->rmse = NAN;
    status = tsrnn_forecast_stamps(f->times, src->series, src->origin, 1);
out:
    if (status != TSRNN_OK)
        tsrnn_forecast_finish(f);
    return status;
}

enum tsrnn_status tsrnn_forecast_predict(struct tsrnn_forecast *f, struct tsrnn_model *model,
                                         const struct tsrnn_forecast_source *sources, size_t count,
                                         size_t input_chunk_length, size_t n, const size_t *lengths,
                                         const struct tsrnn_forecast_options *opt)
{
    size_t icl = input_chunk_length, R = count;
    if (model->likelihood.kind == TSRNN_LIKELIHOOD_NONE || opt == NULL) {
        for (size_t i = 0; i < R; i++) {
            enum tsrnn_status status =
                model->likelihood.kind != TSRNN_LIKELIHOOD_NONE
                    ? tsrnn_error(TSRNN_ERR_USAGE, "a model with a likelihood forecasts "
                                                   "with sampling options")
                    : tsrnn_forecast_run(&f[i], model, &sources[i], icl, lengths ? lengths[i] : n);
            if (status != TSRNN_OK) {
                const char *id = sources[i].id; /* before i counts down past 0 */
                while (i-- > 0)
                    tsrnn_forecast_finish(&f[i]);
                return tsrnn_forecast_error_series(status, id);
            }
        }
        return TSRNN_OK;
    }
    size_t C = model->dims.output_count, K = model->dims.input_count - C;
    size_t S = opt->sampling.num_samples, P = tsrnn_likelihood_param_count(&model->likelihood);
    bool params = opt->sampling.likelihood_parameters;
    for (size_t i = 0; i < R; i++) {
        const struct tsrnn_forecast_source *src = &sources[i];
        if (src->origin < icl || src->origin > src->series->length)
            return tsrnn_forecast_error_series(
                tsrnn_error(TSRNN_ERR_USAGE,
                            "the forecast needs the last input_chunk_length = %zu points before "
                            "it; the series has %zu",
                            icl,
                            src->origin < src->series->length ? src->origin : src->series->length),
                src->id);
        if (src->series->component_count != C || tsrnn_forecast_covariate_count(src) != K)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "series %zu has %zu components and %zu covariates; the model "
                               "takes %zu and %zu",
                               i, src->series->component_count, tsrnn_forecast_covariate_count(src),
                               C, K);
        if (lengths != NULL && lengths[i] > n)
            return tsrnn_error(TSRNN_ERR_USAGE, "forecast %zu of %zu steps in a call of %zu", i,
                               lengths[i], n);
    }
    size_t I = C + K, drawn_count = params ? R * C * P : R * S * n * C;
    float *context = malloc(R * icl * I * sizeof(float));
    float *future = K > 0 && n > 1 ? malloc((n - 1) * R * K * sizeof(float)) : NULL;
    float *drawn = malloc(drawn_count * sizeof(float));
    float *sorted = malloc((S > 1 ? S : 1) * sizeof(float));
    enum tsrnn_status status = TSRNN_OK;
    size_t done = 0; /* f[0, done) are taken: released again on a failure */
    if (context == NULL || drawn == NULL || sorted == NULL || (K > 0 && n > 1 && future == NULL)) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecasts of %zu paths", R, S);
        goto out;
    }
    for (size_t i = 0; i < R; i++) {
        const struct tsrnn_forecast_source *src = &sources[i];
        float *cov = NULL; /* nothing to free after a failure */
        status = tsrnn_forecast_covariates(&cov, src, icl, n);
        if (status != TSRNN_OK) {
            status = tsrnn_forecast_error_series(status, src->id);
            goto out;
        }
        tsrnn_forecast_inputs(src, cov, src->origin - icl + 1, &src->origin, 1, icl, n,
                              context + i * icl * I, R, future != NULL ? future + i * K : NULL);
        free(cov);
    }
    status = tsrnn_sample_forecasts(model, drawn, context, future, R, icl, n, &opt->sampling);
    if (status != TSRNN_OK)
        goto out;
    for (; done < R; done++) {
        /* a failed take leaves its forecast empty */
        status = params ? take_params(&f[done], &sources[done], drawn + done * C * P, P)
                        : take(&f[done], &sources[done], drawn + done * S * n * C, S, n,
                               lengths ? lengths[done] : n, opt, sorted);
        if (status != TSRNN_OK)
            goto out;
    }
out:
    if (status != TSRNN_OK)
        while (done-- > 0)
            tsrnn_forecast_finish(&f[done]);
    free(context);
    free(future);
    free(drawn);
    free(sorted);
    return status;
}

void tsrnn_forecast_options_from_config(struct tsrnn_forecast_options *opt,
                                        const struct tsrnn_config *cfg, uint32_t seed,
                                        bool parameters)
{
    *opt = (struct tsrnn_forecast_options){
        .sampling = {
            .num_samples = (size_t)cfg->num_samples,
            .batch_size = (size_t)cfg->batch_size,
            .likelihood_parameters = parameters,
            .seed = seed,
        },
        .low_quantile = cfg->low_quantile,
        .high_quantile = cfg->high_quantile,
    };
    opt->quantile_count =
        tsrnn_config_forecast_quantiles(cfg, opt->quantiles, TSRNN_FORECAST_MAX_QUANTILES);
}

/* --- backtests ---------------------------------------------------------------------------- */

void tsrnn_backtest_quantile_mean(struct tsrnn_quantile_scores *mean,
                                  const struct tsrnn_backtest_part *parts, size_t count)
{
    *mean = parts[0].bt->quantile_overall;
    for (size_t k = 0; k < mean->quantile_count; k++) {
        double sum = 0.0;
        for (size_t i = 0; i < count; i++)
            sum += parts[i].bt->quantile_overall.mql[k];
        mean->mql[k] = sum / (double)count;
    }
    double mic = 0.0, miw = 0.0;
    for (size_t i = 0; i < count; i++) {
        mic += parts[i].bt->quantile_overall.mic;
        miw += parts[i].bt->quantile_overall.miw;
    }
    mean->mic = mic / (double)count;
    mean->miw = miw / (double)count;
}

/* np.nanmean of the forecasts' quantile scores: Darts' backtest() reduction. */
static void quantile_nanmean(struct tsrnn_quantile_scores *out,
                             const struct tsrnn_quantile_scores *each, size_t count)
{
    *out = each[0];
    double *fields[TSRNN_QUANTILE_METRICS_MAX + 2];
    size_t Q = out->quantile_count;
    for (size_t k = 0; k < Q; k++)
        fields[k] = &out->mql[k];
    fields[Q] = &out->mic;
    fields[Q + 1] = &out->miw;
    for (size_t k = 0; k < Q + 2; k++) {
        double sum = 0.0;
        size_t n = 0;
        for (size_t f = 0; f < count; f++) {
            double v = k < Q ? each[f].mql[k] : k == Q ? each[f].mic : each[f].miw;
            if (!isnan(v)) {
                sum += v;
                n++;
            }
        }
        *fields[k] = n > 0 ? sum / (double)n : NAN;
    }
}

enum tsrnn_status tsrnn_backtest_run_sampled(struct tsrnn_backtest *bt, struct tsrnn_model *model,
                                             const struct tsrnn_forecast_source *src, size_t first,
                                             size_t input_chunk_length, size_t horizon,
                                             size_t stride, bool last_points_only,
                                             const struct tsrnn_forecast_options *opt)
{
    if (model->likelihood.kind == TSRNN_LIKELIHOOD_NONE || opt == NULL)
        return tsrnn_backtest_run(bt, model, src, first, input_chunk_length, horizon, stride,
                                  last_points_only);
    const struct tsrnn_series *series = src->series;
    size_t L = series->length, C = series->component_count, H = horizon, icl = input_chunk_length;
    size_t K = tsrnn_forecast_covariate_count(src), I = C + K, S = opt->sampling.num_samples;
    memset(bt, 0, sizeof(*bt));
    if (H < 1 || stride < 1 || first < icl || first > L || L - first < H ||
        opt->sampling.likelihood_parameters)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a backtest of %zu-step forecasts with stride %zu cannot start at "
                           "point %zu of a %zu-point series (input_chunk_length %zu)%s",
                           H, stride, first, L, icl,
                           opt->sampling.likelihood_parameters
                               ? "; a backtest samples, it does not predict parameters"
                               : "");
    size_t F = (L - H - first) / stride + 1;
    *bt = (struct tsrnn_backtest){
        .forecast_count = F,
        .horizon = H,
        .stride = stride,
        .first = first,
        .component_count = C,
        .last_points_only = last_points_only,
        .sample_count = S,
    };
    bt->values = malloc(F * H * C * sizeof(float));
    bt->scores = malloc(F * sizeof(*bt->scores));
    size_t *origins = malloc(F * sizeof(size_t));
    float *context = malloc(F * icl * I * sizeof(float));
    float *future = K > 0 && H > 1 ? malloc((H - 1) * F * K * sizeof(float)) : NULL;
    float *paths = malloc(F * S * H * C * sizeof(float)); /* (F, S, H, C) */
    float *sorted = malloc(S * sizeof(float));
    float *gathered = malloc(S * (F > H ? F : H) * C * sizeof(float));
    float *actual = malloc((F > H ? F : H) * C * sizeof(float));
    if (S > 1)
        bt->quantile_scores = malloc(F * sizeof(*bt->quantile_scores));
    float *cov = NULL;
    enum tsrnn_status status = TSRNN_OK;
    if (bt->values == NULL || bt->scores == NULL || origins == NULL || context == NULL ||
        paths == NULL || sorted == NULL || gathered == NULL || actual == NULL ||
        (K > 0 && H > 1 && future == NULL) || (S > 1 && bt->quantile_scores == NULL)) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu forecasts of %zu paths", F, S);
        goto out;
    }
    /* Darts' historical_forecasts() encodes the whole series once (as tsrnn_backtest_run). */
    if (K > 0) {
        status = tsrnn_forecast_covariate_rows(&cov, src, 0, L, L - 1);
        if (status != TSRNN_OK)
            goto out;
    }
    for (size_t f = 0; f < F; f++)
        origins[f] = first + f * stride;
    tsrnn_forecast_inputs(src, cov, 0, origins, F, icl, H, context, F, future);
    status = tsrnn_sample_forecasts(model, paths, context, future, F, icl, H, &opt->sampling);
    if (status != TSRNN_OK)
        goto out;
    for (size_t f = 0; f < F; f++) {
        float *own = paths + f * S * H * C;
        tsrnn_scaler_inverse(src->scaler, own, S * H);
        for (size_t k = 0; k < H * C; k++) { /* the median: TimeSeries.quantile(0.5) */
            for (size_t s = 0; s < S; s++)
                sorted[s] = own[s * H * C + k];
            qsort(sorted, S, sizeof(float), compare_floats);
            bt->values[f * H * C + k] = tsrnn_quantile_of_sorted(sorted, S, 0.5f);
        }
    }
    tsrnn_backtest_score(bt, series);
    bt->has_quantile_scores = S > 1;
    for (size_t f = 0; bt->has_quantile_scores && f < F; f++) {
        /* forecast f's points, or with last_points_only its last one */
        size_t skip = last_points_only ? H - 1 : 0, n = H - skip;
        for (size_t s = 0; s < S; s++)
            memcpy(gathered + s * n * C, paths + ((f * S + s) * H + skip) * C,
                   n * C * sizeof(float));
        tsrnn_quantile_scores_compute(
            &bt->quantile_scores[f], series->values + (origins[f] + skip) * C, gathered, S, n, n, C,
            opt->quantiles, opt->quantile_count, opt->low_quantile, opt->high_quantile, sorted);
    }
    if (bt->has_quantile_scores && last_points_only) {
        /* the one series of last points */
        for (size_t f = 0; f < F; f++) {
            memcpy(actual + f * C, series->values + (origins[f] + H - 1) * C, C * sizeof(float));
            for (size_t s = 0; s < S; s++)
                memcpy(gathered + (s * F + f) * C, paths + ((f * S + s) * H + H - 1) * C,
                       C * sizeof(float));
        }
        tsrnn_quantile_scores_compute(&bt->quantile_overall, actual, gathered, S, F, F, C,
                                      opt->quantiles, opt->quantile_count, opt->low_quantile,
                                      opt->high_quantile, sorted);
    } else if (bt->has_quantile_scores) {
        quantile_nanmean(&bt->quantile_overall, bt->quantile_scores, F);
    }
out:
    free(origins);
    free(context);
    free(future);
    free(paths);
    free(sorted);
    free(gathered);
    free(actual);
    free(cov);
    if (status != TSRNN_OK)
        tsrnn_backtest_finish(bt);
    return status;
}

/* --- the files ---------------------------------------------------------------------------- */

/* The header: the id column (NULL: none), the time column, then `per` columns per component,
 * named <component><suffix(k)>. */
static void put_header(FILE *out, const struct tsrnn_series *series, const char *id_name,
                       size_t per, void (*suffix)(const void *arg, size_t k, char *to, size_t cap),
                       const void *arg)
{
    char name[TSRNN_NAME_MAX + 48], part[40];
    if (id_name != NULL) {
        tsrnn_forecast_put_field(out, id_name);
        fputc(',', out);
    }
    tsrnn_forecast_put_field(out, series->time_name[0] ? series->time_name : "time");
    for (size_t c = 0; c < series->component_count; c++)
        for (size_t k = 0; k < per; k++) {
            suffix(arg, k, part, sizeof(part));
            snprintf(name, sizeof(name), "%s%s", series->component_names[c], part);
            fputc(',', out);
            tsrnn_forecast_put_field(out, name);
        }
    fputc('\n', out);
}

static void no_suffix(const void *arg, size_t k, char *to, size_t cap)
{
    (void)arg;
    (void)k;
    snprintf(to, cap, "%s", "");
}

static void quantile_suffix(const void *arg, size_t k, char *to, size_t cap)
{
    const struct tsrnn_forecast_options *opt = arg;
    to[0] = '_';
    tsrnn_quantile_name(opt->quantiles[k], to + 1, cap - 1);
}

static void param_suffix(const void *arg, size_t k, char *to, size_t cap)
{
    to[0] = '_';
    tsrnn_likelihood_param_name(arg, k, to + 1, cap - 1);
}

static void sample_suffix(const void *arg, size_t k, char *to, size_t cap)
{
    (void)arg;
    snprintf(to, cap, "_s%zu", k);
}

static enum tsrnn_status flushed(FILE *out)
{
    if (fflush(out) != 0 || ferror(out))
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write the forecasts");
    return TSRNN_OK;
}

/* Writes `rows` rows of `per` values per component: value (i, c, k) at
 * values[(i * C + c) * per + k]. */
static void put_rows(FILE *out, const struct tsrnn_forecast *f,
                     const struct tsrnn_forecast_source *src, bool named, const float *values,
                     size_t rows, size_t per)
{
    size_t C = f->component_count;
    for (size_t i = 0; i < rows; i++) {
        if (named) {
            tsrnn_forecast_put_field(out, src->id != NULL ? src->id : "");
            fputc(',', out);
        }
        tsrnn_forecast_put_time(out, src->series, f->times[i]);
        for (size_t c = 0; c < C; c++)
            for (size_t k = 0; k < per; k++)
                fprintf(out, ",%.9g", (double)values[(i * C + c) * per + k]);
        fputc('\n', out);
    }
}

enum tsrnn_status tsrnn_forecast_write_set(const struct tsrnn_forecast *f,
                                           const struct tsrnn_forecast_source *sources,
                                           size_t count, const char *id_name,
                                           const struct tsrnn_likelihood *lik,
                                           const struct tsrnn_forecast_options *opt, FILE *out)
{
    bool named = count > 1 || sources[0].id != NULL;
    const char *id = named ? id_name : NULL;
    const struct tsrnn_forecast *first = &f[0];
    if (first->param_count > 0)
        put_header(out, sources[0].series, id, first->param_count, param_suffix, lik);
    else if (first->sample_count > 1)
        put_header(out, sources[0].series, id, first->quantile_count, quantile_suffix, opt);
    else
        put_header(out, sources[0].series, id, 1, no_suffix, NULL);
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_forecast *g = &f[i];
        if (g->param_count > 0)
            put_rows(out, g, &sources[i], named, g->values, g->length, g->param_count);
        else if (g->sample_count > 1)
            put_rows(out, g, &sources[i], named, g->quantile_values, g->length, g->quantile_count);
        else
            put_rows(out, g, &sources[i], named, g->values, g->length, 1);
    }
    return flushed(out);
}

enum tsrnn_status tsrnn_forecast_write_samples(const struct tsrnn_forecast *f,
                                               const struct tsrnn_forecast_source *sources,
                                               size_t count, const char *id_name, FILE *out)
{
    bool named = count > 1 || sources[0].id != NULL;
    size_t S = f[0].sample_count;
    put_header(out, sources[0].series, named ? id_name : NULL, S, sample_suffix, NULL);
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_forecast *g = &f[i];
        size_t n = g->length, C = g->component_count;
        for (size_t t = 0; t < n; t++) {
            if (named) {
                tsrnn_forecast_put_field(out, sources[i].id != NULL ? sources[i].id : "");
                fputc(',', out);
            }
            tsrnn_forecast_put_time(out, sources[i].series, g->times[t]);
            for (size_t c = 0; c < C; c++)
                for (size_t s = 0; s < S; s++)
                    fprintf(out, ",%.9g", (double)g->samples[(s * n + t) * C + c]);
            fputc('\n', out);
        }
    }
    return flushed(out);
}
