/* CPU compute backend: the reference GEMM loops, the OpenBLAS path, and bias helpers
 * (include/tsrnn/compute.h). The only file that knows whether BLAS is there. */
#include <limits.h>
#include <string.h>

#include "tsrnn/compute.h"
#include "tsrnn_build.h"

#if TSRNN_HAVE_BLAS
#include <cblas.h>
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
        if (beta == 0.0f)
            scale_rows(c, ldc, m, n, 0.0f); /* BLAS may read C even when beta is 0 */
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
