/* The training controls Darts users set beside Adam and MSE: AdamW, SGD with momentum, L1Loss,
 * ExponentialLR, StepLR, ReduceLROnPlateau, CosineAnnealingLR, OneCycleLR (per step, with
 * Adam's beta1 cycling; per epoch, three phases, with SGD's momentum cycling),
 * CosineAnnealingWarmRestarts, LinearLR, a scheduler per step every third batch, gradient
 * clipping by norm and Lightning's EarlyStopping; Adam's and SGD's L2 weight_decay, SGD with
 * Nesterov momentum, RMSprop (plain, centered with momentum, alpha below 0.5, its momentum
 * cycled by OneCycleLR), Adagrad, HuberLoss and SmoothL1Loss; each compared step by step with
 * real PyTorch / Lightning
 * (scripts/gen-controls-fixtures.py, tests/fixtures/controls-fixtures.md): the same initial
 * weights and sample order as the air_rnn whole-run fixture, every step's train_loss and
 * every epoch's val_loss within 1e-5 relative, the same number of epochs (early stopping)
 * and, from the TensorBoard `lr` scalar, the learning rate of every epoch; and whole runs of
 * real Darts with the newer optimizers, losses and EarlyStopping on torch_metrics
 * (tests/fixtures/darts-controls-fixtures.md). Then a run with
 * all of them on, interrupted and resumed, gives the same bytes as the run in one go; and
 * the settings PyTorch or tsrnn refuse stop with exit code 2 and a message naming them. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tfevents.h"
#include "tsrnn/safetensors.h"

#define MAX_ROWS 3000

static struct tu_result result;

struct control_case {
    const char *name; /* ctl_<name>_*.csv */
    const char *lr, *epochs;
    const char *sets[10];
};

/* As scripts/gen-controls-fixtures.py's CASES. */
static const struct control_case cases[] = {
    { "adamw", "0.003", "40", { "training.optimizer_cls=AdamW", "training.weight_decay=0.05" } },
    { "sgd", "0.05", "40", { "training.optimizer_cls=SGD", "training.momentum=0.9" } },
    { "explr",
      "0.005",
      "40",
      { "training.lr_scheduler_cls=ExponentialLR", "lr_scheduler_kwargs.gamma=0.9" } },
    { "steplr",
      "0.005",
      "40",
      { "training.lr_scheduler_cls=StepLR", "lr_scheduler_kwargs.step_size=7",
        "lr_scheduler_kwargs.gamma=0.5" } },
    { "plateau",
      "0.02",
      "60",
      { "training.lr_scheduler_cls=ReduceLROnPlateau", "lr_scheduler_kwargs.patience=2",
        "lr_scheduler_kwargs.factor=0.5", "lr_scheduler_kwargs.threshold=0.01",
        "lr_scheduler_kwargs.cooldown=1" } },
    { "clip", "0.003", "40", { "trainer.gradient_clip_val=0.3" } },
    { "early",
      "0.02",
      "300",
      { "early_stopping.monitor=val_loss", "early_stopping.patience=4",
        "early_stopping.min_delta=0.0001" } },
    { "l1", "0.005", "40", { "training.loss_fn=L1Loss" } },
    { "cosine",
      "0.005",
      "40",
      { "training.lr_scheduler_cls=CosineAnnealingLR", "lr_scheduler_kwargs.T_max=10",
        "lr_scheduler_kwargs.eta_min=0.0001" } },
    { "cosine_step",
      "0.005",
      "40",
      { "training.lr_scheduler_cls=CosineAnnealingLR", "lr_scheduler_kwargs.T_max=25",
        "lr_scheduler_kwargs.interval=step", "lr_scheduler_kwargs.frequency=3" } },
    { "warm",
      "0.005",
      "40",
      { "training.lr_scheduler_cls=CosineAnnealingWarmRestarts", "lr_scheduler_kwargs.T_0=3",
        "lr_scheduler_kwargs.T_mult=2", "lr_scheduler_kwargs.eta_min=0.0001" } },
    { "linear",
      "0.005",
      "40",
      { "training.lr_scheduler_cls=LinearLR", "lr_scheduler_kwargs.start_factor=0.25",
        "lr_scheduler_kwargs.total_iters=12" } },
    { "onecycle",
      "0.001",
      "40",
      { "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.01",
        "lr_scheduler_kwargs.total_steps=280", "lr_scheduler_kwargs.interval=step" } },
    { "onecycle_epoch",
      "0.05",
      "40",
      { "training.optimizer_cls=SGD", "training.momentum=0.9",
        "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.1",
        "lr_scheduler_kwargs.epochs=40", "lr_scheduler_kwargs.steps_per_epoch=1",
        "lr_scheduler_kwargs.three_phase=true", "lr_scheduler_kwargs.anneal_strategy=linear" } },
    { "adam_l2", "0.005", "40", { "training.weight_decay=0.01", "training.eps=1e-6" } },
    { "sgd_nesterov",
      "0.05",
      "40",
      { "training.optimizer_cls=SGD", "training.momentum=0.9", "training.nesterov=true",
        "training.weight_decay=0.001" } },
    { "rmsprop", "0.001", "40", { "training.optimizer_cls=RMSprop" } },
    { "rmsprop_centered",
      "0.001",
      "40",
      { "training.optimizer_cls=RMSprop", "training.alpha=0.9", "training.eps=1e-6",
        "training.momentum=0.5", "training.centered=true", "training.weight_decay=0.001" } },
    { "rmsprop_low_alpha",
      "0.001",
      "20",
      { "training.optimizer_cls=RMSprop", "training.alpha=0.3", "training.centered=true" } },
    { "adagrad",
      "0.05",
      "40",
      { "training.optimizer_cls=Adagrad", "training.lr_decay=0.01",
        "training.initial_accumulator_value=0.1", "training.weight_decay=0.0001" } },
    { "huber", "0.003", "40", { "training.loss_fn=HuberLoss", "training.delta=0.1" } },
    { "smooth_l1", "0.003", "40", { "training.loss_fn=SmoothL1Loss", "training.beta=0.2" } },
    { "rmsprop_onecycle",
      "0.001",
      "40",
      { "training.optimizer_cls=RMSprop", "training.momentum=0.9",
        "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.002",
        "lr_scheduler_kwargs.total_steps=280", "lr_scheduler_kwargs.interval=step" } },
};

