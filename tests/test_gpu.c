/* Whole runs on the GPU (issue: one GPU), through the real tsrnn-worker: the CUDA backend
 * against the CPU backend (the specification) on the Darts guide's configuration
 * (examples/air_passengers.ini). Without a usable GPU (none, no driver, or a build without
 * the CUDA backend) the program exits 77: skipped, never passed.
 *
 *   steps_match_cpu        shuffle off, the same initial weights (random_state 42's, drawn
 *                          on the host for both): every one of the first 300 steps' train
 *                          loss within 1e-4 relative of the CPU run's, every epoch's val_loss
 *                          too
 *   seed_config_in_range   the example as it is (random_state 42, shuffled, 300 epochs) on
 *                          the GPU lands where the CPU and PyTorch do: val_loss 0.014-0.026,
 *                          MAPE 12-20 %
 *   checkpoints_move       20 epochs on one device, resumed to 40 on the other (both ways):
 *                          each step's loss within 1e-4 relative of the CPU's uninterrupted
 *                          run, so the checkpoint carried the same model across devices
 *   gpu_resume_identical   20 epochs on the GPU then resumed to 40 on the GPU: the same
 *                          bytes of weights and Adam moments as 40 epochs in one go
 *                          (cuDNN's standard RNN algorithm is deterministic for a fixed
 *                          configuration; this test is where that is measured)
 */
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
#include "tsrnn/compute.h"
#include "tsrnn/safetensors.h"

#define STEPS_COMPARED 300
#define RTOL_STEP      1e-4
#define MAX_ROWS       4096

static struct tu_result result;
static struct tu_metrics_row rows_a[MAX_ROWS], rows_b[MAX_ROWS];

static const char *run_path(const char *model_name, const char *file)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%s", tu_run_dir(), model_name, file);
    return path;
}

static double printed(const char *label)
{
    const char *at = strstr(result.out, label);
    if (at == NULL)
        fail_msg("no '%s' in:\n%s", label, result.out);
    return strtod(at + strlen(label), NULL);
}

/* Runs the worker; fails the test with its error output unless it exits 0. */
static void train(const char *model_name, const char *const *sets)
{
    int rc = tu_train(&result, model_name, sets, 300);
    if (rc != 0)
        fail_msg("tsrnn-worker (%s) exited %d:\n%s", model_name, rc, result.err);
}

/* Compares the train_loss of steps [first, last) and the val_loss of the rows that have one,
 * of two runs' metrics.csv; returns the worst relative difference. */
static double compare_metrics(const char *a_name, const char *b_name, long first, long last)
{
    size_t na = tu_read_metrics(run_path(a_name, "metrics.csv"), rows_a, MAX_ROWS);
    size_t nb = tu_read_metrics(run_path(b_name, "metrics.csv"), rows_b, MAX_ROWS);
    double worst = 0.0;
    size_t compared = 0;
    for (size_t i = 0; i < na; i++) {
        const struct tu_metrics_row *a = &rows_a[i];
        if (a->step < first || a->step >= last)
            continue;
        const struct tu_metrics_row *b = NULL;
        for (size_t j = 0; j < nb && b == NULL; j++)
            if (rows_b[j].step == a->step && rows_b[j].epoch == a->epoch &&
                isnan(rows_b[j].train_loss) == isnan(a->train_loss))
                b = &rows_b[j];
        if (b == NULL)
            fail_msg("%s has no row for epoch %ld step %ld", b_name, a->epoch, a->step);
        double values[2][2] = { { a->train_loss, b->train_loss }, { a->val_loss, b->val_loss } };
        for (int k = 0; k < 2; k++) {
            if (isnan(values[k][0]) && isnan(values[k][1]))
                continue;
            double r = fabs(values[k][0] - values[k][1]) / fabs(values[k][1]);
            if (!(r <= RTOL_STEP))
                fail_msg("%s vs %s, epoch %ld step %ld: %s %.9g vs %.9g (relative %.3g > %g)",
                         a_name, b_name, a->epoch, a->step, k ? "val_loss" : "train_loss",
                         values[k][0], values[k][1], r, RTOL_STEP);
            worst = r > worst ? r : worst;
            compared++;
        }
    }
    assert_true(compared > 0);
    printf("# %s vs %s, steps %ld..%ld: %zu losses compared, worst relative difference %.3g\n",
           a_name, b_name, first, last - 1, compared, worst);
    return worst;
}

