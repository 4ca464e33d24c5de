/* The CPU backend's OpenBLAS path (cpu.h): large products as cblas_sgemm, split by rows of C
 * among the context's threads, OpenBLAS single-threaded in each part. Compiled only with
 * OpenBLAS; noblas.c stands in without it. */
#include <cblas.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu.h"

/* Below this many multiply-adds a call into BLAS costs more than the loops: the recurrent
 * step of a hidden-20 RNN (16 x 20 x 20) stays in the loops, an LSTM-256 step goes to BLAS.
 * So does a short inner dimension (the input projection of a univariate series, K = 1):
 * that product is a pass over memory, which the loops make in one go. */
#define BLAS_MIN_MACS (64 * 64 * 64)
#define BLAS_MIN_K    16

void tsrnn_cpu_blas_init(void)
{
    /* OpenBLAS runs single-threaded inside tsrnn's parts: its own workers, woken, spin with
     * sched_yield after every call, and beside our threads on 2 cores they took a third of
     * the CPU time of a 2-thread LSTM-256 run. */
    openblas_set_num_threads(1);
}

bool tsrnn_cpu_blas_takes(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, size_t lda,
                          size_t ldb, size_t ldc)
{
    bool big = m * n * k >= BLAS_MIN_MACS && k >= BLAS_MIN_K;
    bool fits_int = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
                    ldb <= INT_MAX && ldc <= INT_MAX;
    return fits_int && (cpu->gemm_path == TSRNN_GEMM_BLAS ||
                        (cpu->gemm_path == TSRNN_GEMM_AUTO && big && !tsrnn_cpu_own_products(cpu)));
}

/* One BLAS product, split by rows of C among the compute threads when it is large. */
struct blas_product {
    bool trans_a, trans_b;
    size_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    size_t lda, ldb, ldc;
};

/* Rows [m * part / parts, ...) of C, on 16-row boundaries (OpenBLAS's Zen kernel height). */
static void blas_part(void *arg, size_t part, size_t parts)
{
    const struct blas_product *p = arg;
    size_t i0 = p->m * part / parts / 16 * 16;
    size_t i1 = part + 1 == parts ? p->m : p->m * (part + 1) / parts / 16 * 16;
    if (i1 <= i0)
        return;
    const float *a = p->trans_a ? p->a + i0 : p->a + i0 * p->lda;
    cblas_sgemm(CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans,
                p->trans_b ? CblasTrans : CblasNoTrans, (int)(i1 - i0), (int)p->n, (int)p->k,
                p->alpha, a, (int)p->lda, p->b, (int)p->ldb, p->beta, p->c + i0 * p->ldc,
                (int)p->ldc);
}

/* From this many multiply-adds (~0.2 ms at one core's peak) a product is split. */
#define SPLIT_MIN_GEMM_MACS (1u << 23)

void tsrnn_cpu_blas_gemm(const struct tsrnn_cpu *cpu, bool trans_a, bool trans_b, size_t m,
                         size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    const struct blas_product product = {
        .trans_a = trans_a,
        .trans_b = trans_b,
        .m = m,
        .n = n,
        .k = k,
        .alpha = alpha,
        .beta = beta,
        .a = a,
        .b = b,
        .c = c,
        .lda = lda,
        .ldb = ldb,
        .ldc = ldc,
    };
    const struct blas_product *p = &product;
    size_t parts = tsrnn_cpu_in_job ? 1 : (size_t)cpu->thread_count;
    if (parts > p->m / 16)
        parts = p->m / 16;
    if (parts > 1 && p->m * p->n * p->k >= SPLIT_MIN_GEMM_MACS)
        tsrnn_cpu_parallel((struct tsrnn_cpu *)cpu, blas_part, (void *)p, parts);
    else
        blas_part((void *)p, 0, 1);
}

const char *tsrnn_cpu_blas_core(void)
{
    const char *core = openblas_get_corename();
    return core != NULL ? core : "unknown";
}

/* OpenBLAS's x86-64 core names (driver/others/dynamic.c) by the widest vector instructions
 * their sgemm kernels use; every other name runs SSE kernels here. */
enum tsrnn_cpu_isa tsrnn_cpu_blas_isa(void)
{
    static const char *const avx512[] = { "SkylakeX", "Cooperlake", "SapphireRapids" };
    static const char *const avx2[] = { "Haswell", "Zen", "Excavator" };
    const char *core = tsrnn_cpu_blas_core();
    for (size_t i = 0; i < sizeof(avx512) / sizeof(avx512[0]); i++)
        if (strcasecmp(core, avx512[i]) == 0)
            return TSRNN_CPU_ISA_AVX512;
    for (size_t i = 0; i < sizeof(avx2) / sizeof(avx2[0]); i++)
        if (strcasecmp(core, avx2[i]) == 0)
            return TSRNN_CPU_ISA_AVX2;
    return TSRNN_CPU_ISA_BASELINE;
}

const char *tsrnn_cpu_blas_coretype_hint(void)
{
    enum tsrnn_cpu_isa cpu_isa = tsrnn_cpu_isa_supported();
    if (tsrnn_cpu_blas_isa() >= cpu_isa)
        return NULL;
    return cpu_isa == TSRNN_CPU_ISA_AVX512 ? "SkylakeX" : "Haswell";
}

const char *tsrnn_cpu_blas_describe(void)
{
    static char line[160];
    /* openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64" */
    const char *config = openblas_get_config(), *set = getenv("OPENBLAS_CORETYPE");
    char version[32] = "OpenBLAS";
    if (config != NULL && strncmp(config, "OpenBLAS ", 9) == 0)
        snprintf(version, sizeof(version), "OpenBLAS %.*s", (int)strcspn(config + 9, " "),
                 config + 9);
    snprintf(line, sizeof(line), "%s, core %s (%s%s)", version, tsrnn_cpu_blas_core(),
             set != NULL ? "OPENBLAS_CORETYPE=" : "detected, OPENBLAS_CORETYPE unset",
             set != NULL ? set : "");
    return line;
}
