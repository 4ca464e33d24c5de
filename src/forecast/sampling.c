/* Darts' probabilistic predict: likelihood.sample() as PyTorch draws it, and the sample paths
 * in Darts' order (include/tsrnn/sampling.h). */
#include "tsrnn/sampling.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/compute.h"

/* A distribution's parameter PyTorch would refuse (Normal's scale, Poisson's rate, ...) or
 * that is not a number: the forecast stops here, naming it. */
static enum tsrnn_status bad_parameter(const struct tsrnn_likelihood *lik, const char *what,
                                       float value)
{
    return tsrnn_error(TSRNN_ERR_NUMERIC,
                       "the %s forecast's %s is %g: the model's outputs are not usable (a "
                       "diverged or untrained model?)",
                       tsrnn_likelihood_name(lik->kind), what, (double)value);
}

/* QuantileRegression.sample() of one target: u = torch.rand(), the quantiles q_i around it
 * (0 and 1 added, the outer outputs repeated), a linear interpolation in float. */
static float quantile_sample(const struct tsrnn_likelihood *lik, const float *out, float u)
{
    size_t Q = lik->quantile_count, left = 0;
    while (left < Q && u > (float)lik->quantiles[left])
        left++; /* torch.sum(p > tquantiles) */
    /* shifted = [o_0, o_0, o_1, ..., o_{Q-1}, o_{Q-1}], ext = [0, q_0, ..., q_{Q-1}, 1] */
    float left_value = out[left == 0 ? 0 : left - 1];
    float right_value = out[left == Q ? Q - 1 : left];
    float left_q = left == 0 ? 0.0f : (float)lik->quantiles[left - 1];
    float right_q = left == Q ? 1.0f : (float)lik->quantiles[left];
    float weight = (u - left_q) / (right_q - left_q);
    return left_value + weight * (right_value - left_value);
}

