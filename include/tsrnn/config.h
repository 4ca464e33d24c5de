/* tsrnn configuration: the INI schema, defaults, --set overrides and validation.
 *
 * A run is described by one INI file (libinih) with the sections [data] [model] [training]
 * [trainer] [output] [forecast]; option names are Darts' (DESIGN.md §6), and
 * docs/configuration.md, written from the schema (src/config/config.c) by tools/config-doc,
 * documents every key. Values are resolved in this order, later wins:
 *
 *     built-in defaults  <  the INI file  <  --set section.key=value (in command-line order)
 *
 * Relative paths in the INI file resolve against the file's folder; relative paths given with
 * --set resolve against the current directory. The resolved config stores absolute paths, so
 * the text tsrnn_config_write() prints parses again to the same config from anywhere.
 *
 * Every error names where the bad value came from (`file:line` or the `--set` argument), the
 * key, the value and what is accepted, and returns TSRNN_ERR_USAGE (exit code 2).
 */
#ifndef TSRNN_CONFIG_H
#define TSRNN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tsrnn/core.h"

#define TSRNN_MAX_COMPONENTS  64  /* value columns of one series */
#define TSRNN_NAME_MAX        128 /* bytes of a column name or model name, NUL included */
#define TSRNN_ORIGIN_MAX      320 /* bytes of "file:line" or "--set a.b=c", NUL included */
#define TSRNN_CONFIG_MAX_KEYS 128 /* room in origins[] for the schema's keys */

/* The values of the keys that choose a class are the enums below; the modules that interpret
 * them include this header for them (model.h, likelihood.h, optim.h, ...), so that the config
 * needs none of theirs. */

/* [model] model: PyTorch's recurrent layer (include/tsrnn/nn.h). */
enum tsrnn_model_kind {
    TSRNN_MODEL_RNN,
    TSRNN_MODEL_LSTM,
    TSRNN_MODEL_GRU,
};

/* The training loss ([training] loss_fn, or [model] likelihood; include/tsrnn/nn.h).
 * HuberLoss and SmoothL1Loss take an argument, passed beside the kind as `delta`: HuberLoss's
 * delta (> 0), SmoothL1Loss's beta (>= 0; 0 is L1Loss, as torch.nn.functional.smooth_l1_loss
 * calls l1_loss then). The first four are [training] loss_fn's choices in order. */
enum tsrnn_loss_kind {
    TSRNN_LOSS_MSE,        /* nn.MSELoss(): the default, 0 */
    TSRNN_LOSS_L1,         /* nn.L1Loss() */
    TSRNN_LOSS_HUBER,      /* nn.HuberLoss(delta) */
    TSRNN_LOSS_SMOOTH_L1,  /* nn.SmoothL1Loss(beta) */
    TSRNN_LOSS_LIKELIHOOD, /* the workspace's likelihood (tsrnn_compute_workspace_likelihood):
                              the NLL of Darts' likelihood, include/tsrnn/likelihood.h */
};

/* [model] likelihood: Darts' likelihood (include/tsrnn/likelihood.h). */
enum tsrnn_likelihood_kind {
    TSRNN_LIKELIHOOD_NONE, /* a point forecast: the loss is [training] loss_fn */
    TSRNN_LIKELIHOOD_GAUSSIAN,
    TSRNN_LIKELIHOOD_LAPLACE,
    TSRNN_LIKELIHOOD_QUANTILE,
    TSRNN_LIKELIHOOD_POISSON,
    TSRNN_LIKELIHOOD_NEGATIVE_BINOMIAL,
    TSRNN_LIKELIHOOD_LOGNORMAL,
    TSRNN_LIKELIHOOD_HALFNORMAL,
    TSRNN_LIKELIHOOD_CAUCHY,
    TSRNN_LIKELIHOOD_GAMMA,
    TSRNN_LIKELIHOOD_EXPONENTIAL,
    TSRNN_LIKELIHOOD_WEIBULL,
    TSRNN_LIKELIHOOD_GUMBEL,
    TSRNN_LIKELIHOOD_GEOMETRIC,
    TSRNN_LIKELIHOOD_BERNOULLI,
};

