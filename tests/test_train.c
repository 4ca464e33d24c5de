/* Training end to end through the real tsrnn-worker: PyTorch's whole-run losses from the same
 * initial weights, the seed configuration's numbers over several seeds, the run folder, the
 * console output, and runs that must stop with a clear message.
 *
 * With TSRNN_TEST_SHORT (tu_short(): scripts/test.sh sets it for the ASan + UBSan build, where
 * these runs took over two minutes) the long runs are cut to SHORT_EPOCHS epochs: the PyTorch
 * comparisons over the fixtures' first SHORT_EPOCHS epochs, the real Darts comparison over
 * its first SHORT_EPOCHS epochs of random_state 42 only. The output says so. */
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

/* The forecast points of a `Month,value` CSV (header skipped) into `out`; returns the count. */
static size_t read_forecast(const char *path, double *out, size_t capacity)
{
    char *text = tu_read(path);
    if (text == NULL)
        fail_msg("cannot read %s", path);
    size_t count = 0;
    for (char *line = strchr(text, '\n'); line != NULL && line[1] != '\0' && count < capacity;
         line = strchr(line + 1, '\n')) {
        char *comma = strchr(line + 1, ',');
        assert_non_null(comma);
        out[count++] = strtod(comma + 1, NULL);
    }
    free(text);
    return count;
}

/* Real Darts 0.48.1 (Lightning 2.6.6, torch 2.15, CPU), recorded by
 * scripts/gen-darts-fixtures.py: the Darts guide's model for RNN, LSTM and GRU with
 * random_state 0, 1 and 42, validation every epoch, shuffled. tsrnn with the same settings
 * (the example config, default rng_compat) must follow it number for number: every step's
 * train_loss of the first 300 steps within 1e-5 relative, and the end (last step, last
 * val_loss, each of the 24 forecast points) within 1e-4; every row is compared and the worst
 * printed. The printed summary of the RNN seed 42 run is Darts' figures (first step
 * 0.0775389, last epoch's mean train loss 0.00292578, val_loss 0.0204098, MAPE 12.45%).
 * Short version: random_state 42 only, SHORT_EPOCHS epochs, the first 300 steps' rule. */
