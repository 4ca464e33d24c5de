/* tsrnn data: a time series from CSV with its frequency, missing dates and values filled
 * when asked, its train/validation split, the MinMax scaler and Darts' training windows.
 *
 * Reference: Darts' TimeSeries.from_csv (with freq, fill_missing_dates) + MissingValuesFiller
 * + split_after + Scaler + ShiftedTorchTrainingDataset (shared reference/darts-semantics.md
 * §2, §5, §8; pandas' infer_freq and offsets for the frequency, docs/data.md). Shape letters:
 * L points in a series, C components (value columns), T = training_length, N windows.
 *
 * Values are float32 like Darts' `.astype(np.float32)` series; the model trains in float32.
 */
#ifndef TSRNN_DATA_H
#define TSRNN_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/torch_rng.h"

/* --- time stamps ---------------------------------------------------------------------- */

/* How precisely a time column was written; a series keeps the finest seen, and formats its
 * stamps (and later forecasts) with it. TSRNN_TIME_INDEX = no time column or an integer one. */
enum tsrnn_time_unit {
    TSRNN_TIME_INDEX,
    TSRNN_TIME_YEAR,   /* YYYY */
    TSRNN_TIME_MONTH,  /* YYYY-MM */
    TSRNN_TIME_DAY,    /* YYYY-MM-DD (or YYYYMMDD) */
    TSRNN_TIME_MINUTE, /* YYYY-MM-DD HH:MM (or T between date and time) */
    TSRNN_TIME_SECOND, /* YYYY-MM-DD HH:MM:SS */
};

/* Parses a stamp in one of the formats above into seconds since 1970-01-01 00:00 (no time
 * zone: stamps are naive, like pandas' without tz). Returns false for anything else, or for
 * an impossible date (month 13, February 30). */
bool tsrnn_time_parse(const char *text, int64_t *seconds, enum tsrnn_time_unit *unit);

/* Formats `seconds` with `unit`'s format ("1959-01"); an integer for TSRNN_TIME_INDEX. */
void tsrnn_time_format(int64_t seconds, enum tsrnn_time_unit unit, char *out, size_t capacity);

/* --- frequencies (src/data/freq.c) ------------------------------------------------------ */

/* The frequency of a time index, as pandas names it (its "offset aliases") and Darts keeps it
 * in TimeSeries.freq: pandas 3.1's pandas/tseries/frequencies.py infers it, its offsets
 * (pandas/_libs/tslibs/offsets.pyx) step it. Stamps are naive (no time zone, no DST), in whole
 * seconds; every step keeps a stamp's time of day. */
enum tsrnn_freq_kind {
    TSRNN_FREQ_NONE,         /* not known */
    TSRNN_FREQ_STEP,         /* an integer index: n (Darts' RangeIndex step) */
    TSRNN_FREQ_SECOND,       /* "s": n seconds */
    TSRNN_FREQ_MINUTE,       /* "min" */
    TSRNN_FREQ_HOUR,         /* "h" */
    TSRNN_FREQ_DAY,          /* "D": n calendar days */
    TSRNN_FREQ_BUSINESS_DAY, /* "B": n weekdays; Saturday and Sunday are skipped */
    TSRNN_FREQ_WEEK,         /* "W-SUN": n weeks, on the weekday `anchor` */
    TSRNN_FREQ_MONTH,        /* "MS", "ME", "BMS", "BME": n months */
    TSRNN_FREQ_QUARTER,      /* "QS-JAN", "QE-DEC", "BQS-JAN", "BQE-DEC": n quarters */
    TSRNN_FREQ_YEAR,         /* "YS-JAN", "YE-DEC", "BYS-JAN", "BYE-DEC": n years */
};

struct tsrnn_freq {
    enum tsrnn_freq_kind kind;
    int64_t n;     /* periods per step, >= 1 */
    int anchor;    /* WEEK: the weekday, 0 = Monday .. 6 = Sunday; QUARTER, YEAR: a month,
                      1 .. 12, that starts (S) or ends (E) a period */
    bool end;      /* MONTH, QUARTER, YEAR: on a period's last day (ME) rather than its first */
    bool business; /* MONTH, QUARTER, YEAR: on its first (last) weekday rather than day */
};

