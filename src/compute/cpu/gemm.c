/* The CPU backend's GEMM entry points and reference loops (cpu.h): tsrnn_cpu_gemm() and
 * tsrnn_cpu_gemm_bias() route a product to tsrnn's blocked kernel (gemm_packed.c), to BLAS
 * (blas.c) or to the loops here; the bias and gradient helpers built on the loops' order
 * (fill_rows, column sums, the stepwise sums, the head's backward). The products on packed
 * panels are gemm_packed.c's. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#if TSRNN_CPU_X86_KERNELS
#include <immintrin.h>
#endif

void tsrnn_cpu_scale_rows(float *restrict c, size_t ldc, size_t m, size_t n, float beta)
{
    if (beta == 1.0f)
        return;
    if (beta == 0.0f && ldc == n) { /* one block: not a call to memset per short row */
        memset(c, 0, m * n * sizeof(*c));
        return;
    }
    for (size_t i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (beta == 0.0f)
            memset(row, 0, n * sizeof(*row));
        else
            for (size_t j = 0; j < n; j++)
                row[j] *= beta;
    }
}

/* The sum of eight partial sums, in the fixed order dot_rows4() also follows. */
static inline float combine_partials(const float partial[8])
{
    return ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
           ((partial[2] + partial[6]) + (partial[3] + partial[7]));
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
    float sum = combine_partials(partial);
    for (; kk < k; kk++)
        sum += a[kk] * b[kk];
    return sum;
}

/* Eight floats, as GCC's vector extension: one AVX register in the avx2 clone, two SSE
 * registers in the default one. Element-wise * and + round exactly as the scalar code. */
typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef float v4f __attribute__((vector_size(16), aligned(4)));
typedef float v16f __attribute__((vector_size(64), aligned(4)));

/* C[i0 + r][j0 .. j0+8) += alpha * sum_k a(i0 + r, k) * B[k][j0 .. j0+8) for r < 4, where
 * a(i, k) = a[i * a_row + k * a_col]: four accumulators that stay in registers over the whole
 * k loop. Four rows at once matter because one accumulator's additions form a chain: a single
 * row waits on the add latency at every k (the hidden-20 RNN's products were 63 % of its
 * step), four keep the units busy and share each load of B. */
#define GEMM_TILE_4(name, vec)                                                                     \
    static inline __attribute__((always_inline)) void name(                                        \
        float *c, size_t ldc, const float *cin, size_t ldcin, const float *restrict a,             \
        size_t a_row, size_t a_col, const float *restrict b, size_t ldb, size_t k, float alpha)    \
    {                                                                                              \
        vec c0 = *(const vec *)cin, c1 = *(const vec *)(cin + ldcin);                              \
        vec c2 = *(const vec *)(cin + 2 * ldcin), c3 = *(const vec *)(cin + 3 * ldcin);            \
        for (size_t kk = 0; kk < k; kk++) {                                                        \
            vec bv = *(const vec *)(b + kk * ldb);                                                 \
            const float *ak = a + kk * a_col;                                                      \
            c0 += (alpha * ak[0]) * bv;                                                            \
            c1 += (alpha * ak[a_row]) * bv;                                                        \
            c2 += (alpha * ak[2 * a_row]) * bv;                                                    \
            c3 += (alpha * ak[3 * a_row]) * bv;                                                    \
        }                                                                                          \
        *(vec *)c = c0;                                                                            \
        *(vec *)(c + ldc) = c1;                                                                    \
        *(vec *)(c + 2 * ldc) = c2;                                                                \
        *(vec *)(c + 3 * ldc) = c3;                                                                \
    }
GEMM_TILE_4(gemm_tile_4x8, v8f)
GEMM_TILE_4(gemm_tile_4x4, v4f)

