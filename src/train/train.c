/* The training loop of one rank (include/tsrnn/train.h). Reads top to bottom: set up the
 * model, optimizer and sampler (from a checkpoint when resuming) and the run folder; per
 * epoch train, validate, log, checkpoint; then forecast the validation horizon and score it,
 * and write the [forecast] section's files. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/crc32c.h"
#include "tsrnn/encoders.h"
#include "tsrnn/forecast.h"
#include "tsrnn/fs.h"
#include "tsrnn/memory.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"
#include "tsrnn/plot.h"
#include "tsrnn/safetensors.h"
#include "tsrnn/tensorboard.h"
#include "tsrnn/thread.h"
#include "tsrnn/train.h"
#include "tsrnn/world.h"

#include "dropout.h"

struct trainer {
    const struct tsrnn_config *cfg;
    const struct tsrnn_dataset *ds;
    struct tsrnn_compute *compute; /* the device the model trains on */
    bool owns_compute;             /* made here, not by the caller */
    struct tsrnn_model model;
    struct tsrnn_adam adam;
    struct tsrnn_lr_scheduler scheduler; /* [training] lr_scheduler_cls */
    double epoch_lr;                     /* the rate of the epoch's first step (TensorBoard) */
    struct tsrnn_early_stopping early_stopping;
    bool stop_early;       /* early stopping ended the run after this epoch */
    double last_step_loss; /* train_loss of the last step (EarlyStopping on train_loss) */
    char stop_reason[256]; /* and why, in Lightning's words */
    struct tsrnn_sampler sampler;
    struct tsrnn_dropout_stream dropout; /* the steps' dropout masks (dropout.h) */
    struct tsrnn_metrics_csv metrics;
    struct tsrnn_tb_writer tb; /* fd -1 unless log_tensorboard */
    struct tsrnn_progress progress;
    const volatile sig_atomic_t *stop_requested;
    bool stop_agreed; /* some rank asked to stop: every rank stops after this step */
    FILE *out;
    struct tsrnn_comm *comm;         /* NULL: a world of one */
    struct tsrnn_step_reduce reduce; /* the step's gradient reduction over comm */
    /* The steps whose results have not been read yet (tsrnn_compute_step_results): read
     * every step where that costs nothing (caps.immediate_results), else every
     * log_every_n_steps and at an epoch's end, so that a GPU runs ahead of the host. */
    size_t read_every;
    size_t pending_count;
    size_t pending_windows[TSRNN_MODEL_RESULTS_CAPACITY]; /* each pending step's B */
    /* the scheduler's step count and the rate each pending step trained with, before an
     * interval-"step" scheduler moved them for the next step (read_steps undoes halted ones) */
    struct pending_schedule {
        int64_t last_epoch;
        double lr;
    } pending_schedule[TSRNN_MODEL_RESULTS_CAPACITY];
    float step_losses[TSRNN_MODEL_RESULTS_CAPACITY];
    const struct tsrnn_world *world;
    int rank, world_size;
    bool writes_files; /* rank 0: the only writer of the run folder */
    float *x, *y;      /* (B, T, C) one batch, batch-first */
    size_t *val_idx;   /* this rank's validation windows: rank, rank + W, ... */
    size_t val_local_count;
    double *val_se;   /* (val count) each window's squared error, all ranks; then,
                                     with a metric, (val count) each window's metric sum */
    double *batch_se; /* (B) the same for one batch, then (B) the metric's */
    /* [early_stopping] on a torchmetrics metric: its name, the loss whose window sums it is
     * (MeanAbsoluteError: L1Loss's; MeanSquaredError: MSELoss's), its last value */
    const char *metric;
    enum tsrnn_loss_kind metric_loss;
    double metric_value;
    double *gpus;                 /* (W, GPU_SLOT) every rank's GPU for the summary; NULL on
                                     the CPU (gather_gpus) */
    char run_dir[PATH_MAX];       /* {work_dir}/{model_name} */
    char ckpt_dir[PATH_MAX + 16]; /* run_dir/checkpoints */
    int64_t step;                 /* global step: optimizer updates done */
    int64_t start_epoch; /* where this process starts: 0, or after the resumed checkpoint */
    size_t start_batch;
    struct tsrnn_train_state state;                  /* as the next checkpoint records it */
    char last_checkpoint[TSRNN_CHECKPOINT_PATH_MAX]; /* "" until written */
    char best_checkpoint[TSRNN_CHECKPOINT_PATH_MAX];
    /* Rank 0 with save_checkpoints: writes each epoch's checkpoints while the next trains. */
    struct tsrnn_checkpoint_writer *ckpt_writer;
    struct tsrnn_run_lock lock; /* rank 0: the run folder's, held for the whole run */
    /* Rank 0: what does not wait for the training, on a thread beside it (run_beside). */
    struct tsrnn_jobs jobs;
    char old_run_dir[PATH_MAX + 16]; /* force_reset: the earlier run's folder, moved aside */
    char logs_dir[PATH_MAX + 8];     /* run_dir/logs */
};

/* The forecast pictures' size in pixels. */
#define PLOT_WIDTH  1000
#define PLOT_HEIGHT 500

/* Lightning's "auto": CUDA where this build and machine can run it, else the CPU. */
enum tsrnn_compute_kind tsrnn_train_compute_kind(const struct tsrnn_config *cfg)
{
    switch (cfg->accelerator) {
    case TSRNN_ACCELERATOR_GPU:
        return TSRNN_COMPUTE_CUDA;
    case TSRNN_ACCELERATOR_XLA:
    case TSRNN_ACCELERATOR_TPU:
        return TSRNN_COMPUTE_PJRT;
    case TSRNN_ACCELERATOR_AUTO:
        return tsrnn_compute_available(TSRNN_COMPUTE_CUDA, NULL, 0) ? TSRNN_COMPUTE_CUDA
                                                                    : TSRNN_COMPUTE_CPU;
    case TSRNN_ACCELERATOR_CPU:
        break;
    }
    return TSRNN_COMPUTE_CPU;
}

enum tsrnn_status tsrnn_train_check(const struct tsrnn_config *cfg)
{
    /* Lightning raises when asked for a GPU it cannot use; so does tsrnn. */
    char why[256];
    enum tsrnn_compute_kind kind = tsrnn_train_compute_kind(cfg);
    if (!tsrnn_compute_available(kind, why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] accelerator = %s, but %s; accepted here: cpu or auto",
                           tsrnn_config_origin(cfg, "trainer", "accelerator"),
                           cfg->accelerator == TSRNN_ACCELERATOR_GPU   ? "gpu"
                           : cfg->accelerator == TSRNN_ACCELERATOR_XLA ? "xla"
                           : cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu"
                                                                       : "auto",
                           why);
    return TSRNN_OK;
}

/* The pjrt backend's replicas in this one process from [trainer] devices: a count N is N;
 * -1 is every device of the plugin; auto is every TPU core for tpu and 1 for xla (whose
 * devices may be virtual CPU devices, no faster together). Device lists are refused: a
 * replica set is the plugin's first N devices. */
static enum tsrnn_status pjrt_replicas(const struct tsrnn_config *cfg, int *replicas)
{
    const char *d = cfg->devices;
    if (strcmp(d, "auto") == 0)
        *replicas = cfg->accelerator == TSRNN_ACCELERATOR_TPU ? -1 : 1;
    else if (strcmp(d, "-1") == 0)
        *replicas = -1;
    else if (strchr(d, ',') == NULL && atoi(d) >= 1)
        *replicas = atoi(d);
    else
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = %s: accelerator = %s takes a count of devices "
                           "(replicas of the training step in this process), -1 or auto, not a "
                           "list",
                           tsrnn_config_origin(cfg, "trainer", "devices"), d,
                           cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu" : "xla");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_train_compute_create(struct tsrnn_compute **compute,
                                             const struct tsrnn_config *cfg, int device_index)
{
    *compute = NULL;
    TSRNN_TRY(tsrnn_train_check(cfg));
    int replicas = 1;
    if (tsrnn_train_compute_kind(cfg) == TSRNN_COMPUTE_PJRT)
        TSRNN_TRY(pjrt_replicas(cfg, &replicas));
    enum tsrnn_compute_kind kind = tsrnn_train_compute_kind(cfg);
    char why[512];
    /* Lightning's "auto" takes a GPU that is there; where this one cannot be used (cuBLAS or
     * cuDNN do not load, an older GPU) the CPU trains, and the user is told why, once. */
    if (cfg->accelerator == TSRNN_ACCELERATOR_AUTO && kind == TSRNN_COMPUTE_CPU &&
        tsrnn_compute_compiled(TSRNN_COMPUTE_CUDA) && tsrnn_world_visible_gpus(NULL, 0) > 0 &&
        !tsrnn_compute_available(TSRNN_COMPUTE_CUDA, why, sizeof(why)))
        tsrnn_warn("a GPU is visible, but this process trains on the CPU: %s; [trainer] "
                   "accelerator = cpu silences this",
                   why);
    struct tsrnn_compute_options options = {
        .kind = kind,
        .thread_count = cfg->num_threads,
        .device_index = device_index,
        .plugin_path = cfg->pjrt_plugin,
        .platform = cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu" : NULL,
        .replica_count = replicas,
    };
    return tsrnn_compute_create(compute, &options);
}

/* config.ini, the resolved configuration, written atomically. */
static enum tsrnn_status write_config(const struct trainer *tr)
{
    char path[PATH_MAX + 16];
    struct tsrnn_atomic_file af;
    snprintf(path, sizeof(path), "%s/config.ini", tr->run_dir);
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    fprintf(af.file, "# tsrnn %s: the resolved configuration of this run\n", tsrnn_version());
    enum tsrnn_status status = tsrnn_config_write(tr->cfg, af.file);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

/* The shortest %g text that reads back as `x`, as Python's repr() (and so PyYAML) writes
 * a float. */
static void shortest_double(char *out, size_t size, double x)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

/* Whether the config file or --set gave [section] key (Darts records only the kwargs a user
 * passes). */
static bool given(const struct tsrnn_config *cfg, const char *section, const char *key)
{
    return strcmp(tsrnn_config_origin(cfg, section, key), "default") != 0;
}

/* A Python float as PyYAML writes it: repr()'s shortest digits, positional from 1e-4 to
 * 1e16 (with ".0" when whole), else an exponent with ".0" in a one-digit mantissa
 * ("1.0e-05"). */
static void yaml_float(char *out, size_t size, double x)
{
    char e_text[40];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(e_text, sizeof(e_text), "%.*e", digits - 1, x);
        if (strtod(e_text, NULL) == x)
            break;
    }
    snprintf(e_text, sizeof(e_text), "%.*e", digits - 1, x);
    int exponent = atoi(strchr(e_text, 'e') + 1);
    if (exponent >= -4 && exponent < 16) {
        int decimals = digits - 1 - exponent;
        snprintf(out, size, "%.*f%s", decimals > 0 ? decimals : 0, x, decimals > 0 ? "" : ".0");
    } else {
        char *e = strchr(e_text, 'e');
        *e = '\0';
        snprintf(out, size, "%s%se%s", e_text, strchr(e_text, '.') ? "" : ".0", e + 1);
    }
}

/* The kwargs of the optimizer and scheduler as Darts' hparams.yaml lists them: the keys the
 * user set, sorted as PyYAML sorts them (upper case first), two spaces in. */
