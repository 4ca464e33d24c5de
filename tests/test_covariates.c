/* Future covariates: the encoders against real Darts 0.48.1 (tests/fixtures/encoders.txt,
 * scripts/gen-covariates-fixtures.py): every datetime attribute, one-hot and cyclic form and
 * the relative position on a monthly (AirPassengers), an hourly, a daily and a weekly index,
 * and the add_encoders pipeline with its Scaler on AirPassengers' training part, validation
 * part and a 26-step forecast; the training windows' (y[t], cov[t+1]) inputs; the refusals;
 * and the Darts RNN example notebook's covariate run (examples/air_passengers_covariates.ini)
 * through the real tsrnn-worker against real Darts (tests/fixtures/cov_lstm_42_*,
 * covariates-fixtures.md): the same initial weights, every step and every val_loss, and the
 * 26-month forecast; a run with Darts' own add_encoders through fit() and predict(); the
 * covariates as data-file columns; checkpoints, tsrnn-predict, resume and the pjrt backend. */
#include <errno.h>
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
#include "tsrnn/data.h"
#include "tsrnn/encoders.h"
#include "tsrnn/model.h"
#include "tsrnn/safetensors.h"
#include "tsrnn_build.h"

#define MAX_WIDTH 32
#define MAX_ROWS  512
#define TOLERANCE 1e-6

static enum tsrnn_encoder_kind kind_from_name(const char *name)
{
    if (strcmp(name, "cyclic") == 0)
        return TSRNN_ENCODER_CYCLIC;
    if (strcmp(name, "one_hot") == 0)
        return TSRNN_ENCODER_ONE_HOT;
    if (strcmp(name, "position") == 0)
        return TSRNN_ENCODER_POSITION;
    assert_string_equal(name, "attribute");
    return TSRNN_ENCODER_ATTRIBUTE;
}

/* Reads `rows` fixture lines of `width` numbers each into expected (rows, width); returns the
 * worst absolute difference from got (rows, width). */
static double compare_rows(char **save, const float *got, size_t rows, size_t width)
{
    double worst = 0;
    for (size_t i = 0; i < rows; i++) {
        char *line = strtok_r(NULL, "\n", save), *cursor = line;
        assert_non_null(line);
        for (size_t j = 0; j < width; j++) {
            char *end;
            double expected = strtod(cursor, &end);
            assert_true(end != cursor);
            cursor = end;
            double diff = fabs(expected - (double)got[i * width + j]);
            if (diff > TOLERANCE)
                print_error("row %zu column %zu: Darts %.9g, tsrnn %.9g\n", i, j, expected,
                            (double)got[i * width + j]);
            worst = diff > worst ? diff : worst;
        }
    }
    return worst;
}

static int64_t parse_stamp(const char *text)
{
    char copy[64];
    snprintf(copy, sizeof(copy), "%s", text);
    char *t = strchr(copy, 'T');
    if (t != NULL)
        *t = ' ';
    int64_t seconds;
    enum tsrnn_time_unit unit;
    assert_true(tsrnn_time_parse(copy, &seconds, &unit));
    return seconds;
}

static void test_encoders_match_darts(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("tests/fixtures/encoders.txt"));
    assert_non_null(text);
    static float got[MAX_ROWS * MAX_WIDTH];
    size_t cases = 0;
    double worst = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "case ", 5) != 0)
            continue;
        char start[32], freq_name[16], kind[24], attribute[24];
        size_t length, width;
        long long reference;
        assert_int_equal(sscanf(line, "case %31s %15s %zu %23s %23s %lld %zu", start, freq_name,
                                &length, kind, attribute, &reference, &width),
                         7);
        assert_true(length <= MAX_ROWS && width <= MAX_WIDTH);
        struct tsrnn_freq freq;
        assert_true(tsrnn_freq_parse(&freq, freq_name));
        struct tsrnn_encoder enc;
        const char *why;
        assert_true(tsrnn_encoder_parse(&enc, kind_from_name(kind), attribute, &why));
        assert_int_equal(tsrnn_encoder_width(&enc), width);
        assert_int_equal(tsrnn_encoders_compute(got, width, &enc, 1, &freq, TSRNN_TIME_SECOND,
                                                parse_stamp(start), length, reference),
                         TSRNN_OK);
        char shown[128];
        snprintf(shown, sizeof(shown), "%s", line);
        double w = compare_rows(&save, got, length, width);
        if (w > TOLERANCE)
            print_error("in %s\n", shown);
        assert_true(w <= TOLERANCE);
        worst = w > worst ? w : worst;
        cases++;
    }
    printf("# %zu encoder cases (4 indexes), worst |Darts - tsrnn| %.3g\n", cases, worst);
    assert_int_equal(cases, 6 + 9 + 9 + 3);
    free(text);
}

/* add_encoders = {'cyclic': {'future': ['month']}, 'datetime_attribute': {'future': ['year',
 * 'month']}, 'position': {'future': ['relative']}, 'transformer': Scaler()} on AirPassengers
 * split after 1959-01: the transformer fitted on the training part's encodings, then applied
 * to the validation part's (position counted from its own end, as fit() encodes val_series)
 * and to predict(n=26)'s, which start input_chunk_length - 1 = 13 points before the end. */
