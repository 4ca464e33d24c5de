/* The model against PyTorch and against calculus: the fixtures of scripts/gen-fixtures.py
 * (forward, loss, every gradient, Adam steps), central finite differences for every
 * backward, the GEMM paths against each other, the activations against libm, dropout, the
 * parameter table and Darts-style prediction. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "src/compute/cpu/activation.h"
#include "src/compute/cpu/cpu.h"
#include "src/core/rng.h"
#include "testutil.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"
#include "tsrnn/safetensors.h"
#include "tsrnn_build.h"

/* --- helpers --------------------------------------------------------------------------- */

/* The CPU backend's context every test runs on. Its device memory is host memory, so the
 * tests read and write parameters and gradients in place. */
static struct tsrnn_cpu cpu;

static int cpu_setup(void **state)
{
    (void)state;
    return tsrnn_cpu_init(&cpu, 1) == TSRNN_OK ? 0 : -1;
}

static int cpu_teardown(void **state)
{
    (void)state;
    tsrnn_cpu_finish(&cpu);
    return 0;
}

/* B and T of the last run_forward, for outputs(). */
static size_t last_B, last_T;

/* The forward over x (B, T, C). With y: the training forward (dropout drawn from rng when it
 * is not NULL and the model has dropout), the loss, which it returns, and the backward into
 * the workspace's gradients (grads_of). Without y: the evaluation forward. */
static float run_forward(struct tsrnn_model *m, const float *x, const float *y, size_t B, size_t T,
                         bool training, struct tsrnn_mt19937 *rng)
{
    float loss = 0.0f;
    last_B = B;
    last_T = T;
    if (y == NULL) {
        float *zeros = calloc(B * T * m->dims.output_count, sizeof(float));
        assert_non_null(zeros);
        if (training)
            assert_int_equal(tsrnn_model_forward_backward(m, x, zeros, B, T, rng, &loss), TSRNN_OK);
        else
            assert_int_equal(
                tsrnn_compute_forward(m->ws, m->params, x, NULL, B, T, TSRNN_FORWARD_ZERO),
                TSRNN_OK);
        free(zeros);
        return 0.0f;
    }
    assert_int_equal(tsrnn_model_forward_backward(m, x, y, B, T, training ? rng : NULL, &loss),
                     TSRNN_OK);
    return loss;
}

/* The backward ran with the forward (tsrnn_model_forward_backward): kept where the tests
 * read as forward, then backward. */
static void run_backward(struct tsrnn_model *m)
{
    (void)m;
}

/* The gradients of the last run_forward with y, in a buffer of the model's size that the next
 * call overwrites. */
static float *grads_of(struct tsrnn_model *m)
{
    static float *buf;
    static size_t capacity;
    if (capacity < m->table.total_count) {
        free(buf);
        capacity = m->table.total_count;
        buf = malloc(capacity * sizeof(float));
        assert_non_null(buf);
    }
    assert_int_equal(tsrnn_model_download_grads(m, buf), TSRNN_OK);
    return buf;
}

/* The outputs of the last forward, (B, T, O) batch-first. */
static void outputs(struct tsrnn_model *m, float *out)
{
    size_t B = last_B, T = last_T, O = m->dims.output_count;
    float *step = malloc(B * O * sizeof(float));
    for (size_t t = 0; t < T; t++) {
        assert_int_equal(tsrnn_model_download_output(m, t, step), TSRNN_OK);
        for (size_t b = 0; b < B; b++)
            memcpy(out + (b * T + t) * O, step + b * O, O * sizeof(float));
    }
    free(step);
}

static float *random_floats(struct tsrnn_rng *rng, size_t count, float lo, float hi)
{
    float *v = malloc(count * sizeof(*v));
    assert_non_null(v);
    for (size_t i = 0; i < count; i++)
        v[i] = lo + (hi - lo) * tsrnn_rng_uniform(rng);
    return v;
}

/* max |a - b| / max |b| over n values: the per-tensor relative error the tests bound. */
static double relative_error(const float *a, const float *b, size_t n)
{
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - (double)b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0.0 ? diff / scale : diff;
}

static const char *fixture_path(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/tests/fixtures/%s", tu_env("TSRNN_SOURCE_ROOT"), name);
    return path;
}

/* Copies tensor `name` of `st` into dst after checking its element count. */
static void copy_tensor(float *dst, size_t count, const struct tsrnn_safetensors *st,
                        const char *name)
{
    const struct tsrnn_tensor_info *t = tsrnn_safetensors_find(st, name);
    if (t == NULL)
        fail_msg("fixture has no tensor %s", name);
    assert_int_equal(t->element_count, count);
    assert_int_equal(tsrnn_tensor_copy_f32(dst, t), TSRNN_OK);
}

static enum tsrnn_model_kind kind_from_name(const char *name)
{
    if (strcmp(name, "LSTM") == 0)
        return TSRNN_MODEL_LSTM;
    if (strcmp(name, "GRU") == 0)
        return TSRNN_MODEL_GRU;
    return TSRNN_MODEL_RNN;
}

/* --- activations and GEMM -------------------------------------------------------------- */

/* Units in the last place of float between a and the double-precision truth. */
static double ulp_error(float a, double truth)
{
    float t = (float)truth;
    double ulp = fabs((double)nextafterf(t, INFINITY) - (double)t);
    if (ulp == 0.0)
        return 0.0;
    return fabs((double)a - truth) / ulp;
}

static void test_activations_match_libm(void **state)
{
    (void)state;
    double worst_tanh = 0.0, worst_sigmoid = 0.0, worst_exp = 0.0;
    for (int i = -2000000; i <= 2000000; i++) {
        float x = (float)i * 1e-5f; /* [-20, 20] every 1e-5 */
        worst_tanh = fmax(worst_tanh, ulp_error(tsrnn_tanhf(x), tanh((double)x)));
        worst_sigmoid =
            fmax(worst_sigmoid, ulp_error(tsrnn_sigmoidf(x), 1.0 / (1.0 + exp(-(double)x))));
        worst_exp = fmax(worst_exp, ulp_error(tsrnn_expf(x), exp((double)x)));
    }
    printf("# max error over [-20, 20]: tanh %.2f ulp, sigmoid %.2f ulp, exp %.2f ulp\n",
           worst_tanh, worst_sigmoid, worst_exp);
    assert_true(worst_tanh <= 2.0);
    assert_true(worst_sigmoid <= 3.0);
    assert_true(worst_exp <= 2.0);
    /* Far tails: saturation without NaN. */
    assert_true(tsrnn_tanhf(1e6f) == 1.0f && tsrnn_tanhf(-1e6f) == -1.0f);
    assert_true(tsrnn_sigmoidf(-1e6f) >= 0.0f && tsrnn_sigmoidf(1e6f) == 1.0f);
    assert_true(tsrnn_tanhf(0.0f) == 0.0f);
    /* A NaN stays NaN: a diverging run must show it in the loss, not saturate at +-1. */
    assert_true(isnan(tsrnn_tanhf(NAN)) && isnan(tsrnn_sigmoidf(NAN)) && isnan(tsrnn_expf(NAN)));
}

/* c (M, N) is alpha op(a) op(b) + beta c0 within 1e-6 of the products' magnitude (+ slack),
 * against a double-precision product; a and b as tsrnn_cpu_gemm(&cpu, ) takes them, unpadded. */
static void expect_product(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
                           const float *a, const float *b, float beta, const float *c0,
                           const float *c, double slack)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0.0, mag = 0.0;
            for (size_t kk = 0; kk < k; kk++) {
                double av = ta ? a[kk * m + i] : a[i * k + kk];
                double bv = tb ? b[j * k + kk] : b[kk * n + j];
                sum += av * bv;
                mag += fabs(av * bv);
            }
            double want = alpha * sum + beta * c0[i * n + j];
            assert_true(fabs(c[i * n + j] - want) <= 1e-6 * (mag + fabs(c0[i * n + j])) + slack);
        }
}

/* This process's threads (/proc/self/task). */
static size_t thread_count(void)
{
    DIR *dir = opendir("/proc/self/task");
    assert_non_null(dir);
    size_t count = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        count += e->d_name[0] != '.';
    closedir(dir);
    return count;
}

/* OpenBLAS is loaded by the first product that goes to it, not when a context is created, nor
 * by a large product of the AUTO path with AVX-512 kernels (which is tsrnn's own), and it
 * starts no thread of its own (blas.c): the context set OPENBLAS_NUM_THREADS=1 for its
 * constructor. First in main(): nothing has sent a product to BLAS yet. */
