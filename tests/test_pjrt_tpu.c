/* Every program the pjrt backend emits compiles for TPUs: libtpu's compiler, ahead of time,
 * for the topologies v5e:1x1 (1 replica) and v5e:2x2 (4 replicas, the gradient all_reduce
 * over 4 chips), through PJRT_TopologyDescription_Create + PJRT_Compile: no client, no
 * device, no TPU needed. Programs: the training step and the forward (the validation length
 * and a forecast's one step) of RNN, LSTM and GRU with 1 and 2 layers (2 with dropout) at
 * the seed config's shapes. Then `accelerator = tpu` through tsrnn-worker, which must be
 * exit code 2 with libtpu's reason (no TPU here). TSRNN_TEST_SHORT (the sanitized run): the 2-layer LSTM only.
 *
 * Safety: libtpu, started outside Google Cloud, tries a cloud metadata server. This program
 * loads it only with TPU_SKIP_MDS_QUERY=1 and only inside a network namespace with nothing
 * but loopback (tests/no-network.sh runs it under `unshare -n`); it checks both itself and
 * refuses (exit 77) otherwise. libtpu (Google Cloud's terms) is never committed:
 * scripts/install-deps.sh --test installs it with pip into a cache ($TSRNN_LIBTPU, else
 * $TSRNN_LIBTPU_CACHE/libtpu/libtpu.so, default ~/.cache/tsrnn/libtpu/libtpu/libtpu.so); without it this test exits 77. */
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

#include "testutil.h"
#include "tsrnn/model.h"
#include "tsrnn_build.h"

#if TSRNN_HAVE_PJRT_BACKEND
#include "src/compute/pjrt/emit.h"
#include "src/compute/pjrt/runtime.h"

static char libtpu[4096];

/* Whether this process sees no network device but loopback (/proc/net/dev). */
static bool loopback_only(void)
{
    FILE *f = fopen("/proc/net/dev", "r");
    char line[512];
    bool only = f != NULL;
    for (int n = 0; f != NULL && fgets(line, sizeof(line), f) != NULL; n++) {
        char name[64];
        if (n >= 2 && sscanf(line, " %63[^:]:", name) == 1 && strcmp(name, "lo") != 0)
            only = false;
    }
    if (f != NULL)
        fclose(f);
    return only;
}

