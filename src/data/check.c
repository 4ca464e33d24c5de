/* What data/ makes of a run's [data] and [covariates] keys (include/tsrnn/data.h): the config
 * parser checked each value's type; what a value means here (a frequency, the files a path
 * names, the encoders an attribute list asks for) is checked here, before anything is read or
 * written, and every message leads with where the key was set, as the parser's do. */
#include "tsrnn/data.h"

#include <string.h>

#include "tsrnn/encoders.h"

/* pandas 3 removed these aliases; a user coming from older code meets them first. */
static const struct {
    const char *old, *now;
} renamed_aliases[] = {
    { "M", "ME" },   { "Y", "YE" },  { "A", "YE" },    { "Q", "QE" },   { "H", "h" },
    { "T", "min" },  { "S", "s" },   { "BM", "BME" },  { "BQ", "BQE" }, { "BY", "BYE" },
    { "BA", "BYE" }, { "AS", "YS" }, { "BAS", "BYS" }, { "d", "D" },
};

/* [data] freq into *f (kind TSRNN_FREQ_NONE when not set): a pandas 3 offset alias or an
 * integer step, else refused, naming the alias pandas 3 renamed or the unit tsrnn lacks. */
static enum tsrnn_status parse_freq(struct tsrnn_freq *f, const struct tsrnn_config *cfg)
{
    const char *value = cfg->freq;
    memset(f, 0, sizeof(*f));
    if (value[0] == '\0' || tsrnn_freq_parse(f, value))
        return TSRNN_OK;
    char why[96] = "not a frequency";
    const char *base = value + strspn(value, "0123456789");
    size_t len = strcspn(base, "-");
    for (size_t i = 0; i < sizeof(renamed_aliases) / sizeof(renamed_aliases[0]); i++)
        if (strlen(renamed_aliases[i].old) == len &&
            strncmp(base, renamed_aliases[i].old, len) == 0)
            snprintf(why, sizeof(why), "pandas 3 spells it %s", renamed_aliases[i].now);
    if (strcmp(base, "ms") == 0 || strcmp(base, "us") == 0 || strcmp(base, "ns") == 0 ||
        strcmp(base, "L") == 0 || strcmp(base, "U") == 0 || strcmp(base, "N") == 0)
        snprintf(why, sizeof(why), "tsrnn's time stamps are whole seconds");
    return tsrnn_config_refuse(cfg, "data", "freq", why);
}

enum tsrnn_status tsrnn_series_options_from_config(struct tsrnn_series_options *o,
                                                   const struct tsrnn_config *cfg)
{
    memset(o, 0, sizeof(*o));
    TSRNN_TRY(parse_freq(&o->freq, cfg));
    o->freq_text = cfg->freq;
    o->freq_origin = tsrnn_config_origin(cfg, "data", "freq");
    o->fill_missing_dates = cfg->fill_missing_dates;
    o->fill_dates_origin = tsrnn_config_origin(cfg, "data", "fill_missing_dates");
    o->fill_missing_values = cfg->fill_missing_values;
    return TSRNN_OK;
}

/* Every file [data] path names or matches is readable; a long-format file (id_col) is one
 * file with a time column. */
static enum tsrnn_status check_files(const struct tsrnn_config *cfg)
{
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_data_paths paths = { 0 };
    status =
        tsrnn_data_paths_expand(&paths, cfg->data_path, tsrnn_config_origin(cfg, "data", "path"));
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < paths.count; i++) {
        status = tsrnn_config_check_file(cfg, "data", "path", paths.paths[i], "data file");
        if (status != TSRNN_OK)
            goto out;
    }
    if (cfg->id_col[0] != '\0' && paths.count > 1) {
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "%s: [data] id_col = '%s' reads one long-format file, but [data] "
                             "path names %zu files; accepted: one file with id_col, or one "
                             "series per file without it",
                             tsrnn_config_origin(cfg, "data", "id_col"), cfg->id_col, paths.count);
        goto out;
    }
    if (cfg->id_col[0] != '\0' && cfg->time_col[0] == '\0')
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "%s: [data] id_col = '%s' needs [data] time_col: each series of a "
                             "long-format file takes its time index from its rows",
                             tsrnn_config_origin(cfg, "data", "id_col"), cfg->id_col);
out:
    tsrnn_data_paths_finish(&paths);
    return status;
}

enum tsrnn_status tsrnn_data_check_config(const struct tsrnn_config *cfg)
{
    struct tsrnn_freq freq;
    struct tsrnn_encoder encoders[TSRNN_MAX_ENCODERS];
    size_t encoder_count, covariate_count;
    TSRNN_TRY(parse_freq(&freq, cfg));
    TSRNN_TRY(check_files(cfg));
    return tsrnn_encoders_from_config(encoders, &encoder_count, &covariate_count, cfg);
}
