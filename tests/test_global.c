/* Darts' global models (one model fitted on a list of series), against real Darts 0.48.1
 * (scripts/gen-global-fixtures.py):
 * - windows: tsrnn_window_list against Darts' ShiftedTorchTrainingDataset over a list of
 *   series (tests/fixtures/global_windows.txt): for every sample index of four cases (2-3
 *   series of different lengths, with and without max_samples_per_ts) the same series, the
 *   same window and the same input and target values; and the refusals;
 * - loading: the three series of tests/fixtures/global/ as files, as a glob and as one
 *   long-format file (id_col) are the same dataset; the refusals name the series;
 * - training: tsrnn-worker on the list, shuffle off and on, with max_samples_per_ts, every
 *   step's train_loss and every val_loss against real Darts' RNNModel.fit(list) within
 *   1e-5 relative; its forecast of every series and the per-series and mean MAPE, MAE and
 *   RMSE against Darts' predict and metrics; tsrnn-predict of every series (or one, --id)
 *   equal to the training's forecast. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
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

#define MAX_SERIES 4
#define MAX_POINTS 128

/* Series s holds 1000 s + p at position p, as the generator's. */
static float values[MAX_SERIES][MAX_POINTS];

static void test_window_list_matches_darts(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("tests/fixtures/global_windows.txt"));
    assert_non_null(text);
    for (size_t s = 0; s < MAX_SERIES; s++)
        for (size_t p = 0; p < MAX_POINTS; p++)
            values[s][p] = (float)(1000 * s + p);

    size_t cases = 0, samples = 0;
    char *save = NULL;
    struct tsrnn_windows series[MAX_SERIES];
    struct tsrnn_window_list list = { 0 };
    size_t T = 0;
    float input[MAX_POINTS], target[MAX_POINTS];
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        if (strncmp(line, "case ", 5) == 0) {
            size_t lengths[MAX_SERIES], S = 0, cap, count;
            char *cursor = line + 5;
            while (S < MAX_SERIES && strncmp(cursor, "T ", 2) != 0)
                lengths[S++] = strtoul(cursor, &cursor, 10), cursor++;
            assert_int_equal(
                sscanf(cursor, "T %zu max_samples_per_ts %zu count %zu", &T, &cap, &count), 3);
            for (size_t s = 0; s < S; s++)
                tsrnn_windows_init(&series[s], values[s], lengths[s], 1, T);
            assert_int_equal(tsrnn_window_list_init(&list, series, S, cap), TSRNN_OK);
            assert_int_equal(list.count, count); /* S * M, Darts' len(dataset) */
            cases++;
            continue;
        }
        size_t idx, sid, start, s, w;
        assert_int_equal(sscanf(line, "%zu %zu %zu", &idx, &sid, &start), 3);
        assert_true(idx < list.count);
        tsrnn_window_list_locate(&list, idx, &s, &w);
        assert_int_equal(s, sid);
        assert_int_equal(tsrnn_windows_start(&series[s], w), start);
        tsrnn_window_list_gather(&list, &idx, 1, input, target);
        for (size_t t = 0; t < T; t++) {
            assert_true(input[t] == (float)(1000 * sid + start + t));
            assert_true(target[t] == (float)(1000 * sid + start + t + 1));
        }
        samples++;
    }
    printf("# %zu cases, %zu samples: the same series, window and values as Darts\n", cases,
           samples);
    assert_int_equal(cases, 4);
    assert_int_equal(samples, 105 + 30 + 106 + 12);
    free(text);
}