/* 4 x 16: eight accumulators, two loads of B per k for four broadcasts of A. */
static inline __attribute__((always_inline)) void
gemm_tile_4x16(float *c, size_t ldc, const float *cin, size_t ldcin, const float *restrict a,
               size_t a_row, size_t a_col, const float *restrict b, size_t ldb, size_t k,
               float alpha)
{
    v8f c0 = *(const v8f *)cin, c1 = *(const v8f *)(cin + ldcin);
    v8f c2 = *(const v8f *)(cin + 2 * ldcin), c3 = *(const v8f *)(cin + 3 * ldcin);
    v8f d0 = *(const v8f *)(cin + 8), d1 = *(const v8f *)(cin + ldcin + 8);
    v8f d2 = *(const v8f *)(cin + 2 * ldcin + 8), d3 = *(const v8f *)(cin + 3 * ldcin + 8);
    for (size_t kk = 0; kk < k; kk++) {
        v8f b0 = *(const v8f *)(b + kk * ldb), b1 = *(const v8f *)(b + kk * ldb + 8);
        const float *ak = a + kk * a_col;
        float a0 = alpha * ak[0], a1 = alpha * ak[a_row];
        float a2 = alpha * ak[2 * a_row], a3 = alpha * ak[3 * a_row];
        c0 += a0 * b0, d0 += a0 * b1;
        c1 += a1 * b0, d1 += a1 * b1;
        c2 += a2 * b0, d2 += a2 * b1;
        c3 += a3 * b0, d3 += a3 * b1;
    }
    *(v8f *)c = c0, *(v8f *)(c + 8) = d0;
    *(v8f *)(c + ldc) = c1, *(v8f *)(c + ldc + 8) = d1;
    *(v8f *)(c + 2 * ldc) = c2, *(v8f *)(c + 2 * ldc + 8) = d2;
    *(v8f *)(c + 3 * ldc) = c3, *(v8f *)(c + 3 * ldc + 8) = d3;
}

/* 4 x 20, the whole width of a hidden-20 layer: the 4 x 16 tile and four columns more in
 * half-width accumulators, twelve in all, so that the last four columns share its loads of A
 * and need no loop of their own (whose one addition per k would wait on the last). */
static inline __attribute__((always_inline)) void
gemm_tile_4x20(float *c, size_t ldc, const float *cin, size_t ldcin, const float *restrict a,
               size_t a_row, size_t a_col, const float *restrict b, size_t ldb, size_t k,
               float alpha)
{
    v8f c0 = *(const v8f *)cin, c1 = *(const v8f *)(cin + ldcin);
    v8f c2 = *(const v8f *)(cin + 2 * ldcin), c3 = *(const v8f *)(cin + 3 * ldcin);
    v8f d0 = *(const v8f *)(cin + 8), d1 = *(const v8f *)(cin + ldcin + 8);
    v8f d2 = *(const v8f *)(cin + 2 * ldcin + 8), d3 = *(const v8f *)(cin + 3 * ldcin + 8);
    v4f e0 = *(const v4f *)(cin + 16), e1 = *(const v4f *)(cin + ldcin + 16);
    v4f e2 = *(const v4f *)(cin + 2 * ldcin + 16), e3 = *(const v4f *)(cin + 3 * ldcin + 16);
    for (size_t kk = 0; kk < k; kk++) {
        const float *bk = b + kk * ldb;
        v8f b0 = *(const v8f *)bk, b1 = *(const v8f *)(bk + 8);
        v4f b2 = *(const v4f *)(bk + 16);
        const float *ak = a + kk * a_col;
        float a0 = alpha * ak[0], a1 = alpha * ak[a_row];
        float a2 = alpha * ak[2 * a_row], a3 = alpha * ak[3 * a_row];
        c0 += a0 * b0, d0 += a0 * b1, e0 += a0 * b2;
        c1 += a1 * b0, d1 += a1 * b1, e1 += a1 * b2;
        c2 += a2 * b0, d2 += a2 * b1, e2 += a2 * b2;
        c3 += a3 * b0, d3 += a3 * b1, e3 += a3 * b2;
    }
    *(v8f *)c = c0, *(v8f *)(c + 8) = d0, *(v4f *)(c + 16) = e0;
    *(v8f *)(c + ldc) = c1, *(v8f *)(c + ldc + 8) = d1, *(v4f *)(c + ldc + 16) = e1;
    *(v8f *)(c + 2 * ldc) = c2, *(v8f *)(c + 2 * ldc + 8) = d2, *(v4f *)(c + 2 * ldc + 16) = e2;
    *(v8f *)(c + 3 * ldc) = c3, *(v8f *)(c + 3 * ldc + 8) = d3, *(v4f *)(c + 3 * ldc + 16) = e3;
}

/* 1 x 20: a single row over a hidden-20 layer's width, in one loop (the sums over a batch
 * of the weight gradients: one row, K = 16 .. 320, a chain of additions per accumulator). */
