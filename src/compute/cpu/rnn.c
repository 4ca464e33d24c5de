/* The vanilla RNN cell of torch.nn.RNN (nonlinearity="tanh"):
 *     h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
 * gates holds h' itself. */
#include <string.h>

#include "activation.h"
#include "cpu.h"

TSRNN_CPU_BODY rnn_forward_body(const struct tsrnn_cell_step *s, size_t batch_count,
                                size_t hidden_count)
{
    size_t n = batch_count * hidden_count;
    for (size_t i = 0; i < n; i++) {
        float h = tsrnn_tanhf(s->hg[i] + s->gates[i]);
        s->gates[i] = h;
        s->h[i] = h;
    }
}

TSRNN_CPU_ISA_VARIANTS(rnn_forward,
                       (const struct tsrnn_cell_step *s, size_t batch_count, size_t hidden_count),
                       (s, batch_count, hidden_count))

/* d(pre-activation) = dh * (1 - h'^2); the same for the input and the recurrent part. */
TSRNN_CPU_BODY rnn_backward_body(const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                                 size_t batch_count, size_t hidden_count)
{
    size_t n = batch_count * hidden_count;
    for (size_t i = 0; i < n; i++) {
        float h = s->h[i];
        g->d_xg[i] = g->dh[i] * (1.0f - h * h);
    }
}

TSRNN_CPU_ISA_VARIANTS(rnn_backward,
                       (const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                        size_t batch_count, size_t hidden_count),
                       (g, s, batch_count, hidden_count))

const struct tsrnn_cell tsrnn_cell_rnn = {
    .name = "RNN",
    .gate_count = 1,
    .forward = rnn_forward,
    .backward = rnn_backward,
};

/* --- the recurrence of a small RNN layer with the batch in vector lanes ----------------------
 *
 * A hidden-20 layer's rows are 16 + 4 floats wide, which vectors of 8 or 16 fill badly; its
 * batch of 16 fills one AVX-512 register exactly. So here a block of 16 batch rows walks
 * the whole window with h transposed, (H, 16): unit j's 16 rows are one register, the
 * recurrent product is acc_j += h^T[k] * W_hh[j][k] with the weight broadcast, and the input
 * projection, the biases and tanh follow in registers, with no pass over memory between.
 * Every element gets the operations of the reference path (gemm.c and rnn_forward above), in
 * the same order:
 *     gates = b_ih + x_0 w_ih[j][0] + ... + x_{I-1} w_ih[j][I-1]       (left to right)
 *     hg    = b_hh + h_0 w_hh[j][0] + ... + h_{H-1} w_hh[j][H-1]       (none at a zero state)
 *     h'    = tanh(hg + gates)
 * so the bits are the same. h' is transposed back into the layer's (T+1, B, H) rows. */

/* Hidden units padded to whole blocks of 16 (the transposition's), and the units whose sums
 * one pass over k keeps in registers. */
#define LANES       16
#define LANES_CHUNK 8

static size_t lanes_padded(size_t hidden_count)
{
    return (hidden_count + LANES - 1) / LANES * LANES;
}

size_t tsrnn_cpu_rnn_lanes_count(size_t input_count, size_t hidden_count)
{
    return (input_count + hidden_count + 2) * lanes_padded(hidden_count);
}

