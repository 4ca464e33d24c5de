/* Darts' likelihoods: names, parameters, and each target's loss term with its gradient, in
 * float32 with PyTorch's operations (include/tsrnn/likelihood.h). The compute backends sum
 * the terms over a batch (src/compute/cpu/likelihood.c); forecasts draw from the
 * parameters (src/forecast/sampling.c). */
#include "tsrnn/likelihood.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/config.h"

static const char *const names[] = { "none",      "gaussian",    "laplace",
                                     "quantile",  "poisson",     "negative_binomial",
                                     "lognormal", "halfnormal",  "cauchy",
                                     "gamma",     "exponential", "weibull",
                                     "gumbel",    "geometric",   "bernoulli" };
static const char *const classes[] = { "None",
                                       "GaussianLikelihood",
                                       "LaplaceLikelihood",
                                       "QuantileRegression",
                                       "PoissonLikelihood",
                                       "NegativeBinomialLikelihood",
                                       "LogNormalLikelihood",
                                       "HalfNormalLikelihood",
                                       "CauchyLikelihood",
                                       "GammaLikelihood",
                                       "ExponentialLikelihood",
                                       "WeibullLikelihood",
                                       "GumbelLikelihood",
                                       "GeometricLikelihood",
                                       "BernoulliLikelihood" };

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
    case TSRNN_LIKELIHOOD_LOGNORMAL:
    case TSRNN_LIKELIHOOD_CAUCHY:
    case TSRNN_LIKELIHOOD_GAMMA:
    case TSRNN_LIKELIHOOD_GUMBEL:
        prior_text(lik, 0, a, sizeof(a));
        prior_text(lik, 1, b, sizeof(b));
        return (size_t)snprintf(out, out_nbytes, "%s(%s, %s, prior_strength=%s)", name, a, b,
                                strength);
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_HALFNORMAL:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
    case TSRNN_LIKELIHOOD_GEOMETRIC:
    case TSRNN_LIKELIHOOD_BERNOULLI:
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
    case TSRNN_LIKELIHOOD_WEIBULL:
        return (size_t)snprintf(out, out_nbytes, "%s(prior_strength=%s)", name, strength);
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
    case TSRNN_LIKELIHOOD_LOGNORMAL:
    case TSRNN_LIKELIHOOD_CAUCHY:
    case TSRNN_LIKELIHOOD_GAMMA:
    case TSRNN_LIKELIHOOD_WEIBULL:
    case TSRNN_LIKELIHOOD_GUMBEL:
        return 2;
    case TSRNN_LIKELIHOOD_QUANTILE:
        return lik->quantile_count;
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_HALFNORMAL:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
    case TSRNN_LIKELIHOOD_GEOMETRIC:
    case TSRNN_LIKELIHOOD_BERNOULLI:
    case TSRNN_LIKELIHOOD_NONE:
        break;
    }
    return 1;
}

void tsrnn_likelihood_param_name(const struct tsrnn_likelihood *lik, size_t p, char *out,
                                 size_t out_nbytes)
{
    static const char *const gaussian[] = { "mu", "sigma" }, *const laplace[] = { "mu", "b" },
                             *const negbin[] = { "r", "p" }, *const cauchy[] = { "xzero", "gamma" },
                             *const gamma[] = { "alpha", "beta" },
                             *const weibull[] = { "lambda", "k" },
                             *const gumbel[] = { "mu", "beta" };
    const char *name = "value";
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LOGNORMAL:
        name = gaussian[p & 1];
        break;
    case TSRNN_LIKELIHOOD_HALFNORMAL:
        name = "sigma";
        break;
    case TSRNN_LIKELIHOOD_CAUCHY:
        name = cauchy[p & 1];
        break;
    case TSRNN_LIKELIHOOD_GAMMA:
        name = gamma[p & 1];
        break;
    case TSRNN_LIKELIHOOD_LAPLACE:
        name = laplace[p & 1];
        break;
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
        name = negbin[p & 1];
        break;
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
        name = "lambda";
        break;
    case TSRNN_LIKELIHOOD_WEIBULL:
        name = weibull[p & 1];
        break;
    case TSRNN_LIKELIHOOD_GUMBEL:
        name = gumbel[p & 1];
        break;
    case TSRNN_LIKELIHOOD_GEOMETRIC:
    case TSRNN_LIKELIHOOD_BERNOULLI:
        name = "p";
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
    case TSRNN_LIKELIHOOD_LOGNORMAL:
        return i == 0 ? "prior_mu" : i == 1 ? "prior_sigma" : NULL;
    case TSRNN_LIKELIHOOD_LAPLACE:
        return i == 0 ? "prior_mu" : i == 1 ? "prior_b" : NULL;
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
        return i == 0 ? "prior_lambda" : NULL;
    case TSRNN_LIKELIHOOD_GUMBEL:
        return i == 0 ? "prior_mu" : i == 1 ? "prior_beta" : NULL;
    case TSRNN_LIKELIHOOD_GEOMETRIC:
    case TSRNN_LIKELIHOOD_BERNOULLI:
        return i == 0 ? "prior_p" : NULL;
    case TSRNN_LIKELIHOOD_HALFNORMAL:
        return i == 0 ? "prior_sigma" : NULL;
    case TSRNN_LIKELIHOOD_CAUCHY:
        return i == 0 ? "prior_xzero" : i == 1 ? "prior_gamma" : NULL;
    case TSRNN_LIKELIHOOD_GAMMA:
        return i == 0 ? "prior_alpha" : i == 1 ? "prior_beta" : NULL;
    case TSRNN_LIKELIHOOD_NONE:
    case TSRNN_LIKELIHOOD_QUANTILE:
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
    case TSRNN_LIKELIHOOD_WEIBULL:
        break;
    }
    return NULL;
}