enum tsrnn_status tsrnn_likelihood_sample(const struct tsrnn_likelihood *lik, float *x,
                                          const float *raw, size_t count,
                                          struct tsrnn_torch_generator *g, float *scratch)
{
    size_t P = tsrnn_likelihood_param_count(lik);
    float params[TSRNN_LIKELIHOOD_MAX_QUANTILES];
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
        /* torch.normal(mu, sigma): normal_(0, 1) of the result, then .mul_(std).add_(mean) */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!isfinite(params[0]) || !(params[1] >= 0.0f) || !isfinite(params[1]))
                return bad_parameter(lik, isfinite(params[0]) ? "sigma" : "mu",
                                     isfinite(params[0]) ? params[1] : params[0]);
        }
        tsrnn_torch_sample_normal_fill(x, count, g);
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float scaled = x[i] * params[1];
            x[i] = scaled + params[0];
        }
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_LAPLACE: {
        /* Laplace.rsample(): u = uniform_(eps - 1, 1); loc - scale * u.sign() * log1p(-|u|) */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!isfinite(params[0]) || !(params[1] > 0.0f) || !isfinite(params[1]))
                return bad_parameter(lik, isfinite(params[0]) ? "b" : "mu",
                                     isfinite(params[0]) ? params[1] : params[0]);
        }
        tsrnn_torch_sample_uniform_fill(x, count, g, (double)FLT_EPSILON - 1.0, 1.0);
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float u = x[i], sign = (float)((u > 0.0f) - (u < 0.0f));
            float spread = params[1] * sign * log1pf(-fabsf(u));
            x[i] = params[0] - spread;
        }
        return TSRNN_OK;
    }
    case TSRNN_LIKELIHOOD_POISSON:
        for (size_t i = 0; i < count; i++) {
            float lam = tsrnn_softplus(raw[i]);
            if (!(lam >= 0.0f) || !isfinite(lam))
                return bad_parameter(lik, "lambda", lam);
            x[i] = (float)tsrnn_torch_sample_poisson(g, (double)lam);
        }
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL: {
        /* NegativeBinomial.sample(): rate = Gamma(r, exp(-logits)).sample() for all (standard
         * gammas / rate, at least FLT_MIN), then torch.poisson(rate) for all. */
        float *rate = scratch;
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float r = 1.0f / params[1], logits = logf(params[0]) + logf(params[1]);
            if (!(r > 0.0f) || !isfinite(r) || !isfinite(logits))
                return bad_parameter(lik, isfinite(r) ? "logits" : "r", isfinite(r) ? logits : r);
            rate[i] = expf(-logits);
            scratch[count + i] = r;
        }
        for (size_t i = 0; i < count; i++) {
            float value = tsrnn_torch_sample_standard_gamma(g, scratch[count + i]) / rate[i];
            rate[i] = value > FLT_MIN ? value : FLT_MIN;
            if (!isfinite(rate[i]))
                return bad_parameter(lik, "Poisson rate", rate[i]);
        }
        for (size_t i = 0; i < count; i++)
            x[i] = (float)tsrnn_torch_sample_poisson(g, (double)rate[i]);
        return TSRNN_OK;
    }
    case TSRNN_LIKELIHOOD_LOGNORMAL:
    case TSRNN_LIKELIHOOD_HALFNORMAL: {
        /* TransformedDistribution.sample(): Normal.sample() (torch.normal(loc, scale), loc 0
         * for the half-normal), then the transform: exp, abs */
        bool half = lik->kind == TSRNN_LIKELIHOOD_HALFNORMAL;
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float scale = half ? params[0] : params[1];
            if ((!half && !isfinite(params[0])) || !(scale >= 0.0f) || !isfinite(scale))
                return bad_parameter(lik, !half && !isfinite(params[0]) ? "mu" : "sigma",
                                     !half && !isfinite(params[0]) ? params[0] : scale);
        }
        tsrnn_torch_sample_normal_fill(x, count, g);
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float scaled = x[i] * (half ? params[0] : params[1]);
            float normal = scaled + (half ? 0.0f : params[0]);
            x[i] = half ? fabsf(normal) : expf(normal);
        }
        return TSRNN_OK;
    }
    case TSRNN_LIKELIHOOD_CAUCHY:
        /* Cauchy.rsample(): eps = cauchy_() (float), loc + eps * scale */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!isfinite(params[0]) || !(params[1] > 0.0f) || !isfinite(params[1]))
                return bad_parameter(lik, isfinite(params[0]) ? "gamma" : "xzero",
                                     isfinite(params[0]) ? params[1] : params[0]);
        }
        for (size_t i = 0; i < count; i++) {
            float eps = (float)tsrnn_torch_sample_cauchy(g);
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float spread = eps * params[1];
            x[i] = params[0] + spread;
        }
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_GAMMA:
        /* Gamma.rsample(): _standard_gamma(alpha) / beta, at least FLT_MIN */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!(params[0] >= 0.0f) || !isfinite(params[0]) || !(params[1] > 0.0f) ||
                !isfinite(params[1]))
                return bad_parameter(lik, isfinite(params[0]) ? "beta" : "alpha",
                                     isfinite(params[0]) ? params[1] : params[0]);
        }
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float value = tsrnn_torch_sample_standard_gamma(g, params[0]) / params[1];
            x[i] = value > FLT_MIN ? value : FLT_MIN;
        }
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
    case TSRNN_LIKELIHOOD_WEIBULL: {
        /* Exponential.rsample(): exponential_() / rate. Weibull's: Exponential(1)'s, then
         * x^(1 / k) and lambda x (its PowerTransform and AffineTransform) */
        bool weibull = lik->kind == TSRNN_LIKELIHOOD_WEIBULL;
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!(params[0] > 0.0f) || !isfinite(params[0]) ||
                (weibull && (!(params[1] > 0.0f) || !isfinite(params[1]))))
                return bad_parameter(lik, params[0] > 0.0f && isfinite(params[0]) ? "k" : "lambda",
                                     params[0] > 0.0f && isfinite(params[0]) ? params[1]
                                                                             : params[0]);
        }
        for (size_t i = 0; i < count; i++) {
            float e = (float)tsrnn_torch_sample_exponential(g);
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (weibull) {
                float r = 1.0f / params[1];
                x[i] = params[0] * powf(e, r);
            } else {
                x[i] = e / params[0];
            }
        }
        return TSRNN_OK;
    }
    case TSRNN_LIKELIHOOD_GUMBEL: {
        /* Gumbel: Uniform(tiny, 1 - eps).rsample() (low + torch.rand() (high - low)), then
         * log, negate, log, loc + (-scale) x */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!isfinite(params[0]) || !(params[1] > 0.0f) || !isfinite(params[1]))
                return bad_parameter(lik, isfinite(params[0]) ? "beta" : "mu",
                                     isfinite(params[0]) ? params[1] : params[0]);
        }
        tsrnn_torch_sample_uniform_fill(x, count, g, 0.0, 1.0);
        const float low = FLT_MIN, high = (float)(1.0 - (double)FLT_EPSILON);
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            float u = low + x[i] * (high - low);
            float v = logf(-logf(u));
            x[i] = params[0] + -params[1] * v;
        }
        return TSRNN_OK;
    }
    case TSRNN_LIKELIHOOD_GEOMETRIC:
        /* Geometric.sample(): u = uniform_(tiny, 1); floor(log(u) / log1p(-p)) */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!(params[0] > 0.0f) || !(params[0] <= 1.0f))
                return bad_parameter(lik, "p", params[0]);
        }
        tsrnn_torch_sample_uniform_fill(x, count, g, (double)FLT_MIN, 1.0);
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            x[i] = floorf(logf(x[i]) / log1pf(-params[0]));
        }
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_BERNOULLI:
        /* torch.bernoulli(p): one float uniform each, 1 where it is below p */
        for (size_t i = 0; i < count; i++) {
            tsrnn_likelihood_params(lik, raw + i * P, params);
            if (!(params[0] >= 0.0f) || !(params[0] <= 1.0f))
                return bad_parameter(lik, "p", params[0]);
        }
        for (size_t i = 0; i < count; i++) {
            float u = tsrnn_torch_sample_rand(g);
            tsrnn_likelihood_params(lik, raw + i * P, params);
            x[i] = u < params[0] ? 1.0f : 0.0f;
        }
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_QUANTILE:
        for (size_t i = 0; i < count; i++)
            x[i] = tsrnn_torch_sample_rand(g);
        for (size_t i = 0; i < count; i++)
            x[i] = quantile_sample(lik, raw + i * P, x[i]);
        return TSRNN_OK;
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    return tsrnn_error(TSRNN_ERR_USAGE, "sampling needs a likelihood");
}

