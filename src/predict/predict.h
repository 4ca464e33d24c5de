/* What the files of tsrnn-predict share, private to src/predict/: its command line (struct
 * options, main.c) and the steps each file provides. */
#ifndef TSRNN_PREDICT_H
#define TSRNN_PREDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/forecast.h"
#include "tsrnn/model.h"

#define PROGRAM "tsrnn-predict"

/* The command line (main.c's parse_options()). */
struct options {
    const char *run_dir;
    const char *checkpoint;
    const char *series_path;
    const char *id; /* --id: one series of several; NULL: all */
    const char *out_path;
    const char *plot_path;
    bool checkpoint_given; /* --checkpoint on the command line, not the default "best" */
    long long n;
    int width, height;
    bool gpu; /* --accelerator gpu */
    bool backtest;
    const char *start; /* --start, or NULL */
    long long horizon, stride;
    bool last_points_only;
    const char *num_samples;  /* --num-samples, or NULL: the run's */
    const char *quantiles;    /* --quantiles, or NULL: the run's */
    const char *samples_path; /* --samples */
    bool likelihood_parameters;
    long long random_state; /* --random-state, or -1 */
};

/* sources.c: the series to forecast, each with where its history ends and the checkpoint's
 * scaler for it: --series whole (into `own`), or the training series of the checkpoint's
 * config (into `dataset`) split as in training; sources[] has room for the checkpoint's
 * series count. */
enum tsrnn_status predict_load_sources(struct tsrnn_dataset *dataset, struct tsrnn_series *own,
                                       struct tsrnn_forecast_source *sources, size_t *count,
                                       const struct tsrnn_checkpoint *ck, const struct options *o,
                                       const char *checkpoint);

/* forecast.c: the forecast of every source (--n). And what the backtest shares: the
 * "Loaded <checkpoint>" line, the pictures' title, the id column's name, the sampling options
 * of a model with a likelihood (torch seed draw `draw`). */
enum tsrnn_status predict_forecast(const struct options *o, const struct tsrnn_checkpoint *ck,
                                   const char *path, struct tsrnn_model *model,
                                   const struct tsrnn_forecast_source *sources, size_t count);
void predict_print_loaded(const struct tsrnn_checkpoint *ck, const char *path);
void predict_plot_title(const struct tsrnn_checkpoint *ck, const char *id, char *out,
                        size_t capacity);
const char *predict_id_name(const struct tsrnn_checkpoint *ck);
void predict_sampling_options(struct tsrnn_forecast_options *opt, const struct options *o,
                              const struct tsrnn_checkpoint *ck, unsigned draw);

/* backtest.c: where each source's first forecast starts and how many forecasts a batch holds;
 * the backtest of every source. */
enum tsrnn_status predict_backtest_plan(const struct options *o, const struct tsrnn_checkpoint *ck,
                                        const struct tsrnn_forecast_source *sources, size_t count,
                                        size_t *firsts, size_t *batch);
enum tsrnn_status predict_backtest(const struct options *o, const struct tsrnn_checkpoint *ck,
                                   const char *path, struct tsrnn_model *model,
                                   const struct tsrnn_forecast_source *sources, size_t count,
                                   const size_t *firsts);

#endif
