/* Training end to end through the real tsrnn-worker: PyTorch's whole-run losses from the same
 * initial weights, the seed configuration's numbers over several seeds, the run folder, the
 * console output, and runs that must stop with a clear message.
 *
 * With TSRNN_TEST_SHORT (tu_short(): scripts/test.sh sets it for the ASan + UBSan build, where
 * these runs took over two minutes) the long runs are cut to SHORT_EPOCHS epochs: the PyTorch
 * comparisons over the fixtures' first SHORT_EPOCHS epochs, Darts' random_state 42 runs
 * against their own summaries and a falling loss; the sweep over seeds, whose ranges hold
 * only after 300 epochs, is skipped. The output says so. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
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
#include "tsrnn/compute.h"
#include "tsrnn/safetensors.h"

/* Epochs of a long run in the short versions: enough for the loss to fall 7-9 fold. */
#define SHORT_EPOCHS 30

static struct tu_result result;

static const char *source(const char *relative)
{
    return tu_source(relative);
}

/* Runs tsrnn-worker on the example config (tu_train()) into `result`. */
static int train(const char *model_name, const char *const *sets, int timeout_s)
{
    return tu_train(&result, model_name, sets, timeout_s);
}

/* The number after `label` in the worker's stdout. */
static double printed(const char *label)
{
    const char *at = strstr(result.out, label);
    if (at == NULL)
        fail_msg("no '%s' in:\n%s", label, result.out);
    return strtod(at + strlen(label), NULL);
}

static double rel(double a, double b)
{
    return fabs(a - b) / fabs(b);
}

/* The same initial weights (the fixture's torch.manual_seed(42) init) and the same sample
 * order (shuffle off) as scripts/gen-fixtures.py's PyTorch run: every step's loss and every
 * epoch's val_loss within 1e-4 relative (measured: < 1e-6), and the forecast's MAPE. The
 * LSTM trajectory of this configuration is chaotic after epoch ~150 (a 1e-7 difference
 * grows tenfold every ~8 epochs, float32 against float32 PyTorch just the same), so the LSTM
 * run is compared over its first 150 epochs. The short version trains SHORT_EPOCHS epochs and
 * compares them with the fixture's first SHORT_EPOCHS; the forecast needs all 300. */
static void check_whole_run(const char *kind, long full_epochs)
{
    long epochs = tu_short() ? SHORT_EPOCHS : full_epochs;
    if (tu_short())
        printf("# %s: short version (TSRNN_TEST_SHORT): %ld of %ld epochs, against the fixture's "
               "first %ld; no forecast check\n",
               kind, epochs, full_epochs, epochs);
    char init[PATH_MAX + 64], file[64], model[64], epochs_set[64];
    snprintf(file, sizeof(file), "tests/fixtures/air_%s_init.safetensors", kind);
    snprintf(init, sizeof(init), "model.init_weights=%s", source(file));
    snprintf(model, sizeof(model), "model.model=%s", kind);
    snprintf(epochs_set, sizeof(epochs_set), "training.n_epochs=%ld", epochs);
    const char *sets[] = { model, init, "training.shuffle=false", epochs_set, "--quiet", NULL };
    assert_int_equal(train(kind, sets, 240), 0);

    static struct tu_metrics_row ours[2400], torch[2400];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), kind);
    size_t n = tu_read_metrics(path, ours, 2400);
    snprintf(file, sizeof(file), "tests/fixtures/air_%s_metrics.csv", kind);
    size_t m = tu_read_metrics(source(file), torch, 2400);
    assert_int_equal(m, 2400);
    assert_int_equal(n, (size_t)epochs * 8); /* 7 steps + 1 validation row per epoch */
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ours[i].epoch, torch[i].epoch);
        assert_int_equal(ours[i].step, torch[i].step);
        assert_int_equal(isnan(ours[i].train_loss), isnan(torch[i].train_loss));
        double err = isnan(torch[i].train_loss) ? rel(ours[i].val_loss, torch[i].val_loss)
                                                : rel(ours[i].train_loss, torch[i].train_loss);
        worst = fmax(worst, err);
    }
    printf("# %s: %zu metrics rows, worst relative difference to PyTorch %.2e\n", kind, n, worst);
    assert_true(worst <= 1e-4);

    if (epochs == 300) {
        /* MAPE of PyTorch's forecast against the validation data, original scale. */
        snprintf(file, sizeof(file), "tests/fixtures/air_%s_forecast.csv", kind);
        char *forecast = tu_read(source(file));
        char *data = tu_read(source("examples/data/air_passengers.csv"));
        assert_non_null(forecast);
        assert_non_null(data);
        double sum = 0.0;
        size_t count = 0;
        for (char *line = strchr(forecast, '\n') + 1; *line != '\0';
             line = strchr(line, '\n') + 1) {
            char month[16];
            double predicted;
            assert_int_equal(sscanf(line, "%15[^,],%lf", month, &predicted), 2);
            char *at = strstr(data, month);
            assert_non_null(at);
            double actual = strtod(strchr(at, ',') + 1, NULL);
            sum += fabs((actual - predicted) / actual);
            count++;
        }
        assert_int_equal(count, 23);
        double torch_mape = 100.0 * sum / (double)count;
        double our_mape = printed("MAPE ");
        printf("# %s: MAPE %.4f%% (PyTorch's forecast: %.4f%%)\n", kind, our_mape, torch_mape);
        assert_true(fabs(our_mape - torch_mape) < 0.01);
        free(forecast);
        free(data);
    }
}

