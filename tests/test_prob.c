/* Probabilistic forecasts and dropout against real Darts and PyTorch (tests/fixtures/prob_*,
 * written by scripts/gen-prob-fixtures.py): dropout masks as nn.LSTM(dropout=p) draws them on a
 * CPU, whole training runs step for step. */
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

static struct tu_result result;

static double rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-30);
}

/* Every row of the run's metrics.csv against the fixture `fixture` (same epochs and steps):
 * the worst relative difference of the steps' train_loss and the epochs' val_loss. */
static double worst_against(const char *run, const char *fixture, size_t rows)
{
    static struct tu_metrics_row ours[4096], theirs[4096];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), run);
    size_t n = tu_read_metrics(path, ours, 4096);
    assert_int_equal(tu_read_metrics(tu_source(fixture), theirs, 4096), rows);
    assert_int_equal(n, rows);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ours[i].epoch, theirs[i].epoch);
        assert_int_equal(ours[i].step, theirs[i].step);
        assert_int_equal(isnan(ours[i].train_loss), isnan(theirs[i].train_loss));
        worst = fmax(worst, isnan(theirs[i].train_loss)
                                ? rel(ours[i].val_loss, theirs[i].val_loss)
                                : rel(ours[i].train_loss, theirs[i].train_loss));
    }
    return worst;
}

/* A 2-layer LSTM with dropout 0.2 on the example (random_state 42, shuffled, validated): Darts
 * draws the masks inside each step from PyTorch's global generator, one double per element
 * (bernoulli_ on a CPU), so every step's loss, and every later epoch's shuffle, follows them.
 * 60 epochs, 420 steps and 60 validations within 1e-5 relative (measured: 5.9e-7). */
static void test_dropout_follows_darts(void **state)
{
    (void)state;
    const char *sets[] = { "model.model=LSTM",
                           "model.n_rnn_layers=2",
                           "model.dropout=0.2",
                           "training.n_epochs=60",
                           "output.save_checkpoints=false",
                           "output.log_tensorboard=false",
                           "forecast.n=0",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(&result, "dropout", sets, 120), 0);
    double worst = worst_against("dropout", "tests/fixtures/prob_dropout_metrics.csv", 480);
    printf("# dropout 0.2, 2-layer LSTM: worst relative difference to Darts over 480 rows %.2e\n",
           worst);
    assert_true(worst <= 1e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropout_follows_darts),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
