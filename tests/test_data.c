/* Data pipeline: time stamps, CSV series, the AirPassengers split, scaler and windows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/config.h"
#include "tsrnn/data.h"

static char *example_ini(void)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/examples/air_passengers.ini", tu_env("TSRNN_SOURCE_ROOT"));
    return path;
}

static void format_at(const struct tsrnn_series *s, size_t t, char *out)
{
    tsrnn_time_format(s->times[t], s->time_unit, out, 64);
}

static void test_time_parse_and_format(void **state)
{
    (void)state;
    int64_t sec, sec2;
    enum tsrnn_time_unit unit;
    char buf[64];

    assert_true(tsrnn_time_parse("1970-01-01", &sec, &unit));
    assert_int_equal(sec, 0);
    assert_int_equal(unit, TSRNN_TIME_DAY);
    assert_true(tsrnn_time_parse("1959-01", &sec, &unit));
    assert_int_equal(unit, TSRNN_TIME_MONTH);
    assert_int_equal(sec, -347155200); /* pd.Timestamp("1959-01-01").value // 10**9 */
    assert_true(tsrnn_time_parse("19590101", &sec2, &unit));
    assert_int_equal(sec2, sec);
    assert_true(tsrnn_time_parse("1959", &sec2, &unit));
    assert_int_equal(unit, TSRNN_TIME_YEAR);
    assert_int_equal(sec2, sec);
    assert_true(tsrnn_time_parse("2000-02-29 23:59:58", &sec, &unit));
    assert_int_equal(unit, TSRNN_TIME_SECOND);
    assert_int_equal(sec, 951868798);
    tsrnn_time_format(sec, unit, buf, sizeof(buf));
    assert_string_equal(buf, "2000-02-29 23:59:58");
    assert_true(tsrnn_time_parse("2024-03-10T04:05", &sec, &unit));
    assert_int_equal(unit, TSRNN_TIME_MINUTE);
    tsrnn_time_format(sec, unit, buf, sizeof(buf));
    assert_string_equal(buf, "2024-03-10 04:05");
    assert_true(tsrnn_time_parse("1900-03-01", &sec, &unit));
    assert_int_equal(sec, -2203891200);
    tsrnn_time_format(sec, TSRNN_TIME_DAY, buf, sizeof(buf));
    assert_string_equal(buf, "1900-03-01");

    const char *bad[] = { "1959-13", "1959-02-29",       "1900-02-29", "1959-1",
                          "59-01",   "1959-01-01 25:00", "1959/01/01", "abc",
                          "",        "1959-01-01 10",    "1959-01x" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(tsrnn_time_parse(bad[i], &sec, &unit));
}

/* The stamps after a series, as pandas' inferred frequency continues them. */
static void check_continue(const char *const *stamps, size_t count, size_t n, const char *freq,
                           const char *const *expect)
{
    int64_t times[16], out;
    enum tsrnn_time_unit unit = TSRNN_TIME_INDEX, u;
    struct tsrnn_freq f;
    char name[TSRNN_FREQ_NAME_MAX];
    for (size_t i = 0; i < count; i++) {
        assert_true(tsrnn_time_parse(stamps[i], &times[i], &u));
        unit = u > unit ? u : unit;
    }
    assert_true(tsrnn_freq_infer(&f, times, count, false));
    tsrnn_freq_name(&f, name, sizeof(name));
    assert_string_equal(name, freq);
    for (size_t i = 0; i < n; i++) {
        char text[64];
        assert_true(tsrnn_freq_advance(&f, times[count - 1], (int64_t)i + 1, &out));
        tsrnn_time_format(out, unit, text, sizeof(text));
        assert_string_equal(text, expect[i]);
    }
}

static void test_time_continue(void **state)
{
    (void)state;
    /* Monthly (MS), across a year end. */
    check_continue((const char *[]){ "1960-10", "1960-11", "1960-12" }, 3, 3, "MS",
                   (const char *[]){ "1961-01", "1961-02", "1961-03" });
    /* Month ends (ME) keep to the month's last day, February of a leap year included. */
    check_continue((const char *[]){ "2023-11-30", "2023-12-31", "2024-01-31" }, 3, 3, "ME",
                   (const char *[]){ "2024-02-29", "2024-03-31", "2024-04-30" });
    /* Quarterly and yearly stamps step by 3 and 12 calendar months. */
    check_continue((const char *[]){ "2020-01-01", "2020-04-01", "2020-07-01" }, 3, 2, "QS-JAN",
                   (const char *[]){ "2020-10-01", "2021-01-01" });
    check_continue((const char *[]){ "1990-01", "1991-01", "1992-01" }, 3, 2, "YS-JAN",
                   (const char *[]){ "1993-01", "1994-01" });
    /* Daily and hourly. */
    check_continue((const char *[]){ "2024-02-26", "2024-02-27", "2024-02-28" }, 3, 2, "D",
                   (const char *[]){ "2024-02-29", "2024-03-01" });
    check_continue((const char *[]){ "2024-12-31 21:00", "2024-12-31 22:00", "2024-12-31 23:00" },
                   3, 2, "h", (const char *[]){ "2025-01-01 00:00", "2025-01-01 01:00" });
    /* Weekly stamps that happen to start months are still weekly. */
    check_continue((const char *[]){ "2024-06-24", "2024-07-01", "2024-07-08" }, 3, 1, "W-MON",
                   (const char *[]){ "2024-07-15" });
    /* An integer index keeps its step. */
    int64_t index[] = { 10, 15, 20 }, out;
    struct tsrnn_freq f;
    assert_true(tsrnn_freq_infer(&f, index, 3, true));
    assert_true(tsrnn_freq_advance(&f, index[2], 2, &out));
    assert_int_equal(out, 30);
}

/* --- frequencies against pandas: tests/fixtures/freq_cases.txt ------------------------ */

/* Splits `line` at " | " into at most `capacity` fields, in place; returns the count. */
static size_t split_fields(char *line, char **fields, size_t capacity)
{
    size_t count = 0;
    char *p = line;
    while (count < capacity) {
        fields[count++] = p;
        char *bar = strstr(p, " | ");
        if (bar == NULL)
            break;
        *bar = '\0';
        p = bar + 3;
    }
    return count;
}

