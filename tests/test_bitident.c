/* Bit identity of the seed configuration: examples/air_passengers.ini trained by the real
 * tsrnn-worker, and data-parallel by the real tsrnn-launch (2 Gloo workers), must end with
 * exactly the bits it ended with at commit 468ea40 (re-measured when the default sample
 * order became today's Darts, `rng_compat = lightning2`: with `lightning1` the 468ea40
 * tables still held bit for bit, so only the order moved). A refactor of the compute code that moves
 * no number passes; one that moves a single bit of any weight, Adam moment or logged loss
 * fails and names what moved.
 *
 * What is pinned, one CRC-32C each (include/tsrnn/crc32c.h):
 *   - every tensor of checkpoints/last-epoch=299.safetensors, its raw little-endian bytes:
 *     the model's weights and the Adam moments (the "optim." names);
 *   - the checkpoint's metadata values that carry numbers from training (the monitored
 *     val_loss and the best one, as the %.17g text written there, and the best epoch);
 *   - metrics.csv's losses: for every row after the header, the text from the train_loss
 *     field to the end of the line, "train_loss,val_loss\n" exactly as written (%.9g, an
 *     empty field where the row has no value), so every logged loss and which column holds
 *     it; the epoch and step columns are checked by the row count;
 *   - forecast.csv, the whole file (the 24 forecast points of [forecast] n).
 *
 * The expected values were measured at 468ea40, three runs alike, on x86-64 with AVX2 (GCC,
 * OpenBLAS and Gloo builds), in the release build (-O3) and in the debug ASan + UBSan build
 * (-O0) alike, so the test compares in every build type. A failure prints every value with
 * its expected and measured CRC, and the measured table in the form of the ones below.
 * Nothing here should depend on the machine: -ffp-contract=off (no fused multiply-adds the
 * source did not write), the hot loops' AVX2 and baseline clones give the same bits
 * (include/tsrnn/compute.h), this model's products stay in the reference loops (below
 * BLAS's and the packed FMA kernel's sizes: hidden 20), the activations are tsrnn's own, not
 * libm's, and a sum of 2 ranks' gradients has one order. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/crc32c.h"
#include "tsrnn/safetensors.h"
#include "tsrnn_build.h"

struct crc_entry {
    const char *name;
    uint32_t crc;
};

/* The rows a file name stands for in the tables. */
#define METRICS_ROW  "metrics.csv train_loss,val_loss"
#define FORECAST_ROW "forecast.csv"

/* tsrnn-worker on the example as it is: 300 epochs of 7 steps (101 windows, batch 16). */
static const struct crc_entry worker_expected[] = {
    { "rnn.weight_ih_l0", 0xd5ca406bu },
    { "rnn.weight_hh_l0", 0x8d8f07fau },
    { "rnn.bias_ih_l0", 0xadb56ca7u },
    { "rnn.bias_hh_l0", 0x3f1a3003u },
    { "V.weight", 0x158189cau },
    { "V.bias", 0xd65d8b0cu },
    { "optim.exp_avg.rnn.weight_ih_l0", 0xc93d033eu },
    { "optim.exp_avg.rnn.weight_hh_l0", 0xb10662d7u },
    { "optim.exp_avg.rnn.bias_ih_l0", 0xcf1c1fe8u },
    { "optim.exp_avg.rnn.bias_hh_l0", 0xcf1c1fe8u },
    { "optim.exp_avg.V.weight", 0x3a360fa1u },
    { "optim.exp_avg.V.bias", 0x0bc96582u },
    { "optim.exp_avg_sq.rnn.weight_ih_l0", 0xc329f4d3u },
    { "optim.exp_avg_sq.rnn.weight_hh_l0", 0x15e1b67bu },
    { "optim.exp_avg_sq.rnn.bias_ih_l0", 0x7a3342d3u },
    { "optim.exp_avg_sq.rnn.bias_hh_l0", 0x7a3342d3u },
    { "optim.exp_avg_sq.V.weight", 0xbc09dc89u },
    { "optim.exp_avg_sq.V.bias", 0x6d68c997u },
    { "tsrnn.monitor_value", 0xd42b6ea7u },
    { "tsrnn.best_value", 0x80f1c6f6u },
    { "tsrnn.best_epoch", 0xb53b591bu },
    { "metrics.csv train_loss,val_loss", 0x9c3742c4u },
    { "forecast.csv", 0xc5181c1fu },
};

