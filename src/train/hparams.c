/* logs/hparams.yaml: Darts' module hyperparameters as Lightning's TensorBoardLogger saves
 * them (PyYAML, keys sorted), for a run with log_tensorboard. */
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/model.h"

/* The shortest %g text that reads back as `x`, as Python's repr() (and so PyYAML) writes
 * a float. */
static void shortest_double(char *out, size_t size, double x)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

/* Whether the config file or --set gave [section] key (Darts records only the kwargs a user
 * passes). */
static bool given(const struct tsrnn_config *cfg, const char *section, const char *key)
{
    return strcmp(tsrnn_config_origin(cfg, section, key), "default") != 0;
}

/* A Python float as PyYAML writes it: repr()'s shortest digits, positional from 1e-4 to
 * 1e16 (with ".0" when whole), else an exponent with ".0" in a one-digit mantissa
 * ("1.0e-05"). */
static void yaml_float(char *out, size_t size, double x)
{
    char e_text[40];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(e_text, sizeof(e_text), "%.*e", digits - 1, x);
        if (strtod(e_text, NULL) == x)
            break;
    }
    snprintf(e_text, sizeof(e_text), "%.*e", digits - 1, x);
    int exponent = atoi(strchr(e_text, 'e') + 1);
    if (exponent >= -4 && exponent < 16) {
        int decimals = digits - 1 - exponent;
        snprintf(out, size, "%.*f%s", decimals > 0 ? decimals : 0, x, decimals > 0 ? "" : ".0");
    } else {
        char *e = strchr(e_text, 'e');
        *e = '\0';
        snprintf(out, size, "%s%se%s", e_text, strchr(e_text, '.') ? "" : ".0", e + 1);
    }
}

/* The optimizer's kwargs as Darts' hparams.yaml lists them: lr, and the keys the user set
 * that the optimizer takes, sorted as PyYAML sorts them (upper case first), two spaces in. */
static void write_optimizer_kwargs(FILE *f, const struct tsrnn_config *cfg)
{
    /* Which optimizers take each key (1 << enum tsrnn_optimizer_kind); lr is
     * always written. 'g': the shortest repr digits; 'd': PyYAML's float; 'b': a bool. */
    enum {
        SGD = 1 << TSRNN_OPTIMIZER_SGD,
        RMSPROP = 1 << TSRNN_OPTIMIZER_RMSPROP,
        ADAGRAD = 1 << TSRNN_OPTIMIZER_ADAGRAD,
        ALL = 0xff,
    };
    const struct {
        const char *name;
        char type;
        const void *value;
        unsigned takers;
    } opt_keys[] = {
        { "alpha", 'd', &cfg->alpha, RMSPROP },
        { "centered", 'b', &cfg->centered, RMSPROP },
        { "eps", 'd', &cfg->eps, ALL & ~SGD },
        { "initial_accumulator_value", 'd', &cfg->initial_accumulator_value, ADAGRAD },
        { "lr", 'g', &cfg->lr, ALL },
        { "lr_decay", 'd', &cfg->lr_decay, ADAGRAD },
        { "momentum", 'g', &cfg->momentum, SGD | RMSPROP },
        { "nesterov", 'b', &cfg->nesterov, SGD },
        { "weight_decay", 'g', &cfg->weight_decay, ALL },
    };
    char number[48];
    for (size_t k = 0; k < sizeof(opt_keys) / sizeof(opt_keys[0]); k++) {
        const void *v = opt_keys[k].value;
        bool negative_default = v == &cfg->eps || v == &cfg->weight_decay; /* -1: default */
        if (!(opt_keys[k].takers >> cfg->optimizer_cls & 1u) ||
            (v != &cfg->lr && !given(cfg, "training", opt_keys[k].name)) ||
            (negative_default && *(const double *)v < 0.0))
            continue;
        if (opt_keys[k].type == 'b')
            snprintf(number, sizeof(number), "%s", *(const bool *)v ? "true" : "false");
        else if (opt_keys[k].type == 'd')
            yaml_float(number, sizeof(number), *(const double *)v);
        else
            shortest_double(number, sizeof(number), *(const double *)v);
        fprintf(f, "  %s: %s\n", opt_keys[k].name, number);
    }
}

