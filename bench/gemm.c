/* GEMM speed on this machine, two reports:
 *
 *   bench-gemm            the GEMM ceiling of the LSTM-256 benchmark: times the three products
 *                         of one training step of LSTM hidden 256, batch 64, training_length
 *                         64 -- in OpenBLAS (tsrnn_cpu_gemm above the loops' size), and the two
 *                         per-step ones also as tsrnn runs them, on packed weights
 *                         (tsrnn_cpu_gemm_packed) -- and prints their GFLOP/s and the samples/s
 *                         a trainer would reach if it did nothing but these products;
 *   bench-gemm --kernels  one line: tsrnn's kernel level, the BLAS and its core type, and
 *                         "hint OPENBLAS_CORETYPE=X" when OpenBLAS runs below this CPU's level;
 *   bench-gemm --shapes   every large product shape the suite's models run (LSTM/GRU/RNN-256
 *                         batch 64 and 256, LSTM-512, a second layer, the head), through
 *                         OpenBLAS and through tsrnn's AUTO path (with AVX-512 kernels: its own
 *                         blocked GEMM or the loops, never BLAS), interleaved: round r times
 *                         each side for ~0.1 s, 7 rounds, the best of each; the ratio own/BLAS;
 *   bench-gemm --steps    the per-step recurrent products as the packed path runs them
 *                         (forward h W_hh^T from the bias, backward d_hg W_hh into a zeroed
 *                         carry) in the row blocks a step runs them in: LSTM-256's 16 rows
 *                         (its 1 MiB W_hh stays in L2), LSTM-512's whole batch of 64 and a
 *                         2-thread part's 32 rows (src/compute/cpu/model.c, packed_block_rows):
 *                         "warm" calls one packed copy again and again (W_hh stays in
 *                         L1/L2 where it fits), "cold" rotates over STEP_COPIES copies and
 *                         writes a step's gates (2 x rows x G*H floats) between calls, as the
 *                         time loop does, so W_hh comes from L3 as in a step when it does not
 *                         fit in L2; 5 rounds of ~0.2 s, interleaved, the best of each;
 *   bench-gemm --peak N   the sgemm peak with N threads: a 2048^3 OpenBLAS cblas_sgemm (the
 *                         reference loops in a build without BLAS), 5 rounds of >= 0.5 s, one
 *                         line "sgemm peak: ... best B GFLOP/s, median M GFLOP/s".
 *
 * Used by scripts/bench/suite.py (and scripts/bench.sh through it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/compute/cpu/cpu.h"
#include "tsrnn/core.h"
#include "tsrnn_build.h"

#if TSRNN_HAVE_BLAS
#include <cblas.h>
#endif

/* The CPU backend's context the products run on (1 thread unless --peak says more). */
static struct tsrnn_cpu cpu;

struct product {
    const char *what;
    bool trans_a;
    bool packed;              /* B packed once, as tsrnn's recurrence does */
    bool blas;                /* through OpenBLAS (else tsrnn's AUTO path: its own kernels) */
    size_t m, n, k, per_step; /* per_step: how many of these one training step runs */
};

