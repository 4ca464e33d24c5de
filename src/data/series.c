/* A time series from a CSV file (include/tsrnn/data.h): the rows csv.c read become the
 * series.
 *
 * Time column rule (pandas / Darts from_dataframe): a column whose every value is an integer
 * is an integer index; anything else must parse as a time stamp (tsrnn_time_parse()).
 * Either way the stamps must strictly increase, and follow one frequency (src/data/freq.c):
 * Darts builds its TimeSeries only on such an index, after inserting missing dates when asked
 * (fill_missing_dates / freq). Values are read in double, as pandas reads them, filled there
 * (src/data/fill.c) and only then rounded to float32, as Darts' `.astype(np.float32)` after
 * MissingValuesFiller().
 */
#include "table.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum tsrnn_status parse_times(struct loader *ld, struct tsrnn_series *s)
{
    s->times = malloc((s->length ? s->length : 1) * sizeof(*s->times));
    if (s->times == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    s->time_unit = TSRNN_TIME_INDEX;
    if (ld->time_idx < 0) {
        for (size_t t = 0; t < s->length; t++)
            s->times[t] = (int64_t)t;
        return TSRNN_OK;
    }

    bool all_integers = true;
    size_t t_bad = 0;
    for (; t_bad < s->length && all_integers; t_bad++)
        all_integers = tsrnn_parse_int64(ld->time_text[t_bad], &s->times[t_bad]);
    /* Digits that do not fit int64, where the column is an index: say so, not "not a time
     * stamp" of its first row. */
    const char *bad = all_integers ? NULL : ld->time_text[t_bad - 1];
    if (bad != NULL && bad[strspn(bad, "+-")] != '\0' &&
        strspn(bad + strspn(bad, "+-"), "0123456789") == strlen(bad + strspn(bad, "+-")))
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu:%zu: time column '%s': '%s' is beyond the integers an index "
                           "can hold; accepted: -9223372036854775808 .. 9223372036854775807",
                           ld->file.path, ld->time_line[t_bad - 1], ld->time_column[t_bad - 1],
                           s->time_name, bad);
    if (!all_integers) {
        s->time_unit = TSRNN_TIME_YEAR;
        for (size_t t = 0; t < s->length; t++) {
            enum tsrnn_time_unit unit;
            if (!tsrnn_time_parse(ld->time_text[t], &s->times[t], &unit))
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s:%zu:%zu: time column '%s': '%s' is not a time stamp; "
                                   "accepted: YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], "
                                   "or integers in every row",
                                   ld->file.path, ld->time_line[t], ld->time_column[t],
                                   s->time_name, ld->time_text[t]);
            if (unit > s->time_unit)
                s->time_unit = unit;
        }
    }
    for (size_t t = 1; t < s->length; t++)
        if (s->times[t] <= s->times[t - 1])
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu:%zu: time column '%s': '%s' %s the previous row's '%s' "
                               "(line %zu); time stamps must strictly increase",
                               ld->file.path, ld->time_line[t], ld->time_column[t], s->time_name,
                               ld->time_text[t],
                               s->times[t] == s->times[t - 1] ? "repeats" : "comes before",
                               ld->time_text[t - 1], ld->time_line[t - 1]);
    return TSRNN_OK;
}

/* --- one frequency: the index as Darts builds it ----------------------------------------- */

/* Values (points times value columns) a series may have after missing dates are inserted: a
 * wrong freq (seconds over a decade) must not exhaust the memory before it can be reported. */
#define SERIES_VALUES_MAX 100000000

/* Frequencies a column's three consecutive stamps show, as Darts observes them. */
#define OBSERVED_MAX 8

struct observation {
    struct tsrnn_freq freqs[OBSERVED_MAX];
    size_t counts[OBSERVED_MAX];
    size_t distinct; /* may exceed OBSERVED_MAX */
};

/* `t` in the series' format and in the unit `f` needs ("1955-06"). */
static void format_stamp(const struct tsrnn_series *s, const struct tsrnn_freq *f, int64_t t,
                         char *out, size_t capacity)
{
    enum tsrnn_time_unit unit = s->time_unit;
    if (f != NULL && tsrnn_freq_unit(f) > unit)
        unit = tsrnn_freq_unit(f);
    tsrnn_time_format(t, unit, out, capacity);
}

