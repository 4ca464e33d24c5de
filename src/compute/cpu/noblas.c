/* The CPU backend without BLAS (cpu.h): every product stays in the loops of gemm.c. */
#include <stddef.h>

#include "cpu.h"

void tsrnn_cpu_blas_init(void)
{
}

bool tsrnn_cpu_blas_load(void)
{
    return false;
}

const char *tsrnn_cpu_blas_load_error(void)
{
    return NULL; /* none to load */
}

bool tsrnn_cpu_blas_loaded(void)
{
    return false;
}

bool tsrnn_cpu_blas_takes(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, size_t lda,
                          size_t ldb, size_t ldc)
{
    (void)cpu, (void)m, (void)n, (void)k, (void)lda, (void)ldb, (void)ldc;
    return false;
}

void tsrnn_cpu_blas_gemm(const struct tsrnn_cpu *cpu, bool trans_a, bool trans_b, size_t m,
                         size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    /* Never called: tsrnn_cpu_blas_takes() takes nothing. */
    (void)cpu, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a;
    (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
}

const char *tsrnn_cpu_blas_core(void)
{
    return NULL;
}

enum tsrnn_cpu_isa tsrnn_cpu_blas_isa(void)
{
    return TSRNN_CPU_ISA_BASELINE;
}

const char *tsrnn_cpu_blas_coretype_hint(void)
{
    return NULL;
}

const char *tsrnn_cpu_blas_describe(const char *unused_why)
{
    (void)unused_why;
    return "none (built without OpenBLAS)";
}
