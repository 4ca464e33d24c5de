/* Probabilistic forecasts and dropout against real Darts and PyTorch (tests/fixtures/prob_*,
 * written by scripts/gen-prob-fixtures.py): dropout masks as nn.LSTM(dropout=p) draws them on a
 * CPU, whole training runs step for step. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/likelihood.h"
#include "tsrnn/torch_dist.h"

static struct tu_result result;

static double rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-30);
}

/* The relative difference of a loss, |a - b| / max(|b|, floor): a negative log-likelihood
 * crosses 0 as it trains, where a plain ratio says nothing. */
static double rel_floor(double a, double b, double floor)
{
    return fabs(a - b) / fmax(fabs(b), floor);
}

struct compared {
    double steps, vals; /* the worst over the first `steps` steps and their epochs */
    double all_steps, all_vals;
};

/* The run's metrics.csv against `fixture` row by row (same epochs and steps, `rows` rows):
 * the worst rel_floor(., ., floor) of train_loss over the first `steps` steps (and of
 * val_loss over the epochs they end), and over all rows. */
static struct compared compare_runs(const char *run, const char *fixture, size_t rows, size_t steps,
                                    double floor)
{
    static struct tu_metrics_row ours[4096], theirs[4096];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), run);
    size_t n = tu_read_metrics(path, ours, 4096);
    assert_int_equal(tu_read_metrics(fixture, theirs, 4096), rows);
    assert_int_equal(n, rows);
    struct compared c = { 0 };
    size_t step = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ours[i].epoch, theirs[i].epoch);
        assert_int_equal(ours[i].step, theirs[i].step);
        bool is_step = !isnan(theirs[i].train_loss);
        assert_int_equal(isnan(ours[i].train_loss), !is_step);
        double err = is_step ? rel_floor(ours[i].train_loss, theirs[i].train_loss, floor)
                             : rel_floor(ours[i].val_loss, theirs[i].val_loss, floor);
        bool early = (size_t)theirs[i].step < steps;
        step += is_step;
        if (is_step) {
            c.all_steps = fmax(c.all_steps, err);
            if (early)
                c.steps = fmax(c.steps, err);
        } else {
            c.all_vals = fmax(c.all_vals, err);
            if (early)
                c.vals = fmax(c.vals, err);
        }
    }
    return c;
}

/* Every row of the run's metrics.csv against the fixture `fixture` (same epochs and steps):
 * the worst relative difference of the steps' train_loss and the epochs' val_loss. */
static double worst_against(const char *run, const char *fixture, size_t rows)
{
    static struct tu_metrics_row ours[4096], theirs[4096];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), run);
    size_t n = tu_read_metrics(path, ours, 4096);
    assert_int_equal(tu_read_metrics(tu_source(fixture), theirs, 4096), rows);
    assert_int_equal(n, rows);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ours[i].epoch, theirs[i].epoch);
        assert_int_equal(ours[i].step, theirs[i].step);
        assert_int_equal(isnan(ours[i].train_loss), isnan(theirs[i].train_loss));
        worst = fmax(worst, isnan(theirs[i].train_loss)
                                ? rel(ours[i].val_loss, theirs[i].val_loss)
                                : rel(ours[i].train_loss, theirs[i].train_loss));
    }
    return worst;
}

/* Up to `capacity` numbers of `text` (space-separated, up to the next '|' or the end) into
 * out; *text moves past the '|'. */
static size_t numbers(const char **text, double *out, size_t capacity)
{
    size_t n = 0;
    const char *p = *text;
    for (;;) {
        while (*p == ' ')
            p++;
        if (*p == '|' || *p == '\n' || *p == '\0')
            break;
        char *end;
        double v = strtod(p, &end);
        assert_true(end != p);
        assert_true(n < capacity);
        out[n++] = v;
        p = end;
    }
    *text = *p == '|' ? p + 1 : p;
    return n;
}

/* PyTorch's samplers (tests/fixtures/prob_vectors.txt, torch 2.15 on a CPU): the uniform
 * draws, the Cauchy, exponential and Bernoulli draws and the Poisson counts bit for bit; the normals and gammas within 2e-6 of
 * max(|value|, 1): PyTorch's AVX2 kernel (which an AVX-512 CPU runs too) takes normal_fill's
 * log, sin and cos from avx_mathfun's polynomials, tsrnn from libm (the scalar path's doubles
 * and the gammas agree to the bit). Every case's count of draws is right, or the later values
 * would differ entirely. */