/* Seconds per call, the best of 5 rounds of ~0.2 s each. */
static double time_product(const struct product *p)
{
    size_t a_count = p->m * p->k, b_count = p->k * p->n, c_count = p->m * p->n;
    float *a = malloc(a_count * sizeof(float)), *b = malloc(b_count * sizeof(float));
    float *c = calloc(c_count, sizeof(float));
    float *packed = malloc(tsrnn_cpu_packed_count(p->k, p->n) * sizeof(float));
    if (a == NULL || b == NULL || c == NULL || packed == NULL) {
        fprintf(stderr, "bench-gemm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < a_count; i++)
        a[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < b_count; i++)
        b[i] = (float)(i % 5) * 0.01f;
    tsrnn_cpu_pack(packed, b, p->n, p->k, p->n, false);
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        size_t calls = 0;
        double start = tsrnn_clock_now_s(), now;
        cpu.gemm_path = p->blas ? TSRNN_GEMM_BLAS : TSRNN_GEMM_AUTO;
        do {
            if (p->packed)
                tsrnn_cpu_gemm_packed(&cpu, p->m, p->n, p->k, a, p->k, packed, c, p->n);
            else
                tsrnn_cpu_gemm(&cpu, p->trans_a, false, p->m, p->n, p->k, 1.0f, a,
                               p->trans_a ? p->m : p->k, b, p->n, 1.0f, c, p->n);
            calls++;
            now = tsrnn_clock_now_s();
        } while (now - start < 0.2);
        double per_call = (now - start) / (double)calls;
        best = per_call < best ? per_call : best;
    }
    free(a);
    free(b);
    free(c);
    free(packed);
    return best;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The --peak report: C (N, N) = A B, N = 2048, the GFLOP/s of 5 rounds of >= 0.5 s each. */
static int report_peak(int thread_count)
{
    const size_t n = 2048, count = n * n;
    float *a = malloc(count * sizeof(float)), *b = malloc(count * sizeof(float));
    float *c = calloc(count, sizeof(float));
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "bench-gemm: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; i++) {
        a[i] = (float)(i % 7) * 0.01f;
        b[i] = (float)(i % 5) * 0.01f;
    }
#if TSRNN_HAVE_BLAS
    openblas_set_num_threads(thread_count); /* OpenBLAS's own threads: the machine's peak */
#else
    tsrnn_cpu_set_thread_count(&cpu, thread_count);
#endif
    double gflops[5];
    for (int round = -1; round < 5; round++) { /* round -1: warm-up, untimed */
        size_t calls = 0;
        double start = tsrnn_clock_now_s(), now;
        do {
#if TSRNN_HAVE_BLAS
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
                        (int)n, b, (int)n, 0.0f, c, (int)n);
#else
            tsrnn_cpu_gemm(&cpu, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
#endif
            calls++;
            now = tsrnn_clock_now_s();
        } while (now - start < (round < 0 ? 0.2 : 0.5));
        if (round >= 0)
            gflops[round] = 2.0 * (double)(n * n * n) * (double)calls / (now - start) * 1e-9;
    }
    qsort(gflops, 5, sizeof(gflops[0]), compare_doubles);
    printf("sgemm peak: %s %zux%zux%zu, %d thread%s: best %.1f GFLOP/s, median %.1f GFLOP/s\n",
           TSRNN_HAVE_BLAS ? "OpenBLAS cblas_sgemm" : "tsrnn reference loops (no BLAS)", n, n, n,
           thread_count, thread_count == 1 ? "" : "s", gflops[4], gflops[2]);
    free(a);
    free(b);
    free(c);
    return 0;
}

/* One product of --steps: C (M, N) = [bias +] A (M, K) W with W packed, K x N. */
struct step_product {
    const char *what;
    bool forward; /* from the bias row (tsrnn_cpu_gemm_packed_bias); else C zeroed, then += */
    size_t m, n, k;
};

/* Copies of the packed weights a cold call rotates over: with the gates written between
 * calls, 4 x 4 MiB for LSTM-512 is past the 2 MiB L2, well within L3. */
#define STEP_COPIES 4

struct step_buffers {
    float *a, *bias, *c, *gates, *packed[STEP_COPIES];
    size_t gates_count;
};

/* Seconds per call over ~0.2 s: on copy 0 alone (warm), or rotating over the copies and
 * writing the gates between calls (cold). */
static double time_step_once(const struct step_product *p, const struct step_buffers *buf,
                             bool cold)
{
    size_t calls = 0;
    double start = tsrnn_clock_now_s(), spent = 0.0;
    do {
        const float *packed = buf->packed[cold ? calls % STEP_COPIES : 0];
        if (cold) /* the cell's writes of a step: gates and their cache (not timed) */
            for (size_t i = 0; i < buf->gates_count; i++)
                buf->gates[i] = buf->a[i % (p->m * p->k)] + (float)calls;
        double call_start = tsrnn_clock_now_s();
        if (p->forward) {
            tsrnn_cpu_gemm_packed_bias(&cpu, p->m, p->n, p->k, buf->a, p->k, packed, buf->bias,
                                       buf->c, p->n);
        } else {
            memset(buf->c, 0, p->m * p->n * sizeof(float));
            tsrnn_cpu_gemm_packed(&cpu, p->m, p->n, p->k, buf->a, p->k, packed, buf->c, p->n);
        }
        calls++;
        double now = tsrnn_clock_now_s();
        spent += now - call_start;
        if (now - start >= 0.2)
            break;
    } while (true);
    return spent / (double)calls;
}

/* The --steps report. The gates written between cold calls: G*H = the forward's n or the
 * backward's k, two arrays of rows x G*H. */
static int report_steps(void)
{
    static const struct step_product steps[] = {
        { "LSTM-256 fwd h W_hh^T  16x1024x256", true, 16, 1024, 256 },
        { "LSTM-256 bwd d W_hh    16x256x1024", false, 16, 256, 1024 },
        { "LSTM-512 fwd h W_hh^T  64x2048x512", true, 64, 2048, 512 },
        { "LSTM-512 bwd d W_hh    64x512x2048", false, 64, 512, 2048 },
        { "LSTM-512 fwd h W_hh^T  32x2048x512", true, 32, 2048, 512 },
        { "LSTM-512 bwd d W_hh    32x512x2048", false, 32, 512, 2048 },
    };
    printf("tsrnn kernels: %s; per-step packed products, %d copies rotated when cold\n",
           tsrnn_cpu_isa_name(tsrnn_cpu_isa), STEP_COPIES);
    printf("%-34s %8s %8s %6s   (GFLOP/s, best of 5 interleaved rounds)\n", "product", "warm",
           "cold", "ratio");
    cpu.gemm_path = TSRNN_GEMM_AUTO;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const struct step_product *p = &steps[i];
        size_t gh = p->forward ? p->n : p->k, w_count = p->k * p->n;
        struct step_buffers buf = { .gates_count = 2 * p->m * gh };
        float *w = malloc(w_count * sizeof(float));
        buf.a = malloc(p->m * p->k * sizeof(float));
        buf.bias = malloc(p->n * sizeof(float));
        buf.c = malloc(p->m * p->n * sizeof(float));
        buf.gates = malloc(buf.gates_count * sizeof(float));
        bool ok =
            w != NULL && buf.a != NULL && buf.bias != NULL && buf.c != NULL && buf.gates != NULL;
        for (size_t j = 0; j < STEP_COPIES; j++) {
            buf.packed[j] = aligned_alloc(64, tsrnn_cpu_packed_count(p->k, p->n) * sizeof(float));
            ok = ok && buf.packed[j] != NULL;
        }
        if (!ok) {
            fprintf(stderr, "bench-gemm: out of memory\n");
            return 1;
        }
        for (size_t j = 0; j < p->m * p->k; j++)
            buf.a[j] = (float)(j % 7) * 0.01f;
        for (size_t j = 0; j < p->n; j++)
            buf.bias[j] = (float)(j % 3) * 0.01f;
        for (size_t j = 0; j < w_count; j++)
            w[j] = (float)(j % 5) * 0.01f;
        for (size_t j = 0; j < STEP_COPIES; j++)
            tsrnn_cpu_pack(buf.packed[j], w, p->n, p->k, p->n, false);
        double warm = 1e30, cold = 1e30;
        for (int round = 0; round < 5; round++) {
            double t = time_step_once(p, &buf, false);
            warm = t < warm ? t : warm;
            t = time_step_once(p, &buf, true);
            cold = t < cold ? t : cold;
        }
        double flops = 2.0 * (double)(p->m * p->n * p->k) * 1e-9;
        printf("%-34s %8.1f %8.1f %6.2f\n", p->what, flops / warm, flops / cold, warm / cold);
        free(w);
        free(buf.a);
        free(buf.bias);
        free(buf.c);
        free(buf.gates);
        for (size_t j = 0; j < STEP_COPIES; j++)
            free(buf.packed[j]);
    }
    return 0;
}

