/* The configuration schema and its parser (include/tsrnn/config.h).
 *
 * One table, `schema`, is the single source of truth for every key: its section, name, type,
 * where it lives in struct tsrnn_config, its default (as text, parsed like any other value),
 * its range and the sentence that tells a user what is accepted. Defaults, the INI parser,
 * --set, --print-config and the error messages all read that table.
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
#include <ini.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum key_type {
    KEY_INT,     /* int, range [min, max] */
    KEY_U64,     /* uint64_t, range [min, max] */
    KEY_DOUBLE,  /* double, range [min, max] or open ends */
    KEY_BOOL,    /* bool: true/false, yes/no, on/off, 1/0 */
    KEY_ENUM,    /* int-sized enum: index into choices[] */
    KEY_STRING,  /* char[capacity] */
    KEY_FOLDER,  /* char[capacity]: one non-empty folder name, no '/' */
    KEY_PATH,    /* char[PATH_MAX], resolved to an absolute path */
    KEY_COLUMNS, /* value_cols: comma list into value_cols[][] */
    KEY_DEVICES, /* "auto", "-1", "N" or "i,j,...", kept as text */
    KEY_RESUME,  /* char[PATH_MAX]: "", "last", "best", or a path resolved like KEY_PATH */
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
};

static const char *const model_choices[] = { "RNN", "LSTM", "GRU", NULL };
static const char *const scaler_choices[] = { "minmax", "none", NULL };
static const char *const accelerator_choices[] = { "auto", "cpu", "gpu", NULL };

#define FIELD(f) offsetof(struct tsrnn_config, f)
#define SIZE(f)  sizeof(((struct tsrnn_config *)0)->f)

/* One line per key; ranges are closed unless a MIN_OPEN/MAX_OPEN flag says otherwise. */
#define INT(sec, key, f, def, lo, hi)                                                              \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_INT, .offset = FIELD(f), .default_text = def,     \
        .min = lo, .max = hi                                                                       \
    }
#define U64(sec, key, f, def, lo, hi)                                                              \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_U64, .offset = FIELD(f), .default_text = def,     \
        .min = lo, .max = hi                                                                       \
    }
#define DOUBLE(sec, key, f, def, lo, hi, bounds)                                                   \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_DOUBLE, .offset = FIELD(f), .default_text = def,  \
        .min = lo, .max = hi, .open = bounds                                                       \
    }
#define BOOL(sec, key, f, def)                                                                     \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_BOOL, .offset = FIELD(f), .default_text = def     \
    }
#define ENUM(sec, key, f, def, names)                                                              \
    {                                                                                              \
        .section = sec, .name = key, .type = KEY_ENUM, .offset = FIELD(f), .default_text = def,    \
        .choices = names                                                                           \
    }
#define TEXT(sec, key, type_, f, def, what)                                                        \
    {                                                                                              \
        .section = sec, .name = key, .type = type_, .offset = FIELD(f), .capacity = SIZE(f),       \
        .default_text = def, .accepted = what                                                      \
    }
#define MIN_OPEN 1
#define MAX_OPEN 2

static const struct key schema[] = {
    TEXT("data", "path", KEY_PATH, data_path, "",
         "the path of a CSV file (relative to the INI file's folder)"),
    TEXT("data", "time_col", KEY_STRING, time_col, "",
         "a column name, or nothing for an integer index"),
    TEXT("data", "value_cols", KEY_COLUMNS, value_cols, "",
         "a comma-separated list of column names, or nothing for every column but time_col"),
    TEXT("data", "split_after", KEY_STRING, split_after, "",
         "a time stamp (YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS]) or an integer index"),
    DOUBLE("data", "val_fraction", val_fraction, "0", 0, 1, MAX_OPEN),
    ENUM("data", "scaler", scaler, "minmax", scaler_choices),

    ENUM("model", "model", model, "RNN", model_choices),
    INT("model", "hidden_dim", hidden_dim, "25", 1, 65536),
    INT("model", "n_rnn_layers", n_rnn_layers, "1", 1, 64),
    DOUBLE("model", "dropout", dropout, "0", 0, 1, MAX_OPEN),
    INT("model", "training_length", training_length, "24", 1, 1000000),
    INT("model", "input_chunk_length", input_chunk_length, "12", 1, 1000000),
    TEXT("model", "init_weights", KEY_PATH, init_weights, "",
         "the path of a .safetensors file, or nothing for PyTorch's default initialisation"),

    INT("training", "batch_size", batch_size, "32", 1, 1048576),
    INT("training", "n_epochs", n_epochs, "100", 1, 100000000),
    INT("training", "max_steps", max_steps, "-1", -1, 2147483647),
    DOUBLE("training", "lr", lr, "0.001", 0, 1e6, MIN_OPEN),
    U64("training", "random_state", random_state, "0", 0, 4294967295.0),
    BOOL("training", "shuffle", shuffle, "true"),
    TEXT("training", "resume", KEY_RESUME, resume, "",
         "last, best, the path of a checkpoint (.safetensors), or nothing to start afresh"),

    ENUM("trainer", "accelerator", accelerator, "auto", accelerator_choices),
    TEXT("trainer", "devices", KEY_DEVICES, devices, "auto",
         "auto, -1 (every device), a count N >= 1, or a list of device indices like 0,2"),
    INT("trainer", "num_threads", num_threads, "1", 1, 1024),
    DOUBLE("trainer", "timeout_s", timeout_s, "60", 0, 86400, MIN_OPEN),
    INT("trainer", "max_restarts", max_restarts, "0", 0, 1000),

    TEXT("output", "work_dir", KEY_PATH, work_dir, NULL,
         "a folder path (relative to the INI file's folder)"),
    TEXT("output", "model_name", KEY_FOLDER, model_name, NULL,
         "a non-empty folder name without '/'"),
    BOOL("output", "force_reset", force_reset, "false"),
    BOOL("output", "save_checkpoints", save_checkpoints, "false"),
    BOOL("output", "log_tensorboard", log_tensorboard, "false"),

    INT("forecast", "n", forecast_n, "0", 0, 100000000),
    BOOL("forecast", "plot", forecast_plot, "true"),
};