static void write_kwargs(FILE *f, const struct tsrnn_config *cfg, bool scheduler)
{
    static const char *const interval[] = { "epoch", "step" },
                             *const anneal[] = { "cos", "linear" },
                             *const mode[] = { "min", "max" },
                             *const threshold_mode[] = { "rel", "abs" };
    /* type: 'i' int, 'd' float, 'b' bool, 'e' one of names[] */
    const struct {
        const char *name;
        char type;
        const void *value;
        const char *const *names;
    } sched_keys[] = {
        { "T_0", 'i', &cfg->lr_T_0, NULL },
        { "T_max", 'i', &cfg->lr_T_max, NULL },
        { "T_mult", 'i', &cfg->lr_T_mult, NULL },
        { "anneal_strategy", 'e', &cfg->lr_anneal_strategy, anneal },
        { "base_momentum", 'd', &cfg->lr_base_momentum, NULL },
        { "cooldown", 'i', &cfg->lr_cooldown, NULL },
        { "cycle_momentum", 'b', &cfg->lr_cycle_momentum, NULL },
        { "div_factor", 'd', &cfg->lr_div_factor, NULL },
        { "end_factor", 'd', &cfg->lr_end_factor, NULL },
        { "epochs", 'i', &cfg->lr_epochs, NULL },
        { "eta_min", 'd', &cfg->lr_eta_min, NULL },
        { "factor", 'd', &cfg->lr_factor, NULL },
        { "final_div_factor", 'd', &cfg->lr_final_div_factor, NULL },
        { "frequency", 'i', &cfg->lr_frequency, NULL },
        { "gamma", 'd', &cfg->lr_gamma, NULL },
        { "interval", 'e', &cfg->lr_interval, interval },
        { "max_lr", 'd', &cfg->lr_max_lr, NULL },
        { "max_momentum", 'd', &cfg->lr_max_momentum, NULL },
        { "min_lr", 'd', &cfg->lr_min_lr, NULL },
        { "mode", 'e', &cfg->lr_mode, mode },
        { "patience", 'i', &cfg->lr_patience, NULL },
        { "pct_start", 'd', &cfg->lr_pct_start, NULL },
        { "start_factor", 'd', &cfg->lr_start_factor, NULL },
        { "step_size", 'i', &cfg->lr_step_size, NULL },
        { "steps_per_epoch", 'i', &cfg->lr_steps_per_epoch, NULL },
        { "three_phase", 'b', &cfg->lr_three_phase, NULL },
        { "threshold", 'd', &cfg->lr_threshold, NULL },
        { "threshold_mode", 'e', &cfg->lr_threshold_mode, threshold_mode },
        { "total_iters", 'i', &cfg->lr_total_iters, NULL },
        { "total_steps", 'i', &cfg->lr_total_steps, NULL },
    };
    /* The optimizer's: which optimizers take each (1 << enum tsrnn_optimizer_kind); lr is
     * always written. 'g': the shortest repr digits; 'd': PyYAML's float; 'b': a bool. */
    enum {
        SGD = 1 << TSRNN_OPTIMIZER_SGD,
        RMSPROP = 1 << TSRNN_OPTIMIZER_RMSPROP,
        ADAGRAD = 1 << TSRNN_OPTIMIZER_ADAGRAD,
        ALL = 0xff,
    };
    const struct {
        const char *name;
        char type;
        const void *value;
        unsigned takers;
    } opt_keys[] = {
        { "alpha", 'd', &cfg->alpha, RMSPROP },
        { "centered", 'b', &cfg->centered, RMSPROP },
        { "eps", 'd', &cfg->eps, ALL & ~SGD },
        { "initial_accumulator_value", 'd', &cfg->initial_accumulator_value, ADAGRAD },
        { "lr", 'g', &cfg->lr, ALL },
        { "lr_decay", 'd', &cfg->lr_decay, ADAGRAD },
        { "momentum", 'g', &cfg->momentum, SGD | RMSPROP },
        { "nesterov", 'b', &cfg->nesterov, SGD },
        { "weight_decay", 'g', &cfg->weight_decay, ALL },
    };
    char number[48];
    if (!scheduler) {
        for (size_t k = 0; k < sizeof(opt_keys) / sizeof(opt_keys[0]); k++) {
            const void *v = opt_keys[k].value;
            bool negative_default = v == &cfg->eps || v == &cfg->weight_decay; /* -1: default */
            if (!(opt_keys[k].takers >> cfg->optimizer_cls & 1u) ||
                (v != &cfg->lr && !given(cfg, "training", opt_keys[k].name)) ||
                (negative_default && *(const double *)v < 0.0))
                continue;
            if (opt_keys[k].type == 'b')
                snprintf(number, sizeof(number), "%s", *(const bool *)v ? "true" : "false");
            else if (opt_keys[k].type == 'd')
                yaml_float(number, sizeof(number), *(const double *)v);
            else
                shortest_double(number, sizeof(number), *(const double *)v);
            fprintf(f, "  %s: %s\n", opt_keys[k].name, number);
        }
        return;
    }
    for (size_t k = 0; k < sizeof(sched_keys) / sizeof(sched_keys[0]); k++) {
        if (!given(cfg, "lr_scheduler_kwargs", sched_keys[k].name))
            continue;
        const void *v = sched_keys[k].value;
        switch (sched_keys[k].type) {
        case 'i':
            snprintf(number, sizeof(number), "%d", *(const int *)v);
            break;
        case 'd':
            yaml_float(number, sizeof(number), *(const double *)v);
            break;
        case 'b':
            snprintf(number, sizeof(number), "%s", *(const bool *)v ? "true" : "false");
            break;
        default: /* every enum here is int-sized, as the config parser stores them */
            snprintf(number, sizeof(number), "%s", sched_keys[k].names[*(const int *)v]);
            break;
        }
        fprintf(f, "  %s: %s\n", sched_keys[k].name, number);
    }
}

/* logs/hparams.yaml as Lightning's TensorBoardLogger saves Darts' module hyperparameters
 * (PyYAML, keys sorted) for this model: the future covariates' shape; the optimizer and
 * scheduler classes with the kwargs the config gave. A likelihood: Darts pickles the object
 * (its torch modules' internals included); tsrnn writes its repr() and nr_params. */
static enum tsrnn_status write_hparams(const struct trainer *tr, const char *logs)
{
    static const char *const optimizers[] = { "adam.Adam", "adamw.AdamW", "sgd.SGD",
                                              "rmsprop.RMSprop", "adagrad.Adagrad" };
    static const char *const schedulers[] = { NULL,
                                              "ExponentialLR",
                                              "StepLR",
                                              "ReduceLROnPlateau",
                                              "CosineAnnealingLR",
                                              "OneCycleLR",
                                              "CosineAnnealingWarmRestarts",
                                              "LinearLR" };
    const struct tsrnn_config *cfg = tr->cfg;
    size_t C = tr->ds->component_count, K = tr->ds->covariates->count;
    char path[PATH_MAX + 32], dropout[32], covariates[64] = "null";
    struct tsrnn_atomic_file af;
    snprintf(path, sizeof(path), "%s/hparams.yaml", logs);
    /* Darts' training sample holds the future covariates beside both targets. */
    if (K > 0)
        snprintf(covariates, sizeof(covariates), "!!python/tuple\n  - %d\n  - %zu",
                 cfg->training_length, K);
    shortest_double(dropout, sizeof(dropout), cfg->dropout);
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    const struct tsrnn_likelihood *lik = &tr->model.likelihood;
    char likelihood[TSRNN_LIKELIHOOD_MAX_QUANTILES * 24 + 128] = "null";
    if (lik->kind != TSRNN_LIKELIHOOD_NONE)
        tsrnn_likelihood_repr(lik, likelihood, sizeof(likelihood));
    fprintf(af.file,
            "dropout: %s\nhidden_dim: %d\ninput_chunk_length: %d\ninput_size: %zu\n"
            "likelihood: %s\n",
            dropout, cfg->hidden_dim, cfg->input_chunk_length, C + K, likelihood);
    if (cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_NONE) {
        fprintf(af.file, "lr_scheduler_cls: null\nlr_scheduler_kwargs: null\n");
    } else {
        fprintf(af.file,
                "lr_scheduler_cls: !!python/name:torch.optim.lr_scheduler.%s ''\n"
                "lr_scheduler_kwargs:%s\n",
                schedulers[cfg->lr_scheduler_cls],
                cfg->lr_scheduler_cls == TSRNN_LR_SCHEDULER_EXPONENTIAL &&
                        !given(cfg, "lr_scheduler_kwargs", "gamma")
                    ? " {}"
                    : "");
        write_kwargs(af.file, cfg, true);
    }
    fprintf(af.file,
            "name: %s\nnr_params: %zu\nnum_layers: %d\n"
            "optimizer_cls: !!python/name:torch.optim.%s ''\noptimizer_kwargs:\n",
            tsrnn_model_kind_name(cfg->model), tsrnn_likelihood_param_count(lik), cfg->n_rnn_layers,
            optimizers[cfg->optimizer_cls]);
    write_kwargs(af.file, cfg, false);
    fprintf(af.file,
            "output_chunk_length: 1\noutput_chunk_shift: 0\ntarget_size: %zu\n"
            "train_sample_shape:\n  future_covariates: %s\n"
            "  future_target: !!python/tuple\n  - %d\n  - %zu\n"
            "  historic_future_covariates: %s\n  past_covariates: null\n"
            "  past_target: !!python/tuple\n  - %d\n  - %zu\n  static_covariates: null\n"
            "use_reversible_instance_norm: false\n",
            C, covariates, cfg->training_length, C, covariates, cfg->training_length, C);
    return tsrnn_atomic_file_commit(&af);
}

/* A resumed run continues the checkpoint's trajectory only with the same data, model and
 * training settings; n_epochs and max_steps may grow (that is what resuming is for). Each
 * other difference gets a warning: the run goes on, as Lightning's would. */
static void warn_config_changes(const struct tsrnn_config *was, const struct tsrnn_config *now,
                                const char *path)
{
    static const char *const free_keys[] = { "n_epochs =", "max_steps =", "resume =",
                                             "log_every_n_steps =" };
    char *a = tsrnn_config_text(was), *b = tsrnn_config_text(now);
    char *save_a = NULL, *save_b = NULL, section[32] = "";
    for (char *la = a ? strtok_r(a, "\n", &save_a) : NULL,
              *lb = b ? strtok_r(b, "\n", &save_b) : NULL;
         la != NULL && lb != NULL;
         la = strtok_r(NULL, "\n", &save_a), lb = strtok_r(NULL, "\n", &save_b)) {
        if (la[0] == '[')
            snprintf(section, sizeof(section), "%s", la);
        bool checked = strcmp(section, "[data]") == 0 || strcmp(section, "[model]") == 0 ||
                       strcmp(section, "[training]") == 0;
        for (size_t k = 0; k < sizeof(free_keys) / sizeof(free_keys[0]); k++)
            checked &= strncmp(la, free_keys[k], strlen(free_keys[k])) != 0;
        if (checked && strcmp(la, lb) != 0)
            tsrnn_warn("resuming with %s %s (the checkpoint %s was trained with %s): the run "
                       "does not continue its trajectory exactly",
                       section, lb, tsrnn_display_path(path), la);
    }
    free(a);
    free(b);
}

/* Restores weights, moments and state from the checkpoint `resume` names ("last", "best" or
 * a path) before anything is written: a bad checkpoint leaves the run folder as it was. */
static enum tsrnn_status resume_from(struct trainer *tr, const char *resume)
{
    char path[PATH_MAX];
    struct tsrnn_checkpoint *ck = malloc(sizeof(*ck));