/* tsrnn-launch --accelerator cpu --devices 2 on the example as it is: 300 epochs of 4 steps
 * (each rank a shard of the 101 windows, batch 16). */
static const struct crc_entry launch_expected[] = {
    { "rnn.weight_ih_l0", 0x67e113b4u },
    { "rnn.weight_hh_l0", 0x75f08050u },
    { "rnn.bias_ih_l0", 0x4c09530eu },
    { "rnn.bias_hh_l0", 0x03e0e14au },
    { "V.weight", 0x0e77717cu },
    { "V.bias", 0x8d6f1945u },
    { "optim.exp_avg.rnn.weight_ih_l0", 0x8bee6b81u },
    { "optim.exp_avg.rnn.weight_hh_l0", 0x9c1ea130u },
    { "optim.exp_avg.rnn.bias_ih_l0", 0x92db8b31u },
    { "optim.exp_avg.rnn.bias_hh_l0", 0x92db8b31u },
    { "optim.exp_avg.V.weight", 0xe3512119u },
    { "optim.exp_avg.V.bias", 0xa2d7887fu },
    { "optim.exp_avg_sq.rnn.weight_ih_l0", 0x2a02570eu },
    { "optim.exp_avg_sq.rnn.weight_hh_l0", 0x13d830cbu },
    { "optim.exp_avg_sq.rnn.bias_ih_l0", 0xa4abd1adu },
    { "optim.exp_avg_sq.rnn.bias_hh_l0", 0xa4abd1adu },
    { "optim.exp_avg_sq.V.weight", 0x78ce1e17u },
    { "optim.exp_avg_sq.V.bias", 0x9a48b6a5u },
    { "tsrnn.monitor_value", 0x53c95487u },
    { "tsrnn.best_value", 0xb17eda87u },
    { "tsrnn.best_epoch", 0x53a684e0u },
    { "metrics.csv train_loss,val_loss", 0xf4cb6080u },
    { "forecast.csv", 0x2c636c26u },
};

/* The metadata values pinned beside the tensors. */
static const char *const pinned_metadata[] = { "tsrnn.monitor_value", "tsrnn.best_value",
                                               "tsrnn.best_epoch" };

#define MAX_ENTRIES 64

static struct tu_result result;

/* The checkpoint a test reads: its names are the tables' rows until the comparison is done,
 * and the teardown frees it, also after a failed comparison (no leak report under ASan on
 * top of the failure). */
static struct tsrnn_safetensors checkpoint;

static int free_checkpoint(void **state)
{
    (void)state;
    tsrnn_safetensors_finish(&checkpoint);
    return 0;
}

static const char *run_path(const char *model_name, const char *file)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%s", tu_run_dir(), model_name, file);
    return path;
}

static uint32_t crc_text(const char *text, size_t nbytes)
{
    return tsrnn_crc32c(0, text, nbytes);
}

/* Appends one measured value; `name` must outlive the entries (static or the checkpoint's
 * strings). */
static void add(struct crc_entry *entries, size_t *count, const char *name, uint32_t crc)
{
    assert_true(*count < MAX_ENTRIES);
    entries[(*count)++] = (struct crc_entry){ name, crc };
}

/* The CRC of metrics.csv's loss columns (see the top of the file); checks the header and
 * that it has `rows` rows. */
static uint32_t metrics_crc(const char *path, size_t rows)
{
    char *text = tu_read(path);
    if (text == NULL)
        fail_msg("cannot read %s", path);
    const char *header = "epoch,step,train_loss,val_loss\n";
    assert_int_equal(strncmp(text, header, strlen(header)), 0);
    uint32_t crc = 0;
    size_t count = 0;
    for (const char *line = text + strlen(header); *line != '\0'; count++) {
        const char *end = strchr(line, '\n');
        if (end == NULL)
            fail_msg("%s: row %zu has no end of line", path, count + 1);
        const char *losses = line;
        for (int commas = 0; commas < 2; commas++) {
            losses = memchr(losses, ',', (size_t)(end - losses));
            if (losses == NULL)
                fail_msg("%s: row %zu has fewer than 4 columns", path, count + 1);
            losses++;
        }
        crc = tsrnn_crc32c(crc, losses, (size_t)(end + 1 - losses));
        line = end + 1;
    }
    free(text);
    assert_int_equal(count, rows);
    return crc;
}