/* One product of --shapes: C (M, N) += op(A) op(B), as tsrnn_cpu_gemm() gets it. */
struct shape {
    const char *what;
    bool trans_a, trans_b;
    size_t m, n, k;
};

/* Seconds per call of the product on `path` over ~0.1 s (buffers from the caller). */
static double time_shape_once(const struct shape *p, enum tsrnn_gemm_path path, const float *a,
                              const float *b, float *c)
{
    size_t calls = 0;
    double start = tsrnn_clock_now_s(), now;
    cpu.gemm_path = path;
    do {
        tsrnn_cpu_gemm(&cpu, p->trans_a, p->trans_b, p->m, p->n, p->k, 1.0f, a,
                       p->trans_a ? p->m : p->k, b, p->trans_b ? p->k : p->n, 1.0f, c, p->n);
        calls++;
        now = tsrnn_clock_now_s();
    } while (now - start < 0.1);
    return (now - start) / (double)calls;
}

/* The --shapes report (B batch, T 64 steps: (T-1) B rows in the recurrent weight gradient). */
static int report_shapes(void)
{
    static const struct shape shapes[] = {
        { "LSTM-256 B64 W_hh grad  d^T h     ", true, false, 1024, 256, 63 * 64 },
        { "LSTM-256 B64 L2 W_ih grad d^T x   ", true, false, 1024, 256, 64 * 64 },
        { "LSTM-256 B64 L2 input proj x W^T  ", false, false, 64 * 64, 1024, 256 },
        { "LSTM-256 B64 L2 input grad d W    ", false, false, 64 * 64, 256, 1024 },
        { "GRU-256  B64 W_hh grad            ", true, false, 768, 256, 63 * 64 },
        { "RNN-256  B64 W_hh grad            ", true, false, 256, 256, 63 * 64 },
        { "LSTM-256 B256 W_hh grad           ", true, false, 1024, 256, 63 * 256 },
        { "LSTM-512 B64 W_hh grad            ", true, false, 2048, 512, 63 * 64 },
        { "LSTM-256 B64 head out = h v^T     ", false, true, 64 * 64, 1, 256 },
        { "LSTM-256 B64 head grad d_out^T h  ", true, false, 1, 256, 64 * 64 },
        { "LSTM-256 B256 head out = h v^T    ", false, true, 256 * 64, 1, 256 },
        { "LSTM-256 B256 head grad d_out^T h ", true, false, 1, 256, 256 * 64 },
        { "LSTM-256 B256 stepwise x^T d      ", true, false, 1, 1024, 256 },
    };
    const char *hint = tsrnn_cpu_blas_coretype_hint();
    printf("tsrnn kernels: %s; BLAS: %s%s%s; own = tsrnn's AUTO path (%s)\n",
           tsrnn_cpu_isa_name(tsrnn_cpu_isa), tsrnn_cpu_blas_describe(NULL),
           hint ? "; hint OPENBLAS_CORETYPE=" : "", hint ? hint : "",
           tsrnn_cpu_own_products(&cpu) ? "own kernels only" : "BLAS for the large products");
    printf("%-34s %9s %9s %6s   (GFLOP/s, best of 7 interleaved rounds)\n", "product", "OpenBLAS",
           "own", "ratio");
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const struct shape *p = &shapes[i];
        size_t a_count = p->m * p->k, b_count = p->k * p->n, c_count = p->m * p->n;
        float *a = malloc(a_count * sizeof(float)), *b = malloc(b_count * sizeof(float));
        float *c = calloc(c_count, sizeof(float));
        if (a == NULL || b == NULL || c == NULL) {
            fprintf(stderr, "bench-gemm: out of memory\n");
            return 1;
        }
        for (size_t j = 0; j < a_count; j++)
            a[j] = (float)(j % 7) * 0.01f;
        for (size_t j = 0; j < b_count; j++)
            b[j] = (float)(j % 5) * 0.01f;
        double blas = 1e30, own = 1e30;
        for (int round = 0; round < 7; round++) {
            double t = time_shape_once(p, TSRNN_GEMM_BLAS, a, b, c);
            blas = t < blas ? t : blas;
            t = time_shape_once(p, TSRNN_GEMM_AUTO, a, b, c);
            own = t < own ? t : own;
        }
        double flops = 2.0 * (double)(p->m * p->n * p->k) * 1e-9;
        printf("%-34s %9.1f %9.1f %6.2f\n", p->what, flops / blas, flops / own, blas / own);
        free(a);
        free(b);
        free(c);
    }
    cpu.gemm_path = TSRNN_GEMM_AUTO;
    return 0;
}

