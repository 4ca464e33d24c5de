/* PyTorch's CPU samplers, number for number: what Darts' likelihoods draw when a forecast
 * samples (torch.normal, Tensor.uniform_, torch.rand, torch.poisson, torch._standard_gamma,
 * Tensor.cauchy_, Tensor.exponential_, torch.bernoulli),
 * from torch's CPU generator (include/tsrnn/torch_rng.h) with the one piece of state its
 * distributions keep besides MT19937: the second normal of the last Box-Muller pair.
 *
 * Followed from ATen (torch 2.15): core/DistributionsHelper.h (uniform_real_distribution,
 * normal_distribution with its cached sample), native/cpu/DistributionTemplates.h
 * (normal_fill for 16 floats or more, uniform_kernel), native/Distributions.h
 * (sample_gamma), native/Distributions.cpp (sample_poisson, _s_gamma_cpu). The float math
 * (log, sin, cos) is libm's where ATen calls std::; a build of PyTorch whose CPU capability
 * is AVX2 computes normal_fill's with avx_mathfun's polynomials instead, which differ in the
 * last bit or two (tests/test_prob.c compares with the PyTorch of the fixtures). */
#ifndef TSRNN_TORCH_DIST_H
#define TSRNN_TORCH_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/torch_rng.h"

struct tsrnn_torch_generator {
    struct tsrnn_mt19937 mt;
    bool has_next_normal; /* CPUGeneratorImpl's next_double_normal_sample */
    double next_normal;
};

/* manual_seed(seed): MT19937 seeded with the low 32 bits, the cached normal dropped. */
void tsrnn_torch_generator_seed(struct tsrnn_torch_generator *g, uint64_t seed);

/* at::uniform_real_distribution<float>(0, 1): random() & (2^24 - 1), times 2^-24. */
float tsrnn_torch_sample_rand(struct tsrnn_torch_generator *g);

/* at::normal_distribution<double>(0, 1): the cached sample when there is one; else u1, u2 =
 * two double uniforms, r = sqrt(-2 log1p(-u2)), theta = 2 pi u1, caches r sin(theta) and
 * returns r cos(theta). */
double tsrnn_torch_sample_normal(struct tsrnn_torch_generator *g);

/* Tensor.normal_(0, 1) of a contiguous float32 tensor of `count` elements: for 16 or more,
 * normal_fill (count float uniforms, then Box-Muller over each 16: u1 = 1 - data[j], u2 =
 * data[j + 8], radius sqrt(-2 log u1), theta 2 pi u2; a count not a multiple of 16 draws 16
 * more uniforms for the last 16 and computes them again); below 16, one
 * tsrnn_torch_sample_normal() each, rounded to float. */
void tsrnn_torch_sample_normal_fill(float *out, size_t count, struct tsrnn_torch_generator *g);

/* Tensor.uniform_(from, to) of a float32 tensor, `count` elements: x * (to - from) + from in
 * float with a fused multiply-add (torch_rng.h, TSRNN_TORCH_UNIFORM_FUSED), a value that
 * rounds to `to` replaced by `from`. */
void tsrnn_torch_sample_uniform_fill(float *out, size_t count, struct tsrnn_torch_generator *g,
                                     double from, double to);

/* Tensor.cauchy_(0, 1) of one element: at::cauchy_distribution<double>, tan(pi (u - 0.5))
 * of one double uniform. */
double tsrnn_torch_sample_cauchy(struct tsrnn_torch_generator *g);

/* Tensor.exponential_(1) of one float32 element: -log1p(-u) of one double uniform, rounded to
 * float by the caller (PyTorch's CPU kernel, not MKL's stream, in the fixtures' build). */
double tsrnn_torch_sample_exponential(struct tsrnn_torch_generator *g);

/* torch.poisson's sample_poisson(lambda) (numpy's legacy algorithm): for lambda >= 10 the
 * transformed rejection of Hoermann (1993), two double uniforms a try; 0 for 0; else the
 * product of uniforms until it falls to exp(-lambda). lambda must be finite and >= 0. */
double tsrnn_torch_sample_poisson(struct tsrnn_torch_generator *g, double lambda);

/* torch._standard_gamma(alpha) of a float32 element: sample_gamma (Marsaglia and Tsang,
 * alpha < 1 boosted by a uniform's power) in double with ATen's float constants, rounded to
 * float, at least FLT_MIN. alpha must be finite and >= 0. */
float tsrnn_torch_sample_standard_gamma(struct tsrnn_torch_generator *g, float alpha);

#endif
