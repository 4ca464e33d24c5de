/* The rules across keys (tsrnn_config_validate(), include/tsrnn/config.h): what PyTorch's,
 * Lightning's and Darts' constructors would refuse in a combination of values, the files the
 * config names, and what tsrnn does not implement; each rule is also stated in the .doc of
 * the keys it involves (docs/configuration.md). What one module makes of its own keys is that
 * module's check (tsrnn_data_check_config()). */
#include "schema.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens `path` as a regular file and reads a byte of it. */
static enum tsrnn_status read_a_byte(const char *path, const char *what)
{
    enum tsrnn_status status = TSRNN_OK;
    int fd = -1;
    char byte;
    status = tsrnn_open_regular(path, O_RDONLY, what, TSRNN_ERR_USAGE, &fd);
    if (status != TSRNN_OK)
        goto out;
    if (read(fd, &byte, 1) < 0)
        status = tsrnn_error_errno(TSRNN_ERR_USAGE, errno, "cannot read %s %s", what,
                                   tsrnn_display_path(path));
out:
    if (fd >= 0)
        close(fd);
    return status;
}

enum tsrnn_status tsrnn_config_check_file(const struct tsrnn_config *cfg, const char *section,
                                          const char *key, const char *path, const char *what)
{
    enum tsrnn_status status = read_a_byte(path, what);
    if (status != TSRNN_OK) {
        /* the message, led by the key that named the file */
        char why[1024];
        snprintf(why, sizeof(why), "%s", tsrnn_last_error());
        return tsrnn_error(status, "%s: [%s] %s: %s", tsrnn_config_origin(cfg, section, key),
                           section, key, why);
    }
    return TSRNN_OK;
}

/* The [lr_scheduler_kwargs] keys each scheduler's constructor takes (PyTorch's names), after
 * Lightning's interval and frequency, which every scheduler takes; NULL-terminated. */
static const char *const *scheduler_keys(enum tsrnn_lr_scheduler_kind kind)
{
    static const char *const exponential[] = { "interval", "frequency", "gamma", NULL };
    static const char *const step[] = { "interval", "frequency", "step_size", "gamma", NULL };
    static const char *const plateau[] = { "interval", "frequency", "factor",
                                           "patience", "threshold", "threshold_mode",
                                           "cooldown", "min_lr",    "mode",
                                           NULL };
    static const char *const cosine[] = { "interval", "frequency", "T_max", "eta_min", NULL };
    static const char *const one_cycle[] = {
        "interval",        "frequency",  "max_lr",           "total_steps",    "epochs",
        "steps_per_epoch", "pct_start",  "anneal_strategy",  "cycle_momentum", "base_momentum",
        "max_momentum",    "div_factor", "final_div_factor", "three_phase",    NULL
    };
    static const char *const warm[] = { "interval", "frequency", "T_0", "T_mult", "eta_min", NULL };
    static const char *const linear[] = { "interval",   "frequency",   "start_factor",
                                          "end_factor", "total_iters", NULL };
    switch (kind) {
    case TSRNN_LR_SCHEDULER_NONE:
        return NULL;
    case TSRNN_LR_SCHEDULER_EXPONENTIAL:
        return exponential;
    case TSRNN_LR_SCHEDULER_STEP:
        return step;
    case TSRNN_LR_SCHEDULER_PLATEAU:
        return plateau;
    case TSRNN_LR_SCHEDULER_COSINE:
        return cosine;
    case TSRNN_LR_SCHEDULER_ONE_CYCLE:
        return one_cycle;
    case TSRNN_LR_SCHEDULER_WARM_RESTARTS:
        return warm;
    case TSRNN_LR_SCHEDULER_LINEAR:
        break;
    }
    return linear;
}

/* Whether key k holds a value other than its default: a resolved config file (a run's
 * config.ini) lists every key, so a key read from a file may still hold the default. */