static double rel(double a, double b)
{
    return fabs(a - b) / fabs(b);
}

static const char *run_file(const char *model_name, const char *file)
{
    static char path[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%s", tu_run_dir(), model_name, file);
    return path;
}

/* The `tag` scalars of the run's (only) TensorBoard file, in step order, into values. */
static size_t read_scalars(const char *model_name, const char *tag, double *values, size_t capacity)
{
    char logs[2 * PATH_MAX], path[3 * PATH_MAX] = "";
    snprintf(logs, sizeof(logs), "%s", run_file(model_name, "logs"));
    DIR *dir = opendir(logs);
    assert_non_null(dir);
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir))
        if (strstr(e->d_name, "tfevents") != NULL)
            snprintf(path, sizeof(path), "%s/%s", logs, e->d_name);
    closedir(dir);
    assert_true(path[0] != '\0');
    struct tfev_event *events;
    size_t count, n = 0;
    char err[256];
    if (tfev_read(path, &events, &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    for (size_t i = 0; i < count; i++)
        for (size_t v = 0; v < events[i].value_count; v++)
            if (strcmp(events[i].values[v].tag, tag) == 0 && n < capacity)
                values[n++] = events[i].values[v].value;
    tfev_free(events);
    return n;
}

static void check_case(const struct control_case *c)
{
    char init[PATH_MAX + 64], lr[64], epochs[64], file[96];
    snprintf(init, sizeof(init), "model.init_weights=%s",
             tu_source("tests/fixtures/air_rnn_init.safetensors"));
    snprintf(lr, sizeof(lr), "training.lr=%s", c->lr);
    snprintf(epochs, sizeof(epochs), "training.n_epochs=%s", c->epochs);
    const char *sets[20] = { init,
                             lr,
                             epochs,
                             "training.shuffle=false",
                             "output.save_checkpoints=false",
                             "forecast.n=0",
                             "--progress=none" };
    size_t n = 7;
    for (size_t i = 0; i < sizeof(c->sets) / sizeof(c->sets[0]) && c->sets[i] != NULL; i++)
        sets[n++] = c->sets[i];
    sets[n] = NULL;
    if (tu_train(&result, c->name, sets, 120) != 0)
        fail_msg("%s: %s", c->name, result.err);

    static struct tu_metrics_row ours[MAX_ROWS], torch[MAX_ROWS];
    size_t rows = tu_read_metrics(run_file(c->name, "metrics.csv"), ours, MAX_ROWS);
    snprintf(file, sizeof(file), "tests/fixtures/ctl_%s_metrics.csv", c->name);
    size_t torch_rows = tu_read_metrics(tu_source(file), torch, MAX_ROWS);
    assert_int_equal(rows, torch_rows); /* early stopping: the same epochs */
    double worst = 0.0;
    for (size_t i = 0; i < rows; i++) {
        assert_int_equal(ours[i].epoch, torch[i].epoch);
        assert_int_equal(ours[i].step, torch[i].step);
        assert_int_equal(isnan(ours[i].train_loss), isnan(torch[i].train_loss));
        worst =
            fmax(worst, isnan(torch[i].train_loss) ? rel(ours[i].val_loss, torch[i].val_loss)
                                                   : rel(ours[i].train_loss, torch[i].train_loss));
    }

    /* The learning rate of every epoch, as PyTorch's param group held it (float32 in the
     * event file). */
    static double lrs[MAX_ROWS];
    size_t lr_count = read_scalars(c->name, "lr", lrs, MAX_ROWS);
    snprintf(file, sizeof(file), "tests/fixtures/ctl_%s_lr.csv", c->name);
    char *text = tu_read(tu_source(file));
    assert_non_null(text);
    size_t epoch_count = 0, distinct = 0;
    double previous = NAN;
    for (char *line = strchr(text, '\n') + 1; *line != '\0'; line = strchr(line, '\n') + 1) {
        double torch_lr = strtod(strchr(line, ',') + 1, NULL);
        assert_true(epoch_count < lr_count);
        assert_float_equal(lrs[epoch_count], (float)torch_lr, 0.0);
        distinct += torch_lr != previous;
        previous = torch_lr;
        epoch_count++;
    }
    assert_int_equal(epoch_count, lr_count);
    free(text);
    printf("# %s: %zu metrics rows, %zu epochs, %zu learning rates: worst relative difference "
           "to PyTorch %.2e\n",
           c->name, rows, epoch_count, distinct, worst);
    assert_true(worst <= 1e-5);
}

#define CASE_TEST(i, name)                                                                         \
    static void test_##name##_matches_pytorch(void **state)                                        \
    {                                                                                              \
        (void)state;                                                                               \
        check_case(&cases[i]);                                                                     \
    }
CASE_TEST(0, adamw)
CASE_TEST(1, sgd)
CASE_TEST(2, exponential_lr)
CASE_TEST(3, step_lr)
CASE_TEST(4, reduce_lr_on_plateau)
CASE_TEST(5, gradient_clip)
CASE_TEST(7, l1_loss)
CASE_TEST(8, cosine_annealing_lr)
CASE_TEST(9, cosine_annealing_lr_per_step_every_third_batch)
CASE_TEST(10, cosine_annealing_warm_restarts)
CASE_TEST(11, linear_lr)
CASE_TEST(12, one_cycle_lr_per_step)
CASE_TEST(13, one_cycle_lr_per_epoch_three_phases_sgd)
CASE_TEST(14, adam_l2_weight_decay)
CASE_TEST(15, sgd_nesterov_weight_decay)
CASE_TEST(16, rmsprop)
CASE_TEST(17, rmsprop_centered_momentum)
CASE_TEST(18, rmsprop_alpha_below_half)
CASE_TEST(19, adagrad)
CASE_TEST(20, huber_loss)
CASE_TEST(21, smooth_l1_loss)
CASE_TEST(22, rmsprop_momentum_cycled_by_one_cycle_lr)

/* Real Darts 0.48.1 (scripts/gen-controls-fixtures.py --darts-runs,
 * tests/fixtures/darts-controls-fixtures.md): the example's model, shuffled and validated as
 * Darts does, with RMSprop (centered, momentum, alpha, eps, weight_decay) + HuberLoss +
 * EarlyStopping on torch_metrics' MeanAbsoluteError; Adagrad (lr_decay,
 * initial_accumulator_value, eps, weight_decay) + SmoothL1Loss + EarlyStopping on
 * MeanSquaredError; SGD with Nesterov and weight_decay; Adam with weight_decay and eps. tsrnn
 * on examples/air_passengers.ini with the same settings: the same epochs (EarlyStopping stops
 * where Lightning's did), every step's train_loss, every val_loss and every epoch's metric
 * (TensorBoard's val_<metric>) within 1e-5 relative. */
static void test_darts_runs_with_the_newer_controls(void **state)
{
    (void)state;
    static const struct {
        const char *name, *metric;
        const char *sets[16];
    } runs[] = {
        { "rmsprop_huber_mae",
          "val_MeanAbsoluteError",
          { "model.model=RNN", "training.random_state=0", "training.n_epochs=60",
            "training.optimizer_cls=RMSprop", "training.lr=0.001", "training.alpha=0.9",
            "training.eps=1e-7", "training.momentum=0.5", "training.centered=true",
            "training.weight_decay=0.0001", "training.loss_fn=HuberLoss", "training.delta=0.05",
            "early_stopping.monitor=val_MeanAbsoluteError", "early_stopping.patience=3",
            "early_stopping.min_delta=0.0001" } },
        { "adagrad_smoothl1_mse",
          "val_MeanSquaredError",
          { "model.model=LSTM", "training.random_state=1", "training.n_epochs=60",
            "training.optimizer_cls=Adagrad", "training.lr=0.02", "training.lr_decay=0.01",
            "training.initial_accumulator_value=0.1", "training.weight_decay=0.0001",
            "training.eps=1e-9", "training.loss_fn=SmoothL1Loss", "training.beta=0.1",
            "early_stopping.monitor=val_MeanSquaredError", "early_stopping.patience=3" } },
        { "sgd_nesterov",
          NULL,
          { "model.model=GRU", "training.random_state=42", "training.n_epochs=20",
            "training.optimizer_cls=SGD", "training.lr=0.05", "training.momentum=0.9",
            "training.nesterov=true", "training.weight_decay=0.001" } },
        { "adam_l2",
          NULL,
          { "model.model=RNN", "training.random_state=42", "training.n_epochs=20",
            "training.lr=0.003", "training.weight_decay=0.001", "training.eps=1e-6" } },
    };
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        const char *sets[24] = { "output.save_checkpoints=false", "forecast.n=0",
                                 "output.log_tensorboard=true" };
        size_t n = 3;
        for (size_t i = 0; i < 16 && runs[r].sets[i] != NULL; i++)
            sets[n++] = runs[r].sets[i];
        sets[n] = NULL;
        char model_name[64], file[128];
        snprintf(model_name, sizeof(model_name), "darts_%s", runs[r].name);
        if (tu_train(&result, model_name, sets, 120) != 0)
            fail_msg("%s: %s", runs[r].name, result.err);
        static struct tu_metrics_row ours[MAX_ROWS], darts[MAX_ROWS];
        size_t rows = tu_read_metrics(run_file(model_name, "metrics.csv"), ours, MAX_ROWS);
        snprintf(file, sizeof(file), "tests/fixtures/darts_ctl_%s_metrics.csv", runs[r].name);
        assert_int_equal(rows, tu_read_metrics(tu_source(file), darts, MAX_ROWS));
        double worst = 0.0, worst_metric = 0.0;
        size_t epochs = 0;
        for (size_t i = 0; i < rows; i++) {
            assert_int_equal(ours[i].epoch, darts[i].epoch);
            assert_int_equal(ours[i].step, darts[i].step);
            bool step = !isnan(darts[i].train_loss);
            epochs += !step;
            worst = fmax(worst, step ? rel(ours[i].train_loss, darts[i].train_loss)
                                     : rel(ours[i].val_loss, darts[i].val_loss));
        }
        if (runs[r].metric != NULL) {
            static double got[MAX_ROWS];
            size_t count = read_scalars(model_name, runs[r].metric, got, MAX_ROWS);
            snprintf(file, sizeof(file), "tests/fixtures/darts_ctl_%s_metric.csv", runs[r].name);
            char *text = tu_read(tu_source(file));
            assert_non_null(text);
            size_t k = 0;
            double want;
            for (const char *line = strchr(text, '\n') + 1; *line != '\0';
                 line = strchr(line, '\n') + 1, k++) {
                assert_int_equal(sscanf(line, "%*d,%*d,%lf", &want), 1);
                assert_true(k < count);
                worst_metric = fmax(worst_metric, rel(got[k], want));
            }
            free(text);
            assert_int_equal(k, count);
            assert_int_equal(count, epochs);
            char stop[96];
            snprintf(stop, sizeof(stop), "Monitored metric %s did not improve in the last 3",
                     runs[r].metric);
            tu_expect_in(result.out, stop);
        }
        printf("# Darts %s: %zu epochs, %zu rows; worst relative difference %.2e%s", runs[r].name,
               epochs, rows, worst, runs[r].metric ? "; " : "\n");
        if (runs[r].metric != NULL)
            printf("%s of every epoch %.2e\n", runs[r].metric, worst_metric);
        assert_true(worst <= 1e-5);
        assert_true(worst_metric <= 1e-5);
    }
}

