/* The training loop of one rank: Darts' RNNModel.fit(train, val_series=val) as PyTorch
 * Lightning runs it with max_epochs = n_epochs (DESIGN.md section 3), on the compute backend
 * the config's accelerator asks for (CPU, CUDA or pjrt), followed by the forecast of the
 * validation horizon and the [forecast] section's.
 *
 * Per epoch: the sampler's batches; per batch one step behind the compute door (forward, the
 * [training] loss_fn or the likelihood's negative log-likelihood, backward, the gradients'
 * reduction over the ranks, clipping, the optimizer_cls update), the learning-rate scheduler
 * and EarlyStopping on the host; then the validation loss over every validation window (the
 * sum of the windows' losses / their count: Lightning's batch-size-weighted mean of the batch
 * losses). Rank 0's files go to the run folder {work_dir}/{model_name}/ (DESIGN.md section 5,
 * docs/run-folder.md):
 *
 *     config.ini        the resolved config
 *     metrics.csv       every step's train_loss, every epoch's val_loss
 *     checkpoints/      last-epoch=N.safetensors, best-epoch=N-val_loss=X.XXXX.safetensors
 *     logs/             events.out.tfevents.* (TensorBoard) and hparams.yaml
 *     validation.csv    each series' validation scores (several series)
 *     forecast.csv, forecast_samples.csv, forecast.png (or forecast_<series>.png)
 */
#ifndef TSRNN_TRAIN_H
#define TSRNN_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/quantile_metrics.h"
#include "tsrnn/report.h"
#include "tsrnn/world.h"

/* A checkpoint's path: {work_dir}/{model_name}/checkpoints/<name of up to 255 bytes>. */
#define TSRNN_CHECKPOINT_PATH_MAX (PATH_MAX + 512)

/* Lightning's EarlyStopping callback ([early_stopping]): after each epoch's validation (or,
 * monitoring train_loss, its epoch mean), in float32 as Lightning compares tensors. With
 * mode min, min_delta d and best b (+inf at first): `current + d < b` improves (b = current,
 * wait = 0); else wait += 1 and wait >= patience stops. A metric that is not finite stops at
 * once. */
struct tsrnn_early_stopping {
    bool enabled;
    enum tsrnn_monitor_mode mode;
    float min_delta; /* signed as Lightning keeps it: -|d| for min, +|d| for max */
    int64_t patience;
    /* The state a checkpoint keeps (Lightning's state_dict): */
    int64_t wait_count;
    float best_score;
};

void tsrnn_early_stopping_init(struct tsrnn_early_stopping *es, const struct tsrnn_config *cfg);

/* Checks one epoch's metric; true: stop, with Lightning's reason in `reason`. */
bool tsrnn_early_stopping_check(struct tsrnn_early_stopping *es, const char *monitor, double metric,
                                char *reason, size_t reason_nbytes);

struct tsrnn_train_options {
    FILE *out;                         /* where the run's report goes (stdout) */
    enum tsrnn_progress_mode progress; /* the epoch bar */
    bool quiet;                        /* print the final summary only */
    /* The banner's first line: "<program> <version>: <config_path>, model <kind>". */
    const char *program;
    const char *config_path;
    bool print_devices; /* the "GPU available: ..." lines (not under a launcher) */
    /* Every rank's output meets on one terminal (mpirun, srun): rank 0 speaks for all, as
     * Lightning's rank_zero_only; the others print their "Initializing distributed" line and
     * their errors only. */
    bool rank_zero_only;
    /* The data-parallel world: NULL trains alone. Its rank 0 writes the run folder; other
     * ranks write nothing. */
    struct tsrnn_comm *comm;
    /* The device to train on, made by tsrnn_train_compute_create() and opened into the comm
     * (its device memory is what the gradients' allreduce takes). NULL: tsrnn_train makes one
     * from the config for itself. Not owned. */
    struct tsrnn_compute *compute;
    const struct tsrnn_world *world; /* where rank 0 reports to (NULL: nowhere) */
    /* Set (by a signal handler) to stop at a step boundary; NULL: never. In a world of
     * several ranks any rank's request stops all of them after the same step. */
    const volatile sig_atomic_t *stop_requested;
};

