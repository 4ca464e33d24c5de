/* The C API (include/tsrnn/tsrnn.h) through libtsrnn.so, as a program outside the project
 * uses it: this test includes the public header only and links the shared library. A fit on
 * arrays gives the numbers of the same fit from the INI file, bit for bit, and of the real
 * tsrnn-worker; two runs in two threads at once give each the numbers of one alone; the
 * progress callback sees every step; cancelling stops a fit between two steps; checkpoints
 * save and load; forecasts and backtests equal tsrnn-predict's; errors are values with a
 * message on their handle. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
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
#include "tsrnn/tsrnn.h"

/* --- AirPassengers as a program holds it ------------------------------------------------ */

#define POINTS 144
#define TRAIN  121 /* split_after 1959-01, as the example */

static int64_t stamps[POINTS]; /* seconds: the first day of each month from 1949-01 */
static float passengers[POINTS];
static float scaled[POINTS]; /* MinMax fitted on the training part, as Darts' Scaler */
static float scale, offset;

/* Days from 1970-01-01 to y-m-d (the proleptic Gregorian calendar). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void load_air_passengers(void)
{
    char *text = tu_read(tu_source("examples/data/air_passengers.csv"));
    assert_non_null(text);
    char *line = strchr(text, '\n') + 1; /* after the header */
    for (size_t i = 0; i < POINTS; i++) {
        int y, m;
        float v;
        assert_int_equal(sscanf(line, "%d-%d,%f", &y, &m, &v), 3);
        stamps[i] = days_from_civil(y, (unsigned)m, 1) * 86400;
        passengers[i] = v;
        line = strchr(line, '\n') + 1;
    }
    free(text);
    /* sklearn's MinMaxScaler on float32, one rounding at a time (data/scaler.c's order). */
    float lo = passengers[0], hi = passengers[0];
    for (size_t i = 1; i < TRAIN; i++) {
        lo = passengers[i] < lo ? passengers[i] : lo;
        hi = passengers[i] > hi ? passengers[i] : hi;
    }
    volatile float range = hi - lo;
    scale = 1.0f / range;
    volatile float min_scaled = lo * scale;
    offset = 0.0f - min_scaled;
    for (size_t i = 0; i < POINTS; i++) {
        volatile float x = passengers[i] * scale;
        scaled[i] = x + offset;
    }
}

static float unscale(float y)
{
    volatile float x = y - offset;
    return x / scale;
}

static const char *const component[] = { "#Passengers" };

/* The training and validation sets of the guide's split: the scaled series' two parts. */
static void guide_sets(struct tsrnn_series_set **train, struct tsrnn_series_set **val)
{
    assert_int_equal(tsrnn_series_set_create(train), TSRNN_OK);
    assert_int_equal(tsrnn_series_set_create(val), TSRNN_OK);
    assert_int_equal(tsrnn_series_set_add(*train, NULL, "Month", stamps, true, "MS", TRAIN, scaled,
                                          1, component, NULL),
                     TSRNN_OK);
    assert_int_equal(tsrnn_series_set_add(*val, NULL, "Month", stamps + TRAIN, true, NULL,
                                          POINTS - TRAIN, scaled + TRAIN, 1, component, NULL),
                     TSRNN_OK);
}

/* The example's model (examples/air_passengers.ini) in `work_dir`, on the CPU, quiet. */
static struct tsrnn_run *guide_run(const char *work_dir, const char *model_name, int epochs)
{
    struct tsrnn_run *run;
    char text[32];
    assert_int_equal(tsrnn_run_create(&run), TSRNN_OK);
    const char *settings[][3] = {
        { "model", "model", "RNN" },
        { "model", "hidden_dim", "20" },
        { "model", "training_length", "20" },
        { "model", "input_chunk_length", "14" },
        { "training", "batch_size", "16" },
        { "training", "lr", "1e-3" },
        { "training", "random_state", "42" },
        { "trainer", "accelerator", "cpu" },
        { "trainer", "num_threads", "1" },
        { "output", "work_dir", work_dir },
        { "output", "model_name", model_name },
        { "output", "force_reset", "true" },
        { "output", "save_checkpoints", "true" },
        { "output", "log_tensorboard", "true" },
        { "data", "scaler", "none" },
    };
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
        assert_int_equal(tsrnn_run_set(run, settings[i][0], settings[i][1], settings[i][2], NULL),
                         TSRNN_OK);
    snprintf(text, sizeof(text), "%d", epochs);
    assert_int_equal(tsrnn_run_set(run, "training", "n_epochs", text, NULL), TSRNN_OK);
    assert_int_equal(tsrnn_run_set_output(run, NULL, NULL, "none", true), TSRNN_OK);
    return run;
}