/* Whether every stamp is on the grid of `f` through times[0]: then *points is the size of that
 * grid up to the last stamp; else *bad is the first stamp off it. */
static bool on_grid(const struct tsrnn_freq *f, const int64_t *times, size_t length, size_t *bad,
                    int64_t *points)
{
    int64_t k = 0;
    *bad = 0;
    if (!tsrnn_freq_on(f, times[0]))
        return false;
    for (size_t i = 1; i < length; i++)
        if (!tsrnn_freq_steps(f, times[0], times[i], &k)) {
            *bad = i;
            return false;
        }
    *points = k + 1;
    *bad = length;
    return true;
}

/* The frequency fill_missing_dates inserts at without a freq: Darts takes the one frequency
 * seen over three consecutive stamps and refuses several; tsrnn takes, of those seen, the one
 * whose grid keeps every stamp with the fewest points (the same one where Darts finds one;
 * "B" rather than "D" for business days with a holiday, where Darts sees both). */
static bool fill_frequency(const struct observation *o, const int64_t *times, size_t length,
                           struct tsrnn_freq *f)
{
    int64_t best_points = 0;
    bool found = false;
    for (size_t j = 0; j < o->distinct && j < OBSERVED_MAX; j++) {
        size_t bad;
        int64_t points;
        if (on_grid(&o->freqs[j], times, length, &bad, &points) &&
            (!found || points < best_points)) {
            *f = o->freqs[j];
            best_points = points;
            found = true;
        }
    }
    return found;
}

/* "MS (130 times), 2MS (2 times)". */
static void list_observed(const struct observation *o, char *out, size_t capacity)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t j = 0; j < o->distinct && j < OBSERVED_MAX && used < capacity; j++) {
        char name[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&o->freqs[j], name, sizeof(name));
        used += (size_t)snprintf(out + used, capacity - used, "%s%s (%zu time%s)", j ? ", " : "",
                                 name, o->counts[j], o->counts[j] == 1 ? "" : "s");
    }
    if (o->distinct > OBSERVED_MAX && used < capacity)
        snprintf(out + used, capacity - used, ", ...");
}

/* The column does not follow one frequency and nothing asked to insert dates: name the first
 * place where it leaves the frequency the rest of it follows, and the remedy. */
static enum tsrnn_status irregular(const struct loader *ld, const struct tsrnn_series *s,
                                   const struct observation *o, const struct tsrnn_freq *fill)
{
    bool integer = s->time_unit == TSRNN_TIME_INDEX;
    const char *what = integer ? "indexes" : "dates";
    struct tsrnn_freq expected = { .kind = TSRNN_FREQ_NONE };
    size_t L = s->length, best = 0;
    if (fill != NULL)
        expected = *fill;
    for (size_t j = 0; fill == NULL && j < o->distinct && j < OBSERVED_MAX; j++)
        if (o->counts[j] > best) {
            best = o->counts[j];
            expected = o->freqs[j];
        }

    char remedy[512], name[TSRNN_FREQ_NAME_MAX];
    tsrnn_freq_name(&expected, name, sizeof(name));
    if (fill != NULL)
        snprintf(remedy, sizeof(remedy),
                 "if %s are missing, set [data] fill_missing_dates = true to insert them at %s %s "
                 "and [data] fill_missing_values = interpolate to fill their values (Darts: "
                 "fill_missing_dates=True, then MissingValuesFiller())",
                 what, integer ? "step" : "freq", name);
    else
        snprintf(
            remedy, sizeof(remedy),
            "no frequency seen in the column keeps every stamp; if you know the series' "
            "frequency, set [data] freq = %s with [data] fill_missing_dates = true "
            "(Darts: fill_missing_dates=True, freq=...)",
            integer
                ? "STEP (an integer)"
                : "ALIAS (pandas' offset aliases: D, B, W-SUN, MS, ME, QS, YS, h, min, s, ...)");

    size_t i =
        expected.kind == TSRNN_FREQ_NONE ? L : tsrnn_freq_first_break(&expected, s->times, L);
    int64_t next;
    if (i == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: time column '%s': the first stamp '%s' is not on freq %s, "
                           "which the stamps after it follow: the stamps keep to no one "
                           "frequency, and Darts refuses them (\"the frequency could not be "
                           "directly inferred\"); %s",
                           ld->file.path, ld->time_line[0], s->time_name, ld->time_text[0], name,
                           remedy);
    if (i < L && tsrnn_freq_advance(&expected, s->times[i - 1], 1, &next)) {
        char expect[64];
        format_stamp(s, &expected, next, expect, sizeof(expect));
        if (integer)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: time column '%s': %s follows %s (line %zu), but at "
                               "step %s the next index is %s: the index does not step evenly, "
                               "and Darts refuses it (\"Found non-unique step sizes\"); %s",
                               ld->file.path, ld->time_line[i], s->time_name, ld->time_text[i],
                               ld->time_text[i - 1], ld->time_line[i - 1], name, expect, remedy);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: time column '%s': '%s' follows '%s' (line %zu), but at freq "
                           "%s the next stamp is '%s': the stamps keep to no one frequency, "
                           "and Darts refuses them (\"the frequency could not be directly "
                           "inferred\"); %s",
                           ld->file.path, ld->time_line[i], s->time_name, ld->time_text[i],
                           ld->time_text[i - 1], ld->time_line[i - 1], name, expect, remedy);
    }
    /* No three consecutive stamps follow a frequency tsrnn knows (the caller has three). */
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s:%zu: time column '%s': no frequency fits its stamps, not even three "
                       "consecutive ones ('%s', '%s', '%s' on lines %zu to %zu), so Darts refuses "
                       "it (\"the frequency could not be directly inferred\"); %s",
                       ld->file.path, ld->time_line[0], s->time_name, ld->time_text[0],
                       ld->time_text[1], ld->time_text[L > 2 ? 2 : L - 1], ld->time_line[0],
                       ld->time_line[L > 2 ? 2 : L - 1], remedy);
}

