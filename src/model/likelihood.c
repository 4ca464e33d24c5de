/* Darts' likelihoods: names, parameters, and each target's loss term with its gradient, in
 * float32 with PyTorch's operations (include/tsrnn/likelihood.h). The compute backends sum
 * the terms over a batch (src/compute/cpu/likelihood.c); forecasts draw from the
 * parameters (src/forecast/sampling.c). */
#include "tsrnn/likelihood.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = { "none",     "gaussian", "laplace",
                                     "quantile", "poisson",  "negative_binomial" };
static const char *const classes[] = { "None",
                                       "GaussianLikelihood",
                                       "LaplaceLikelihood",
                                       "QuantileRegression",
                                       "PoissonLikelihood",
                                       "NegativeBinomialLikelihood" };

const char *tsrnn_likelihood_name(enum tsrnn_likelihood_kind kind)
{
    return (size_t)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char *tsrnn_likelihood_darts_class(enum tsrnn_likelihood_kind kind)
{
    return (size_t)kind < sizeof(classes) / sizeof(classes[0]) ? classes[kind] : "?";
}

/* Python's repr() of a float: the shortest text that reads back, with ".0" when it would look
 * like an integer. */
static void python_float(char *out, size_t capacity, double v)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, capacity, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            break;
    }
    if (strpbrk(out, ".eEni") == NULL && strlen(out) + 3 <= capacity)
        strcat(out, ".0");
}

/* "name=value" of prior i, Python's None when it is not set. */
static void prior_text(const struct tsrnn_likelihood *lik, size_t i, char *out, size_t capacity)
{
    char value[40] = "None";
    if (lik->has_prior[i])
        python_float(value, sizeof(value), lik->prior[i]);
    snprintf(out, capacity, "%s=%s", tsrnn_likelihood_prior_name(lik->kind, i), value);
}

size_t tsrnn_likelihood_repr(const struct tsrnn_likelihood *lik, char *out, size_t out_nbytes)
{
    char a[64], b[64], strength[40], beta[40], list[TSRNN_LIKELIHOOD_MAX_QUANTILES * 24] = "";
    python_float(strength, sizeof(strength), lik->prior_strength);
    const char *name = tsrnn_likelihood_darts_class(lik->kind);
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
        prior_text(lik, 0, a, sizeof(a));
        prior_text(lik, 1, b, sizeof(b));
        python_float(beta, sizeof(beta), lik->beta_nll);
        return (size_t)snprintf(out, out_nbytes, "%s(%s, %s, beta_nll=%s, prior_strength=%s)", name,
                                a, b, beta, strength);
    case TSRNN_LIKELIHOOD_LAPLACE:
        prior_text(lik, 0, a, sizeof(a));
        prior_text(lik, 1, b, sizeof(b));
        return (size_t)snprintf(out, out_nbytes, "%s(%s, %s, prior_strength=%s)", name, a, b,
                                strength);
    case TSRNN_LIKELIHOOD_POISSON:
        prior_text(lik, 0, a, sizeof(a));
        return (size_t)snprintf(out, out_nbytes, "%s(%s, prior_strength=%s)", name, a, strength);
    case TSRNN_LIKELIHOOD_QUANTILE:
        for (size_t i = 0, used = 0; i < lik->quantile_count && used < sizeof(list); i++) {
            char q[40];
            python_float(q, sizeof(q), lik->quantiles[i]);
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", q);
        }
        return (size_t)snprintf(out, out_nbytes, "%s(quantiles=[%s], prior_strength=%s)", name,
                                list, strength);
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
        return (size_t)snprintf(out, out_nbytes, "%s(prior_strength=1.0)", name);
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    return (size_t)snprintf(out, out_nbytes, "None");
}

bool tsrnn_likelihood_parse_name(const char *name, enum tsrnn_likelihood_kind *kind)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0) {
            *kind = (enum tsrnn_likelihood_kind)i;
            return true;
        }
    return false;
}

size_t tsrnn_likelihood_param_count(const struct tsrnn_likelihood *lik)
{
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LAPLACE:
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
        return 2;
    case TSRNN_LIKELIHOOD_QUANTILE:
        return lik->quantile_count;
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    return 1;
}