struct tsrnn_train_result {
    size_t param_count;
    int64_t epoch_count, step_count; /* done, counting those before a resumed checkpoint */
    int64_t first_step;              /* the step this process started at (resume: > 0) */
    int64_t sample_count;            /* windows trained on, over all steps */
    double first_step_loss;          /* train_loss of step 0 (NaN when resumed past it) */
    double last_step_loss;           /* train_loss of the last optimizer step */
    double epoch_mean_loss;          /* mean train_loss over the last epoch's steps */
    double val_loss;                 /* of the last epoch; NaN without validation */
    double best_val_loss;            /* lowest val_loss; NaN without validation */
    int64_t best_epoch;              /* its epoch; -1 without validation */
    bool stopped_early;              /* [early_stopping] ended the run */
    double final_lr;                 /* the learning rate after the last epoch's scheduler step */
    double mape;           /* % over the validation horizon, original scale; NaN if not computed;
                              with several series the mean of theirs (Darts' series_reduction) */
    double mae, rmse;      /* likewise */
    size_t forecast_count; /* points forecast (the validation parts' lengths, all series) */
    /* With a likelihood and num_samples > 1: Darts' mql, mic and miw of the validation
     * forecast's samples (the mean over the series); has_quantile_scores false otherwise. */
    bool has_quantile_scores;
    struct tsrnn_quantile_scores quantile_scores;
    double train_s; /* the optimizer steps: batch gather, forward, backward, update */
    double val_s;   /* validation passes */
    double total_s; /* the whole fit, outputs and forecast included */
    double comm_s;  /* in collectives: gradient allreduce, validation sums */
    char run_dir[PATH_MAX];
    char best_checkpoint[TSRNN_CHECKPOINT_PATH_MAX]; /* "" when none was written */
    char last_checkpoint[TSRNN_CHECKPOINT_PATH_MAX];
};

/* What tsrnn_train() would refuse in a valid config before touching the data (an
 * accelerator this build cannot serve): TSRNN_ERR_USAGE naming the config entry. */
enum tsrnn_status tsrnn_train_check(const struct tsrnn_config *cfg);

/* The compute backend the config's accelerator asks for: gpu: CUDA; auto: CUDA where this
 * build and machine have it, else the CPU; cpu; xla, tpu: pjrt. */
enum tsrnn_compute_kind tsrnn_train_compute_kind(const struct tsrnn_config *cfg);

/* The compute context the config asks for (tsrnn_train_compute_kind, num_threads), on the
 * visible GPU `device_index` when it is CUDA (world.h's device_index). The caller destroys
 * it. TSRNN_ERR_USAGE as tsrnn_train_check(). */
enum tsrnn_status tsrnn_train_compute_create(struct tsrnn_compute **compute,
                                             const struct tsrnn_config *cfg, int device_index);

/* Trains the model `cfg` describes on `ds`, writes the run's files and prints, to
 * options->out, the banner (once, after the set-up), the epochs and the summary. Errors:
 * TSRNN_ERR_USAGE (what cannot be trained here: an earlier run's folder, a run folder another
 * run holds, an accelerator or a feature the backend lacks, a model that does not fit in
 * memory), TSRNN_ERR_DATA (bad init_weights, targets a likelihood does not model),
 * TSRNN_ERR_NUMERIC (a NaN/inf loss or gradient: the message names epoch and step),
 * TSRNN_ERR_INTERRUPTED (*options->stop_requested was set: the run stopped between two steps,
 * metrics.csv holds every finished step and, with save_checkpoints, rank 0 wrote a last
 * checkpoint to resume from), TSRNN_ERR_COMM (a peer failed or timed out: the caller aborts
 * the communicator), TSRNN_ERR_IO (run folder), TSRNN_ERR_NOMEM.
 *
 * Data-parallel (DESIGN.md section 3): rank 0's initial parameters are broadcast; each rank
 * trains on its shard of every epoch (DistributedSampler), the gradients are summed over the
 * ranks and scaled by 1/W before the same optimizer update everywhere; train_loss is the mean
 * over the ranks (Darts logs it with sync_dist=True); val_loss adds every validation window's
 * loss over the ranks, so it equals a single process's value. */
enum tsrnn_status tsrnn_train(struct tsrnn_train_result *result, const struct tsrnn_config *cfg,
                              const struct tsrnn_dataset *ds,
                              const struct tsrnn_train_options *options);

#endif
