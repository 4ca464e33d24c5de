/* The config schema and what the files of src/config/ share (private to src/config/; the
 * reference page's generator, tools/config-doc, reads the schema through config_keys[] and
 * config_describe_accepted() only).
 *
 *     config.c   the schema: one line per key, and looking keys up in it
 *     value.c    one key's value: its text checked for its type and stored; the defaults
 *     parse.c    INI files, a checkpoint's config text, --set
 *     check.c    the rules across keys (tsrnn_config_validate())
 *     write.c    the resolved config as INI text that parses back to itself
 */
#ifndef TSRNN_CONFIG_SCHEMA_H
#define TSRNN_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/config.h"

enum config_key_type {
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
    KEY_FREQ,            /* char[capacity]: "", or a frequency (data/ reads it: tsrnn_freq_parse) */
    KEY_OPTIONAL_DOUBLE, /* double, range as KEY_DOUBLE; "" = not set (NaN) */
    KEY_QUANTILES,       /* char[capacity]: a comma list of quantiles ([likelihood]: Darts'
                            QuantileRegression rules; "" = its default) */
};

/* A number key's range is closed unless `open` holds these. */
#define MIN_OPEN 1
#define MAX_OPEN 2

struct config_key {
    const char *section;
    const char *name;
    enum config_key_type type;
    size_t offset;              /* of the field in struct tsrnn_config */
    size_t capacity;            /* bytes of a text field */
    const char *default_text;   /* NULL: computed by tsrnn_config_init() */
    double min, max;            /* numbers */
    int open;                   /* numbers: MIN_OPEN | MAX_OPEN, else closed */
    const char *const *choices; /* KEY_ENUM: names in enum order, NULL-terminated */
    const char *accepted;       /* text keys: what a user may write */
    /* docs/configuration.md, written from this table by tools/config-doc; the texts are
     * Markdown. */
    const char *doc;         /* what the key does: a sentence or two */
    const char *darts;       /* the Darts / Lightning / PyTorch name it mirrors */
    const char *example;     /* a value the parser accepts (the page's writer checks) */
    const char *default_doc; /* what the default means where its text does not say it;
                                required when default_text is NULL */
};

/* The schema (config.c): every key, grouped by section in the order config.ini lists them. */
extern const struct config_key config_keys[];
extern const size_t config_key_count;

/* What a user may write for `k`, derived from its type and range (the messages' "accepted:"). */
void config_describe_accepted(const struct config_key *k, char *out, size_t capacity);

/* --- looking keys up (config.c) --------------------------------------------------------- */

/* The key `section.name` (any case), or NULL. */
const struct config_key *config_find_key(const char *section, const char *name);

/* The schema's spelling of `section`, or NULL when no key lives there. */
const char *config_known_section(const char *section);

/* TSRNN_ERR_USAGE naming an unknown section, the sections there are and the nearest one. */
enum tsrnn_status config_unknown_section(const char *section, const char *origin);

/* TSRNN_ERR_USAGE naming an unknown key of a known section, and the nearest key. */
enum tsrnn_status config_unknown_key(const char *section, const char *key, const char *origin);

/* The index of `k` in config_keys[] (and in cfg->origins[]). */
static inline size_t config_key_index(const struct config_key *k)
{
    return (size_t)(k - config_keys);
}

/* The field of `k` in `cfg`. */
static inline void *config_field(struct tsrnn_config *cfg, const struct config_key *k)
{
    return (char *)cfg + k->offset;
}

static inline const void *config_cfield(const struct tsrnn_config *cfg, const struct config_key *k)
{
    return (const char *)cfg + k->offset;
}

/* The name of the choice `section.key` (a KEY_ENUM) holds in `cfg`: "Adam", "StepLR", ... */
const char *config_choice(const struct tsrnn_config *cfg, const char *section, const char *key);

/* --- values (value.c, write.c) ---------------------------------------------------------- */

/* Sets k from its text as the parser does: the type checks, then the field and its origin.
 * TSRNN_ERR_USAGE with the parser's message. */
enum tsrnn_status config_set_key(struct tsrnn_config *cfg, const struct config_key *k,
                                 const char *value, const char *origin, const char *base_dir);

/* The text of k's value in `cfg`, as the parser reads it back. */
void config_format_value(const struct tsrnn_config *cfg, const struct config_key *k, char *out,
                         size_t capacity);

#endif
