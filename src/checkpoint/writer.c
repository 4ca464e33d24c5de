/* The epoch checkpoints of a run, written behind the training (include/tsrnn/checkpoint.h).
 *
 * Which epochs get files is a function of the epochs, never of thread timing
 * (docs/run-folder.md "Checkpoints"). The writer writes at its write points: every epoch
 * whose number + 1 is a multiple of `every` (K, fixed when the writer is made, from the work
 * of one epoch: see epochs_per_write()), and wherever the trainer drains it (the end of
 * training, an interrupt, an error). There it writes the newest snapshot handed over and,
 * before it, the newest improving one since the previous write point when that is an
 * earlier epoch (its best-... file is due): the files the synchronous sequence makes for
 * those epochs, in the same order, so the folder after a drain is the same, byte for byte.
 *
 * A thread of the writer's own writes a write point's files while the next epochs train; the
 * trainer waits at the next write point until they are on disk. So the thread is never more
 * than one write point behind, and a failed write is reported at a fixed epoch: the next
 * write point, or the drain. */
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

/* The training work between two write points: K is the fewest epochs whose work is at least
 * this, the work of an epoch counted as training windows x training_length x parameters (the
 * forward pass's multiply-adds, about). 5e7 is about 10 ms of one core of the benchmark
 * machine: a write point's two or three fsyncs (0.3-3 ms each there) then cost the training
 * nothing, and a kill loses at most that much of it. The seed example (0.97 M per epoch)
 * writes every 52 epochs, a 64-unit LSTM on it every 2, any model of 5e7 or more per epoch
 * every epoch. */
#define WORK_PER_WRITE 5e7

/* Snapshots the writer holds at most, besides the one the trainer is taking: the memory
 * estimate counts four in all (src/train/memory.c). */
#define HELD_MAX 3

struct tsrnn_checkpoint_writer {
    char dir[DIR_MAX];
    const struct tsrnn_model *model; /* its table and dims; the device is not touched */
    const struct tsrnn_config *cfg;
    const struct tsrnn_dataset *ds;
    int64_t every; /* K: epoch e is a write point when (e + 1) % K == 0 */
    bool threaded; /* false: write points write before put() returns */
    pthread_t thread;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t work;  /* snapshots due, or stopping */
    pthread_cond_t done;  /* a due snapshot written (or dropped after a failure) */
    /* Held since the previous write point: the newest snapshot, and the newest improving one
     * when a later epoch came after it (its best-... file is still due). NULL when none. */
    struct tsrnn_checkpoint_snapshot *latest, *best;
    /* Handed to the thread at a write point, written best first; `pending` counts them with
     * the one being written. */
    struct tsrnn_checkpoint_snapshot *due_latest, *due_best;
    size_t pending;
    bool stopping;
    enum tsrnn_status failed; /* a write failed: the run stops; message holds the reason */
    char message[2048];
    char last_path[CHECKPOINT_PATH_MAX], best_path[CHECKPOINT_PATH_MAX]; /* on disk; "" before */
};

static bool improved(const struct tsrnn_checkpoint_snapshot *snap)
{
    return snap->state.best_epoch == snap->state.epoch && !isnan(snap->state.monitor_value);
}

/* K for a run of `model` on `ds` (WORK_PER_WRITE above); 1 when an epoch's work is unknown. */
static int64_t epochs_per_write(const struct tsrnn_model *model, const struct tsrnn_dataset *ds)
{
    double work =
        (double)ds->train.count * (double)ds->training_length * (double)model->table.total_count;
    if (!(work > 0.0))
        return 1;
    double k = ceil(WORK_PER_WRITE / work);
    return k < 1.0 ? 1 : (int64_t)k;
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
     * three per such epoch); the previous checkpoints are pruned only after it. */
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

static void drop(struct tsrnn_checkpoint_snapshot **snap)
{
    free(*snap);
    *snap = NULL;
}

/* Writes the next due snapshot (the improving one first) and records what it left: the paths
 * on disk, or the failure for the trainer, after which nothing more is written. Called with
 * the lock held and a snapshot due; writes without the lock when `unlock`. */
