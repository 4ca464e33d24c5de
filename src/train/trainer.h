/* What the files of src/train/ share, private to it: the trainer of one rank (struct trainer)
 * and the steps of tsrnn_train() that live in a file of their own. Each file's first comment
 * says which job it does. */
#ifndef TSRNN_TRAIN_TRAINER_H
#define TSRNN_TRAIN_TRAINER_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/data.h"
#include "tsrnn/fs.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"
#include "tsrnn/report.h"
#include "tsrnn/tensorboard.h"
#include "tsrnn/thread.h"
#include "tsrnn/train.h"
#include "tsrnn/world.h"

#include "dropout.h"

/* This rank in its data-parallel world. */
struct train_world {
    const struct tsrnn_world *info;  /* where rank 0 reports to (NULL: nowhere) */
    struct tsrnn_comm *comm;         /* NULL: a world of one */
    struct tsrnn_step_reduce reduce; /* the step's gradient reduction over comm */
    int rank, size;
    bool writes_files; /* rank 0: the only writer of the run folder */
    const volatile sig_atomic_t *stop_requested;
    bool stop_agreed; /* some rank asked to stop: every rank stops after this step */
};

/* The training controls that run on the host, as Lightning's: the learning-rate scheduler
 * and EarlyStopping. */
struct train_controls {
    struct tsrnn_lr_scheduler scheduler; /* [training] lr_scheduler_cls */
    double epoch_lr;                     /* the rate of the epoch's first step (TensorBoard) */
    struct tsrnn_early_stopping early_stopping;
    bool stop_early;       /* early stopping ended the run after this epoch */
    double last_step_loss; /* train_loss of the last step (EarlyStopping on train_loss) */
    char stop_reason[256]; /* and why, in Lightning's words */
};

/* The steps whose results have not been read yet (tsrnn_compute_step_results): read every
 * step where that costs nothing (caps.immediate_results), else every log_every_n_steps and at
 * an epoch's end, so that a GPU runs ahead of the host. */
struct train_pending {
    size_t read_every;
    size_t count;
    size_t windows[TSRNN_MODEL_RESULTS_CAPACITY]; /* each pending step's B */
    /* the scheduler's step count and the rate each pending step trained with, before an
     * interval-"step" scheduler moved them for the next step (read_steps undoes halted ones) */
    struct pending_schedule {
        int64_t last_epoch;
        double lr;
    } schedule[TSRNN_MODEL_RESULTS_CAPACITY];
    float losses[TSRNN_MODEL_RESULTS_CAPACITY];
};

/* The validation pass: this rank's windows and the per-window sums that meet in one
 * allreduce. */
struct train_validation {
    size_t *idx; /* this rank's validation windows: rank, rank + W, ... */
    size_t local_count;
    double *se;       /* (val count) each window's summed loss (squared errors for MSELoss),
                         all ranks; then, with a metric, (val count) each window's metric sum */
    double *batch_se; /* (B) the same for one batch, then (B) the metric's */
    /* [early_stopping] on a torchmetrics metric: its name, the loss whose window sums it is
     * (MeanAbsoluteError: L1Loss's; MeanSquaredError: MSELoss's), its last value */
    const char *metric;
    enum tsrnn_loss_kind metric_loss;
    double metric_value;
};

/* Where the run stands. */
struct train_position {
    int64_t step;        /* global step: optimizer updates done */
    int64_t start_epoch; /* where this process starts: 0, or after the resumed checkpoint */
    size_t start_batch;
};

/* The checkpoints (rank 0 writes them; every rank keeps the state). */
struct train_checkpoints {
    struct tsrnn_train_state state; /* as the next checkpoint records it */
    /* Rank 0 with save_checkpoints: writes each epoch's checkpoints while the next trains. */
    struct tsrnn_checkpoint_writer *writer;
    char last[TSRNN_CHECKPOINT_PATH_MAX]; /* "" until written */
    char best[TSRNN_CHECKPOINT_PATH_MAX];
};

/* Rank 0's run folder and what it writes there as the training goes. */
struct train_folder {
    char dir[PATH_MAX];           /* {work_dir}/{model_name} */
    char ckpt_dir[PATH_MAX + 16]; /* dir/checkpoints */
    char logs_dir[PATH_MAX + 8];  /* dir/logs */
    char old_dir[PATH_MAX + 16];  /* force_reset: the earlier run's folder, moved aside */
    struct tsrnn_run_lock lock;   /* held for the whole run */
    /* What does not wait for the training, on a thread beside it (run_folder.c). */
    struct tsrnn_jobs jobs;
    struct tsrnn_metrics_csv metrics;
    struct tsrnn_tb_writer tb; /* fd -1 unless log_tensorboard */
};

