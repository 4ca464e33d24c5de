/* The CPU compute backend, private to src/compute/cpu/ (and the tests and benchmarks that
 * check its kernels): its context, the thread pool, the GEMM it is written in, the cells.
 * Its files: backend.c (the table, memory, the optimizers' elementwise updates), model.c (the
 * workspace, the layers, the head and the losses), rnn.c / lstm.c / gru.c (the cells),
 * gemm.c (the products), blas.c / noblas.c (OpenBLAS, loaded when first needed), isa.c (the
 * vector level), pool.c (the helper threads).
 *
 * tsrnn_cpu_gemm() is one entry point for the reference loops, tsrnn's own blocked AVX-512
 * kernels and OpenBLAS's cblas_sgemm (below, "GEMM"). All compute, per element,
 *     C = alpha * sum_k op(A)[i][k] * op(B)[k][j] + beta * C
 * in float32; they differ only in the order of the k-sum (so in the last bits).
 */
#ifndef TSRNN_COMPUTE_CPU_H
#define TSRNN_COMPUTE_CPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../backend.h"

/* Hot loops are compiled twice, for AVX2 and for the x86-64 baseline, and the CPU picks at
 * load time (GCC target_clones, an ifunc). The loops are written so that the vector width
 * changes nothing but speed: elementwise operations, sums in a fixed order, and no FMA
 * (-ffp-contract=off), so both clones give the same bits. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define TSRNN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TSRNN_VECTOR_CLONES
#endif

/* The widest vector instructions tsrnn's own kernels use: chosen once per process from CPUID
 * (tsrnn_cpu_isa_detect), capped by the environment variable TSRNN_CPU_ISA = avx512 | avx2 |
 * baseline (to compare the paths on one machine; the tests switch it with
 * tsrnn_cpu_set_isa). AVX512 means avx512f/bw/dq/vl; AVX2 means avx2 + fma. */
enum tsrnn_cpu_isa {
    TSRNN_CPU_ISA_BASELINE, /* x86-64 SSE2 (or whatever the compiler targets elsewhere) */
    TSRNN_CPU_ISA_AVX2,
    TSRNN_CPU_ISA_AVX512,
};

/* The level in use (tsrnn_cpu_init sets it from tsrnn_cpu_isa_detect). */
extern enum tsrnn_cpu_isa tsrnn_cpu_isa;

/* What this CPU supports, capped by TSRNN_CPU_ISA when that is set (tsrnn_cpu_init refuses
 * a value it does not know). */
enum tsrnn_cpu_isa tsrnn_cpu_isa_detect(void);

/* Sets the level the kernels use: at most what the CPU supports (higher requests are
 * lowered). For tests and benchmarks; call it between operations. Returns the level set. */
enum tsrnn_cpu_isa tsrnn_cpu_set_isa(enum tsrnn_cpu_isa isa);

/* "AVX-512", "AVX2", "baseline". */
const char *tsrnn_cpu_isa_name(enum tsrnn_cpu_isa isa);

/* Elementwise loops compiled once per level and chosen by tsrnn_cpu_isa at each call (the
 * cells, Adam, the bias sums): TSRNN_CPU_ISA_VARIANTS(name, (params), (args)) defines
 * `static void name(params)` calling `name_body(args)` -- a static inline function holding the
 * loop -- compiled for AVX-512 (512-bit vectors), AVX2 and the baseline. The loops are written
 * so that the vector width changes nothing but speed (elementwise operations, sums in a fixed
 * order, no FMA: -ffp-contract=off), so every variant gives the same bits. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define TSRNN_TARGET_AVX512                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512")))
#define TSRNN_TARGET_AVX2 __attribute__((target("avx2")))
#define TSRNN_CPU_ISA_VARIANTS(name, params, args)                                                 \
    TSRNN_TARGET_AVX512 static void name##_avx512 params                                           \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    TSRNN_TARGET_AVX2 static void name##_avx2 params                                               \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    static void name##_baseline params                                                             \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    static void name params                                                                        \
    {                                                                                              \
        if (tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512)                                                 \
            name##_avx512 args;                                                                    \
        else if (tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX2)                                              \
            name##_avx2 args;                                                                      \
        else                                                                                       \
            name##_baseline args;                                                                  \
    }
#else
#define TSRNN_CPU_ISA_VARIANTS(name, params, args)                                                 \
    static void name params                                                                        \
    {                                                                                              \
        name##_body args;                                                                          \
    }
#endif
#define TSRNN_CPU_BODY static inline __attribute__((always_inline)) void

enum tsrnn_gemm_path {
    TSRNN_GEMM_AUTO,  /* loops below the size where BLAS wins, BLAS above (with AVX-512
                         kernels tsrnn's blocked GEMM instead: tsrnn_cpu_own_products) */
    TSRNN_GEMM_LOOPS, /* always the reference loops (and no packed products) */
    TSRNN_GEMM_BLAS,  /* always BLAS (the loops when built without it) */
};

