/* CPU compute backend: the reference GEMM loops, the OpenBLAS path, and bias helpers
 * (include/tsrnn/compute.h). The only file that knows whether BLAS is there. */
#include <limits.h>
#include <string.h>

#include "tsrnn/compute.h"
#include "tsrnn_build.h"

#if TSRNN_HAVE_BLAS
#include <cblas.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PACKED_KERNEL_X86 1
#else
#define PACKED_KERNEL_X86 0
#endif

/* Below this many multiply-adds a call into BLAS costs more than the loops: the recurrent
 * step of a hidden-20 RNN (16 x 20 x 20) stays in the loops, an LSTM-256 step goes to BLAS.
 * So does a short inner dimension (the input projection of a univariate series, K = 1):
 * that product is a pass over memory, which the loops make in one go. */
#define BLAS_MIN_MACS (64 * 64 * 64)
#define BLAS_MIN_K    16

static _Thread_local enum tsrnn_gemm_path gemm_path = TSRNN_GEMM_AUTO;

void tsrnn_cpu_set_gemm_path(enum tsrnn_gemm_path path)
{
    gemm_path = path;
}

enum tsrnn_gemm_path tsrnn_cpu_gemm_path(void)
{
    return gemm_path;
}

void tsrnn_cpu_set_thread_count(int thread_count)
{
#if TSRNN_HAVE_BLAS
    openblas_set_num_threads(thread_count);
#else
    (void)thread_count;
#endif
}

/* C = beta * C, with beta = 0 meaning "overwrite" as in BLAS. */
static void scale_rows(float *restrict c, size_t ldc, size_t m, size_t n, float beta)
{
    if (beta == 1.0f)
        return;
    for (size_t i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (beta == 0.0f)
            memset(row, 0, n * sizeof(*row));
        else
            for (size_t j = 0; j < n; j++)
                row[j] *= beta;
    }
}

/* Dot product with eight independent partial sums: a fixed summation order the compiler can
 * keep in vector registers. */
static float dot(const float *restrict a, const float *restrict b, size_t k)
{
    float partial[8] = { 0 };
    size_t kk = 0;
    for (; kk + 8 <= k; kk += 8)
        for (size_t u = 0; u < 8; u++)
            partial[u] += a[kk + u] * b[kk + u];
    float sum = ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
                ((partial[2] + partial[6]) + (partial[3] + partial[7]));
    for (; kk < k; kk++)
        sum += a[kk] * b[kk];
    return sum;
}

/* C[i][j0 .. j0+W) += alpha * sum_k a(k) * B[k][j0 .. j0+W): W accumulators that stay in
 * registers over the whole k loop (a(k) is A[i][k], or A[k][i] when trans_a). The k-sum of
 * every element runs in order k = 0, 1, ..., as in the plain triple loop. Called with a
 * constant W (8, 4 or 1), which the compiler turns into one vector width each. */
static inline void gemm_block(float *restrict c, const float *restrict a, size_t a_stride,
                              const float *restrict b, size_t ldb, size_t k, float alpha,
                              size_t width)
{
    float acc[8];
    for (size_t u = 0; u < width; u++)
        acc[u] = c[u];
    for (size_t kk = 0; kk < k; kk++) {
        float av = alpha * a[kk * a_stride];
        const float *brow = b + kk * ldb;
        for (size_t u = 0; u < width; u++)
            acc[u] += av * brow[u];
    }
    for (size_t u = 0; u < width; u++)
        c[u] = acc[u];
}

/* The reference loops. Without trans_b, each row of C is done in blocks of 8, then 4, then 1
 * columns (gemm_block); with trans_b, each element is a dot product. */
TSRNN_VECTOR_CLONES static void gemm_loops(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                                           float alpha, const float *restrict a, size_t lda,
                                           const float *restrict b, size_t ldb, float beta,
                                           float *restrict c, size_t ldc)
{
    scale_rows(c, ldc, m, n, beta);
    /* a(i, kk) = a[i * a_row + kk * a_col] */
    size_t a_row = trans_a ? 1 : lda, a_col = trans_a ? lda : 1;
    if (!trans_b) {
        for (size_t i = 0; i < m; i++) {
            float *crow = c + i * ldc;
            const float *arow = a + i * a_row;
            size_t j = 0;
            for (; j + 8 <= n; j += 8)
                gemm_block(crow + j, arow, a_col, b + j, ldb, k, alpha, 8);
            for (; j + 4 <= n; j += 4)
                gemm_block(crow + j, arow, a_col, b + j, ldb, k, alpha, 4);
            for (; j < n; j++)
                gemm_block(crow + j, arow, a_col, b + j, ldb, k, alpha, 1);
        }
    } else if (!trans_a) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                c[i * ldc + j] += alpha * dot(a + i * lda, b + j * ldb, k);
    } else {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                float sum = 0.0f;
                for (size_t kk = 0; kk < k; kk++)
                    sum += a[kk * lda + i] * b[j * ldb + kk];
                c[i * ldc + j] += alpha * sum;
            }
    }
}

void tsrnn_cpu_gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                    const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                    size_t ldc)
{
    if (m == 0 || n == 0)
        return;
#if TSRNN_HAVE_BLAS
    bool big = m * n * k >= BLAS_MIN_MACS && k >= BLAS_MIN_K;
    bool fits_int = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
                    ldb <= INT_MAX && ldc <= INT_MAX;
    if (k > 0 && fits_int &&
        (gemm_path == TSRNN_GEMM_BLAS || (gemm_path == TSRNN_GEMM_AUTO && big))) {
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                    b, (int)ldb, beta, c, (int)ldc);
        return;
    }
