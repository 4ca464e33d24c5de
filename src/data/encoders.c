/* Darts' add_encoders for future covariates (include/tsrnn/encoders.h): Darts 0.48.1's
 * datetime_attribute_timeseries() (darts/utils/timeseries_generation.py) for the date
 * attributes and IntegerIndexEncoder for 'position'. */
#include "tsrnn/encoders.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"

static const struct {
    const char *name;
    enum tsrnn_datetime_attribute attribute;
} ATTRIBUTE_NAMES[] = {
    { "year", TSRNN_ATTRIBUTE_YEAR },
    { "month", TSRNN_ATTRIBUTE_MONTH },
    { "day", TSRNN_ATTRIBUTE_DAY },
    { "hour", TSRNN_ATTRIBUTE_HOUR },
    { "minute", TSRNN_ATTRIBUTE_MINUTE },
    { "second", TSRNN_ATTRIBUTE_SECOND },
    { "dayofweek", TSRNN_ATTRIBUTE_DAYOFWEEK },
    { "weekday", TSRNN_ATTRIBUTE_DAYOFWEEK },
    { "day_of_week", TSRNN_ATTRIBUTE_DAYOFWEEK },
    { "dayofyear", TSRNN_ATTRIBUTE_DAYOFYEAR },
    { "day_of_year", TSRNN_ATTRIBUTE_DAYOFYEAR },
    { "quarter", TSRNN_ATTRIBUTE_QUARTER },
    { "week", TSRNN_ATTRIBUTE_WEEK },
    { "weekofyear", TSRNN_ATTRIBUTE_WEEK },
    { "week_of_year", TSRNN_ATTRIBUTE_WEEK },
};

/* Darts' num_values_dict, before the index-dependent extra day or week; 0: none. */
static int base_period(enum tsrnn_datetime_attribute a)
{
    switch (a) {
    case TSRNN_ATTRIBUTE_MONTH:
        return 12;
    case TSRNN_ATTRIBUTE_DAY:
        return 31;
    case TSRNN_ATTRIBUTE_HOUR:
        return 24;
    case TSRNN_ATTRIBUTE_MINUTE:
        return 60;
    case TSRNN_ATTRIBUTE_SECOND:
        return 60;
    case TSRNN_ATTRIBUTE_DAYOFWEEK:
        return 7;
    case TSRNN_ATTRIBUTE_DAYOFYEAR:
        return 365;
    case TSRNN_ATTRIBUTE_QUARTER:
        return 4;
    case TSRNN_ATTRIBUTE_WEEK:
        return 52;
    case TSRNN_ATTRIBUTE_YEAR:
    case TSRNN_ATTRIBUTE_RELATIVE:
        return 0;
    }
    return 0;
}

const char *tsrnn_encoder_kind_name(enum tsrnn_encoder_kind kind)
{
    switch (kind) {
    case TSRNN_ENCODER_CYCLIC:
        return "cyclic";
    case TSRNN_ENCODER_ATTRIBUTE:
        return "datetime_attribute";
    case TSRNN_ENCODER_ONE_HOT:
        return "one_hot";
    case TSRNN_ENCODER_POSITION:
        return "position";
    }
    return "?";
}