static void test_encoder_pipeline_matches_darts(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("tests/fixtures/encoders.txt"));
    assert_non_null(text);
    struct tsrnn_encoder enc[4];
    const char *why;
    /* Written in another order than Darts applies them: tsrnn_encoder_order() sorts. */
    assert_true(tsrnn_encoder_parse(&enc[0], TSRNN_ENCODER_ATTRIBUTE, "year", &why));
    assert_true(tsrnn_encoder_parse(&enc[1], TSRNN_ENCODER_POSITION, "relative", &why));
    assert_true(tsrnn_encoder_parse(&enc[2], TSRNN_ENCODER_ATTRIBUTE, "month", &why));
    assert_true(tsrnn_encoder_parse(&enc[3], TSRNN_ENCODER_CYCLIC, "month", &why));
    tsrnn_encoder_order(enc, 4);
    char name[TSRNN_ENCODER_NAME_MAX];
    tsrnn_encoder_column_name(&enc[0], 1, name, sizeof(name));
    assert_string_equal(name, "darts_enc_fc_cyc_month_cos");
    tsrnn_encoder_column_name(&enc[1], 0, name, sizeof(name));
    assert_string_equal(name, "darts_enc_fc_dta_year");
    tsrnn_encoder_column_name(&enc[3], 0, name, sizeof(name));
    assert_string_equal(name, "darts_enc_fc_pos_relative");
    size_t K = 5;

    struct tsrnn_freq freq;
    assert_true(tsrnn_freq_parse(&freq, "MS"));
    static float rows[MAX_ROWS * MAX_WIDTH];
    struct tsrnn_scaler scaler;
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    while (line != NULL && strncmp(line, "pipeline ", 9) != 0)
        line = strtok_r(NULL, "\n", &save);
    assert_non_null(line);
    double worst = 0;
    for (int part = 0; part < 3; part++) {
        char name_part[16], start[16];
        size_t length, width;
        line = strtok_r(NULL, "\n", &save);
        assert_int_equal(sscanf(line, "part %15s %15s %zu %zu", name_part, start, &length, &width),
                         3 + 1);
        assert_int_equal(width, K);
        /* the part's own end is the reference, but for inference the training part's */
        int64_t reference = part == 2 ? 13 : (int64_t)length - 1;
        assert_int_equal(tsrnn_encoders_compute(rows, K, enc, 4, &freq, TSRNN_TIME_DAY,
                                                parse_stamp(start), length, reference),
                         TSRNN_OK);
        if (part == 0) {
            tsrnn_scaler_fit(&scaler, rows, length, K);
            tsrnn_encoders_keep_unscaled(&scaler, enc, 4, 0);
        }
        tsrnn_scaler_transform(&scaler, rows, length);
        double w = compare_rows(&save, rows, length, K);
        worst = w > worst ? w : worst;
    }
    printf("# add_encoders + Scaler: train, val and inference covariates, worst %.3g\n", worst);
    assert_true(worst <= TOLERANCE);
    free(text);
}

static void test_windows_put_next_covariates_beside_targets(void **state)
{
    (void)state;
    /* L = 8 points, C = 2, K = 3, T = 3: y[t] = (10 t, 10 t + 1), cov[t] = (100 t + k). */
    float values[8 * 2], covariates[8 * 3];
    for (size_t t = 0; t < 8; t++) {
        values[t * 2] = (float)(10 * t);
        values[t * 2 + 1] = (float)(10 * t + 1);
        for (size_t k = 0; k < 3; k++)
            covariates[t * 3 + k] = (float)(100 * t + k);
    }
    struct tsrnn_windows w[2];
    tsrnn_windows_init(&w[0], values, 8, 2, 3);
    tsrnn_windows_set_covariates(&w[0], covariates, 3);
    w[1] = w[0];
    assert_int_equal(w[0].count, 5);
    size_t idx[2] = { 0, 4 }; /* starts 4 and 0 */
    float input[2 * 3 * 5], target[2 * 3 * 2];
    tsrnn_windows_gather(&w[0], idx, 2, input, target);
    for (size_t b = 0; b < 2; b++) {
        size_t s = tsrnn_windows_start(&w[0], idx[b]);
        for (size_t t = 0; t < 3; t++) {
            const float *in = input + (b * 3 + t) * 5;
            assert_true(in[0] == (float)(10 * (s + t)) && in[1] == (float)(10 * (s + t) + 1));
            for (size_t k = 0; k < 3; k++)
                assert_true(in[2 + k] == (float)(100 * (s + t + 1) + k));
            assert_true(target[(b * 3 + t) * 2] == (float)(10 * (s + t + 1)));
        }
    }
    /* The list gathers the same rows with its (B, T, C + K) stride. */
    struct tsrnn_window_list list;
    assert_int_equal(tsrnn_window_list_init(&list, w, 2, 0), TSRNN_OK);
    float list_input[2 * 3 * 5], list_target[2 * 3 * 2];
    size_t list_idx[2] = { 0, 5 + 4 }; /* series 0 window 0, series 1 window 4 */
    tsrnn_window_list_gather(&list, list_idx, 2, list_input, list_target);
    assert_memory_equal(list_input, input, sizeof(input));
    assert_memory_equal(list_target, target, sizeof(target));

    /* K = 0 is the plain (B, T, C) layout. */
    tsrnn_windows_set_covariates(&w[0], covariates, 0);
    tsrnn_windows_gather(&w[0], idx, 1, input, target);
    assert_true(input[0] == 40.0f && input[2] == 50.0f && w[0].covariates == NULL);
}

static void test_encoders_refuse(void **state)
{
    (void)state;
    struct tsrnn_encoder e;
    const char *why = NULL;
    assert_false(tsrnn_encoder_parse(&e, TSRNN_ENCODER_CYCLIC, "year", &why));
    assert_non_null(strstr(why, "no period"));
    assert_false(tsrnn_encoder_parse(&e, TSRNN_ENCODER_ONE_HOT, "week", &why));
    assert_non_null(strstr(why, "depends on the dates"));
    assert_false(tsrnn_encoder_parse(&e, TSRNN_ENCODER_ATTRIBUTE, "fortnight", &why));
    assert_non_null(strstr(why, "dayofweek"));
    assert_false(tsrnn_encoder_parse(&e, TSRNN_ENCODER_POSITION, "absolute", &why));
    assert_non_null(strstr(why, "relative"));

    /* Dates on an integer index: refused; position works there. */
    struct tsrnn_freq step;
    assert_true(tsrnn_freq_parse(&step, "1"));
    float out[4];
    assert_true(tsrnn_encoder_parse(&e, TSRNN_ENCODER_ATTRIBUTE, "month", &why));
    assert_int_equal(tsrnn_encoders_compute(out, 1, &e, 1, &step, TSRNN_TIME_INDEX, 0, 4, 1),
                     TSRNN_ERR_DATA);
    assert_non_null(strstr(tsrnn_last_error(), "integer index"));
    assert_true(tsrnn_encoder_parse(&e, TSRNN_ENCODER_POSITION, "relative", &why));
    assert_int_equal(tsrnn_encoders_compute(out, 1, &e, 1, &step, TSRNN_TIME_INDEX, 5, 4, 1),
                     TSRNN_OK);
    assert_true(out[0] == -1.0f && out[3] == 2.0f);
}