/* The scheduler's kwargs likewise: the keys the user set. */
static void write_scheduler_kwargs(FILE *f, const struct tsrnn_config *cfg)
{
    static const char *const interval[] = { "epoch", "step" },
                             *const anneal[] = { "cos", "linear" },
                             *const mode[] = { "min", "max" },
                             *const threshold_mode[] = { "rel", "abs" };
    /* type: 'i' int, 'd' float, 'b' bool, 'e' one of names[] */
    const struct {
        const char *name;
        char type;
        const void *value;
        const char *const *names;
    } sched_keys[] = {
        { "T_0", 'i', &cfg->lr_T_0, NULL },
        { "T_max", 'i', &cfg->lr_T_max, NULL },
        { "T_mult", 'i', &cfg->lr_T_mult, NULL },
        { "anneal_strategy", 'e', &cfg->lr_anneal_strategy, anneal },
        { "base_momentum", 'd', &cfg->lr_base_momentum, NULL },
        { "cooldown", 'i', &cfg->lr_cooldown, NULL },
        { "cycle_momentum", 'b', &cfg->lr_cycle_momentum, NULL },
        { "div_factor", 'd', &cfg->lr_div_factor, NULL },
        { "end_factor", 'd', &cfg->lr_end_factor, NULL },
        { "epochs", 'i', &cfg->lr_epochs, NULL },
        { "eta_min", 'd', &cfg->lr_eta_min, NULL },
        { "factor", 'd', &cfg->lr_factor, NULL },
        { "final_div_factor", 'd', &cfg->lr_final_div_factor, NULL },
        { "frequency", 'i', &cfg->lr_frequency, NULL },
        { "gamma", 'd', &cfg->lr_gamma, NULL },
        { "interval", 'e', &cfg->lr_interval, interval },
        { "max_lr", 'd', &cfg->lr_max_lr, NULL },
        { "max_momentum", 'd', &cfg->lr_max_momentum, NULL },
        { "min_lr", 'd', &cfg->lr_min_lr, NULL },
        { "mode", 'e', &cfg->lr_mode, mode },
        { "patience", 'i', &cfg->lr_patience, NULL },
        { "pct_start", 'd', &cfg->lr_pct_start, NULL },
        { "start_factor", 'd', &cfg->lr_start_factor, NULL },
        { "step_size", 'i', &cfg->lr_step_size, NULL },
        { "steps_per_epoch", 'i', &cfg->lr_steps_per_epoch, NULL },
        { "three_phase", 'b', &cfg->lr_three_phase, NULL },
        { "threshold", 'd', &cfg->lr_threshold, NULL },
        { "threshold_mode", 'e', &cfg->lr_threshold_mode, threshold_mode },
        { "total_iters", 'i', &cfg->lr_total_iters, NULL },
        { "total_steps", 'i', &cfg->lr_total_steps, NULL },
    };
    char number[48];
    for (size_t k = 0; k < sizeof(sched_keys) / sizeof(sched_keys[0]); k++) {
        if (!given(cfg, "lr_scheduler_kwargs", sched_keys[k].name))
            continue;
        const void *v = sched_keys[k].value;
        switch (sched_keys[k].type) {
        case 'i':
            snprintf(number, sizeof(number), "%d", *(const int *)v);
            break;
        case 'd':
            yaml_float(number, sizeof(number), *(const double *)v);
            break;
        case 'b':
            snprintf(number, sizeof(number), "%s", *(const bool *)v ? "true" : "false");
            break;
        default: /* every enum here is int-sized, as the config parser stores them */
            snprintf(number, sizeof(number), "%s", sched_keys[k].names[*(const int *)v]);
            break;
        }
        fprintf(f, "  %s: %s\n", sched_keys[k].name, number);
    }
}

