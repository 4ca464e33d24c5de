/* The dataset of a fit on series sets: Darts' fit(series, val_series=val) as the trainer
 * reads it (struct tsrnn_dataset, include/tsrnn/data.h), built from the caller's arrays as
 * src/data/dataset.c builds it from files: the same split rules, scaler and windows.
 *
 * Each training series and the validation series that continues it are one item of the
 * dataset (points [0, train_length) train, the rest validate), so that the validation
 * forecast and the checkpoint see the series as a run from a file does. Without validation
 * and without a scaler, an item's values are the caller's array itself: nothing is copied.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static void item_label(char *out, size_t capacity, const struct api_series *s, size_t index)
{
    if (s->id[0] != '\0')
        snprintf(out, capacity, "series '%s'", s->id);
    else
        snprintf(out, capacity, "series %zu", index);
}

static enum tsrnn_status check_part(const struct tsrnn_config *cfg, const char *label,
                                    const char *part, size_t points)
{
    size_t need = (size_t)cfg->training_length + 1;
    if (points >= need)
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s: the %s has %zu points, but training_length = %d (%s) needs at least "
                       "%zu to make one window; use a longer series or a smaller training_length",
                       label, part, points, cfg->training_length,
                       tsrnn_config_origin(cfg, "model", "training_length"), need);
}

/* Validation series v continues training series t: same columns, same frequency, its first
 * stamp the step after t's last. */
static enum tsrnn_status check_continues(const struct api_series *t, const struct api_series *v,
                                         const char *label)
{
    const struct tsrnn_series *a = &t->series, *b = &v->series;
    if (b->component_count != a->component_count)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the validation series has %zu components, the training series "
                           "%zu; accepted: the same components",
                           label, b->component_count, a->component_count);
    for (size_t c = 0; c < a->component_count; c++)
        if (strcmp(a->component_names[c], b->component_names[c]) != 0)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: validation component %zu is '%s', the training series' '%s'",
                               label, c, b->component_names[c], a->component_names[c]);
    int64_t next;
    if (!tsrnn_freq_equal(&a->freq, &b->freq) ||
        !tsrnn_freq_advance(&a->freq, a->times[a->length - 1], 1, &next) || b->times[0] != next) {
        char end[64], start[64];
        tsrnn_time_format(a->times[a->length - 1], a->time_unit, end, sizeof(end));
        tsrnn_time_format(b->times[0], b->time_unit, start, sizeof(start));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the validation series starts at %s, but the training series ends "
                           "at %s; tsrnn validates on the continuation of each training series "
                           "(what split_after gives): accepted: a validation series that starts "
                           "one step after its training series, at the same frequency",
                           label, start, end);
    }
    return TSRNN_OK;
}

/* Rows [0, n) of `dst` (n, Kc) from series `s`'s covariates at the stamps `times`. */
static enum tsrnn_status covariate_rows(float *dst, const struct api_series *s,
                                        const int64_t *times, size_t n, const char *label)
{
    size_t Kc = s->cov_count;
    for (size_t i = 0; i < n; i++) {
        size_t row;
        if (!api_covariate_row(s, times[i], &row)) {
            char stamp[64];
            tsrnn_time_format(times[i], s->series.time_unit, stamp, sizeof(stamp));
            return tsrnn_error(TSRNN_ERR_DATA, "%s: its covariates have no row at %s", label,
                               stamp);
        }
        memcpy(dst + i * Kc, s->cov_values + row * Kc, Kc * sizeof(float));
    }
    return TSRNN_OK;
}

/* Item i: the training series, its validation series after it, their covariate columns, the
 * scaler fitted on the training part and the windows. */