static void test_samplers_are_pytorchs(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("tests/fixtures/prob_vectors.txt"));
    assert_non_null(text);
    static double args[64], want[256];
    static float got[256];
    size_t cases = 0;
    double worst_normal = 0.0;
    for (char *line = text; line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (line[0] == '#' || line[0] == '\0') {
            line = next;
            continue;
        }
        char kind[32];
        unsigned long seed;
        int used;
        assert_int_equal(sscanf(line, "%31s %lu%n", kind, &seed, &used), 2);
        const char *p = line + used;
        size_t nargs = numbers(&p, args, 64), count = numbers(&p, want, 256);
        struct tsrnn_torch_generator g;
        tsrnn_torch_generator_seed(&g, seed);
        size_t n = 0;
        if (strcmp(kind, "normal") == 0) {
            for (size_t a = 0; a < nargs; a++) {
                tsrnn_torch_sample_normal_fill(got + n, (size_t)args[a], &g);
                n += (size_t)args[a];
            }
        } else if (strcmp(kind, "uniform") == 0) {
            n = (size_t)args[2];
            tsrnn_torch_sample_uniform_fill(got, n, &g, args[0], args[1]);
        } else if (strcmp(kind, "rand") == 0) {
            for (; n < (size_t)args[0]; n++)
                got[n] = tsrnn_torch_sample_rand(&g);
        } else if (strcmp(kind, "cauchy") == 0) {
            for (; n < (size_t)args[0]; n++)
                got[n] = (float)tsrnn_torch_sample_cauchy(&g);
        } else if (strcmp(kind, "exponential") == 0) {
            for (; n < (size_t)args[0]; n++)
                got[n] = (float)tsrnn_torch_sample_exponential(&g);
        } else if (strcmp(kind, "bernoulli") == 0) {
            for (; n < count; n++)
                got[n] = tsrnn_torch_sample_rand(&g) < (float)args[n % nargs] ? 1.0f : 0.0f;
        } else if (strcmp(kind, "poisson") == 0) {
            for (; n < count; n++)
                got[n] = (float)tsrnn_torch_sample_poisson(&g, (double)(float)args[n % nargs]);
        } else if (strcmp(kind, "gamma") == 0) {
            for (; n + 3 < count; n++)
                got[n] = tsrnn_torch_sample_standard_gamma(&g, (float)args[n % nargs]);
            tsrnn_torch_sample_normal_fill(got + n, 3, &g);
            n += 3;
        } else {
            fail_msg("unknown case %s", kind);
        }
        assert_int_equal(n, count);
        bool exact = strcmp(kind, "normal") != 0 && strcmp(kind, "gamma") != 0;
        for (size_t i = 0; i < n; i++) {
            double err = fabs((double)got[i] - want[i]) / fmax(fabs(want[i]), 1.0);
            if ((exact && (float)want[i] != got[i]) || err > 2e-6)
                fail_msg("%s seed %lu, value %zu: %.9g, PyTorch %.9g", kind, seed, i,
                         (double)got[i], want[i]);
            worst_normal = fmax(worst_normal, err);
        }
        cases++;
        line = next;
    }
    printf("# %zu sampler cases; normals and gammas within %.1e of PyTorch's\n", cases,
           worst_normal);
    assert_int_equal(cases, 24);
    free(text);
}

/* Darts' likelihood.compute_loss() and autograd's gradient on random head outputs
 * (tests/fixtures/prob_losses.txt): every likelihood, with and without priors, beta-NLL, the
 * default and a custom list of quantiles: the batch loss within 5e-6 relative and each
 * gradient element within 2e-5 relative of the largest (float32 sums in another order; a
 * Gumbel term exp(z) with z near 18 carries z's rounding 18-fold: 1.9e-6 measured). */
static void test_losses_are_darts(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("tests/fixtures/prob_losses.txt"));
    assert_non_null(text);
    static double raw[2048], y[256], loss[1], grad[2048];
    static float rawf[2048], d[128];
    size_t cases = 0;
    for (char *line = text; line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (line[0] == '#' || line[0] == '\0') {
            line = next;
            continue;
        }
        struct tsrnn_likelihood lik = { .prior_strength = 1.0 };
        char *bar = strchr(line, '|');
        assert_non_null(bar);
        *bar = '\0';
        char *save = NULL;
        char *word = strtok_r(line, " ", &save);
        assert_true(tsrnn_likelihood_parse_name(word, &lik.kind));
        if (lik.kind == TSRNN_LIKELIHOOD_QUANTILE)
            assert_int_equal(
                tsrnn_likelihood_parse_quantiles(&lik, TSRNN_LIKELIHOOD_DEFAULT_QUANTILES),
                TSRNN_OK);
        while ((word = strtok_r(NULL, " ", &save)) != NULL) {
            char *eq = strchr(word, '=');
            assert_non_null(eq);
            *eq = '\0';
            if (strcmp(word, "quantiles") == 0) {
                assert_int_equal(tsrnn_likelihood_parse_quantiles(&lik, eq + 1), TSRNN_OK);
            } else if (strcmp(word, "prior_strength") == 0) {
                lik.prior_strength = strtod(eq + 1, NULL);
            } else if (strcmp(word, "beta_nll") == 0) {
                lik.beta_nll = strtod(eq + 1, NULL);
            } else {
                bool known = false;
                for (size_t i = 0; i < TSRNN_LIKELIHOOD_MAX_PRIORS; i++) {
                    const char *name = tsrnn_likelihood_prior_name(lik.kind, i);
                    if (name != NULL && strcmp(name, word) == 0) {
                        lik.has_prior[i] = true;
                        lik.prior[i] = strtod(eq + 1, NULL);
                        known = true;
                    }
                }
                if (!known)
                    fail_msg("unknown option %s", word);
            }
        }
        const char *p = bar + 1;
        size_t nraw = numbers(&p, raw, 2048), ny = numbers(&p, y, 256);
        assert_int_equal(numbers(&p, loss, 1), 1);
        assert_int_equal(numbers(&p, grad, 2048), nraw);
        size_t P = tsrnn_likelihood_param_count(&lik);
        assert_int_equal(nraw, ny * P);
        for (size_t i = 0; i < nraw; i++)
            rawf[i] = (float)raw[i];
        double sum = 0.0, worst = 0.0, largest = 0.0;
        for (size_t i = 0; i < nraw; i++)
            largest = fmax(largest, fabs(grad[i]));
        for (size_t i = 0; i < ny; i++) {
            sum += tsrnn_likelihood_term(&lik, rawf + i * P, (float)y[i], d);
            for (size_t k = 0; k < P; k++) {
                double ours = (double)(d[k] * (1.0f / (float)ny));
                worst = fmax(worst, fabs(ours - grad[i * P + k]) / largest);
            }
        }
        double ours_loss = sum / (double)ny;
        printf("# %-17s P=%2zu: loss %.9g (Darts %.9g, %.1e), worst gradient %.1e\n",
               tsrnn_likelihood_name(lik.kind), P, ours_loss, loss[0], rel(ours_loss, loss[0]),
               worst);
        assert_true(rel(ours_loss, loss[0]) <= 5e-6);
        assert_true(worst <= 2e-5);
        cases++;
        line = next;
    }
    assert_int_equal(cases, 33);
    free(text);
}

/* A 2-layer LSTM with dropout 0.2 on the example (random_state 42, shuffled, validated): Darts
 * draws the masks inside each step from PyTorch's global generator, one double per element
 * (bernoulli_ on a CPU), so every step's loss, and every later epoch's shuffle, follows them.
 * 60 epochs, 420 steps and 60 validations within 1e-5 relative (measured: 5.9e-7). */