static void test_blas_loads_on_first_product(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 10, 0);
    size_t m = 64, n = 64, k = 128; /* 0.5 M multiply-adds: BLAS's in the AUTO path */
    float *a = random_floats(&rng, m * k, -1, 1), *b = random_floats(&rng, k * n, -1, 1);
    float *c = calloc(m * n, sizeof(float)), *zeros = calloc(m * n, sizeof(float));
    assert_false(tsrnn_cpu_blas_loaded());
    /* "1" unless this environment set another (none set without OpenBLAS) */
    const char *set = getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "unset";
    assert_true(strcmp(set, "unset") != 0 || !TSRNN_HAVE_BLAS);
    size_t threads = thread_count();
    bool own = tsrnn_cpu_own_products(&cpu);
    tsrnn_cpu_gemm(&cpu, false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    assert_int_equal(tsrnn_cpu_blas_loaded(), TSRNN_HAVE_BLAS && !own);
    cpu.gemm_path = TSRNN_GEMM_BLAS;
    tsrnn_cpu_gemm(&cpu, false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    cpu.gemm_path = TSRNN_GEMM_AUTO;
    expect_product(false, false, m, n, k, 1.0f, a, b, 0.0f, zeros, c, 0.0);
    assert_int_equal(tsrnn_cpu_blas_loaded(), TSRNN_HAVE_BLAS);
    assert_null(tsrnn_cpu_blas_load_error());
    printf("# %s kernels, OPENBLAS_NUM_THREADS=%s: %zu thread(s) before BLAS, %zu after; %s\n",
           tsrnn_cpu_isa_name(tsrnn_cpu_isa), set, threads, thread_count(),
           tsrnn_cpu_blas_describe(NULL));
    if (strcmp(set, "1") == 0 || !TSRNN_HAVE_BLAS)
        assert_int_equal(thread_count(), threads);
    free(a);
    free(b);
    free(c);
    free(zeros);
}

/* Every transpose case, sizes around the 8- and 4-wide blocks, beta 0 and 1: the loops
 * and BLAS against a double-precision product. */
static void test_gemm_paths_agree(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 7, 0);
    const size_t sizes[][3] = {
        { 1, 1, 1 }, { 3, 5, 7 }, { 16, 20, 20 }, { 9, 13, 33 }, { 70, 80, 90 }
    };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int path = TSRNN_GEMM_LOOPS; path <= TSRNN_GEMM_BLAS; path++) {
                    size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
                    float *a = random_floats(&rng, m * k, -1, 1);
                    float *b = random_floats(&rng, k * n, -1, 1);
                    float *c = random_floats(&rng, m * n, -1, 1);
                    float *c0 = malloc(m * n * sizeof(float));
                    memcpy(c0, c, m * n * sizeof(float));
                    float beta = (s % 2) ? 1.0f : 0.0f, alpha = 0.5f;
                    cpu.gemm_path = (enum tsrnn_gemm_path)path;
                    tsrnn_cpu_gemm(&cpu, ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta,
                                   c, n);
                    expect_product(ta, tb, m, n, k, alpha, a, b, beta, c0, c, 1e-7);
                    free(a);
                    free(b);
                    free(c);
                    free(c0);
                }
    /* Without trans_b the loops are the plain triple loop, bit for bit, however they block:
     * every tile shape (4 x 20, 1 x 20, 4 x 16, 4 x 8, 4 x 4, single rows and columns, K = 1),
     * alpha 1 (its own code) and not. */
    const size_t blocks[][3] = {
        { 16, 20, 20 }, { 7, 20, 5 }, { 9, 29, 3 }, { 4, 36, 17 }, { 5, 20, 1 }
    };
    cpu.gemm_path = TSRNN_GEMM_LOOPS;
    for (size_t s = 0; s < sizeof(blocks) / sizeof(blocks[0]); s++)
        for (int ta = 0; ta < 2; ta++)
            for (int unit = 0; unit < 2; unit++) {
                size_t m = blocks[s][0], n = blocks[s][1], k = blocks[s][2];
                float alpha = unit ? 1.0f : 0.75f, beta = ta ? 1.0f : 0.0f;
                float *a = random_floats(&rng, m * k, -1, 1);
                float *b = random_floats(&rng, k * n, -1, 1);
                float *c = random_floats(&rng, m * n, -1, 1);
                float *want = malloc(m * n * sizeof(float));
                for (size_t i = 0; i < m; i++)
                    for (size_t j = 0; j < n; j++) {
                        float sum = beta == 0.0f ? 0.0f : c[i * n + j];
                        for (size_t kk = 0; kk < k; kk++)
                            sum += (alpha * (ta ? a[kk * m + i] : a[i * k + kk])) * b[kk * n + j];
                        want[i * n + j] = sum;
                    }
                tsrnn_cpu_gemm(&cpu, ta, false, m, n, k, alpha, a, ta ? m : k, b, n, beta, c, n);
                assert_memory_equal(c, want, m * n * sizeof(float));
                free(a);
                free(b);
                free(c);
                free(want);
            }
    /* With trans_b, rows of C come four at a time (dot_rows4) and singly (dot): the same bits.
     * Five equal rows of A give five equal rows of C, whatever K (with and without a rest
     * after the 8-wide part). */
    for (size_t k = 1; k <= 21; k += 5) {
        size_t m = 5, n = 3;
        float *row = random_floats(&rng, k, -1, 1), *b = random_floats(&rng, n * k, -1, 1);
        float *a = malloc(m * k * sizeof(float)), *c = calloc(m * n, sizeof(float));
        for (size_t i = 0; i < m; i++)
            memcpy(a + i * k, row, k * sizeof(float));
        tsrnn_cpu_gemm(&cpu, false, true, m, n, k, 0.75f, a, k, b, k, 0.0f, c, n);
        for (size_t i = 0; i + 1 < m; i++)
            assert_memory_equal(c + i * n, c + (m - 1) * n, n * sizeof(float));
        free(row);
        free(a);
        free(b);
        free(c);
    }
    /* beta = 0 overwrites: NaN left in C does not come through, on either path. */
    for (int path = TSRNN_GEMM_LOOPS; path <= TSRNN_GEMM_BLAS; path++) {
        float a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 0, 0, 1 }, c[4] = { NAN, NAN, NAN, NAN };
        cpu.gemm_path = (enum tsrnn_gemm_path)path;
        tsrnn_cpu_gemm(&cpu, false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
        assert_memory_equal(c, a, sizeof(c));
    }
    cpu.gemm_path = TSRNN_GEMM_AUTO;
}

/* Large BLAS products with 2 compute threads run as two single-threaded calls on halves of
 * C's rows: every transpose case, an uneven row count, against a double-precision product. */
static void test_split_blas_products(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 9, 0);
    size_t m = 200, n = 96, k = 700; /* 13.4 M multiply-adds: split */
    tsrnn_cpu_set_thread_count(&cpu, 2);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            float *a = random_floats(&rng, m * k, -1, 1);
            float *b = random_floats(&rng, k * n, -1, 1);
            float *c = random_floats(&rng, m * n, -1, 1);
            float *c0 = malloc(m * n * sizeof(float));
            memcpy(c0, c, m * n * sizeof(float));
            tsrnn_cpu_gemm(&cpu, ta, tb, m, n, k, 0.5f, a, ta ? m : k, b, tb ? k : n, 1.0f, c, n);
            expect_product(ta, tb, m, n, k, 0.5f, a, b, 1.0f, c0, c, 0.0);
            free(a);
            free(b);
            free(c);
            free(c0);
        }
    tsrnn_cpu_set_thread_count(&cpu, 1);
}

/* The packed products (the recurrence of large models) against a double-precision product:
 * row counts around the 4-row kernel, column counts around the 16-column panels, both ways
 * of packing. Runs the AVX2 kernel where the CPU has it, the portable loops otherwise; and
 * the product from a bias row (tsrnn_cpu_gemm_packed_bias) against a fill and the product,
 * bit for bit (k = 300: two of the AVX-512 kernel's k blocks). */