static void test_darts_runs_number_for_number(void **state)
{
    (void)state;
    const char *models[] = { "RNN", "LSTM", "GRU" };
    const char *kinds[] = { "rnn", "lstm", "gru" };
    const int seeds[] = { 0, 1, 42 };
    long epochs = tu_short() ? SHORT_EPOCHS : 300;
    if (tu_short())
        printf("# short version (TSRNN_TEST_SHORT): random_state 42 only, %ld of 300 epochs\n",
               epochs);
    for (size_t m = 0; m < 3; m++) {
        for (size_t k = 0; k < 3; k++) {
            if (tu_short() && seeds[k] != 42)
                continue;
            char model[64], seed[64], epochs_set[64], file[96], path[PATH_MAX];
            snprintf(model, sizeof(model), "model.model=%s", models[m]);
            snprintf(seed, sizeof(seed), "training.random_state=%d", seeds[k]);
            snprintf(epochs_set, sizeof(epochs_set), "training.n_epochs=%ld", epochs);
            const char *sets[] = { model,
                                   seed,
                                   epochs_set,
                                   "output.save_checkpoints=false",
                                   "output.log_tensorboard=false",
                                   "forecast.plot=false",
                                   "--quiet",
                                   NULL };
            assert_int_equal(train("darts", sets, 120), 0);

            static struct tu_metrics_row ours[2400], darts[2400];
            snprintf(path, sizeof(path), "%s/darts/metrics.csv", tu_run_dir());
            size_t n = tu_read_metrics(path, ours, 2400);
            snprintf(file, sizeof(file), "tests/fixtures/darts_%s_%d_metrics.csv", kinds[m],
                     seeds[k]);
            assert_int_equal(tu_read_metrics(source(file), darts, 2400), 2400);
            assert_int_equal(n, (size_t)epochs * 8); /* 7 steps + 1 validation row per epoch */
            double first300 = 0.0, worst = 0.0;
            size_t step_rows = 0;
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(ours[i].epoch, darts[i].epoch);
                assert_int_equal(ours[i].step, darts[i].step);
                assert_int_equal(isnan(ours[i].train_loss), isnan(darts[i].train_loss));
                bool is_step = !isnan(darts[i].train_loss);
                double err = is_step ? rel(ours[i].train_loss, darts[i].train_loss)
                                     : rel(ours[i].val_loss, darts[i].val_loss);
                worst = fmax(worst, err);
                if (is_step && step_rows++ < 300)
                    first300 = fmax(first300, err);
            }
            const struct tu_metrics_row *last_step = &ours[n - 2], *last_val = &ours[n - 1];
            double end_step = rel(last_step->train_loss, darts[n - 2].train_loss);
            double end_val = rel(last_val->val_loss, darts[n - 1].val_loss);
            printf("# %-4s %2d: first step %.9g (Darts %.9g); worst relative difference: first "
                   "300 steps %.2e, all %zu rows %.2e; end: train_loss %.2e, val_loss %.2e",
                   models[m], seeds[k], ours[0].train_loss, darts[0].train_loss, first300, n, worst,
                   end_step, end_val);
            assert_true(first300 <= 1e-5);
            assert_true(end_step <= 1e-4);
            assert_true(end_val <= 1e-4);
            if (epochs < 300) {
                printf("\n");
                continue;
            }
            double f_ours[32], f_darts[32], f_worst = 0.0;
            snprintf(path, sizeof(path), "%s/darts/forecast.csv", tu_run_dir());
            assert_int_equal(read_forecast(path, f_ours, 32), 24);
            snprintf(file, sizeof(file), "tests/fixtures/darts_%s_%d_forecast.csv", kinds[m],
                     seeds[k]);
            assert_int_equal(read_forecast(source(file), f_darts, 32), 24);
            for (size_t i = 0; i < 24; i++)
                f_worst = fmax(f_worst, rel(f_ours[i], f_darts[i]));
            printf(", forecast %.2e\n", f_worst);
            assert_true(f_worst <= 1e-4);
            if (m == 0 && seeds[k] == 42) {
                /* The figures the README quotes, as the worker prints them. */
                double last_mean = 0.0;
                for (size_t s = 0; s < 7; s++)
                    last_mean += darts[n - 8 + s].train_loss / 7;
                assert_true(rel(printed("(last step), "), last_mean) < 1e-5);
                assert_true(fabs(printed("train_loss ") - 0.0775389) < 5e-8); /* first step */
                assert_true(rel(printed("val_loss "), darts[n - 1].val_loss) < 1e-5);
                assert_true(fabs(printed("MAPE ") - 12.45) < 0.005);
                assert_true(fabs(last_mean - 0.00292578) < 5e-9);
                assert_true(fabs(darts[n - 1].val_loss - 0.0204098) < 1e-7);
                assert_true(fabs(darts[0].train_loss - 0.0775389) < 5e-8);
            }
        }
    }
}

/* The guide-era order stays available: rng_compat = lightning1 gives the old first batch of
 * random_state 42 (samples 12, 88, 37, ...), whose loss PyTorch computes as 0.108717516
 * (reference/pytorch-baseline.md), not Darts 0.48's 0.0775389. */
static void test_rng_compat_lightning1_is_the_old_order(void **state)
{
    (void)state;
    const char *sets[] = { "training.rng_compat=lightning1", "training.n_epochs=1", "forecast.n=0",
                           "--quiet", NULL };
    assert_int_equal(train("lightning1", sets, 60), 0);
    static struct tu_metrics_row rows[16];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/lightning1/metrics.csv", tu_run_dir());
    assert_int_equal(tu_read_metrics(path, rows, 16), 8);
    printf("# rng_compat = lightning1: first step %.9g\n", rows[0].train_loss);
    assert_true(rel(rows[0].train_loss, 0.108717516) < 1e-6);
}

/* max_steps = 0 (e.g. a model imported with init_weights): no step, but the weights are
 * saved as checkpoints/last-epoch=0.safetensors even without save_checkpoints, the console
 * says so, tsrnn-predict takes it (no best checkpoint: the last one), and --resume last
 * trains it from the first step exactly as a fresh run (Darts' first step 0.0775388628). */
