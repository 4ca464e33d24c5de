/* Probabilistic forecasts as Darts' RNNModel.predict(n, num_samples=S) makes them with a
 * likelihood (include/tsrnn/likelihood.h): every path feeds its own sampled values back, step
 * after step, and every sample is drawn from PyTorch's generator in the order Darts draws
 * them (include/tsrnn/torch_dist.h), so a path equals Darts' within float rounding.
 *
 * The order (darts/models/forecasting/pl_forecasting_module.py, predict_step): the predict
 * call seeds torch with tsrnn_darts_seed(); its DataLoader draws one int64 (2 outputs); then
 * the R forecast windows go in batches of `batch_size`, in order, and each batch of m windows
 * is repeated in groups of min(max(batch_size / m, 1), S) samples (the tensors tiled sample by
 * sample), each group run through all n steps before the next; each step draws
 * likelihood.sample() for the whole group's (rows, O) targets at once.
 */
#ifndef TSRNN_SAMPLING_H
#define TSRNN_SAMPLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"
#include "tsrnn/likelihood.h"
#include "tsrnn/model.h"
#include "tsrnn/torch_dist.h"

struct tsrnn_sampling {
    size_t num_samples;         /* S >= 1 */
    size_t batch_size;          /* predict's batch_size: Darts' default is the model's */
    bool likelihood_parameters; /* predict_likelihood_parameters: the distribution's
                                   parameters of the first step instead of samples (S = 1) */
    uint32_t seed;              /* torch seed of the call's predict_from_dataset() */
};

/* Darts' likelihood.sample() of `count` targets from the head's raw outputs raw (count, P):
 * x (count), drawn from g as PyTorch draws them (gaussian: torch.normal(mu, sigma), normal_
 * then * sigma + mu; laplace: uniform_(eps - 1, 1) then mu - b sgn(u) log1p(-|u|); poisson:
 * torch.poisson(lambda); negative_binomial: Gamma(r, exp(-logits)) for all, then Poisson of
 * each; lognormal, halfnormal: a normal's exp, abs; cauchy: cauchy_; gamma: _standard_gamma /
 * beta; exponential, weibull: exponential_, / lambda or ^(1/k) * lambda; gumbel: torch.rand
 * through two logs; geometric: uniform_(tiny, 1), floor(log u / log1p(-p)); bernoulli:
 * torch.bernoulli; quantile: torch.rand, then the linear interpolation between the quantiles
 * around it, the outer ones repeated). `scratch` holds 2 * count floats. Returns
 * TSRNN_ERR_NUMERIC naming the parameter when a distribution's parameter is not finite (or a
 * rate or scale not positive: PyTorch refuses those too). */
enum tsrnn_status tsrnn_likelihood_sample(const struct tsrnn_likelihood *lik, float *x,
                                          const float *raw, size_t count,
                                          struct tsrnn_torch_generator *g, float *scratch);

/* Darts' predict_from_dataset() of R forecast windows with a likelihood model, n steps:
 * context (R, icl, I) the scaled inputs before each window's first step (targets then K = I -
 * O future covariates, as tsrnn_model_predict_covariates() takes them), future (n - 1, R, K)
 * the covariates of steps 1 .. n-1 (NULL without covariates). out: the samples, scaled, (R, S,
 * n, O); with likelihood_parameters (R, O*P) the first step's parameters as
 * tsrnn_likelihood_public_params() gives them. The model's workspace must hold batch_size
 * windows (or R, when fewer) of icl steps. TSRNN_ERR_USAGE for a model without a likelihood
 * or arguments out of range, TSRNN_ERR_NOMEM, TSRNN_ERR_NUMERIC (a parameter not finite),
 * or the model's error. */
enum tsrnn_status tsrnn_sample_forecasts(struct tsrnn_model *model, float *out,
                                         const float *context, const float *future, size_t R,
                                         size_t icl, size_t n, const struct tsrnn_sampling *s);

/* numpy.quantile(x, q) of `count` float32 values sorted ascending (method "linear", computed
 * as numpy does for a float32 array and q: the index (count - 1) q and the interpolation in
 * float32). */
float tsrnn_quantile_of_sorted(const float *sorted, size_t count, float q);

#endif