static bool holds_other_than_default(const struct tsrnn_config *cfg, const struct config_key *k)
{
    if (strcmp(cfg->origins[config_key_index(k)], "default") == 0 || k->default_text == NULL)
        return strcmp(cfg->origins[config_key_index(k)], "default") != 0;
    bool differs = true; /* when it cannot tell: as given */
    char mine[256], standard[256];
    struct tsrnn_config *scratch = calloc(1, sizeof(*scratch));
    if (scratch == NULL || config_set_key(scratch, k, k->default_text, "default", NULL) != TSRNN_OK)
        goto out;
    config_format_value(cfg, k, mine, sizeof(mine));
    config_format_value(scratch, k, standard, sizeof(standard));
    differs = strcmp(mine, standard) != 0;
out:
    free(scratch);
    return differs;
}

/* The chosen scheduler's keys: each one given belongs to it (PyTorch's constructor raises a
 * TypeError for any other; a key at its default value, as every key of a run's config.ini,
 * is not one given), the ones PyTorch requires are given, and OneCycleLR's phases are not
 * empty (PyTorch divides by their length: a ZeroDivisionError at the step that enters one).
 * Without a scheduler, Darts ignores the section. */
static enum tsrnn_status check_scheduler_keys(const struct tsrnn_config *cfg)
{
    const char *const *keys = scheduler_keys(cfg->lr_scheduler_cls);
    const char *name = config_choice(cfg, "training", "lr_scheduler_cls");
    if (keys == NULL)
        return TSRNN_OK;
    for (size_t i = 0; i < config_key_count; i++) {
        const struct config_key *k = &config_keys[i];
        if (strcmp(k->section, "lr_scheduler_kwargs") != 0 || !holds_other_than_default(cfg, k))
            continue;
        bool taken = false;
        for (size_t j = 0; keys[j] != NULL; j++)
            taken |= strcmp(keys[j], k->name) == 0;
        if (taken)
            continue;
        char accepted[512];
        size_t used = 0;
        accepted[0] = '\0';
        for (size_t j = 0; keys[j] != NULL && used < sizeof(accepted); j++)
            used += (size_t)snprintf(accepted + used, sizeof(accepted) - used, "%s%s",
                                     j ? ", " : "", keys[j]);
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [lr_scheduler_kwargs] %s is not an argument of %s ([training] "
                           "lr_scheduler_cls, %s), which PyTorch refuses; accepted: %s",
                           cfg->origins[i], k->name, name,
                           tsrnn_config_origin(cfg, "training", "lr_scheduler_cls"), accepted);
    }
    const char *origin = tsrnn_config_origin(cfg, "training", "lr_scheduler_cls");
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_STEP && cfg->lr_step_size == 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] lr_scheduler_cls = StepLR needs [lr_scheduler_kwargs] "
                           "step_size (epochs between decays, >= 1), as PyTorch's StepLR does",
                           origin);
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_COSINE && cfg->lr_T_max == 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] lr_scheduler_cls = CosineAnnealingLR needs "
                           "[lr_scheduler_kwargs] T_max (scheduler steps of half a period, >= 1), "
                           "as PyTorch's CosineAnnealingLR does",
                           origin);
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_WARM_RESTARTS && cfg->lr_T_0 == 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] lr_scheduler_cls = CosineAnnealingWarmRestarts needs "
                           "[lr_scheduler_kwargs] T_0 (scheduler steps until the first restart, "
                           ">= 1), as PyTorch's does",
                           origin);
    if (cfg->lr_interval == TSRNN_LR_INTERVAL_STEP &&
        cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_PLATEAU)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [lr_scheduler_kwargs] interval = step with ReduceLROnPlateau, "
                           "which watches the epoch's val_loss (Lightning finds no val_loss "
                           "after the first step and raises); accepted: interval = epoch",
                           tsrnn_config_origin(cfg, "lr_scheduler_kwargs", "interval"));
    if (cfg->lr_scheduler_cls != TSRNN_LR_SCHEDULER_ONE_CYCLE)
        return TSRNN_OK;
    if (!(cfg->lr_max_lr > 0.0))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] lr_scheduler_cls = OneCycleLR needs "
                           "[lr_scheduler_kwargs] max_lr (> 0), as PyTorch's OneCycleLR does",
                           origin);
    if (cfg->lr_total_steps == 0 && (cfg->lr_epochs == 0 || cfg->lr_steps_per_epoch == 0))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] lr_scheduler_cls = OneCycleLR needs "
                           "[lr_scheduler_kwargs] total_steps, or epochs and steps_per_epoch "
                           "(PyTorch: \"You must define either total_steps OR (epochs AND "
                           "steps_per_epoch)\")",
                           origin);
    double total = cfg->lr_total_steps > 0 ? (double)cfg->lr_total_steps
                                           : (double)cfg->lr_epochs * cfg->lr_steps_per_epoch;
    if (total > 2147483647.0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [lr_scheduler_kwargs] epochs x steps_per_epoch = %.0f; accepted: "
                           "at most 2147483647 scheduler steps",
                           tsrnn_config_origin(cfg, "lr_scheduler_kwargs", "epochs"), total);
    /* The phases' ends as PyTorch computes them. A phase of length 0 is entered by a step when
     * it is the first (step 0 <= its end 0) or the last (the final step passes its start). */
    double end0 = cfg->lr_pct_start * total - 1.0;
    double last_start = cfg->lr_three_phase ? 2.0 * cfg->lr_pct_start * total - 2.0 : end0;
    if (end0 == 0.0 || last_start == total - 1.0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [lr_scheduler_kwargs] pct_start = %g of %.0f steps leaves a phase "
                           "of OneCycleLR without steps (PyTorch divides by its length: "
                           "ZeroDivisionError); accepted: a pct_start with pct_start x "
                           "total_steps != 1 and phases of at least one step",
                           tsrnn_config_origin(cfg, "lr_scheduler_kwargs", "pct_start"),
                           cfg->lr_pct_start, total);
    return TSRNN_OK;
}