/* Longest name tsrnn_freq_name() writes, NUL included. */
#define TSRNN_FREQ_NAME_MAX 32

/* Reads a pandas 3 offset alias with an optional count ("MS", "2W-MON", "15min", "QE-NOV"; "W"
 * is "W-SUN", "QS" "QS-JAN", "QE" and "YE" end in December, as in pandas), or a positive
 * integer (the step of an integer index). False for anything else, including the aliases
 * pandas 3 removed ("M", "H", "T", "A"), units finer than a second and counts below 1. */
bool tsrnn_freq_parse(struct tsrnn_freq *f, const char *text);

/* The name pandas prints (freqstr): "MS", "2W-SUN", "QE-DEC", "h", "15min"; an integer
 * index's step as a number ("1"); "none" for TSRNN_FREQ_NONE. */
void tsrnn_freq_name(const struct tsrnn_freq *f, char *out, size_t capacity);

bool tsrnn_freq_equal(const struct tsrnn_freq *a, const struct tsrnn_freq *b);

/* Whether the stamp `t` is on the frequency (pandas' offset.is_on_offset): a weekday for "B",
 * an anchor weekday for "W-*", the period's first or last (week)day for the month, quarter and
 * year kinds. Every stamp is on an integer step, on seconds, minutes, hours and days. */
bool tsrnn_freq_on(const struct tsrnn_freq *f, int64_t t);

/* *out = `t` advanced by k >= 0 steps of `f` (k * n periods), as pandas' `t + k * offset` for
 * a stamp on the offset. False when the result leaves the 64-bit integers (an index) or the
 * years 0000 .. 9999 that tsrnn reads and writes (a stamp); `t` must be on `f`. */
bool tsrnn_freq_advance(const struct tsrnn_freq *f, int64_t t, int64_t k, int64_t *out);

/* Whether `to` lies a whole number *k >= 0 of steps after `from` on the grid of `f` that
 * passes through `from` (`from` on `f`): what pandas' date_range(from, to, freq) holds. */
bool tsrnn_freq_steps(const struct tsrnn_freq *f, int64_t from, int64_t to, int64_t *k);

/* The frequency of strictly increasing `times`, as pandas.infer_freq() finds it for stamps
 * (at least 3 of them) and as Darts converts an integer index to a RangeIndex (at least 2,
 * one constant step). False when there is none, or when pandas would name one tsrnn does not
 * step (week of month "WOM-1MON", business hours "bh"); then f->kind is TSRNN_FREQ_NONE. */
bool tsrnn_freq_infer(struct tsrnn_freq *f, const int64_t *times, size_t length,
                      bool integer_index);

/* The first i >= 1 where times[i] is not the step after times[i - 1] under `f`; 0 when
 * times[0] is not on `f`; `length` when every stamp follows. */
size_t tsrnn_freq_first_break(const struct tsrnn_freq *f, const int64_t *times, size_t length);

/* What Darts looks at for fill_missing_dates=True without a freq: the frequencies inferred
 * from every three consecutive stamps (every step of an integer index), at most `capacity` of
 * them into observed[] with how often each was seen, in order of first appearance. Returns
 * how many distinct ones there were, or capacity + 1 when there were more than `capacity`. */
size_t tsrnn_freq_observe(struct tsrnn_freq *observed, size_t *counts, size_t capacity,
                          const int64_t *times, size_t length, bool integer_index);

/* The coarsest unit whose format shows every stamp of `f` ("YYYY-MM" for "MS", "YYYY-MM-DD"
 * for "ME", ...); TSRNN_TIME_INDEX for an integer step. */
enum tsrnn_time_unit tsrnn_freq_unit(const struct tsrnn_freq *f);

/* --- series ---------------------------------------------------------------------------- */

/* How many inserted dates a series remembers for its summary. */
#define TSRNN_SERIES_INSERTED_NOTED 5