    if (ck == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading a checkpoint");
    enum tsrnn_status status = tsrnn_checkpoint_locate(path, sizeof(path), tr->ckpt_dir, resume);
    if (status == TSRNN_OK)
        status = tsrnn_checkpoint_read(ck, path);
    if (status == TSRNN_OK) {
        status = tsrnn_checkpoint_restore(ck, &tr->model, &tr->adam);
        if (status == TSRNN_OK) {
            const struct tsrnn_train_state *st = &ck->state;
            tr->step = st->global_step;
            tr->start_epoch = st->epoch_complete ? st->epoch + 1 : st->epoch;
            tr->start_batch = st->epoch_complete ? 0 : (size_t)st->batches_done;
            tr->state.best_value = st->best_value;
            tr->state.best_epoch = st->best_epoch;
            if (st->has_controls) { /* checkpoints before the training controls lack them */
                tr->adam.lr = st->lr;
                tr->scheduler.last_epoch = st->sched_last_epoch;
                tr->scheduler.best = st->sched_best;
                tr->scheduler.num_bad_epochs = st->sched_num_bad_epochs;
                tr->scheduler.cooldown_counter = st->sched_cooldown_counter;
                tr->early_stopping.wait_count = st->es_wait_count;
                tr->early_stopping.best_score = (float)st->es_best_score;
            }
            warn_config_changes(&ck->config, tr->cfg, path);
            if (tr->out != NULL)
                fprintf(tr->out,
                        "Restored all states from the checkpoint at %s (epoch %lld, global step "
                        "%lld)\n",
                        tsrnn_display_path(path), (long long)st->epoch, (long long)st->global_step);
        }
        tsrnn_checkpoint_finish(ck);
    }
    free(ck);
    return status;
}

/* Rank 0 locks the run folder (include/tsrnn/fs.h) before it reads a checkpoint there,
 * deletes or writes anything: a second run of this model_name stops here, and the first
 * goes on untouched. While the folder's parent does not exist, no other run can be using
 * the folder: the lock is taken once `make_parent` makes it (prepare_run_folder()), so that a
 * run refused for another reason leaves no folder behind. */
static enum tsrnn_status lock_run_folder(struct trainer *tr, bool make_parent)
{
    char parent[PATH_MAX];
    if (tr->lock.fd >= 0)
        return TSRNN_OK;
    snprintf(parent, sizeof(parent), "%s", tr->run_dir);
    char *slash = strrchr(parent, '/');
    if (make_parent && slash != NULL && slash != parent) {
        *slash = '\0';
        TSRNN_TRY(tsrnn_make_dirs(parent));
    }
    enum tsrnn_status status =
        tsrnn_run_lock_acquire(&tr->lock, tr->run_dir, TSRNN_RUN_LOCK_EXCLUSIVE);
    if (status == TSRNN_ERR_USAGE)
        return tsrnn_error_append(status, "; wait for it to end, or choose another [output] "
                                          "model_name");
    if (status == TSRNN_OK && make_parent && tr->lock.fd < 0)
        return tsrnn_error(TSRNN_ERR_IO, "cannot lock %s: its folder vanished",
                           tsrnn_display_path(tr->run_dir));
    return status;
}

/* --- beside the training ----------------------------------------------------------------
 * Rank 0's work that does not wait for the training runs on a thread of its own while the
 * training runs on this one (the seed config trains on one thread of two cores): removing an
 * earlier run's folder (force_reset), config.ini and logs/hparams.yaml with their fsyncs, and
 * the forecast picture's libraries and fonts. 3-10 ms of the seed config's ~0.07 s before,
 * most of it waiting for the disk. A failure stops the training at the next epoch's end and is
 * reported as the synchronous step's would have been. */

/* Why force_reset could not remove `path`: the message says what, this says why. */
static enum tsrnn_status remove_for_reset(const char *path)
{
    enum tsrnn_status status = tsrnn_remove_tree(path);
    if (status != TSRNN_OK) {
        char why[1024];
        snprintf(why, sizeof(why), "%s", tsrnn_last_error());
        return tsrnn_error(status, "force_reset: %s", why);
    }
    return TSRNN_OK;
}

static enum tsrnn_status remove_old_run(void *arg)
{
    const struct trainer *tr = arg;
    return remove_for_reset(tr->old_run_dir);
}

static enum tsrnn_status config_job(void *arg)
{
    return write_config(arg);
}

static enum tsrnn_status hparams_job(void *arg)
{
    const struct trainer *tr = arg;
    return write_hparams(tr, tr->logs_dir);
}

static enum tsrnn_status plot_warmup_job(void *arg)
{
    (void)arg;
    tsrnn_plot_warmup(PLOT_WIDTH, PLOT_HEIGHT);
    return TSRNN_OK;
}

/* Joins the jobs; their failure wins, as the checkpoint writer's does (drain_checkpoints). */
static enum tsrnn_status finish_jobs(struct trainer *tr, enum tsrnn_status status)
{
    enum tsrnn_status jobs = tsrnn_jobs_finish(&tr->jobs);
    return jobs != TSRNN_OK ? jobs : status;
}

/* A run folder that another user owns, or that every user may write: its owner (or anyone)
 * can replace the run's files between writes, and put links where tsrnn writes (it follows
 * none but this user's and root's). Said, not refused: a shared project folder may be
 * meant. */
static void warn_foreign_folder(const char *run_dir)
{
    struct stat st;
    if (stat(run_dir, &st) != 0)
        return;
    if (st.st_uid != geteuid())
        tsrnn_warn("the run folder %s belongs to another user (uid %u): they can replace its "
                   "files; keep [output] work_dir in a folder only you can write",
                   tsrnn_display_path(run_dir), (unsigned)st.st_uid);
    else if (st.st_mode & S_IWOTH)
        tsrnn_warn("the run folder %s may be written by every user (mode %03o): they can "
                   "replace its files; keep [output] work_dir in a folder only you can write",
                   tsrnn_display_path(run_dir), (unsigned)(st.st_mode & 0777));
}

/* Darts' rule for an existing run folder: a new run does not mix with an earlier run's
 * checkpoints and TensorBoard logs; force_reset deletes the folder first. Adds the jobs that
 * finish it beside the training. */
static enum tsrnn_status make_run_folder(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const char *logs = tr->logs_dir;
    snprintf(tr->logs_dir, sizeof(tr->logs_dir), "%s/logs", tr->run_dir);

    TSRNN_TRY(lock_run_folder(tr, true));
    if (cfg->resume[0] == '\0' && cfg->force_reset) {
        if (!tsrnn_move_aside(tr->run_dir, tr->old_run_dir, sizeof(tr->old_run_dir)))
            TSRNN_TRY(remove_for_reset(tr->run_dir));
        else if (tr->old_run_dir[0] != '\0')
            TSRNN_TRY(tsrnn_jobs_add(&tr->jobs, remove_old_run, tr));
    } else if (cfg->resume[0] == '\0' && (tsrnn_folder_holds(tr->ckpt_dir, ".safetensors") ||
                                          tsrnn_folder_holds(logs, "tfevents"))) {
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s already holds the checkpoints or TensorBoard logs of an earlier "
                           "run; continue it with --resume last ([training] resume = last), "
                           "start over with [output] force_reset = true (deletes the folder), "
                           "or choose another [output] model_name",
                           tsrnn_display_path(tr->run_dir));
    }
    TSRNN_TRY(tsrnn_make_dirs(tr->run_dir));
    warn_foreign_folder(tr->run_dir);
    if (cfg->save_checkpoints)
        TSRNN_TRY(tsrnn_make_dirs(tr->ckpt_dir));
    tsrnn_checkpoint_prune(tr->ckpt_dir, "", ""); /* what a killed run was writing */
    /* A run killed between the last and the best name of one checkpoint lost the latter. */
    if (cfg->resume[0] != '\0' && cfg->save_checkpoints)
        TSRNN_TRY(tsrnn_checkpoint_repair_best(tr->ckpt_dir));
    /* metrics.csv first: a resumed run's file is checked before anything else is written. */
    TSRNN_TRY(tsrnn_metrics_csv_open(&tr->metrics, tr->run_dir, tr->step));
    TSRNN_TRY(tsrnn_jobs_add(&tr->jobs, config_job, tr));
    if (cfg->log_tensorboard) {
        TSRNN_TRY(tsrnn_make_dirs(logs));
        TSRNN_TRY(tsrnn_tb_open(&tr->tb, logs, tr->step, cfg->resume[0] != '\0'));
        TSRNN_TRY(tsrnn_jobs_add(&tr->jobs, hparams_job, tr));
        /* Lightning's log_hyperparams: the default hp_metric, -1 at step 0, for a new run. */
        if (cfg->resume[0] == '\0') {
            TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, "hp_metric", -1.0f, 0));
            TSRNN_TRY(tsrnn_tb_flush(&tr->tb));
        }
    }
    if (cfg->forecast_n > 0 && cfg->forecast_plot)
        TSRNN_TRY(tsrnn_jobs_add(&tr->jobs, plot_warmup_job, NULL));
    return TSRNN_OK;
}

/* The run folder, and the jobs started: on a failure too, with those added before it (the
 * earlier run's removal; the files the synchronous sequence had written by then). */
static enum tsrnn_status prepare_run_folder(struct trainer *tr)
{
    enum tsrnn_status status = make_run_folder(tr);
    tsrnn_jobs_start(&tr->jobs);
    return status;
}

/* What every rank must share to train one model: the resolved config and the series as
 * read, in order. Not [output] work_dir: rank 0 alone writes the run folder, so where the others'
 * would be does not matter (under mpirun or srun a rank may start in another folder, on
 * another machine). */
static uint32_t job_fingerprint(const struct trainer *tr)
{
    struct tsrnn_config *shared = malloc(sizeof(*shared));
    char *text = NULL;
    if (shared != NULL) {
        *shared = *tr->cfg;
        shared->work_dir[0] = '\0';
        text = tsrnn_config_text(shared);
        free(shared);
    }
    uint32_t crc = text ? tsrnn_crc32c(0, text, strlen(text)) : 0;
    free(text);
    for (size_t i = 0; i < tr->ds->series_count; i++) {
        const struct tsrnn_series *s = &tr->ds->items[i].series;
        crc = tsrnn_crc32c(crc, s->values, s->length * s->component_count * sizeof(float));
        crc = tsrnn_crc32c(crc, s->times, s->length * sizeof(int64_t));
    }
    return crc;
}

/* Every rank starts from rank 0's parameters (and, resuming, its Adam moments), as DDP's
 * constructor broadcasts the module's state: identical replicas by construction, whatever
 * each rank initialised or read. A rank whose config or data differ from rank 0's would
 * train another model in lockstep, silently: it stops instead. */
static enum tsrnn_status share_rank0_state(struct trainer *tr)
{
    size_t nbytes = tr->model.table.total_count * sizeof(float);
    if (tr->comm == NULL)
        return TSRNN_OK;
    uint32_t mine = job_fingerprint(tr), rank0 = mine;
    TSRNN_TRY(tsrnn_comm_broadcast(tr->comm, &rank0, sizeof(rank0), 0));
    if (mine != rank0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rank %d: its configuration or data differ from rank 0's (CRC-32C "
                           "%08x, rank 0's %08x): every worker must read the same INI file, "
                           "--set values and data file",
                           tr->rank, (unsigned)mine, (unsigned)rank0);
    /* Parameters and moments are device memory (the comm stages them where it must). */
    TSRNN_TRY(tsrnn_comm_broadcast_device(tr->comm, tr->model.params, nbytes, 0));
    if (tr->cfg->resume[0] == '\0')
        return TSRNN_OK;
    /* Resuming, rank 0 alone read the checkpoint (resume_from()): the others get where it
     * left off with its weights and moments, so no rank but 0 needs to see the run folder
     * (a cluster without a shared file system resumes too). */
    struct {
        int64_t step, start_epoch, start_batch, best_epoch;
        uint64_t adam_step;
        double best_value, lr;
        struct tsrnn_lr_scheduler scheduler;
        struct tsrnn_early_stopping early_stopping;
    } where = {
        .step = tr->step,
        .start_epoch = tr->start_epoch,
        .start_batch = (int64_t)tr->start_batch,
        .best_epoch = tr->state.best_epoch,
        .adam_step = tr->adam.step,
        .best_value = tr->state.best_value,
        .lr = tr->adam.lr,
        .scheduler = tr->scheduler,
        .early_stopping = tr->early_stopping,
    };
    TSRNN_TRY(tsrnn_comm_broadcast(tr->comm, &where, sizeof(where), 0));
    tr->step = where.step;
    tr->start_epoch = where.start_epoch;
    tr->start_batch = (size_t)where.start_batch;
    tr->state.best_epoch = where.best_epoch;
    tr->adam.step = where.adam_step;
    tr->state.best_value = where.best_value;
    /* The learning rate, the scheduler's and early stopping's state: each rank steps them
     * alike from here, as each would have from the start. */
    tr->adam.lr = where.lr;
    tr->scheduler = where.scheduler;
    tr->early_stopping = where.early_stopping;
    TSRNN_TRY(tsrnn_comm_broadcast_device(tr->comm, tr->adam.exp_avg, nbytes, 0));
    return tsrnn_comm_broadcast_device(tr->comm, tr->adam.exp_avg_sq, nbytes, 0);
}

/* The initial parameters, made on the host (init_weights or Darts' initialisation for
 * random_state) and uploaded. */
static enum tsrnn_status initial_params(struct trainer *tr, const struct tsrnn_model_dims *dims)
{
    const struct tsrnn_config *cfg = tr->cfg;
    float *host = malloc(tr->model.table.total_count * sizeof(float) + 1);
    if (host == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu parameters",
                           tr->model.table.total_count);
    enum tsrnn_status status = TSRNN_OK;
    if (cfg->init_weights[0] != '\0')
        status = tsrnn_model_load_params(host, &tr->model.table, cfg->init_weights);
    else
        tsrnn_model_init_params(host, &tr->model.table, dims, (uint32_t)cfg->random_state);
    if (status == TSRNN_OK)
        status = tsrnn_model_upload_params(&tr->model, host);
    free(host);
    return status;
}

/* Adam's state of a model converted from Darts: an init_weights file written by
 * scripts/darts-to-tsrnn holds the moments of Darts' Lightning checkpoint under tsrnn's
 * names (the other optimizers' state as the checkpoint keeps it: include/tsrnn/checkpoint.h,
 * centered RMSprop's grad_avg as optim.grad_avg.*) and their step as `darts.adam_step`; a
 * new run continues them, as a Darts fit
 * from that checkpoint would. Other init_weights files (a tsrnn checkpoint, plain weights)
 * bring the weights only, as Darts' load_weights. */