void tsrnn_cpu_rnn_lanes_pack(float *packed, const float *w_ih, const float *w_hh,
                              const float *b_ih, const float *b_hh, size_t input_count,
                              size_t hidden_count)
{
    size_t I = input_count, H = hidden_count, Hp = lanes_padded(H);
    float *wi = packed, *wh = wi + I * Hp, *bi = wh + H * Hp, *bh = bi + Hp;
    memset(packed, 0, tsrnn_cpu_rnn_lanes_count(I, H) * sizeof(float));
    for (size_t j = 0; j < H; j++) {
        for (size_t i = 0; i < I; i++)
            wi[i * Hp + j] = w_ih[j * I + i];
        for (size_t k = 0; k < H; k++)
            wh[k * Hp + j] = w_hh[j * H + k];
        bi[j] = b_ih[j];
        bh[j] = b_hh[j];
    }
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>

bool tsrnn_cpu_rnn_lanes_available(void)
{
    return tsrnn_cpu_isa == TSRNN_CPU_ISA_AVX512;
}

/* out[l][c] = r[c][l]: the 16 x 16 block transposed, in registers (r is overwritten). */
TSRNN_TARGET_AVX512 static inline void transpose16(__m512 r[16], __m512 out[16])
{
    __m512 t[16];
    for (size_t i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* r[4g + c], 128-bit lane L: column 4L + c of rows 4g .. 4g+3 */
    for (size_t g = 0; g < 16; g += 4) {
        r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xee);
        r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xee);
    }
    for (size_t c = 0; c < 4; c++) {
        __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        __m512 b = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        __m512 d = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        __m512 e = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        out[c] = _mm512_shuffle_f32x4(a, d, 0x88);      /* column c */
        out[4 + c] = _mm512_shuffle_f32x4(b, e, 0x88);  /* column 4 + c */
        out[8 + c] = _mm512_shuffle_f32x4(a, d, 0xdd);  /* column 8 + c */
        out[12 + c] = _mm512_shuffle_f32x4(b, e, 0xdd); /* column 12 + c */
    }
}

/* rows[l * ld + j] = lanes[j * lanes_ld + l] for l < row_count, j < col_count: units in
 * lanes back into rows, 16 units at a time. */
TSRNN_TARGET_AVX512 static void lanes_to_rows(float *rows, size_t ld, const float *lanes,
                                              size_t lanes_ld, size_t col_count, size_t row_count)
{
    __mmask16 lanes_mask = (__mmask16)((1u << row_count) - 1u);
    for (size_t j0 = 0; j0 < col_count; j0 += 16) {
        size_t width = col_count - j0 < 16 ? col_count - j0 : 16;
        __mmask16 cols = (__mmask16)((1u << width) - 1u);
        __m512 r[16], out[16];
        for (size_t c = 0; c < 16; c++)
            r[c] = c < width ? _mm512_maskz_loadu_ps(lanes_mask, lanes + (j0 + c) * lanes_ld)
                             : _mm512_setzero_ps();
        transpose16(r, out);
        for (size_t l = 0; l < row_count; l++)
            _mm512_mask_storeu_ps(rows + l * ld + j0, cols, out[l]);
    }
}

/* Units j0 .. j0+width (width 8 or 4, a constant once inlined) of one step for the rows of
 * `lanes`: h^T of the step into next (units < H, unit stride ld) from h^T of the step before
 * (prev, unit stride prev_ld; not read without the product) and the inputs x^T, the sums in
 * registers over k. */
TSRNN_TARGET_AVX512 static inline __attribute__((always_inline)) void
lanes_chunk(float *next, size_t ld, const float *prev, size_t prev_ld, __mmask16 lanes,
            const float (*xt)[LANES], const float *packed, size_t input_count, size_t H, size_t j0,
            bool product, size_t width)
{
    size_t I = input_count, Hp = lanes_padded(H);
    const float *wi = packed, *wh = wi + I * Hp, *bi = wh + H * Hp, *bh = bi + Hp;
    __m512 acc[LANES_CHUNK], gate[LANES_CHUNK];
    float out[LANES_CHUNK * LANES] __attribute__((aligned(64)));
    for (size_t u = 0; u < width; u++)
        acc[u] = _mm512_set1_ps(bh[j0 + u]);
    for (size_t k = 0; product && k < H; k++) {
        __m512 hk = _mm512_maskz_loadu_ps(lanes, prev + k * prev_ld);
        for (size_t u = 0; u < width; u++)
            acc[u] = _mm512_add_ps(acc[u], _mm512_mul_ps(hk, _mm512_set1_ps(wh[k * Hp + j0 + u])));
    }
    for (size_t u = 0; u < width; u++)
        gate[u] = _mm512_set1_ps(bi[j0 + u]);
    for (size_t i = 0; i < I; i++) {
        __m512 xi = _mm512_load_ps(xt[i]);
        for (size_t u = 0; u < width; u++)
            gate[u] =
                _mm512_add_ps(gate[u], _mm512_mul_ps(xi, _mm512_set1_ps(wi[i * Hp + j0 + u])));
    }
    for (size_t u = 0; u < width; u++)
        _mm512_store_ps(out + u * LANES, _mm512_add_ps(acc[u], gate[u]));
    for (size_t e = 0; e < width * LANES; e++)
        out[e] = tsrnn_tanhf(out[e]);
    for (size_t u = 0; u < width && j0 + u < H; u++)
        _mm512_mask_storeu_ps(next + (j0 + u) * ld, lanes, _mm512_load_ps(out + u * LANES));
}

