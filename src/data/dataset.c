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

/* Where a series' problems are: its file, or for one of a long-format file, the file and the
 * series' id. */
static void series_label(const struct tsrnn_dataset_series *ds, const struct tsrnn_config *cfg,
                         const char *path, char *out, size_t capacity)
{
    if (cfg->id_col[0] != '\0')
        snprintf(out, capacity, "%s, series '%s'", tsrnn_display_path(path), ds->id);
    else
        snprintf(out, capacity, "%s", tsrnn_display_path(path));
}

/* Splits one series read from `path` as [data] asks, fits its scaler on its training part and
 * makes its windows. With several series the split's messages name the series. */
static enum tsrnn_status prepare_series(struct tsrnn_dataset_series *ds,
                                        const struct tsrnn_config *cfg, const char *path,
                                        bool several)
{
    struct tsrnn_series *s = &ds->series;
    char label[PATH_MAX + TSRNN_NAME_MAX + 16];
    series_label(ds, cfg, path, label, sizeof(label));
    TSRNN_TRY(check_part(cfg, "series", s->length, label));

    ds->train_length = s->length;
    if (cfg->split_after[0] != '\0') {
        enum tsrnn_status status = split_point(s, cfg, &ds->train_length);
        if (status != TSRNN_OK && several)
            tsrnn_error_append(status,
                               " (in %s; a series whose validation part would be "
                               "empty cannot be validated: leave it out of [data] path)",
                               label);
        TSRNN_TRY(status);
    } else if (cfg->val_fraction > 0) {
        size_t val = (size_t)((double)s->length * cfg->val_fraction);
        if (val == 0)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [data] val_fraction = %g of %zu points leaves no validation "
                               "point%s%s; accepted: at least 1/%zu",
                               tsrnn_config_origin(cfg, "data", "val_fraction"), cfg->val_fraction,
                               s->length, several ? " in " : "", several ? label : "", s->length);
        ds->train_length = s->length - val;
    }
    ds->val_length = s->length - ds->train_length;
    TSRNN_TRY(check_part(cfg, "training part", ds->train_length, label));
    if (ds->val_length > 0)
        TSRNN_TRY(check_part(cfg, "validation part", ds->val_length, label));

    size_t C = s->component_count;
    ds->scaled = malloc(s->length * C * sizeof(float));
    if (ds->scaled == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu points", s->length);
    memcpy(ds->scaled, s->values, s->length * C * sizeof(float));
    TSRNN_TRY(tsrnn_scaler_fit_series(&ds->scaler, cfg->scaler, s, ds->train_length, label));
    tsrnn_scaler_transform(&ds->scaler, ds->scaled, s->length);

    size_t T = (size_t)cfg->training_length;
    tsrnn_windows_init(&ds->train, ds->scaled, ds->train_length, C, T);
    tsrnn_windows_init(&ds->val, ds->scaled + ds->train_length * C, ds->val_length, C, T);
    return TSRNN_OK;
}

/* The first Kc columns of `scaler` (K columns) fitted on the data file's covariate columns
 * of `item`'s training part alone (or its identity, recording their range). */
static void column_scaler(struct tsrnn_scaler *scaler, const struct tsrnn_dataset_series *item,
                          size_t K, size_t Kc, enum tsrnn_scaler_kind kind)
{
    struct tsrnn_scaler own; /* every column fitted apart: its first Kc are these */
    if (kind == TSRNN_SCALER_MINMAX)
        tsrnn_scaler_fit(&own, item->covariates, item->train_length, K);
    else
        tsrnn_scaler_identity(&own, item->covariates, item->train_length, K);
    for (size_t k = 0; k < Kc; k++) {
        scaler->data_min[k] = own.data_min[k];
        scaler->data_max[k] = own.data_max[k];
        scaler->scale[k] = own.scale[k];
        scaler->offset[k] = own.offset[k];
    }
}

/* add_encoders' transformer (tsrnn_dataset_build_covariates()), fitted once on the training encodings of
 * every series (train_points points in all), or with [covariates] columns on every point of
 * each series; cyclic's columns kept unscaled. */