static double rel(double a, double b)
{
    return fabs(a - b) / fabs(b);
}

/* Runs tsrnn-predict for `n` steps from the last checkpoint of `run` (no config); returns its
 * exit code, its output in *result. */
static int predict_last(const char *run, const char *n, struct tu_result *result)
{
    const char *argv[] = {
        tu_env("TSRNN_PREDICT"), "--run", run, "--checkpoint", "last", "--n", n, NULL
    };
    assert_int_equal(tu_run(argv, 30, result), 0);
    return result->exit_code;
}

/* ... and that it prints the file `csv` (the trainer's forecast.csv) byte for byte. */
static void expect_predict_prints(const char *run, const char *n, const char *csv)
{
    struct tu_result result;
    assert_int_equal(predict_last(run, n, &result), 0);
    char *expected = tu_read(csv);
    assert_non_null(expected);
    assert_string_equal(result.out, expected);
    free(expected);
}

/* Darts' RNNModel(model="LSTM", random_state=42) with 13 future covariates draws its initial
 * weights for input_size 14: tsrnn's initialisation for I = C + K gives them bit for bit. */
static void test_initial_weights_with_covariates_are_darts(void **state)
{
    (void)state;
    struct tsrnn_model_dims dims = { .kind = TSRNN_MODEL_LSTM,
                                     .input_count = 1 + 13,
                                     .hidden_count = 20,
                                     .layer_count = 1,
                                     .output_count = 1 };
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &dims);
    assert_int_equal(table.total_count, 2901);
    float *ours = malloc(table.total_count * sizeof(float));
    float *darts = malloc(table.total_count * sizeof(float));
    assert_non_null(ours);
    assert_non_null(darts);
    tsrnn_model_init_params(ours, &table, &dims, 42);
    assert_int_equal(tsrnn_model_load_params(
                         darts, &table, tu_source("tests/fixtures/cov_lstm_42_init.safetensors")),
                     TSRNN_OK);
    assert_memory_equal(ours, darts, table.total_count * sizeof(float));
    free(ours);
    free(darts);
}

static size_t read_forecast(const char *path, double *out, size_t capacity)
{
    char *text = tu_read(path);
    assert_non_null(text);
    size_t count = 0;
    for (char *line = strchr(text, '\n'); line != NULL && line[1] != '\0' && count < capacity;
         line = strchr(line + 1, '\n'))
        out[count++] = strtod(strchr(line + 1, ',') + 1, NULL);
    free(text);
    return count;
}

/* The notebook's run (LSTM, hidden 20, year + month one-hot, 300 epochs, random_state 42,
 * shuffled, validated every epoch), tsrnn against real Darts: the first step's loss equal
 * (1e-6), every step of the first 300 within 1e-5 and every val_loss and the end within 1e-4
 * (measured: 5.7e-7, 1.4e-6), the 26 forecast months within 1e-4 (measured 1.8e-7) and so
 * the MAPE: Darts' 4.7041% over the 23 validation months. Short version: 30 epochs. */
static void test_notebook_covariate_run_matches_darts(void **state)
{
    (void)state;
    long epochs = tu_short() ? 30 : 300;
    char epochs_set[64], path[PATH_MAX];
    snprintf(epochs_set, sizeof(epochs_set), "training.n_epochs=%ld", epochs);
    const char *sets[] = { epochs_set, "output.save_checkpoints=false",
                           "output.log_tensorboard=false", "forecast.plot=false", NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "notebook", sets, 120),
        0);
    tu_expect_in(result.out, "Covariates: 13 future covariates (the model's input: 1 + 13): "
                             "datetime_attribute year, one_hot month (12 columns); scaler minmax");
    static struct tu_metrics_row ours[2400], darts[2400];
    snprintf(path, sizeof(path), "%s/notebook/metrics.csv", tu_run_dir());
    size_t n = tu_read_metrics(path, ours, 2400);
    assert_int_equal(
        tu_read_metrics(tu_source("tests/fixtures/cov_lstm_42_metrics.csv"), darts, 2400), 2400);
    assert_int_equal(n, (size_t)epochs * 8); /* 7 steps + 1 validation row per epoch */
    double first300 = 0.0, worst = 0.0;
    size_t steps = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ours[i].step, darts[i].step);
        bool is_step = !isnan(darts[i].train_loss);
        double err = is_step ? rel(ours[i].train_loss, darts[i].train_loss)
                             : rel(ours[i].val_loss, darts[i].val_loss);
        worst = fmax(worst, err);
        if (is_step && steps++ < 300)
            first300 = fmax(first300, err);
    }
    printf("# notebook covariate run: first step %.9g (Darts %.9g); worst relative difference: "
           "first 300 steps %.2e, all %zu rows %.2e\n",
           ours[0].train_loss, darts[0].train_loss, first300, n, worst);
    assert_true(rel(ours[0].train_loss, darts[0].train_loss) <= 1e-6);
    assert_true(first300 <= 1e-5);
    assert_true(worst <= 1e-4);
    if (epochs < 300)
        return;
    double f_ours[32], f_darts[32], f_worst = 0.0;
    snprintf(path, sizeof(path), "%s/notebook/forecast.csv", tu_run_dir());
    assert_int_equal(read_forecast(path, f_ours, 32), 26);
    assert_int_equal(
        read_forecast(tu_source("tests/fixtures/cov_lstm_42_forecast.csv"), f_darts, 32), 26);
    for (size_t i = 0; i < 26; i++)
        f_worst = fmax(f_worst, rel(f_ours[i], f_darts[i]));
    const char *mape = strstr(result.out, "MAPE ");
    assert_non_null(mape);
    printf("# forecast: 26 months within %.2e of Darts; %.*s\n", f_worst, 40, mape);
    assert_true(f_worst <= 1e-4);
    assert_true(fabs(strtod(mape + 5, NULL) - 4.7041) < 0.005);
}