/* Rows r0 .. r0+row_count (<= 16) of the batch through all T steps, h^T of step t into
 * h_lanes + t * H * B + r0 (unit stride B). */
TSRNN_TARGET_AVX512 static void lanes_forward_block(const float *packed, const float *x,
                                                    size_t input_count, float *h, float *h_lanes,
                                                    size_t B, size_t T, size_t H, size_t r0,
                                                    size_t row_count, bool zero_state)
{
    size_t I = input_count;
    __mmask16 lanes = (__mmask16)((1u << row_count) - 1u);
    /* h^T of the initial state, and the inputs x^T of a step */
    float h0[TSRNN_CPU_RNN_LANES_MAX_HIDDEN * LANES] __attribute__((aligned(64)));
    float xt[TSRNN_CPU_RNN_LANES_MAX_INPUTS][LANES] __attribute__((aligned(64)));
    memset(h0, 0, sizeof(h0));
    memset(xt, 0, sizeof(xt));
    if (!zero_state)
        for (size_t l = 0; l < row_count; l++)
            for (size_t k = 0; k < H; k++)
                h0[k * LANES + l] = h[(r0 + l) * H + k];
    for (size_t t = 0; t < T; t++) {
        const float *prev = t == 0 ? h0 : h_lanes + (t - 1) * H * B + r0;
        size_t prev_ld = t == 0 ? LANES : B;
        float *next = h_lanes + t * H * B + r0;
        for (size_t l = 0; l < row_count; l++)
            for (size_t i = 0; i < I; i++)
                xt[i][l] = x[(t * B + r0 + l) * I + i];
        bool product = !(t == 0 && zero_state); /* from h = 0 W_hh h adds exact zeros */
        for (size_t j0 = 0; j0 < H;) {          /* chunks of 8 units, a last one of 4 */
            size_t width = H - j0 > LANES_CHUNK / 2 ? LANES_CHUNK : LANES_CHUNK / 2;
            if (width == LANES_CHUNK)
                lanes_chunk(next, B, prev, prev_ld, lanes, xt, packed, I, H, j0, product,
                            LANES_CHUNK);
            else
                lanes_chunk(next, B, prev, prev_ld, lanes, xt, packed, I, H, j0, product,
                            LANES_CHUNK / 2);
            j0 += width;
        }
        lanes_to_rows(h + ((t + 1) * B + r0) * H, H, next, B, H, row_count);
    }
}

void tsrnn_cpu_rnn_lanes_forward(const float *packed, const float *x, size_t input_count, float *h,
                                 float *h_lanes, size_t B, size_t T, size_t H, size_t r0, size_t r1,
                                 bool zero_state)
{
    for (size_t b = r0; b < r1; b += LANES)
        lanes_forward_block(packed, x, input_count, h, h_lanes, B, T, H, b,
                            r1 - b < LANES ? r1 - b : LANES, zero_state);
}

/* lanes[j * LANES + l] = rows[l * ld + j] for j < col_count (zero for l >= row_count): rows
 * into units, 16 units at a time (lanes has room for whole blocks of 16 units). */
