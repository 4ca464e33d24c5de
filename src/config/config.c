/* The configuration schema (include/tsrnn/config.h, src/config/schema.h).
 *
 * One table, config_keys[], is the single source of truth for every key: its section, name,
 * type, where it lives in struct tsrnn_config, its default (as text, parsed like any other
 * value), its range and the sentence that tells a user what is accepted, and its
 * documentation. Defaults, the INI parser, --set, --print-config, the error messages and the
 * reference page docs/configuration.md (tools/config-doc) all read that table; this file
 * holds it and the lookups in it.
 */
#include "schema.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const position_choices[] = { "none", "relative", NULL };
static const char *const model_choices[] = { "RNN", "LSTM", "GRU", NULL };
static const char *const scaler_choices[] = { "minmax", "none", NULL };
static const char *const fill_choices[] = { "none", "interpolate", NULL };
static const char *const rng_compat_choices[] = { "lightning2", "lightning1", NULL };
static const char *const accelerator_choices[] = { "auto", "cpu", "gpu", "xla", "tpu", NULL };
static const char *const optimizer_choices[] = {
    "Adam", "AdamW", "SGD", "RMSprop", "Adagrad", NULL
};
static const char *const loss_choices[] = { "MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss",
                                            NULL };
static const char *const lr_scheduler_choices[] = { "none",
                                                    "ExponentialLR",
                                                    "StepLR",
                                                    "ReduceLROnPlateau",
                                                    "CosineAnnealingLR",
                                                    "OneCycleLR",
                                                    "CosineAnnealingWarmRestarts",
                                                    "LinearLR",
                                                    NULL };
static const char *const interval_choices[] = { "epoch", "step", NULL };
static const char *const anneal_choices[] = { "cos", "linear", NULL };
static const char *const mode_choices[] = { "min", "max", NULL };
static const char *const threshold_mode_choices[] = { "rel", "abs", NULL };
static const char *const es_monitor_choices[] = {
    "none", "val_loss", "train_loss", "val_MeanAbsoluteError", "val_MeanSquaredError", NULL
};
static const char *const comm_choices[] = { "auto", "gloo", "nccl", NULL };
static const char *const likelihood_choices[] = {
    "none",      "gaussian",   "laplace",   "quantile", "poisson",     "negative_binomial",
    "lognormal", "halfnormal", "cauchy",    "gamma",    "exponential", "weibull",
    "gumbel",    "geometric",  "bernoulli", NULL
};

#define FIELD(f) offsetof(struct tsrnn_config, f)
#define SIZE(f)  sizeof(((struct tsrnn_config *)0)->f)

/* One line per key: where it lives, its default, its range (closed unless a MIN_OPEN/MAX_OPEN
 * flag says otherwise) or the sentence of what a text key accepts, then its documentation as
 * designated initializers (.doc, .darts, .example and, where needed, .default_doc). */
#define INT(sec, key, f, def, lo, hi, ...)                                                         \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_INT, .offset = FIELD(f), .default_text = def,     \
        .min = lo, .max = hi, __VA_ARGS__                                                          \
    }
#define U64(sec, key, f, def, lo, hi, ...)                                                         \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_U64, .offset = FIELD(f), .default_text = def,     \
        .min = lo, .max = hi, __VA_ARGS__                                                          \
    }
#define DOUBLE(sec, key, f, def, lo, hi, bounds, ...)                                              \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_DOUBLE, .offset = FIELD(f), .default_text = def,  \
        .min = lo, .max = hi, .open = bounds, __VA_ARGS__                                          \
    }
#define OPTIONAL_DOUBLE(sec, key, f, lo, hi, bounds, ...)                                          \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_OPTIONAL_DOUBLE, .offset = FIELD(f),              \
        .default_text = "", .min = lo, .max = hi, .open = bounds, __VA_ARGS__                      \
    }
#define BOOL(sec, key, f, def, ...)                                                                \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_BOOL, .offset = FIELD(f), .default_text = def,    \
        __VA_ARGS__                                                                                \
    }
#define ENUM(sec, key, f, def, names, ...)                                                         \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_ENUM, .offset = FIELD(f), .default_text = def,    \
        .choices = names, __VA_ARGS__                                                              \
    }
#define TEXT(sec, key, type_, f, def, what, ...)                                                   \
    {                                                                                              \
        .section = sec, .name = key, .type = type_, .offset = FIELD(f), .capacity = SIZE(f),       \
        .default_text = def, .accepted = what, __VA_ARGS__                                         \
    }

/* Adding a config key: add its line here (with .doc, .darts and .example), then regenerate
 * docs/configuration.md (ninja -C build config-doc); the config_doc test fails until the page
 * and this table agree. A rule across keys goes into tsrnn_config_validate() (check.c), or
 * into the check of the module that reads the key, and into the .doc of the keys it
 * involves. */