static enum tsrnn_status off_grid(const struct loader *ld, const struct tsrnn_series *s,
                                  const struct tsrnn_freq *f, size_t bad, const char *source)
{
    char name[TSRNN_FREQ_NAME_MAX];
    tsrnn_freq_name(f, name, sizeof(name));
    if (bad == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: time column '%s': '%s' is not a stamp of freq %s (%s), so "
                           "Darts cannot index the series at it (\"Not all input time stamps "
                           "contained\"); accepted: a freq that every stamp of the column is on",
                           ld->file.path, ld->time_line[0], s->time_name, ld->time_text[0], name,
                           source);
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s:%zu: time column '%s': '%s' is not on freq %s (%s) counted from '%s' "
                       "(line %zu), so Darts cannot index the series at it (\"Not all input time "
                       "stamps contained\"); accepted: a freq that every stamp of the column is on",
                       ld->file.path, ld->time_line[bad], s->time_name, ld->time_text[bad], name,
                       source, ld->time_text[0], ld->time_line[0]);
}

/* The series on the grid of `f` from its first to its last stamp: rows move to their points,
 * the points between them are inserted dates whose values are missing (Darts'
 * _restore_from_frequency). */
static enum tsrnn_status insert_dates(struct loader *ld, struct tsrnn_series *s,
                                      const struct tsrnn_freq *f, size_t points)
{
    enum tsrnn_status status = TSRNN_OK;
    size_t C = s->component_count, L = s->length;
    int64_t *times = malloc(points * sizeof(*times));
    double *values = malloc(points * C * sizeof(*values));
    ld->position = malloc(L * sizeof(*ld->position)); /* the loader's: freed with it */
    if (times == NULL || values == NULL || ld->position == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory inserting %zu missing dates into %s",
                             points - L, ld->file.path);
        goto out;
    }
    for (size_t j = 0; j < points; j++) {
        /* On the grid up to the last stamp, so no step can fail. */
        if (!tsrnn_freq_advance(f, s->times[0], (int64_t)j, &times[j]))
            times[j] = s->times[0];
        for (size_t c = 0; c < C; c++)
            values[j * C + c] = NAN;
    }
    for (size_t i = 0; i < L; i++) {
        int64_t k = 0;
        tsrnn_freq_steps(f, s->times[0], s->times[i], &k);
        ld->position[i] = (size_t)k;
        memcpy(&values[(size_t)k * C], &ld->values[i * C], C * sizeof(double));
    }
    for (size_t i = 0, j = 0; j < points; j++) {
        if (i < L && ld->position[i] == j) {
            i++;
            continue;
        }
        if (s->inserted_count < TSRNN_SERIES_INSERTED_NOTED)
            s->inserted_times[s->inserted_count] = times[j];
        s->inserted_count++;
    }
    free(s->times);
    free(ld->values);
    s->times = times; /* the series' and the loader's now */
    ld->values = values;
    times = NULL;
    values = NULL;
    s->length = points;
