/* Series sets (include/tsrnn/tsrnn.h): the series a program hands to a fit or a forecast, as
 * arrays it keeps (zero-copy), checked once here: a time index on one frequency, finite
 * values, names that can go into files and messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

enum tsrnn_status api_result(char message[API_MESSAGE_MAX], enum tsrnn_status status)
{
    if (status == TSRNN_OK)
        message[0] = '\0';
    else
        snprintf(message, API_MESSAGE_MAX, "%s", tsrnn_last_error());
    return status;
}

enum tsrnn_status tsrnn_series_set_create(struct tsrnn_series_set **set)
{
    *set = calloc(1, sizeof(**set));
    return *set != NULL ? TSRNN_OK : TSRNN_ERR_NOMEM;
}

void tsrnn_series_set_destroy(struct tsrnn_series_set *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->count; i++) {
        struct api_series *s = &set->items[i];
        if (s->owned) {
            free(s->series.values);
            free(s->series.times);
            free(s->series.covariates);
        }
        free(s->names);
        free(s->cov_names);
    }
    free(set->items);
    free(set);
}

const char *tsrnn_series_set_error(const struct tsrnn_series_set *set)
{
    return set != NULL ? set->message : "no series set (NULL)";
}

size_t tsrnn_series_set_count(const struct tsrnn_series_set *set)
{
    return set != NULL ? set->count : 0;
}

/* "series 'id'" or "series 3" (unnamed, by position) for messages. */
static void series_label(char *out, size_t capacity, const char *id, size_t index)
{
    if (id != NULL && id[0] != '\0')
        snprintf(out, capacity, "series '%s'", id);
    else
        snprintf(out, capacity, "series %zu", index);
}

/* Copies `count` names into a new array of TSRNN_NAME_MAX-byte names (*out, owned by the
 * caller also on failure): each short, printable and distinct. */
static enum tsrnn_status copy_names(char (**out)[TSRNN_NAME_MAX], const char *const *names,
                                    size_t count, const char *what, const char *where)
{
    *out = calloc(count ? count : 1, sizeof(**out));
    if (*out == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu names", count);
    for (size_t i = 0; i < count; i++) {
        const char *name = names != NULL ? names[i] : NULL;
        if (name == NULL || name[0] == '\0' || strlen(name) >= TSRNN_NAME_MAX ||
            !tsrnn_text_printable(name))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: %s %zu is %s; accepted: printable UTF-8 names of 1 to %d "
                               "bytes",
                               where, what, i, name == NULL ? "missing (NULL)" : "not one",
                               TSRNN_NAME_MAX - 1);
        for (size_t j = 0; j < i; j++)
            if (strcmp((*out)[j], name) == 0)
                return tsrnn_error(TSRNN_ERR_USAGE,
                                   "%s: %s '%s' is given twice; accepted: "
                                   "distinct names",
                                   where, what, name);
        snprintf((*out)[i], TSRNN_NAME_MAX, "%s", name);
    }
    return TSRNN_OK;
}

/* The frequency of `length` stamps: `freq` as given, else inferred; the stamps must follow
 * it. */
static enum tsrnn_status time_index(struct tsrnn_freq *f, const int64_t *times, size_t length,
                                    bool dates, const char *freq, const char *where)
{
    for (size_t i = 1; i < length; i++)
        if (times[i] <= times[i - 1])
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: the time index is not strictly increasing at point %zu "
                               "(%lld after %lld); accepted: increasing stamps without "
                               "duplicates",
                               where, i, (long long)times[i], (long long)times[i - 1]);
    if (freq != NULL && freq[0] != '\0') {
        if (!tsrnn_freq_parse(f, freq))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: freq '%s' is not a frequency tsrnn steps; accepted: a "
                               "pandas 3 offset alias (\"MS\", \"ME\", \"D\", \"W-SUN\", "
                               "\"QS-JAN\", \"h\", \"15min\", ...) or, for an integer index, "
                               "its step",
                               where, freq);
        if ((f->kind == TSRNN_FREQ_STEP) == dates)
            return tsrnn_error(TSRNN_ERR_USAGE, "%s: freq '%s' is %s, but the index holds %s",
                               where, freq, dates ? "an integer step" : "a calendar frequency",
                               dates ? "dates" : "integers");
    } else if (!tsrnn_freq_infer(f, times, length, !dates)) {
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: no frequency can be inferred from its %zu stamps%s; give the "
                           "series' freq",
                           where, length, length < 3 ? " (pandas needs 3)" : "");
    }
    size_t at = tsrnn_freq_first_break(f, times, length);
    if (at < length) {
        char name[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(f, name, sizeof(name));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: point %zu (%lld) does not follow the frequency %s of the points "
                           "before it; accepted: a regular index (fill missing dates first)",
                           where, at, (long long)times[at], name);
    }
    return TSRNN_OK;
}

