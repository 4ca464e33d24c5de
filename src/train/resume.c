/* Where a run starts: rank 0 restores a checkpoint when resuming (weights, optimizer,
 * schedulers, early stopping, position), and every rank takes rank 0's parameters and
 * position, after checking that it trains the same job. */
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/crc32c.h"

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
enum tsrnn_status tsrnn_trainer_resume(struct trainer *tr, const char *resume)
{
    char path[PATH_MAX];
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    enum tsrnn_status status = TSRNN_OK;
    if (ck == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading a checkpoint");
        goto out;
    }
    status = tsrnn_checkpoint_locate(path, sizeof(path), tr->folder.ckpt_dir, resume);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_checkpoint_read(ck, path);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_checkpoint_restore(ck, &tr->model, &tr->adam);
    if (status != TSRNN_OK)
        goto out;
    const struct tsrnn_train_state *st = &ck->state;
    tr->pos.step = st->global_step;
    tr->pos.start_epoch = st->epoch_complete ? st->epoch + 1 : st->epoch;
    tr->pos.start_batch = st->epoch_complete ? 0 : (size_t)st->batches_done;
    tr->ckpt.state.best_value = st->best_value;
    tr->ckpt.state.best_epoch = st->best_epoch;
    if (st->has_controls) { /* checkpoints before the training controls lack them */
        tr->adam.lr = st->lr;
        tr->controls.scheduler.last_epoch = st->sched_last_epoch;
        tr->controls.scheduler.best = st->sched_best;
        tr->controls.scheduler.num_bad_epochs = st->sched_num_bad_epochs;
        tr->controls.scheduler.cooldown_counter = st->sched_cooldown_counter;
        tr->controls.early_stopping.wait_count = st->es_wait_count;
        tr->controls.early_stopping.best_score = (float)st->es_best_score;
    }
    warn_config_changes(&ck->config, tr->cfg, path);
    /* for the banner */
    snprintf(tr->report.restored, sizeof(tr->report.restored), "%s", path);
    tr->report.restored_epoch = st->epoch;
    tr->report.restored_step = st->global_step;
out:
    if (ck != NULL)
        tsrnn_checkpoint_finish(ck);
    free(ck);
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

/* Every rank starts from rank 0's parameters (and, resuming, its optimizer state), as DDP's
 * constructor broadcasts the module's state: identical replicas by construction, whatever
 * each rank initialised or read. A rank whose config or data differ from rank 0's would
 * train another model in lockstep, silently: it stops instead. */
enum tsrnn_status tsrnn_trainer_share_rank0_state(struct trainer *tr)
{
    size_t nbytes = tr->model.table.total_count * sizeof(float);
    if (tr->world.comm == NULL)
        return TSRNN_OK;
    uint32_t mine = job_fingerprint(tr), rank0 = mine;
    TSRNN_TRY(tsrnn_comm_broadcast(tr->world.comm, &rank0, sizeof(rank0), 0));
    if (mine != rank0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rank %d: its configuration or data differ from rank 0's (CRC-32C "
                           "%08x, rank 0's %08x): every worker must read the same INI file, "
                           "--set values and data file",
                           tr->world.rank, (unsigned)mine, (unsigned)rank0);
    /* Parameters and moments are device memory (the comm stages them where it must). */
    TSRNN_TRY(tsrnn_comm_broadcast_device(tr->world.comm, tr->model.params, nbytes, 0));
    if (tr->cfg->resume[0] == '\0')
        return TSRNN_OK;
    /* Resuming, rank 0 alone read the checkpoint (tsrnn_trainer_resume()): the others get where it
     * left off with its weights and moments, so no rank but 0 needs to see the run folder
     * (a cluster without a shared file system resumes too). */
    struct {
        int64_t step, start_epoch, start_batch, best_epoch;
        uint64_t adam_step;
        double best_value, lr;
        struct tsrnn_lr_scheduler scheduler;
        struct tsrnn_early_stopping early_stopping;
    } where = {
        .step = tr->pos.step,
        .start_epoch = tr->pos.start_epoch,
        .start_batch = (int64_t)tr->pos.start_batch,
        .best_epoch = tr->ckpt.state.best_epoch,
        .adam_step = tr->adam.step,
        .best_value = tr->ckpt.state.best_value,
        .lr = tr->adam.lr,
        .scheduler = tr->controls.scheduler,
        .early_stopping = tr->controls.early_stopping,
    };
    TSRNN_TRY(tsrnn_comm_broadcast(tr->world.comm, &where, sizeof(where), 0));
    tr->pos.step = where.step;
    tr->pos.start_epoch = where.start_epoch;
    tr->pos.start_batch = (size_t)where.start_batch;
    tr->ckpt.state.best_epoch = where.best_epoch;
    tr->adam.step = where.adam_step;
    tr->ckpt.state.best_value = where.best_value;
    /* The learning rate, the scheduler's and early stopping's state: each rank steps them
     * alike from here, as each would have from the start. */
    tr->adam.lr = where.lr;
    tr->controls.scheduler = where.scheduler;
    tr->controls.early_stopping = where.early_stopping;
    TSRNN_TRY(tsrnn_comm_broadcast_device(tr->world.comm, tr->adam.exp_avg, nbytes, 0));
    return tsrnn_comm_broadcast_device(tr->world.comm, tr->adam.exp_avg_sq, nbytes, 0);
}