static void test_dropout_follows_darts(void **state)
{
    (void)state;
    const char *sets[] = { "model.model=LSTM",
                           "model.n_rnn_layers=2",
                           "model.dropout=0.2",
                           "training.n_epochs=60",
                           "output.save_checkpoints=false",
                           "output.log_tensorboard=false",
                           "forecast.n=0",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(&result, "dropout", sets, 120), 0);
    double worst = worst_against("dropout", "tests/fixtures/prob_dropout_metrics.csv", 480);
    printf("# dropout 0.2, 2-layer LSTM: worst relative difference to Darts over 480 rows %.2e\n",
           worst);
    assert_true(worst <= 1e-5);
}

/* --- whole runs against real Darts ------------------------------------------------------ */

/* [data] of the three series of tests/fixtures/global/ and scripts/gen-prob-fixtures.py's
 * global model (gen-global-fixtures.py's settings, random_state 3). */
static char global_path[3 * PATH_MAX + 32];
static const char *const global_sets[] = {
    global_path,
    "data.time_col=date",
    "data.value_cols=v",
    "data.split_after=2000-02-10",
    "model.hidden_dim=8",
    "model.training_length=8",
    "model.input_chunk_length=5",
    "training.batch_size=16",
    "training.n_epochs=20",
    "training.lr=5e-3",
    "training.random_state=3",
};

/* data.path= of tests/fixtures/prob_updown.csv (1 where the passengers rose from the month
 * before, else 0: scripts/gen-prob-fixtures.py), for BernoulliLikelihood(). */
static char updown_path[PATH_MAX + 16];

static void set_updown_path(void)
{
    snprintf(updown_path, sizeof(updown_path), "data.path=%s",
             tu_source("tests/fixtures/prob_updown.csv"));
}

static void set_global_path(void)
{
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof(a), "%s", tu_source("tests/fixtures/global/a.csv"));
    snprintf(b, sizeof(b), "%s", tu_source("tests/fixtures/global/b.csv"));
    snprintf(global_path, sizeof(global_path), "data.path=%s,%s,%s", a, b,
             tu_source("tests/fixtures/global/c.csv"));
}

/* Trains `run` on the example config (global: the three series) with `extra` settings. */
static void train_run(const char *run, bool global, const char *const *extra)
{
    const char *sets[64];
    size_t n = 0;
    for (size_t i = 0; global && i < sizeof(global_sets) / sizeof(global_sets[0]); i++)
        sets[n++] = global_sets[i];
    for (size_t i = 0; extra[i] != NULL; i++)
        sets[n++] = extra[i];
    sets[n++] = "output.save_checkpoints=false";
    sets[n++] = "output.log_tensorboard=false";
    sets[n++] = "forecast.plot=false";
    sets[n] = NULL;
    if (global)
        set_global_path();
    int code = tu_train(&result, run, sets, 120);
    if (code != 0)
        fail_msg("%s: exit %d\n%s", run, code, result.err);
}

/* Real Darts 0.48.1 trains RNNModel(likelihood=...) and tsrnn follows it step for step: the
 * example (AirPassengers, 100 epochs) and the three-series global model (20 epochs; Laplace 10) with
 * GaussianLikelihood(), LaplaceLikelihood() and QuantileRegression(); a Gaussian with priors;
 * PoissonLikelihood(), NegativeBinomialLikelihood(), LogNormalLikelihood(), GammaLikelihood(),
 * WeibullLikelihood() and GeometricLikelihood() on the raw passenger counts;
 * HalfNormalLikelihood(), CauchyLikelihood(), ExponentialLikelihood() and GumbelLikelihood()
 * on the scaled series; BernoulliLikelihood() on whether the passengers rose (10 epochs each). Every
 * train_loss within 1e-5 relative (|loss| below 0.1 counting as 0.1: the NLL crosses zero)
 * over the first `steps` steps, every val_loss of those epochs within 1e-4 (the validation
 * NLL of a series unlike the training part sums large terms of both signs). Gaussian, Poisson
 * and negative binomial hold over the whole run. Laplace's |y - mu| and the pinball loss's
 * max() turn float rounding into a different gradient once residuals sit at the kink: a
 * one-ulp change of tsrnn's own head gradients diverges from tsrnn at the same steps
 * (docs/numerics.md#likelihoods), so their bound holds over the first 100 and 150 steps; the
 * worst over the whole run is printed. */