out:
    free(times);
    free(values);
    return status;
}

static enum tsrnn_status make_regular(struct loader *ld, struct tsrnn_series *s)
{
    const struct tsrnn_series_options *o = ld->options;
    bool integer = s->time_unit == TSRNN_TIME_INDEX;
    size_t L = s->length;
    struct tsrnn_freq f = o->freq;
    const char *source = "inferred";
    /* A message about [data] freq starts where it was set (or at the file) and names it; one
     * about the file names the setting and where it was set. */
    const char *origin = o->freq_origin != NULL ? o->freq_origin : ld->file.path;
    char key[64], setting[TSRNN_ORIGIN_MAX + 64];
    snprintf(key, sizeof(key), "[data] freq = %s", o->freq_text ? o->freq_text : "");
    snprintf(setting, sizeof(setting), "%s%s%s%s", key, o->freq_origin ? " (" : "",
             o->freq_origin ? o->freq_origin : "", o->freq_origin ? ")" : "");

    ld->row_count = L;
    if (ld->time_idx < 0) {
        s->freq = (struct tsrnn_freq){ .kind = TSRNN_FREQ_STEP, .n = 1 };
        if (f.kind != TSRNN_FREQ_NONE && !tsrnn_freq_equal(&f, &s->freq))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: %s, but %s has no time column ([data] time_col), so its "
                               "index is 0, 1, 2, ... with the step 1; accepted: freq not set, "
                               "or 1",
                               origin, key, ld->file.path);
        return TSRNN_OK;
    }
    if (L == 0)
        return TSRNN_OK; /* no point, no frequency: the dataset says what is too short */
    for (size_t t = 1; integer && t < L; t++) {
        int64_t step;
        if (__builtin_sub_overflow(s->times[t], s->times[t - 1], &step))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: time column '%s': the step from %s (line %zu) to %s is "
                               "beyond the 64-bit integers; accepted: indexes whose steps fit",
                               ld->file.path, ld->time_line[t], s->time_name, ld->time_text[t - 1],
                               ld->time_line[t - 1], ld->time_text[t]);
    }
    if (f.kind != TSRNN_FREQ_NONE && (f.kind == TSRNN_FREQ_STEP) != integer)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: %s, but the time column '%s' of %s holds %s; accepted: %s", origin,
                           key, s->time_name, ld->file.path, integer ? "integers" : "time stamps",
                           integer ? "an integer step like 1"
                                   : "a pandas offset alias like D, B, W-SUN, MS, ME, QS, YS, h, "
                                     "min, s");
    if (f.kind != TSRNN_FREQ_NONE) {
        source = setting;
    } else if (!tsrnn_freq_infer(&f, s->times, L, integer)) {
        size_t needed = integer ? 2 : 3;
        if (L < needed) {
            f = o->short_series_freq;
            source = "the model's";
            if (f.kind == TSRNN_FREQ_NONE || (f.kind == TSRNN_FREQ_STEP) != integer)
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s: time column '%s' has %zu %s, but its frequency is "
                                   "inferred from at least %zu (as %s does); set [data] freq "
                                   "to the series' frequency (a pandas offset alias such as MS, "
                                   "or an integer index's step)",
                                   ld->file.path, s->time_name, L,
                                   L == 1 ? (integer ? "index" : "stamp")
                                          : (integer ? "indexes" : "stamps"),
                                   needed, integer ? "Darts" : "pandas");
        } else {
            struct observation obs = { .distinct = 0 };
            obs.distinct =
                tsrnn_freq_observe(obs.freqs, obs.counts, OBSERVED_MAX, s->times, L, integer);
            bool found = fill_frequency(&obs, s->times, L, &f);
            if (!o->fill_missing_dates)
                return irregular(ld, s, &obs, found ? &f : NULL);
            if (!found) {
                char seen[512];
                list_observed(&obs, seen, sizeof(seen));
                /* Darts' words for each case of _fill_missing_dates(). */
                const char *darts = obs.distinct == 0 ? "Could not observe an inferred frequency"
                                    : obs.distinct == 1
                                        ? "Not all input time stamps contained"
                                        : "Could not find a unique inferred frequency";
                return tsrnn_error(
                    TSRNN_ERR_DATA,
                    "%s: time column '%s': [data] fill_missing_dates = true (%s) inserts the "
                    "dates missing from one frequency, but none keeps every stamp: %s%s (Darts: "
                    "\"%s\"); set [data] freq to the series' frequency",
                    ld->file.path, s->time_name,
                    o->fill_dates_origin ? o->fill_dates_origin : "set",
                    obs.distinct ? "three consecutive stamps show "
                                 : "no three consecutive stamps show a frequency",
                    seen, darts);
            }
            source = "inferred for fill_missing_dates";
        }
    }

    size_t bad;
    int64_t points;
    if (!on_grid(&f, s->times, L, &bad, &points))
        return off_grid(ld, s, &f, bad, source);
    int64_t points_max = SERIES_VALUES_MAX / (int64_t)(s->component_count ? s->component_count : 1);
    if (points > points_max) {
        char name[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&f, name, sizeof(name));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: time column '%s' from '%s' to '%s' at freq %s (%s) makes %" PRId64
                           " points; at most %" PRId64 " are supported with %zu value column(s) "
                           "(check the frequency)",
                           ld->file.path, s->time_name, ld->time_text[0], ld->time_text[L - 1],
                           name, source, points, points_max, s->component_count);
    }
    s->freq = f;
    if (tsrnn_freq_unit(&f) > s->time_unit)
        s->time_unit = tsrnn_freq_unit(&f);
    if ((size_t)points == L)
        return TSRNN_OK;
    return insert_dates(ld, s, &f, (size_t)points);
}