static void test_whole_run_rnn_matches_pytorch(void **state)
{
    (void)state;
    check_whole_run("rnn", 300);
}

static void test_whole_run_gru_matches_pytorch(void **state)
{
    (void)state;
    check_whole_run("gru", 300);
}

static void test_whole_run_lstm_matches_pytorch(void **state)
{
    (void)state;
    check_whole_run("lstm", 150);
}

/* The Darts guide's configuration over seeds: PyTorch over seeds 0-4 and 42 lands at a last-epoch mean train loss of 0.0029-0.0037, val loss
 * 0.017-0.022, MAPE 13.5-17.8%; tsrnn must land in 0.0025-0.0045 / 0.014-0.026 / 12-20% for
 * random_state 42 and for at least 4 of the seeds 0-4. */
static void test_seed_config_lands_where_pytorch_does(void **state)
{
    (void)state;
    if (tu_short()) {
        printf("# short version (TSRNN_TEST_SHORT): skipped; these ranges hold only after 300 "
               "epochs (6 runs), and the short random_state 42 runs below take the same shuffled, "
               "Darts-seeded path\n");
        skip();
    }
    const char *seeds[] = { "42", "0", "1", "2", "3", "4" };
    int in_range = 0;
    for (size_t i = 0; i < 6; i++) {
        char seed[64];
        snprintf(seed, sizeof(seed), "training.random_state=%s", seeds[i]);
        const char *sets[] = { seed, "--quiet", NULL };
        assert_int_equal(train("seeds", sets, 120), 0);
        double train_loss = printed("(last step), ");
        double val_loss = printed("val_loss ");
        double mape = printed("MAPE ");
        bool ok = train_loss >= 0.0025 && train_loss <= 0.0045 && val_loss >= 0.014 &&
                  val_loss <= 0.026 && mape >= 12.0 && mape <= 20.0;
        printf("# random_state %-2s: train_loss %.5f (last-epoch mean), val_loss %.4f, MAPE "
               "%.2f%%: %s\n",
               seeds[i], train_loss, val_loss, mape, ok ? "in range" : "OUT OF RANGE");
        if (i == 0)
            assert_true(ok);
        else
            in_range += ok;
    }
    assert_true(in_range >= 4);
}

/* The short version of the test below: Darts' random_state 42 runs of each model for
 * SHORT_EPOCHS epochs, which no reference covers. Their numbers must agree with themselves
 * (the printed summary with metrics.csv, to its 6 digits) and show learning: the mean train
 * loss and the val loss fall more than fourfold from the first epoch to the last (measured:
 * 6.8-9.0x). */
