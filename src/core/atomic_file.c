/* Write-to-temporary, fsync, rename (include/tsrnn/atomic_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"

/* The temporary file under the FILE*: a plain descriptor whose first write error is kept,
 * so that a full disk is reported as "No space left on device" (or "File too large"), not as
 * the EIO that is all ferror() could tell. */
struct tsrnn_atomic_sink {
    int fd;
    int err; /* errno of the first failed write or close; 0 if none */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t nbytes)
{
    struct tsrnn_atomic_sink *sink = cookie;
    int err = 0;
    size_t done = tsrnn_write_all(sink->fd, buf, nbytes, &err);
    if (done < nbytes && sink->err == 0)
        sink->err = err;
    return done > 0 || nbytes == 0 ? (ssize_t)done : -1;
}

static int sink_close(void *cookie)
{
    struct tsrnn_atomic_sink *sink = cookie;
    int rc = close(sink->fd);
    if (rc != 0 && sink->err == 0)
        sink->err = errno;
    return rc;
}

static void release(struct tsrnn_atomic_file *af)
{
    free(af->path);
    free(af->tmp);
    free(af->sink);
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
    af->sink = malloc(sizeof(*af->sink));
    if (af->sink == NULL) {
        release(af);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", tsrnn_display_path(path));
    }
    *af->sink =
        (struct tsrnn_atomic_sink){ .fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                                               0666) };
    if (af->sink->fd < 0) {
        enum tsrnn_status status = step_failed(af, "create", errno);
        release(af);
        return status;
    }
    static const cookie_io_functions_t io = { .write = sink_write, .close = sink_close };
    af->file = fopencookie(af->sink, "w", io);
    if (af->file == NULL) {
        int err = errno;
        close(af->sink->fd);
        unlink(af->tmp);
        enum tsrnn_status status = step_failed(af, "create", err);
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
        *err = af->sink->err;
    } else if (fflush(af->file) != 0) {
        step = "write";
        *err = af->sink->err != 0 ? af->sink->err : errno;
    } else if (fsync(af->sink->fd) != 0) {
        step = "sync";
        *err = errno;
    }
    if (fclose(af->file) != 0 && step == NULL) {
        step = "close";
        *err = af->sink->err != 0 ? af->sink->err : errno;
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

enum tsrnn_status tsrnn_atomic_file_link(const char *existing, const char *path)
{
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory linking %s", tsrnn_display_path(path));
    int err = 0;
    const char *step = NULL;
    if (link(existing, tmp) != 0) {
        err = errno;
        step = "link";
    } else if (rename(tmp, path) != 0) {
        err = errno;
        step = "rename";
        unlink(tmp);
    } else if ((err = sync_folder(path)) != 0) {
        step = "sync of its folder";
    }
    free(tmp);
    if (step != NULL)
        return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot link %s to %s: %s failed",
                                 tsrnn_display_path(path), tsrnn_display_path(existing), step);
    return TSRNN_OK;
}