static void write_next(struct tsrnn_checkpoint_writer *w, bool unlock)
{
    struct tsrnn_checkpoint_snapshot **slot = w->due_best != NULL ? &w->due_best : &w->due_latest;
    struct tsrnn_checkpoint_snapshot *snap = *slot;
    char last[sizeof(w->last_path)], best[sizeof(w->best_path)];
    *slot = NULL;
    if (unlock)
        pthread_mutex_unlock(&w->lock);
    enum tsrnn_status status = save_epoch(w, snap, last, best, sizeof(last));
    free(snap);
    if (unlock)
        pthread_mutex_lock(&w->lock);
    w->pending--;
    if (status != TSRNN_OK) {
        /* The synchronous run would have stopped here: nothing after it is written. */
        w->failed = status;
        snprintf(w->message, sizeof(w->message), "%s", tsrnn_last_error());
        w->pending -= (w->due_latest != NULL) + (w->due_best != NULL);
        drop(&w->due_latest);
        drop(&w->due_best);
        drop(&w->latest);
        drop(&w->best);
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
        while (w->pending == 0 && !w->stopping)
            pthread_cond_wait(&w->work, &w->lock);
        if (w->pending == 0)
            break; /* stopping, and everything handed over is written */
        write_next(w, true);
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Makes the held snapshots due: the thread writes them, or, without one, they are written
 * here. Called with the lock held and no snapshot due. */
static void hand_over(struct tsrnn_checkpoint_writer *w)
{
    w->due_best = w->best;
    w->due_latest = w->latest;
    w->best = w->latest = NULL;
    w->pending = (w->due_best != NULL) + (w->due_latest != NULL);
    if (w->threaded) {
        pthread_cond_signal(&w->work);
        return;
    }
    while (w->pending > 0 && w->failed == TSRNN_OK)
        write_next(w, false);
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
    /* Unthreaded (TSRNN_CHECKPOINT_SYNC=1): every epoch before the next one starts, as tsrnn
     * wrote them before the writer. */
    w->every = threaded ? epochs_per_write(model, ds) : 1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    /* Without a thread (none left to make) the trainer writes at the same write points. */
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

/* How many snapshots the writer holds once `snap` joins the held ones (hold() below). */
static size_t held_with(const struct tsrnn_checkpoint_writer *w,
                        const struct tsrnn_checkpoint_snapshot *snap)
{
    if (improved(snap))
        return 1;
    return w->best != NULL || (w->latest != NULL && improved(w->latest)) ? 2 : 1;
}

/* Keeps `snap` as the newest held snapshot. An improving snapshot makes the held ones
 * redundant: its own best-... supersedes theirs. Otherwise a held improving one stays as the
 * best still due, and a held plain one is dropped. */
static void hold(struct tsrnn_checkpoint_writer *w, struct tsrnn_checkpoint_snapshot *snap)
{
    if (improved(snap)) {
        drop(&w->best);
    } else if (w->latest != NULL && improved(w->latest)) {
        drop(&w->best);
        w->best = w->latest;
        w->latest = NULL;
    }
    drop(&w->latest);
    w->latest = snap;
}

enum tsrnn_status tsrnn_checkpoint_writer_put(struct tsrnn_checkpoint_writer *w,
                                              struct tsrnn_checkpoint_snapshot *snap)
{
    bool point = (snap->state.epoch + 1) % w->every == 0;
    enum tsrnn_status status = TSRNN_OK;
    pthread_mutex_lock(&w->lock);
    /* At a write point, the previous one's files first: on disk, or failed. Elsewhere only
     * when the writer would hold more than HELD_MAX (the thread still writing the previous
     * write point's improving epoch). Waiting changes when, never what, is written. */
    if (point) {
        while (w->pending > 0)
            pthread_cond_wait(&w->done, &w->lock);
        status = failure(w);
    }
    while (w->pending + held_with(w, snap) > HELD_MAX)
        pthread_cond_wait(&w->done, &w->lock);
    if (w->failed != TSRNN_OK) {
        free(snap); /* nothing is written after a failure */
    } else {
        hold(w, snap);
        if (point) {
            hand_over(w);
            status = failure(w);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_writer_drain(struct tsrnn_checkpoint_writer *w, char *last,
                                                char *best, size_t capacity)
{
    pthread_mutex_lock(&w->lock);
    while (w->pending > 0)
        pthread_cond_wait(&w->done, &w->lock);
    if (w->failed == TSRNN_OK && (w->latest != NULL || w->best != NULL))
        hand_over(w);
    while (w->pending > 0)
        pthread_cond_wait(&w->done, &w->lock);
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
    /* What a drain would write is written (the trainer drains first; this is for a caller
     * that did not), then the thread ends. */
    pthread_mutex_lock(&w->lock);
    while (w->pending > 0)
        pthread_cond_wait(&w->done, &w->lock);
    if (w->failed == TSRNN_OK && (w->latest != NULL || w->best != NULL))
        hand_over(w);
    w->stopping = true;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->lock);
    if (w->threaded)
        pthread_join(w->thread, NULL);
    free(w->latest);
    free(w->best);
    free(w->due_latest);
    free(w->due_best);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
