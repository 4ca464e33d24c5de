/* The resolved config as text (include/tsrnn/config.h): every key's value formatted so that
 * it parses back to itself, and the whole config as the INI file config.ini and every
 * checkpoint hold. */
#include "schema.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shortest "%.Ng" text that reads back as exactly `v`. */
static void format_double(char *out, size_t capacity, double v)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, capacity, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

void config_format_value(const struct tsrnn_config *cfg, const struct config_key *k, char *out,
                         size_t capacity)
{
    switch (k->type) {
    case KEY_INT:
        snprintf(out, capacity, "%d", *(const int *)config_cfield(cfg, k));
        break;
    case KEY_U64:
        snprintf(out, capacity, "%llu",
                 (unsigned long long)*(const uint64_t *)config_cfield(cfg, k));
        break;
    case KEY_DOUBLE:
        format_double(out, capacity, *(const double *)config_cfield(cfg, k));
        break;
    case KEY_OPTIONAL_DOUBLE:
        if (isnan(*(const double *)config_cfield(cfg, k)))
            out[0] = '\0';
        else
            format_double(out, capacity, *(const double *)config_cfield(cfg, k));
        break;
    case KEY_BOOL:
        snprintf(out, capacity, "%s", *(const bool *)config_cfield(cfg, k) ? "true" : "false");
        break;
    case KEY_ENUM:
        snprintf(out, capacity, "%s", k->choices[*(const int *)config_cfield(cfg, k)]);
        break;
    case KEY_STRING:
    case KEY_FOLDER:
    case KEY_PATH:
    case KEY_PATHS:
    case KEY_RESUME:
    case KEY_DEVICES:
    case KEY_FREQ:
    case KEY_QUANTILES:
        snprintf(out, capacity, "%s", (const char *)config_cfield(cfg, k));
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
    for (size_t i = 0; i < config_key_count; i++) {
        const struct config_key *k = &config_keys[i];
        if (strcmp(section, k->section) != 0) {
            fprintf(out, "%s[%s]\n", i ? "\n" : "", k->section);
            section = k->section;
        }
        /* "key =" alone for an empty value, so no line ends in a space. */
        char value[TSRNN_MAX_COMPONENTS * TSRNN_NAME_MAX + PATH_MAX];
        config_format_value(cfg, k, value, sizeof(value));
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
