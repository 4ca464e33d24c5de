/* Darts' likelihoods for RNNModel(likelihood=...): the head outputs P numbers per target (the
 * distribution's raw parameters, or the quantiles of QuantileRegression), the training loss
 * is the negative log-likelihood of the targets (plus the prior's KL divergence), and a
 * forecast draws each step from the distribution (src/forecast/sampling.c).
 *
 * Everything here follows darts/utils/likelihood_models/torch.py (Darts 0.48) and the
 * torch.nn / torch.distributions code it calls, in float32 as PyTorch computes it:
 *
 *     kind               P   parameters (transform)          loss of one target y
 *     gaussian           2   mu, sigma (softplus)            GaussianNLLLoss(full=True):
 *                                                            0.5 (log v + (mu - y)^2 / v)
 *                                                            + 0.5 log 2 pi, v = max(sigma^2,
 *                                                            1e-6), times v^beta_nll (detached)
 *     laplace            2   mu, b (softplus)                log(2 b) + |y - mu| / b
 *     quantile           Q   the Q quantiles, as output      sum_q max((q-1) e, q e), e = y - o_q
 *     poisson            1   lambda (softplus)               PoissonNLLLoss(log_input=False,
 *                                                            full=True): lambda - y log(lambda
 *                                                            + 1e-8) + Stirling's term (y > 1)
 *     negative_binomial  2   mu, alpha (softplus each)       -log NegativeBinomial(r = 1/alpha,
 *                                                            logits = log mu + log alpha)(y)
 *     lognormal          2   mu, sigma (softplus)            -log LogNormal(mu, sigma)(y), y > 0
 *     halfnormal         1   sigma (softplus)                -log HalfNormal(sigma)(y), y >= 0
 *     cauchy             2   xzero, gamma (softplus)         -log Cauchy(xzero, gamma)(y)
 *     gamma              2   alpha, beta (softplus each)     -log Gamma(alpha, rate beta)(y), y > 0
 *     exponential        1   lambda (softplus)               lambda y - log lambda, y >= 0
 *     weibull            2   lambda, k (softplus each)       -log Weibull(lambda, k)(y) as a
 *                                                            TransformedDistribution, y > 0
 *     gumbel             2   mu, beta (softplus)             exp(z) - z + log beta, z = (mu - y)
 *                                                            / beta
 *     geometric          1   p (sigmoid)                     -(y log1p(-p) + log p), y counts
 *     bernoulli          1   p (sigmoid)                     BCE with logits(logit(clamp(p)),
 *                                                            y), y 0 or 1
 *
 * The loss of a batch is the mean over its B x T x C targets; with a prior (any prior_* set)
 * prior_strength x the mean of KL(prior || predicted) is added, Darts taking the predicted
 * parameter for each prior parameter not set. The head's P outputs of target c are its
 * outputs c*P .. c*P + P-1 (Darts' view(B, T, C, P)).
 */
#ifndef TSRNN_LIKELIHOOD_H
#define TSRNN_LIKELIHOOD_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/config.h" /* enum tsrnn_likelihood_kind, the quantiles' limits */
#include "tsrnn/core.h"

#define TSRNN_LIKELIHOOD_MAX_PRIORS 2

struct tsrnn_likelihood {
    enum tsrnn_likelihood_kind kind;
    /* quantile: ascending, each in (0, 1), 0.5 among them, symmetric around it (Darts'
     * _check_quantiles) */
    size_t quantile_count;
    double quantiles[TSRNN_LIKELIHOOD_MAX_QUANTILES];
    /* The prior of each distribution parameter in Darts' order (gaussian and lognormal:
     * prior_mu, prior_sigma; laplace: prior_mu, prior_b; poisson: prior_lambda; halfnormal:
     * prior_sigma; cauchy: prior_xzero, prior_gamma; gamma: prior_alpha, prior_beta;
     * exponential: prior_lambda; gumbel: prior_mu, prior_beta; geometric and bernoulli:
     * prior_p; weibull: none), where set. */
    bool has_prior[TSRNN_LIKELIHOOD_MAX_PRIORS];
    double prior[TSRNN_LIKELIHOOD_MAX_PRIORS];
    double prior_strength; /* Darts' default 1 */
    double beta_nll;       /* gaussian's beta-NLL exponent in [0, 1]; Darts' default 0 */
};

/* The config's spelling ("none", "gaussian", "laplace", "quantile", "poisson",
 * "negative_binomial", "lognormal", "halfnormal", "cauchy", "gamma", "exponential", "weibull",
 * "gumbel", "geometric", "bernoulli") and Darts' class
 * ("GaussianLikelihood", ..., "QuantileRegression"). */