static void test_tpu_compile(void **state)
{
    (void)state;
    struct tsrnn_pjrt *rt;
    if (tsrnn_pjrt_open(&rt, libtpu, false, 0) != TSRNN_OK)
        fail_msg("%s", tsrnn_last_error());
    int major, minor;
    tsrnn_pjrt_api_version(rt, &major, &minor);
    printf("# %s: PJRT API %d.%d\n", libtpu, major, minor);

    static const struct {
        const char *name;
        size_t replicas;
    } topologies[] = { { "v5e:1x1", 1 }, { "v5e:2x2", 4 } };
    static const struct {
        enum tsrnn_model_kind kind;
        size_t layers;
        float dropout;
    } models[] = {
        { TSRNN_MODEL_RNN, 1, 0.0f },  { TSRNN_MODEL_RNN, 2, 0.0f }, { TSRNN_MODEL_LSTM, 1, 0.0f },
        { TSRNN_MODEL_LSTM, 2, 0.2f }, { TSRNN_MODEL_GRU, 1, 0.0f }, { TSRNN_MODEL_GRU, 2, 0.0f },
    };
    size_t model_count = sizeof(models) / sizeof(models[0]), first = 0, compiled = 0;
    if (tu_short()) { /* the sanitized run: libtpu is not instrumented, the emitter is */
        first = 3;
        model_count = 4;
        printf("# TSRNN_TEST_SHORT: LSTM 2 layers with dropout only\n");
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t m = first; m < model_count; m++) {
        struct tsrnn_model_dims d = { .kind = models[m].kind,
                                      .input_count = 1,
                                      .hidden_count = 20,
                                      .layer_count = models[m].layers,
                                      .output_count = 1,
                                      .dropout = models[m].dropout };
        for (size_t t = 0; t < sizeof(topologies) / sizeof(topologies[0]); t++) {
            size_t R = topologies[t].replicas;
            char *texts[3] = {
                tsrnn_pjrt_emit_train_step(&d, 16 / R, 20, R, d.dropout > 0.0f),
                tsrnn_pjrt_emit_forward(&d, 16, 20),
                tsrnn_pjrt_emit_forward(&d, 16, 1),
            };
            for (size_t p = 0; p < 3; p++) {
                assert_non_null(texts[p]);
                int replicas = p == 0 ? (int)R : 1;
                struct timespec c0, c1;
                clock_gettime(CLOCK_MONOTONIC, &c0);
                if (tsrnn_pjrt_compile_for_topology(rt, topologies[t].name, texts[p], replicas) !=
                    TSRNN_OK)
                    fail_msg("%s %zu layers, %s, program %zu: %s", tsrnn_model_kind_name(d.kind),
                             d.layer_count, topologies[t].name, p, tsrnn_last_error());
                clock_gettime(CLOCK_MONOTONIC, &c1);
                if (getenv("TSRNN_TEST_VERBOSE") != NULL)
                    printf("#   %s %zu layers %s program %zu: %.2f s\n",
                           tsrnn_model_kind_name(d.kind), d.layer_count, topologies[t].name, p,
                           (double)(c1.tv_sec - c0.tv_sec) +
                               1e-9 * (double)(c1.tv_nsec - c0.tv_nsec));
                compiled++;
                free(texts[p]);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# %zu programs (train step, forward T=20, forward T=1 of each model) compiled for "
           "v5e:1x1 and v5e:2x2 in %.1f s\n",
           compiled, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));

    /* A topology libtpu does not know: a status with libtpu's own words. */
    char *text = tsrnn_pjrt_emit_forward(
        &(struct tsrnn_model_dims){ TSRNN_MODEL_RNN, 1, 4, 1, 1, 0.0f, 1 }, 1, 1);
    assert_non_null(text);
    assert_int_equal(tsrnn_pjrt_compile_for_topology(rt, "v0:9x9", text, 1), TSRNN_ERR_IO);
    printf("# an unknown topology: %s\n", tsrnn_last_error());
    free(text);
    tsrnn_pjrt_close(rt);
}
/* accelerator = tpu with libtpu and no TPU: exit code 2, libtpu's reason in the message. */
static void test_tpu_absent(void **state)
{
    (void)state;
    struct tu_result r;
    const char *sets[] = { "trainer.accelerator=tpu", "training.n_epochs=1", NULL };
    unsetenv("TSRNN_PJRT_PLUGIN");
    setenv("TPU_LIBRARY_PATH", libtpu, 1);
    assert_int_equal(tu_train(&r, "tpu", sets, 120), 2);
    tu_expect_in(r.err, "no tpu could be used: ");
    tu_expect_in(r.err, "creating a client failed: TPU initialization failed: ");
    const char *line = strstr(r.err, "tsrnn-worker: error:");
    printf("# accelerator = tpu here: %.*s\n", line ? (int)strcspn(line, "\n") : 0,
           line ? line : "");
}
#endif

int main(void)
{
#if !TSRNN_HAVE_PJRT_BACKEND
    printf("# this build has no pjrt backend\n");
    return 77;
#else
    const char *env = getenv("TSRNN_LIBTPU");
    const char *cache = getenv("TSRNN_LIBTPU_CACHE");
    const char *home = getenv("HOME");
    if (env != NULL && env[0])
        snprintf(libtpu, sizeof(libtpu), "%s", env);
    else if (cache != NULL && cache[0])
        snprintf(libtpu, sizeof(libtpu), "%s/libtpu/libtpu.so", cache);
    else
        snprintf(libtpu, sizeof(libtpu), "%s/.cache/tsrnn/libtpu/libtpu/libtpu.so",
                 home ? home : "");
    if (access(libtpu, R_OK) != 0) {
        printf("# no libtpu at %s (scripts/install-deps.sh --test installs it)\n", libtpu);
        return 77;
    }
    const char *skip = getenv("TPU_SKIP_MDS_QUERY");
    if (skip == NULL || strcmp(skip, "1") != 0 || !loopback_only()) {
        printf("# libtpu is loaded only with TPU_SKIP_MDS_QUERY=1 inside a network namespace "
               "without network (tests/no-network.sh)\n");
        return 77;
    }
    /* The worker first: libtpu holds a lock file (/tmp/libtpu_lockfile) for as long as a
     * process has it loaded, and this one loads it for the compiles. */
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_tpu_absent),
                                        cmocka_unit_test(test_tpu_compile) };
    return cmocka_run_group_tests_name("pjrt_tpu", tests, tu_setup_run_dir, tu_teardown_run_dir);
#endif
}