static char *work_dir;

static int setup(void **state)
{
    (void)state;
    work_dir = tu_mkdtemp();
    load_air_passengers();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(work_dir);
    free(work_dir);
    return 0;
}

/* --- versions, statuses, configuration -------------------------------------------------- */

static void test_versions_and_statuses(void **state)
{
    (void)state;
    assert_int_equal(tsrnn_api_version(), TSRNN_API_VERSION);
    assert_string_not_equal(tsrnn_version(), "");
    assert_string_equal(tsrnn_status_name(TSRNN_ERR_INTERRUPTED), "interrupted");
    assert_int_equal(tsrnn_status_exit_code(TSRNN_OK), 0);
    assert_int_equal(tsrnn_status_exit_code(TSRNN_ERR_USAGE), 2);
    assert_int_equal(tsrnn_status_exit_code(TSRNN_ERR_DATA), 2);
    assert_int_equal(tsrnn_status_exit_code(TSRNN_ERR_IO), 1);
    assert_int_equal(tsrnn_status_exit_code(TSRNN_ERR_COMM), 3);
    assert_int_equal(tsrnn_status_exit_code(TSRNN_ERR_INTERRUPTED), 130);
}

static void test_configuration(void **state)
{
    (void)state;
    struct tsrnn_run *run, *other;
    char value[256];
    assert_int_equal(tsrnn_run_create(&run), TSRNN_OK);
    assert_int_equal(tsrnn_run_create(&other), TSRNN_OK);
    /* Defaults are Darts'. */
    assert_int_equal(tsrnn_run_get(run, "model", "hidden_dim", value, sizeof(value)), 2);
    assert_string_equal(value, "25");
    assert_int_equal(tsrnn_run_set(run, "model", "hidden_dim", "20", "RNNModel(hidden_dim=20)"),
                     TSRNN_OK);
    assert_int_equal(tsrnn_run_set_override(run, "training.batch_size=16"), TSRNN_OK);
    assert_int_equal(tsrnn_run_read_ini_text(run, "[model]\nmodel = GRU\n", "test"), TSRNN_OK);
    tsrnn_run_get(run, "model", "hidden_dim", value, sizeof(value));
    assert_string_equal(value, "20");
    tsrnn_run_get(run, "model", "model", value, sizeof(value));
    assert_string_equal(value, "GRU");
    tsrnn_run_get(run, "training", "batch_size", value, sizeof(value));
    assert_string_equal(value, "16");
    tsrnn_run_get(other, "model", "hidden_dim", value, sizeof(value));
    assert_string_equal(value, "25"); /* the other run's is its own */

    /* A bad value: the status, and the message on that run, naming where it came from. */
    assert_int_equal(tsrnn_run_set(run, "model", "hidden_dim", "-3", "RNNModel(hidden_dim=-3)"),
                     TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "RNNModel(hidden_dim=-3)");
    tu_expect_in(tsrnn_run_error(run), "hidden_dim");
    assert_string_equal(tsrnn_run_error(other), "");
    assert_int_equal(tsrnn_run_set(run, "model", "hidden_dims", "3", NULL), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "did you mean [model] hidden_dim");
    assert_int_equal(tsrnn_run_get(run, "model", "nothing", value, sizeof(value)), 0);
    assert_int_equal(tsrnn_run_set_override(run, "no-dot"), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "section.key=value");
    assert_int_equal(tsrnn_run_set_output(run, NULL, NULL, "fancy", false), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "accepted: auto, bar, plain, none");
    /* A call that succeeds clears the message. */
    assert_int_equal(tsrnn_run_set(run, "model", "hidden_dim", "21", NULL), TSRNN_OK);
    assert_string_equal(tsrnn_run_error(run), "");

    /* The whole configuration reads back as INI text. */
    size_t n = tsrnn_run_config_text(run, NULL, 0);
    assert_true(n > 1000);
    char *text = malloc(n + 1);
    assert_int_equal(tsrnn_run_config_text(run, text, n + 1), n);
    tu_expect_in(text, "hidden_dim = 21\n");
    assert_int_equal(tsrnn_run_read_ini_text(other, text, "the first run's"), TSRNN_OK);
    tsrnn_run_get(other, "model", "model", value, sizeof(value));
    assert_string_equal(value, "GRU");
    free(text);

    /* Nothing to forecast with yet. */
    struct tsrnn_prediction *p = NULL;
    assert_int_equal(tsrnn_run_predict(run, 3, NULL, &p), TSRNN_ERR_USAGE);
    assert_null(p);
    tu_expect_in(tsrnn_run_error(run), "no model yet");
    tsrnn_run_destroy(run);
    tsrnn_run_destroy(other);
    tsrnn_run_destroy(NULL);
}