/* Helper threads, started when the context asks for more than one and kept until it is
 * destroyed: a job is one call of tsrnn_cpu_parallel(), run by the caller (part 0) and helper
 * i (part i + 1). A few jobs per training step (each layer's recurrence, forward and
 * backward), so a condition variable's wake-up costs nothing that matters. */
#define TSRNN_CPU_MAX_HELPERS 63

struct tsrnn_cpu_pool {
    pthread_mutex_t lock;
    pthread_cond_t start, done;
    pthread_t threads[TSRNN_CPU_MAX_HELPERS];
    size_t helper_count;
    bool stopping;       /* destroy: helpers leave their loop */
    uint64_t generation; /* one per job */
    void (*fn)(void *arg, size_t part, size_t part_count);
    void *arg;
    size_t part_count;
    size_t helped;  /* parts 1 .. helped run on helpers, the rest on the caller */
    size_t pending; /* helpers still running the current job */
};

/* The CPU backend's context: what used to be process-wide (the threads, the GEMM path). */
struct tsrnn_cpu {
    struct tsrnn_compute base;
    /* Which GEMM implementation the kernels use; tests compare them. LOOPS also turns off
     * the packed products. Set it between operations, not during one. */
    enum tsrnn_gemm_path gemm_path;
    int thread_count; /* the parts tsrnn_cpu_parallel() splits work into */
    /* Packing space of tsrnn_cpu_gemm_blocked(), one per part, allocated by the first large
     * product (freed by tsrnn_cpu_finish). */
    float *blocked_scratch[TSRNN_CPU_MAX_HELPERS + 1];
    size_t blocked_scratch_floats[TSRNN_CPU_MAX_HELPERS + 1]; /* each one's size */
    struct tsrnn_cpu_pool pool;
};

/* Set while this thread runs a part of tsrnn_cpu_parallel(): products do not split again. */
extern _Thread_local bool tsrnn_cpu_in_job;
/* This thread's slot in per-part arrays of the context inside a job: 0 for the thread that
 * drives it, i + 1 for helper i (which always runs part i + 1). */
extern _Thread_local size_t tsrnn_cpu_thread_slot;

/* A CPU context outside the backend table, for the tests and benchmarks of the kernels
 * (tsrnn_compute_create() makes the same through the table). */
enum tsrnn_status tsrnn_cpu_init(struct tsrnn_cpu *cpu, int thread_count);
void tsrnn_cpu_finish(struct tsrnn_cpu *cpu);

/* Changes the thread count (>= 1; helpers that cannot start leave their parts to the
 * caller). Call it between operations, from the thread that drives the context. */
void tsrnn_cpu_set_thread_count(struct tsrnn_cpu *cpu, int thread_count);

/* Runs fn(arg, part, part_count) for part = 0 .. part_count-1 at once, part 0 on the calling
 * thread and the others on the context's helper threads, and returns when all are done.
 * part_count is at most cpu->thread_count (more are run on the calling thread's share). The
 * parts must write disjoint memory. Inside a part, products do not split again. */
void tsrnn_cpu_parallel(struct tsrnn_cpu *cpu,
                        void (*fn)(void *arg, size_t part, size_t part_count), void *arg,
                        size_t part_count);