TSRNN_TARGET_AVX512 static void rows_to_lanes(float *lanes, const float *rows, size_t ld,
                                              size_t col_count, size_t row_count)
{
    for (size_t j0 = 0; j0 < col_count; j0 += 16) {
        size_t width = col_count - j0 < 16 ? col_count - j0 : 16;
        __mmask16 cols = (__mmask16)((1u << width) - 1u);
        __m512 r[16], out[16];
        for (size_t l = 0; l < 16; l++)
            r[l] = l < row_count ? _mm512_maskz_loadu_ps(cols, rows + l * ld + j0)
                                 : _mm512_setzero_ps();
        transpose16(r, out);
        for (size_t c = 0; c < 16; c++) /* whole, not a copy of `width` registers */
            if (c < width)
                _mm512_store_ps(lanes + (j0 + c) * LANES, out[c]);
    }
}

/* Units j0 .. j0+width of carry^T = 0 + d_xg^T W_hh (the loops' order: k = 0, 1, ...). */
TSRNN_TARGET_AVX512 static inline __attribute__((always_inline)) void
lanes_carry_chunk(float *carry, size_t ld, __mmask16 lanes, const float *dxg, const float *w_hh,
                  size_t H, size_t j0, size_t width)
{
    __m512 acc[LANES_CHUNK];
    for (size_t u = 0; u < width; u++)
        acc[u] = _mm512_setzero_ps();
    for (size_t k = 0; k < H; k++) {
        __m512 dk = _mm512_load_ps(dxg + k * LANES);
        for (size_t u = 0; u < width; u++)
            acc[u] = _mm512_add_ps(acc[u], _mm512_mul_ps(dk, _mm512_set1_ps(w_hh[k * H + j0 + u])));
    }
    for (size_t u = 0; u < width && j0 + u < H; u++)
        _mm512_mask_storeu_ps(carry + (j0 + u) * ld, lanes, acc[u]);
}

TSRNN_TARGET_AVX512 static void lanes_backward_block(const float *d_h, const float *h_lanes,
                                                     float *carry, const float *w_hh, float *d_xg,
                                                     size_t B, size_t H, size_t r0,
                                                     size_t row_count, bool carry_out)
{
    __mmask16 lanes = (__mmask16)((1u << row_count) - 1u);
    float dh[TSRNN_CPU_RNN_LANES_MAX_HIDDEN * LANES] __attribute__((aligned(64)));
    rows_to_lanes(dh, d_h + r0 * H, H, H, row_count);
    for (size_t j = 0; j < H; j++) {
        __m512 c = _mm512_maskz_loadu_ps(lanes, carry + j * B + r0);
        __m512 hv = _mm512_maskz_loadu_ps(lanes, h_lanes + j * B + r0);
        __m512 d = _mm512_add_ps(_mm512_load_ps(dh + j * LANES), c);
        __m512 one_minus = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(hv, hv));
        _mm512_store_ps(dh + j * LANES, _mm512_mul_ps(d, one_minus));
    }
    lanes_to_rows(d_xg + r0 * H, H, dh, LANES, H, row_count);
    for (size_t j0 = 0; carry_out && j0 < H;) { /* chunks of 8 units, a last one of 4 */
        size_t width = H - j0 > LANES_CHUNK / 2 ? LANES_CHUNK : LANES_CHUNK / 2;
        if (width == LANES_CHUNK)
            lanes_carry_chunk(carry + r0, B, lanes, dh, w_hh, H, j0, LANES_CHUNK);
        else
            lanes_carry_chunk(carry + r0, B, lanes, dh, w_hh, H, j0, LANES_CHUNK / 2);
        j0 += width;
    }
}

void tsrnn_cpu_rnn_lanes_backward_step(const float *d_h, const float *h_lanes, float *carry,
                                       const float *w_hh, float *d_xg, size_t B, size_t H,
                                       size_t r0, size_t r1, bool carry_out)
{
    for (size_t b = r0; b < r1; b += LANES)
        lanes_backward_block(d_h, h_lanes, carry, w_hh, d_xg, B, H, b,
                             r1 - b < LANES ? r1 - b : LANES, carry_out);
}