static enum tsrnn_status imported_moments(struct trainer *tr)
{
    const char *path = tr->cfg->init_weights;
    struct tsrnn_safetensors st = { 0 };
    TSRNN_TRY(tsrnn_safetensors_read(&st, path));
    const char *step_text = tsrnn_safetensors_metadata(&st, "darts.adam_step");
    char *end = NULL;
    unsigned long long step = step_text ? strtoull(step_text, &end, 10) : 0;
    enum tsrnn_status status = TSRNN_OK;
    if (step_text != NULL && (end == step_text || *end != '\0' || step > (1ull << 53)))
        status = tsrnn_error(TSRNN_ERR_DATA,
                             "%s: __metadata__ \"darts.adam_step\" = \"%s\"; expected an "
                             "integer from 0 to 2^53",
                             tsrnn_display_path(path), step_text);
    if (status != TSRNN_OK || step == 0) {
        tsrnn_safetensors_finish(&st);
        return status;
    }
    size_t count = tr->model.table.total_count;
    float *host = malloc(3 * count * sizeof(float) + 1);
    if (host == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for Adam's moments");
    if (status == TSRNN_OK)
        status = tsrnn_model_read_tensors(host, &tr->model.table, &st, "optim.exp_avg.", path);
    if (status == TSRNN_OK)
        status = tsrnn_model_read_tensors(host + count, &tr->model.table, &st, "optim.exp_avg_sq.",
                                          path);
    if (status == TSRNN_OK)
        status = tsrnn_adam_import(&tr->adam, host, host + count);
    /* centered RMSprop's grad_avg, under its own name */
    if (status == TSRNN_OK && tr->adam.grad_avg != NULL)
        status = tsrnn_model_read_tensors(host + 2 * count, &tr->model.table, &st,
                                          "optim.grad_avg.", path);
    if (status == TSRNN_OK && tr->adam.grad_avg != NULL)
        status = tsrnn_compute_upload(tr->compute, tr->adam.grad_avg, host + 2 * count,
                                      count * sizeof(float));
    if (status == TSRNN_OK)
        tr->adam.step = step;
    free(host);
    tsrnn_safetensors_finish(&st);
    return status;
}

/* [forecast] plot = true written in the config (not the default): the picture is asked for,
 * so a machine where cairo cannot draw refuses the run before it trains, not after. */
static enum tsrnn_status check_plot(const struct tsrnn_config *cfg)
{
    const char *origin = tsrnn_config_origin(cfg, "forecast", "plot");
    char why[1024];
    if (cfg->forecast_n == 0 || !cfg->forecast_plot || strcmp(origin, "default") == 0 ||
        tsrnn_plot_usable(why, sizeof(why)))
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: [forecast] plot = true, but the picture cannot be drawn here: %s; "
                       "accepted: plot = false (or leave it out: the picture is then skipped with "
                       "a warning)",
                       origin, why);
}

/* A likelihood whose torch distribution validates its targets (negative_binomial and
 * geometric: counts; lognormal, gamma and weibull: positive; halfnormal and exponential:
 * non-negative; bernoulli: 0 or 1; Darts stops on the first batch otherwise) trains on such targets only: refused before anything is written, naming the
 * first value that is not one. */
static enum tsrnn_status check_support(const struct trainer *tr, const struct tsrnn_likelihood *lik)
{
    enum tsrnn_likelihood_support support = tsrnn_likelihood_support(lik->kind);
    const struct tsrnn_dataset *ds = tr->ds;
    for (size_t i = 0; i < ds->series_count; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        size_t C = item->series.component_count;
        for (size_t p = 0; p < item->series.length; p++)
            for (size_t c = 0; c < C; c++) {
                float v = item->scaled[p * C + c];
                if (tsrnn_likelihood_supports(support, v))
                    continue;
                char stamp[64];
                tsrnn_time_format(item->series.times[p], item->series.time_unit, stamp,
                                  sizeof(stamp));
                return tsrnn_error(
                    TSRNN_ERR_DATA,
                    "%s: [model] likelihood = %s models %s, but %s%s%s%s at %s is %g after "
                    "[data] scaler = %s; accepted: such targets (a minmax scaler maps the "
                    "training minimum to 0: scaler = none), as Darts' %s validates them (torch's "
                    "log_prob)",
                    tsrnn_config_origin(tr->cfg, "model", "likelihood"),
                    tsrnn_likelihood_name(lik->kind), tsrnn_likelihood_support_text(support),
                    item->series.component_names[c], item->id[0] ? " of series '" : "", item->id,
                    item->id[0] ? "'" : "", stamp, (double)v,
                    tr->cfg->scaler == TSRNN_SCALER_NONE ? "none" : "minmax",
                    tsrnn_likelihood_darts_class(lik->kind));
            }
    }
    return TSRNN_OK;
}

static enum tsrnn_status setup(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t C = ds->component_count, T = ds->training_length, K = ds->covariates->count;
    size_t B = (size_t)cfg->batch_size;
    /* Buffers for the largest batch this rank meets: batch_size, or its windows if fewer. */
    size_t batch_capacity = tsrnn_train_batch_capacity(cfg, ds, (size_t)tr->world_size);
    /* RNNModel's input: the target's C components beside the K future covariates. */
    struct tsrnn_likelihood likelihood;
    tsrnn_config_likelihood(cfg, &likelihood);
    bool probabilistic = likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    struct tsrnn_model_dims dims = {
        .kind = cfg->model,
        .input_count = C + K,
        .hidden_count = (size_t)cfg->hidden_dim,
        .layer_count = (size_t)cfg->n_rnn_layers,
        .output_count = C,
        .dropout = cfg->dropout,
        .param_count = tsrnn_likelihood_param_count(&likelihood),
    };

    TSRNN_TRY(tsrnn_train_check(cfg));
    if (tsrnn_likelihood_support(likelihood.kind) != TSRNN_SUPPORT_REAL)
        TSRNN_TRY(check_support(tr, &likelihood));
    if (tr->writes_files)
        TSRNN_TRY(check_plot(cfg));
    if (tr->compute == NULL) {
        TSRNN_TRY(tsrnn_train_compute_create(&tr->compute, cfg,
                                             tr->world != NULL ? tr->world->device_index : 0));
        tr->owns_compute = true;
    }
    /* Whether it fits, before anything is allocated or written. */
    size_t local_processes = tr->world != NULL && tr->world->local_world_size_known
                                 ? (size_t)tr->world->local_world_size
                                 : 1;
    TSRNN_TRY(
        tsrnn_train_check_memory(cfg, ds, &dims, tr->compute, batch_capacity, local_processes));
    tr->state.random_state = (uint32_t)cfg->random_state;
    tr->state.monitor = ds->val.count > 0 ? "val_loss" : "train_loss";
    tr->state.best_value = NAN;
    tr->state.best_epoch = -1;
    if ((size_t)snprintf(tr->run_dir, sizeof(tr->run_dir), "%s/%s", cfg->work_dir,
                         cfg->model_name) >= sizeof(tr->run_dir) - 16)
        return tsrnn_error(TSRNN_ERR_USAGE, "[output] work_dir + model_name is too long");
    snprintf(tr->ckpt_dir, sizeof(tr->ckpt_dir), "%s/checkpoints", tr->run_dir);
    if (tr->writes_files)
        TSRNN_TRY(lock_run_folder(tr, false));

    /* Room for training and validation batches (B x T) and the forecast (1 x icl). */
    /* What the backend must provide, asked once, before anything is allocated (the pjrt
     * backend's compiled step has Adam and MSELoss only, ...); the learning-rate schedulers
     * and early stopping run on the host and work everywhere. */
    struct tsrnn_compute_needs needs = {
        .loss = probabilistic                                              ? TSRNN_LOSS_LIKELIHOOD
                : cfg->loss_fn == TSRNN_LOSS_SMOOTH_L1 && cfg->beta == 0.0 ? TSRNN_LOSS_L1
                                                                           : cfg->loss_fn,
        .likelihood = tsrnn_likelihood_name(likelihood.kind),
        .likelihood_origin = tsrnn_config_origin(cfg, "model", "likelihood"),
        .other_optimizer = cfg->optimizer_cls != TSRNN_OPTIMIZER_ADAM,
        .rule = tsrnn_optimizer_rule(cfg->optimizer_cls, cfg->nesterov),
        .l2_weight_decay = cfg->optimizer_cls != TSRNN_OPTIMIZER_ADAMW && cfg->weight_decay > 0.0,
        .clipping = cfg->gradient_clip_val > 0.0,
        .world_size = tr->world_size,
        .loss_origin = tsrnn_config_origin(cfg, "training", "loss_fn"),
        .optimizer_origin = tsrnn_config_origin(cfg, "training", "optimizer_cls"),
        .clip_origin = tsrnn_config_origin(cfg, "trainer", "gradient_clip_val"),
        .weight_decay_origin = tsrnn_config_origin(cfg, "training", "weight_decay"),
        .nesterov_origin = tsrnn_config_origin(cfg, "training", "nesterov"),
        /* EarlyStopping on MeanAbsoluteError reads validation's absolute errors (L1Loss's) */
        .abs_errors = cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE,
        .monitor_origin = tsrnn_config_origin(cfg, "early_stopping", "monitor"),
    };
    TSRNN_TRY(tsrnn_compute_check_needs(tr->compute, &needs));
    TSRNN_TRY(tsrnn_model_init(&tr->model, tr->compute, &dims, batch_capacity, T));
    tr->model.loss = cfg->loss_fn;
    tr->model.loss_delta = (float)(cfg->loss_fn == TSRNN_LOSS_HUBER       ? cfg->delta
                                   : cfg->loss_fn == TSRNN_LOSS_SMOOTH_L1 ? cfg->beta
                                                                          : 0.0);
    if (probabilistic)
        TSRNN_TRY(tsrnn_model_likelihood(&tr->model, &likelihood));
    TSRNN_TRY(initial_params(tr, &dims));
    TSRNN_TRY(tsrnn_adam_init(&tr->adam, tr->compute, tr->model.table.total_count, cfg->lr));
    TSRNN_TRY(tsrnn_adam_set_rule(&tr->adam, cfg));
    /* What every training step updates: the model's parameters, the optimizer's state. */
    struct tsrnn_step_state state = tsrnn_adam_step_state(&tr->adam, tr->model.params);
    TSRNN_TRY(tsrnn_compute_bind_state(tr->model.ws, &state));
    tsrnn_lr_scheduler_init(&tr->scheduler, cfg);
    tr->adam.lr = tsrnn_lr_scheduler_initial_lr(&tr->scheduler, cfg->lr);
    tsrnn_early_stopping_init(&tr->early_stopping, cfg);
    if (tr->comm != NULL)
        tsrnn_comm_step_reduce(tr->comm, &tr->reduce);
    tr->read_every = 1;
    if (!tsrnn_compute_caps(tr->compute)->immediate_results) {
        int64_t every = cfg->log_every_n_steps;
        tr->read_every = every < 1                              ? 1
                         : every > TSRNN_MODEL_RESULTS_CAPACITY ? TSRNN_MODEL_RESULTS_CAPACITY
                                                                : (size_t)every;
    }
    if (cfg->init_weights[0] != '\0' && cfg->resume[0] == '\0')
        TSRNN_TRY(imported_moments(tr));
    if (cfg->resume[0] != '\0' && tr->writes_files)
        TSRNN_TRY(resume_from(tr, cfg->resume));
    TSRNN_TRY(share_rank0_state(tr));
    tsrnn_lr_scheduler_apply_momentum(&tr->scheduler, &tr->adam); /* OneCycleLR's, at its step */
    /* Darts' shuffle for this random_state: the weight initialisation has drawn one number
     * per parameter before the loaders start (also when init_weights replaces it); whether
     * Lightning's sanity check drew one more is rng_compat's. */
    struct tsrnn_darts_fit fit = {
        .random_state = (uint32_t)cfg->random_state,
        .param_count = tr->model.table.total_count,
        .validation = ds->val.count > 0,
        .sanity_check_draws = cfg->rng_compat == TSRNN_RNG_COMPAT_LIGHTNING1,
        .shuffle = cfg->shuffle,
    };
    /* Dropout draws inside each step from the same generator (dropout.h), which moves the
     * later epochs' shuffles on. */
    size_t W = (size_t)tr->world_size;
    tsrnn_dropout_stream_init(&tr->dropout, &fit, tsrnn_model_dropout_draws(&dims, T),
                              (ds->train.count + W - 1) / W, (size_t)tr->rank, W);
    struct tsrnn_shuffle shuffle = {
        .random_state = fit.random_state,
        .param_count = fit.param_count,
        .validation = fit.validation,
        .sanity_check_draws = fit.sanity_check_draws,
        .epoch_draws = tr->dropout.fit.epoch_draws,
    };
    TSRNN_TRY(tsrnn_sampler_init(&tr->sampler, ds->train.count, B, cfg->shuffle ? &shuffle : NULL,
                                 (size_t)tr->rank, (size_t)tr->world_size));
    if (tr->start_batch >= tsrnn_sampler_batch_count(&tr->sampler)) {
        tr->start_epoch++; /* the checkpoint's epoch had fewer batches: it is done */
        tr->start_batch = 0;
    }
    TSRNN_TRY(tsrnn_lr_scheduler_check_steps(&tr->scheduler, cfg,
                                             (int64_t)tsrnn_sampler_batch_count(&tr->sampler)));

    tr->x = malloc(batch_capacity * T * (C + K) * sizeof(float));
    tr->y = malloc(batch_capacity * T * C * sizeof(float));
    tr->val_idx = malloc((ds->val.count + 1) * sizeof(size_t));
    if (cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE ||
        cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MSE) {
        bool mae = cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE;
        tr->metric = mae ? "val_MeanAbsoluteError" : "val_MeanSquaredError";
        tr->metric_loss = mae ? TSRNN_LOSS_L1 : TSRNN_LOSS_MSE;
    }
    size_t sums = tr->metric != NULL ? 2 : 1;
    tr->metric_value = NAN;
    tr->val_se = malloc((sums * ds->val.count + 1) * sizeof(double));
    tr->batch_se = malloc(sums * batch_capacity * sizeof(double));
    if (tr->x == NULL || tr->y == NULL || tr->val_idx == NULL || tr->val_se == NULL ||
        tr->batch_se == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a batch of %zu windows",
                           batch_capacity);
    /* Validation shards without padding: each window is evaluated exactly once. */
    for (size_t i = (size_t)tr->rank; i < ds->val.count; i += (size_t)tr->world_size)
        tr->val_idx[tr->val_local_count++] = i;

    if (!tr->writes_files)
        return TSRNN_OK;
    TSRNN_TRY(prepare_run_folder(tr));
    tsrnn_world_report(tr->world, "run_dir", "%s", tr->run_dir);
    /* TSRNN_CHECKPOINT_SYNC=1 writes each epoch's checkpoints before the next epoch starts,
     * as tsrnn did before the writer thread: for tests and comparisons (docs/run-folder.md). */
    const char *sync = getenv("TSRNN_CHECKPOINT_SYNC");
    if (cfg->save_checkpoints)
        TSRNN_TRY(tsrnn_checkpoint_writer_create(&tr->ckpt_writer, tr->ckpt_dir, &tr->model, cfg,
                                                 ds, sync == NULL || strcmp(sync, "1") != 0));
    return TSRNN_OK;
}

