/* Whole reads and writes of files (include/tsrnn/core.h). */
#include "tsrnn/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

size_t tsrnn_write_all(int fd, const void *data, size_t nbytes, int *err)
{
    const char *bytes = data;
    size_t done = 0;
    while (done < nbytes) {
        ssize_t n = write(fd, bytes + done, nbytes - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* a write of 0 bytes makes no progress: treat it as a full disk */
            *err = n < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)n;
    }
    return done;
}

enum tsrnn_status tsrnn_read_file(const char *path, size_t max_nbytes, const char *what,
                                  enum tsrnn_status status, char **text, size_t *nbytes)
{
    struct stat st;
    *text = NULL;
    *nbytes = 0;
    /* O_NONBLOCK: opening a FIFO without a writer would wait forever. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return tsrnn_error_errno(status, errno, "cannot open %s %s", what,
                                 tsrnn_display_path(path));
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return tsrnn_error_errno(status, err, "cannot read %s %s", what, tsrnn_display_path(path));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return tsrnn_error_errno(status, EISDIR, "cannot read %s %s", what,
                                 tsrnn_display_path(path));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tsrnn_error(status, "%s %s is not a regular file (%s); accepted: a file", what,
                           tsrnn_display_path(path),
                           S_ISFIFO(st.st_mode)   ? "a FIFO"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : "not a file");
    }
    if ((uint64_t)st.st_size > max_nbytes) {
        close(fd);
        return tsrnn_error(status, "%s %s is %lld bytes; accepted: up to %zu bytes", what,
                           tsrnn_display_path(path), (long long)st.st_size, max_nbytes);
    }
    size_t capacity = (size_t)st.st_size, done = 0;
    char *buf = malloc(capacity + 1);
    if (buf == NULL) {
        close(fd);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s %s (%zu bytes)", what,
                           tsrnn_display_path(path), capacity);
    }
    /* Read what fstat promised and no more: a file that grows meanwhile is read as it was. */
    while (done < capacity) {
        ssize_t n = read(fd, buf + done, capacity - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(buf);
            close(fd);
            return tsrnn_error_errno(status, err, "cannot read %s %s", what,
                                     tsrnn_display_path(path));
        }
        if (n == 0)
            break; /* shrunk meanwhile: what is there */
        done += (size_t)n;
    }
    close(fd);
    buf[done] = '\0';
    *text = buf;
    *nbytes = done;
    return TSRNN_OK;
}

const char *tsrnn_printable(const char *text, char *out, size_t capacity)
{
    size_t used = 0;
    if (capacity == 0)
        return out;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        char piece[8];
        size_t len;
        if (*p == '\n' || *p == '\t' || *p == '\r')
            len = (size_t)snprintf(piece, sizeof(piece), "\\%c",
                                   *p == '\n'   ? 'n'
                                   : *p == '\t' ? 't'
                                                : 'r');
        else if (*p < 0x20 || *p == 0x7f)
            len = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", *p);
        else
            piece[0] = (char)*p, len = 1;
        if (used + len + 4 > capacity) { /* room for "..." and the NUL */
            snprintf(out + used, capacity - used, "...");
            return out;
        }
        memcpy(out + used, piece, len);
        used += len;
    }
    out[used] = '\0';
    return out;
}
