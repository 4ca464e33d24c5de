/* The CPU backend's OpenBLAS path (cpu.h): large products as cblas_sgemm, split by rows of C
 * among the context's threads, OpenBLAS single-threaded in each part. Compiled with OpenBLAS's
 * header; the library itself is loaded with dlopen when a product first goes to it or when
 * something asks what it runs (its core), not linked (below). noblas.c stands in without it. */
#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu.h"
#include "tsrnn/dynlib.h"

/* --- libopenblas, loaded on first use --------------------------------------------------------
 * Linked, OpenBLAS cost every process its loading: with libgfortran and libquadmath ~3.6 MiB
 * of resident memory and part of the start-up's relocations, and its constructor started
 * server threads, one of which spun in sched_yield through the whole run. With AVX-512 kernels
 * no product goes to it (tsrnn_cpu_own_products), nor in a model too small for BLAS_MIN_MACS.
 * So it is loaded by its soname (OpenBLAS's since its first release), through the run path
 * the build gives the programs (the folder where meson found it, as linking did) and then the
 * usual places. A process that cannot load it runs every product in tsrnn's loops, as a build
 * without OpenBLAS does, and the worker's warning says why (tsrnn_cpu_blas_load_error).
 * Every OpenBLAS function called is listed here and called as BLAS(name)(...). */
#define OPENBLAS_SONAME "libopenblas.so.0"
/* clang-format off */
#define OPENBLAS_FUNCTIONS(X)    \
    X(cblas_sgemm)               \
    X(openblas_set_num_threads)  \
    X(openblas_get_corename)     \
    X(openblas_get_config)
/* clang-format on */

#define OPENBLAS_POINTER(name) __typeof__(name) *name;
static struct {
    OPENBLAS_FUNCTIONS(OPENBLAS_POINTER)
} openblas;
#define BLAS(name) (openblas.name)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[1024];

#define TABLE_SYMBOL(fn) TSRNN_DYNLIB_SYMBOL(openblas, fn),
static const struct tsrnn_dynlib_symbol openblas_symbols[] = { OPENBLAS_FUNCTIONS(TABLE_SYMBOL) };

static void load_openblas(void)
{
    tsrnn_cpu_blas_init(); /* done already where a context exists (below) */
    /* The handle stays open for the life of the process. */
    bool ok =
        tsrnn_dynlib_open(OPENBLAS_SONAME, NULL, openblas_symbols,
                          sizeof(openblas_symbols) / sizeof(openblas_symbols[0]),
                          "the OpenBLAS this build uses: install it (Debian: libopenblas0)",
                          ": not the OpenBLAS of the build", load_why, sizeof(load_why)) != NULL;
    /* Where the user set OPENBLAS_NUM_THREADS its threads exist; our calls still run on one. */
    if (ok)
        BLAS(openblas_set_num_threads)(1);
    __atomic_store_n(&loaded, ok, __ATOMIC_RELEASE); /* tsrnn_cpu_blas_loaded reads it */
}

bool tsrnn_cpu_blas_load(void)
{
    pthread_once(&load_once, load_openblas);
    return loaded;
}

const char *tsrnn_cpu_blas_load_error(void)
{
    return tsrnn_cpu_blas_load() ? NULL : load_why;
}

bool tsrnn_cpu_blas_loaded(void)
{
    return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
}

/* OpenBLAS runs single-threaded inside tsrnn's parts: its own workers, woken, spin with
 * sched_yield after every call, and beside our threads on 2 cores they took a third of the CPU
 * time of a 2-thread LSTM-256 run; even asleep its pthread build's constructor starts them,
 * and one spins. OPENBLAS_NUM_THREADS=1, read by that constructor, starts none. It is set
 * when a context is created, on the creating thread, rather than just before the dlopen: the
 * first product may come from any thread, and setenv is not safe while another thread reads
 * the environment (a load with no context yet sets it then). A value the user set stays (an
 * experiment's); OMP_NUM_THREADS, which OpenBLAS reads only without OPENBLAS_NUM_THREADS, is
 * for the other programs of the shell and does not count here. */
