/* CPU compute primitives the model is written in: one row-major GEMM and the bias helpers
 * around it.
 *
 * tsrnn_cpu_gemm() has two implementations behind one entry point: plain loops (the
 * reference, obviously right, and fastest for the tiny matrices of small models) and
 * OpenBLAS cblas_sgemm (when built with it) for large ones. Both compute, per element,
 *     C = alpha * sum_k op(A)[i][k] * op(B)[k][j] + beta * C
 * in float32; they differ only in the order of the k-sum (so in the last bits).
 */
#ifndef TSRNN_COMPUTE_H
#define TSRNN_COMPUTE_H

#include <stdbool.h>
#include <stddef.h>

/* Hot loops are compiled twice, for AVX2 and for the x86-64 baseline, and the CPU picks at
 * load time (GCC target_clones, an ifunc). The loops are written so that the vector width
 * changes nothing but speed: elementwise operations, sums in a fixed order, and no FMA
 * (-ffp-contract=off), so both clones give the same bits. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define TSRNN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TSRNN_VECTOR_CLONES
#endif

enum tsrnn_gemm_path {
    TSRNN_GEMM_AUTO,  /* loops below the size where BLAS wins, BLAS above */
    TSRNN_GEMM_LOOPS, /* always the reference loops */
    TSRNN_GEMM_BLAS,  /* always BLAS (the loops when built without it) */
};

/* C (M, N) = alpha * op(A) op(B) + beta * C, row-major; op(A) is (M, K): A is (M, K) with
 * leading dimension lda, or (K, M) when trans_a; op(B) is (K, N): B is (K, N), or (N, K) when
 * trans_b. beta = 0 overwrites C (NaN in C does not propagate), beta = 1 accumulates. */
void tsrnn_cpu_gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                    const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                    size_t ldc);

/* C (M, N) = bias (N) in every row + A (M, K) B (K, N), row-major, nothing transposed: the
 * same bits as tsrnn_cpu_fill_rows() then tsrnn_cpu_gemm() with alpha = beta = 1, without the
 * separate pass over C (the per-step products of small layers). */
void tsrnn_cpu_gemm_bias(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                         size_t ldb, const float *bias, float *c, size_t ldc);

/* Chooses the GEMM implementation for this thread (tests compare the two). LOOPS also turns
 * off the packed products below. */
void tsrnn_cpu_set_gemm_path(enum tsrnn_gemm_path path);
enum tsrnn_gemm_path tsrnn_cpu_gemm_path(void);

/* --- products with a packed right-hand side ---------------------------------------------
 *
 * The recurrence multiplies T inputs in a row by the same matrix. Packed once into panels
 * of 16 columns ([panel][k][16 floats], the last panel zero-padded), it is streamed from
 * cache by every product, instead of being repacked inside BLAS for each step. With AVX2 and
 * FMA the product runs a 4 x 16 register-blocked kernel (fused multiply-adds, like BLAS);
 * elsewhere plain loops over the same layout. */

/* Whether the AVX2 + FMA kernel runs on this CPU. */
bool tsrnn_cpu_packed_kernel_available(void);

/* Floats a packed (K, N) matrix takes. */
size_t tsrnn_cpu_packed_count(size_t k, size_t n);

/* Packs B (K, N) (or, with trans_b, B stored as (N, K)) with leading dimension ldb. */
void tsrnn_cpu_pack(float *packed, const float *b, size_t ldb, size_t k, size_t n, bool trans_b);

/* C (M, N) += A (M, K) B with B packed by tsrnn_cpu_pack(); row-major A and C. */
void tsrnn_cpu_gemm_packed(size_t m, size_t n, size_t k, const float *a, size_t lda,
                           const float *packed, float *c, size_t ldc);

/* The threads of this process's compute: the parts tsrnn_cpu_parallel() splits work into,
 * the recurrence's and the large BLAS products' (by rows, each part single-threaded OpenBLAS,
 * whose own threads stay asleep). Call it before training, from the thread that trains. */
void tsrnn_cpu_set_thread_count(int thread_count);

/* The thread count set above (1 by default). */
int tsrnn_cpu_thread_count(void);

/* Runs fn(ctx, part, part_count) for part = 0 .. part_count-1 at once, part 0 on the calling
 * thread and the others on persistent helper threads, and returns when all are done.
 * part_count is at most tsrnn_cpu_thread_count() (more are run on the calling thread's
 * share). The parts must write disjoint memory. */
void tsrnn_cpu_parallel(void (*fn)(void *ctx, size_t part, size_t part_count), void *ctx,
                        size_t part_count);

/* rows (M, N): every row = bias (N). */
void tsrnn_cpu_fill_rows(float *rows, const float *bias, size_t m, size_t n);

/* bias_grad (N) += column sums of rows (M, N), whose rows are ld floats apart; each column
 * summed in row order. */
void tsrnn_cpu_add_column_sums(float *bias_grad, const float *rows, size_t m, size_t n, size_t ld);

#endif
