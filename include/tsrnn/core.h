/* tsrnn core: status codes, the per-thread error message, and exit codes.
 *
 * Every library function that can fail returns an enum tsrnn_status. The site that fails
 * writes one message with tsrnn_error() ("what, where, which value, what is accepted");
 * callers pass the status up unchanged (TSRNN_TRY) and only a main() prints the message and
 * turns the status into an exit code with tsrnn_status_exit_code(). Nothing in the library
 * calls exit(), abort() or assert() on anything that input, a file, a peer or a device can
 * cause.
 */
#ifndef TSRNN_CORE_H
#define TSRNN_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/status.h" /* enum tsrnn_status, shared with the C API */

/* Process exit codes (README "Exit codes"). 77 is used by tests only, for "skipped". */
enum tsrnn_exit {
    TSRNN_EXIT_OK = 0,
    TSRNN_EXIT_RUNTIME = 1,
    TSRNN_EXIT_USAGE = 2,
    TSRNN_EXIT_PEER = 3,
    TSRNN_EXIT_INTERRUPTED = 130,
};

/* The version of this build ("0.1.0"), from meson.build. */
const char *tsrnn_version(void);

/* Records `status` with a printf-style message for this thread and returns `status`, so a
 * failing site reads `return tsrnn_error(TSRNN_ERR_USAGE, "...", ...);`. The message replaces
 * any earlier one and is truncated to 2047 bytes. */
enum tsrnn_status tsrnn_error(enum tsrnn_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* As tsrnn_error(), appending ": <strerror(errnum)>". */
enum tsrnn_status tsrnn_error_errno(enum tsrnn_status status, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to this thread's message (a hint a caller knows better than the failing site)
 * and returns `status`, which may differ from the original one. */
enum tsrnn_status tsrnn_error_append(enum tsrnn_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The message of this thread's last tsrnn_error(), or "" if there was none. */
const char *tsrnn_last_error(void);

/* Forgets this thread's message. */
void tsrnn_error_clear(void);

/* "ok", "usage error", ... for logs. */
const char *tsrnn_status_name(enum tsrnn_status status);

/* The documented process exit code for a status. */
int tsrnn_status_exit_code(enum tsrnn_status status);

/* Prints "warning: <message>" on stderr for something a user should know but that does not
 * stop the run (a setting without effect, ...). */
void tsrnn_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* `path` relative to the current folder when it lies below it, else as is: what messages and
 * summaries show of the absolute paths a resolved config holds. Opens the same file. */
const char *tsrnn_display_path(const char *path);

/* Parses a whole string as a base-10 integer: no empty text, no trailing characters, no
 * overflow. Returns false otherwise. */
bool tsrnn_parse_int64(const char *text, int64_t *out);

/* Writes `nbytes` of `data` to `fd`, going on after short writes and EINTR. Returns the
 * bytes written: all of them, or fewer with *err set to the errno of the failure (ENOSPC
 * for a write that wrote nothing). */
size_t tsrnn_write_all(int fd, const void *data, size_t nbytes, int *err);

/* Opens `path` with open(2) `flags` (O_RDONLY, or O_WRONLY | O_CREAT | ..., with O_NOFOLLOW
 * where a link must not be followed) into *fd, when it is a regular file: a FIFO, a device,
 * a socket, a folder or (with O_NOFOLLOW) a symbolic link is refused at once, never waited
 * on: `status` with a message naming `what`, the path and what it is. *fd is -1 on error. */
enum tsrnn_status tsrnn_open_regular(const char *path, int flags, const char *what,
                                     enum tsrnn_status status, int *fd);

/* Reads the whole of the regular file `path` into a heap buffer, NUL-terminated (*nbytes
 * without it); the caller frees *text. Anything but a regular file is refused before a byte
 * is read (a FIFO would block or read as empty, /dev/zero never ends), and so is a file over
 * max_nbytes: `status` (TSRNN_ERR_USAGE, TSRNN_ERR_DATA) with a message naming `what` and
 * the path. */
enum tsrnn_status tsrnn_read_file(const char *path, size_t max_nbytes, const char *what,
                                  enum tsrnn_status status, char **text, size_t *nbytes);

/* Whether `text` is strict UTF-8 (as JSON and Python accept it). */
bool tsrnn_utf8_valid(const char *text);

/* How many of the first nbytes of `text` are strict UTF-8 before a NUL or a byte that is not
 * (nbytes when all are); text[nbytes] must be a NUL. */
size_t tsrnn_utf8_prefix(const char *text, size_t nbytes);

/* `text` made safe to print in a message: control characters (newline, tab, escape, DEL, the
 * C1 controls U+0080 to U+009F) and bytes that are not UTF-8 written as \n, \t, \x1b,
 * \xc2\x9b, \xe9, ...; the rest as it is. Returns out (capacity bytes, cut with "..." when it
 * does not fit). tsrnn_error() and tsrnn_warn() pass every message through it. */
const char *tsrnn_printable(const char *text, char *out, size_t capacity);

/* Whether tsrnn_printable() would leave `text` as it is: strict UTF-8 without a control
 * character. What names from data files and checkpoints (columns, series ids) must be. */
bool tsrnn_text_printable(const char *text);

/* The memory this process can still have, in bytes: the least of /proc/meminfo's
 * MemAvailable + SwapFree, its cgroup's limit less its usage (v2 memory.max, v1
 * memory.limit_in_bytes) and RLIMIT_AS / RLIMIT_DATA less what it maps. `source` names the
 * limit that gave it ("MemAvailable", "the cgroup's memory.max", ...). Returns false when none
 * can be read (then nothing is refused). src/core/memory.c. */
bool tsrnn_memory_available(double *nbytes, char *source, size_t source_nbytes);

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): for durations only. */
double tsrnn_clock_now_s(void);

/* Propagates a failing status to the caller. */
#define TSRNN_TRY(expr)                                                                            \
    do {                                                                                           \
        enum tsrnn_status tsrnn_try_status_ = (expr);                                              \
        if (tsrnn_try_status_ != TSRNN_OK)                                                         \
            return tsrnn_try_status_;                                                              \
    } while (0)

#endif