static void test_packed_products_match_reference(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 8, 0);
    const size_t ms[] = { 1, 3, 4, 5, 8, 13, 17 }, ns[] = { 1, 15, 16, 17, 40, 48 };
    const size_t ks[] = { 1, 7, 64, 300 };
    enum tsrnn_cpu_isa saved = tsrnn_cpu_isa, top = tsrnn_cpu_isa_detect();
    for (int isa = TSRNN_CPU_ISA_BASELINE; isa <= (int)top; isa++) {
        tsrnn_cpu_set_isa((enum tsrnn_cpu_isa)isa);
        printf("# packed kernel: %s\n",
               tsrnn_cpu_packed_kernel_available() ? tsrnn_cpu_isa_name(tsrnn_cpu_isa) : "loops");
        for (size_t mi = 0; mi < 7; mi++)
            for (size_t ni = 0; ni < 6; ni++)
                for (size_t ki = 0; ki < 4; ki++)
                    for (int trans = 0; trans < 2; trans++) {
                        size_t m = ms[mi], n = ns[ni], k = ks[ki];
                        float *a = random_floats(&rng, m * k, -1, 1);
                        float *b = random_floats(&rng, k * n, -1, 1);
                        float *c = random_floats(&rng, m * n, -1, 1);
                        float *c0 = malloc(m * n * sizeof(float));
                        float *packed = malloc(tsrnn_cpu_packed_count(k, n) * sizeof(float));
                        memcpy(c0, c, m * n * sizeof(float));
                        tsrnn_cpu_pack(packed, b, trans ? k : n, k, n, trans);
                        tsrnn_cpu_gemm_packed(&cpu, m, n, k, a, k, packed, c, n);
                        for (size_t i = 0; i < m; i++)
                            for (size_t j = 0; j < n; j++) {
                                double sum = c0[i * n + j], mag = fabs(c0[i * n + j]);
                                for (size_t kk = 0; kk < k; kk++) {
                                    double bv = trans ? b[j * k + kk] : b[kk * n + j];
                                    sum += (double)a[i * k + kk] * bv;
                                    mag += fabs((double)a[i * k + kk] * bv);
                                }
                                assert_true(fabs(c[i * n + j] - sum) <= 1e-6 * mag + 1e-7);
                            }
                        float *filled = malloc(m * n * sizeof(float));
                        tsrnn_cpu_fill_rows(filled, c0, m, n); /* bias: c0's first row */
                        tsrnn_cpu_gemm_packed(&cpu, m, n, k, a, k, packed, filled, n);
                        tsrnn_cpu_gemm_packed_bias(&cpu, m, n, k, a, k, packed, c0, c, n);
                        assert_memory_equal(c, filled, m * n * sizeof(float));
                        free(filled);
                        free(a);
                        free(b);
                        free(c);
                        free(c0);
                        free(packed);
                    }
    }
    tsrnn_cpu_set_isa(saved);
}

/* A packed B past PACKED_L2_WEIGHTS (gemm.c) runs the AVX-512 product with its prefetch of
 * the next panel block; the prefetch moves no bit: the product equals, bit for bit, the same
 * product run on 32-column slices of B packed on their own (too small to prefetch), from C
 * and from a bias row. Odd panel counts (a single last panel) and a short last k block. */
static void test_packed_prefetch_moves_no_bit(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 9, 0);
    const size_t sizes[][3] = { { 21, 1040, 300 }, { 64, 528, 520 }, { 3, 2048, 257 } };
    printf("# packed kernel: %s\n",
           tsrnn_cpu_packed_kernel_available() ? tsrnn_cpu_isa_name(tsrnn_cpu_isa) : "loops");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
        assert_true(k * n > 256 * 1024);
        float *a = random_floats(&rng, m * k, -1, 1), *b = random_floats(&rng, k * n, -1, 1);
        float *c = random_floats(&rng, m * n, -1, 1), *bias = random_floats(&rng, n, -1, 1);
        float *sliced = malloc(m * n * sizeof(float)), *c_bias = malloc(m * n * sizeof(float));
        float *sliced_bias = malloc(m * n * sizeof(float));
        float *packed = malloc(tsrnn_cpu_packed_count(k, n) * sizeof(float));
        float *slice = malloc(tsrnn_cpu_packed_count(k, 32) * sizeof(float));
        float *block = malloc(m * 32 * sizeof(float));
        assert_non_null(sliced), assert_non_null(c_bias), assert_non_null(sliced_bias);
        assert_non_null(packed), assert_non_null(slice), assert_non_null(block);
        memcpy(sliced, c, m * n * sizeof(float));
        tsrnn_cpu_pack(packed, b, n, k, n, false);
        tsrnn_cpu_gemm_packed(&cpu, m, n, k, a, k, packed, c, n);
        tsrnn_cpu_gemm_packed_bias(&cpu, m, n, k, a, k, packed, bias, c_bias, n);
        for (size_t j0 = 0; j0 < n; j0 += 32) {
            size_t w = n - j0 < 32 ? n - j0 : 32;
            tsrnn_cpu_pack(slice, b + j0, n, k, w, false);
            tsrnn_cpu_gemm_packed(&cpu, m, w, k, a, k, slice, sliced + j0, n);
            /* the bias product's C has n = ldc columns (its fill of the loops' path) */
            tsrnn_cpu_gemm_packed_bias(&cpu, m, w, k, a, k, slice, bias + j0, block, w);
            for (size_t i = 0; i < m; i++)
                memcpy(sliced_bias + i * n + j0, block + i * w, w * sizeof(float));
        }
        assert_memory_equal(c, sliced, m * n * sizeof(float));
        assert_memory_equal(c_bias, sliced_bias, m * n * sizeof(float));
        free(a);
        free(b);
        free(c);
        free(bias);
        free(sliced);
        free(c_bias);
        free(sliced_bias);
        free(packed);
        free(slice);
        free(block);
    }
}

/* tsrnn's own blocked products (AVX-512; the loops elsewhere) against a double-precision
 * product: every transposition, beta 0 and 1, sizes around the 8-row strips, the 16-column
 * panels, the 256-deep k blocks and the 512-row m blocks, on 1 and 2 threads. */
static void test_blocked_products_match_reference(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 10, 0);
    const size_t sizes[][3] = {
        { 16, 16, 16 }, { 17, 40, 300 }, { 70, 33, 600 }, { 600, 48, 257 }, { 200, 96, 700 }
    };
    printf("# blocked products: %s\n",
           tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512 ? "AVX-512 kernel" : "loops (no AVX-512)");
    for (int threads = 1; threads <= 2; threads++) {
        tsrnn_cpu_set_thread_count(&cpu, threads);
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
                    float *a = random_floats(&rng, m * k, -1, 1);
                    float *b = random_floats(&rng, k * n, -1, 1);
                    float *c = random_floats(&rng, m * n, -1, 1);
                    float *c0 = malloc(m * n * sizeof(float));
                    memcpy(c0, c, m * n * sizeof(float));
                    float beta = (s + (size_t)ta) % 2 ? 1.0f : 0.0f;
                    tsrnn_cpu_gemm_blocked(&cpu, ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n,
                                           beta, c, n);
                    expect_product(ta, tb, m, n, k, 1.0f, a, b, beta, c0, c, 1e-7);
                    free(a);
                    free(b);
                    free(c);
                    free(c0);
                }
    }
    tsrnn_cpu_set_thread_count(&cpu, 1);
    /* The BLAS core checks agree with each other: a hint only below the CPU's level. */
    const char *hint = tsrnn_cpu_blas_coretype_hint();
    printf("# BLAS: %s; hint %s\n", tsrnn_cpu_blas_describe(NULL), hint ? hint : "none");
    if (hint != NULL)
        assert_true(tsrnn_cpu_blas_isa() < tsrnn_cpu_isa_supported());
    else if (tsrnn_cpu_blas_core() != NULL)
        assert_true(tsrnn_cpu_blas_isa() >= tsrnn_cpu_isa_supported());
}

/* The elementwise loops (cells forward and backward, the bias sums, Adam) are compiled for
 * each vector level (cpu.h) and must give the same bits on all of them: a model on the
 * reference loops, one training step, at every level this CPU has. */
