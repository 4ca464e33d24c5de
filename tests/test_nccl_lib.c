/* The nccl comm backend on a machine without a GPU (CI): libnccl, loaded on first use
 * (src/comm/nccl.h), loads by soname and every function the backend calls resolves; and the
 * backend refuses, with what it needs, a world that has no GPU compute context. Built only
 * with the nccl backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "src/comm/nccl.h"
#include "testutil.h"
#include "tsrnn/comm.h"

static void test_library_loads(void **state)
{
    (void)state;
    char why[512] = "";
    if (!tsrnn_nccl_lib_load(why, sizeof(why)))
        fail_msg("%s", why);
    size_t count = 0;
#define CHECK(name)                                                                                \
    assert_non_null(tsrnn_nccl_lib.name);                                                          \
    count++;
    TSRNN_NCCL_FUNCTIONS(CHECK)
#undef CHECK
    assert_int_equal(count, 11);
    /* Calls that need no device: the library answers, and it is at least the build's. */
    int version = 0;
    assert_int_equal(NCCL(ncclGetVersion)(&version), ncclSuccess);
    printf("# %zu functions resolved; NCCL %d (built against %d); '%s' for ncclInProgress\n", count,
           version, NCCL_VERSION_CODE, NCCL(ncclGetErrorString)(ncclInProgress));
    assert_true(version >= NCCL_VERSION_CODE);
    /* Which file: what scripts/gpu-check.sh reports and gpu-bundle.sh --selftest checks. */
    printf("# loaded: %s\n", tsrnn_nccl_lib_describe());
    assert_non_null(strstr(tsrnn_nccl_lib_describe(), "libnccl.so."));
    assert_true(NCCL(ncclGetErrorString)(ncclSystemError)[0] != '\0');
    assert_true(tsrnn_nccl_lib_load(NULL, 0)); /* a second load is the first's answer */
}

static void test_without_a_gpu_context_is_refused(void **state)
{
    (void)state;
    assert_true(tsrnn_comm_backend_available("nccl"));
    assert_true(tsrnn_comm_backend_known("nccl"));
    struct tsrnn_comm *comm = (struct tsrnn_comm *)1;
    struct tsrnn_comm_options opt = {
        .rank = 0,
        .world_size = 2,
        .rendezvous = "file:/nonexistent",
        .timeout_s = 1,
        .backend = "nccl",
        .compute = NULL,
    };
    assert_int_equal(tsrnn_comm_open(&comm, &opt), TSRNN_ERR_USAGE);
    assert_null(comm);
    tu_expect_in(tsrnn_last_error(), "rank 0: comm backend nccl needs GPU workers (the CUDA "
                                     "compute backend); CPU workers talk through gloo");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_loads),
        cmocka_unit_test(test_without_a_gpu_context_is_refused),
    };
    return cmocka_run_group_tests_name("nccl_lib", tests, NULL, NULL);
}
