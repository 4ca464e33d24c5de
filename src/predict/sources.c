/* The series tsrnn-predict forecasts from: the checkpoint's training series (its data read
 * only where the run folder names it), the one --id names, or --series CSV; each checked
 * against what the model learnt and given the checkpoint's scalers. */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "predict.h"
#include "tsrnn/fs.h"

/* A series read for a forecast fits the model: the frequency it learnt (another one's stamps
 * would be wrong, and its steps mean something else) and its columns. */
static enum tsrnn_status check_series(const struct tsrnn_series *s,
                                      const struct tsrnn_checkpoint *ck,
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

/* Which of the checkpoint's series to forecast: all ([first, end) = every one), or --id's. */
static enum tsrnn_status select_series(const struct tsrnn_checkpoint *ck, const struct options *o,
                                       size_t *first, size_t *end)
{
    bool named = ck->series_list[0].id[0] != '\0';
    *first = 0;
    *end = ck->series_count;
    if (o->id == NULL && o->series_path != NULL && named)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "--series %s: the model was trained on %zu series; name the one this "
                           "file continues with --id (its scaler is that series')",
                           o->series_path, ck->series_count);
    if (o->id == NULL)
        return TSRNN_OK;
    if (!named)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "--id %s: the model was trained on one series without an id; leave "
                           "--id out",
                           o->id);
    for (size_t k = 0; k < ck->series_count; k++)
        if (strcmp(ck->series_list[k].id, o->id) == 0) {
            *first = k;
            *end = k + 1;
            return TSRNN_OK;
        }
    char known[512];
    size_t used = 0;
    known[0] = '\0';
    for (size_t k = 0; k < ck->series_count && k < 8; k++)
        used += (size_t)snprintf(known + used, sizeof(known) - used, "%s'%s'", k ? ", " : "",
                                 ck->series_list[k].id);
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "--id %s: the model was trained on no series of that id; accepted: one of "
                       "its %zu series (%s%s)",
                       o->id, ck->series_count, known, ck->series_count > 8 ? ", ..." : "");
}

/* The checkpoint's series `cs` as a forecast source: `series` and its history's end, with
 * the scalers and covariates the model was trained with. */
static struct tsrnn_forecast_source source_of(const struct tsrnn_checkpoint *ck,
                                              const struct tsrnn_checkpoint_series *cs,
                                              const struct tsrnn_series *series, size_t origin)
{
    return (struct tsrnn_forecast_source){
        .series = series,
        .scaler = &cs->scaler,
        .origin = origin,
        .id = cs->id[0] != '\0' ? cs->id : NULL,
        .covariates = &ck->covariates,
        .cov_scaler = &cs->cov_scaler,
    };
}

/* A checkpoint names the files it was trained on ([data] path). They are read only where the
 * user asked for that run's data (tsrnn_checkpoint_data_trusted(): the run folder, --run DIR
 * or the checkpoint's, names or holds them); otherwise the message asks for --series. */
static enum tsrnn_status check_stored_data(const struct tsrnn_checkpoint *ck,
                                           const struct options *o, const char *checkpoint)
{
    char run_dir[PATH_MAX];
    if (o->run_dir != NULL)
        snprintf(run_dir, sizeof(run_dir), "%s", o->run_dir);
    else
        tsrnn_checkpoint_run_folder(checkpoint, run_dir, sizeof(run_dir));
    if (tsrnn_checkpoint_data_trusted(ck, run_dir))
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: the checkpoint names its training data %s, which the run folder's "
                       "config.ini (%s/config.ini) does not name and which does not lie inside "
                       "the run folder %s; tsrnn-predict reads the data a checkpoint names only "
                       "then. Pass the series to forecast from with --series CSV",
                       tsrnn_display_path(checkpoint), ck->config.data_path,
                       tsrnn_display_path(run_dir), tsrnn_display_path(run_dir));
}