struct tsrnn_series {
    size_t length;          /* L */
    size_t component_count; /* C */
    float *values;          /* (L, C), row-major: values[t * C + c] */
    int64_t *times;         /* (L): seconds, or the integer index */
    enum tsrnn_time_unit time_unit;
    struct tsrnn_freq freq;                  /* of `times`; step 1 without a time column */
    char time_name[TSRNN_NAME_MAX];          /* "" without a time column */
    char (*component_names)[TSRNN_NAME_MAX]; /* (C) */
    /* What filling did: dates inserted into the time column (the first few of them) and
     * values filled, inserted dates' values included. */
    size_t inserted_count;
    int64_t inserted_times[TSRNN_SERIES_INSERTED_NOTED];
    size_t filled_count;
    /* [covariates] columns read from the same file (tsrnn_series_load_csv_covariates()):
     * the future covariates a user supplies, filled like the values. */
    size_t covariate_count; /* Kc */
    float *covariates;      /* (L, Kc); NULL when Kc = 0 */
};

/* How to read the time index and missing values: [data] freq, fill_missing_dates and
 * fill_missing_values (tsrnn_series_options_from_config()). A zeroed struct is Darts'
 * from_csv() default: the frequency inferred, nothing inserted, nothing filled. */
struct tsrnn_series_options {
    struct tsrnn_freq freq; /* kind TSRNN_FREQ_NONE: inferred */
    /* Taken when `freq` is not set and the stamps are too few to infer one (pandas needs 3
     * stamps, Darts 2 integers): tsrnn-predict's checkpoint knows the frequency. */
    struct tsrnn_freq short_series_freq;
    bool fill_missing_dates;
    enum tsrnn_fill_missing fill_missing_values;
    const char *freq_text;   /* freq as written, for messages */
    const char *freq_origin; /* where freq and fill_missing_dates were set, for messages */
    const char *fill_dates_origin;
    /* value_cols after the first target_col_count are [covariates] columns, for the message
     * that finds one missing (0: all are [data] value_cols) */
    size_t target_col_count;
};

/* The options [data] asks for (src/data/check.c). TSRNN_ERR_USAGE, led by where it was set,
 * when [data] freq is not a frequency (tsrnn_freq_parse(); the aliases pandas 3 renamed are
 * named). */
enum tsrnn_status tsrnn_series_options_from_config(struct tsrnn_series_options *o,
                                                   const struct tsrnn_config *cfg);

/* Reads a CSV file as Darts' TimeSeries.from_csv(path, time_col, value_cols, freq,
 * fill_missing_dates) followed by MissingValuesFiller() when asked: a header row, then one row
 * per time step. `time_col` ("" = none: the index is 0, 1, ...) must hold strictly increasing
 * stamps (tsrnn_time_parse() formats) or integers; `value_cols` (count 0 = every column but
 * time_col) numbers, or missing values (an empty field or one of pandas' NA texts: NaN, NA,
 * null, N/A, ...). Infinities and numbers beyond float32 are refused.
 *
 * The time index must follow one frequency: the one inferred from every stamp (pandas'
 * infer_freq; a constant step for integers), or `options->freq`. Dates missing from it are
 * inserted with missing values when options->freq is set or options->fill_missing_dates is
 * (without freq, the frequency is one that three consecutive stamps show and whose grid keeps
 * every stamp, the coarsest: docs/data.md). Missing values are refused unless
 * fill_missing_values is TSRNN_FILL_MISSING_INTERPOLATE. `options` NULL: a zeroed struct.
 *
 * A UTF-8 BOM and CRLF line ends are accepted; fields may be double-quoted.
 * Errors are TSRNN_ERR_DATA with `path:line[:column]`, the column and the bad text, and what
 * fixes it; TSRNN_ERR_USAGE when a [data] key contradicts the file. */
enum tsrnn_status tsrnn_series_load_csv(struct tsrnn_series *series, const char *path,
                                        const char *time_col,
                                        const char (*value_cols)[TSRNN_NAME_MAX],
                                        size_t value_col_count,
                                        const struct tsrnn_series_options *options);

/* As tsrnn_series_load_csv() with value_cols and covariate_cols (count >= 1 each) read
 * together, so that the covariate columns are filled and checked like the values; then the
 * covariate columns move to series->covariates (L, Kc) and the series keeps the values. */
