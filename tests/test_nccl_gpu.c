/* The nccl comm backend on one GPU (exit 77 without one): a world of one rank through the
 * whole comm path on device buffers (sum, the exact-validation pair of doubles, broadcast,
 * barrier, close), and a world of two whose second rank never comes, which must end within
 * timeout_s with NCCL's communicator aborted, never hang. Two ranks cannot share one GPU
 * under NCCL; scripts/gpu-check.sh runs the training checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"

static struct tsrnn_compute *gpu(void)
{
    struct tsrnn_compute *compute;
    struct tsrnn_compute_options o = { .kind = TSRNN_COMPUTE_CUDA, .device_index = 0 };
    if (tsrnn_compute_create(&compute, &o) != TSRNN_OK)
        fail_msg("%s", tsrnn_last_error());
    return compute;
}

static void test_world_of_one(void **state)
{
    (void)state;
    struct tsrnn_compute *compute = gpu();
    struct tsrnn_comm *comm;
    struct tsrnn_comm_options opt = {
        .rank = 0,
        .world_size = 1,
        .timeout_s = 10,
        .backend = "nccl",
        .compute = compute,
    };
    if (tsrnn_comm_open(&comm, &opt) != TSRNN_OK)
        fail_msg("%s", tsrnn_last_error());
    assert_string_equal(tsrnn_comm_backend_name(comm), "nccl");

    enum {
        N = 1000
    };
    float host[N], back[N];
    for (int i = 0; i < N; i++)
        host[i] = 0.25f * (float)i - 7.0f;
    void *dev;
    assert_int_equal(tsrnn_compute_alloc(compute, &dev, sizeof(host)), TSRNN_OK);
    assert_int_equal(tsrnn_compute_upload(compute, dev, host, sizeof(host)), TSRNN_OK);
    double t0 = tsrnn_clock_now_s();
    assert_int_equal(tsrnn_comm_allreduce_sum_device(comm, dev, N, TSRNN_COMM_F32), TSRNN_OK);
    printf("# allreduce of %d floats over 1 rank: %.1f us\n", N, 1e6 * (tsrnn_clock_now_s() - t0));
    assert_int_equal(tsrnn_compute_download(compute, back, dev, sizeof(back)), TSRNN_OK);
    assert_memory_equal(back, host, sizeof(host)); /* the sum over one rank is itself */
    assert_int_equal(tsrnn_comm_broadcast_device(comm, dev, sizeof(host), 0), TSRNN_OK);
    assert_int_equal(tsrnn_compute_download(compute, back, dev, sizeof(back)), TSRNN_OK);
    assert_memory_equal(back, host, sizeof(host));
    /* Host buffers are staged to the device: the (sse, count) pair of exact validation. */
    double pair[2] = { 12.5, 101 };
    assert_int_equal(tsrnn_comm_allreduce_sum(comm, pair, 2, TSRNN_COMM_F64), TSRNN_OK);
    assert_true(pair[0] == 12.5 && pair[1] == 101);
    assert_int_equal(tsrnn_comm_barrier(comm), TSRNN_OK);
    tsrnn_comm_close(comm);
    tsrnn_compute_free(compute, dev);
    tsrnn_compute_destroy(compute);
}

static void test_missing_peer_ends_within_the_timeout(void **state)
{
    (void)state;
    struct tsrnn_compute *compute = gpu();
    char *dir = tu_mkdtemp();
    char rendezvous[4200];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    struct tsrnn_comm *comm;
    struct tsrnn_comm_options opt = {
        .rank = 0,
        .world_size = 2,
        .rendezvous = rendezvous,
        .timeout_s = 2,
        .backend = "nccl",
        .compute = compute,
    };
    double t0 = tsrnn_clock_now_s();
    assert_int_equal(tsrnn_comm_open(&comm, &opt), TSRNN_ERR_COMM);
    double took = tsrnn_clock_now_s() - t0;
    printf("# rank 1 never came: open failed after %.2f s: %s\n", took, tsrnn_last_error());
    /* It waited for rank 1 until its timeout, which starts after t0 (no load makes that
     * shorter; 0.1 s of slack as before), then gave up rather than hang in NCCL's init. 30 s
     * past the timeout leaves a loaded GPU node room for CUDA's and NCCL's own teardown,
     * which alone can take seconds; a hang reaches it. */
    assert_true(took >= opt.timeout_s - 0.1);
    assert_true(took < opt.timeout_s + 30);
    tu_expect_in(tsrnn_last_error(), "rank 0: NCCL made no progress creating the communicator");
    tsrnn_compute_destroy(compute);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    char why[512] = "";
    if (!tsrnn_compute_available(TSRNN_COMPUTE_CUDA, why, sizeof(why))) {
        printf("# skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world_of_one),
        cmocka_unit_test(test_missing_peer_ends_within_the_timeout),
    };
    return cmocka_run_group_tests_name("nccl_gpu", tests, NULL, NULL);
}