/* The coarsest unit that shows every stamp: the frequency's, or finer where a stamp has a
 * time of day the frequency's unit would hide. */
static enum tsrnn_time_unit time_unit(const struct tsrnn_freq *f, const int64_t *times,
                                      size_t length, bool dates)
{
    if (!dates)
        return TSRNN_TIME_INDEX;
    enum tsrnn_time_unit unit = tsrnn_freq_unit(f);
    for (size_t i = 0; i < length; i++) {
        int64_t of_day = ((times[i] % 86400) + 86400) % 86400;
        if (of_day % 60 != 0)
            return TSRNN_TIME_SECOND;
        if (of_day != 0 && unit < TSRNN_TIME_MINUTE)
            unit = TSRNN_TIME_MINUTE;
    }
    return unit;
}

static enum tsrnn_status check_values(const float *values, size_t length, size_t columns,
                                      const char *what, const char *where)
{
    for (size_t t = 0; t < length; t++)
        for (size_t c = 0; c < columns; c++)
            if (!isfinite(values[t * columns + c]))
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s: %s %zu of point %zu is %g; accepted: finite values (fill "
                                   "missing values first)",
                                   where, what, c, t, (double)values[t * columns + c]);
    return TSRNN_OK;
}

static enum tsrnn_status grow(struct tsrnn_series_set *set)
{
    if (set->count < set->capacity)
        return TSRNN_OK;
    size_t capacity = set->capacity ? 2 * set->capacity : 4;
    struct api_series *items = realloc(set->items, capacity * sizeof(*items));
    if (items == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", capacity);
    set->items = items;
    set->capacity = capacity;
    return TSRNN_OK;
}

/* An id that names one series of the set: printable, short, not taken. */
static enum tsrnn_status check_id(const struct tsrnn_series_set *set, const char *id)
{
    if (strlen(id) >= TSRNN_NAME_MAX || !tsrnn_text_printable(id))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "series id '%s': accepted: printable UTF-8 of at most %d bytes", id,
                           TSRNN_NAME_MAX - 1);
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->items[i].id, id) == 0)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "series id '%s' is in the set already; accepted: distinct ids "
                               "(a set of several series names each of them)",
                               id);
    if (set->count > 0 && (id[0] == '\0' || set->items[0].id[0] == '\0'))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "series id '%s': a set of several series names each of them; "
                           "accepted: an id for every series",
                           id);
    return TSRNN_OK;
}

