/* The pjrt compute backend on XLA's CPU plugin (docs/architecture.md "The pjrt backend"):
 *   runtime      a missing plugin, a library that is no plugin, a program the plugin rejects:
 *                statuses carrying the reason (the plugin's own message); the compile cache
 *   training     RNN, LSTM and GRU with 1 and 2 layers (LSTM's 2 with dropout 0.2) at
 *                the seed config's shapes (C 1, H 20, T 20, B 16, every 7th batch short: the
 *                same program, padded),
 *                100 steps from the same initial weights and batches as the CPU backend:
 *                every step's loss within 1e-5 relative, the final weights within 1e-4
 *   forward      validation's per-window squared errors and a 24-step forecast against the
 *                CPU backend's from the trained weights
 *   replicas     2 replicas on 2 CPU devices (one all_reduce in the program) = 1 replica
 *                with the whole batch, also for a batch that does not split evenly
 *   worker       `accelerator = xla` trains the seed config; checkpoints cross backends (xla
 *                -> cpu and cpu -> xla) and land where a CPU-only run lands; `accelerator =
 *                tpu` without a TPU is exit code 2 with the reason
 * TSRNN_TEST_SHORT (the ASan + UBSan run, where each XLA compile takes seconds more): of the
 * training cases the 2-layer LSTM with dropout only (the RNN and GRU cases are skipped), the
 * rest as above.
 * Exits 77 when the build has no pjrt backend or the plugin is not installed
 * (scripts/install-deps.sh caches it). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/core/rng.h"
#include "testutil.h"
#include "tsrnn/compute.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"
#include "tsrnn_build.h"

#if TSRNN_HAVE_PJRT_BACKEND
#include "src/compute/pjrt/runtime.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        enum tsrnn_status s_ = (expr);                                                             \
        if (s_ != TSRNN_OK)                                                                        \
            fail_msg("%s: %s", #expr, tsrnn_last_error());                                         \
    } while (0)

static char plugin[4096];

enum {
    C = 1,
    H = 20,
    T = 20,
    B = 16,
    SHORT_B = 5,
    STEPS = 100,
    CONTEXT = 14,
    HORIZON = 24
};

static struct tsrnn_compute *new_pjrt(int replicas)
{
    struct tsrnn_compute_options o = { .kind = TSRNN_COMPUTE_PJRT,
                                       .plugin_path = plugin,
                                       .replica_count = replicas,
                                       .cpu_device_count = 2 };
    struct tsrnn_compute *c;
    OK(tsrnn_compute_create(&c, &o));
    return c;
}

static struct tsrnn_compute *new_cpu(void)
{
    struct tsrnn_compute_options o = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    struct tsrnn_compute *c;
    OK(tsrnn_compute_create(&c, &o));
    return c;
}

/* --- runtime ---------------------------------------------------------------------------- */