const char *tsrnn_likelihood_name(enum tsrnn_likelihood_kind kind);
const char *tsrnn_likelihood_darts_class(enum tsrnn_likelihood_kind kind);

/* Darts' repr() of the likelihood object, "GaussianLikelihood(prior_mu=None, prior_sigma=None,
 * beta_nll=0.0, prior_strength=1.0)", ... (Python's float repr), into out; "None" for NONE.
 * Returns what snprintf does. */
size_t tsrnn_likelihood_repr(const struct tsrnn_likelihood *lik, char *out, size_t out_nbytes);

/* Parses a config name; false when it is none of them. */
bool tsrnn_likelihood_parse_name(const char *name, enum tsrnn_likelihood_kind *kind);

/* P: the head's outputs per target (Darts' nr_params): 1 for NONE. */
size_t tsrnn_likelihood_param_count(const struct tsrnn_likelihood *lik);

/* The name of parameter p as predict_likelihood_parameters() names it after the component
 * ("mu", "sigma"; "mu", "b"; "lambda"; "r", "p"; "q0.050", ...), into out. */
void tsrnn_likelihood_param_name(const struct tsrnn_likelihood *lik, size_t p, char *out,
                                 size_t out_nbytes);

/* Darts' name of prior i of a kind ("prior_mu", "prior_sigma", "prior_b", "prior_lambda"),
 * or NULL where the kind has none. */
const char *tsrnn_likelihood_prior_name(enum tsrnn_likelihood_kind kind, size_t i);

/* The targets a kind's torch distribution accepts (it validates them; Darts stops on the first
 * batch otherwise). */
enum tsrnn_likelihood_support {
    TSRNN_SUPPORT_REAL,
    TSRNN_SUPPORT_NONNEGATIVE, /* halfnormal, exponential */
    TSRNN_SUPPORT_POSITIVE,    /* lognormal, gamma, weibull */
    TSRNN_SUPPORT_COUNTS,      /* negative_binomial, geometric: non-negative integers */
    TSRNN_SUPPORT_BINARY,      /* bernoulli: 0 or 1 */
};
enum tsrnn_likelihood_support tsrnn_likelihood_support(enum tsrnn_likelihood_kind kind);

/* Whether y lies in the support; its sentence ("non-negative integers", ...). */
bool tsrnn_likelihood_supports(enum tsrnn_likelihood_support support, float y);
const char *tsrnn_likelihood_support_text(enum tsrnn_likelihood_support support);

/* Parses a comma-separated list of quantiles into lik->quantiles and quantile_count, as the
 * config parser reads [likelihood] quantiles (tsrnn_config_parse_quantiles(): sorted ascending
 * as Darts sorts them, Darts' rules checked). TSRNN_ERR_USAGE as that. */
enum tsrnn_status tsrnn_likelihood_parse_quantiles(struct tsrnn_likelihood *lik, const char *text);

/* The likelihood the config describes ([model] likelihood and [likelihood]): kind NONE
 * without one. The config was parsed (its quantile list checked), so this cannot fail. */
void tsrnn_likelihood_from_config(struct tsrnn_likelihood *lik, const struct tsrnn_config *cfg);

/* --- the loss ----------------------------------------------------------------------------- */

/* One target's term of the loss in float32 as PyTorch computes it: the negative
 * log-likelihood of y under the distribution of the head's P raw outputs `raw`, plus
 * prior_strength x KL(prior || predicted) with a prior (the batch loss is the mean of these
 * terms). With d_raw not NULL, dTerm/d(raw) (P) is written there (autograd's rules: clamp
 * under no_grad passes the gradient, torch.maximum splits a tie in halves, sgn(0) = 0). */
float tsrnn_likelihood_term(const struct tsrnn_likelihood *lik, const float *raw, float y,
                            float *d_raw);

/* The distribution's parameters from the head's raw outputs, as Darts' _params_from_output()
 * gives them (gaussian: mu, softplus(.); negative_binomial: mu and alpha, each softplus; ...;
 * quantile: the outputs as they are): params (P). */
void tsrnn_likelihood_params(const struct tsrnn_likelihood *lik, const float *raw, float *params);

/* What Darts' predict(predict_likelihood_parameters=True) returns for one target: the
 * parameters above, but negative_binomial's as PyTorch's (r = 1/alpha, p =
 * sigmoid(log mu + log alpha)). out (P). */
void tsrnn_likelihood_public_params(const struct tsrnn_likelihood *lik, const float *raw,
                                    float *out);

/* torch.nn.Softplus() (beta 1, threshold 20) in float. */
float tsrnn_softplus(float x);

/* The digamma function, for double arguments > 0 (the gradient of lgamma). */
double tsrnn_digamma(double x);

#endif