/* The most quantiles of [likelihood] quantiles (QuantileRegression's head outputs). */
#define TSRNN_LIKELIHOOD_MAX_QUANTILES 99

/* Darts' QuantileRegression() default: 17 quantiles from 0.01 to 0.99. */
#define TSRNN_LIKELIHOOD_DEFAULT_QUANTILES                                                         \
    "0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99"

/* [covariates] position: Darts' 'position' encoder. */
enum tsrnn_position_kind {
    TSRNN_POSITION_NONE,
    TSRNN_POSITION_RELATIVE,
};

enum tsrnn_scaler_kind {
    TSRNN_SCALER_MINMAX,
    TSRNN_SCALER_NONE,
};

/* [data] fill_missing_values: what happens to a missing value (an empty or NaN field, or a
 * date inserted by fill_missing_dates). */
enum tsrnn_fill_missing {
    TSRNN_FILL_MISSING_NONE,        /* refused, naming where it is */
    TSRNN_FILL_MISSING_INTERPOLATE, /* Darts' MissingValuesFiller(): linear interpolation */
};

/* Which Lightning's use of the random generator the shuffles follow ([training] rng_compat). */
enum tsrnn_rng_compat {
    TSRNN_RNG_COMPAT_LIGHTNING2, /* today's Darts: the sanity check draws nothing */
    TSRNN_RNG_COMPAT_LIGHTNING1, /* the Darts guide's era: its sanity check drew one number */
};

/* [training] optimizer_cls: PyTorch's optimizer (include/tsrnn/optim.h). */
enum tsrnn_optimizer_kind {
    TSRNN_OPTIMIZER_ADAM,
    TSRNN_OPTIMIZER_ADAMW,
    TSRNN_OPTIMIZER_SGD,
    TSRNN_OPTIMIZER_RMSPROP,
    TSRNN_OPTIMIZER_ADAGRAD,
};

/* [training] lr_scheduler_cls: PyTorch's scheduler, stepped once per epoch (Darts' interval)
 * or, with [lr_scheduler_kwargs] interval = step, after every optimizer step. */
enum tsrnn_lr_scheduler_kind {
    TSRNN_LR_SCHEDULER_NONE,
    TSRNN_LR_SCHEDULER_EXPONENTIAL,   /* ExponentialLR */
    TSRNN_LR_SCHEDULER_STEP,          /* StepLR */
    TSRNN_LR_SCHEDULER_PLATEAU,       /* ReduceLROnPlateau, on val_loss */
    TSRNN_LR_SCHEDULER_COSINE,        /* CosineAnnealingLR */
    TSRNN_LR_SCHEDULER_ONE_CYCLE,     /* OneCycleLR */
    TSRNN_LR_SCHEDULER_WARM_RESTARTS, /* CosineAnnealingWarmRestarts */
    TSRNN_LR_SCHEDULER_LINEAR,        /* LinearLR */
};

/* Lightning's lr scheduler config "interval" (Darts takes it from lr_scheduler_kwargs). */
enum tsrnn_lr_interval {
    TSRNN_LR_INTERVAL_EPOCH,
    TSRNN_LR_INTERVAL_STEP,
};

/* OneCycleLR's anneal_strategy. */
enum tsrnn_anneal_strategy {
    TSRNN_ANNEAL_COS,
    TSRNN_ANNEAL_LINEAR,
};

/* mode of ReduceLROnPlateau and of Lightning's EarlyStopping. */
enum tsrnn_monitor_mode {
    TSRNN_MONITOR_MIN,
    TSRNN_MONITOR_MAX,
};

/* ReduceLROnPlateau's threshold_mode. */
enum tsrnn_threshold_mode {
    TSRNN_THRESHOLD_REL,
    TSRNN_THRESHOLD_ABS,
};

/* [early_stopping] monitor. */
enum tsrnn_early_stopping_monitor {
    TSRNN_EARLY_STOPPING_NONE,
    TSRNN_EARLY_STOPPING_VAL_LOSS,
    TSRNN_EARLY_STOPPING_TRAIN_LOSS,
    TSRNN_EARLY_STOPPING_VAL_MAE, /* torchmetrics' MeanAbsoluteError in Darts' torch_metrics */
    TSRNN_EARLY_STOPPING_VAL_MSE, /* torchmetrics' MeanSquaredError */
};

