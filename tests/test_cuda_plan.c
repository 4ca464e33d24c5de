/* The CUDA training step's plan, without a GPU (src/compute/cuda/step.c): the stages of a step
 * in the order they are queued, as data. Checked: the captured region is one, between its two
 * markers; inside it only what a CUDA graph can hold (kernels, cuDNN and cuBLAS calls, a memset,
 * a reduction queued on the stream); outside it, before, the host's staging and the copies up,
 * after, the step's event; every stage that queues device work is inside; the order is the
 * step's (forward, loss's gradient, backward, loss and stop flag, reduction, 1/W and the finite
 * check, the record, clipping, the update). A reduction staged through the host (Gloo, MPI)
 * makes a plan without a region. step.c refuses, on a GPU, to run a stage of a kind that cannot
 * be captured while capturing. Built only with the CUDA backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "src/compute/cuda/cuda.h"

static size_t find(const struct tsrnn_cuda_stage *plan, size_t count, const char *needle)
{
    for (size_t i = 0; i < count; i++)
        if (strstr(plan[i].name, needle) != NULL)
            return i;
    fail_msg("no stage '%s' in the plan", needle);
    return count;
}

static void test_captured_region(void **state)
{
    (void)state;
    size_t count;
    const struct tsrnn_cuda_stage *plan = tsrnn_cuda_step_plan(true, &count);
    size_t begin = count, end = count, inside = 0;
    for (size_t i = 0; i < count; i++) {
        bool in = begin < count && end == count && i > begin &&
                  plan[i].kind != TSRNN_CUDA_STAGE_CAPTURE_END;
        printf("# %2zu %s %s\n", i, in ? "[graph]" : "       ", plan[i].name);
        if (plan[i].kind == TSRNN_CUDA_STAGE_CAPTURE_BEGIN) {
            assert_int_equal(begin, count); /* one region */
            begin = i;
        } else if (plan[i].kind == TSRNN_CUDA_STAGE_CAPTURE_END) {
            assert_true(begin < i);
            assert_int_equal(end, count);
            end = i;
        } else if (in) {
            if (!tsrnn_cuda_stage_capturable(plan[i].kind))
                fail_msg("'%s' is inside the captured region, and a graph cannot hold it",
                         plan[i].name);
            assert_non_null(plan[i].run);
            inside++;
        } else {
            if (plan[i].run != NULL)
                fail_msg("'%s' queues device work outside the captured region", plan[i].name);
            if (tsrnn_cuda_stage_capturable(plan[i].kind))
                fail_msg("'%s' is device work outside the captured region", plan[i].name);
        }
    }
    assert_true(begin < end && end < count);
    for (size_t i = 0; i < begin; i++)
        assert_true(plan[i].kind == TSRNN_CUDA_STAGE_HOST ||
                    plan[i].kind == TSRNN_CUDA_STAGE_COPY_UP);
    for (size_t i = end + 1; i < count; i++)
        assert_int_equal(plan[i].kind, TSRNN_CUDA_STAGE_RECORD);
    assert_int_equal(plan[find(plan, count, "sum over the ranks")].kind,
                     TSRNN_CUDA_STAGE_REDUCE_QUEUED);
    printf("# %zu stages in the graph, %zu outside\n", inside, count - inside - 2);
}

static void test_step_order(void **state)
{
    (void)state;
    static const char *const order[] = {
        "time-major",         "layers forward", "head forward",    "gradients zeroed",
        "loss's gradient",    "head backward",  "layers backward", "stop flag",
        "sum over the ranks", "finite check",   "recorded",        "clipping",
        "Adam's update",
    };
    for (int capturable = 0; capturable < 2; capturable++) {
        size_t count, last = 0;
        const struct tsrnn_cuda_stage *plan = tsrnn_cuda_step_plan(capturable, &count);
        for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
            size_t at = find(plan, count, order[k]);
            if (k > 0 && at <= last)
                fail_msg("'%s' comes before '%s'", order[k], order[k - 1]);
            last = at;
        }
    }
}

static void test_host_reduction_has_no_region(void **state)
{
    (void)state;
    size_t count;
    const struct tsrnn_cuda_stage *plan = tsrnn_cuda_step_plan(false, &count);
    for (size_t i = 0; i < count; i++) {
        assert_int_not_equal(plan[i].kind, TSRNN_CUDA_STAGE_CAPTURE_BEGIN);
        assert_int_not_equal(plan[i].kind, TSRNN_CUDA_STAGE_CAPTURE_END);
    }
    assert_int_equal(plan[find(plan, count, "sum over the ranks")].kind,
                     TSRNN_CUDA_STAGE_REDUCE_HOST);
    assert_false(tsrnn_cuda_stage_capturable(TSRNN_CUDA_STAGE_REDUCE_HOST));
    assert_false(tsrnn_cuda_stage_capturable(TSRNN_CUDA_STAGE_COPY_UP));
    assert_false(tsrnn_cuda_stage_capturable(TSRNN_CUDA_STAGE_HOST));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_region),
        cmocka_unit_test(test_step_order),
        cmocka_unit_test(test_host_reduction_has_no_region),
    };
    return cmocka_run_group_tests_name("cuda_plan", tests, NULL, NULL);
}