const struct config_key config_keys[] = {
    TEXT("data", "path", KEY_PATHS, data_path, "",
         "the path of a CSV file, a comma-separated list of them, or glob patterns such as "
         "data/*.csv (relative to the INI file's folder)",
         .doc = "The CSV file of the series: a header row, then one row per time step. Several "
                "files (a list, or a pattern's matches sorted by name) are several series, one "
                "model trained on all of them (a global model), each named by its file name "
                "without extension; with `id_col`, one file holds them all.",
         .darts = "`TimeSeries.from_csv(path)`; `fit([s1, s2, …])` for several",
         .example = "data/air_passengers.csv", .default_doc = "required"),
    TEXT("data", "id_col", KEY_STRING, id_col, "",
         "a column name, or nothing for one series per file",
         .doc = "A long-format file: the column naming each row's series. Each distinct id is "
                "one series of its rows, in Darts' order (sorted by id: as numbers when every "
                "id is a number, else as text); needs `time_col` and one file in `path`.",
         .darts = "`TimeSeries.from_group_dataframe(df, group_cols=..., time_col=...)`",
         .example = "store", .default_doc = "one series per file"),
    TEXT("data", "time_col", KEY_STRING, time_col, "",
         "a column name, or nothing for an integer index",
         .doc = "The column of time stamps (or of an integer index, when every value is an "
                "integer, as in pandas); stamps must strictly increase and keep to one "
                "frequency (`freq`, `fill_missing_dates`).",
         .darts = "`TimeSeries.from_csv(..., time_col=...)`", .example = "Month",
         .default_doc = "the rows are numbered 0, 1, 2, …"),
    TEXT("data", "value_cols", KEY_COLUMNS, value_cols, "",
         "a comma-separated list of column names, or nothing for every column but time_col",
         .doc = "The columns to model, each a component of the series (at most 64, each once).",
         .darts = "`TimeSeries.from_csv(..., value_cols=...)`", .example = "#Passengers",
         .default_doc = "every column but `time_col`"),
    TEXT("data", "freq", KEY_FREQ, freq, "",
         "a pandas offset alias (s, min, h, D, B, W-SUN, MS, ME, QS, QE, YS, YE, ...; a count "
         "before it, as 2W-MON or 15min), an integer step for an integer index, or nothing",
         .doc = "The frequency of the time index. Unset, it is inferred from the time column as "
                "pandas infers it, and a column whose steps are not one frequency is refused. "
                "Set, every stamp must be on it, and the dates missing from it are inserted as "
                "missing values (as Darts does with `freq`, whatever `fill_missing_dates` says).",
         .darts = "`TimeSeries.from_csv(..., freq=...)`", .example = "MS",
         .default_doc = "inferred from the time column"),
    BOOL("data", "fill_missing_dates", fill_missing_dates, "false",
         .doc = "Insert the dates missing from the series' frequency as missing values, for "
                "`fill_missing_values` to fill. Without `freq`, the frequency is the one that "
                "three consecutive stamps show and that keeps every stamp.",
         .darts = "`TimeSeries.from_csv(..., fill_missing_dates=True)`", .example = "true"),
    ENUM("data", "fill_missing_values", fill_missing_values, "none", fill_choices,
         .doc = "What becomes of a missing value (an empty or NaN field, an inserted date): "
                "`none` refuses it, naming where it is; `interpolate` fills it by linear "
                "interpolation between the values around it (before the first value: the "
                "first; after the last: the last). The scaler is fitted on the filled values.",
         .darts = "`MissingValuesFiller()` (pandas' `interpolate(limit_direction=\"both\")`)",
         .example = "interpolate"),
    TEXT("data", "split_after", KEY_STRING, split_after, "",
         "a time stamp (YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS]) or an integer index",
         .doc = "The last point of the training part, inclusive; the points after it validate. "
                "A stamp between two points keeps every point up to it. With several series it "
                "splits each one. Not together with `val_fraction`.",
         .darts = "`series.split_after(ts)`", .example = "1959-01",
         .default_doc = "the whole series trains, unless `val_fraction` is set"),
    DOUBLE("data", "val_fraction", val_fraction, "0", 0, 1, MAX_OPEN,
           .doc = "The fraction of the series that validates: the last ⌊L·f⌋ of its L points "
                  "(of each series' own L, with several). Not together with `split_after`.",
           .darts = "`darts.utils.model_selection.train_test_split(series, test_size=f)` "
                    "(several series: `axis=1`)",
           .example = "0.2", .default_doc = "no validation part, unless `split_after` is set"),
    INT("data", "max_samples_per_ts", max_samples_per_ts, "0", 0, 2147483647,
        .doc = "With several series: the training (and validation) samples each series "
               "contributes, its most recent windows; 0 is every window of the longest series, "
               "the shorter ones repeating theirs as Darts does.",
        .darts = "`fit(..., max_samples_per_ts=...)`", .example = "100", .default_doc = "no cap"),
    ENUM("data", "scaler", scaler, "minmax", scaler_choices,
         .doc = "`minmax` scales each component to [0, 1] over the training part (validation "
                "values may fall outside, as in Darts), one scaler per series with several; "
                "`none` trains on the raw values.",
         .darts = "`Scaler()` (sklearn's `MinMaxScaler`) fitted on the training part",
         .example = "none"),

    TEXT("covariates", "columns", KEY_STRING, cov_columns, "",
         "a comma-separated list of column names of the data file, none of them a value column",
         .doc = "Columns of the data file that are future covariates, read and filled like the "
                "values (needs `[data] value_cols`). They come first, before the encoders' "
                "columns, and must cover every step a forecast feeds them to: a forecast past "
                "the file's last date is refused, naming the missing dates.",
         .darts = "`fit(series, future_covariates=...)` with those columns",
         .example = "temperature, holiday", .default_doc = "none"),
    TEXT("covariates", "datetime_attribute", KEY_STRING, cov_datetime_attribute, "",
         "a comma-separated list of year, month, day, hour, minute, second, dayofweek "
         "(weekday, day_of_week), dayofyear (day_of_year), quarter, week (weekofyear, "
         "week_of_year)",
         .doc = "Future covariates computed from the time index, one column each: pandas' "
                "attribute of each stamp, the 1-based ones (month, day, quarter, dayofyear, "
                "week) counted from 0 as Darts does. They extend themselves to the forecast's "
                "end. Darts orders the encoders `cyclic`, `datetime_attribute`, `one_hot`, "
                "`position`, each in the order written ([data.md](data.md#covariates)).",
         .darts = "`add_encoders={'datetime_attribute': {'future': [...]}}`",
         .example = "year, month", .default_doc = "none"),
    TEXT("covariates", "one_hot", KEY_STRING, cov_one_hot, "",
         "a comma-separated list of month, day, hour, minute, second, dayofweek, quarter",
         .doc = "Datetime attributes one-hot encoded, one column per value (month: 12). Not an "
                "`add_encoders` key: the RNN example notebook builds them with "
                "`datetime_attribute_timeseries`.",
         .darts = "`datetime_attribute_timeseries(..., one_hot=True)` as future covariates",
         .example = "month", .default_doc = "none"),
    TEXT("covariates", "cyclic", KEY_STRING, cov_cyclic, "",
         "a comma-separated list of month, day, hour, minute, second, dayofweek, dayofyear, "
         "quarter, week",
         .doc = "Datetime attributes as sin and cos of their phase, two columns each (never "
                "scaled, as in Darts).",
         .darts = "`add_encoders={'cyclic': {'future': [...]}}`", .example = "month",
         .default_doc = "none"),
    ENUM("covariates", "position", cov_position, "none", position_choices,
         .doc = "`relative` adds each point's position relative to the series' last point (0 "
                "there, 1 at the first forecast step).",
         .darts = "`add_encoders={'position': {'future': ['relative']}}`", .example = "relative"),
    ENUM("covariates", "scaler", cov_scaler, "none", scaler_choices,
         .doc = "`minmax` scales the encoders' columns (but `cyclic`'s) to [0, 1] over the "
                "training parts of all series together (with `columns`: over every point of "
                "each series, as Darts encodes over the user covariates' own index), and "
                "applies that to the validation parts and the forecasts, as Darts' encoder "
                "transformer does; and each series' `columns` over its own training part (a "
                "Darts user scales them with a `Scaler` fitted on the training part).",
         .darts = "`add_encoders={..., 'transformer': Scaler()}`", .example = "minmax"),

    ENUM("model", "model", model, "RNN", model_choices,
         .doc = "The recurrent layer: PyTorch's `nn.RNN` (tanh), `nn.LSTM` or `nn.GRU`.",
         .darts = "`RNNModel(model=...)`", .example = "LSTM"),
    INT("model", "hidden_dim", hidden_dim, "25", 1, 65536,
        .doc = "The size of each recurrent layer's hidden state.",
        .darts = "`RNNModel(hidden_dim=...)`", .example = "32"),
    INT("model", "n_rnn_layers", n_rnn_layers, "1", 1, 64,
        .doc = "How many recurrent layers are stacked.", .darts = "`RNNModel(n_rnn_layers=...)`",
        .example = "2"),
    DOUBLE("model", "dropout", dropout, "0", 0, 1, MAX_OPEN,
           .doc = "The dropout probability between stacked layers, in training only; PyTorch "
                  "applies it between layers only, so with `n_rnn_layers = 1` it has no "
                  "effect (a warning says so).",
           .darts = "`RNNModel(dropout=...)` (between layers only)", .example = "0.1"),
    INT("model", "training_length", training_length, "24", 1, 1000000,
        .doc = "The length of each training window (input and target are shifted by one step); "
               "at least `input_chunk_length`. Each of the training and validation parts needs "
               "at least `training_length + 1` points.",
        .darts = "`RNNModel(training_length=...)`", .example = "20"),
    INT("model", "input_chunk_length", input_chunk_length, "12", 1, 1000000,
        .doc = "How many past points a forecast reads before its first prediction; used only "
               "to forecast. Darts requires it; the default is half the default "
               "`training_length`.",
        .darts = "`RNNModel(input_chunk_length=...)`", .example = "14"),
    TEXT("model", "init_weights", KEY_PATH, init_weights, "",
         "the path of a .safetensors file, or nothing for PyTorch's default initialisation",
         .doc = "Initial weights instead of a random initialisation: a `.safetensors` file with "
                "PyTorch's names (`rnn.weight_ih_l0`, …, `V.weight`, `V.bias`), F32, every "
                "tensor present with its shape. Adam starts afresh, unless the file comes from "
                "`scripts/darts-to-tsrnn` (metadata `darts.adam_step`): then Adam continues "
                "the Darts checkpoint's moments and step.",
         .darts = "`model.load_weights(...)` / `model.load_state_dict(...)`",
         .example = "weights.safetensors",
         .default_doc = "PyTorch's default initialisation, seeded by `random_state`"),
    ENUM("model", "likelihood", likelihood, "none", likelihood_choices,
         .doc = "A probabilistic model: the head outputs the distribution's parameters for each "
                "target, the loss is their negative log-likelihood (plus the prior's KL term), "
                "and forecasts are sample paths ([forecast] `num_samples`). `gaussian`, "
                "`laplace`, `cauchy`, `gumbel`, `poisson`; `negative_binomial` and `geometric` "
                "(count targets: `scaler = none`), `lognormal`, `gamma` and `weibull` (positive "
                "targets), `halfnormal` and `exponential` (non-negative targets), `bernoulli` "
                "(targets 0 and 1) and `quantile` (quantile regression); its arguments "
                "are the `[likelihood]` section. `loss_fn` is ignored, as in Darts. The CPU "
                "trains them; the cuda and pjrt backends refuse them (exit code 2). Darts' other "
                "likelihoods (Beta, ContinuousBernoulli, Dirichlet) are not supported "
                "([numerics](numerics.md#likelihoods)).",
         .darts = "`RNNModel(likelihood=GaussianLikelihood())`", .example = "gaussian",
         .default_doc = "none: a point forecast trained on `loss_fn`"),

    TEXT("likelihood", "quantiles", KEY_QUANTILES, quantiles, "",
         "a comma-separated list of quantiles in (0, 1), 0.5 among them, symmetric around it "
         "(each q below 0.5 with 1 - q above it)",
         .doc = "`likelihood = quantile`: the quantiles the head predicts, one output each, "
                "trained on the quantile (pinball) loss; sorted as Darts sorts them.",
         .darts = "`QuantileRegression(quantiles=[...])`", .example = "0.1, 0.5, 0.9",
         .default_doc = "Darts' 17: " TSRNN_LIKELIHOOD_DEFAULT_QUANTILES),
    OPTIONAL_DOUBLE("likelihood", "prior_mu", prior_mu, -1e30, 1e30, 0,
                    .doc =
                        "`gaussian`, `laplace`, `lognormal`, `gumbel`: the prior's location "
                        "(of the log for `lognormal`); with any prior set, `prior_strength` times "
                        "the mean KL divergence from the prior to the predicted distribution "
                        "joins the loss (a prior parameter not set is the predicted one).",
                    .darts = "`GaussianLikelihood(prior_mu=...)`, `LaplaceLikelihood(...)`, "
                             "`LogNormalLikelihood(...)`, `GumbelLikelihood(...)`",
                    .example = "0.5", .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_sigma", prior_sigma, 0, 1e30, MIN_OPEN,
                    .doc = "`gaussian`, `lognormal`, `halfnormal`: the prior's standard "
                           "deviation.",
                    .darts = "`GaussianLikelihood(prior_sigma=...)`, `LogNormalLikelihood(...)`, "
                             "`HalfNormalLikelihood(...)`",
                    .example = "0.2", .default_doc = "none"),
    OPTIONAL_DOUBLE(
        "likelihood", "prior_b", prior_b, 0, 1e30, MIN_OPEN, .doc = "`laplace`: the prior's scale.",
        .darts = "`LaplaceLikelihood(prior_b=...)`", .example = "0.2", .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_lambda", prior_lambda, 0, 1e30, MIN_OPEN,
                    .doc = "`poisson`, `exponential`: the prior's rate.",
                    .darts = "`PoissonLikelihood(prior_lambda=...)`, "
                             "`ExponentialLikelihood(...)`",
                    .example = "3", .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_xzero", prior_xzero, -1e30, 1e30, 0,
                    .doc = "`cauchy`: the prior's location.",
                    .darts = "`CauchyLikelihood(prior_xzero=...)`", .example = "0.5",
                    .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_gamma", prior_gamma, 0, 1e30, MIN_OPEN,
                    .doc = "`cauchy`: the prior's scale.",
                    .darts = "`CauchyLikelihood(prior_gamma=...)`", .example = "0.2",
                    .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_alpha", prior_alpha, 0, 1e30, MIN_OPEN,
                    .doc = "`gamma`: the prior's shape.",
                    .darts = "`GammaLikelihood(prior_alpha=...)`", .example = "2",
                    .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_beta", prior_beta, 0, 1e30, MIN_OPEN,
                    .doc = "`gamma`: the prior's rate; `gumbel`: the prior's scale.",
                    .darts = "`GammaLikelihood(prior_beta=...)`, `GumbelLikelihood(...)`",
                    .example = "0.5", .default_doc = "none"),
    OPTIONAL_DOUBLE("likelihood", "prior_p", prior_p, 0, 1, MIN_OPEN | MAX_OPEN,
                    .doc = "`geometric`, `bernoulli`: the prior's probability.",
                    .darts = "`GeometricLikelihood(prior_p=...)`, `BernoulliLikelihood(...)`",
                    .example = "0.3", .default_doc = "none"),
    DOUBLE("likelihood", "prior_strength", prior_strength, "1", 0, 1e30, 0,
           .doc = "The weight of the prior's KL term in the loss (with a prior set); for the "
                  "likelihoods with priors.",
           .darts = "`GaussianLikelihood(prior_strength=...)` (and the others')", .example = "0.1"),
    DOUBLE("likelihood", "beta_nll", beta_nll, "0", 0, 1, 0,
           .doc = "`gaussian`: the β-NLL loss, each term weighted by the predicted variance to "
                  "the power β (not differentiated); 0 is the plain NLL.",
           .darts = "`GaussianLikelihood(beta_nll=...)`", .example = "0.5"),

    INT("training", "batch_size", batch_size, "32", 1, 1048576,
        .doc = "Training windows per batch, per worker (as Lightning); the last batch of an "
               "epoch may be smaller.",
        .darts = "`RNNModel(batch_size=...)` (per worker, as Lightning)", .example = "16"),
    INT("training", "n_epochs", n_epochs, "100", 1, 100000000,
        .doc = "How many epochs to train, in all: a resumed run trains on up to this number.",
        .darts = "`RNNModel(n_epochs=...)`", .example = "300"),
    INT("training", "max_steps", max_steps, "-1", -1, 2147483647,
        .doc = "Stop after this many optimizer steps, even inside an epoch (which then still "
               "validates); `-1` = no limit. `0` trains nothing but saves the weights (e.g. "
               "imported with `init_weights`) as `checkpoints/last-epoch=0.safetensors`, "
               "whatever `save_checkpoints` says, for `tsrnn-predict` and `--resume`.",
        .darts = "`pl_trainer_kwargs={\"max_steps\": ...}`", .example = "1000",
        .default_doc = "no limit"),
    DOUBLE("training", "lr", lr, "0.001", 0, 1e6, MIN_OPEN, .doc = "Adam's learning rate.",
           .darts = "`optimizer_kwargs={\"lr\": ...}`", .example = "1e-3"),
    U64("training", "random_state", random_state, "0", 0, 4294967295.0,
        .doc = "The seed of the initial weights, the shuffles and the dropout masks: the same "
               "weights and shuffles as Darts with this `random_state`.",
        .darts = "`RNNModel(random_state=...)`", .example = "42"),
    BOOL("training", "shuffle", shuffle, "true",
         .doc = "Shuffle the training windows every epoch (Darts' order for `random_state`); "
                "`false` keeps their order.",
         .darts = "the training `DataLoader`'s `shuffle=True`", .example = "false"),
    ENUM("training", "rng_compat", rng_compat, "lightning2", rng_compat_choices,
         .doc = "Which Lightning's use of the random generator the shuffles follow, with "
                "validation: `lightning2` is today's Darts (0.48 with Lightning 2.x, whose "
                "pre-training sanity check runs under `isolate_rng` and draws nothing); "
                "`lightning1` is the older order in which that check drew one number first "
                "(the Darts guide's printed run, and tsrnn before this option). Without "
                "validation both are the same.",
         .darts = "the installed Lightning version (`Trainer(num_sanity_val_steps=2)`)",
         .example = "lightning1"),
    TEXT("training", "resume", KEY_RESUME, resume, "",
         "last, best, the path of a checkpoint (.safetensors), or nothing to start afresh",
         .doc = "Continue from a checkpoint of this run folder (`last`, `best`: not with "
                "`force_reset = true`, which would delete it) or from a checkpoint file: "
                "weights, Adam's state, epoch, step and random state. `--resume` on the "
                "command line of `tsrnn-worker` and `tsrnn-launch` sets it too.",
         .darts = "`fit(..., ckpt_path=...)` / `RNNModel.load_from_checkpoint(...)`",
         .example = "last", .default_doc = "a new run"),
    ENUM("training", "optimizer_cls", optimizer_cls, "Adam", optimizer_choices,
         .doc = "The optimizer, with PyTorch's update rule (its single-tensor code path, "
                "operation by operation: [numerics.md](numerics.md#optimizers)): `Adam`, "
                "`AdamW` (decoupled weight decay: each step first multiplies the weights by 1 - "
                "lr·weight_decay), `SGD` (with `momentum`, `nesterov`; dampening 0), `RMSprop` "
                "(`alpha`, `eps`, `momentum`, `centered`) or `Adagrad` (`lr_decay`, "
                "`initial_accumulator_value`, `eps`). Every one takes `weight_decay`. Adam's "
                "betas are (0.9, 0.999), PyTorch's default. Each argument given to an "
                "optimizer that has none of it is refused, as PyTorch refuses it. `RMSprop`, "
                "`Adagrad`, `nesterov` and Adam's, SGD's, RMSprop's and Adagrad's "
                "`weight_decay` train on the CPU backend only: the `cuda` and `pjrt` backends "
                "refuse them (exit 2: [numerics.md](numerics.md#optimizers) says why). Not "
                "implemented: SGD's `dampening`, Adam's `amsgrad` and `betas`, `maximize`, "
                "other optimizers.",
         .darts = "`RNNModel(optimizer_cls=torch.optim.AdamW)`", .example = "AdamW"),
    DOUBLE("training", "weight_decay", weight_decay, "-1", -1, 1e6, 0,
           .doc = "AdamW's decoupled weight decay; for `Adam`, `SGD`, `RMSprop` and `Adagrad` "
                  "PyTorch's L2 penalty, added to the gradient before the update (`grad + "
                  "weight_decay·param`). `-1` takes the optimizer's PyTorch default (AdamW "
                  "0.01, the others 0).",
           .darts = "`optimizer_kwargs={\"weight_decay\": ...}`", .example = "0.05",
           .default_doc = "the optimizer's default"),
    DOUBLE("training", "momentum", momentum, "0", 0, 1e6, 0,
           .doc = "SGD's and RMSprop's momentum (PyTorch's momentum_buffer, kept in the "
                  "checkpoint); only with `optimizer_cls = SGD` or `RMSprop`.",
           .darts = "`optimizer_kwargs={\"momentum\": ...}`", .example = "0.9"),
    BOOL("training", "nesterov", nesterov, "false",
         .doc = "SGD's Nesterov momentum: the update takes `grad + momentum·buffer`. Needs "
                "`optimizer_cls = SGD` and `momentum` > 0 (PyTorch refuses it without).",
         .darts = "`optimizer_kwargs={\"nesterov\": True}`", .example = "true"),
    DOUBLE("training", "eps", eps, "-1", -1, 1e6, 0,
           .doc = "The term added to the denominator of `Adam`, `AdamW`, `RMSprop` and "
                  "`Adagrad` (not `SGD`, which has none); `-1` takes the optimizer's PyTorch "
                  "default (Adagrad 1e-10, the others 1e-8).",
           .darts = "`optimizer_kwargs={\"eps\": ...}`", .example = "1e-6",
           .default_doc = "the optimizer's default"),
    DOUBLE("training", "alpha", alpha, "0.99", 0, 1e6, 0,
           .doc = "RMSprop's smoothing constant of its running average of squared gradients; "
                  "only with `optimizer_cls = RMSprop`.",
           .darts = "`optimizer_kwargs={\"alpha\": ...}`", .example = "0.9"),
    BOOL("training", "centered", centered, "false",
         .doc = "RMSprop's centered variant: it also keeps the running average of the "
                "gradients (PyTorch's grad_avg, kept in the checkpoint) and divides by the "
                "estimated variance; only with `optimizer_cls = RMSprop`.",
         .darts = "`optimizer_kwargs={\"centered\": True}`", .example = "true"),
    DOUBLE("training", "lr_decay", lr_decay, "0", 0, 1e6, 0,
           .doc = "Adagrad's learning-rate decay: step k uses lr / (1 + (k - 1)·lr_decay); only "
                  "with `optimizer_cls = Adagrad`.",
           .darts = "`optimizer_kwargs={\"lr_decay\": ...}`", .example = "0.01"),
    DOUBLE("training", "initial_accumulator_value", initial_accumulator_value, "0", 0, 1e6, 0,
           .doc = "Adagrad's starting value of its sums of squared gradients; only with "
                  "`optimizer_cls = Adagrad`.",
           .darts = "`optimizer_kwargs={\"initial_accumulator_value\": ...}`", .example = "0.1"),
    ENUM("training", "loss_fn", loss_fn, "MSELoss", loss_choices,
         .doc = "The training and validation loss: `MSELoss` (mean squared error), `L1Loss` "
                "(mean absolute error), `HuberLoss` (with `delta`) or `SmoothL1Loss` (with "
                "`beta`), each the mean over every window, step and component. Darts takes the "
                "loss as an object (`torch.nn.HuberLoss(delta=0.5)`); tsrnn names its class "
                "here and its argument under PyTorch's name beside it, as `optimizer_cls` and "
                "its arguments. `L1Loss`, `HuberLoss` and `SmoothL1Loss` train on the CPU "
                "backend only (the `cuda` and `pjrt` backends refuse them, exit 2).",
         .darts = "`RNNModel(loss_fn=torch.nn.L1Loss())`", .example = "L1Loss"),
    DOUBLE("training", "delta", delta, "1", 0, 1e6, MIN_OPEN,
           .doc = "HuberLoss's delta: the error beyond which the loss grows linearly; only "
                  "with `loss_fn = HuberLoss`.",
           .darts = "`loss_fn=torch.nn.HuberLoss(delta=...)`", .example = "0.5"),
    DOUBLE("training", "beta", beta, "1", 0, 1e6, 0,
           .doc = "SmoothL1Loss's beta: the error below which the loss is quadratic (`0` is "
                  "`L1Loss`, as in PyTorch); only with `loss_fn = SmoothL1Loss`.",
           .darts = "`loss_fn=torch.nn.SmoothL1Loss(beta=...)`", .example = "0.5"),
    ENUM("training", "lr_scheduler_cls", lr_scheduler_cls, "none", lr_scheduler_choices,
         .doc = "A learning-rate scheduler with PyTorch's arithmetic, stepped after every epoch "
                "(after its validation) as Darts configures it, or after every optimizer step "
                "with `[lr_scheduler_kwargs] interval = step` (Lightning's interval, which Darts "
                "takes from `lr_scheduler_kwargs`; `OneCycleLR` is usually meant per step). "
                "`ReduceLROnPlateau` watches `val_loss`, so it needs a validation part (as "
                "Lightning's strict monitor). Its arguments are the `[lr_scheduler_kwargs]` "
                "section; a key of that section the chosen scheduler does not take is refused, "
                "as PyTorch's constructor refuses it. The `lr` TensorBoard scalar is the rate "
                "each epoch's first step trained with.",
         .darts = "`RNNModel(lr_scheduler_cls=torch.optim.lr_scheduler.StepLR)`",
         .example = "ReduceLROnPlateau", .default_doc = "none: a constant `lr`"),

    DOUBLE("lr_scheduler_kwargs", "gamma", lr_gamma, "0.1", 0, 1e6, MIN_OPEN,
           .doc = "`ExponentialLR` and `StepLR`: the factor of each decay (PyTorch's `StepLR` "
                  "default; `ExponentialLR` has none in PyTorch, set it).",
           .darts = "`lr_scheduler_kwargs={\"gamma\": ...}`", .example = "0.95"),
    INT("lr_scheduler_kwargs", "step_size", lr_step_size, "0", 0, 2147483647,
        .doc = "`StepLR`: decay every this many epochs (required with `StepLR`, as in PyTorch).",
        .darts = "`lr_scheduler_kwargs={\"step_size\": ...}`", .example = "10",
        .default_doc = "not set"),
    DOUBLE("lr_scheduler_kwargs", "factor", lr_factor, "0.1", 0, 1, MIN_OPEN | MAX_OPEN,
           .doc = "`ReduceLROnPlateau`: the new rate is the old times this.",
           .darts = "`lr_scheduler_kwargs={\"factor\": ...}`", .example = "0.5"),
    INT("lr_scheduler_kwargs", "patience", lr_patience, "10", 0, 2147483647,
        .doc = "`ReduceLROnPlateau`: epochs without improvement before the rate drops.",
        .darts = "`lr_scheduler_kwargs={\"patience\": ...}`", .example = "5"),
    DOUBLE("lr_scheduler_kwargs", "threshold", lr_threshold, "0.0001", 0, 1e6, 0,
           .doc = "`ReduceLROnPlateau`: how much better counts as an improvement (see "
                  "`threshold_mode`).",
           .darts = "`lr_scheduler_kwargs={\"threshold\": ...}`", .example = "0.001"),
    ENUM("lr_scheduler_kwargs", "threshold_mode", lr_threshold_mode, "rel", threshold_mode_choices,
         .doc = "`ReduceLROnPlateau`: `rel` (better than best·(1 ∓ threshold)) or `abs` (better "
                "than best ∓ threshold).",
         .darts = "`lr_scheduler_kwargs={\"threshold_mode\": ...}`", .example = "abs"),
    INT("lr_scheduler_kwargs", "cooldown", lr_cooldown, "0", 0, 2147483647,
        .doc = "`ReduceLROnPlateau`: epochs to wait after a drop before counting again.",
        .darts = "`lr_scheduler_kwargs={\"cooldown\": ...}`", .example = "2"),
    DOUBLE("lr_scheduler_kwargs", "min_lr", lr_min_lr, "0", 0, 1e6, 0,
           .doc = "`ReduceLROnPlateau`: the rate never drops below this.",
           .darts = "`lr_scheduler_kwargs={\"min_lr\": ...}`", .example = "1e-5"),
    ENUM("lr_scheduler_kwargs", "mode", lr_mode, "min", mode_choices,
         .doc = "`ReduceLROnPlateau`: `min` (a loss should fall) or `max`.",
         .darts = "`lr_scheduler_kwargs={\"mode\": ...}`", .example = "min"),
    INT("lr_scheduler_kwargs", "T_max", lr_T_max, "0", 0, 2147483647,
        .doc = "`CosineAnnealingLR`: the half period, in scheduler steps (required, as in "
               "PyTorch); past it the rate climbs back (PyTorch's recursive form).",
        .darts = "`lr_scheduler_kwargs={\"T_max\": ...}`", .example = "50",
        .default_doc = "not set"),
    DOUBLE("lr_scheduler_kwargs", "eta_min", lr_eta_min, "0", 0, 1e6, 0,
           .doc = "`CosineAnnealingLR` and `CosineAnnealingWarmRestarts`: the lowest rate.",
           .darts = "`lr_scheduler_kwargs={\"eta_min\": ...}`", .example = "1e-5"),
    INT("lr_scheduler_kwargs", "T_0", lr_T_0, "0", 0, 2147483647,
        .doc = "`CosineAnnealingWarmRestarts`: scheduler steps until the first restart "
               "(required, as in PyTorch).",
        .darts = "`lr_scheduler_kwargs={\"T_0\": ...}`", .example = "10", .default_doc = "not set"),
    INT("lr_scheduler_kwargs", "T_mult", lr_T_mult, "1", 1, 2147483647,
        .doc = "`CosineAnnealingWarmRestarts`: each period is this many times the last.",
        .darts = "`lr_scheduler_kwargs={\"T_mult\": ...}`", .example = "2"),
    DOUBLE("lr_scheduler_kwargs", "max_lr", lr_max_lr, "0", 0, 1e6, 0,
           .doc = "`OneCycleLR`: the peak rate (required). The cycle starts at max_lr / "
                  "`div_factor` whatever `[training] lr` says, as PyTorch's does.",
           .darts = "`lr_scheduler_kwargs={\"max_lr\": ...}`", .example = "0.01",
           .default_doc = "not set"),
    INT("lr_scheduler_kwargs", "total_steps", lr_total_steps, "0", 0, 2147483647,
        .doc = "`OneCycleLR`: the scheduler steps of the cycle (or `epochs` × "
               "`steps_per_epoch`); a run that would step it more often is refused before it "
               "trains, where PyTorch raises at that step.",
        .darts = "`lr_scheduler_kwargs={\"total_steps\": ...}`", .example = "700",
        .default_doc = "not set: `epochs` × `steps_per_epoch`"),
    INT("lr_scheduler_kwargs", "epochs", lr_epochs, "0", 0, 2147483647,
        .doc = "`OneCycleLR`, without `total_steps`: with `steps_per_epoch`, the cycle's "
               "length.",
        .darts = "`lr_scheduler_kwargs={\"epochs\": ...}`", .example = "100",
        .default_doc = "not set"),
    INT("lr_scheduler_kwargs", "steps_per_epoch", lr_steps_per_epoch, "0", 0, 2147483647,
        .doc = "`OneCycleLR`, without `total_steps`: with `epochs`, the cycle's length.",
        .darts = "`lr_scheduler_kwargs={\"steps_per_epoch\": ...}`", .example = "7",
        .default_doc = "not set"),
    DOUBLE("lr_scheduler_kwargs", "pct_start", lr_pct_start, "0.3", 0, 1, 0,
           .doc = "`OneCycleLR`: the part of the cycle spent raising the rate.",
           .darts = "`lr_scheduler_kwargs={\"pct_start\": ...}`", .example = "0.25"),
    ENUM("lr_scheduler_kwargs", "anneal_strategy", lr_anneal_strategy, "cos", anneal_choices,
         .doc = "`OneCycleLR`: `cos` or `linear` annealing.",
         .darts = "`lr_scheduler_kwargs={\"anneal_strategy\": ...}`", .example = "linear"),
    BOOL("lr_scheduler_kwargs", "cycle_momentum", lr_cycle_momentum, "true",
         .doc = "`OneCycleLR`: cycle the momentum inversely to the rate, between "
                "`max_momentum` and `base_momentum`: Adam's and AdamW's beta1, SGD's momentum "
                "(PyTorch's default, true).",
         .darts = "`lr_scheduler_kwargs={\"cycle_momentum\": ...}`", .example = "false"),
    DOUBLE("lr_scheduler_kwargs", "base_momentum", lr_base_momentum, "0.85", 0, 1, 0,
           .doc = "`OneCycleLR`: the momentum at the rate's peak.",
           .darts = "`lr_scheduler_kwargs={\"base_momentum\": ...}`", .example = "0.8"),
    DOUBLE("lr_scheduler_kwargs", "max_momentum", lr_max_momentum, "0.95", 0, 1, 0,
           .doc = "`OneCycleLR`: the momentum at the cycle's ends.",
           .darts = "`lr_scheduler_kwargs={\"max_momentum\": ...}`", .example = "0.9"),
    DOUBLE("lr_scheduler_kwargs", "div_factor", lr_div_factor, "25", 0, 1e12, MIN_OPEN,
           .doc = "`OneCycleLR`: the first rate is max_lr / div_factor.",
           .darts = "`lr_scheduler_kwargs={\"div_factor\": ...}`", .example = "10"),
    DOUBLE("lr_scheduler_kwargs", "final_div_factor", lr_final_div_factor, "10000", 0, 1e12,
           MIN_OPEN, .doc = "`OneCycleLR`: the last rate is the first / final_div_factor.",
           .darts = "`lr_scheduler_kwargs={\"final_div_factor\": ...}`", .example = "100"),
    BOOL("lr_scheduler_kwargs", "three_phase", lr_three_phase, "false",
         .doc = "`OneCycleLR`: a third phase that anneals to the last rate after coming back "
                "down symmetrically.",
         .darts = "`lr_scheduler_kwargs={\"three_phase\": ...}`", .example = "true"),
    DOUBLE("lr_scheduler_kwargs", "start_factor", lr_start_factor, "0.33333333333333331", 0, 1,
           MIN_OPEN, .doc = "`LinearLR`: the first rate is lr × start_factor.",
           .darts = "`lr_scheduler_kwargs={\"start_factor\": ...}`", .example = "0.25",
           .default_doc = "1/3, as PyTorch's"),
    DOUBLE("lr_scheduler_kwargs", "end_factor", lr_end_factor, "1", 0, 1, 0,
           .doc = "`LinearLR`: the rate after `total_iters` steps is lr × end_factor.",
           .darts = "`lr_scheduler_kwargs={\"end_factor\": ...}`", .example = "0.5"),
    INT("lr_scheduler_kwargs", "total_iters", lr_total_iters, "5", 0, 2147483647,
        .doc = "`LinearLR`: the scheduler steps over which the factor moves.",
        .darts = "`lr_scheduler_kwargs={\"total_iters\": ...}`", .example = "10"),
    ENUM("lr_scheduler_kwargs", "interval", lr_interval, "epoch", interval_choices,
         .doc = "When the scheduler steps: `epoch` (after each epoch, Darts' default) or `step` "
                "(after each optimizer step, as Lightning steps it; not with "
                "`ReduceLROnPlateau`, which watches the epoch's `val_loss`).",
         .darts = "`lr_scheduler_kwargs={\"interval\": \"step\"}` (Lightning's config)",
         .example = "step"),
    INT("lr_scheduler_kwargs", "frequency", lr_frequency, "1", 1, 2147483647,
        .doc = "Step the scheduler every this many intervals: epochs, or with `interval = "
               "step` optimizer steps counted within each epoch, as Lightning counts "
               "(`batch_idx + 1`).",
        .darts = "`lr_scheduler_kwargs={\"frequency\": ...}` (Lightning's config)", .example = "2"),

    ENUM("early_stopping", "monitor", es_monitor, "none", es_monitor_choices,
         .doc = "Stop training when this metric stops improving (Lightning's `EarlyStopping`, "
                "checked after each epoch's validation): `val_loss` needs a validation part; "
                "`train_loss` is the epoch's last step's loss (Darts logs it per step, so "
                "that is what Lightning's callback metrics hold); `val_MeanAbsoluteError` and "
                "`val_MeanSquaredError` are the validation part's torchmetrics of those names, "
                "which Darts logs when they are in its `torch_metrics` (mean absolute and "
                "squared error over every window, step and component, in the scaled values, "
                "whatever `loss_fn` is; logged to TensorBoard and the progress bar too). "
                "Other metrics are not implemented. The reason is printed; the checkpoints "
                "keep the callback's state.",
         .darts = "`pl_trainer_kwargs={\"callbacks\": [EarlyStopping(monitor=\"val_loss\", "
                  "...)]}`; for a metric also `torch_metrics=MeanAbsoluteError()`",
         .example = "val_loss", .default_doc = "none: no early stopping"),
    INT("early_stopping", "patience", es_patience, "3", 0, 2147483647,
        .doc = "Checks without improvement after which training stops.",
        .darts = "`EarlyStopping(patience=...)`", .example = "5"),
    DOUBLE("early_stopping", "min_delta", es_min_delta, "0", 0, 1e6, 0,
           .doc = "The least change that counts as an improvement (compared in float32, as "
                  "Lightning compares tensors).",
           .darts = "`EarlyStopping(min_delta=...)`", .example = "0.0001"),
    ENUM("early_stopping", "mode", es_mode, "min", mode_choices,
         .doc = "`min`: the metric should fall; `max`: rise.", .darts = "`EarlyStopping(mode=...)`",
         .example = "min"),

    ENUM("trainer", "accelerator", accelerator, "auto", accelerator_choices,
         .doc = "The kind of device to train on. `gpu` trains on the first visible GPU "
                "through the CUDA backend (a build with the CUDA toolkit), and is refused (exit "
                "code 2) where none can be used; `auto` takes the GPU where there is one, "
                "else the CPU. `xla`: the training step as one StableHLO program on the device "
                "of a PJRT plugin (`pjrt_plugin`); `tpu`: the same on a TPU through libtpu (exit "
                "code 2 when there is none).",
         .darts = "`pl_trainer_kwargs={\"accelerator\": ...}`", .example = "cpu"),
    TEXT("trainer", "pjrt_plugin", KEY_PATH, pjrt_plugin, "",
         "the path of a PJRT plugin (a shared library exporting GetPjrtApi)",
         .doc = "The PJRT plugin `accelerator = xla` or `tpu` loads: `libtpu.so`, XLA's CPU "
                "plugin (`xla_cpu_pjrt.so`, which `scripts/install-deps.sh` caches), or another.",
         .darts = "JAX's and PyTorch/XLA's `TPU_LIBRARY_PATH`", .example = "/opt/libtpu.so",
         .default_doc = "`$TSRNN_PJRT_PLUGIN`, else `$TPU_LIBRARY_PATH`, else `libtpu.so` from "
                        "the loader's search path"),
    TEXT("trainer", "devices", KEY_DEVICES, devices, "auto",
         "auto, -1 (every device), a count N >= 1, or a list of device indices like 0,2",
         .doc = "Which devices, as Lightning: `tsrnn-launch` starts one worker per device (CPU "
                "workers: `auto` = 1, `-1` = one per core it may use, `N` = N, `0,2` = one "
                "pinned to each listed core).",
         .darts = "`pl_trainer_kwargs={\"devices\": ...}`", .example = "2"),
    ENUM("trainer", "comm", comm, "auto", comm_choices,
         .doc = "How `tsrnn-launch`'s workers talk: `auto` = `local` for one worker, `gloo` for "
                "CPU workers, `nccl` for GPU workers (one per GPU). `gloo` with GPU workers "
                "stages the gradients through host memory and lets 2 or more workers share one "
                "GPU, which NCCL refuses; `nccl` with one GPU worker runs the NCCL path alone "
                "(a check on a one-GPU machine).",
         .darts = "`pl_trainer_kwargs={\"strategy\": DDPStrategy(process_group_backend=...)}`",
         .example = "gloo"),
    INT("trainer", "num_threads", num_threads, "1", 1, 1024,
        .doc = "Compute threads of one worker: each large layer's recurrence and each large "
               "BLAS product is split into this many parts (OpenBLAS itself runs "
               "single-threaded in each). `tsrnn-launch` sets 1 for CPU workers.",
        .darts = "none (PyTorch sizes its own thread pool)", .example = "4"),
    DOUBLE("trainer", "timeout_s", timeout_s, "60", 0, 86400, MIN_OPEN,
           .doc = "The longest wait for a peer, in seconds: the rendezvous and each collective.",
           .darts = "`torch.distributed.init_process_group(timeout=...)`", .example = "120"),
    INT("trainer", "max_restarts", max_restarts, "0", 0, 1000,
        .doc = "`tsrnn-launch`: how many times to relaunch the whole job after a failure (from "
               "the `last` checkpoint when there is one); none after an interrupt or exit code "
               "2.",
        .darts = "torchrun's `--max_restarts`", .example = "3"),

    INT("trainer", "log_every_n_steps", log_every_n_steps, "50", 1, 2147483647,
        .doc = "TensorBoard gets `train_loss` (and `epoch`) every this many optimizer steps, "
               "as Lightning logs; `1` logs every step. `metrics.csv` always holds every step.",
        .darts = "`pl_trainer_kwargs={\"log_every_n_steps\": ...}`", .example = "1"),
    DOUBLE("trainer", "gradient_clip_val", gradient_clip_val, "0", 0, 1e30, 0,
           .doc = "Clip the gradients' global 2-norm to this before each optimizer step "
                  "(`torch.nn.utils.clip_grad_norm_`, Lightning's default algorithm `norm`); in "
                  "data-parallel runs after the allreduce, as DDP. `0` does not clip.",
           .darts = "`pl_trainer_kwargs={\"gradient_clip_val\": ...}`", .example = "1.0",
           .default_doc = "no clipping"),

    TEXT("output", "work_dir", KEY_PATH, work_dir, NULL,
         "a folder path (relative to the INI file's folder)",
         .doc = "The folder that holds run folders: a run writes `{work_dir}/{model_name}/`.",
         .darts = "`RNNModel(work_dir=...)`", .example = "runs",
         .default_doc = "`darts_logs` in the current folder"),
    TEXT("output", "model_name", KEY_FOLDER, model_name, NULL,
         "a non-empty folder name without '/'",
         .doc = "The name of the run folder inside `work_dir`.",
         .darts = "`RNNModel(model_name=...)`", .example = "Air_RNN",
         .default_doc = "Darts' `%Y-%m-%d_%H_%M_%S_torch_model_run_<pid>`"),
    BOOL("output", "force_reset", force_reset, "false",
         .doc = "Delete the run folder before training (never following symbolic links).",
         .darts = "`RNNModel(force_reset=...)`", .example = "true"),
    BOOL("output", "save_checkpoints", save_checkpoints, "false",
         .doc = "Write `checkpoints/last-epoch=N.safetensors` every epoch and "
                "`best-epoch=N-val_loss=X.safetensors` when the monitored loss improves.",
         .darts = "`RNNModel(save_checkpoints=...)`", .example = "true"),
    BOOL("output", "log_tensorboard", log_tensorboard, "false",
         .doc = "Write the losses as TensorBoard events: `logs/events.out.tfevents.*`.",
         .darts = "`RNNModel(log_tensorboard=...)`", .example = "true"),

    INT("forecast", "n", forecast_n, "0", 0, 100000000,
        .doc = "Steps to forecast after the training part when training ends, into "
               "`forecast.csv` in the run folder.",
        .darts = "`model.predict(n)`", .example = "24", .default_doc = "no forecast"),
    BOOL("forecast", "plot", forecast_plot, "true",
         .doc = "Also draw the forecast into `forecast.png`. Where cairo cannot draw (a build "
                "without it, a machine without libcairo.so.2) the default skips the picture with "
                "a warning; `plot = true` written in the config is refused before training.",
         .darts = "`pred.plot()`", .example = "false"),
    INT("forecast", "num_samples", num_samples, "1", 1, 1000000,
        .doc = "With a likelihood: sample paths per forecast, each feeding its own draws back, "
               "drawn as Darts draws them from `random_state`. With more than one, "
               "`forecast.csv` holds the `quantiles` of each step, the picture the median and "
               "the `low_quantile`–`high_quantile` band, and the scores add `mql`, `mic` and "
               "`miw`. Without a likelihood it must be 1, as in Darts.",
        .darts = "`model.predict(n, num_samples=...)`", .example = "500"),
    BOOL("forecast", "predict_likelihood_parameters", predict_likelihood_parameters, "false",
         .doc = "With a likelihood: `forecast.csv` holds the distribution's parameters of the "
                "first step (`<component>_mu`, `<component>_sigma`, ...; scaled, as the model "
                "sees the series) instead of samples; needs `n = 1` and `num_samples = 1`, as "
                "Darts (RNNModel's output_chunk_length is 1).",
         .darts = "`model.predict(1, predict_likelihood_parameters=True)`", .example = "true"),
    TEXT("forecast", "quantiles", KEY_QUANTILES, forecast_quantiles, "0.05, 0.5, 0.95",
         "a comma-separated list of quantiles in [0, 1]",
         .doc = "With `num_samples` > 1: the quantile columns of `forecast.csv`, "
                "`<component>_q0.050` ..., and the q of the `mql` scores.",
         .darts = "`pred.quantile([...])` (and `mql(..., q=[...])`)", .example = "0.1, 0.5, 0.9"),
    BOOL("forecast", "samples", forecast_samples, "false",
         .doc = "With `num_samples` > 1: also write every path into `forecast_samples.csv` "
                "(`<component>_s0`, `<component>_s1`, ... as Darts' `to_dataframe()` names a "
                "stochastic series' columns).",
         .darts = "`pred.to_dataframe()`", .example = "true"),
    DOUBLE("forecast", "low_quantile", low_quantile, "0.05", 0, 1, 0,
           .doc = "The lower edge of the band the picture shades, and of the interval `mic` "
                  "and `miw` score.",
           .darts = "`pred.plot(low_quantile=...)`, `mic(..., q_interval=(lo, hi))`",
           .example = "0.1"),
    DOUBLE("forecast", "high_quantile", high_quantile, "0.95", 0, 1, 0,
           .doc = "The upper edge of that band and interval (above `low_quantile`).",
           .darts = "`pred.plot(high_quantile=...)`", .example = "0.9"),
};