/* Everything pinned of the run folder `model_name`, in a fixed order: the checkpoint's
 * tensors in file order, the metadata, metrics.csv, forecast.csv. `st` keeps the tensor
 * names alive. */
static size_t measure(struct crc_entry *entries, struct tsrnn_safetensors *st,
                      const char *model_name, int last_epoch, size_t metrics_rows)
{
    size_t count = 0;
    char name[64];
    snprintf(name, sizeof(name), "checkpoints/last-epoch=%d.safetensors", last_epoch);
    const char *path = run_path(model_name, name);
    enum tsrnn_status status = tsrnn_safetensors_read(st, path);
    if (status != TSRNN_OK)
        fail_msg("cannot read %s (status %d)", path, (int)status);
    for (size_t i = 0; i < st->tensor_count; i++) {
        const struct tsrnn_tensor_info *t = &st->tensors[i];
        assert_int_equal(t->dtype, TSRNN_DTYPE_F32);
        add(entries, &count, t->name, tsrnn_crc32c(0, t->data, t->nbytes));
    }
    for (size_t i = 0; i < sizeof(pinned_metadata) / sizeof(pinned_metadata[0]); i++) {
        const char *value = tsrnn_safetensors_metadata(st, pinned_metadata[i]);
        if (value == NULL)
            fail_msg("%s: no __metadata__ %s", path, pinned_metadata[i]);
        add(entries, &count, pinned_metadata[i], crc_text(value, strlen(value)));
    }
    add(entries, &count, METRICS_ROW,
        metrics_crc(run_path(model_name, "metrics.csv"), metrics_rows));
    char *forecast = tu_read(run_path(model_name, "forecast.csv"));
    if (forecast == NULL)
        fail_msg("cannot read %s", run_path(model_name, "forecast.csv"));
    add(entries, &count, FORECAST_ROW, crc_text(forecast, strlen(forecast)));
    free(forecast);
    return count;
}

static const struct crc_entry *find(const struct crc_entry *entries, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(entries[i].name, name) == 0)
            return &entries[i];
    return NULL;
}

/* Compares the measured values with the table; on any difference prints every row (the
 * expected value, the measured one and whether it moved) and the measured table to paste,
 * then fails. */
static void compare(const char *label, const struct crc_entry *expected, size_t expected_count,
                    const struct crc_entry *actual, size_t actual_count)
{
    size_t moved = 0;
    for (size_t i = 0; i < actual_count; i++) {
        const struct crc_entry *e = find(expected, expected_count, actual[i].name);
        moved += e == NULL || e->crc != actual[i].crc;
    }
    for (size_t i = 0; i < expected_count; i++)
        moved += find(actual, actual_count, expected[i].name) == NULL;
    printf("# %s: %zu values measured, %zu expected, %zu differ\n", label, actual_count,
           expected_count, moved);
    if (moved == 0)
        return;

    printf("# %-40s %-10s %-10s\n", "name", "expected", "actual");
    for (size_t i = 0; i < actual_count; i++) {
        const struct crc_entry *e = find(expected, expected_count, actual[i].name);
        if (e == NULL)
            printf("# %-40s %-10s 0x%08x  NOT IN THE TABLE\n", actual[i].name, "-", actual[i].crc);
        else
            printf("# %-40s 0x%08x 0x%08x%s\n", actual[i].name, e->crc, actual[i].crc,
                   e->crc == actual[i].crc ? "" : "  MOVED");
    }
    for (size_t i = 0; i < expected_count; i++)
        if (find(actual, actual_count, expected[i].name) == NULL)
            printf("# %-40s 0x%08x %-10s  MISSING\n", expected[i].name, expected[i].crc, "-");
    printf("# measured (the table's form; update it only for a change meant to move numbers):\n");
    for (size_t i = 0; i < actual_count; i++)
        printf("    { \"%s\", 0x%08xu },\n", actual[i].name, actual[i].crc);
    fflush(stdout); /* the listing before cmocka's failure line, wherever that goes */
    fail_msg("%s: %zu of the pinned values differ from 468ea40's (listed above)", label, moved);
}