enum tsrnn_status tsrnn_series_load_csv_covariates(struct tsrnn_series *series, const char *path,
                                                   const char *time_col,
                                                   const char (*value_cols)[TSRNN_NAME_MAX],
                                                   size_t value_col_count,
                                                   const char (*covariate_cols)[TSRNN_NAME_MAX],
                                                   size_t covariate_col_count,
                                                   const struct tsrnn_series_options *options);
/* A long-format CSV file as Darts' TimeSeries.from_group_dataframe(df, group_cols=id_col,
 * time_col, value_cols) reads it: one series per distinct value of the column `id_col`
 * (which is neither the time nor a value column), each from its own rows in file order,
 * read, made regular and filled as tsrnn_series_load_csv() reads a file. The groups come in
 * Darts' order: sorted by the id's value, as numbers when every id is one (pandas reads the
 * column as numbers then), else byte by byte as text. `time_col` is required. *series and
 * *ids get arrays of *count series and their ids (the id as written in its group's first
 * row); free each series with tsrnn_series_finish(), then both arrays with free(). Errors
 * are tsrnn_series_load_csv()'s, a group's naming its id, and TSRNN_ERR_DATA for an empty
 * id or one longer than TSRNN_NAME_MAX - 1 bytes. */
enum tsrnn_status
tsrnn_series_load_groups(struct tsrnn_series **series, char (**ids)[TSRNN_NAME_MAX], size_t *count,
                         const char *path, const char *id_col, const char *time_col,
                         const char (*value_cols)[TSRNN_NAME_MAX], size_t value_col_count,
                         const struct tsrnn_series_options *options);

/* As tsrnn_series_load_groups() with value_cols and covariate_cols (count >= 1 each) read
 * together, each series then split as tsrnn_series_load_csv_covariates() splits it. On error
 * *series and *ids are NULL. */
enum tsrnn_status tsrnn_series_load_groups_covariates(
    struct tsrnn_series **series, char (**ids)[TSRNN_NAME_MAX], size_t *count, const char *path,
    const char *id_col, const char *time_col, const char (*value_cols)[TSRNN_NAME_MAX],
    size_t value_col_count, const char (*covariate_cols)[TSRNN_NAME_MAX],
    size_t covariate_col_count, const struct tsrnn_series_options *options);

/* --- the files of [data] path (src/data/sources.c) --------------------------------------- */

/* [data] path as the config resolved it: CSV files and glob patterns separated by commas
 * (a pattern is an entry with *, ? or [); each pattern's matches sorted by name, byte by byte,
 * as Python's sorted(glob(...)) gives them. */
struct tsrnn_data_paths {
    char **paths; /* (count) owned */
    size_t count;
    size_t capacity;
};

/* TSRNN_ERR_USAGE naming `origin` for an empty entry or a pattern that matches nothing. */
enum tsrnn_status tsrnn_data_paths_expand(struct tsrnn_data_paths *p, const char *spec,
                                          const char *origin);

/* Accepts a zeroed struct. */
void tsrnn_data_paths_finish(struct tsrnn_data_paths *p);

/* A series' id from its file: the name without folder and extension ("data/store_1.csv" ->
 * "store_1"). */
void tsrnn_data_path_stem(const char *path, char *out, size_t capacity);

/* Darts' MissingValuesFiller() (pandas' DataFrame.interpolate(limit_direction="both")): each
 * NaN of each component of `values` (L, C) becomes the linear interpolation, by position, of
 * the nearest values before and after it, computed as numpy.interp does; NaNs before the
 * first value (after the last) take the first (last) value. Counts the values filled into
 * *filled_count. Returns C when every component is finite afterwards, else the first
 * component that holds no value at all (left as it was). */
size_t tsrnn_fill_interpolate(double *values, size_t length, size_t component_count,
                              size_t *filled_count);

/* Frees what tsrnn_series_load_csv() allocated; accepts a zeroed series. */
void tsrnn_series_finish(struct tsrnn_series *series);

/* --- scaler ---------------------------------------------------------------------------- */