const size_t config_key_count = sizeof(config_keys) / sizeof(config_keys[0]);
_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) <= TSRNN_CONFIG_MAX_KEYS,
               "grow TSRNN_CONFIG_MAX_KEYS");

const struct config_key *config_find_key(const char *section, const char *name)
{
    for (size_t i = 0; i < config_key_count; i++)
        if (strcasecmp(config_keys[i].section, section) == 0 &&
            strcasecmp(config_keys[i].name, name) == 0)
            return &config_keys[i];
    return NULL;
}

const char *config_known_section(const char *section)
{
    for (size_t i = 0; i < config_key_count; i++)
        if (strcasecmp(config_keys[i].section, section) == 0)
            return config_keys[i].section;
    return NULL;
}

/* Levenshtein distance, case-insensitive, for "did you mean" hints on short names. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[64];
    if (la >= 64 || lb >= 64)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Whether `candidate` is nearer to `name` than *best_distance; if so, records its distance. */
static bool nearer(const char *name, const char *candidate, size_t *best_distance)
{
    size_t d = edit_distance(name, candidate);
    if (d >= *best_distance)
        return false;
    *best_distance = d;
    return true;
}

/* The closest known key to `name` (any section), or NULL when nothing is close. */
static const struct config_key *closest_key(const char *name)
{
    const struct config_key *best = NULL;
    size_t best_distance = (size_t)-1;
    for (size_t i = 0; i < config_key_count; i++)
        if (nearer(name, config_keys[i].name, &best_distance))
            best = &config_keys[i];
    size_t len = strlen(name);
    size_t limit = len <= 4 ? 1 : len / 3 + 1;
    return best_distance <= limit ? best : NULL;
}

