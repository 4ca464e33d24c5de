/* tsrnn data: a time series from CSV, its train/validation split, the MinMax scaler and
 * Darts' training windows.
 *
 * Reference: Darts' TimeSeries.from_csv + split_after + Scaler + ShiftedTorchTrainingDataset
 * (shared reference/darts-semantics.md §2, §5, §8). Shape letters: L points in a series,
 * C components (value columns), T = training_length, N windows.
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

/* The `n` time stamps after times[0..length), continuing the series' frequency as pandas
 * infers it: stamps on the first (or the last) day of every k-th month continue by k
 * calendar months (monthly "MS"/"ME", quarterly, yearly), anything else by the last
 * difference (days, hours, an integer index's step). A single stamp steps by one unit of
 * `unit` (one day, minute or second; 1 for an index). */
void tsrnn_time_continue(const int64_t *times, size_t length, enum tsrnn_time_unit unit, size_t n,
                         int64_t *out);

/* --- series ---------------------------------------------------------------------------- */

struct tsrnn_series {
    size_t length;          /* L */
    size_t component_count; /* C */
    float *values;          /* (L, C), row-major: values[t * C + c] */
    int64_t *times;         /* (L): seconds, or the integer index */
    enum tsrnn_time_unit time_unit;
    char time_name[TSRNN_NAME_MAX];          /* "" without a time column */
    char (*component_names)[TSRNN_NAME_MAX]; /* (C) */
};

/* Reads a CSV file: a header row, then one row per time step. `time_col` ("" = none: the
 * index is 0, 1, ...) must hold strictly increasing stamps (tsrnn_time_parse() formats, or
 * integers); `value_cols` (count 0 = every column but time_col) must hold finite numbers.
 * A UTF-8 BOM and CRLF line ends are accepted; fields may be double-quoted.
 * Errors are TSRNN_ERR_DATA with `path:line[:column]`, the column and the bad text. */
enum tsrnn_status tsrnn_series_load_csv(struct tsrnn_series *series, const char *path,
                                        const char *time_col,
                                        const char (*value_cols)[TSRNN_NAME_MAX],
                                        size_t value_col_count);

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

/* In place on (L, C) values. */
void tsrnn_scaler_transform(const struct tsrnn_scaler *scaler, float *values, size_t length);
void tsrnn_scaler_inverse(const struct tsrnn_scaler *scaler, float *values, size_t length);

/* --- windows --------------------------------------------------------------------------- */

/* Darts' ShiftedTorchTrainingDataset(input=output=T, shift=1) over one series part:
 * sample i (0 = most recent) starts at s = L - T - 1 - i; its input is y[s .. s+T-1] and its
 * target y[s+1 .. s+T]. A part of L points gives N = L - T samples. */
struct tsrnn_windows {
    const float *values; /* (L, C), not owned */
    size_t length;       /* L */
    size_t component_count;
    size_t training_length; /* T */
    size_t count;           /* N */
};

/* Sets up windows over `values`; L must be >= T + 1. */
void tsrnn_windows_init(struct tsrnn_windows *w, const float *values, size_t length,
                        size_t component_count, size_t training_length);

/* The first point of sample `idx`'s input. */
size_t tsrnn_windows_start(const struct tsrnn_windows *w, size_t idx);

/* Copies samples idx[0..B) into input and target, each (B, T, C) row-major (batch_first). */
void tsrnn_windows_gather(const struct tsrnn_windows *w, const size_t *idx, size_t batch_count,
                          float *input, float *target);

/* --- the dataset of a run -------------------------------------------------------------- */

/* A loaded, split and scaled series with its training and validation windows: everything
 * the trainer needs from [data] and [model] training_length. */
struct tsrnn_dataset {
    struct tsrnn_series series; /* original values, as read */
    float *scaled;              /* (L, C): the whole series after the scaler */
    size_t train_length;        /* points [0, train_length) train the model */
    size_t val_length;          /* points [train_length, L) validate it; 0 = no validation */
    struct tsrnn_scaler scaler; /* fitted on the training part only */
    struct tsrnn_windows train;
    struct tsrnn_windows val; /* count 0 without validation */
};

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
    size_t param_count; /* numbers the weight initialisation drew before the loaders ran */
    bool validation;    /* a validation loader runs every epoch */
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