static void check_short_darts_runs(void)
{
    const char *models[] = { "model.model=RNN", "model.model=LSTM", "model.model=GRU" };
    char epochs_set[64];
    snprintf(epochs_set, sizeof(epochs_set), "training.n_epochs=%d", SHORT_EPOCHS);
    printf("# short version (TSRNN_TEST_SHORT): %d of 300 epochs per model, checked against "
           "their own summaries and a falling loss, not Darts' published end values\n",
           SHORT_EPOCHS);
    for (size_t i = 0; i < 3; i++) {
        const char *sets[] = { models[i], epochs_set, "--quiet", NULL };
        assert_int_equal(train("darts42_short", sets, 120), 0);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/darts42_short/metrics.csv", tu_run_dir());
        static struct tu_metrics_row rows[SHORT_EPOCHS * 8 + 1];
        size_t n = tu_read_metrics(path, rows, SHORT_EPOCHS * 8 + 1);
        assert_int_equal(n, SHORT_EPOCHS * 8); /* 7 steps + 1 validation row per epoch */
        double first_mean = 0.0, last_mean = 0.0;
        for (size_t s = 0; s < 7; s++) {
            assert_true(isfinite(rows[s].train_loss) && rows[s].train_loss > 0.0);
            first_mean += rows[s].train_loss / 7;
            last_mean += rows[n - 8 + s].train_loss / 7;
        }
        double first_val = rows[7].val_loss, last_val = rows[n - 1].val_loss;
        double last_step = printed("train_loss "), epoch_mean = printed("(last step), ");
        double val_loss = printed("val_loss ");
        printf("# %s: epoch 0 -> %d: mean train_loss %.5f -> %.5f, val_loss %.5f -> %.5f\n",
               models[i], SHORT_EPOCHS - 1, first_mean, last_mean, first_val, last_val);
        assert_true(rel(last_step, rows[n - 2].train_loss) < 1e-5);
        assert_true(rel(epoch_mean, last_mean) < 1e-5);
        assert_true(rel(val_loss, last_val) < 1e-5);
        assert_true(last_mean < first_mean / 4);
        assert_true(last_val < first_val / 4);
    }
}

/* random_state = 42 is Darts' run itself: the weights and shuffles of
 * RNNModel(random_state=42).fit() (include/tsrnn/torch_rng.h), so the results are those of
 * the PyTorch reference run with Darts' seeding (reference/pytorch-baseline.md §2, "darts 42"
 * rows: last-batch loss, epoch-mean loss, val loss, MAPE as published, 3-4 digits). */
static void test_random_state_42_is_the_darts_run(void **state)
{
    (void)state;
    if (tu_short()) {
        check_short_darts_runs();
        return;
    }
    const struct {
        const char *model;
        double last_step, epoch_mean, val_loss, mape;
    } runs[] = {
        { "model.model=RNN", 0.00233, 0.00286, 0.02102, 13.48 },
        { "model.model=LSTM", 0.00153, 0.00240, 0.01405, 18.81 },
        { "model.model=GRU", 0.00194, 0.00299, 0.01640, 11.69 },
    };
    for (size_t i = 0; i < 3; i++) {
        const char *sets[] = { runs[i].model, "--quiet", NULL };
        assert_int_equal(train("darts42", sets, 240), 0);
        double last_step = printed("train_loss "), epoch_mean = printed("(last step), ");
        double val_loss = printed("val_loss "), mape = printed("MAPE ");
        printf("# %s: train_loss %.5f last step, %.5f epoch mean; val_loss %.5f; MAPE %.2f%%\n",
               runs[i].model, last_step, epoch_mean, val_loss, mape);
        assert_true(rel(last_step, runs[i].last_step) < 5e-3);
        assert_true(rel(epoch_mean, runs[i].epoch_mean) < 5e-3);
        assert_true(rel(val_loss, runs[i].val_loss) < 5e-4);
        assert_true(fabs(mape - runs[i].mape) < 0.006);
    }
}

/* --- the run folder and the console ---------------------------------------------------- */