/* The optimizer's and the loss's arguments: one that is not the chosen class's is refused
 * unless it has its default value (PyTorch raises a TypeError for an unknown keyword; a
 * default value is what a resolved config file, config.ini, holds for every key), and the
 * values PyTorch's constructors refuse. */
static enum tsrnn_status check_optimizer_and_loss_keys(const struct tsrnn_config *cfg)
{
    enum tsrnn_optimizer_kind opt = cfg->optimizer_cls;
    const char *name = config_choice(cfg, "training", "optimizer_cls");
    const char *opt_origin = tsrnn_config_origin(cfg, "training", "optimizer_cls");
    static const struct {
        const char *key;
        unsigned takers; /* 1 << enum tsrnn_optimizer_kind */
        const char *accepted;
    } args[] = {
        { "momentum", 1u << TSRNN_OPTIMIZER_SGD | 1u << TSRNN_OPTIMIZER_RMSPROP,
          "0, or optimizer_cls = SGD or RMSprop" },
        { "nesterov", 1u << TSRNN_OPTIMIZER_SGD, "false, or optimizer_cls = SGD" },
        { "eps", ~(1u << TSRNN_OPTIMIZER_SGD), "-1 (SGD has no eps)" },
        { "alpha", 1u << TSRNN_OPTIMIZER_RMSPROP, "0.99, or optimizer_cls = RMSprop" },
        { "centered", 1u << TSRNN_OPTIMIZER_RMSPROP, "false, or optimizer_cls = RMSprop" },
        { "lr_decay", 1u << TSRNN_OPTIMIZER_ADAGRAD, "0, or optimizer_cls = Adagrad" },
        { "initial_accumulator_value", 1u << TSRNN_OPTIMIZER_ADAGRAD,
          "0, or optimizer_cls = Adagrad" },
    };
    bool set[] = { cfg->momentum != 0.0,
                   cfg->nesterov,
                   cfg->eps != -1.0,
                   cfg->alpha != 0.99,
                   cfg->centered,
                   cfg->lr_decay != 0.0,
                   cfg->initial_accumulator_value != 0.0 };
    _Static_assert(sizeof(set) / sizeof(set[0]) == sizeof(args) / sizeof(args[0]),
                   "one value per argument");
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
        if (!set[i] || (args[i].takers >> opt & 1u))
            continue;
        char value[64];
        config_format_value(cfg, config_find_key("training", args[i].key), value, sizeof(value));
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] %s = %s, but optimizer_cls = %s (%s) has no %s, "
                           "which PyTorch refuses; accepted: %s",
                           tsrnn_config_origin(cfg, "training", args[i].key), args[i].key, value,
                           name, opt_origin, args[i].key, args[i].accepted);
    }
    if (cfg->weight_decay < 0.0 && cfg->weight_decay != -1.0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] weight_decay = %g; accepted: a number >= 0, or -1 for "
                           "the optimizer's default",
                           tsrnn_config_origin(cfg, "training", "weight_decay"), cfg->weight_decay);
    if (cfg->eps < 0.0 && cfg->eps != -1.0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] eps = %g; accepted: a number >= 0, or -1 for the "
                           "optimizer's default",
                           tsrnn_config_origin(cfg, "training", "eps"), cfg->eps);
    if (cfg->nesterov && !(cfg->momentum > 0.0))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] nesterov = true with momentum = 0: PyTorch's SGD "
                           "refuses it (\"Nesterov momentum requires a momentum and zero "
                           "dampening\"); accepted: a momentum > 0, or nesterov = false",
                           tsrnn_config_origin(cfg, "training", "nesterov"));
    if (cfg->delta != 1.0 && cfg->loss_fn != TSRNN_LOSS_HUBER)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] delta = %g, but loss_fn = %s has no delta; accepted: "
                           "1, or loss_fn = HuberLoss",
                           tsrnn_config_origin(cfg, "training", "delta"), cfg->delta,
                           config_choice(cfg, "training", "loss_fn"));
    if (cfg->beta != 1.0 && cfg->loss_fn != TSRNN_LOSS_SMOOTH_L1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] beta = %g, but loss_fn = %s has no beta; accepted: 1, "
                           "or loss_fn = SmoothL1Loss",
                           tsrnn_config_origin(cfg, "training", "beta"), cfg->beta,
                           config_choice(cfg, "training", "loss_fn"));
    /* OneCycleLR cycles betas[0] or momentum; Adagrad has neither: PyTorch's ValueError. */
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_ONE_CYCLE && cfg->lr_cycle_momentum &&
        opt == TSRNN_OPTIMIZER_ADAGRAD)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [lr_scheduler_kwargs] cycle_momentum = true with optimizer_cls = "
                           "Adagrad, which has no momentum: PyTorch's OneCycleLR refuses it "
                           "(\"optimizer must support momentum or beta1\"); accepted: "
                           "cycle_momentum = false",
                           tsrnn_config_origin(cfg, "lr_scheduler_kwargs", "cycle_momentum"));
    return TSRNN_OK;
}