static void test_window_list_refuses_a_series_without_window(void **state)
{
    (void)state;
    struct tsrnn_windows series[2];
    struct tsrnn_window_list list;
    tsrnn_windows_init(&series[0], values[0], 30, 1, 5);
    tsrnn_windows_init(&series[1], values[1], 5, 1, 5); /* 5 points: no window of 5 + 1 */
    assert_int_equal(tsrnn_window_list_init(&list, series, 2, 0), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "series 1 has 5 points, too few for one window of "
                                     "training_length 5 + 1 points");
    tsrnn_windows_init(&series[0], values[0], 4, 1, 5);
    assert_int_equal(tsrnn_window_list_init(&list, series, 2, 0), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "none of the 2 series is long enough");
}

/* --- loading -------------------------------------------------------------------------- */

static char set_path[3 * PATH_MAX + 64];

/* "data.path=<the three fixture files>" (absolute), in a static buffer. */
static const char *files_set(void)
{
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof(a), "%s", tu_source("tests/fixtures/global/a.csv"));
    snprintf(b, sizeof(b), "%s", tu_source("tests/fixtures/global/b.csv"));
    snprintf(set_path, sizeof(set_path), "data.path=%s,%s, %s", a, b,
             tu_source("tests/fixtures/global/c.csv"));
    return set_path;
}

/* The dataset of the example config with the fixture's [data] and `extra` settings. */
static enum tsrnn_status load(struct tsrnn_dataset *ds, const char *path_set,
                              const char *const *extra, size_t extra_count)
{
    const char *sets[16] = { path_set,
                             "data.time_col=date",
                             "data.value_cols=v",
                             "data.split_after=2000-02-10",
                             "model.training_length=8",
                             "model.input_chunk_length=5" };
    size_t n = 6;
    for (size_t i = 0; i < extra_count; i++)
        sets[n++] = extra[i];
    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    assert_non_null(cfg);
    enum tsrnn_status status =
        tsrnn_config_load(cfg, tu_source("examples/air_passengers.ini"), sets, n);
    if (status == TSRNN_OK)
        status = tsrnn_config_validate(cfg);
    if (status == TSRNN_OK)
        status = tsrnn_dataset_load(ds, cfg);
    free(cfg);
    return status;
}

static void expect_same_dataset(const struct tsrnn_dataset *a, const struct tsrnn_dataset *b)
{
    assert_int_equal(a->series_count, b->series_count);
    assert_int_equal(a->train.count, b->train.count);
    assert_int_equal(a->val.count, b->val.count);
    for (size_t i = 0; i < a->series_count; i++) {
        const struct tsrnn_dataset_series *x = &a->items[i], *y = &b->items[i];
        assert_string_equal(x->id, y->id);
        assert_int_equal(x->series.length, y->series.length);
        assert_int_equal(x->train_length, y->train_length);
        assert_memory_equal(x->series.times, y->series.times, x->series.length * sizeof(int64_t));
        assert_memory_equal(x->scaled, y->scaled, x->series.length * sizeof(float));
        assert_memory_equal(&x->scaler, &y->scaler, sizeof(x->scaler));
    }
}

/* The files as a list, as a glob and as one long-format file: one dataset. The Darts run's
 * split and per-series scaler: a 60 / 48 / 70 points, train 41 / 37 / 53 (up to 2000-02-10),
 * windows 33 / 29 / 45 of 8 + 1 points, so M = 45 and 135 samples; validation 11 / 3 / 9
 * windows, 33 samples. */