static inline __attribute__((always_inline)) void
gemm_tile_1x20(float *c, const float *cin, const float *restrict a, size_t a_col,
               const float *restrict b, size_t ldb, size_t k, float alpha)
{
    v8f c0 = *(const v8f *)cin, d0 = *(const v8f *)(cin + 8);
    v4f e0 = *(const v4f *)(cin + 16);
    for (size_t kk = 0; kk < k; kk++) {
        const float *bk = b + kk * ldb;
        float a0 = alpha * a[kk * a_col];
        c0 += a0 * *(const v8f *)bk, d0 += a0 * *(const v8f *)(bk + 8);
        e0 += a0 * *(const v4f *)(bk + 16);
    }
    *(v8f *)c = c0, *(v8f *)(c + 8) = d0, *(v4f *)(c + 16) = e0;
}

/* The same for R rows (1 to 4) by W columns (1 to 8), for the edges. The k-sum of every
 * element, here and above, runs in order k = 0, 1, ... with the same operations as the
 * plain triple loop, so the result does not depend on the blocking. */
static inline __attribute__((always_inline)) void
gemm_tile(float *c, size_t ldc, const float *cin, size_t ldcin, const float *restrict a,
          size_t a_row, size_t a_col, const float *restrict b, size_t ldb, size_t k, float alpha,
          size_t rows, size_t width)
{
    if (rows == 4 && width == 16) {
        gemm_tile_4x16(c, ldc, cin, ldcin, a, a_row, a_col, b, ldb, k, alpha);
        return;
    }
    if (rows == 4 && width == 8) {
        gemm_tile_4x8(c, ldc, cin, ldcin, a, a_row, a_col, b, ldb, k, alpha);
        return;
    }
    if (rows == 4 && width == 4) {
        gemm_tile_4x4(c, ldc, cin, ldcin, a, a_row, a_col, b, ldb, k, alpha);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        float acc[16];
        for (size_t u = 0; u < width; u++)
            acc[u] = cin[r * ldcin + u];
        for (size_t kk = 0; kk < k; kk++) {
            float av = alpha * a[r * a_row + kk * a_col];
            const float *brow = b + kk * ldb;
            for (size_t u = 0; u < width; u++)
                acc[u] += av * brow[u];
        }
        for (size_t u = 0; u < width; u++)
            c[r * ldc + u] = acc[u];
    }
}

/* Rows i .. i+R of C (R = 4 or 1) in column blocks of 16 (4 x 20 for the last 20 of 4 rows),
 * then 8, 4, 1. */
static inline __attribute__((always_inline)) void
gemm_rows(float *c, size_t ldc, const float *cin, size_t ldcin, const float *restrict a,
          size_t a_row, size_t a_col, const float *restrict b, size_t ldb, size_t n, size_t k,
          float alpha, size_t rows)
{
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (n - j == 20) {
            if (rows == 4)
                gemm_tile_4x20(c + j, ldc, cin + j, ldcin, a, a_row, a_col, b + j, ldb, k, alpha);
            else
                gemm_tile_1x20(c + j, cin + j, a, a_col, b + j, ldb, k, alpha);
            return;
        }
        gemm_tile(c + j, ldc, cin + j, ldcin, a, a_row, a_col, b + j, ldb, k, alpha, rows, 16);
    }
    for (; j + 8 <= n; j += 8)
        gemm_tile(c + j, ldc, cin + j, ldcin, a, a_row, a_col, b + j, ldb, k, alpha, rows, 8);
    for (; j + 4 <= n; j += 4)
        gemm_tile(c + j, ldc, cin + j, ldcin, a, a_row, a_col, b + j, ldb, k, alpha, rows, 4);
    for (; j < n; j++)
        gemm_tile(c + j, ldc, cin + j, ldcin, a, a_row, a_col, b + j, ldb, k, alpha, rows, 1);
}

/* Every row of C: tiles of 4 rows, then single rows. Inlined, so that a constant alpha is
 * folded into the tiles. */
static inline __attribute__((always_inline)) void
gemm_all_rows(float *c, size_t ldc, const float *cin, size_t ldcin, const float *restrict a,
              size_t a_row, size_t a_col, const float *restrict b, size_t ldb, size_t m, size_t n,
              size_t k, float alpha)
{
    size_t i = 0;
    for (; i + 4 <= m; i += 4)
        gemm_rows(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i * a_row, a_row, a_col, b, ldb, n,
                  k, alpha, 4);
    for (; i < m; i++)
        gemm_rows(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i * a_row, a_row, a_col, b, ldb, n,
                  k, alpha, 1);
}