static void test_outputs_and_console(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=3", "--progress=plain", NULL };
    assert_int_equal(train("outputs", sets, 60), 0);
    /* Lightning's startup lines and model summary, the seed model's 481 parameters. */
    tu_expect_in(result.out, "GPU available: False, used: False\n");
    tu_expect_in(result.out, "TPU available: False, using: 0 TPU cores\n");
    tu_expect_in(result.out, "1 | rnn       | RNN     | 460    | train\n");
    tu_expect_in(result.out, "2 | V         | Linear  | 21     | train\n");
    tu_expect_in(result.out, "481       Total params\n");
    /* One plain line per epoch, no carriage returns or escape codes. */
    tu_expect_in(result.out, "Epoch 0: 100%|\xe2\x96\x88\xe2\x96\x88");
    tu_expect_in(result.out, "| 7/7 [");
    tu_expect_in(result.out, "Epoch 2: 100%|");
    assert_null(strstr(result.out, "Epoch 3:"));
    assert_null(strchr(result.out, '\r'));
    assert_null(strchr(result.out, '\x1b'));
    tu_expect_in(result.out, "`Trainer.fit` stopped: `max_epochs=3` reached.\n");
    tu_expect_in(result.out, "Trained 3 epochs (21 steps)");
    tu_expect_in(result.out, "over the 23 validation steps");

    /* metrics.csv: 7 step rows and 1 validation row per epoch, global 0-based steps. */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/outputs/metrics.csv", tu_run_dir());
    struct tu_metrics_row rows[64];
    assert_int_equal(tu_read_metrics(path, rows, 64), 24);
    for (size_t e = 0; e < 3; e++) {
        for (size_t s = 0; s < 7; s++) {
            const struct tu_metrics_row *r = &rows[e * 8 + s];
            assert_int_equal(r->epoch, e);
            assert_int_equal(r->step, e * 7 + s);
            assert_true(r->train_loss > 0.0 && isnan(r->val_loss));
        }
        const struct tu_metrics_row *v = &rows[e * 8 + 7];
        assert_int_equal(v->step, e * 7 + 6);
        assert_true(isnan(v->train_loss) && v->val_loss > 0.0);
    }
    /* The resolved config next to it. */
    snprintf(path, sizeof(path), "%s/outputs/config.ini", tu_run_dir());
    char *config = tu_read(path);
    assert_non_null(config);
    tu_expect_in(config, "n_epochs = 3\n");
    free(config);

    /* --quiet: the final summary only. */
    const char *quiet[] = { "training.n_epochs=1", "--quiet", NULL };
    assert_int_equal(train("quiet", quiet, 60), 0);
    assert_null(strstr(result.out, "GPU available"));
    assert_null(strstr(result.out, "Epoch 0"));
    tu_expect_in(result.out, "Trained 1 epochs (7 steps)");
}

/* Two components, a 2-layer LSTM with dropout between the layers, no split: the paths the
 * AirPassengers runs do not take, end to end. A sine and a cosine of period 12 are easy:
 * the loss falls by more than 20x. */
static void test_multivariate_two_layers_dropout_learns(void **state)
{
    (void)state;
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    assert_non_null(f);
    fprintf(f, "t,a,b\n");
    for (int t = 0; t < 200; t++)
        fprintf(f, "%d,%.6f,%.6f\n", t, sin(t * M_PI / 6), cos(t * M_PI / 6));
    fclose(f);
    tu_write(tu_run_dir(), "waves.csv", csv);
    free(csv);
    char data[PATH_MAX + 32];
    snprintf(data, sizeof(data), "data.path=%s/waves.csv", tu_run_dir());
    const char *sets[] = { data,
                           "data.time_col=t",
                           "data.value_cols=",
                           "data.split_after=",
                           "model.model=LSTM",
                           "model.n_rnn_layers=2",
                           "model.dropout=0.2",
                           "model.hidden_dim=16",
                           "model.training_length=12",
                           "model.input_chunk_length=6",
                           "training.n_epochs=40",
                           "--quiet",
                           NULL };
    assert_int_equal(train("waves", sets, 120), 0);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/waves/metrics.csv", tu_run_dir());
    static struct tu_metrics_row rows[2000];
    size_t n = tu_read_metrics(path, rows, 2000);
    assert_int_equal(n, 40 * 12); /* ceil(188 / 16) steps per epoch, no validation rows */
    double first = rows[0].train_loss, last = printed("(last step), ");
    printf("# waves: first step loss %.4f, last epoch mean %.5f\n", first, last);
    assert_true(last < first / 20);
    assert_null(strstr(result.out, "val_loss"));
    assert_null(strstr(result.out, "MAPE"));
}