/* Early stopping ends the run after Lightning's epoch, says why, and the run's summary is
 * that of its last epoch. */
static void test_early_stopping_matches_lightning(void **state)
{
    (void)state;
    check_case(&cases[6]);
    tu_expect_in(result.out, "Early stopping after epoch 16: Monitored metric val_loss did not "
                             "improve in the last 4 records. Best score: 0.020. Signaling "
                             "Trainer to stop.\n");
    tu_expect_in(result.out, "Trained 17 epochs (119 steps)");
    assert_null(strstr(result.out, "max_epochs"));
}

/* Without validation, EarlyStopping on train_loss watches the last step's loss of each
 * epoch (what Lightning's callback metrics hold, Darts logging train_loss per step): the
 * epoch it stops after is recomputed here from metrics.csv by Lightning's rule. */
static void test_early_stopping_on_train_loss(void **state)
{
    (void)state;
    const char *sets[] = { "data.split_after=",
                           "training.lr=0.02",
                           "early_stopping.monitor=train_loss",
                           "early_stopping.patience=2",
                           "training.n_epochs=100",
                           "forecast.n=0",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(&result, "train_loss", sets, 60), 0);
    static struct tu_metrics_row rows[MAX_ROWS];
    size_t n = tu_read_metrics(run_file("train_loss", "metrics.csv"), rows, MAX_ROWS);
    float best = INFINITY;
    long wait = 0, stop_epoch = -1;
    for (size_t i = 0; i < n && stop_epoch < 0; i++) {
        if (i + 1 < n && rows[i + 1].epoch == rows[i].epoch)
            continue; /* not the epoch's last step */
        float current = (float)rows[i].train_loss;
        if (current < best) {
            best = current;
            wait = 0;
        } else if (++wait >= 2) {
            stop_epoch = rows[i].epoch;
        }
    }
    assert_true(stop_epoch > 0 && stop_epoch < 99);
    assert_int_equal(rows[n - 1].epoch, stop_epoch); /* nothing trained after it */
    char expected[160];
    snprintf(expected, sizeof(expected),
             "Early stopping after epoch %ld: Monitored metric train_loss did not improve in the "
             "last 2 records. Best score: %.3f.",
             stop_epoch, (double)best);
    tu_expect_in(result.out, expected);
    printf("# train_loss: stopped after epoch %ld, best last-step loss %.9g\n", stop_epoch,
           (double)best);
}