void tsrnn_likelihood_param_name(const struct tsrnn_likelihood *lik, size_t p, char *out,
                                 size_t out_nbytes)
{
    static const char *const gaussian[] = { "mu", "sigma" }, *const laplace[] = { "mu", "b" },
                             *const negbin[] = { "r", "p" };
    const char *name = "value";
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
        name = gaussian[p & 1];
        break;
    case TSRNN_LIKELIHOOD_LAPLACE:
        name = laplace[p & 1];
        break;
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
        name = negbin[p & 1];
        break;
    case TSRNN_LIKELIHOOD_POISSON:
        name = "lambda";
        break;
    case TSRNN_LIKELIHOOD_QUANTILE:
        /* Darts' quantile_names(): f"q{q:.3f}" */
        snprintf(out, out_nbytes, "q%.3f", p < lik->quantile_count ? lik->quantiles[p] : 0.0);
        return;
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    snprintf(out, out_nbytes, "%s", name);
}

const char *tsrnn_likelihood_prior_name(enum tsrnn_likelihood_kind kind, size_t i)
{
    switch (kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
        return i == 0 ? "prior_mu" : i == 1 ? "prior_sigma" : NULL;
    case TSRNN_LIKELIHOOD_LAPLACE:
        return i == 0 ? "prior_mu" : i == 1 ? "prior_b" : NULL;
    case TSRNN_LIKELIHOOD_POISSON:
        return i == 0 ? "prior_lambda" : NULL;
    case TSRNN_LIKELIHOOD_NONE:
    case TSRNN_LIKELIHOOD_QUANTILE:
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
        break;
    }
    return NULL;
}

bool tsrnn_likelihood_needs_counts(enum tsrnn_likelihood_kind kind)
{
    return kind == TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum tsrnn_status tsrnn_likelihood_parse_quantiles(struct tsrnn_likelihood *lik, const char *text)
{
    size_t n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *end;
        double q = strtod(p, &end);
        const char *after = end;
        while (*after == ' ' || *after == '\t')
            after++;
        if (end == p || (*after != ',' && *after != '\0'))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "'%s' is not a comma-separated list of numbers; accepted: "
                               "quantiles in (0, 1) such as 0.05, 0.5, 0.95",
                               text);
        if (!(q > 0.0 && q < 1.0))
            return tsrnn_error(TSRNN_ERR_USAGE, "quantile %g is not in (0, 1)", q);
        if (n == TSRNN_LIKELIHOOD_MAX_QUANTILES)
            return tsrnn_error(TSRNN_ERR_USAGE, "more than %d quantiles",
                               TSRNN_LIKELIHOOD_MAX_QUANTILES);
        lik->quantiles[n++] = q;
        if (*after == '\0')
            break;
        p = after + 1;
    }
    qsort(lik->quantiles, n, sizeof(double), compare_doubles);
    for (size_t i = 1; i < n; i++)
        if (lik->quantiles[i] == lik->quantiles[i - 1])
            return tsrnn_error(TSRNN_ERR_USAGE, "quantile %g is given twice", lik->quantiles[i]);
    bool median = false;
    for (size_t i = 0; i < n; i++) {
        median |= lik->quantiles[i] == 0.5;
        /* Darts: (0.5 - left) + (0.5 - right) within 1e-6 for the i-th from each end. */
        double asym = (0.5 - lik->quantiles[i]) + (0.5 - lik->quantiles[n - 1 - i]);
        if (!(asym > -1e-6 && asym < 1e-6))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "quantiles %g and %g are not symmetric around 0.5 (Darts' "
                               "QuantileRegression samples between them); accepted: each q "
                               "below 0.5 with 1 - q above it",
                               lik->quantiles[i], lik->quantiles[n - 1 - i]);
    }
    if (!median)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the quantiles lack the median 0.5, which Darts' QuantileRegression "
                           "requires");
    lik->quantile_count = n;
    return TSRNN_OK;
}

/* --- float32 pieces as PyTorch's CPU kernels compute them ----------------------------------- */

float tsrnn_softplus(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

/* Softplus's backward factor: exp(x) / (exp(x) + 1), or 1 above the threshold. */
static float softplus_grad(float x)
{
    if (x > 20.0f)
        return 1.0f;
    float z = expf(x);
    return z / (z + 1.0f);
}

/* torch.nn.functional.logsigmoid: min(x, 0) - log1p(exp(-|x|)). */
static float log_sigmoid(float x)
{
    return fminf(x, 0.0f) - log1pf(expf(-fabsf(x)));
}

static float sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

static float sgn(float x)
{
    return (float)((x > 0.0f) - (x < 0.0f));
}

double tsrnn_digamma(double x)
{
    /* Recurrence up to x >= 6, then the asymptotic series (Abramowitz & Stegun 6.3.18). */
    double shift = 0.0;
    while (x < 6.0) {
        shift -= 1.0 / x;
        x += 1.0;
    }
    double f = 1.0 / (x * x);
    double series =
        f * (-1.0 / 12 +
             f * (1.0 / 120 +
                  f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132 + f * 691.0 / 32760)))));
    return shift + log(x) - 0.5 / x + series;
}