/* --- the runs --------------------------------------------------------------------------- */

/* The example as it is, through the real tsrnn-worker: 2100 steps of one process. The
 * example's accelerator = auto means the CPU today; it is spelled out so that these stay the
 * CPU backend's numbers once another backend exists. The forecast plot is off (it is
 * cairo's, not the model's; the forecast itself stays). */
static void test_worker_run_is_bit_identical(void **state)
{
    (void)state;
    const char *sets[] = { "trainer.accelerator=cpu", "forecast.plot=false", "--progress=none",
                           NULL };
    assert_int_equal(tu_train(&result, "worker", sets, 100), 0);
    tu_expect_in(result.out, "Trained 300 epochs (2100 steps)");

    struct crc_entry actual[MAX_ENTRIES];
    /* 7 step rows and 1 validation row per epoch */
    size_t count = measure(actual, &checkpoint, "worker", 299, 300 * 8);
    compare("tsrnn-worker", worker_expected, sizeof(worker_expected) / sizeof(worker_expected[0]),
            actual, count);
}

/* The same configuration data-parallel: tsrnn-launch forks 2 tsrnn-workers that average
 * their gradients with Gloo over loopback; 1200 steps of 2 x 16 windows (the last of an
 * epoch shorter). */
static void test_two_worker_launch_is_bit_identical(void **state)
{
    (void)state;
    char work_dir[PATH_MAX + 32];
    snprintf(work_dir, sizeof(work_dir), "output.work_dir=%s", tu_run_dir());
    const char *argv[] = { tu_env("TSRNN_LAUNCH"),
                           "--accelerator",
                           "cpu",
                           "--devices",
                           "2",
                           "--set",
                           work_dir,
                           "--set",
                           "output.model_name=launch",
                           "--set",
                           "forecast.plot=false",
                           tu_source("examples/air_passengers.ini"),
                           NULL };
    /* The launcher's rendezvous folder goes to the run folder, removed with it. */
    setenv("TMPDIR", tu_run_dir(), 1);
    assert_int_equal(tu_run(argv, 100, &result), 0);
    if (result.timed_out)
        fail_msg("tsrnn-launch timed out; stderr:\n%s", result.err);
    if (result.exit_code != 0)
        fail_msg("tsrnn-launch exited with %d; stderr:\n%s", result.exit_code, result.err);
    tu_expect_in(result.out, "2 workers (cpu, gloo) finished");
    tu_expect_in(result.out, "300 epochs, 1200 steps");

    struct crc_entry actual[MAX_ENTRIES];
    /* 4 step rows and 1 validation row per epoch */
    size_t count = measure(actual, &checkpoint, "launch", 299, 300 * 5);
    compare("tsrnn-launch --devices 2", launch_expected,
            sizeof(launch_expected) / sizeof(launch_expected[0]), actual, count);
}

/* OPENBLAS_CORETYPE must not move a bit where tsrnn's kernels are AVX-512: the products
 * then never go to OpenBLAS (docs/numerics.md "Kernels and OpenBLAS"), so a rank under
 * mpirun (which passes the variable only if the user set it) and one under tsrnn-launch
 * (which sets it where OpenBLAS misdetects the CPU) train the same weights. LSTM hidden 128
 * runs the packed recurrent products and the blocked weight-gradient products (512 x 128 x
 * 304 per step); 3 epochs of the example, OpenBLAS's core unset, SkylakeX and Haswell
 * (OpenBLAS reads the variable once, when the process loads it: one process each). Below
 * AVX-512 (TSRNN_CPU_ISA=avx2, or the CPU) the large products are BLAS's and its kernels
 * choose the k-sum order: skipped there, after checking that the banner says so. */
static const char *const lstm128_sets[] = { "trainer.accelerator=cpu",
                                            "model.model=LSTM",
                                            "model.hidden_dim=128",
                                            "training.n_epochs=3",
                                            "forecast.plot=false",
                                            "--progress=none",
                                            NULL };