enum tsrnn_status config_unknown_section(const char *section, const char *origin)
{
    char list[256] = "";
    const char *hint = NULL;
    size_t best_distance = (size_t)-1, used = 0;
    for (size_t i = 0; i < config_key_count; i++) {
        if (i > 0 && strcmp(config_keys[i].section, config_keys[i - 1].section) == 0)
            continue;
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s[%s]", i ? " " : "",
                                 config_keys[i].section);
        if (nearer(section, config_keys[i].section, &best_distance))
            hint = config_keys[i].section;
    }
    if (best_distance > 3)
        hint = NULL;
    return tsrnn_error(TSRNN_ERR_USAGE, "%s: unknown section [%s]%s%s%s; accepted: %s", origin,
                       section, hint ? " (did you mean [" : "", hint ? hint : "", hint ? "]?)" : "",
                       list);
}

enum tsrnn_status config_unknown_key(const char *section, const char *key, const char *origin)
{
    const struct config_key *hint = closest_key(key);
    if (hint != NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: unknown key '%s' in [%s]; did you mean [%s] %s?",
                           origin, key, section, hint->section, hint->name);
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: unknown key '%s' in [%s]; see --print-config for every key", origin,
                       key, section);
}

const char *config_choice(const struct tsrnn_config *cfg, const char *section, const char *key)
{
    const struct config_key *k = config_find_key(section, key);
    return k->choices[*(const int *)config_cfield(cfg, k)];
}

