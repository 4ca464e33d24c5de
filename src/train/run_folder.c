/* Rank 0's run folder {work_dir}/{model_name} (DESIGN.md section 5): its lock, Darts' rule
 * for an earlier run's folder (force_reset), the folders, metrics.csv and TensorBoard's files
 * opened, config.ini and logs/hparams.yaml written beside the training, and the warning about
 * a folder other users can write. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trainer.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/fs.h"
#include "tsrnn/plot.h"

/* config.ini, the resolved configuration, written atomically. */
static enum tsrnn_status write_config(const struct trainer *tr)
{
    char path[PATH_MAX + 16];
    struct tsrnn_atomic_file af = { 0 };
    snprintf(path, sizeof(path), "%s/config.ini", tr->folder.dir);
    enum tsrnn_status status = tsrnn_atomic_file_open(&af, path);
    if (status != TSRNN_OK)
        goto out;
    fprintf(af.file, "# tsrnn %s: the resolved configuration of this run\n", tsrnn_version());
    status = tsrnn_config_write(tr->cfg, af.file);
out:
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

/* Rank 0 locks the run folder (include/tsrnn/fs.h) before it reads a checkpoint there,
 * deletes or writes anything: a second run of this model_name stops here, and the first
 * goes on untouched. While the folder's parent does not exist, no other run can be using
 * the folder: the lock is taken once `make_parent` makes it (tsrnn_trainer_prepare_folder()), so that a
 * run refused for another reason leaves no folder behind. */
enum tsrnn_status tsrnn_trainer_lock_folder(struct trainer *tr, bool make_parent)
{
    char parent[PATH_MAX];
    if (tr->folder.lock.fd >= 0)
        return TSRNN_OK;
    snprintf(parent, sizeof(parent), "%s", tr->folder.dir);
    char *slash = strrchr(parent, '/');
    if (make_parent && slash != NULL && slash != parent) {
        *slash = '\0';
        TSRNN_TRY(tsrnn_make_dirs(parent));
    }
    enum tsrnn_status status =
        tsrnn_run_lock_acquire(&tr->folder.lock, tr->folder.dir, TSRNN_RUN_LOCK_EXCLUSIVE);
    if (status == TSRNN_ERR_USAGE)
        return tsrnn_error_append(status, "; wait for it to end, or choose another [output] "
                                          "model_name");
    TSRNN_TRY(status);
    if (make_parent && tr->folder.lock.fd < 0)
        return tsrnn_error(TSRNN_ERR_IO, "cannot lock %s: its folder vanished",
                           tsrnn_display_path(tr->folder.dir));
    return TSRNN_OK;
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
    return remove_for_reset(tr->folder.old_dir);
}

static enum tsrnn_status config_job(void *arg)
{
    return write_config(arg);
}

static enum tsrnn_status hparams_job(void *arg)
{
    const struct trainer *tr = arg;
    return tsrnn_train_write_hparams(tr->folder.logs_dir, tr->cfg, tr->ds->component_count,
                                     tr->ds->covariates->count, &tr->model.likelihood);
}

static enum tsrnn_status plot_warmup_job(void *arg)
{
    (void)arg;
    tsrnn_plot_warmup(PLOT_WIDTH, PLOT_HEIGHT);
    return TSRNN_OK;
}

/* Joins the jobs; their failure wins, as the checkpoint writer's does (tsrnn_trainer_drain_checkpoints). */
enum tsrnn_status tsrnn_trainer_finish_jobs(struct trainer *tr, enum tsrnn_status status)
{
    enum tsrnn_status jobs = tsrnn_jobs_finish(&tr->folder.jobs);
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
    const char *logs = tr->folder.logs_dir;
    snprintf(tr->folder.logs_dir, sizeof(tr->folder.logs_dir), "%s/logs", tr->folder.dir);

    TSRNN_TRY(tsrnn_trainer_lock_folder(tr, true));
    if (cfg->resume[0] == '\0' && cfg->force_reset) {
        if (!tsrnn_move_aside(tr->folder.dir, tr->folder.old_dir, sizeof(tr->folder.old_dir)))
            TSRNN_TRY(remove_for_reset(tr->folder.dir));
        else if (tr->folder.old_dir[0] != '\0')
            TSRNN_TRY(tsrnn_jobs_add(&tr->folder.jobs, remove_old_run, tr));
    } else if (cfg->resume[0] == '\0' && (tsrnn_folder_holds(tr->folder.ckpt_dir, ".safetensors") ||
                                          tsrnn_folder_holds(logs, "tfevents"))) {
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s already holds the checkpoints or TensorBoard logs of an earlier "
                           "run; continue it with --resume last ([training] resume = last), "
                           "start over with [output] force_reset = true (deletes the folder), "
                           "or choose another [output] model_name",
                           tsrnn_display_path(tr->folder.dir));
    }
    TSRNN_TRY(tsrnn_make_dirs(tr->folder.dir));
    warn_foreign_folder(tr->folder.dir);
    if (cfg->save_checkpoints)
        TSRNN_TRY(tsrnn_make_dirs(tr->folder.ckpt_dir));
    tsrnn_checkpoint_prune(tr->folder.ckpt_dir, "", ""); /* what a killed run was writing */
    /* A run killed between the last and the best name of one checkpoint lost the latter. */
    if (cfg->resume[0] != '\0' && cfg->save_checkpoints)
        TSRNN_TRY(tsrnn_checkpoint_repair_best(tr->folder.ckpt_dir));
    /* metrics.csv first: a resumed run's file is checked before anything else is written. */
    TSRNN_TRY(tsrnn_metrics_csv_open(&tr->folder.metrics, tr->folder.dir, tr->pos.step));
    TSRNN_TRY(tsrnn_jobs_add(&tr->folder.jobs, config_job, tr));
    if (cfg->log_tensorboard) {
        TSRNN_TRY(tsrnn_make_dirs(logs));
        TSRNN_TRY(tsrnn_tb_open(&tr->folder.tb, logs, tr->pos.step, cfg->resume[0] != '\0'));
        TSRNN_TRY(tsrnn_jobs_add(&tr->folder.jobs, hparams_job, tr));
        /* Lightning's log_hyperparams: the default hp_metric, -1 at step 0, for a new run. */
        if (cfg->resume[0] == '\0') {
            TSRNN_TRY(tsrnn_tb_scalar(&tr->folder.tb, "hp_metric", -1.0f, 0));
            TSRNN_TRY(tsrnn_tb_flush(&tr->folder.tb));
        }
    }
    if (cfg->forecast_n > 0 && cfg->forecast_plot)
        TSRNN_TRY(tsrnn_jobs_add(&tr->folder.jobs, plot_warmup_job, NULL));
    return TSRNN_OK;
}

/* The run folder, and the jobs started: on a failure too, with those added before it (the
 * earlier run's removal; the files the synchronous sequence had written by then). */
enum tsrnn_status tsrnn_trainer_prepare_folder(struct trainer *tr)
{
    enum tsrnn_status status = make_run_folder(tr);
    tsrnn_jobs_start(&tr->folder.jobs);
    return status;
}