static void test_files_glob_and_long_format_are_one_dataset(void **state)
{
    (void)state;
    struct tsrnn_dataset files, glob, longf;
    assert_int_equal(load(&files, files_set(), NULL, 0), TSRNN_OK);
    assert_int_equal(files.series_count, 3);
    const char *ids[] = { "a", "b", "c" };
    const size_t lengths[] = { 60, 48, 70 }, train[] = { 41, 37, 53 };
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(files.items[i].id, ids[i]);
        assert_int_equal(files.items[i].series.length, lengths[i]);
        assert_int_equal(files.items[i].train_length, train[i]);
    }
    assert_int_equal(files.train.samples_per_series, 45);
    assert_int_equal(files.train.count, 135);
    assert_int_equal(files.val.count, 33);
    /* Scaler() on a list: one per series, on its training part (a: 43.80 .. 67.46). */
    assert_true(files.items[0].scaler.data_min[0] == 43.8f);
    assert_true(files.items[0].scaler.data_max[0] == 67.46f);

    char pattern[PATH_MAX + 16];
    snprintf(pattern, sizeof(pattern), "data.path=%s/[abc].csv",
             tu_source("tests/fixtures/global"));
    assert_int_equal(load(&glob, pattern, NULL, 0), TSRNN_OK);
    expect_same_dataset(&files, &glob);

    /* Rows ordered by date with the ids interleaved c, a, b: Darts sorts the groups. */
    char long_path[PATH_MAX + 16];
    snprintf(long_path, sizeof(long_path), "data.path=%s",
             tu_source("tests/fixtures/global/long.csv"));
    const char *id_col[] = { "data.id_col=id" };
    assert_int_equal(load(&longf, long_path, id_col, 1), TSRNN_OK);
    expect_same_dataset(&files, &longf);

    const char *capped[] = { "data.max_samples_per_ts=20" };
    tsrnn_dataset_finish(&glob);
    assert_int_equal(load(&glob, files_set(), capped, 1), TSRNN_OK);
    assert_int_equal(glob.train.count, 60);
    assert_int_equal(glob.val.count, 33); /* min(20, 11) per series */
    tsrnn_dataset_finish(&files);
    tsrnn_dataset_finish(&glob);
    tsrnn_dataset_finish(&longf);
    printf("# a.csv,b.csv,c.csv = [abc].csv = long.csv with id_col: 3 series, 135 training and "
           "33 validation samples (60 and 33 with max_samples_per_ts 20)\n");
}

