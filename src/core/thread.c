/* Helper threads with signals blocked (include/tsrnn/thread.h). */
#include "tsrnn/thread.h"

#include <signal.h>

bool tsrnn_thread_start(pthread_t *thread, void *(*run)(void *), void *arg)
{
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    bool started = pthread_create(thread, NULL, run, arg) == 0;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return started;
}
