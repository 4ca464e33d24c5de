/* Random inputs: the CSV reader and the INI parser either accept a text or refuse it with a
 * message; they never crash, hang or leak (this program also runs under ASan + UBSan in
 * scripts/test.sh). Inputs are built from the characters that matter to each format, from a
 * fixed seed, so a failure reproduces. Most are near a valid input, so that both outcomes are
 * common: what is accepted must be sound, and for INI files made from the example the outcome
 * and the first error are predicted. */
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "src/core/rng.h"
#include "testutil.h"
#include "tsrnn/config.h"
#include "tsrnn/data.h"

#define ROUNDS 1500

static void random_text(struct tsrnn_rng *rng, const char *alphabet, const char *const *words,
                        size_t word_count, char *out, size_t capacity)
{
    size_t len = (size_t)tsrnn_rng_below(rng, capacity / 8);
    size_t used = 0;
    size_t alphabet_count = strlen(alphabet);
    while (used < len && used + 32 < capacity) {
        if (tsrnn_rng_below(rng, 3) == 0) {
            const char *w = words[tsrnn_rng_below(rng, word_count)];
            size_t n = strlen(w);
            memcpy(out + used, w, n);
            used += n;
        } else {
            out[used++] = alphabet[tsrnn_rng_below(rng, alphabet_count)];
        }
    }
    out[used] = '\0';
}

static void test_random_csv(void **state)
{
    (void)state;
    static const char *const words[] = { "Month,v\n", "1949-01",      "1949-02-28", "12:30", "\r\n",
                                         "\"",        "\"\"",         ",",          "nan",   "1e39",
                                         "-3.5",      "\xEF\xBB\xBF", "2001",       "\n\n",  " " };
    char *dir = tu_mkdtemp();
    char text[4096];
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 2024, 0);
    size_t accepted = 0, filled = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (round % 2 == 0) {
            /* row-shaped text: mostly good rows, now and then one random field */
            size_t used = (size_t)snprintf(text, sizeof(text), "Month,v\n");
            size_t rows = 1 + (size_t)tsrnn_rng_below(&rng, 40);
            for (size_t r = 0; r < rows && used + 64 < sizeof(text); r++) {
                char field[256]; /* random_text() fills at most an eighth of it */
                random_text(&rng, "0123456789-,.:\" \rx", words, sizeof(words) / sizeof(words[0]),
                            field, sizeof(field));
                bool corrupt = tsrnn_rng_below(&rng, 60) == 0;
                /* now and then a month left out, or a value missing */
                if (tsrnn_rng_below(&rng, 30) == 0)
                    continue;
                const char *value = tsrnn_rng_below(&rng, 30) == 0 ? "NaN" : "1.5";
                used += (size_t)snprintf(text + used, sizeof(text) - used, "%d-%02zu,%s\n",
                                         1949 + (int)(r / 12), r % 12 + 1, corrupt ? field : value);
            }
        } else {
            random_text(&rng, "0123456789-,.:\" \n\rMvtx", words, sizeof(words) / sizeof(words[0]),
                        text, sizeof(text));
        }
        const char *path = tu_write(dir, "r.csv", text);
        struct tsrnn_series s;
        const char *time_col = round % 3 == 0 ? "" : "Month";
        /* Half the row-shaped rounds insert missing dates and fill missing values. */
        struct tsrnn_series_options fill = {
            .fill_missing_dates = true,
            .fill_missing_values = TSRNN_FILL_MISSING_INTERPOLATE,
        };
        enum tsrnn_status status =
            tsrnn_series_load_csv(&s, path, time_col, NULL, 0, round % 4 == 2 ? &fill : NULL);
        if (status == TSRNN_OK) {
            accepted++;
            filled += s.inserted_count + s.filled_count > 0;
            assert_true(s.component_count >= 1);
            /* one frequency, every value finite */
            for (size_t t = 1; t < s.length; t++) {
                int64_t next;
                assert_true(tsrnn_freq_advance(&s.freq, s.times[t - 1], 1, &next));
                assert_true(s.times[t] == next);
            }
            for (size_t i = 0; i < s.length * s.component_count; i++)
                assert_true(isfinite(s.values[i]));
            tsrnn_series_finish(&s);
        } else {
            assert_int_equal(status, TSRNN_ERR_DATA);
            assert_true(strlen(tsrnn_last_error()) > 0);
            assert_null(s.values);
        }
    }
    /* the generator must reach both outcomes, or this test tests nothing */
    assert_true(accepted > 10);
    assert_true(accepted < ROUNDS - 10);
    printf("# random CSV: %zu accepted, %zu of them filled\n", accepted, filled);
    assert_true(filled > 10);
    tu_rmtree(dir);
    free(dir);
}

/* --- random INI files ----------------------------------------------------------------- */