static void test_max_steps_0_saves_the_weights(void **state)
{
    (void)state;
    const char *sets[] = { "training.max_steps=0", "output.save_checkpoints=false", NULL };
    assert_int_equal(train("untrained", sets, 60), 0);
    assert_non_null(strstr(result.out, "No training step (max_steps = 0): the initial weights are "
                                       "saved as "));
    char run[PATH_MAX], ckpt[PATH_MAX + 64];
    snprintf(run, sizeof(run), "%s/untrained", tu_run_dir());
    snprintf(ckpt, sizeof(ckpt), "%s/checkpoints/last-epoch=0.safetensors", run);
    assert_int_equal(access(ckpt, R_OK), 0);

    const char *predict[] = { tu_env("TSRNN_PREDICT"), "--run", run, "--n", "3", NULL };
    assert_int_equal(tu_run(predict, 30, &result), 0);
    assert_int_equal(result.exit_code, 0);
    assert_non_null(strstr(result.err, "No best checkpoint in"));
    assert_non_null(strstr(result.err, "untrained: saved by a max_steps = 0 run"));
    assert_non_null(strstr(result.out, "1959-04,"));

    const char *more[] = { "training.resume=last",
                           "output.force_reset=false",
                           "training.n_epochs=2",
                           "output.save_checkpoints=false",
                           "--quiet",
                           NULL };
    if (train("untrained", more, 60) != 0)
        fail_msg("%s", result.err);
    static struct tu_metrics_row rows[32];
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/metrics.csv", run);
    assert_int_equal(tu_read_metrics(path, rows, 32), 16);
    printf("# resumed from the untrained checkpoint: first step %.9g\n", rows[0].train_loss);
    assert_int_equal(rows[0].step, 0);
    assert_true(rel(rows[0].train_loss, 0.0775388628) < 1e-6);
}

/* Adam's state imported from Darts: an init_weights file with `darts.adam_step` (what
 * scripts/darts-to-tsrnn writes) and moments under tsrnn's names; the max_steps = 0
 * checkpoint carries them bit for bit with that step, and a resumed epoch continues the
 * count (21 + 7). Without the key the moments in such a file are not used (Adam starts at
 * step 0, as with any other init_weights). */
static void test_imported_adam_state(void **state)
{
    (void)state;
    struct tsrnn_safetensors init;
    assert_int_equal(
        tsrnn_safetensors_read(&init, source("tests/fixtures/air_rnn_init.safetensors")), TSRNN_OK);
    size_t n = init.tensor_count;
    struct tsrnn_tensor_desc desc[3 * 8];
    char names[2 * 8][64];
    static float moments[2][512];
    assert_true(n <= 8);
    for (size_t k = 0; k < 512; k++) {
        moments[0][k] = 1e-3f * (float)(k % 17) - 8e-3f;
        moments[1][k] = 1e-6f * (float)(k % 13 + 1);
    }
    for (size_t i = 0; i < n; i++) {
        const struct tsrnn_tensor_info *t = &init.tensors[i];
        assert_true(t->element_count <= 512);
        desc[i] = (struct tsrnn_tensor_desc){ t->name, t->dtype, t->rank, { 0 }, t->data };
        memcpy(desc[i].shape, t->shape, sizeof(t->shape));
        for (size_t m = 0; m < 2; m++) {
            snprintf(names[m * n + i], sizeof(names[0]), "optim.%s.%s",
                     m ? "exp_avg_sq" : "exp_avg", t->name);
            desc[(m + 1) * n + i] = desc[i];
            desc[(m + 1) * n + i].name = names[m * n + i];
            desc[(m + 1) * n + i].data = moments[m];
        }
    }
    char file[PATH_MAX], init_set[PATH_MAX + 32], path[PATH_MAX + 64];
    snprintf(file, sizeof(file), "%s/imported.safetensors", tu_run_dir());
    const struct tsrnn_metadata_entry meta[] = { { "darts.adam_step", "21" } };
    assert_int_equal(tsrnn_safetensors_write(file, desc, 3 * n, meta, 1), TSRNN_OK);
    snprintf(init_set, sizeof(init_set), "model.init_weights=%s", file);
    const char *sets[] = { init_set, "training.max_steps=0", "--quiet", NULL };
    assert_int_equal(train("imported", sets, 60), 0);

    struct tsrnn_safetensors ck;
    snprintf(path, sizeof(path), "%s/imported/checkpoints/last-epoch=0.safetensors", tu_run_dir());
    assert_int_equal(tsrnn_safetensors_read(&ck, path), TSRNN_OK);
    assert_string_equal(tsrnn_safetensors_metadata(&ck, "tsrnn.adam_step"), "21");
    for (size_t i = 0; i < 3 * n; i++) {
        const struct tsrnn_tensor_info *t = tsrnn_safetensors_find(&ck, desc[i].name);
        assert_non_null(t);
        assert_memory_equal(t->data, desc[i].data, t->nbytes);
    }
    tsrnn_safetensors_finish(&ck);
    tsrnn_safetensors_finish(&init);

    const char *more[] = { "training.resume=last",
                           "output.force_reset=false",
                           "training.max_steps=-1",
                           "training.n_epochs=1",
                           "--quiet",
                           NULL };
    assert_int_equal(train("imported", more, 60), 0);
    snprintf(path, sizeof(path), "%s/imported/checkpoints/last-epoch=0.safetensors", tu_run_dir());
    assert_int_equal(tsrnn_safetensors_read(&ck, path), TSRNN_OK);
    printf("# imported Adam state: step 21, after one resumed epoch %s\n",
           tsrnn_safetensors_metadata(&ck, "tsrnn.adam_step"));
    assert_string_equal(tsrnn_safetensors_metadata(&ck, "tsrnn.adam_step"), "28");
    assert_string_equal(tsrnn_safetensors_metadata(&ck, "tsrnn.global_step"), "7");
    tsrnn_safetensors_finish(&ck);
    /* ... and that checkpoint (Adam step 28 > global step 7) resumes. */
    const char *again[] = { "training.resume=last", "output.force_reset=false",
                            "training.n_epochs=2", "--quiet", NULL };
    assert_int_equal(train("imported", again, 60), 0);
}