/* Parses "YYYY-MM-DD HH:MM:SS,..." (or integers) into times[]; returns the count. */
static size_t parse_list(char *text, int64_t *times, size_t capacity, bool integers)
{
    size_t count = 0;
    for (char *item = strtok(text, ","); item != NULL; item = strtok(NULL, ",")) {
        enum tsrnn_time_unit unit;
        assert_true(count < capacity);
        if (integers)
            assert_true(tsrnn_parse_int64(item, &times[count]));
        else
            assert_true(tsrnn_time_parse(item, &times[count], &unit));
        count++;
    }
    return count;
}

/* pandas names that tsrnn refuses on purpose (docs/data.md): units below a second, offsets
 * it does not step, counts below 1, and the spellings pandas 3 only still tolerates. */
static bool refused_on_purpose(const char *alias)
{
    static const char *const refused[] = { "ms",       "us", "ns",  "bh", "C",     "SMS",
                                           "WOM-1MON", "0D", "-1D", "d",  "W-sun", "1.5h" };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (strcmp(alias, refused[i]) == 0)
            return true;
    return false;
}

static void check_alias(char **f, size_t n)
{
    struct tsrnn_freq freq;
    char name[TSRNN_FREQ_NAME_MAX];
    assert_int_equal(n, 2);
    bool ok = tsrnn_freq_parse(&freq, f[0]);
    if (strcmp(f[1], "ERR") == 0 || refused_on_purpose(f[0])) {
        if (ok)
            fail_msg("alias '%s': pandas says %s, tsrnn should refuse it", f[0], f[1]);
        printf("# alias %-10s pandas %-10s tsrnn refused\n", f[0], f[1]);
        return;
    }
    if (!ok)
        fail_msg("alias '%s': pandas reads %s, tsrnn does not", f[0], f[1]);
    tsrnn_freq_name(&freq, name, sizeof(name));
    if (strcmp(name, f[1]) != 0)
        fail_msg("alias '%s': pandas names it %s, tsrnn %s", f[0], f[1], name);
    /* The name reads back as the same frequency. */
    struct tsrnn_freq again;
    assert_true(tsrnn_freq_parse(&again, name));
    assert_true(tsrnn_freq_equal(&freq, &again));
    printf("# alias %-10s pandas %-10s tsrnn %s\n", f[0], f[1], name);
}

static void check_infer(char **f, size_t n, int64_t *times, size_t capacity)
{
    struct tsrnn_freq freq;
    char name[TSRNN_FREQ_NAME_MAX];
    assert_int_equal(n, 4);
    size_t count = parse_list(f[3], times, capacity, false);
    bool ok = tsrnn_freq_infer(&freq, times, count, false);
    tsrnn_freq_name(&freq, name, sizeof(name));
    /* pandas' name, where the stamps follow it (Darts can set it) and tsrnn has the offset. */
    const char *expect = f[1];
    if (strcmp(f[2], "yes") != 0 || strncmp(f[1], "WOM-", 4) == 0 || strcmp(f[1], "bh") == 0)
        expect = "None";
    if (strcmp(expect, "None") == 0 ? ok : !ok || strcmp(name, expect) != 0)
        fail_msg("infer %s: pandas %s (follows: %s), tsrnn %s", f[0], f[1], f[2],
                 ok ? name : "None");
    printf("# infer %-36s pandas %-8s follows %-3s tsrnn %s\n", f[0], f[1], f[2],
           ok ? name : "None");
    if (ok)
        assert_int_equal(tsrnn_freq_first_break(&freq, times, count), count);
}

static void check_index(char **f, size_t n, int64_t *times, size_t capacity)
{
    struct tsrnn_freq freq;
    char name[TSRNN_FREQ_NAME_MAX];
    assert_int_equal(n, 3);
    size_t count = parse_list(f[2], times, capacity, true);
    bool ok = tsrnn_freq_infer(&freq, times, count, true);
    tsrnn_freq_name(&freq, name, sizeof(name));
    if (strcmp(f[1], "None") == 0 ? ok : !ok || strcmp(name, f[1]) != 0)
        fail_msg("index %s: Darts' step %s, tsrnn %s", f[0], f[1], ok ? name : "None");
    printf("# index %-36s Darts  %-8s tsrnn %s\n", f[0], f[1], ok ? name : "None");
}

static void check_next(char **f, size_t n, int64_t *times, size_t capacity)
{
    struct tsrnn_freq freq;
    int64_t start, steps;
    enum tsrnn_time_unit unit;
    assert_int_equal(n, 5);
    assert_true(tsrnn_freq_parse(&freq, f[1]));
    assert_true(tsrnn_time_parse(f[3], &start, &unit));
    assert_true(tsrnn_freq_on(&freq, start));
    size_t count = parse_list(f[4], times, capacity, false);
    assert_int_equal(count, (size_t)atoi(f[2]));
    for (size_t k = 1; k <= count; k++) {
        int64_t out;
        char have[64], want[64];
        assert_true(tsrnn_freq_advance(&freq, start, (int64_t)k, &out));
        tsrnn_time_format(out, TSRNN_TIME_SECOND, have, sizeof(have));
        tsrnn_time_format(times[k - 1], TSRNN_TIME_SECOND, want, sizeof(want));
        if (out != times[k - 1])
            fail_msg("next %s: step %zu is %s, pandas' date_range says %s", f[0], k, have, want);
        assert_true(tsrnn_freq_on(&freq, out));
        assert_true(tsrnn_freq_steps(&freq, start, out, &steps));
        assert_int_equal(steps, k);
        /* One step at a time gets there too. */
        int64_t previous = k == 1 ? start : times[k - 2];
        assert_true(tsrnn_freq_advance(&freq, previous, 1, &out));
        assert_true(out == times[k - 1]);
    }
    printf("# next  %-36s %zu stamps as pandas' date_range\n", f[0], count);
}

/* Darts' observations for fill_missing_dates (one triple of each pair of steps) are among
 * tsrnn's (every three consecutive stamps). */
static void check_observed(char **f, const int64_t *times, size_t count)
{
    struct tsrnn_freq seen[8];
    size_t counts[8];
    size_t distinct = tsrnn_freq_observe(seen, counts, 8, times, count, false);
    assert_true(distinct <= 8);
    char darts[256];
    snprintf(darts, sizeof(darts), "%s", f[2]);
    for (char *name = strtok(darts, ","); name != NULL && strcmp(name, "-") != 0;
         name = strtok(NULL, ",")) {
        bool found = false;
        for (size_t j = 0; j < distinct; j++) {
            char have[TSRNN_FREQ_NAME_MAX];
            tsrnn_freq_name(&seen[j], have, sizeof(have));
            found |= strcmp(have, name) == 0;
        }
        if (!found)
            fail_msg("fill %s: Darts observes %s, tsrnn does not", f[0], name);
    }
    if (strcmp(f[2], "-") == 0)
        assert_int_equal(distinct, 0);
    printf("# fill  %-36s Darts observes %s, so does tsrnn\n", f[0], f[2]);
}