/* The products' intrinsic kernels (AVX2, AVX-512: gemm.c, gemm_packed.c), compiled on
 * x86-64 by GCC and clang and chosen at each call by tsrnn_cpu_isa. */
#if defined(__x86_64__) && defined(__GNUC__)
#define TSRNN_CPU_X86_KERNELS      1
#define TSRNN_TARGET_AVX512_KERNEL __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define TSRNN_CPU_X86_KERNELS 0
#endif

/* --- GEMM --------------------------------------------------------------------------------
 *
 * tsrnn_cpu_gemm() has three implementations behind one entry point, chosen by the
 * context's gemm_path and the vector level: plain loops (the reference, obviously right, and
 * fastest for the tiny matrices of small models), tsrnn's blocked kernels on packed A and B
 * (AVX-512) and OpenBLAS cblas_sgemm (blas.c, when built with it) for large ones, split by
 * rows among the context's threads. All compute, per element,
 *     C = alpha * sum_k op(A)[i][k] * op(B)[k][j] + beta * C
 * in float32; they differ only in the order of the k-sum (so in the last bits). */

/* C (M, N) = alpha * op(A) op(B) + beta * C, row-major; op(A) is (M, K): A is (M, K) with
 * leading dimension lda, or (K, M) when trans_a; op(B) is (K, N): B is (K, N), or (N, K) when
 * trans_b. beta = 0 overwrites C (NaN in C does not propagate), beta = 1 accumulates. */
void tsrnn_cpu_gemm(const struct tsrnn_cpu *cpu, bool trans_a, bool trans_b, size_t m, size_t n,
                    size_t k, float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                    float beta, float *c, size_t ldc);

/* C (M, N) = bias (N) in every row + A (M, K) B (K, N), row-major, nothing transposed: the
 * same bits as tsrnn_cpu_fill_rows() then tsrnn_cpu_gemm() with alpha = beta = 1, without the
 * separate pass over C (the per-step products of small layers). */
void tsrnn_cpu_gemm_bias(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, const float *a,
                         size_t lda, const float *b, size_t ldb, const float *bias, float *c,
                         size_t ldc);

/* Whether the context's products all run on tsrnn's own kernels, none on BLAS: the AUTO path
 * with AVX-512 kernels. Then the bits of a training do not depend on which kernels OpenBLAS
 * picked (CPUID, OPENBLAS_CORETYPE), so not on the launcher either (gemm.c). */
static inline bool tsrnn_cpu_own_products(const struct tsrnn_cpu *cpu)
{
    return cpu->gemm_path == TSRNN_GEMM_AUTO && tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512;
}

/* The BLAS path (blas.c with OpenBLAS, noblas.c without): whether the context's path sends a
 * product of this size to BLAS (loading OpenBLAS the first time it does; the loops take it
 * when OpenBLAS cannot be loaded), and the product itself (as tsrnn_cpu_gemm()). blas_init,
 * called when a context is created, makes sure OpenBLAS starts no threads of its own when it
 * loads (tsrnn splits products itself).
 *   tsrnn_cpu_blas_load: loads OpenBLAS once (later calls return the first answer): whether
 *     it is there (false without OpenBLAS in the build);
 *   tsrnn_cpu_blas_load_error: after a failed load, why (the library, what to install); NULL
 *     when it loads or the build has none;
 *   tsrnn_cpu_blas_loaded: whether this process has loaded it, without loading it. */
void tsrnn_cpu_blas_init(void);
bool tsrnn_cpu_blas_load(void);
const char *tsrnn_cpu_blas_load_error(void);
bool tsrnn_cpu_blas_loaded(void);
bool tsrnn_cpu_blas_takes(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, size_t lda,
                          size_t ldb, size_t ldc);