enum ini_kind {
    INI_TEXT,    /* printed back as written */
    INI_NUMBER,  /* printed back as the same number, maybe spelled otherwise (1e-3: 0.001) */
    INI_BOOL,    /* printed back as true or false */
    INI_ENUM,    /* printed back in the schema's spelling */
    INI_COLUMNS, /* printed back without the blanks around each name */
    INI_PATH,    /* printed back joined to the INI file's folder; checked by validation */
};

#define X10       "xxxxxxxxxx"
#define LONG_TEXT X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 /* 130 bytes */

/* Every key of the schema (src/config/config.c), with values its documented range or format
 * accepts and values it refuses. A copy on purpose: a change to a range or a default must be
 * made here as well, knowingly. `example` is the value examples/air_passengers.ini gives it
 * (NULL: the example leaves the key out), `fallback` its default when the file leaves it out,
 * which the cross-key rules need. */
struct ini_key {
    const char *section, *name;
    enum ini_kind kind;
    const char *example, *fallback;
    const char *valid[6];
    const char *invalid[7];
};

static const struct ini_key ini_keys[] = {
    { "data", "path", INI_PATH, "s.csv", "", { "s.csv", "./s.csv" }, { "", "missing.csv", "." } },
    { "data", "time_col", INI_TEXT, "Month", "", { "", "t", "Month", "a b" }, { LONG_TEXT } },
    { "data",
      "value_cols",
      INI_COLUMNS,
      "#Passengers",
      "",
      { "", "v", "a,b", "a , b", "#Passengers" },
      { "a,,b", "a,a", ",", LONG_TEXT } },
    { "data",
      "freq",
      INI_TEXT,
      NULL,
      "",
      { "", "MS", "2W-MON", "15min", "QE-NOV", "7" },
      { "M", "H", "0D", "ms", "W-sun", "x" } },
    { "data",
      "fill_missing_dates",
      INI_BOOL,
      NULL,
      "false",
      { "true", "false", "Yes", "0" },
      { "maybe", "" } },
    { "data",
      "fill_missing_values",
      INI_ENUM,
      NULL,
      "none",
      { "none", "interpolate", "Interpolate" },
      { "auto", "", "linear" } },
    { "data",
      "split_after",
      INI_TEXT,
      "1959-01",
      "",
      { "", "1959-01", "100", "1960-12-31 23:59" },
      { LONG_TEXT } },
    { "data",
      "val_fraction",
      INI_NUMBER,
      NULL,
      "0",
      { "0", "0.1", "0.25", "0.999" },
      { "1", "-0.1", "nan", "inf", "", "0.5x" } },
    { "data",
      "scaler",
      INI_ENUM,
      "minmax",
      "minmax",
      { "minmax", "none", "MinMax" },
      { "std", "", "min max" } },
    { "model",
      "model",
      INI_ENUM,
      "RNN",
      "RNN",
      { "RNN", "LSTM", "GRU", "gru" },
      { "Transformer", "", "RNN,GRU" } },
    { "model",
      "hidden_dim",
      INI_NUMBER,
      "20",
      "25",
      { "1", "20", "65536" },
      { "0", "65537", "-3", "2.5", "", "99999999999999999999" } },
    { "model", "n_rnn_layers", INI_NUMBER, "1", "1", { "1", "2", "64" }, { "0", "65", "two" } },
    { "model",
      "dropout",
      INI_NUMBER,
      "0",
      "0",
      { "0", "0.2", "0.999" },
      { "1", "-0.5", "inf", "nan" } },
    { "model",
      "training_length",
      INI_NUMBER,
      "20",
      "24",
      { "1", "14", "20", "1000000" },
      { "0", "1000001", "1e3" } },
    { "model",
      "input_chunk_length",
      INI_NUMBER,
      "14",
      "12",
      { "1", "14", "20", "21", "24" },
      { "0", "-14", "x" } },
    { "model",
      "init_weights",
      INI_PATH,
      NULL,
      "",
      { "", "s.csv" },
      { "missing.safetensors", "." } },
    { "training",
      "batch_size",
      INI_NUMBER,
      "16",
      "32",
      { "1", "16", "1048576" },
      { "0", "1048577", "" } },
    { "training",
      "n_epochs",
      INI_NUMBER,
      "300",
      "100",
      { "1", "300", "100000000" },
      { "0", "-1", "100000001" } },
    { "training",
      "max_steps",
      INI_NUMBER,
      NULL,
      "-1",
      { "-1", "0", "2147483647" },
      { "-2", "2147483648" } },
    { "training",
      "lr",
      INI_NUMBER,
      "1e-3",
      "0.001",
      { "1e-3", "0.5", "1e6", "1E-8", "0.00123456789012345" },
      { "0", "-1e-3", "1e7", "nan", "1e400" } },
    { "training",
      "random_state",
      INI_NUMBER,
      "42",
      "0",
      { "0", "42", "4294967295" },
      { "-1", "4294967296", "4.2" } },
    { "training",
      "shuffle",
      INI_BOOL,
      "true",
      "true",
      { "true", "no", "ON", "0", "Yes" },
      { "maybe", "2", "" } },
    { "training",
      "resume",
      INI_PATH,
      NULL,
      "",
      { "", "last", "best", "s.csv" },
      { "missing.safetensors", "." } },
    { "trainer",
      "accelerator",
      INI_ENUM,
      "auto",
      "auto",
      { "auto", "cpu", "gpu", "CPU" },
      { "ipu", "" } },
    { "trainer",
      "devices",
      INI_TEXT,
      "-1",
      "auto",
      { "auto", "-1", "4", "0,2", "0, 2" },
      { "0", "-2", "1,1", "4097", "a", "0,,1", "" } },
    { "trainer", "num_threads", INI_NUMBER, "1", "1", { "1", "8", "1024" }, { "0", "1025" } },
    { "trainer",
      "timeout_s",
      INI_NUMBER,
      NULL,
      "60",
      { "0.5", "60", "86400", "1e-3" },
      { "0", "86400.5", "-1", "nan" } },
    { "trainer", "max_restarts", INI_NUMBER, NULL, "0", { "0", "3", "1000" }, { "-1", "1001" } },
    { "output", "work_dir", INI_PATH, NULL, NULL, { "runs", "a/b/c" }, { NULL } },
    { "output",
      "model_name",
      INI_TEXT,
      "Air_RNN",
      NULL,
      { "Air_RNN", "run 1", "x.y" },
      { "", "a/b", ".", "..", LONG_TEXT } },
    { "output",
      "force_reset",
      INI_BOOL,
      "true",
      "false",
      { "true", "false", "off", "1" },
      { "2", "truee" } },
    { "output", "save_checkpoints", INI_BOOL, "true", "false", { "true", "false" }, { "y" } },
    { "output", "log_tensorboard", INI_BOOL, "true", "false", { "true", "false" }, { "-1" } },
    { "forecast",
      "n",
      INI_NUMBER,
      "24",
      "0",
      { "0", "24", "100000000" },
      { "-1", "100000001", "24.0" } },
    { "forecast", "plot", INI_BOOL, NULL, "true", { "true", "false" }, { "plot" } },
};

