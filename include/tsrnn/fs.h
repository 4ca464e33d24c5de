/* File system helpers: mkdir -p, rm -r, "does this folder hold such a file", and the lock of
 * a run folder. The training run makes, locks and resets its run folder with them
 * (src/train/), tsrnn-predict reads under the lock, tsrnn-launch makes the ranks' logs and its
 * rendezvous folder (src/launcher/). Messages name the path as tsrnn_display_path() shows
 * it.
 */
#ifndef TSRNN_FS_H
#define TSRNN_FS_H

#include <stdbool.h>

#include "tsrnn/core.h"

/* mkdir -p. TSRNN_ERR_IO naming the folder that could not be made. */
enum tsrnn_status tsrnn_make_dirs(const char *path);

/* rm -r of `path` (a folder): never follows symbolic links, never leaves the file system it
 * starts on. A missing `path` is fine. TSRNN_ERR_IO naming what could not be removed. */
enum tsrnn_status tsrnn_remove_tree(const char *path);

/* Moves the folder {dir}/{name} out of the way, to {dir}/.{name}.old (removing one left there
 * before), for tsrnn_remove_tree() to remove, perhaps on another thread while the caller
 * makes a new {name}: renaming takes one step where removing a run folder takes ~1-5 ms of
 * unlinks. `moved` (capacity bytes) gets that path, or "" when there was no {name}. False
 * when it cannot be moved (the caller removes it where it is, and says why that fails). */
bool tsrnn_move_aside(const char *path, char *moved, size_t capacity);

/* True when the folder `path` exists and holds an entry whose name contains `needle`
 * ("" = any entry). */
bool tsrnn_folder_holds(const char *path, const char *needle);

/* --- the lock of a run folder ---------------------------------------------------------- */

/* A run folder {dir}/{name} is locked through the file {dir}/.{name}.lock beside it, with a
 * POSIX record lock (fcntl F_SETLK) on the whole file:
 *   - beside the folder, not in it, so that force_reset can delete the folder, as Darts
 *     does, while the run holds the lock; the file is never deleted (a process may hold it
 *     open, about to lock it) and stays empty;
 *   - a record lock rather than flock(): the kernel names the holder's pid (F_GETLK) for a
 *     message, and it works on NFS; it is the process's, not inherited by a fork(), and
 *     released when the process closes any descriptor of the file or exits (killed too);
 *   - advisory: it keeps tsrnn processes apart, not a user's rm.
 * The training run's rank 0 holds it exclusively for its lifetime, tsrnn-predict shared. */
struct tsrnn_run_lock {
    int fd; /* the lock file's descriptor; -1 when nothing is held */
};

enum tsrnn_run_lock_mode {
    TSRNN_RUN_LOCK_SHARED,    /* readers: any number at once, no writer */
    TSRNN_RUN_LOCK_EXCLUSIVE, /* the one writer */
};

/* Takes the lock of the run folder `run_dir` without waiting. The folder need not exist;
 * the folder that holds it must, or there is nothing to lock yet: TSRNN_OK with lock->fd ==
 * -1 (likewise for a shared lock whose file cannot be made or read: a run folder in a
 * read-only place has no writer). TSRNN_ERR_USAGE when another process holds it in a mode
 * that excludes this one: "<run_dir> is in use: process <pid> holds its lock <file> (a
 * training run | a reader)", which the caller completes with what to do; TSRNN_ERR_IO when
 * the lock file cannot be made, opened or locked. */
enum tsrnn_status tsrnn_run_lock_acquire(struct tsrnn_run_lock *lock, const char *run_dir,
                                         enum tsrnn_run_lock_mode mode);

/* Releases the lock (closes its file); accepts a lock that holds nothing. */
void tsrnn_run_lock_release(struct tsrnn_run_lock *lock);

#endif