/* (x0 + x1, x2 + x3, y0 + y1, y2 + y3): one level of dot()'s pairwise sums for two rows. */
static inline __attribute__((always_inline)) v4f add_pairs(v4f x, v4f y)
{
    return __builtin_shufflevector(x, y, 0, 2, 4, 6) + __builtin_shufflevector(x, y, 1, 3, 5, 7);
}

/* c[r * ldc] += alpha * dot(a + r * lda, b, k) for r < 4, with dot()'s operations in dot()'s
 * order for every row (the same bits), its partial sums reduced for four rows at once (a
 * head with one output: 320 dot products of 20 per step of the hidden-20 model). */
static inline __attribute__((always_inline)) void dot_rows4(float *c, size_t ldc,
                                                            const float *restrict a, size_t lda,
                                                            const float *restrict b, size_t k,
                                                            float alpha)
{
    v8f p0 = { 0 }, p1 = { 0 }, p2 = { 0 }, p3 = { 0 };
    size_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        v8f bv = *(const v8f *)(b + kk);
        p0 += *(const v8f *)(a + kk) * bv;
        p1 += *(const v8f *)(a + lda + kk) * bv;
        p2 += *(const v8f *)(a + 2 * lda + kk) * bv;
        p3 += *(const v8f *)(a + 3 * lda + kk) * bv;
    }
    /* Per row (partial[u] + partial[u + 4]), then ((s0 + s1) + (s2 + s3)), as dot(). */
    v4f s0 =
        __builtin_shufflevector(p0, p0, 0, 1, 2, 3) + __builtin_shufflevector(p0, p0, 4, 5, 6, 7);
    v4f s1 =
        __builtin_shufflevector(p1, p1, 0, 1, 2, 3) + __builtin_shufflevector(p1, p1, 4, 5, 6, 7);
    v4f s2 =
        __builtin_shufflevector(p2, p2, 0, 1, 2, 3) + __builtin_shufflevector(p2, p2, 4, 5, 6, 7);
    v4f s3 =
        __builtin_shufflevector(p3, p3, 0, 1, 2, 3) + __builtin_shufflevector(p3, p3, 4, 5, 6, 7);
    v4f sum = add_pairs(add_pairs(s0, s1), add_pairs(s2, s3));
    for (; kk < k; kk++)
        sum += (v4f){ a[kk], a[lda + kk], a[2 * lda + kk], a[3 * lda + kk] } * b[kk];
    for (size_t r = 0; r < 4; r++)
        c[r * ldc] += alpha * sum[r];
}

#if TSRNN_CPU_X86_KERNELS
/* --- transposed A on AVX-512: the weight gradients of small layers ---------------------------
 *
 * C (M, N) = cin + A^T B with N = 16q or 16q + 4 (a hidden-20 layer's dW_hh, (G*H, H), summed
 * over the window's T*B rows): rows of C in 16-column registers, A broadcast; the last 4
 * columns of 4 rows share one register, lane 4r + c holding C[i + r][16q + c], fed by A's 4
 * adjacent values of a k (A^T's row) each repeated 4 times and B's 4 values repeated 4 times.
 * Every element gets c = cin, then c += a * b for k = 0, 1, ... as in gemm_tile(): the same
 * bits, with all 16 lanes busy where 8-wide tiles leave the 4-wide tail's register half
 * empty. */

/* Rows i .. i+R of C (R = 8 or 4, a constant once inlined), columns [16 jb, 16 jb + 16) and,
 * for jb == 0 with a tail, the last 4 columns. */
