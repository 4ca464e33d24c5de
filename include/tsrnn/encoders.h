/* tsrnn encoders: future covariates computed from a series' time index, as Darts'
 * `add_encoders` (darts/dataprocessing/encoders) and datetime_attribute_timeseries() compute
 * them, so that RNNModel's future covariates need no data file.
 *
 * Reference: Darts 0.48.1. An encoder turns each stamp of an index into `width` float32
 * values (the series' dtype, as Darts encodes with target.dtype):
 *   datetime_attribute  pandas' attribute of the stamp (DatetimeIndex.month, .dayofweek,
 *                       .year, ...); the 1-based ones (month, day, quarter, dayofyear,
 *                       week) shifted to start at 0: width 1
 *   one_hot             that value one-hot over its range (datetime_attribute_timeseries
 *                       with one_hot=True; month: 12 columns): width = the period
 *   cyclic              sin and cos of 2 pi value / period, in float64 then cast (the
 *                       period of "day" is the stamp's month length): width 2
 *   position            'relative': the stamp's position minus the target end's, so the
 *                       target's last point is 0 and the first forecast step 1: width 1
 * Darts orders the encoders of add_encoders as cyclic, datetime_attribute, position (each
 * in the order its attributes are listed), whatever order the dict was written in; tsrnn
 * puts one_hot after datetime_attribute (tsrnn_encoder_order()).
 *
 * Periods (Darts' table): month 12, day 31 (cyclic: days in the month), dayofweek 7, hour
 * 24, minute 60, second 60, quarter 4, dayofyear 365 (366 when the index holds a leap year),
 * week 52 (53 when the index spans at least 365 days and holds a year that starts on a
 * Thursday, or a leap year that starts on a Wednesday). year has none: no one_hot or cyclic.
 * one_hot refuses dayofyear and week, whose width would depend on the index.
 */
#ifndef TSRNN_ENCODERS_H
#define TSRNN_ENCODERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"
#include "tsrnn/data.h"

enum tsrnn_encoder_kind {
    TSRNN_ENCODER_CYCLIC,    /* add_encoders={'cyclic': {'future': [...]}} */
    TSRNN_ENCODER_ATTRIBUTE, /* add_encoders={'datetime_attribute': {'future': [...]}} */
    TSRNN_ENCODER_ONE_HOT,   /* datetime_attribute_timeseries(..., one_hot=True) */
    TSRNN_ENCODER_POSITION,  /* add_encoders={'position': {'future': ['relative']}} */
};

enum tsrnn_datetime_attribute {
    TSRNN_ATTRIBUTE_YEAR,
    TSRNN_ATTRIBUTE_MONTH,
    TSRNN_ATTRIBUTE_DAY, /* of the month */
    TSRNN_ATTRIBUTE_HOUR,
    TSRNN_ATTRIBUTE_MINUTE,
    TSRNN_ATTRIBUTE_SECOND,
    TSRNN_ATTRIBUTE_DAYOFWEEK, /* 0 = Monday; also "weekday", "day_of_week" */
    TSRNN_ATTRIBUTE_DAYOFYEAR, /* also "day_of_year" */
    TSRNN_ATTRIBUTE_QUARTER,
    TSRNN_ATTRIBUTE_WEEK,     /* ISO week; also "weekofyear", "week_of_year" */
    TSRNN_ATTRIBUTE_RELATIVE, /* position only */
};

/* The longest attribute name plus an index or suffix ("day_of_week_6", "month_sin"). */
#define TSRNN_ENCODER_NAME_MAX 48

struct tsrnn_encoder {
    enum tsrnn_encoder_kind kind;
    enum tsrnn_datetime_attribute attribute;
    char name[TSRNN_ENCODER_NAME_MAX]; /* the attribute as written ("weekday"): Darts names
                                          the columns with it */
};

/* "cyclic", "datetime_attribute", "one_hot", "position". */
const char *tsrnn_encoder_kind_name(enum tsrnn_encoder_kind kind);

/* Reads an attribute name for `kind` (pandas' names: "month", "dayofweek", "week", ...;
 * "relative" for position). False for an unknown name or one `kind` does not take (year
 * cyclic or one-hot, dayofyear or week one-hot); *why then says what is accepted. */
bool tsrnn_encoder_parse(struct tsrnn_encoder *e, enum tsrnn_encoder_kind kind, const char *name,
                         const char **why);

/* Columns the encoder writes: 1, 2 (cyclic) or the period (one_hot). */
size_t tsrnn_encoder_width(const struct tsrnn_encoder *e);

/* Whether the encoder reads dates (every kind but position): an integer index has none. */
bool tsrnn_encoder_needs_dates(const struct tsrnn_encoder *e);

