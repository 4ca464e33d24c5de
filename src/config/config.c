/* The configuration schema and its parser (include/tsrnn/config.h).
 *
 * One table, `schema`, is the single source of truth for every key: its section, name, type,
 * where it lives in struct tsrnn_config, its default (as text, parsed like any other value),
 * its range and the sentence that tells a user what is accepted, and its documentation.
 * Defaults, the INI parser, --set, --print-config, the error messages and the reference page
 * docs/configuration.md (tsrnn_config_write_reference(), at the end) all read that table.
 *
 * The INI syntax is libinih's (Debian's libinih-dev), with Debian's runtime knobs set to
 * Python configparser's behaviour: no multi-line values, no inline comments (`#` and `;`
 * start a comment only at the beginning of a line), no line-length limit, stop at the first
 * error. libinih reads through line_reader() below, which counts lines and sees section
 * headers, so every message can name `file:line` and an empty unknown section is an error too.
 */
#include "tsrnn/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum key_type {
    KEY_INT,             /* int, range [min, max] */
    KEY_U64,             /* uint64_t, range [min, max] */
    KEY_DOUBLE,          /* double, range [min, max] or open ends */
    KEY_BOOL,            /* bool: true/false, yes/no, on/off, 1/0 */
    KEY_ENUM,            /* int-sized enum: index into choices[] */
    KEY_STRING,          /* char[capacity] */
    KEY_FOLDER,          /* char[capacity]: one non-empty folder name, no '/' */
    KEY_PATH,            /* char[PATH_MAX], resolved to an absolute path */
    KEY_PATHS,           /* char[PATH_MAX]: a comma list of paths or patterns, each resolved */
    KEY_COLUMNS,         /* value_cols: comma list into value_cols[][] */
    KEY_DEVICES,         /* "auto", "-1", "N" or "i,j,...", kept as text */
    KEY_RESUME,          /* char[PATH_MAX]: "", "last", "best", or a path resolved like KEY_PATH */
    KEY_FREQ,            /* char[capacity]: "", a pandas offset alias or an integer step */
    KEY_OPTIONAL_DOUBLE, /* double, range as KEY_DOUBLE; "" = not set (NaN) */
    KEY_QUANTILES,       /* char[capacity]: a comma list of quantiles ([likelihood]: Darts'
                            QuantileRegression rules; "" = its default) */
};

struct key {
    const char *section;
    const char *name;
    enum key_type type;
    size_t offset;              /* of the field in struct tsrnn_config */
    size_t capacity;            /* bytes of a text field */
    const char *default_text;   /* NULL: computed by tsrnn_config_init() */
    double min, max;            /* numbers */
    int open;                   /* numbers: MIN_OPEN | MAX_OPEN, else closed */
    const char *const *choices; /* KEY_ENUM: names in enum order, NULL-terminated */
    const char *accepted;       /* text keys: what a user may write */
    /* docs/configuration.md, written from this table by tsrnn_config_write_reference(); the
     * texts are Markdown. */
    const char *doc;         /* what the key does: a sentence or two */
    const char *darts;       /* the Darts / Lightning / PyTorch name it mirrors */
    const char *example;     /* a value the parser accepts (the page's writer checks) */
    const char *default_doc; /* what the default means where its text does not say it;
                                required when default_text is NULL */
};

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
#define MIN_OPEN 1
#define MAX_OPEN 2

/* Adding a config key: add its line here (with .doc, .darts and .example), then regenerate
 * docs/configuration.md (ninja -C build config-doc); the config_doc test fails until the page
 * and this table agree. A rule across keys goes into tsrnn_config_validate() and into the
 * .doc of the keys it involves. */
static const struct key schema[] = {
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

#define KEY_COUNT               (sizeof(schema) / sizeof(schema[0]))
#define TSRNN_QUANTILE_LIST_MAX 99
_Static_assert(KEY_COUNT <= TSRNN_CONFIG_MAX_KEYS, "grow TSRNN_CONFIG_MAX_KEYS");

static void *field(struct tsrnn_config *cfg, const struct key *k)
{
    return (char *)cfg + k->offset;
}

static const void *cfield(const struct tsrnn_config *cfg, const struct key *k)
{
    return (const char *)cfg + k->offset;
}

static const struct key *find_key(const char *section, const char *name)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strcasecmp(schema[i].section, section) == 0 && strcasecmp(schema[i].name, name) == 0)
            return &schema[i];
    return NULL;
}

/* The schema's spelling of `section`, or NULL when no key lives there. */
static const char *known_section(const char *section)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strcasecmp(schema[i].section, section) == 0)
            return schema[i].section;
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
static const struct key *closest_key(const char *name)
{
    const struct key *best = NULL;
    size_t best_distance = (size_t)-1;
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (nearer(name, schema[i].name, &best_distance))
            best = &schema[i];
    size_t len = strlen(name);
    size_t limit = len <= 4 ? 1 : len / 3 + 1;
    return best_distance <= limit ? best : NULL;
}

static enum tsrnn_status unknown_section(const char *section, const char *origin)
{
    char list[256] = "";
    const char *hint = NULL;
    size_t best_distance = (size_t)-1, used = 0;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        if (i > 0 && strcmp(schema[i].section, schema[i - 1].section) == 0)
            continue;
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s[%s]", i ? " " : "",
                                 schema[i].section);
        if (nearer(section, schema[i].section, &best_distance))
            hint = schema[i].section;
    }
    if (best_distance > 3)
        hint = NULL;
    return tsrnn_error(TSRNN_ERR_USAGE, "%s: unknown section [%s]%s%s%s; accepted: %s", origin,
                       section, hint ? " (did you mean [" : "", hint ? hint : "", hint ? "]?)" : "",
                       list);
}

/* What a user may write for `k`, derived from its type and range. */
static void describe_accepted(const struct key *k, char *out, size_t capacity)
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

static enum tsrnn_status bad_value(const struct key *k, const char *value, const char *origin,
                                   const char *why)
{
    char accepted[256], shown[512];
    describe_accepted(k, accepted, sizeof(accepted));
    return tsrnn_error(TSRNN_ERR_USAGE, "%s: [%s] %s = '%s': %s; accepted: %s", origin, k->section,
                       k->name, tsrnn_printable(value, shown, sizeof(shown)), why, accepted);
}

