/* The series tsrnn-predict forecasts from: the checkpoint's training series (its data read
 * only where the run folder names it), the one --id names, or --series CSV; each checked
 * against what the model learnt and given the checkpoint's scalers. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"
#include "tsrnn/fs.h"

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

/* The checkpoint's training series, read as training read them: only where the user asked
 * for that run's data (tsrnn_checkpoint_check_data(): the run folder, --run DIR or the
 * checkpoint's, names or holds them); otherwise, or where the files cannot be read as the
 * model's series, the message asks for --series, whose messages show everything. */
static enum tsrnn_status load_stored_data(struct tsrnn_dataset *dataset,
                                          const struct tsrnn_checkpoint *ck,
                                          const struct options *o, const char *checkpoint)
{
    char run_dir[PATH_MAX];
    if (o->run_dir != NULL)
        snprintf(run_dir, sizeof(run_dir), "%s", o->run_dir);
    else
        tsrnn_checkpoint_run_folder(checkpoint, run_dir, sizeof(run_dir));
    enum tsrnn_status status = tsrnn_checkpoint_check_data(ck, run_dir, PROGRAM);
    if (status != TSRNN_OK)
        return tsrnn_error_append(status, " with --series CSV");
    status = tsrnn_checkpoint_load_data(dataset, ck);
    if (status != TSRNN_OK)
        return tsrnn_error_append(status, " with --series CSV (its messages show what is wrong)");
    return TSRNN_OK;
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
        TSRNN_TRY(
            tsrnn_checkpoint_check_series(ck, own, &cs->freq, tsrnn_display_path(o->series_path)));
        sources[(*count)++] = source_of(ck, cs, own, own->length);
        return TSRNN_OK;
    }
    TSRNN_TRY(load_stored_data(dataset, ck, o, checkpoint));
    for (size_t k = first; k < end; k++) {
        const struct tsrnn_checkpoint_series *cs = &ck->series_list[k];
        const struct tsrnn_dataset_series *item;
        enum tsrnn_status status = tsrnn_checkpoint_data_series(&item, ck, dataset, k);
        if (status != TSRNN_OK && item == NULL) /* the data no longer holds it */
            tsrnn_error_append(status, " with --id %s --series CSV", cs->id);
        TSRNN_TRY(status);
        sources[(*count)++] = source_of(ck, cs, &item->series, item->train_length);
    }
    return TSRNN_OK;
}