/* --- missing values --------------------------------------------------------------------- */

/* The row of the file at point `j` of the series, or the row before the inserted date `j`. */
static size_t row_at_or_before(const struct loader *ld, size_t j)
{
    size_t i = 0;
    while (ld->position != NULL && i + 1 < ld->row_count && ld->position[i + 1] <= j)
        i++;
    return ld->position != NULL ? i : j;
}

static enum tsrnn_status refuse_missing(const struct loader *ld, const struct tsrnn_series *s)
{
    static const char remedy[] = "set [data] fill_missing_values = interpolate to fill missing "
                                 "values by linear interpolation (Darts: MissingValuesFiller()), "
                                 "or fill them in the file";
    size_t first_inserted = s->length;
    for (size_t i = 0, j = 0; ld->position != NULL && j < s->length; j++) {
        if (i < ld->row_count && ld->position[i] == j) {
            i++;
            continue;
        }
        first_inserted = j;
        break;
    }
    size_t missing_point = s->length;
    if (ld->any_missing)
        missing_point = ld->position ? ld->position[ld->missing_row] : ld->missing_row;
    if (missing_point <= first_inserted) {
        const char *name = s->component_names[ld->missing_component];
        if (ld->missing_text[0] == '\0')
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu:%zu: column '%s': empty value, a missing value; %s",
                               ld->file.path, ld->missing_line, ld->missing_column, name, remedy);
        return tsrnn_error(TSRNN_ERR_DATA, "%s:%zu:%zu: column '%s': '%s' is a missing value; %s",
                           ld->file.path, ld->missing_line, ld->missing_column, name,
                           ld->missing_text, remedy);
    }
    size_t row = row_at_or_before(ld, first_inserted);
    char stamp[64];
    tsrnn_time_format(s->times[first_inserted], s->time_unit, stamp, sizeof(stamp));
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s: time column '%s': '%s', a missing date inserted between lines %zu "
                       "and %zu, has no values; %s",
                       ld->file.path, s->time_name, stamp, ld->time_line[row],
                       ld->time_line[row + 1 < ld->row_count ? row + 1 : row], remedy);
}

