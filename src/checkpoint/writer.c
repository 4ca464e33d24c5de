/* The epoch checkpoints of a run, written behind the training (include/tsrnn/checkpoint.h):
 * the trainer hands each epoch's snapshot over and goes on; a thread of the writer's own does
 * the same writes, fsyncs, links and prunes the trainer did itself before, one snapshot at a
 * time. Only the newest snapshot and the newest improving one wait: every file the writer
 * makes is one the synchronous sequence makes too, so after a drain the folder is the same. */
#include "tsrnn/checkpoint.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/thread.h"

/* The run's checkpoints/ folder, and a checkpoint's path in it (names are < 256 bytes). */
#define DIR_MAX             (PATH_MAX + 16)
#define CHECKPOINT_PATH_MAX (DIR_MAX + 256)

struct tsrnn_checkpoint_writer {
    char dir[DIR_MAX];
    const struct tsrnn_model *model; /* its table and dims; the device is not touched */
    const struct tsrnn_config *cfg;
    const struct tsrnn_dataset *ds;
    bool threaded; /* false: put() writes before it returns */
    pthread_t thread;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t work;  /* a snapshot queued, or stopping */
    pthread_cond_t idle;  /* a snapshot written (or dropped after a failure) */
    /* The queue: the newest snapshot, and the newest improving one when a later epoch
     * superseded it (its best-... file is still due). NULL when none. */
    struct tsrnn_checkpoint_snapshot *latest, *best;
    bool writing, stopping;
    enum tsrnn_status failed; /* a write failed: the run stops; message holds the reason */
    char message[2048];
    char last_path[CHECKPOINT_PATH_MAX], best_path[CHECKPOINT_PATH_MAX]; /* on disk; "" before */
};

static bool improved(const struct tsrnn_checkpoint_snapshot *snap)
{
    return snap->state.best_epoch == snap->state.epoch && !isnan(snap->state.monitor_value);
}

/* One epoch's checkpoints: last-epoch=N always, best-... when the monitored loss improved;
 * each replaces its predecessor only once it is safely on disk. `last` and `best` get the
 * paths written ("" for best when the epoch did not improve). */
static enum tsrnn_status save_epoch(const struct tsrnn_checkpoint_writer *w,
                                    const struct tsrnn_checkpoint_snapshot *snap, char *last,
                                    char *best, size_t capacity)
{
    const struct tsrnn_train_state *st = &snap->state;
    char name[256], last_name[sizeof(name)];
    bool better = improved(snap);

    /* An improving epoch's two names share one sync of the folder, after both (one fsync of
     * three per such epoch: 77 of AirPassengers' 300 epochs); the previous checkpoints are
     * pruned only after it. */
    tsrnn_checkpoint_name_last(last_name, sizeof(last_name), st->epoch);
    snprintf(last, capacity, "%s/%s", w->dir, last_name);
    best[0] = '\0';
    TSRNN_TRY(tsrnn_checkpoint_write(last, snap, w->model, w->cfg, w->ds, !better));
    if (!better) {
        tsrnn_checkpoint_prune(w->dir, "last", last_name);
        return TSRNN_OK;
    }
    tsrnn_checkpoint_name_best(name, sizeof(name), st->epoch, st->monitor, st->best_value);
    snprintf(best, capacity, "%s/%s", w->dir, name);
    /* The same state as last-epoch=N, so the same bytes: a hard link instead of a second
     * write and fsync (AirPassengers' 300 epochs: 0.40 -> 0.36 s for the whole run), which
     * syncs the folder, last-epoch=N's rename with it. Written out where the file system has
     * no hard links. A crash before that leaves the previous epoch's pair, perhaps
     * with last-epoch=N beside it, the best by its metadata: tsrnn_checkpoint_locate() takes
     * it for "best", and the next resume names it (tsrnn_checkpoint_repair_best()). */
    if (tsrnn_atomic_file_link(last, best) != TSRNN_OK) {
        tsrnn_error_clear();
        /* a link at the best name is written through, perhaps into another folder */
        TSRNN_TRY(tsrnn_checkpoint_write(best, snap, w->model, w->cfg, w->ds, true));
        TSRNN_TRY(tsrnn_atomic_file_sync_folder(last));
    }
    tsrnn_checkpoint_prune(w->dir, "last", last_name);
    tsrnn_checkpoint_prune(w->dir, "best", name);
    return TSRNN_OK;
}

/* save_epoch() and what it leaves: the paths on disk, or the failure for the trainer. Called
 * with the lock held; writes without it when `unlock`. */