enum tsrnn_accelerator {
    TSRNN_ACCELERATOR_AUTO,
    TSRNN_ACCELERATOR_CPU,
    TSRNN_ACCELERATOR_GPU,
    TSRNN_ACCELERATOR_XLA, /* any PJRT plugin (the pjrt backend): XLA's CPU plugin in CI */
    TSRNN_ACCELERATOR_TPU, /* the pjrt backend on a plugin whose platform is "tpu" */
};

/* How tsrnn-launch's workers talk ([trainer] comm); src/launcher/devices.c decides. */
enum tsrnn_comm_choice {
    TSRNN_COMM_CHOICE_AUTO, /* local for 1 worker, gloo for CPU workers, nccl for GPU workers */
    TSRNN_COMM_CHOICE_GLOO, /* also GPU workers, staged through host memory: may share a GPU */
    TSRNN_COMM_CHOICE_NCCL, /* GPU workers, one per GPU; with 1 worker too */
};

struct tsrnn_config {
    /* [data] */
    char data_path[PATH_MAX];      /* one path, or comma-separated paths and glob patterns */
    char id_col[TSRNN_NAME_MAX];   /* "" = one series per file; else a long-format file's id */
    char time_col[TSRNN_NAME_MAX]; /* "" = no time column: integer index 0, 1, ... */
    size_t value_col_count;        /* 0 = every column except time_col */
    char value_cols[TSRNN_MAX_COMPONENTS][TSRNN_NAME_MAX];
    char freq[32];           /* "" = inferred; else a pandas offset alias or an integer step */
    bool fill_missing_dates; /* insert the dates missing from the frequency as missing values */
    enum tsrnn_fill_missing fill_missing_values;
    char split_after[64];   /* "" = not set; else a timestamp or index, inclusive */
    double val_fraction;    /* 0 = not set */
    int max_samples_per_ts; /* 0 = no cap */
    enum tsrnn_scaler_kind scaler;

    /* [covariates]: RNNModel's future covariates: columns of the data file, and Darts'
     * add_encoders (encoders.h) */
    char cov_columns[2048];           /* comma list of column names, "" = none */
    char cov_datetime_attribute[256]; /* comma lists of attributes, "" = none */
    char cov_one_hot[256];
    char cov_cyclic[256];
    enum tsrnn_position_kind cov_position;
    enum tsrnn_scaler_kind cov_scaler; /* add_encoders' 'transformer' */

    /* [model] */
    enum tsrnn_model_kind model;
    int hidden_dim;
    int n_rnn_layers;
    double dropout;
    int training_length;
    int input_chunk_length;
    char init_weights[PATH_MAX]; /* "" = PyTorch default initialisation */
    enum tsrnn_likelihood_kind likelihood;

    /* [likelihood]: the likelihood's own arguments, under Darts' names */
    char quantiles[1024]; /* QuantileRegression(quantiles): "" = Darts' default 17 */
    double prior_mu, prior_sigma, prior_b, prior_lambda; /* NaN = not set */
    double prior_xzero, prior_gamma, prior_alpha, prior_beta, prior_p;
    double prior_strength;
    double beta_nll;

    /* [training] */
    int batch_size;
    int n_epochs;
    int max_steps; /* Lightning's Trainer(max_steps): stop after this many steps; -1 = none */
    double lr;
    uint64_t random_state;
    bool shuffle;
    enum tsrnn_rng_compat rng_compat;
    /* "" = a new run; "last" / "best" = that checkpoint of this run folder; else the absolute
     * path of a checkpoint file. */
    char resume[PATH_MAX];
    enum tsrnn_optimizer_kind optimizer_cls;
    double weight_decay; /* -1 = the optimizer's default: AdamW 0.01, the others 0 */
    double momentum;     /* SGD's, RMSprop's */
    bool nesterov;       /* SGD's */
    double eps;          /* -1 = the optimizer's default: Adagrad 1e-10, the others 1e-8 */
    double alpha;        /* RMSprop's */
    bool centered;       /* RMSprop's */
    double lr_decay;     /* Adagrad's */
    double initial_accumulator_value; /* Adagrad's */
    enum tsrnn_loss_kind loss_fn;
    double delta; /* HuberLoss's */
    double beta;  /* SmoothL1Loss's */
    enum tsrnn_lr_scheduler_kind lr_scheduler_cls;

