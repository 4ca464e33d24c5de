/* Write-to-temporary, fsync, rename (include/tsrnn/atomic_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"

/* statfs(2)'s f_type of /proc (linux/magic.h). */
#define PROC_SUPER_MAGIC 0x9fa0
/* How many symbolic links one name may pass through, as the kernel's own limit. */
#define LINK_HOPS_MAX 40
/* Tries at a free temporary name: a clash is a 1 in 2^48 chance, or someone planting. */
#define TMP_TRIES 100

/* The file under the FILE*: a plain descriptor whose first write error is kept, so that a
 * full disk is reported as "No space left on device" (or "File too large"), not as the EIO
 * that is all ferror() could tell. */
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
    free(af->target);
    free(af->tmp);
    free(af->sink);
    *af = (struct tsrnn_atomic_file){ 0 };
}

static enum tsrnn_status step_failed(const struct tsrnn_atomic_file *af, const char *step, int err)
{
    if (af->tmp == NULL)
        return tsrnn_error_errno(TSRNN_ERR_IO, err != 0 ? err : EIO, "cannot write %s: %s failed",
                                 tsrnn_display_path(af->path), step);
    return tsrnn_error_errno(TSRNN_ERR_IO, err != 0 ? err : EIO,
                             "cannot write %s: %s of the temporary file %s failed",
                             tsrnn_display_path(af->path), step, tsrnn_display_path(af->tmp));
}

/* The folder part of `path` ("." for a bare name); NULL when out of memory. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash == NULL ? strdup(".") : strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* Whether the symbolic link `path` is one of /proc's (/proc/self/fd/N, where /dev/stdout and
 * /dev/fd/N lead): those name an open file, which may have no name of its own (a pipe, a
 * terminal, a deleted file), or one that a shell opened for appending. */
static bool is_proc_link(const char *path)
{
    char *folder = folder_of(path);
    struct statfs fs;
    bool proc = folder != NULL && statfs(folder, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
    free(folder);
    return proc;
}

/* The name `path`'s next symbolic link leads to (its text, taken relative to the link's
 * folder unless absolute); NULL with errno set. */
static char *follow_link(const char *path)
{
    char text[PATH_MAX], *next = NULL;
    ssize_t len = readlink(path, text, sizeof(text) - 1);
    if (len < 0)
        return NULL;
    text[len] = '\0';
    if (text[0] == '/')
        return strdup(text);
    char *folder = folder_of(path);
    if (folder != NULL && asprintf(&next, "%s/%s", folder, text) < 0)
        next = NULL;
    free(folder);
    if (next == NULL)
        errno = ENOMEM;
    return next;
}

/* The kernel's word on following `path` to `target`: a process may not follow a link that
 * another user planted in a sticky world-writable folder (fs.protected_symlinks), and what
 * open() would reach must be the file that `target` names (not swapped meanwhile). 0 or an
 * errno. */
static int may_follow(const char *path, const char *target)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT && access(target, F_OK) != 0 ? 0 : errno;
    struct stat a, b;
    int err = fstat(fd, &a) != 0 ? errno : stat(target, &b) != 0 ? errno : 0;
    close(fd);
    if (err == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
        err = EAGAIN; /* the links changed while they were followed */
    return err;
}

/* Where a write to `path` goes, following its symbolic links one at a time:
 *   - *target = the name of the regular file (or of the file still to be made) behind
 *     `path`: it is replaced atomically there, in its own folder, so a link is written
 *     through and stays a link;
 *   - *target = NULL: `path` leads to a character device, a FIFO, a socket or an open file of
 *     /proc, which are written in place (renaming a file over /dev/null or /dev/stdout would
 *     replace the device or the link with a regular file).
 * A folder or a block device is refused: no forecast or checkpoint belongs there. */
static enum tsrnn_status resolve_target(const char *path, char **target)
{
    char *name = strdup(path);
    int hop = 0, err = name == NULL ? ENOMEM : 0;
    struct stat st = { .st_mode = S_IFLNK };
    enum tsrnn_status status = TSRNN_OK;

    *target = NULL;
    for (; name != NULL; hop++) {
        if (lstat(name, &st) != 0) {
            if (errno != ENOENT)
                err = errno;
            st.st_mode = S_IFREG; /* a new file (through a dangling link: where it points) */
            break;
        }
        if (!S_ISLNK(st.st_mode) || is_proc_link(name))
            break;
        /* Only this user's links and root's (/dev/stdout) are followed: one that another
         * user who can write the folder put at a name tsrnn writes would make it write
         * wherever they chose, with this user's rights. */
        if (st.st_uid != geteuid() && st.st_uid != 0) {
            status = tsrnn_error(
                TSRNN_ERR_IO,
                "cannot write %s: %s is a symbolic link of another user (uid %u); tsrnn "
                "writes through links of its own user or root only: remove it",
                tsrnn_display_path(path), tsrnn_display_path(name), (unsigned)st.st_uid);
            goto out;
        }
        char *next = hop < LINK_HOPS_MAX ? follow_link(name) : (errno = ELOOP, NULL);
        if (next == NULL)
            err = errno;
        free(name);
        name = next;
    }
    if (name == NULL && err == ENOMEM) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", tsrnn_display_path(path));
        goto out;
    }
    if (name != NULL && err == 0 && S_ISREG(st.st_mode) && hop > 0)
        err = may_follow(path, name);
    if (err != 0)
        status = tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s", tsrnn_display_path(path));
    else if (S_ISDIR(st.st_mode))
        status = tsrnn_error(TSRNN_ERR_IO, "cannot write %s: it is a folder; give a file name",
                             tsrnn_display_path(path));
    else if (S_ISBLK(st.st_mode))
        status = tsrnn_error(TSRNN_ERR_IO,
                             "cannot write %s: it is a block device; tsrnn writes regular files, "
                             "character devices and pipes",
                             tsrnn_display_path(path));
    else if (S_ISREG(st.st_mode)) {
        *target = name; /* the caller's */
        name = NULL;
    }
out:
    free(name);
    return status;
}