static void keep_threads_unstarted(void)
{
    setenv("OPENBLAS_NUM_THREADS", "1", 0); /* 0: not over the user's */
}

void tsrnn_cpu_blas_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, keep_threads_unstarted);
}

/* --- the products ----------------------------------------------------------------------- */

/* Below this many multiply-adds a call into BLAS costs more than the loops: the recurrent
 * step of a hidden-20 RNN (16 x 20 x 20) stays in the loops, an LSTM-256 step goes to BLAS.
 * So does a short inner dimension (the input projection of a univariate series, K = 1):
 * that product is a pass over memory, which the loops make in one go. */
#define BLAS_MIN_MACS (64 * 64 * 64)
#define BLAS_MIN_K    16

bool tsrnn_cpu_blas_takes(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, size_t lda,
                          size_t ldb, size_t ldc)
{
    bool big = m * n * k >= BLAS_MIN_MACS && k >= BLAS_MIN_K;
    bool fits_int = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
                    ldb <= INT_MAX && ldc <= INT_MAX;
    bool wanted =
        fits_int && (cpu->gemm_path == TSRNN_GEMM_BLAS ||
                     (cpu->gemm_path == TSRNN_GEMM_AUTO && big && !tsrnn_cpu_own_products(cpu)));
    return wanted && tsrnn_cpu_blas_load(); /* without OpenBLAS the loops take it */
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
    BLAS(cblas_sgemm)
    (CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
     (int)(i1 - i0), (int)p->n, (int)p->k, p->alpha, a, (int)p->lda, p->b, (int)p->ldb, p->beta,
     p->c + i0 * p->ldc, (int)p->ldc);
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
    if (!tsrnn_cpu_blas_load())
        return NULL;
    const char *core = BLAS(openblas_get_corename)();
    return core != NULL ? core : "unknown";
}

/* OpenBLAS's x86-64 core names (driver/others/dynamic.c) by the widest vector instructions
 * their sgemm kernels use; every other name runs SSE kernels here. */
enum tsrnn_cpu_isa tsrnn_cpu_blas_isa(void)
{
    static const char *const avx512[] = { "SkylakeX", "Cooperlake", "SapphireRapids" };
    static const char *const avx2[] = { "Haswell", "Zen", "Excavator" };
    const char *core = tsrnn_cpu_blas_core();
    if (core == NULL)
        return TSRNN_CPU_ISA_BASELINE;
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
    if (!tsrnn_cpu_blas_load() || tsrnn_cpu_blas_isa() >= cpu_isa)
        return NULL;
    return cpu_isa == TSRNN_CPU_ISA_AVX512 ? "SkylakeX" : "Haswell";
}

const char *tsrnn_cpu_blas_describe(const char *unused_why)
{
    static _Thread_local char
        line[1100]; /* per thread: two runs may describe their devices at once */
    if (unused_why != NULL && !tsrnn_cpu_blas_loaded()) {
        snprintf(line, sizeof(line), "OpenBLAS (not loaded: %s)", unused_why);
        return line;
    }
    if (!tsrnn_cpu_blas_load()) {
        snprintf(line, sizeof(line), "OpenBLAS (not loaded: %s)", load_why);
        return line;
    }
    /* openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64" */
    const char *config = BLAS(openblas_get_config)(), *set = getenv("OPENBLAS_CORETYPE");
    char version[32] = "OpenBLAS";
    if (config != NULL && strncmp(config, "OpenBLAS ", 9) == 0)
        snprintf(version, sizeof(version), "OpenBLAS %.*s", (int)strcspn(config + 9, " "),
                 config + 9);
    snprintf(line, sizeof(line), "%s, core %s (%s%s)%s", version, tsrnn_cpu_blas_core(),
             set != NULL ? "OPENBLAS_CORETYPE=" : "detected, OPENBLAS_CORETYPE unset",
             set != NULL ? set : "", unused_why != NULL ? ", unused" : "");
    return line;
}
