/* The trainer's helpers beside its training: jobs on a thread of their own
 * (src/core/thread.c) run in order, and the first failure, with its message, reaches the
 * owner once; an earlier run's folder moved aside in one step (src/core/fs.c) for removal
 * there. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/fs.h"
#include "tsrnn/thread.h"

/* --- jobs ------------------------------------------------------------------------------ */

struct log {
    char order[16]; /* the jobs' letters, in the order they ran */
    size_t count;
    pthread_t main_thread;
    int on_main; /* jobs that ran on the owner's thread */
};

struct step {
    struct log *log;
    char letter;
    enum tsrnn_status result;
};

static enum tsrnn_status step_job(void *arg)
{
    struct step *s = arg;
    s->log->order[s->log->count++] = s->letter;
    s->log->on_main += pthread_equal(pthread_self(), s->log->main_thread) != 0;
    if (s->result != TSRNN_OK)
        return tsrnn_error(s->result, "job %c: cannot write config.ini", s->letter);
    return TSRNN_OK;
}

static void test_jobs_run_in_order_on_a_thread(void **state)
{
    (void)state;
    struct log log = { .main_thread = pthread_self() };
    struct step steps[3] = { { &log, 'a', TSRNN_OK },
                             { &log, 'b', TSRNN_OK },
                             { &log, 'c', TSRNN_OK } };
    struct tsrnn_jobs jobs = { 0 };
    for (int i = 0; i < 3; i++)
        assert_int_equal(tsrnn_jobs_add(&jobs, step_job, &steps[i]), TSRNN_OK);
    tsrnn_jobs_start(&jobs);
    assert_int_equal(tsrnn_jobs_finish(&jobs), TSRNN_OK);
    assert_string_equal(log.order, "abc");
    assert_int_equal(log.on_main, 0);
    assert_false(tsrnn_jobs_failed(&jobs));
    /* joined: a second finish waits for nothing */
    assert_int_equal(tsrnn_jobs_finish(&jobs), TSRNN_OK);
}

static void test_first_failure_ends_the_list_and_reaches_the_owner_once(void **state)
{
    (void)state;
    struct log log = { .main_thread = pthread_self() };
    struct step steps[3] = { { &log, 'a', TSRNN_OK },
                             { &log, 'b', TSRNN_ERR_IO },
                             { &log, 'c', TSRNN_OK } };
    struct tsrnn_jobs jobs = { 0 };
    for (int i = 0; i < 3; i++)
        assert_int_equal(tsrnn_jobs_add(&jobs, step_job, &steps[i]), TSRNN_OK);
    tsrnn_error_clear();
    tsrnn_jobs_start(&jobs);
    while (!tsrnn_jobs_failed(&jobs))
        usleep(100);
    assert_int_equal(tsrnn_jobs_finish(&jobs), TSRNN_ERR_IO);
    assert_string_equal(tsrnn_last_error(), "job b: cannot write config.ini");
    assert_string_equal(log.order, "ab");
    assert_int_equal(tsrnn_jobs_finish(&jobs), TSRNN_OK);
}

static void test_empty_and_full_lists(void **state)
{
    (void)state;
    struct tsrnn_jobs jobs = { 0 };
    tsrnn_jobs_start(&jobs); /* nothing to run: no thread */
    assert_false(jobs.running);
    assert_int_equal(tsrnn_jobs_finish(&jobs), TSRNN_OK);

    struct log log = { .main_thread = pthread_self() };
    struct step step = { &log, 'x', TSRNN_OK };
    for (int i = 0; i < TSRNN_JOBS_MAX; i++)
        assert_int_equal(tsrnn_jobs_add(&jobs, step_job, &step), TSRNN_OK);
    assert_int_equal(tsrnn_jobs_add(&jobs, step_job, &step), TSRNN_ERR_USAGE);
    tsrnn_jobs_start(&jobs);
    assert_int_equal(tsrnn_jobs_finish(&jobs), TSRNN_OK);
    assert_int_equal(log.count, TSRNN_JOBS_MAX);
}

/* --- a run folder moved aside ---------------------------------------------------------- */

static void make_file(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("x\n", f);
    fclose(f);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_move_aside(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char run[PATH_MAX], old[PATH_MAX], moved[PATH_MAX], path[PATH_MAX + 64];
    snprintf(run, sizeof(run), "%s/Air_RNN", dir);
    snprintf(old, sizeof(old), "%s/.Air_RNN.old", dir);

    /* nothing there: nothing moved, nothing to remove */
    assert_true(tsrnn_move_aside(run, moved, sizeof(moved)));
    assert_string_equal(moved, "");

    /* a run folder, and a .old one a killed run left: that goes, the folder takes its place */
    assert_int_equal(tsrnn_make_dirs(run), TSRNN_OK);
    snprintf(path, sizeof(path), "%s/logs", run);
    assert_int_equal(tsrnn_make_dirs(path), TSRNN_OK);
    snprintf(path, sizeof(path), "%s/logs/hparams.yaml", run);
    make_file(path);
    assert_int_equal(tsrnn_make_dirs(old), TSRNN_OK);
    snprintf(path, sizeof(path), "%s/stale.csv", old);
    make_file(path);
    assert_true(tsrnn_move_aside(run, moved, sizeof(moved)));
    assert_string_equal(moved, old);
    assert_false(exists(run));
    assert_false(exists(path));
    snprintf(path, sizeof(path), "%s/logs/hparams.yaml", old);
    assert_true(exists(path));
    assert_int_equal(tsrnn_remove_tree(moved), TSRNN_OK);
    assert_false(exists(old));

    /* a folder that cannot be renamed (a name too long for its .old): left for the caller */
    char long_run[PATH_MAX];
    snprintf(long_run, sizeof(long_run), "%s/%0252d", dir, 0);
    assert_int_equal(tsrnn_make_dirs(long_run), TSRNN_OK);
    assert_false(tsrnn_move_aside(long_run, moved, sizeof(moved)));
    assert_string_equal(moved, "");
    assert_true(exists(long_run));
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_run_in_order_on_a_thread),
        cmocka_unit_test(test_first_failure_ends_the_list_and_reaches_the_owner_once),
        cmocka_unit_test(test_empty_and_full_lists),
        cmocka_unit_test(test_move_aside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