/* The same covariates as data columns (tests/fixtures/air_covariates.csv: the raw year and
 * the month one-hot beside #Passengers), read with [covariates] columns and scaled by
 * scaler = minmax: the run is Darts' notebook run again (every row within 1e-5), the forecast
 * over the 23 validation months the same, tsrnn-predict rebuilds the columns from the file,
 * and a forecast past the file's last date is refused with the dates it lacks (exit 2). */
static void test_covariate_columns_from_the_data_file(void **state)
{
    (void)state;
    char data[PATH_MAX + 16], run[PATH_MAX];
    snprintf(data, sizeof(data), "data.path=%s", tu_source("tests/fixtures/air_covariates.csv"));
    const char *sets[] = { data,
                           "covariates.columns=year, month_0, month_1, month_2, month_3, "
                           "month_4, month_5, month_6, month_7, month_8, month_9, month_10, "
                           "month_11",
                           "covariates.datetime_attribute=",
                           "covariates.one_hot=",
                           "forecast.n=23",
                           "output.log_tensorboard=false",
                           "forecast.plot=false",
                           "--quiet",
                           NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "columns", sets, 120),
        0);
    static struct tu_metrics_row ours[2400], darts[2400];
    snprintf(run, sizeof(run), "%s/columns", tu_run_dir());
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/metrics.csv", run);
    assert_int_equal(tu_read_metrics(path, ours, 2400), 2400);
    assert_int_equal(
        tu_read_metrics(tu_source("tests/fixtures/cov_lstm_42_metrics.csv"), darts, 2400), 2400);
    double worst = 0.0;
    for (size_t i = 0; i < 2400; i++)
        worst =
            fmax(worst, isnan(darts[i].train_loss) ? rel(ours[i].val_loss, darts[i].val_loss)
                                                   : rel(ours[i].train_loss, darts[i].train_loss));
    double f_ours[32], f_darts[32], f_worst = 0.0;
    snprintf(path, sizeof(path), "%s/forecast.csv", run);
    assert_int_equal(read_forecast(path, f_ours, 32), 23);
    assert_int_equal(
        read_forecast(tu_source("tests/fixtures/cov_lstm_42_forecast.csv"), f_darts, 32), 26);
    for (size_t i = 0; i < 23; i++)
        f_worst = fmax(f_worst, rel(f_ours[i], f_darts[i]));
    printf("# covariate columns from the file: 2400 rows within %.2e of Darts, forecast %.2e\n",
           worst, f_worst);
    assert_true(worst <= 1e-5);
    assert_true(f_worst <= 1e-4);

    expect_predict_prints(run, "23", path);
    assert_int_equal(predict_last(run, "26", &result), 2);
    tu_expect_in(result.err, "end at 1960-12, but the forecast needs them up to 1961-03: the 3 "
                             "dates 1961-01 .. 1961-03 are missing");

    /* Without value_cols every other column would be a value: refused. */
    const char *no_values[] = { data, "data.value_cols=", "covariates.columns=year", NULL };
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "bad", no_values, 30),
        2);
    tu_expect_in(result.err, "[covariates] columns = year needs [data] value_cols");
}

/* The checkpoint carries the encoders and their scaler (tsrnn.covariates): tsrnn-predict,
 * given only the run folder, rebuilds the covariates and forecasts exactly what the trainer
 * forecast at the end of training, byte for byte. */
static void test_predict_rebuilds_covariates_from_the_checkpoint(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=3",
                           "output.save_checkpoints=true",
                           "output.log_tensorboard=false",
                           "forecast.plot=false",
                           "--quiet",
                           NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "ckpt", sets, 60), 0);
    char run[PATH_MAX], trained[PATH_MAX + 32];
    snprintf(run, sizeof(run), "%s/ckpt", tu_run_dir());
    snprintf(trained, sizeof(trained), "%s/forecast.csv", run);
    expect_predict_prints(run, "26", trained);
    printf("# tsrnn-predict from the checkpoint: the trainer's 26-month forecast, byte for byte\n");
}

/* The pjrt backend (XLA's CPU plugin) builds its programs for I = C + K inputs and O = C
 * outputs: 5 epochs of the notebook run equal the CPU backend's (1e-5; measured 1.1e-7).
 * Skipped where the build has no pjrt backend or the plugin is not cached. */
static void test_pjrt_takes_covariates(void **state)
{
    (void)state;
    const char *env = getenv("TSRNN_PJRT_PLUGIN");
    char plugin[PATH_MAX + 32], path[PATH_MAX];
    snprintf(plugin, sizeof(plugin), "trainer.pjrt_plugin=%s",
             env != NULL && env[0] ? env : tu_env("TSRNN_PJRT_PLUGIN_DEFAULT"));
    if (!TSRNN_HAVE_PJRT_BACKEND || access(strchr(plugin, '=') + 1, R_OK) != 0) {
        printf("# skipped: no pjrt backend or no PJRT plugin (scripts/install-deps.sh)\n");
        skip();
    }
    static struct tu_metrics_row rows[2][64];
    const char *accelerators[] = { "trainer.accelerator=cpu", "trainer.accelerator=xla" };
    const char *names[] = { "on_cpu", "on_xla" };
    size_t n[2];
    for (int a = 0; a < 2; a++) {
        const char *sets[] = { accelerators[a],
                               plugin,
                               "training.n_epochs=5",
                               "output.save_checkpoints=false",
                               "output.log_tensorboard=false",
                               "forecast.plot=false",
                               "--quiet",
                               NULL };
        struct tu_result result;
        assert_int_equal(
            tu_train_config(&result, "examples/air_passengers_covariates.ini", names[a], sets, 120),
            0);
        snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), names[a]);
        n[a] = tu_read_metrics(path, rows[a], 64);
    }
    assert_int_equal(n[0], 40);
    assert_int_equal(n[1], 40);
    double worst = 0.0;
    for (size_t i = 0; i < n[0]; i++)
        worst = fmax(worst, isnan(rows[0][i].train_loss)
                                ? rel(rows[1][i].val_loss, rows[0][i].val_loss)
                                : rel(rows[1][i].train_loss, rows[0][i].train_loss));
    printf("# pjrt (XLA CPU) vs CPU with 13 covariates: 40 rows within %.2e\n", worst);
    assert_true(worst <= 1e-5);
}