static void test_series_set_errors(void **state)
{
    (void)state;
    struct tsrnn_series_set *set;
    int64_t times[5] = { 0, 1, 2, 2, 4 };
    float values[5] = { 1, 2, NAN, 4, 5 };
    const char *names[] = { "y" }, *twice[] = { "y", "y" };
    assert_int_equal(tsrnn_series_set_create(&set), TSRNN_OK);
    assert_int_equal(
        tsrnn_series_set_add(set, NULL, "t", times, false, NULL, 5, values, 1, names, NULL),
        TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_series_set_error(set), "not strictly increasing at point 3");
    times[3] = 3;
    assert_int_equal(
        tsrnn_series_set_add(set, NULL, "t", times, false, NULL, 5, values, 1, names, NULL),
        TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_series_set_error(set), "component 0 of point 2 is nan");
    values[2] = 3;
    assert_int_equal(
        tsrnn_series_set_add(set, NULL, "t", times, false, "MS", 5, values, 1, names, NULL),
        TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_series_set_error(set), "freq 'MS' is a calendar frequency");
    float two[10] = { 0 };
    assert_int_equal(
        tsrnn_series_set_add(set, NULL, "t", times, false, NULL, 5, two, 2, twice, NULL),
        TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_series_set_error(set), "'y' is given twice");
    size_t index = 99;
    assert_int_equal(
        tsrnn_series_set_add(set, "a", "t", times, false, NULL, 5, values, 1, names, &index),
        TSRNN_OK);
    assert_int_equal(index, 0);
    assert_string_equal(tsrnn_series_set_error(set), "");
    assert_int_equal(
        tsrnn_series_set_add(set, "a", "t", times, false, NULL, 5, values, 1, names, NULL),
        TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_series_set_error(set), "series id 'a' is in the set already");
    /* Covariates must cover the series. */
    int64_t cov_times[3] = { 1, 2, 3 };
    float cov[3] = { 0, 0, 0 };
    const char *cov_names[] = { "x" };
    assert_int_equal(tsrnn_series_set_add_covariates(set, 0, cov_times, 3, cov, 1, cov_names),
                     TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_series_set_error(set), "accepted: covariates at every stamp of the series");
    assert_int_equal(tsrnn_series_set_count(set), 1);
    tsrnn_series_set_destroy(set);
}

/* --- fits ------------------------------------------------------------------------------- */

struct fit_numbers {
    double first_step_loss, val_loss, best_val_loss, epochs, steps;
    float forecast[24];
};

static void numbers_of(struct tsrnn_run *run, struct fit_numbers *out, bool from_arrays)
{
    out->first_step_loss = tsrnn_run_result(run, "first_step_loss");
    out->val_loss = tsrnn_run_result(run, "val_loss");
    out->best_val_loss = tsrnn_run_result(run, "best_val_loss");
    out->epochs = tsrnn_run_result(run, "epochs");
    out->steps = tsrnn_run_result(run, "steps");
    struct tsrnn_prediction *p;
    assert_int_equal(tsrnn_run_predict(run, 24, NULL, &p), TSRNN_OK);
    assert_int_equal(tsrnn_prediction_count(p), 1);
    assert_int_equal(tsrnn_prediction_length(p, 0), 24);
    assert_int_equal(tsrnn_prediction_times(p, 0)[0], stamps[TRAIN]);
    const float *values = tsrnn_prediction_values(p, 0);
    for (size_t i = 0; i < 24; i++)
        out->forecast[i] = from_arrays ? unscale(values[i]) : values[i];
    tsrnn_prediction_destroy(p);
}

/* The same fit from the arrays and from examples/air_passengers.ini equals bit for bit: the
 * losses and the forecast, inverse-scaled as the user's Scaler does. */