bool tsrnn_encoder_parse(struct tsrnn_encoder *e, enum tsrnn_encoder_kind kind, const char *name,
                         const char **why)
{
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    if (strlen(name) >= sizeof(e->name)) {
        *why = "an attribute name that long";
        return false;
    }
    snprintf(e->name, sizeof(e->name), "%s", name);
    if (kind == TSRNN_ENCODER_POSITION) {
        e->attribute = TSRNN_ATTRIBUTE_RELATIVE;
        *why = "accepted: relative";
        return strcmp(name, "relative") == 0;
    }
    size_t count = sizeof(ATTRIBUTE_NAMES) / sizeof(ATTRIBUTE_NAMES[0]), i = 0;
    while (i < count && strcmp(ATTRIBUTE_NAMES[i].name, name) != 0)
        i++;
    if (i == count) {
        *why = "accepted: year, month, day, hour, minute, second, dayofweek (weekday, "
               "day_of_week), dayofyear (day_of_year), quarter, week (weekofyear, week_of_year)";
        return false;
    }
    e->attribute = ATTRIBUTE_NAMES[i].attribute;
    if (kind != TSRNN_ENCODER_ATTRIBUTE && e->attribute == TSRNN_ATTRIBUTE_YEAR) {
        *why = "year has no period (Darts refuses it too); accepted: year under "
               "datetime_attribute";
        return false;
    }
    if (kind == TSRNN_ENCODER_ONE_HOT &&
        (e->attribute == TSRNN_ATTRIBUTE_DAYOFYEAR || e->attribute == TSRNN_ATTRIBUTE_WEEK)) {
        *why = "its one-hot width depends on the dates (a leap day, a 53rd week); accepted: "
               "dayofyear and week under datetime_attribute or cyclic";
        return false;
    }
    return true;
}

size_t tsrnn_encoder_width(const struct tsrnn_encoder *e)
{
    switch (e->kind) {
    case TSRNN_ENCODER_CYCLIC:
        return 2;
    case TSRNN_ENCODER_ONE_HOT:
        return (size_t)base_period(e->attribute);
    case TSRNN_ENCODER_ATTRIBUTE:
    case TSRNN_ENCODER_POSITION:
        return 1;
    }
    return 0;
}

bool tsrnn_encoder_needs_dates(const struct tsrnn_encoder *e)
{
    return e->kind != TSRNN_ENCODER_POSITION;
}

void tsrnn_encoder_column_name(const struct tsrnn_encoder *e, size_t j, char *out, size_t capacity)
{
    switch (e->kind) {
    case TSRNN_ENCODER_CYCLIC:
        snprintf(out, capacity, "darts_enc_fc_cyc_%s_%s", e->name, j == 0 ? "sin" : "cos");
        return;
    case TSRNN_ENCODER_ATTRIBUTE:
        snprintf(out, capacity, "darts_enc_fc_dta_%s", e->name);
        return;
    case TSRNN_ENCODER_ONE_HOT:
        snprintf(out, capacity, "%s_%zu", e->name, j);
        return;
    case TSRNN_ENCODER_POSITION:
        snprintf(out, capacity, "darts_enc_fc_pos_%s", e->name);
        return;
    }
}

bool tsrnn_encoder_scaled(const struct tsrnn_encoder *e)
{
    return e->kind != TSRNN_ENCODER_CYCLIC;
}

void tsrnn_encoders_keep_unscaled(struct tsrnn_scaler *scaler, const struct tsrnn_encoder *encoders,
                                  size_t encoder_count, size_t first_column)
{
    size_t column = first_column;
    for (size_t e = 0; e < encoder_count; e++) {
        size_t width = tsrnn_encoder_width(&encoders[e]);
        for (size_t j = 0; j < width && !tsrnn_encoder_scaled(&encoders[e]); j++) {
            scaler->scale[column + j] = 1.0f;
            scaler->offset[column + j] = 0.0f;
        }
        column += width;
    }
}

void tsrnn_encoder_order(struct tsrnn_encoder *encoders, size_t count)
{
    /* A stable insertion sort by kind: the lists are short. */
    for (size_t i = 1; i < count; i++) {
        struct tsrnn_encoder e = encoders[i];
        size_t j = i;
        while (j > 0 && encoders[j - 1].kind > e.kind) {
            encoders[j] = encoders[j - 1];
            j--;
        }
        encoders[j] = e;
    }
}