enum tsrnn_status tsrnn_atomic_file_target(const char *path, char **target)
{
    return resolve_target(path, target);
}

/* 48 bits for a temporary name. Not a secret: O_EXCL | O_NOFOLLOW make the name safe; its
 * being unpredictable keeps anyone from blocking it in advance. */
static uint64_t random_bits(void)
{
    static _Atomic uint64_t counter;
    uint64_t v;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        /* No entropy pool yet (early boot): the clock, the pid and a counter, mixed
         * (splitmix64's finalizer). */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48 ^
            atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15u;
        v = (v ^ v >> 30) * 0xbf58476d1ce4e5b9u;
        v = (v ^ v >> 27) * 0x94d049bb133111ebu;
        v ^= v >> 31;
    }
    return v & 0xffffffffffffu;
}

/* A fresh "<target>.tmp.<12 random hex digits>" in *tmp; NULL when out of memory. */
static char *temporary_name(const char *target)
{
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%012llx", target, (unsigned long long)random_bits()) < 0)
        return NULL;
    return tmp;
}

/* Creates af->tmp beside af->target: a new file (O_EXCL: nothing that exists there, a
 * planted link or file, is ever opened; O_NOFOLLOW says so twice) with the mode a plain
 * create would give. The descriptor, or -1 with errno set. */
static int create_temporary(struct tsrnn_atomic_file *af)
{
    for (int i = 0; i < TMP_TRIES; i++) {
        free(af->tmp);
        af->tmp = temporary_name(af->target);
        if (af->tmp == NULL) {
            errno = ENOMEM;
            return -1;
        }
        int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1; /* errno is EEXIST */
}

enum tsrnn_status tsrnn_atomic_file_open(struct tsrnn_atomic_file *af, const char *path)
{
    static const cookie_io_functions_t io = { .write = sink_write, .close = sink_close };
    enum tsrnn_status status = TSRNN_OK;
    *af = (struct tsrnn_atomic_file){ .path = strdup(path), .sink = malloc(sizeof(*af->sink)) };
    if (af->path == NULL || af->sink == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", tsrnn_display_path(path));
        goto out;
    }
    *af->sink = (struct tsrnn_atomic_sink){ .fd = -1 };
    status = resolve_target(path, &af->target);
    if (status != TSRNN_OK)
        goto out;
    if (af->target == NULL) {
        /* In place. O_APPEND keeps a shell's `>>` an append through /dev/stdout (devices and
         * pipes ignore it); O_NOCTTY: a terminal does not become this process's. */
        af->sink->fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
        if (af->sink->fd < 0) {
            status = step_failed(af, "open", errno);
            goto out;
        }
    } else {
        af->sink->fd = create_temporary(af);
        if (af->sink->fd < 0 && af->tmp == NULL) {
            status =
                tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", tsrnn_display_path(path));
            goto out;
        }
        if (af->sink->fd < 0) {
            status = step_failed(af, "create", errno);
            goto out;
        }
    }
    af->file = fopencookie(af->sink, "w", io);
    if (af->file == NULL)
        status = step_failed(af, "create", errno);
out:
    if (status != TSRNN_OK) {
        /* What this call opened or made, and nothing else: a temporary name that failed to
         * be created may be another file's. */
        if (af->sink != NULL && af->sink->fd >= 0) {
            close(af->sink->fd);
            if (af->tmp != NULL)
                unlink(af->tmp);
        }
        release(af);
    }
    return status;
}

/* fsync()s the folder holding `path`, so that the rename survives a crash; 0 or an errno. */
static int sync_folder(const char *path)
{
    char *folder = folder_of(path);
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
    } else if (fsync(af->sink->fd) != 0 && (af->tmp != NULL || errno != EINVAL)) {
        step = "sync"; /* EINVAL: a pipe, a terminal or a device that holds nothing to sync */
        *err = errno;
    }
    if (fclose(af->file) != 0 && step == NULL) {
        step = "close";
        *err = af->sink->err != 0 ? af->sink->err : errno;
    }
    af->file = NULL;
    if (step == NULL && af->tmp != NULL && rename(af->tmp, af->target) != 0) {
        step = "rename";
        *err = errno;
    }
    return step;
}