enum tsrnn_status tsrnn_sample_forecasts(struct tsrnn_model *model, float *out,
                                         const float *context, const float *future, size_t R,
                                         size_t icl, size_t n, const struct tsrnn_sampling *s)
{
    const struct tsrnn_likelihood *lik = &model->likelihood;
    size_t O = model->dims.output_count, I = model->dims.input_count, K = I - O;
    size_t P = tsrnn_likelihood_param_count(lik), OP = O * P, S = s->num_samples;
    size_t bs = s->batch_size;
    if (lik->kind == TSRNN_LIKELIHOOD_NONE)
        return tsrnn_error(TSRNN_ERR_USAGE, "a sampled forecast needs a model with a likelihood");
    if (R == 0 || n == 0 || S == 0 || bs == 0 || icl == 0 || (K > 0 && n > 1 && future == NULL))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%zu forecasts of %zu steps, %zu samples, batch_size %zu, "
                           "input_chunk_length %zu%s: each must be at least 1",
                           R, n, S, bs, icl, K > 0 && future == NULL ? ", no covariates" : "");
    if (s->likelihood_parameters && (S != 1 || n != 1))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the likelihood's parameters are predicted for n = 1 and num_samples "
                           "= 1 (RNNModel's output_chunk_length is 1, as Darts requires), not n "
                           "= %zu with %zu samples",
                           n, S);
    size_t rows_max = R < bs ? R : bs;
    size_t group_max = bs / rows_max > 1 ? bs / rows_max : 1;
    size_t B_max = (group_max < S ? group_max : S) * rows_max;
    if (B_max > model->batch_capacity || icl > model->step_capacity)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a forecast batch of %zu windows of %zu steps does not fit the model's "
                           "workspace (%zu windows of %zu steps)",
                           B_max, icl, model->batch_capacity, model->step_capacity);

    float *x = malloc(B_max * icl * I * sizeof(float)); /* (B, icl, I), then (B, 1, I) */
    float *raw = malloc(B_max * OP * sizeof(float));
    float *drawn = malloc(B_max * O * sizeof(float));
    float *scratch = malloc(2 * B_max * O * sizeof(float));
    enum tsrnn_status status = TSRNN_OK;
    if (x == NULL || raw == NULL || drawn == NULL || scratch == NULL) {
        status =
            tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a batch of %zu sample paths", B_max);
        goto out;
    }

    struct tsrnn_torch_generator g;
    tsrnn_torch_generator_seed(&g, s->seed);
    tsrnn_mt19937_discard(&g.mt, 2); /* the predict DataLoader's base_seed: one int64 */
    for (size_t r0 = 0; r0 < R; r0 += bs) {
        size_t rows = R - r0 < bs ? R - r0 : bs;
        size_t group = bs / rows > 1 ? bs / rows : 1;
        if (group > S)
            group = S;
        for (size_t s0 = 0; s0 < S; s0 += group) {
            size_t cur = S - s0 < group ? S - s0 : group, B = cur * rows;
            for (size_t j = 0; j < B; j++) /* tiled: every window once per sample */
                memcpy(x + j * icl * I, context + (r0 + j % rows) * icl * I,
                       icl * I * sizeof(float));
            for (size_t k = 0; k < n; k++) {
                status = k == 0 ? tsrnn_compute_forward(model->ws, model->params, x, NULL, B, icl,
                                                        TSRNN_FORWARD_ZERO)
                                : tsrnn_compute_forward(model->ws, model->params, x, NULL, B, 1,
                                                        TSRNN_FORWARD_SAVED);
                if (status != TSRNN_OK)
                    goto out;
                status = tsrnn_model_download_output(model, k == 0 ? icl - 1 : 0, raw);
                if (status != TSRNN_OK)
                    goto out;
                if (s->likelihood_parameters) {
                    for (size_t j = 0; j < B; j++)
                        for (size_t o = 0; o < O; o++)
                            tsrnn_likelihood_public_params(lik, raw + (j * O + o) * P,
                                                           out + (r0 + j) * OP + o * P);
                    break;
                }
                status = tsrnn_likelihood_sample(lik, drawn, raw, B * O, &g, scratch);
                if (status != TSRNN_OK)
                    goto out;
                for (size_t j = 0; j < B; j++) {
                    size_t r = r0 + j % rows, sample = s0 + j / rows;
                    memcpy(out + ((r * S + sample) * n + k) * O, drawn + j * O, O * sizeof(float));
                    /* the next step's input: the sample, beside the next covariates */
                    memcpy(x + j * I, drawn + j * O, O * sizeof(float));
                    if (K > 0 && k + 1 < n)
                        memcpy(x + j * I + O, future + (k * R + r) * K, K * sizeof(float));
                }
            }
        }
    }
out:
    free(x);
    free(raw);
    free(drawn);
    free(scratch);
    return status;
}

float tsrnn_quantile_of_sorted(const float *sorted, size_t count, float q)
{
    /* numpy's "linear" method for float32: index (n - 1) q in float32, lerp in float32 */
    float index = (float)(count - 1) * q;
    if (!(index > 0.0f))
        return sorted[0];
    if (index >= (float)(count - 1))
        return sorted[count - 1];
    float below = floorf(index), t = index - below;
    size_t i = (size_t)below;
    float a = sorted[i], b = sorted[i + 1], diff = b - a;
    return t >= 0.5f ? b - diff * (1.0f - t) : a + diff * t;
}