/* A PyTorch file where tsrnn wants safetensors (Darts' .ckpt, _model.pth.tar, a .pt): exit 2
 * and a message that says what it is and names the conversion, for tsrnn-predict, resume and
 * init_weights alike. The file is only the zip archive's signature that torch.save writes. */
static void test_torch_files_name_the_conversion(void **state)
{
    (void)state;
    char file[PATH_MAX];
    snprintf(file, sizeof(file), "%s/last-epoch=299.ckpt", tu_run_dir());
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    static const char zip[] = "PK\003\004archive/data.pkl";
    assert_int_equal(fwrite(zip, 1, sizeof(zip) - 1, f), sizeof(zip) - 1);
    fclose(f);
    const char *predict[] = { tu_env("TSRNN_PREDICT"), "--checkpoint", file, "--n", "3", NULL };
    assert_int_equal(tu_run(predict, 30, &result), 0);
    assert_int_equal(result.exit_code, 2);
    assert_non_null(strstr(result.err, "last-epoch=299.ckpt: this is a PyTorch file"));
    assert_non_null(strstr(result.err, "scripts/darts-to-tsrnn MODEL.pt|.ckpt OUT_DIR"));
    char resume[PATH_MAX + 32], init[PATH_MAX + 32];
    snprintf(resume, sizeof(resume), "training.resume=%s", file);
    snprintf(init, sizeof(init), "model.init_weights=%s", file);
    const char *with_resume[] = { resume, "output.force_reset=false", "--quiet", NULL };
    assert_int_equal(train("torchfile", with_resume, 30), 2);
    assert_non_null(strstr(result.err, "this is a PyTorch file"));
    const char *with_init[] = { init, "--quiet", NULL };
    assert_int_equal(train("torchfile", with_init, 30), 2);
    assert_non_null(strstr(result.err, "scripts/darts-to-tsrnn"));
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
        cmocka_unit_test(test_darts_runs_number_for_number),
        cmocka_unit_test(test_rng_compat_lightning1_is_the_old_order),
        cmocka_unit_test(test_max_steps_0_saves_the_weights),
        cmocka_unit_test(test_torch_files_name_the_conversion),
        cmocka_unit_test(test_imported_adam_state),
        cmocka_unit_test(test_outputs_and_console),
        cmocka_unit_test(test_multivariate_two_layers_dropout_learns),
        cmocka_unit_test(test_gpu_is_refused_without_a_gpu),
        cmocka_unit_test(test_bad_init_weights_stop_before_writing),
        cmocka_unit_test(test_divergence_names_epoch_and_step),
        cmocka_unit_test(test_interrupt_stops_between_steps),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
