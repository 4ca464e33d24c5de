/* The CPU context's helper threads (cpu.h): started on demand, kept until the context is
 * destroyed, woken by a condition variable per job. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

_Thread_local bool tsrnn_cpu_in_job;
_Thread_local size_t tsrnn_cpu_thread_slot;

struct helper_start {
    struct tsrnn_cpu_pool *pool;
    size_t part;
};

static void *helper_main(void *arg)
{
    struct tsrnn_cpu_pool *pool = ((struct helper_start *)arg)->pool;
    size_t part = ((struct helper_start *)arg)->part;
    uint64_t seen = 0;
    free(arg);
    tsrnn_cpu_in_job = true;
    tsrnn_cpu_thread_slot = part;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the main thread's business */
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (pool->generation == seen && !pool->stopping)
            pthread_cond_wait(&pool->start, &pool->lock);
        if (pool->stopping)
            break;
        seen = pool->generation;
        if (part > pool->helped)
            continue;
        void (*fn)(void *, size_t, size_t) = pool->fn;
        void *fn_arg = pool->arg;
        size_t count = pool->part_count;
        pthread_mutex_unlock(&pool->lock);
        fn(fn_arg, part, count);
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void detect_isa(void)
{
    tsrnn_cpu_isa = tsrnn_cpu_isa_detect();
}

enum tsrnn_status tsrnn_cpu_init(struct tsrnn_cpu *cpu, int thread_count)
{
    *cpu = (struct tsrnn_cpu){ .base.backend = &tsrnn_compute_backend_cpu, .thread_count = 1 };
    /* A cap it does not know was ignored silently ("AVX2", "sse4"): the run then compared
     * nothing it meant to. */
    const char *cap = getenv("TSRNN_CPU_ISA");
    if (cap != NULL && cap[0] != '\0' && strcmp(cap, "avx512") != 0 && strcmp(cap, "avx2") != 0 &&
        strcmp(cap, "baseline") != 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "TSRNN_CPU_ISA=%s: accepted: avx512, avx2 or baseline (a cap on the "
                           "CPU kernels' vector level), or unset",
                           cap);
    if (pthread_mutex_init(&cpu->pool.lock, NULL) != 0 ||
        pthread_cond_init(&cpu->pool.start, NULL) != 0 ||
        pthread_cond_init(&cpu->pool.done, NULL) != 0)
        return tsrnn_error(TSRNN_ERR_NOMEM, "cannot create the CPU backend's thread pool");
    static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
    pthread_once(&isa_once, detect_isa); /* once: a level the tests set stays */
    tsrnn_cpu_blas_init();
    tsrnn_cpu_set_thread_count(cpu, thread_count);
    return TSRNN_OK;
}

void tsrnn_cpu_finish(struct tsrnn_cpu *cpu)
{
    struct tsrnn_cpu_pool *pool = &cpu->pool;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    for (size_t i = 0; i < pool->helper_count; i++)
        pthread_join(pool->threads[i], NULL);
    for (size_t i = 0; i <= TSRNN_CPU_MAX_HELPERS; i++)
        free(cpu->blocked_scratch[i]);
    pthread_cond_destroy(&pool->start);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->lock);
}

void tsrnn_cpu_set_thread_count(struct tsrnn_cpu *cpu, int thread_count)
{
    struct tsrnn_cpu_pool *pool = &cpu->pool;
    cpu->thread_count = thread_count < 1 ? 1 : thread_count;
    /* Helpers that cannot start leave their parts to the caller (tsrnn_cpu_parallel). */
    while (pool->helper_count + 1 < (size_t)cpu->thread_count &&
           pool->helper_count < TSRNN_CPU_MAX_HELPERS) {
        struct helper_start *start = malloc(sizeof(*start));
        if (start == NULL)
            break;
        *start = (struct helper_start){ pool, pool->helper_count + 1 };
        if (pthread_create(&pool->threads[pool->helper_count], NULL, helper_main, start) != 0) {
            free(start);
            break;
        }
        pool->helper_count++;
    }
}

void tsrnn_cpu_parallel(struct tsrnn_cpu *cpu,
                        void (*fn)(void *arg, size_t part, size_t part_count), void *arg,
                        size_t part_count)
{
    struct tsrnn_cpu_pool *pool = &cpu->pool;
    size_t helped = part_count > 1 ? part_count - 1 : 0;
    if (helped > pool->helper_count)
        helped = pool->helper_count;
    if (helped > 0) {
        pthread_mutex_lock(&pool->lock);
        pool->fn = fn;
        pool->arg = arg;
        pool->part_count = part_count;
        pool->helped = helped;
        pool->pending = helped;
        pool->generation++;
        pthread_cond_broadcast(&pool->start);
        pthread_mutex_unlock(&pool->lock);
    }
    bool nested = tsrnn_cpu_in_job;
    tsrnn_cpu_in_job = true;
    fn(arg, 0, part_count);
    for (size_t part = helped + 1; part < part_count; part++)
        fn(arg, part, part_count);
    tsrnn_cpu_in_job = nested;
    if (helped > 0) {
        pthread_mutex_lock(&pool->lock);
        while (pool->pending > 0)
            pthread_cond_wait(&pool->done, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
}