enum tsrnn_likelihood_support tsrnn_likelihood_support(enum tsrnn_likelihood_kind kind)
{
    switch (kind) {
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
    case TSRNN_LIKELIHOOD_GEOMETRIC:
        return TSRNN_SUPPORT_COUNTS;
    case TSRNN_LIKELIHOOD_LOGNORMAL:
    case TSRNN_LIKELIHOOD_GAMMA:
    case TSRNN_LIKELIHOOD_WEIBULL:
        return TSRNN_SUPPORT_POSITIVE;
    case TSRNN_LIKELIHOOD_HALFNORMAL:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
        return TSRNN_SUPPORT_NONNEGATIVE;
    case TSRNN_LIKELIHOOD_BERNOULLI:
        return TSRNN_SUPPORT_BINARY;
    case TSRNN_LIKELIHOOD_NONE:
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LAPLACE:
    case TSRNN_LIKELIHOOD_QUANTILE:
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_CAUCHY:
    case TSRNN_LIKELIHOOD_GUMBEL:
        break;
    }
    return TSRNN_SUPPORT_REAL;
}

bool tsrnn_likelihood_supports(enum tsrnn_likelihood_support support, float y)
{
    switch (support) {
    case TSRNN_SUPPORT_COUNTS:
        return y >= 0.0f && y == floorf(y);
    case TSRNN_SUPPORT_POSITIVE:
        return y > 0.0f;
    case TSRNN_SUPPORT_NONNEGATIVE:
        return y >= 0.0f;
    case TSRNN_SUPPORT_BINARY:
        return y == 0.0f || y == 1.0f;
    case TSRNN_SUPPORT_REAL:
        break;
    }
    return true;
}

const char *tsrnn_likelihood_support_text(enum tsrnn_likelihood_support support)
{
    switch (support) {
    case TSRNN_SUPPORT_COUNTS:
        return "non-negative integers";
    case TSRNN_SUPPORT_POSITIVE:
        return "positive numbers";
    case TSRNN_SUPPORT_NONNEGATIVE:
        return "non-negative numbers";
    case TSRNN_SUPPORT_BINARY:
        return "0 and 1";
    case TSRNN_SUPPORT_REAL:
        break;
    }
    return "numbers";
}

enum tsrnn_status tsrnn_likelihood_parse_quantiles(struct tsrnn_likelihood *lik, const char *text)
{
    return tsrnn_config_parse_quantiles(lik->quantiles, &lik->quantile_count, text);
}