static void test_runtime(void **state)
{
    (void)state;
    struct tsrnn_pjrt *rt;
    assert_int_equal(tsrnn_pjrt_open(&rt, "/nonexistent/libtpu.so", true, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "cannot load the PJRT plugin /nonexistent/libtpu.so");
    assert_null(rt);
    assert_int_equal(tsrnn_pjrt_open(&rt, "libm.so.6", true, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "libm.so.6 is not a PJRT plugin (no GetPjrtApi)");

    OK(tsrnn_pjrt_open(&rt, plugin, true, 2));
    assert_string_equal(tsrnn_pjrt_platform(rt), "cpu");
    assert_int_equal(tsrnn_pjrt_device_count(rt), 2);
    int major, minor;
    tsrnn_pjrt_api_version(rt, &major, &minor);
    printf("# plugin %s: PJRT API %d.%d, platform cpu, 2 devices\n", plugin, major, minor);

    struct tsrnn_pjrt_program *prog, *again;
    const char *bad = "module {\n  func.func public @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n"
                      "    func.return %a : tensor<2xf32>\n  }\n}\n";
    assert_int_equal(tsrnn_pjrt_compile(rt, &prog, bad, 1), TSRNN_ERR_IO);
    tu_expect_in(tsrnn_last_error(), "compiling a program failed: ");
    printf("# a rejected program: %s\n", tsrnn_last_error());
    assert_true(strlen(tsrnn_last_error()) > strlen("pjrt (): compiling a program failed: ") + 20);

    const char *twice = "module {\n  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                        "    %b = stablehlo.add %a, %a : tensor<2xf32>\n"
                        "    func.return %b : tensor<2xf32>\n  }\n}\n";
    OK(tsrnn_pjrt_compile(rt, &prog, twice, 1));
    OK(tsrnn_pjrt_compile(rt, &again, twice, 1));
    assert_ptr_equal(prog, again);
    assert_int_equal(tsrnn_pjrt_program_count(rt), 1);
    float in[2] = { 1.5f, -2.0f }, got[2];
    int64_t dims[1] = { 2 };
    struct tsrnn_pjrt_buffer *arg, *res;
    OK(tsrnn_pjrt_buffer_upload(rt, &arg, 0, in, dims, 1));
    OK(tsrnn_pjrt_execute(rt, prog, 1, &arg, 1, &res, 1));
    assert_int_equal(tsrnn_pjrt_buffer_download(rt, res, got, 3 * sizeof(float)), TSRNN_ERR_IO);
    tu_expect_in(tsrnn_last_error(), "holds 8 bytes, 12 were expected");
    OK(tsrnn_pjrt_buffer_download(rt, res, got, sizeof(got)));
    assert_true(got[0] == 3.0f && got[1] == -4.0f);
    tsrnn_pjrt_buffer_destroy(rt, arg);
    tsrnn_pjrt_buffer_destroy(rt, res);
    tsrnn_pjrt_close(rt);
}

/* --- training against the CPU backend ---------------------------------------------------- */

struct run {
    struct tsrnn_model model;
    struct tsrnn_adam adam;
};

static void run_init(struct run *r, struct tsrnn_compute *c, const struct tsrnn_model_dims *d,
                     const float *params)
{
    OK(tsrnn_model_init(&r->model, c, d, B, T));
    OK(tsrnn_model_upload_params(&r->model, params));
    OK(tsrnn_adam_init(&r->adam, c, r->model.table.total_count, 1e-3));
    struct tsrnn_step_state state = tsrnn_adam_step_state(&r->adam, r->model.params);
    OK(tsrnn_compute_bind_state(r->model.ws, &state));
}

static void run_finish(struct run *r)
{
    tsrnn_adam_finish(&r->adam);
    tsrnn_model_finish(&r->model);
}

/* One training step through the compute door, the same call on both backends (the CPU's
 * composed from its per-layer operations, pjrt's one compiled program); its loss. */
static float run_step(struct run *r, const float *x, const float *y, size_t b, uint64_t step)
{
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, 42 + 7 * step);
    struct tsrnn_step_args args = {
        .x = x,
        .y = y,
        .batch_count = b,
        .step_count = T,
        .dropout_masks = tsrnn_model_dropout(&r->model, b, T, &g, 0, 1),
        .loss = TSRNN_LOSS_MSE,
    };
    tsrnn_adam_next_update(&r->adam, &args.update);
    OK(tsrnn_compute_step(r->model.ws, &args));
    float loss;
    struct tsrnn_step_results res;
    OK(tsrnn_compute_step_results(r->model.ws, &loss, 1, &res));
    assert_int_equal(res.taken, 1);
    assert_int_equal(res.updated, 1);
    assert_int_equal(res.halt, TSRNN_STEP_RAN);
    return loss;
}

/* A batch of b windows of a noisy sine (the seed's scale: values in [0, 1]). */
static void make_batch(float *x, float *y, size_t b, struct tsrnn_rng *rng)
{
    for (size_t i = 0; i < b; i++) {
        float phase = 6.2831853f * tsrnn_rng_uniform(rng);
        for (size_t t = 0; t <= T; t++) {
            float v = 0.5f + 0.4f * sinf(phase + 0.5f * (float)t) +
                      0.05f * (tsrnn_rng_uniform(rng) - 0.5f);
            if (t < T)
                x[i * T + t] = v;
            if (t > 0)
                y[i * T + t - 1] = v;
        }
    }
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

struct case_ {
    enum tsrnn_model_kind kind;
    size_t layers;
    float dropout;
};

static struct tsrnn_compute *pjrt1;

static void train_and_compare(const struct case_ *k)
{
    struct tsrnn_model_dims d = { .kind = k->kind,
                                  .input_count = C,
                                  .hidden_count = H,
                                  .layer_count = k->layers,
                                  .output_count = C,
                                  .dropout = k->dropout };
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &d);
    size_t n = table.total_count;
    float *init = malloc(n * sizeof(float)), *pc = malloc(n * sizeof(float));
    float *pp = malloc(n * sizeof(float));
    float x[B * T * C], y[B * T * C];
    assert_non_null(init);
    assert_non_null(pc);
    assert_non_null(pp);
    tsrnn_model_init_params(init, &table, &d, 42);

    struct tsrnn_compute *cpu = new_cpu();
    struct run rc, rp;
    size_t compiles0, compiles1;
    double compile_s0, compile_s1;
    tsrnn_pjrt_compile_stats(tsrnn_pjrt_of(pjrt1), &compiles0, &compile_s0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_init(&rc, cpu, &d, init);
    run_init(&rp, pjrt1, &d, init);
    assert_true(tsrnn_compute_caps(cpu)->layer_ops);
    assert_false(tsrnn_compute_caps(pjrt1)->layer_ops);

    struct tsrnn_rng data;
    tsrnn_rng_init(&data, 1234, (uint64_t)k->kind * 10 + k->layers);
    double worst_rel = 0.0;
    float first = 0.0f, last = 0.0f;
    for (uint64_t s = 0; s < STEPS; s++) {
        size_t b = s % 7 == 6 ? SHORT_B : B; /* the epoch's short last batch */
        make_batch(x, y, b, &data);
        float lc = run_step(&rc, x, y, b, s);
        float lp = run_step(&rp, x, y, b, s);
        double rel = fabs((double)lp - (double)lc) / fabs((double)lc);
        worst_rel = fmax(worst_rel, rel);
        if (rel > 1e-5)
            fail_msg("%s, %zu layers: step %llu: loss %.9g on pjrt, %.9g on cpu (rel %.3g)",
                     tsrnn_model_kind_name(k->kind), k->layers, (unsigned long long)s, (double)lp,
                     (double)lc, rel);
        if (s == 0)
            first = lc;
        last = lc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    tsrnn_pjrt_compile_stats(tsrnn_pjrt_of(pjrt1), &compiles1, &compile_s1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("#      %zu programs compiled in %.2f s; %d steps on both backends %.2f s\n",
           compiles1 - compiles0, compile_s1 - compile_s0, STEPS, wall);
    OK(tsrnn_model_download_params(&rc.model, pc));
    OK(tsrnn_model_download_params(&rp.model, pp));
    double wdiff = max_abs_diff(pc, pp, n);
    float *mc = malloc(n * sizeof(float)), *mp = malloc(n * sizeof(float));
    assert_non_null(mc);
    assert_non_null(mp);
    OK(tsrnn_compute_download(cpu, mc, rc.adam.exp_avg_sq, n * sizeof(float)));
    OK(tsrnn_compute_download(pjrt1, mp, rp.adam.exp_avg_sq, n * sizeof(float)));
    double vdiff = max_abs_diff(mc, mp, n);
    printf("# %-4s %zu layer%s%s: %d steps, loss %.5f -> %.5f; worst step loss rel diff %.2e; "
           "final weights max |diff| %.2e; exp_avg_sq %.2e\n",
           tsrnn_model_kind_name(k->kind), k->layers, k->layers > 1 ? "s" : " ",
           k->dropout > 0 ? " dropout 0.2" : "", STEPS, (double)first, (double)last, worst_rel,
           wdiff, vdiff);
    assert_true(first > 1.5f * last); /* it learned something */
    assert_true(wdiff <= 1e-4);
    assert_true(rp.adam.step == STEPS);

    /* Validation's windows and a forecast from the trained weights. */
    double sec[B], sep[B];
    make_batch(x, y, 3, &data);
    OK(tsrnn_model_evaluate(&rc.model, x, y, 3, T, sec));
    OK(tsrnn_model_evaluate(&rp.model, x, y, 3, T, sep));
    for (size_t i = 0; i < 3; i++)
        if (fabs(sec[i] - sep[i]) > 1e-5 * sec[i] + 1e-9)
            fail_msg("window %zu: squared errors %.9g on pjrt, %.9g on cpu", i, sep[i], sec[i]);
    float fc[HORIZON], fp[HORIZON];
    OK(tsrnn_model_predict(&rc.model, fc, x, 1, CONTEXT, HORIZON));
    OK(tsrnn_model_predict(&rp.model, fp, x, 1, CONTEXT, HORIZON));
    double fdiff = max_abs_diff(fc, fp, HORIZON);
    printf("#      validation squared errors rel diff <= 1e-5; forecast %d steps max |diff| "
           "%.2e\n",
           HORIZON, fdiff);
    assert_true(fdiff <= 1e-5);

    run_finish(&rc);
    run_finish(&rp);
    tsrnn_compute_destroy(cpu);
    free(init);
    free(pc);
    free(pp);
    free(mc);
    free(mp);
}

static void test_train_rnn(void **state)
{
    (void)state;
    if (tu_short())
        skip();
    train_and_compare(&(struct case_){ TSRNN_MODEL_RNN, 1, 0.0f });
    train_and_compare(&(struct case_){ TSRNN_MODEL_RNN, 2, 0.0f });
}

static void test_train_lstm(void **state)
{
    (void)state;
    if (!tu_short())
        train_and_compare(&(struct case_){ TSRNN_MODEL_LSTM, 1, 0.0f });
    train_and_compare(&(struct case_){ TSRNN_MODEL_LSTM, 2, 0.2f });
}

static void test_train_gru(void **state)
{
    (void)state;
    if (tu_short())
        skip();
    train_and_compare(&(struct case_){ TSRNN_MODEL_GRU, 1, 0.0f });
    train_and_compare(&(struct case_){ TSRNN_MODEL_GRU, 2, 0.0f });
}

/* --- replicas --------------------------------------------------------------------------- */

static void test_replicas(void **state)
{
    (void)state;
    struct tsrnn_model_dims d = { .kind = TSRNN_MODEL_GRU,
                                  .input_count = C,
                                  .hidden_count = H,
                                  .layer_count = 2,
                                  .output_count = C };
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &d);
    size_t n = table.total_count;
    float *init = malloc(n * sizeof(float)), *p1 = malloc(n * sizeof(float));
    float *p2 = malloc(n * sizeof(float));
    float x[B * T * C], y[B * T * C];
    assert_non_null(init);
    assert_non_null(p1);
    assert_non_null(p2);
    tsrnn_model_init_params(init, &table, &d, 7);
    struct tsrnn_compute *pjrt2 = new_pjrt(2);
    struct run r1, r2;
    run_init(&r1, pjrt1, &d, init);
    run_init(&r2, pjrt2, &d, init);
    struct tsrnn_rng data;
    tsrnn_rng_init(&data, 99, 1);
    double worst = 0.0;
    for (uint64_t s = 0; s < 30; s++) {
        size_t b = s % 3 == 2 ? 13 : B; /* 13 = 7 + 6: the second replica gets a padded row */
        make_batch(x, y, b, &data);
        float l1 = run_step(&r1, x, y, b, s), l2 = run_step(&r2, x, y, b, s);
        worst = fmax(worst, fabs((double)l1 - (double)l2) / (double)l1);
    }
    OK(tsrnn_model_download_params(&r1.model, p1));
    OK(tsrnn_model_download_params(&r2.model, p2));
    double wdiff = max_abs_diff(p1, p2, n);
    size_t programs = tsrnn_pjrt_program_count(tsrnn_pjrt_of(pjrt2));
    printf("# 2 replicas x 8 windows vs 1 x 16 (every third batch 13 windows), GRU 2 layers, 30 "
           "steps: loss rel diff %.2e, weights max |diff| %.2e; %zu program\n",
           worst, wdiff, programs);
    assert_true(worst <= 1e-5);
    assert_true(wdiff <= 1e-5);
    assert_int_equal(programs, 1); /* one training program for both batch sizes */
    run_finish(&r1);
    run_finish(&r2);
    tsrnn_compute_destroy(pjrt2);
    free(init);
    free(p1);
    free(p2);
}

/* --- the worker -------------------------------------------------------------------------- */

static size_t read_metrics(const char *name, struct tu_metrics_row *rows, size_t capacity)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), name);
    return tu_read_metrics(path, rows, capacity);
}