/* fill_missing_dates = true without freq, through the CSV reader. */
static void check_fill(char **f, const int64_t *times, size_t count, const char *dir)
{
    size_t used = 0;
    static char text[1 << 16];
    used += (size_t)snprintf(text, sizeof(text), "t,v\n");
    for (size_t i = 0; i < count; i++) {
        char stamp[64];
        tsrnn_time_format(times[i], TSRNN_TIME_SECOND, stamp, sizeof(stamp));
        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s,%zu\n", stamp, i);
    }
    const char *path = tu_write(dir, "fill.csv", text);
    struct tsrnn_series_options options = { .fill_missing_dates = true,
                                            .fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE };
    struct tsrnn_series s;
    enum tsrnn_status status = tsrnn_series_load_csv(&s, path, "t", NULL, 0, &options);
    char name[TSRNN_FREQ_NAME_MAX] = "ERR";
    size_t points = 0;
    if (status == TSRNN_OK) {
        tsrnn_freq_name(&s.freq, name, sizeof(name));
        points = s.length;
        assert_int_equal(s.inserted_count, points - count);
        tsrnn_series_finish(&s);
    }
    char have[64];
    snprintf(have, sizeof(have), status == TSRNN_OK ? "%s %zu" : "%s", name, points);
    if (strcmp(have, f[3]) != 0)
        fail_msg("fill %s: expected %s (Darts: %s), tsrnn: %s (%s)", f[0], f[3], f[1], have,
                 status == TSRNN_OK ? "" : tsrnn_last_error());
    /* Where Darts finds its one frequency, tsrnn finds the same. */
    if (strcmp(f[1], "ERR") != 0)
        assert_string_equal(name, f[1]);
    printf("# fill  %-36s Darts  %-8s (sees %s) tsrnn %s\n", f[0], f[1], f[2], have);
}

static void check_interp(char **f, size_t n)
{
    double values[128], expect[128];
    size_t count = 0, filled;
    assert_int_equal(n, 3);
    for (char *item = strtok(f[1], ","); item != NULL; item = strtok(NULL, ","))
        values[count++] = strcmp(item, "nan") == 0 ? NAN : strtod(item, NULL);
    size_t i = 0;
    for (char *item = strtok(f[2], ","); item != NULL; item = strtok(NULL, ","))
        expect[i++] = strtod(item, NULL);
    assert_int_equal(i, count);
    assert_int_equal(tsrnn_fill_interpolate(values, count, 1, &filled), 1);
    for (i = 0; i < count; i++)
        if (memcmp(&values[i], &expect[i], sizeof(double)) != 0)
            fail_msg("interp %s: value %zu is %.17g, pandas %.17g", f[0], i, values[i], expect[i]);
    printf("# interp %-35s %zu filled, bit for bit as pandas\n", f[0], filled);
}

static void test_freq_against_pandas(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/fixtures/freq_cases.txt", tu_env("TSRNN_SOURCE_ROOT"));
    char *text = tu_read(path);
    assert_non_null(text);
    char *dir = tu_mkdtemp();
    static int64_t times[1024];
    size_t cases[6] = { 0 };
    static const char *const kinds[] = {
        "alias ", "infer ", "index ", "next ", "fill ", "interp "
    };
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        size_t kind = 0;
        while (kind < 6 && strncmp(line, kinds[kind], strlen(kinds[kind])) != 0)
            kind++;
        assert_true(kind < 6);
        char *fields[8] = { NULL };
        size_t n = split_fields(line + strlen(kinds[kind]), fields, 8);
        size_t capacity = sizeof(times) / sizeof(times[0]), count;
        switch (kind) {
        case 0:
            check_alias(fields, n);
            break;
        case 1:
            check_infer(fields, n, times, capacity);
            break;
        case 2:
            check_index(fields, n, times, capacity);
            break;
        case 3:
            check_next(fields, n, times, capacity);
            break;
        case 4:
            assert_int_equal(n, 5);
            count = parse_list(fields[4], times, capacity, false);
            check_observed(fields, times, count);
            check_fill(fields, times, count, dir);
            break;
        default:
            check_interp(fields, n);
        }
        cases[kind]++;
    }
    /* The file has every kind of case (a truncated fixture must not pass). */
    assert_true(cases[0] >= 60 && cases[1] >= 45 && cases[2] >= 6 && cases[3] >= 30 &&
                cases[4] >= 10 && cases[5] >= 4);
    free(text);
    tu_rmtree(dir);
    free(dir);
}

static void test_air_passengers_series(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/data/air_passengers.csv",
             tu_env("TSRNN_SOURCE_ROOT"));
    char cols[1][TSRNN_NAME_MAX] = { "#Passengers" };
    struct tsrnn_series s;
    assert_int_equal(tsrnn_series_load_csv(&s, path, "Month", cols, 1, NULL), TSRNN_OK);
    assert_int_equal(s.length, 144);
    assert_int_equal(s.component_count, 1);
    assert_int_equal(s.time_unit, TSRNN_TIME_MONTH);
    assert_string_equal(s.component_names[0], "#Passengers");
    assert_true(s.values[0] == 112.0f);
    assert_true(s.values[143] == 432.0f);
    double sum = 0;
    for (size_t t = 0; t < s.length; t++)
        sum += s.values[t];
    assert_true(sum == 40363.0);
    char buf[64];
    format_at(&s, 0, buf);
    assert_string_equal(buf, "1949-01");
    format_at(&s, 143, buf);
    assert_string_equal(buf, "1960-12");
    tsrnn_series_finish(&s);
    tsrnn_series_finish(&s); /* finish twice is harmless */
}