/* sklearn's MinMaxScaler(feature_range=(0, 1)) per component, in float32 like sklearn on a
 * float32 array: scale = 1 / (max - min) (a zero range counts as 1), offset = -min * scale,
 * transform x * scale + offset, inverse (x - offset) / scale. An identity scaler
 * (scale 1, offset 0) stands for `scaler = none`. */
struct tsrnn_scaler {
    size_t component_count;
    float data_min[TSRNN_MAX_COMPONENTS];
    float data_max[TSRNN_MAX_COMPONENTS];
    float scale[TSRNN_MAX_COMPONENTS];
    float offset[TSRNN_MAX_COMPONENTS];
};

/* Fits on `values` (L, C). */
void tsrnn_scaler_fit(struct tsrnn_scaler *scaler, const float *values, size_t length,
                      size_t component_count);

/* scale 1, offset 0 (the data's min/max are still recorded for the summary). */
void tsrnn_scaler_identity(struct tsrnn_scaler *scaler, const float *values, size_t length,
                           size_t component_count);

/* [data] scaler for a series: fitted on its training part (values (train_length, C)), or its
 * identity for `kind` none; TSRNN_ERR_DATA, led by `label`, for a column whose range float32
 * cannot hold (finite values near +-3.4e38: the scaler would make them 0 and every forecast
 * infinite). */
enum tsrnn_status tsrnn_scaler_fit_series(struct tsrnn_scaler *scaler, enum tsrnn_scaler_kind kind,
                                          const struct tsrnn_series *series, size_t train_length,
                                          const char *label);

/* In place on (L, C) values. */
void tsrnn_scaler_transform(const struct tsrnn_scaler *scaler, float *values, size_t length);
void tsrnn_scaler_inverse(const struct tsrnn_scaler *scaler, float *values, size_t length);

/* --- windows --------------------------------------------------------------------------- */

/* Darts' ShiftedTorchTrainingDataset(input=output=T, shift=1) over one series part:
 * sample i (0 = most recent) starts at s = L - T - 1 - i; its input is y[s .. s+T-1] and its
 * target y[s+1 .. s+T]. A part of L points gives N = L - T samples.
 *
 * With K future covariates (RNNModel, a DualCovariatesTorchModel) the input of step t is
 * (y[s+t], cov[s+t+1]): the covariates of the target's time, as Darts' shifted dataset cuts
 * them beside future_target and _RNNModule concatenates them to past_target. */
struct tsrnn_windows {
    const float *values; /* (L, C), not owned */
    size_t length;       /* L */
    size_t component_count;
    size_t training_length;  /* T */
    size_t count;            /* N */
    const float *covariates; /* (Lc >= L, K), row 0 at values' row 0; not owned; NULL: K = 0 */
    size_t covariate_count;  /* K */
};

/* Sets up windows over `values`, without covariates; L must be >= T + 1. */
void tsrnn_windows_init(struct tsrnn_windows *w, const float *values, size_t length,
                        size_t component_count, size_t training_length);

/* Adds K covariates per point, aligned with the windows' values (at least L rows). */
void tsrnn_windows_set_covariates(struct tsrnn_windows *w, const float *covariates,
                                  size_t covariate_count);

/* The first point of sample `idx`'s input. */
size_t tsrnn_windows_start(const struct tsrnn_windows *w, size_t idx);

/* Copies samples idx[0..B) into input (B, T, C + K) and target (B, T, C), row-major
 * (batch_first). */
void tsrnn_windows_gather(const struct tsrnn_windows *w, const size_t *idx, size_t batch_count,
                          float *input, float *target);

/* --- windows over several series (Darts' global models) ---------------------------------
 * Darts' ShiftedTorchTrainingDataset over a list of S series, each with its own windows
 * (struct tsrnn_windows, index 0 its most recent): every series gets the same number M of
 * sample indices, M = min(max_samples_per_ts, the most windows any series has), so the
 * dataset holds S * M samples and sample i is window (i mod M) mod N_s of series s = i / M
 * (N_s: that series' window count). A series with fewer windows than M repeats its windows
 * — Darts oversamples the shorter series — and max_samples_per_ts keeps each series' M most
 * recent. Windows are index arithmetic over the series' values, never copies. */