static void test_isa_levels_are_bit_identical(void **state)
{
    (void)state;
    const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM, TSRNN_MODEL_GRU };
    enum tsrnn_cpu_isa saved = tsrnn_cpu_isa, top = tsrnn_cpu_isa_detect();
    printf("# vector levels compared: baseline .. %s\n", tsrnn_cpu_isa_name(top));
    for (size_t kind = 0; kind < 3; kind++) {
        const size_t B = 5, T = 7, C = 3;
        struct tsrnn_model_dims dims = { kinds[kind], C, 37, 2, C, 0.0f, 1 };
        struct tsrnn_model m;
        assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, T), TSRNN_OK);
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, 11, 0);
        float *x = random_floats(&rng, B * T * C, -2, 2);
        float *y = random_floats(&rng, B * T * C, -1, 1);
        size_t count = m.table.total_count;
        float *first = NULL, *moments = NULL;
        float loss0 = 0.0f;
        cpu.gemm_path = TSRNN_GEMM_LOOPS;
        for (int isa = TSRNN_CPU_ISA_BASELINE; isa <= (int)top; isa++) {
            tsrnn_cpu_set_isa((enum tsrnn_cpu_isa)isa);
            tsrnn_model_init_params(m.params, &m.table, &dims, 5);
            float loss = run_forward(&m, x, y, B, T, true, NULL);
            run_backward(&m);
            float *mv = calloc(2 * count, sizeof(float)), *p = malloc(count * sizeof(float));
            memcpy(p, m.params, count * sizeof(float));
            const struct tsrnn_adam_scalars sc = { 0.9f,    0.1f,  0.999f, 0.001f,
                                                   0.0316f, 1e-8f, -1e-3f };
            for (int step = 0; step < 3; step++)
                tsrnn_cpu_adam_update(&cpu.base, p, mv, mv + count, grads_of(&m), count, &sc);
            if (isa == TSRNN_CPU_ISA_BASELINE) {
                loss0 = loss;
                first = malloc(2 * count * sizeof(float));
                memcpy(first, grads_of(&m), count * sizeof(float));
                memcpy(first + count, p, count * sizeof(float));
                moments = mv;
            } else {
                assert_memory_equal(&loss, &loss0, sizeof(loss));
                assert_memory_equal(grads_of(&m), first, count * sizeof(float));
                assert_memory_equal(p, first + count, count * sizeof(float));
                assert_memory_equal(mv, moments, 2 * count * sizeof(float));
                free(mv);
            }
            free(p);
        }
        cpu.gemm_path = TSRNN_GEMM_AUTO;
        tsrnn_cpu_set_isa(saved);
        free(first);
        free(moments);
        free(x);
        free(y);
        tsrnn_model_finish(&m);
    }
}

/* The other optimizers' elementwise updates are compiled for each vector level too (cpu.h):
 * the L2 penalty, SGD's Nesterov step, RMSprop in its four forms (plain, momentum, centered,
 * both; and alpha below 0.5, where its lerp takes ATen's other branch), Adagrad, three steps
 * each on 1003 parameters (vector tails included): the same bits at every level. */
static void test_optimizer_ops_levels_are_bit_identical(void **state)
{
    (void)state;
    const size_t count = 1003;
    enum tsrnn_cpu_isa saved = tsrnn_cpu_isa, top = tsrnn_cpu_isa_detect();
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 23, 0);
    float *params0 = random_floats(&rng, count, -0.5f, 0.5f);
    float *grads = random_floats(&rng, count, -0.1f, 0.1f);
    for (size_t i = 0; i < count; i += 101)
        grads[i] = 0.0f;
    const struct tsrnn_rmsprop_scalars rms[] = {
        { 0.99f, 0.01f, 1e-8f, 0.0f, -1e-3f, false }, { 0.99f, 0.01f, 1e-8f, 0.9f, -1e-3f, false },
        { 0.9f, 0.1f, 1e-6f, 0.0f, -1e-3f, true },    { 0.9f, 0.1f, 1e-6f, 0.5f, -1e-3f, true },
        { 0.3f, 0.7f, 1e-8f, 0.5f, -1e-3f, true },
    };
    enum {
        OPS = 3 + sizeof(rms) / sizeof(rms[0])
    };
    float *first[OPS] = { 0 };
    printf("# optimizer ops, vector levels compared: baseline .. %s\n", tsrnn_cpu_isa_name(top));
    for (int isa = TSRNN_CPU_ISA_BASELINE; isa <= (int)top; isa++) {
        tsrnn_cpu_set_isa((enum tsrnn_cpu_isa)isa);
        for (size_t op = 0; op < OPS; op++) {
            /* params, three state buffers, the gradient the L2 penalty rewrites */
            float *b = calloc(5 * count, sizeof(float));
            assert_non_null(b);
            float *p = b, *s1 = b + count, *s2 = b + 2 * count, *s3 = b + 3 * count,
                  *g = b + 4 * count;
            memcpy(p, params0, count * sizeof(float));
            for (int step = 0; step < 3; step++) {
                memcpy(g, grads, count * sizeof(float));
                if (op == 0) {
                    tsrnn_cpu_l2_decay(&cpu.base, g, p, count, 0.01f);
                    memcpy(s1, g, count * sizeof(float));
                    memcpy(p, g, count * sizeof(float)); /* compounds over the steps */
                } else if (op == 1) {
                    const struct tsrnn_nesterov_scalars n = { 0.9f, -0.05f };
                    tsrnn_cpu_nesterov_update(&cpu.base, p, s1, g, count, &n);
                } else if (op == 2) {
                    const struct tsrnn_adagrad_scalars a = { 1e-10f, -0.05f / (1.0f + step) };
                    if (step == 0)
                        for (size_t i = 0; i < count; i++)
                            s2[i] = 0.1f;
                    tsrnn_cpu_adagrad_update(&cpu.base, p, s2, g, count, &a);
                } else {
                    tsrnn_cpu_rmsprop_update(&cpu.base, p, s2, s1, s3, g, count, &rms[op - 3]);
                }
            }
            if (isa == TSRNN_CPU_ISA_BASELINE)
                first[op] = b;
            else {
                if (memcmp(b, first[op], 5 * count * sizeof(float)) != 0)
                    fail_msg("optimizer op %zu: %s differs from the baseline", op,
                             tsrnn_cpu_isa_name((enum tsrnn_cpu_isa)isa));
                free(b);
            }
        }
    }
    /* they did something: the parameters moved, RMSprop's centered grad_avg filled */
    assert_memory_not_equal(first[1], params0, count * sizeof(float));
    assert_true(first[6][3 * count + 1] != 0.0f);
    tsrnn_cpu_set_isa(saved);
    for (size_t op = 0; op < OPS; op++)
        free(first[op]);
    free(params0);
    free(grads);
}

/* Small layers run AVX-512 kernels of their own: an RNN's recurrence and head with the batch
 * in vector lanes (tsrnn_cpu_rnn_lanes_forward), the weight gradients of 16q + 4 columns with
 * the last 4 columns of 4 rows in one register (gemm.c, gemm_tn_avx512); below AVX-512, the
 * reference loops. The same bits at every level this CPU has -- loss, outputs, every gradient
 * and a forecast (which carries the state between steps) -- for the seed config's shape,
 * batches around the 16-row blocks, up to 32 units, several inputs, a second layer fed by
 * the first, and LSTM and GRU layers of 20 units (dW_hh (80, 20) and (60, 20)). */
static void test_small_rnn_levels_are_bit_identical(void **state)
{
    (void)state;
    const size_t shapes[][5] = {
        /* kind, H, B, C, L */
        { TSRNN_MODEL_RNN, 20, 16, 1, 1 }, { TSRNN_MODEL_RNN, 20, 37, 3, 1 },
        { TSRNN_MODEL_RNN, 5, 3, 2, 2 },   { TSRNN_MODEL_RNN, 32, 17, 8, 1 },
        { TSRNN_MODEL_RNN, 9, 16, 1, 2 },  { TSRNN_MODEL_LSTM, 20, 16, 1, 1 },
        { TSRNN_MODEL_GRU, 20, 5, 2, 1 },
    };
    enum tsrnn_cpu_isa saved = tsrnn_cpu_isa, top = tsrnn_cpu_isa_detect();
    printf("# small layers compared: baseline .. %s (AVX-512 kernels: %s)\n",
           tsrnn_cpu_isa_name(top), top == TSRNN_CPU_ISA_AVX512 ? "yes" : "no");
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        enum tsrnn_model_kind kind = (enum tsrnn_model_kind)shapes[s][0];
        size_t H = shapes[s][1], B = shapes[s][2], C = shapes[s][3], T = 7, horizon = 3;
        struct tsrnn_model_dims dims = { kind, C, H, shapes[s][4], C, 0.0f, 1 };
        struct tsrnn_model m;
        assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, T), TSRNN_OK);
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, 12, s);
        float *x = random_floats(&rng, B * T * C, -2, 2);
        float *y = random_floats(&rng, B * T * C, -1, 1);
        size_t count = m.table.total_count, out_count = B * T * C, fc_count = horizon * B * C;
        float *first = malloc((count + out_count + fc_count) * sizeof(float));
        float *now = malloc((count + out_count + fc_count) * sizeof(float));
        float loss0 = 0.0f;
        tsrnn_model_init_params(m.params, &m.table, &dims, 7);
        for (int isa = TSRNN_CPU_ISA_BASELINE; isa <= (int)top; isa++) {
            tsrnn_cpu_set_isa((enum tsrnn_cpu_isa)isa);
            float loss = run_forward(&m, x, y, B, T, true, NULL);
            run_backward(&m);
            memcpy(now, grads_of(&m), count * sizeof(float));
            outputs(&m, now + count);
            assert_int_equal(tsrnn_model_predict(&m, now + count + out_count, x, B, T, horizon),
                             TSRNN_OK);
            if (isa == TSRNN_CPU_ISA_BASELINE) {
                loss0 = loss;
                memcpy(first, now, (count + out_count + fc_count) * sizeof(float));
                continue;
            }
            if (memcmp(&loss, &loss0, sizeof(loss)) != 0 ||
                memcmp(now, first, (count + out_count + fc_count) * sizeof(float)) != 0)
                fail_msg("%s H %zu B %zu C %zu L %zu: %s differs from baseline",
                         tsrnn_model_kind_name(kind), H, B, C, shapes[s][4],
                         tsrnn_cpu_isa_name((enum tsrnn_cpu_isa)isa));
        }
        tsrnn_cpu_set_isa(saved);
        free(first);
        free(now);
        free(x);
        free(y);
        tsrnn_model_finish(&m);
    }
}