static void finish(struct trainer *tr)
{
    tsrnn_jobs_finish(&tr->jobs); /* joined already where the run got that far */
    tsrnn_checkpoint_writer_destroy(tr->ckpt_writer); /* reads the model: first */
    tsrnn_metrics_csv_close(&tr->metrics);
    tsrnn_tb_close(&tr->tb);
    tsrnn_model_finish(&tr->model);
    tsrnn_adam_finish(&tr->adam);
    tsrnn_sampler_finish(&tr->sampler);
    if (tr->owns_compute)
        tsrnn_compute_destroy(tr->compute);
    free(tr->x);
    free(tr->y);
    free(tr->val_idx);
    free(tr->val_se);
    free(tr->batch_se);
    free(tr->gpus);
    tsrnn_run_lock_release(&tr->lock);
}

/* Lightning's max_steps: the run ends after that many optimizer steps, mid-epoch if need be
 * (that epoch still validates). */
static bool steps_done(const struct trainer *tr)
{
    return tr->cfg->max_steps >= 0 && tr->step >= tr->cfg->max_steps;
}

/* One optimizer step on the B windows idx, queued on the device: the batch, its dropout
 * masks, the optimizer's update for this step, then the whole step behind the compute door
 * (forward, loss, backward, the reduction over the ranks with this rank's stop request,
 * clipping, the update). Its loss and whether it diverged are read later (read_steps).
 * last_batch: the epoch's last. */
static enum tsrnn_status train_step(struct trainer *tr, const size_t *idx, size_t B,
                                    bool last_batch)
{
    size_t T = tr->ds->training_length;
    tsrnn_window_list_gather(&tr->ds->train, idx, B, tr->x, tr->y);
    struct tsrnn_step_args step = {
        .x = tr->x,
        .y = tr->y,
        .batch_count = B,
        .step_count = T,
        .dropout_masks = tsrnn_dropout_stream_next(&tr->dropout, &tr->model, B, T, last_batch),
        .loss = tr->model.loss,
        .loss_delta = tr->model.loss_delta,
        .clip_max_norm = (float)tr->cfg->gradient_clip_val,
        .reduce = tr->comm != NULL ? &tr->reduce : NULL,
        .stop_requested = tr->stop_requested != NULL && *tr->stop_requested,
    };
    tsrnn_adam_next_update(&tr->adam, &step.update);
    return tsrnn_compute_step(tr->model.ws, &step);
}

/* Reads the results of the pending steps, the first of which was batch `first_batch` of the
 * epoch and step tr->step - pending_count, and logs each one that updated the model as
 * Lightning does (metrics.csv, TensorBoard every log_every_n_steps, the bar). A step that
 * diverged ends the run; one after which the ranks agreed to stop sets stop_agreed. Steps
 * queued after a halt did nothing: the step counters go back to what was done, and *next_batch
 * is the batch to go on with. */
static enum tsrnn_status read_steps(struct trainer *tr, int64_t epoch, size_t first_batch,
                                    struct tsrnn_train_result *r, double *loss_sum,
                                    size_t *next_batch)
{
    struct tsrnn_step_results res;
    int64_t first_step = tr->step - (int64_t)tr->pending_count;
    TSRNN_TRY(tsrnn_compute_step_results(tr->model.ws, tr->step_losses,
                                         TSRNN_MODEL_RESULTS_CAPACITY, &res));
    double now = tsrnn_clock_now_s();
    for (size_t k = 0; k < res.updated; k++) {
        int64_t step = first_step + (int64_t)k;
        float loss = tr->step_losses[k];
        if (tr->writes_files) {
            TSRNN_TRY(tsrnn_metrics_csv_step(&tr->metrics, epoch, step, loss));
            /* Lightning logs a step's metrics, with the epoch, every log_every_n_steps. */
            if (tsrnn_tb_is_open(&tr->tb) && (step + 1) % tr->cfg->log_every_n_steps == 0) {
                TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, "train_loss", loss, step));
                TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, "epoch", (float)epoch, step));
            }
        }
        r->sample_count += (int64_t)tr->pending_windows[k];
        *loss_sum += loss;
        if (step == 0) /* the run's step 0 */
            r->first_step_loss = loss;
        r->last_step_loss = loss;
        tr->last_step_loss = loss;
        tsrnn_progress_set_metric(&tr->progress, "train_loss", loss);
        tsrnn_progress_update(&tr->progress, first_batch + k + 1, now);
    }
    /* Steps queued after a halt updated nothing: neither they nor Adam's count of them
     * happened, nor the scheduler's steps after them. */
    tr->adam.step -= (uint64_t)(res.taken - res.updated);
    if (res.updated < res.taken) {
        tr->scheduler.last_epoch = tr->pending_schedule[res.updated].last_epoch;
        tr->adam.lr = tr->pending_schedule[res.updated].lr;
        tsrnn_lr_scheduler_apply_momentum(&tr->scheduler, &tr->adam);
    }
    tr->step = first_step + (int64_t)res.updated;
    *next_batch = first_batch + res.updated;
    tr->pending_count = 0;
    if (res.halt == TSRNN_STEP_DIVERGED) {
        size_t k = res.halted_at;
        float loss = tr->step_losses[k];
        if (!isfinite(loss))
            return tsrnn_error(TSRNN_ERR_NUMERIC,
                               "training diverged: the loss is %g at epoch %lld, step %lld "
                               "(batch %zu of the epoch); try a smaller [training] lr (this step's "
                               "learning rate: %g)",
                               (double)loss, (long long)epoch, (long long)(first_step + (int64_t)k),
                               first_batch + k, tr->adam.lr);
        return tsrnn_error(TSRNN_ERR_NUMERIC,
                           "training diverged: a gradient is NaN or infinite at epoch %lld, step "
                           "%lld (batch %zu of the epoch); try a smaller [training] lr (this "
                           "step's learning rate: %g)",
                           (long long)epoch, (long long)(first_step + (int64_t)k), first_batch + k,
                           tr->adam.lr);
    }
    tr->stop_agreed = res.halt == TSRNN_STEP_STOPPED;
    return TSRNN_OK;
}

/* The validation loss: the loss's errors (squared, absolute, Huber's) over every validation
 * window / their count, and the monitored torchmetrics metric the same way (tr->metric_value,
 * as torchmetrics' sum over every element / their count). Each rank evaluates its windows;
 * the per-window sums meet in one allreduce (every window's entry is non-zero on one rank
 * only, so the sum is exact) and are added in window order: the same value, bit for bit, as
 * one process evaluating them all. */
static enum tsrnn_status validate(struct trainer *tr, double *val_loss)
{
    const struct tsrnn_window_list *val = &tr->ds->val;
    size_t B = (size_t)tr->cfg->batch_size, T = tr->ds->training_length, V = val->count;
    size_t sums = tr->metric != NULL ? 2 : 1;
    double *se = tr->batch_se, *metric_se = tr->batch_se + tr->model.batch_capacity;

    memset(tr->val_se, 0, sums * V * sizeof(double));
    for (size_t first = 0; first < tr->val_local_count; first += B) {
        const size_t *idx = tr->val_idx + first;
        size_t count = tr->val_local_count - first < B ? tr->val_local_count - first : B;
        tsrnn_window_list_gather(val, idx, count, tr->x, tr->y);
        TSRNN_TRY(tsrnn_model_evaluate(&tr->model, tr->x, tr->y, count, T, se));
        if (tr->metric != NULL)
            TSRNN_TRY(tsrnn_model_window_errors(&tr->model, tr->metric_loss, 0.0f, metric_se));
        for (size_t i = 0; i < count; i++) {
            tr->val_se[idx[i]] = se[i];
            if (tr->metric != NULL)
                tr->val_se[V + idx[i]] = metric_se[i];
        }
    }
    if (tr->comm != NULL)
        TSRNN_TRY(tsrnn_comm_allreduce_sum(tr->comm, tr->val_se, sums * V, TSRNN_COMM_F64));
    double sum = 0.0, metric_sum = 0.0;
    for (size_t i = 0; i < V; i++) {
        sum += tr->val_se[i];
        if (tr->metric != NULL)
            metric_sum += tr->val_se[V + i];
    }
    double elements = (double)(V * T * tr->ds->component_count);
    *val_loss = sum / elements;
    tr->metric_value = tr->metric != NULL ? metric_sum / elements : NAN;
    return TSRNN_OK;
}

/* The checkpoints of the epoch just finished: a snapshot for the writer, which writes them
 * while the next epoch trains. */
static enum tsrnn_status save_checkpoints(struct trainer *tr)
{
    struct tsrnn_checkpoint_snapshot *snap;
    TSRNN_TRY(tsrnn_checkpoint_snapshot_take(&snap, &tr->model, &tr->adam, &tr->state));
    return tsrnn_checkpoint_writer_put(tr->ckpt_writer, snap);
}

/* Waits until the writer has every checkpoint handed over on disk, and names them: before
 * anything reads them or the process ends. A failed write is returned in place of `status`:
 * it happened at an earlier epoch's end, where the synchronous run would have stopped. */
static enum tsrnn_status drain_checkpoints(struct trainer *tr, enum tsrnn_status status)
{
    if (tr->ckpt_writer == NULL)
        return status;
    enum tsrnn_status drained = tsrnn_checkpoint_writer_drain(
        tr->ckpt_writer, tr->last_checkpoint, tr->best_checkpoint, sizeof(tr->last_checkpoint));
    return drained != TSRNN_OK ? drained : status;
}

/* max_steps = 0 on a new run: no step is taken, yet the weights (initialised or imported with
 * init_weights) are saved as checkpoints/last-epoch=0.safetensors, epoch 0 not begun, so that
 * tsrnn-predict can use them and --resume last trains them from the first step. Written
 * whatever save_checkpoints says: that is what such a run is for. */
static enum tsrnn_status save_untrained(struct trainer *tr)
{
    struct tsrnn_train_state *st = &tr->state;
    st->epoch = 0;
    st->batches_done = 0;
    st->epoch_complete = false;
    st->global_step = 0;
    st->monitor_value = NAN;
    TSRNN_TRY(tsrnn_make_dirs(tr->ckpt_dir));
    char name[256], path[sizeof(tr->ckpt_dir) + sizeof(name)];
    tsrnn_checkpoint_name_last(name, sizeof(name), 0);
    snprintf(path, sizeof(path), "%s/%s", tr->ckpt_dir, name);
    TSRNN_TRY(tsrnn_checkpoint_save(path, &tr->model, &tr->adam, st, tr->cfg, tr->ds, true));
    snprintf(tr->last_checkpoint, sizeof(tr->last_checkpoint), "%s", path);
    return TSRNN_OK;
}

