/* Helper threads of a process (the checkpoint writer, the trainer's jobs beside its training):
 * signals stay the main thread's business. */
#ifndef TSRNN_THREAD_H
#define TSRNN_THREAD_H

#include <pthread.h>
#include <stdbool.h>

#include "tsrnn/core.h"

/* pthread_create() with every signal blocked in the new thread from its first instruction
 * (it inherits the mask, which is restored in the caller), so that SIGINT and SIGTERM land on
 * the main thread's handlers. False when no thread could be made. */
bool tsrnn_thread_start(pthread_t *thread, void *(*run)(void *), void *arg);

/* Jobs run one after the other on a thread of their own while their owner goes on: work
 * that does not wait for the owner's results (the trainer's: files that do not depend on
 * the training, the pictures' warm-up). The first job that fails ends the list; its status
 * and message are the owner's to report, as if the job had run on its thread. A zeroed
 * struct is an empty list. */
#define TSRNN_JOBS_MAX 8

struct tsrnn_job {
    enum tsrnn_status (*run)(void *arg);
    void *arg;
};

struct tsrnn_jobs {
    struct tsrnn_job jobs[TSRNN_JOBS_MAX];
    size_t count;
    pthread_t thread;
    bool running;             /* the thread is started and not yet joined */
    enum tsrnn_status failed; /* the failing job's status; TSRNN_OK when none */
    char message[2048];       /* and its message */
};

/* Adds a job (before tsrnn_jobs_start). TSRNN_JOBS_MAX at most: a programming error
 * beyond, reported as TSRNN_ERR_USAGE. */
enum tsrnn_status tsrnn_jobs_add(struct tsrnn_jobs *jobs, enum tsrnn_status (*run)(void *arg),
                                 void *arg);

/* Starts the jobs' thread; where none can be made, runs the jobs now, on this one. */
void tsrnn_jobs_start(struct tsrnn_jobs *jobs);

/* Whether a job has failed so far, without waiting: the owner can stop early. */
bool tsrnn_jobs_failed(const struct tsrnn_jobs *jobs);

/* Waits for the jobs to end; the failing job's status and message as this thread's error, or
 * TSRNN_OK. Once: a second call waits for nothing and returns TSRNN_OK. */
enum tsrnn_status tsrnn_jobs_finish(struct tsrnn_jobs *jobs);

#endif