/* GaussianNLLLoss(full=True, eps=1e-6, reduction="none") of y given mu, sigma, with Darts'
 * beta-NLL weight; d_mu, d_sigma its gradient. */
static float gaussian_nll(float mu, float sigma, float y, float beta_nll, float *d_mu,
                          float *d_sigma)
{
    float var = sigma * sigma;
    float v = var < 1e-6f ? 1e-6f : var; /* var.clamp_(min=eps) under no_grad */
    float d = mu - y;
    float term = 0.5f * (logf(v) + d * d / v) + (float)(0.5 * log(2.0 * M_PI));
    float weight = beta_nll > 0.0f ? powf(var, beta_nll) : 1.0f; /* var.detach() ** beta */
    if (d_mu != NULL) {
        float g = 0.5f * weight;
        *d_mu = g * (2.0f * d / v);
        float d_var = g * (1.0f / v - d * d / (v * v)); /* the clone passes it through */
        *d_sigma = d_var * 2.0f * sigma;
    }
    return beta_nll > 0.0f ? term * weight : term;
}

/* KL(Normal(pm, ps) || Normal(mu, s)) (torch's _kl_normal_normal) and its partials. */
static float kl_normal(float pm, float ps, float mu, float s, float *d_pm, float *d_ps, float *d_mu,
                       float *d_s)
{
    float r = ps / s, dd = (pm - mu) / s;
    float var_ratio = r * r, t1 = dd * dd;
    float kl = 0.5f * (var_ratio + t1 - 1.0f - logf(var_ratio));
    if (d_pm != NULL) {
        float d_r = r - 1.0f / r;
        *d_pm = dd / s;
        *d_mu = -dd / s;
        *d_ps = d_r / s;
        *d_s = -d_r * r / s - dd * dd / s;
    }
    return kl;
}

/* KL(Laplace(pm, pb) || Laplace(mu, b)) (torch's _kl_laplace_laplace) and its partials. */
static float kl_laplace(float pm, float pb, float mu, float b, float *d_pm, float *d_pb,
                        float *d_mu, float *d_b)
{
    float sr = pb / b, lad = fabsf(pm - mu);
    float e = expf(-lad / pb);
    float kl = -logf(sr) + lad / b + sr * e - 1.0f;
    if (d_pm != NULL) {
        float d_lad = 1.0f / b - e / b; /* t2 and t3 */
        *d_pm = d_lad * sgn(pm - mu);
        *d_mu = -d_lad * sgn(pm - mu);
        *d_pb = -1.0f / pb + e / b + e * lad / (b * pb);
        *d_b = 1.0f / b - lad / (b * b) - pb * e / (b * b);
    }
    return kl;
}

/* The prior's term for the two-parameter location-scale kinds: loc and scale are the
 * predicted ones (after the transform); d_loc, d_scale get strength x its gradient. */
static float prior_term(const struct tsrnn_likelihood *lik, float loc, float scale, float *d_loc,
                        float *d_scale)
{
    float pm = lik->has_prior[0] ? (float)lik->prior[0] : loc;
    float ps = lik->has_prior[1] ? (float)lik->prior[1] : scale;
    float g_pm, g_ps, g_mu, g_s, kl;
    kl = lik->kind == TSRNN_LIKELIHOOD_GAUSSIAN
             ? kl_normal(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s)
             : kl_laplace(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s);
    /* A prior parameter not set is the predicted one: its gradient flows there too. */
    if (!lik->has_prior[0])
        g_mu += g_pm;
    if (!lik->has_prior[1])
        g_s += g_ps;
    float strength = (float)lik->prior_strength;
    *d_loc = strength * g_mu;
    *d_scale = strength * g_s;
    return strength * kl;
}

static bool any_prior(const struct tsrnn_likelihood *lik)
{
    return lik->has_prior[0] || lik->has_prior[1];
}