#endif
    gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

TSRNN_VECTOR_CLONES void tsrnn_cpu_fill_rows(float *rows, const float *bias, size_t m, size_t n)
{
    for (size_t i = 0; i < m; i++)
        memcpy(rows + i * n, bias, n * sizeof(*rows));
}

TSRNN_VECTOR_CLONES void tsrnn_cpu_add_column_sums(float *bias_grad, const float *rows, size_t m,
                                                   size_t n)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            bias_grad[j] += rows[i * n + j];
}

/* --- packed right-hand side ------------------------------------------------------------- */

#define PANEL_COLS 16

size_t tsrnn_cpu_packed_count(size_t k, size_t n)
{
    return (n + PANEL_COLS - 1) / PANEL_COLS * PANEL_COLS * k;
}

void tsrnn_cpu_pack(float *packed, const float *b, size_t ldb, size_t k, size_t n, bool trans_b)
{
    size_t panel_count = (n + PANEL_COLS - 1) / PANEL_COLS;
    for (size_t p = 0; p < panel_count; p++)
        for (size_t kk = 0; kk < k; kk++) {
            float *dst = packed + (p * k + kk) * PANEL_COLS;
            for (size_t u = 0; u < PANEL_COLS; u++) {
                size_t j = p * PANEL_COLS + u;
                dst[u] = j >= n ? 0.0f : trans_b ? b[j * ldb + kk] : b[kk * ldb + j];
            }
        }
}

/* C[r][0 .. cols) += sum_k A[r][k] panel[k][0 .. cols) for `rows` rows: the portable form. */
static void panel_loops(float *c, size_t ldc, const float *a, size_t lda, const float *panel,
                        size_t k, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        float acc[PANEL_COLS] = { 0 };
        for (size_t kk = 0; kk < k; kk++) {
            float av = a[r * lda + kk];
            for (size_t u = 0; u < PANEL_COLS; u++)
                acc[u] += av * panel[kk * PANEL_COLS + u];
        }
        for (size_t u = 0; u < cols; u++)
            c[r * ldc + u] += acc[u];
    }
}

#if PACKED_KERNEL_X86
bool tsrnn_cpu_packed_kernel_available(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* Four rows of C times one panel: 8 accumulators of 8 floats stay in registers for the whole
 * k loop; each step loads one panel row (two vectors) and broadcasts four values of A. */
__attribute__((target("avx2,fma"))) static void panel_kernel4(float *c, size_t ldc, const float *a,
                                                              size_t lda, const float *panel,
                                                              size_t k, size_t cols)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
    __m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
    for (size_t kk = 0; kk < k; kk++) {
        __m256 b0 = _mm256_loadu_ps(panel + kk * PANEL_COLS);
        __m256 b1 = _mm256_loadu_ps(panel + kk * PANEL_COLS + 8);
        __m256 x = _mm256_broadcast_ss(a0 + kk);
        c00 = _mm256_fmadd_ps(x, b0, c00);
        c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a1 + kk);
        c10 = _mm256_fmadd_ps(x, b0, c10);
        c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a2 + kk);
        c20 = _mm256_fmadd_ps(x, b0, c20);
        c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a3 + kk);
        c30 = _mm256_fmadd_ps(x, b0, c30);
        c31 = _mm256_fmadd_ps(x, b1, c31);
    }
    __m256 acc[4][2] = { { c00, c01 }, { c10, c11 }, { c20, c21 }, { c30, c31 } };
    for (size_t r = 0; r < 4; r++) {
        float *cr = c + r * ldc;
        if (cols == PANEL_COLS) {
            _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), acc[r][0]));
            _mm256_storeu_ps(cr + 8, _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[r][1]));
        } else {
            float tmp[PANEL_COLS];
            _mm256_storeu_ps(tmp, acc[r][0]);
            _mm256_storeu_ps(tmp + 8, acc[r][1]);
            for (size_t u = 0; u < cols; u++)
                cr[u] += tmp[u];
        }
    }
}
#else
bool tsrnn_cpu_packed_kernel_available(void)
{
    return false;
}
#endif

void tsrnn_cpu_gemm_packed(size_t m, size_t n, size_t k, const float *a, size_t lda,
                           const float *packed, float *c, size_t ldc)
{
    bool kernel = gemm_path != TSRNN_GEMM_LOOPS && tsrnn_cpu_packed_kernel_available();
    size_t panel_count = (n + PANEL_COLS - 1) / PANEL_COLS;
    for (size_t p = 0; p < panel_count; p++) {
        const float *panel = packed + p * k * PANEL_COLS;
        size_t cols = n - p * PANEL_COLS < PANEL_COLS ? n - p * PANEL_COLS : PANEL_COLS;
        size_t i = 0;
#if PACKED_KERNEL_X86
        if (kernel)
            for (; i + 4 <= m; i += 4)
                panel_kernel4(c + i * ldc + p * PANEL_COLS, ldc, a + i * lda, lda, panel, k, cols);
#else
        (void)kernel;
#endif
        panel_loops(c + i * ldc + p * PANEL_COLS, ldc, a + i * lda, lda, panel, k, m - i, cols);
    }
}