/* accelerator = gpu where no GPU can be used (CI: a CUDA build on a machine without one, or a
 * build without the CUDA toolkit) stops before anything is written, with exit 2 and the
 * reason; tsrnn-predict --accelerator gpu likewise. On a GPU machine tests/test_gpu.c trains. */
static void test_gpu_is_refused_without_a_gpu(void **state)
{
    (void)state;
    if (tsrnn_compute_available(TSRNN_COMPUTE_CUDA, NULL, 0)) {
        printf("# a GPU is usable here: test_gpu trains on it\n");
        skip();
    }
    const char *sets[] = { "trainer.accelerator=gpu", NULL };
    assert_int_equal(train("gpu", sets, 60), 2);
    tu_expect_in(result.err, "--set trainer.accelerator=gpu: [trainer] accelerator = gpu, but ");
    tu_expect_in(result.err, tsrnn_compute_compiled(TSRNN_COMPUTE_CUDA)
                                 ? "no GPU is usable here"
                                 : "built without the CUDA toolkit");
    assert_string_equal(result.out, "");

    /* The refused run wrote nothing; a CPU run gives tsrnn-predict a checkpoint to refuse. */
    const char *cpu[] = { "training.n_epochs=1", "--quiet", NULL };
    assert_int_equal(train("gpu", cpu, 60), 0);
    char run[PATH_MAX];
    snprintf(run, sizeof(run), "%s/gpu", tu_run_dir());
    const char *argv[] = { tu_env("TSRNN_PREDICT"), "--run", run, "--n", "2",
                           "--accelerator",         "gpu",   NULL };
    assert_int_equal(tu_run(argv, 60, &result), 0);
    assert_int_equal(result.exit_code, 2);
    tu_expect_in(result.err, "accepted here: --accelerator cpu");
}

/* --- runs that must stop --------------------------------------------------------------- */

static const char *write_rnn_weights(const char *name, size_t hidden, float head_scale)
{
    size_t counts[] = { hidden, hidden * hidden, hidden, hidden, hidden, 1 };
    const char *names[] = { "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0",
                            "rnn.bias_hh_l0",   "V.weight",         "V.bias" };
    static float values[6][64 * 64];
    struct tsrnn_tensor_desc t[6];
    for (size_t i = 0; i < 6; i++) {
        for (size_t j = 0; j < counts[i]; j++)
            values[i][j] = (i == 4 ? head_scale : 0.1f) * (float)((j % 7) + 1) / 7.0f;
        t[i] = (struct tsrnn_tensor_desc){ .name = names[i],
                                           .dtype = TSRNN_DTYPE_F32,
                                           .data = values[i] };
    }
    /* weight_ih (H, 1), weight_hh (H, H), biases (H), V.weight (1, H), V.bias (1) */
    const int64_t shapes[6][2] = { { (int64_t)hidden, 1 }, { (int64_t)hidden, (int64_t)hidden },
                                   { (int64_t)hidden, 0 }, { (int64_t)hidden, 0 },
                                   { 1, (int64_t)hidden }, { 1, 0 } };
    for (size_t i = 0; i < 6; i++) {
        t[i].rank = shapes[i][1] ? 2 : 1;
        t[i].shape[0] = shapes[i][0];
        t[i].shape[1] = shapes[i][1];
    }
    const char *path = tu_path(tu_run_dir(), name);
    assert_int_equal(tsrnn_safetensors_write(path, t, 6, NULL, 0), TSRNN_OK);
    return path;
}

static bool exists(const char *relative)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", tu_run_dir(), relative);
    return stat(path, &st) == 0;
}

