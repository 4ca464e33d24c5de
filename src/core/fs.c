/* File system helpers (include/tsrnn/fs.h). */
#include "tsrnn/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum tsrnn_status tsrnn_make_dirs(const char *path)
{
    char partial[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(partial))
        return tsrnn_error(TSRNN_ERR_IO, "path too long: %s", path);
    memcpy(partial, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (partial[i] != '/' && partial[i] != '\0')
            continue;
        char saved = partial[i];
        partial[i] = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST)
            return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot create the folder %s",
                                     tsrnn_display_path(partial));
        partial[i] = saved;
    }
    return TSRNN_OK;
}

/* nftw's callback has no argument of its own: what failed goes here, per thread (a helper
 * thread may remove an old run folder while the trainer removes something else). */
static _Thread_local char failed_path[PATH_MAX];
static _Thread_local int failed_errno;

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int rc = type == FTW_DP ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        failed_errno = errno;
        snprintf(failed_path, sizeof(failed_path), "%s", path);
        return 1;
    }
    return 0;
}

enum tsrnn_status tsrnn_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT)
        return TSRNN_OK;
    failed_errno = 0;
    /* Depth first (contents before their folder), physical (a link is removed, not
     * followed), on this file system only. */
    int rc = nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (rc == 0)
        return TSRNN_OK;
    if (failed_errno != 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, failed_errno, "cannot remove %s",
                                 tsrnn_display_path(failed_path));
    return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot walk %s", tsrnn_display_path(path));
}

bool tsrnn_folder_holds(const char *path, const char *needle)
{
    DIR *dir = opendir(path);
    if (dir == NULL)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(dir)) != NULL)
        found = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                strstr(e->d_name, needle) != NULL;
    closedir(dir);
    return found;
}

/* "{dir}/.{name}{suffix}" for the run folder {dir}/{name} (trailing slashes ignored; ".",
 * ".." and "/" resolved first, as they have no name of their own). */
static enum tsrnn_status sibling_path(char *out, size_t capacity, const char *run_dir,
                                      const char *suffix)
{
    char path[PATH_MAX];
    size_t len = strlen(run_dir);
    if (len >= sizeof(path))
        return tsrnn_error(TSRNN_ERR_USAGE, "path too long: %s", run_dir);
    memcpy(path, run_dir, len + 1);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(path, "/") == 0 ||
        name[0] == '\0') {
        if (realpath(run_dir, path) == NULL)
            return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot find the folder %s",
                                     tsrnn_display_path(run_dir));
        slash = strrchr(path, '/');
        name = slash + 1;
    }
    int dir_len = slash == NULL ? 1 : slash == path ? 1 : (int)(slash - path);
    int n =
        snprintf(out, capacity, "%.*s/.%s%s", dir_len, slash == NULL ? "." : path, name, suffix);
    if (n < 0 || (size_t)n >= capacity)
        return tsrnn_error(TSRNN_ERR_USAGE, "path too long: %s", run_dir);
    return TSRNN_OK;
}

bool tsrnn_move_aside(const char *path, char *moved, size_t capacity)
{
    /* One left by a process killed before it had removed its own goes first. */
    if (sibling_path(moved, capacity, path, ".old") != TSRNN_OK ||
        tsrnn_remove_tree(moved) != TSRNN_OK) {
        tsrnn_error_clear();
        moved[0] = '\0';
        return false;
    }
    if (rename(path, moved) == 0)
        return true;
    bool missing = errno == ENOENT; /* nothing to move, nothing to remove */
    moved[0] = '\0';
    return missing;
}

enum tsrnn_status tsrnn_run_lock_acquire(struct tsrnn_run_lock *lock, const char *run_dir,
                                         enum tsrnn_run_lock_mode mode)
{
    char path[PATH_MAX + 16];
    bool exclusive = mode == TSRNN_RUN_LOCK_EXCLUSIVE;

    lock->fd = -1;
    TSRNN_TRY(sibling_path(path, sizeof(path), run_dir, ".lock"));
    struct stat st;
    if (!exclusive && stat(run_dir, &st) != 0)
        return TSRNN_OK; /* no run folder: nothing to read, no lock file to make */
    /* O_NOFOLLOW: a link planted there is not followed; O_NONBLOCK: a FIFO planted there
     * does not hang the open. A reader needs only read access to the file. */
    int flags = O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (exclusive ? O_RDWR : O_RDONLY);
    int fd = open(path, flags, 0666);
    if (fd < 0 && (errno == ENOENT || (!exclusive && (errno == EACCES || errno == EROFS))))
        return TSRNN_OK; /* no folder to hold it yet; or a place where nobody can write */
    if (fd < 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot open the lock file %s of %s",
                                 tsrnn_display_path(path), tsrnn_display_path(run_dir));
    enum tsrnn_status status = TSRNN_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        status = tsrnn_error(TSRNN_ERR_IO,
                             "the lock file %s of %s is not a regular file; remove it and start "
                             "again",
                             tsrnn_display_path(path), tsrnn_display_path(run_dir));
        goto out;
    }
    struct flock fl = { .l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET };
    if (fcntl(fd, F_SETLK, &fl) == 0) {
        lock->fd = fd; /* held until tsrnn_run_lock_release() */
        return TSRNN_OK;
    }
    int err = errno;
    if (err != EAGAIN && err != EACCES) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot lock %s (the lock file %s)",
                                   tsrnn_display_path(run_dir), tsrnn_display_path(path));
        goto out;
    }
    fl = (struct flock){ .l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET };
    bool known = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    char holder[64] = "another process";
    if (known && fl.l_pid > 0)
        snprintf(holder, sizeof(holder), "process %ld", (long)fl.l_pid);
    else if (known) /* in another pid namespace: the kernel cannot name it here */
        snprintf(holder, sizeof(holder), "a process of another container");
    status =
        tsrnn_error(TSRNN_ERR_USAGE, "%s is in use: %s holds its lock %s (%s)",
                    tsrnn_display_path(run_dir), holder, tsrnn_display_path(path),
                    known && fl.l_type == F_RDLCK ? "a reader: tsrnn-predict" : "a training run");
out:
    close(fd);
    return status;
}

void tsrnn_run_lock_release(struct tsrnn_run_lock *lock)
{
    if (lock->fd >= 0)
        close(lock->fd);
    lock->fd = -1;
}