#define INI_KEY_COUNT (sizeof(ini_keys) / sizeof(ini_keys[0]))

static const char *const ini_sections[] = { "data",    "model",  "training",
                                            "trainer", "output", "forecast" };

/* A line the parser must refuse, added to a section (-1: above the first one). */
struct ini_extra {
    int section;
    char line[192];
    char needle[192]; /* what the error message must say */
};

/* One generated file: the example with a few keys changed, left out, doubled or misplaced,
 * and the first error the parser must report, if any. */
struct ini_round {
    const char *value[INI_KEY_COUNT]; /* NULL: the key's line is left out */
    bool invalid[INI_KEY_COUNT];      /* value drawn from the key's invalid set */
    bool touched[INI_KEY_COUNT];      /* one mutation per key, so mutations do not interact */
    struct ini_extra extras[4];
    size_t extra_count;
    int line_of[INI_KEY_COUNT]; /* the line the key was written on; 0: not written */
    /* The first error the worker must report: its line (a parse error) or 1000000 + its
     * place in the order of the checks after parsing (tsrnn_config_validate()'s, then
     * tsrnn_data_check_config()'s: a cross-key, file or frequency error); 0: none. */
    int cause_line;
    char cause[192];
};

static size_t count_of(const char *const *values, size_t capacity)
{
    size_t n = 0;
    while (n < capacity && values[n] != NULL)
        n++;
    return n;
}

static int section_index(const char *section)
{
    for (int s = 0; s < 6; s++)
        if (strcmp(ini_sections[s], section) == 0)
            return s;
    fail_msg("unknown section %s in the test's table", section);
    return -1;
}

static bool ini_true(const char *text)
{
    return strcasecmp(text, "true") == 0 || strcasecmp(text, "yes") == 0 ||
           strcasecmp(text, "on") == 0 || strcmp(text, "1") == 0;
}

static void note_cause(struct ini_round *r, int line, const char *needle)
{
    if (r->cause_line == 0 || line < r->cause_line) {
        r->cause_line = line;
        snprintf(r->cause, sizeof(r->cause), "%s", needle);
    }
}

static struct ini_extra *add_extra(struct ini_round *r, int section)
{
    assert_true(r->extra_count < sizeof(r->extras) / sizeof(r->extras[0]));
    struct ini_extra *e = &r->extras[r->extra_count++];
    e->section = section;
    return e;
}

/* Changes one untouched key of `r`: a valid or an invalid value, left out, or a line the
 * parser must refuse (an unknown key or section, the key twice, under another section,
 * before any section, without '='). */