/* One output of the head for 16 rows: v_b + 1 * dot(h, v_w) with gemm.c's dot(): eight
 * partial sums from 0 over the blocks of 8 units, joined ((p0 + p4) + (p1 + p5)) +
 * ((p2 + p6) + (p3 + p7)), then the units past the blocks one by one. */
TSRNN_TARGET_AVX512 static inline __m512 lanes_head_output(const float *ht, size_t ld,
                                                           __mmask16 lanes, const float *v_w,
                                                           float v_b, size_t H)
{
    __m512 p[8];
    for (size_t u = 0; u < 8; u++)
        p[u] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= H; k += 8)
        for (size_t u = 0; u < 8; u++)
            p[u] =
                _mm512_add_ps(p[u], _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, ht + (k + u) * ld),
                                                  _mm512_set1_ps(v_w[k + u])));
    __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(p[0], p[4]), _mm512_add_ps(p[1], p[5])),
                               _mm512_add_ps(_mm512_add_ps(p[2], p[6]), _mm512_add_ps(p[3], p[7])));
    for (; k < H; k++)
        sum = _mm512_add_ps(
            sum, _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, ht + k * ld), _mm512_set1_ps(v_w[k])));
    return _mm512_add_ps(_mm512_set1_ps(v_b), _mm512_mul_ps(_mm512_set1_ps(1.0f), sum));
}

TSRNN_TARGET_AVX512 static void lanes_head(const float *h_lanes, const float *v_w, const float *v_b,
                                           float *out, size_t B, size_t T, size_t H, size_t O)
{
    for (size_t t = 0; t < T; t++)
        for (size_t b = 0; b < B; b += LANES) {
            size_t row_count = B - b < LANES ? B - b : LANES;
            __mmask16 lanes = (__mmask16)((1u << row_count) - 1u);
            const float *ht = h_lanes + t * H * B + b;
            float *rows = out + (t * B + b) * O;
            for (size_t o = 0; o < O; o++) {
                __m512 y = lanes_head_output(ht, B, lanes, v_w + o * H, v_b[o], H);
                if (O == 1) {
                    _mm512_mask_storeu_ps(rows, lanes, y);
                    continue;
                }
                float lane[LANES] __attribute__((aligned(64)));
                _mm512_store_ps(lane, y);
                for (size_t l = 0; l < row_count; l++)
                    rows[l * O + o] = lane[l];
            }
        }
}

void tsrnn_cpu_rnn_lanes_head(const float *h_lanes, const float *v_w, const float *v_b, float *out,
                              size_t B, size_t T, size_t H, size_t O)
{
    lanes_head(h_lanes, v_w, v_b, out, B, T, H, O);
}
#else
bool tsrnn_cpu_rnn_lanes_available(void)
{
    return false;
}

void tsrnn_cpu_rnn_lanes_forward(const float *packed, const float *x, size_t input_count, float *h,
                                 float *h_lanes, size_t B, size_t T, size_t H, size_t r0, size_t r1,
                                 bool zero_state)
{
    (void)packed, (void)x, (void)input_count, (void)h, (void)h_lanes, (void)B, (void)T, (void)H;
    (void)r0, (void)r1, (void)zero_state;
}

void tsrnn_cpu_rnn_lanes_head(const float *h_lanes, const float *v_w, const float *v_b, float *out,
                              size_t B, size_t T, size_t H, size_t O)
{
    (void)h_lanes, (void)v_w, (void)v_b, (void)out, (void)B, (void)T, (void)H, (void)O;
}

void tsrnn_cpu_rnn_lanes_backward_step(const float *d_h, const float *h_lanes, float *carry,
                                       const float *w_hh, float *d_xg, size_t B, size_t H,
                                       size_t r0, size_t r1, bool carry_out)
{
    (void)d_h, (void)h_lanes, (void)carry, (void)w_hh, (void)d_xg, (void)B, (void)H, (void)r0;
    (void)r1, (void)carry_out;
}
#endif