static bool parse_double(const char *text, double *out)
{
    char *end;
    /* Decimal only: strtod would also take hexadecimal ("0x1p3") and "infinity". */
    if (*text == '\0' || strpbrk(text, "xXpP") != NULL)
        return false;
    errno = 0;
    double v = strtod(text, &end);
    if (errno == ERANGE && fabs(v) > 1.0)
        return false;
    if (*end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "1" };
    static const char *const no[] = { "false", "no", "off", "0" };
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool in_range(const struct key *k, double v)
{
    if (k->open & MIN_OPEN ? v <= k->min : v < k->min)
        return false;
    if (k->open & MAX_OPEN ? v >= k->max : v > k->max)
        return false;
    return true;
}

/* Joins `value` to `base_dir` unless it is absolute. */
static enum tsrnn_status resolve_path(char *out, size_t capacity, const char *value,
                                      const char *base_dir, const struct key *k, const char *origin)
{
    int n;
    if (value[0] == '\0' || value[0] == '/' || base_dir == NULL)
        n = snprintf(out, capacity, "%s", value);
    else
        n = snprintf(out, capacity, "%s/%s", base_dir, value);
    if (n < 0 || (size_t)n >= capacity)
        return bad_value(k, value, origin, "the path is too long");
    return TSRNN_OK;
}

/* Steps through a comma-separated list: the next item, blanks trimmed, as (*item, *len).
 * Returns false after the last item. An empty list still has one (empty) item. */
static bool next_item(const char **cursor, const char **item, size_t *len)
{
    const char *p = *cursor;
    if (p == NULL)
        return false;
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    while (n > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    *item = p;
    *len = n;
    *cursor = comma ? comma + 1 : NULL;
    return true;
}

/* A comma list of paths: each resolved as resolve_path() does, joined with commas. */
static enum tsrnn_status set_paths(char *out, size_t capacity, const char *value,
                                   const char *base_dir, const struct key *k, const char *origin)
{
    size_t used = 0, len;
    const char *cursor = value, *item;
    out[0] = '\0';
    while (*value != '\0' && next_item(&cursor, &item, &len)) {
        char one[PATH_MAX];
        if (len == 0)
            return bad_value(k, value, origin, "an empty path in the list");
        if (len >= sizeof(one))
            return bad_value(k, value, origin, "a path is too long");
        memcpy(one, item, len);
        one[len] = '\0';
        if (used > 0)
            out[used++] = ',';
        TSRNN_TRY(resolve_path(out + used, capacity - used, one, base_dir, k, origin));
        used += strlen(out + used);
    }
    return TSRNN_OK;
}

static enum tsrnn_status set_columns(struct tsrnn_config *cfg, const struct key *k,
                                     const char *value, const char *origin)
{
    size_t count = 0, len;
    const char *cursor = value, *item;
    while (*value != '\0' && next_item(&cursor, &item, &len)) {
        if (len == 0)
            return bad_value(k, value, origin, "empty column name in the list");
        if (len >= TSRNN_NAME_MAX)
            return bad_value(k, value, origin, "a column name is too long");
        if (count == TSRNN_MAX_COMPONENTS)
            return bad_value(k, value, origin, "more than 64 columns");
        memcpy(cfg->value_cols[count], item, len);
        cfg->value_cols[count][len] = '\0';
        for (size_t i = 0; i < count; i++)
            if (strcmp(cfg->value_cols[i], cfg->value_cols[count]) == 0)
                return bad_value(k, value, origin, "a column is listed twice");
        count++;
    }
    cfg->value_col_count = count;
    return TSRNN_OK;
}

static bool valid_devices(const char *value)
{
    int64_t n;
    if (strcasecmp(value, "auto") == 0 || strcmp(value, "-1") == 0)
        return true;
    if (strchr(value, ',') == NULL)
        return tsrnn_parse_int64(value, &n) && n >= 1 && n <= 4096;
    /* A list of distinct device indices. */
    int64_t seen[64];
    size_t count = 0, len;
    const char *cursor = value, *item;
    while (next_item(&cursor, &item, &len)) {
        char text[32];
        if (len == 0 || len >= sizeof(text) || count == 64)
            return false;
        memcpy(text, item, len);
        text[len] = '\0';
        if (!tsrnn_parse_int64(text, &n) || n < 0 || n > 4095)
            return false;
        for (size_t i = 0; i < count; i++)
            if (seen[i] == n)
                return false;
        seen[count++] = n;
    }
    return true;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum tsrnn_status tsrnn_config_parse_quantiles(double *quantiles, size_t *count, const char *text)
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
        quantiles[n++] = q;
        if (*after == '\0')
            break;
        p = after + 1;
    }
    qsort(quantiles, n, sizeof(double), compare_doubles);
    for (size_t i = 1; i < n; i++)
        if (quantiles[i] == quantiles[i - 1])
            return tsrnn_error(TSRNN_ERR_USAGE, "quantile %g is given twice", quantiles[i]);
    bool median = false;
    for (size_t i = 0; i < n; i++) {
        median |= quantiles[i] == 0.5;
        /* Darts: (0.5 - left) + (0.5 - right) within 1e-6 for the i-th from each end. */
        double asym = (0.5 - quantiles[i]) + (0.5 - quantiles[n - 1 - i]);
        if (!(asym > -1e-6 && asym < 1e-6))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "quantiles %g and %g are not symmetric around 0.5 (Darts' "
                               "QuantileRegression samples between them); accepted: each q "
                               "below 0.5 with 1 - q above it",
                               quantiles[i], quantiles[n - 1 - i]);
    }
    if (!median)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "the quantiles lack the median 0.5, which Darts' QuantileRegression "
                           "requires");
    *count = n;
    return TSRNN_OK;
}

/* A list of quantiles: [likelihood] quantiles by Darts' QuantileRegression rules (nothing:
 * its default), any other each in [0, 1]. Kept as written. */