/* Everything on at once (AdamW, ReduceLROnPlateau, clipping, early stopping, L1Loss, shuffling), in
 * one go and stopped after RESUME_AT epochs then resumed: the same weights, moments, learning
 * rate, scheduler and early-stopping state, and metrics.csv, byte for byte. */
#define RESUME_AT "10"
static void test_resume_with_every_control_is_bit_identical(void **state)
{
    (void)state;
    const char *all[] = { "model.hidden_dim=8",
                          "training.lr=0.01",
                          "training.optimizer_cls=AdamW",
                          "training.lr_scheduler_cls=ReduceLROnPlateau",
                          "lr_scheduler_kwargs.patience=1",
                          "trainer.gradient_clip_val=0.05",
                          "early_stopping.monitor=val_loss",
                          "early_stopping.patience=4",
                          "training.loss_fn=L1Loss",
                          "output.log_tensorboard=false",
                          "forecast.n=0",
                          "--quiet" };
    enum {
        ALL = sizeof(all) / sizeof(all[0])
    };
    const char *sets_full[ALL + 2], *sets_part[ALL + 2], *sets_resume[ALL + 4];
    for (size_t i = 0; i < ALL; i++)
        sets_full[i] = sets_part[i] = sets_resume[i] = all[i];
    sets_full[ALL] = "training.n_epochs=60";
    sets_part[ALL] = "training.n_epochs=" RESUME_AT;
    sets_resume[ALL] = "training.n_epochs=60";
    sets_resume[ALL + 1] = "--resume=last";
    sets_resume[ALL + 2] = "output.force_reset=false";
    sets_full[ALL + 1] = sets_part[ALL + 1] = sets_resume[ALL + 3] = NULL;

    assert_int_equal(tu_train(&result, "full", sets_full, 120), 0);
    const char *stop = strstr(result.out, "Early stopping after epoch ");
    assert_non_null(stop);
    long last_epoch = strtol(stop + strlen("Early stopping after epoch "), NULL, 10);
    assert_true(last_epoch > atol(RESUME_AT) && last_epoch < 59);
    assert_int_equal(tu_train(&result, "part", sets_part, 120), 0);
    assert_int_equal(tu_train(&result, "part", sets_resume, 120), 0);
    tu_expect_in(result.out, stop);

    char name[64];
    snprintf(name, sizeof(name), "checkpoints/last-epoch=%ld.safetensors", last_epoch);
    struct tsrnn_safetensors a = { 0 }, b = { 0 };
    assert_int_equal(tsrnn_safetensors_read(&a, run_file("full", name)), TSRNN_OK);
    assert_int_equal(tsrnn_safetensors_read(&b, run_file("part", name)), TSRNN_OK);
    size_t data_a = 8 + a.header_nbytes, data_b = 8 + b.header_nbytes;
    assert_int_equal(a.nbytes - data_a, b.nbytes - data_b);
    assert_memory_equal(a.bytes + data_a, b.bytes + data_b, a.nbytes - data_a);
    const char *keys[] = { "tsrnn.lr", "tsrnn.lr_scheduler", "tsrnn.early_stopping",
                           "tsrnn.global_step", "tsrnn.adam_step" };
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        assert_string_equal(tsrnn_safetensors_metadata(&a, keys[k]),
                            tsrnn_safetensors_metadata(&b, keys[k]));
    printf("# stopped early after epoch %ld, resumed after epoch %s: %zu bytes of weights and "
           "moments identical; lr %s; %s; %s\n",
           last_epoch, RESUME_AT, a.nbytes - data_a, tsrnn_safetensors_metadata(&a, "tsrnn.lr"),
           tsrnn_safetensors_metadata(&a, "tsrnn.lr_scheduler"),
           tsrnn_safetensors_metadata(&a, "tsrnn.early_stopping"));
    assert_string_not_equal(tsrnn_safetensors_metadata(&a, "tsrnn.lr"), "0.01"); /* it moved */
    tsrnn_safetensors_finish(&a);
    tsrnn_safetensors_finish(&b);
    char *ma = tu_read(run_file("full", "metrics.csv")),
         *mb = tu_read(run_file("part", "metrics.csv"));
    assert_string_equal(ma, mb);
    free(ma);
    free(mb);
}