/* After an epoch's last batch (and validation): record where training stands, hand the
 * logs to the OS and write the checkpoints. */
static enum tsrnn_status end_epoch(struct trainer *tr, int64_t epoch, size_t batches_done,
                                   bool complete, double monitor_value)
{
    struct tsrnn_train_state *st = &tr->state;

    st->epoch = epoch;
    st->batches_done = (int64_t)batches_done;
    st->epoch_complete = complete;
    st->global_step = tr->step;
    st->monitor_value = monitor_value;
    /* NaN: an interrupted epoch, nothing to rank. */
    if (!isnan(monitor_value) && !(monitor_value >= st->best_value)) { /* best NaN: the first */
        st->best_value = monitor_value;
        st->best_epoch = epoch;
    }
    /* Lightning at the end of a whole epoch: EarlyStopping on the validation's end, then the
     * scheduler (interval "epoch"). The checkpoint below holds their new state. */
    if (complete) {
        const struct tsrnn_config *cfg = tr->cfg;
        bool on_val = cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_LOSS;
        /* Darts logs train_loss per step: Lightning's callback_metrics hold the last one. */
        const char *watched = tr->metric != NULL ? tr->metric : on_val ? "val_loss" : "train_loss";
        double value = tr->metric != NULL ? tr->metric_value
                       : on_val           ? monitor_value
                                          : tr->last_step_loss;
        tr->stop_early = tsrnn_early_stopping_check(&tr->early_stopping, watched, value,
                                                    tr->stop_reason, sizeof(tr->stop_reason));
        tsrnn_lr_scheduler_update(&tr->scheduler, &tr->adam, TSRNN_LR_INTERVAL_EPOCH, epoch,
                                  (double)(float)monitor_value);
    }
    st->has_controls = true;
    st->lr = tr->adam.lr;
    st->sched_last_epoch = tr->scheduler.last_epoch;
    st->sched_best = tr->scheduler.best;
    st->sched_num_bad_epochs = tr->scheduler.num_bad_epochs;
    st->sched_cooldown_counter = tr->scheduler.cooldown_counter;
    st->es_wait_count = tr->early_stopping.wait_count;
    st->es_best_score = tr->early_stopping.best_score;
    if (!tr->writes_files)
        return TSRNN_OK;
    /* A job beside the training failed (config.ini could not be written, ...): the run stops
     * here rather than train on to the end. */
    if (tsrnn_jobs_failed(&tr->jobs))
        return tsrnn_jobs_finish(&tr->jobs);
    TSRNN_TRY(tsrnn_metrics_csv_flush(&tr->metrics));
    if (tsrnn_tb_is_open(&tr->tb)) {
        TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, "lr", (float)tr->epoch_lr, tr->step - 1));
        TSRNN_TRY(tsrnn_tb_flush(&tr->tb));
    }
    return tr->cfg->save_checkpoints ? save_checkpoints(tr) : TSRNN_OK;
}

/* The run stops before batch `batch` of `epoch`: rank 0 saves what is done, as the last
 * checkpoint, for --resume last. */
static enum tsrnn_status interrupt(struct trainer *tr, int64_t epoch, size_t batch)
{
    if (batch > 0) /* mid-epoch; else the previous epoch's checkpoint is the right one */
        TSRNN_TRY(end_epoch(tr, epoch, batch, false, NAN));
    TSRNN_TRY(drain_checkpoints(tr, TSRNN_OK)); /* on disk before the process ends */
    const char *saved = !tr->writes_files            ? "rank 0 saves it"
                        : !tr->cfg->save_checkpoints ? "none ([output] save_checkpoints = false)"
                        : tr->last_checkpoint[0] == '\0' ? "none yet"
                                                         : tsrnn_display_path(tr->last_checkpoint);
    return tsrnn_error(TSRNN_ERR_INTERRUPTED,
                       "interrupted at epoch %lld after step %lld: %s/metrics.csv holds the %lld "
                       "finished steps; checkpoint: %s",
                       (long long)epoch, (long long)tr->step - 1, tsrnn_display_path(tr->run_dir),
                       (long long)tr->step, saved);
}

static enum tsrnn_status run_epoch(struct trainer *tr, int64_t epoch, size_t first_batch,
                                   struct tsrnn_train_result *r)
{
    size_t batch_count = tsrnn_sampler_batch_count(&tr->sampler);
    int64_t first_step = tr->step;
    double loss_sum = 0.0;
    size_t b;

    tsrnn_sampler_set_epoch(&tr->sampler, (uint64_t)epoch);
    tr->epoch_lr = tr->adam.lr;
    tsrnn_dropout_stream_seek(&tr->dropout, epoch, first_batch * (size_t)tr->cfg->batch_size);
    tsrnn_progress_begin_epoch(&tr->progress, epoch, batch_count, tsrnn_clock_now_s());
    for (b = first_batch; b < batch_count && !steps_done(tr); b++) {
        /* Asked to stop (the flag travelled with a step's gradients, so every rank agrees):
         * checkpoint the steps done so far; an epoch's last batch first finishes the epoch,
         * validation included, and the epoch's checkpoint covers it. */
        if (tr->stop_agreed)
            return interrupt(tr, epoch, b);
        const size_t *idx;
        size_t count = tsrnn_sampler_batch(&tr->sampler, b, &idx);
        double t0 = tsrnn_clock_now_s();
        TSRNN_TRY(train_step(tr, idx, count, b + 1 == batch_count));
        tr->pending_windows[tr->pending_count++] = count;
        tr->step++;
        /* Lightning steps an interval-"step" scheduler after each optimizer step; the state
         * before it is kept until the step's result is read (a halt undoes later steps). */
        tr->pending_schedule[tr->pending_count - 1] =
            (struct pending_schedule){ tr->scheduler.last_epoch, tr->adam.lr };
        tsrnn_lr_scheduler_update(&tr->scheduler, &tr->adam, TSRNN_LR_INTERVAL_STEP, (int64_t)b,
                                  NAN);
        /* Every rank reads at the same steps: what decides it is the same everywhere. */
        if (tr->pending_count == tr->read_every || b + 1 == batch_count || steps_done(tr)) {
            size_t next;
            TSRNN_TRY(read_steps(tr, epoch, b + 1 - tr->pending_count, r, &loss_sum, &next));
            b = next - 1;
        }
        r->train_s += tsrnn_clock_now_s() - t0;
    }
    r->epoch_mean_loss = loss_sum / (double)(tr->step - first_step);
    double monitor_value = r->epoch_mean_loss;

    if (tr->ds->val.count > 0) {
        double t0 = tsrnn_clock_now_s(), val_loss;
        TSRNN_TRY(validate(tr, &val_loss));
        r->val_s += tsrnn_clock_now_s() - t0;
        if (!isfinite(val_loss))
            return tsrnn_error(TSRNN_ERR_NUMERIC,
                               "training diverged: the validation loss is %g after epoch %lld "
                               "(step %lld); try a smaller [training] lr (the epoch's learning "
                               "rate: %g)",
                               val_loss, (long long)epoch, (long long)tr->step - 1, tr->adam.lr);
        r->val_loss = val_loss;
        monitor_value = val_loss;
        if (tr->writes_files) {
            TSRNN_TRY(tsrnn_metrics_csv_epoch(&tr->metrics, epoch, tr->step - 1, val_loss));
            if (tsrnn_tb_is_open(&tr->tb)) {
                TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, "val_loss", (float)val_loss, tr->step - 1));
                if (tr->metric != NULL)
                    TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, tr->metric, (float)tr->metric_value,
                                              tr->step - 1));
                TSRNN_TRY(tsrnn_tb_scalar(&tr->tb, "epoch", (float)epoch, tr->step - 1));
            }
        }
        tsrnn_progress_set_metric(&tr->progress, "val_loss", val_loss);
        if (tr->metric != NULL)
            tsrnn_progress_set_metric(&tr->progress, tr->metric, tr->metric_value);
    }
    /* The bar's rate is the training's; checkpoints are written after it is done. */
    tsrnn_progress_end_epoch(&tr->progress, tsrnn_clock_now_s());
    TSRNN_TRY(end_epoch(tr, epoch, b, b == batch_count, monitor_value));
    if (tr->stop_agreed && b == batch_count)
        return interrupt(tr, epoch + 1, 0);
    if (tr->ds->val.count > 0) {
        r->best_val_loss = tr->state.best_value;
        r->best_epoch = tr->state.best_epoch;
    }
    r->epoch_count = epoch + 1;
    r->step_count = tr->step;
    r->final_lr = tr->adam.lr;
    r->stopped_early = tr->stop_early;
    return TSRNN_OK;
}

/* Whether the run's series have names (several files, or a long-format file): its
 * forecasts then carry an id column. */
static bool named_series(const struct tsrnn_dataset *ds)
{
    return ds->items[0].id[0] != '\0';
}

/* Series i of the run as a forecast source: its scaler, covariates and training part's end. */
static struct tsrnn_forecast_source forecast_source(const struct tsrnn_dataset *ds, size_t i)
{
    const struct tsrnn_dataset_series *item = &ds->items[i];
    return (struct tsrnn_forecast_source){
        .series = &item->series,
        .scaler = &item->scaler,
        .origin = item->train_length,
        .id = named_series(ds) ? item->id : NULL,
        .covariates = ds->covariates,
        .cov_scaler = &item->cov_scaler,
    };
}

/* [forecast] n past the last date tsrnn can write or past a series' covariate columns fails
 * before the run folder is touched, on every rank (the data is the same everywhere), not
 * after training. */
static enum tsrnn_status check_forecast(const struct trainer *tr)
{
    if (tr->cfg->forecast_n <= 0)
        return TSRNN_OK;
    for (size_t i = 0; i < tr->ds->series_count; i++) {
        struct tsrnn_forecast_source src = forecast_source(tr->ds, i);
        enum tsrnn_status status = tsrnn_forecast_check_range(&src, (size_t)tr->cfg->forecast_n);
        if (status != TSRNN_OK)
            return tsrnn_forecast_error_series(
                tsrnn_error_append(status, " ([forecast] n = %d, %s)", tr->cfg->forecast_n,
                                   tsrnn_config_origin(tr->cfg, "forecast", "n")),
                src.id);
        TSRNN_TRY(tsrnn_forecast_check_covariates(&src, (size_t)tr->cfg->input_chunk_length,
                                                  (size_t)tr->cfg->forecast_n));
    }
    return TSRNN_OK;
}

/* The id column's header in the forecast files: [data] id_col, else "series". */
static const char *id_column(const struct tsrnn_config *cfg)
{
    return cfg->id_col[0] != '\0' ? cfg->id_col : "series";
}

/* validation.csv (named series): each series' scores, then the mean over them under an
 * empty id. */
static enum tsrnn_status write_validation(const struct trainer *tr,
                                          const struct tsrnn_forecast_scores *each,
                                          const struct tsrnn_forecast_scores *mean,
                                          const struct tsrnn_quantile_scores *q_each,
                                          const struct tsrnn_quantile_scores *q_mean)
{
    const struct tsrnn_dataset *ds = tr->ds;
    char path[PATH_MAX + 32];
    struct tsrnn_atomic_file af;
    snprintf(path, sizeof(path), "%s/validation.csv", tr->run_dir);
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    fprintf(af.file, "%s,steps,mape,mae,rmse", id_column(tr->cfg));
    if (q_each != NULL)
        tsrnn_quantile_scores_header(af.file, q_mean);
    fputc('\n', af.file);
    for (size_t i = 0; i <= ds->series_count; i++) {
        bool all = i == ds->series_count;
        const struct tsrnn_forecast_scores *sc = all ? mean : &each[i];
        size_t steps = 0;
        for (size_t k = all ? 0 : i; k < (all ? ds->series_count : i + 1); k++)
            steps += ds->items[k].val_length;
        fprintf(af.file, "%s,%zu,%.9g,%.9g,%.9g", all ? "" : ds->items[i].id, steps, sc->mape,
                sc->mae, sc->rmse);
        if (q_each != NULL)
            tsrnn_quantile_scores_row(af.file, all ? q_mean : &q_each[i]);
        fputc('\n', af.file);
    }
    if (fflush(af.file) != 0 || ferror(af.file)) {
        int err = errno != 0 ? errno : EIO;
        tsrnn_atomic_file_abort(&af);
        return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s", tsrnn_display_path(path));
    }
    return tsrnn_atomic_file_commit(&af);
}

/* How the run's model forecasts with a likelihood ([forecast] num_samples, ...): Darts'
 * predict() call number `call` after fit() (1: draws 4 and 5 of random_state's RandomState;
 * each later call two more), batch_size the model's. */