static void test_likelihood_runs_follow_darts(void **state)
{
    (void)state;
    static const struct {
        const char *name, *fixture;
        bool global;
        const char *sets[8];
        size_t rows, steps;
    } cases[] = {
        { "air_gaussian",
          "prob_air_gaussian",
          false,
          { "model.likelihood=gaussian", "training.n_epochs=100", "forecast.n=0" },
          800,
          700 },
        { "air_laplace",
          "prob_air_laplace",
          false,
          { "model.likelihood=laplace", "training.n_epochs=100", "forecast.n=0" },
          800,
          100 },
        { "air_quantile",
          "prob_air_quantile",
          false,
          { "model.likelihood=quantile", "training.n_epochs=100", "forecast.n=0" },
          800,
          150 },
        { "air_prior",
          "prob_air_gaussian_prior",
          false,
          { "model.likelihood=gaussian", "likelihood.prior_mu=0.4", "likelihood.prior_sigma=0.3",
            "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
        { "global_gaussian",
          "prob_global_gaussian",
          true,
          { "model.likelihood=gaussian", "forecast.n=0" },
          200,
          180 },
        { "global_laplace",
          "prob_global_laplace",
          true,
          { "model.likelihood=laplace", "training.n_epochs=10", "forecast.n=0" },
          100,
          90 },
        { "global_quantile",
          "prob_global_quantile",
          true,
          { "model.likelihood=quantile", "forecast.n=0" },
          200,
          180 },
        { "counts_poisson",
          "prob_counts_poisson",
          false,
          { "model.likelihood=poisson", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=0" },
          80,
          70 },
        { "counts_negbin",
          "prob_counts_negative_binomial",
          false,
          { "model.likelihood=negative_binomial", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=0" },
          80,
          70 },
        { "more_lognormal",
          "prob_more_lognormal",
          false,
          { "model.likelihood=lognormal", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=0" },
          80,
          70 },
        { "more_gamma",
          "prob_more_gamma",
          false,
          { "model.likelihood=gamma", "data.scaler=none", "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
        { "more_halfnormal",
          "prob_more_halfnormal",
          false,
          { "model.likelihood=halfnormal", "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
        { "more_cauchy",
          "prob_more_cauchy",
          false,
          { "model.likelihood=cauchy", "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
        { "more_exponential",
          "prob_more_exponential",
          false,
          { "model.likelihood=exponential", "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
        { "more_weibull",
          "prob_more_weibull",
          false,
          { "model.likelihood=weibull", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=0" },
          80,
          70 },
        { "more_gumbel",
          "prob_more_gumbel",
          false,
          { "model.likelihood=gumbel", "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
        { "more_geometric",
          "prob_more_geometric",
          false,
          { "model.likelihood=geometric", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=0" },
          80,
          70 },
        { "more_bernoulli",
          "prob_more_bernoulli",
          false,
          { "model.likelihood=bernoulli", updown_path, "data.value_cols=up", "data.scaler=none",
            "training.n_epochs=10", "forecast.n=0" },
          80,
          70 },
    };
    set_updown_path();
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        train_run(cases[k].name, cases[k].global, cases[k].sets);
        char fixture[128];
        snprintf(fixture, sizeof(fixture), "tests/fixtures/%s_metrics.csv", cases[k].fixture);
        struct compared c =
            compare_runs(cases[k].name, tu_source(fixture), cases[k].rows, cases[k].steps, 0.1);
        printf("# %-16s first %3zu steps %.1e (their validations %.1e); all %zu rows: steps %.1e, "
               "validations %.1e\n",
               cases[k].name, cases[k].steps, c.steps, c.vals, cases[k].rows, c.all_steps,
               c.all_vals);
        assert_true(c.steps <= 1e-5);
        assert_true(c.vals <= 1e-4);
    }
}

/* The value after `label` in the worker's stdout. */
static double printed(const char *label)
{
    const char *at = strstr(result.out, label);
    if (at == NULL)
        fail_msg("no '%s' in:\n%s", label, result.out);
    return strtod(at + strlen(label), NULL);
}

/* The number after `key ` in a fixture's scores file. */
static double score_of(const char *text, const char *key)
{
    char needle[64];
    snprintf(needle, sizeof(needle), "%s ", key);
    const char *at = strstr(text, needle);
    if (at == NULL)
        fail_msg("no %s in the scores fixture", key);
    return strtod(at + strlen(needle), NULL);
}

/* forecast_samples.csv against the fixture: the same header (Darts' to_dataframe() names),
 * rows and stamps; every value within `tolerance` of max(|Darts'|, floor) (the floor: the
 * series' scale, where a path passes near 0). Returns the worst. */
static double compare_samples(const char *run, const char *fixture, size_t rows, double floor,
                              double tolerance)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/forecast_samples.csv", tu_run_dir(), run);
    char *ours = tu_read(path), *theirs = tu_read(fixture);
    if (ours == NULL || theirs == NULL)
        fail_msg("cannot read %s or %s", path, fixture);
    char *save_a = NULL, *save_b = NULL;
    char *a = strtok_r(ours, "\n", &save_a), *b = strtok_r(theirs, "\n", &save_b);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b); /* the header */
    size_t count = 0, values = 0;
    double worst = 0.0;
    while ((a = strtok_r(NULL, "\n", &save_a)) != NULL) {
        b = strtok_r(NULL, "\n", &save_b);
        assert_non_null(b);
        count++;
        char *fa = NULL, *fb = NULL;
        char *x = strtok_r(a, ",", &fa), *y = strtok_r(b, ",", &fb);
        bool numeric = false;
        while (x != NULL && y != NULL) {
            char *end;
            double u = strtod(x, &end);
            numeric = numeric || (*end == '\0' && strchr(x, '-') == NULL) ||
                      (*end == '\0' && x[0] == '-');
            if (*end != '\0' || !numeric) { /* the id and the stamp: as they are */
                assert_string_equal(x, y);
            } else {
                double err = fabs(u - strtod(y, NULL)) / fmax(fabs(strtod(y, NULL)), floor);
                worst = fmax(worst, err);
                values++;
            }
            x = strtok_r(NULL, ",", &fa);
            y = strtok_r(NULL, ",", &fb);
        }
        assert_null(x);
        assert_null(y);
    }
    assert_null(strtok_r(NULL, "\n", &save_b));
    assert_int_equal(count, rows);
    assert_true(values > 0);
    if (worst > tolerance)
        fail_msg("%s: a sample %.2e from Darts' (bound %.0e)", run, worst, tolerance);
    free(ours);
    free(theirs);
    return worst;
}

/* Darts' predict(n, num_samples) right after fit(): tsrnn draws every sample from PyTorch's
 * generator where Darts draws it (the predict call's seed from random_state, the DataLoader's
 * draw, groups of batch_size / series windows, each step's likelihood.sample() for the group),
 * so the paths are Darts' own: forecast_samples.csv against the fixtures' to_dataframe(), every
 * value within 1e-5 (of max(|value|, the series' scale)): the example (100 paths of 24 steps;
 * 16 a group, the last group of 4 drawing from the scalar normal path with its cached value),
 * the three series (three windows a batch: groups of 5, 15 normals a step, the scalar path),
 * Poisson, negative binomial, geometric and Bernoulli (integers: equal), log-normal, gamma,
 * half-normal, Cauchy, exponential, Weibull and Gumbel (12 steps, 20 paths). Gaussian after its 100-epoch run, Laplace
 * and quantile after 10 epochs (test_likelihood_runs_follow_darts says why). The example's
 * validation forecast (the second predict() after fit(), 23 steps) is scored as Darts'
 * metrics score it: MAPE and MAE of the median, MQL at 0.05/0.5/0.95, MIC and MIW of the 5-95%
 * interval, within the 6 printed digits. */
static void test_sample_paths_are_darts(void **state)
{
    (void)state;
    static const struct {
        const char *name, *fixture;
        bool global;
        const char *sets[10];
        size_t rows;
        double floor;
    } cases[] = {
        { "paths_gaussian",
          "prob_air_gaussian",
          false,
          { "model.likelihood=gaussian", "training.n_epochs=100", "forecast.num_samples=100",
            "forecast.samples=true" },
          24,
          100 },
        { "paths_laplace",
          "prob_air_laplace",
          false,
          { "model.likelihood=laplace", "training.n_epochs=10", "forecast.num_samples=100",
            "forecast.samples=true" },
          24,
          100 },
        { "paths_quantile",
          "prob_air_quantile",
          false,
          { "model.likelihood=quantile", "training.n_epochs=10", "forecast.num_samples=100",
            "forecast.samples=true" },
          24,
          100 },
        { "paths_global_gaussian",
          "prob_global_gaussian",
          true,
          { "model.likelihood=gaussian", "forecast.n=6", "forecast.num_samples=20",
            "forecast.samples=true" },
          18,
          10 },
        { "paths_global_laplace",
          "prob_global_laplace",
          true,
          { "model.likelihood=laplace", "training.n_epochs=10", "forecast.n=6",
            "forecast.num_samples=20", "forecast.samples=true" },
          18,
          10 },
        { "paths_global_quantile",
          "prob_global_quantile",
          true,
          { "model.likelihood=quantile", "forecast.n=6", "forecast.num_samples=20",
            "forecast.samples=true" },
          18,
          10 },
        { "paths_poisson",
          "prob_counts_poisson",
          false,
          { "model.likelihood=poisson", "data.scaler=none", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          0 },
        { "paths_negbin",
          "prob_counts_negative_binomial",
          false,
          { "model.likelihood=negative_binomial", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=12", "forecast.num_samples=20", "forecast.samples=true" },
          12,
          0 },
        { "paths_lognormal",
          "prob_more_lognormal",
          false,
          { "model.likelihood=lognormal", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=12", "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_gamma",
          "prob_more_gamma",
          false,
          { "model.likelihood=gamma", "data.scaler=none", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_halfnormal",
          "prob_more_halfnormal",
          false,
          { "model.likelihood=halfnormal", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_cauchy",
          "prob_more_cauchy",
          false,
          { "model.likelihood=cauchy", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_exponential",
          "prob_more_exponential",
          false,
          { "model.likelihood=exponential", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_weibull",
          "prob_more_weibull",
          false,
          { "model.likelihood=weibull", "data.scaler=none", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_gumbel",
          "prob_more_gumbel",
          false,
          { "model.likelihood=gumbel", "training.n_epochs=10", "forecast.n=12",
            "forecast.num_samples=20", "forecast.samples=true" },
          12,
          100 },
        { "paths_geometric",
          "prob_more_geometric",
          false,
          { "model.likelihood=geometric", "data.scaler=none", "training.n_epochs=10",
            "forecast.n=12", "forecast.num_samples=20", "forecast.samples=true" },
          12,
          0 },
        { "paths_bernoulli",
          "prob_more_bernoulli",
          false,
          { "model.likelihood=bernoulli", updown_path, "data.value_cols=up", "data.scaler=none",
            "training.n_epochs=10", "forecast.n=12", "forecast.num_samples=20",
            "forecast.samples=true" },
          12,
          0 },
    };
    set_updown_path();
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        train_run(cases[k].name, cases[k].global, cases[k].sets);
        char fixture[128];
        snprintf(fixture, sizeof(fixture), "tests/fixtures/%s_samples.csv", cases[k].fixture);
        double tolerance = cases[k].floor == 0 ? 0.0 : 1e-5;
        double worst = compare_samples(cases[k].name, tu_source(fixture), cases[k].rows,
                                       cases[k].floor > 0 ? cases[k].floor : 1e-30, tolerance);
        printf("# %-22s %zu steps: every sample within %.1e of Darts'", cases[k].name,
               cases[k].rows, worst);
        if (cases[k].global || cases[k].floor == 0 ||
            strncmp(cases[k].fixture, "prob_more", 9) == 0) {
            printf("\n");
            continue;
        }
        snprintf(fixture, sizeof(fixture), "tests/fixtures/%s_scores.txt", cases[k].fixture);
        char *scores = tu_read(tu_source(fixture));
        assert_non_null(scores);
        double worst_score = 0.0;
        static const char *const keys[] = { "mql_q0.050", "mql_q0.500", "mql_q0.950", "mic",
                                            "miw" };
        const char *labels[] = { "MQL 0.05: ", ", 0.5: ", ", 0.95: ", "(MIC) ", "(MIW) " };
        for (size_t i = 0; i < 5; i++)
            worst_score = fmax(worst_score, rel(printed(labels[i]), score_of(scores, keys[i])));
        assert_true(fabs(printed("MAPE ") - score_of(scores, "mape")) <= 0.005);
        printf("; validation scores within %.1e\n", worst_score);
        assert_true(worst_score <= 1e-5);
        free(scores);
    }
}

/* Runs tsrnn-predict with `args` (NULL-terminated) into `result`; returns its exit code. */
static int predict(const char *const *args)
{
    const char *argv[40] = { tu_env("TSRNN_PREDICT") };
    size_t n = 1;
    for (size_t i = 0; args[i] != NULL && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    assert_int_equal(tu_run(argv, 60, &result), 0);
    return result.exit_code;
}

/* `dir`/`name` below the run folder, in a static buffer. */
static const char *run_file(const char *run, const char *name)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%s", tu_run_dir(), run, name);
    return path;
}

/* Two files' bytes are the same. */
static void expect_same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_read_bytes(a, &na), *y = tu_read_bytes(b, &nb);
    if (x == NULL || y == NULL)
        fail_msg("cannot read %s or %s", a, b);
    if (na != nb || memcmp(x, y, na) != 0)
        fail_msg("%s and %s differ", a, b);
    free(x);
    free(y);
}

/* The number after `label` in `text`. */
static double value_after(const char *text, const char *label)
{
    const char *at = strstr(text, label);
    if (at == NULL)
        fail_msg("no '%s' in:\n%s", label, text);
    return strtod(at + strlen(label), NULL);
}

/* numpy.quantile(x, q) (linear) of `count` sorted doubles. */
static double numpy_quantile(const double *sorted, size_t count, double q)
{
    double index = (double)(count - 1) * q, below = floor(index);
    size_t i = (size_t)below;
    return i + 1 < count ? sorted[i] + (sorted[i + 1] - sorted[i]) * (index - below) : sorted[i];
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Darts' mql at 0.5, mic and miw of (0.05, 0.95) of the first `steps` rows of a samples CSV
 * (Month,#Passengers_s0,...) from 1959-02 against the example's passengers: want[3]. */
static void overlap_scores(const char *samples_csv, size_t steps, double want[3])
{
    char *paths = tu_read(samples_csv),
         *data = tu_read(tu_source("examples/data/air_passengers.csv"));
    assert_non_null(paths);
    assert_non_null(data);
    const char *actual = strstr(data, "1959-02,");
    const char *row = strchr(paths, '\n');
    assert_non_null(actual);
    assert_non_null(row);
    static double x[1024];
    double loss = 0.0, covered = 0.0, width = 0.0;
    for (size_t t = 0; t < steps; t++) {
        double a = strtod(strchr(actual, ',') + 1, NULL);
        actual = strchr(actual, '\n') + 1;
        row++;
        size_t S = 0;
        for (const char *p = strchr(row, ','); p != NULL && p < strchr(row, '\n') && S < 1024;
             p = strchr(p + 1, ','))
            x[S++] = strtod(p + 1, NULL);
        row = strchr(row, '\n');
        qsort(x, S, sizeof(double), compare_doubles);
        double e = a - numpy_quantile(x, S, 0.5);
        loss += 2.0 * fmax(-0.5 * e, 0.5 * e);
        double lo = numpy_quantile(x, S, 0.05), hi = numpy_quantile(x, S, 0.95);
        covered += lo <= a && a <= hi;
        width += hi - lo;
    }
    want[0] = loss / (double)steps;
    want[1] = covered / (double)steps;
    want[2] = width / (double)steps;
    free(paths);
    free(data);
}

/* tsrnn-predict forecasts a trained likelihood model as the training run's [forecast] did
 * (Darts' first predict() after fit(), from the checkpoint's random_state): the same sample
 * paths and quantiles, byte for byte; its --likelihood-parameters are Darts'
 * predict(1, predict_likelihood_parameters=True) (prob_air_gaussian_params.csv: mu and sigma
 * within 1e-6); what a point model or n > 1 cannot take is refused with exit code 2. */
static void test_predict_repeats_the_run(void **state)
{
    (void)state;
    const char *sets[] = { "model.likelihood=gaussian",
                           "training.n_epochs=100",
                           "forecast.num_samples=100",
                           "forecast.samples=true",
                           "output.save_checkpoints=true",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(&result, "again", sets, 120), 0);
    char dir[PATH_MAX], samples[PATH_MAX], quantiles[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/again", tu_run_dir());
    snprintf(samples, sizeof(samples), "%s/again/p_samples.csv", tu_run_dir());
    snprintf(quantiles, sizeof(quantiles), "%s/again/p.csv", tu_run_dir());
    const char *args[] = { "--run",     dir,     "--checkpoint",  "last",
                           "--n",       "24",    "--num-samples", "100",
                           "--samples", samples, "--out",         quantiles,
                           NULL };
    assert_int_equal(predict(args), 0);
    expect_same_file(samples, run_file("again", "forecast_samples.csv"));
    expect_same_file(quantiles, run_file("again", "forecast.csv"));
    tu_expect_in(result.err, "100 sample paths per forecast (GaussianLikelihood)");

    /* 24 steps after the training part run one past the 23 validation values: the quantile
     * scores printed are those of the 23 steps where forecast and series overlap (as Darts'
     * metrics intersect them), computed again here from the written paths. */
    double want[3];
    overlap_scores(samples, 23, want);
    double got[3] = { value_after(result.err, ", 0.5: "), value_after(result.err, "(MIC) "),
                      value_after(result.err, "(MIW) ") };
    printf("# 24 steps past 23 values: MQL 0.5 %.6g (%.6g), MIC %.6g (%.6g), MIW %.6g (%.6g)\n",
           got[0], want[0], got[1], want[1], got[2], want[2]);
    for (size_t i = 0; i < 3; i++)
        assert_true(rel(got[i], want[i]) <= 1e-5);

    const char *params[] = { "--run",
                             dir,
                             "--checkpoint",
                             "last",
                             "--n",
                             "1",
                             "--likelihood-parameters",
                             "--num-samples",
                             "1",
                             NULL };
    assert_int_equal(predict(params), 0);
    tu_expect_in(result.out, "Month,#Passengers_mu,#Passengers_sigma\n1959-02,");
    char *theirs = tu_read(tu_source("tests/fixtures/prob_air_gaussian_params.csv"));
    assert_non_null(theirs);
    double mu, sigma, want_mu, want_sigma;
    assert_int_equal(sscanf(strstr(result.out, "1959-02,"), "1959-02,%lf,%lf", &mu, &sigma), 2);
    assert_int_equal(sscanf(strstr(theirs, "1959-02,"), "1959-02,%lf,%lf", &want_mu, &want_sigma),
                     2);
    printf("# predict_likelihood_parameters: mu %.9g (Darts %.9g), sigma %.9g (Darts %.9g)\n", mu,
           want_mu, sigma, want_sigma);
    assert_true(rel(mu, want_mu) <= 1e-6 && rel(sigma, want_sigma) <= 1e-6);
    free(theirs);

    const char *two[] = { "--run",
                          dir,
                          "--checkpoint",
                          "last",
                          "--n",
                          "2",
                          "--likelihood-parameters",
                          "--num-samples",
                          "1",
                          NULL };
    assert_int_equal(predict(two), 2);
    tu_expect_in(result.err, "--likelihood-parameters predicts the first step's parameters");
    const char *bad_q[] = { "--run", dir,           "--checkpoint", "last", "--n",
                            "2",     "--quantiles", "0.5,1.5",      NULL };
    assert_int_equal(predict(bad_q), 2);
    tu_expect_in(result.err, "--quantiles: [forecast] quantiles = '0.5,1.5'");

    const char *point_sets[] = { "training.n_epochs=2", "forecast.n=0",
                                 "output.save_checkpoints=true", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "point", point_sets, 60), 0);
    snprintf(dir, sizeof(dir), "%s/point", tu_run_dir());
    const char *point[] = { "--run", dir, "--checkpoint", "last", "--n", "3", "--num-samples",
                            "10",    NULL };
    assert_int_equal(predict(point), 2);
    tu_expect_in(result.err, "--num-samples: the model has no likelihood");
}

/* Darts' historical_forecasts(num_samples=50, retrain=False) right after fit() draws as
 * tsrnn-predict --backtest does: one predict_from_dataset() over all 6 windows (draw 4, the
 * windows tiled in groups of 16 / 6 = 2): each forecast's median within 1e-5 of Darts'
 * (prob_backtest_forecasts.csv), each forecast's mql at 0.05, 0.5, 0.95, mic and miw within
 * 1e-5 (prob_backtest_errors.txt). */
static void test_backtest_samples_are_darts(void **state)
{
    (void)state;
    const char *sets[] = { "model.likelihood=gaussian",
                           "training.n_epochs=10",
                           "forecast.n=0",
                           "output.save_checkpoints=true",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(&result, "bt", sets, 60), 0);
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/bt", tu_run_dir());
    const char *args[] = {
        "--run",    dir, "--checkpoint", "last",    "--backtest",    "--horizon", "6",
        "--stride", "3", "--start",      "1959-02", "--num-samples", "50",        NULL
    };
    assert_int_equal(predict(args), 0);
    char *ours = tu_read(run_file("bt", "backtest.csv"));
    char *theirs = tu_read(tu_source("tests/fixtures/prob_backtest_forecasts.csv"));
    assert_non_null(ours);
    assert_non_null(theirs);
    double worst = 0.0;
    size_t rows = 0;
    for (const char *a = strchr(ours, '\n'), *b = strchr(theirs, '\n'); a && b && a[1] && b[1];
         a = strchr(a + 1, '\n'), b = strchr(b + 1, '\n'), rows++) {
        assert_memory_equal(a + 1, b + 1, 16); /* start,Month, */
        worst = fmax(worst, rel(strtod(a + 17, NULL), strtod(b + 17, NULL)));
    }
    assert_int_equal(rows, 36);
    free(ours);
    free(theirs);
    ours = tu_read(run_file("bt", "backtest_errors.csv"));
    theirs = tu_read(tu_source("tests/fixtures/prob_backtest_errors.txt"));
    assert_non_null(ours);
    assert_non_null(theirs);
    tu_expect_in(ours, "start,mape,mae,rmse,mql_q0.050,mql_q0.500,mql_q0.950,mic_q0.050_q0.950,"
                       "miw_q0.050_q0.950\n");
    double worst_score = 0.0;
    size_t forecasts = 0;
    for (const char *b = strchr(theirs, '\n'); b != NULL && b[1] != '\0';
         b = strchr(b + 1, '\n'), forecasts++) {
        char start[16];
        double want[5], got[8];
        assert_int_equal(sscanf(b + 1, "%15s %lf %lf %lf %lf %lf", start, &want[0], &want[1],
                                &want[2], &want[3], &want[4]),
                         6);
        char key[24];
        snprintf(key, sizeof(key), "\n%s,", start);
        const char *a = strstr(ours, key);
        assert_non_null(a);
        assert_int_equal(sscanf(a + strlen(key), "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &got[0],
                                &got[1], &got[2], &got[3], &got[4], &got[5], &got[6], &got[7]),
                         8);
        for (size_t k = 0; k < 5; k++)
            worst_score =
                fmax(worst_score, k == 3 ? fabs(got[3 + k] - want[k]) : rel(got[3 + k], want[k]));
    }
    assert_int_equal(forecasts, 6);
    printf("# backtest, 6 forecasts of 50 paths: medians within %.1e, mql/mic/miw within %.1e of "
           "Darts'\n",
           worst, worst_score);
    assert_true(worst <= 1e-5);
    assert_true(worst_score <= 1e-5);
    free(ours);
    free(theirs);
}

/* The likelihoods are the CPU backend's (caps.likelihoods): the pjrt backend refuses them
 * before anything is written, exit code 2, naming the config key and what it accepts. */
static void test_other_backends_refuse_likelihoods(void **state)
{
    (void)state;
    const char *plugin = getenv("TSRNN_PJRT_PLUGIN");
    if (plugin == NULL || plugin[0] == '\0')
        plugin = tu_env("TSRNN_PJRT_PLUGIN_DEFAULT");
    if (access(plugin, R_OK) != 0) {
        printf("# no PJRT plugin at %s: the pjrt refusal is not run here\n", plugin);
        return;
    }
    char plugin_set[PATH_MAX + 32];
    snprintf(plugin_set, sizeof(plugin_set), "trainer.pjrt_plugin=%s", plugin);
    const char *sets[] = { "model.likelihood=gaussian", "trainer.accelerator=xla", plugin_set,
                           "training.n_epochs=1", NULL };
    assert_int_equal(tu_train(&result, "pjrt", sets, 120), 2);
    tu_expect_in(result.err, "[model] likelihood = gaussian: the pjrt compute backend has no "
                             "likelihood losses");
    tu_expect_in(result.err, "accepted there: likelihood = none, or [trainer] accelerator = cpu");
}

/* Runs tsrnn-launch --accelerator cpu on the example with `sets` (NULL-terminated), output in
 * the run folder's `name`; returns its exit code. */
static int launch(const char *name, const char *const *sets)
{
    const char *argv[48] = { tu_env("TSRNN_LAUNCH"), "--accelerator", "cpu" };
    size_t n = 3;
    static char dir_set[PATH_MAX + 32], name_set[160];
    snprintf(dir_set, sizeof(dir_set), "output.work_dir=%s", tu_run_dir());
    snprintf(name_set, sizeof(name_set), "output.model_name=%s", name);
    argv[n++] = tu_source("examples/air_passengers.ini");
    const char *fixed[] = { dir_set, name_set, "output.log_tensorboard=false",
                            "forecast.plot=false" };
    for (size_t i = 0; i < 4; i++) {
        argv[n++] = "--set";
        argv[n++] = fixed[i];
    }
    for (size_t i = 0; sets[i] != NULL && n < 46; i++) {
        if (strncmp(sets[i], "--", 2) != 0)
            argv[n++] = "--set";
        argv[n++] = sets[i];
    }
    argv[n] = NULL;
    assert_int_equal(tu_run(argv, 120, &result), 0);
    return result.exit_code;
}

/* A probabilistic model with dropout draws every random number from known positions (the
 * masks from Darts' generator at each epoch and batch, the samples from the predict call's
 * seed): 12 epochs in one go and 5 then resumed to 12 give the same metrics.csv and the same
 * 50 sample paths, byte for byte. Two workers with batch 8 equal one with batch 16 (each rank
 * its rows of the masks, the likelihood's loss averaged with the gradients): every step's
 * train_loss within 1e-5 relative. (Their forecasts differ: predict() samples in batches of
 * the model's batch_size, per worker, as in Darts.) */
static void test_resume_and_workers(void **state)
{
    (void)state;
    const char *model[] = { "model.model=LSTM",          "model.n_rnn_layers=2",
                            "model.dropout=0.2",         "model.hidden_dim=8",
                            "model.likelihood=gaussian", "forecast.num_samples=50",
                            "forecast.samples=true",     "--quiet" };
    const char *full[16], *part[16], *resume[16];
    size_t n = 0;
    for (; n < sizeof(model) / sizeof(model[0]); n++)
        full[n] = part[n] = resume[n] = model[n];
    full[n] = "training.n_epochs=12";
    part[n] = "training.n_epochs=5";
    resume[n] = "training.n_epochs=12";
    resume[n + 1] = "--resume=last";
    resume[n + 2] = "output.force_reset=false";
    full[n + 1] = part[n + 1] = resume[n + 3] = NULL;
    assert_int_equal(tu_train(&result, "whole", full, 120), 0);
    assert_int_equal(tu_train(&result, "halves", part, 120), 0);
    assert_int_equal(tu_train(&result, "halves", resume, 120), 0);
    expect_same_file(run_file("whole", "metrics.csv"), run_file("halves", "metrics.csv"));
    expect_same_file(run_file("whole", "forecast_samples.csv"),
                     run_file("halves", "forecast_samples.csv"));

    const char *common[] = { "model.training_length=21", "training.n_epochs=4", "forecast.n=0",
                             NULL };
    const char *one[24], *two[24];
    n = 0;
    for (size_t i = 0; i < sizeof(model) / sizeof(model[0]) - 1; i++, n++)
        one[n] = two[n] = model[i];
    for (size_t i = 0; common[i] != NULL; i++, n++)
        one[n] = two[n] = common[i];
    one[n] = "training.batch_size=16", two[n] = "training.batch_size=8", n++;
    one[n] = "--devices=1", two[n] = "--devices=2", n++;
    one[n] = two[n] = NULL;
    assert_int_equal(launch("one", one), 0);
    assert_int_equal(launch("two", two), 0);
    char one_metrics[PATH_MAX];
    snprintf(one_metrics, sizeof(one_metrics), "%s", run_file("one", "metrics.csv"));
    struct compared c = compare_runs("two", one_metrics, 32, 28, 0.1);
    printf("# resumed: metrics and paths the same bytes; 2 workers x 8 against 1 x 16: "
           "train_loss within %.1e, val_loss within %.1e\n",
           c.steps, c.vals);
    assert_true(c.steps <= 1e-5);
}

/* A likelihood whose support the targets leave is refused before training (exit 2), naming
 * the value, where it is and what is accepted, as torch's validation would stop Darts' fit(). */
static void test_targets_outside_the_support(void **state)
{
    (void)state;
    static const struct {
        const char *likelihood, *scaler, *says;
    } cases[] = {
        { "model.likelihood=lognormal", "data.scaler=minmax",
          "[model] likelihood = lognormal models positive numbers, but #Passengers at 1949-11 is "
          "0 after [data] scaler = minmax" },
        { "model.likelihood=negative_binomial", "data.scaler=minmax",
          "likelihood = negative_binomial models non-negative integers, but #Passengers at "
          "1949-01 is 0.0199501 after" },
        { "model.likelihood=gamma", "data.scaler=minmax",
          "accepted: such targets (a minmax scaler maps the training minimum to 0: scaler = "
          "none), as Darts' GammaLikelihood validates them" },
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *sets[] = { cases[k].likelihood, cases[k].scaler, "training.n_epochs=1", NULL };
        assert_int_equal(tu_train(&result, "support", sets, 60), 2);
        tu_expect_in(result.err, cases[k].says);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samplers_are_pytorchs),
        cmocka_unit_test(test_losses_are_darts),
        cmocka_unit_test(test_dropout_follows_darts),
        cmocka_unit_test(test_likelihood_runs_follow_darts),
        cmocka_unit_test(test_sample_paths_are_darts),
        cmocka_unit_test(test_predict_repeats_the_run),
        cmocka_unit_test(test_backtest_samples_are_darts),
        cmocka_unit_test(test_other_backends_refuse_likelihoods),
        cmocka_unit_test(test_targets_outside_the_support),
        cmocka_unit_test(test_resume_and_workers),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