static void mutate(struct ini_round *r, struct tsrnn_rng *rng)
{
    size_t k;
    do
        k = (size_t)tsrnn_rng_below(rng, INI_KEY_COUNT);
    while (r->touched[k]);
    r->touched[k] = true;
    const struct ini_key *key = &ini_keys[k];
    int section = section_index(key->section);
    size_t valid_count = count_of(key->valid, 6), invalid_count = count_of(key->invalid, 7);
    struct ini_extra *e;

    /* Of 16: 6 a valid value (0-5), 5 an invalid one (6-10), then one each: the line left
     * out, an unknown key, the key under another section, the key twice, a broken line. */
    unsigned kind = (unsigned)tsrnn_rng_below(rng, 16);
    if (kind >= 6 && kind <= 10 && invalid_count == 0)
        kind = 0;
    if ((kind == 13 || kind == 14) && r->value[k] == NULL)
        kind = 0;
    switch (kind) {
    case 11:
        r->value[k] = NULL;
        return;
    case 12:
        e = add_extra(r, section);
        snprintf(e->line, sizeof(e->line), "%s_typo = 1", key->name);
        snprintf(e->needle, sizeof(e->needle), "unknown key '%s_typo' in [%s]", key->name,
                 key->section);
        return;
    case 13: {
        int other = (section + 1 + (int)tsrnn_rng_below(rng, 5)) % 6;
        e = add_extra(r, other);
        snprintf(e->line, sizeof(e->line), "%s = %s", key->name, r->value[k]);
        snprintf(e->needle, sizeof(e->needle), "unknown key '%s' in [%s]", key->name,
                 ini_sections[other]);
        r->value[k] = NULL;
        return;
    }
    case 14:
        e = add_extra(r, section);
        snprintf(e->line, sizeof(e->line), "%s = %s", key->name, r->value[k]);
        snprintf(e->needle, sizeof(e->needle), "duplicate key [%s] %s", key->section, key->name);
        return;
    case 15:
        switch (tsrnn_rng_below(rng, 3)) {
        case 0:
            e = add_extra(r, section);
            snprintf(e->line, sizeof(e->line), "[%s_typo]", key->section);
            snprintf(e->needle, sizeof(e->needle), "unknown section [%s_typo]", key->section);
            break;
        case 1:
            e = add_extra(r, -1);
            snprintf(e->line, sizeof(e->line), "%s = 1", key->name);
            snprintf(e->needle, sizeof(e->needle), "key '%s' appears before any [section]",
                     key->name);
            break;
        default:
            e = add_extra(r, section);
            snprintf(e->line, sizeof(e->line), "%s 1", key->name);
            snprintf(e->needle, sizeof(e->needle), "syntax error in '%s 1'", key->name);
            break;
        }
        return;
    default:
        if (kind >= 6 && kind <= 10) {
            r->value[k] = key->invalid[tsrnn_rng_below(rng, invalid_count)];
            r->invalid[k] = true;
        } else {
            r->value[k] = key->valid[tsrnn_rng_below(rng, valid_count)];
        }
        return;
    }
}

/* Appends one line to the file's text and returns its number. */
static int emit(char *text, size_t capacity, size_t *used, int *line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int emit(char *text, size_t capacity, size_t *used, int *line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text + *used, capacity - *used, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n + 1 < capacity - *used);
    *used += (size_t)n;
    text[(*used)++] = '\n';
    text[*used] = '\0';
    return ++*line;
}

static void emit_extras(struct ini_round *r, int section, char *text, size_t capacity, size_t *used,
                        int *line)
{
    for (size_t i = 0; i < r->extra_count; i++)
        if (r->extras[i].section == section)
            note_cause(r, emit(text, capacity, used, line, "%s", r->extras[i].line),
                       r->extras[i].needle);
}

/* Writes `r` as INI text, spelled in the ways the syntax allows (comments, blank lines, no
 * blanks around '=', upper-case names), recording each key's line and the parse errors. */