/* A model large enough for packed products: loss, every gradient and a forecast agree with
 * the reference loops (TSRNN_GEMM_LOOPS turns packing off) within float32 summation-order
 * differences. */
static void packed_model_matches_loops(void)
{
    const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM, TSRNN_MODEL_GRU };
    for (size_t kind = 0; kind < 3; kind++) {
        const size_t B = 8, T = 6, C = 2;
        struct tsrnn_model_dims dims = { kinds[kind], C, 128, 2, C, 0.0f, 1 };
        struct tsrnn_model m;
        assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, T), TSRNN_OK);
        assert_int_equal(tsrnn_cpu_workspace_packed(m.ws), tsrnn_cpu_packed_kernel_available());
        tsrnn_model_init_params(m.params, &m.table, &dims, 5);
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, 6, 0);
        float *x = random_floats(&rng, B * T * C, -1, 1);
        float *y = random_floats(&rng, B * T * C, -1, 1);
        float *grads[2], loss[2], forecast[2][4 * 2];
        for (int run = 0; run < 2; run++) {
            cpu.gemm_path = run == 0 ? TSRNN_GEMM_AUTO : TSRNN_GEMM_LOOPS;
            loss[run] = run_forward(&m, x, y, B, T, true, NULL);
            assert_int_equal(tsrnn_cpu_workspace_packed_products(m.ws),
                             run == 0 && tsrnn_cpu_workspace_packed(m.ws));
            run_backward(&m);
            grads[run] = malloc(m.table.total_count * sizeof(float));
            memcpy(grads[run], grads_of(&m), m.table.total_count * sizeof(float));
            assert_int_equal(tsrnn_model_predict(&m, forecast[run], x, 1, T, 4), TSRNN_OK);
        }
        cpu.gemm_path = TSRNN_GEMM_AUTO;
        assert_true(fabs(loss[0] - loss[1]) <= 1e-6 * fabs(loss[1]));
        for (size_t e = 0; e < m.table.entry_count; e++) {
            const struct tsrnn_param_entry *entry = &m.table.entries[e];
            double err =
                relative_error(grads[0] + entry->offset, grads[1] + entry->offset, entry->count);
            if (err > 1e-5)
                fail_msg("%s %s: packed and loops differ by %.1e",
                         tsrnn_model_kind_name(kinds[kind]), entry->name, err);
        }
        assert_true(relative_error(forecast[0], forecast[1], 8) <= 1e-5);
        free(grads[0]);
        free(grads[1]);
        free(x);
        free(y);
        tsrnn_model_finish(&m);
    }
}

/* ... at every vector level of the packed kernel this CPU has (AVX2, AVX-512). */
static void test_packed_model_matches_loops(void **state)
{
    (void)state;
    enum tsrnn_cpu_isa saved = tsrnn_cpu_isa, top = tsrnn_cpu_isa_detect();
    for (int isa = TSRNN_CPU_ISA_AVX2; isa <= (int)top; isa++) {
        tsrnn_cpu_set_isa((enum tsrnn_cpu_isa)isa);
        packed_model_matches_loops();
    }
    if (top < TSRNN_CPU_ISA_AVX2)
        packed_model_matches_loops();
    tsrnn_cpu_set_isa(saved);
}

/* Two compute threads split a large layer's recurrence by batch rows; each row's arithmetic is
 * unchanged, so with the reference loops (no BLAS, whose own threads may sum in another
 * order) loss and gradients are bit for bit those of one thread. The default path (packed
 * products, OpenBLAS) agrees within float32 rounding. Both layers run: the first with a
 * univariate input (per-step weight sums), the second with 128 inputs. */
static void test_threaded_recurrence_is_bit_identical(void **state)
{
    (void)state;
    const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM, TSRNN_MODEL_GRU };
    const size_t B = 64, T = 40, H = 128;
    for (size_t kind = 0; kind < 3; kind++) {
        struct tsrnn_model_dims dims = { kinds[kind], 1, H, 2, 1, 0.0f, 1 };
        struct tsrnn_model m;
        assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, T), TSRNN_OK);
        tsrnn_model_init_params(m.params, &m.table, &dims, 7);
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, 8, 0);
        float *x = random_floats(&rng, B * T, -1, 1), *y = random_floats(&rng, B * T, -1, 1);
        size_t n = m.table.total_count;
        float *grads[2][2], loss[2][2];
        for (int path = 0; path < 2; path++)
            for (int threads = 1; threads <= 2; threads++) {
                cpu.gemm_path = path == 0 ? TSRNN_GEMM_LOOPS : TSRNN_GEMM_AUTO;
                tsrnn_cpu_set_thread_count(&cpu, threads);
                loss[path][threads - 1] = run_forward(&m, x, y, B, T, true, NULL);
                run_backward(&m);
                grads[path][threads - 1] = malloc(n * sizeof(float));
                memcpy(grads[path][threads - 1], grads_of(&m), n * sizeof(float));
            }
        cpu.gemm_path = TSRNN_GEMM_AUTO;
        tsrnn_cpu_set_thread_count(&cpu, 1);
        const char *name = tsrnn_model_kind_name(kinds[kind]);
        if (loss[0][0] != loss[0][1] || memcmp(grads[0][0], grads[0][1], n * sizeof(float)) != 0)
            fail_msg("%s: 2 threads differ from 1 on the reference loops", name);
        double err = relative_error(grads[1][0], grads[1][1], n);
        printf("# %s: loops bit-identical with 2 threads; default path: gradients within %.1e\n",
               name, err);
        assert_true(err <= 1e-5);
        for (int path = 0; path < 2; path++)
            for (int t = 0; t < 2; t++)
                free(grads[path][t]);
        free(x);
        free(y);
        tsrnn_model_finish(&m);
    }
}

/* --- parameters ------------------------------------------------------------------------ */

static void test_param_table_counts(void **state)
{
    (void)state;
    /* The Darts guide's model and its siblings: 481 / 1861 / 1401 parameters. */
    const struct {
        enum tsrnn_model_kind kind;
        size_t rnn, total;
    } cases[] = { { TSRNN_MODEL_RNN, 460, 481 },
                  { TSRNN_MODEL_LSTM, 1840, 1861 },
                  { TSRNN_MODEL_GRU, 1380, 1401 } };
    for (size_t i = 0; i < 3; i++) {
        struct tsrnn_model_dims dims = { cases[i].kind, 1, 20, 1, 1, 0.0f, 1 };
        struct tsrnn_param_table table;
        tsrnn_param_table_init(&table, &dims);
        assert_int_equal(table.rnn_count, cases[i].rnn);
        assert_int_equal(table.total_count, cases[i].total);
        assert_int_equal(table.head_count, 21);
    }
    /* Two layers: PyTorch's state_dict names, shapes and order. */
    struct tsrnn_model_dims dims = { TSRNN_MODEL_LSTM, 3, 5, 2, 3, 0.0f, 1 };
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &dims);
    const char *names[] = { "rnn.weight_ih_l0", "rnn.weight_hh_l0",
                            "rnn.bias_ih_l0",   "rnn.bias_hh_l0",
                            "rnn.weight_ih_l1", "rnn.weight_hh_l1",
                            "rnn.bias_ih_l1",   "rnn.bias_hh_l1",
                            "V.weight",         "V.bias" };
    const int64_t rows[] = { 20, 20, 20, 20, 20, 20, 20, 20, 3, 3 };
    const int64_t cols[] = { 3, 5, 0, 0, 5, 5, 0, 0, 5, 0 };
    assert_int_equal(table.entry_count, 10);
    size_t offset = 0;
    for (size_t e = 0; e < 10; e++) {
        assert_string_equal(table.entries[e].name, names[e]);
        assert_int_equal(table.entries[e].shape[0], rows[e]);
        assert_int_equal(table.entries[e].rank, cols[e] ? 2 : 1);
        if (cols[e])
            assert_int_equal(table.entries[e].shape[1], cols[e]);
        assert_int_equal(table.entries[e].offset, offset);
        offset += table.entries[e].count;
    }
    assert_int_equal(offset, table.total_count);
}