/* The per-step schedulers resume exactly too: OneCycleLR per optimizer step (its rate and
 * Adam's beta1 follow from the step count alone) and LinearLR (each rate from the last), both
 * stopped inside their ramps and resumed: the same bytes as the run in one go. */
static void check_resume_is_bit_identical(const char *name, const char *const *controls)
{
    char full[64], part[64];
    snprintf(full, sizeof(full), "%s_full", name);
    snprintf(part, sizeof(part), "%s_part", name);
    const char *sets_full[16], *sets_part[16], *sets_resume[16];
    size_t n = 0;
    for (; controls[n] != NULL; n++)
        sets_full[n] = sets_part[n] = sets_resume[n] = controls[n];
    sets_full[n] = "training.n_epochs=12";
    sets_part[n] = "training.n_epochs=5";
    sets_resume[n] = "training.n_epochs=12";
    sets_resume[n + 1] = "--resume=last";
    sets_resume[n + 2] = "output.force_reset=false";
    sets_full[n + 1] = sets_part[n + 1] = sets_resume[n + 3] = NULL;
    assert_int_equal(tu_train(&result, full, sets_full, 120), 0);
    assert_int_equal(tu_train(&result, part, sets_part, 120), 0);
    assert_int_equal(tu_train(&result, part, sets_resume, 120), 0);
    const char *last = "checkpoints/last-epoch=11.safetensors";
    struct tsrnn_safetensors a = { 0 }, b = { 0 };
    assert_int_equal(tsrnn_safetensors_read(&a, run_file(full, last)), TSRNN_OK);
    assert_int_equal(tsrnn_safetensors_read(&b, run_file(part, last)), TSRNN_OK);
    assert_int_equal(a.nbytes - a.header_nbytes, b.nbytes - b.header_nbytes);
    assert_memory_equal(a.bytes + 8 + a.header_nbytes, b.bytes + 8 + b.header_nbytes,
                        a.nbytes - 8 - a.header_nbytes);
    assert_string_equal(tsrnn_safetensors_metadata(&a, "tsrnn.lr"),
                        tsrnn_safetensors_metadata(&b, "tsrnn.lr"));
    printf("# %s: resumed after epoch 4, identical at epoch 11: lr %s, %s\n", name,
           tsrnn_safetensors_metadata(&a, "tsrnn.lr"),
           tsrnn_safetensors_metadata(&a, "tsrnn.lr_scheduler"));
    tsrnn_safetensors_finish(&a);
    tsrnn_safetensors_finish(&b);
    char *ma = tu_read(run_file(full, "metrics.csv")), *mb = tu_read(run_file(part, "metrics.csv"));
    assert_string_equal(ma, mb);
    free(ma);
    free(mb);
}

static void test_resume_with_per_step_schedulers_is_bit_identical(void **state)
{
    (void)state;
    const char *one_cycle[] = { "model.hidden_dim=8",
                                "training.lr_scheduler_cls=OneCycleLR",
                                "lr_scheduler_kwargs.max_lr=0.02",
                                "lr_scheduler_kwargs.total_steps=84",
                                "lr_scheduler_kwargs.interval=step",
                                "output.log_tensorboard=false",
                                "forecast.n=0",
                                "--quiet",
                                NULL };
    check_resume_is_bit_identical("onecycle_resume", one_cycle);
    const char *linear[] = { "model.hidden_dim=8",
                             "training.optimizer_cls=SGD",
                             "training.momentum=0.5",
                             "training.lr=0.05",
                             "training.lr_scheduler_cls=LinearLR",
                             "lr_scheduler_kwargs.start_factor=0.1",
                             "lr_scheduler_kwargs.total_iters=60",
                             "lr_scheduler_kwargs.interval=step",
                             "output.log_tensorboard=false",
                             "forecast.n=0",
                             "--quiet",
                             NULL };
    check_resume_is_bit_identical("linear_resume", linear);
}

/* The newer optimizers' state resumes exactly: centered RMSprop with momentum (grad_avg as
 * optim.grad_avg.*, beside the momentum buffer and square_avg) and Adagrad with lr_decay
 * (its sums, and the step count its rate decays with), each stopped after epoch 4 and
 * resumed: the same bytes as the run in one go. */
static void test_resume_with_the_newer_optimizers_is_bit_identical(void **state)
{
    (void)state;
    const char *rmsprop[] = { "model.hidden_dim=8",
                              "training.optimizer_cls=RMSprop",
                              "training.centered=true",
                              "training.momentum=0.5",
                              "training.weight_decay=0.001",
                              "training.loss_fn=HuberLoss",
                              "training.delta=0.2",
                              "output.log_tensorboard=false",
                              "forecast.n=0",
                              "--quiet",
                              NULL };
    check_resume_is_bit_identical("rmsprop_resume", rmsprop);
    const char *adagrad[] = { "model.hidden_dim=8",
                              "training.optimizer_cls=Adagrad",
                              "training.lr=0.02",
                              "training.lr_decay=0.05",
                              "training.initial_accumulator_value=0.1",
                              "output.log_tensorboard=false",
                              "forecast.n=0",
                              "--quiet",
                              NULL };
    check_resume_is_bit_identical("adagrad_resume", adagrad);
    struct tsrnn_safetensors st = { 0 };
    assert_int_equal(tsrnn_safetensors_read(&st, run_file("rmsprop_resume_full",
                                                          "checkpoints/last-epoch=11.safetensors")),
                     TSRNN_OK);
    assert_non_null(tsrnn_safetensors_find(&st, "optim.grad_avg.rnn.weight_hh_l0"));
    tsrnn_safetensors_finish(&st);
}

/* A run folder's config.ini lists every key with its value (the scheduler's and the
 * optimizer's arguments it does not use among them, at their defaults): `tsrnn-worker
 * RUN/config.ini --resume last` trains on from it, as docs/run-folder.md and darts-to-tsrnn
 * tell. With a StepLR and an RMSprop run: before, the StepLR run's config.ini was refused
 * ("factor is not an argument of StepLR"). */