/* What the run prints. */
struct train_report {
    FILE *out; /* where the banner, the bar and the summary go; NULL: quiet */
    struct tsrnn_progress progress;
    double *gpus;            /* (W, GPU_SLOT) every rank's GPU for the summary; NULL on the CPU
                     (summary.c) */
    char restored[PATH_MAX]; /* the checkpoint rank 0 resumed from; "" for a new run */
    int64_t restored_epoch, restored_step;
};

/* One rank's training: what it trains, on which device, and one member per job above. */
struct trainer {
    const struct tsrnn_config *cfg;
    const struct tsrnn_dataset *ds;
    struct tsrnn_compute *compute; /* the device the model trains on */
    bool owns_compute;             /* made here, not by the caller */
    struct tsrnn_model model;
    struct tsrnn_adam adam;
    struct tsrnn_sampler sampler;
    struct tsrnn_dropout_stream dropout; /* the steps' dropout masks (dropout.h) */
    float *x, *y;                        /* (B, T, C) one batch, batch-first */
    struct train_world world;
    struct train_controls controls;
    struct train_pending pending;
    struct train_validation val;
    struct train_position pos;
    struct train_checkpoints ckpt;
    struct train_folder folder;
    struct train_report report;
};

/* The forecast pictures' size in pixels. */
#define PLOT_WIDTH  1000
#define PLOT_HEIGHT 500

/* Whether the run's series have names (several files, or a long-format file): its
 * forecasts then carry an id column. */
static inline bool tsrnn_trainer_named_series(const struct tsrnn_dataset *ds)
{
    return ds->items[0].id[0] != '\0';
}

/* setup.c: everything before the first step (include/tsrnn/train.h's refusals), and the
 * teardown, which accepts a trainer whose setup failed anywhere. */
enum tsrnn_status tsrnn_trainer_setup(struct trainer *tr);
void tsrnn_trainer_finish(struct trainer *tr);

/* resume.c: rank 0 restores the checkpoint `resume` names ("last", "best" or a path) before
 * anything is written; every rank then takes rank 0's parameters and position. */
enum tsrnn_status tsrnn_trainer_resume(struct trainer *tr, const char *resume);
enum tsrnn_status tsrnn_trainer_share_rank0_state(struct trainer *tr);

/* run_folder.c: the run folder's lock (with `make_parent`, its parent is made first), the
 * folder and its jobs beside the training, and joining them: a job's failure wins over
 * `status`. */
enum tsrnn_status tsrnn_trainer_lock_folder(struct trainer *tr, bool make_parent);
enum tsrnn_status tsrnn_trainer_prepare_folder(struct trainer *tr);
enum tsrnn_status tsrnn_trainer_finish_jobs(struct trainer *tr, enum tsrnn_status status);

/* hparams.c: logs_dir/hparams.yaml for a model of `component_count` targets and
 * `covariate_count` future covariates with likelihood `lik`. */
enum tsrnn_status tsrnn_train_write_hparams(const char *logs_dir, const struct tsrnn_config *cfg,
                                            size_t component_count, size_t covariate_count,
                                            const struct tsrnn_likelihood *lik);

/* checkpoints.c: the epoch's checkpoints to the writer; waiting for them (a failed write wins
 * over `status`); the untrained weights of a max_steps = 0 run; the best checkpoint for the
 * result, an earlier process's when resumed. */
enum tsrnn_status tsrnn_trainer_save_checkpoints(struct trainer *tr);
enum tsrnn_status tsrnn_trainer_drain_checkpoints(struct trainer *tr, enum tsrnn_status status);
enum tsrnn_status tsrnn_trainer_save_untrained(struct trainer *tr);
void tsrnn_trainer_find_best_checkpoint(struct trainer *tr);

/* after_fit.c: [forecast] n checked before training; the validation forecast and its scores
 * into r; the [forecast] files (rank 0). */
enum tsrnn_status tsrnn_trainer_check_forecast(const struct trainer *tr);
enum tsrnn_status tsrnn_trainer_forecast_validation(struct trainer *tr,
                                                    struct tsrnn_train_result *r);
enum tsrnn_status tsrnn_trainer_write_forecast(struct trainer *tr);

/* summary.c: the banner before the first epoch, every rank's GPU gathered after the last
 * step, and the summary of r. */
void tsrnn_trainer_print_banner(const struct trainer *tr,
                                const struct tsrnn_train_options *options);
enum tsrnn_status tsrnn_trainer_gather_gpus(struct trainer *tr);
void tsrnn_trainer_print_result(const struct trainer *tr, const struct tsrnn_train_result *r,
                                FILE *out);

#endif