static void test_openblas_coretype_moves_no_bit(void **state)
{
    (void)state;
    static const char *const cores[] = { NULL, "SkylakeX", "Haswell" };
    enum {
        CORES = sizeof(cores) / sizeof(cores[0])
    };
    const char *const *sets = lstm128_sets;
    struct crc_entry actual[CORES][MAX_ENTRIES];
    size_t counts[CORES];
    char *saved = getenv("OPENBLAS_CORETYPE") ? strdup(getenv("OPENBLAS_CORETYPE")) : NULL;
    bool own = true;
    for (size_t c = 0; c < CORES; c++) {
        char name[64];
        snprintf(name, sizeof(name), "core-%s", cores[c] ? cores[c] : "unset");
        if (cores[c] != NULL)
            setenv("OPENBLAS_CORETYPE", cores[c], 1);
        else
            unsetenv("OPENBLAS_CORETYPE");
        int rc = tu_train(&result, name, sets, 100);
        if (rc != 0)
            fail_msg("tsrnn-worker with OPENBLAS_CORETYPE=%s: exit %d; stderr:\n%s",
                     cores[c] ? cores[c] : "(unset)", rc, result.err);
        /* The banner tells which kernels ran the large products, and OpenBLAS's core where
         * they are its (the core this process loaded it with). */
        own = strstr(result.out, "other large products tsrnn's blocked GEMM") != NULL;
        char core[128];
        snprintf(core, sizeof(core), "core %s (OPENBLAS_CORETYPE=%s)", cores[c] ? cores[c] : "",
                 cores[c] ? cores[c] : "");
        if (own) {
            tu_expect_in(result.out, "Compute: CPU kernels AVX-512");
            /* no product goes to OpenBLAS: not even loaded, nothing to warn about */
            tu_expect_in(result.out, TSRNN_HAVE_BLAS ? "; BLAS OpenBLAS (not loaded: no product "
                                                       "goes to it with AVX-512 kernels)"
                                                     : "; BLAS none (built without OpenBLAS)");
            assert_null(strstr(result.err, "warning: OpenBLAS"));
        } else if (TSRNN_HAVE_BLAS) {
            tu_expect_in(result.out, "other large products BLAS");
            tu_expect_in(result.out, cores[c] ? core : "(detected, OPENBLAS_CORETYPE unset)");
        } else {
            tu_expect_in(result.out, "other large products tsrnn's loops");
        }
        struct tsrnn_safetensors st;
        counts[c] = measure(actual[c], &st, name, 2, 3 * 8);
        /* Every run lists the same values in the same order; the first run's names are
         * copied, to outlive its checkpoint. */
        for (size_t i = 0; i < counts[c]; i++) {
            if (c > 0 && (i >= counts[0] || strcmp(actual[c][i].name, actual[0][i].name) != 0))
                fail_msg("OPENBLAS_CORETYPE=%s: value %zu is %s, not %s as without it", cores[c], i,
                         actual[c][i].name, i < counts[0] ? actual[0][i].name : "none");
            actual[c][i].name = c == 0 ? strdup(actual[c][i].name) : actual[0][i].name;
        }
        tsrnn_safetensors_finish(&st);
    }
    if (saved != NULL)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    free(saved);
    size_t moved = 0;
    for (size_t c = 1; c < CORES; c++) {
        assert_int_equal(counts[c], counts[0]);
        for (size_t i = 0; i < counts[0]; i++)
            if (actual[c][i].crc != actual[0][i].crc) {
                printf("# %s: 0x%08x with OPENBLAS_CORETYPE unset, 0x%08x with %s\n",
                       actual[0][i].name, actual[0][i].crc, actual[c][i].crc, cores[c]);
                moved++;
            }
    }
    printf("# OPENBLAS_CORETYPE unset, SkylakeX, Haswell: %zu values each, %zu differ (%s)\n",
           counts[0], moved, own ? "AVX-512 kernels: none may" : "BLAS kernels: not compared");
    for (size_t i = 0; i < counts[0]; i++)
        free((char *)actual[0][i].name);
    if (!own)
        skip();
    assert_int_equal(moved, 0);
}

