/* Where the workers' output goes. Rank 0's stdout is the launcher's own (its live progress
 * bar works on a terminal); rank 0's stderr is copied through line by line. Ranks >= 1 write
 * to {run_dir}/logs/rank-N.log, and their stderr lines are also shown, prefixed "[rank N] ".
 * Every rank's last lines are kept for the failure report. Rank 0's report pipe
 * (include/tsrnn/world.h) names the run folder and, at the end, the result the summary
 * prints. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/fs.h"

static void tail_add(struct worker *w, const char *line, size_t len)
{
    char *slot = w->tail[w->tail_count++ % TAIL_LINES];
    if (len >= TAIL_LINE_MAX)
        len = TAIL_LINE_MAX - 1;
    memcpy(slot, line, len);
    slot[len] = '\0';
}

/* Keeps a log line (with its '\n') until the log file can be opened. */
static void pending_add(struct worker *w, const char *line, size_t len)
{
    if (w->pending_len + len > PENDING_MAX) {
        /* Drop the oldest half at once, so that a long wait costs linear time. */
        size_t cut = 0;
        while (cut < w->pending_len && w->pending_len - cut + len > PENDING_MAX / 2) {
            char *nl = memchr(w->pending + cut, '\n', w->pending_len - cut);
            cut = nl ? (size_t)(nl - w->pending) + 1 : w->pending_len;
            w->pending_dropped++;
        }
        memmove(w->pending, w->pending + cut, w->pending_len - cut);
        w->pending_len -= cut;
    }
    if (w->pending_len + len > w->pending_cap) {
        size_t cap = w->pending_cap ? w->pending_cap : 4096;
        while (cap < w->pending_len + len)
            cap *= 2;
        char *grown = realloc(w->pending, cap);
        if (grown == NULL) {
            w->pending_dropped++;
            return;
        }
        w->pending = grown;
        w->pending_cap = cap;
    }
    memcpy(w->pending + w->pending_len, line, len);
    w->pending_len += len;
}

static void log_write(struct worker *w, const char *data, size_t nbytes)
{
    int err = 0;
    if (w->log_fd < 0 || tsrnn_write_all(w->log_fd, data, nbytes, &err) == nbytes)
        return;
    fprintf(stderr,
            PROGRAM ": warning: cannot write logs/rank-%d.log: %s; rank %d's next lines are "
                    "not logged\n",
            w->rank, strerror(err), w->rank);
    close(w->log_fd);
    w->log_fd = -1;
}

static void discard_pending(struct worker *w)
{
    free(w->pending);
    w->pending = NULL;
    w->pending_len = w->pending_cap = w->pending_dropped = 0;
}

/* A rank's log, appended to, by the rule of every file tsrnn writes
 * (include/tsrnn/atomic_file.h): through a link of this user's or root's only, a device or
 * FIFO in place (a FIFO without a reader is refused, not waited on). -1 with the error set. */
static int open_log(const char *path)
{
    char *target = NULL;
    if (tsrnn_atomic_file_target(path, &target) != TSRNN_OK)
        return -1;
    int fd = open(target != NULL ? target : path,
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY |
                      (target != NULL ? O_NOFOLLOW : O_NONBLOCK),
                  0644);
    if (fd < 0)
        tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot open %s", tsrnn_display_path(path));
    else if (target == NULL) /* opened without waiting for a FIFO's reader; writes may wait */
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    free(target);
    return fd;
}

/* Rank 0 has reported the run folder: from now on it will not delete it (force_reset came
 * before), so the ranks' logs can go there. */
static void open_logs(struct launch *l)
{
    char path[PATH_MAX + 64];
    l->logs = LOGS_OPEN;
    if (l->count == 1)
        return;
    snprintf(path, sizeof(path), "%s/logs", l->run_dir);
    if (tsrnn_make_dirs(path) != TSRNN_OK) {
        fprintf(stderr, PROGRAM ": warning: %s; the workers' output is not logged\n",
                tsrnn_last_error());
        l->logs = LOGS_OFF;
    }
    for (int r = 1; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        char note[160];
        if (l->logs == LOGS_OPEN) {
            snprintf(path, sizeof(path), "%s/logs/rank-%d.log", l->run_dir, r);
            w->log_fd = open_log(path);
            if (w->log_fd < 0)
                fprintf(stderr, PROGRAM ": warning: %s; rank %d's output is not logged\n",
                        tsrnn_last_error(), r);
        }
        if (w->log_fd >= 0 && l->attempt > 0)
            log_write(w, note,
                      (size_t)snprintf(note, sizeof(note), "--- restart %d ---\n", l->attempt));
        if (w->log_fd >= 0 && w->pending_dropped > 0)
            log_write(w, note,
                      (size_t)snprintf(note, sizeof(note),
                                       "[" PROGRAM ": %zu earlier lines dropped: more than %u "
                                       "bytes came before the run folder existed]\n",
                                       w->pending_dropped, PENDING_MAX));
        if (w->log_fd >= 0 && w->pending_len > 0)
            log_write(w, w->pending, w->pending_len);
        discard_pending(w);
    }
}

void close_logs(struct launch *l)
{
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        if (w->log_fd >= 0)
            close(w->log_fd);
        w->log_fd = -1;
        discard_pending(w);
    }
}

/* One line of rank 0's report pipe: "key=value" (world.h). Unknown keys come from a newer
 * worker and are ignored. */