static void test_air_passengers_dataset(void **state)
{
    (void)state;
    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    struct tsrnn_dataset ds;
    char buf[64];
    assert_int_equal(tsrnn_config_load(cfg, example_ini(), NULL, 0), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_OK);

    /* Darts: split_after(1959-01-01) keeps 1959-01 in the training part. */
    assert_int_equal(ds.items[0].train_length, 121);
    assert_int_equal(ds.items[0].val_length, 23);
    format_at(&ds.items[0].series, ds.items[0].train_length - 1, buf);
    assert_string_equal(buf, "1959-01");
    format_at(&ds.items[0].series, ds.items[0].train_length, buf);
    assert_string_equal(buf, "1959-02");

    /* L - T samples per part */
    assert_int_equal(ds.train.count, 101);
    assert_int_equal(ds.val.count, 3);

    /* MinMax fitted on the training part: min 104 (1949-11), max 505 (1958-08). */
    assert_true(ds.items[0].scaler.data_min[0] == 104.0f);
    assert_true(ds.items[0].scaler.data_max[0] == 505.0f);
    assert_true(ds.items[0].scaler.scale[0] == 1.0f / 401.0f);
    assert_true(ds.items[0].scaler.offset[0] == 0.0f - 104.0f * (1.0f / 401.0f));
    assert_true(ds.items[0].scaled[10] == 0.0f); /* the minimum, 1949-11 */
    /* first val point 342 -> (342-104)/401 = 0.5935..., computed in float32 as sklearn */
    float first_val = ds.items[0].scaled[121];
    assert_float_equal(first_val, 0.59351621f, 1e-7);
    /* full-series max 622 (1960-07) is beyond the fitted range: 1.2918 */
    assert_float_equal(ds.items[0].scaled[138], 1.29177057f, 1e-6);

    /* Train sample 0 (most recent): input 1957-05..1958-12, target 1957-06..1959-01. */
    size_t s0 = tsrnn_windows_start(&ds.items[0].train, 0);
    format_at(&ds.items[0].series, s0, buf);
    assert_string_equal(buf, "1957-05");
    format_at(&ds.items[0].series, s0 + 19, buf);
    assert_string_equal(buf, "1958-12");
    /* Last train sample: input 1949-01..1950-08, target 1949-02..1950-09. */
    assert_int_equal(tsrnn_windows_start(&ds.items[0].train, 100), 0);

    size_t idx[2] = { 0, 100 };
    float input[2 * 20], target[2 * 20];
    tsrnn_windows_gather(&ds.items[0].train, idx, 2, input, target);
    for (size_t t = 0; t < 20; t++) {
        assert_true(input[t] == ds.items[0].scaled[100 + t]);
        assert_true(target[t] == ds.items[0].scaled[101 + t]);
        assert_true(input[20 + t] == ds.items[0].scaled[t]);
        assert_true(target[20 + t] == ds.items[0].scaled[1 + t]);
    }
    assert_true(target[19] == ds.items[0].scaled[120]); /* 1959-01 = 360 */
    assert_float_equal(target[19] * 401.0f + 104.0f, 360.0f, 1e-3);
    assert_true(input[20] == ds.items[0].scaled[0]); /* 1949-01 = 112 */

    /* Validation windows come from the 23 validation points alone. */
    size_t v0 = tsrnn_windows_start(&ds.items[0].val, 0);
    assert_int_equal(v0, 2);
    format_at(&ds.items[0].series, ds.items[0].train_length + v0, buf);
    assert_string_equal(buf, "1959-04");
    size_t vidx[1] = { 2 };
    tsrnn_windows_gather(&ds.items[0].val, vidx, 1, input, target);
    assert_true(input[0] == ds.items[0].scaled[121]);
    assert_true(target[19] == ds.items[0].scaled[121 + 20]);

    tsrnn_dataset_finish(&ds);
    free(cfg);
}

static void test_scaler_round_trip(void **state)
{
    (void)state;
    /* two components, one constant (zero range counts as 1) */
    float values[] = { 3, 7, -1, 7, 5, 7, 2.5f, 7 };
    float copy[8];
    struct tsrnn_scaler sc;
    tsrnn_scaler_fit(&sc, values, 4, 2);
    assert_true(sc.data_min[0] == -1.0f && sc.data_max[0] == 5.0f);
    assert_true(sc.data_min[1] == 7.0f && sc.data_max[1] == 7.0f);
    assert_true(sc.scale[1] == 1.0f);
    memcpy(copy, values, sizeof(copy));
    tsrnn_scaler_transform(&sc, copy, 4);
    assert_float_equal(copy[0], 4.0f / 6.0f, 1e-7);
    assert_true(copy[2] == 0.0f);
    assert_float_equal(copy[4], 1.0f, 1e-7);
    for (int t = 0; t < 4; t++)
        assert_true(copy[2 * t + 1] == 0.0f);
    tsrnn_scaler_inverse(&sc, copy, 4);
    for (int i = 0; i < 8; i++)
        assert_float_equal(copy[i], values[i], 1e-6);

    /* AirPassengers: every value comes back within float32 rounding (relative 1e-6). */
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/data/air_passengers.csv",
             tu_env("TSRNN_SOURCE_ROOT"));
    struct tsrnn_series s;
    assert_int_equal(tsrnn_series_load_csv(&s, path, "Month", NULL, 0, NULL), TSRNN_OK);
    float *x = malloc(s.length * sizeof(float));
    memcpy(x, s.values, s.length * sizeof(float));
    tsrnn_scaler_fit(&sc, s.values, 121, 1);
    tsrnn_scaler_transform(&sc, x, s.length);
    tsrnn_scaler_inverse(&sc, x, s.length);
    for (size_t t = 0; t < s.length; t++)
        assert_float_equal(x[t], s.values[t], 1e-6 * s.values[t]);
    free(x);
    tsrnn_series_finish(&s);
}

static void test_csv_bom_crlf_quotes(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const char *path = tu_write(dir, "s.csv",
                                "\xEF\xBB\xBF"
                                "\"Month\",\"a,b\",c\r\n"
                                "2001-01,1.5,\"-2\"\r\n"
                                "\r\n"
                                "2001-02, 2.5 ,3e1\r\n"
                                "2001-03,\"4\",16\r\n");
    struct tsrnn_series s;
    assert_int_equal(tsrnn_series_load_csv(&s, path, "Month", NULL, 0, NULL), TSRNN_OK);
    assert_int_equal(s.length, 3);
    assert_int_equal(s.component_count, 2);
    assert_string_equal(s.time_name, "Month");
    assert_string_equal(s.component_names[0], "a,b");
    assert_string_equal(s.component_names[1], "c");
    float expected[] = { 1.5f, -2, 2.5f, 30, 4, 16 };
    assert_memory_equal(s.values, expected, sizeof(expected));
    tsrnn_series_finish(&s);

    /* no time column: index 0..L-1; an integer time column stays an integer index */
    path = tu_write(dir, "i.csv", "step,v\n10,1\n12,2\n14,3\n");
    assert_int_equal(tsrnn_series_load_csv(&s, path, "step", NULL, 0, NULL), TSRNN_OK);
    assert_int_equal(s.time_unit, TSRNN_TIME_INDEX);
    assert_int_equal(s.times[2], 14);
    assert_int_equal(s.freq.kind, TSRNN_FREQ_STEP);
    assert_int_equal(s.freq.n, 2);
    tsrnn_series_finish(&s);
    char only_v[1][TSRNN_NAME_MAX] = { "v" };
    assert_int_equal(tsrnn_series_load_csv(&s, path, "", only_v, 1, NULL), TSRNN_OK);
    assert_int_equal(s.times[2], 2);
    tsrnn_series_finish(&s);
    tu_rmtree(dir);
    free(dir);
}

