/* PyTorch's CPU samplers (include/tsrnn/torch_dist.h). */
#include "tsrnn/torch_dist.h"

#include <float.h>
#include <math.h>

/* 24 = std::numeric_limits<float>::digits */
#define FLOAT_MASK  ((UINT32_C(1) << 24) - 1)
#define FLOAT_SCALE 0x1.0p-24f

void tsrnn_torch_generator_seed(struct tsrnn_torch_generator *g, uint64_t seed)
{
    tsrnn_torch_manual_seed(&g->mt, seed);
    g->has_next_normal = false;
    g->next_normal = 0.0;
}

float tsrnn_torch_sample_rand(struct tsrnn_torch_generator *g)
{
    return (float)(tsrnn_torch_random(&g->mt) & FLOAT_MASK) * FLOAT_SCALE;
}

static double rand_double(struct tsrnn_torch_generator *g)
{
    return tsrnn_torch_uniform_double(&g->mt);
}

double tsrnn_torch_sample_normal(struct tsrnn_torch_generator *g)
{
    if (g->has_next_normal) {
        g->has_next_normal = false;
        return g->next_normal;
    }
    double u1 = rand_double(g), u2 = rand_double(g);
    double r = sqrt(-2.0 * log1p(-u2)), theta = 2.0 * M_PI * u1;
    g->next_normal = r * sin(theta);
    g->has_next_normal = true;
    return r * cos(theta);
}

/* NormalFill16 (the scalar one): Box-Muller over 16 uniforms in place, float math. */
static void normal_fill_16(float *data)
{
    for (size_t j = 0; j < 8; j++) {
        float u1 = 1.0f - data[j], u2 = data[j + 8];
        float radius = sqrtf(-2.0f * logf(u1));
        float theta = (float)(2.0 * M_PI * (double)u2); /* 2.0f * pi<double> * u2 */
        data[j] = radius * cosf(theta);
        data[j + 8] = radius * sinf(theta);
    }
}

void tsrnn_torch_sample_normal_fill(float *out, size_t count, struct tsrnn_torch_generator *g)
{
    if (count < 16) {
        for (size_t i = 0; i < count; i++)
            out[i] = (float)tsrnn_torch_sample_normal(g);
        return;
    }
    for (size_t i = 0; i < count; i++)
        out[i] = tsrnn_torch_sample_rand(g);
    for (size_t i = 0; i + 16 <= count; i += 16)
        normal_fill_16(out + i);
    if (count % 16 != 0) { /* the last 16 drawn and computed again */
        float *last = out + count - 16;
        for (size_t i = 0; i < 16; i++)
            last[i] = tsrnn_torch_sample_rand(g);
        normal_fill_16(last);
    }
}

void tsrnn_torch_sample_uniform_fill(float *out, size_t count, struct tsrnn_torch_generator *g,
                                     double from, double to)
{
    float lo = (float)from, hi = (float)to, width = hi - lo;
    for (size_t i = 0; i < count; i++) {
        float x = tsrnn_torch_sample_rand(g);
        float value = fmaf(x, width, lo);
        out[i] = value == hi ? lo : value;
    }
}

double tsrnn_torch_sample_cauchy(struct tsrnn_torch_generator *g)
{
    return tan(M_PI * (rand_double(g) - 0.5));
}

double tsrnn_torch_sample_exponential(struct tsrnn_torch_generator *g)
{
    return -log1p(-rand_double(g));
}

double tsrnn_torch_sample_poisson(struct tsrnn_torch_generator *g, double lambda)
{
    if (lambda >= 10.0) {
        /* transformed rejection (Hoermann 1993) */
        double slam = sqrt(lambda), loglam = log(lambda);
        double b = 0.931 + 2.53 * slam;
        double a = -0.059 + 0.02483 * b;
        double invalpha = 1.1239 + 1.1328 / (b - 3.4);
        double vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            double u = rand_double(g) - 0.5, v = rand_double(g);
            double us = 0.5 - fabs(u);
            double k = floor((2 * a / us + b) * u + lambda + 0.43);
            if (us >= 0.07 && v <= vr)
                return k;
            if (k < 0 || (us < 0.013 && v > us))
                continue;
            if (log(v) + log(invalpha) - log(a / (us * us) + b) <=
                -lambda + k * loglam - lgamma(k + 1))
                return k;
        }
    }
    if (lambda == 0.0)
        return 0.0;
    double enlam = exp(-lambda), prod = 1.0, x = 0.0;
    for (;;) {
        prod *= rand_double(g);
        if (prod > enlam)
            x += 1.0;
        else
            return x;
    }
}

float tsrnn_torch_sample_standard_gamma(struct tsrnn_torch_generator *g, float alpha)
{
    double scale = 1.0;
    if (alpha < 1.0f) {
        if (alpha == 0.0f)
            return FLT_MIN; /* max(FLT_MIN, 0) */
        scale *= pow(1.0 - rand_double(g), (double)(1.0f / alpha));
        alpha += 1.0f;
    }
    /* Marsaglia and Tsang (2000), as ATen's sample_gamma: float constants, double math. */
    const double d = (double)(alpha - 1.0f / 3.0f);
    const double c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, y;
        do {
            x = tsrnn_torch_sample_normal(g);
            y = 1.0 + c * x;
        } while (y <= 0);
        const double v = y * y * y;
        const double u = 1.0 - rand_double(g);
        const double xx = x * x;
        float sample;
        if (u < 1.0 - (double)0.0331f * xx * xx || log(u) < 0.5 * xx + d * (1.0 - v + log(v))) {
            sample = (float)(scale * d * v);
            return sample > FLT_MIN ? sample : FLT_MIN;
        }
    }
}