static enum tsrnn_status check_training_controls(const struct tsrnn_config *cfg)
{
    bool validation = cfg->split_after[0] != '\0' || cfg->val_fraction > 0.0;
    TSRNN_TRY(check_optimizer_and_loss_keys(cfg));
    TSRNN_TRY(check_scheduler_keys(cfg));
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_PLATEAU && !validation)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] lr_scheduler_cls = ReduceLROnPlateau watches val_loss, "
                           "but there is no validation part; set [data] split_after or "
                           "val_fraction (Lightning refuses a monitor it never logs)",
                           tsrnn_config_origin(cfg, "training", "lr_scheduler_cls"));
    if ((cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_LOSS ||
         cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE ||
         cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MSE) &&
        !validation)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [early_stopping] monitor = %s, but there is no validation "
                           "part; set [data] split_after or val_fraction, or monitor = train_loss",
                           tsrnn_config_origin(cfg, "early_stopping", "monitor"),
                           config_choice(cfg, "early_stopping", "monitor"));
    /* Darts scores its torch_metrics of a probabilistic model on a sample of the likelihood
     * (drawn from the generator between the validation batches): not reproduced. */
    if ((cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE ||
         cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MSE) &&
        cfg->likelihood != TSRNN_LIKELIHOOD_NONE)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [early_stopping] monitor = %s with [model] likelihood = %s (%s): "
                           "Darts scores a probabilistic model's torch_metrics on samples, which "
                           "tsrnn does not draw; accepted: monitor = val_loss or train_loss",
                           tsrnn_config_origin(cfg, "early_stopping", "monitor"),
                           config_choice(cfg, "early_stopping", "monitor"),
                           config_choice(cfg, "model", "likelihood"),
                           tsrnn_config_origin(cfg, "model", "likelihood"));
    return TSRNN_OK;
}

