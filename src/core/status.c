/* The per-thread error message behind tsrnn_error(), warnings, and small parsers
 * (include/tsrnn/core.h). */
#include "tsrnn/core.h"

#include "tsrnn_build.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local char error_message[2048];

const char *tsrnn_version(void)
{
    return TSRNN_VERSION_STRING;
}

static void append_errno(int errnum)
{
    size_t used = strlen(error_message);
    if (used < sizeof(error_message))
        snprintf(error_message + used, sizeof(error_message) - used, ": %s", strerror(errnum));
}

/* Formats a message into error_message from byte `at` on. Every message passes the printable
 * filter (tsrnn_printable()): a value it shows from a data file, a checkpoint or the command
 * line (a CSV cell, a name, a path) cannot drive the terminal or break the log line it ends
 * in. */
static void format_message(size_t at, const char *fmt, va_list ap)
{
    char raw[sizeof(error_message)];
    if (at >= sizeof(error_message) - 1)
        return;
    vsnprintf(raw, sizeof(raw), fmt, ap);
    tsrnn_printable(raw, error_message + at, sizeof(error_message) - at);
}

enum tsrnn_status tsrnn_error(enum tsrnn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_message(0, fmt, ap);
    va_end(ap);
    return status;
}

enum tsrnn_status tsrnn_error_errno(enum tsrnn_status status, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_message(0, fmt, ap);
    va_end(ap);
    append_errno(errnum);
    return status;
}

enum tsrnn_status tsrnn_error_append(enum tsrnn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_message(strlen(error_message), fmt, ap);
    va_end(ap);
    return status;
}

const char *tsrnn_last_error(void)
{
    return error_message;
}

void tsrnn_error_clear(void)
{
    error_message[0] = '\0';
}

const char *tsrnn_status_name(enum tsrnn_status status)
{
    switch (status) {
    case TSRNN_OK:
        return "ok";
    case TSRNN_ERR_USAGE:
        return "usage error";
    case TSRNN_ERR_DATA:
        return "data error";
    case TSRNN_ERR_IO:
        return "I/O error";
    case TSRNN_ERR_NOMEM:
        return "out of memory";
    case TSRNN_ERR_NUMERIC:
        return "numeric error";
    case TSRNN_ERR_COMM:
        return "communication error";
    case TSRNN_ERR_INTERRUPTED:
        return "interrupted";
    }
    return "unknown status";
}

int tsrnn_status_exit_code(enum tsrnn_status status)
{
    switch (status) {
    case TSRNN_OK:
        return TSRNN_EXIT_OK;
    case TSRNN_ERR_USAGE:
    case TSRNN_ERR_DATA:
        return TSRNN_EXIT_USAGE;
    case TSRNN_ERR_COMM:
        return TSRNN_EXIT_PEER;
    case TSRNN_ERR_INTERRUPTED:
        return TSRNN_EXIT_INTERRUPTED;
    case TSRNN_ERR_IO:
    case TSRNN_ERR_NOMEM:
    case TSRNN_ERR_NUMERIC:
        break;
    }
    return TSRNN_EXIT_RUNTIME;
}

bool tsrnn_parse_int64(const char *text, int64_t *out)
{
    char *end;
    if (*text == '\0')
        return false;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (int64_t)v;
    return true;
}

void tsrnn_warn(const char *fmt, ...)
{
    char message[1024], shown[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    fprintf(stderr, "warning: %s\n", tsrnn_printable(message, shown, sizeof(shown)));
}

const char *tsrnn_display_path(const char *path)
{
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return path;
    size_t n = strlen(cwd);
    if (strncmp(path, cwd, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}
