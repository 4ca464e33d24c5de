/* Write-to-temporary, fsync, rename (include/tsrnn/atomic_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"

static void release(struct tsrnn_atomic_file *af)
{
    free(af->path);
    free(af->tmp);
    *af = (struct tsrnn_atomic_file){ 0 };
}

static enum tsrnn_status step_failed(const struct tsrnn_atomic_file *af, const char *step, int err)
{
    return tsrnn_error_errno(TSRNN_ERR_IO, err != 0 ? err : EIO,
                             "cannot write %s: %s of the temporary file %s failed",
                             tsrnn_display_path(af->path), step, tsrnn_display_path(af->tmp));
}

enum tsrnn_status tsrnn_atomic_file_open(struct tsrnn_atomic_file *af, const char *path)
{
    *af = (struct tsrnn_atomic_file){ .path = strdup(path) };
    if (af->path == NULL || asprintf(&af->tmp, "%s.tmp.%ld", path, (long)getpid()) < 0) {
        af->tmp = NULL;
        release(af);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", tsrnn_display_path(path));
    }
    af->file = fopen(af->tmp, "wbe");
    if (af->file == NULL) {
        enum tsrnn_status status = step_failed(af, "create", errno);
        release(af);
        return status;
    }
    return TSRNN_OK;
}

/* fsync()s the folder holding `path`, so that the rename survives a crash; 0 or an errno. */
static int sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *folder =
        slash == NULL ? strdup(".") : strndup(path, slash == path ? 1 : (size_t)(slash - path));
    if (folder == NULL)
        return ENOMEM;
    int err = 0;
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        err = errno;
    else if (fsync(fd) != 0 && errno != EINVAL) /* EINVAL: the file system cannot sync folders */
        err = errno;
    if (fd >= 0)
        close(fd);
    free(folder);
    return err;
}

/* The first step that fails, in order, with its errno; NULL when all succeed. */
static const char *finish_file(struct tsrnn_atomic_file *af, int *err)
{
    const char *step = NULL;
    if (ferror(af->file)) {
        step = "write";
        *err = EIO;
    } else if (fflush(af->file) != 0) {
        step = "flush";
        *err = errno;
    } else if (fsync(fileno(af->file)) != 0) {
        step = "sync";
        *err = errno;
    }
    if (fclose(af->file) != 0 && step == NULL) {
        step = "close";
        *err = errno;
    }
    af->file = NULL;
    if (step == NULL && rename(af->tmp, af->path) != 0) {
        step = "rename";
        *err = errno;
    }
    return step;
}

enum tsrnn_status tsrnn_atomic_file_commit(struct tsrnn_atomic_file *af)
{
    int err = 0;
    const char *step = finish_file(af, &err);
    enum tsrnn_status status = TSRNN_OK;
    if (step != NULL) {
        status = step_failed(af, step, err);
        unlink(af->tmp);
    } else if ((err = sync_folder(af->path)) != 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s: syncing its folder failed",
                                   tsrnn_display_path(af->path));
    }
    release(af);
    return status;
}

void tsrnn_atomic_file_abort(struct tsrnn_atomic_file *af)
{
    if (af->file != NULL) {
        fclose(af->file);
        unlink(af->tmp);
    }
    release(af);
}