static enum tsrnn_status set_quantiles(struct tsrnn_config *cfg, const struct key *k,
                                       const char *value, const char *origin)
{
    if (strlen(value) >= k->capacity)
        return bad_value(k, value, origin, "too long");
    if (strcmp(k->section, "likelihood") == 0) {
        double quantiles[TSRNN_LIKELIHOOD_MAX_QUANTILES];
        size_t count;
        if (value[0] != '\0' &&
            tsrnn_config_parse_quantiles(quantiles, &count, value) != TSRNN_OK) {
            char why[512];
            snprintf(why, sizeof(why), "%s", tsrnn_last_error());
            return bad_value(k, value, origin, why);
        }
    } else {
        size_t count = 0, len;
        const char *cursor = value, *item;
        while (next_item(&cursor, &item, &len)) {
            char text[64];
            double q;
            if (len == 0 || len >= sizeof(text))
                return bad_value(k, value, origin, "an empty or overlong item in the list");
            memcpy(text, item, len);
            text[len] = '\0';
            if (!parse_double(text, &q) || q < 0.0 || q > 1.0)
                return bad_value(k, value, origin, "a quantile that is not a number in [0, 1]");
            if (++count > TSRNN_QUANTILE_LIST_MAX)
                return bad_value(k, value, origin, "more than 99 quantiles");
        }
    }
    strcpy(field(cfg, k), value);
    return TSRNN_OK;
}

static size_t key_index(const struct key *k)
{
    return (size_t)(k - schema);
}

static enum tsrnn_status set_key(struct tsrnn_config *cfg, const struct key *k, const char *value,
                                 const char *origin, const char *base_dir)
{
    int64_t i;
    double d;
    bool b;

    /* A control byte (a newline from --set, an escape sequence) would make config.ini
     * unreadable or the terminal misbehave wherever the value is printed. */
    for (const char *p = value; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return bad_value(k, value, origin, "holds a control character");
    /* Names and paths go into JSON (checkpoints) and must read back: UTF-8 only, refused
     * here before anything is written (a Latin-1 name trained an epoch, then failed). */
    if (!tsrnn_utf8_valid(value))
        return bad_value(k, value, origin, "not UTF-8 text");
    if (!tsrnn_text_printable(value)) /* a C1 control: U+009B is CSI to some terminals */
        return bad_value(k, value, origin, "holds a control character");
    switch (k->type) {
    case KEY_INT:
    case KEY_U64:
        if (!tsrnn_parse_int64(value, &i))
            return bad_value(k, value, origin, "not an integer");
        if (!in_range(k, (double)i))
            return bad_value(k, value, origin, "out of range");
        if (k->type == KEY_INT)
            *(int *)field(cfg, k) = (int)i;
        else
            *(uint64_t *)field(cfg, k) = (uint64_t)i;
        break;
    case KEY_DOUBLE:
        if (!parse_double(value, &d))
            return bad_value(k, value, origin, "not a finite number");
        if (!in_range(k, d))
            return bad_value(k, value, origin, "out of range");
        *(double *)field(cfg, k) = d;
        break;
    case KEY_OPTIONAL_DOUBLE:
        if (value[0] == '\0') {
            *(double *)field(cfg, k) = NAN;
            break;
        }
        if (!parse_double(value, &d))
            return bad_value(k, value, origin, "not a finite number");
        if (!in_range(k, d))
            return bad_value(k, value, origin, "out of range");
        *(double *)field(cfg, k) = d;
        break;
    case KEY_QUANTILES:
        TSRNN_TRY(set_quantiles(cfg, k, value, origin));
        break;
    case KEY_BOOL:
        if (!parse_bool(value, &b))
            return bad_value(k, value, origin, "not a boolean");
        *(bool *)field(cfg, k) = b;
        break;
    case KEY_ENUM: {
        int chosen = -1;
        for (int c = 0; k->choices[c] != NULL; c++)
            if (strcasecmp(value, k->choices[c]) == 0)
                chosen = c;
        if (chosen < 0)
            return bad_value(k, value, origin, "unknown value");
        *(int *)field(cfg, k) = chosen;
        break;
    }
    case KEY_STRING:
    case KEY_FOLDER:
    case KEY_DEVICES:
    case KEY_FREQ:
        if (strlen(value) >= k->capacity)
            return bad_value(k, value, origin, "too long");
        if (k->type == KEY_FOLDER && (value[0] == '\0' || strchr(value, '/') != NULL ||
                                      strcmp(value, ".") == 0 || strcmp(value, "..") == 0))
            return bad_value(k, value, origin, "not a plain folder name");
        if (k->type == KEY_DEVICES && !valid_devices(value))
            return bad_value(k, value, origin, "not a device selection");
        strcpy(field(cfg, k), value);
        break;
    case KEY_PATH:
        TSRNN_TRY(resolve_path(field(cfg, k), k->capacity, value, base_dir, k, origin));
        break;
    case KEY_PATHS:
        TSRNN_TRY(set_paths(field(cfg, k), k->capacity, value, base_dir, k, origin));
        break;
    case KEY_RESUME:
        if (strcasecmp(value, "last") == 0 || strcasecmp(value, "best") == 0)
            snprintf(field(cfg, k), k->capacity, "%s", strcasecmp(value, "last") ? "best" : "last");
        else
            TSRNN_TRY(resolve_path(field(cfg, k), k->capacity, value, base_dir, k, origin));
        break;
    case KEY_COLUMNS:
        TSRNN_TRY(set_columns(cfg, k, value, origin));
        break;
    }
    snprintf(cfg->origins[key_index(k)], TSRNN_ORIGIN_MAX, "%s", origin);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_config_set(struct tsrnn_config *cfg, const char *section, const char *key,
                                   const char *value, const char *origin, const char *base_dir)
{
    const struct key *k = find_key(section, key);
    if (k != NULL)
        return set_key(cfg, k, value, origin, base_dir);
    if (!known_section(section))
        return unknown_section(section, origin);
    const struct key *hint = closest_key(key);
    if (hint != NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: unknown key '%s' in [%s]; did you mean [%s] %s?",
                           origin, key, section, hint->section, hint->name);
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: unknown key '%s' in [%s]; see --print-config for every key", origin,
                       key, section);
}

enum tsrnn_status tsrnn_config_init(struct tsrnn_config *cfg)
{
    char cwd[PATH_MAX];
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < KEY_COUNT; i++) {
        if (schema[i].default_text != NULL)
            TSRNN_TRY(set_key(cfg, &schema[i], schema[i].default_text, "default", NULL));
        else
            snprintf(cfg->origins[i], TSRNN_ORIGIN_MAX, "default");
    }

    /* Darts: work_dir = os.path.join(os.getcwd(), "darts_logs"). */
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read the current directory");
    int n = snprintf(cfg->work_dir, sizeof(cfg->work_dir), "%s/darts_logs", cwd);
    if (n < 0 || (size_t)n >= sizeof(cfg->work_dir))
        return tsrnn_error(TSRNN_ERR_USAGE, "the current directory's path is too long");

    /* Darts: "%Y-%m-%d_%H_%M_%S" + "_torch_model_run_" + pid. */
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32];
    localtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d_%H_%M_%S", &tm);
    snprintf(cfg->model_name, sizeof(cfg->model_name), "%s_torch_model_run_%ld", stamp,
             (long)getpid());
    return TSRNN_OK;
}

