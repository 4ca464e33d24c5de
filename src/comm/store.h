/* The rendezvous store (private to src/comm/): a few small named values that the ranks of
 * one attempt exchange before they can talk to each other (DESIGN.md §9: "a rendezvous store
 * (set / get / wait-until-deadline) bootstraps Gloo and NCCL under tsrnn-launch"). Gloo
 * publishes its pair addresses through it (gloo.cc), NCCL will pass rank 0's unique id; under
 * mpirun, MPI bootstraps itself and this store is not used.
 *
 * "file:<dir>" is the one kind: the launcher's private folder for the attempt (mode 0700,
 * fresh per attempt, removed by the launcher), one file per key, as Gloo's FileStore and
 * PyTorch's FileStore do; any file system all ranks see works (a local tmpfs, NFS).
 *
 *     struct tsrnn_store store;
 *     TSRNN_TRY(tsrnn_store_open(&store, "file:/tmp/tsrnn-rendezvous-x/attempt-0", 60));
 *     rank 0:   tsrnn_store_set(&store, "nccl-id", &id, sizeof(id));
 *     others:   tsrnn_store_get(&store, "nccl-id", &id, sizeof(id), &nbytes);
 *     tsrnn_store_close(&store);
 *
 * Contracts:
 * - Keys: 1 to TSRNN_STORE_KEY_MAX characters of A-Z a-z 0-9 '.' '_' '-', not starting with
 *   '.' (the store's temporary files do) and without "..": a key is a file name in the folder
 *   and can never name anything outside it. Anything else is TSRNN_ERR_USAGE.
 * - Values: any bytes (NUL included), any length including 0. A value appears whole or not
 *   at all: it is written to a temporary file and renamed over the key, so a reader that
 *   sees the key reads the complete value of one set.
 * - A later set of a key replaces its value (atomically, as above); there is no delete.
 * - Deadline: every wait of one store ends at the same moment, timeout_s after
 *   tsrnn_store_open(): the whole rendezvous is bounded, however many keys it waits for one
 *   after the other. A key that is already there is read even after the deadline. A wait that
 *   runs out is TSRNN_ERR_COMM naming the missing keys, the folder and the timeout.
 * - One store per thread; several stores (several processes) on one folder are the point.
 */
#ifndef TSRNN_COMM_STORE_H
#define TSRNN_COMM_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TSRNN_STORE_KEY_MAX = 128 /* characters of a key */
};

struct tsrnn_store {
    char dir[PATH_MAX]; /* the folder, as given after "file:" */
    double timeout_s;   /* as given to tsrnn_store_open() */
    double deadline_s;  /* on tsrnn_clock_now_s()'s clock: open time + timeout_s */
};

/* Opens the store `rendezvous` ("file:<dir>", an existing folder) and starts its deadline.
 * TSRNN_ERR_USAGE for another form, a folder that does not exist, or a timeout that is not
 * finite and > 0. Nothing to close after a failure. */
enum tsrnn_status tsrnn_store_open(struct tsrnn_store *store, const char *rendezvous,
                                   double timeout_s);

/* Publishes `nbytes` of `value` (NULL when nbytes is 0) under `key`, replacing any earlier
 * value. Never waits. TSRNN_ERR_USAGE for a bad key, TSRNN_ERR_IO when the folder refuses the
 * write. */
enum tsrnn_status tsrnn_store_set(struct tsrnn_store *store, const char *key, const void *value,
                                  size_t nbytes);

/* Waits until `key` exists (or the deadline), then copies its value into `buf` (which holds
 * `capacity` bytes) and its length into *nbytes. TSRNN_ERR_COMM when the deadline passes
 * first, or when the value is longer than `capacity`: then *nbytes is its length (a caller
 * that cannot know it retries with a buffer that large) and `buf` is untouched. On other
 * failures *nbytes is 0: TSRNN_ERR_USAGE for a bad key, TSRNN_ERR_IO for a file that cannot be
 * read. */
enum tsrnn_status tsrnn_store_get(struct tsrnn_store *store, const char *key, void *buf,
                                  size_t capacity, size_t *nbytes);

/* Waits until every one of the `count` keys exists, or the deadline: TSRNN_ERR_COMM then,
 * naming the keys still missing. TSRNN_ERR_USAGE for a bad key (checked before any wait). */
enum tsrnn_status tsrnn_store_wait(struct tsrnn_store *store, const char *const *keys,
                                   size_t count);

/* Whether `key` exists now, without waiting: what a rank that timed out reads to name the
 * peers that never came. TSRNN_ERR_USAGE for a bad key, TSRNN_ERR_IO when the folder cannot
 * be read. */
enum tsrnn_status tsrnn_store_has(struct tsrnn_store *store, const char *key, bool *found);

/* Ends the use of `store` (the files stay: other ranks may still read them, and the
 * launcher removes the folder). Accepts NULL and a store whose open failed. */
void tsrnn_store_close(struct tsrnn_store *store);

#ifdef __cplusplus
}
#endif

#endif
