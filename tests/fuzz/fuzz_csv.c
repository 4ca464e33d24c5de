/* Fuzz target: the CSV reader, as the dataset loads a series (tsrnn_series_load_csv()), or
 * the series of a long-format file (tsrnn_series_load_groups()).
 *
 * Input: the CSV file, then optionally FUZZ_SEPARATOR and the arguments (fuzz.h): the
 * time_col, [data] freq (one that tsrnn_freq_parse() refuses the config refuses too, so it
 * stands for none here: inferred), the fill options (a 'd' in it: fill_missing_dates; a 'v':
 * fill_missing_values = interpolate; a 'g': a long-format file whose id_col is the first of
 * the columns that follow), then up to 64 value_cols, each cut to a column name's size as the
 * config does. Without arguments: no time column, every column a value.
 *
 * Checks: a refused file is TSRNN_ERR_DATA (or _USAGE: a [data] key the file contradicts)
 * with a message and no series; an accepted one has the columns asked for (or at least one),
 * strictly increasing times on one frequency (the one asked for, if any and if there is a
 * row), finite values, and dates inserted or values filled only when asked to; a long-format
 * file's series each so, with distinct non-empty ids. */
#include "fuzz.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/data.h"

#define FIRST_VALUE_COL 3 /* args: time_col, freq, fill options, value_cols... */