static void test_config_ini_of_a_run_resumes(void **state)
{
    (void)state;
    const char *first[] = { "training.n_epochs=2",
                            "training.optimizer_cls=RMSprop",
                            "training.lr_scheduler_cls=StepLR",
                            "lr_scheduler_kwargs.step_size=2",
                            "forecast.n=0",
                            "--quiet",
                            NULL };
    assert_int_equal(tu_train(&result, "config_ini", first, 60), 0);
    char ini[2 * PATH_MAX];
    snprintf(ini, sizeof(ini), "%s", run_file("config_ini", "config.ini"));
    const char *argv[] = { tu_env("TSRNN_WORKER"),
                           "--quiet",
                           "--resume",
                           "last",
                           "--set",
                           "output.force_reset=false",
                           "--set",
                           "training.n_epochs=3",
                           ini,
                           NULL };
    assert_int_equal(tu_run(argv, 60, &result), 0);
    if (result.exit_code != 0)
        fail_msg("exit %d: %s", result.exit_code, result.err);
    static struct tu_metrics_row rows[64];
    assert_int_equal(tu_read_metrics(run_file("config_ini", "metrics.csv"), rows, 64), 3 * 8);
}

/* A schedule may reach a rate of 0 (CosineAnnealingLR at T_max with eta_min 0): the checkpoint
 * then holds lr 0, and tsrnn-predict and --resume read it (the rate climbs back after T_max,
 * as PyTorch's recursive form does). */
static void test_a_rate_of_zero_is_a_checkpoint_state(void **state)
{
    (void)state;
    const char *cosine[] = { "training.lr_scheduler_cls=CosineAnnealingLR",
                             "lr_scheduler_kwargs.T_max=5",
                             "training.n_epochs=5",
                             "forecast.n=0",
                             "--quiet",
                             NULL };
    assert_int_equal(tu_train(&result, "zero_lr", cosine, 60), 0);
    struct tsrnn_safetensors st = { 0 };
    assert_int_equal(
        tsrnn_safetensors_read(&st, run_file("zero_lr", "checkpoints/last-epoch=4.safetensors")),
        TSRNN_OK);
    assert_string_equal(tsrnn_safetensors_metadata(&st, "tsrnn.lr"), "0");
    tsrnn_safetensors_finish(&st);
    const char *resume[] = { "training.lr_scheduler_cls=CosineAnnealingLR",
                             "lr_scheduler_kwargs.T_max=5",
                             "training.n_epochs=7",
                             "forecast.n=0",
                             "--quiet",
                             "--resume=last",
                             "output.force_reset=false",
                             NULL };
    assert_int_equal(tu_train(&result, "zero_lr", resume, 60), 0);
    assert_int_equal(
        tsrnn_safetensors_read(&st, run_file("zero_lr", "checkpoints/last-epoch=6.safetensors")),
        TSRNN_OK);
    double lr = strtod(tsrnn_safetensors_metadata(&st, "tsrnn.lr"), NULL);
    printf("# CosineAnnealingLR T_max 5: lr 0 after epoch 4, %.17g after epoch 6\n", lr);
    assert_true(lr > 0.0);
    tsrnn_safetensors_finish(&st);
    const char *argv[] = { tu_env("TSRNN_PREDICT"),
                           "--checkpoint",
                           run_file("zero_lr", "checkpoints/last-epoch=4.safetensors"),
                           "--n",
                           "2",
                           NULL };
    assert_int_equal(tu_run(argv, 60, &result), 0);
}

/* logs/hparams.yaml names the optimizer and scheduler classes and the kwargs given, as real
 * Darts 0.48.1 writes them (tests/fixtures/darts_hparams_controls.yaml: SGD with momentum,
 * StepLR, L1Loss, gradient_clip_val 0.3 — the last two are not hyperparameters Darts logs). */
static void test_hparams_name_the_classes_as_darts(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=1",
                           "training.optimizer_cls=SGD",
                           "training.lr=0.05",
                           "training.momentum=0.9",
                           "training.lr_scheduler_cls=StepLR",
                           "lr_scheduler_kwargs.step_size=7",
                           "lr_scheduler_kwargs.gamma=0.5",
                           "training.loss_fn=L1Loss",
                           "trainer.gradient_clip_val=0.3",
                           "forecast.n=0",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(&result, "hparams", sets, 60), 0);
    char *ours = tu_read(run_file("hparams", "logs/hparams.yaml"));
    char *darts = tu_read(tu_source("tests/fixtures/darts_hparams_controls.yaml"));
    assert_non_null(ours);
    assert_non_null(darts);
    assert_string_equal(ours, darts);
    free(ours);
    free(darts);
}

/* The new schedulers' and optimizers' kwargs in logs/hparams.yaml as real Darts writes them
 * (tests/fixtures/darts_hparams_{onecycle,cosine,rmsprop,adagrad,nesterov}.yaml): PyYAML's
 * ints, floats ("1.0e-05") and bools, Lightning's interval, which Darts keeps among the
 * kwargs, and the optimizers' module paths. */