/* Adds the attributes of the comma list `text` ([covariates] `key`) as encoders of `kind`. */
static enum tsrnn_status add_listed(struct tsrnn_encoder *encoders, size_t *count,
                                    enum tsrnn_encoder_kind kind, const char *key, const char *text,
                                    const struct tsrnn_config *cfg)
{
    const char *cursor = text;
    while (*cursor != '\0') {
        const char *comma = strchr(cursor, ',');
        size_t n = comma ? (size_t)(comma - cursor) : strlen(cursor);
        char name[TSRNN_ENCODER_NAME_MAX] = "";
        const char *start = cursor, *why = NULL;
        cursor = comma ? comma + 1 : cursor + n;
        while (n > 0 && (*start == ' ' || *start == '\t'))
            start++, n--;
        while (n > 0 && (start[n - 1] == ' ' || start[n - 1] == '\t'))
            n--;
        if (n < sizeof(name))
            memcpy(name, start, n), name[n] = '\0';
        bool ok =
            n > 0 && n < sizeof(name) && tsrnn_encoder_parse(&encoders[*count], kind, name, &why);
        if (!ok)
            return tsrnn_error(TSRNN_ERR_USAGE, "%s: [covariates] %s = %s: '%.*s': %s",
                               tsrnn_config_origin(cfg, "covariates", key), key, text, (int)n,
                               start, why ? why : "an empty or too long attribute name");
        for (size_t i = 0; i < *count; i++)
            if (encoders[i].kind == kind && encoders[i].attribute == encoders[*count].attribute)
                return tsrnn_error(TSRNN_ERR_USAGE,
                                   "%s: [covariates] %s = %s lists %s twice; accepted: each "
                                   "attribute once",
                                   tsrnn_config_origin(cfg, "covariates", key), key, text, name);
        if (*count + 1 == TSRNN_MAX_ENCODERS)
            return tsrnn_error(TSRNN_ERR_USAGE, "%s: [covariates] %s: more than %d encoders",
                               tsrnn_config_origin(cfg, "covariates", key), key,
                               TSRNN_MAX_ENCODERS - 1);
        (*count)++;
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_encoders_from_config(struct tsrnn_encoder encoders[TSRNN_MAX_ENCODERS],
                                             size_t *encoder_count, size_t *covariate_count,
                                             const struct tsrnn_config *cfg)
{
    size_t count = 0, width = 0;
    TSRNN_TRY(add_listed(encoders, &count, TSRNN_ENCODER_CYCLIC, "cyclic", cfg->cov_cyclic, cfg));
    TSRNN_TRY(add_listed(encoders, &count, TSRNN_ENCODER_ATTRIBUTE, "datetime_attribute",
                         cfg->cov_datetime_attribute, cfg));
    TSRNN_TRY(
        add_listed(encoders, &count, TSRNN_ENCODER_ONE_HOT, "one_hot", cfg->cov_one_hot, cfg));
    if (cfg->cov_position == TSRNN_POSITION_RELATIVE) {
        const char *why;
        tsrnn_encoder_parse(&encoders[count++], TSRNN_ENCODER_POSITION, "relative", &why);
    }
    struct tsrnn_covariates *columns = malloc(sizeof(*columns));
    if (columns == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading [covariates]");
    enum tsrnn_status status = tsrnn_covariate_columns_from_config(columns, cfg);
    width = columns->column_count;
    free(columns);
    TSRNN_TRY(status);
    for (size_t e = 0; e < count; e++)
        width += tsrnn_encoder_width(&encoders[e]);
    if (width > TSRNN_MAX_COMPONENTS)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [covariates] ask for %zu covariate columns; accepted: at most "
                           "%d (one-hot minutes or seconds take 60)",
                           tsrnn_config_origin(cfg, "covariates", "one_hot"), width,
                           TSRNN_MAX_COMPONENTS);
    *encoder_count = count;
    *covariate_count = width;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_covariate_columns_from_config(struct tsrnn_covariates *cov,
                                                      const struct tsrnn_config *cfg)
{
    const char *origin = tsrnn_config_origin(cfg, "covariates", "columns");
    const char *cursor = cfg->cov_columns;
    cov->column_count = 0;
    while (*cursor != '\0') {
        const char *comma = strchr(cursor, ',');
        size_t n = comma ? (size_t)(comma - cursor) : strlen(cursor);
        const char *start = cursor;
        cursor = comma ? comma + 1 : cursor + n;
        while (n > 0 && (*start == ' ' || *start == '\t'))
            start++, n--;
        while (n > 0 && (start[n - 1] == ' ' || start[n - 1] == '\t'))
            n--;
        if (n == 0 || n >= TSRNN_NAME_MAX || cov->column_count == TSRNN_MAX_COMPONENTS)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [covariates] columns = %s: an empty or too long name, or "
                               "more than %d columns",
                               origin, cfg->cov_columns, TSRNN_MAX_COMPONENTS);
        char *name = cov->column_names[cov->column_count];
        memcpy(name, start, n);
        name[n] = '\0';
        for (size_t i = 0; i < cov->column_count; i++)
            if (strcmp(cov->column_names[i], name) == 0)
                return tsrnn_error(TSRNN_ERR_USAGE,
                                   "%s: [covariates] columns = %s lists '%s' twice; accepted: "
                                   "each column once",
                                   origin, cfg->cov_columns, name);
        for (size_t c = 0; c < cfg->value_col_count; c++)
            if (strcmp(cfg->value_cols[c], name) == 0)
                return tsrnn_error(TSRNN_ERR_USAGE,
                                   "%s: [covariates] columns = %s: '%s' is also a value column "
                                   "([data] value_cols, %s); accepted: a column in one of them",
                                   origin, cfg->cov_columns, name,
                                   tsrnn_config_origin(cfg, "data", "value_cols"));
        cov->column_count++;
    }
    if (cov->column_count > 0 && cfg->value_col_count == 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [covariates] columns = %s needs [data] value_cols: without it "
                           "every column but the time column would be a value; accepted: the "
                           "value columns listed under [data] value_cols",
                           origin, cfg->cov_columns);
    return TSRNN_OK;
}

/* The calendar fields of one naive stamp, as pandas' DatetimeIndex attributes. */
struct stamp_fields {
    int64_t year;
    int month, day, hour, minute, second, dayofweek, dayofyear, week;
};

static void stamp_fields(struct stamp_fields *f, int64_t t)
{
    int64_t days, second_of_day;
    tsrnn_split_day(t, &days, &second_of_day);
    tsrnn_civil_from_days(days, &f->year, &f->month, &f->day);
    f->hour = (int)(second_of_day / 3600);
    f->minute = (int)(second_of_day / 60 % 60);
    f->second = (int)(second_of_day % 60);
    f->dayofweek = tsrnn_weekday(days);
    f->dayofyear = (int)(days - tsrnn_days_from_civil(f->year, 1, 1)) + 1;
    /* ISO 8601 (Python's isocalendar): the week holding this week's Thursday, counted in the
     * Thursday's year. */
    int64_t thursday = days - f->dayofweek + 3, thursday_year;
    int m, d;
    tsrnn_civil_from_days(thursday, &thursday_year, &m, &d);
    f->week = (int)((thursday - tsrnn_days_from_civil(thursday_year, 1, 1)) / 7) + 1;
}

/* The attribute's value, already 0-based where Darts shifts it (ONE_INDEXED_FREQS). */
static int64_t attribute_value(const struct stamp_fields *f, enum tsrnn_datetime_attribute a)
{
    switch (a) {
    case TSRNN_ATTRIBUTE_YEAR:
        return f->year;
    case TSRNN_ATTRIBUTE_MONTH:
        return f->month - 1;
    case TSRNN_ATTRIBUTE_DAY:
        return f->day - 1;
    case TSRNN_ATTRIBUTE_HOUR:
        return f->hour;
    case TSRNN_ATTRIBUTE_MINUTE:
        return f->minute;
    case TSRNN_ATTRIBUTE_SECOND:
        return f->second;
    case TSRNN_ATTRIBUTE_DAYOFWEEK:
        return f->dayofweek;
    case TSRNN_ATTRIBUTE_DAYOFYEAR:
        return f->dayofyear - 1;
    case TSRNN_ATTRIBUTE_QUARTER:
        return (f->month - 1) / 3;
    case TSRNN_ATTRIBUTE_WEEK:
        return f->week - 1;
    case TSRNN_ATTRIBUTE_RELATIVE:
        return 0;
    }
    return 0;
}

/* Darts' periods of dayofyear and week look at the whole index being encoded. */
struct index_facts {
    bool leap_year;  /* some stamp lies in a leap year */
    bool extra_week; /* a year of the index has 53 ISO weeks, and the index spans a year */
};

static void index_facts(struct index_facts *facts, const int64_t *times, size_t length)
{
    memset(facts, 0, sizeof(*facts));
    bool long_year = false;
    int64_t previous_year = INT64_MIN;
    for (size_t i = 0; i < length; i++) {
        struct stamp_fields f;
        stamp_fields(&f, times[i]);
        if (f.year == previous_year)
            continue;
        previous_year = f.year;
        bool leap = tsrnn_is_leap_year(f.year);
        int january_first = tsrnn_weekday(tsrnn_days_from_civil(f.year, 1, 1));
        facts->leap_year |= leap;
        long_year |= leap ? january_first == 2 : january_first == 3; /* Wednesday, Thursday */
    }
    /* time_index[-1] - time_index[0] + 1 day >= 365 days */
    bool spans_year = length > 0 && times[length - 1] - times[0] + TSRNN_SECONDS_PER_DAY >=
                                        365 * (int64_t)TSRNN_SECONDS_PER_DAY;
    facts->extra_week = long_year && spans_year;
}

static int period(enum tsrnn_datetime_attribute a, const struct index_facts *facts)
{
    int p = base_period(a);
    if (a == TSRNN_ATTRIBUTE_DAYOFYEAR && facts->leap_year)
        p++;
    if (a == TSRNN_ATTRIBUTE_WEEK && facts->extra_week)
        p++;
    return p;
}

/* Darts: freq = 2 pi / period (Python floats), np.sin(freq * values) in float64. For "day"
 * the period is each stamp's month length: 2 * np.pi * np.reciprocal(days.astype(float32))
 * is float32 (NumPy 2 keeps the array's type), and only its product with the values is
 * float64. */
static void write_cyclic(float *row, const struct stamp_fields *f, enum tsrnn_datetime_attribute a,
                         const struct index_facts *facts)
{
    double value = (double)attribute_value(f, a), angle;
    if (a == TSRNN_ATTRIBUTE_DAY) {
        float reciprocal = 1.0f / (float)tsrnn_days_in_month(f->year, f->month);
        angle = (double)((float)(2 * M_PI) * reciprocal) * value;
    } else {
        angle = 2 * M_PI / (double)period(a, facts) * value;
    }
    row[0] = (float)sin(angle);
    row[1] = (float)cos(angle);
}

enum tsrnn_status tsrnn_encoders_compute(float *out, size_t row_stride,
                                         const struct tsrnn_encoder *encoders, size_t encoder_count,
                                         const struct tsrnn_freq *freq, enum tsrnn_time_unit unit,
                                         int64_t first, size_t length, int64_t reference)
{
    for (size_t e = 0; e < encoder_count; e++)
        if (unit == TSRNN_TIME_INDEX && tsrnn_encoder_needs_dates(&encoders[e]))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "the %s encoder '%s' needs dates, but the series has an "
                               "integer index; accepted there: position = relative",
                               tsrnn_encoder_kind_name(encoders[e].kind), encoders[e].name);
    enum tsrnn_status status = TSRNN_OK;
    int64_t *times = malloc((length > 0 ? length : 1) * sizeof(*times));
    if (times == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu covariate stamps", length);
    for (size_t i = 0; i < length; i++)
        if (!tsrnn_freq_advance(freq, first, (int64_t)i, &times[i])) {
            status = tsrnn_error(TSRNN_ERR_DATA,
                                 "the covariates' %zu stamps pass the last one tsrnn writes (the "
                                 "year 9999 or the largest integer index)",
                                 length);
            goto out;
        }
    struct index_facts facts;
    index_facts(&facts, times, unit == TSRNN_TIME_INDEX ? 0 : length);

    for (size_t i = 0; i < length; i++) {
        struct stamp_fields f = { 0 };
        if (unit != TSRNN_TIME_INDEX)
            stamp_fields(&f, times[i]);
        float *row = out + i * row_stride;
        for (size_t e = 0; e < encoder_count; e++) {
            const struct tsrnn_encoder *enc = &encoders[e];
            size_t width = tsrnn_encoder_width(enc);
            switch (enc->kind) {
            case TSRNN_ENCODER_CYCLIC:
                write_cyclic(row, &f, enc->attribute, &facts);
                break;
            case TSRNN_ENCODER_ATTRIBUTE:
                row[0] = (float)attribute_value(&f, enc->attribute);
                break;
            case TSRNN_ENCODER_ONE_HOT:
                for (size_t j = 0; j < width; j++)
                    row[j] = (int64_t)j == attribute_value(&f, enc->attribute) ? 1.0f : 0.0f;
                break;
            case TSRNN_ENCODER_POSITION:
                row[0] = (float)((int64_t)i - reference);
                break;
            }
            row += width;
        }
    }
out:
    free(times);
    return status;
}

/* The user's covariate columns of points [first, first + length) into out's first Kc
 * columns; they exist for the series' own points only. */
static enum tsrnn_status copy_columns(float *out, const struct tsrnn_covariates *cov,
                                      const struct tsrnn_series *series, const char *id,
                                      size_t first, size_t length)
{
    size_t Kc = cov->column_count, K = cov->count, L = series->length;
    if (Kc == 0)
        return TSRNN_OK;
    if (series->covariate_count != Kc)
        return tsrnn_error(
            TSRNN_ERR_DATA, "the series has %zu covariate columns; the model takes %zu (%s%s)",
            series->covariate_count, Kc, cov->column_names[0], Kc > 1 ? ", ..." : "");
    if (first + length > L) {
        char last[64], from[64], to[64], names[256] = "", which[TSRNN_NAME_MAX + 16] = "";
        if (id != NULL && id[0] != '\0')
            snprintf(which, sizeof(which), " of series '%s'", id);
        size_t used = 0;
        for (size_t k = 0; k < Kc && used < sizeof(names); k++)
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s'%s'", k ? ", " : "",
                                     cov->column_names[k]);
        int64_t t_from, t_to;
        bool ok = tsrnn_freq_advance(&series->freq, series->times[0],
                                     (int64_t)(first > L ? first : L), &t_from) &&
                  tsrnn_freq_advance(&series->freq, series->times[0], (int64_t)(first + length - 1),
                                     &t_to);
        tsrnn_time_format(series->times[L - 1], series->time_unit, last, sizeof(last));
        tsrnn_time_format(ok ? t_from : 0, series->time_unit, from, sizeof(from));
        tsrnn_time_format(ok ? t_to : 0, series->time_unit, to, sizeof(to));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "the covariate columns %s%s end at %s, but the forecast needs them "
                           "up to %s: the %zu dates %s .. %s are missing; accepted: a forecast "
                           "within the data file's dates, or covariates from encoders only",
                           names, which, last, to, first + length - (first > L ? first : L), from,
                           to);
    }
    for (size_t i = 0; i < length; i++)
        memcpy(out + i * K, series->covariates + (first + i) * Kc, Kc * sizeof(float));
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_covariates_compute(float *out, const struct tsrnn_covariates *cov,
                                           const struct tsrnn_scaler *scaler,
                                           const struct tsrnn_series *series, const char *id,
                                           size_t first, size_t length, size_t reference)
{
    int64_t start;
    TSRNN_TRY(copy_columns(out, cov, series, id, first, length));
    if (!tsrnn_freq_advance(&series->freq, series->times[0], (int64_t)first, &start))
        return tsrnn_error(TSRNN_ERR_DATA,
                           "the covariates' stamps pass the last one tsrnn writes (the year "
                           "9999 or the largest integer index)");
    TSRNN_TRY(tsrnn_encoders_compute(out + cov->column_count, cov->count, cov->encoders,
                                     cov->encoder_count, &series->freq, series->time_unit, start,
                                     length, (int64_t)reference - (int64_t)first));
    if (scaler != NULL)
        tsrnn_scaler_transform(scaler, out, length);
    return TSRNN_OK;
}
