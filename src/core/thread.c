/* Helper threads with signals blocked, and a list of jobs run on one (include/tsrnn/thread.h). */
#include "tsrnn/thread.h"

#include <signal.h>
#include <stdio.h>

bool tsrnn_thread_start(pthread_t *thread, void *(*run)(void *), void *arg)
{
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    bool started = pthread_create(thread, NULL, run, arg) == 0;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return started;
}

enum tsrnn_status tsrnn_jobs_add(struct tsrnn_jobs *jobs, enum tsrnn_status (*run)(void *arg),
                                 void *arg)
{
    if (jobs->count == TSRNN_JOBS_MAX)
        return tsrnn_error(TSRNN_ERR_USAGE, "more than %d jobs for one helper thread",
                           TSRNN_JOBS_MAX);
    jobs->jobs[jobs->count++] = (struct tsrnn_job){ run, arg };
    return TSRNN_OK;
}

static void run_jobs(struct tsrnn_jobs *jobs)
{
    for (size_t i = 0; i < jobs->count; i++) {
        enum tsrnn_status status = jobs->jobs[i].run(jobs->jobs[i].arg);
        if (status != TSRNN_OK) {
            /* the message first: a reader who sees the status finds it written */
            snprintf(jobs->message, sizeof(jobs->message), "%s", tsrnn_last_error());
            __atomic_store_n(&jobs->failed, status, __ATOMIC_RELEASE);
            return;
        }
    }
}

static void *jobs_main(void *arg)
{
    run_jobs(arg);
    return NULL;
}

void tsrnn_jobs_start(struct tsrnn_jobs *jobs)
{
    if (jobs->count == 0)
        return;
    jobs->running = tsrnn_thread_start(&jobs->thread, jobs_main, jobs);
    if (!jobs->running)
        run_jobs(jobs);
}

bool tsrnn_jobs_failed(const struct tsrnn_jobs *jobs)
{
    return __atomic_load_n(&jobs->failed, __ATOMIC_ACQUIRE) != TSRNN_OK;
}

enum tsrnn_status tsrnn_jobs_finish(struct tsrnn_jobs *jobs)
{
    if (jobs->running)
        pthread_join(jobs->thread, NULL);
    jobs->running = false;
    jobs->count = 0;
    enum tsrnn_status failed = jobs->failed;
    jobs->failed = TSRNN_OK;
    return failed == TSRNN_OK ? TSRNN_OK : tsrnn_error(failed, "%s", jobs->message);
}