static void test_hparams_of_the_new_schedulers_as_darts(void **state)
{
    (void)state;
    static const struct {
        const char *fixture;
        const char *sets[8];
    } yamls[] = {
        { "tests/fixtures/darts_hparams_onecycle.yaml",
          { "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.01",
            "lr_scheduler_kwargs.total_steps=8", "lr_scheduler_kwargs.interval=step",
            "lr_scheduler_kwargs.pct_start=0.25", "lr_scheduler_kwargs.three_phase=true" } },
        { "tests/fixtures/darts_hparams_cosine.yaml",
          { "training.lr_scheduler_cls=CosineAnnealingLR", "lr_scheduler_kwargs.T_max=10",
            "lr_scheduler_kwargs.eta_min=1e-5" } },
        { "tests/fixtures/darts_hparams_rmsprop.yaml",
          { "training.optimizer_cls=RMSprop", "training.alpha=0.9", "training.eps=1e-7",
            "training.momentum=0.5", "training.centered=true", "training.weight_decay=0.0001" } },
        { "tests/fixtures/darts_hparams_adagrad.yaml",
          { "training.optimizer_cls=Adagrad", "training.lr=0.02", "training.lr_decay=0.01",
            "training.initial_accumulator_value=0.1", "training.eps=1e-9" } },
        { "tests/fixtures/darts_hparams_nesterov.yaml",
          { "training.optimizer_cls=SGD", "training.lr=0.05", "training.momentum=0.9",
            "training.nesterov=true", "training.weight_decay=0.001" } },
    };
    for (size_t c = 0; c < sizeof(yamls) / sizeof(yamls[0]); c++) {
        const char *sets[16] = { "training.n_epochs=1", "data.split_after=", "forecast.n=0",
                                 "--quiet" };
        size_t n = 4;
        for (size_t i = 0; i < 8 && yamls[c].sets[i] != NULL; i++)
            sets[n++] = yamls[c].sets[i];
        sets[n] = NULL;
        assert_int_equal(tu_train(&result, "hparams_sched", sets, 60), 0);
        char *ours = tu_read(run_file("hparams_sched", "logs/hparams.yaml"));
        char *darts = tu_read(tu_source(yamls[c].fixture));
        assert_non_null(ours);
        assert_non_null(darts);
        assert_string_equal(ours, darts);
        free(ours);
        free(darts);
    }
}

/* What PyTorch, Lightning or tsrnn refuse: exit code 2, the key, where it was set, what is
 * accepted. */
static void test_refused_settings_name_the_key(void **state)
{
    (void)state;
    static const struct {
        const char *sets[3];
        const char *message;
    } refused[] = {
        { { "training.weight_decay=-0.5" },
          "--set training.weight_decay=-0.5: [training] weight_decay = -0.5; accepted: a number "
          ">= 0, or -1 for the optimizer's default" },
        { { "training.momentum=0.9" },
          "--set training.momentum=0.9: [training] momentum = 0.9, but optimizer_cls = Adam "
          "(default) has no momentum, which PyTorch refuses; accepted: 0, or optimizer_cls = SGD "
          "or RMSprop" },
        { { "training.optimizer_cls=SGD", "training.nesterov=true" },
          "--set training.nesterov=true: [training] nesterov = true with momentum = 0: PyTorch's "
          "SGD refuses it (\"Nesterov momentum requires a momentum and zero dampening\"); "
          "accepted: a momentum > 0, or nesterov = false" },
        { { "training.optimizer_cls=AdamW", "training.nesterov=true" },
          "[training] nesterov = true, but optimizer_cls = AdamW (--set "
          "training.optimizer_cls=AdamW) has no nesterov" },
        { { "training.optimizer_cls=SGD", "training.eps=1e-6" },
          "[training] eps = 1e-06, but optimizer_cls = SGD (--set training.optimizer_cls=SGD) has "
          "no eps, which PyTorch refuses; accepted: -1 (SGD has no eps)" },
        { { "training.eps=-0.5" }, "[training] eps = -0.5; accepted: a number >= 0, or -1" },
        { { "training.alpha=0.5" },
          "[training] alpha = 0.5, but optimizer_cls = Adam (default) has no alpha" },
        { { "training.centered=true", "training.optimizer_cls=SGD" }, "has no centered" },
        { { "training.lr_decay=0.1", "training.optimizer_cls=RMSprop" },
          "[training] lr_decay = 0.1, but optimizer_cls = RMSprop (--set "
          "training.optimizer_cls=RMSprop) has no lr_decay, which PyTorch refuses; accepted: 0, "
          "or optimizer_cls = Adagrad" },
        { { "training.initial_accumulator_value=1" }, "has no initial_accumulator_value" },
        { { "training.delta=0.5" },
          "--set training.delta=0.5: [training] delta = 0.5, but loss_fn = MSELoss has no delta; "
          "accepted: 1, or loss_fn = HuberLoss" },
        { { "training.loss_fn=HuberLoss", "training.beta=0.5" },
          "[training] beta = 0.5, but loss_fn = HuberLoss has no beta; accepted: 1, or loss_fn = "
          "SmoothL1Loss" },
        { { "training.loss_fn=HuberLoss", "training.delta=0" },
          "--set training.delta=0: [training] delta = '0': out of range; accepted: a number in "
          "(0, 1e+06]" },
        { { "training.optimizer_cls=Adagrad", "training.lr_scheduler_cls=OneCycleLR",
            "lr_scheduler_kwargs.max_lr=0.1" },
          "[lr_scheduler_kwargs] cycle_momentum = true with optimizer_cls = Adagrad, which has "
          "no momentum: PyTorch's OneCycleLR refuses it" },
        { { "early_stopping.monitor=val_MeanAbsoluteError", "data.split_after=" },
          "[early_stopping] monitor = val_MeanAbsoluteError, but there is no validation part" },
        { { "early_stopping.monitor=val_MeanSquaredError", "model.likelihood=gaussian" },
          "[early_stopping] monitor = val_MeanSquaredError with [model] likelihood = gaussian "
          "(--set model.likelihood=gaussian): Darts scores a probabilistic model's torch_metrics "
          "on samples, which tsrnn does not draw; accepted: monitor = val_loss or train_loss" },
        { { "early_stopping.monitor=val_MeanAbsolutePercentageError" },
          "accepted: none, val_loss, train_loss, val_MeanAbsoluteError or val_MeanSquaredError" },
        { { "training.lr_scheduler_cls=StepLR" },
          "[training] lr_scheduler_cls = StepLR needs [lr_scheduler_kwargs] step_size" },
        { { "training.lr_scheduler_cls=ReduceLROnPlateau", "data.split_after=" },
          "lr_scheduler_cls = ReduceLROnPlateau watches val_loss, but there is no validation "
          "part" },
        { { "early_stopping.monitor=val_loss", "data.split_after=" },
          "[early_stopping] monitor = val_loss, but there is no validation part" },
        { { "lr_scheduler_kwargs.factor=1" }, "lr_scheduler_kwargs" },
        { { "training.optimizer_cls=LBFGS" }, "accepted: Adam, AdamW, SGD, RMSprop or Adagrad" },
        { { "training.loss_fn=GaussianNLLLoss" },
          "accepted: MSELoss, L1Loss, HuberLoss or SmoothL1Loss" },
        { { "training.lr_scheduler_cls=CosineAnnealingLR", "lr_scheduler_kwargs.gamma=0.5" },
          "--set lr_scheduler_kwargs.gamma=0.5: [lr_scheduler_kwargs] gamma is not an argument of "
          "CosineAnnealingLR ([training] lr_scheduler_cls, --set "
          "training.lr_scheduler_cls=CosineAnnealingLR), which PyTorch refuses; accepted: "
          "interval, frequency, T_max, eta_min" },
        { { "training.lr_scheduler_cls=CosineAnnealingLR" },
          "lr_scheduler_cls = CosineAnnealingLR needs [lr_scheduler_kwargs] T_max" },
        { { "training.lr_scheduler_cls=CosineAnnealingWarmRestarts" },
          "lr_scheduler_cls = CosineAnnealingWarmRestarts needs [lr_scheduler_kwargs] T_0" },
        { { "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.total_steps=100" },
          "lr_scheduler_cls = OneCycleLR needs [lr_scheduler_kwargs] max_lr" },
        { { "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.1" },
          "needs [lr_scheduler_kwargs] total_steps, or epochs and steps_per_epoch" },
        { { "training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.1",
            "lr_scheduler_kwargs.total_steps=10" },
          "OneCycleLR's cycle has 10 steps, but this run steps it 300 times ([lr_scheduler_kwargs] "
          "interval = epoch, 7 optimizer steps per epoch), where PyTorch raises \"Tried to step "
          "11 times\"" },
        { { "training.lr_scheduler_cls=ReduceLROnPlateau", "lr_scheduler_kwargs.interval=step" },
          "[lr_scheduler_kwargs] interval = step with ReduceLROnPlateau" },
        { { "training.lr_scheduler_cls=LinearLR", "lr_scheduler_kwargs.start_factor=0" },
          "start_factor" },
        { { "trainer.gradient_clip_val=-1" }, "gradient_clip_val" },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *sets[6] = { refused[i].sets[0], refused[i].sets[1], refused[i].sets[2] };
        size_t n = refused[i].sets[1] == NULL ? 1 : refused[i].sets[2] == NULL ? 2 : 3;
        sets[n] = "--quiet";
        sets[n + 1] = NULL;
        assert_int_equal(tu_train(&result, "refused", sets, 30), 2);
        tu_expect_in(result.err, refused[i].message);
    }
}