/* The name of column j as Darts names it: "darts_enc_fc_cyc_month_sin" / "_cos",
 * "darts_enc_fc_dta_year", "darts_enc_fc_pos_relative"; one_hot "month_0" .. "month_11". */
void tsrnn_encoder_column_name(const struct tsrnn_encoder *e, size_t j, char *out, size_t capacity);

/* Whether add_encoders' transformer scales the encoder's columns: all but cyclic's, which
 * Darts leaves as they are (accept_transformer). */
bool tsrnn_encoder_scaled(const struct tsrnn_encoder *e);

/* Makes the columns of `scaler` that belong to encoders Darts does not scale the identity;
 * the encoders' columns start at `first_column`. */
void tsrnn_encoders_keep_unscaled(struct tsrnn_scaler *scaler, const struct tsrnn_encoder *encoders,
                                  size_t encoder_count, size_t first_column);

/* The most encoders a run takes, and the most covariate columns (the scaler's limit). */
#define TSRNN_MAX_ENCODERS 32

/* The encoders [covariates] asks for, in Darts' order, and K, the covariate columns (the
 * data file's [covariates] columns and the encoders'). TSRNN_ERR_USAGE
 * names the key, its origin, the attribute and what is accepted (an attribute listed twice
 * included, which Darts would encode twice). */
enum tsrnn_status tsrnn_encoders_from_config(struct tsrnn_encoder encoders[TSRNN_MAX_ENCODERS],
                                             size_t *encoder_count, size_t *covariate_count,
                                             const struct tsrnn_config *cfg);

/* The future covariates of a run: its encoders and the scaler of their columns. Darts fits
 * add_encoders' transformer once, on the training parts of all series: the encoders' columns
 * of `scaler` are every series'. The data file's covariate columns are scaled per series
 * (struct tsrnn_dataset_series' cov_scaler), as a Darts Scaler fitted on a list of series
 * is; `scaler` holds the first series' for them. */
struct tsrnn_covariates {
    size_t column_count; /* Kc: [covariates] columns, read with the series (first) */
    char column_names[TSRNN_MAX_COMPONENTS][TSRNN_NAME_MAX];
    size_t encoder_count;
    struct tsrnn_encoder encoders[TSRNN_MAX_ENCODERS];
    size_t count;               /* K: all columns, Kc and the encoders' */
    struct tsrnn_scaler scaler; /* (K) the first series'; identity without [covariates] scaler */
};

/* [covariates] columns into cov->column_names / column_count. TSRNN_ERR_USAGE with the
 * origin: a name listed twice or also a value column, too many, or value_cols not set. */
enum tsrnn_status tsrnn_covariate_columns_from_config(struct tsrnn_covariates *cov,
                                                      const struct tsrnn_config *cfg);

/* Writes the covariates of `length` points of `series`, scaled by `scaler` (K columns; NULL:
 * as computed), from its point `first` on
 * (first >= L: stamps that continue its frequency), into out (length, K): the series' own
 * covariate columns (series->covariates), then the encoders'; `reference` is the point,
 * counted from the series' first, that 'position' counts from: the target's end. Errors as
 * tsrnn_encoders_compute(), and TSRNN_ERR_DATA naming the columns, the series' `id` (NULL or
 * "": an unnamed series) and the missing dates when the points pass its covariate columns. */
enum tsrnn_status tsrnn_covariates_compute(float *out, const struct tsrnn_covariates *cov,
                                           const struct tsrnn_scaler *scaler,
                                           const struct tsrnn_series *series, const char *id,
                                           size_t first, size_t length, size_t reference);

/* Sorts encoders[0..count) into Darts' order (kinds as the enum lists them, each kind's
 * attributes in the order given). */
void tsrnn_encoder_order(struct tsrnn_encoder *encoders, size_t count);

/* Writes the encoders' columns for `length` stamps: `first`, then each the step of `freq`
 * after the one before, into out[i * row_stride + k] for k in [0, sum of widths) (the
 * caller's other covariate columns may surround them). `reference` is the position, in
 * steps from `first`, of the target series' last point (negative when it comes before
 * `first`): position = i - reference. Errors: TSRNN_ERR_DATA when the stamps pass the year
 * 9999, or when a date attribute meets an integer index (`unit` TSRNN_TIME_INDEX). */
enum tsrnn_status tsrnn_encoders_compute(float *out, size_t row_stride,
                                         const struct tsrnn_encoder *encoders, size_t encoder_count,
                                         const struct tsrnn_freq *freq, enum tsrnn_time_unit unit,
                                         int64_t first, size_t length, int64_t reference);

#endif