static void test_init_is_pytorch_default(void **state)
{
    (void)state;
    struct tsrnn_model_dims dims = { TSRNN_MODEL_GRU, 2, 16, 2, 2, 0.0f, 1 };
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &dims);
    float *a = calloc(table.total_count, sizeof(float));
    float *b = calloc(table.total_count, sizeof(float));
    tsrnn_model_init_params(a, &table, &dims, 42);
    tsrnn_model_init_params(b, &table, &dims, 42);
    assert_memory_equal(a, b, table.total_count * sizeof(float));
    double sum = 0.0, lo = 1.0, hi = -1.0;
    for (size_t i = 0; i < table.total_count; i++) {
        sum += a[i];
        lo = fmin(lo, a[i]);
        hi = fmax(hi, a[i]);
    }
    /* U(-1/4, 1/4): bounds respected, nearly filled, centred. */
    assert_true(lo >= -0.25 && hi < 0.25);
    assert_true(lo < -0.249 && hi > 0.249);
    assert_true(fabs(sum / (double)table.total_count) < 0.01);
    tsrnn_model_init_params(b, &table, &dims, 43);
    assert_true(memcmp(a, b, table.total_count * sizeof(float)) != 0);
    free(a);
    free(b);
}

/* --- PyTorch fixtures ------------------------------------------------------------------ */

static const char *const step_fixtures[] = {
    "step_rnn_l1_c1",  "step_rnn_l1_c3",  "step_rnn_l2_c1",  "step_rnn_l2_c3",
    "step_lstm_l1_c1", "step_lstm_l1_c3", "step_lstm_l2_c1", "step_lstm_l2_c3",
    "step_gru_l1_c1",  "step_gru_l1_c3",  "step_gru_l2_c1",  "step_gru_l2_c3",
};

struct fixture {
    struct tsrnn_safetensors st;
    struct tsrnn_model model;
    size_t B, T, C;
    float *x, *y;
    double lr;
};

static void fixture_load(struct fixture *f, const char *name)
{
    char file[128];
    snprintf(file, sizeof(file), "%s.safetensors", name);
    memset(f, 0, sizeof(*f));
    assert_int_equal(tsrnn_safetensors_read(&f->st, fixture_path(file)), TSRNN_OK);
    const char *meta_model = tsrnn_safetensors_metadata(&f->st, "model");
    assert_non_null(meta_model);
    f->B = (size_t)atoi(tsrnn_safetensors_metadata(&f->st, "batch"));
    f->T = (size_t)atoi(tsrnn_safetensors_metadata(&f->st, "steps"));
    f->C = (size_t)atoi(tsrnn_safetensors_metadata(&f->st, "input_size"));
    f->lr = atof(tsrnn_safetensors_metadata(&f->st, "lr"));
    struct tsrnn_model_dims dims = {
        .kind = kind_from_name(meta_model),
        .input_count = f->C,
        .hidden_count = (size_t)atoi(tsrnn_safetensors_metadata(&f->st, "hidden_dim")),
        .layer_count = (size_t)atoi(tsrnn_safetensors_metadata(&f->st, "n_rnn_layers")),
        .output_count = f->C,
    };
    assert_int_equal(tsrnn_model_init(&f->model, &cpu.base, &dims, f->B, f->T), TSRNN_OK);
    for (size_t e = 0; e < f->model.table.entry_count; e++) {
        const struct tsrnn_param_entry *entry = &f->model.table.entries[e];
        copy_tensor(f->model.params + entry->offset, entry->count, &f->st, entry->name);
    }
    f->x = malloc(f->B * f->T * f->C * sizeof(float));
    f->y = malloc(f->B * f->T * f->C * sizeof(float));
    copy_tensor(f->x, f->B * f->T * f->C, &f->st, "x");
    copy_tensor(f->y, f->B * f->T * f->C, &f->st, "y");
}

static void fixture_finish(struct fixture *f)
{
    tsrnn_model_finish(&f->model);
    tsrnn_safetensors_finish(&f->st);
    free(f->x);
    free(f->y);
}

/* The prefixed tensor of every parameter ("grad." -> grad.rnn.weight_ih_l0, ...) against
 * a flat buffer; returns the worst per-tensor relative error. */
static double compare_params(const struct fixture *f, const char *prefix, const float *flat)
{
    double worst = 0.0;
    for (size_t e = 0; e < f->model.table.entry_count; e++) {
        const struct tsrnn_param_entry *entry = &f->model.table.entries[e];
        char name[96];
        snprintf(name, sizeof(name), "%s%s", prefix, entry->name);
        float *want = malloc(entry->count * sizeof(float));
        copy_tensor(want, entry->count, &f->st, name);
        worst = fmax(worst, relative_error(flat + entry->offset, want, entry->count));
        free(want);
    }
    return worst;
}

/* Forward, loss and every gradient within 1e-5 relative of PyTorch. */
static void test_fixture_loss_and_gradients(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(step_fixtures) / sizeof(step_fixtures[0]); i++) {
        struct fixture f;
        fixture_load(&f, step_fixtures[i]);
        float loss = run_forward(&f.model, f.x, f.y, f.B, f.T, true, NULL);
        run_backward(&f.model);

        float want_loss;
        copy_tensor(&want_loss, 1, &f.st, "loss");
        size_t n = f.B * f.T * f.C;
        float *out = malloc(n * sizeof(float)), *want_out = malloc(n * sizeof(float));
        outputs(&f.model, out);
        copy_tensor(want_out, n, &f.st, "out");
        double out_err = relative_error(out, want_out, n);
        double loss_err = fabs((double)loss - want_loss) / want_loss;
        double grad_err = compare_params(&f, "grad.", grads_of(&f.model));
        printf("# %-16s loss %.9g (torch %.9g): rel err loss %.1e, out %.1e, grads %.1e\n",
               step_fixtures[i], (double)loss, (double)want_loss, loss_err, out_err, grad_err);
        assert_true(loss_err <= 1e-5);
        assert_true(out_err <= 1e-5);
        assert_true(grad_err <= 1e-5);
        free(out);
        free(want_out);
        fixture_finish(&f);
    }
}

/* Adam: one step from PyTorch's own gradients within 1e-6 of torch.optim.Adam; three steps
 * with tsrnn's gradients (recomputed after each update) within 1e-6 for the weights and
 * 1e-5 for the moments. */