/* The checkpoint's training series, read as training read them. The files come from the
 * checkpoint, so nothing of what they hold is shown when they are not the CSV the model was
 * trained on (a message would echo a line of whatever file the path names): only whether a
 * file can be opened, and a hint to read it with --series, whose messages show everything. */
static enum tsrnn_status load_stored_data(struct tsrnn_dataset *dataset,
                                          const struct tsrnn_checkpoint *ck)
{
    const struct tsrnn_config *cfg = &ck->config;
    struct tsrnn_data_paths paths = { 0 };
    enum tsrnn_status status = TSRNN_OK;
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
    /* every failure to read the files: the way around it */
    if (status != TSRNN_OK)
        tsrnn_error_append(status, "; pass the series to forecast from with --series CSV (its "
                                   "messages show what is wrong)");
    return status;
}

/* The series to forecast, each with where its history ends and the checkpoint's scaler for
 * it: --series whole (one series), or the training series of the checkpoint's config split as
 * in training. sources[] has room for the checkpoint's series count. */
enum tsrnn_status predict_load_sources(struct tsrnn_dataset *dataset, struct tsrnn_series *own,
                                       struct tsrnn_forecast_source *sources, size_t *count,
                                       const struct tsrnn_checkpoint *ck, const struct options *o,
                                       const char *checkpoint)
{
    const struct tsrnn_config *cfg = &ck->config;
    size_t first, end;
    TSRNN_TRY(select_series(ck, o, &first, &end));
    bool named = ck->series_list[0].id[0] != '\0';
    *count = 0;
    if (o->series_path != NULL) {
        /* Read as the training series was read ([data] freq, fill_missing_*), and at the
         * model's frequency when the series is too short to show its own. */
        const struct tsrnn_checkpoint_series *cs = &ck->series_list[first];
        struct tsrnn_series_options options;
        TSRNN_TRY(tsrnn_series_options_from_config(&options, cfg));
        options.short_series_freq = cs->freq;
        const struct tsrnn_covariates *cov = &ck->covariates;
        if (cov->column_count > 0)
            TSRNN_TRY(tsrnn_series_load_csv_covariates(
                own, o->series_path, cfg->time_col, (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                cfg->value_col_count, (const char(*)[TSRNN_NAME_MAX])cov->column_names,
                cov->column_count, &options));
        else
            TSRNN_TRY(tsrnn_series_load_csv(own, o->series_path, cfg->time_col,
                                            (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                                            cfg->value_col_count, &options));
        TSRNN_TRY(check_series(own, ck, &cs->freq, tsrnn_display_path(o->series_path)));
        sources[(*count)++] = source_of(ck, cs, own, own->length);
        return TSRNN_OK;
    }
    TSRNN_TRY(check_stored_data(ck, o, checkpoint));
    TSRNN_TRY(load_stored_data(dataset, ck));
    for (size_t k = first; k < end; k++) {
        const struct tsrnn_checkpoint_series *cs = &ck->series_list[k];
        const struct tsrnn_dataset_series *item = NULL;
        for (size_t i = 0; i < dataset->series_count && item == NULL; i++)
            if (strcmp(dataset->items[i].id, cs->id) == 0)
                item = &dataset->items[i];
        if (item == NULL)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: the model was trained on series '%s', which [data] path no "
                               "longer holds; pass the series to forecast from with --id %s "
                               "--series CSV",
                               tsrnn_display_path(cfg->data_path), cs->id, cs->id);
        char where[PATH_MAX + TSRNN_NAME_MAX + 16];
        snprintf(where, sizeof(where), "%s%s%s%s", tsrnn_display_path(cfg->data_path),
                 named ? " (series '" : "", cs->id, named ? "')" : "");
        TSRNN_TRY(check_series(&item->series, ck, &cs->freq, where));
        if (item->train_length != cs->train_length)
            tsrnn_warn("%s now has %zu training points, the model was trained on %zu", where,
                       item->train_length, cs->train_length);
        sources[(*count)++] = source_of(ck, cs, &item->series, item->train_length);
    }
    return TSRNN_OK;
}
