/* Activation functions of the cells, in float32, written so that the compiler can vectorise
 * the loops that call them (no branches, no libm calls).
 *
 * Accuracy against double-precision libm (tests/test_model.c, every 1e-5 over [-20, 20]):
 * exp 1.36 ulp, tanh 1.31 ulp, sigmoid 2.47 ulp -- the class of the SLEEF 1.0-ulp functions
 * PyTorch's vectorised CPU kernels build on. Polynomial coefficients are least-squares fits made
 * for tsrnn (numpy, Chebyshev nodes): exp on |r| <= ln2/2 to 2.6e-9 relative, tanh on
 * |x| < 0.625 to 4.7e-9 relative.
 */
#ifndef TSRNN_COMPUTE_CPU_ACTIVATION_H
#define TSRNN_COMPUTE_CPU_ACTIVATION_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h" /* TSRNN_VECTOR_CLONES */

#define TSRNN_LOG2E 1.44269504f

/* e^y for y in [-87, 88] (so the result is a normal float), given y_log2e = y * log2(e) as
 * rounded to float (tanh computes it without waiting for y): y = n ln2 + r, |r| <= ln2/2,
 * e^y = 2^n p(r). estrin: p's terms in three pairs evaluated side by side and joined in
 * powers of r^2 -- 3 steps deep instead of 6, a third faster in tanh's loop, but 1.42 ulp
 * instead of 1.36 for exp, which sigmoid amplifies to 3.2 ulp; so only tanh takes it. */
static inline float exp_in_range(float y, float y_log2e, bool estrin)
{
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float shifted = y_log2e + round_magic;
    float n = shifted - round_magic;
    float r = (y - n * ln2_hi) - n * ln2_lo;
    float p;
    if (estrin) {
        float r2 = r * r;
        float hi = (8.37513188e-3f * r + 4.16662182e-2f) + r2 * 1.39485846e-3f;
        float mid = 1.66664154e-1f * r + 5.00000011e-1f;
        float lo = 1.00000004f * r + 1.0f;
        p = lo + r2 * (mid + r2 * hi);
    } else {
        p = 1.39485846e-3f;
        p = p * r + 8.37513188e-3f;
        p = p * r + 4.16662182e-2f;
        p = p * r + 1.66664154e-1f;
        p = p * r + 5.00000011e-1f;
        p = p * r + 1.00000004f;
        p = p * r + 1.0f;
    }
    /* 2^n from the bits of `shifted`, whose low mantissa bits hold n: no float-to-int
     * conversion, which a NaN would make undefined. */
    uint32_t shifted_bits, magic_bits;
    memcpy(&shifted_bits, &shifted, sizeof(shifted_bits));
    memcpy(&magic_bits, &round_magic, sizeof(magic_bits));
    uint32_t bits = (shifted_bits - magic_bits + 127u) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

/* e^y, with y clamped to [-87, 88]. The clamps are written "c > y ? c : y" (and "<"), the
 * form of the vector max/min instructions, and a NaN passes through them. */
static inline float tsrnn_expf(float y)
{
    y = -87.0f > y ? -87.0f : y;
    y = 88.0f < y ? 88.0f : y;
    return exp_in_range(y, y * TSRNN_LOG2E, false);
}

/* tanh: an odd polynomial near 0, 1 - 2 / (e^{2|x|} + 1) elsewhere. From |x| = 9.01 on the
 * latter rounds to 1, so clamping |x| at 44 changes nothing but keeps e^{2|x|} finite; a NaN
 * stays NaN. Written for a short dependency chain, which bounds the vectorised loop: m * 2log2e
 * is (m + m) * log2e to the bit (scaling by 2 is exact), and +-1 -+ 2 / (e + 1) is the
 * copysign of 1 - 2 / (e + 1) to the bit (the rounding is symmetric), without the extra steps
 * (the same result for every one of the 2^32 floats, checked; the loop 7 % faster). */
static inline float tsrnn_tanhf(float x)
{
    float a = fabsf(x);
    float z = x * x;
    float q = -5.69193578e-3f;
    q = q * z + 2.06262487e-2f;
    q = q * z + -5.37353061e-2f;
    q = q * z + 1.33313812e-1f;
    q = q * z + -3.33332792e-1f;
    float near_zero = x + x * (z * q);
    float m = 44.0f < a ? 44.0f : a;
    float e = exp_in_range(m + m, m * (2.0f * TSRNN_LOG2E), true);
    float far = copysignf(1.0f, x) - copysignf(2.0f, x) / (e + 1.0f);
    return a < 0.625f ? near_zero : far;
}

/* torch.sigmoid: 1 / (1 + e^-x). */
static inline float tsrnn_sigmoidf(float x)
{
    return 1.0f / (1.0f + tsrnn_expf(-x));
}

#endif
