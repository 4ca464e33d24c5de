/* Helpers shared by the test programs: temporary folders and files, and running a real
 * process with captured output, an exit status and a time limit. */
#ifndef TSRNN_TESTUTIL_H
#define TSRNN_TESTUTIL_H

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

struct tu_result {
    int exit_code; /* -1 when killed by a signal */
    int signal;    /* 0 unless killed by a signal */
    int timed_out;
    char out[65536];
    char err[65536];
};

/* Runs argv[0] (a path) with argv, stdin from /dev/null, capturing stdout and stderr; kills
 * it after `timeout_s`. Returns 0 when the process ran. */
int tu_run(const char *const argv[], int timeout_s, struct tu_result *result);

/* Runs started by tu_run() from now on start in `dir` (NULL: the caller's folder), so that
 * what they write relative to their working folder (darts_logs/) stays out of the build. */
void tu_set_run_dir(const char *dir);

/* An environment variable that must be set by meson; fails the test program if missing. */
const char *tu_env(const char *name);

#endif