/* Fills or refuses the missing values, then rounds the values to float32. */
static enum tsrnn_status fill_values(struct loader *ld, struct tsrnn_series *s)
{
    size_t C = s->component_count, count = s->length * C;
    bool missing = false;
    for (size_t i = 0; i < count && !missing; i++)
        missing = isnan(ld->values[i]);
    if (missing && ld->options->fill_missing_values == TSRNN_FILL_MISSING_NONE)
        return refuse_missing(ld, s);
    if (missing) {
        size_t c = tsrnn_fill_interpolate(ld->values, s->length, C, &s->filled_count);
        if (c < C)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: column '%s' has no value at all, so interpolation has "
                               "nothing to fill its missing values from",
                               ld->file.path, s->component_names[c]);
    }
    s->values = malloc((count ? count : 1) * sizeof(float));
    if (s->values == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    for (size_t i = 0; i < count; i++)
        s->values[i] = (float)ld->values[i];
    return TSRNN_OK;
}

enum tsrnn_status data_make_series(struct loader *ld, struct tsrnn_series *series)
{
    TSRNN_TRY(parse_times(ld, series));
    TSRNN_TRY(make_regular(ld, series));
    return fill_values(ld, series);
}

void tsrnn_series_finish(struct tsrnn_series *series)
{
    if (series == NULL)
        return;
    free(series->values);
    free(series->times);
    free(series->component_names);
    free(series->covariates);
    memset(series, 0, sizeof(*series));
}

enum tsrnn_status tsrnn_series_load_csv(struct tsrnn_series *series, const char *path,
                                        const char *time_col,
                                        const char (*value_cols)[TSRNN_NAME_MAX],
                                        size_t value_col_count,
                                        const struct tsrnn_series_options *options)
{
    static const struct tsrnn_series_options defaults = { .fill_missing_dates = false };
    struct loader ld = { .file = { .path = path }, .options = options ? options : &defaults };
    memset(series, 0, sizeof(*series));

    enum tsrnn_status status = data_read_table(&ld, time_col, value_cols, value_col_count, series);
    if (status != TSRNN_OK)
        goto out;
    status = data_make_series(&ld, series);
out:
    data_loader_free(&ld, true);
    if (status != TSRNN_OK)
        tsrnn_series_finish(series);
    return status;
}

char (*data_join_columns(const char (*value_cols)[TSRNN_NAME_MAX], size_t C,
                         const char (*covariate_cols)[TSRNN_NAME_MAX], size_t Kc))[TSRNN_NAME_MAX]
{
    char(*all)[TSRNN_NAME_MAX] = malloc((C + Kc) * sizeof(*all));
    if (all == NULL) {
        tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu column names", C + Kc);
        return NULL;
    }
    memcpy(all, value_cols, C * sizeof(*all));
    memcpy(all + C, covariate_cols, Kc * sizeof(*all));
    return all;
}

enum tsrnn_status data_split_covariates(struct tsrnn_series *series, size_t C, size_t Kc)
{
    size_t L = series->length;
    series->covariates = malloc((L > 0 ? L : 1) * Kc * sizeof(float));
    if (series->covariates == NULL) {
        tsrnn_series_finish(series);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu x %zu covariates", L, Kc);
    }
    /* (L, C + Kc) -> values (L, C) in place, covariates (L, Kc). */
    for (size_t t = 0; t < L; t++) {
        memcpy(series->covariates + t * Kc, series->values + t * (C + Kc) + C, Kc * sizeof(float));
        memmove(series->values + t * C, series->values + t * (C + Kc), C * sizeof(float));
    }
    series->component_count = C;
    series->covariate_count = Kc;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_series_load_csv_covariates(struct tsrnn_series *series, const char *path,
                                                   const char *time_col,
                                                   const char (*value_cols)[TSRNN_NAME_MAX],
                                                   size_t value_col_count,
                                                   const char (*covariate_cols)[TSRNN_NAME_MAX],
                                                   size_t covariate_col_count,
                                                   const struct tsrnn_series_options *options)
{
    size_t C = value_col_count, Kc = covariate_col_count;
    char(*all)[TSRNN_NAME_MAX] = data_join_columns(value_cols, C, covariate_cols, Kc);
    if (all == NULL)
        return TSRNN_ERR_NOMEM;
    struct tsrnn_series_options labelled = options ? *options : (struct tsrnn_series_options){ 0 };
    labelled.target_col_count = C;
    enum tsrnn_status status = tsrnn_series_load_csv(
        series, path, time_col, (const char(*)[TSRNN_NAME_MAX])all, C + Kc, &labelled);
    free(all);
    if (status != TSRNN_OK)
        return status;
    return data_split_covariates(series, C, Kc);
}