static void test_fixture_adam_steps(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(step_fixtures) / sizeof(step_fixtures[0]); i++) {
        struct fixture f;
        fixture_load(&f, step_fixtures[i]);
        size_t count = f.model.table.total_count;
        struct tsrnn_adam adam;
        assert_int_equal(tsrnn_adam_init(&adam, &cpu.base, count, f.lr), TSRNN_OK);
        float *torch_grads = malloc(count * sizeof(float));
        for (size_t e = 0; e < f.model.table.entry_count; e++) {
            const struct tsrnn_param_entry *entry = &f.model.table.entries[e];
            char name[96];
            snprintf(name, sizeof(name), "grad.%s", entry->name);
            copy_tensor(torch_grads + entry->offset, entry->count, &f.st, name);
        }
        float *params0 = malloc(count * sizeof(float));
        memcpy(params0, f.model.params, count * sizeof(float));
        assert_int_equal(tsrnn_adam_step(&adam, f.model.params, torch_grads), TSRNN_OK);
        double one_step = compare_params(&f, "adam1.param.", f.model.params);

        memcpy(f.model.params, params0, count * sizeof(float));
        tsrnn_adam_finish(&adam);
        assert_int_equal(tsrnn_adam_init(&adam, &cpu.base, count, f.lr), TSRNN_OK);
        for (int s = 0; s < 3; s++) {
            run_forward(&f.model, f.x, f.y, f.B, f.T, true, NULL);
            run_backward(&f.model);
            assert_int_equal(tsrnn_adam_step(&adam, f.model.params, grads_of(&f.model)), TSRNN_OK);
        }
        double three_steps = compare_params(&f, "adam3.param.", f.model.params);
        double m_err = compare_params(&f, "adam3.exp_avg.", adam.exp_avg);
        double v_err = compare_params(&f, "adam3.exp_avg_sq.", adam.exp_avg_sq);
        printf("# %-16s adam: 1 step %.1e, 3 steps %.1e (exp_avg %.1e, exp_avg_sq %.1e)\n",
               step_fixtures[i], one_step, three_steps, m_err, v_err);
        assert_true(one_step <= 1e-6);
        assert_true(three_steps <= 1e-6);
        assert_true(m_err <= 1e-5 && v_err <= 1e-5);
        assert_int_equal(adam.step, 3);
        tsrnn_adam_finish(&adam);
        free(torch_grads);
        free(params0);
        fixture_finish(&f);
    }
}

/* --- finite differences ---------------------------------------------------------------- */

struct fd_case {
    enum tsrnn_model_kind kind;
    size_t layers, C;
    float dropout;
};

static float loss_at(struct tsrnn_model *m, const float *x, const float *y, size_t B, size_t T,
                     uint64_t dropout_seed)
{
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, dropout_seed);
    return run_forward(m, x, y, B, T, true, &g);
}

/* For every tensor, the directional derivative along a random direction d: central
 * differences D(eps) = (L(p + eps d) - L(p - eps d)) / 2 eps, Richardson-extrapolated
 * (4 D(eps/2) - D(eps)) / 3 so that the truncation error is O(eps^4), against grad . d.
 * Forward passes are float32; with eps = 2e-2 on O(1) weights the rounding noise of the
 * loss (~3e-8 of ~0.5) divided by eps is a few 1e-6, hence the tolerance 2e-3 relative plus
 * 1e-5 absolute. The same dropout masks are drawn for every evaluation (fixed seed), so
 * dropout's backward is checked too. */
static double central_difference(struct tsrnn_model *m, float *p, const float *saved,
                                 const float *dir, size_t count, float eps, const float *x,
                                 const float *y, size_t B, size_t T)
{
    for (size_t i = 0; i < count; i++)
        p[i] = saved[i] + eps * dir[i];
    double plus = loss_at(m, x, y, B, T, 5);
    for (size_t i = 0; i < count; i++)
        p[i] = saved[i] - eps * dir[i];
    double minus = loss_at(m, x, y, B, T, 5);
    memcpy(p, saved, count * sizeof(float));
    return (plus - minus) / (2.0 * (double)eps);
}

static void check_finite_differences(const struct fd_case *c)
{
    const size_t B = 3, T = 6, H = 4;
    struct tsrnn_model_dims dims = { c->kind, c->C, H, c->layers, c->C, c->dropout, 1 };
    struct tsrnn_model m;
    assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, T), TSRNN_OK);
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 1000 + (uint64_t)c->kind * 10 + c->layers, 0);
    for (size_t i = 0; i < m.table.total_count; i++)
        m.params[i] = -0.8f + 1.6f * tsrnn_rng_uniform(&rng);
    float *x = random_floats(&rng, B * T * c->C, -1, 1);
    float *y = random_floats(&rng, B * T * c->C, -1, 1);

    loss_at(&m, x, y, B, T, 5);
    run_backward(&m);
    float *grads = malloc(m.table.total_count * sizeof(float));
    memcpy(grads, grads_of(&m), m.table.total_count * sizeof(float));

    const float eps = 2e-2f;
    for (size_t e = 0; e < m.table.entry_count; e++) {
        const struct tsrnn_param_entry *entry = &m.table.entries[e];
        float *p = m.params + entry->offset;
        float *saved = malloc(entry->count * sizeof(float));
        float *dir = random_floats(&rng, entry->count, -1, 1);
        memcpy(saved, p, entry->count * sizeof(float));
        double analytic = 0.0;
        for (size_t i = 0; i < entry->count; i++)
            analytic += (double)grads[entry->offset + i] * dir[i];
        double coarse = central_difference(&m, p, saved, dir, entry->count, eps, x, y, B, T);
        double fine = central_difference(&m, p, saved, dir, entry->count, eps / 2, x, y, B, T);
        double numeric = (4.0 * fine - coarse) / 3.0;
        double err = fabs(numeric - analytic) / fabs(analytic);
        if (fabs(numeric - analytic) > 2e-3 * fabs(analytic) + 1e-5)
            fail_msg("%s L%zu C%zu dropout %.1f: %s: analytic %.6g, finite differences %.6g "
                     "(rel err %.1e)",
                     tsrnn_model_kind_name(c->kind), c->layers, c->C, (double)c->dropout,
                     entry->name, analytic, numeric, err);
        free(saved);
        free(dir);
    }
    free(grads);
    free(x);
    free(y);
    tsrnn_model_finish(&m);
}

static void test_gradients_finite_differences(void **state)
{
    (void)state;
    const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM, TSRNN_MODEL_GRU };
    for (size_t k = 0; k < 3; k++)
        for (size_t layers = 1; layers <= 3; layers++)
            for (size_t C = 1; C <= 2; C++) {
                struct fd_case c = { kinds[k], layers, C, layers > 1 ? 0.3f : 0.0f };
                check_finite_differences(&c);
                if (layers > 1) {
                    c.dropout = 0.0f;
                    check_finite_differences(&c);
                }
            }
}

/* --- dropout, prediction, loading ------------------------------------------------------ */

static void test_dropout_between_layers_only(void **state)
{
    (void)state;
    const size_t B = 64, T = 16, H = 32;
    struct tsrnn_model_dims dims = { TSRNN_MODEL_LSTM, 1, H, 3, 1, 0.25f, 1 };
    struct tsrnn_model m;
    assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, T), TSRNN_OK);
    tsrnn_model_init_params(m.params, &m.table, &dims, 3);
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 9, 0);
    float *x = random_floats(&rng, B * T, -1, 1);

    /* The masks of a training step: layer 1's input, then layer 2's. */
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, 9);
    const float *masks = tsrnn_model_dropout(&m, B, T, &g, 0, 1);
    assert_non_null(masks);
    size_t n = T * B * H;
    for (size_t l = 0; l < 2; l++) {
        size_t zero = 0;
        for (size_t i = 0; i < n; i++) {
            float v = masks[l * n + i];
            assert_true(v == 0.0f || v == 1.0f / 0.75f);
            zero += v == 0.0f;
        }
        /* 16 x 64 x 32 = 32768 draws at p = 0.25: 8192 +- 78 (1 sigma). */
        assert_true(zero > 8192 - 450 && zero < 8192 + 450);
    }
    run_forward(&m, x, NULL, B, T, true, &g);

    /* Evaluation draws nothing and equals the same model without dropout. */
    run_forward(&m, x, NULL, B, T, false, NULL);
    float *eval_out = malloc(T * B * sizeof(float)), *out = malloc(T * B * sizeof(float));
    outputs(&m, eval_out);
    run_forward(&m, x, NULL, B, T, true, NULL); /* training without masks: no dropout */
    outputs(&m, out);
    assert_memory_equal(eval_out, out, T * B * sizeof(float));
    free(eval_out);
    free(out);
    free(x);
    tsrnn_model_finish(&m);
}

/* Darts' predict: forecast k equals the last output of one forward pass over the context
 * followed by forecasts 0..k-1 (the carried state is exactly the state of that pass). */