static enum tsrnn_status prepare_item(struct api_dataset *d, size_t i,
                                      const struct tsrnn_config *cfg, const struct api_series *t,
                                      const struct api_series *v)
{
    struct tsrnn_dataset_series *item = &d->ds.items[i];
    struct api_item_owned *own = &d->owned[i];
    const struct tsrnn_series *ts = &t->series;
    size_t C = ts->component_count, Lt = ts->length, Lv = v != NULL ? v->series.length : 0;
    size_t L = Lt + Lv, Kc = t->cov_count;
    char label[TSRNN_NAME_MAX + 32];
    item_label(label, sizeof(label), t, i);

    TSRNN_TRY(check_part(cfg, label, "training series", Lt));
    if (v != NULL) {
        TSRNN_TRY(check_continues(t, v, label));
        TSRNN_TRY(check_part(cfg, label, "validation series", Lv));
        if ((v->cov_count > 0) != (Kc > 0) || v->cov_count != Kc)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: the training series has %zu covariate columns, its "
                               "validation series %zu; accepted: the same columns (Darts' "
                               "future_covariates and val_future_covariates)",
                               label, Kc, v->cov_count);
    }
    snprintf(item->id, sizeof(item->id), "%s", t->id);
    item->series = *ts;
    item->series.length = L;
    item->train_length = Lt;
    item->val_length = Lv;
    if (Lv > 0) { /* one series: the training part, then the validation part */
        float *values = malloc(L * C * sizeof(float));
        int64_t *times = malloc(L * sizeof(int64_t));
        own->values = values != NULL;
        own->times = times != NULL;
        item->series.values = values;
        item->series.times = times;
        if (values == NULL || times == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s's %zu points", label, L);
        memcpy(values, ts->values, Lt * C * sizeof(float));
        memcpy(values + Lt * C, v->series.values, Lv * C * sizeof(float));
        memcpy(times, ts->times, Lt * sizeof(int64_t));
        memcpy(times + Lt, v->series.times, Lv * sizeof(int64_t));
    }
    if (Kc > 0) { /* the covariates at the series' stamps, as Darts slices them */
        size_t row;
        if (Lv == 0 && api_covariate_row(t, ts->times[0], &row)) {
            /* borrowed: the set checked that its rows cover the series, one per stamp */
            item->series.covariates = (float *)t->cov_values + row * Kc;
        } else {
            float *rows = malloc(L * Kc * sizeof(float));
            own->series_covariates = rows != NULL;
            item->series.covariates = rows;
            if (rows == NULL)
                return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s's covariates", label);
            TSRNN_TRY(covariate_rows(rows, t, ts->times, Lt, label));
            if (Lv > 0)
                TSRNN_TRY(covariate_rows(rows + Lt * Kc, v, v->series.times, Lv, label));
        }
        item->series.covariate_count = Kc;
    }

    /* [data] scaler, fitted on the training part; "none" keeps the values (as given). */
    TSRNN_TRY(tsrnn_scaler_fit_series(&item->scaler, cfg->scaler, &item->series, Lt, label));
    if (cfg->scaler == TSRNN_SCALER_MINMAX) {
        item->scaled = malloc(L * C * sizeof(float));
        own->scaled = item->scaled != NULL;
        if (item->scaled == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s's %zu points", label, L);
        memcpy(item->scaled, item->series.values, L * C * sizeof(float));
        tsrnn_scaler_transform(&item->scaler, item->scaled, L);
    } else {
        item->scaled = item->series.values; /* read only, like the values */
    }
    size_t T = (size_t)cfg->training_length;
    tsrnn_windows_init(&item->train, item->scaled, Lt, C, T);
    tsrnn_windows_init(&item->val, item->scaled + Lt * C, Lv, C, T);
    return TSRNN_OK;
}

/* The model's future covariates: the sets' columns first, then [covariates]' encoders,
 * encoded and scaled as a fit on files does (tsrnn_dataset_build_covariates()). */
static enum tsrnn_status build_covariates(struct api_dataset *d, const struct tsrnn_config *cfg,
                                          const struct api_series *first)
{
    struct tsrnn_dataset *ds = &d->ds;
    struct tsrnn_covariates *cov = &d->covariates;
    size_t encoded;
    TSRNN_TRY(tsrnn_encoders_from_config(cov->encoders, &cov->encoder_count, &encoded, cfg));
    size_t Kc = first->cov_count, K = Kc + encoded;
    if (K > TSRNN_MAX_COMPONENTS)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%zu covariate columns and %zu of [covariates]' encoders: %zu future "
                           "covariates; accepted: at most %d",
                           Kc, encoded, K, TSRNN_MAX_COMPONENTS);
    cov->column_count = Kc;
    if (Kc > 0) /* a set without covariate columns has no names (NULL) */
        memcpy(cov->column_names, first->cov_names, Kc * sizeof(cov->column_names[0]));
    cov->count = K;
    ds->covariates = cov;
    return tsrnn_dataset_build_covariates(ds, cfg->cov_scaler);
}

/* What a fit on arrays takes from [data] and [covariates]: the settings about the series
 * themselves; those about reading and splitting files belong to fits on files. */