    /* [lr_scheduler_kwargs] */
    double lr_gamma;  /* ExponentialLR, StepLR */
    int lr_step_size; /* StepLR; 0 = not set */
    double lr_factor; /* ReduceLROnPlateau: factor, patience, threshold, ... */
    int lr_patience;
    double lr_threshold;
    enum tsrnn_threshold_mode lr_threshold_mode;
    int lr_cooldown;
    double lr_min_lr;
    enum tsrnn_monitor_mode lr_mode;
    int lr_T_max;           /* CosineAnnealingLR; 0 = not set */
    double lr_eta_min;      /* CosineAnnealingLR, CosineAnnealingWarmRestarts */
    int lr_T_0;             /* CosineAnnealingWarmRestarts; 0 = not set */
    int lr_T_mult;          /* CosineAnnealingWarmRestarts */
    double lr_max_lr;       /* OneCycleLR: max_lr ... three_phase; max_lr 0 = not set */
    int lr_total_steps;     /* 0 = not set: epochs x steps_per_epoch */
    int lr_epochs;          /* 0 = not set */
    int lr_steps_per_epoch; /* 0 = not set */
    double lr_pct_start;
    enum tsrnn_anneal_strategy lr_anneal_strategy;
    bool lr_cycle_momentum;
    double lr_base_momentum;
    double lr_max_momentum;
    double lr_div_factor;
    double lr_final_div_factor;
    bool lr_three_phase;
    double lr_start_factor; /* LinearLR */
    double lr_end_factor;
    int lr_total_iters;
    enum tsrnn_lr_interval lr_interval; /* Lightning's: when the scheduler steps */
    int lr_frequency;                   /* Lightning's: every this many intervals */

    /* [early_stopping]: Lightning's EarlyStopping callback */
    enum tsrnn_early_stopping_monitor es_monitor;
    int es_patience;
    double es_min_delta;
    enum tsrnn_monitor_mode es_mode;

    /* [trainer] */
    enum tsrnn_accelerator accelerator;
    char pjrt_plugin[PATH_MAX]; /* "" = $TSRNN_PJRT_PLUGIN, $TPU_LIBRARY_PATH, libtpu.so */
    char devices[64];           /* "auto", "-1", "N" or "i,j,..." */
    enum tsrnn_comm_choice comm;
    int num_threads;
    double timeout_s;         /* the longest wait for a peer: rendezvous and each collective */
    int max_restarts;         /* tsrnn-launch: relaunches of the whole job after a failure */
    int log_every_n_steps;    /* TensorBoard: train_loss every this many steps (Lightning's) */
    double gradient_clip_val; /* clip_grad_norm_'s max_norm; 0 = no clipping */

    /* [output] */
    char work_dir[PATH_MAX];
    char model_name[TSRNN_NAME_MAX];
    bool force_reset;
    bool save_checkpoints;
    bool log_tensorboard;

    /* [forecast] */
    int forecast_n;     /* key `n`: steps to forecast after training; 0 = none */
    bool forecast_plot; /* key `plot`: also draw forecast.png (when built with cairo) */
    int num_samples;
    bool predict_likelihood_parameters;
    char forecast_quantiles[1024]; /* key `quantiles`: forecast.csv's columns */
    bool forecast_samples;         /* key `samples`: also forecast_samples.csv */
    double low_quantile, high_quantile;

    /* Where each key's value came from: "default", "file.ini:12" or "--set a.b=c";
     * indexed like the schema (tsrnn_config_origin()). */
    char origins[TSRNN_CONFIG_MAX_KEYS][TSRNN_ORIGIN_MAX];
};

/* Fills `cfg` with the built-in defaults (Darts' where Darts has one). The default work_dir is
 * `darts_logs` in the current directory and the default model_name is Darts' timestamped
 * "%Y-%m-%d_%H_%M_%S_torch_model_run_<pid>". */