TSRNN_TARGET_AVX512_KERNEL static inline __attribute__((always_inline)) void
tn_block(float *c, size_t ldc, const float *cin, size_t ldcin, const float *a, size_t lda,
         const float *b, size_t ldb, size_t n, size_t k, size_t jb, bool tail, size_t R)
{
    const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    size_t j0 = 16 * jb, jt = n / 16 * 16;
    __m512 acc[8], acc_t[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() };
    for (size_t r = 0; r < R; r++)
        acc[r] = _mm512_loadu_ps(cin + r * ldcin + j0);
    for (size_t g = 0; tail && g < R / 4; g++) {
        const float *row = cin + 4 * g * ldcin + jt;
        __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(row));
        v = _mm512_insertf32x4(v, _mm_loadu_ps(row + ldcin), 1);
        v = _mm512_insertf32x4(v, _mm_loadu_ps(row + 2 * ldcin), 2);
        acc_t[g] = _mm512_insertf32x4(v, _mm_loadu_ps(row + 3 * ldcin), 3);
    }
    for (size_t kk = 0; kk < k; kk++) {
        const float *ak = a + kk * lda, *bk = b + kk * ldb;
        __m512 bv = _mm512_loadu_ps(bk + j0);
        for (size_t r = 0; r < R; r++)
            acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(_mm512_set1_ps(ak[r]), bv));
        if (!tail)
            continue;
        __m512 bt = _mm512_broadcast_f32x4(_mm_loadu_ps(bk + jt));
        for (size_t g = 0; g < R / 4; g++) {
            __m512 at =
                _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_loadu_ps(ak + 4 * g)));
            acc_t[g] = _mm512_add_ps(acc_t[g], _mm512_mul_ps(at, bt));
        }
    }
    for (size_t r = 0; r < R; r++)
        _mm512_storeu_ps(c + r * ldc + j0, acc[r]);
    for (size_t g = 0; tail && g < R / 4; g++) {
        float *row = c + 4 * g * ldc + jt;
        _mm_storeu_ps(row, _mm512_castps512_ps128(acc_t[g]));
        _mm_storeu_ps(row + ldc, _mm512_extractf32x4_ps(acc_t[g], 1));
        _mm_storeu_ps(row + 2 * ldc, _mm512_extractf32x4_ps(acc_t[g], 2));
        _mm_storeu_ps(row + 3 * ldc, _mm512_extractf32x4_ps(acc_t[g], 3));
    }
}

/* Whether gemm_tn_avx512() takes C = cin + A^T B of this shape (alpha 1). */
static bool tn_avx512_takes(size_t m, size_t n, size_t k)
{
    return tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512 && m >= 4 && n >= 16 && k > 1 &&
           (n % 16 == 0 || n % 16 == 4);
}

/* Rows in 8s, then 4s; returns how many rows it did (the rest: single rows, the loops'). */
TSRNN_TARGET_AVX512_KERNEL static size_t gemm_tn_avx512(size_t m, size_t n, size_t k,
                                                        const float *a, size_t lda, const float *b,
                                                        size_t ldb, const float *cin, size_t ldcin,
                                                        float *c, size_t ldc)
{
    bool tail = n % 16 == 4;
    size_t i = 0;
    for (; i + 8 <= m; i += 8)
        for (size_t jb = 0; jb < n / 16; jb++)
            tn_block(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i, lda, b, ldb, n, k, jb,
                     tail && jb == 0, 8);
    for (; i + 4 <= m; i += 4)
        for (size_t jb = 0; jb < n / 16; jb++)
            tn_block(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i, lda, b, ldb, n, k, jb,
                     tail && jb == 0, 4);
    return i;
}
#endif

/* C = cin + alpha * op(A) B, B not transposed; cin is C (ldcin = ldc) or a bias row
 * (ldcin = 0). Tiles of 4 rows, then single rows. */
TSRNN_VECTOR_CLONES static void gemm_loops_nt(bool trans_a, size_t m, size_t n, size_t k,
                                              float alpha, const float *restrict a, size_t lda,
                                              const float *restrict b, size_t ldb, const float *cin,
                                              size_t ldcin, float *c, size_t ldc)
{
    /* a(i, kk) = a[i * a_row + kk * a_col] */
    size_t a_row = trans_a ? 1 : lda, a_col = trans_a ? lda : 1;
    if (k == 1) {
        /* One product per element (a univariate input projection, the head's backward): a
         * pass over C, which the tiles would make with a loop of one step each. */
        for (size_t i = 0; i < m; i++) {
            float av = alpha * a[i * a_row];
            for (size_t j = 0; j < n; j++)
                c[i * ldc + j] = cin[i * ldcin + j] + av * b[j];
        }
        return;
    }
#if TSRNN_CPU_X86_KERNELS
    if (trans_a && alpha == 1.0f && tn_avx512_takes(m, n, k)) {
        size_t done = gemm_tn_avx512(m, n, k, a, lda, b, ldb, cin, ldcin, c, ldc);
        a += done, c += done * ldc, cin += done * ldcin, m -= done;
    }
#endif
    /* The common case, with alpha a constant: 1 * a is a exactly, so the tiles broadcast A
     * straight from memory instead of scaling it first (a third fewer operations). */
    if (alpha == 1.0f)
        gemm_all_rows(c, ldc, cin, ldcin, a, a_row, a_col, b, ldb, m, n, k, 1.0f);
    else
        gemm_all_rows(c, ldc, cin, ldcin, a, a_row, a_col, b, ldb, m, n, k, alpha);
}