static enum tsrnn_status check_config(const struct tsrnn_config *cfg)
{
    static const char *const file_keys[][2] = {
        { "data", "split_after" },
        { "data", "val_fraction" },
        { "data", "id_col" },
        { "covariates", "columns" },
    };
    for (size_t k = 0; k < sizeof(file_keys) / sizeof(file_keys[0]); k++) {
        const char *origin = tsrnn_config_origin(cfg, file_keys[k][0], file_keys[k][1]);
        if (origin != NULL && strcmp(origin, "default") != 0)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [%s] %s is set, but the fit is given its series: its "
                               "validation series (and covariates) come with them; accepted: "
                               "[%s] %s unset",
                               origin, file_keys[k][0], file_keys[k][1], file_keys[k][0],
                               file_keys[k][1]);
    }
    return TSRNN_OK;
}

static enum tsrnn_status build(struct api_dataset *d, const struct tsrnn_config *cfg,
                               const struct tsrnn_series_set *train,
                               const struct tsrnn_series_set *val)
{
    TSRNN_TRY(check_config(cfg));
    size_t S = train->count;
    if (S == 0)
        return tsrnn_error(TSRNN_ERR_USAGE, "the fit's series set is empty");
    if (val != NULL && val->count != S)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%zu training series but %zu validation series; accepted: one "
                           "validation series per training series, in the same order",
                           S, val->count);
    const struct api_series *first = &train->items[0];
    for (size_t i = 1; i < S; i++) {
        const struct api_series *s = &train->items[i];
        bool same = s->series.component_count == first->series.component_count &&
                    s->cov_count == first->cov_count;
        for (size_t c = 0; same && c < s->series.component_count; c++)
            same = strcmp(s->series.component_names[c], first->series.component_names[c]) == 0;
        for (size_t k = 0; same && k < s->cov_count; k++)
            same = strcmp(s->cov_names[k], first->cov_names[k]) == 0;
        if (!same)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "series '%s' has %zu components and %zu covariate columns unlike "
                               "series '%s' (%zu, %zu) or names them otherwise; every series of a "
                               "fit needs the same ones",
                               s->id, s->series.component_count, s->cov_count, first->id,
                               first->series.component_count, first->cov_count);
    }
    d->ds.items = calloc(S, sizeof(*d->ds.items));
    d->ds.train_parts = calloc(S, sizeof(*d->ds.train_parts));
    d->ds.val_parts = calloc(S, sizeof(*d->ds.val_parts));
    d->owned = calloc(S, sizeof(*d->owned));
    if (d->ds.items == NULL || d->ds.train_parts == NULL || d->ds.val_parts == NULL ||
        d->owned == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", S);
    d->ds.series_count = S;
    for (size_t i = 0; i < S; i++)
        TSRNN_TRY(prepare_item(d, i, cfg, &train->items[i], val ? &val->items[i] : NULL));
    d->ds.component_count = first->series.component_count;
    d->ds.training_length = (size_t)cfg->training_length;
    TSRNN_TRY(build_covariates(d, cfg, first));
    for (size_t i = 0; i < S; i++) {
        d->ds.train_parts[i] = d->ds.items[i].train;
        d->ds.val_parts[i] = d->ds.items[i].val;
    }
    size_t cap = (size_t)cfg->max_samples_per_ts;
    TSRNN_TRY(tsrnn_window_list_init(&d->ds.train, d->ds.train_parts, S, cap));
    if (val != NULL)
        return tsrnn_window_list_init(&d->ds.val, d->ds.val_parts, S, cap);
    d->ds.val = (struct tsrnn_window_list){ .series = d->ds.val_parts, .series_count = S };
    return TSRNN_OK;
}

enum tsrnn_status api_dataset_build(struct api_dataset *d, const struct tsrnn_config *cfg,
                                    const struct tsrnn_series_set *train,
                                    const struct tsrnn_series_set *val)
{
    memset(d, 0, sizeof(*d));
    enum tsrnn_status status = build(d, cfg, train, val);
    if (status != TSRNN_OK)
        api_dataset_finish(d);
    return status;
}

void api_dataset_finish(struct api_dataset *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; d->ds.items != NULL && d->owned != NULL && i < d->ds.series_count; i++) {
        struct tsrnn_dataset_series *item = &d->ds.items[i];
        const struct api_item_owned *own = &d->owned[i];
        if (own->values)
            free(item->series.values);
        if (own->times)
            free(item->series.times);
        if (own->scaled)
            free(item->scaled);
        if (own->series_covariates)
            free(item->series.covariates);
        free(item->covariates);
    }
    free(d->ds.items);
    free(d->ds.train_parts);
    free(d->ds.val_parts);
    free(d->owned);
    memset(d, 0, sizeof(*d));
}