/* Every refusal names the series or the pattern, with the documented status. */
static void test_bad_series_are_named(void **state)
{
    (void)state;
    struct tsrnn_dataset ds;
    char *dir = tu_mkdtemp(), set[5 * PATH_MAX + 64];

    snprintf(set, sizeof(set), "data.path=%s/nothing-*.csv", dir);
    assert_int_equal(load(&ds, set, NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "nothing-*.csv' matches no file");

    /* A series too short for a validation window: named, with what to do. */
    char rows[4096] = "date,v\n";
    for (int d = 1; d <= 15; d++)
        snprintf(rows + strlen(rows), sizeof(rows) - strlen(rows), "2000-02-%02d,%d\n", d, d);
    tu_write(dir, "short.csv", rows);
    snprintf(set, sizeof(set), "data.path=%s/short.csv,%s", dir, files_set() + 10);
    assert_int_equal(load(&ds, set, NULL, 0), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "short.csv: the validation part has 5 points");
    const char *frac[] = { "data.split_after=", "data.val_fraction=0.05" };
    assert_int_equal(load(&ds, set, frac, 2), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "of 15 points leaves no validation point in ");
    tu_expect_in(tsrnn_last_error(), "short.csv");
    const char *late[] = { "data.split_after=2000-02-20" };
    assert_int_equal(load(&ds, set, late, 1), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "leaves no validation points");
    tu_expect_in(tsrnn_last_error(), "short.csv; a series whose validation part would be empty");

    /* Other columns, and two files of one name. */
    tu_write(dir, "w.csv", "date,w\n2000-01-01,1\n2000-01-02,1\n2000-01-03,1\n");
    snprintf(set, sizeof(set), "data.path=%s,%s/w.csv", files_set() + 10, dir);
    const char *all_cols[] = { "data.value_cols=" };
    assert_int_equal(load(&ds, set, all_cols, 1), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "series 'w' has the value columns 'w' (1), series 'a' 'v'");
    char sub[PATH_MAX + 8];
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    tu_write(sub, "a.csv", "date,v\n2000-01-01,1\n2000-01-02,1\n2000-01-03,1\n");
    snprintf(set, sizeof(set), "data.path=%s,%s/a.csv", files_set() + 10, sub);
    assert_int_equal(load(&ds, set, NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "are both series 'a'");

    /* Long format: one file, a time column, every row an id, each group long enough. */
    const char *id_col[] = { "data.id_col=id" };
    assert_int_equal(load(&ds, files_set(), id_col, 1), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "reads one long-format file, but [data] path names 3");
    tu_write(dir, "long.csv", "date,id,v\n2000-01-01,x,1\n2000-01-02,,2\n");
    snprintf(set, sizeof(set), "data.path=%s/long.csv", dir);
    assert_int_equal(load(&ds, set, id_col, 1), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "long.csv:3: id column 'id': '' is a missing id");
    const char *no_time[] = { "data.id_col=id", "data.time_col=" };
    assert_int_equal(load(&ds, set, no_time, 2), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "needs [data] time_col");
    char long_rows[8192] = "date,id,v\n";
    for (int d = 1; d <= 28; d++)
        snprintf(long_rows + strlen(long_rows), sizeof(long_rows) - strlen(long_rows),
                 "2000-02-%02d,10,%d\n2000-02-%02d,9,%d\n", d, d, d, d);
    strcat(long_rows, "2000-02-01,x7,1\n2000-02-02,x7,1\n2000-02-03,x7,1\n");
    tu_write(dir, "long.csv", long_rows);
    assert_int_equal(load(&ds, set, id_col, 1), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "long.csv, series 'x7': the series has 3 points");
    tu_rmtree(dir);
    free(dir);
}

/* Numeric ids sort as numbers (pandas reads the column as int64), text ids as text. */
static void test_long_format_group_order(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), set[PATH_MAX + 64], rows[16384] = "date,id,v\n";
    const char *numbers[] = { "10", "9", "-1" };
    for (int d = 1; d <= 28; d++)
        for (size_t k = 0; k < 3; k++)
            snprintf(rows + strlen(rows), sizeof(rows) - strlen(rows), "2000-02-%02d,%s,%d\n", d,
                     numbers[k], d + (int)k);
    tu_write(dir, "long.csv", rows);
    snprintf(set, sizeof(set), "data.path=%s/long.csv", dir);
    const char *id_col[] = { "data.id_col=id", "data.split_after=2000-02-14" };
    struct tsrnn_dataset ds;
    assert_int_equal(load(&ds, set, id_col, 2), TSRNN_OK);
    assert_int_equal(ds.series_count, 3);
    assert_string_equal(ds.items[0].id, "-1");
    assert_string_equal(ds.items[1].id, "9");
    assert_string_equal(ds.items[2].id, "10");
    assert_true(ds.items[2].series.values[0] == 1.0f);
    tsrnn_dataset_finish(&ds);
    /* One id that is not a number: every id compares as text ("-1" < "10" < "9" < "x"). */
    strcat(rows, "2000-03-01,x,1\n2000-03-02,x,2\n2000-03-03,x,3\n");
    tu_write(dir, "long.csv", rows);
    const char *no_val[] = { "data.id_col=id", "data.split_after=", "model.training_length=1",
                             "model.input_chunk_length=1" };
    assert_int_equal(load(&ds, set, no_val, 4), TSRNN_OK);
    assert_string_equal(ds.items[1].id, "10");
    assert_string_equal(ds.items[2].id, "9");
    assert_string_equal(ds.items[3].id, "x");
    tsrnn_dataset_finish(&ds);
    tu_rmtree(dir);
    free(dir);
}

/* --- training against real Darts --------------------------------------------------------- */

static struct tu_result result;

static double rel(double a, double b)
{
    return fabs(a - b) / fabs(b);
}

/* Trains the fixture's model on the three series as `name` (scripts/gen-global-fixtures.py's
 * settings), with `extra` (NULL-terminated) settings. */
static void train_global(const char *name, const char *const *extra)
{
    const char *sets[40] = { files_set(),
                             "data.time_col=date",
                             "data.value_cols=v",
                             "data.split_after=2000-02-10",
                             "model.hidden_dim=8",
                             "model.training_length=8",
                             "model.input_chunk_length=5",
                             "training.batch_size=16",
                             "training.n_epochs=5",
                             "training.lr=5e-3",
                             "output.log_tensorboard=false",
                             "output.save_checkpoints=true",
                             "forecast.n=6",
                             "forecast.plot=false" };
    size_t n = 14;
    for (size_t i = 0; extra[i] != NULL; i++)
        sets[n++] = extra[i];
    sets[n] = NULL;
    assert_int_equal(tu_train(&result, name, sets, 120), 0);
}

/* Every step's train_loss and every epoch's val_loss against Darts' (global_<name>_metrics.csv)
 * within 1e-5 relative; the worst is printed. */
static void check_against_darts(const char *name, const char *const *extra, size_t rows)
{
    train_global(name, extra);
    static struct tu_metrics_row ours[128], darts[128];
    char path[PATH_MAX], file[96];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), name);
    size_t n = tu_read_metrics(path, ours, 128);
    snprintf(file, sizeof(file), "tests/fixtures/global_%s_metrics.csv", name);
    assert_int_equal(tu_read_metrics(tu_source(file), darts, 128), rows);
    assert_int_equal(n, rows);
    double worst_step = 0.0, worst_val = 0.0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ours[i].epoch, darts[i].epoch);
        assert_int_equal(ours[i].step, darts[i].step);
        assert_int_equal(isnan(ours[i].train_loss), isnan(darts[i].train_loss));
        if (isnan(darts[i].train_loss))
            worst_val = fmax(worst_val, rel(ours[i].val_loss, darts[i].val_loss));
        else
            worst_step = fmax(worst_step, rel(ours[i].train_loss, darts[i].train_loss));
    }
    printf("# %-9s: %zu rows, first step %.9g (Darts %.9g); worst relative difference: "
           "train_loss %.2e, val_loss %.2e\n",
           name, n, ours[0].train_loss, darts[0].train_loss, worst_step, worst_val);
    assert_true(worst_step <= 1e-5);
    assert_true(worst_val <= 1e-5);
}

