/* One key's value (src/config/schema.h): its text checked for the key's type and range and
 * stored in struct tsrnn_config with where it came from; the defaults; the origins. What a
 * value means to the module that reads it is that module's to check (tsrnn_config_refuse()
 * gives it the same message shape). */
#include "schema.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* [forecast] quantiles: the most a list may hold (the message says 99). */
#define FORECAST_QUANTILES_MAX 99

static enum tsrnn_status bad_value(const struct config_key *k, const char *value,
                                   const char *origin, const char *why)
{
    char accepted[256], shown[512];
    config_describe_accepted(k, accepted, sizeof(accepted));
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

static bool in_range(const struct config_key *k, double v)
{
    if (k->open & MIN_OPEN ? v <= k->min : v < k->min)
        return false;
    if (k->open & MAX_OPEN ? v >= k->max : v > k->max)
        return false;
    return true;
}

/* Joins `value` to `base_dir` unless it is absolute. */
static enum tsrnn_status resolve_path(char *out, size_t capacity, const char *value,
                                      const char *base_dir, const struct config_key *k,
                                      const char *origin)
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
                                   const char *base_dir, const struct config_key *k,
                                   const char *origin)
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

static enum tsrnn_status set_columns(struct tsrnn_config *cfg, const struct config_key *k,
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
static enum tsrnn_status set_quantiles(struct tsrnn_config *cfg, const struct config_key *k,
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
            if (++count > FORECAST_QUANTILES_MAX)
                return bad_value(k, value, origin, "more than 99 quantiles");
        }
    }
    strcpy(config_field(cfg, k), value);
    return TSRNN_OK;
}

enum tsrnn_status config_set_key(struct tsrnn_config *cfg, const struct config_key *k,
                                 const char *value, const char *origin, const char *base_dir)
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
            *(int *)config_field(cfg, k) = (int)i;
        else
            *(uint64_t *)config_field(cfg, k) = (uint64_t)i;
        break;
    case KEY_DOUBLE:
        if (!parse_double(value, &d))
            return bad_value(k, value, origin, "not a finite number");
        if (!in_range(k, d))
            return bad_value(k, value, origin, "out of range");
        *(double *)config_field(cfg, k) = d;
        break;
    case KEY_OPTIONAL_DOUBLE:
        if (value[0] == '\0') {
            *(double *)config_field(cfg, k) = NAN;
            break;
        }
        if (!parse_double(value, &d))
            return bad_value(k, value, origin, "not a finite number");
        if (!in_range(k, d))
            return bad_value(k, value, origin, "out of range");
        *(double *)config_field(cfg, k) = d;
        break;
    case KEY_QUANTILES:
        TSRNN_TRY(set_quantiles(cfg, k, value, origin));
        break;
    case KEY_BOOL:
        if (!parse_bool(value, &b))
            return bad_value(k, value, origin, "not a boolean");
        *(bool *)config_field(cfg, k) = b;
        break;
    case KEY_ENUM: {
        int chosen = -1;
        for (int c = 0; k->choices[c] != NULL; c++)
            if (strcasecmp(value, k->choices[c]) == 0)
                chosen = c;
        if (chosen < 0)
            return bad_value(k, value, origin, "unknown value");
        *(int *)config_field(cfg, k) = chosen;
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
        strcpy(config_field(cfg, k), value);
        break;
    case KEY_PATH:
        TSRNN_TRY(resolve_path(config_field(cfg, k), k->capacity, value, base_dir, k, origin));
        break;
    case KEY_PATHS:
        TSRNN_TRY(set_paths(config_field(cfg, k), k->capacity, value, base_dir, k, origin));
        break;
    case KEY_RESUME:
        if (strcasecmp(value, "last") == 0 || strcasecmp(value, "best") == 0)
            snprintf(config_field(cfg, k), k->capacity, "%s",
                     strcasecmp(value, "last") ? "best" : "last");
        else
            TSRNN_TRY(resolve_path(config_field(cfg, k), k->capacity, value, base_dir, k, origin));
        break;
    case KEY_COLUMNS:
        TSRNN_TRY(set_columns(cfg, k, value, origin));
        break;
    }
    snprintf(cfg->origins[config_key_index(k)], TSRNN_ORIGIN_MAX, "%s", origin);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_config_set(struct tsrnn_config *cfg, const char *section, const char *key,
                                   const char *value, const char *origin, const char *base_dir)
{
    const struct config_key *k = config_find_key(section, key);
    if (k != NULL)
        return config_set_key(cfg, k, value, origin, base_dir);
    if (!config_known_section(section))
        return config_unknown_section(section, origin);
    return config_unknown_key(section, key, origin);
}

enum tsrnn_status tsrnn_config_init(struct tsrnn_config *cfg)
{
    char cwd[PATH_MAX];
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < config_key_count; i++) {
        if (config_keys[i].default_text != NULL)
            TSRNN_TRY(
                config_set_key(cfg, &config_keys[i], config_keys[i].default_text, "default", NULL));
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

const char *tsrnn_config_origin(const struct tsrnn_config *cfg, const char *section,
                                const char *key)
{
    const struct config_key *k = config_find_key(section, key);
    return k ? cfg->origins[config_key_index(k)] : NULL;
}

enum tsrnn_status tsrnn_config_refuse(const struct tsrnn_config *cfg, const char *section,
                                      const char *key, const char *why)
{
    const struct config_key *k = config_find_key(section, key);
    char value[TSRNN_MAX_COMPONENTS * TSRNN_NAME_MAX + PATH_MAX];
    config_format_value(cfg, k, value, sizeof(value));
    return bad_value(k, value, cfg->origins[config_key_index(k)], why);
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