/* Interrupted after epoch 3 and resumed, a covariate run ends as the uninterrupted one:
 * metrics.csv byte for byte (the covariates and their scaler are rebuilt from the data). */
static void test_resume_with_covariates_is_bit_identical(void **state)
{
    (void)state;
    const char *common[] = { "output.log_tensorboard=false", "forecast.plot=false", "forecast.n=0",
                             "--quiet" };
    const char *runs[3][3] = { { "training.n_epochs=6", "output.force_reset=true", NULL },
                               { "training.n_epochs=3", "output.force_reset=true", NULL },
                               { "training.n_epochs=6", "output.force_reset=false",
                                 "training.resume=last" } };
    const char *names[3] = { "whole", "resumed", "resumed" };
    struct tu_result result;
    for (int r = 0; r < 3; r++) {
        const char *sets[8] = { common[0], common[1], common[2], common[3] };
        for (int i = 0; i < 3 && runs[r][i] != NULL; i++)
            sets[4 + i] = runs[r][i];
        assert_int_equal(
            tu_train_config(&result, "examples/air_passengers_covariates.ini", names[r], sets, 60),
            0);
    }
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof(a), "%s/whole/metrics.csv", tu_run_dir());
    snprintf(b, sizeof(b), "%s/resumed/metrics.csv", tu_run_dir());
    char *whole = tu_read(a), *resumed = tu_read(b);
    assert_non_null(whole);
    assert_non_null(resumed);
    assert_string_equal(resumed, whole);
    printf("# resumed after epoch 3: metrics.csv identical to the whole run's\n");
    free(whole);
    free(resumed);
}

/* Darts' own add_encoders through fit() and predict() (tests/fixtures/cov_enc_gru_1_*: GRU,
 * random_state 1, 30 epochs, cyclic month, year, relative position and the Scaler
 * transformer): every row within 1e-5 (measured 5.0e-7; the validation rows check that the
 * validation part's positions count from its own end) and the 26-month forecast within
 * 1e-4 (measured 1.5e-7). */
static void test_add_encoders_run_matches_darts(void **state)
{
    (void)state;
    const char *sets[] = { "model.model=GRU",
                           "training.random_state=1",
                           "training.n_epochs=30",
                           "covariates.cyclic=month",
                           "covariates.datetime_attribute=year",
                           "covariates.one_hot=",
                           "covariates.position=relative",
                           "output.save_checkpoints=false",
                           "output.log_tensorboard=false",
                           "forecast.plot=false",
                           NULL };
    struct tu_result result;
    assert_int_equal(tu_train_config(&result, "examples/air_passengers_covariates.ini",
                                     "add_encoders", sets, 60),
                     0);
    tu_expect_in(result.out, "Covariates: 4 future covariates (the model's input: 1 + 4): cyclic "
                             "month (2 columns), datetime_attribute year, position relative");
    static struct tu_metrics_row ours[240], darts[240];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/add_encoders/metrics.csv", tu_run_dir());
    assert_int_equal(tu_read_metrics(path, ours, 240), 240);
    assert_int_equal(
        tu_read_metrics(tu_source("tests/fixtures/cov_enc_gru_1_metrics.csv"), darts, 240), 240);
    double worst = 0.0, f_worst = 0.0, f_ours[32], f_darts[32];
    for (size_t i = 0; i < 240; i++)
        worst =
            fmax(worst, isnan(darts[i].train_loss) ? rel(ours[i].val_loss, darts[i].val_loss)
                                                   : rel(ours[i].train_loss, darts[i].train_loss));
    snprintf(path, sizeof(path), "%s/add_encoders/forecast.csv", tu_run_dir());
    assert_int_equal(read_forecast(path, f_ours, 32), 26);
    assert_int_equal(
        read_forecast(tu_source("tests/fixtures/cov_enc_gru_1_forecast.csv"), f_darts, 32), 26);
    for (size_t i = 0; i < 26; i++)
        f_worst = fmax(f_worst, rel(f_ours[i], f_darts[i]));
    printf("# Darts' add_encoders run (GRU, seed 1): first step %.9g (Darts %.9g), 240 rows "
           "within %.2e, forecast %.2e\n",
           ours[0].train_loss, darts[0].train_loss, worst, f_worst);
    assert_true(rel(ours[0].train_loss, darts[0].train_loss) <= 1e-6);
    assert_true(worst <= 1e-5);
    assert_true(f_worst <= 1e-4);
}

/* A covariate column and encoders together (tests/fixtures/cov_colenc_*: real Darts, a monthly
 * `load` with a `temp` column, datetime_attribute month and year, Scaler transformer). With
 * user covariates Darts encodes over the covariates' own index, the whole series, and fits
 * the transformer on all of it (the year 2010 .. 2020, not the training part's 2010 ..
 * 2018): every step and val_loss within 1e-5, the 24-month forecast within 1e-5 (measured
 * 5.9e-7 and 3.4e-7). Fitting on the training part alone, as tsrnn did, left rows 2.2e-1 and
 * the forecast 2.7e-2 from Darts'. */