static double last_val_loss(const char *name)
{
    struct tu_metrics_row rows[512];
    size_t count = read_metrics(name, rows, 512);
    for (size_t i = count; i-- > 0;)
        if (!isnan(rows[i].val_loss))
            return rows[i].val_loss;
    fail_msg("no val_loss in %s's metrics.csv", name);
    return NAN;
}

static void expect_train(const char *name, const char *const *sets, int code)
{
    struct tu_result r;
    int rc = tu_train(&r, name, sets, 120);
    if (rc != code)
        fail_msg("%s: exit %d, expected %d\nstdout: %s\nstderr: %s", name, rc, code, r.out, r.err);
}

static void test_worker(void **state)
{
    (void)state;
    struct tu_result r;
    setenv("TSRNN_PJRT_PLUGIN", plugin, 1);

    /* The seed config for 15 epochs (105 steps) on both: every step's loss. */
    const char *xla15[] = { "trainer.accelerator=xla", "training.n_epochs=15", NULL };
    assert_int_equal(tu_train(&r, "xla15", xla15, 120), 0);
    tu_expect_in(r.out, "TPU available: False, using: 0 TPU cores");
    const char *cpu15[] = { "trainer.accelerator=cpu", "training.n_epochs=15", NULL };
    expect_train("cpu15", cpu15, 0);
    struct tu_metrics_row rx[512], rc[512];
    size_t nx = read_metrics("xla15", rx, 512), nc = read_metrics("cpu15", rc, 512);
    assert_int_equal(nx, nc);
    double worst = 0.0;
    size_t steps = 0;
    for (size_t i = 0; i < nx; i++) {
        assert_int_equal(rx[i].step, rc[i].step);
        if (isnan(rc[i].train_loss))
            continue;
        steps++;
        worst = fmax(worst, fabs(rx[i].train_loss - rc[i].train_loss) / rc[i].train_loss);
    }
    assert_int_equal(steps, 105);
    assert_true(worst <= 1e-5);

    /* Checkpoints across backends: xla's epoch 15 continued on the CPU, the CPU's on xla, to
     * 17 epochs, against the CPU all the way. */
    const char *cpu17[] = { "trainer.accelerator=cpu", "training.n_epochs=17", NULL };
    expect_train("cpu17", cpu17, 0);
    const char *to_cpu[] = { "trainer.accelerator=cpu", "training.n_epochs=17",
                             "output.force_reset=false", "training.resume=last", NULL };
    expect_train("xla15", to_cpu, 0);
    const char *to_xla[] = { "trainer.accelerator=xla", "training.n_epochs=17",
                             "output.force_reset=false", "training.resume=last", NULL };
    expect_train("cpu15", to_xla, 0);
    double v_cpu = last_val_loss("cpu17");
    double v_x2c = last_val_loss("xla15"), v_c2x = last_val_loss("cpu15");
    printf("# seed config, 15 epochs (105 steps) on xla and cpu: worst step loss rel diff %.2e; "
           "val_loss after 17 epochs cpu %.9g, xla->cpu %.9g, cpu->xla %.9g\n",
           worst, v_cpu, v_x2c, v_c2x);
    assert_true(fabs(v_x2c - v_cpu) <= 1e-5 * v_cpu);
    assert_true(fabs(v_c2x - v_cpu) <= 1e-5 * v_cpu);

    /* accelerator = tpu where the plugin is no TPU, and where there is no plugin at all. */
    const char *tpu[] = { "trainer.accelerator=tpu", "training.n_epochs=1", NULL };
    assert_int_equal(tu_train(&r, "tpu", tpu, 60), 2);
    tu_expect_in(r.err, "no tpu could be used: the PJRT plugin's platform is cpu, tpu was asked");
    unsetenv("TSRNN_PJRT_PLUGIN");
    setenv("TPU_LIBRARY_PATH", "/nonexistent/libtpu.so", 1);
    assert_int_equal(tu_train(&r, "tpu", tpu, 60), 2);
    tu_expect_in(r.err, "cannot load the PJRT plugin /nonexistent/libtpu.so");
    unsetenv("TPU_LIBRARY_PATH");
}

