/* The CPU backend's products on packed 16-column panels (cpu.h), all run by one AVX-512
 * kernel (panel512, with an AVX2 one and plain loops for the packed products elsewhere):
 * the recurrent products against weights packed once per step (tsrnn_cpu_pack,
 * tsrnn_cpu_gemm_packed), and tsrnn's own large products, blocked as GotoBLAS blocks them
 * (tsrnn_cpu_gemm_blocked). The reference loops and the routing are gemm.c's. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#if TSRNN_CPU_X86_KERNELS
#include <immintrin.h>
#endif

/* --- packed right-hand side ------------------------------------------------------------- */

#define PANEL_COLS 16

size_t tsrnn_cpu_packed_count(size_t k, size_t n)
{
    return (n + PANEL_COLS - 1) / PANEL_COLS * PANEL_COLS * k;
}

void tsrnn_cpu_pack(float *packed, const float *b, size_t ldb, size_t k, size_t n, bool trans_b)
{
    size_t panel_count = (n + PANEL_COLS - 1) / PANEL_COLS;
    if (!trans_b) { /* full panels: a row of 16 is one copy; B read row after row, in order */
        for (size_t kk = 0; kk < k; kk++)
            for (size_t p = 0; p < n / PANEL_COLS; p++)
                memcpy(packed + (p * k + kk) * PANEL_COLS, b + kk * ldb + p * PANEL_COLS,
                       PANEL_COLS * sizeof(float));
    } else { /* column j of the panel is row j of B: read along B's rows */
        for (size_t p = 0; p < n / PANEL_COLS; p++)
            for (size_t u = 0; u < PANEL_COLS; u++) {
                const float *row = b + (p * PANEL_COLS + u) * ldb;
                float *dst = packed + p * k * PANEL_COLS + u;
                for (size_t kk = 0; kk < k; kk++)
                    dst[kk * PANEL_COLS] = row[kk];
            }
    }
    for (size_t p = n / PANEL_COLS; p < panel_count; p++) /* the last, zero-padded one */
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

#if TSRNN_CPU_X86_KERNELS
bool tsrnn_cpu_packed_kernel_available(void)
{
    return tsrnn_cpu_isa >= TSRNN_CPU_ISA_AVX2;
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

/* The block of panels the packed product runs after the current one: its first panel at
 * its first row, `stride` floats on to its second (0 when it has only one), kc rows; NULL panel:
 * none. */
struct next_block {
    const float *panel;
    size_t stride, kc;
};

/* What one tile prefetches of the next block: `rows` rows of both its panels from `next`,
 * one every `every` values of k. */
struct panel_prefetch {
    const float *next;
    size_t stride, every, rows;
};

/* AVX-512: ROWS (8 or 4 or 1) rows of C times PANELS (2 or 1) panels, one 16-float register
 * per row and panel: 16 accumulators for 8 x 2, enough independent chains to keep both FMA
 * ports busy (4 cycles of latency x 2 ports), each k step two panel loads and eight
 * broadcasts. A(r, kk) = a[r * a_row + kk * a_col]. C = Cin + the product (Cin is C itself,
 * ldcin = ldc, or a bias row, ldcin = 0); cols = the columns of the last panel that exist (the
 * rest are the pack's zero padding, not stored). Prefetches into L2 as pf says: it changes
 * no arithmetic. */
TSRNN_TARGET_AVX512_KERNEL static inline __attribute__((always_inline)) void
panel512(float *c, size_t ldc, const float *cin, size_t ldcin, const float *a, size_t a_row,
         size_t a_col, const float *panel, size_t panel_stride, size_t k, size_t rows,
         size_t panels, size_t cols, size_t store_rows, struct panel_prefetch pf)
{
    __m512 acc[8][2];
    for (size_t r = 0; r < rows; r++)
        for (size_t p = 0; p < panels; p++)
            acc[r][p] = _mm512_setzero_ps();
    size_t pf_k = 0;
    for (size_t kk = 0; kk < k; kk++) {
        if (pf.rows > 0 && kk == pf_k) {
            _mm_prefetch((const char *)pf.next, _MM_HINT_T1);
            _mm_prefetch((const char *)(pf.next + pf.stride), _MM_HINT_T1);
            pf.next += PANEL_COLS;
            pf.rows--;
            pf_k += pf.every;
        }
        __m512 b[2];
        for (size_t p = 0; p < panels; p++)
            b[p] = _mm512_loadu_ps(panel + p * panel_stride + kk * PANEL_COLS);
        for (size_t r = 0; r < rows; r++) {
            __m512 x = _mm512_set1_ps(a[r * a_row + kk * a_col]);
            for (size_t p = 0; p < panels; p++)
                acc[r][p] = _mm512_fmadd_ps(x, b[p], acc[r][p]);
        }
    }
    for (size_t p = 0; p < panels; p++) {
        size_t width = p + 1 == panels ? cols : PANEL_COLS;
        __mmask16 mask = (__mmask16)((1u << width) - 1u);
        for (size_t r = 0; r < store_rows; r++) {
            __m512 old = _mm512_maskz_loadu_ps(mask, cin + r * ldcin + p * PANEL_COLS);
            _mm512_mask_storeu_ps(c + r * ldc + p * PANEL_COLS, mask,
                                  _mm512_add_ps(old, acc[r][p]));
        }
    }
}

static const struct panel_prefetch no_prefetch = { NULL, 0, 1, 0 };
static const struct next_block no_next_block = { NULL, 0, 0 };

#define PACKED_KC 256

/* The rows of the k block that starts at k0. */
static inline size_t packed_kc(size_t k, size_t k0)
{
    return k - k0 < PACKED_KC ? k - k0 : PACKED_KC;
}

/* The block after panels p, p + 1 of the k block at k0 in gemm_packed_avx512()'s order: the
 * next pair of the same k block, or the first pair of the next k block, or none. */
static inline struct next_block packed_next(const float *packed, size_t panel_count, size_t k,
                                            size_t k0, size_t p)
{
    size_t stride = k * PANEL_COLS, kc = packed_kc(k, k0);
    if (p + 2 < panel_count)
        return (struct next_block){ packed + (p + 2) * stride + k0 * PANEL_COLS,
                                    p + 3 < panel_count ? stride : 0, kc };
    if (k0 + kc < k)
        return (struct next_block){ packed + (k0 + kc) * PANEL_COLS, panel_count > 1 ? stride : 0,
                                    packed_kc(k, k0 + kc) };
    return no_next_block;
}

/* Tile `tile` of `tiles`' share of the prefetch of the next block: its rows tile * kc /
 * tiles .. (tile + 1) * kc / tiles, one every `tiles` values of k (the next block has no more
 * rows than the current one, so a tile's k loop has room for its share). */
static inline struct panel_prefetch tile_prefetch(struct next_block next, size_t tile, size_t tiles)
{
    if (next.panel == NULL)
        return no_prefetch;
    size_t first = tile * next.kc / tiles, end = (tile + 1) * next.kc / tiles;
    return (struct panel_prefetch){ next.panel + first * PANEL_COLS, next.stride, tiles,
                                    end - first };
}

/* Rows 0 .. m of C for one block of k and PANELS (2 or 1) panels: tiles of 8 rows, then 4,
 * then single rows. Each element's sum is the same whatever tile computes it. While they
 * run, the tiles prefetch the block that follows, `next`, into L2: a W_hh that does not stay
 * in L2 from one step to the next (LSTM-512's 4 MiB) then comes from L3 while the block
 * before it computes, instead of while the first tile of each block waits for it
 * (docs/benchmarks.md, "The recurrent product past L2"). */
TSRNN_TARGET_AVX512_KERNEL static inline __attribute__((always_inline)) void
packed_rows(float *c, size_t ldc, const float *cin, size_t ldcin, const float *a, size_t lda,
            const float *panel, size_t stride, size_t kc, size_t m, size_t panels, size_t cols,
            struct next_block next)
{
    size_t tiles = m / 8 + m % 8 / 4 + m % 4, tile = 0, i = 0;
    for (; i + 8 <= m; i += 8, tile++)
        panel512(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i * lda, lda, 1, panel, stride, kc,
                 8, panels, cols, 8, tile_prefetch(next, tile, tiles));
    for (; i + 4 <= m; i += 4, tile++)
        panel512(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i * lda, lda, 1, panel, stride, kc,
                 4, panels, cols, 4, tile_prefetch(next, tile, tiles));
    for (; i < m; i++, tile++)
        panel512(c + i * ldc, ldc, cin + i * ldcin, ldcin, a + i * lda, lda, 1, panel, stride, kc,
                 1, panels, cols, 1, tile_prefetch(next, tile, tiles));
}

/* Up to this many packed weights (LSTM-256's W_hh, 1 MiB) stay in the 2 MiB L2 from one of a
 * step's row blocks to the next (model.c's PACKED_BLOCK_MAX_WEIGHTS); only above does the
 * product prefetch (packed_rows). Below, the prefetches only cost: LSTM-256's 16-row blocks
 * ran their products 9-15 % slower with them (`bench-gemm --steps`, warm, best of 4). */
#define PACKED_L2_WEIGHTS (256 * 1024)

/* The AVX-512 product, C = Cin + A packed (Cin as panel512's), over k in blocks of PACKED_KC
 * (a block of two panels, 32 KiB, stays in the 48 KiB L1 while every row block of C passes
 * over it), panels in pairs. The blocks after the first add to C. With a large B each pair's
 * block prefetches the next one in this order (the next pair, or the first pair of the next
 * k block); the pairs of a small one run the kernel without the prefetch's test. */
TSRNN_TARGET_AVX512_KERNEL static void gemm_packed_avx512(size_t m, size_t n, size_t k,
                                                          const float *a, size_t lda,
                                                          const float *packed, const float *cin,
                                                          size_t ldcin, float *c, size_t ldc)
{
    size_t panel_count = (n + PANEL_COLS - 1) / PANEL_COLS, stride = k * PANEL_COLS;
    bool prefetch = k * n > PACKED_L2_WEIGHTS;
    for (size_t k0 = 0; k0 < k; k0 += PACKED_KC) {
        size_t kc = packed_kc(k, k0);
        const float *in = k0 == 0 ? cin : c;
        size_t ldin = k0 == 0 ? ldcin : ldc;
        for (size_t p = 0; p < panel_count; p += 2) {
            size_t panels = p + 1 < panel_count ? 2 : 1;
            size_t last = p + panels - 1;
            size_t cols = n - last * PANEL_COLS < PANEL_COLS ? n - last * PANEL_COLS : PANEL_COLS;
            const float *panel = packed + p * stride + k0 * PANEL_COLS;
            struct next_block next =
                prefetch ? packed_next(packed, panel_count, k, k0, p) : no_next_block;
            size_t j = p * PANEL_COLS;
            if (panels == 2 && prefetch)
                packed_rows(c + j, ldc, in + j, ldin, a + k0, lda, panel, stride, kc, m, 2, cols,
                            next);
            else if (panels == 2)
                packed_rows(c + j, ldc, in + j, ldin, a + k0, lda, panel, stride, kc, m, 2, cols,
                            no_next_block);
            else
                packed_rows(c + j, ldc, in + j, ldin, a + k0, lda, panel, stride, kc, m, 1, cols,
                            next);
        }
    }
}

/* --- tsrnn's own large products (AVX-512) ---------------------------------------------------
 *
 * GotoBLAS's scheme, written for this kernel: for each block of BLOCKED_KC values of k, B's
 * block is packed into 16-column panels ([panel][kc][16]) and, per block of BLOCKED_MC rows,
 * A's block into 8-row strips ([strip][kc][8], the last strip zero-padded); the 8 x 32
 * kernel then runs over strips and panel pairs. Both packings read A and B in whatever
 * transposition they come, so every case runs the same kernel. */
#define BLOCKED_KC 256
#define BLOCKED_MC 512

struct blocked_product {
    bool trans_a, trans_b;
    size_t m, n, k;
    const float *a, *b;
    size_t lda, ldb, ldc;
    float *c;
    float *const *scratch; /* per part: blocked_scratch_count(n) floats */
};

static size_t blocked_scratch_count(size_t n)
{
    return ((n + PANEL_COLS - 1) / PANEL_COLS * PANEL_COLS + BLOCKED_MC) * BLOCKED_KC;
}

/* dst[kk * 8 + r] = src[r * ld + kk] for r, kk < 8: an 8 x 8 transpose in registers. */
TSRNN_TARGET_AVX512_KERNEL static inline void transpose8x8(float *restrict dst,
                                                           const float *restrict src, size_t ld)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld);
    __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
    __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
    __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
    /* pairs of rows interleaved, then pairs of pairs, then the two 128-bit halves */
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    _mm256_storeu_ps(dst + 0, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* strips [mc/8][kc][8] of op(A) rows i0.. and columns k0.., zero rows past mc. Transposed, a
 * strip's 8 values of one k are adjacent in A (one 32-byte copy of constant size, inlined), and
 * the full strips are filled k after k, each of A's rows read along once (mc values): strip
 * after strip, each copy would read another row (LSTM-512's d_hg: 8 KiB apart, past what the
 * hardware prefetcher follows), each a miss to L3, 8 % of the weight gradient's time in a
 * step. Otherwise 8 rows are read side by side, k after k. */
TSRNN_TARGET_AVX512_KERNEL static void pack_a_strips(float *restrict dst,
                                                     const struct blocked_product *p, size_t i0,
                                                     size_t mc, size_t k0, size_t kc)
{
    size_t s = 0;
    if (p->trans_a) {
        size_t full = mc / 8 * 8;
        for (size_t g = 0; g < kc; g += 8) { /* 8 rows of A: 256 bytes of each strip */
            size_t ks = kc - g < 8 ? kc - g : 8;
            const float *src = p->a + (k0 + g) * p->lda + i0;
            for (size_t f = 0; f < full; f += 8)
                for (size_t kk = 0; kk < ks; kk++)
                    memcpy(dst + f * kc + (g + kk) * 8, src + kk * p->lda + f, 8 * sizeof(float));
        }
        s = full;
    }
    for (; s < mc; s += 8) {
        float *strip = dst + s * kc;
        size_t rows = mc - s < 8 ? mc - s : 8;
        if (rows < 8)
            memset(strip, 0, kc * 8 * sizeof(float));
        if (p->trans_a) {
            const float *src = p->a + k0 * p->lda + i0 + s;
            for (size_t kk = 0; kk < kc; kk++)
                for (size_t r = 0; r < rows; r++)
                    strip[kk * 8 + r] = src[kk * p->lda + r];
        } else {
            const float *src = p->a + (i0 + s) * p->lda + k0;
            size_t kk = 0;
            if (rows == 8)
                for (; kk + 8 <= kc; kk += 8)
                    transpose8x8(strip + kk * 8, src + kk, p->lda);
            for (size_t r = 0; r < rows; r++)
                for (size_t k1 = kk; k1 < kc; k1++)
                    strip[k1 * 8 + r] = src[r * p->lda + k1];
        }
    }
}

TSRNN_TARGET_AVX512_KERNEL static void blocked_part(void *arg, size_t part, size_t parts)
{
    const struct blocked_product *p = arg;
    size_t i_lo = p->m * part / parts / 8 * 8;
    size_t i_hi = part + 1 == parts ? p->m : p->m * (part + 1) / parts / 8 * 8;
    if (i_hi <= i_lo)
        return;
    size_t panel_count = (p->n + PANEL_COLS - 1) / PANEL_COLS;
    float *b_pack = p->scratch[part], *a_pack = b_pack + panel_count * PANEL_COLS * BLOCKED_KC;
    for (size_t k0 = 0; k0 < p->k; k0 += BLOCKED_KC) {
        size_t kc = p->k - k0 < BLOCKED_KC ? p->k - k0 : BLOCKED_KC;
        size_t stride = kc * PANEL_COLS;
        if (p->trans_b)
            tsrnn_cpu_pack(b_pack, p->b + k0, p->ldb, kc, p->n, true);
        else
            tsrnn_cpu_pack(b_pack, p->b + k0 * p->ldb, p->ldb, kc, p->n, false);
        for (size_t i0 = i_lo; i0 < i_hi; i0 += BLOCKED_MC) {
            size_t mc = i_hi - i0 < BLOCKED_MC ? i_hi - i0 : BLOCKED_MC;
            pack_a_strips(a_pack, p, i0, mc, k0, kc);
            /* Strip by strip: a strip (8 KiB) stays in L1 while the panels stream from L2. */
            for (size_t s = 0; s < mc; s += 8)
                for (size_t q = 0; q < panel_count; q += 2) {
                    size_t panels = q + 1 < panel_count ? 2 : 1, last = q + panels - 1;
                    size_t cols = p->n - last * PANEL_COLS < PANEL_COLS ? p->n - last * PANEL_COLS
                                                                        : PANEL_COLS;
                    const float *panel = b_pack + q * stride;
                    float *cs = p->c + (i0 + s) * p->ldc + q * PANEL_COLS;
                    size_t rows = mc - s < 8 ? mc - s : 8;
                    if (panels == 2)
                        panel512(cs, p->ldc, cs, p->ldc, a_pack + s * kc, 1, 8, panel, stride, kc,
                                 8, 2, cols, rows, no_prefetch);
                    else
                        panel512(cs, p->ldc, cs, p->ldc, a_pack + s * kc, 1, 8, panel, stride, kc,
                                 8, 1, cols, rows, no_prefetch);
                }
        }
    }
}
#else
bool tsrnn_cpu_packed_kernel_available(void)
{
    return false;
}
#endif

void tsrnn_cpu_gemm_packed(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *packed, float *c, size_t ldc)
{
    bool kernel = cpu->gemm_path != TSRNN_GEMM_LOOPS && tsrnn_cpu_packed_kernel_available();
#if TSRNN_CPU_X86_KERNELS
    if (kernel && tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512) {
        gemm_packed_avx512(m, n, k, a, lda, packed, c, ldc, c, ldc);
        return;
    }
#endif
    size_t panel_count = (n + PANEL_COLS - 1) / PANEL_COLS;
    for (size_t p = 0; p < panel_count; p++) {
        const float *panel = packed + p * k * PANEL_COLS;
        size_t cols = n - p * PANEL_COLS < PANEL_COLS ? n - p * PANEL_COLS : PANEL_COLS;
        size_t i = 0;
#if TSRNN_CPU_X86_KERNELS
        if (kernel)
            for (; i + 4 <= m; i += 4)
                panel_kernel4(c + i * ldc + p * PANEL_COLS, ldc, a + i * lda, lda, panel, k, cols);
#else
        (void)kernel;
#endif
        panel_loops(c + i * ldc + p * PANEL_COLS, ldc, a + i * lda, lda, panel, k, m - i, cols);
    }
}

void tsrnn_cpu_gemm_packed_bias(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k,
                                const float *a, size_t lda, const float *packed, const float *bias,
                                float *c, size_t ldc)
{
#if TSRNN_CPU_X86_KERNELS
    if (cpu->gemm_path != TSRNN_GEMM_LOOPS && tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512) {
        gemm_packed_avx512(m, n, k, a, lda, packed, bias, 0, c, ldc);
        return;
    }
#endif
    tsrnn_cpu_fill_rows(c, bias, m, n);
    tsrnn_cpu_gemm_packed(cpu, m, n, k, a, lda, packed, c, ldc);
}

/* From this many multiply-adds (and k) a product goes to tsrnn_cpu_gemm_blocked() on an
 * AVX-512 CPU, whatever kernels OpenBLAS runs (m and n from 16: A is packed in strips of 8
 * rows, B in panels of 16 columns); from SPLIT_MIN_BLOCKED_MACS it is split. With AVX-512
 * kernels the AUTO path calls no BLAS at all (tsrnn_cpu_blas_takes): OpenBLAS picks its
 * kernels from CPUID or OPENBLAS_CORETYPE, and a k-sum that depends on the environment
 * would give the same job different weights under tsrnn-launch and mpirun (docs/numerics.md
 * "Kernels"). What the blocked kernel does not take (skinny products: the head, the
 * stepwise sums) goes to the loops. Inside a part of tsrnn_cpu_parallel() (the per-step
 * products of a layer too small for packing, split by batch rows) a product runs unsplit on
 * that thread's scratch, with the same per-row sums as outside: the bits do not depend on the
 * thread count. */
#define BLOCKED_MIN_MACS       (64 * 64 * 64)
#define BLOCKED_MIN_K          16
#define BLOCKED_MIN_MN         16
#define SPLIT_MIN_BLOCKED_MACS (1u << 23)

bool tsrnn_cpu_blocked_takes(const struct tsrnn_cpu *cpu, size_t m, size_t n, size_t k, float alpha)
{
#if TSRNN_CPU_X86_KERNELS
    return tsrnn_cpu_own_products(cpu) && alpha == 1.0f && k >= BLOCKED_MIN_K &&
           m >= BLOCKED_MIN_MN && n >= BLOCKED_MIN_MN && m * n * k >= BLOCKED_MIN_MACS;
#else
    (void)cpu, (void)m, (void)n, (void)k, (void)alpha;
    return false;
#endif
}

void tsrnn_cpu_gemm_blocked(const struct tsrnn_cpu *cpu_const, bool trans_a, bool trans_b, size_t m,
                            size_t n, size_t k, const float *a, size_t lda, const float *b,
                            size_t ldb, float beta, float *c, size_t ldc)
{
    struct tsrnn_cpu *cpu = (struct tsrnn_cpu *)cpu_const;
    tsrnn_cpu_scale_rows(c, ldc, m, n, beta);
#if TSRNN_CPU_X86_KERNELS
    if (tsrnn_cpu_isa != TSRNN_CPU_ISA_AVX512) { /* called directly (tests) on a CPU without */
        tsrnn_cpu_gemm_loops(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
        return;
    }
    size_t parts = (size_t)cpu->thread_count;
    if (parts > m / 8)
        parts = m / 8 > 0 ? m / 8 : 1;
    if (m * n * k < SPLIT_MIN_BLOCKED_MACS || tsrnn_cpu_in_job)
        parts = 1;
    /* Scratch per part, kept in the context: allocated by the first large product (and by
     * a wider one), not in every step. Each slot belongs to one thread at a time: outside a
     * job the driving thread fills slots 0 .. parts-1 for its parts; inside a part of a job
     * (the per-step products of a layer split by batch rows) the product is not split again
     * and takes its thread's own slot, so concurrent parts never share one. A part without
     * its scratch is not started. */
    size_t first = tsrnn_cpu_in_job ? tsrnn_cpu_thread_slot : 0, need = blocked_scratch_count(n);
    for (size_t i = first; i < first + parts; i++)
        if (cpu->blocked_scratch_floats[i] < need) {
            free(cpu->blocked_scratch[i]);
            cpu->blocked_scratch[i] = aligned_alloc(64, need * sizeof(float));
            cpu->blocked_scratch_floats[i] = cpu->blocked_scratch[i] != NULL ? need : 0;
        }
    float *const *scratch = cpu->blocked_scratch + first;
    size_t ready = 0;
    while (ready < parts && scratch[ready] != NULL)
        ready++;
    parts = ready;
    if (parts == 0) { /* out of memory: the loops need none */
        tsrnn_cpu_gemm_loops(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
        return;
    }
    const struct blocked_product product = {
        .trans_a = trans_a,
        .trans_b = trans_b,
        .m = m,
        .n = n,
        .k = k,
        .a = a,
        .b = b,
        .lda = lda,
        .ldb = ldb,
        .ldc = ldc,
        .c = c,
        .scratch = scratch,
    };
    if (parts > 1)
        tsrnn_cpu_parallel(cpu, blocked_part, (void *)&product, parts);
    else
        blocked_part((void *)&product, 0, 1);
#else
    tsrnn_cpu_gemm_loops(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
#endif
}