static void test_covariate_columns_with_encoders_match_darts(void **state)
{
    (void)state;
    char data[PATH_MAX + 16];
    snprintf(data, sizeof(data), "data.path=%s", tu_source("tests/fixtures/cov_load.csv"));
    const char *sets[] = { data,
                           "data.time_col=month",
                           "data.value_cols=load",
                           "data.split_after=2018-12",
                           "covariates.columns=temp",
                           "covariates.datetime_attribute=month, year",
                           "covariates.one_hot=",
                           "model.hidden_dim=12",
                           "model.training_length=12",
                           "model.input_chunk_length=6",
                           "training.n_epochs=30",
                           "training.lr=5e-3",
                           "training.random_state=3",
                           "forecast.n=24",
                           "output.log_tensorboard=false",
                           "output.save_checkpoints=false",
                           "forecast.plot=false",
                           NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "colenc", sets, 60), 0);
    static struct tu_metrics_row ours[256], darts[256];
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/colenc/metrics.csv", tu_run_dir());
    size_t n = tu_read_metrics(path, ours, 256);
    assert_int_equal(n, 210);
    assert_int_equal(
        tu_read_metrics(tu_source("tests/fixtures/cov_colenc_metrics.csv"), darts, 256), n);
    double worst = 0.0, f_worst = 0.0, f_ours[32], f_darts[32];
    for (size_t i = 0; i < n; i++)
        worst =
            fmax(worst, isnan(darts[i].train_loss) ? rel(ours[i].val_loss, darts[i].val_loss)
                                                   : rel(ours[i].train_loss, darts[i].train_loss));
    snprintf(path, sizeof(path), "%s/colenc/forecast.csv", tu_run_dir());
    assert_int_equal(read_forecast(path, f_ours, 32), 24);
    assert_int_equal(
        read_forecast(tu_source("tests/fixtures/cov_colenc_forecast.csv"), f_darts, 32), 24);
    for (size_t i = 0; i < 24; i++)
        f_worst = fmax(f_worst, rel(f_ours[i], f_darts[i]));
    printf("# temp column + month, year encoders: first step %.9g (Darts %.9g), %zu rows within "
           "%.2e, forecast within %.2e\n",
           ours[0].train_loss, darts[0].train_loss, n, worst, f_worst);
    assert_true(worst <= 1e-5);
    assert_true(f_worst <= 1e-5);
}

/* --- several series ------------------------------------------------------------------- */

/* The worst relative difference of the last number of each row of two CSV files of `rows`
 * rows, whose other fields must be equal. */
static double compare_csv(const char *ours_path, const char *darts_path, size_t rows)
{
    char *ours = tu_read(ours_path), *darts = tu_read(darts_path);
    assert_non_null(ours);
    assert_non_null(darts);
    char *save_a = NULL, *save_b = NULL;
    char *a = strtok_r(ours, "\n", &save_a), *b = strtok_r(darts, "\n", &save_b);
    assert_string_equal(a, b); /* the header */
    double worst = 0.0;
    size_t n = 0;
    for (a = strtok_r(NULL, "\n", &save_a), b = strtok_r(NULL, "\n", &save_b);
         a != NULL && b != NULL;
         a = strtok_r(NULL, "\n", &save_a), b = strtok_r(NULL, "\n", &save_b), n++) {
        char *ca = strrchr(a, ','), *cb = strrchr(b, ',');
        assert_int_equal(ca - a, cb - b);
        assert_memory_equal(a, b, (size_t)(ca - a)); /* ids and stamps */
        worst = fmax(worst, rel(strtod(ca + 1, NULL), strtod(cb + 1, NULL)));
    }
    assert_null(a);
    assert_null(b);
    assert_int_equal(n, rows);
    free(ours);
    free(darts);
    return worst;
}

static char cov_global_path[3 * PATH_MAX + 64];

/* A global LSTM with add_encoders on three monthly series (tests/fixtures/cov_global_*: real
 * Darts, random_state 5, 5 epochs; the example's LSTM, batch 16 and covariate scaler): the encoders run over each series' own index and the
 * transformer is fitted once on the training parts of all three, as Darts' add_encoders
 * does. Every step and val_loss within 1e-5 (measured 2.3e-7), each series' 6-month forecast
 * within 1e-5 (measured 1.6e-7); tsrnn-predict rebuilds every series' covariates from the
 * checkpoint (the trainer's forecast.csv byte for byte) and its backtest (start 1993-07,
 * horizon 3, stride 2) is Darts' historical_forecasts(retrain=False) of the list, which
 * encodes each whole series once (87 rows within 1e-5, measured 1.5e-7). */
