/* Files that appear whole or not at all: written to a temporary file beside the target,
 * flushed, fsync'ed, renamed over it, and the folder fsync'ed. Every file tsrnn writes in one
 * go (checkpoints, config.ini, metrics.csv when a resume trims it, forecast.csv and .png,
 * tsrnn-predict's --out and --plot) goes through here; a crash or an error leaves the
 * previous file as it was and no temporary file behind.
 *
 * What is at the path keeps what it is:
 *   - a regular file, or nothing: replaced atomically, as above;
 *   - a symbolic link of this user's or root's: written through, as open() follows it (the
 *     kernel's rules for links in sticky world-writable folders included): the file it leads
 *     to is replaced in its own folder, and the link stays; a link of another user's (on the
 *     way, at any hop) is refused (TSRNN_ERR_IO naming it and its owner): whoever else can
 *     write the folder cannot make tsrnn write elsewhere;
 *   - a character device, a FIFO or a socket (/dev/null, a named pipe), or an open file
 *     named through /proc (/dev/stdout, /dev/fd/N): written in place, appended to, not
 *     atomic: there is no file to replace, and replacing the name would put a regular file
 *     where a device or a link was;
 *   - a folder or a block device: refused (TSRNN_ERR_IO), nothing written.
 *
 * The temporary file is "<target>.tmp.<12 random hex digits>", created with O_EXCL |
 * O_NOFOLLOW: a link or file that someone planted at a name tsrnn might use is never opened,
 * written or renamed into place.
 *
 *     struct tsrnn_atomic_file af;
 *     TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
 *     fwrite(..., af.file) ...;
 *     return tsrnn_atomic_file_commit(&af);   (or tsrnn_atomic_file_abort(&af))
 */
#ifndef TSRNN_ATOMIC_FILE_H
#define TSRNN_ATOMIC_FILE_H

#include <stdio.h>

#include "tsrnn/core.h"

struct tsrnn_atomic_sink;

struct tsrnn_atomic_file {
    FILE *file;                     /* write here; NULL once committed or aborted */
    char *path;                     /* as the caller named it (owned copy) */
    char *target;                   /* the regular file it leads to; NULL: written in place */
    char *tmp;                      /* "<target>.tmp.<random>" (owned); NULL: in place */
    struct tsrnn_atomic_sink *sink; /* the descriptor under `file` and its first error */
};

/* Creates the temporary file (or opens a device, pipe or /proc file in place).
 * TSRNN_ERR_IO ("cannot write <path>: create of the temporary file <tmp> failed:
 * <strerror>", "...: it is a folder; ..."), TSRNN_ERR_NOMEM; `af` needs no abort after a
 * failure. */
enum tsrnn_status tsrnn_atomic_file_open(struct tsrnn_atomic_file *af, const char *path);

/* Flushes, syncs and closes the temporary file and renames it over the target, then syncs
 * the folder (in place: flushes and closes). A failed write (ferror), flush, sync, close or
 * rename is TSRNN_ERR_IO naming the step, and removes the temporary file. Frees `af` in
 * every case. */
enum tsrnn_status tsrnn_atomic_file_commit(struct tsrnn_atomic_file *af);

/* As tsrnn_atomic_file_commit(), but the folder is not synced: the file is whole under its
 * name, yet the rename may not survive a crash until the folder is synced
 * (tsrnn_atomic_file_sync_folder(), or a later commit or link in the same folder, which
 * syncs every name there). For files replaced together: one folder sync after the last. */
enum tsrnn_status tsrnn_atomic_file_commit_unsynced(struct tsrnn_atomic_file *af);

/* fsync()s the folder holding `path` (a file system that cannot sync folders passes):
 * TSRNN_ERR_IO "cannot write <path>: syncing its folder failed: <strerror>". */
enum tsrnn_status tsrnn_atomic_file_sync_folder(const char *path);

/* Closes and removes the temporary file, leaving the target as it was (in place: what was
 * written is gone already); frees `af`. Accepts an already committed or aborted struct. */
void tsrnn_atomic_file_abort(struct tsrnn_atomic_file *af);

/* Where tsrnn_atomic_file_open() would write `path`, by the rules above, for files written
 * in place but by the same rules (metrics.csv, the launcher's rank logs): *target is the
 * regular file (or the file still to be made) behind `path` (malloc'd), or NULL for a
 * device, FIFO, socket or /proc file; TSRNN_ERR_IO for a folder, a block device or another
 * user's link. */
enum tsrnn_status tsrnn_atomic_file_target(const char *path, char **target);

/* Gives the complete file `existing` a second name `path` in the same folder (link(2) to a
 * temporary name of the kind above, renamed over `path`, the folder synced): a second file
 * with the same bytes without writing them again. TSRNN_ERR_IO naming the step when the file
 * system refuses (no hard links), or when `path` exists and is not a regular file (a link
 * there is written through, not replaced): the caller writes the file instead; `path` is
 * then as it was. */
enum tsrnn_status tsrnn_atomic_file_link(const char *existing, const char *path);

#endif