static enum tsrnn_status add(struct tsrnn_series_set *set, const char *id, const char *time_name,
                             const int64_t *times, bool dates, const char *freq, size_t length,
                             const float *values, size_t C, const char *const *names, size_t *index)
{
    char where[TSRNN_NAME_MAX + 32];
    id = id != NULL ? id : "";
    series_label(where, sizeof(where), id, set->count);
    if (times == NULL || values == NULL || length == 0)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: no points (times, values NULL or length 0)",
                           where);
    if (C == 0 || C > TSRNN_MAX_COMPONENTS)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: %zu components; accepted: 1 to %d", where, C,
                           TSRNN_MAX_COMPONENTS);
    time_name = time_name != NULL ? time_name : "";
    if (strlen(time_name) >= TSRNN_NAME_MAX || !tsrnn_text_printable(time_name))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: time index name '%s': accepted: printable UTF-8 of at most %d "
                           "bytes",
                           where, time_name, TSRNN_NAME_MAX - 1);
    TSRNN_TRY(check_id(set, id));
    struct tsrnn_freq f;
    TSRNN_TRY(time_index(&f, times, length, dates, freq, where));
    TSRNN_TRY(check_values(values, length, C, "component", where));
    TSRNN_TRY(grow(set));

    struct api_series *s = &set->items[set->count];
    memset(s, 0, sizeof(*s));
    enum tsrnn_status status = copy_names(&s->names, names, C, "component name", where);
    if (status != TSRNN_OK) {
        free(s->names);
        s->names = NULL;
        return status;
    }
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->series = (struct tsrnn_series){
        .length = length,
        .component_count = C,
        .values = (float *)values, /* borrowed: never written */
        .times = (int64_t *)times,
        .time_unit = time_unit(&f, times, length, dates),
        .freq = f,
        .component_names = s->names,
    };
    snprintf(s->series.time_name, sizeof(s->series.time_name), "%s", time_name);
    if (index != NULL)
        *index = set->count;
    set->count++;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_series_set_add(struct tsrnn_series_set *set, const char *id,
                                       const char *time_name, const int64_t *times, bool dates,
                                       const char *freq, size_t length, const float *values,
                                       size_t component_count, const char *const *component_names,
                                       size_t *index)
{
    if (set == NULL)
        return TSRNN_ERR_USAGE;
    tsrnn_error_clear();
    return api_result(set->message, add(set, id, time_name, times, dates, freq, length, values,
                                        component_count, component_names, index));
}

bool api_covariate_row(const struct api_series *s, int64_t t, size_t *row)
{
    int64_t k;
    if (s->cov_count == 0 || s->cov_length == 0 || t < s->cov_times[0] ||
        !tsrnn_freq_steps(&s->series.freq, s->cov_times[0], t, &k) || (uint64_t)k >= s->cov_length)
        return false;
    *row = (size_t)k;
    return s->cov_times[k] == t;
}

static enum tsrnn_status add_covariates(struct tsrnn_series_set *set, size_t index,
                                        const int64_t *times, size_t length, const float *values,
                                        size_t K, const char *const *names)
{
    char where[TSRNN_NAME_MAX + 64];
    if (index >= set->count)
        return tsrnn_error(TSRNN_ERR_USAGE, "covariates of series %zu: the set has %zu series",
                           index, set->count);
    struct api_series *s = &set->items[index];
    series_label(where, sizeof(where) - 20, s->id, index);
    strcat(where, "'s covariates");
    if (s->cov_count > 0)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s are given already", where);
    if (times == NULL || values == NULL || length == 0 || K == 0 || K > TSRNN_MAX_COMPONENTS)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: %zu points of %zu columns; accepted: at least 1 point of 1 to "
                           "%d columns",
                           where, times && values ? length : 0, K, TSRNN_MAX_COMPONENTS);
    for (size_t i = 1; i < length; i++)
        if (times[i] <= times[i - 1])
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: the time index is not strictly increasing at point %zu", where,
                               i);
    size_t at = tsrnn_freq_first_break(&s->series.freq, times, length);
    if (at < length) {
        char name[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&s->series.freq, name, sizeof(name));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: point %zu (%lld) is not on the series' frequency %s; accepted: "
                           "covariates on the series' own time grid",
                           where, at, (long long)times[at], name);
    }
    TSRNN_TRY(check_values(values, length, K, "column", where));
    char(*cov_names)[TSRNN_NAME_MAX];
    enum tsrnn_status status = copy_names(&cov_names, names, K, "covariate name", where);
    if (status != TSRNN_OK) {
        free(cov_names);
        return status;
    }
    s->cov_times = times;
    s->cov_length = length;
    s->cov_values = values;
    s->cov_count = K;
    s->cov_names = cov_names;
    /* They must cover the series' own points: Darts slices them by the series' stamps. */
    size_t first, last;
    const struct tsrnn_series *series = &s->series;
    if (!api_covariate_row(s, series->times[0], &first) ||
        !api_covariate_row(s, series->times[series->length - 1], &last)) {
        char a[64], b[64], c[64], d[64];
        tsrnn_time_format(series->times[0], series->time_unit, a, sizeof(a));
        tsrnn_time_format(series->times[series->length - 1], series->time_unit, b, sizeof(b));
        tsrnn_time_format(times[0], series->time_unit, c, sizeof(c));
        tsrnn_time_format(times[length - 1], series->time_unit, d, sizeof(d));
        s->cov_count = 0;
        s->cov_names = NULL;
        free(cov_names);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s span %s .. %s, but the series spans %s .. %s; accepted: "
                           "covariates at every stamp of the series",
                           where, c, d, a, b);
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_series_set_add_covariates(struct tsrnn_series_set *set, size_t index,
                                                  const int64_t *times, size_t length,
                                                  const float *values, size_t covariate_count,
                                                  const char *const *covariate_names)
{
    if (set == NULL)
        return TSRNN_ERR_USAGE;
    tsrnn_error_clear();
    return api_result(set->message, add_covariates(set, index, times, length, values,
                                                   covariate_count, covariate_names));
}