struct tsrnn_window_list {
    const struct tsrnn_windows *series; /* (S) not owned */
    size_t series_count;                /* S */
    size_t samples_per_series;          /* M */
    size_t count;                       /* S * M */
};

/* max_samples_per_ts = 0: no cap. TSRNN_ERR_DATA when no series has a window, or when one
 * series has none (Darts raises both), naming the series by its index. */
enum tsrnn_status tsrnn_window_list_init(struct tsrnn_window_list *list,
                                         const struct tsrnn_windows *series, size_t series_count,
                                         size_t max_samples_per_ts);

/* Which series sample `idx` comes from and which of that series' windows it is. */
void tsrnn_window_list_locate(const struct tsrnn_window_list *list, size_t idx, size_t *series_idx,
                              size_t *window_idx);

/* Copies samples idx[0..B) into input (B, T, C + K) and target (B, T, C), as
 * tsrnn_windows_gather(). Every series has the same T, C and K. */
void tsrnn_window_list_gather(const struct tsrnn_window_list *list, const size_t *idx,
                              size_t batch_count, float *input, float *target);

/* --- the dataset of a run -------------------------------------------------------------- */

struct tsrnn_covariates; /* include/tsrnn/encoders.h */

/* One series of the run, loaded, split and scaled, with its training and validation
 * windows. */
struct tsrnn_dataset_series {
    struct tsrnn_series series; /* original values, as read */
    char id[TSRNN_NAME_MAX];    /* the series' name; "" in a run of one series */
    float *scaled;              /* (L, C): the whole series after its scaler */
    size_t train_length;        /* points [0, train_length) train the model */
    size_t val_length;          /* points [train_length, L) validate it; 0 = no validation */
    struct tsrnn_scaler scaler; /* fitted on this series' training part only */
    /* (L, K) its future covariates, scaled; NULL without. Darts encodes the training and the
     * validation series apart, so each part's 'position' counts from that part's end. */
    float *covariates;
    /* (K) their scaler: the data file's covariate columns fitted on this series' training
     * part (Darts' Scaler fitted on a list of series fits each apart), the encoders' columns
     * the transformer shared by every series (struct tsrnn_covariates' scaler). */
    struct tsrnn_scaler cov_scaler;
    struct tsrnn_windows train;
    struct tsrnn_windows val; /* count 0 without validation */
};

/* The S series of a run and the samples over all of them: everything the trainer needs from
 * [data] and [model] training_length. Darts fits a global model on a list of series; one
 * series is the list of one, whose samples are exactly that series' windows. */
struct tsrnn_dataset {
    size_t series_count;                 /* S */
    struct tsrnn_dataset_series *items;  /* (S) */
    size_t component_count;              /* C, shared by every series */
    size_t training_length;              /* T */
    struct tsrnn_windows *train_parts;   /* (S) each series' training windows, for the lists */
    struct tsrnn_windows *val_parts;     /* (S) its validation windows */
    struct tsrnn_window_list train;      /* Darts' training dataset over the list */
    struct tsrnn_window_list val;        /* its validation dataset; count 0 without validation */
    struct tsrnn_covariates *covariates; /* the encoders and their scaler; count 0: none */
};

/* What data/ makes of the run's [data] and [covariates] keys, checked before anything is read
 * or written (src/data/check.c): [data] freq is a frequency, every file [data] path names or
 * matches can be read, a long-format file (id_col) is one file with a time column, and
 * [covariates] asks for encoders and columns data/ can make (tsrnn_encoders_from_config()).
 * TSRNN_ERR_USAGE led by where the key was set, as the config parser's messages. tsrnn-worker
 * and tsrnn-launch run it right after the config's own checks (tsrnn_config_validate());
 * tsrnn_dataset_load() runs it first. */
enum tsrnn_status tsrnn_data_check_config(const struct tsrnn_config *cfg);