/* A file of `rows` rows "t,v,note" whose byte `at` starts the UTF-8 sequence `seq` (in a
 * note; the rest ASCII), or holds it whole when it is a single bad byte. */
static char *file_with_sequence_at(size_t at, const char *seq, size_t *rows)
{
    size_t capacity = at + 4096, used = 0;
    char *text = malloc(capacity);
    assert_non_null(text);
    used += (size_t)snprintf(text, capacity, "t,v,note\n");
    size_t r = 0;
    while (used + 64 < at) /* rows of about 40 bytes up to the sequence's row */
        used +=
            (size_t)snprintf(text + used, capacity - used, "%zu,%zu,plain ascii note\n", r, r % 7),
            r++;
    used += (size_t)snprintf(text + used, capacity - used, "%zu,1,", r++);
    while (used < at)
        text[used++] = 'x';
    used += (size_t)snprintf(text + used, capacity - used, "%s tail\n%zu,2,end\n", seq, r++);
    *rows = r;
    return text;
}

/* The reader checks the file piece by piece as it reads it (1 MiB at a time): a character
 * cut by a piece's end is whole UTF-8 and accepted, a bad byte there is refused with its line
 * and column. */
static void test_csv_read_in_pieces(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char only_v[1][TSRNN_NAME_MAX] = { "v" };
    static const char *const sequences[] = { "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80" };
    for (size_t boundary = (1u << 20) - 3; boundary <= (1u << 20); boundary++)
        for (size_t i = 0; i < 3; i++) {
            size_t rows;
            char *text = file_with_sequence_at(boundary, sequences[i], &rows);
            const char *path = tu_write(dir, "p.csv", text);
            free(text);
            struct tsrnn_series series;
            if (tsrnn_series_load_csv(&series, path, "t", only_v, 1, NULL) != TSRNN_OK)
                fail_msg("sequence %zu at %zu: %s", i, boundary, tsrnn_last_error());
            assert_int_equal(series.length, rows);
            tsrnn_series_finish(&series);
        }
    size_t rows;
    char *text = file_with_sequence_at((1u << 20) - 1, "\xC3(", &rows);
    const char *path = tu_write(dir, "p.csv", text);
    size_t line = 1, column = 1;
    for (size_t i = 0; i < (1u << 20) - 1; i++, column++)
        if (text[i] == '\n')
            line++, column = 0;
    free(text);
    struct tsrnn_series series;
    assert_int_equal(tsrnn_series_load_csv(&series, path, "t", only_v, 1, NULL), TSRNN_ERR_DATA);
    char want[64];
    snprintf(want, sizeof(want), "p.csv:%zu:%zu: byte \\xc3 is not UTF-8", line, column);
    tu_expect_in(tsrnn_last_error(), want);
    tu_rmtree(dir);
    free(dir);
}

struct csv_case {
    const char *text;
    const char *expect[3];
};

static void test_csv_errors(void **state)
{
    (void)state;
    static const struct csv_case cases[] = {
        { "Month,v\n2001-01,1\n2001-02,\n2001-03,3\n",
          { "s.csv:3:9:", "column 'v'", "empty value, a missing value" } },
        { "Month,v\n2001-01,1\n2001-02,abc\n", { "s.csv:3:9:", "'abc' is not a number" } },
        { "Month,v\n2001-01,nan\n2001-02,1\n2001-03,3\n",
          { "s.csv:2:9:", "'nan' is a missing value", "fill_missing_values = interpolate" } },
        { "Month,v\n2001-01,NAN\n", { "s.csv:2:9:", "'NAN' is not a number" } },
        { "Month,v\n2001-01,-inf\n", { "s.csv:2:9:", "'-inf'", "not a finite" } },
        { "Month,v\n2001-01,1e39\n", { "s.csv:2:9:", "'1e39'", "float32" } },
        { "Month,v\n2001-01,1\n2001-01,2\n", { "s.csv:3:1:", "'2001-01' repeats", "line 2" } },
        { "Month,v\n2001-02,1\n2001-01,2\n",
          { "s.csv:3:1:", "comes before", "strictly increase" } },
        { "Month,v\n2001-01,1\n2001-02,2,3\n", { "s.csv:3:", "3 fields", "header has 2" } },
        { "Month,v\n2001-01,1\n2001-02\n", { "s.csv:3:", "1 fields", "header has 2" } },
        { "Month,v\n2001-13,1\n", { "s.csv:2:1:", "'2001-13' is not a time stamp", "YYYY-MM" } },
        { "Month,v\n2001-01,\"1\n", { "s.csv:2:9:", "unterminated quoted field" } },
        { "Month,v,v\n2001-01,1,2\n", { "s.csv:1:9:", "duplicate column name 'v'" } },
        { "", { "s.csv", "empty" } },
        /* pandas reads hexadecimal as text, and UTF-8 only */
        { "Month,v\n2001-01,0x10\n", { "s.csv:2:9:", "'0x10' is not a number" } },
        { "Month,v\n2001-01,0x1p3\n", { "s.csv:2:9:", "'0x1p3' is not a number" } },
        { "Month,caf\xe9\n2001-01,1\n", { "s.csv:1:10:", "byte \\xe9 is not UTF-8" } },
    };
    char *dir = tu_mkdtemp();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *path = tu_write(dir, "s.csv", cases[i].text);
        struct tsrnn_series s;
        enum tsrnn_status status = tsrnn_series_load_csv(&s, path, "Month", NULL, 0, NULL);
        if (status != TSRNN_ERR_DATA)
            fail_msg("case %zu: status %d, message '%s'", i, status, tsrnn_last_error());
        for (size_t k = 0; k < 3 && cases[i].expect[k]; k++)
            if (strstr(tsrnn_last_error(), cases[i].expect[k]) == NULL)
                fail_msg("case %zu: '%s' not in '%s'", i, cases[i].expect[k], tsrnn_last_error());
        assert_null(s.values); /* nothing half-loaded */
    }

    /* A NUL byte ended the field early ("13<NUL>5" read as 13); a FIFO blocked (or, with a
     * writer, read as empty); /dev/zero never ended. */
    static const char nul_text[] = "Month,v\n2001-01,13\0"
                                   "5\n";
    const char *nul_path = tu_path(dir, "nul.csv");
    FILE *out = fopen(nul_path, "wb");
    fwrite(nul_text, 1, sizeof(nul_text) - 1, out);
    fclose(out);
    struct tsrnn_series bad;
    assert_int_equal(tsrnn_series_load_csv(&bad, nul_path, "Month", NULL, 0, NULL), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "nul.csv:2:11: a NUL byte");
    const char *fifo = tu_path(dir, "fifo.csv");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(tsrnn_series_load_csv(&bad, fifo, "Month", NULL, 0, NULL), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "fifo.csv is not a regular file (a FIFO)");
    assert_int_equal(tsrnn_series_load_csv(&bad, "/dev/zero", "Month", NULL, 0, NULL),
                     TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "/dev/zero is not a regular file (a character device)");

    /* missing columns name the config entry and list what the file has */
    const char *path = tu_write(dir, "s.csv", "Month,#Passengers\n2001-01,1\n");
    struct tsrnn_series s;
    assert_int_equal(tsrnn_series_load_csv(&s, path, "Date", NULL, 0, NULL), TSRNN_ERR_DATA);
    assert_non_null(strstr(tsrnn_last_error(), "s.csv:1: no column 'Date' ([data] time_col)"));
    assert_non_null(strstr(tsrnn_last_error(), "it has: 'Month', '#Passengers'"));
    char cols[1][TSRNN_NAME_MAX] = { "Passengers" };
    assert_int_equal(tsrnn_series_load_csv(&s, path, "Month", cols, 1, NULL), TSRNN_ERR_DATA);
    assert_non_null(strstr(tsrnn_last_error(), "no column 'Passengers' ([data] value_cols)"));
    tu_rmtree(dir);
    free(dir);
}

