/* metrics.csv in the layout of Lightning's CSVLogger (include/tsrnn/report.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/report.h"

static enum tsrnn_status write_failed(const struct tsrnn_metrics_csv *m, int errnum)
{
    return tsrnn_error_errno(TSRNN_ERR_IO, errnum, "cannot write %s", tsrnn_display_path(m->path));
}

/* Writes the buffered rows; the buffer only ever holds whole rows. */
static enum tsrnn_status flush_rows(struct tsrnn_metrics_csv *m)
{
    int err = 0;
    if (tsrnn_write_all(m->fd, m->buffer, m->used_nbytes, &err) < m->used_nbytes)
        return write_failed(m, err);
    m->used_nbytes = 0;
    return TSRNN_OK;
}

/* Appends one formatted row, writing out the earlier ones first when it would not fit. */
static enum tsrnn_status append_row(struct tsrnn_metrics_csv *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum tsrnn_status append_row(struct tsrnn_metrics_csv *m, const char *fmt, ...)
{
    char row[256];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(row, sizeof(row), fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof(row))
        return tsrnn_error(TSRNN_ERR_IO, "metrics row too long for %s",
                           tsrnn_display_path(m->path));
    if (m->used_nbytes + (size_t)len > sizeof(m->buffer))
        TSRNN_TRY(flush_rows(m));
    memcpy(m->buffer + m->used_nbytes, row, (size_t)len);
    m->used_nbytes += (size_t)len;
    return TSRNN_OK;
}

#define HEADER "epoch,step,train_loss,val_loss\n"

/* Opens metrics.csv as a regular file, by the rule of every file tsrnn writes
 * (include/tsrnn/atomic_file.h): through a link of this user's or root's, never through
 * another user's, and never a FIFO or a device (which would block, or read as empty): -1
 * with an error set. */
static int open_regular(const struct tsrnn_metrics_csv *m, int flags)
{
    int fd = -1;
    char *target = NULL;
    if (tsrnn_atomic_file_target(m->path, &target) != TSRNN_OK)
        return -1;
    if (target == NULL)
        tsrnn_error(TSRNN_ERR_IO,
                    "the metrics file %s is not a regular file; accepted: a file "
                    "(tsrnn writes the files of its run folder itself: remove it)",
                    tsrnn_display_path(m->path));
    else
        tsrnn_open_regular(target, flags | O_NOFOLLOW, "the metrics file", TSRNN_ERR_IO, &fd);
    free(target);
    return fd;
}

/* Rewrites metrics.csv (atomically) with its header and the rows of steps before
 * `keep_before_step` only: the rows of a resumed run's future steps go. */
static enum tsrnn_status keep_rows(const struct tsrnn_metrics_csv *m, int64_t keep_before_step)
{
    if (access(m->path, F_OK) != 0 && errno == ENOENT)
        return TSRNN_OK;
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_atomic_file af = { 0 };
    FILE *in = NULL;
    int fd = open_regular(m, O_RDONLY);
    if (fd < 0) {
        status = TSRNN_ERR_IO; /* open_regular() said why */
        goto out;
    }
    in = fdopen(fd, "r");
    if (in == NULL) {
        status =
            tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read %s", tsrnn_display_path(m->path));
        close(fd);
        goto out;
    }
    status = tsrnn_atomic_file_open(&af, m->path);
    if (status != TSRNN_OK)
        goto out;
    char line[512];
    bool first = true;
    while (fgets(line, sizeof(line), in) != NULL) {
        long long epoch, step;
        bool keep = first ? strcmp(line, HEADER) == 0
                          : sscanf(line, "%lld,%lld,", &epoch, &step) == 2 &&
                                step < keep_before_step && strchr(line, '\n') != NULL;
        if (first && !keep) {
            status = tsrnn_error(TSRNN_ERR_DATA,
                                 "%s: not a tsrnn metrics file (its header is not %.*s); move it "
                                 "away to resume here",
                                 tsrnn_display_path(m->path), (int)strlen(HEADER) - 1, HEADER);
            goto out;
        }
        if (keep)
            fputs(line, af.file);
        first = false;
    }
    if (ferror(in)) {
        status = tsrnn_error(TSRNN_ERR_IO, "cannot read %s", tsrnn_display_path(m->path));
        goto out;
    }
    status = tsrnn_atomic_file_commit(&af); /* frees af: the abort below does nothing */
out:
    tsrnn_atomic_file_abort(&af);
    if (in != NULL)
        fclose(in);
    return status;
}

enum tsrnn_status tsrnn_metrics_csv_open(struct tsrnn_metrics_csv *m, const char *dir,
                                         int64_t keep_before_step)
{
    m->fd = -1;
    m->used_nbytes = 0;
    if ((size_t)snprintf(m->path, sizeof(m->path), "%s/metrics.csv", dir) >= sizeof(m->path))
        return tsrnn_error(TSRNN_ERR_IO, "run folder path too long: %s", dir);
    if (keep_before_step > 0)
        TSRNN_TRY(keep_rows(m, keep_before_step));
    int flags = keep_before_step > 0 ? O_APPEND : O_TRUNC;
    m->fd = open_regular(m, O_WRONLY | O_CREAT | flags);
    if (m->fd < 0)
        return TSRNN_ERR_IO;
    off_t size = lseek(m->fd, 0, SEEK_END);
    if (size == 0)
        TSRNN_TRY(append_row(m, HEADER));
    return flush_rows(m);
}

enum tsrnn_status tsrnn_metrics_csv_flush(struct tsrnn_metrics_csv *m)
{
    return flush_rows(m);
}

enum tsrnn_status tsrnn_metrics_csv_step(struct tsrnn_metrics_csv *m, int64_t epoch, int64_t step,
                                         double train_loss)
{
    return append_row(m, "%" PRId64 ",%" PRId64 ",%.9g,\n", epoch, step, train_loss);
}

enum tsrnn_status tsrnn_metrics_csv_epoch(struct tsrnn_metrics_csv *m, int64_t epoch, int64_t step,
                                          double val_loss)
{
    TSRNN_TRY(append_row(m, "%" PRId64 ",%" PRId64 ",,%.9g\n", epoch, step, val_loss));
    return flush_rows(m);
}

enum tsrnn_status tsrnn_metrics_csv_close(struct tsrnn_metrics_csv *m)
{
    if (m == NULL || m->fd < 0)
        return TSRNN_OK;
    enum tsrnn_status status = flush_rows(m);
    if (close(m->fd) != 0 && status == TSRNN_OK)
        status = write_failed(m, errno);
    m->fd = -1;
    return status;
}