static void test_global_add_encoders_run_matches_darts(void **state)
{
    (void)state;
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof(a), "%s", tu_source("tests/fixtures/cov_global/a.csv"));
    snprintf(b, sizeof(b), "%s", tu_source("tests/fixtures/cov_global/b.csv"));
    snprintf(cov_global_path, sizeof(cov_global_path), "data.path=%s,%s,%s", a, b,
             tu_source("tests/fixtures/cov_global/c.csv"));
    const char *sets[] = { cov_global_path,
                           "data.time_col=month",
                           "data.value_cols=v",
                           "data.split_after=1993-06",
                           "model.hidden_dim=8",
                           "model.training_length=8",
                           "model.input_chunk_length=5",
                           "training.n_epochs=5",
                           "training.lr=5e-3",
                           "training.random_state=5",
                           "covariates.cyclic=month",
                           "covariates.datetime_attribute=year",
                           "covariates.one_hot=",
                           "covariates.position=relative",
                           "output.log_tensorboard=false",
                           "forecast.n=6",
                           "forecast.plot=false",
                           NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "cov_global", sets, 120),
        0);
    tu_expect_in(result.out, "Data: 3 series (one per file)");
    tu_expect_in(result.out, "Covariates: 4 future covariates (the model's input: 1 + 4): cyclic "
                             "month (2 columns), datetime_attribute year, position relative");
    static struct tu_metrics_row ours[64], darts[64];
    char run[PATH_MAX], path[PATH_MAX + 64], out[PATH_MAX + 32];
    snprintf(run, sizeof(run), "%s/cov_global", tu_run_dir());
    snprintf(path, sizeof(path), "%s/metrics.csv", run);
    assert_int_equal(tu_read_metrics(path, ours, 64), 50);
    assert_int_equal(tu_read_metrics(tu_source("tests/fixtures/cov_global_metrics.csv"), darts, 64),
                     50);
    double worst = 0.0;
    for (size_t i = 0; i < 50; i++) {
        assert_int_equal(ours[i].step, darts[i].step);
        worst =
            fmax(worst, isnan(darts[i].train_loss) ? rel(ours[i].val_loss, darts[i].val_loss)
                                                   : rel(ours[i].train_loss, darts[i].train_loss));
    }
    snprintf(path, sizeof(path), "%s/forecast.csv", run);
    double f_worst = compare_csv(path, tu_source("tests/fixtures/cov_global_forecast.csv"), 3 * 6);
    expect_predict_prints(run, "6", path);

    snprintf(out, sizeof(out), "%s/backtest", run);
    const char *backtest[] = { tu_env("TSRNN_PREDICT"),
                               "--run",
                               run,
                               "--checkpoint",
                               "last",
                               "--backtest",
                               "--start",
                               "1993-07",
                               "--horizon",
                               "3",
                               "--stride",
                               "2",
                               "--out",
                               out,
                               NULL };
    assert_int_equal(tu_run(backtest, 30, &result), 0);
    assert_int_equal(result.exit_code, 0);
    snprintf(path, sizeof(path), "%s/backtest.csv", out);
    double b_worst = compare_csv(path, tu_source("tests/fixtures/cov_global_backtest.csv"), 87);
    printf("# global add_encoders run (3 series, LSTM, seed 5): first step %.9g (Darts %.9g), "
           "50 rows within %.2e, forecasts %.2e, backtest %.2e\n",
           ours[0].train_loss, darts[0].train_loss, worst, f_worst, b_worst);
    assert_true(rel(ours[0].train_loss, darts[0].train_loss) <= 1e-6);
    assert_true(worst <= 1e-5);
    assert_true(f_worst <= 1e-5);
    assert_true(b_worst <= 1e-5);
}

/* Two monthly series with a covariate column `x` of very different ranges: one file each, or
 * one long-format file (the same run, metrics.csv byte for byte). [covariates] scaler = minmax
 * scales each series' columns on its own training part, as a Darts Scaler fitted on the list
 * of covariate series does: series b's x times 10 plus 500 leaves the run as it was (1e-5).
 * A forecast past a series' covariate dates names that series and the dates. */