/* Loads `text` as dir/s.csv with time column "t" (or none) and `options`; returns the
 * status, leaving the series loaded when it is TSRNN_OK. */
static enum tsrnn_status load_text(struct tsrnn_series *s, const char *dir, const char *text,
                                   const char *time_col, const struct tsrnn_series_options *o)
{
    const char *path = tu_write(dir, "s.csv", text);
    return tsrnn_series_load_csv(s, path, time_col, NULL, 0, o);
}

static void expect_error(enum tsrnn_status got, enum tsrnn_status want, const char *const *needles)
{
    if (got != want)
        fail_msg("status %d, expected %d: %s", got, want, tsrnn_last_error());
    for (size_t i = 0; needles[i] != NULL; i++)
        if (strstr(tsrnn_last_error(), needles[i]) == NULL)
            fail_msg("'%s' not in '%s'", needles[i], tsrnn_last_error());
}

/* The example: AirPassengers without 1955-06, as Darts reads it. */
static void test_gap_in_air_passengers(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/data/air_passengers.csv",
             tu_env("TSRNN_SOURCE_ROOT"));
    char *text = tu_read(path);
    assert_non_null(text);
    char *june = strstr(text, "1955-06,");
    assert_non_null(june);
    char *end = strchr(june, '\n') + 1;
    memmove(june, end, strlen(end) + 1);
    char *dir = tu_mkdtemp();
    struct tsrnn_series s;

    /* Darts: "The time index is missing the `freq` attribute, and the frequency could not be
     * directly inferred." tsrnn says where: 1955-05 is line 78, 1955-07 line 79. */
    expect_error(load_text(&s, dir, text, "Month", NULL), TSRNN_ERR_DATA,
                 (const char *[]){ "s.csv:79: time column 'Month': '1955-07' follows '1955-05' "
                                   "(line 78), but at freq MS the next stamp is '1955-06'",
                                   "fill_missing_dates = true", "fill_missing_values = interpolate",
                                   NULL });
    printf("# %s\n", tsrnn_last_error());
    /* The dates alone: the inserted month has no value. */
    struct tsrnn_series_options o = { .fill_missing_dates = true };
    expect_error(load_text(&s, dir, text, "Month", &o), TSRNN_ERR_DATA,
                 (const char *[]){ "'1955-06', a missing date inserted between lines 78 and 79, "
                                   "has no values",
                                   "fill_missing_values = interpolate", NULL });
    printf("# %s\n", tsrnn_last_error());
    /* Darts: fill_missing_dates=True, freq=None infers MS and inserts 1955-06 as NaN; then
     * MissingValuesFiller() interpolates 270, 317, 364. */
    o.fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE;
    assert_int_equal(load_text(&s, dir, text, "Month", &o), TSRNN_OK);
    assert_int_equal(s.length, 144);
    assert_int_equal(s.freq.kind, TSRNN_FREQ_MONTH);
    assert_int_equal(s.inserted_count, 1);
    assert_int_equal(s.filled_count, 1);
    char buf[64];
    tsrnn_time_format(s.inserted_times[0], s.time_unit, buf, sizeof(buf));
    assert_string_equal(buf, "1955-06");
    format_at(&s, 77, buf);
    assert_string_equal(buf, "1955-06");
    assert_true(s.values[76] == 270.0f && s.values[77] == 317.0f && s.values[78] == 364.0f);
    tsrnn_series_finish(&s);
    /* freq = MS names the frequency and inserts the same date, fill_missing_dates or not. */
    struct tsrnn_series_options named = { .fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE };
    assert_true(tsrnn_freq_parse(&named.freq, "MS"));
    assert_int_equal(load_text(&s, dir, text, "Month", &named), TSRNN_OK);
    assert_int_equal(s.length, 144);
    assert_true(s.values[77] == 317.0f);
    tsrnn_series_finish(&s);
    free(text);
    tu_rmtree(dir);
    free(dir);
}