/* Shuffle off (index order over the 135 samples), on (Darts' permutation of 135 for
 * random_state 7), and GRU with max_samples_per_ts = 20 (60 samples, 4 steps an epoch). */
static void test_fits_match_darts(void **state)
{
    (void)state;
    const char *noshuffle[] = { "training.random_state=3", "training.shuffle=false", NULL };
    check_against_darts("noshuffle", noshuffle, 5 * 10);
    const char *shuffle[] = { "training.random_state=7", NULL };
    check_against_darts("shuffle", shuffle, 5 * 10);
    const char *capped[] = { "training.random_state=11", "data.max_samples_per_ts=20",
                             "model.model=GRU", NULL };
    check_against_darts("capped", capped, 5 * 5);
}

/* A shuffled run of several series stopped after 2 epochs and resumed to 5 writes the
 * uninterrupted run's metrics.csv byte for byte (test_fits_match_darts' "shuffle" run): the
 * checkpoint's series list and the sample order over all series carry over. */
static void test_resume_over_several_series(void **state)
{
    (void)state;
    const char *first[] = { "training.random_state=7", "training.n_epochs=2", NULL };
    train_global("resumed", first);
    const char *rest[] = { "training.random_state=7", "training.n_epochs=5", "training.resume=last",
                           "output.force_reset=false", NULL };
    train_global("resumed", rest);
    char a[PATH_MAX + 32], b[PATH_MAX + 32];
    snprintf(a, sizeof(a), "%s/resumed/metrics.csv", tu_run_dir());
    snprintf(b, sizeof(b), "%s/shuffle/metrics.csv", tu_run_dir());
    char *resumed = tu_read(a), *whole = tu_read(b);
    assert_non_null(resumed);
    assert_non_null(whole);
    assert_string_equal(resumed, whole);
    free(resumed);
    free(whole);
}