static void forecast_options(const struct trainer *tr, unsigned call, bool parameters,
                             struct tsrnn_forecast_options *opt)
{
    uint32_t seed = tsrnn_darts_seed((uint32_t)tr->cfg->random_state,
                                     TSRNN_DARTS_PREDICT_DRAW + 2 * (call - 1));
    tsrnn_forecast_options_from_config(opt, tr->cfg, seed, parameters);
}

/* The validation forecast of a model with a likelihood: Darts' predict(n = the longest
 * validation part, series = the training parts, num_samples) as one call (the second
 * predict() after fit(): the first is [forecast]'s), each series' forecast cut to its
 * validation part; the point metrics on the median, the quantile metrics on the samples. */
static enum tsrnn_status sampled_validation(struct trainer *tr, struct tsrnn_forecast_scores *each,
                                            struct tsrnn_quantile_scores *q_each,
                                            struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count, n = 0;
    struct tsrnn_forecast *f = calloc(S, sizeof(*f));
    struct tsrnn_forecast_source *sources = calloc(S, sizeof(*sources));
    size_t *lengths = calloc(S, sizeof(*lengths));
    struct tsrnn_forecast_options opt;
    enum tsrnn_status status = TSRNN_OK;
    if (f == NULL || sources == NULL || lengths == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' forecasts", S);
    for (size_t i = 0; status == TSRNN_OK && i < S; i++) {
        sources[i] = forecast_source(ds, i);
        lengths[i] = ds->items[i].val_length;
        n = lengths[i] > n ? lengths[i] : n;
    }
    forecast_options(tr, 2, false, &opt);
    if (status == TSRNN_OK)
        status = tsrnn_forecast_predict(f, &tr->model, sources, S,
                                        (size_t)tr->cfg->input_chunk_length, n, lengths, &opt);
    r->has_quantile_scores = status == TSRNN_OK;
    for (size_t i = 0; status == TSRNN_OK && i < S; i++) {
        each[i] = (struct tsrnn_forecast_scores){ f[i].mape, f[i].mae, f[i].rmse };
        r->forecast_count += f[i].length;
        r->has_quantile_scores &= f[i].has_quantile_scores;
        if (f[i].has_quantile_scores)
            q_each[i] = f[i].quantile_scores;
        tsrnn_forecast_finish(&f[i]);
    }
    free(f);
    free(sources);
    free(lengths);
    return status;
}

/* Darts' RNNModel.predict(n = validation length, series = training part) of every series,
 * in the original scale, scored with Darts' mape(actual, pred) = 100 * mean |(a - p) / a|,
 * mae and rmse, each per component then averaged over the components; several series'
 * scores are averaged as Darts' metric(actual_list, pred_list, series_reduction=np.mean)
 * does. */
static enum tsrnn_status forecast_validation(struct trainer *tr, struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count;
    struct tsrnn_forecast_scores *each = calloc(S, sizeof(*each)), mean;
    struct tsrnn_quantile_scores *q_each = calloc(S, sizeof(*q_each));
    if (each == NULL || q_each == NULL) {
        free(each);
        free(q_each);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' scores", S);
    }
    enum tsrnn_status status = TSRNN_OK;
    r->forecast_count = 0;
    bool sampled = tr->model.likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    if (sampled)
        status = sampled_validation(tr, each, q_each, r);
    for (size_t i = 0; !sampled && i < S && status == TSRNN_OK; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        struct tsrnn_forecast f;
        struct tsrnn_forecast_source src = forecast_source(ds, i);
        status = tsrnn_forecast_run(&f, &tr->model, &src, (size_t)tr->cfg->input_chunk_length,
                                    item->val_length);
        if (status != TSRNN_OK)
            break;
        each[i] = (struct tsrnn_forecast_scores){ f.mape, f.mae, f.rmse };
        r->forecast_count += f.length;
        if (f.zero_actual_count > 0)
            tsrnn_warn("MAPE leaves out the %zu value%s of 0 in the validation part%s%s%s, as "
                       "Darts' mape() does (their percentage error is NaN, or 0 where the "
                       "forecast is 0 too)%s",
                       f.zero_actual_count, f.zero_actual_count > 1 ? "s" : "",
                       S > 1 ? " of series '" : "", S > 1 ? item->id : "", S > 1 ? "'" : "",
                       isnan(f.mape) ? ": none is left, MAPE is undefined" : "");
        tsrnn_forecast_finish(&f);
    }
    for (size_t i = 0; sampled && status == TSRNN_OK && i < S; i++)
        if (isnan(each[i].mape))
            tsrnn_warn("MAPE is undefined: the validation part%s%s%s holds a 0 (Darts' mape() "
                       "needs actual values that are not 0)",
                       S > 1 ? " of series '" : "", S > 1 ? ds->items[i].id : "", S > 1 ? "'" : "");
    if (status == TSRNN_OK) {
        tsrnn_forecast_scores_mean(&mean, each, S);
        r->mape = mean.mape;
        r->mae = mean.mae;
        r->rmse = mean.rmse;
        if (r->has_quantile_scores)
            tsrnn_quantile_scores_mean(&r->quantile_scores, q_each, S);
        if (tr->writes_files && named_series(ds))
            status = write_validation(tr, each, &mean, r->has_quantile_scores ? q_each : NULL,
                                      &r->quantile_scores);
    }
    free(each);
    free(q_each);
    return status;
}

/* The forecast plots of f (one per series): forecast.png of the one series, or
 * forecast_<id>.png of each of the first TSRNN_FORECAST_PLOTS named series. */
static enum tsrnn_status plot_forecasts(struct trainer *tr, const struct tsrnn_forecast *f,
                                        size_t *drawn)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t count =
        ds->series_count < TSRNN_FORECAST_PLOTS ? ds->series_count : TSRNN_FORECAST_PLOTS;
    const char *ids[TSRNN_FORECAST_PLOTS];
    *drawn = 0;
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        char path[PATH_MAX + TSRNN_NAME_MAX + 32], title[TSRNN_NAME_MAX * 3],
            file_id[TSRNN_NAME_MAX];
        ids[i] = item->id;
        tsrnn_forecast_plot_file_id(ids, i, file_id, sizeof(file_id));
        if (named_series(ds)) {
            snprintf(path, sizeof(path), "%s/forecast_%s.png", tr->run_dir, file_id);
            snprintf(title, sizeof(title), "%s %s, series %s", cfg->model_name,
                     tsrnn_model_kind_name(cfg->model), item->id);
        } else {
            snprintf(path, sizeof(path), "%s/forecast.png", tr->run_dir);
            snprintf(title, sizeof(title), "%s %s", cfg->model_name,
                     tsrnn_model_kind_name(cfg->model));
        }
        TSRNN_TRY(tsrnn_forecast_plot(&f[i], &item->series, title, PLOT_WIDTH, PLOT_HEIGHT, path));
        (*drawn)++;
    }
    return TSRNN_OK;
}

/* A file's whole text, for write_text_job. */
struct text_file {
    const char *path;
    char *text; /* malloc'd */
    size_t nbytes;
};

static enum tsrnn_status write_text_job(void *arg)
{
    const struct text_file *t = arg;
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, t->path));
    if (fwrite(t->text, 1, t->nbytes, af.file) != t->nbytes) {
        int err = errno != 0 ? errno : EIO;
        tsrnn_atomic_file_abort(&af);
        return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s", tsrnn_display_path(t->path));
    }
    return tsrnn_atomic_file_commit(&af);
}

/* forecast.csv's text (quantile columns with samples: tsrnn_forecast_write_set), or with
 * `samples` forecast_samples.csv's, from the forecasts f of every series, into `csv`. */