/* A CSV file read as the run's [data] section reads its training files, its [covariates]
 * columns moved beside the values. */
static enum tsrnn_status read_csv(struct tsrnn_series_set *set, const struct tsrnn_config *cfg,
                                  const char *path, const char *id)
{
    struct tsrnn_series_options options;
    tsrnn_series_options_from_config(&options, cfg);
    struct tsrnn_covariates cov;
    memset(&cov, 0, sizeof(cov));
    TSRNN_TRY(tsrnn_covariate_columns_from_config(&cov, cfg));
    id = id != NULL ? id : "";
    TSRNN_TRY(check_id(set, id));
    TSRNN_TRY(grow(set));
    struct tsrnn_series series;
    if (cov.column_count > 0)
        TSRNN_TRY(tsrnn_series_load_csv_covariates(
            &series, path, cfg->time_col, (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
            cfg->value_col_count, (const char(*)[TSRNN_NAME_MAX])cov.column_names, cov.column_count,
            &options));
    else
        TSRNN_TRY(tsrnn_series_load_csv(&series, path, cfg->time_col,
                                        (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                                        cfg->value_col_count, &options));
    struct api_series *s = &set->items[set->count];
    memset(s, 0, sizeof(*s));
    s->owned = true;
    s->series = series;
    s->names = series.component_names; /* the set frees it as its own */
    snprintf(s->id, sizeof(s->id), "%s", id);
    if (cov.column_count > 0) {
        s->cov_times = series.times;
        s->cov_length = series.length;
        s->cov_values = series.covariates;
        s->cov_count = cov.column_count;
        s->cov_names = calloc(cov.column_count, sizeof(*s->cov_names));
        if (s->cov_names == NULL) {
            tsrnn_series_finish(&s->series);
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        }
        memcpy(s->cov_names, cov.column_names, cov.column_count * sizeof(*s->cov_names));
        s->series.covariate_count = 0; /* the covariates are the set's, as for arrays */
    }
    set->count++;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_series_set_read_csv(struct tsrnn_series_set *set,
                                            const struct tsrnn_run *run, const char *path,
                                            const char *id)
{
    if (set == NULL)
        return TSRNN_ERR_USAGE;
    tsrnn_error_clear();
    enum tsrnn_status status =
        run == NULL || path == NULL
            ? tsrnn_error(TSRNN_ERR_USAGE, "tsrnn_series_set_read_csv: no run or no path")
            : read_csv(set, run->cfg, path, id);
    return api_result(set->message, status);
}

enum tsrnn_status api_series_copy(struct tsrnn_series *dst, const struct tsrnn_series *src)
{
    size_t L = src->length, C = src->component_count, Kc = src->covariate_count;
    *dst = *src;
    dst->values = malloc((L ? L : 1) * C * sizeof(float));
    dst->times = malloc((L ? L : 1) * sizeof(int64_t));
    dst->component_names = calloc(C ? C : 1, sizeof(*dst->component_names));
    dst->covariates = Kc > 0 ? malloc((L ? L : 1) * Kc * sizeof(float)) : NULL;
    if (dst->values == NULL || dst->times == NULL || dst->component_names == NULL ||
        (Kc > 0 && dst->covariates == NULL)) {
        tsrnn_series_finish(dst);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a series of %zu points", L);
    }
    memcpy(dst->values, src->values, L * C * sizeof(float));
    memcpy(dst->times, src->times, L * sizeof(int64_t));
    memcpy(dst->component_names, src->component_names, C * sizeof(*dst->component_names));
    if (Kc > 0)
        memcpy(dst->covariates, src->covariates, L * Kc * sizeof(float));
    return TSRNN_OK;
}
