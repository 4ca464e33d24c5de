/* The dataset of a run: load, split, scale, window (include/tsrnn/data.h).
 *
 * Split rules (Darts): `split_after` keeps the given stamp in the training part (inclusive);
 * a stamp between two points keeps every point up to it. `val_fraction` sends the last
 * floor(L * val_fraction) points to validation. Each part builds its windows from its own
 * points only, so each needs at least training_length + 1 of them.
 */
#include "tsrnn/data.h"
#include "tsrnn/encoders.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static enum tsrnn_status split_point(const struct tsrnn_series *s, const struct tsrnn_config *cfg,
                                     size_t *train_length)
{
    const char *origin = tsrnn_config_origin(cfg, "data", "split_after");
    int64_t point;

    if (s->time_unit == TSRNN_TIME_INDEX) {
        if (!tsrnn_parse_int64(cfg->split_after, &point))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [data] split_after = '%s': not an integer; the series has an "
                               "integer index, so accepted: an index of the series",
                               origin, cfg->split_after);
    } else {
        enum tsrnn_time_unit unit;
        if (!tsrnn_time_parse(cfg->split_after, &point, &unit))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [data] split_after = '%s': not a time stamp; accepted: YYYY, "
                               "YYYY-MM, YYYY-MM-DD, YYYYMMDD, YYYY-MM-DD HH:MM[:SS]",
                               origin, cfg->split_after);
    }
    size_t n = 0;
    while (n < s->length && s->times[n] <= point)
        n++;
    if (n == 0 || n == s->length) {
        char first[64], last[64];
        tsrnn_time_format(s->times[0], s->time_unit, first, sizeof(first));
        tsrnn_time_format(s->times[s->length - 1], s->time_unit, last, sizeof(last));
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [data] split_after = '%s' leaves %s; accepted: a point from %s "
                           "up to, not including, %s",
                           origin, cfg->split_after,
                           n == 0 ? "no training points" : "no validation points", first, last);
    }
    *train_length = n;
    return TSRNN_OK;
}

static enum tsrnn_status check_part(const struct tsrnn_config *cfg, const char *part, size_t points,
                                    const char *path)
{
    size_t need = (size_t)cfg->training_length + 1;
    if (points >= need)
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s: the %s has %zu points, but training_length = %d (%s) needs at least "
                       "%zu to make one window; use a longer series or a smaller training_length",
                       path, part, points, cfg->training_length,
                       tsrnn_config_origin(cfg, "model", "training_length"), need);
}

void tsrnn_series_options_from_config(struct tsrnn_series_options *o,
                                      const struct tsrnn_config *cfg)
{
    memset(o, 0, sizeof(*o));
    if (cfg->freq[0] != '\0' && !tsrnn_freq_parse(&o->freq, cfg->freq))
        o->freq.kind = TSRNN_FREQ_NONE; /* cannot happen: the parser checked it */
    o->freq_text = cfg->freq;
    o->freq_origin = tsrnn_config_origin(cfg, "data", "freq");
    o->fill_missing_dates = cfg->fill_missing_dates;
    o->fill_dates_origin = tsrnn_config_origin(cfg, "data", "fill_missing_dates");
    o->fill_missing_values = cfg->fill_missing_values;
}