void tsrnn_cpu_blas_gemm(const struct tsrnn_cpu *cpu, bool trans_a, bool trans_b, size_t m,
                         size_t n, size_t k, float alpha, const float *a, size_t lda,
                         const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* tsrnn's own large products, with AVX-512 kernels (in the AUTO path, where BLAS would take
 * them otherwise): whether this one goes there (alpha must be 1), and the product itself
 * (C = op(A) op(B) + beta C, as tsrnn_cpu_gemm), split by rows of C among the threads
 * (inside a part of a job: unsplit, on that thread's scratch). */
bool tsrnn_cpu_blocked_takes(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k,
                             float alpha);
void tsrnn_cpu_gemm_blocked(const struct tsrnn_cpu *cpu, bool trans_a, bool trans_b, size_t m,
                            size_t n, size_t k, const float *a, size_t lda, const float *b,
                            size_t ldb, float beta, float *c, size_t ldc);

/* The reference loops behind tsrnn_cpu_gemm() (gemm.c), whatever the context's path: the
 * same arguments, and the bits of tsrnn_cpu_gemm() where it takes the loops; and C = beta C
 * (beta 0 overwrites, as in BLAS). For the blocked products where their kernel cannot run. */
void tsrnn_cpu_gemm_loops(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                          const float *a, size_t lda, const float *b, size_t ldb, float beta,
                          float *c, size_t ldc);
void tsrnn_cpu_scale_rows(float *c, size_t ldc, size_t m, size_t n, float beta);

/* What the BLAS of this process runs (blas.c, which loads OpenBLAS to ask; noblas.c, or
 * OpenBLAS not loadable: no BLAS, level baseline, names NULL). OpenBLAS built for many CPUs
 * picks its kernels by CPUID when it loads, or by the environment variable OPENBLAS_CORETYPE;
 * a release older than the CPU falls back to generic SSE kernels (OpenBLAS 0.3.21 calls an
 * Intel family 6 model 207 "Prescott").
 *   tsrnn_cpu_blas_core: OpenBLAS's core name ("SkylakeX", "Haswell", "Prescott", ...);
 *   tsrnn_cpu_blas_isa: the vector level of that core's kernels;
 *   tsrnn_cpu_blas_coretype_hint: the OPENBLAS_CORETYPE that would give this CPU's level
 *     ("SkylakeX" on AVX-512, "Haswell" on AVX2 + FMA), or NULL when BLAS already runs it;
 *   tsrnn_cpu_blas_describe: one line, "OpenBLAS 0.3.21, core SkylakeX (OPENBLAS_CORETYPE)",
 *     or "OpenBLAS (not loaded: why)". unused_why: the caller sends no product to BLAS, and
 *     says why; then OpenBLAS is not loaded to be described ("OpenBLAS (not loaded:
 *     unused_why)"; if loaded already, the line ends ", unused"). NULL: loads it. */
const char *tsrnn_cpu_blas_core(void);
enum tsrnn_cpu_isa tsrnn_cpu_blas_isa(void);
const char *tsrnn_cpu_blas_coretype_hint(void);
const char *tsrnn_cpu_blas_describe(const char *unused_why);

/* Whether tsrnn_cpu_gemm() / tsrnn_cpu_gemm_bias() run this product (alpha 1) in the
 * reference loops, not in the blocked GEMM or BLAS: then kernels that keep the loops'
 * per-element order give their bits. */
bool tsrnn_cpu_loops_take(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, size_t lda,
                          size_t ldb, size_t ldc);

/* The level this CPU supports (CPUID), before TSRNN_CPU_ISA caps it. */
enum tsrnn_cpu_isa tsrnn_cpu_isa_supported(void);

/* rows (M, N): every row = bias (N). */
void tsrnn_cpu_fill_rows(float *rows, const float *bias, size_t m, size_t n);

/* bias_grad (N) += column sums of rows (M, N), whose rows are ld floats apart; each column
 * summed in row order. */
void tsrnn_cpu_add_column_sums(float *bias_grad, const float *rows, size_t m, size_t n, size_t ld);

/* The per-step sums of a layer with few inputs, over rows (M) of one step's gradients d_a, d_b
 * (M, N) with leading dimension ld (d_b may alias d_a):
 *     w (I, N) += x^T d_a       as tsrnn_cpu_gemm(trans_a) with alpha = beta = 1, x (M, I);
 *     bias_a (N) += column sums of d_a, bias_b (N) += column sums of d_b
 * with each element's operations and order of those calls (the same bits), in one pass. */
void tsrnn_cpu_stepwise_sums(const struct tsrnn_cpu *cpu, float *w, size_t ldw, float *bias_a,
                             float *bias_b, const float *x, size_t input_count, const float *d_a,
                             const float *d_b, size_t ld, size_t m, size_t n);

/* The backward of a head with one output over M rows of N <= 32 units (AVX-512; returns
 * false, doing nothing, elsewhere or where the loops would not take the products):
 *     g (N) += d^T rows      as tsrnn_cpu_gemm(trans_a) (1, N, K = M), beta 1: a chain per
 *                            column down the rows;
 *     out (M, N) = d v       as tsrnn_cpu_gemm() (M, N, K = 1), beta 0: 0 + (1 d[i]) v[j]
 * in one pass, each element's operations in those calls' order (the same bits): the second
 * product runs while the first waits on its chains. */
bool tsrnn_cpu_head1_backward(const struct tsrnn_cpu *cpu, size_t m, size_t n, const float *d,
                              const float *rows, const float *v, float *g, float *out);

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
void tsrnn_cpu_gemm_packed(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *packed, float *c, size_t ldc);

/* C (M, N) = bias (N) in every row + A (M, K) B, B packed: the bits of tsrnn_cpu_fill_rows()
 * then tsrnn_cpu_gemm_packed(), without the pass that fills C (the AVX-512 kernel adds its tiles'
 * sums to the bias where it would add them to C). */
void tsrnn_cpu_gemm_packed_bias(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k,
                                const float *a, size_t lda, const float *packed, const float *bias,
                                float *c, size_t ldc);

/* --- the cells ----------------------------------------------------------------------------
 *
 * One time step of a cell over a batch: views into a layer's activations at step t. */
struct tsrnn_cell_step {
    float *gates;        /* (B, G*H) in: input projection + bias; out: activated gates */
    const float *hg;     /* (B, G*H) W_hh h_prev + b_hh */
    const float *h_prev; /* (B, H) */
    float *h;            /* (B, H) out */
    const float *c_prev; /* LSTM (B, H) */
    float *c;            /* LSTM (B, H) out */
    float *aux;          /* LSTM tanh(c[t+1]); GRU W_hn h[t] + b_hn; (B, H) out */
};

/* The gradients of one step, (B, .). backward reads dh (and dc) and writes the rest. */
struct tsrnn_cell_grads {
    const float *dh; /* (B, H) dLoss/dh of this step's output (from above and from t+1) */
    float *dc;       /* LSTM (B, H) in: dLoss/dc from t+1; out: dLoss/dc_prev */
    float *d_xg;     /* (B, G*H) out: dLoss/d(input projection) */
    float *d_hg;     /* (B, G*H) out: dLoss/d(W_hh h_prev + b_hh); may alias d_xg (RNN, LSTM) */
    float *dh_prev;  /* (B, H) out: the part of dLoss/dh_prev that bypasses W_hh (GRU's z*dh;
                        zero for RNN and LSTM) */
};

/* The math of one cell kind: PyTorch's gate order and equations, forward and backward. */
struct tsrnn_cell {
    const char *name; /* "RNN", "LSTM", "GRU": PyTorch's module name */
    size_t gate_count;
    bool has_cell_state;  /* LSTM */
    bool separate_d_hg;   /* GRU: d_hg differs from d_xg */
    bool has_direct_path; /* GRU: dh_prev gets z * dh */
    void (*forward)(const struct tsrnn_cell_step *s, size_t batch_count, size_t hidden_count);
    void (*backward)(const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                     size_t batch_count, size_t hidden_count);
};

extern const struct tsrnn_cell tsrnn_cell_rnn;
extern const struct tsrnn_cell tsrnn_cell_lstm;
extern const struct tsrnn_cell tsrnn_cell_gru;

const struct tsrnn_cell *tsrnn_cell_for(enum tsrnn_model_kind kind);

/* The recurrence of a small RNN layer with the batch in vector lanes (rnn.c), on AVX-512:
 * the reference path's operations in its order (the same bits), blocks of 16 batch rows
 * through the whole window with h transposed in registers. For layers up to
 * TSRNN_CPU_RNN_LANES_MAX_HIDDEN units with up to TSRNN_CPU_RNN_LANES_MAX_INPUTS inputs (the
 * input projection is done step by step) whose per-step products the loops would run
 * (tsrnn_cpu_loops_take). */
#define TSRNN_CPU_RNN_LANES_MAX_HIDDEN 32
#define TSRNN_CPU_RNN_LANES_MAX_INPUTS 8

/* Whether the kernel runs at the level in use (AVX-512). */
bool tsrnn_cpu_rnn_lanes_available(void);

/* Floats of a layer's weights packed for it: W_ih^T, W_hh^T, b_ih, b_hh, each row padded to
 * whole blocks of 16 units. */
size_t tsrnn_cpu_rnn_lanes_count(size_t input_count, size_t hidden_count);
void tsrnn_cpu_rnn_lanes_pack(float *packed, const float *w_ih, const float *w_hh,
                              const float *b_ih, const float *b_hh, size_t input_count,
                              size_t hidden_count);

/* Batch rows [r0, r1) of the layer through T steps: x (T, B, I) the layer's input, h
 * (T+1, B, H) with h[0] the initial state (not read when zero_state) and h[1..T] out, and
 * h_lanes (T, H, B) the same h[1..T] transposed per step. */
void tsrnn_cpu_rnn_lanes_forward(const float *packed, const float *x, size_t input_count, float *h,
                                 float *h_lanes, size_t B, size_t T, size_t H, size_t r0, size_t r1,
                                 bool zero_state);

/* One step t of the layer's backward for batch rows [r0, r1), with the operations and order of
 * backward_rows (model.c) and rnn_backward: dh = d_h[t] + carry, d_xg[t] = dh (1 - h[t+1]^2),
 * and with carry_out the next carry = 0 + d_xg[t] W_hh. d_h and d_xg are the step's (B, H)
 * rows, h_lanes the forward's h[t+1] transposed and carry (H, B) the carry transposed (zeros
 * at the window's last step). */
void tsrnn_cpu_rnn_lanes_backward_step(const float *d_h, const float *h_lanes, float *carry,
                                       const float *w_hh, float *d_xg, size_t B, size_t H,
                                       size_t r0, size_t r1, bool carry_out);

/* The head over the top layer's h_lanes (T, H, B): out (T, B, O) = h V_w^T + V_b with the
 * operations and order of tsrnn_cpu_fill_rows() then tsrnn_cpu_gemm() in the loops (which
 * must take that product: tsrnn_cpu_loops_take). */
void tsrnn_cpu_rnn_lanes_head(const float *h_lanes, const float *v_w, const float *v_b, float *out,
                              size_t B, size_t T, size_t H, size_t O);

/* --- the backend's operations (backend.h), by file ---------------------------------------
 * model.c: the workspace, the recurrent layers, the head and the outputs; loss.c: the losses
 * and their per-window sums; backend.c: the table, memory, the gradients' scale check and the
 * optimizers' elementwise updates. */
enum tsrnn_status tsrnn_cpu_workspace_create(struct tsrnn_compute *ctx, void **ws,
                                             const struct tsrnn_model_dims *dims,
                                             size_t batch_capacity, size_t step_capacity,
                                             size_t results_capacity);
void tsrnn_cpu_workspace_destroy(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cpu_batch_load(struct tsrnn_compute *ctx, void *ws, const float *x,
                                       const float *y, size_t batch_count, size_t step_count);
enum tsrnn_status tsrnn_cpu_layer_forward(struct tsrnn_compute *ctx, void *ws, size_t l,
                                          const struct tsrnn_layer_params *p,
                                          enum tsrnn_initial_state initial_state,
                                          const float *input_mask, bool weights_unchanged);
enum tsrnn_status tsrnn_cpu_layer_backward(struct tsrnn_compute *ctx, void *ws, size_t l,
                                           const struct tsrnn_layer_params *p,
                                           struct tsrnn_layer_params *g);
enum tsrnn_status tsrnn_cpu_state_save(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cpu_head_forward(struct tsrnn_compute *ctx, void *ws, const float *v_w,
                                         const float *v_b);
enum tsrnn_status tsrnn_cpu_head_backward(struct tsrnn_compute *ctx, void *ws, const float *v_w,
                                          float *g_v_w, float *g_v_b);
enum tsrnn_status tsrnn_cpu_mse_forward(struct tsrnn_compute *ctx, void *ws, float *loss);
enum tsrnn_status tsrnn_cpu_mse_backward(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cpu_l1_forward(struct tsrnn_compute *ctx, void *ws, float *loss);
enum tsrnn_status tsrnn_cpu_l1_backward(struct tsrnn_compute *ctx, void *ws);
enum tsrnn_status tsrnn_cpu_window_abs_errors(struct tsrnn_compute *ctx, void *ws, double *ae);
enum tsrnn_status tsrnn_cpu_window_squared_errors(struct tsrnn_compute *ctx, void *ws, double *se);
enum tsrnn_status tsrnn_cpu_huber_forward(struct tsrnn_compute *ctx, void *ws,
                                          enum tsrnn_loss_kind loss, float delta, float *loss_out);
enum tsrnn_status tsrnn_cpu_huber_backward(struct tsrnn_compute *ctx, void *ws,
                                           enum tsrnn_loss_kind loss, float delta);
enum tsrnn_status tsrnn_cpu_window_huber_errors(struct tsrnn_compute *ctx, void *ws,
                                                enum tsrnn_loss_kind loss, float delta,
                                                double *sums);
enum tsrnn_status tsrnn_cpu_output_download(struct tsrnn_compute *ctx, void *ws, size_t t,
                                            float *out);
enum tsrnn_status tsrnn_cpu_likelihood_forward(struct tsrnn_compute *ctx, void *ws,
                                               const struct tsrnn_likelihood *lik, float *loss);
enum tsrnn_status tsrnn_cpu_likelihood_backward(struct tsrnn_compute *ctx, void *ws,
                                                const struct tsrnn_likelihood *lik);
enum tsrnn_status tsrnn_cpu_window_likelihood_losses(struct tsrnn_compute *ctx, void *ws,
                                                     const struct tsrnn_likelihood *lik,
                                                     double *sums);
enum tsrnn_status tsrnn_cpu_scale_check(struct tsrnn_compute *ctx, float *buf, size_t count,
                                        float scale, bool *finite);
/* For the tests: whether the workspace's model is large enough for packed recurrent products,
 * and whether the last forward used them. */
bool tsrnn_cpu_workspace_packed(struct tsrnn_workspace *ws);
bool tsrnn_cpu_workspace_packed_products(struct tsrnn_workspace *ws);

enum tsrnn_status tsrnn_cpu_adam_update(struct tsrnn_compute *ctx, float *params, float *exp_avg,
                                        float *exp_avg_sq, const float *grads, size_t count,
                                        const struct tsrnn_adam_scalars *s);
/* The other optimizers' elementwise updates (backend.h), vectorised as Adam's: the same bits
 * at every vector level (tests/test_model.c). */
enum tsrnn_status tsrnn_cpu_l2_decay(struct tsrnn_compute *ctx, float *grads, const float *params,
                                     size_t count, float weight_decay);
enum tsrnn_status tsrnn_cpu_nesterov_update(struct tsrnn_compute *ctx, float *params,
                                            float *momentum_buffer, const float *grads,
                                            size_t count, const struct tsrnn_nesterov_scalars *s);
enum tsrnn_status tsrnn_cpu_rmsprop_update(struct tsrnn_compute *ctx, float *params,
                                           float *square_avg, float *momentum_buffer,
                                           float *grad_avg, const float *grads, size_t count,
                                           const struct tsrnn_rmsprop_scalars *s);
enum tsrnn_status tsrnn_cpu_adagrad_update(struct tsrnn_compute *ctx, float *params,
                                           float *state_sum, const float *grads, size_t count,
                                           const struct tsrnn_adagrad_scalars *s);

#endif