static void test_bad_init_weights_stop_before_writing(void **state)
{
    (void)state;
    char set[PATH_MAX + 32];

    /* Weights of a hidden-16 model into the hidden-20 config. */
    snprintf(set, sizeof(set), "model.init_weights=%s", write_rnn_weights("h16.st", 16, 1.0f));
    const char *shape[] = { set, NULL };
    assert_int_equal(train("bad_shape", shape, 60), 2);
    tu_expect_in(result.err, "tsrnn-worker: error: ");
    tu_expect_in(result.err, "h16.st: tensor \"rnn.weight_ih_l0\" has shape [16, 1]; this model "
                             "needs [20, 1]");
    assert_false(exists("bad_shape"));

    /* A corrupt file: a valid one cut short. */
    const char *good = write_rnn_weights("cut.st", 20, 1.0f);
    assert_int_equal(truncate(good, 100), 0);
    snprintf(set, sizeof(set), "model.init_weights=%s", good);
    const char *cut[] = { set, NULL };
    assert_int_equal(train("bad_file", cut, 60), 2);
    tu_expect_in(result.err, "cut.st");
    assert_false(exists("bad_file"));
    assert_null(strstr(result.out, "Epoch"));
}

/* Ctrl-C in the middle of a long run: the worker stops between two steps, says where, exits
 * 130, and metrics.csv holds whole rows for every finished step. */
static void test_interrupt_stops_between_steps(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=1000000", "--quiet", NULL };
    tu_signal_next_run(SIGINT, 0.5);
    assert_int_equal(train("interrupted", sets, 30), 130);
    tu_expect_in(result.err, "tsrnn-worker: error: interrupted at epoch ");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/interrupted/metrics.csv", tu_run_dir());
    static struct tu_metrics_row rows[200000];
    size_t n = tu_read_metrics(path, rows, 200000);
    assert_true(n > 8); /* 0.5 s is many epochs */
    long steps = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rows[i].step, isnan(rows[i].train_loss) ? steps - 1 : steps);
        steps += !isnan(rows[i].train_loss);
    }
    char said[64];
    snprintf(said, sizeof(said), "holds the %ld finished steps", steps);
    tu_expect_in(result.err, said);
    printf("# interrupted after %ld steps (%zu rows)\n", steps, n);
}

/* Weights so large that the first prediction overflows float32: the run stops at once with
 * the epoch and step, exit 1. */
static void test_divergence_names_epoch_and_step(void **state)
{
    (void)state;
    char set[PATH_MAX + 32];
    snprintf(set, sizeof(set), "model.init_weights=%s", write_rnn_weights("huge.st", 20, 1e30f));
    const char *sets[] = { set, "--quiet", NULL };
    assert_int_equal(train("diverged", sets, 60), 1);
    tu_expect_in(result.err, "training diverged: the loss is inf at epoch 0, step 0 (batch 0");
    tu_expect_in(result.err, "try a smaller [training] lr");
}

int main(void)
{
    if (tu_short())
        printf("# TSRNN_TEST_SHORT=%s: short versions of the long runs (%d epochs instead of "
               "150-300; scripts/test.sh sets it for the ASan + UBSan build, where they are ten "
               "times slower). Unset it for the full runs.\n",
               getenv("TSRNN_TEST_SHORT"), SHORT_EPOCHS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_run_rnn_matches_pytorch),
        cmocka_unit_test(test_whole_run_gru_matches_pytorch),
        cmocka_unit_test(test_whole_run_lstm_matches_pytorch),
        cmocka_unit_test(test_seed_config_lands_where_pytorch_does),
        cmocka_unit_test(test_random_state_42_is_the_darts_run),
        cmocka_unit_test(test_outputs_and_console),
        cmocka_unit_test(test_multivariate_two_layers_dropout_learns),
        cmocka_unit_test(test_gpu_is_refused_without_a_gpu),
        cmocka_unit_test(test_bad_init_weights_stop_before_writing),
        cmocka_unit_test(test_divergence_names_epoch_and_step),
        cmocka_unit_test(test_interrupt_stops_between_steps),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