static void test_fit_arrays_equals_ini(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *arrays = guide_run(work_dir, "arrays", 300);
    assert_int_equal(tsrnn_run_fit(arrays, train, val), TSRNN_OK);
    struct fit_numbers a, f;
    numbers_of(arrays, &a, true);

    struct tsrnn_run *ini;
    assert_int_equal(tsrnn_run_create(&ini), TSRNN_OK);
    assert_int_equal(tsrnn_run_read_ini(ini, tu_source("examples/air_passengers.ini")), TSRNN_OK);
    char work[PATH_MAX + 32];
    snprintf(work, sizeof(work), "output.work_dir=%s", work_dir);
    const char *overrides[] = { work, "output.model_name=ini", "trainer.accelerator=cpu",
                                "forecast.n=0" };
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(tsrnn_run_set_override(ini, overrides[i]), TSRNN_OK);
    assert_int_equal(tsrnn_run_set_output(ini, NULL, NULL, "none", true), TSRNN_OK);
    assert_int_equal(tsrnn_run_fit(ini, NULL, NULL), TSRNN_OK);
    numbers_of(ini, &f, false);

    assert_true(a.first_step_loss == f.first_step_loss);
    assert_true(a.val_loss == f.val_loss);
    assert_true(a.best_val_loss == f.best_val_loss);
    assert_true(a.epochs == 300 && f.epochs == 300);
    assert_true(a.steps == 2100 && f.steps == 2100);
    assert_memory_equal(a.forecast, f.forecast, sizeof(a.forecast));
    /* The figures the CLI prints for the seed config (tests/test_bitident.c pins its bits). */
    assert_float_equal(a.first_step_loss, 0.0775389, 1e-7);
    assert_float_equal(a.val_loss, 0.0204097, 1e-7);
    printf("first step loss %.9g, val_loss %.9g, forecast[0] %.9g (arrays = INI, bit for bit)\n",
           a.first_step_loss, a.val_loss, (double)a.forecast[0]);

    char path[PATH_MAX];
    assert_true(tsrnn_run_path(arrays, "run_dir", path, sizeof(path)) > 0);
    tu_expect_in(path, "/arrays");
    struct stat st;
    char file[PATH_MAX + 32];
    snprintf(file, sizeof(file), "%s/metrics.csv", path);
    assert_int_equal(stat(file, &st), 0);
    snprintf(file, sizeof(file), "%s/logs/hparams.yaml", path);
    assert_int_equal(stat(file, &st), 0);
    tsrnn_run_destroy(arrays);
    tsrnn_run_destroy(ini);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

/* tsrnn-worker on the INI file prints the same first step loss and val_loss as the API. */
static void test_fit_equals_worker(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *run = guide_run(work_dir, "api_vs_worker", 300);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_OK);
    char line[256];
    snprintf(line, sizeof(line), "train_loss %.6g (first step)",
             tsrnn_run_result(run, "first_step_loss"));
    char work[PATH_MAX + 32];
    snprintf(work, sizeof(work), "output.work_dir=%s", work_dir);
    const char *argv[] = { tu_env("TSRNN_WORKER"),
                           "--set",
                           work,
                           "--set",
                           "output.model_name=worker",
                           "--set",
                           "trainer.accelerator=cpu",
                           tu_source("examples/air_passengers.ini"),
                           NULL };
    static struct tu_result result;
    assert_int_equal(tu_run(argv, 60, &result), 0);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, line);
    snprintf(line, sizeof(line), "val_loss %.6g (last epoch)", tsrnn_run_result(run, "val_loss"));
    tu_expect_in(result.out, line);
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

/* Two runs on two threads at once: nothing global is shared, each gives one run's numbers. */
struct thread_fit {
    const char *name;
    struct tsrnn_series_set *train, *val;
    enum tsrnn_status status;
    struct fit_numbers numbers;
    size_t callbacks;
};

static int count_progress(void *ctx, int64_t epoch, int64_t batch, int64_t batch_count,
                          double train_loss, double val_loss)
{
    (void)epoch, (void)batch, (void)batch_count, (void)train_loss, (void)val_loss;
    ((struct thread_fit *)ctx)->callbacks++;
    return 0;
}

static void *fit_thread(void *arg)
{
    struct thread_fit *t = arg;
    struct tsrnn_run *run = guide_run(work_dir, t->name, 60);
    tsrnn_run_set_progress(run, count_progress, t);
    t->status = tsrnn_run_fit(run, t->train, t->val);
    if (t->status == TSRNN_OK)
        numbers_of(run, &t->numbers, true);
    tsrnn_run_destroy(run);
    return NULL;
}

