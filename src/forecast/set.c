/* A forecast of every series of a model and the files made of it (include/tsrnn/forecast.h,
 * struct tsrnn_forecast_set): the one orchestration that the training's forecasts after the
 * fit (src/train/after_fit.c) and tsrnn-predict's forecast (src/predict/) share. The series
 * are forecast in one Darts predict() call; the CSVs are written on a helper thread while this
 * one draws the pictures. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/forecast.h"
#include "tsrnn/thread.h"

enum tsrnn_status tsrnn_forecast_set_predict(struct tsrnn_forecast_set *set,
                                             struct tsrnn_model *model,
                                             const struct tsrnn_forecast_source *sources,
                                             size_t count, size_t input_chunk_length, size_t n,
                                             const size_t *lengths,
                                             const struct tsrnn_forecast_options *opt)
{
    *set = (struct tsrnn_forecast_set){
        .sources = sources,
        .count = count,
        .likelihood = &model->likelihood,
    };
    if (opt != NULL)
        set->opt = *opt;
    set->f = calloc(count > 0 ? count : 1, sizeof(*set->f));
    if (set->f == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' forecasts", count);
    enum tsrnn_status status =
        tsrnn_forecast_predict(set->f, model, sources, count, input_chunk_length, n, lengths, opt);
    if (status != TSRNN_OK) { /* nothing to finish (tsrnn_forecast_predict) */
        free(set->f);
        set->f = NULL;
    }
    return status;
}

void tsrnn_forecast_set_finish(struct tsrnn_forecast_set *set)
{
    for (size_t i = 0; set->f != NULL && i < set->count; i++)
        tsrnn_forecast_finish(&set->f[i]);
    free(set->f);
    *set = (struct tsrnn_forecast_set){ 0 };
}

/* The forecasts' CSV, or with `samples` every sample path. */
static enum tsrnn_status write_csv(const struct tsrnn_forecast_set *set, const char *id_name,
                                   bool samples, FILE *out)
{
    if (samples)
        return tsrnn_forecast_write_samples(set->f, set->sources, set->count, id_name, out);
    return tsrnn_forecast_write_set(set->f, set->sources, set->count, id_name, set->likelihood,
                                    &set->opt, out);
}

/* One CSV file of a set, a job on the helper thread. */
struct csv_file {
    const struct tsrnn_forecast_set *set;
    const char *path;
    const char *id_name;
    bool samples;
};

static enum tsrnn_status save_csv(void *arg)
{
    const struct csv_file *csv = arg;
    struct tsrnn_atomic_file af = { 0 };
    enum tsrnn_status status = tsrnn_atomic_file_open(&af, csv->path);
    if (status != TSRNN_OK)
        goto out;
    status = write_csv(csv->set, csv->id_name, csv->samples, af.file);
    /* The writer's flush failed: its errno names the reason (a full disk), the message names
     * the file. */
    if (status != TSRNN_OK)
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno != 0 ? errno : EIO, "cannot write %s",
                                   tsrnn_display_path(csv->path));
out:
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

/* Forecast i's picture at `path`, titled files->title (and its series, when named). */
static enum tsrnn_status plot(const struct tsrnn_forecast_set *set, size_t i,
                              const struct tsrnn_forecast_files *files, const char *path)
{
    const char *id = set->sources[i].id;
    char title[3 * TSRNN_NAME_MAX + 32];
    snprintf(title, sizeof(title), "%s%s%s", files->title, id != NULL ? ", series " : "",
             id != NULL ? id : "");
    return tsrnn_forecast_plot(&set->f[i], set->sources[i].series, title, files->width,
                               files->height, path);
}

/* The pictures files names; *drawn counts them. */
static enum tsrnn_status draw(const struct tsrnn_forecast_set *set,
                              const struct tsrnn_forecast_files *files, size_t *drawn)
{
    *drawn = 0;
    if (files->plot_path != NULL) {
        TSRNN_TRY(plot(set, 0, files, files->plot_path));
        *drawn = 1;
        return TSRNN_OK;
    }
    if (files->plot_dir == NULL)
        return TSRNN_OK;
    size_t count = set->count < TSRNN_FORECAST_PLOTS ? set->count : TSRNN_FORECAST_PLOTS;
    const char *ids[TSRNN_FORECAST_PLOTS];
    for (size_t i = 0; i < count; i++) {
        char path[PATH_MAX + TSRNN_NAME_MAX + 32], file_id[TSRNN_NAME_MAX];
        ids[i] = set->sources[i].id;
        if (ids[i] != NULL) {
            tsrnn_forecast_plot_file_id(ids, i, file_id, sizeof(file_id));
            snprintf(path, sizeof(path), "%s/forecast_%s.png", files->plot_dir, file_id);
        } else {
            snprintf(path, sizeof(path), "%s/forecast.png", files->plot_dir);
        }
        TSRNN_TRY(plot(set, i, files, path));
        ++*drawn;
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_forecast_set_save(const struct tsrnn_forecast_set *set,
                                          const struct tsrnn_forecast_files *files, size_t *drawn)
{
    struct tsrnn_jobs jobs = { 0 };
    struct csv_file csv = { set, files->csv_path, files->id_name, false },
                    samples = { set, files->samples_path, files->id_name, true };
    *drawn = 0;
    if (files->csv_path == NULL && files->csv_stream != NULL)
        TSRNN_TRY(write_csv(set, files->id_name, false, files->csv_stream));
    if (files->csv_path != NULL)
        TSRNN_TRY(tsrnn_jobs_add(&jobs, save_csv, &csv));
    if (files->samples_path != NULL)
        TSRNN_TRY(tsrnn_jobs_add(&jobs, save_csv, &samples));
    tsrnn_jobs_start(&jobs);
    enum tsrnn_status status = draw(set, files, drawn);
    /* The files' failure wins: they are what was asked for first. */
    enum tsrnn_status written = tsrnn_jobs_finish(&jobs);
    return written != TSRNN_OK ? written : status;
}