#define KEY_COUNT (sizeof(schema) / sizeof(schema[0]))
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
    case KEY_RESUME:
    case KEY_COLUMNS:
    case KEY_DEVICES:
        snprintf(out, capacity, "%s", k->accepted);
        break;
    }
}

static enum tsrnn_status bad_value(const struct key *k, const char *value, const char *origin,
                                   const char *why)
{
    char accepted[256];
    describe_accepted(k, accepted, sizeof(accepted));
    return tsrnn_error(TSRNN_ERR_USAGE, "%s: [%s] %s = '%s': %s; accepted: %s", origin, k->section,
                       k->name, value, why, accepted);
}

static bool parse_double(const char *text, double *out)
{
    char *end;
    if (*text == '\0')
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

enum tsrnn_status tsrnn_config_parse_file(struct tsrnn_config *cfg, const char *ini_path)
{
    char base_dir[PATH_MAX];
    FILE *file = fopen(ini_path, "r");

    if (file == NULL)
        return tsrnn_error_errno(TSRNN_ERR_USAGE, errno, "cannot open config file %s", ini_path);
    /* fopen() succeeds on a folder; the first read does not. */
    int c = fgetc(file);
    if (c == EOF && ferror(file)) {
        int err = errno;
        fclose(file);
        return tsrnn_error_errno(TSRNN_ERR_USAGE, err, "cannot read config file %s", ini_path);
    }
    if (c != EOF)
        ungetc(c, file);

    enum tsrnn_status status = folder_of(ini_path, base_dir, sizeof(base_dir));
    if (status == TSRNN_OK)
        status = parse_stream(cfg, file, ini_path, base_dir);
    fclose(file);
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

static enum tsrnn_status check_readable(const struct tsrnn_config *cfg, const char *section,
                                        const char *key, const char *path, const char *what)
{
    const char *origin = tsrnn_config_origin(cfg, section, key);
    FILE *f = fopen(path, "r");
    int open_err = errno;
    path = tsrnn_display_path(path);
    if (f == NULL)
        return tsrnn_error_errno(TSRNN_ERR_USAGE, open_err, "%s: [%s] %s: cannot open %s %s",
                                 origin, section, key, what, path);
    int c = fgetc(f);
    int err = errno;
    bool bad = c == EOF && ferror(f);
    fclose(f);
    if (bad)
        return tsrnn_error_errno(TSRNN_ERR_USAGE, err, "%s: [%s] %s: cannot read %s %s", origin,
                                 section, key, what, path);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_config_validate(const struct tsrnn_config *cfg)
{
    if (cfg->data_path[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "[data] path is not set; add 'path = your_series.csv' under [data]");
    TSRNN_TRY(check_readable(cfg, "data", "path", cfg->data_path, "data file"));
    if (cfg->init_weights[0] != '\0')
        TSRNN_TRY(check_readable(cfg, "model", "init_weights", cfg->init_weights, "weights file"));
    if (cfg->resume[0] == '/')
        TSRNN_TRY(check_readable(cfg, "training", "resume", cfg->resume, "checkpoint"));
    /* force_reset deletes the run folder, and with it the checkpoint resume would load. */
    if (cfg->force_reset && (strcmp(cfg->resume, "last") == 0 || strcmp(cfg->resume, "best") == 0))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [training] resume = %s, but [output] force_reset = true (%s) "
                           "deletes that checkpoint; accepted: one of them (to resume, also "
                           "--set output.force_reset=false)",
                           tsrnn_config_origin(cfg, "training", "resume"), cfg->resume,
                           tsrnn_config_origin(cfg, "output", "force_reset"));

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
    case KEY_BOOL:
        snprintf(out, capacity, "%s", *(const bool *)cfield(cfg, k) ? "true" : "false");
        break;
    case KEY_ENUM:
        snprintf(out, capacity, "%s", k->choices[*(const int *)cfield(cfg, k)]);
        break;
    case KEY_STRING:
    case KEY_FOLDER:
    case KEY_PATH:
    case KEY_RESUME:
    case KEY_DEVICES:
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