static void test_two_runs_in_two_threads(void **state)
{
    (void)state;
    struct thread_fit alone = { .name = "alone" }, t[2] = { { .name = "t0" }, { .name = "t1" } };
    guide_sets(&alone.train, &alone.val);
    fit_thread(&alone);
    assert_int_equal(alone.status, TSRNN_OK);
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        t[i].train = alone.train;
        t[i].val = alone.val; /* one set read by both: sets are read only during a fit */
        assert_int_equal(pthread_create(&threads[i], NULL, fit_thread, &t[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(t[i].status, TSRNN_OK);
        assert_true(t[i].numbers.first_step_loss == alone.numbers.first_step_loss);
        assert_true(t[i].numbers.val_loss == alone.numbers.val_loss);
        assert_memory_equal(t[i].numbers.forecast, alone.numbers.forecast,
                            sizeof(alone.numbers.forecast));
        /* Each thread's callback heard its own run: 60 epochs of 7 steps, each epoch's end. */
        assert_int_equal(t[i].callbacks, 60 * 7 + 60);
    }
    assert_int_equal(alone.callbacks, 60 * 7 + 60);
    tsrnn_series_set_destroy(alone.train);
    tsrnn_series_set_destroy(alone.val);
}

/* --- progress, output, cancellation ----------------------------------------------------- */

struct progress_log {
    int64_t steps, epochs, stop_at_epoch;
    double last_train_loss, last_val_loss;
    int64_t last_epoch;
    bool in_order;
};

static int log_progress(void *ctx, int64_t epoch, int64_t batch, int64_t batch_count,
                        double train_loss, double val_loss)
{
    struct progress_log *log = ctx;
    if (batch == batch_count && !isnan(val_loss)) {
        log->in_order &= epoch == log->epochs;
        log->epochs++;
        log->last_val_loss = val_loss;
    } else {
        log->in_order &= batch == log->steps % 7 + 1 && batch_count == 7 && isnan(val_loss);
        log->steps++;
        log->last_train_loss = train_loss;
    }
    log->last_epoch = epoch;
    return log->stop_at_epoch >= 0 && epoch >= log->stop_at_epoch;
}

struct text {
    char buffer[1 << 16];
    size_t used;
};

static void collect(void *ctx, const char *text, size_t nbytes)
{
    struct text *t = ctx;
    size_t room = sizeof(t->buffer) - 1 - t->used;
    nbytes = nbytes < room ? nbytes : room;
    memcpy(t->buffer + t->used, text, nbytes);
    t->used += nbytes;
    t->buffer[t->used] = '\0';
}

static void test_progress_and_output(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *run = guide_run(work_dir, "progress", 20);
    static struct text out;
    struct progress_log log = { .stop_at_epoch = -1, .in_order = true };
    assert_int_equal(tsrnn_run_set_output(run, collect, &out, "plain", false), TSRNN_OK);
    assert_int_equal(tsrnn_run_set_progress(run, log_progress, &log), TSRNN_OK);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_OK);
    assert_int_equal(log.steps, 140);
    assert_int_equal(log.epochs, 20);
    assert_true(log.in_order);
    assert_true(log.last_train_loss == tsrnn_run_result(run, "last_step_loss"));
    assert_true(log.last_val_loss == tsrnn_run_result(run, "val_loss"));
    /* The report, as tsrnn-worker prints it, went to the write function. */
    tu_expect_in(out.buffer, "GPU available: False, used: False");
    tu_expect_in(out.buffer, "Data: the series given to the fit: 144 points (1949-01 .. 1960-12");
    tu_expect_in(out.buffer, "Split: train 121 points (1949-01 .. 1959-01), val 23 points");
    tu_expect_in(out.buffer, "\nEpoch 19: 100%|");
    tu_expect_in(out.buffer, "| 7/7 [");
    tu_expect_in(out.buffer, "481 ");
    tu_expect_in(out.buffer, "`Trainer.fit` stopped: `max_epochs=20` reached.");
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

/* The callback asks to stop at epoch 3: the fit stops at the next step boundary with
 * TSRNN_ERR_INTERRUPTED and a checkpoint, and the model trained so far forecasts. */
static void test_cancel_from_callback(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *run = guide_run(work_dir, "cancelled", 300);
    struct progress_log log = { .stop_at_epoch = 3, .in_order = true };
    tsrnn_run_set_progress(run, log_progress, &log);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_ERR_INTERRUPTED);
    tu_expect_in(tsrnn_run_error(run), "interrupted at epoch 3");
    /* The request travels with the next step, which completes (every rank agrees on it):
     * the callback of step 21 asked, step 22 is the last. */
    assert_int_equal(log.steps, 3 * 7 + 2);
    tu_expect_in(tsrnn_run_error(run), "after step 22");
    char path[PATH_MAX];
    assert_true(tsrnn_run_path(run, "checkpoint", path, sizeof(path)) > 0);
    tu_expect_in(path, "last-epoch=3.safetensors");
    struct tsrnn_prediction *p;
    assert_int_equal(tsrnn_run_predict(run, 5, NULL, &p), TSRNN_OK);
    assert_int_equal(tsrnn_prediction_length(p, 0), 5);
    tsrnn_prediction_destroy(p);
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

struct canceller {
    struct tsrnn_run *run;
    volatile int64_t *steps;
};

static int count_steps(void *ctx, int64_t epoch, int64_t batch, int64_t batch_count,
                       double train_loss, double val_loss)
{
    (void)epoch, (void)batch, (void)batch_count, (void)train_loss, (void)val_loss;
    ++*(volatile int64_t *)ctx;
    return 0;
}

static void *cancel_soon(void *arg)
{
    struct canceller *c = arg;
    while (*c->steps < 50) /* the fit is under way */
        usleep(1000);
    tsrnn_run_cancel(c->run);
    return NULL;
}

/* tsrnn_run_cancel() from another thread stops a long fit within a step. */
static void test_cancel_from_thread(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *run = guide_run(work_dir, "cancelled_thread", 100000);
    volatile int64_t steps = 0;
    tsrnn_run_set_progress(run, count_steps, (void *)&steps);
    struct canceller c = { run, &steps };
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, cancel_soon, &c), 0);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_ERR_INTERRUPTED);
    pthread_join(thread, NULL);
    assert_true(tsrnn_run_result(run, "epochs") != tsrnn_run_result(run, "epochs") ||
                tsrnn_run_result(run, "epochs") < 100000);
    tu_expect_in(tsrnn_run_error(run), "interrupted at epoch");
    /* A later fit starts afresh: the request was for the one under way. */
    assert_int_equal(tsrnn_run_set(run, "training", "n_epochs", "2", NULL), TSRNN_OK);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_OK);
    assert_true(tsrnn_run_result(run, "epochs") == 2);
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