static void write_one(struct tsrnn_checkpoint_writer *w, struct tsrnn_checkpoint_snapshot *snap,
                      bool unlock)
{
    char last[sizeof(w->last_path)], best[sizeof(w->best_path)];
    w->writing = true;
    if (unlock)
        pthread_mutex_unlock(&w->lock);
    enum tsrnn_status status = save_epoch(w, snap, last, best, sizeof(last));
    free(snap);
    if (unlock)
        pthread_mutex_lock(&w->lock);
    w->writing = false;
    if (status != TSRNN_OK) {
        /* The synchronous run would have stopped here: nothing after it is written. */
        w->failed = status;
        snprintf(w->message, sizeof(w->message), "%s", tsrnn_last_error());
        free(w->latest);
        free(w->best);
        w->latest = w->best = NULL;
        return;
    }
    snprintf(w->last_path, sizeof(w->last_path), "%s", last);
    if (best[0] != '\0')
        snprintf(w->best_path, sizeof(w->best_path), "%s", best);
}

static void *writer_main(void *arg)
{
    struct tsrnn_checkpoint_writer *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->latest == NULL && w->best == NULL && !w->stopping)
            pthread_cond_wait(&w->work, &w->lock);
        if (w->latest == NULL && w->best == NULL)
            break; /* stopping, and everything handed over is written */
        /* The superseded best first: the files then appear in the order of their epochs,
         * as the synchronous sequence makes them. */
        struct tsrnn_checkpoint_snapshot *snap = w->best != NULL ? w->best : w->latest;
        if (snap == w->best)
            w->best = NULL;
        else
            w->latest = NULL;
        write_one(w, snap, true);
        pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

enum tsrnn_status tsrnn_checkpoint_writer_create(struct tsrnn_checkpoint_writer **out,
                                                 const char *checkpoint_dir,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_config *cfg,
                                                 const struct tsrnn_dataset *ds, bool threaded)
{
    struct tsrnn_checkpoint_writer *w = calloc(1, sizeof(*w));
    *out = NULL;
    if (w == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the checkpoint writer");
    snprintf(w->dir, sizeof(w->dir), "%s", checkpoint_dir);
    w->model = model;
    w->cfg = cfg;
    w->ds = ds;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->idle, NULL);
    /* Without a thread (none left to make) the writes are the trainer's, as before. */
    if (threaded)
        w->threaded = tsrnn_thread_start(&w->thread, writer_main, w);
    *out = w;
    return TSRNN_OK;
}

/* The writer's failure as this thread's error; TSRNN_OK when none. Called with the lock
 * held. */
static enum tsrnn_status failure(const struct tsrnn_checkpoint_writer *w)
{
    return w->failed == TSRNN_OK ? TSRNN_OK : tsrnn_error(w->failed, "%s", w->message);
}

enum tsrnn_status tsrnn_checkpoint_writer_put(struct tsrnn_checkpoint_writer *w,
                                              struct tsrnn_checkpoint_snapshot *snap)
{
    pthread_mutex_lock(&w->lock);
    enum tsrnn_status status = failure(w);
    if (status != TSRNN_OK) {
        free(snap);
    } else if (!w->threaded) {
        write_one(w, snap, false);
        status = failure(w);
    } else {
        /* Latest wins. An improving snapshot makes every queued one redundant: its own
         * best-... supersedes theirs. Otherwise a queued improving one keeps its place as
         * the best still due, and a queued plain one is dropped. */
        if (improved(snap)) {
            free(w->best);
            w->best = NULL;
        } else if (w->latest != NULL && improved(w->latest)) {
            free(w->best);
            w->best = w->latest;
            w->latest = NULL;
        }
        free(w->latest);
        w->latest = snap;
        pthread_cond_signal(&w->work);
    }
    pthread_mutex_unlock(&w->lock);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_writer_drain(struct tsrnn_checkpoint_writer *w, char *last,
                                                char *best, size_t capacity)
{
    pthread_mutex_lock(&w->lock);
    while (w->latest != NULL || w->best != NULL || w->writing)
        pthread_cond_wait(&w->idle, &w->lock);
    enum tsrnn_status status = failure(w);
    if (w->last_path[0] != '\0')
        snprintf(last, capacity, "%s", w->last_path);
    if (w->best_path[0] != '\0')
        snprintf(best, capacity, "%s", w->best_path);
    pthread_mutex_unlock(&w->lock);
    return status;
}

void tsrnn_checkpoint_writer_destroy(struct tsrnn_checkpoint_writer *w)
{
    if (w == NULL)
        return;
    if (w->threaded) {
        /* The thread writes what is still queued before it ends. */
        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        pthread_cond_signal(&w->work);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    free(w->latest);
    free(w->best);
    pthread_cond_destroy(&w->idle);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
