/* Whole reads and writes of files (include/tsrnn/core.h). */
#include "tsrnn/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
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

enum tsrnn_status tsrnn_open_regular(const char *path, int flags, const char *what,
                                     enum tsrnn_status status, int *fd)
{
    struct stat st;
    const char *shown = tsrnn_display_path(path);
    /* O_NONBLOCK: opening a FIFO with nobody at its other end would wait forever (reading),
     * or fails with ENXIO (writing). */
    *fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, 0666);
    int err = errno;
    if (*fd < 0 && err == ELOOP && (flags & O_NOFOLLOW))
        return tsrnn_error(status, "%s %s is a symbolic link; accepted: a file", what, shown);
    if (*fd < 0 && err == ENXIO)
        return tsrnn_error(status, "%s %s is not a regular file (a FIFO); accepted: a file", what,
                           shown);
    if (*fd < 0)
        return tsrnn_error_errno(status, err, "cannot open %s %s", what, shown);
    const char *kind = NULL;
    if (fstat(*fd, &st) != 0)
        err = errno;
    else if (S_ISDIR(st.st_mode))
        err = EISDIR;
    else if (!S_ISREG(st.st_mode))
        kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
               : S_ISCHR(st.st_mode)  ? "a character device"
               : S_ISBLK(st.st_mode)  ? "a block device"
               : S_ISSOCK(st.st_mode) ? "a socket"
                                      : "not a file";
    else
        err = 0;
    if (err != 0 || kind != NULL) {
        close(*fd);
        *fd = -1;
        if (kind != NULL)
            return tsrnn_error(status, "%s %s is not a regular file (%s); accepted: a file", what,
                               shown, kind);
        return tsrnn_error_errno(status, err, "cannot read %s %s", what, shown);
    }
    fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK); /* a regular file never blocks */
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_read_file(const char *path, size_t max_nbytes, const char *what,
                                  enum tsrnn_status status, char **text, size_t *nbytes)
{
    struct stat st;
    int fd = -1;
    char *buf = NULL;
    size_t capacity = 0, done = 0;
    enum tsrnn_status result = TSRNN_OK; /* `status`: the code a failure reports */
    *text = NULL;
    *nbytes = 0;
    TSRNN_TRY(tsrnn_open_regular(path, O_RDONLY, what, status, &fd));
    if (fstat(fd, &st) != 0) {
        int err = errno;
        result =
            tsrnn_error_errno(status, err, "cannot read %s %s", what, tsrnn_display_path(path));
        goto out;
    }
    if ((uint64_t)st.st_size > max_nbytes) {
        result = tsrnn_error(status, "%s %s is %lld bytes; accepted: up to %zu bytes", what,
                             tsrnn_display_path(path), (long long)st.st_size, max_nbytes);
        goto out;
    }
    capacity = (size_t)st.st_size;
    buf = malloc(capacity + 1);
    if (buf == NULL) {
        result = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s %s (%zu bytes)", what,
                             tsrnn_display_path(path), capacity);
        goto out;
    }
    /* Read what fstat promised and no more: a file that grows meanwhile is read as it was. */
    while (done < capacity) {
        ssize_t n = read(fd, buf + done, capacity - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            result =
                tsrnn_error_errno(status, err, "cannot read %s %s", what, tsrnn_display_path(path));
            goto out;
        }
        if (n == 0)
            break; /* shrunk meanwhile: what is there */
        done += (size_t)n;
    }
    buf[done] = '\0';
    *text = buf;
    *nbytes = done;
    buf = NULL; /* the caller's */
out:
    free(buf);
    close(fd);
    return result;
}

/* The length of the strict UTF-8 sequence at p (1 to 4), or 0 when it is not one: as jansson
 * and Python's json accept UTF-8, no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *p)
{
    uint32_t cp, min;
    size_t extra;
    if (*p < 0x80)
        return 1;
    if ((*p & 0xE0) == 0xC0)
        cp = *p & 0x1Fu, min = 0x80, extra = 1;
    else if ((*p & 0xF0) == 0xE0)
        cp = *p & 0x0Fu, min = 0x800, extra = 2;
    else if ((*p & 0xF8) == 0xF0)
        cp = *p & 0x07u, min = 0x10000, extra = 3;
    else
        return 0;
    for (size_t i = 1; i <= extra; i++) {
        if ((p[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return extra + 1;
}

size_t tsrnn_utf8_prefix(const char *text, size_t nbytes)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    /* utf8_sequence() reads at most 3 bytes past a lead byte and stops at a NUL: the buffer
     * must end in one (tsrnn_read_file's do). */
    for (size_t len; i < nbytes && p[i] != 0; i += len)
        if ((len = utf8_sequence(p + i)) == 0 || i + len > nbytes)
            break;
    return i;
}

bool tsrnn_utf8_valid(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t len; *p != 0; p += len)
        if ((len = utf8_sequence(p)) == 0)
            return false;
    return true;
}

/* Whether the UTF-8 sequence of `len` bytes at p is a control character: C0 (below 0x20),
 * DEL, or C1 (U+0080 to U+009F, 0xC2 0x80-0x9F: a terminal may take U+009B for CSI). */
static bool is_control(const unsigned char *p, size_t len)
{
    return (len == 1 && (*p < 0x20 || *p == 0x7f)) || (len == 2 && p[0] == 0xC2 && p[1] < 0xA0);
}

bool tsrnn_text_printable(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t len; *p != 0; p += len)
        if ((len = utf8_sequence(p)) == 0 || is_control(p, len))
            return false;
    return true;
}

const char *tsrnn_printable(const char *text, char *out, size_t capacity)
{
    static const char short_names[] = { ['\n'] = 'n', ['\t'] = 't', ['\r'] = 'r' };
    size_t used = 0;
    if (capacity == 0)
        return out;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        char piece[16];
        size_t len, seq = utf8_sequence(p);
        if (*p < sizeof(short_names) && short_names[*p] != 0)
            len = (size_t)snprintf(piece, sizeof(piece), "\\%c", short_names[*p]);
        else if (seq == 0 || (seq == 1 && is_control(p, 1))) /* a control byte, or not UTF-8 */
            len = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", *p);
        else if (is_control(p, seq)) /* C1: its two bytes */
            len = (size_t)snprintf(piece, sizeof(piece), "\\x%02x\\x%02x", p[0], p[1]);
        else
            memcpy(piece, p, seq), len = seq;
        p += seq ? seq : 1;
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