static void test_steps_match_cpu(void **state)
{
    (void)state;
    /* 43 epochs of 7 steps: 301 steps. */
    const char *cpu[] = { "training.shuffle=false", "training.n_epochs=43",
                          "trainer.accelerator=cpu", "--quiet", NULL };
    const char *gpu[] = { "training.shuffle=false", "training.n_epochs=43",
                          "trainer.accelerator=gpu", NULL };
    train("steps_cpu", cpu);
    train("steps_gpu", gpu);
    tu_expect_in(result.out, "GPU available: True (cuda), used: True");
    tu_expect_in(result.out, "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [");
    compare_metrics("steps_gpu", "steps_cpu", 0, STEPS_COMPARED);
}

static void test_seed_config_in_range(void **state)
{
    (void)state;
    const char *gpu[] = { "trainer.accelerator=gpu", "--quiet", NULL };
    train("seed_gpu", gpu);
    double val_loss = printed("val_loss "), mape = printed("MAPE ");
    printf("# seed config on the GPU: val_loss %.4f, MAPE %.2f%%\n", val_loss, mape);
    assert_true(val_loss >= 0.014 && val_loss <= 0.026);
    assert_true(mape >= 12.0 && mape <= 20.0);
}

/* `first` epochs on device a, resumed to `total` on device b, in run folder `name`. */
static void part_then_resume(const char *name, const char *a, const char *b, const char *first,
                             const char *total)
{
    const char *part[] = { "training.shuffle=false", first, a, "--quiet", NULL };
    const char *resume[] = { "training.shuffle=false",   total,     b,   "--resume=last",
                             "output.force_reset=false", "--quiet", NULL };
    train(name, part);
    train(name, resume);
    tu_expect_in(result.out, "Resumed at step 140");
}

static void test_checkpoints_move(void **state)
{
    (void)state;
    const char *cpu_full[] = { "training.shuffle=false", "training.n_epochs=40",
                               "trainer.accelerator=cpu", "--quiet", NULL };
    train("cpu_full", cpu_full);
    part_then_resume("gpu_to_cpu", "trainer.accelerator=gpu", "trainer.accelerator=cpu",
                     "training.n_epochs=20", "training.n_epochs=40");
    part_then_resume("cpu_to_gpu", "trainer.accelerator=cpu", "trainer.accelerator=gpu",
                     "training.n_epochs=20", "training.n_epochs=40");
    compare_metrics("gpu_to_cpu", "cpu_full", 0, 280);
    compare_metrics("cpu_to_gpu", "cpu_full", 0, 280);
}

static void test_gpu_resume_identical(void **state)
{
    (void)state;
    const char *full[] = { "training.shuffle=true", "training.n_epochs=40",
                           "trainer.accelerator=gpu", "--quiet", NULL };
    const char *part[] = { "training.shuffle=true", "training.n_epochs=20",
                           "trainer.accelerator=gpu", "--quiet", NULL };
    const char *resume[] = { "training.shuffle=true",
                             "training.n_epochs=40",
                             "trainer.accelerator=gpu",
                             "--resume=last",
                             "output.force_reset=false",
                             "--quiet",
                             NULL };
    train("gpu_full", full);
    train("gpu_part", part);
    train("gpu_part", resume);
    struct tsrnn_safetensors a, b;
    assert_int_equal(
        tsrnn_safetensors_read(&a, run_path("gpu_full", "checkpoints/last-epoch=39.safetensors")),
        TSRNN_OK);
    assert_int_equal(
        tsrnn_safetensors_read(&b, run_path("gpu_part", "checkpoints/last-epoch=39.safetensors")),
        TSRNN_OK);
    assert_int_equal(a.tensor_count, b.tensor_count);
    size_t differing = 0, nbytes = 0;
    for (size_t i = 0; i < a.tensor_count; i++) {
        const struct tsrnn_tensor_info *ta = &a.tensors[i];
        const struct tsrnn_tensor_info *tb = tsrnn_safetensors_find(&b, ta->name);
        assert_non_null(tb);
        assert_int_equal(ta->nbytes, tb->nbytes);
        nbytes += ta->nbytes;
        if (memcmp(ta->data, tb->data, ta->nbytes) != 0) {
            printf("# %s differs\n", ta->name);
            differing++;
        }
    }
    printf("# GPU resume after epoch 19: %zu tensors (%zu bytes), %zu differ\n", a.tensor_count,
           nbytes, differing);
    tsrnn_safetensors_finish(&a);
    tsrnn_safetensors_finish(&b);
    assert_int_equal(differing, 0);
}

int main(void)
{
    char why[512] = "";
    if (!tsrnn_compute_available(TSRNN_COMPUTE_CUDA, why, sizeof(why))) {
        printf("# skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_match_cpu),
        cmocka_unit_test(test_seed_config_in_range),
        cmocka_unit_test(test_checkpoints_move),
        cmocka_unit_test(test_gpu_resume_identical),
    };
    return cmocka_run_group_tests_name("gpu", tests, tu_setup_run_dir, tu_teardown_run_dir);
}