static void write_round(struct ini_round *r, struct tsrnn_rng *rng, char *text, size_t capacity)
{
    size_t used = 0;
    int line = 0;
    text[0] = '\0';
    if (tsrnn_rng_below(rng, 4) == 0)
        emit(text, capacity, &used, &line, "# generated by test_random_ini");
    emit_extras(r, -1, text, capacity, &used, &line);
    for (int s = 0; s < 6; s++) {
        char header[32];
        snprintf(header, sizeof(header), "%s", ini_sections[s]);
        if (tsrnn_rng_below(rng, 10) == 0)
            for (char *c = header; *c; c++)
                *c = (char)toupper((unsigned char)*c);
        if (s > 0 && tsrnn_rng_below(rng, 2) == 0)
            emit(text, capacity, &used, &line, "%s", "");
        emit(text, capacity, &used, &line, "[%s]", header);
        for (size_t k = 0; k < INI_KEY_COUNT; k++) {
            const struct ini_key *key = &ini_keys[k];
            if (strcmp(key->section, ini_sections[s]) != 0 || r->value[k] == NULL)
                continue;
            if (tsrnn_rng_below(rng, 10) == 0)
                emit(text, capacity, &used, &line, "%s", tsrnn_rng_below(rng, 2) ? "; x" : "#");
            char name[64];
            snprintf(name, sizeof(name), "%s", key->name);
            if (tsrnn_rng_below(rng, 8) == 0)
                for (char *c = name; *c; c++)
                    *c = (char)toupper((unsigned char)*c);
            static const char *const spellings[] = { "%s = %s", "%s=%s", "%s \t=  %s" };
            const char *spelling =
                spellings[tsrnn_rng_below(rng, 8) == 0 ? 1 + tsrnn_rng_below(rng, 2) : 0];
            char entry[256];
            snprintf(entry, sizeof(entry), spelling, name, r->value[k]);
            r->line_of[k] = emit(text, capacity, &used, &line, "%s", entry);
            /* paths and the frequency are checked after parsing */
            if (r->invalid[k] && key->kind != INI_PATH && strcmp(key->name, "freq") != 0) {
                char needle[128];
                snprintf(needle, sizeof(needle), "[%s] %s = '", key->section, key->name);
                note_cause(r, r->line_of[k], needle);
            }
        }
        emit_extras(r, s, text, capacity, &used, &line);
    }
}

/* The value a key ends up with when the file is parsed: its line's or its default. */
static const char *final_value(const struct ini_round *r, const char *name)
{
    for (size_t k = 0; k < INI_KEY_COUNT; k++)
        if (strcmp(ini_keys[k].name, name) == 0)
            return r->value[k] != NULL ? r->value[k] : ini_keys[k].fallback;
    fail_msg("no key %s in the test's table", name);
    return NULL;
}

static bool invalid_value(const struct ini_round *r, const char *name)
{
    for (size_t k = 0; k < INI_KEY_COUNT; k++)
        if (strcmp(ini_keys[k].name, name) == 0)
            return r->invalid[k];
    return false;
}

/* What the checks after parsing refuse, in their order: tsrnn_config_validate()'s (a path
 * not set, files that cannot be read, the rules that span keys), then
 * tsrnn_data_check_config()'s (the frequency, the data files). */
static void note_validation_causes(struct ini_round *r)
{
    if (final_value(r, "path")[0] == '\0')
        note_cause(r, 1000001, "[data] path");
    if (invalid_value(r, "init_weights"))
        note_cause(r, 1000002, "[model] init_weights: cannot");
    if (invalid_value(r, "resume"))
        note_cause(r, 1000003, "[training] resume: cannot");
    const char *resume = final_value(r, "resume");
    if (ini_true(final_value(r, "force_reset")) &&
        (strcmp(resume, "last") == 0 || strcmp(resume, "best") == 0))
        note_cause(r, 1000004, "[training] resume = ");
    if (atol(final_value(r, "training_length")) < atol(final_value(r, "input_chunk_length")))
        note_cause(r, 1000005, "[model] training_length = ");
    if (final_value(r, "split_after")[0] != '\0' &&
        strtod(final_value(r, "val_fraction"), NULL) > 0)
        note_cause(r, 1000006, "[data] val_fraction = ");
    if (invalid_value(r, "freq"))
        note_cause(r, 1000007, "[data] freq = '");
    if (invalid_value(r, "path"))
        note_cause(r, 1000008, "[data] path");
}

/* The value tsrnn_config_write() printed for [section] name. */
static void printed_value(const char *text, const char *section, const char *name, char *out,
                          size_t capacity)
{
    char header[64];
    snprintf(header, sizeof(header), "[%s]\n", section);
    const char *at = strstr(text, header);
    if (at == NULL)
        fail_msg("no %s in the printed config:\n%s", header, text);
    const char *next_section = strstr(at + 1, "\n[");
    size_t len = strlen(name);
    for (const char *line = at + strlen(header); *line != '\0' && line != next_section + 1;
         line = strchr(line, '\n') + 1) {
        if (strncmp(line, name, len) != 0 || strncmp(line + len, " =", 2) != 0)
            continue;
        const char *value = line + len + 2 + (line[len + 2] == ' ');
        snprintf(out, capacity, "%.*s", (int)strcspn(value, "\n"), value);
        return;
    }
    fail_msg("no [%s] %s in the printed config:\n%s", section, name, text);
}