/* A scheduler that raises the rate until the run diverges: the message names the rate of
 * the step that diverged, lr x gamma^epoch (it named the configured lr, 0.001, whatever the
 * scheduler had made of it). */
static void test_divergence_names_the_scheduled_rate(void **state)
{
    (void)state;
    const char *sets[] = { "training.lr_scheduler_cls=ExponentialLR",
                           "lr_scheduler_kwargs.gamma=100", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "diverging", sets, 60), 1);
    printf("# %s", result.err);
    const char *at = strstr(result.err, "at epoch ");
    assert_non_null(at);
    long epoch = strtol(at + strlen("at epoch "), NULL, 10);
    assert_true(epoch > 0);
    char want[96];
    snprintf(want, sizeof(want), "try a smaller [training] lr (this step's learning rate: %g)",
             1e-3 * pow(100.0, (double)epoch));
    tu_expect_in(result.err, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_matches_pytorch),
        cmocka_unit_test(test_sgd_matches_pytorch),
        cmocka_unit_test(test_exponential_lr_matches_pytorch),
        cmocka_unit_test(test_step_lr_matches_pytorch),
        cmocka_unit_test(test_reduce_lr_on_plateau_matches_pytorch),
        cmocka_unit_test(test_gradient_clip_matches_pytorch),
        cmocka_unit_test(test_early_stopping_matches_lightning),
        cmocka_unit_test(test_l1_loss_matches_pytorch),
        cmocka_unit_test(test_cosine_annealing_lr_matches_pytorch),
        cmocka_unit_test(test_cosine_annealing_lr_per_step_every_third_batch_matches_pytorch),
        cmocka_unit_test(test_cosine_annealing_warm_restarts_matches_pytorch),
        cmocka_unit_test(test_linear_lr_matches_pytorch),
        cmocka_unit_test(test_one_cycle_lr_per_step_matches_pytorch),
        cmocka_unit_test(test_one_cycle_lr_per_epoch_three_phases_sgd_matches_pytorch),
        cmocka_unit_test(test_adam_l2_weight_decay_matches_pytorch),
        cmocka_unit_test(test_sgd_nesterov_weight_decay_matches_pytorch),
        cmocka_unit_test(test_rmsprop_matches_pytorch),
        cmocka_unit_test(test_rmsprop_centered_momentum_matches_pytorch),
        cmocka_unit_test(test_rmsprop_alpha_below_half_matches_pytorch),
        cmocka_unit_test(test_adagrad_matches_pytorch),
        cmocka_unit_test(test_huber_loss_matches_pytorch),
        cmocka_unit_test(test_smooth_l1_loss_matches_pytorch),
        cmocka_unit_test(test_rmsprop_momentum_cycled_by_one_cycle_lr_matches_pytorch),
        cmocka_unit_test(test_early_stopping_on_train_loss),
        cmocka_unit_test(test_darts_runs_with_the_newer_controls),
        cmocka_unit_test(test_resume_with_every_control_is_bit_identical),
        cmocka_unit_test(test_resume_with_per_step_schedulers_is_bit_identical),
        cmocka_unit_test(test_resume_with_the_newer_optimizers_is_bit_identical),
        cmocka_unit_test(test_config_ini_of_a_run_resumes),
        cmocka_unit_test(test_a_rate_of_zero_is_a_checkpoint_state),
        cmocka_unit_test(test_hparams_name_the_classes_as_darts),
        cmocka_unit_test(test_hparams_of_the_new_schedulers_as_darts),
        cmocka_unit_test(test_refused_settings_name_the_key),
        cmocka_unit_test(test_divergence_names_the_scheduled_rate),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