/* --- INI files ------------------------------------------------------------------------- */

struct parse_context {
    struct tsrnn_config *cfg;
    const char *ini_path; /* as the user gave it, for messages */
    const char *base_dir;
    FILE *file;
    int line;                 /* number of the line libinih is working on */
    bool at_line_start;       /* the next read starts a new line */
    char line_text[256];      /* start of the current line, for syntax errors */
    int seen_line[KEY_COUNT]; /* line where each key was set in this file, 0 = not yet */
    enum tsrnn_status status; /* set by the handler or reader that failed */
};

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len > 0 &&
           (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' || s[len - 1] == '\n'))
        s[--len] = '\0';
    return s;
}

/* libinih's fgets-style reader: counts lines, keeps the line's text and checks section
 * headers itself (libinih never reports a section that holds no key). */
static char *line_reader(char *buf, int capacity, void *stream)
{
    struct parse_context *ctx = stream;
    if (ctx->status != TSRNN_OK)
        return NULL;
    char *got = fgets(buf, capacity, ctx->file);
    if (got == NULL)
        return NULL;
    bool new_line = ctx->at_line_start;
    size_t len = strlen(buf);
    ctx->at_line_start = len > 0 && buf[len - 1] == '\n';
    if (!new_line)
        return got;

    ctx->line++;
    snprintf(ctx->line_text, sizeof(ctx->line_text), "%s", buf);
    char *text = trim(ctx->line_text);
    memmove(ctx->line_text, text, strlen(text) + 1);

    char *p = ctx->line_text;
    if (ctx->line == 1 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;
    char *close = strchr(p, ']');
    if (p[0] == '[' && close != NULL) {
        char name[128];
        size_t n = (size_t)(close - p - 1);
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, p + 1, n);
        name[n] = '\0';
        char *section = trim(name);
        if (!known_section(section)) {
            char origin[TSRNN_ORIGIN_MAX];
            snprintf(origin, sizeof(origin), "%s:%d", ctx->ini_path, ctx->line);
            ctx->status = unknown_section(section, origin);
            return NULL;
        }
    }
    return got;
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *value)
{
    struct parse_context *ctx = user;
    char origin[TSRNN_ORIGIN_MAX];
    snprintf(origin, sizeof(origin), "%s:%d", ctx->ini_path, ctx->line);

    if (section[0] == '\0') {
        ctx->status = tsrnn_error(TSRNN_ERR_USAGE,
                                  "%s: key '%s' appears before any [section]; put it under the "
                                  "section it belongs to, e.g. [model]",
                                  origin, name);
        return 0;
    }
    const struct key *k = find_key(section, name);
    if (k != NULL && ctx->seen_line[key_index(k)] != 0) {
        ctx->status = tsrnn_error(TSRNN_ERR_USAGE,
                                  "%s: duplicate key [%s] %s (first set at line %d); keep one",
                                  origin, k->section, k->name, ctx->seen_line[key_index(k)]);
        return 0;
    }
    ctx->status = tsrnn_config_set(ctx->cfg, section, name, value, origin, ctx->base_dir);
    if (ctx->status != TSRNN_OK)
        return 0;
    ctx->seen_line[key_index(k)] = ctx->line;
    return 1;
}

/* The absolute folder that holds `path`. */
static enum tsrnn_status folder_of(const char *path, char *out, size_t capacity)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    char resolved[PATH_MAX];
    if (realpath(dir, resolved) == NULL)
        return tsrnn_error_errno(TSRNN_ERR_USAGE, errno, "%s: cannot resolve its folder", path);
    if (strlen(resolved) >= capacity)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: path too long", path);
    strcpy(out, resolved);
    return TSRNN_OK;
}

/* Parses `file` (named `label` in messages) over `cfg`; relative paths join `base_dir`. */
static enum tsrnn_status parse_stream(struct tsrnn_config *cfg, FILE *file, const char *label,
                                      const char *base_dir)
{
    struct parse_context ctx = {
        .cfg = cfg,
        .ini_path = label,
        .base_dir = base_dir,
        .file = file,
        .at_line_start = true,
    };

    /* Debian's libinih exposes its compile-time options as globals: configparser semantics. */
    ini_allow_multiline = false;
    ini_allow_inline_comments = false;
    ini_stop_on_first_error = true;
    ini_allow_no_value = false;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_max_line = 1 << 20;

    int rc = ini_parse_stream(line_reader, &ctx, ini_handler_fn, &ctx);
    if (ctx.status != TSRNN_OK)
        return ctx.status;
    if (ferror(file))
        return tsrnn_error(TSRNN_ERR_USAGE, "cannot read config file %s", label);
    if (rc == -2)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory parsing %s", label);
    if (rc != 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s:%d: syntax error in '%s'; expected '[section]', 'key = value' or "
                           "a comment starting with # or ;",
                           label, rc, ctx.line_text);
    return TSRNN_OK;
}

/* A config file is text a person wrote: far below this. */
#define MAX_CONFIG_NBYTES (16u << 20)

/* What libinih would read differently from what the file says: a NUL byte ends its line
 * early ("hidden_dim = 2<NUL>0" would read as 2), and old-Mac CR-only line ends make the
 * whole file one line. */