/* [model] likelihood, its [likelihood] arguments and the [forecast] keys about samples: each
 * argument belongs to the likelihoods whose Darts class takes it (an argument counts as given
 * when its value is not the default's, so that a printed config parses again). */
static enum tsrnn_status check_likelihood(const struct tsrnn_config *cfg)
{
    const struct {
        const char *key;
        bool given;
        unsigned kinds; /* bit per enum tsrnn_likelihood_kind */
        const char *takes;
    } arguments[] = {
        { "quantiles", cfg->quantiles[0] != '\0', 1u << TSRNN_LIKELIHOOD_QUANTILE, "quantile" },
        { "prior_mu", !isnan(cfg->prior_mu),
          1u << TSRNN_LIKELIHOOD_GAUSSIAN | 1u << TSRNN_LIKELIHOOD_LAPLACE |
              1u << TSRNN_LIKELIHOOD_LOGNORMAL | 1u << TSRNN_LIKELIHOOD_GUMBEL,
          "gaussian, laplace, lognormal and gumbel" },
        { "prior_sigma", !isnan(cfg->prior_sigma),
          1u << TSRNN_LIKELIHOOD_GAUSSIAN | 1u << TSRNN_LIKELIHOOD_LOGNORMAL |
              1u << TSRNN_LIKELIHOOD_HALFNORMAL,
          "gaussian, lognormal and halfnormal" },
        { "prior_b", !isnan(cfg->prior_b), 1u << TSRNN_LIKELIHOOD_LAPLACE, "laplace" },
        { "prior_lambda", !isnan(cfg->prior_lambda),
          1u << TSRNN_LIKELIHOOD_POISSON | 1u << TSRNN_LIKELIHOOD_EXPONENTIAL,
          "poisson and exponential" },
        { "prior_xzero", !isnan(cfg->prior_xzero), 1u << TSRNN_LIKELIHOOD_CAUCHY, "cauchy" },
        { "prior_gamma", !isnan(cfg->prior_gamma), 1u << TSRNN_LIKELIHOOD_CAUCHY, "cauchy" },
        { "prior_alpha", !isnan(cfg->prior_alpha), 1u << TSRNN_LIKELIHOOD_GAMMA, "gamma" },
        { "prior_beta", !isnan(cfg->prior_beta),
          1u << TSRNN_LIKELIHOOD_GAMMA | 1u << TSRNN_LIKELIHOOD_GUMBEL, "gamma and gumbel" },
        { "prior_p", !isnan(cfg->prior_p),
          1u << TSRNN_LIKELIHOOD_GEOMETRIC | 1u << TSRNN_LIKELIHOOD_BERNOULLI,
          "geometric and bernoulli" },
        { "prior_strength", cfg->prior_strength != 1.0,
          1u << TSRNN_LIKELIHOOD_GAUSSIAN | 1u << TSRNN_LIKELIHOOD_LAPLACE |
              1u << TSRNN_LIKELIHOOD_POISSON | 1u << TSRNN_LIKELIHOOD_LOGNORMAL |
              1u << TSRNN_LIKELIHOOD_HALFNORMAL | 1u << TSRNN_LIKELIHOOD_CAUCHY |
              1u << TSRNN_LIKELIHOOD_GAMMA | 1u << TSRNN_LIKELIHOOD_EXPONENTIAL |
              1u << TSRNN_LIKELIHOOD_WEIBULL | 1u << TSRNN_LIKELIHOOD_GUMBEL |
              1u << TSRNN_LIKELIHOOD_GEOMETRIC | 1u << TSRNN_LIKELIHOOD_BERNOULLI,
          "the likelihoods other than quantile and negative_binomial" },
        { "beta_nll", cfg->beta_nll != 0.0, 1u << TSRNN_LIKELIHOOD_GAUSSIAN, "gaussian" },
    };
    const char *name = config_choice(cfg, "model", "likelihood");
    for (size_t i = 0; i < sizeof(arguments) / sizeof(arguments[0]); i++)
        if (arguments[i].given && !(arguments[i].kinds & (1u << cfg->likelihood)))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [likelihood] %s belongs to %s, but [model] likelihood = %s "
                               "(%s); accepted: leave it out, or a likelihood that takes it",
                               tsrnn_config_origin(cfg, "likelihood", arguments[i].key),
                               arguments[i].key, arguments[i].takes, name,
                               tsrnn_config_origin(cfg, "model", "likelihood"));
    bool probabilistic = cfg->likelihood != TSRNN_LIKELIHOOD_NONE;
    if (cfg->num_samples > 1 && !probabilistic)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [forecast] num_samples = %d needs a probabilistic model, as in "
                           "Darts; accepted: 1, or a [model] likelihood",
                           tsrnn_config_origin(cfg, "forecast", "num_samples"), cfg->num_samples);
    if (cfg->predict_likelihood_parameters &&
        (!probabilistic || cfg->num_samples != 1 || cfg->forecast_n > 1))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [forecast] predict_likelihood_parameters = true needs a [model] "
                           "likelihood, num_samples = 1 and n = 1 (RNNModel's "
                           "output_chunk_length), as Darts; here likelihood = %s, num_samples = "
                           "%d, n = %d",
                           tsrnn_config_origin(cfg, "forecast", "predict_likelihood_parameters"),
                           name, cfg->num_samples, cfg->forecast_n);
    if (!(cfg->low_quantile < cfg->high_quantile))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [forecast] low_quantile = %g is not below high_quantile = %g "
                           "(%s)",
                           tsrnn_config_origin(cfg, "forecast", "low_quantile"), cfg->low_quantile,
                           cfg->high_quantile,
                           tsrnn_config_origin(cfg, "forecast", "high_quantile"));
    if (probabilistic && cfg->loss_fn != TSRNN_LOSS_MSE)
        tsrnn_warn("%s: [training] loss_fn is not used with [model] likelihood = %s (as in "
                   "Darts): the loss is the likelihood's",
                   tsrnn_config_origin(cfg, "training", "loss_fn"), name);
    return TSRNN_OK;
}