static void on_report_line(struct launch *l, char *line)
{
    struct report *rep = &l->report;
    const struct {
        const char *key;
        char *value;
        size_t capacity;
    } fields[] = {
        { "epochs", rep->epochs, sizeof(rep->epochs) },
        { "steps", rep->steps, sizeof(rep->steps) },
        { "train_loss", rep->train_loss, sizeof(rep->train_loss) },
        { "val_loss", rep->val_loss, sizeof(rep->val_loss) },
        { "best_val_loss", rep->best_val_loss, sizeof(rep->best_val_loss) },
        { "best_checkpoint", rep->best_checkpoint, sizeof(rep->best_checkpoint) },
        { "last_checkpoint", rep->last_checkpoint, sizeof(rep->last_checkpoint) },
    };
    char *eq = strchr(line, '=');
    if (eq == NULL)
        return;
    *eq = '\0';
    const char *key = line, *value = eq + 1;
    if (strcmp(key, "run_dir") == 0) {
        if (value[0] == '\0' || strlen(value) >= sizeof(l->run_dir))
            return;
        memcpy(l->run_dir, value, strlen(value) + 1);
        if (l->logs == LOGS_WAITING)
            open_logs(l);
    } else if (strcmp(key, "done") == 0) {
        rep->done = strcmp(value, "1") == 0;
    } else {
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            if (strcmp(key, fields[i].key) == 0)
                snprintf(fields[i].value, fields[i].capacity, "%s", value);
    }
}

/* A complete line of `s` (s->line[0 .. s->len)) goes where it belongs. */
static void emit_line(struct launch *l, struct worker *w, struct stream *s)
{
    size_t len = s->len;
    s->len = 0;
    if (s->kind == STREAM_REPORT) {
        s->line[len] = '\0';
        on_report_line(l, s->line);
        return;
    }
    tail_add(w, s->line, len);
    s->line[len] = '\n';
    if (w->rank == 0) {
        fwrite(s->line, 1, len + 1, stderr);
        return;
    }
    if (l->logs == LOGS_WAITING)
        pending_add(w, s->line, len + 1);
    else
        log_write(w, s->line, len + 1);
    /* Warnings and errors of every rank are seen without opening its log. */
    if (s->kind == STREAM_ERR)
        fprintf(stderr, "[rank %d] %.*s", w->rank, (int)(len + 1), s->line);
}

/* Reads what is there (poll said so) and hands out complete lines. At EOF the unfinished
 * last line counts as a line and the pipe is closed. */
void read_stream(struct launch *l, struct worker *w, struct stream *s)
{
    char buf[65536];
    ssize_t n = read(s->fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        if (s->len > 0)
            emit_line(l, w, s);
        close(s->fd);
        s->fd = -1;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            emit_line(l, w, s);
            continue;
        }
        if (s->len == STREAM_LINE_MAX)
            emit_line(l, w, s);
        s->line[s->len++] = buf[i];
    }
}

void close_stream(struct stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->len = 0;
}

/* The workers are reaped but a pipe is still open: a process they started holds it. */
void abandon_streams(struct launch *l)
{
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        struct stream *streams[] = { &w->out, &w->err, r == 0 ? &l->report_stream : NULL };
        for (size_t i = 0; i < 3; i++) {
            if (streams[i] == NULL || streams[i]->fd < 0)
                continue;
            fprintf(stderr,
                    PROGRAM ": warning: rank %d's output pipe is still open %.0f s after it "
                            "exited (a process it started holds it): not read further\n",
                    r, DRAIN_S);
            if (streams[i]->len > 0)
                emit_line(l, w, streams[i]);
            close_stream(streams[i]);
        }
    }
}

void print_tail(const struct worker *w)
{
    size_t first = w->tail_count > TAIL_LINES ? w->tail_count - TAIL_LINES : 0;
    if (w->tail_count == 0)
        fprintf(stderr, "  rank %d: (no output%s)\n", w->rank, w->rank == 0 ? " on stderr" : "");
    for (size_t i = first; i < w->tail_count; i++)
        fprintf(stderr, "  rank %d: %s\n", w->rank, w->tail[i % TAIL_LINES]);
}

/* Printed last, on stdout: what rank 0 handed back (ddp_spawn's result queue). */
void print_summary(const struct launch *l)
{
    const struct report *rep = &l->report;
    printf(PROGRAM ": %d worker%s (%s, %s) finished in %.2f s", l->count, l->count == 1 ? "" : "s",
           l->gpu ? "gpu" : "cpu", l->comm_backend, tsrnn_clock_now_s() - l->start_s);
    if (rep->done && rep->epochs[0] && rep->steps[0])
        printf(": %s epochs, %s steps", rep->epochs, rep->steps);
    if (l->attempt > 0)
        printf(" (after %d restart%s)", l->attempt, l->attempt == 1 ? "" : "s");
    printf("\n");
    if (!rep->done) {
        printf("  rank 0 exited 0 but its report is missing (no done=1 on the report pipe): "
               "its output above is all there is\n");
        fflush(stdout);
        return;
    }
    printf("  best checkpoint: %s\n",
           rep->best_checkpoint[0] ? tsrnn_display_path(rep->best_checkpoint) : "none");
    if (rep->best_val_loss[0])
        printf("  best val_loss:   %s\n", rep->best_val_loss);
    if (rep->train_loss[0])
        printf("  train_loss:      %s\n", rep->train_loss);
    if (rep->val_loss[0])
        printf("  val_loss:        %s\n", rep->val_loss);
    if (rep->last_checkpoint[0])
        printf("  last checkpoint: %s\n", tsrnn_display_path(rep->last_checkpoint));
    fflush(stdout);
}