static void test_predict_carries_state(void **state)
{
    (void)state;
    const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM, TSRNN_MODEL_GRU };
    for (size_t k = 0; k < 3; k++) {
        const size_t icl = 5, horizon = 7, C = 2;
        struct tsrnn_model_dims dims = { kinds[k], C, 6, 2, C, 0.0f, 1 };
        struct tsrnn_model m;
        assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, 1, icl + horizon), TSRNN_OK);
        tsrnn_model_init_params(m.params, &m.table, &dims, 11);
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, 12, 0);
        float *seq = random_floats(&rng, (icl + horizon) * C, 0, 1);
        float forecast[7 * 2];
        float out[(5 + 7) * 2];
        assert_int_equal(tsrnn_model_predict(&m, forecast, seq, 1, icl, horizon), TSRNN_OK);
        for (size_t j = 0; j < horizon; j++) {
            if (j > 0)
                memcpy(seq + (icl + j - 1) * C, forecast + (j - 1) * C, C * sizeof(float));
            run_forward(&m, seq, NULL, 1, icl + j, false, NULL);
            outputs(&m, out);
            for (size_t c = 0; c < C; c++)
                assert_float_equal(forecast[j * C + c], out[(icl + j - 1) * C + c], 1e-6);
        }
        free(seq);
        tsrnn_model_finish(&m);
    }
}

/* Darts' historical forecasts predict many windows in one batch: window b's forecast from a
 * batch of B equals its forecast alone (B = 1) to float32 rounding (the products of B rows
 * and of one row may take different GEMM kernels: measured 1 ulp); hidden 40 takes the
 * packed products where the machine has them. */
static void test_predict_batch_equals_one_at_a_time(void **state)
{
    (void)state;
    const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM, TSRNN_MODEL_GRU };
    enum {
        B = 7,
        ICL = 9,
        HORIZON = 6,
        C = 2
    };
    for (size_t k = 0; k < 3; k++) {
        struct tsrnn_model_dims dims = { kinds[k], C, 40, 2, C, 0.0f, 1 };
        struct tsrnn_model m;
        assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, B, ICL), TSRNN_OK);
        tsrnn_model_init_params(m.params, &m.table, &dims, 21);
        struct tsrnn_rng rng;
        tsrnn_rng_init(&rng, 22, 0);
        float *context = random_floats(&rng, B * ICL * C, 0, 1);
        float batch[HORIZON * B * C], one[HORIZON * C];
        assert_int_equal(tsrnn_model_predict(&m, batch, context, B, ICL, HORIZON), TSRNN_OK);
        double diff = 0.0, scale = 0.0;
        for (size_t b = 0; b < B; b++) {
            assert_int_equal(tsrnn_model_predict(&m, one, context + b * ICL * C, 1, ICL, HORIZON),
                             TSRNN_OK);
            for (size_t j = 0; j < HORIZON * C; j++) {
                double a = one[j], v = batch[(j / C * B + b) * C + j % C];
                diff = fmax(diff, fabs(a - v));
                scale = fmax(scale, fabs(a));
            }
        }
        printf("# %s: batch of %d vs one at a time: max |difference| %.1e, outputs up to %.2f\n",
               tsrnn_model_kind_name(kinds[k]), B, diff, scale);
        assert_true(diff <= 1e-6 * scale);
        free(context);
        tsrnn_model_finish(&m);
    }
}

static const char *write_weights(const char *dir, const char *name,
                                 const struct tsrnn_tensor_desc *tensors, size_t count)
{
    const char *path = tu_path(dir, name);
    assert_int_equal(tsrnn_safetensors_write(path, tensors, count, NULL, 0), TSRNN_OK);
    return path;
}

static void expect_load_error(const struct tsrnn_param_table *table, float *flat, const char *path,
                              const char *fragment)
{
    enum tsrnn_status status = tsrnn_model_load_params(flat, table, path);
    assert_int_equal(status, TSRNN_ERR_DATA);
    if (strstr(tsrnn_last_error(), fragment) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", tsrnn_last_error(), fragment);
}

static void test_load_params_checks_everything(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_model_dims dims = { TSRNN_MODEL_RNN, 1, 3, 1, 1, 0.0f, 1 };
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &dims);
    float flat[64], w[64];
    for (size_t i = 0; i < 64; i++)
        w[i] = (float)i * 0.01f;
    struct tsrnn_tensor_desc t[7];
    for (size_t e = 0; e < table.entry_count; e++) {
        const struct tsrnn_param_entry *entry = &table.entries[e];
        t[e] = (struct tsrnn_tensor_desc){ .name = entry->name,
                                           .dtype = TSRNN_DTYPE_F32,
                                           .rank = entry->rank,
                                           .shape = { entry->shape[0], entry->shape[1] },
                                           .data = w + entry->offset };
    }
    const size_t n = table.entry_count;

    /* A good file loads every value. */
    const char *path = write_weights(dir, "good.safetensors", t, n);
    assert_int_equal(tsrnn_model_load_params(flat, &table, path), TSRNN_OK);
    assert_memory_equal(flat, w, table.total_count * sizeof(float));

    /* Missing tensor. */
    path = write_weights(dir, "missing.safetensors", t, n - 1);
    expect_load_error(&table, flat, path, "tensor \"V.bias\" is missing");

    /* Wrong shape: hidden 3 expected, file from a hidden-20 run. */
    struct tsrnn_tensor_desc bad[7];
    memcpy(bad, t, sizeof(bad));
    bad[1].shape[0] = 20;
    bad[1].shape[1] = 20;
    float big[400] = { 0 };
    bad[1].data = big;
    path = write_weights(dir, "shape.safetensors", bad, n);
    expect_load_error(&table, flat, path,
                      "\"rnn.weight_hh_l0\" has shape [20, 20]; this model "
                      "needs [3, 3]");

    /* Wrong dtype. */
    memcpy(bad, t, sizeof(bad));
    double wide[3] = { 0 };
    bad[2].dtype = TSRNN_DTYPE_F64;
    bad[2].data = wide;
    path = write_weights(dir, "dtype.safetensors", bad, n);
    expect_load_error(&table, flat, path, "\"rnn.bias_ih_l0\" is F64; tsrnn needs F32");

    /* A tensor the model does not have (a 2-layer file into a 1-layer model). */
    memcpy(bad, t, sizeof(bad));
    bad[n] = t[0];
    bad[n].name = "rnn.weight_ih_l1";
    path = write_weights(dir, "extra.safetensors", bad, n + 1);
    expect_load_error(&table, flat, path, "unexpected tensor \"rnn.weight_ih_l1\"");

    /* NaN weights. */
    memcpy(bad, t, sizeof(bad));
    float nan_bias[1] = { NAN };
    bad[n - 1].data = nan_bias;
    path = write_weights(dir, "nan.safetensors", bad, n);
    expect_load_error(&table, flat, path, "\"V.bias\" holds nan");

    /* Not a safetensors file at all. */
    path = tu_write(dir, "junk.safetensors", "rnn.weight_ih_l0 = 1\n");
    expect_load_error(&table, flat, path, "junk.safetensors");

    tu_rmtree(dir);
    free(dir);
}

static void test_cache_sizes_are_bounded(void **state)
{
    (void)state;
    struct tsrnn_model_dims dims = { TSRNN_MODEL_LSTM, 1, 65536, 64, 1, 0.0f, 1 };
    struct tsrnn_model m;
    assert_int_equal(tsrnn_model_init(&m, &cpu.base, &dims, 1048576, 1000000), TSRNN_ERR_USAGE);
    assert_non_null(strstr(tsrnn_last_error(), "reduce one of them"));
    tsrnn_model_finish(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blas_loads_on_first_product), /* first: see there */
        cmocka_unit_test(test_activations_match_libm),
        cmocka_unit_test(test_gemm_paths_agree),
        cmocka_unit_test(test_split_blas_products),
        cmocka_unit_test(test_packed_products_match_reference),
        cmocka_unit_test(test_packed_prefetch_moves_no_bit),
        cmocka_unit_test(test_packed_model_matches_loops),
        cmocka_unit_test(test_isa_levels_are_bit_identical),
        cmocka_unit_test(test_optimizer_ops_levels_are_bit_identical),
        cmocka_unit_test(test_small_rnn_levels_are_bit_identical),
        cmocka_unit_test(test_blocked_products_match_reference),
        cmocka_unit_test(test_threaded_recurrence_is_bit_identical),
        cmocka_unit_test(test_param_table_counts),
        cmocka_unit_test(test_init_is_pytorch_default),
        cmocka_unit_test(test_fixture_loss_and_gradients),
        cmocka_unit_test(test_fixture_adam_steps),
        cmocka_unit_test(test_gradients_finite_differences),
        cmocka_unit_test(test_dropout_between_layers_only),
        cmocka_unit_test(test_predict_carries_state),
        cmocka_unit_test(test_predict_batch_equals_one_at_a_time),
        cmocka_unit_test(test_load_params_checks_everything),
        cmocka_unit_test(test_cache_sizes_are_bounded),
    };
    return cmocka_run_group_tests(tests, cpu_setup, cpu_teardown);
}