/* Every path goes into config.ini and the checkpoints (JSON: UTF-8) and into messages: the
 * folder a relative value was joined to must be printable UTF-8 as the value is (config_set_key()
 * checked the value alone). Checked before anything is written: a run in a Latin-1 folder
 * trained, wrote five files, then failed at its first checkpoint. */
static enum tsrnn_status check_resolved_paths(const struct tsrnn_config *cfg)
{
    for (size_t i = 0; i < config_key_count; i++) {
        const struct config_key *k = &config_keys[i];
        if (k->type != KEY_PATH && k->type != KEY_PATHS && k->type != KEY_RESUME)
            continue;
        const char *path = config_cfield(cfg, k), *origin = cfg->origins[i];
        if (tsrnn_text_printable(path))
            continue;
        bool by_default = strcmp(origin, "default") == 0;
        bool from_cwd = by_default || strncmp(origin, "--set", 5) == 0;
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s%s[%s] %s%s resolves to '%s', which is not printable UTF-8 text: %s "
                           "has a name that is not UTF-8 or holds a control character, and tsrnn "
                           "writes every path into config.ini and its checkpoints; accepted: "
                           "folders with UTF-8 names (%s, or give an absolute path)",
                           by_default ? "" : origin, by_default ? "" : ": ", k->section, k->name,
                           by_default ? " (its default)" : "", path,
                           from_cwd ? "the current folder, which relative paths of --set and the "
                                      "default work_dir resolve against,"
                                    : "the config file's folder, which its relative paths "
                                      "resolve against,",
                           from_cwd ? "run from another folder" : "move the config file");
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_config_validate(const struct tsrnn_config *cfg)
{
    TSRNN_TRY(check_resolved_paths(cfg));
    if (cfg->data_path[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "[data] path is not set; add 'path = your_series.csv' under [data]");
    if (cfg->init_weights[0] != '\0')
        TSRNN_TRY(tsrnn_config_check_file(cfg, "model", "init_weights", cfg->init_weights,
                                          "weights file"));
    if (cfg->resume[0] == '/')
        TSRNN_TRY(tsrnn_config_check_file(cfg, "training", "resume", cfg->resume, "checkpoint"));
    /* The run folder's parent: a folder, or a path still to be made (by the run). */
    struct stat st;
    if (stat(cfg->work_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [output] work_dir = %s: not a folder; accepted: a folder, or a "
                           "path where one can be made",
                           tsrnn_config_origin(cfg, "output", "work_dir"),
                           tsrnn_display_path(cfg->work_dir));
    /* force_reset deletes the run folder, and with it the checkpoint resume would load. */
    if (cfg->force_reset && (strcmp(cfg->resume, "last") == 0 || strcmp(cfg->resume, "best") == 0))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] resume = %s, but [output] force_reset = true (%s) "
                           "deletes that checkpoint; accepted: one of them (to resume, also "
                           "--set output.force_reset=false)",
                           tsrnn_config_origin(cfg, "training", "resume"), cfg->resume,
                           tsrnn_config_origin(cfg, "output", "force_reset"));

    TSRNN_TRY(check_training_controls(cfg));
    TSRNN_TRY(check_likelihood(cfg));
    /* Darts' RNNModel raises when training_length < input_chunk_length. */
    if (cfg->training_length < cfg->input_chunk_length)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [model] training_length = %d is smaller than input_chunk_length "
                           "= %d (%s); accepted: training_length >= input_chunk_length",
                           tsrnn_config_origin(cfg, "model", "training_length"),
                           cfg->training_length, cfg->input_chunk_length,
                           tsrnn_config_origin(cfg, "model", "input_chunk_length"));
    if (cfg->split_after[0] != '\0' && cfg->val_fraction > 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [data] val_fraction = %g and split_after = '%s' (%s) are both "
                           "set; accepted: one of them",
                           tsrnn_config_origin(cfg, "data", "val_fraction"), cfg->val_fraction,
                           cfg->split_after, tsrnn_config_origin(cfg, "data", "split_after"));
    if (cfg->dropout > 0 && cfg->n_rnn_layers == 1)
        tsrnn_warn("%s: [model] dropout = %g has no effect with n_rnn_layers = 1 (PyTorch "
                   "applies dropout between layers only)",
                   tsrnn_config_origin(cfg, "model", "dropout"), cfg->dropout);
    return TSRNN_OK;
}
