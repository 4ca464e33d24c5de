/* tsrnn-predict --backtest against real Darts 0.48.1 (scripts/gen-backtest-fixtures.py): the
 * same LSTM weights (Darts-trained, imported with init_weights and max_steps = 0) and the same
 * scaler on AirPassengers; Darts' historical_forecasts(retrain=False) and backtest() with
 * forecast_horizon 12, start as a date and as a fraction, stride 1 and 3, last_points_only
 * True and False. Every forecast value, every per-forecast score and the backtest values
 * within 1e-5 relative; then the defaults, the files, and the refusals. Then a global LSTM on
 * three series (Darts' backtest of a list: a value per series, and their mean). */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/forecast.h"
#include "tsrnn/plot.h"

static struct tu_result result;
static char run[PATH_MAX], global_run[PATH_MAX];

/* The global model's run: the three series of tests/fixtures/bt_global/ as Darts' list. */
static int train_global(void)
{
    char init[PATH_MAX + 32], path[3 * PATH_MAX + 32];
    snprintf(init, sizeof(init), "model.init_weights=%s",
             tu_source("tests/fixtures/bt_global_weights.safetensors"));
    int n =
        snprintf(path, sizeof(path), "data.path=%s", tu_source("tests/fixtures/bt_global/a.csv"));
    n += snprintf(path + n, sizeof(path) - (size_t)n, ",%s",
                  tu_source("tests/fixtures/bt_global/b.csv"));
    snprintf(path + n, sizeof(path) - (size_t)n, ",%s",
             tu_source("tests/fixtures/bt_global/c.csv"));
    const char *sets[] = { path,
                           "data.time_col=month",
                           "data.value_cols=v",
                           "data.split_after=1993-06",
                           "model.model=LSTM",
                           "model.hidden_dim=8",
                           "model.training_length=8",
                           "model.input_chunk_length=5",
                           init,
                           "training.max_steps=0",
                           "--quiet",
                           NULL };
    snprintf(global_run, sizeof(global_run), "%s/global", tu_run_dir());
    return tu_train(&result, "global", sets, 60);
}

static int group_setup(void **state)
{
    assert_int_equal(tu_setup_run_dir(state), 0);
    char init[PATH_MAX + 32];
    snprintf(init, sizeof(init), "model.init_weights=%s",
             tu_source("tests/fixtures/bt_lstm_weights.safetensors"));
    const char *sets[] = { "model.model=LSTM", init, "training.max_steps=0", "--quiet", NULL };
    snprintf(run, sizeof(run), "%s/bt", tu_run_dir());
    if (tu_train(&result, "bt", sets, 60) != 0 || train_global() != 0) {
        fprintf(stderr, "%s", result.err);
        return -1;
    }
    return 0;
}