/* Whether `printed` is what tsrnn_config_write() should print for `written`. */
static bool same_value(const struct ini_key *key, const char *written, const char *printed,
                       const char *real_dir)
{
    char expected[PATH_MAX + 256];
    size_t n = 0;
    switch (key->kind) {
    case INI_TEXT:
        return strcmp(written, printed) == 0;
    case INI_NUMBER:
        return strtod(written, NULL) == strtod(printed, NULL);
    case INI_BOOL:
        return strcmp(printed, ini_true(written) ? "true" : "false") == 0;
    case INI_ENUM:
        return strcasecmp(written, printed) == 0;
    case INI_COLUMNS:
        for (const char *c = written; *c; c++)
            if (*c != ' ')
                expected[n++] = *c;
        expected[n] = '\0';
        return strcmp(expected, printed) == 0;
    case INI_PATH:
        if (written[0] == '\0' || strcmp(written, "last") == 0 || strcmp(written, "best") == 0)
            return strcmp(written, printed) == 0;
        snprintf(expected, sizeof(expected), "%s/%s", real_dir, written);
        return strcmp(expected, printed) == 0;
    }
    return false;
}

#define SAME(field)                                                                                \
    do {                                                                                           \
        if (a->field != b->field)                                                                  \
            fail_msg("%s differs after printing the config and parsing it back", #field);          \
    } while (0)
#define SAME_TEXT(field)                                                                           \
    do {                                                                                           \
        if (strcmp(a->field, b->field) != 0)                                                       \
            fail_msg("%s: '%s', then '%s' after printing the config and parsing it back", #field,  \
                     a->field, b->field);                                                          \
    } while (0)

/* Every field of struct tsrnn_config but the origins (a new field belongs here too). */
static void assert_same_config(const struct tsrnn_config *a, const struct tsrnn_config *b)
{
    SAME_TEXT(data_path);
    SAME_TEXT(time_col);
    SAME(value_col_count);
    for (size_t i = 0; i < a->value_col_count; i++)
        SAME_TEXT(value_cols[i]);
    SAME_TEXT(freq);
    SAME(fill_missing_dates);
    SAME(fill_missing_values);
    SAME_TEXT(split_after);
    SAME(val_fraction);
    SAME(scaler);
    SAME(model);
    SAME(hidden_dim);
    SAME(n_rnn_layers);
    SAME(dropout);
    SAME(training_length);
    SAME(input_chunk_length);
    SAME_TEXT(init_weights);
    SAME(batch_size);
    SAME(n_epochs);
    SAME(max_steps);
    SAME(lr);
    SAME(random_state);
    SAME(shuffle);
    SAME_TEXT(resume);
    SAME(accelerator);
    SAME_TEXT(devices);
    SAME(num_threads);
    SAME(timeout_s);
    SAME(max_restarts);
    SAME_TEXT(work_dir);
    SAME_TEXT(model_name);
    SAME(force_reset);
    SAME(save_checkpoints);
    SAME(log_tensorboard);
    SAME(forecast_n);
    SAME(forecast_plot);
}

#define IN_RANGE(field, lo, hi)                                                                    \
    do {                                                                                           \
        if (!(cfg->field >= (lo) && cfg->field <= (hi)))                                           \
            fail_msg("accepted %s = %g, outside [%g, %g]", #field, (double)cfg->field,             \
                     (double)(lo), (double)(hi));                                                  \
    } while (0)

/* What every accepted config must satisfy, whatever the file said: each key within the range
 * the schema documents, the rules across keys, and tsrnn_config_write()'s text parsing back to
 * the same config. Returns the printed text; the caller frees it. */
static char *check_accepted(const struct tsrnn_config *cfg)
{
    assert_true(cfg->data_path[0] == '/');
    assert_true(cfg->value_col_count <= TSRNN_MAX_COMPONENTS);
    for (size_t i = 0; i < cfg->value_col_count; i++)
        assert_true(cfg->value_cols[i][0] != '\0');
    IN_RANGE(val_fraction, 0.0, nextafter(1.0, 0.0));
    IN_RANGE(scaler, TSRNN_SCALER_MINMAX, TSRNN_SCALER_NONE);
    IN_RANGE(fill_missing_values, TSRNN_FILL_MISSING_NONE, TSRNN_FILL_MISSING_INTERPOLATE);
    struct tsrnn_freq freq;
    assert_true(cfg->freq[0] == '\0' || tsrnn_freq_parse(&freq, cfg->freq));
    IN_RANGE(model, TSRNN_MODEL_RNN, TSRNN_MODEL_GRU);
    IN_RANGE(hidden_dim, 1, 65536);
    IN_RANGE(n_rnn_layers, 1, 64);
    IN_RANGE(dropout, 0.0, nextafter(1.0, 0.0));
    IN_RANGE(training_length, 1, 1000000);
    IN_RANGE(input_chunk_length, 1, cfg->training_length);
    IN_RANGE(batch_size, 1, 1048576);
    IN_RANGE(n_epochs, 1, 100000000);
    IN_RANGE(max_steps, -1, INT_MAX);
    IN_RANGE(lr, DBL_MIN * DBL_EPSILON, 1e6);
    assert_true(cfg->random_state <= UINT32_MAX); /* unsigned: no lower bound to check */
    IN_RANGE(accelerator, TSRNN_ACCELERATOR_AUTO, TSRNN_ACCELERATOR_TPU);
    assert_true(cfg->devices[0] != '\0');
    IN_RANGE(num_threads, 1, 1024);
    IN_RANGE(timeout_s, DBL_MIN * DBL_EPSILON, 86400);
    IN_RANGE(max_restarts, 0, 1000);
    assert_true(cfg->work_dir[0] == '/');
    assert_true(cfg->model_name[0] != '\0' && strchr(cfg->model_name, '/') == NULL);
    assert_true(strcmp(cfg->model_name, ".") != 0 && strcmp(cfg->model_name, "..") != 0);
    IN_RANGE(forecast_n, 0, 100000000);
    assert_false(cfg->split_after[0] != '\0' && cfg->val_fraction > 0);
    assert_false(cfg->force_reset &&
                 (strcmp(cfg->resume, "last") == 0 || strcmp(cfg->resume, "best") == 0));

    char *text = tsrnn_config_text(cfg);
    assert_non_null(text);
    struct tsrnn_config *again = malloc(sizeof(*again));
    assert_non_null(again);
    assert_int_equal(tsrnn_config_init(again), TSRNN_OK);
    if (tsrnn_config_parse_text(again, text, "printed") != TSRNN_OK ||
        tsrnn_config_validate(again) != TSRNN_OK || tsrnn_data_check_config(again) != TSRNN_OK)
        fail_msg("the printed config does not parse back: %s\n%s", tsrnn_last_error(), text);
    char *text_again = tsrnn_config_text(again);
    assert_non_null(text_again);
    assert_string_equal(text, text_again);
    assert_same_config(cfg, again);
    free(text_again);
    free(again);
    return text;
}

/* Every key the file set has its value and its line; every other key its default. */
static void check_keys(const struct tsrnn_config *cfg, const struct ini_round *r,
                       const char *printed, const char *ini, const char *real_dir,
                       const char *file_text)
{
    for (size_t k = 0; k < INI_KEY_COUNT; k++) {
        const struct ini_key *key = &ini_keys[k];
        char expected[PATH_MAX + 32], value[PATH_MAX + 256];
        if (r->line_of[k] != 0)
            snprintf(expected, sizeof(expected), "%s:%d", ini, r->line_of[k]);
        else
            snprintf(expected, sizeof(expected), "default");
        const char *origin = tsrnn_config_origin(cfg, key->section, key->name);
        assert_non_null(origin);
        if (strcmp(origin, expected) != 0)
            fail_msg("[%s] %s comes from '%s', expected '%s' in:\n%s", key->section, key->name,
                     origin, expected, file_text);
        if (r->line_of[k] == 0)
            continue;
        printed_value(printed, key->section, key->name, value, sizeof(value));
        if (!same_value(key, r->value[k], value, real_dir))
            fail_msg("[%s] %s = '%s' in the file, printed as '%s'", key->section, key->name,
                     r->value[k], value);
    }
}

static void test_random_ini(void **state)
{
    (void)state;
    static const char *const words[] = {
        "[data]\n",
        "[model]\n",
        "[training]\n",
        "[trainer]\n",
        "[output]\n",
        "[forecast]\n",
        "[modle]\n",
        "path = s.csv\n",
        "hidden_dim = ",
        "dropout = ",
        "model = ",
        "LSTM",
        "batch_size = ",
        "split_after = ",
        "value_cols = ",
        "n = ",
        "devices = ",
        "-1",
        "0,2",
        "training_length = ",
        "input_chunk_length = ",
        "lr = ",
        "1e-3",
        "nan",
        "\n",
        "=",
        ";",
        "#",
        "[",
        "]",
        " ",
        "\t",
        "true",
        "99999999999999999999",
    };
    char *dir = tu_mkdtemp();
    char real_dir[PATH_MAX];
    assert_non_null(realpath(dir, real_dir));
    tu_write(dir, "s.csv", "t,v\n1,1\n");
    static char text[8192];
    char ini[PATH_MAX];
    snprintf(ini, sizeof(ini), "%s/r.ini", dir);
    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 7, 0);
    size_t accepted = 0, refused = 0, predicted = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* three rounds in four: the example with 0-3 keys changed; else random text */
        bool structured = round % 4 != 3;
        struct ini_round r = { 0 };
        if (structured) {
            for (size_t k = 0; k < INI_KEY_COUNT; k++)
                r.value[k] = ini_keys[k].example;
            for (uint64_t m = tsrnn_rng_below(&rng, 4); m > 0; m--)
                mutate(&r, &rng);
            write_round(&r, &rng, text, sizeof(text));
            note_validation_causes(&r);
            predicted++;
        } else {
            random_text(&rng, "abcdehilmnoprstu_=[] 0123456789.\n", words,
                        sizeof(words) / sizeof(words[0]), text, sizeof(text) / 2);
        }
        tu_write(dir, "r.ini", text);
        /* as tsrnn-worker checks it before anything else */
        enum tsrnn_status status = tsrnn_config_load(cfg, ini, NULL, 0);
        if (status == TSRNN_OK)
            status = tsrnn_data_check_config(cfg);
        if (structured && (status == TSRNN_OK) != (r.cause_line == 0))
            fail_msg("round %d: expected %s%s, got %s (%s) for:\n%s", round,
                     r.cause_line ? "the error " : "the file accepted", r.cause,
                     tsrnn_status_name(status), status ? tsrnn_last_error() : "", text);
        if (status == TSRNN_OK) {
            accepted++;
            char *printed = check_accepted(cfg);
            if (structured)
                check_keys(cfg, &r, printed, ini, real_dir, text);
            free(printed);
        } else {
            refused++;
            assert_int_equal(status, TSRNN_ERR_USAGE);
            const char *message = tsrnn_last_error();
            assert_true(strlen(message) > 0);
            if (structured) {
                char where[PATH_MAX + 32];
                snprintf(where, sizeof(where), "%s:%d: ", ini, r.cause_line);
                if (strcasestr(message, r.cause) == NULL ||
                    (r.cause_line < 1000000 && strstr(message, where) == NULL))
                    fail_msg("round %d: expected '%s' at line %d, got: %s\nfor:\n%s", round,
                             r.cause, r.cause_line, message, text);
            }
        }
    }
    printf("# random INI files: %zu accepted, %zu refused (%zu generated from the example, their "
           "outcome and first error predicted)\n",
           accepted, refused, predicted);
    /* the generator must reach both outcomes often, or this test tests little */
    assert_true(accepted >= ROUNDS / 10);
    assert_true(refused >= ROUNDS / 10);
    free(cfg);
    tu_rmtree(dir);
    free(dir);
}