float tsrnn_likelihood_term(const struct tsrnn_likelihood *lik, const float *raw, float y,
                            float *d_raw)
{
    float g0 = 0.0f, g1 = 0.0f, term = 0.0f;
    bool grad = d_raw != NULL;
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LAPLACE: {
        float loc = raw[0], scale = tsrnn_softplus(raw[1]);
        if (lik->kind == TSRNN_LIKELIHOOD_GAUSSIAN) {
            term = gaussian_nll(loc, scale, y, (float)lik->beta_nll, grad ? &g0 : NULL,
                                grad ? &g1 : NULL);
        } else {
            /* -Laplace(loc, scale).log_prob(y): -(-log(2 b) - |y - mu| / b) */
            float e = y - loc;
            term = logf(2.0f * scale) + fabsf(e) / scale;
            g0 = -sgn(e) / scale;
            g1 = 1.0f / scale - fabsf(e) / (scale * scale);
        }
        if (any_prior(lik)) {
            float p0, p1;
            term += prior_term(lik, loc, scale, &p0, &p1);
            g0 += p0;
            g1 += p1;
        }
        if (grad) {
            d_raw[0] = g0;
            d_raw[1] = g1 * softplus_grad(raw[1]);
        }
        return term;
    }
    case TSRNN_LIKELIHOOD_POISSON: {
        float lam = tsrnn_softplus(raw[0]);
        term = lam - y * logf(lam + 1e-8f);
        if (y > 1.0f) /* Stirling's term, masked where target <= 1 */
            term += y * logf(y) - y + 0.5f * logf((float)(2.0 * M_PI) * y);
        g0 = 1.0f - y / (lam + 1e-8f);
        if (lik->has_prior[0]) { /* KL(Poisson(p) || Poisson(lam)) */
            float p = (float)lik->prior[0], s = (float)lik->prior_strength;
            term += s * (p * (logf(p) - logf(lam)) - (p - lam));
            g0 += s * (1.0f - p / lam);
        }
        if (grad)
            d_raw[0] = g0 * softplus_grad(raw[0]);
        return term;
    }
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL: {
        float mu = tsrnn_softplus(raw[0]), alpha = tsrnn_softplus(raw[1]);
        float r = 1.0f / alpha, logits = logf(mu) + logf(alpha);
        float unnormalized = r * log_sigmoid(-logits) + y * log_sigmoid(logits);
        float normalization = -lgammaf(r + y) + lgammaf(1.0f + y) + lgammaf(r);
        if (r + y == 0.0f)
            normalization = 0.0f;
        term = -(unnormalized - normalization);
        if (grad) {
            float d_r = -(log_sigmoid(-logits) + (float)tsrnn_digamma((double)(r + y)) -
                          (float)tsrnn_digamma((double)r));
            float d_logits = r * sigmoid(logits) - y * sigmoid(-logits);
            float d_mu = d_logits / mu;
            float d_alpha = -d_r / (alpha * alpha) + d_logits / alpha;
            d_raw[0] = d_mu * softplus_grad(raw[0]);
            d_raw[1] = d_alpha * softplus_grad(raw[1]);
        }
        return term;
    }
    case TSRNN_LIKELIHOOD_QUANTILE: {
        for (size_t i = 0; i < lik->quantile_count; i++) {
            float q = (float)lik->quantiles[i];
            float e = y - raw[i], lo = (q - 1.0f) * e, hi = q * e;
            term += lo > hi ? lo : hi;
            if (grad) /* torch.maximum's backward: a tie gives each side half */
                d_raw[i] = -(lo > hi ? q - 1.0f : hi > lo ? q : 0.5f * (q - 1.0f) + 0.5f * q);
        }
        return term;
    }
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    float e = raw[0] - y; /* no likelihood: a squared error, for completeness */
    if (grad)
        d_raw[0] = 2.0f * e;
    return e * e;
}

void tsrnn_likelihood_params(const struct tsrnn_likelihood *lik, const float *raw, float *params)
{
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LAPLACE:
        params[0] = raw[0];
        params[1] = tsrnn_softplus(raw[1]);
        return;
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
        params[0] = tsrnn_softplus(raw[0]);
        params[1] = tsrnn_softplus(raw[1]);
        return;
    case TSRNN_LIKELIHOOD_POISSON:
        params[0] = tsrnn_softplus(raw[0]);
        return;
    case TSRNN_LIKELIHOOD_QUANTILE:
        memcpy(params, raw, lik->quantile_count * sizeof(float));
        return;
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    params[0] = raw[0];
}

void tsrnn_likelihood_public_params(const struct tsrnn_likelihood *lik, const float *raw,
                                    float *out)
{
    tsrnn_likelihood_params(lik, raw, out);
    if (lik->kind == TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL) {
        float mu = out[0], alpha = out[1];
        out[0] = 1.0f / alpha;                    /* r */
        out[1] = sigmoid(logf(mu) + logf(alpha)); /* p = torch.sigmoid(logits) */
    }
}