/* --- checkpoints, forecasts, backtests -------------------------------------------------- */

static void test_checkpoints(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *run = guide_run(work_dir, "ckpt", 40);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_OK);
    struct fit_numbers fitted;
    numbers_of(run, &fitted, true);
    char saved[PATH_MAX], run_dir[PATH_MAX];
    snprintf(saved, sizeof(saved), "%s/saved.safetensors", work_dir);
    assert_int_equal(tsrnn_run_save_checkpoint(run, saved), TSRNN_OK);
    tsrnn_run_path(run, "run_dir", run_dir, sizeof(run_dir));

    /* A new run from the saved file forecasts the same from the same series. */
    struct tsrnn_run *loaded;
    assert_int_equal(tsrnn_run_create(&loaded), TSRNN_OK);
    assert_int_equal(tsrnn_run_load_checkpoint(loaded, NULL, saved), TSRNN_OK);
    char value[64];
    tsrnn_run_get(loaded, "model", "hidden_dim", value, sizeof(value));
    assert_string_equal(value, "20");
    struct tsrnn_series_set *history;
    assert_int_equal(tsrnn_series_set_create(&history), TSRNN_OK);
    assert_int_equal(tsrnn_series_set_add(history, NULL, "Month", stamps, true, "MS", TRAIN, scaled,
                                          1, component, NULL),
                     TSRNN_OK);
    struct tsrnn_prediction *p;
    assert_int_equal(tsrnn_run_predict(loaded, 24, history, &p), TSRNN_OK);
    for (size_t i = 0; i < 24; i++)
        assert_true(unscale(tsrnn_prediction_values(p, 0)[i]) == fitted.forecast[i]);
    double mape;
    assert_false(tsrnn_prediction_scores(p, 0, &mape, NULL, NULL)); /* nothing after it */
    assert_true(isnan(mape));
    tsrnn_prediction_destroy(p);

    /* load_from_checkpoint(best=True) of the run folder; the model trained on arrays holds no
     * data to forecast from: the message says what to pass. */
    assert_int_equal(tsrnn_run_load_checkpoint(loaded, run_dir, "best"), TSRNN_OK);
    char path[PATH_MAX];
    tsrnn_run_path(loaded, "checkpoint", path, sizeof(path));
    tu_expect_in(path, "/checkpoints/best-epoch=");
    assert_int_equal(tsrnn_run_predict(loaded, 3, NULL, &p), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(loaded), "pass the series to forecast from");
    /* An empty set is refused by a forecast and a backtest, and nothing is left to free. */
    struct tsrnn_series_set *empty;
    assert_int_equal(tsrnn_series_set_create(&empty), TSRNN_OK);
    assert_int_equal(tsrnn_run_predict(loaded, 3, empty, &p), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(loaded), "the series set is empty");
    assert_int_equal(tsrnn_run_backtest(loaded, empty, NULL, 3, 1, false, &p), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(loaded), "the series set is empty");
    tsrnn_series_set_destroy(empty);
    assert_int_equal(tsrnn_run_load_checkpoint(loaded, run_dir, "nothing"), TSRNN_ERR_USAGE);
    assert_int_equal(tsrnn_run_load_checkpoint(loaded, NULL, "best"), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(loaded), "of which run folder");

    /* Without save_checkpoints the fit keeps no model, and says so. */
    assert_int_equal(tsrnn_run_set(run, "output", "save_checkpoints", "false", NULL), TSRNN_OK);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_OK);
    assert_int_equal(tsrnn_run_predict(run, 3, NULL, &p), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "save_checkpoints = true");
    tsrnn_series_set_destroy(history);
    tsrnn_run_destroy(loaded);
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