enum tsrnn_status tsrnn_config_init(struct tsrnn_config *cfg);

/* Parses the INI file `ini_path` over the values already in `cfg`. A syntax error, unknown
 * section or key, duplicate key or bad value stops at the first error. */
enum tsrnn_status tsrnn_config_parse_file(struct tsrnn_config *cfg, const char *ini_path);

/* As tsrnn_config_parse_file(), from the INI text `text` (a checkpoint's resolved config);
 * `label` names it in messages. Relative paths stay as they are. */
enum tsrnn_status tsrnn_config_parse_text(struct tsrnn_config *cfg, const char *text,
                                          const char *label);

/* Applies one `section.key=value` override, as given after --set. */
enum tsrnn_status tsrnn_config_apply_override(struct tsrnn_config *cfg, const char *arg);

/* Sets one key from its text, as the INI parser does; `origin` names where the text came
 * from and `base_dir` is the folder relative paths resolve against. */
enum tsrnn_status tsrnn_config_set(struct tsrnn_config *cfg, const char *section, const char *key,
                                   const char *value, const char *origin, const char *base_dir);

/* Checks what single keys cannot, as far as the config knows them: every path printable
 * UTF-8, [data] path set, init_weights and resume readable, work_dir a folder, resume not
 * deleted by force_reset, the optimizer's, loss's, scheduler's, early stopping's and
 * likelihood's arguments belonging to the class chosen, training_length >=
 * input_chunk_length, split_after and val_fraction not both set. What a key means to the
 * module that reads it is that module's check: [data] and [covariates] are
 * tsrnn_data_check_config()'s (include/tsrnn/data.h), run after this one. */
enum tsrnn_status tsrnn_config_validate(const struct tsrnn_config *cfg);

/* All of the above in order: init, parse_file, each override, validate. */
enum tsrnn_status tsrnn_config_load(struct tsrnn_config *cfg, const char *ini_path,
                                    const char *const *overrides, size_t override_count);

/* Writes the whole resolved config, every key, as an INI file that parses back to the same
 * values. */
enum tsrnn_status tsrnn_config_write(const struct tsrnn_config *cfg, FILE *out);

/* tsrnn_config_write()'s text in a malloc'd string; NULL when out of memory. */
char *tsrnn_config_text(const struct tsrnn_config *cfg);

/* [likelihood] quantiles as Darts' QuantileRegression takes them: a comma-separated list of
 * numbers, each in (0, 1) and given once, 0.5 among them, symmetric around it (the i-th from
 * each end summing to 1 within 1e-6), at most TSRNN_LIKELIHOOD_MAX_QUANTILES; into
 * quantiles[] sorted ascending, as Darts sorts them, and their *count. TSRNN_ERR_USAGE with a
 * sentence naming the bad value and what is accepted (the caller prefixes where it came
 * from). */
enum tsrnn_status tsrnn_config_parse_quantiles(double *quantiles, size_t *count, const char *text);

/* [forecast] quantiles as numbers, in the order given: count (at most `capacity`) into out. */
size_t tsrnn_config_forecast_quantiles(const struct tsrnn_config *cfg, double *out,
                                       size_t capacity);

/* Where `section.key` got its value ("default", "file.ini:12", "--set ..."); NULL for a key
 * that does not exist. */
const char *tsrnn_config_origin(const struct tsrnn_config *cfg, const char *section,
                                const char *key);

/* For the module that interprets a key (data/ reads [data] freq as a frequency): refuses the
 * value of `section.key` (a key of the schema) with the parser's message, "where: [section]
 * key = 'value': why; accepted: what the key accepts". Returns TSRNN_ERR_USAGE. */
enum tsrnn_status tsrnn_config_refuse(const struct tsrnn_config *cfg, const char *section,
                                      const char *key, const char *why);

/* Whether the file `path` that `section.key` names exists, is a regular file (a FIFO would
 * block its reader, a device such as /dev/zero never ends) and can be read: TSRNN_ERR_USAGE
 * led by where the key was set and the key, naming the file as `what` ("data file"). */
enum tsrnn_status tsrnn_config_check_file(const struct tsrnn_config *cfg, const char *section,
                                          const char *key, const char *path, const char *what);

#endif