/* The reference loops. Without trans_b, C is done in tiles of 4 rows (then single rows) by
 * 20, 16, 8, 4 or 1 columns (gemm_loops_nt); with trans_b, each element is a dot product. */
TSRNN_VECTOR_CLONES void tsrnn_cpu_gemm_loops(bool trans_a, bool trans_b, size_t m, size_t n,
                                              size_t k, float alpha, const float *restrict a,
                                              size_t lda, const float *restrict b, size_t ldb,
                                              float beta, float *restrict c, size_t ldc)
{
    static const float zero_row[64];
    if (!trans_b && beta == 0.0f && n <= 64) { /* the tiles start from zeros, C is not read */
        gemm_loops_nt(trans_a, m, n, k, alpha, a, lda, b, ldb, zero_row, 0, c, ldc);
        return;
    }
    tsrnn_cpu_scale_rows(c, ldc, m, n, beta);
    if (!trans_b) {
        gemm_loops_nt(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc, c, ldc);
    } else if (!trans_a) {
        size_t i = 0;
        for (; i + 4 <= m; i += 4)
            for (size_t j = 0; j < n; j++)
                dot_rows4(c + i * ldc + j, ldc, a + i * lda, lda, b + j * ldb, k, alpha);
        for (; i < m; i++)
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

void tsrnn_cpu_gemm(const struct tsrnn_cpu *cpu, bool trans_a, bool trans_b, size_t m, size_t n,
                    size_t k, float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                    float beta, float *c, size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (tsrnn_cpu_blocked_takes(cpu, m, n, k, alpha)) {
        tsrnn_cpu_gemm_blocked(cpu, trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (k > 0 && tsrnn_cpu_blas_takes(cpu, m, n, k, lda, ldb, ldc)) {
        tsrnn_cpu_blas_gemm(cpu, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    tsrnn_cpu_gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool tsrnn_cpu_loops_take(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, size_t lda,
                          size_t ldb, size_t ldc)
{
    return !tsrnn_cpu_blocked_takes(cpu, m, n, k, 1.0f) &&
           !(k > 0 && tsrnn_cpu_blas_takes(cpu, m, n, k, lda, ldb, ldc));
}

/* c (M, N) = bias in every row + a[i] * b: the K = 1 case of gemm_loops_nt() with alpha 1 (so
 * the same bits: 1 * a[i] is a[i]), as an elementwise loop at every vector level (the input
 * projection of a univariate series, every step). */
TSRNN_CPU_BODY bias_outer_body(float *restrict c, size_t ldc, const float *restrict a, size_t lda,
                               const float *restrict b, const float *restrict bias, size_t m,
                               size_t n)
{
    for (size_t i = 0; i < m; i++) {
        float av = a[i * lda];
        float *restrict row = c + i * ldc;
        for (size_t j = 0; j < n; j++)
            row[j] = bias[j] + av * b[j];
    }
}

TSRNN_CPU_ISA_VARIANTS(bias_outer,
                       (float *restrict c, size_t ldc, const float *restrict a, size_t lda,
                        const float *restrict b, const float *restrict bias, size_t m, size_t n),
                       (c, ldc, a, lda, b, bias, m, n))

void tsrnn_cpu_gemm_bias(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, const float *a,
                         size_t lda, const float *b, size_t ldb, const float *bias, float *c,
                         size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (tsrnn_cpu_blocked_takes(cpu, m, n, k, 1.0f)) {
        for (size_t i = 0; i < m; i++)
            memcpy(c + i * ldc, bias, n * sizeof(*c));
        tsrnn_cpu_gemm_blocked(cpu, false, false, m, n, k, a, lda, b, ldb, 1.0f, c, ldc);
        return;
    }
    if (k > 0 && tsrnn_cpu_blas_takes(cpu, m, n, k, lda, ldb, ldc)) {
        for (size_t i = 0; i < m; i++)
            memcpy(c + i * ldc, bias, n * sizeof(*c));
        tsrnn_cpu_blas_gemm(cpu, false, false, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
        return;
    }
    if (k == 1) {
        bias_outer(c, ldc, a, lda, b, bias, m, n);
        return;
    }
    /* The tiles start from the bias instead of C: the bits of fill_rows + gemm, one pass less. */
    gemm_loops_nt(false, m, n, k, 1.0f, a, lda, b, ldb, bias, 0, c, ldc);
}

void tsrnn_cpu_fill_rows(float *rows, const float *bias, size_t m, size_t n)
{
    if (m == 0)
        return;
    /* One row, then copies of what is filled so far: log2(m) calls to memcpy, not m (the
     * rows of a small model are 80 bytes). */
    memcpy(rows, bias, n * sizeof(*rows));
    for (size_t done = 1; done < m;) {
        size_t count = done < m - done ? done : m - done;
        memcpy(rows + done * n, rows, count * n * sizeof(*rows));
        done += count;
    }
}

TSRNN_CPU_BODY column_sums_body(float *restrict bias_grad, const float *restrict rows, size_t m,
                                size_t n, size_t ld)
{
    if (n == 1) { /* the head's bias: eight partial sums, not one chain of m additions */
        float partial[8] = { 0 };
        size_t i = 0;
        for (; i + 8 <= m; i += 8)
            for (size_t u = 0; u < 8; u++)
                partial[u] += rows[(i + u) * ld];
        float sum = combine_partials(partial);
        for (; i < m; i++)
            sum += rows[i * ld];
        bias_grad[0] += sum;
        return;
    }
    /* Column blocks whose sums stay in registers down the rows (in order, as the plain loop
     * adds them), not a load and store of the sums for every row; 64 rows at a time, so that
     * the next column block finds them in cache. */
    for (size_t i0 = 0; i0 < m; i0 += 64) {
        size_t i1 = m - i0 < 64 ? m : i0 + 64, j = 0;
        for (; j + 16 <= n; j += 16) { /* one AVX-512 register, two AVX2 ones */
            v16f sum = *(const v16f *)(bias_grad + j);
            for (size_t i = i0; i < i1; i++)
                sum += *(const v16f *)(rows + i * ld + j);
            *(v16f *)(bias_grad + j) = sum;
        }
        for (; j + 8 <= n; j += 8) {
            v8f sum = *(const v8f *)(bias_grad + j);
            for (size_t i = i0; i < i1; i++)
                sum += *(const v8f *)(rows + i * ld + j);
            *(v8f *)(bias_grad + j) = sum;
        }
        for (; j + 4 <= n; j += 4) {
            v4f sum = *(const v4f *)(bias_grad + j);
            for (size_t i = i0; i < i1; i++)
                sum += *(const v4f *)(rows + i * ld + j);
            *(v4f *)(bias_grad + j) = sum;
        }
        for (; j < n; j++) {
            float sum = bias_grad[j];
            for (size_t i = i0; i < i1; i++)
                sum += rows[i * ld + j];
            bias_grad[j] = sum;
        }
    }
}

TSRNN_CPU_ISA_VARIANTS(column_sums,
                       (float *restrict bias_grad, const float *restrict rows, size_t m, size_t n,
                        size_t ld),
                       (bias_grad, rows, m, n, ld))

void tsrnn_cpu_add_column_sums(float *bias_grad, const float *rows, size_t m, size_t n, size_t ld)
{
    column_sums(bias_grad, rows, m, n, ld);
}

/* W columns from j of tsrnn_cpu_stepwise_sums_body(), V a vector of W floats (or float): the
 * chains of one column side by side down the rows, in registers. */
#define STEPWISE_COLUMNS(V)                                                                        \
    do {                                                                                           \
        V acc = *(const V *)(wk + j);                                                              \
        if (kk == 0) {                                                                             \
            V sum_a = *(const V *)(bias_a + j), sum_b = *(const V *)(bias_b + j);                  \
            for (size_t i = 0; i < m; i++) {                                                       \
                V da = *(const V *)(d_a + i * ld + j);                                             \
                acc += x[i * input_count] * da;                                                    \
                sum_a += da;                                                                       \
                sum_b += *(const V *)(d_b + i * ld + j);                                           \
            }                                                                                      \
            *(V *)(bias_a + j) = sum_a;                                                            \
            *(V *)(bias_b + j) = sum_b;                                                            \
        } else {                                                                                   \
            for (size_t i = 0; i < m; i++)                                                         \
                acc += x[i * input_count + kk] * *(const V *)(d_a + i * ld + j);                   \
        }                                                                                          \
        *(V *)(wk + j) = acc;                                                                      \
    } while (0)

TSRNN_CPU_BODY stepwise_sums_body(float *restrict w, size_t ldw, float *restrict bias_a,
                                  float *restrict bias_b, const float *restrict x,
                                  size_t input_count, const float *d_a, const float *d_b, size_t ld,
                                  size_t m, size_t n)
{
    for (size_t kk = 0; kk < input_count; kk++) {
        float *restrict wk = w + kk * ldw;
        size_t j = 0;
        for (; j + 16 <= n; j += 16)
            STEPWISE_COLUMNS(v16f);
        for (; j + 8 <= n; j += 8)
            STEPWISE_COLUMNS(v8f);
        for (; j + 4 <= n; j += 4)
            STEPWISE_COLUMNS(v4f);
        for (; j < n; j++)
            STEPWISE_COLUMNS(float);
    }
}

TSRNN_CPU_ISA_VARIANTS(stepwise_sums,
                       (float *restrict w, size_t ldw, float *restrict bias_a,
                        float *restrict bias_b, const float *restrict x, size_t input_count,
                        const float *d_a, const float *d_b, size_t ld, size_t m, size_t n),
                       (w, ldw, bias_a, bias_b, x, input_count, d_a, d_b, ld, m, n))

void tsrnn_cpu_stepwise_sums(const struct tsrnn_cpu *cpu, float *w, size_t ldw, float *bias_a,
                             float *bias_b, const float *x, size_t input_count, const float *d_a,
                             const float *d_b, size_t ld, size_t m, size_t n)
{
    /* One column: the column sums take eight partial sums (column_sums_body), not a chain. */
    if (n > 1 && tsrnn_cpu_loops_take(cpu, input_count, n, m, input_count, ld, ldw)) {
        stepwise_sums(w, ldw, bias_a, bias_b, x, input_count, d_a, d_b, ld, m, n);
        return;
    }
    tsrnn_cpu_gemm(cpu, true, false, input_count, n, m, 1.0f, x, input_count, d_a, ld, 1.0f, w,
                   ldw);
    tsrnn_cpu_add_column_sums(bias_a, d_a, m, n, ld);
    tsrnn_cpu_add_column_sums(bias_b, d_b, m, n, ld);
}

#if TSRNN_CPU_X86_KERNELS
/* tsrnn_cpu_head1_backward() on AVX-512: both products in one pass over the rows, up to 32
 * columns in two registers (the second masked). */
TSRNN_TARGET_AVX512_KERNEL static void head1_backward_avx512(size_t m, size_t n, const float *d,
                                                             const float *rows, const float *v,
                                                             float *g, float *out)
{
    __mmask16 lo = (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u);
    __mmask16 hi = (__mmask16)(n > 16 ? (1u << (n - 16)) - 1u : 0u);
    __m512 g0 = _mm512_maskz_loadu_ps(lo, g), g1 = _mm512_maskz_loadu_ps(hi, g + 16);
    __m512 v0 = _mm512_maskz_loadu_ps(lo, v), v1 = _mm512_maskz_loadu_ps(hi, v + 16);
    __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    for (size_t i = 0; i < m; i++) {
        __m512 di = _mm512_set1_ps(d[i]), av = _mm512_mul_ps(one, di);
        const float *row = rows + i * n;
        g0 = _mm512_add_ps(g0, _mm512_mul_ps(di, _mm512_maskz_loadu_ps(lo, row)));
        g1 = _mm512_add_ps(g1, _mm512_mul_ps(di, _mm512_maskz_loadu_ps(hi, row + 16)));
        _mm512_mask_storeu_ps(out + i * n, lo, _mm512_add_ps(zero, _mm512_mul_ps(av, v0)));
        _mm512_mask_storeu_ps(out + i * n + 16, hi, _mm512_add_ps(zero, _mm512_mul_ps(av, v1)));
    }
    _mm512_mask_storeu_ps(g, lo, g0);
    _mm512_mask_storeu_ps(g + 16, hi, g1);
}
#endif

bool tsrnn_cpu_head1_backward(const struct tsrnn_cpu *cpu, size_t m, size_t n, const float *d,
                              const float *rows, const float *v, float *g, float *out)
{
#if TSRNN_CPU_X86_KERNELS
    if (tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512 && n <= 32 &&
        tsrnn_cpu_loops_take(cpu, 1, n, m, 1, n, n) &&
        tsrnn_cpu_loops_take(cpu, m, n, 1, 1, n, n)) {
        head1_backward_avx512(m, n, d, rows, v, g, out);
        return true;
    }
#endif
    (void)cpu, (void)m, (void)n, (void)d, (void)rows, (void)v, (void)g, (void)out;
    return false;
}