static enum tsrnn_status check_config_text(const char *text, size_t nbytes, const char *path)
{
    int line = 1, column = 1;
    for (size_t i = 0; i < nbytes; i++, column++) {
        if (text[i] == '\0')
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s:%d:%d: a NUL byte; accepted: text (save the file as UTF-8 "
                               "or ASCII)",
                               path, line, column);
        if (text[i] == '\r' && (i + 1 == nbytes || text[i + 1] != '\n'))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s:%d:%d: a carriage return that ends no line (old-Mac line "
                               "ends); accepted: LF or CRLF line ends",
                               path, line, column);
        if (text[i] == '\n')
            line++, column = 0;
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_config_parse_file(struct tsrnn_config *cfg, const char *ini_path)
{
    char base_dir[PATH_MAX];
    char *text;
    size_t nbytes;

    TSRNN_TRY(tsrnn_read_file(ini_path, MAX_CONFIG_NBYTES, "config file", TSRNN_ERR_USAGE, &text,
                              &nbytes));
    enum tsrnn_status status = check_config_text(text, nbytes, ini_path);
    if (status == TSRNN_OK)
        status = folder_of(ini_path, base_dir, sizeof(base_dir));
    FILE *file = NULL;
    if (status == TSRNN_OK) {
        file = fmemopen(nbytes ? text : (char *)"\n", nbytes ? nbytes : 1, "r");
        if (file == NULL)
            status =
                tsrnn_error_errno(TSRNN_ERR_NOMEM, errno, "cannot read config file %s", ini_path);
    }
    if (status == TSRNN_OK)
        status = parse_stream(cfg, file, ini_path, base_dir);
    if (file != NULL)
        fclose(file);
    free(text);
    return status;
}

enum tsrnn_status tsrnn_config_parse_text(struct tsrnn_config *cfg, const char *text,
                                          const char *label)
{
    size_t len = strlen(text);
    FILE *file = fmemopen(len ? (void *)text : (void *)"\n", len ? len : 1, "r");
    if (file == NULL)
        return tsrnn_error_errno(TSRNN_ERR_NOMEM, errno, "cannot read the config of %s", label);
    enum tsrnn_status status = parse_stream(cfg, file, label, NULL);
    fclose(file);
    return status;
}

enum tsrnn_status tsrnn_config_apply_override(struct tsrnn_config *cfg, const char *arg)
{
    char origin[TSRNN_ORIGIN_MAX];
    char text[4096];
    char cwd[PATH_MAX];

    snprintf(origin, sizeof(origin), "--set %s", arg);
    if (strlen(arg) >= sizeof(text))
        return tsrnn_error(TSRNN_ERR_USAGE, "--set argument too long");
    strcpy(text, arg);
    char *eq = strchr(text, '=');
    char *dot = eq ? memchr(text, '.', (size_t)(eq - text)) : NULL;
    if (eq == NULL || dot == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: expected section.key=value, e.g. --set model.hidden_dim=32",
                           origin);
    *eq = '\0';
    *dot = '\0';
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read the current directory");
    return tsrnn_config_set(cfg, trim(text), trim(dot + 1), trim(eq + 1), origin, cwd);
}

const char *tsrnn_config_origin(const struct tsrnn_config *cfg, const char *section,
                                const char *key)
{
    const struct key *k = find_key(section, key);
    return k ? cfg->origins[key_index(k)] : NULL;
}

static void format_value(const struct tsrnn_config *cfg, const struct key *k, char *out,
                         size_t capacity);

enum tsrnn_status tsrnn_config_refuse(const struct tsrnn_config *cfg, const char *section,
                                      const char *key, const char *why)
{
    const struct key *k = find_key(section, key);
    char value[TSRNN_MAX_COMPONENTS * TSRNN_NAME_MAX + PATH_MAX];
    format_value(cfg, k, value, sizeof(value));
    return bad_value(k, value, cfg->origins[key_index(k)], why);
}

enum tsrnn_status tsrnn_config_check_file(const struct tsrnn_config *cfg, const char *section,
                                          const char *key, const char *path, const char *what)
{
    int fd;
    char byte;
    enum tsrnn_status status = tsrnn_open_regular(path, O_RDONLY, what, TSRNN_ERR_USAGE, &fd);
    if (status == TSRNN_OK && read(fd, &byte, 1) < 0)
        status = tsrnn_error_errno(TSRNN_ERR_USAGE, errno, "cannot read %s %s", what,
                                   tsrnn_display_path(path));
    if (fd >= 0)
        close(fd);
    if (status != TSRNN_OK) { /* the message, led by the key that named the file */
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
static bool holds_other_than_default(const struct tsrnn_config *cfg, const struct key *k)
{
    if (strcmp(cfg->origins[key_index(k)], "default") == 0 || k->default_text == NULL)
        return strcmp(cfg->origins[key_index(k)], "default") != 0;
    struct tsrnn_config *scratch = calloc(1, sizeof(*scratch));
    char mine[256], standard[256];
    if (scratch == NULL || set_key(scratch, k, k->default_text, "default", NULL) != TSRNN_OK) {
        free(scratch);
        return true; /* cannot tell: as given */
    }
    format_value(cfg, k, mine, sizeof(mine));
    format_value(scratch, k, standard, sizeof(standard));
    free(scratch);
    return strcmp(mine, standard) != 0;
}

/* The chosen scheduler's keys: each one given belongs to it (PyTorch's constructor raises a
 * TypeError for any other; a key at its default value, as every key of a run's config.ini,
 * is not one given), the ones PyTorch requires are given, and OneCycleLR's phases are not
 * empty (PyTorch divides by their length: a ZeroDivisionError at the step that enters one).
 * Without a scheduler, Darts ignores the section. */
static enum tsrnn_status check_scheduler_keys(const struct tsrnn_config *cfg)
{
    const char *const *keys = scheduler_keys(cfg->lr_scheduler_cls);
    const char *name = lr_scheduler_choices[cfg->lr_scheduler_cls];
    if (keys == NULL)
        return TSRNN_OK;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key *k = &schema[i];
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

/* Each rule here is also stated in the .doc of the keys it involves (docs/configuration.md). */
/* What PyTorch's and Lightning's constructors would refuse in the optimizer, scheduler and
 * early-stopping keys, or what tsrnn does not implement of them. */
/* The optimizer's and the loss's arguments: one that is not the chosen class's is refused
 * unless it has its default value (PyTorch raises a TypeError for an unknown keyword; a
 * default value is what a resolved config file, config.ini, holds for every key), and the
 * values PyTorch's constructors refuse. */
static enum tsrnn_status check_optimizer_and_loss_keys(const struct tsrnn_config *cfg)
{
    enum tsrnn_optimizer_kind opt = cfg->optimizer_cls;
    const char *name = optimizer_choices[opt];
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
        format_value(cfg, find_key("training", args[i].key), value, sizeof(value));
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
                           loss_choices[cfg->loss_fn]);
    if (cfg->beta != 1.0 && cfg->loss_fn != TSRNN_LOSS_SMOOTH_L1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] beta = %g, but loss_fn = %s has no beta; accepted: 1, "
                           "or loss_fn = SmoothL1Loss",
                           tsrnn_config_origin(cfg, "training", "beta"), cfg->beta,
                           loss_choices[cfg->loss_fn]);
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
                           es_monitor_choices[cfg->es_monitor]);
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
                           es_monitor_choices[cfg->es_monitor], likelihood_choices[cfg->likelihood],
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
    const char *name = likelihood_choices[cfg->likelihood];
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

size_t tsrnn_config_forecast_quantiles(const struct tsrnn_config *cfg, double *out, size_t capacity)
{
    size_t count = 0, len;
    const char *cursor = cfg->forecast_quantiles, *item;
    while (count < capacity && next_item(&cursor, &item, &len)) {
        char text[64];
        if (len == 0 || len >= sizeof(text))
            continue;
        memcpy(text, item, len);
        text[len] = '\0';
        out[count++] = strtod(text, NULL);
    }
    return count;
}

/* Every path goes into config.ini and the checkpoints (JSON: UTF-8) and into messages: the
 * folder a relative value was joined to must be printable UTF-8 as the value is (set_key()
 * checked the value alone). Checked before anything is written: a run in a Latin-1 folder
 * trained, wrote five files, then failed at its first checkpoint. */
static enum tsrnn_status check_resolved_paths(const struct tsrnn_config *cfg)
{
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key *k = &schema[i];
        if (k->type != KEY_PATH && k->type != KEY_PATHS && k->type != KEY_RESUME)
            continue;
        const char *path = cfield(cfg, k), *origin = cfg->origins[i];
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

enum tsrnn_status tsrnn_config_load(struct tsrnn_config *cfg, const char *ini_path,
                                    const char *const *overrides, size_t override_count)
{
    TSRNN_TRY(tsrnn_config_init(cfg));
    TSRNN_TRY(tsrnn_config_parse_file(cfg, ini_path));
    for (size_t i = 0; i < override_count; i++)
        TSRNN_TRY(tsrnn_config_apply_override(cfg, overrides[i]));
    return tsrnn_config_validate(cfg);
}

/* The shortest "%.Ng" text that reads back as exactly `v`. */
static void format_double(char *out, size_t capacity, double v)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, capacity, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* The text of one key's current value, as the parser reads it back. */
static void format_value(const struct tsrnn_config *cfg, const struct key *k, char *out,
                         size_t capacity)
{
    switch (k->type) {
    case KEY_INT:
        snprintf(out, capacity, "%d", *(const int *)cfield(cfg, k));
        break;
    case KEY_U64:
        snprintf(out, capacity, "%llu", (unsigned long long)*(const uint64_t *)cfield(cfg, k));
        break;
    case KEY_DOUBLE:
        format_double(out, capacity, *(const double *)cfield(cfg, k));
        break;
    case KEY_OPTIONAL_DOUBLE:
        if (isnan(*(const double *)cfield(cfg, k)))
            out[0] = '\0';
        else
            format_double(out, capacity, *(const double *)cfield(cfg, k));
        break;
    case KEY_BOOL:
        snprintf(out, capacity, "%s", *(const bool *)cfield(cfg, k) ? "true" : "false");
        break;
    case KEY_ENUM:
        snprintf(out, capacity, "%s", k->choices[*(const int *)cfield(cfg, k)]);
        break;
    case KEY_STRING:
    case KEY_FOLDER:
    case KEY_PATH:
    case KEY_PATHS:
    case KEY_RESUME:
    case KEY_DEVICES:
    case KEY_FREQ:
    case KEY_QUANTILES:
        snprintf(out, capacity, "%s", (const char *)cfield(cfg, k));
        break;
    case KEY_COLUMNS: {
        size_t used = 0;
        out[0] = '\0';
        for (size_t i = 0; i < cfg->value_col_count && used < capacity; i++)
            used += (size_t)snprintf(out + used, capacity - used, "%s%s", i ? "," : "",
                                     cfg->value_cols[i]);
        break;
    }
    }
}

enum tsrnn_status tsrnn_config_write(const struct tsrnn_config *cfg, FILE *out)
{
    const char *section = "";
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key *k = &schema[i];
        if (strcmp(section, k->section) != 0) {
            fprintf(out, "%s[%s]\n", i ? "\n" : "", k->section);
            section = k->section;
        }
        /* "key =" alone for an empty value, so no line ends in a space. */
        char value[TSRNN_MAX_COMPONENTS * TSRNN_NAME_MAX + PATH_MAX];
        format_value(cfg, k, value, sizeof(value));
        fprintf(out, "%s =%s%s\n", k->name, value[0] ? " " : "", value);
    }
    if (fflush(out) != 0 || ferror(out))
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write the configuration");
    return TSRNN_OK;
}

char *tsrnn_config_text(const struct tsrnn_config *cfg)
{
    char *text = NULL;
    size_t nbytes = 0;
    FILE *f = open_memstream(&text, &nbytes);
    if (f == NULL)
        return NULL;
    enum tsrnn_status status = tsrnn_config_write(cfg, f);
    fclose(f);
    if (status != TSRNN_OK) {
        free(text);
        return NULL;
    }
    return text;
}

/* --- The reference page: docs/configuration.md ------------------------------------------- */

/* What each section is for, in the schema's order (Markdown). */
static const struct {
    const char *name, *doc;
} section_docs[] = {
    { "data", "The series: which CSV file and columns, its frequency and what fills its gaps, "
              "how it is split into a training and a validation part, and how it is scaled "
              "([data.md](data.md) tells each step)." },
    { "covariates", "`RNNModel`'s future covariates: columns of the data file, and covariates "
                    "computed from the time index as Darts' `add_encoders` makes them. The input "
                    "of step t is the target at t beside the covariates at t + 1 "
                    "([data.md](data.md#covariates))." },
    { "model", "The network, as Darts' `RNNModel` arguments describe it." },
    { "training", "The optimisation: batches, epochs, learning rate, seed, resuming." },
    { "lr_scheduler_kwargs", "The arguments of `[training] lr_scheduler_cls`, under PyTorch's "
                             "names (Darts' `lr_scheduler_kwargs`)." },
    { "early_stopping", "Lightning's `EarlyStopping` callback, as Darts users add it to "
                        "`pl_trainer_kwargs`." },
    { "trainer", "Where the training runs and how its workers wait for each other: Lightning's "
                 "`Trainer` (`pl_trainer_kwargs`) and the launcher." },
    { "output", "The run folder `{work_dir}/{model_name}/` and what goes into it." },
    { "likelihood", "The arguments of `[model] likelihood`, under Darts' names: the priors "
                    "(each only for the likelihoods that have it), the quantiles of quantile "
                    "regression, β-NLL." },
    { "forecast", "A forecast when training ends, as `model.predict(n)` after `fit()`; with a "
                  "likelihood, sample paths and their quantiles." },
};

/* The page's example of a file; the page's writer parses it, so it cannot go stale. */
static const char reference_example[] = "[data]\n"
                                        "path = air_passengers.csv\n"
                                        "time_col = Month\n"
                                        "value_cols = #Passengers\n"
                                        "split_after = 1959-01\n"
                                        "\n"
                                        "[model]\n"
                                        "model = LSTM\n"
                                        "input_chunk_length = 14\n"
                                        "training_length = 20\n";

/* The page's prose is wrapped to the width of the other docs. */
#define REFERENCE_COLUMNS 95

/* Whether a line of the page may start with `word`: not where Markdown could read it as a
 * list, heading or quote marker, so only a letter, '`', '(' or '['. */
static bool may_start_line(const char *word)
{
    return isalpha((unsigned char)word[0]) || strchr("`([", word[0]) != NULL;
}

/* Writes a paragraph or list item: `first` then the text, wrapped at REFERENCE_COLUMNS with
 * `rest` in front of each further line. A line breaks only between words, never inside a
 * `code span` and never before a word may_start_line() refuses. */
static void write_wrapped(FILE *out, const char *first, const char *rest, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void write_wrapped(FILE *out, const char *first, const char *rest, const char *fmt, ...)
{
    char text[4096];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof(text), fmt, args);
    va_end(args);

    size_t column = strlen(first);
    bool line_empty = true;
    fputs(first, out);
    /* One unit at a time: a word and the words that may not start a line after it. */
    const char *p = text;
    while (*p != '\0') {
        const char *unit = p, *end = p;
        bool in_code = false;
        for (;;) {
            const char *word_end = strchr(end, ' ');
            if (word_end == NULL)
                word_end = end + strlen(end);
            for (const char *c = end; c < word_end; c++)
                in_code ^= *c == '`';
            end = word_end;
            if (*end == '\0' || (!in_code && may_start_line(end + 1)))
                break;
            end++;
        }
        size_t len = (size_t)(end - unit);
        if (!line_empty && column + 1 + len > REFERENCE_COLUMNS) {
            fprintf(out, "\n%s", rest);
            column = strlen(rest);
            line_empty = true;
        }
        fprintf(out, "%s%.*s", line_empty ? "" : " ", (int)len, unit);
        column += len + !line_empty;
        line_empty = false;
        p = *end == ' ' ? end + 1 : end;
    }
    fputs("\n", out);
}

static const char *section_doc(const char *section)
{
    for (size_t i = 0; i < sizeof(section_docs) / sizeof(section_docs[0]); i++)
        if (strcmp(section_docs[i].name, section) == 0)
            return section_docs[i].doc;
    return NULL;
}

static bool starts_section(size_t i)
{
    return i == 0 || strcmp(schema[i].section, schema[i - 1].section) != 0;
}

static const char *type_name(const struct key *k)
{
    switch (k->type) {
    case KEY_INT:
    case KEY_U64:
        return "integer";
    case KEY_DOUBLE:
        return "number";
    case KEY_BOOL:
        return "boolean";
    case KEY_ENUM:
        return "choice";
    case KEY_STRING:
        return "text";
    case KEY_FOLDER:
        return "folder name";
    case KEY_PATH:
        return "path";
    case KEY_PATHS:
        return "paths";
    case KEY_COLUMNS:
        return "column list";
    case KEY_DEVICES:
        return "devices";
    case KEY_RESUME:
        return "checkpoint";
    case KEY_FREQ:
        return "frequency";
    case KEY_OPTIONAL_DOUBLE:
        return "number or nothing";
    case KEY_QUANTILES:
        return "quantile list";
    }
    return "";
}

/* Every key documented, with an example the parser takes and nothing that would break a
 * Markdown table: a schema line without them is a mistake of whoever added it, so the page
 * is not written (and the config_doc test says which key). */
static enum tsrnn_status check_key_doc(const struct key *k, struct tsrnn_config *scratch)
{
    const char *texts[] = { k->doc, k->darts, k->default_text, k->default_doc, k->accepted };
    if (k->doc == NULL || k->darts == NULL || k->example == NULL ||
        (k->default_text == NULL && k->default_doc == NULL) || section_doc(k->section) == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "src/config/config.c: [%s] %s lacks its .doc, .darts, .example, "
                           ".default_doc (when the default is computed) or its section's line "
                           "in section_docs[]",
                           k->section, k->name);
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i] != NULL && strchr(texts[i], '|') != NULL)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "src/config/config.c: [%s] %s: '%s' holds a '|', which would "
                               "split its Markdown table cell",
                               k->section, k->name, texts[i]);
    return set_key(scratch, k, k->example, "src/config/config.c (the schema's .example)", NULL);
}