/* The API's backtest of the INI run equals tsrnn-predict --backtest's files. */
static void test_backtest_equals_predict(void **state)
{
    (void)state;
    struct tsrnn_run *run;
    assert_int_equal(tsrnn_run_create(&run), TSRNN_OK);
    assert_int_equal(tsrnn_run_read_ini(run, tu_source("examples/air_passengers.ini")), TSRNN_OK);
    char work[PATH_MAX + 32];
    snprintf(work, sizeof(work), "output.work_dir=%s", work_dir);
    const char *overrides[] = { work, "output.model_name=bt", "trainer.accelerator=cpu",
                                "forecast.n=0", "training.n_epochs=30" };
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(tsrnn_run_set_override(run, overrides[i]), TSRNN_OK);
    tsrnn_run_set_output(run, NULL, NULL, "none", true);
    assert_int_equal(tsrnn_run_fit(run, NULL, NULL), TSRNN_OK);
    struct tsrnn_prediction *p;
    assert_int_equal(tsrnn_run_backtest(run, NULL, "1959-02", 6, 1, false, &p), TSRNN_OK);
    assert_int_equal(tsrnn_prediction_count(p), 23 - 6 + 1);
    assert_int_equal(tsrnn_prediction_length(p, 0), 6);
    assert_int_equal(tsrnn_prediction_times(p, 1)[0], stamps[TRAIN + 1]);
    double mape, mae, rmse;
    assert_true(tsrnn_prediction_backtest_scores(p, 0, &mape, &mae, &rmse));
    char mine[PATH_MAX], run_dir[PATH_MAX], theirs[PATH_MAX];
    snprintf(mine, sizeof(mine), "%s/api_backtest.csv", work_dir);
    assert_int_equal(tsrnn_prediction_write_csv(p, mine), TSRNN_OK);
    tsrnn_run_path(run, "run_dir", run_dir, sizeof(run_dir));
    snprintf(theirs, sizeof(theirs), "%s/predict", work_dir);
    const char *argv[] = { tu_env("TSRNN_PREDICT"),
                           "--run",
                           run_dir,
                           "--checkpoint",
                           "last",
                           "--backtest",
                           "--horizon",
                           "6",
                           "--start",
                           "1959-02",
                           "--out",
                           theirs,
                           NULL };
    static struct tu_result result;
    assert_int_equal(tu_run(argv, 60, &result), 0);
    assert_int_equal(result.exit_code, 0);
    char line[128];
    snprintf(line, sizeof(line), "backtest: MAPE %.9g MAE %.9g RMSE %.9g", mape, mae, rmse);
    tu_expect_in(result.out, line);
    char *a = tu_read(mine), *b = tu_read(tu_path(theirs, "backtest.csv"));
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    tsrnn_prediction_destroy(p);
    /* A start outside the series: the message says what is accepted. */
    assert_int_equal(tsrnn_run_backtest(run, NULL, "1970-01", 6, 1, false, &p), TSRNN_ERR_USAGE);
    assert_null(p);
    assert_string_not_equal(tsrnn_run_error(run), "");
    tsrnn_run_destroy(run);
}