/* The training controls on the fused step: the learning-rate scheduler runs on the host and
 * feeds each step's lr into the program (StepLR on xla = on the CPU, step by step); what the
 * compiled step cannot do (other optimizers, Adam's L2 weight_decay, L1Loss, HuberLoss,
 * clipping, EarlyStopping on MeanAbsoluteError) is refused with exit 2. */
static void test_training_controls(void **state)
{
    (void)state;
    struct tu_result r;
    setenv("TSRNN_PJRT_PLUGIN", plugin, 1);
    const char *xla[] = { "trainer.accelerator=xla",          "training.n_epochs=3",
                          "training.lr_scheduler_cls=StepLR", "lr_scheduler_kwargs.step_size=1",
                          "lr_scheduler_kwargs.gamma=0.1",    NULL };
    expect_train("xla_steplr", xla, 0);
    const char *cpu[] = { "trainer.accelerator=cpu",          "training.n_epochs=3",
                          "training.lr_scheduler_cls=StepLR", "lr_scheduler_kwargs.step_size=1",
                          "lr_scheduler_kwargs.gamma=0.1",    NULL };
    expect_train("cpu_steplr", cpu, 0);
    struct tu_metrics_row rx[64], rc[64];
    size_t nx = read_metrics("xla_steplr", rx, 64), nc = read_metrics("cpu_steplr", rc, 64);
    assert_int_equal(nx, nc);
    double worst = 0.0;
    for (size_t i = 0; i < nx; i++)
        if (!isnan(rc[i].train_loss))
            worst = fmax(worst, fabs(rx[i].train_loss - rc[i].train_loss) / rc[i].train_loss);
    printf("# StepLR on xla against the CPU, %zu rows: worst step loss rel diff %.2e\n", nx, worst);
    assert_true(worst <= 1e-5);

    static const char *const refused[][2] = {
        { "training.optimizer_cls=SGD",
          "[training] optimizer_cls: the pjrt compute backend's training step has Adam only" },
        { "trainer.gradient_clip_val=1",
          "[trainer] gradient_clip_val: the pjrt compute backend's training step has no "
          "gradient clipping" },
        { "training.loss_fn=L1Loss", "[training] loss_fn = L1Loss: the pjrt compute backend has "
                                     "no L1Loss" },
        { "training.loss_fn=HuberLoss",
          "[training] loss_fn = HuberLoss: the pjrt compute backend has no HuberLoss" },
        { "training.optimizer_cls=RMSprop",
          "[training] optimizer_cls: the pjrt compute backend's training step has Adam only" },
        { "training.weight_decay=0.1",
          "--set training.weight_decay=0.1: [training] weight_decay: the pjrt compute backend's "
          "training step has no L2 penalty" },
        { "early_stopping.monitor=val_MeanAbsoluteError",
          "[early_stopping] monitor = val_MeanAbsoluteError: the pjrt compute backend has no "
          "absolute errors" },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *sets[] = { "trainer.accelerator=xla", refused[i][0], NULL };
        assert_int_equal(tu_train(&r, "refused", sets, 60), 2);
        tu_expect_in(r.err, refused[i][1]);
    }
    unsetenv("TSRNN_PJRT_PLUGIN");
}