static enum tsrnn_status forecast_text(struct trainer *tr, const struct tsrnn_forecast *f,
                                       const struct tsrnn_forecast_source *sources,
                                       const struct tsrnn_forecast_options *opt, bool samples,
                                       struct text_file *csv)
{
    FILE *mem = open_memstream(&csv->text, &csv->nbytes);
    if (mem == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s", tsrnn_display_path(csv->path));
    size_t S = tr->ds->series_count;
    const char *id_name = id_column(tr->cfg);
    enum tsrnn_status status =
        samples ? tsrnn_forecast_write_samples(f, sources, S, id_name, mem)
                : tsrnn_forecast_write_set(f, sources, S, id_name, &tr->model.likelihood, opt, mem);
    if (fclose(mem) != 0 && status == TSRNN_OK)
        status = TSRNN_ERR_IO;
    if (status == TSRNN_ERR_IO) /* memory, with a stream in memory */
        status =
            tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %s", tsrnn_display_path(csv->path));
    return status;
}

/* The [forecast] section: n steps after each series' training part, as forecast.csv and
 * (with plot = true and a build with cairo) the plots in the run folder; with a likelihood,
 * Darts' first predict() after fit(), num_samples paths each (and forecast_samples.csv with
 * samples = true). */
static enum tsrnn_status write_forecast(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t S = ds->series_count;
    char path[PATH_MAX + 16], samples_path[PATH_MAX + 32];
    struct tsrnn_forecast_options opt;
    forecast_options(tr, 1, cfg->predict_likelihood_parameters, &opt);

    struct tsrnn_forecast_source *sources = calloc(S, sizeof(*sources));
    struct tsrnn_forecast *f = calloc(S, sizeof(*f));
    if (sources == NULL || f == NULL) {
        free(sources);
        free(f);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series' forecasts", S);
    }
    for (size_t i = 0; i < S; i++)
        sources[i] = forecast_source(ds, i);
    snprintf(path, sizeof(path), "%s/forecast.csv", tr->run_dir);
    snprintf(samples_path, sizeof(samples_path), "%s/forecast_samples.csv", tr->run_dir);
    /* The forecasts here (they run the model, this thread's); the files with their fsyncs
     * beside the pictures, on the helper thread. */
    struct text_file csv = { .path = path }, samples = { .path = samples_path };
    enum tsrnn_status status =
        tsrnn_forecast_predict(f, &tr->model, sources, S, (size_t)cfg->input_chunk_length,
                               (size_t)cfg->forecast_n, NULL, &opt);
    bool have_forecasts = status == TSRNN_OK;
    bool write_samples = cfg->forecast_samples && f[0].sample_count > 1;
    if (status == TSRNN_OK)
        status = forecast_text(tr, f, sources, &opt, false, &csv);
    if (status == TSRNN_OK)
        status = tsrnn_jobs_add(&tr->jobs, write_text_job, &csv);
    if (status == TSRNN_OK && write_samples)
        status = forecast_text(tr, f, sources, &opt, true, &samples);
    if (status == TSRNN_OK && write_samples)
        status = tsrnn_jobs_add(&tr->jobs, write_text_job, &samples);
    tsrnn_jobs_start(&tr->jobs);
    /* plot = true is the default: where cairo cannot draw (a build without it, a machine
     * without libcairo.so.2) the picture is skipped with a warning; asked for explicitly, it
     * was refused before training (check_plot). A forecast of the likelihood's parameters has
     * no picture. */
    char why[1024];
    bool parameters = have_forecasts && f[0].param_count > 0;
    bool draw = cfg->forecast_plot && !parameters && tsrnn_plot_usable(why, sizeof(why));
    if (cfg->forecast_plot && !parameters && !draw)
        tsrnn_warn("%s not drawn: %s; [forecast] plot = false silences this",
                   named_series(ds) ? "the forecast plots are" : "forecast.png is", why);
    size_t drawn = 0;
    if (status == TSRNN_OK && draw)
        status = plot_forecasts(tr, f, &drawn);
    status = finish_jobs(tr, status);
    free(csv.text);
    free(samples.text);
    if (status == TSRNN_OK && tr->out != NULL && !named_series(ds)) {
        const struct tsrnn_dataset_series *item = &ds->items[0];
        char first[64], last[64];
        tsrnn_time_format(f[0].times[0], item->series.time_unit, first, sizeof(first));
        tsrnn_time_format(f[0].times[f[0].length - 1], item->series.time_unit, last, sizeof(last));
        fprintf(tr->out, "Forecast %zu steps (%s .. %s", f[0].length, first, last);
        if (f[0].sample_count > 1)
            fprintf(tr->out, ", %zu sample paths", f[0].sample_count);
        fprintf(tr->out, "): %s/forecast.csv%s%s\n", tsrnn_display_path(tr->run_dir),
                write_samples ? ", forecast_samples.csv" : "", draw ? " and forecast.png" : "");
    } else if (status == TSRNN_OK && tr->out != NULL) {
        fprintf(tr->out, "Forecast %d steps of each of the %zu series", cfg->forecast_n, S);
        if (f[0].sample_count > 1)
            fprintf(tr->out, ", %zu sample paths each", f[0].sample_count);
        fprintf(tr->out, ": %s/forecast.csv%s", tsrnn_display_path(tr->run_dir),
                write_samples ? ", forecast_samples.csv" : "");
        if (drawn > 0)
            fprintf(tr->out, " and the plots of the first %zu (forecast_<series>.png)", drawn);
        fputc('\n', tr->out);
    }
    for (size_t i = 0; have_forecasts && i < S; i++)
        tsrnn_forecast_finish(&f[i]);
    free(f);
    free(sources);
    return status;
}

static void print_banner(const struct trainer *tr, FILE *out, bool devices)
{
    bool gpu_used = tsrnn_compute_kind(tr->compute) == TSRNN_COMPUTE_CUDA;
    if (devices)
        tsrnn_report_devices(out, gpu_used || tsrnn_compute_available(TSRNN_COMPUTE_CUDA, NULL, 0),
                             gpu_used, tsrnn_compute_tpu_cores(tr->compute));
    if (gpu_used)
        tsrnn_report_cuda_devices(out, tr->world ? tr->world->local_rank : 0);
    tsrnn_report_model_summary(out, tsrnn_model_kind_name(tr->model.dims.kind),
                               (int64_t)tr->model.table.rnn_count,
                               (int64_t)tr->model.table.head_count);
}

/* Each rank's GPU for the summary, on every rank (Lightning's DeviceStatsMonitor reads the
 * same from CUDA): rank r's slot of (W, GPU_SLOT) doubles holds the memory in use and in all
 * (bytes) and the name, one character per double; every rank fills its own slot and one
 * allreduce sums the zeros of the others into it. GPU ranks only: a CPU run prints nothing
 * new and issues no extra collective. Not counted in the collectives' time per step. */
#define GPU_NAME_CHARS 64
#define GPU_SLOT       (2 + GPU_NAME_CHARS)

static enum tsrnn_status gather_gpus(struct trainer *tr)
{
    char name[GPU_NAME_CHARS] = "";
    size_t used = 0, total = 0, W = (size_t)tr->world_size;
    if (tsrnn_compute_kind(tr->compute) != TSRNN_COMPUTE_CUDA)
        return TSRNN_OK;
    bool known = tsrnn_compute_device_memory(tr->compute, name, sizeof(name), &used, &total);
    if ((tr->gpus = calloc(W * GPU_SLOT, sizeof(double))) == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the GPU summary");
    double *mine = tr->gpus + (size_t)tr->rank * GPU_SLOT;
    mine[0] = known ? (double)used : -1.0;
    mine[1] = (double)total;
    for (size_t i = 0; i < GPU_NAME_CHARS; i++)
        mine[2 + i] = (double)(unsigned char)name[i];
    if (tr->comm == NULL)
        return TSRNN_OK;
    return tsrnn_comm_allreduce_sum(tr->comm, tr->gpus, W * GPU_SLOT, TSRNN_COMM_F64);
}

/* "rank 1: NVIDIA H200, 1.21 GiB of 139.8 GiB in use (the device's, end of training)" per rank. */
static void print_gpus(const struct trainer *tr, FILE *out)
{
    for (int k = 0; tr->gpus != NULL && k < tr->world_size; k++) {
        const double *slot = tr->gpus + (size_t)k * GPU_SLOT;
        char name[GPU_NAME_CHARS];
        for (size_t i = 0; i < GPU_NAME_CHARS; i++)
            name[i] = (char)(unsigned char)slot[2 + i];
        name[GPU_NAME_CHARS - 1] = '\0';
        if (slot[0] < 0)
            fprintf(out, "rank %d: GPU %s, memory in use unknown\n", k, name);
        else
            fprintf(
                out,
                "rank %d: GPU %s, %.2f GiB of %.1f GiB in use (the device's, end of training)\n", k,
                name, slot[0] / 1073741824.0, slot[1] / 1073741824.0);
    }
}

/* "MQL 0.05: 4.12, 0.5: 9.87, 0.95: 3.33; 5-95% interval: coverage (MIC) 0.913, width (MIW)
 * 61.2 (500 sample paths, original scale)" */
static void print_quantile_scores(FILE *out, const struct tsrnn_quantile_scores *q, size_t samples)
{
    fprintf(out, "MQL");
    for (size_t k = 0; k < q->quantile_count; k++)
        fprintf(out, "%s %g: %.6g", k ? "," : "", q->quantiles[k], q->mql[k]);
    fprintf(out,
            "; %g-%g%% interval: coverage (MIC) %.6g, width (MIW) %.6g (%zu sample paths, "
            "original scale)\n",
            100 * q->low, 100 * q->high, q->mic, q->miw, samples);
}

static void print_result(const struct trainer *tr, const struct tsrnn_train_result *r, FILE *out)
{
    double train_s = r->train_s > 0.0 ? r->train_s : 1e-9;
    int64_t steps = r->step_count - r->first_step;
    if (steps == 0 && r->first_step == 0 && tr->cfg->max_steps == 0) {
        fprintf(out, "No training step (max_steps = 0): the %s weights are saved as %s\n",
                tr->cfg->init_weights[0] != '\0' ? "imported (init_weights)" : "initial",
                tr->last_checkpoint[0] != '\0' ? tsrnn_display_path(tr->last_checkpoint)
                                               : "rank 0's checkpoint");
    } else if (steps == 0) { /* resumed past the end: Lightning also just stops */
        fprintf(out,
                "Nothing left to train: the checkpoint ends at epoch %lld (step %lld) and "
                "n_epochs = %d, max_steps = %lld; raise them to train on\n",
                (long long)r->epoch_count - 1, (long long)r->step_count, tr->cfg->n_epochs,
                (long long)tr->cfg->max_steps);
    } else {
        if (r->first_step > 0)
            fprintf(out, "Resumed at step %lld: ", (long long)r->first_step);
        fprintf(out,
                "Trained %lld epochs (%lld steps) in %.3f s: %.0f steps/s, %.0f samples/s "
                "(optimizer steps %.3f s, validation %.3f s)\n",
                (long long)r->epoch_count, (long long)r->step_count, r->total_s,
                (double)steps / train_s, (double)r->sample_count / train_s, r->train_s, r->val_s);
        if (tr->comm != NULL)
            fprintf(out,
                    "%d rank%s (%s): %.0f samples/s in all; collectives %.3f s (%.3f ms per "
                    "step)\n",
                    tr->world_size, tr->world_size == 1 ? "" : "s",
                    tsrnn_comm_backend_name(tr->comm),
                    (double)r->sample_count * tr->world_size / train_s, r->comm_s,
                    1e3 * r->comm_s / (double)steps);
        print_gpus(tr, out);
        if (r->first_step == 0) /* a new run: its first step, as Darts' first logged loss */
            fprintf(out, "train_loss %.6g (first step), ", r->first_step_loss);
        else
            fprintf(out, "train_loss ");
        fprintf(out, "%.6g (last step), %.6g (mean of the last epoch)\n", r->last_step_loss,
                r->epoch_mean_loss);
    }
    if (!isnan(r->val_loss))
        fprintf(out, "val_loss %.6g (last epoch), best %.6g at epoch %lld\n", r->val_loss,
                r->best_val_loss, (long long)r->best_epoch);
    if (!isnan(r->mape) && !named_series(tr->ds))
        fprintf(out,
                "MAPE %.2f%% over the %zu validation steps (forecast from the last %d "
                "training points, original scale)\n",
                r->mape, r->forecast_count, tr->cfg->input_chunk_length);
    else if (!isnan(r->mae) && named_series(tr->ds))
        fprintf(out,
                "MAPE %.2f%%, MAE %.6g, RMSE %.6g: the mean over the %zu series of each one's "
                "validation forecast (%zu steps in all, original scale; per series: "
                "validation.csv)\n",
                r->mape, r->mae, r->rmse, tr->ds->series_count, r->forecast_count);
    if (r->has_quantile_scores)
        print_quantile_scores(out, &r->quantile_scores, (size_t)tr->cfg->num_samples);
    fprintf(out, "Run folder: %s\n", tsrnn_display_path(tr->run_dir));
}

enum tsrnn_status tsrnn_train(struct tsrnn_train_result *result, const struct tsrnn_config *cfg,
                              const struct tsrnn_dataset *ds,
                              const struct tsrnn_train_options *options)
{
    struct trainer tr = {
        .cfg = cfg,
        .ds = ds,
        .stop_requested = options->stop_requested,
        .out = options->quiet ? NULL : options->out,
        .comm = options->comm,
        .compute = options->compute,
        .world = options->world,
        .rank = options->comm ? tsrnn_comm_rank(options->comm) : 0,
        .world_size = options->comm ? tsrnn_comm_world_size(options->comm) : 1,
        .metrics = { .fd = -1 },
        .tb = { .fd = -1 },
        .lock = { .fd = -1 },
    };
    struct tsrnn_train_result r = {
        .first_step_loss = NAN,
        .last_step_loss = NAN,
        .epoch_mean_loss = NAN,
        .val_loss = NAN,
        .best_val_loss = NAN,
        .best_epoch = -1,
        .mape = NAN,
        .mae = NAN,
        .rmse = NAN,
    };
    FILE *out = options->out;
    double start = tsrnn_clock_now_s();
    tr.writes_files = tr.rank == 0;
    enum tsrnn_status status = check_forecast(&tr);
    if (status == TSRNN_OK)
        status = setup(&tr);

    r.param_count = tr.model.table.total_count;
    r.first_step = r.step_count = tr.step;
    r.epoch_count = tr.start_epoch;
    r.final_lr = tr.adam.lr;
    if (status == TSRNN_OK && !options->quiet)
        print_banner(&tr, out, options->print_devices);
    tsrnn_progress_init(&tr.progress, out,
                        options->quiet ? TSRNN_PROGRESS_NONE : options->progress);
    for (int64_t epoch = tr.start_epoch;
         status == TSRNN_OK && epoch < cfg->n_epochs && !steps_done(&tr) && !tr.stop_early; epoch++)
        status = run_epoch(&tr, epoch, epoch == tr.start_epoch ? tr.start_batch : 0, &r);
    tsrnn_progress_finish(&tr.progress);
    /* Right after the last step, before rank 0 alone writes the forecast: no rank waits. */
    if (status == TSRNN_OK)
        status = gather_gpus(&tr);
    status = drain_checkpoints(&tr, status);
    status = finish_jobs(&tr, status);
    if (status == TSRNN_OK && tr.stop_early) {
        /* Lightning's EarlyStopping reason (it logs it with verbose=True); rank 0 reports it
         * to the launcher too. */
        fprintf(out, "Early stopping after epoch %lld: %s\n", (long long)r.epoch_count - 1,
                tr.stop_reason);
        tsrnn_world_report(tr.world, "early_stopping", "%s", tr.stop_reason);
    } else if (status == TSRNN_OK && !options->quiet) {
        tsrnn_report_fit_stopped(out, steps_done(&tr) ? "max_steps" : "max_epochs",
                                 steps_done(&tr) ? cfg->max_steps : cfg->n_epochs);
    }
    if (status == TSRNN_OK && tr.writes_files && cfg->max_steps == 0 && cfg->resume[0] == '\0')
        status = save_untrained(&tr);
    if (status == TSRNN_OK && ds->val.count > 0)
        status = forecast_validation(&tr, &r);
    if (status == TSRNN_OK && tr.writes_files && cfg->forecast_n > 0)
        status = write_forecast(&tr);
    if (status == TSRNN_OK)
        status = tsrnn_metrics_csv_close(&tr.metrics);
    if (status == TSRNN_OK)
        status = tsrnn_tb_close(&tr.tb);
    r.total_s = tsrnn_clock_now_s() - start;
    r.comm_s = tr.comm != NULL ? tsrnn_comm_allreduce_seconds(tr.comm) : 0.0;
    snprintf(r.run_dir, sizeof(r.run_dir), "%s", tr.run_dir);
    /* A resumed run's best may come from an earlier process. */
    if (status == TSRNN_OK && tr.best_checkpoint[0] == '\0' && tr.writes_files &&
        cfg->save_checkpoints &&
        tsrnn_checkpoint_locate(tr.best_checkpoint, sizeof(tr.best_checkpoint), tr.ckpt_dir,
                                "best") != TSRNN_OK) {
        tr.best_checkpoint[0] = '\0';
        tsrnn_error_clear();
    }
    snprintf(r.best_checkpoint, sizeof(r.best_checkpoint), "%s", tr.best_checkpoint);
    snprintf(r.last_checkpoint, sizeof(r.last_checkpoint), "%s", tr.last_checkpoint);
    /* A quiet rank other than 0 says nothing: rank 0 speaks for all (ranks > 0 under MPI). */
    if (status == TSRNN_OK && !(options->quiet && tr.rank > 0))
        print_result(&tr, &r, out);
    finish(&tr);
    *result = r;
    return status;
}