/* The bad-input corpus, tests/fixtures/bad/cases.txt: each file a user made, run through
 * the real tsrnn-worker, must end with its exit code and its message (what, where, what is
 * accepted). A \\n in a case's overrides stands for a newline; messages are matched as tsrnn
 * shows them, with such bytes escaped. */
static void unescape(char *text)
{
    char *out = text;
    for (const char *p = text; *p != '\0'; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            *out++ = '\n';
            p++;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
}

static char *trimmed(char *s)
{
    while (*s == ' ')
        s++;
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\n'))
        s[--len] = '\0';
    return s;
}

static void test_bad_input_corpus(void **state)
{
    (void)state;
    char dir[PATH_MAX], manifest[PATH_MAX + 16], work_dir[PATH_MAX + 32], line[1024];
    snprintf(dir, sizeof(dir), "%s/tests/fixtures/bad", tu_env("TSRNN_SOURCE_ROOT"));
    snprintf(manifest, sizeof(manifest), "%s/cases.txt", dir);
    char *runs = tu_mkdtemp();
    snprintf(work_dir, sizeof(work_dir), "output.work_dir=%s", runs);
    FILE *f = fopen(manifest, "r");
    assert_non_null(f);
    static struct tu_result result;
    int cases = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *fields[4], *save = NULL;
        fields[0] = strtok_r(line, "|", &save);
        for (int i = 1; i < 4; i++)
            fields[i] = strtok_r(NULL, "|", &save);
        assert_non_null(fields[3]);
        char ini[PATH_MAX * 2], *sets = trimmed(fields[1]), *message = trimmed(fields[3]);
        snprintf(ini, sizeof(ini), "%s/%s", dir, trimmed(fields[0]));
        int want = atoi(trimmed(fields[2]));
        const char *argv[16] = { tu_env("TSRNN_WORKER"), ini, "--set", work_dir,
                                 "--progress=none" };
        int argc = 5;
        unescape(sets);
        if (strcmp(sets, "-") != 0) {
            argv[argc++] = "--set";
            argv[argc++] = sets;
        }
        argv[argc] = NULL;
        assert_int_equal(tu_run(argv, 60, &result), 0);
        printf("# %s %s: exit %d: %s", trimmed(fields[0]), sets, result.exit_code,
               want ? result.err : "ok\n");
        if (result.exit_code != want)
            fail_msg("%s (%s): exit %d, expected %d: %s", ini, sets, result.exit_code, want,
                     result.err);
        tu_expect_in(want ? result.err : result.out, message);
        cases++;
    }
    fclose(f);
    assert_true(cases >= 16);
    tu_rmtree(runs);
    free(runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_csv),
        cmocka_unit_test(test_random_ini),
        cmocka_unit_test(test_bad_input_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