#endif

int main(void)
{
#if !TSRNN_HAVE_PJRT_BACKEND
    printf("# this build has no pjrt backend (no PJRT header: scripts/install-deps.sh)\n");
    return 77;
#else
    const char *env = getenv("TSRNN_PJRT_PLUGIN");
    snprintf(plugin, sizeof(plugin), "%s",
             env != NULL && env[0] ? env : tu_env("TSRNN_PJRT_PLUGIN_DEFAULT"));
    if (access(plugin, R_OK) != 0) {
        printf("# no PJRT plugin at %s (scripts/install-deps.sh caches XLA's CPU plugin)\n",
               plugin);
        return 77;
    }
    if (tu_short())
        printf("# TSRNN_TEST_SHORT: of the training cases, LSTM 2 layers with dropout only\n");
    pjrt1 = new_pjrt(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime),           cmocka_unit_test(test_train_rnn),
        cmocka_unit_test(test_train_lstm),        cmocka_unit_test(test_train_gru),
        cmocka_unit_test(test_replicas),          cmocka_unit_test(test_worker),
        cmocka_unit_test(test_training_controls),
    };
    int failed = cmocka_run_group_tests_name("pjrt", tests, tu_setup_run_dir, tu_teardown_run_dir);
    tsrnn_compute_destroy(pjrt1);
    return failed;
#endif
}