static enum tsrnn_status folder_sync_failed(const char *path, int err)
{
    return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s: syncing its folder failed",
                             tsrnn_display_path(path));
}

static enum tsrnn_status commit(struct tsrnn_atomic_file *af, bool sync)
{
    int err = 0;
    const char *step = finish_file(af, &err);
    enum tsrnn_status status = TSRNN_OK;
    if (step != NULL) {
        status = step_failed(af, step, err);
        if (af->tmp != NULL)
            unlink(af->tmp);
    } else if (sync && af->tmp != NULL && (err = sync_folder(af->target)) != 0) {
        status = folder_sync_failed(af->path, err);
    }
    release(af);
    return status;
}

enum tsrnn_status tsrnn_atomic_file_commit(struct tsrnn_atomic_file *af)
{
    return commit(af, true);
}

enum tsrnn_status tsrnn_atomic_file_commit_unsynced(struct tsrnn_atomic_file *af)
{
    return commit(af, false);
}

enum tsrnn_status tsrnn_atomic_file_sync_folder(const char *path)
{
    int err = sync_folder(path);
    return err == 0 ? TSRNN_OK : folder_sync_failed(path, err);
}

void tsrnn_atomic_file_abort(struct tsrnn_atomic_file *af)
{
    if (af->file != NULL) {
        fclose(af->file);
        if (af->tmp != NULL)
            unlink(af->tmp);
    }
    release(af);
}

/* A step of tsrnn_atomic_file_link() that failed with `err`. */
static enum tsrnn_status link_failed(const char *existing, const char *path, const char *step,
                                     int err)
{
    return tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot link %s to %s: %s failed",
                             tsrnn_display_path(path), tsrnn_display_path(existing), step);
}

enum tsrnn_status tsrnn_atomic_file_link(const char *existing, const char *path)
{
    char *tmp = NULL;
    bool linked = false; /* tmp is a second name of `existing`: removed again on a failure */
    int err = EEXIST;
    struct stat st;
    enum tsrnn_status status = TSRNN_OK;

    /* link(2) never follows or replaces what is at the temporary name: a clash is retried
     * under another name. */
    for (int i = 0; i < TMP_TRIES && err == EEXIST; i++) {
        free(tmp);
        if ((tmp = temporary_name(path)) == NULL) {
            status =
                tsrnn_error(TSRNN_ERR_NOMEM, "out of memory linking %s", tsrnn_display_path(path));
            goto out;
        }
        err = link(existing, tmp) == 0 ? 0 : errno;
    }
    if (err != 0) {
        status = link_failed(existing, path, "link", err);
        goto out;
    }
    linked = true;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* A link, a device or a folder there is written through by the caller (an atomic
         * file), not replaced by a second name of this file. */
        status =
            tsrnn_error(TSRNN_ERR_IO, "cannot link %s to %s: it exists and is not a regular file",
                        tsrnn_display_path(path), tsrnn_display_path(existing));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        status = link_failed(existing, path, "rename", errno);
        goto out;
    }
    linked = false; /* renamed to path */
    err = sync_folder(path);
    if (err != 0)
        status = link_failed(existing, path, "sync of its folder", err);
out:
    if (linked)
        unlink(tmp);
    free(tmp);
    return status;
}