/* OpenBLAS is loaded only when a product goes to it (src/compute/cpu/blas.c), and a worker
 * that cannot load it runs those products in tsrnn's loops and says so. A broken
 * libopenblas.so.0 first on LD_LIBRARY_PATH stands in for a missing one (the loader stops at
 * it). With AVX-512 kernels no product goes to OpenBLAS: it is never loaded, and the run's
 * bits are those of a run beside a working OpenBLAS. Below AVX-512 (TSRNN_CPU_ISA=avx2, or
 * the CPU) the banner and a warning name the library, and the loops' sums round otherwise
 * than BLAS's: the last validation loss agrees within 1e-3 relative. */
static void test_missing_openblas_runs_the_loops(void **state)
{
    (void)state;
    if (!TSRNN_HAVE_BLAS)
        skip(); /* a build without OpenBLAS loads none */
    assert_int_equal(tu_train(&result, "blas-found", lstm128_sets, 100), 0);
    bool own = strstr(result.out, "other large products tsrnn's blocked GEMM") != NULL;
    struct crc_entry found[MAX_ENTRIES], broken[MAX_ENTRIES];
    struct tsrnn_safetensors st_found, st_broken;
    size_t count = measure(found, &st_found, "blas-found", 2, 3 * 8);

    char *dir = tu_mkdtemp();
    tu_write(dir, "libopenblas.so.0", "not a library\n");
    char *saved = getenv("LD_LIBRARY_PATH") ? strdup(getenv("LD_LIBRARY_PATH")) : NULL;
    setenv("LD_LIBRARY_PATH", dir, 1);
    int rc = tu_train(&result, "blas-broken", lstm128_sets, 100);
    if (saved != NULL)
        setenv("LD_LIBRARY_PATH", saved, 1);
    else
        unsetenv("LD_LIBRARY_PATH");
    free(saved);
    tu_rmtree(dir);
    free(dir);
    if (rc != 0)
        fail_msg("tsrnn-worker beside a broken libopenblas.so.0: exit %d; stderr:\n%s", rc,
                 result.err);
    if (own) {
        tu_expect_in(result.out, "; BLAS OpenBLAS (not loaded: no product goes to it with "
                                 "AVX-512 kernels)");
        assert_null(strstr(result.err, "warning"));
        assert_int_equal(measure(broken, &st_broken, "blas-broken", 2, 3 * 8), count);
        for (size_t i = 0; i < count; i++)
            if (broken[i].crc != found[i].crc)
                fail_msg("%s: 0x%08x beside a broken OpenBLAS, 0x%08x beside a working one",
                         found[i].name, broken[i].crc, found[i].crc);
        printf("# AVX-512 kernels: OpenBLAS not loaded, %zu values as beside a working one\n",
               count);
        tsrnn_safetensors_finish(&st_broken);
    } else {
        tu_expect_in(result.out, "other large products tsrnn's loops");
        tu_expect_in(result.out, "; BLAS OpenBLAS (not loaded: cannot load libopenblas.so.0");
        tu_expect_in(result.err, "tsrnn-worker: warning: cannot load libopenblas.so.0 (");
        tu_expect_in(result.err, "); the OpenBLAS this build uses: install it (Debian: "
                                 "libopenblas0); until then tsrnn's loops run the large products");
        struct tu_metrics_row rows[2][64];
        size_t n0 = tu_read_metrics(run_path("blas-found", "metrics.csv"), rows[0], 64);
        size_t n1 = tu_read_metrics(run_path("blas-broken", "metrics.csv"), rows[1], 64);
        assert_int_equal(n0, 3 * 8);
        assert_int_equal(n1, n0);
        double v0 = rows[0][n0 - 1].val_loss, v1 = rows[1][n1 - 1].val_loss;
        printf("# %s kernels: last val_loss %.9g with OpenBLAS, %.9g with the loops\n",
               strstr(result.out, "CPU kernels AVX2") ? "AVX2" : "baseline", v0, v1);
        assert_true(fabs(v1 - v0) <= 1e-3 * fabs(v0));
    }
    tsrnn_safetensors_finish(&st_found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_worker_run_is_bit_identical, free_checkpoint),
        cmocka_unit_test_teardown(test_two_worker_launch_is_bit_identical, free_checkpoint),
        cmocka_unit_test(test_openblas_coretype_moves_no_bit),
        cmocka_unit_test(test_missing_openblas_runs_the_loops),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