/* The default as the page shows it: the value, then what it means where the value does not
 * say it. */
static void format_default(const struct key *k, char *out, size_t capacity)
{
    const char *open = k->default_doc ? " (" : "", *close = k->default_doc ? ")" : "";
    const char *meaning = k->default_doc ? k->default_doc : "";
    if (k->default_text == NULL)
        snprintf(out, capacity, "%s", k->default_doc);
    else if (k->default_text[0] == '\0')
        snprintf(out, capacity, "not set%s%s%s", open, meaning, close);
    else
        snprintf(out, capacity, "`%s`%s%s%s", k->default_text, open, meaning, close);
}

/* An error message as a user sees it, made by the parser itself. */
static void write_error_example(FILE *out, struct tsrnn_config *scratch, const char *section,
                                const char *key, const char *value, const char *origin)
{
    tsrnn_config_set(scratch, section, key, value, origin, NULL);
    fprintf(out, "tsrnn-worker: error: %s\n", tsrnn_last_error());
    tsrnn_error_clear();
}

static enum tsrnn_status write_intro(FILE *out, struct tsrnn_config *scratch)
{
    TSRNN_TRY(tsrnn_config_parse_text(scratch, reference_example, "the page's example"));

    char sections[256] = "";
    size_t used = 0, section_count = 0, last_start = 0;
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (starts_section(i)) {
            section_count++;
            last_start = i;
        }
    for (size_t i = 0, n = 0; i < KEY_COUNT && used < sizeof(sections); i++)
        if (starts_section(i))
            used += (size_t)snprintf(sections + used, sizeof(sections) - used, "%s`[%s]`",
                                     n++ == 0 ? "" : (i == last_start ? " and " : ", "),
                                     schema[i].section);

