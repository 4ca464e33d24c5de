/* What the files of src/api/ share: the handles' insides and the helpers between them. The C
 * API itself is include/tsrnn/tsrnn.h; this header is private to src/api/. */
#ifndef TSRNN_API_INTERNAL_H
#define TSRNN_API_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/encoders.h"
#include "tsrnn/forecast.h"
#include "tsrnn/report.h"
#include "tsrnn/train.h"
#include "tsrnn/tsrnn.h"
#include "tsrnn/world.h"

/* A handle's message: as long as the library's per-thread message (core/status.c). */
#define API_MESSAGE_MAX 2048

/* Copies this thread's message (tsrnn_last_error()) into a handle's `message` when `status`
 * failed, clears it when it did not; returns `status`. Every API function ends in it, so a
 * handle's message is the one of its last call. */
enum tsrnn_status api_result(char message[API_MESSAGE_MAX], enum tsrnn_status status);

/* --- series sets (series.c) ------------------------------------------------------------- */

/* One series of a set: a struct tsrnn_series whose values and times are the caller's arrays
 * (borrowed) or, read from a CSV file, the set's own; its future covariates beside it. */
struct api_series {
    char id[TSRNN_NAME_MAX];
    struct tsrnn_series series;    /* covariate_count 0 here: the covariates are below */
    bool owned;                    /* series.values, .times and .covariates are the set's */
    char (*names)[TSRNN_NAME_MAX]; /* (C) owned; series.component_names points here */
    /* Future covariates, (cov_length, K) row-major at the stamps cov_times of the series'
     * frequency (borrowed, or series.covariates' rows when read from a CSV file). */
    const int64_t *cov_times;
    size_t cov_length;
    const float *cov_values;
    size_t cov_count;                  /* K; 0: none */
    char (*cov_names)[TSRNN_NAME_MAX]; /* (K) owned */
};

struct tsrnn_series_set {
    struct api_series *items;
    size_t count, capacity;
    char message[API_MESSAGE_MAX];
};

/* The row of series `s`'s covariates at the stamp `t`, in *row; false when they do not have
 * it. */
bool api_covariate_row(const struct api_series *s, int64_t t, size_t *row);

/* Deep copy of a series (values, times, names, covariates): finished with
 * tsrnn_series_finish(). */
enum tsrnn_status api_series_copy(struct tsrnn_series *dst, const struct tsrnn_series *src);

/* --- the dataset of a fit from series sets (dataset.c) ---------------------------------- */

/* Which buffers of an item the dataset allocated (the others are the caller's arrays). */
struct api_item_owned {
    bool values, times, scaled, series_covariates;
};

struct api_dataset {
    struct tsrnn_dataset ds;
    struct tsrnn_covariates covariates; /* ds.covariates points here */
    struct api_item_owned *owned;       /* (S) */
};

/* Darts' training and validation datasets of fit(series, val_series=val) as tsrnn's trainer
 * reads them (struct tsrnn_dataset): each training series with its validation series after
 * it, [data] scaler fitted on the training part, the windows, the future covariates (the
 * sets' columns, then [covariates]' encoders). Errors name the series by its id or index. */
enum tsrnn_status api_dataset_build(struct api_dataset *d, const struct tsrnn_config *cfg,
                                    const struct tsrnn_series_set *train,
                                    const struct tsrnn_series_set *val);

/* Accepts a zeroed struct. */
void api_dataset_finish(struct api_dataset *d);

/* --- runs (run.c) ----------------------------------------------------------------------- */

struct tsrnn_run {
    struct tsrnn_config *cfg;
    /* tsrnn_run_check() passed since the configuration last changed, for a fit on the files
     * of [data] path or for one on series given (checked_arrays). */
    bool checked, checked_arrays;
    char message[API_MESSAGE_MAX];
    /* The report's first line: the program and the configuration's name. */
    char program[64];
    char config_label[4096];
    volatile sig_atomic_t stop; /* tsrnn_run_cancel(); the trainer's stop_requested */

    /* Where the report goes (tsrnn_run_set_output), and the progress callback. */
    void (*write)(void *ctx, const char *text, size_t nbytes);
    void *write_ctx;
    enum tsrnn_progress_mode mode;
    bool quiet;
    int (*progress)(void *ctx, int64_t epoch, int64_t batch, int64_t batch_count, double train_loss,
                    double val_loss);
    void *progress_ctx;

    /* tsrnn_run_join_world(): the world and the device chosen for it. */
    bool in_world;
    struct tsrnn_world world;
    struct tsrnn_comm *comm;
    struct tsrnn_compute *compute;

    /* The last fit: its result and the dataset it trained on (one of the two). */
    bool fitted;
    struct tsrnn_train_result result;
    struct api_dataset arrays;
    struct tsrnn_dataset files;
    const struct tsrnn_dataset *ds; /* &arrays.ds, &files or NULL */

    /* The model to forecast with: a checkpoint read (after a fit, its last one). */
    struct tsrnn_checkpoint *ck;
    /* A loaded checkpoint's training series, read from its [data] path when asked for. */
    struct tsrnn_dataset stored;
    bool stored_loaded;
    unsigned predict_calls; /* predict() calls since the fit or load: Darts' draws */
    int64_t predict_seed;   /* tsrnn_run_set_predict_seed(); -1 none */
};

/* --- predictions (predict.c) ------------------------------------------------------------ */

struct tsrnn_prediction {
    char message[API_MESSAGE_MAX];
    bool backtest;
    size_t series_count;                   /* S */
    struct tsrnn_series *series;           /* (S) copies of the series forecast */
    char (*ids)[TSRNN_NAME_MAX];           /* (S) */
    struct tsrnn_forecast *f;              /* (S) a forecast per series; NULL for a backtest */
    struct tsrnn_backtest *bt;             /* (S) a backtest per series; NULL for a forecast */
    struct tsrnn_forecast_source *sources; /* (S) over `series`, for the CSV writers */
    struct tsrnn_scaler *scalers;          /* (S) */
    struct tsrnn_scaler *cov_scalers;      /* (S) */
    struct tsrnn_covariates covariates;    /* the model's */
    struct tsrnn_likelihood likelihood;
    struct tsrnn_forecast_options options;
    char id_name[TSRNN_NAME_MAX];
    /* Every forecast in order: its series and, for a backtest, its index there. */
    size_t count;
    size_t *forecast_series; /* (count) */
    size_t *forecast_index;  /* (count) */
    int64_t **times;         /* (count) a backtest's stamps of each forecast, owned */
};

#endif
