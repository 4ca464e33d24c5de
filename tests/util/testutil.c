/* Test helpers (tests/util/testutil.h). */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof(tmpl), "%s/tsrnn-test-XXXXXX", base && *base ? base : "/tmp");
    char *dir = mkdtemp(tmpl);
    if (dir == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    return strdup(dir);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tu_path(const char *dir, const char *name)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

const char *tu_write(const char *dir, const char *name, const char *text)
{
    const char *path = tu_path(dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    return path;
}

char *tu_read(const char *path)
{
    return tu_read_bytes(path, NULL);
}

char *tu_read_bytes(const char *path, size_t *nbytes)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t capacity = 4096, used = 0;
    char *buf = malloc(capacity);
    while (buf != NULL) {
        used += fread(buf + used, 1, capacity - used - 1, f);
        if (used < capacity - 1)
            break;
        capacity *= 2;
        buf = realloc(buf, capacity);
    }
    fclose(f);
    if (buf != NULL)
        buf[used] = '\0';
    if (nbytes != NULL)
        *nbytes = used;
    return buf;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *run_dir;
static int next_signal;
static double next_signal_after_s;

void tu_signal_next_run(int sig, double after_s)
{
    next_signal = sig;
    next_signal_after_s = after_s;
}

int tu_setup_run_dir(void **state)
{
    (void)state;
    run_dir = tu_mkdtemp();
    return run_dir == NULL ? -1 : 0;
}

int tu_teardown_run_dir(void **state)
{
    (void)state;
    if (run_dir != NULL)
        tu_rmtree(run_dir);
    free(run_dir);
    run_dir = NULL;
    return 0;
}

const char *tu_run_dir(void)
{
    return run_dir;
}

void tu_expect_in(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle) == NULL)
        fail_msg("expected '%s' in:\n%s", needle, haystack);
}

int tu_run(const char *const argv[], int timeout_s, struct tu_result *r)
{
    int out_pipe[2], err_pipe[2];
    memset(r, 0, sizeof(*r));
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        if (run_dir != NULL && chdir(run_dir) != 0) {
            fprintf(stderr, "chdir %s: %s\n", run_dir, strerror(errno));
            _exit(127);
        }
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);

    struct pollfd fds[2] = { { .fd = out_pipe[0], .events = POLLIN },
                             { .fd = err_pipe[0], .events = POLLIN } };
    char *bufs[2] = { r->out, r->err };
    size_t used[2] = { 0, 0 };
    int open_count = 2;
    double deadline = now_s() + timeout_s;
    int signal_to_send = next_signal;
    double signal_at = now_s() + next_signal_after_s;
    next_signal = 0;
    while (open_count > 0) {
        int wait_ms = (int)((deadline - now_s()) * 1000);
        if (signal_to_send != 0) {
            int signal_ms = (int)((signal_at - now_s()) * 1000);
            if (signal_ms <= 0) {
                kill(pid, signal_to_send);
                signal_to_send = 0;
            } else if (signal_ms < wait_ms) {
                wait_ms = signal_ms;
            }
        }
        if (wait_ms <= 0) {
            r->timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, wait_ms) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_count--;
                continue;
            }
            size_t room = sizeof(r->out) - 1 - used[i];
            size_t take = (size_t)n < room ? (size_t)n : room;
            memcpy(bufs[i] + used[i], chunk, take);
            used[i] += take;
        }
    }
    for (int i = 0; i < 2; i++) {
        bufs[i][used[i]] = '\0';
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    }
    int status;
    struct rusage usage = { 0 };
    while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR)
        ;
    r->max_rss_kb = usage.ru_maxrss;
    if (WIFEXITED(status)) {
        r->exit_code = WEXITSTATUS(status);
    } else {
        r->exit_code = -1;
        r->signal = WTERMSIG(status);
    }
    return 0;
}

const char *tu_env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        fprintf(stderr, "%s is not set; run the tests with 'meson test'\n", name);
        exit(1);
    }
    return v;
}

bool tu_short(void)
{
    const char *v = getenv("TSRNN_TEST_SHORT");
    return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

const char *tu_source(const char *relative)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", tu_env("TSRNN_SOURCE_ROOT"), relative);
    return path;
}

int tu_train(struct tu_result *result, const char *model_name, const char *const *sets,
             int timeout_s)
{
    return tu_train_config(result, "examples/air_passengers.ini", model_name, sets, timeout_s);
}

int tu_train_config(struct tu_result *result, const char *config, const char *model_name,
                    const char *const *sets, int timeout_s)
{
    const char *argv[48];
    size_t n = 0;
    char work_dir[PATH_MAX + 32], name[160], example[PATH_MAX];
    snprintf(work_dir, sizeof(work_dir), "output.work_dir=%s", tu_run_dir());
    snprintf(name, sizeof(name), "output.model_name=%s", model_name);
    snprintf(example, sizeof(example), "%s", tu_source(config));
    argv[n++] = tu_env("TSRNN_WORKER");
    argv[n++] = "--set";
    argv[n++] = work_dir;
    argv[n++] = "--set";
    argv[n++] = name;
    for (size_t i = 0; sets[i] != NULL; i++) {
        if (n >= 44)
            fail_msg("tu_train: too many settings");
        if (strncmp(sets[i], "--", 2) != 0)
            argv[n++] = "--set";
        argv[n++] = sets[i];
    }
    argv[n++] = example;
    argv[n] = NULL;
    assert_int_equal(tu_run(argv, timeout_s, result), 0);
    if (result->timed_out)
        fail_msg("tsrnn-worker timed out after %d s", timeout_s);
    return result->exit_code;
}

size_t tu_read_metrics(const char *path, struct tu_metrics_row *rows, size_t capacity)
{
    char *text = tu_read(path);
    if (text == NULL)
        fail_msg("cannot read %s", path);
    const char *header = "epoch,step,train_loss,val_loss\n";
    assert_int_equal(strncmp(text, header, strlen(header)), 0);
    size_t count = 0;
    for (char *line = text + strlen(header); *line != '\0' && count < capacity;) {
        char *end = strchr(line, '\n');
        assert_non_null(end);
        *end = '\0';
        struct tu_metrics_row *r = &rows[count++];
        char *field = line;
        r->epoch = strtol(field, &field, 10);
        r->step = strtol(field + 1, &field, 10);
        field++;
        r->train_loss = *field == ',' ? NAN : strtod(field, &field);
        field++;
        r->val_loss = *field == '\0' ? NAN : strtod(field, NULL);
        line = end + 1;
    }
    free(text);
    return count;
}