    fputs("# Configuration\n"
          "\n"
          "<!-- Generated from the config schema in src/config/config.c by tools/config-doc;\n"
          "     edit the schema, then run `ninja -C build config-doc`. -->\n"
          "\n",
          out);
    write_wrapped(out, "", "",
                  "A run is described by one INI file with the %zu sections %s. Keys are named as "
                  "the arguments of Darts' `RNNModel` and `TimeSeries.from_csv`; every key but "
                  "`[data] path` has a default, so a file names only what differs:",
                  section_count, sections);
    fprintf(out, "\n```ini\n%s```\n\n", reference_example);
    write_wrapped(out, "", "",
                  "`examples/air_passengers.ini` is a complete file: Darts' AirPassengers "
                  "`RNNModel`.");

    fputs("\n## Where values come from\n\nEach key takes the last value given:\n\n", out);
    write_wrapped(out, "1. ", "   ", "its default (below);");
    write_wrapped(out, "2. ", "   ", "the INI file;");
    write_wrapped(out, "3. ", "   ",
                  "`--set section.key=value`, in command-line order (`tsrnn-worker` and "
                  "`tsrnn-launch`, which passes them to every worker); `--resume WHICH` (of both) "
                  "is `--set training.resume=WHICH`;");
    write_wrapped(out, "4. ", "   ",
                  "`tsrnn-launch --accelerator`, `--devices` and `--max-restarts`.");
    fputs("\n", out);
    write_wrapped(out, "", "",
                  "`tsrnn-worker --print-config FILE.ini` prints the resolved configuration "
                  "(every key, defaults included, paths made absolute) and exits; its output is "
                  "itself a config file that gives the same run from any folder.");