/* A CSV's rows as (first field, numbers after the second): the forecast layouts. */
static size_t read_rows(const char *path, char ids[][16], double *numbers, size_t capacity,
                        char *header, size_t header_capacity)
{
    char *text = tu_read(path);
    assert_non_null(text);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    snprintf(header, header_capacity, "%s", line);
    size_t n = 0;
    for (line = strtok_r(NULL, "\n", &save); line != NULL && n < capacity;
         line = strtok_r(NULL, "\n", &save), n++) {
        char *comma = strchr(line, ',');
        assert_non_null(comma);
        snprintf(ids[n], 16, "%.*s", (int)(comma - line), line);
        numbers[n] = strtod(strrchr(line, ',') + 1, NULL);
    }
    free(text);
    return n;
}

/* The noshuffle run's forecast of every series (6 steps after each training part) against
 * Darts' predict(6, series=train), and validation.csv's per-series and mean scores against
 * Darts' mape / mae / rmse (series_reduction=np.mean). */
static void test_forecast_and_scores_match_darts(void **state)
{
    (void)state;
    char ids_a[32][16], ids_b[32][16], header_a[256], header_b[256], path[PATH_MAX];
    double ours[32], darts[32], worst = 0.0;
    snprintf(path, sizeof(path), "%s/noshuffle/forecast.csv", tu_run_dir());
    size_t n = read_rows(path, ids_a, ours, 32, header_a, sizeof(header_a));
    assert_int_equal(read_rows(tu_source("tests/fixtures/global_forecast.csv"), ids_b, darts, 32,
                               header_b, sizeof(header_b)),
                     18);
    assert_int_equal(n, 18);
    assert_string_equal(header_a, "series,date,v");
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(ids_a[i], ids_b[i]);
        worst = fmax(worst, rel(ours[i], darts[i]));
    }
    printf("# forecast of 3 series x 6 steps: worst relative difference to Darts %.2e\n", worst);
    assert_true(worst <= 1e-5);

    /* validation.csv: series,steps,mape,mae,rmse; the last row (empty id) the mean. */
    snprintf(path, sizeof(path), "%s/noshuffle/validation.csv", tu_run_dir());
    char *ours_text = tu_read(path),
         *darts_text = tu_read(tu_source("tests/fixtures/global_validation.txt"));
    assert_non_null(ours_text);
    assert_non_null(darts_text);
    tu_expect_in(ours_text, "series,steps,mape,mae,rmse\n");
    const char *names[] = { "a", "b", "c", "overall" };
    const size_t steps[] = { 19, 11, 17, 47 };
    double score_worst = 0.0;
    for (size_t k = 0; k < 4; k++) {
        char key[32];
        snprintf(key, sizeof(key), "\n%s ", names[k]);
        const char *d = strstr(darts_text, key);
        assert_non_null(d);
        double dm[3], om[3];
        assert_int_equal(sscanf(d + strlen(key), "%lf %lf %lf", &dm[0], &dm[1], &dm[2]), 3);
        snprintf(key, sizeof(key), "\n%s,%zu,", k < 3 ? names[k] : "", steps[k]);
        const char *o = strstr(ours_text, key);
        assert_non_null(o);
        assert_int_equal(sscanf(o + strlen(key), "%lf,%lf,%lf", &om[0], &om[1], &om[2]), 3);
        for (size_t m = 0; m < 3; m++)
            score_worst = fmax(score_worst, rel(om[m], dm[m]));
    }
    printf("# validation MAPE, MAE, RMSE of 3 series and their mean: worst relative difference "
           "to Darts %.2e\n",
           score_worst);
    assert_true(score_worst <= 1e-5);
    free(ours_text);
    free(darts_text);
}

