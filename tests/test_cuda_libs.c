/* The CUDA backend's libraries, loaded on first use (src/compute/cuda/cuda.h): on any machine
 * with the toolkit the build used (CI's included, GPU or not), cuBLAS and cuDNN load by
 * soname and every function the backend calls resolves, under the name the headers map it to
 * (cublasCreate -> cublasCreate_v2, ...). Built only with the CUDA backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "src/compute/cuda/cuda.h"

static void test_libraries_load(void **state)
{
    (void)state;
    char why[512] = "";
    if (!tsrnn_cuda_libs_load(why, sizeof(why)))
        fail_msg("%s", why);
    size_t count = 0;
#define CHECK(name)                                                                                \
    assert_non_null(tsrnn_cuda_libs.name);                                                         \
    count++;
    TSRNN_CUBLAS_FUNCTIONS(CHECK)
    TSRNN_CUDNN_FUNCTIONS(CHECK)
#undef CHECK
    /* Two calls that need no device: the libraries answer. */
    printf("# %zu functions resolved; cuDNN %zu; cuBLAS says '%s' for success\n", count,
           DL(cudnnGetVersion)(), DL(cublasGetStatusString)(CUBLAS_STATUS_SUCCESS));
    assert_true(DL(cudnnGetVersion)() >= 90000);
    /* Which files: what scripts/gpu-check.sh reports and gpu-bundle.sh --selftest checks. */
    printf("# loaded: %s\n", tsrnn_cuda_libs_describe());
    assert_non_null(strstr(tsrnn_cuda_libs_describe(), "libcudnn.so."));
    /* A second load is the first one's answer. */
    assert_true(tsrnn_cuda_libs_load(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_libraries_load) };
    return cmocka_run_group_tests_name("cuda_libs", tests, NULL, NULL);
}