static enum tsrnn_status fit_encoder_scaler(struct tsrnn_dataset *ds, size_t train_points)
{
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_covariates *cov = ds->covariates;
    size_t K = cov->count, Kc = cov->column_count;
    size_t fit_points = Kc > 0 ? 0 : train_points;
    for (size_t i = 0; i < ds->series_count && Kc > 0; i++)
        fit_points += ds->items[i].series.length;
    float *rows = malloc(fit_points * K * sizeof(float)); /* (fit_points, K) */
    if (rows == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu covariate rows", fit_points);
    for (size_t i = 0, at = 0; i < ds->series_count; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        size_t n = Kc > 0 ? item->series.length : item->train_length;
        if (Kc > 0) {
            status = tsrnn_covariates_compute(rows + at, cov, NULL, &item->series, item->id, 0, n,
                                              item->train_length - 1);
            if (status != TSRNN_OK)
                goto out;
        } else {
            memcpy(rows + at, item->covariates, n * K * sizeof(float));
        }
        at += n * K;
    }
    tsrnn_scaler_fit(&cov->scaler, rows, fit_points, K);
    tsrnn_encoders_keep_unscaled(&cov->scaler, cov->encoders, cov->encoder_count, Kc);
out:
    free(rows);
    return status;
}

/* Darts' add_encoders at fit(): each series' training and validation parts encoded apart
 * (fit() encodes series and val_series), the transformer fitted once on the training
 * encodings of all series, then applied to every part. What "the training encodings" span
 * is FutureCovariatesIndexGenerator.generate_train_idx()'s: the training part's index, but,
 * when the user passes future covariates, "simply the covariate time index": the whole
 * series here (its [covariates] columns have a row for each of its points), 'position'
 * still counted from the training part's end. The data file's covariate columns come first
 * (Darts stacks the encodings after the user's covariates); with the scaler on, each
 * series' are scaled by a scaler fitted on its own training part, as a Darts Scaler fitted
 * on the list of covariate series scales each. */
enum tsrnn_status tsrnn_dataset_build_covariates(struct tsrnn_dataset *ds,
                                                 enum tsrnn_scaler_kind cov_scaler)
{
    struct tsrnn_covariates *cov = ds->covariates;
    size_t K = cov->count, Kc = cov->column_count, train_points = 0;
    if (K == 0)
        return TSRNN_OK;
    /* Encoded unscaled first: the transformer is fitted on these. */
    for (size_t i = 0; i < ds->series_count; i++) {
        struct tsrnn_dataset_series *item = &ds->items[i];
        size_t L = item->series.length;
        item->covariates = malloc(L * K * sizeof(float));
        if (item->covariates == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu x %zu covariates", L, K);
        TSRNN_TRY(tsrnn_covariates_compute(item->covariates, cov, NULL, &item->series, item->id, 0,
                                           item->train_length, item->train_length - 1));
        if (item->val_length > 0)
            TSRNN_TRY(tsrnn_covariates_compute(item->covariates + item->train_length * K, cov, NULL,
                                               &item->series, item->id, item->train_length,
                                               item->val_length, L - 1));
        train_points += item->train_length;
    }
    if (cov_scaler == TSRNN_SCALER_MINMAX)
        TSRNN_TRY(fit_encoder_scaler(ds, train_points));
    else
        tsrnn_scaler_identity(&cov->scaler, ds->items[0].covariates, ds->items[0].train_length, K);
    for (size_t i = 0; i < ds->series_count; i++) {
        struct tsrnn_dataset_series *item = &ds->items[i];
        item->cov_scaler = cov->scaler;
        if (Kc > 0)
            column_scaler(&item->cov_scaler, item, K, Kc, cov_scaler);
        tsrnn_scaler_transform(&item->cov_scaler, item->covariates, item->series.length);
        tsrnn_windows_set_covariates(&item->train, item->covariates, K);
        tsrnn_windows_set_covariates(&item->val, item->covariates + item->train_length * K, K);
    }
    /* As tsrnn.scaler describes the first series, the shared scaler carries its columns. */
    cov->scaler = ds->items[0].cov_scaler;
    return TSRNN_OK;
}

static enum tsrnn_status alloc_items(struct tsrnn_dataset *ds, size_t S)
{
    ds->items = calloc(S, sizeof(*ds->items));
    ds->train_parts = calloc(S, sizeof(*ds->train_parts));
    ds->val_parts = calloc(S, sizeof(*ds->val_parts));
    if (ds->items == NULL || ds->train_parts == NULL || ds->val_parts == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", S);
    ds->series_count = S;
    return TSRNN_OK;
}

/* The series of a long-format file, one per id, in Darts' order. */
static enum tsrnn_status read_groups(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg,
                                     const char *path, const struct tsrnn_series_options *options)
{
    struct tsrnn_series *series;
    char(*ids)[TSRNN_NAME_MAX];
    size_t S;
    const struct tsrnn_covariates *cov = ds->covariates;
    if (cov->column_count > 0) /* each group's covariate columns beside its values */
        TSRNN_TRY(tsrnn_series_load_groups_covariates(
            &series, &ids, &S, tsrnn_display_path(path), cfg->id_col, cfg->time_col,
            (const char(*)[TSRNN_NAME_MAX])cfg->value_cols, cfg->value_col_count,
            (const char(*)[TSRNN_NAME_MAX])cov->column_names, cov->column_count, options));
    else
        TSRNN_TRY(tsrnn_series_load_groups(&series, &ids, &S, tsrnn_display_path(path), cfg->id_col,
                                           cfg->time_col, cfg->value_cols, cfg->value_col_count,
                                           options));
    enum tsrnn_status status = alloc_items(ds, S);
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < S; i++) {
        ds->items[i].series = series[i]; /* the dataset's now */
        series[i] = (struct tsrnn_series){ 0 };
        memcpy(ds->items[i].id, ids[i], sizeof(ids[i]));
    }
out:
    for (size_t i = 0; i < S; i++)
        tsrnn_series_finish(&series[i]);
    free(series);
    free(ids);
    return status;
}

/* One series per file, named by its file's stem; duplicate names are refused (they would be
 * one name for two series in every output). */
static enum tsrnn_status read_files(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg,
                                    const struct tsrnn_data_paths *paths,
                                    const struct tsrnn_series_options *options)
{
    TSRNN_TRY(alloc_items(ds, paths->count));
    for (size_t i = 0; i < paths->count; i++) {
        struct tsrnn_dataset_series *item = &ds->items[i];
        /* Darts: from_csv(..., fill_missing_dates, freq), MissingValuesFiller(), then the
         * split and a Scaler fitted on the filled training part. */
        const struct tsrnn_covariates *cov = ds->covariates;
        const char *path = tsrnn_display_path(paths->paths[i]);
        if (cov->column_count > 0) /* the file's covariate columns beside its values */
            TSRNN_TRY(tsrnn_series_load_csv_covariates(
                &item->series, path, cfg->time_col, (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                cfg->value_col_count, (const char(*)[TSRNN_NAME_MAX])cov->column_names,
                cov->column_count, options));
        else
            TSRNN_TRY(tsrnn_series_load_csv(&item->series, path, cfg->time_col, cfg->value_cols,
                                            cfg->value_col_count, options));
        if (paths->count == 1)
            break; /* one series: no name */
        tsrnn_data_path_stem(paths->paths[i], item->id, sizeof(item->id));
        if (!tsrnn_text_printable(item->id))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [data] path: %s: the file's name, series '%s', is not "
                               "printable UTF-8 text (a control character or a byte that is "
                               "not UTF-8); accepted: files with printable UTF-8 names",
                               tsrnn_config_origin(cfg, "data", "path"),
                               tsrnn_display_path(paths->paths[i]), item->id);
        for (size_t j = 0; j < i; j++)
            if (strcmp(ds->items[j].id, item->id) == 0)
                return tsrnn_error(TSRNN_ERR_USAGE,
                                   "%s: [data] path: %s and %s are both series '%s'; accepted: "
                                   "files whose names without extension differ",
                                   tsrnn_config_origin(cfg, "data", "path"),
                                   tsrnn_display_path(paths->paths[j]),
                                   tsrnn_display_path(paths->paths[i]), item->id);
    }
    return TSRNN_OK;
}

/* Darts trains one model on series of one width: every series has the first one's columns. */
static enum tsrnn_status check_components(const struct tsrnn_dataset *ds,
                                          const struct tsrnn_data_paths *paths)
{
    const struct tsrnn_series *first = &ds->items[0].series;
    for (size_t i = 1; i < ds->series_count; i++) {
        const struct tsrnn_series *s = &ds->items[i].series;
        const char *where = tsrnn_display_path(paths->paths[paths->count > 1 ? i : 0]);
        bool same = s->component_count == first->component_count;
        for (size_t c = 0; same && c < s->component_count; c++)
            same = strcmp(s->component_names[c], first->component_names[c]) == 0;
        if (!same)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: series '%s' has the value columns '%s'%s (%zu), series '%s' "
                               "'%s'%s (%zu); every series of a run needs the same ones (set "
                               "[data] value_cols)",
                               where, ds->items[i].id, s->component_names[0],
                               s->component_count > 1 ? ", ..." : "", s->component_count,
                               ds->items[0].id, first->component_names[0],
                               first->component_count > 1 ? ", ..." : "", first->component_count);
    }
    return TSRNN_OK;
}

/* The series of [data] path, each read, split and scaled (prepare_series()). */
static enum tsrnn_status read_series(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_data_paths paths = { 0 };
    struct tsrnn_series_options options;
    TSRNN_TRY(tsrnn_series_options_from_config(&options, cfg));
    status =
        tsrnn_data_paths_expand(&paths, cfg->data_path, tsrnn_config_origin(cfg, "data", "path"));
    if (status != TSRNN_OK)
        goto out;
    status = cfg->id_col[0] != '\0' ? read_groups(ds, cfg, paths.paths[0], &options)
                                    : read_files(ds, cfg, &paths, &options);
    if (status != TSRNN_OK)
        goto out;
    status = check_components(ds, &paths);
    if (status != TSRNN_OK)
        goto out;
    size_t S = ds->series_count;
    for (size_t i = 0; i < S; i++) {
        status = prepare_series(&ds->items[i], cfg, paths.paths[paths.count > 1 ? i : 0], S > 1);
        if (status != TSRNN_OK)
            goto out;
    }
out:
    tsrnn_data_paths_finish(&paths);
    return status;
}

/* The list of the run's series and the samples over it (Darts' training and validation
 * datasets over a list). */
static enum tsrnn_status build(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    /* What [covariates] asks for first: its columns are read with each series. */
    struct tsrnn_covariates *cov = calloc(1, sizeof(*cov));
    if (cov == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the covariates");
    ds->covariates = cov;
    TSRNN_TRY(tsrnn_encoders_from_config(cov->encoders, &cov->encoder_count, &cov->count, cfg));
    TSRNN_TRY(tsrnn_covariate_columns_from_config(cov, cfg));

    TSRNN_TRY(read_series(ds, cfg));
    size_t S = ds->series_count;
    ds->component_count = ds->items[0].series.component_count;
    ds->training_length = (size_t)cfg->training_length;
    TSRNN_TRY(tsrnn_dataset_build_covariates(ds, cfg->cov_scaler));
    for (size_t i = 0; i < S; i++) {
        ds->train_parts[i] = ds->items[i].train;
        ds->val_parts[i] = ds->items[i].val;
    }
    size_t cap = (size_t)cfg->max_samples_per_ts;
    TSRNN_TRY(tsrnn_window_list_init(&ds->train, ds->train_parts, S, cap));
    /* Every series has a validation part, or none has (the split applies to each). */
    if (ds->items[0].val_length > 0)
        return tsrnn_window_list_init(&ds->val, ds->val_parts, S, cap);
    ds->val = (struct tsrnn_window_list){ .series = ds->val_parts, .series_count = S };
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_dataset_load(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    memset(ds, 0, sizeof(*ds));
    TSRNN_TRY(tsrnn_data_check_config(cfg));
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