/* logs/hparams.yaml as Lightning's TensorBoardLogger saves Darts' module hyperparameters
 * (PyYAML, keys sorted) for this model: the future covariates' shape; the optimizer and
 * scheduler classes with the kwargs the config gave. A likelihood: Darts pickles the object
 * (its torch modules' internals included); tsrnn writes its repr() and nr_params. */
enum tsrnn_status tsrnn_train_write_hparams(const char *logs_dir, const struct tsrnn_config *cfg,
                                            size_t component_count, size_t covariate_count,
                                            const struct tsrnn_likelihood *lik)
{
    static const char *const optimizers[] = { "adam.Adam", "adamw.AdamW", "sgd.SGD",
                                              "rmsprop.RMSprop", "adagrad.Adagrad" };
    static const char *const schedulers[] = { NULL,
                                              "ExponentialLR",
                                              "StepLR",
                                              "ReduceLROnPlateau",
                                              "CosineAnnealingLR",
                                              "OneCycleLR",
                                              "CosineAnnealingWarmRestarts",
                                              "LinearLR" };
    size_t C = component_count, K = covariate_count;
    char path[PATH_MAX + 32], dropout[32], covariates[64] = "null";
    struct tsrnn_atomic_file af;
    snprintf(path, sizeof(path), "%s/hparams.yaml", logs_dir);
    /* Darts' training sample holds the future covariates beside both targets. */
    if (K > 0)
        snprintf(covariates, sizeof(covariates), "!!python/tuple\n  - %d\n  - %zu",
                 cfg->training_length, K);
    shortest_double(dropout, sizeof(dropout), cfg->dropout);
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    char likelihood[TSRNN_LIKELIHOOD_MAX_QUANTILES * 24 + 128] = "null";
    if (lik->kind != TSRNN_LIKELIHOOD_NONE)
        tsrnn_likelihood_repr(lik, likelihood, sizeof(likelihood));
    fprintf(af.file,
            "dropout: %s\nhidden_dim: %d\ninput_chunk_length: %d\ninput_size: %zu\n"
            "likelihood: %s\n",
            dropout, cfg->hidden_dim, cfg->input_chunk_length, C + K, likelihood);
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_NONE) {
        fprintf(af.file, "lr_scheduler_cls: null\nlr_scheduler_kwargs: null\n");
    } else {
        fprintf(af.file,
                "lr_scheduler_cls: !!python/name:torch.optim.lr_scheduler.%s ''\n"
                "lr_scheduler_kwargs:%s\n",
                schedulers[cfg->lr_scheduler_cls],
                cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_EXPONENTIAL &&
                        !given(cfg, "lr_scheduler_kwargs", "gamma")
                    ? " {}"
                    : "");
        write_scheduler_kwargs(af.file, cfg);
    }
    fprintf(af.file,
            "name: %s\nnr_params: %zu\nnum_layers: %d\n"
            "optimizer_cls: !!python/name:torch.optim.%s ''\noptimizer_kwargs:\n",
            tsrnn_model_kind_name(cfg->model), tsrnn_likelihood_param_count(lik), cfg->n_rnn_layers,
            optimizers[cfg->optimizer_cls]);
    write_optimizer_kwargs(af.file, cfg);
    fprintf(af.file,
            "output_chunk_length: 1\noutput_chunk_shift: 0\ntarget_size: %zu\n"
            "train_sample_shape:\n  future_covariates: %s\n"
            "  future_target: !!python/tuple\n  - %d\n  - %zu\n"
            "  historic_future_covariates: %s\n  past_covariates: null\n"
            "  past_target: !!python/tuple\n  - %d\n  - %zu\n  static_covariates: null\n"
            "use_reversible_instance_norm: false\n",
            C, covariates, cfg->training_length, C, covariates, cfg->training_length, C);
    return tsrnn_atomic_file_commit(&af);
}