static void test_time_index_rules(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_series s;
    struct tsrnn_series_options fill = { .fill_missing_dates = true,
                                         .fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE };
    const char *weekly = "t,v\n2024-01-07,1\n2024-01-14,2\n2024-01-21,3\n2024-01-28,4\n";

    /* freq set to a frequency the stamps are not on */
    struct tsrnn_series_options named = { .freq_text = "W-MON", .freq_origin = "run.ini:6" };
    assert_true(tsrnn_freq_parse(&named.freq, "W-MON"));
    expect_error(load_text(&s, dir, weekly, "t", &named), TSRNN_ERR_DATA,
                 (const char *[]){ "s.csv:2: time column 't': '2024-01-07' is not a stamp of freq "
                                   "W-MON ([data] freq = W-MON (run.ini:6))",
                                   NULL });
    /* a finer freq inserts dates: 22 days, 18 of them inserted and interpolated */
    named = (struct tsrnn_series_options){ .fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE };
    assert_true(tsrnn_freq_parse(&named.freq, "D"));
    assert_int_equal(load_text(&s, dir, weekly, "t", &named), TSRNN_OK);
    assert_int_equal(s.length, 22);
    assert_int_equal(s.inserted_count, 18);
    assert_true(s.values[1] == (float)(1.0 + 1.0 / 7.0));
    tsrnn_series_finish(&s);
    /* the kind of freq must fit the column */
    assert_true(tsrnn_freq_parse(&named.freq, "5"));
    expect_error(load_text(&s, dir, weekly, "t", &named), TSRNN_ERR_USAGE,
                 (const char *[]){ "holds time stamps", "accepted: a pandas offset alias", NULL });
    assert_true(tsrnn_freq_parse(&named.freq, "MS"));
    expect_error(load_text(&s, dir, "t,v\n1,1\n2,2\n3,3\n", "t", &named), TSRNN_ERR_USAGE,
                 (const char *[]){ "holds integers", "an integer step like 1", NULL });
    expect_error(load_text(&s, dir, "v\n1\n2\n3\n", "", &named), TSRNN_ERR_USAGE,
                 (const char *[]){ "has no time column", "accepted: freq not set, or 1", NULL });
    assert_true(tsrnn_freq_parse(&named.freq, "1"));
    assert_int_equal(load_text(&s, dir, "v\n1\n2\n3\n", "", &named), TSRNN_OK);
    tsrnn_series_finish(&s);

    /* an integer index that does not step evenly; Darts: "Found non-unique step sizes" */
    const char *index = "t,v\n10,1\n11,2\n13,4\n14,5\n";
    expect_error(
        load_text(&s, dir, index, "t", NULL), TSRNN_ERR_DATA,
        (const char *[]){ "s.csv:4: time column 't': 13 follows 11 (line 3), but at step 1 the "
                          "next index is 12",
                          "fill_missing_dates = true to insert them at step 1", NULL });
    assert_int_equal(load_text(&s, dir, index, "t", &fill), TSRNN_OK);
    assert_int_equal(s.length, 5);
    assert_true(s.times[2] == 12 && s.values[2] == 3.0f);
    tsrnn_series_finish(&s);

    /* business days without a Wednesday: the break is named at freq B, and filled at B
     * (where Darts sees both "D" and "B" and gives up) */
    const char *bdays = "t,v\n2024-01-04,1\n2024-01-05,2\n2024-01-08,3\n2024-01-09,4\n"
                        "2024-01-11,6\n2024-01-12,7\n";
    expect_error(load_text(&s, dir, bdays, "t", NULL), TSRNN_ERR_DATA,
                 (const char *[]){ "s.csv:6:",
                                   "'2024-01-11' follows '2024-01-09' (line 5), but at "
                                   "freq B the next stamp is '2024-01-10'",
                                   NULL });
    assert_int_equal(load_text(&s, dir, bdays, "t", &fill), TSRNN_OK);
    assert_int_equal(s.length, 7);
    assert_true(s.values[4] == 5.0f);
    tsrnn_series_finish(&s);

    /* a stamp off the grid of the others: where it is, and no fill can help */
    const char *fifteenth = "t,v\n2020-01-01,1\n2020-02-01,2\n2020-03-15,3\n2020-04-01,4\n"
                            "2020-05-01,5\n2020-06-01,6\n2020-07-01,7\n";
    expect_error(load_text(&s, dir, fifteenth, "t", NULL), TSRNN_ERR_DATA,
                 (const char *[]){ "s.csv:4:",
                                   "'2020-03-15' follows '2020-02-01' (line 3), "
                                   "but at freq MS the next stamp is '2020-03-01'",
                                   "no frequency seen in the column keeps every stamp", NULL });
    expect_error(load_text(&s, dir, fifteenth, "t", &fill), TSRNN_ERR_DATA,
                 (const char *[]){ "fill_missing_dates = true", "none keeps every stamp",
                                   "three consecutive stamps show MS (2 times)", NULL });
    /* nothing regular at all */
    expect_error(
        load_text(&s, dir, "t,v\n2020-01-01,1\n2020-01-03,2\n2020-01-08,3\n", "t", NULL),
        TSRNN_ERR_DATA,
        (const char *[]){ "no frequency fits its stamps, not even three consecutive ones", NULL });
    /* too few stamps to infer from; a checkpoint's frequency serves (tsrnn-predict) */
    const char *two = "t,v\n2020-01-01,1\n2020-02-01,2\n";
    expect_error(load_text(&s, dir, two, "t", NULL), TSRNN_ERR_DATA,
                 (const char *[]){ "has 2 stamps", "at least 3 (as pandas does)", NULL });
    struct tsrnn_series_options model = { .short_series_freq = { .kind = TSRNN_FREQ_MONTH,
                                                                 .n = 1 } };
    assert_int_equal(load_text(&s, dir, two, "t", &model), TSRNN_OK);
    assert_int_equal(s.freq.kind, TSRNN_FREQ_MONTH);
    tsrnn_series_finish(&s);

    /* missing values: pandas' NA texts (and only those) */
    const char *holes = "t,v,w\n1,NA,1\n2,2,null\n3,,3\n4,N/A,4\n5,5,#N/A\n";
    expect_error(load_text(&s, dir, holes, "t", NULL), TSRNN_ERR_DATA,
                 (const char *[]){ "s.csv:2:3: column 'v': 'NA' is a missing value", NULL });
    assert_int_equal(load_text(&s, dir, holes, "t", &fill), TSRNN_OK);
    float expected[] = { 2, 1, 2, 2, 3, 3, 4, 4, 5, 4 };
    assert_memory_equal(s.values, expected, sizeof(expected));
    assert_int_equal(s.filled_count, 5);
    assert_int_equal(s.inserted_count, 0);
    tsrnn_series_finish(&s);
    expect_error(load_text(&s, dir, "t,v,w\n1,1,\n2,2,NaN\n3,3,nan\n", "t", &fill), TSRNN_ERR_DATA,
                 (const char *[]){ "column 'w' has no value at all", NULL });
    /* interpolated in double from the text, then rounded to float32 once */
    assert_int_equal(load_text(&s, dir, "t,v\n1,0.1\n2,\n3,\n4,0.7\n", "t", &fill), TSRNN_OK);
    assert_true(s.values[1] == (float)0.3 && s.values[2] == (float)0.5);
    tsrnn_series_finish(&s);

    /* integer indexes near the int64 limits: a step beyond them is refused with its line, a
     * step to the very last one is fine, and no step goes past it */
    expect_error(
        load_text(&s, dir, "t,v\n-9223372036854775808,1\n0,2\n9223372036854775807,3\n", "t", NULL),
        TSRNN_ERR_DATA,
        (const char *[]){ "s.csv:3: time column 't': the step from -9223372036854775808 "
                          "(line 2) to 0 is beyond the 64-bit integers",
                          NULL });
    assert_int_equal(load_text(&s, dir,
                               "t,v\n9223372036854775805,1\n9223372036854775806,2\n"
                               "9223372036854775807,3\n",
                               "t", NULL),
                     TSRNN_OK);
    int64_t next;
    assert_false(tsrnn_freq_advance(&s.freq, s.times[2], 1, &next));
    assert_true(tsrnn_freq_advance(&s.freq, s.times[0], 2, &next) && next == INT64_MAX);
    tsrnn_series_finish(&s);
    /* filling an index from its smallest to its largest value would never end */
    assert_true(tsrnn_freq_parse(&named.freq, "1"));
    expect_error(load_text(&s, dir, "t,v\n0,1\n1,2\n9000000000000000000,3\n", "t", &named),
                 TSRNN_ERR_DATA,
                 (const char *[]){ "makes 9000000000000000001 points; at most 100000000", NULL });
    /* stamps stay within the years tsrnn writes */
    struct tsrnn_freq monthly = { .kind = TSRNN_FREQ_MONTH, .n = 1 };
    int64_t december;
    enum tsrnn_time_unit unit;
    assert_true(tsrnn_time_parse("9999-12", &december, &unit));
    assert_false(tsrnn_freq_advance(&monthly, december, 1, &next));
    assert_true(tsrnn_freq_advance(&monthly, december, 0, &next) && next == december);
    struct tsrnn_freq huge = { .kind = TSRNN_FREQ_DAY, .n = INT64_MAX / 2 };
    assert_false(tsrnn_freq_advance(&huge, 0, 3, &next));
    tu_rmtree(dir);
    free(dir);
}

