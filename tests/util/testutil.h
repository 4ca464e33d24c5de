/* Helpers shared by the test programs: temporary folders and files, and running a real
 * process with captured output, an exit status and a time limit. */
#ifndef TSRNN_TESTUTIL_H
#define TSRNN_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* A fresh private folder under $TMPDIR (or /tmp); the caller removes it with tu_rmtree(). */
char *tu_mkdtemp(void);

/* Removes a folder and everything in it. */
void tu_rmtree(const char *path);

/* Writes `text` to `dir/name` and returns the path (static storage, overwritten by the next
 * call to tu_path() or tu_write()). */
const char *tu_write(const char *dir, const char *name, const char *text);

/* `dir/name` in a static buffer. */
const char *tu_path(const char *dir, const char *name);

/* Reads a whole file; NULL on failure. The caller frees. */
char *tu_read(const char *path);

/* The same for a file that may hold NULs: its length in *nbytes (a NUL follows it). */
char *tu_read_bytes(const char *path, size_t *nbytes);

struct tu_result {
    int exit_code; /* -1 when killed by a signal */
    int signal;    /* 0 unless killed by a signal */
    int timed_out;
    long max_rss_kb; /* the child's peak resident memory (getrusage's ru_maxrss) */
    char out[65536];
    char err[65536];
};

/* Runs argv[0] (a path) with argv, stdin from /dev/null, capturing stdout and stderr; kills
 * it after `timeout_s`. Returns 0 when the process ran. */
int tu_run(const char *const argv[], int timeout_s, struct tu_result *result);

/* cmocka group setup and teardown: a fresh private folder that every tu_run() child starts
 * in (so what a run writes relative to its working folder, darts_logs/, stays out of the
 * build), removed afterwards. */
int tu_setup_run_dir(void **state);
int tu_teardown_run_dir(void **state);

/* That folder (NULL outside the group). */
const char *tu_run_dir(void);

/* Fails the running cmocka test unless `needle` occurs in `haystack`; shows both. */
void tu_expect_in(const char *haystack, const char *needle);

/* The next tu_run() sends `sig` to its child `after_s` seconds after starting it (once; the
 * setting is then cleared). */
void tu_signal_next_run(int sig, double after_s);

/* `relative` below the source tree ($TSRNN_SOURCE_ROOT), in a static buffer. */
const char *tu_source(const char *relative);

/* Runs the real tsrnn-worker on examples/air_passengers.ini with output in
 * tu_run_dir()/<model_name>; `sets` (NULL-terminated) are --set overrides, or options when
 * they start with "--". Fails the test when the worker cannot be run or times out; returns
 * its exit code. */
int tu_train(struct tu_result *result, const char *model_name, const char *const *sets,
             int timeout_s);

/* The same with another config file of the source tree ("examples/....ini"). */
int tu_train_config(struct tu_result *result, const char *config, const char *model_name,
                    const char *const *sets, int timeout_s);

/* One row of a metrics.csv (Lightning CSVLogger layout). */
struct tu_metrics_row {
    long epoch, step;
    double train_loss, val_loss; /* NaN when the column is empty */
};

/* Parses a metrics.csv, checking its header; fails the test if it cannot be read. Returns
 * the number of rows (at most `capacity`). */
size_t tu_read_metrics(const char *path, struct tu_metrics_row *rows, size_t capacity);

/* An environment variable that must be set by meson; fails the test program if missing. */
const char *tu_env(const char *name);

/* Whether TSRNN_TEST_SHORT is set (and not "0"): scripts/test.sh sets it for the ASan + UBSan
 * build, where a sanitized training run is ten times slower, and slow tests then run shorter
 * versions of themselves that still check numbers, and say so in their output. */
bool tu_short(void);

#endif
