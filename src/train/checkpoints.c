/* When a run's checkpoints are written: each epoch's (last and best) handed to the writer
 * thread while the next epoch trains, waited for before anything reads them, and the untrained
 * weights of a max_steps = 0 run. */
#include <math.h>

#include "trainer.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/fs.h"

/* The checkpoints of the epoch just finished: a snapshot for the writer, which writes them
 * while the next epoch trains. */
enum tsrnn_status tsrnn_trainer_save_checkpoints(struct trainer *tr)
{
    struct tsrnn_checkpoint_snapshot *snap;
    TSRNN_TRY(tsrnn_checkpoint_snapshot_take(&snap, &tr->model, &tr->adam, &tr->ckpt.state));
    return tsrnn_checkpoint_writer_put(tr->ckpt.writer, snap);
}

/* Waits until the writer has every checkpoint handed over on disk, and names them: before
 * anything reads them or the process ends. A failed write is returned in place of `status`:
 * it happened at an earlier epoch's end, where the synchronous run would have stopped. */
enum tsrnn_status tsrnn_trainer_drain_checkpoints(struct trainer *tr, enum tsrnn_status status)
{
    if (tr->ckpt.writer == NULL)
        return status;
    enum tsrnn_status drained = tsrnn_checkpoint_writer_drain(tr->ckpt.writer, tr->ckpt.last,
                                                              tr->ckpt.best, sizeof(tr->ckpt.last));
    return drained != TSRNN_OK ? drained : status;
}

/* max_steps = 0 on a new run: no step is taken, yet the weights (initialised or imported with
 * init_weights) are saved as checkpoints/last-epoch=0.safetensors, epoch 0 not begun, so that
 * tsrnn-predict can use them and --resume last trains them from the first step. Written
 * whatever save_checkpoints says: that is what such a run is for. */
enum tsrnn_status tsrnn_trainer_save_untrained(struct trainer *tr)
{
    struct tsrnn_train_state *st = &tr->ckpt.state;
    st->epoch = 0;
    st->batches_done = 0;
    st->epoch_complete = false;
    st->global_step = 0;
    st->monitor_value = NAN;
    TSRNN_TRY(tsrnn_make_dirs(tr->folder.ckpt_dir));
    char name[256], path[sizeof(tr->folder.ckpt_dir) + sizeof(name)];
    tsrnn_checkpoint_name_last(name, sizeof(name), 0);
    snprintf(path, sizeof(path), "%s/%s", tr->folder.ckpt_dir, name);
    TSRNN_TRY(tsrnn_checkpoint_save(path, &tr->model, &tr->adam, st, tr->cfg, tr->ds, true));
    snprintf(tr->ckpt.last, sizeof(tr->ckpt.last), "%s", path);
    return TSRNN_OK;
}

/* The best checkpoint for the result: the one this process wrote, or, resumed, one an
 * earlier process wrote; "" when there is none. */
void tsrnn_trainer_find_best_checkpoint(struct trainer *tr)
{
    if (tr->ckpt.best[0] != '\0' || !tr->world.writes_files || !tr->cfg->save_checkpoints)
        return;
    if (tsrnn_checkpoint_locate(tr->ckpt.best, sizeof(tr->ckpt.best), tr->folder.ckpt_dir,
                                "best") != TSRNN_OK) {
        tr->ckpt.best[0] = '\0';
        tsrnn_error_clear();
    }
}