    char booleans[256];
    const struct key boolean = { .type = KEY_BOOL };
    describe_accepted(&boolean, booleans, sizeof(booleans));
    fputs("\n## Syntax\n\nlibinih, set up to read files as Python's `configparser` does:\n\n", out);
    write_wrapped(out, "- ", "  ",
                  "`key = value` (or `key: value`), one per line; blanks around keys and values "
                  "do not count.");
    write_wrapped(out, "- ", "  ",
                  "`#` and `;` start a comment only at the beginning of a line, so "
                  "`value_cols = #Passengers` names a column; there are no inline comments and "
                  "no multi-line values.");
    write_wrapped(out, "- ", "  ",
                  "Keys, section names and choice values are case-insensitive (`model = lstm`).");
    write_wrapped(out, "- ", "  ", "Booleans: %s, in any case.", booleans);
    write_wrapped(out, "- ", "  ", "An empty value (`split_after =`) leaves a text key not set.");
    write_wrapped(out, "- ", "  ",
                  "Relative paths in the file resolve against the file's folder; relative paths "
                  "in `--set` resolve against the current folder.");
    write_wrapped(out, "- ", "  ", "Each key belongs under its section, at most once per file.");
    fputs("\n", out);
    write_wrapped(out, "", "",
                  "The first unknown section or key, duplicate key or bad value stops the program "
                  "with exit code 2 and a message that names where the value came from "
                  "(`file:line` or the `--set` argument), the key, the value and what is "
                  "accepted:");
    fputs("\n```\n", out);
    write_error_example(out, scratch, "model", "hidden_dim", "0", "run.ini:7");
    write_error_example(out, scratch, "model", "hiden_dim", "32", "run.ini:8");
    write_error_example(out, scratch, "data", "scaler", "std", "--set data.scaler=std");
    fputs("```\n", out);
    return TSRNN_OK;
}

static void write_overview(FILE *out)
{
    fputs("\n## All keys\n\n| key | type | default | Darts / Lightning |\n|---|---|---|---|\n",
          out);
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const struct key *k = &schema[i];
        char default_text[256];
        format_default(k, default_text, sizeof(default_text));
        /* #section-key is GitHub's anchor of the heading "`[section] key`". */
        fprintf(out, "| [`[%s] %s`](#%s-%s) | %s | %s | %s |\n", k->section, k->name, k->section,
                k->name, type_name(k), default_text, k->darts);
    }
}

static void write_key(FILE *out, const struct key *k)
{
    char accepted[256], default_text[256];
    describe_accepted(k, accepted, sizeof(accepted));
    format_default(k, default_text, sizeof(default_text));
    fprintf(out, "\n### `[%s] %s`\n\n", k->section, k->name);
    write_wrapped(out, "", "", "%s", k->doc);
    fputs("\n", out);
    write_wrapped(out, "- ", "  ", "type: %s", type_name(k));
    write_wrapped(out, "- ", "  ", "accepted: %s", accepted);
    write_wrapped(out, "- ", "  ", "default: %s", default_text);
    write_wrapped(out, "- ", "  ", "Darts / Lightning: %s", k->darts);
    write_wrapped(out, "- ", "  ", "example: `%s = %s` (`--set %s.%s=%s`)", k->name, k->example,
                  k->section, k->name, k->example);
}

enum tsrnn_status tsrnn_config_write_reference(FILE *out)
{
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_config *scratch = calloc(1, sizeof(*scratch));
    if (scratch == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    for (size_t i = 0; i < KEY_COUNT && status == TSRNN_OK; i++)
        status = check_key_doc(&schema[i], scratch);
    if (status != TSRNN_OK)
        goto out;
    status = write_intro(out, scratch);
    if (status != TSRNN_OK)
        goto out;
    write_overview(out);
    for (size_t i = 0; i < KEY_COUNT; i++) {
        if (starts_section(i)) {
            fprintf(out, "\n## `[%s]`\n\n", schema[i].section);
            write_wrapped(out, "", "", "%s", section_doc(schema[i].section));
        }
        write_key(out, &schema[i]);
    }
    if (fflush(out) != 0 || ferror(out))
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write the configuration reference");
out:
    free(scratch);
    return status;
}