/* One series of the run from the CSV file `path`: read, split, scaled and windowed. */
static enum tsrnn_status build_series(struct tsrnn_dataset_series *ds,
                                      const struct tsrnn_config *cfg, const char *path,
                                      const struct tsrnn_covariates *cov)
{
    struct tsrnn_series *s = &ds->series;
    struct tsrnn_series_options options;
    tsrnn_series_options_from_config(&options, cfg);
    /* Darts: from_csv(..., fill_missing_dates, freq), MissingValuesFiller(), then the split
     * and a Scaler fitted on the filled training part. */
    if (cov->column_count > 0)
        TSRNN_TRY(tsrnn_series_load_csv_covariates(
            s, path, cfg->time_col, (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
            cfg->value_col_count, (const char(*)[TSRNN_NAME_MAX])cov->column_names,
            cov->column_count, &options));
    else
        TSRNN_TRY(tsrnn_series_load_csv(s, path, cfg->time_col, cfg->value_cols,
                                        cfg->value_col_count, &options));
    TSRNN_TRY(check_part(cfg, "series", s->length, path));

    ds->train_length = s->length;
    if (cfg->split_after[0] != '\0') {
        TSRNN_TRY(split_point(s, cfg, &ds->train_length));
    } else if (cfg->val_fraction > 0) {
        size_t val = (size_t)((double)s->length * cfg->val_fraction);
        if (val == 0)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [data] val_fraction = %g of %zu points leaves no validation "
                               "point; accepted: at least 1/%zu",
                               tsrnn_config_origin(cfg, "data", "val_fraction"), cfg->val_fraction,
                               s->length, s->length);
        ds->train_length = s->length - val;
    }
    ds->val_length = s->length - ds->train_length;
    TSRNN_TRY(check_part(cfg, "training part", ds->train_length, path));
    if (ds->val_length > 0)
        TSRNN_TRY(check_part(cfg, "validation part", ds->val_length, path));

    size_t C = s->component_count;
    ds->scaled = malloc(s->length * C * sizeof(float));
    if (ds->scaled == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu points", s->length);
    memcpy(ds->scaled, s->values, s->length * C * sizeof(float));
    if (cfg->scaler == TSRNN_SCALER_MINMAX)
        tsrnn_scaler_fit(&ds->scaler, s->values, ds->train_length, C);
    else
        tsrnn_scaler_identity(&ds->scaler, s->values, ds->train_length, C);
    /* Values near float32's limits (+-3.4e38) are finite, but their range is not: the scaler
     * would make them 0 and every forecast infinite. */
    for (size_t c = 0; c < C; c++) {
        const struct tsrnn_scaler *sc = &ds->scaler;
        if (!isfinite(sc->data_max[c] - sc->data_min[c]) || !(sc->scale[c] >= FLT_MIN) ||
            !isfinite(1.0f / sc->scale[c]))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: column '%s' spans %g .. %g in the training part, a range "
                               "float32 cannot hold; accepted: values whose range is below "
                               "3.4e38 (rescale the column)",
                               path, s->component_names[c], (double)sc->data_min[c],
                               (double)sc->data_max[c]);
    }
    tsrnn_scaler_transform(&ds->scaler, ds->scaled, s->length);

    size_t T = (size_t)cfg->training_length;
    tsrnn_windows_init(&ds->train, ds->scaled, ds->train_length, C, T);
    tsrnn_windows_init(&ds->val, ds->scaled + ds->train_length * C, ds->val_length, C, T);
    return TSRNN_OK;
}

/* Darts' add_encoders at fit(): each series' training and validation parts encoded apart
 * (fit() encodes series and val_series), the transformer fitted once on the training parts'
 * encodings of all series, then applied to every part. The data file's covariate columns
 * come first (Darts stacks the encodings after the user's covariates). */