/* A fit on arrays with validation series that do not continue the training series, or with
 * [data] split settings, is refused before anything is written. */
static void test_fit_refusals(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    assert_int_equal(tsrnn_series_set_create(&train), TSRNN_OK);
    assert_int_equal(tsrnn_series_set_create(&val), TSRNN_OK);
    tsrnn_series_set_add(train, NULL, "Month", stamps, true, NULL, 100, scaled, 1, component, NULL);
    tsrnn_series_set_add(val, NULL, "Month", stamps + 110, true, NULL, 34, scaled + 110, 1,
                         component, NULL);
    struct tsrnn_run *run = guide_run(work_dir, "refused", 2);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_run_error(run), "the validation series starts at 1958-03, but the training "
                                       "series ends at 1957-04");
    assert_int_equal(tsrnn_run_set(run, "data", "split_after", "1955-01", NULL), TSRNN_OK);
    assert_int_equal(tsrnn_run_fit(run, train, NULL), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run),
                 "[data] split_after is set, but the fit is given its series");
    /* Finite values whose range float32 cannot hold: refused as a fit on files refuses them. */
    static float huge[60];
    for (size_t i = 0; i < 60; i++)
        huge[i] = i % 2 ? 3e38f : -3e38f;
    struct tsrnn_series_set *wide;
    assert_int_equal(tsrnn_series_set_create(&wide), TSRNN_OK);
    assert_int_equal(
        tsrnn_series_set_add(wide, NULL, "Month", stamps, true, "MS", 60, huge, 1, component, NULL),
        TSRNN_OK);
    struct tsrnn_run *wide_run = guide_run(work_dir, "wide", 2);
    assert_int_equal(tsrnn_run_fit(wide_run, wide, NULL), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_run_error(wide_run), "column '#Passengers' spans -3e+38 .. 3e+38 in the "
                                            "training part, a range float32 cannot hold");
    tsrnn_run_destroy(wide_run);
    tsrnn_series_set_destroy(wide);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/refused", work_dir);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0);
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

/* tsrnn_run_check() checks for the fit it is told of (tsrnn-worker's: the files of [data]
 * path), and a change after it is checked again by the fit. */
static void test_check(void **state)
{
    (void)state;
    struct tsrnn_series_set *train, *val;
    guide_sets(&train, &val);
    struct tsrnn_run *run = guide_run(work_dir, "checked", 2);
    assert_int_equal(tsrnn_run_check(run, NULL), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "[data] path is not set");
    assert_int_equal(tsrnn_run_check(run, train), TSRNN_OK);
    assert_string_equal(tsrnn_run_error(run), "");
    /* Valid alone, against the rule across keys: the fit finds it though the run was checked. */
    assert_int_equal(tsrnn_run_set(run, "model", "training_length", "10", NULL), TSRNN_OK);
    assert_int_equal(tsrnn_run_fit(run, train, val), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_run_error(run), "training_length = 10 is smaller than input_chunk_length");
    assert_int_equal(tsrnn_run_check(run, train), TSRNN_ERR_USAGE);
    tsrnn_run_destroy(run);
    tsrnn_series_set_destroy(train);
    tsrnn_series_set_destroy(val);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions_and_statuses),
        cmocka_unit_test(test_configuration),
        cmocka_unit_test(test_series_set_errors),
        cmocka_unit_test(test_fit_arrays_equals_ini),
        cmocka_unit_test(test_fit_equals_worker),
        cmocka_unit_test(test_two_runs_in_two_threads),
        cmocka_unit_test(test_progress_and_output),
        cmocka_unit_test(test_cancel_from_callback),
        cmocka_unit_test(test_cancel_from_thread),
        cmocka_unit_test(test_checkpoints),
        cmocka_unit_test(test_backtest_equals_predict),
        cmocka_unit_test(test_fit_refusals),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