static int predict(const char *const *args)
{
    const char *argv[32] = { tu_env("TSRNN_PREDICT") };
    size_t n = 1;
    for (size_t i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    assert_int_equal(tu_run(argv, 60, &result), 0);
    return result.exit_code;
}

/* Splits `line` at commas in place (the fixtures' fields are never quoted). */
static size_t split(char *line, char **fields, size_t capacity)
{
    size_t n = 0;
    for (char *save, *f = strtok_r(line, ",", &save); f != NULL && n < capacity;
         f = strtok_r(NULL, ",", &save))
        fields[n++] = f;
    return n;
}

/* Two CSVs with the same header and rows: text fields equal, numbers within 1e-5 relative to
 * max(|Darts' value|, floor) (NaN only against NaN). Returns the worst such difference. */
static double compare_csv(const char *ours_path, const char *darts_path, double floor)
{
    char *ours = tu_read(ours_path), *darts = tu_read(darts_path);
    if (ours == NULL || darts == NULL)
        fail_msg("cannot read %s or %s", ours_path, darts_path);
    double worst = 0.0;
    size_t rows = 0;
    char *save_o, *save_d;
    char *lo = strtok_r(ours, "\n", &save_o), *ld = strtok_r(darts, "\n", &save_d);
    for (; lo != NULL && ld != NULL;
         lo = strtok_r(NULL, "\n", &save_o), ld = strtok_r(NULL, "\n", &save_d), rows++) {
        if (rows == 0) {
            assert_string_equal(lo, ld);
            continue;
        }
        char *fo[8], *fd[8];
        size_t no = split(lo, fo, 8), nd = split(ld, fd, 8);
        assert_int_equal(no, nd);
        for (size_t i = 0; i < no; i++) {
            char *eo, *ed;
            double vo = strtod(fo[i], &eo), vd = strtod(fd[i], &ed);
            if (ed == fd[i] || *ed != '\0') { /* a date or "backtest" */
                if (strcmp(fo[i], fd[i]) != 0)
                    fail_msg("%s row %zu: '%s', Darts '%s'", ours_path, rows, fo[i], fd[i]);
                continue;
            }
            assert_true(*eo == '\0');
            if (isnan(vd) || isnan(vo)) {
                assert_true(isnan(vd) && isnan(vo));
                continue;
            }
            double err = fabs(vo - vd) / fmax(fabs(vd), floor);
            if (err > 1e-5)
                fail_msg("%s row %zu field %zu: %s, Darts %s (relative %.1e)", ours_path, rows,
                         i + 1, fo[i], fd[i], err);
            worst = fmax(worst, err);
        }
    }
    if (lo != NULL || ld != NULL)
        fail_msg("%s: %zu+ rows, Darts' %s has a different count", ours_path, rows, darts_path);
    free(ours);
    free(darts);
    return worst;
}

/* The value after `label` on tsrnn-predict's standard output. */
static double printed(const char *label)
{
    const char *at = strstr(result.out, label);
    if (at == NULL)
        fail_msg("no '%s' in:\n%s", label, result.out);
    return strtod(at + strlen(label), NULL);
}

/* The last row of an errors CSV, `[id,]backtest,...`: backtest()'s MAPE, MAE and RMSE (of
 * the one series, or the mean over several). */
static void backtest_row(const char *errors_path, double values[3])
{
    char *text = tu_read(errors_path);
    assert_non_null(text);
    const char *at = strstr(text, "backtest,"), *next;
    while (at != NULL && (next = strstr(at + 1, "backtest,")) != NULL)
        at = next;
    assert_non_null(at);
    at += strlen("backtest,");
    assert_int_equal(sscanf(at, "%lf,%lf,%lf", &values[0], &values[1], &values[2]), 3);
    free(text);
}

/* Runs the backtest of `run_dir` into tu_run_dir()/<name> and compares its files and printed
 * value with Darts' bt_<name>_*.csv; `start` NULL: the default start. */
static void check_run(const char *run_dir, const char *name, const char *horizon, const char *start,
                      const char *stride, bool last)
{
    char out[PATH_MAX + 32], path[PATH_MAX + 64], fixture[128];
    snprintf(out, sizeof(out), "%s/%s", tu_run_dir(), name);
    const char *args[16] = { "--run",    run_dir, "--backtest", "--horizon", horizon,
                             "--stride", stride,  "--out",      out };
    size_t n = 9;
    if (start != NULL) {
        args[n++] = "--start";
        args[n++] = start;
    }
    if (last)
        args[n++] = "--last-points-only";
    if (predict(args) != 0)
        fail_msg("%s: exit %d: %s", name, result.exit_code, result.err);

    snprintf(path, sizeof(path), "%s/backtest.csv", out);
    snprintf(fixture, sizeof(fixture), "tests/fixtures/bt_%s_forecasts.csv", name);
    double forecasts = compare_csv(path, tu_source(fixture), 0.0);
    /* A forecast's score is a difference of float32 forecasts and actual values; where the
     * two nearly agree (a last point off by 2e-6 relative), 1 ulp of the forecast is a large
     * part of it. Scores are compared relative to at least 100: percentage points of MAPE,
     * passengers of MAE and RMSE (every actual value is over 100). */
    snprintf(path, sizeof(path), "%s/backtest_errors.csv", out);
    snprintf(fixture, sizeof(fixture), "tests/fixtures/bt_%s_errors.csv", name);
    double errors = compare_csv(path, tu_source(fixture), 100.0);
    double ours[3], darts[3], worst = 0.0;
    backtest_row(path, ours);
    backtest_row(tu_source(fixture), darts);
    for (int i = 0; i < 3; i++)
        worst = fmax(worst, fabs(ours[i] - darts[i]) / darts[i]);
    assert_true(fabs(printed("backtest: MAPE ") - darts[0]) <= 1e-5 * darts[0]);
    printf("# %s (--start %s --stride %s%s): forecasts within %.1e of Darts', scores within "
           "%.1e; backtest MAPE %.7f (Darts %.7f), all three backtest values within %.1e\n",
           name, start ? start : "(default)", stride, last ? " --last-points-only" : "", forecasts,
           errors, ours[0], darts[0], worst);
    assert_true(worst <= 1e-5);
}

static void check_case(const char *name, const char *start, const char *stride, bool last)
{
    check_run(run, name, "12", start, stride, last);
}

static void test_backtest_date_stride1_all_forecasts(void **state)
{
    (void)state;
    check_case("date_s1_all", "1959-02", "1", false);
    tu_expect_in(result.err, "Backtest: 12 forecasts of 12 steps starting 1959-02 .. 1960-01, "
                             "stride 1 (historical_forecasts(retrain=False, "
                             "last_points_only=False))");
}

static void test_backtest_date_stride3_last_points(void **state)
{
    (void)state;
    check_case("date_s3_last", "1957-06", "3", true);
}

static void test_backtest_fraction_stride3_all_forecasts(void **state)
{
    (void)state;
    check_case("frac_s3_all", "0.75", "3", false);
    tu_expect_in(result.err, "starting 1957-12 .. 1959-12, stride 3");
}

static void test_backtest_fraction_stride1_last_points(void **state)
{
    (void)state;
    check_case("frac_s1_last", "0.5", "1", true);
}

/* PNG signature and the IHDR chunk's width and height (tu_read() reads binary files whole). */
static void check_png(const char *path, unsigned width, unsigned height)
{
    char *png = tu_read(path);
    assert_non_null(png);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    assert_memory_equal(png + 12, "IHDR", 4);
    const unsigned char *u = (const unsigned char *)png;
    assert_int_equal((unsigned)u[16] << 24 | u[17] << 16 | u[18] << 8 | u[19], width);
    assert_int_equal((unsigned)u[20] << 24 | u[21] << 16 | u[22] << 8 | u[23], height);
    free(png);
}

/* Without --start the forecasts start at the validation part (1959-02, what the first case
 * asks for by date) and the files go into the run folder; the first one equals
 * tsrnn-predict's plain 12-step forecast (one window alone, the backtest's in a batch of 12)
 * to float32 rounding. */
static void test_backtest_defaults_and_files(void **state)
{
    (void)state;
    const char *args[] = {
        "--run", run, "--backtest", "--horizon", "12", "--size", "640x480", NULL
    };
    assert_int_equal(predict(args), 0);
    char ours[PATH_MAX + 32], same[PATH_MAX + 64];
    snprintf(ours, sizeof(ours), "%s/backtest.csv", run);
    snprintf(same, sizeof(same), "%s/date_s1_all/backtest.csv", tu_run_dir());
    char *a = tu_read(ours), *b = tu_read(same);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    snprintf(same, sizeof(same), "%s/backtest.png", run);
    if (tsrnn_plot_available())
        check_png(same, 640, 480);
    else
        assert_int_equal(access(same, F_OK), -1);

    const char *plain[] = { "--run", run, "--n", "12", NULL };
    assert_int_equal(predict(plain), 0);
    double worst = 0.0;
    const char *p = strchr(result.out, '\n') + 1, *q = strchr(strchr(a, '\n') + 1, ',') + 1;
    for (int i = 0; i < 12; i++) {
        char month[16];
        double single, batched;
        assert_int_equal(sscanf(p, "%15[^,],%lf", month, &single), 2);
        assert_int_equal(strncmp(q, month, strlen(month)), 0); /* start,Month: Month */
        batched = strtod(strchr(q, ',') + 1, NULL);
        worst = fmax(worst, fabs(single - batched) / single);
        p = strchr(p, '\n') + 1;
        q = strchr(strchr(q, '\n') + 1, ',') + 1;
    }
    printf("# the first backtest forecast vs tsrnn-predict --n 12: relative difference %.1e\n",
           worst);
    assert_true(worst <= 1e-6);
    free(a);
    free(b);
}

/* Each bad argument: exit 2, a message with the value and what is accepted, nothing
 * written. */
static void test_backtest_refuses_bad_arguments(void **state)
{
    (void)state;
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/refused", tu_run_dir());
    static const struct {
        const char *args[4];
        const char *message;
    } cases[] = {
        { { "--start", "1949-05" },
          "--start 1949-05 (position 4) is before the first point a forecast can start from: "
          "each forecast needs the input_chunk_length = 14 points before it; accepted: 1950-03 "
          "(position 14) .. 1960-01 (position 132)" },
        { { "--start", "0.05" }, "--start 0.05 = 1949-08 (position 7) is before" },
        { { "--start", "1960-02" },
          "--start 1960-02 (position 133) is after the last point a forecast can start from: a "
          "12-step forecast from there would pass the end of the series, 1960-12 (position "
          "143); accepted: 1950-03 (position 14) .. 1960-01 (position 132)" },
        { { "--start", "-11" }, "--start -11 = 1960-02 (position 133) is after" },
        { { "--start", "1961-01" }, "--start 1961-01 is after" },
        { { "--start", "1.5" }, "--start 1.5: accepted as a fraction of the series: 0 to 1" },
        { { "--start", "1959-02-15" },
          "--start 1959-02-15 is not a point of the series: it lies between 1959-02 (position "
          "121) and 1959-03 (position 122)" },
        { { "--start", "soon" }, "--start soon: not a date, an integer position or a fraction" },
        { { "--stride", "0" }, "--stride 0: accepted: an integer from 1 to 100000000" },
        { { "--horizon", "0" }, "--horizon 0: accepted: an integer from 1 to 100000000" },
        { { "--horizon", "131" },
          "the series has 144 points: too few for a backtest of 131-step forecasts, which needs "
          "input_chunk_length = 14 points before the first forecast and 131 from it on; "
          "accepted: --horizon 1 .. 130" },
        { { "--horizon", "24" },
          "the validation part's start (no --start) = 1959-02 (position 121) is after the last "
          "point a forecast can start from" },
        { { "--n", "3" }, "--n belongs to a forecast; a backtest forecasts --horizon steps" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[12] = { "--run", run, "--backtest", "--out", out };
        size_t n = 5;
        bool horizon = false;
        for (size_t k = 0; cases[i].args[k] != NULL; k++) {
            horizon |= strcmp(cases[i].args[k], "--horizon") == 0;
            args[n++] = cases[i].args[k];
        }
        if (!horizon) {
            args[n++] = "--horizon";
            args[n++] = "12";
        }
        assert_int_equal(predict(args), 2);
        tu_expect_in(result.err, cases[i].message);
        assert_int_equal(access(out, F_OK), -1);
    }
    const char *no_horizon[] = { "--run", run, "--backtest", NULL };
    assert_int_equal(predict(no_horizon), 2);
    tu_expect_in(result.err, "--backtest needs --horizon H");
    const char *no_backtest[] = { "--run", run, "--n", "3", "--stride", "2", NULL };
    assert_int_equal(predict(no_backtest), 2);
    tu_expect_in(result.err, "--stride belongs to a backtest: add --backtest");
}

/* --start on a series with an integer index (Darts' RangeIndex, start_format="value"): an
 * integer is an index value, not a position; a fraction is a position as for dates. */
static void test_start_on_an_integer_index(void **state)
{
    (void)state;
    enum {
        L = 30
    };
    int64_t times[L];
    float values[L];
    for (int i = 0; i < L; i++) {
        times[i] = 10 + 2 * i;
        values[i] = (float)i;
    }
    const struct tsrnn_series s = {
        .length = L,
        .component_count = 1,
        .values = values,
        .times = times,
        .time_unit = TSRNN_TIME_INDEX,
        .freq = { .kind = TSRNN_FREQ_STEP, .n = 2 },
    };
    size_t first = 0;
    assert_int_equal(tsrnn_backtest_first(&s, "14", 0, "", 2, 3, &first), TSRNN_OK);
    assert_int_equal(first, 2);
    assert_int_equal(tsrnn_backtest_first(&s, "0.5", 0, "", 2, 3, &first), TSRNN_OK);
    assert_int_equal(first, 14); /* int(29 * 0.5) */
    assert_int_equal(tsrnn_backtest_first(&s, "64", 0, "", 2, 3, &first), TSRNN_OK);
    assert_int_equal(first, 27); /* the last start: L - 3 */
    assert_int_equal(tsrnn_backtest_first(&s, "66", 0, "", 2, 3, &first), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "--start 66 (position 28) is after the last "
                                     "point a forecast can start from");
    assert_int_equal(tsrnn_backtest_first(&s, "15", 0, "", 2, 3, &first), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "--start 15 is not a point of the series: it lies between "
                                     "index 14 (position 2) and index 16 (position 3); accepted: "
                                     "an index value of the series");
    assert_int_equal(tsrnn_backtest_first(&s, "-1", 0, "", 2, 3, &first), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "--start -1 is before the first point a forecast can start "
                                     "from: each forecast needs the input_chunk_length = 2 points "
                                     "before it; accepted: index 14 (position 2) .. index 64 "
                                     "(position 27)");
    assert_int_equal(tsrnn_backtest_first(&s, "1959-02", 0, "", 2, 3, &first), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "--start 1959-02: not an index value, an integer position "
                                     "or a fraction");
}

/* The global model on three series: each series' forecasts from its own start (a fraction is
 * a different month in each), its scores and backtest value, and their mean, against Darts'
 * backtest() of the list. Without --start each series starts at its validation part
 * (1993-07 in all three, Darts' start=pd.Timestamp("1993-07")). */
static void test_backtest_of_several_series(void **state)
{
    (void)state;
    check_run(global_run, "global_frac_s2_all", "4", "0.6", "2", false);
    tu_expect_in(result.err, "Series a: backtest: 11 forecasts of 4 steps starting 1992-12 .. "
                             "1994-08, stride 2");
    tu_expect_in(result.err, "Series c: backtest: 14 forecasts");
    tu_expect_in(result.out, "backtest a: MAPE 8.868");
    tu_expect_in(result.out, "backtest b: MAPE 13.574");
    check_run(global_run, "global_date_s1_last", "4", NULL, "1", true);
    if (tsrnn_plot_available()) {
        char png[PATH_MAX + 64];
        snprintf(png, sizeof(png), "%s/global_date_s1_last/backtest_c.png", tu_run_dir());
        check_png(png, 1000, 500);
    }

    /* --id: that series alone, still named; no mean row */
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/only_b", tu_run_dir());
    const char *only_b[] = {
        "--run",   global_run, "--id",     "b", "--backtest", "--horizon", "4",
        "--start", "0.6",      "--stride", "2", "--out",      out,         NULL
    };
    assert_int_equal(predict(only_b), 0);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/backtest_errors.csv", out);
    char *ours = tu_read(path);
    char *darts = tu_read(tu_source("tests/fixtures/bt_global_frac_s2_all_errors.csv"));
    assert_non_null(ours);
    assert_non_null(darts);
    const char *head = "series,start,mape,mae,rmse\nb,1994-10,";
    assert_true(strncmp(ours, head, strlen(head)) == 0);
    tu_expect_in(darts, "\nb,1994-10,");
    assert_null(strstr(ours, "\na,"));
    assert_null(strstr(ours, "\n,backtest"));
    tu_expect_in(ours, "\nb,backtest,");
    free(ours);
    free(darts);

    /* a start that one series cannot take names it */
    const char *late[] = { "--run",   global_run, "--backtest", "--horizon", "4",
                           "--start", "1994-10",  "--out",      out,         NULL };
    assert_int_equal(predict(late), 2);
    tu_expect_in(result.err, "--start 1994-10 (position 57) is after the last point a forecast "
                             "can start from");
    tu_expect_in(result.err, "(series 'a')");
}

/* Two components of different scales (tests/fixtures/mc_*: a GRU Darts trained on the list of
 * m1 and m2, each `a` near 100-200 and `b` near 1, m2's b 0 at one validation month): Darts'
 * metrics score each component and average them (component_reduction=np.nanmean; the RMSE of
 * m2 is 13.34, the pooled one 18.50), leave a 0 out of MAPE (zero_division="warn"), then
 * average the series. The trainer's validation.csv, tsrnn-predict's printed scores and its
 * backtest_errors.csv (horizon 3, stride 2) all within 1e-5 of Darts'. */
static void test_metrics_of_several_components_are_darts(void **state)
{
    (void)state;
    char init[PATH_MAX + 32], path[3 * PATH_MAX + 32], run_mc[PATH_MAX + 16];
    snprintf(init, sizeof(init), "model.init_weights=%s",
             tu_source("tests/fixtures/mc_weights.safetensors"));
    int n = snprintf(path, sizeof(path), "data.path=%s", tu_source("tests/fixtures/mc/m1.csv"));
    snprintf(path + n, sizeof(path) - (size_t)n, ",%s", tu_source("tests/fixtures/mc/m2.csv"));
    const char *sets[] = { path,
                           "data.time_col=month",
                           "data.value_cols=a,b",
                           "data.split_after=1993-12",
                           "model.model=GRU",
                           "model.hidden_dim=8",
                           "model.training_length=8",
                           "model.input_chunk_length=5",
                           init,
                           "training.max_steps=0",
                           "forecast.n=0",
                           NULL };
    assert_int_equal(tu_train(&result, "mc", sets, 60), 0);
    tu_expect_in(result.err, "warning: MAPE leaves out the 1 value of 0 in the validation part "
                             "of series 'm2', as Darts' mape() does");
    tu_expect_in(result.out, "MAPE 34.78%, MAE 10.4658, RMSE 12.5266: the mean over the 2 series");
    snprintf(run_mc, sizeof(run_mc), "%s/mc", tu_run_dir());
    char file[PATH_MAX + 64];
    snprintf(file, sizeof(file), "%s/validation.csv", run_mc);
    double validation = compare_csv(file, tu_source("tests/fixtures/mc_validation.csv"), 0.0);

    const char *scores[] = { "--run", run_mc, "--checkpoint", "last", "--id",
                             "m2",    "--n",  "21",           NULL };
    assert_int_equal(predict(scores), 0);
    const char *rmse = strstr(result.err, " RMSE ");
    assert_non_null(rmse);
    double printed_rmse = strtod(rmse + strlen(" RMSE "), NULL);
    assert_true(fabs(printed_rmse - 13.3351164) <= 1e-5 * 13.3351164);

    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/mc_backtest", tu_run_dir());
    const char *backtest[] = {
        "--run",     run_mc, "--checkpoint", "last", "--backtest", "--start", "1994-01",
        "--horizon", "3",    "--stride",     "2",    "--out",      out,       NULL
    };
    assert_int_equal(predict(backtest), 0);
    snprintf(file, sizeof(file), "%s/backtest_errors.csv", out);
    double errors = compare_csv(file, tu_source("tests/fixtures/mc_backtest_errors.csv"), 0.0);
    printf("# two components of different scales: validation.csv within %.2e of Darts, m2's "
           "printed RMSE %.6g (Darts 13.3351164), backtest_errors.csv within %.2e\n",
           validation, printed_rmse, errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backtest_date_stride1_all_forecasts),
        cmocka_unit_test(test_backtest_date_stride3_last_points),
        cmocka_unit_test(test_backtest_fraction_stride3_all_forecasts),
        cmocka_unit_test(test_backtest_fraction_stride1_last_points),
        cmocka_unit_test(test_backtest_defaults_and_files),
        cmocka_unit_test(test_backtest_refuses_bad_arguments),
        cmocka_unit_test(test_start_on_an_integer_index),
        cmocka_unit_test(test_backtest_of_several_series),
        cmocka_unit_test(test_metrics_of_several_components_are_darts),
    };
    return cmocka_run_group_tests(tests, group_setup, tu_teardown_run_dir);
}