void config_describe_accepted(const struct config_key *k, char *out, size_t capacity)
{
    switch (k->type) {
    case KEY_INT:
    case KEY_U64:
        snprintf(out, capacity, "an integer from %.0f to %.0f", k->min, k->max);
        break;
    case KEY_DOUBLE:
        snprintf(out, capacity, "a number in %c%g, %g%c", k->open & MIN_OPEN ? '(' : '[', k->min,
                 k->max, k->open & MAX_OPEN ? ')' : ']');
        break;
    case KEY_OPTIONAL_DOUBLE:
        if (k->min <= -1e30)
            snprintf(out, capacity, "a number, or nothing for none");
        else
            snprintf(out, capacity, "a number %s %g, or nothing for none",
                     k->open & MIN_OPEN ? ">" : ">=", k->min);
        break;
    case KEY_BOOL:
        snprintf(out, capacity, "true or false (also yes/no, on/off, 1/0)");
        break;
    case KEY_ENUM: {
        size_t used = 0;
        out[0] = '\0';
        for (int c = 0; k->choices[c] != NULL && used < capacity; c++)
            used +=
                (size_t)snprintf(out + used, capacity - used, "%s%s",
                                 c == 0 ? "" : (k->choices[c + 1] ? ", " : " or "), k->choices[c]);
        break;
    }
    case KEY_STRING:
    case KEY_FOLDER:
    case KEY_PATH:
    case KEY_PATHS:
    case KEY_RESUME:
    case KEY_COLUMNS:
    case KEY_DEVICES:
    case KEY_FREQ:
    case KEY_QUANTILES:
        snprintf(out, capacity, "%s", k->accepted);
        break;
    }
}
