/* The series a checkpoint was trained on (include/tsrnn/checkpoint.h), for the programs and
 * the C API that forecast from it: whether its [data] path may be read, reading it as
 * training read it, and each of its series found and checked against what the model learnt.
 * tsrnn-predict and the C API (src/api/predict.c) both come here, each adding to a message
 * how its user passes the series instead (an option, an argument). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/fs.h"

enum tsrnn_status tsrnn_checkpoint_check_series(const struct tsrnn_checkpoint *ck,
                                                const struct tsrnn_series *s,
                                                const struct tsrnn_freq *freq, const char *where)
{
    const struct tsrnn_series_info *info = &ck->series;
    if (freq->kind != TSRNN_FREQ_NONE && !tsrnn_freq_equal(freq, &s->freq)) {
        char have[TSRNN_FREQ_NAME_MAX], want[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&s->freq, have, sizeof(have));
        tsrnn_freq_name(freq, want, sizeof(want));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the series' frequency is %s, but the model was trained on a "
                           "series of freq %s; accepted: a series of freq %s",
                           where, have, want, want);
    }
    if (s->component_count != info->component_count)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s has %zu value columns; the model forecasts %zu (%s%s)", where,
                           s->component_count, info->component_count, info->component_names[0],
                           info->component_count > 1 ? ", ..." : "");
    for (size_t c = 0; c < info->component_count; c++)
        if (strcmp(s->component_names[c], info->component_names[c]) != 0)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: value column %zu is '%s'; the model was trained on '%s'", where,
                               c + 1, s->component_names[c], info->component_names[c]);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_checkpoint_check_data(const struct tsrnn_checkpoint *ck,
                                              const char *run_dir, const char *reader)
{
    if (tsrnn_checkpoint_data_trusted(ck, run_dir))
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: the checkpoint names its training data %s, which the run folder's "
                       "config.ini (%s/config.ini) does not name and which does not lie inside "
                       "the run folder %s; %s reads the data a checkpoint names only then. Pass "
                       "the series to forecast from",
                       tsrnn_display_path(ck->path), ck->config.data_path,
                       tsrnn_display_path(run_dir), tsrnn_display_path(run_dir), reader);
}

/* The files come from the checkpoint, so nothing of what they hold is shown when they are not
 * the CSV the model was trained on (a message would echo a line of whatever file the path
 * names): only whether a file can be opened. */
enum tsrnn_status tsrnn_checkpoint_load_data(struct tsrnn_dataset *dataset,
                                             const struct tsrnn_checkpoint *ck)
{
    const struct tsrnn_config *cfg = &ck->config;
    struct tsrnn_data_paths paths = { 0 };
    enum tsrnn_status status = TSRNN_OK;
    /* its own message: a [data] path that names no file says so without more */
    TSRNN_TRY(tsrnn_data_paths_expand(&paths, cfg->data_path, "the checkpoint's [data] path"));
    for (size_t i = 0; i < paths.count; i++) {
        int fd;
        status = tsrnn_open_regular(paths.paths[i], O_RDONLY, "the checkpoint's training data",
                                    TSRNN_ERR_USAGE, &fd);
        if (status != TSRNN_OK)
            goto out;
        close(fd);
    }
    status = tsrnn_dataset_load(dataset, cfg);
    if (status != TSRNN_OK)
        tsrnn_error(status,
                    "%s, the checkpoint's training data, cannot be read as the series the model "
                    "was trained on (time column '%s', value columns from '%s'); what it holds "
                    "is not shown, as the checkpoint named it",
                    tsrnn_display_path(cfg->data_path), cfg->time_col,
                    ck->series.component_names[0]);
out:
    tsrnn_data_paths_finish(&paths);
    if (status != TSRNN_OK) /* every failure to read the files: the way around it */
        tsrnn_error_append(status, "; pass the series to forecast from");
    return status;
}

enum tsrnn_status tsrnn_checkpoint_data_series(const struct tsrnn_dataset_series **out,
                                               const struct tsrnn_checkpoint *ck,
                                               const struct tsrnn_dataset *dataset, size_t k)
{
    const struct tsrnn_config *cfg = &ck->config;
    const struct tsrnn_checkpoint_series *cs = &ck->series_list[k];
    const struct tsrnn_dataset_series *item = NULL;
    bool named = ck->series_list[0].id[0] != '\0';
    *out = NULL;
    for (size_t i = 0; i < dataset->series_count && item == NULL; i++)
        if (strcmp(dataset->items[i].id, cs->id) == 0)
            item = &dataset->items[i];
    if (item == NULL)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the model was trained on series '%s', which [data] path no "
                           "longer holds; pass the series to forecast from",
                           tsrnn_display_path(cfg->data_path), cs->id);
    char where[PATH_MAX + TSRNN_NAME_MAX + 16];
    snprintf(where, sizeof(where), "%s%s%s%s", tsrnn_display_path(cfg->data_path),
             named ? " (series '" : "", cs->id, named ? "')" : "");
    *out = item;
    TSRNN_TRY(tsrnn_checkpoint_check_series(ck, &item->series, &cs->freq, where));
    if (item->train_length != cs->train_length)
        tsrnn_warn("%s now has %zu training points, the model was trained on %zu", where,
                   item->train_length, cs->train_length);
    return TSRNN_OK;
}