static void test_split_rules(void **state)
{
    (void)state;
    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    struct tsrnn_dataset ds;
    const char *base = example_ini();

    /* val_fraction: the last floor(144 * 0.16) = 23 points */
    const char *frac[] = { "data.split_after=", "data.val_fraction=0.16" };
    assert_int_equal(tsrnn_config_load(cfg, base, frac, 2), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_OK);
    assert_int_equal(ds.items[0].train_length, 121);
    assert_int_equal(ds.items[0].val_length, 23);
    tsrnn_dataset_finish(&ds);

    /* a stamp between points keeps every point up to it; YYYYMMDD as pd.Timestamp */
    const char *mid[] = { "data.split_after=19590115" };
    assert_int_equal(tsrnn_config_load(cfg, base, mid, 1), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_OK);
    assert_int_equal(ds.items[0].train_length, 121);
    tsrnn_dataset_finish(&ds);

    /* no split: everything trains, no validation */
    const char *none[] = { "data.split_after=" };
    assert_int_equal(tsrnn_config_load(cfg, base, none, 1), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_OK);
    assert_int_equal(ds.train.count, 124);
    assert_int_equal(ds.val.count, 0);
    tsrnn_dataset_finish(&ds);

    /* Finite values whose range float32 cannot hold: every forecast was -inf, with exit 0. */
    char *dir = tu_mkdtemp();
    char text[4096] = "t,v\n";
    for (int i = 0; i < 60; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%d,%s\n", i,
                 i % 2 ? "3e38" : "-3e38");
    char data_path[PATH_MAX + 32],
        *huge_sets[4] = { data_path, "data.time_col=t", "data.value_cols=v", "data.split_after=" };
    snprintf(data_path, sizeof(data_path), "data.path=%s", tu_write(dir, "huge.csv", text));
    assert_int_equal(tsrnn_config_load(cfg, base, (const char *const *)huge_sets, 4), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "column 'v' spans -3e+38 .. 3e+38 in the training part");
    tu_rmtree(dir);
    free(dir);

    /* a split with too short a validation part, or outside the series */
    const char *late[] = { "data.split_after=1959-06" };
    assert_int_equal(tsrnn_config_load(cfg, base, late, 1), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_ERR_DATA);
    assert_non_null(strstr(tsrnn_last_error(), "validation part has 18 points"));
    assert_non_null(strstr(tsrnn_last_error(), "needs at least 21"));
    const char *after[] = { "data.split_after=1961-01" };
    assert_int_equal(tsrnn_config_load(cfg, base, after, 1), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_ERR_USAGE);
    assert_non_null(strstr(tsrnn_last_error(), "--set data.split_after=1961-01"));
    assert_non_null(strstr(tsrnn_last_error(), "no validation points"));
    const char *garbage[] = { "data.split_after=soon" };
    assert_int_equal(tsrnn_config_load(cfg, base, garbage, 1), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_ERR_USAGE);
    assert_non_null(strstr(tsrnn_last_error(), "'soon': not a time stamp"));

    /* fewer rows than training_length + 1 */
    const char *long_t[] = { "model.training_length=144", "data.split_after=" };
    assert_int_equal(tsrnn_config_load(cfg, base, long_t, 2), TSRNN_OK);
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_ERR_DATA);
    assert_non_null(strstr(tsrnn_last_error(), "series has 144 points"));
    assert_non_null(strstr(tsrnn_last_error(), "needs at least 145"));
    free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_parse_and_format),  cmocka_unit_test(test_time_continue),
        cmocka_unit_test(test_freq_against_pandas),    cmocka_unit_test(test_air_passengers_series),
        cmocka_unit_test(test_air_passengers_dataset), cmocka_unit_test(test_scaler_round_trip),
        cmocka_unit_test(test_csv_bom_crlf_quotes),    cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_csv_read_in_pieces),     cmocka_unit_test(test_split_rules),
        cmocka_unit_test(test_gap_in_air_passengers),  cmocka_unit_test(test_time_index_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