static void test_covariate_columns_of_several_series(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", tu_run_dir());
    static char file_a[8192], file_b[8192], file_b2[8192], file_long[16384];
    size_t la = 0, lb = 0, lb2 = 0, ll = 0;
    la += (size_t)snprintf(file_a + la, sizeof(file_a) - la, "month,v,x\n");
    lb += (size_t)snprintf(file_b + lb, sizeof(file_b) - lb, "month,v,x\n");
    lb2 += (size_t)snprintf(file_b2 + lb2, sizeof(file_b2) - lb2, "month,v,x\n");
    ll += (size_t)snprintf(file_long + ll, sizeof(file_long) - ll, "month,id,v,x\n");
    for (int i = 0; i < 48; i++) {
        int year = 2000 + i / 12, month = i % 12 + 1;
        double va = 100 + 10 * sin(i * 0.5) + i, xa = (i * 7) % 11;
        double vb = 300 + 30 * cos(i * 0.5) + 2 * i, xb = 0.01 * ((i * 5) % 13);
        la += (size_t)snprintf(file_a + la, sizeof(file_a) - la, "%d-%02d,%.2f,%g\n", year, month,
                               va, xa);
        ll += (size_t)snprintf(file_long + ll, sizeof(file_long) - ll, "%d-%02d,a,%.2f,%g\n", year,
                               month, va, xa);
        if (i >= 40)
            continue; /* b ends 8 months before a */
        lb += (size_t)snprintf(file_b + lb, sizeof(file_b) - lb, "%d-%02d,%.2f,%g\n", year, month,
                               vb, xb);
        lb2 += (size_t)snprintf(file_b2 + lb2, sizeof(file_b2) - lb2, "%d-%02d,%.2f,%g\n", year,
                                month, vb, 10 * xb + 500);
        ll += (size_t)snprintf(file_long + ll, sizeof(file_long) - ll, "%d-%02d,b,%.2f,%g\n", year,
                               month, vb, xb);
    }
    char a[PATH_MAX], b[PATH_MAX], b2[PATH_MAX], sets_files[3 * PATH_MAX],
        sets_scaled[3 * PATH_MAX], sets_long[PATH_MAX + 16];
    char sub[PATH_MAX + 16];
    for (size_t k = 0; k < 2; k++) {
        snprintf(sub, sizeof(sub), "%s/%s", dir, k == 0 ? "cols_a" : "cols_b");
        assert_true(mkdir(sub, 0755) == 0 || errno == EEXIST);
    }
    snprintf(a, sizeof(a), "%s", tu_write(dir, "cols_a/a.csv", file_a));
    snprintf(b, sizeof(b), "%s", tu_write(dir, "cols_a/b.csv", file_b));
    snprintf(b2, sizeof(b2), "%s", tu_write(dir, "cols_b/b.csv", file_b2));
    snprintf(sets_files, sizeof(sets_files), "data.path=%s,%s", a, b);
    snprintf(sets_scaled, sizeof(sets_scaled), "data.path=%s,%s", a, b2);
    snprintf(sets_long, sizeof(sets_long), "data.path=%s",
             tu_write(dir, "cols_long.csv", file_long));
    const char *paths[] = { sets_files, sets_scaled, sets_long };
    const char *names[] = { "cols_files", "cols_scaled", "cols_long" };
    struct tu_result result;
    for (size_t k = 0; k < 3; k++) {
        const char *sets[] = { paths[k],
                               k == 2 ? "data.id_col=id" : "data.id_col=",
                               "data.time_col=month",
                               "data.value_cols=v",
                               "data.val_fraction=0.25",
                               "data.split_after=",
                               "model.hidden_dim=6",
                               "model.training_length=6",
                               "model.input_chunk_length=4",
                               "training.n_epochs=3",
                               "covariates.columns=x",
                               "covariates.datetime_attribute=year",
                               "covariates.one_hot=",
                               "covariates.scaler=minmax",
                               "output.log_tensorboard=false",
                               "output.save_checkpoints=true",
                               "forecast.n=4",
                               "forecast.plot=false",
                               "--quiet",
                               NULL };
        assert_int_equal(
            tu_train_config(&result, "examples/air_passengers_covariates.ini", names[k], sets, 60),
            0);
    }
    static struct tu_metrics_row files[64], scaled[64];
    char path[PATH_MAX + 64], other[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/cols_files/metrics.csv", dir);
    snprintf(other, sizeof(other), "%s/cols_long/metrics.csv", dir);
    char *from_files = tu_read(path), *from_long = tu_read(other);
    assert_non_null(from_files);
    assert_non_null(from_long);
    assert_string_equal(from_files, from_long);
    free(from_files);
    free(from_long);
    size_t n = tu_read_metrics(path, files, 64);
    snprintf(other, sizeof(other), "%s/cols_scaled/metrics.csv", dir);
    assert_int_equal(tu_read_metrics(other, scaled, 64), n);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, isnan(files[i].train_loss)
                                ? rel(scaled[i].val_loss, files[i].val_loss)
                                : rel(scaled[i].train_loss, files[i].train_loss));
    printf("# several series' covariate columns: %zu rows; b's x rescaled: within %.2e\n", n,
           worst);
    assert_true(n > 0);
    assert_true(worst <= 1e-5);

    char run[PATH_MAX + 16];
    snprintf(run, sizeof(run), "%s/cols_long", dir);
    assert_int_equal(predict_last(run, "14", &result), 2);
    tu_expect_in(result.err, "the covariate columns 'x' of series 'a' end at 2003-12, but the "
                             "forecast needs them up to 2004-02: the 2 dates 2004-01 .. 2004-02 "
                             "are missing");
    assert_null(strstr(result.err, "(series 'a')")); /* named once */

    /* The trainer's [forecast] n = 14 months from each series' training part passes a's columns:
     * refused before training, not after. */
    const char *far[] = { sets_files,
                          "data.id_col=",
                          "data.time_col=month",
                          "data.value_cols=v",
                          "data.val_fraction=0.25",
                          "data.split_after=",
                          "model.hidden_dim=6",
                          "model.training_length=6",
                          "model.input_chunk_length=4",
                          "training.n_epochs=1",
                          "covariates.columns=x",
                          "covariates.one_hot=",
                          "output.log_tensorboard=false",
                          "forecast.n=14",
                          "forecast.plot=false",
                          "--quiet",
                          NULL };
    int code =
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "cols_far", far, 60);
    printf("# the trainer's forecast past a series' covariate columns: exit %d\n", code);
    assert_int_equal(code, 2);
    tu_expect_in(result.err, "the covariate columns 'x' of series 'a' end at 2003-12");
    assert_null(strstr(result.err, "(series 'a')")); /* named once */
    snprintf(path, sizeof(path), "%s/cols_far/metrics.csv", dir);
    assert_int_equal(access(path, F_OK), -1); /* refused before the first epoch */
}

/* logs/hparams.yaml of a covariate run is real Darts' byte for byte
 * (tests/fixtures/darts_hparams_covariates.yaml: input_size 2, the (20, 1) future and
 * historic future covariates of the training sample). */
static void test_hparams_with_covariates_are_darts(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=1", "covariates.one_hot=", "forecast.plot=false",
                           "--quiet", NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "hparams", sets, 60), 0);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/hparams/logs/hparams.yaml", tu_run_dir());
    char *ours = tu_read(path), *darts = tu_read(tu_source("tests/fixtures/"
                                                           "darts_hparams_covariates.yaml"));
    assert_non_null(ours);
    assert_non_null(darts);
    assert_string_equal(ours, darts);
    free(ours);
    free(darts);
}

/* A bad [covariates] entry stops the worker with exit 2 and names the key and its origin. */
static void test_bad_covariates_config_is_refused(void **state)
{
    (void)state;
    const char *sets[] = { "covariates.cyclic=month, year", NULL };
    struct tu_result result;
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "bad", sets, 30), 2);
    tu_expect_in(result.err, "[covariates] cyclic = month, year: 'year': year has no period");
    const char *twice[] = { "covariates.datetime_attribute=month, month", NULL };
    assert_int_equal(
        tu_train_config(&result, "examples/air_passengers_covariates.ini", "bad", twice, 30), 2);
    tu_expect_in(result.err, "lists month twice");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoders_match_darts),
        cmocka_unit_test(test_encoder_pipeline_matches_darts),
        cmocka_unit_test(test_windows_put_next_covariates_beside_targets),
        cmocka_unit_test(test_encoders_refuse),
        cmocka_unit_test(test_initial_weights_with_covariates_are_darts),
        cmocka_unit_test(test_notebook_covariate_run_matches_darts),
        cmocka_unit_test(test_predict_rebuilds_covariates_from_the_checkpoint),
        cmocka_unit_test(test_add_encoders_run_matches_darts),
        cmocka_unit_test(test_covariate_columns_with_encoders_match_darts),
        cmocka_unit_test(test_global_add_encoders_run_matches_darts),
        cmocka_unit_test(test_covariate_columns_of_several_series),
        cmocka_unit_test(test_covariate_columns_from_the_data_file),
        cmocka_unit_test(test_resume_with_covariates_is_bit_identical),
        cmocka_unit_test(test_hparams_with_covariates_are_darts),
        cmocka_unit_test(test_pjrt_takes_covariates),
        cmocka_unit_test(test_bad_covariates_config_is_refused),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