static enum tsrnn_status build_covariates(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    struct tsrnn_covariates *cov = ds->covariates;
    size_t K = cov->count, train_points = 0;
    if (K == 0)
        return TSRNN_OK;
    /* Encoded unscaled first: the transformer is fitted on these. */
    cov->scaler.component_count = K;
    for (size_t k = 0; k < K; k++)
        cov->scaler.scale[k] = 1.0f;
    for (size_t i = 0; i < ds->series_count; i++) {
        struct tsrnn_dataset_series *item = &ds->items[i];
        size_t L = item->series.length;
        item->covariates = malloc(L * K * sizeof(float));
        if (item->covariates == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu x %zu covariates", L, K);
        TSRNN_TRY(tsrnn_covariates_compute(item->covariates, cov, &item->series, 0,
                                           item->train_length, item->train_length - 1));
        if (item->val_length > 0)
            TSRNN_TRY(tsrnn_covariates_compute(item->covariates + item->train_length * K, cov,
                                               &item->series, item->train_length, item->val_length,
                                               L - 1));
        train_points += item->train_length;
    }
    if (cfg->cov_scaler == TSRNN_SCALER_MINMAX) {
        float *rows = malloc(train_points * K * sizeof(float)); /* (sum of training parts, K) */
        if (rows == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu covariate rows",
                               train_points);
        for (size_t i = 0, at = 0; i < ds->series_count; i++) {
            size_t n = ds->items[i].train_length * K;
            memcpy(rows + at, ds->items[i].covariates, n * sizeof(float));
            at += n;
        }
        tsrnn_scaler_fit(&cov->scaler, rows, train_points, K);
        free(rows);
        tsrnn_encoders_keep_unscaled(&cov->scaler, cov->encoders, cov->encoder_count,
                                     cov->column_count);
        for (size_t i = 0; i < ds->series_count; i++)
            tsrnn_scaler_transform(&cov->scaler, ds->items[i].covariates,
                                   ds->items[i].series.length);
    } else {
        tsrnn_scaler_identity(&cov->scaler, ds->items[0].covariates, ds->items[0].train_length, K);
    }
    for (size_t i = 0; i < ds->series_count; i++) {
        struct tsrnn_dataset_series *item = &ds->items[i];
        tsrnn_windows_set_covariates(&item->train, item->covariates, K);
        tsrnn_windows_set_covariates(&item->val, item->covariates + item->train_length * K, K);
    }
    return TSRNN_OK;
}

/* The list of the run's series and the samples over it (Darts' training and validation
 * datasets over a list). */
static enum tsrnn_status build(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    size_t S = 1;
    ds->items = calloc(S, sizeof(*ds->items));
    ds->train_parts = calloc(S, sizeof(*ds->train_parts));
    ds->val_parts = calloc(S, sizeof(*ds->val_parts));
    if (ds->items == NULL || ds->train_parts == NULL || ds->val_parts == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", S);
    ds->series_count = S;
    /* What [covariates] asks for first: its columns are read with each series. */
    struct tsrnn_covariates *cov = calloc(1, sizeof(*cov));
    if (cov == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the covariates");
    ds->covariates = cov;
    TSRNN_TRY(tsrnn_encoders_from_config(cov->encoders, &cov->encoder_count, &cov->count, cfg));
    TSRNN_TRY(tsrnn_covariate_columns_from_config(cov, cfg));
    TSRNN_TRY(build_series(&ds->items[0], cfg, tsrnn_display_path(cfg->data_path), cov));
    ds->component_count = ds->items[0].series.component_count;
    ds->training_length = (size_t)cfg->training_length;
    TSRNN_TRY(build_covariates(ds, cfg));
    for (size_t i = 0; i < S; i++) {
        ds->train_parts[i] = ds->items[i].train;
        ds->val_parts[i] = ds->items[i].val;
    }
    TSRNN_TRY(tsrnn_window_list_init(&ds->train, ds->train_parts, S, 0));
    /* Every series has a validation part, or none has (the split applies to each). */
    if (ds->items[0].val_length > 0)
        return tsrnn_window_list_init(&ds->val, ds->val_parts, S, 0);
    ds->val = (struct tsrnn_window_list){ .series = ds->val_parts, .series_count = S };
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_dataset_load(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    memset(ds, 0, sizeof(*ds));
    enum tsrnn_status status = build(ds, cfg);
    if (status != TSRNN_OK)
        tsrnn_dataset_finish(ds);
    return status;
}

void tsrnn_dataset_finish(struct tsrnn_dataset *ds)
{
    if (ds == NULL)
        return;
    for (size_t i = 0; ds->items != NULL && i < ds->series_count; i++) {
        tsrnn_series_finish(&ds->items[i].series);
        free(ds->items[i].scaled);
        free(ds->items[i].covariates);
    }
    free(ds->covariates);
    free(ds->items);
    free(ds->train_parts);
    free(ds->val_parts);
    memset(ds, 0, sizeof(*ds));
}