void tsrnn_likelihood_from_config(struct tsrnn_likelihood *lik, const struct tsrnn_config *cfg)
{
    *lik = (struct tsrnn_likelihood){ .kind = cfg->likelihood,
                                      .prior_strength = cfg->prior_strength,
                                      .beta_nll = cfg->beta_nll };
    double priors[TSRNN_LIKELIHOOD_MAX_PRIORS] = { NAN, NAN };
    switch (cfg->likelihood) {
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LOGNORMAL:
        priors[0] = cfg->prior_mu;
        priors[1] = cfg->prior_sigma;
        break;
    case TSRNN_LIKELIHOOD_LAPLACE:
        priors[0] = cfg->prior_mu;
        priors[1] = cfg->prior_b;
        break;
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
        priors[0] = cfg->prior_lambda;
        break;
    case TSRNN_LIKELIHOOD_GUMBEL:
        priors[0] = cfg->prior_mu;
        priors[1] = cfg->prior_beta;
        break;
    case TSRNN_LIKELIHOOD_GEOMETRIC:
    case TSRNN_LIKELIHOOD_BERNOULLI:
        priors[0] = cfg->prior_p;
        break;
    case TSRNN_LIKELIHOOD_HALFNORMAL:
        priors[0] = cfg->prior_sigma;
        break;
    case TSRNN_LIKELIHOOD_CAUCHY:
        priors[0] = cfg->prior_xzero;
        priors[1] = cfg->prior_gamma;
        break;
    case TSRNN_LIKELIHOOD_GAMMA:
        priors[0] = cfg->prior_alpha;
        priors[1] = cfg->prior_beta;
        break;
    case TSRNN_LIKELIHOOD_QUANTILE:
        /* The parser checked the list (tsrnn_config_parse_quantiles()). */
        (void)tsrnn_likelihood_parse_quantiles(
            lik, cfg->quantiles[0] != '\0' ? cfg->quantiles : TSRNN_LIKELIHOOD_DEFAULT_QUANTILES);
        break;
    case TSRNN_LIKELIHOOD_NONE:
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
    case TSRNN_LIKELIHOOD_WEIBULL:
        break;
    }
    for (size_t i = 0; i < TSRNN_LIKELIHOOD_MAX_PRIORS; i++) {
        lik->has_prior[i] = !isnan(priors[i]);
        lik->prior[i] = lik->has_prior[i] ? priors[i] : 0.0;
    }
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

/* torch.distributions.utils.clamp_probs() in float32: into [eps, 1 - eps]. */
static float clamp_prob(float p)
{
    const float lo = FLT_EPSILON, hi = (float)(1.0 - (double)FLT_EPSILON);
    return p < lo ? lo : p > hi ? hi : p;
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

/* Normal(loc, scale).log_prob(v) as torch.distributions computes it: -(v - loc)^2 / (2 var)
 * - log(scale) - log(sqrt(2 pi)), var = scale^2; its partials in loc and scale. */
static float normal_log_prob(float v, float loc, float scale, float *d_loc, float *d_scale)
{
    float d = v - loc, var = scale * scale;
    float lp = -(d * d) / (2.0f * var) - logf(scale) - (float)log(sqrt(2.0 * M_PI));
    if (d_loc != NULL) {
        *d_loc = d / var;
        *d_scale = d * d / (var * scale) - 1.0f / scale;
    }
    return lp;
}

/* KL(Cauchy(pl, ps) || Cauchy(ql, qs)) (torch's _kl_cauchy_cauchy) and its partials. */
static float kl_cauchy(float pl, float ps, float ql, float qs, float *d_pl, float *d_ps,
                       float *d_ql, float *d_qs)
{
    float sum = ps + qs, diff = pl - ql, a = sum * sum + diff * diff;
    float kl = logf(a) - logf(4.0f * ps * qs);
    if (d_pl != NULL) {
        *d_pl = 2.0f * diff / a;
        *d_ql = -2.0f * diff / a;
        *d_ps = 2.0f * sum / a - 1.0f / ps;
        *d_qs = 2.0f * sum / a - 1.0f / qs;
    }
    return kl;
}

/* KL(Gamma(pa, pb) || Gamma(qa, qb)) (torch's _kl_gamma_gamma) and its partials; d_pa leaves
 * out (pa - qa) trigamma(pa), needed only where pa is the predicted alpha, which is qa. */
static float kl_gamma(float pa, float pb, float qa, float qb, float *d_pa, float *d_pb, float *d_qa,
                      float *d_qb)
{
    float t1 = qa * logf(pb / qb);
    float t2 = lgammaf(qa) - lgammaf(pa);
    float psi_pa = (float)tsrnn_digamma((double)pa);
    float t3 = (pa - qa) * psi_pa;
    float t4 = (qb - pb) * (pa / pb);
    if (d_pa != NULL) {
        *d_qa = logf(pb / qb) + (float)tsrnn_digamma((double)qa) - psi_pa;
        *d_pa = (qb - pb) / pb;
        *d_qb = -qa / qb + pa / pb;
        *d_pb = qa / pb - pa / pb - (qb - pb) * pa / (pb * pb);
    }
    return t1 + t2 + t3 + t4;
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

/* The Euler-Mascheroni constant as torch.distributions.utils has it. */
#define EULER_GAMMA 0.57721566490153286060

/* KL(Gumbel(pm, ps) || Gumbel(qm, qs)) (torch's _kl_gumbel_gumbel) and its partials. */
static float kl_gumbel(float pm, float ps, float qm, float qs, float *d_pm, float *d_ps,
                       float *d_qm, float *d_qs)
{
    float ct1 = ps / qs, ct2 = qm / qs, ct3 = pm / qs;
    float t1 = -logf(ct1) - ct2 + ct3;
    float t2 = ct1 * (float)EULER_GAMMA;
    float t3 = expf(ct2 + lgammaf(1.0f + ct1) - ct3);
    if (d_pm != NULL) {
        float d1 =
            -1.0f / ct1 + (float)EULER_GAMMA + t3 * (float)tsrnn_digamma((double)(1.0f + ct1));
        float d2 = t3 - 1.0f, d3 = 1.0f - t3;
        *d_pm = d3 / qs;
        *d_ps = d1 / qs;
        *d_qm = d2 / qs;
        *d_qs = -(d1 * ps + d2 * qm + d3 * pm) / (qs * qs);
    }
    return t1 + t2 + t3 - (float)(1.0 + EULER_GAMMA);
}

/* The prior's term for the two-parameter kinds: a and b are the predicted parameters (after
 * the transform: loc and scale, or gamma's alpha and beta); d_loc, d_scale get strength x
 * its gradient in them. */
static float prior_term(const struct tsrnn_likelihood *lik, float loc, float scale, float *d_loc,
                        float *d_scale)
{
    float pm = lik->has_prior[0] ? (float)lik->prior[0] : loc;
    float ps = lik->has_prior[1] ? (float)lik->prior[1] : scale;
    float g_pm, g_ps, g_mu, g_s, kl;
    switch (lik->kind) {
    case TSRNN_LIKELIHOOD_LAPLACE:
        kl = kl_laplace(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s);
        break;
    case TSRNN_LIKELIHOOD_CAUCHY:
        kl = kl_cauchy(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s);
        break;
    case TSRNN_LIKELIHOOD_GAMMA:
        kl = kl_gamma(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s);
        break;
    case TSRNN_LIKELIHOOD_GUMBEL:
        kl = kl_gumbel(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s);
        break;
    case TSRNN_LIKELIHOOD_GAUSSIAN:
    case TSRNN_LIKELIHOOD_LOGNORMAL: /* the KL of the Normals (of the logs) */
    case TSRNN_LIKELIHOOD_NONE:
    case TSRNN_LIKELIHOOD_QUANTILE:
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
    case TSRNN_LIKELIHOOD_HALFNORMAL:
    default:
        kl = kl_normal(pm, ps, loc, scale, &g_pm, &g_ps, &g_mu, &g_s);
        break;
    }
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
    case TSRNN_LIKELIHOOD_LOGNORMAL:
    case TSRNN_LIKELIHOOD_CAUCHY:
    case TSRNN_LIKELIHOOD_GAMMA: {
        /* (loc, scale): lognormal's mu, sigma; cauchy's xzero, gamma; gamma's alpha, beta */
        bool gamma = lik->kind == TSRNN_LIKELIHOOD_GAMMA;
        float a = gamma ? tsrnn_softplus(raw[0]) : raw[0], b = tsrnn_softplus(raw[1]);
        if (lik->kind == TSRNN_LIKELIHOOD_LOGNORMAL) {
            /* TransformedDistribution(Normal, ExpTransform): (0 - x) + Normal's at x = log y */
            float x = logf(y), lp = -x + normal_log_prob(x, a, b, &g0, &g1);
            term = -lp;
            g0 = -g0;
            g1 = -g1;
        } else if (lik->kind == TSRNN_LIKELIHOOD_CAUCHY) {
            /* -log(pi) - log(gamma) - log1p(((y - x0) / gamma)^2) */
            float r = (y - a) / b, lp = -(float)log(M_PI) - logf(b) - log1pf(r * r);
            term = -lp;
            g0 = -2.0f * r / (b * (1.0f + r * r));
            g1 = 1.0f / b - 2.0f * r * r / (b * (1.0f + r * r));
        } else {
            /* xlogy(alpha, beta) + xlogy(alpha - 1, y) - beta y - lgamma(alpha) */
            float am1 = a - 1.0f;
            float lp = (a == 0.0f ? 0.0f : a * logf(b)) + (am1 == 0.0f ? 0.0f : am1 * logf(y)) -
                       b * y - lgammaf(a);
            term = -lp;
            g0 = -(logf(b) + logf(y) - (float)tsrnn_digamma((double)a));
            g1 = -(a / b - y);
        }
        if (any_prior(lik)) {
            float p0, p1;
            term += prior_term(lik, a, b, &p0, &p1);
            g0 += p0;
            g1 += p1;
        }
        if (grad) {
            d_raw[0] = gamma ? g0 * softplus_grad(raw[0]) : g0;
            d_raw[1] = g1 * softplus_grad(raw[1]);
        }
        return term;
    }
    case TSRNN_LIKELIHOOD_HALFNORMAL: {
        float sigma = tsrnn_softplus(raw[0]), d_sigma, unused;
        /* Normal(0, sigma).log_prob(y) + log 2 (y >= 0) */
        term = -(normal_log_prob(y, 0.0f, sigma, &unused, &d_sigma) + (float)log(2.0));
        g0 = -d_sigma;
        if (lik->has_prior[0]) {
            float p = (float)lik->prior[0], s = (float)lik->prior_strength, u0, u1, g_ps, g_s;
            term += s * kl_normal(0.0f, p, 0.0f, sigma, &u0, &g_ps, &u1, &g_s);
            g0 += s * g_s;
        }
        if (grad)
            d_raw[0] = g0 * softplus_grad(raw[0]);
        return term;
    }
    case TSRNN_LIKELIHOOD_GUMBEL: {
        /* Gumbel.log_prob(): z = (loc - y) / scale; (z - exp(z)) - log(scale) */
        float mu = raw[0], beta = tsrnn_softplus(raw[1]);
        float z = (mu - y) / beta, ez = expf(z);
        term = -((z - ez) - logf(beta));
        float g_z = ez - 1.0f;
        g0 = g_z / beta;
        g1 = -g_z * (mu - y) / (beta * beta) + 1.0f / beta;
        if (any_prior(lik)) {
            float p0, p1;
            term += prior_term(lik, mu, beta, &p0, &p1);
            g0 += p0;
            g1 += p1;
        }
        if (grad) {
            d_raw[0] = g0;
            d_raw[1] = g1 * softplus_grad(raw[1]);
        }
        return term;
    }
    case TSRNN_LIKELIHOOD_EXPONENTIAL: {
        /* Exponential.log_prob(): log(rate) - rate y */
        float lam = tsrnn_softplus(raw[0]);
        term = -(logf(lam) - lam * y);
        g0 = y - 1.0f / lam;
        if (lik->has_prior[0]) { /* KL(Exp(p) || Exp(lam)): -log(lam / p) + lam / p - 1 */
            float p = (float)lik->prior[0], s = (float)lik->prior_strength, ratio = lam / p;
            term += s * (-logf(ratio) + ratio - 1.0f);
            g0 += s * ((1.0f - 1.0f / ratio) / p);
        }
        if (grad)
            d_raw[0] = g0 * softplus_grad(raw[0]);
        return term;
    }
    case TSRNN_LIKELIHOOD_WEIBULL: {
        /* Weibull(lambda, k): Exponential(1) through PowerTransform(1 / k) and
         * AffineTransform(0, lambda); TransformedDistribution.log_prob() inverts them:
         * x1 = y / lambda (log|det| log lambda), x2 = x1^(1 / (1 / k)) (log|det|
         * log|(1 / k) x1 / x2|), then Exponential(1)'s log_prob(x2) = -x2. */
        float lam = tsrnn_softplus(raw[0]), k = tsrnn_softplus(raw[1]);
        float r = 1.0f / k, kk = 1.0f / r;
        float x1 = y / lam, x2 = powf(x1, kk), num = r * x1, z = num / x2;
        float lp = 0.0f - logf(lam);
        lp = lp - logf(fabsf(z));
        term = -(lp + (0.0f - x2));
        if (grad) { /* autograd's path back through those operations */
            float g_z = 1.0f / z, g_num = g_z / x2;
            float g_x2 = 1.0f - g_z * num / (x2 * x2);
            float g_x1 = g_num * r + g_x2 * kk * powf(x1, kk - 1.0f);
            float g_kk = x1 > 0.0f ? g_x2 * x2 * logf(x1) : 0.0f;
            float g_r = g_num * x1 - g_kk * kk * kk;
            float g_k = -g_r * r * r;
            float g_lam = 1.0f / lam - g_x1 * y / (lam * lam);
            d_raw[0] = g_lam * softplus_grad(raw[0]);
            d_raw[1] = g_k * softplus_grad(raw[1]);
        }
        return term;
    }
    case TSRNN_LIKELIHOOD_GEOMETRIC: {
        /* Geometric(probs = sigmoid(raw)).log_prob(): y log1p(-p) + log p, the first term 0
         * where p is 1 and y 0 */
        float p = sigmoid(raw[0]);
        bool masked = p == 1.0f && y == 0.0f;
        float first = masked ? 0.0f : y * log1pf(-p);
        term = -(first + logf(p));
        float g_p = -((masked ? 0.0f : -y / (1.0f - p)) + 1.0f / p);
        if (lik->has_prior[0]) {
            /* KL(Geometric(pp) || Geometric(p)) = -H(pp) - log1p(-p) / pp - logits(p), the
             * entropy H = BCE with logits(logits(pp), pp) / pp, logits of the clamped
             * probabilities */
            float pp = (float)lik->prior[0], s = (float)lik->prior_strength;
            float cpp = clamp_prob(pp), lpp = logf(cpp) - log1pf(-cpp);
            float entropy = ((1.0f - pp) * lpp - log_sigmoid(lpp)) / pp;
            float c = clamp_prob(p), logits = logf(c) - log1pf(-c);
            term += s * (-entropy - log1pf(-p) / pp - logits);
            float g_logits = c == p ? 1.0f / c + 1.0f / (1.0f - c) : 0.0f;
            g_p += s * (1.0f / ((1.0f - p) * pp) - g_logits);
        }
        if (grad)
            d_raw[0] = g_p * (1.0f - p) * p; /* sigmoid's backward */
        return term;
    }
    case TSRNN_LIKELIHOOD_BERNOULLI: {
        /* Bernoulli(probs = sigmoid(raw)).log_prob(): -BCE with logits(logits, y), the logits
         * log(c) - log1p(-c) of c = p clamped to [eps, 1 - eps] */
        float p = sigmoid(raw[0]), c = clamp_prob(p), x = logf(c) - log1pf(-c);
        term = (1.0f - y) * x - log_sigmoid(x);
        float g_x = sigmoid(x) - y;
        if (lik->has_prior[0]) {
            /* KL(Bernoulli(pp) || Bernoulli(p)) = pp (softplus(-x) - softplus(-xp)) + (1 - pp)
             * (softplus(x) - softplus(xp)); infinite where p is 0 or 1 */
            float pp = (float)lik->prior[0], s = (float)lik->prior_strength;
            float cpp = clamp_prob(pp), xp = logf(cpp) - log1pf(-cpp);
            float t1 = pp * (tsrnn_softplus(-x) - tsrnn_softplus(-xp));
            float t2 = (1.0f - pp) * (tsrnn_softplus(x) - tsrnn_softplus(xp));
            if (p == 0.0f)
                t1 = INFINITY;
            if (p == 1.0f)
                t2 = INFINITY;
            term += s * (t1 + t2);
            g_x += s * (-pp * softplus_grad(-x) + (1.0f - pp) * softplus_grad(x));
        }
        float g_p = c == p ? g_x * (1.0f / c + 1.0f / (1.0f - c)) : 0.0f; /* clamp's backward */
        if (grad)
            d_raw[0] = g_p * (1.0f - p) * p;
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
    case TSRNN_LIKELIHOOD_LOGNORMAL:
    case TSRNN_LIKELIHOOD_CAUCHY:
    case TSRNN_LIKELIHOOD_GUMBEL:
        params[0] = raw[0];
        params[1] = tsrnn_softplus(raw[1]);
        return;
    case TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL:
    case TSRNN_LIKELIHOOD_GAMMA:
    case TSRNN_LIKELIHOOD_WEIBULL:
        params[0] = tsrnn_softplus(raw[0]);
        params[1] = tsrnn_softplus(raw[1]);
        return;
    case TSRNN_LIKELIHOOD_POISSON:
    case TSRNN_LIKELIHOOD_HALFNORMAL:
    case TSRNN_LIKELIHOOD_EXPONENTIAL:
        params[0] = tsrnn_softplus(raw[0]);
        return;
    case TSRNN_LIKELIHOOD_GEOMETRIC:
    case TSRNN_LIKELIHOOD_BERNOULLI:
        params[0] = sigmoid(raw[0]);
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
