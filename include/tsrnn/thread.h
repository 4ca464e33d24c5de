/* Helper threads of a process (the checkpoint writer, the pictures' warm-up): signals stay
 * the main thread's business. */
#ifndef TSRNN_THREAD_H
#define TSRNN_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/* pthread_create() with every signal blocked in the new thread from its first instruction
 * (it inherits the mask, which is restored in the caller), so that SIGINT and SIGTERM land on
 * the main thread's handlers. False when no thread could be made. */
bool tsrnn_thread_start(pthread_t *thread, void *(*run)(void *), void *arg);

#endif