int main(int argc, char **argv)
{
    if (tsrnn_cpu_init(&cpu, 1) != TSRNN_OK) {
        fprintf(stderr, "bench-gemm: %s\n", tsrnn_last_error());
        return 1;
    }
    if (argc == 3 && strcmp(argv[1], "--peak") == 0 && atoi(argv[2]) > 0)
        return report_peak(atoi(argv[2]));
    if (argc == 2 && strcmp(argv[1], "--shapes") == 0)
        return report_shapes();
    if (argc == 2 && strcmp(argv[1], "--steps") == 0)
        return report_steps();
    if (argc == 2 && strcmp(argv[1], "--kernels") == 0) {
        const char *hint = tsrnn_cpu_blas_coretype_hint();
        printf("tsrnn kernels: %s; BLAS: %s%s%s\n", tsrnn_cpu_isa_name(tsrnn_cpu_isa),
               tsrnn_cpu_blas_describe(NULL), hint ? "; hint OPENBLAS_CORETYPE=" : "",
               hint ? hint : "");
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: bench-gemm [--kernels | --shapes | --steps | --peak THREADS]\n");
        return 2;
    }
    /* B 64, T 64, H 256, G*H 1024, input 1: the products that hold 99.9% of the FLOPs. */
    const struct product products[] = {
        { "OpenBLAS forward step  h W_hh^T  64x1024x256", false, false, true, 64, 1024, 256, 64 },
        { "OpenBLAS backward step d W_hh    64x256x1024", false, false, true, 64, 256, 1024, 64 },
        { "OpenBLAS weight grad   d^T h 1024x256x4096", true, false, true, 1024, 256, 4096, 1 },
        { "packed   forward step  h W_hh^T  64x1024x256", false, true, false, 64, 1024, 256, 64 },
        { "packed   backward step d W_hh    64x256x1024", false, true, false, 64, 256, 1024, 64 },
        { "tsrnn    weight grad   d^T h 1024x256x4096", true, false, false, 1024, 256, 4096, 1 },
    };
    printf("tsrnn kernels: %s%s; BLAS: %s\n", tsrnn_cpu_isa_name(tsrnn_cpu_isa),
           tsrnn_cpu_packed_kernel_available() ? "" : " (packed products on plain loops)",
           tsrnn_cpu_blas_describe(NULL));
    double seconds[6];
    for (size_t i = 0; i < 6; i++) {
        const struct product *p = &products[i];
        seconds[i] = time_product(p);
        printf("%-46s %6.1f GFLOP/s\n", p->what,
               2.0 * (double)(p->m * p->n * p->k) / seconds[i] * 1e-9);
    }
    double blas_s = 64 * (seconds[0] + seconds[1]) + seconds[2];
    double own_s = 64 * (seconds[3] + seconds[4]) + seconds[5];
    printf("products-only bound for LSTM-256 (batch 64): %.0f samples/s with OpenBLAS, %.0f "
           "with tsrnn's own products (%.1f / %.1f ms per step)\n",
           64.0 / blas_s, 64.0 / own_s, blas_s * 1e3, own_s * 1e3);
    return 0;
}