/* tsrnn-predict from the checkpoint alone: every series, byte for byte the training's
 * forecast.csv; --id one of them; an unknown id, --id on a model of one series, --series
 * without --id and --plot of several series are usage errors (exit 2). */
static void test_predict_every_series(void **state)
{
    (void)state;
    char run[PATH_MAX + 16], out[PATH_MAX + 32], forecast[PATH_MAX + 32];
    snprintf(run, sizeof(run), "%s/noshuffle", tu_run_dir());
    snprintf(out, sizeof(out), "%s/predict.csv", tu_run_dir());
    snprintf(forecast, sizeof(forecast), "%s/forecast.csv", run);
    struct tu_result *r = malloc(sizeof(*r));
    const char *all[] = { tu_env("TSRNN_PREDICT"),
                          "--run",
                          run,
                          "--checkpoint",
                          "last",
                          "--n",
                          "6",
                          "--out",
                          out,
                          NULL };
    assert_int_equal(tu_run(all, 60, r), 0);
    assert_int_equal(r->exit_code, 0);
    char *a = tu_read(out), *b = tu_read(forecast);
    assert_string_equal(a, b);
    tu_expect_in(r->err, "Series b: Forecast 6 steps, 2000-02-11 .. 2000-02-16; against the 6 "
                         "actual values");
    tu_expect_in(r->err, "Mean over the 3 series with actual values:");
    free(a);

    const char *one[] = {
        tu_env("TSRNN_PREDICT"), "--run", run, "--checkpoint", "last", "--n", "6", "--id", "c", NULL
    };
    assert_int_equal(tu_run(one, 60, r), 0);
    assert_int_equal(r->exit_code, 0);
    tu_expect_in(b, r->out + strlen("series,date,v\n")); /* c's rows of the training's file */
    assert_null(strstr(r->out, "\na,"));
    free(b);

    const char *bad[] = { tu_env("TSRNN_PREDICT"),
                          "--run",
                          run,
                          "--checkpoint",
                          "last",
                          "--n",
                          "6",
                          "--id",
                          "zz",
                          NULL };
    assert_int_equal(tu_run(bad, 60, r), 0);
    assert_int_equal(r->exit_code, 2);
    tu_expect_in(r->err, "--id zz: the model was trained on no series of that id; accepted: one "
                         "of its 3 series ('a', 'b', 'c')");
    const char *series[] = { tu_env("TSRNN_PREDICT"),
                             "--run",
                             run,
                             "--checkpoint",
                             "last",
                             "--n",
                             "6",
                             "--series",
                             tu_source("tests/fixtures/global/a.csv"),
                             NULL };
    assert_int_equal(tu_run(series, 60, r), 0);
    assert_int_equal(r->exit_code, 2);
    tu_expect_in(r->err, "name the one this file continues with --id");
    char png[PATH_MAX + 16];
    snprintf(png, sizeof(png), "%s/p.png", tu_run_dir());
    const char *plot[] = { tu_env("TSRNN_PREDICT"),
                           "--run",
                           run,
                           "--checkpoint",
                           "last",
                           "--n",
                           "6",
                           "--plot",
                           png,
                           NULL };
    assert_int_equal(tu_run(plot, 60, r), 0);
    assert_int_equal(r->exit_code, 2);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_list_matches_darts),
        cmocka_unit_test(test_window_list_refuses_a_series_without_window),
        cmocka_unit_test(test_files_glob_and_long_format_are_one_dataset),
        cmocka_unit_test(test_bad_series_are_named),
        cmocka_unit_test(test_long_format_group_order),
        cmocka_unit_test(test_fits_match_darts),
        cmocka_unit_test(test_forecast_and_scores_match_darts),
        cmocka_unit_test(test_resume_over_several_series),
        cmocka_unit_test(test_predict_every_series),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
