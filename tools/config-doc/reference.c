/* docs/configuration.md from the config schema (reference.h): the file's syntax, where values
 * come from, then every key of src/config/config.c's table with its type, default, accepted
 * values (the parser's own sentences), the Darts / Lightning name it mirrors and an example;
 * its sample error messages come from the parser itself. What each section is for and the
 * example file are this page's own (section_docs[], reference_example[]). */
#include "reference.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"

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
    return i == 0 || strcmp(config_keys[i].section, config_keys[i - 1].section) != 0;
}

static const char *type_name(const struct config_key *k)
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
static enum tsrnn_status check_key_doc(const struct config_key *k, struct tsrnn_config *scratch)
{
    const char *texts[] = { k->doc, k->darts, k->default_text, k->default_doc, k->accepted };
    if (k->doc == NULL || k->darts == NULL || k->example == NULL ||
        (k->default_text == NULL && k->default_doc == NULL) || section_doc(k->section) == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "src/config/config.c: [%s] %s lacks its .doc, .darts, .example, "
                           ".default_doc (when the default is computed) or its section's line "
                           "in section_docs[] (tools/config-doc/reference.c)",
                           k->section, k->name);
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i] != NULL && strchr(texts[i], '|') != NULL)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "src/config/config.c: [%s] %s: '%s' holds a '|', which would "
                               "split its Markdown table cell",
                               k->section, k->name, texts[i]);
    return tsrnn_config_set(scratch, k->section, k->name, k->example,
                            "src/config/config.c (the schema's .example)", NULL);
}

/* The default as the page shows it: the value, then what it means where the value does not
 * say it. */
static void format_default(const struct config_key *k, char *out, size_t capacity)
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
    for (size_t i = 0; i < config_key_count; i++)
        if (starts_section(i)) {
            section_count++;
            last_start = i;
        }
    for (size_t i = 0, n = 0; i < config_key_count && used < sizeof(sections); i++)
        if (starts_section(i))
            used += (size_t)snprintf(sections + used, sizeof(sections) - used, "%s`[%s]`",
                                     n++ == 0 ? "" : (i == last_start ? " and " : ", "),
                                     config_keys[i].section);

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
    const struct config_key boolean = { .type = KEY_BOOL };
    config_describe_accepted(&boolean, booleans, sizeof(booleans));
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
    for (size_t i = 0; i < config_key_count; i++) {
        const struct config_key *k = &config_keys[i];
        char default_text[256];
        format_default(k, default_text, sizeof(default_text));
        /* #section-key is GitHub's anchor of the heading "`[section] key`". */
        fprintf(out, "| [`[%s] %s`](#%s-%s) | %s | %s | %s |\n", k->section, k->name, k->section,
                k->name, type_name(k), default_text, k->darts);
    }
}

static void write_key(FILE *out, const struct config_key *k)
{
    char accepted[256], default_text[256];
    config_describe_accepted(k, accepted, sizeof(accepted));
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

enum tsrnn_status config_doc_write(FILE *out)
{
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_config *scratch = calloc(1, sizeof(*scratch));
    if (scratch == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    for (size_t i = 0; i < config_key_count; i++) {
        status = check_key_doc(&config_keys[i], scratch);
        if (status != TSRNN_OK)
            goto out;
    }
    status = write_intro(out, scratch);
    if (status != TSRNN_OK)
        goto out;
    write_overview(out);
    for (size_t i = 0; i < config_key_count; i++) {
        if (starts_section(i)) {
            fprintf(out, "\n## `[%s]`\n\n", config_keys[i].section);
            write_wrapped(out, "", "", "%s", section_doc(config_keys[i].section));
        }
        write_key(out, &config_keys[i]);
    }
    if (fflush(out) != 0 || ferror(out))
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write the configuration reference");
out:
    free(scratch);
    return status;
}