static char value_cols[TSRNN_MAX_COMPONENTS][TSRNN_NAME_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

static void check_accepted(const struct tsrnn_series *s, const char *time_col,
                           size_t value_col_count, const struct tsrnn_series_options *o)
{
    FUZZ_CHECK(s->component_count >= 1, "no component");
    if (value_col_count > 0) {
        FUZZ_CHECK(s->component_count == value_col_count, "%zu components for %zu value_cols",
                   s->component_count, value_col_count);
        for (size_t c = 0; c < value_col_count; c++)
            FUZZ_CHECK(strcmp(s->component_names[c], value_cols[c]) == 0,
                       "component %zu is '%s', asked for '%s'", c, s->component_names[c],
                       value_cols[c]);
    }
    FUZZ_CHECK(strcmp(s->time_name, time_col) == 0, "time column '%s', asked for '%s'",
               s->time_name, time_col);
    for (size_t t = 1; t < s->length; t++)
        FUZZ_CHECK(s->times[t] > s->times[t - 1], "times[%zu] = %lld after %lld", t,
                   (long long)s->times[t], (long long)s->times[t - 1]);
    if (s->freq.kind != TSRNN_FREQ_NONE)
        FUZZ_CHECK(tsrnn_freq_first_break(&s->freq, s->times, s->length) == s->length,
                   "times off their frequency at %zu",
                   tsrnn_freq_first_break(&s->freq, s->times, s->length));
    /* An empty series has no frequency, asked for or not: the dataset refuses it as short. */
    if (time_col[0] != '\0' && o->freq.kind != TSRNN_FREQ_NONE && s->length > 0) {
        char have[TSRNN_FREQ_NAME_MAX], want[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&s->freq, have, sizeof(have));
        tsrnn_freq_name(&o->freq, want, sizeof(want));
        FUZZ_CHECK(tsrnn_freq_equal(&s->freq, &o->freq), "frequency %s, asked for %s", have, want);
    }
    for (size_t i = 0; i < s->length * s->component_count; i++)
        FUZZ_CHECK(isfinite(s->values[i]), "values[%zu] = %g", i, (double)s->values[i]);
    FUZZ_CHECK(s->inserted_count == 0 || o->fill_missing_dates || o->freq.kind != TSRNN_FREQ_NONE,
               "%zu dates inserted unasked", s->inserted_count);
    FUZZ_CHECK(s->filled_count == 0 || o->fill_missing_values == TSRNN_FILL_MISSING_INTERPOLATE,
               "%zu values filled unasked", s->filled_count);
}

/* A long-format file: id_col is value_cols[0], the value columns the rest. */
static void load_groups(const char *path, const char *time_col, size_t value_col_count,
                        const struct tsrnn_series_options *options)
{
    struct tsrnn_series *series;
    char(*ids)[TSRNN_NAME_MAX];
    size_t count;
    enum tsrnn_status status = tsrnn_series_load_groups(
        &series, &ids, &count, path, value_cols[0], time_col,
        (const char(*)[TSRNN_NAME_MAX])value_cols + 1, value_col_count, options);
    if (status != TSRNN_OK) {
        FUZZ_CHECK(status == TSRNN_ERR_DATA || status == TSRNN_ERR_USAGE, "status %s",
                   tsrnn_status_name(status));
        FUZZ_CHECK(tsrnn_last_error()[0] != '\0', "a refusal without a message");
        FUZZ_CHECK(series == NULL && ids == NULL && count == 0, "a refused file left series");
        return;
    }
    FUZZ_CHECK(count >= 1, "no series");
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(ids[i][0] != '\0', "series %zu has an empty id", i);
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(ids[i], ids[j]) != 0, "series %zu and %zu are both '%s'", j, i,
                       ids[i]);
        /* check_accepted() compares the components with value_cols[0 ..): here they start at
         * value_cols[1]. */
        memmove(value_cols[0], value_cols[1], value_col_count * sizeof(value_cols[0]));
        check_accepted(&series[i], time_col, value_col_count, options);
        memmove(value_cols[1], value_cols[0], value_col_count * sizeof(value_cols[0]));
        tsrnn_series_finish(&series[i]);
    }
    free(series);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *args[FIRST_VALUE_COL + TSRNN_MAX_COMPONENTS];
    size_t file_nbytes;
    size_t arg_count =
        fuzz_split(data, size, &file_nbytes, args, FIRST_VALUE_COL + TSRNN_MAX_COMPONENTS);
    const char *path = fuzz_write("series.csv", data, file_nbytes);
    char time_col[TSRNN_NAME_MAX];
    snprintf(time_col, sizeof(time_col), "%s", arg_count > 0 ? args[0] : "");
    struct tsrnn_series_options options = { 0 };
    if (arg_count > 1 && tsrnn_freq_parse(&options.freq, args[1]))
        options.freq_text = args[1];
    else
        options.freq.kind = TSRNN_FREQ_NONE;
    if (arg_count > 2) {
        options.fill_missing_dates = strchr(args[2], 'd') != NULL;
        if (strchr(args[2], 'v') != NULL)
            options.fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE;
    }
    size_t value_col_count = arg_count > FIRST_VALUE_COL ? arg_count - FIRST_VALUE_COL : 0;
    for (size_t c = 0; c < value_col_count; c++)
        snprintf(value_cols[c], TSRNN_NAME_MAX, "%s", args[FIRST_VALUE_COL + c]);

    if (arg_count > 2 && strchr(args[2], 'g') != NULL && value_col_count > 0) {
        load_groups(path, time_col, value_col_count - 1, &options);
        fuzz_args_free(args, arg_count);
        return 0;
    }
    struct tsrnn_series s;
    enum tsrnn_status status = tsrnn_series_load_csv(
        &s, path, time_col, (const char(*)[TSRNN_NAME_MAX])value_cols, value_col_count, &options);
    if (status == TSRNN_OK) {
        check_accepted(&s, time_col, value_col_count, &options);
        tsrnn_series_finish(&s);
    } else {
        FUZZ_CHECK(status == TSRNN_ERR_DATA || status == TSRNN_ERR_USAGE, "status %s",
                   tsrnn_status_name(status));
        FUZZ_CHECK(tsrnn_last_error()[0] != '\0', "a refusal without a message");
        FUZZ_CHECK(s.values == NULL && s.times == NULL, "a refused file left a series");
    }
    fuzz_args_free(args, arg_count);
    return 0;
}
