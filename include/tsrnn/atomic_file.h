/* Files that appear whole or not at all: written to a temporary file beside the target,
 * flushed, fsync'ed, renamed over it, and the folder fsync'ed. Every file tsrnn writes in one
 * go (checkpoints, config.ini) goes through here; a crash or an error leaves the previous
 * file as it was and no temporary file behind.
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
    char *path;                     /* the target (owned copy) */
    char *tmp;                      /* "<path>.tmp.<pid>" (owned) */
    struct tsrnn_atomic_sink *sink; /* the descriptor under `file` and its first error */
};

/* Creates the temporary file. TSRNN_ERR_IO ("cannot write <path>: create of the temporary
 * file <tmp> failed: <strerror>"), TSRNN_ERR_NOMEM; `af` needs no abort after a failure. */
enum tsrnn_status tsrnn_atomic_file_open(struct tsrnn_atomic_file *af, const char *path);

/* Flushes, syncs and closes the temporary file and renames it over the target, then syncs
 * the folder. A failed write (ferror), flush, sync, close or rename is TSRNN_ERR_IO naming
 * the step, and removes the temporary file. Frees `af` in every case. */
enum tsrnn_status tsrnn_atomic_file_commit(struct tsrnn_atomic_file *af);

/* Closes and removes the temporary file, leaving the target as it was; frees `af`.
 * Accepts an already committed or aborted struct. */
void tsrnn_atomic_file_abort(struct tsrnn_atomic_file *af);

/* Gives the complete file `existing` a second name `path` in the same folder (link(2) to a
 * temporary name, renamed over `path`, the folder synced): a second file with the same bytes
 * without writing them again. TSRNN_ERR_IO naming the step when the file system refuses
 * (no hard links: the caller writes the file instead); `path` is then as it was. */
enum tsrnn_status tsrnn_atomic_file_link(const char *existing, const char *path);

#endif