/* The future covariates of every series of `ds`, whose items hold their series, training and
 * validation lengths and windows, and whose `covariates` names the columns and encoders
 * (count K, column_count Kc): each item's K columns encoded part by part as Darts'
 * add_encoders does at fit(), the transformer fitted once (`cov_scaler`: [covariates]
 * scaler) and applied, and the windows pointed at them. Shared by tsrnn_dataset_load() and
 * the C API's fit on series sets (src/data/dataset.c says what each step follows). */
enum tsrnn_status tsrnn_dataset_build_covariates(struct tsrnn_dataset *ds,
                                                 enum tsrnn_scaler_kind cov_scaler);

/* Loads [data] path, splits by split_after (inclusive, as Darts' split_after) or the last
 * val_fraction of the points, fits the scaler on the training part, and builds the windows.
 * Errors (TSRNN_ERR_DATA / TSRNN_ERR_USAGE) name the file, line or config entry. */
enum tsrnn_status tsrnn_dataset_load(struct tsrnn_dataset *ds, const struct tsrnn_config *cfg);

/* Accepts a zeroed dataset. */
void tsrnn_dataset_finish(struct tsrnn_dataset *ds);

/* --- sampler --------------------------------------------------------------------------- */

/* Where the shuffled order of an epoch comes from: the permutation Darts' fit() gives that
 * epoch for this random_state, bit for bit (tsrnn_darts_epoch_permutation() in
 * include/tsrnn/torch_rng.h). Darts seeds PyTorch's global generator from random_state;
 * the weight initialisation draws from it first (one number per parameter), then the
 * DataLoaders draw each epoch's RandomSampler seed (and a number per validation loader). */
struct tsrnn_shuffle {
    uint32_t random_state;
    size_t param_count;      /* numbers the weight initialisation drew before the loaders ran */
    bool validation;         /* a validation loader runs every epoch */
    bool sanity_check_draws; /* Lightning 1.x order: the sanity check's val iterator draws */
    uint64_t epoch_draws;    /* what one epoch's training steps draw (dropout masks), 0 none */
};

/* PyTorch DistributedSampler + DataLoader(drop_last=False) semantics, per epoch:
 *   1. order = 0..N-1, or with a shuffle Darts' permutation of that epoch (above): with
 *      world size 1 exactly the order a Darts run visits its samples in;
 *   2. padded by wrap-around (order[0], order[1], ...) to a multiple of the world size W;
 *   3. rank r takes positions r, r+W, r+2W, ...: ceil(N/W) samples;
 *   4. those are cut into batches of `batch_size`, the last one smaller.
 * Same (shuffle, epoch, N, W) -> same order on every platform. */
struct tsrnn_sampler {
    size_t sample_count; /* N */
    size_t batch_size;
    size_t rank, world_size;
    bool shuffle;
    struct tsrnn_shuffle order_source; /* when shuffle */
    struct tsrnn_mt19937 generator;    /* Darts' global generator after generator_epoch's seed */
    uint64_t generator_epoch;          /* UINT64_MAX: not positioned yet */
    size_t *order;                     /* (N) this epoch's permutation */
    size_t *local;                     /* (ceil(N/W)) this rank's samples, in order */
    size_t local_count;                /* ceil(N/W) */
};

/* `shuffle` NULL keeps index order (Darts' val loader, or shuffle = false). */
enum tsrnn_status tsrnn_sampler_init(struct tsrnn_sampler *s, size_t sample_count,
                                     size_t batch_size, const struct tsrnn_shuffle *shuffle,
                                     size_t rank, size_t world_size);

/* Accepts a zeroed sampler. */
void tsrnn_sampler_finish(struct tsrnn_sampler *s);

/* Computes the order of `epoch` (no allocation). */
void tsrnn_sampler_set_epoch(struct tsrnn_sampler *s, uint64_t epoch);

/* Batches per epoch on this rank: ceil(ceil(N/W) / batch_size). */
size_t tsrnn_sampler_batch_count(const struct tsrnn_sampler *s);

/* Sample indices of batch `batch_idx` of the current epoch; returns the batch's size. */
size_t tsrnn_sampler_batch(const struct tsrnn_sampler *s, size_t batch_idx, const size_t **idx);

#endif
