/* tools/step-moves: gcc's -finstrument-functions hooks for scripts/step-moves.sh. Records
 * every function entered (its address and its caller's) from the N-th entry of train_step
 * (TSRNN_TRACE_STEP, default 10) to the next one: one whole training step of a rank, the
 * step's own calls and the trainer's reading of its results. Written to TSRNN_TRACE_FILE as
 * "callee caller" hex pairs, of the thread that runs the steps only (not rank 0's helper
 * thread, which writes files beside them); the script maps them to functions and their
 * source files. Not
 * part of any tsrnn build: the script compiles it on its own, uninstrumented. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NO_TRACE __attribute__((no_instrument_function))

void __cyg_profile_func_enter(void *fn, void *site) NO_TRACE;
void __cyg_profile_func_exit(void *fn, void *site) NO_TRACE;

static FILE *trace;
static void *step_fn;
static long steps, wanted = -1;
static int recording;
static pthread_t stepper; /* the thread that runs the steps: helper threads are not traced */

static NO_TRACE void setup(void)
{
    const char *n = getenv("TSRNN_TRACE_STEP"), *path = getenv("TSRNN_TRACE_FILE");
    const char *fn = getenv("TSRNN_TRACE_STEP_FN"); /* train_step's address, hex */
    wanted = n ? atol(n) : 10;
    step_fn = fn ? (void *)strtoul(fn, NULL, 16) : NULL;
    trace = path ? fopen(path, "w") : NULL;
}

void __cyg_profile_func_enter(void *fn, void *site)
{
    if (wanted < 0)
        setup();
    if (trace == NULL || step_fn == NULL)
        return;
    if (fn == step_fn) {
        stepper = pthread_self();
        steps++;
        recording = steps == wanted;
        if (steps == wanted + 1) {
            fclose(trace);
            trace = NULL;
            return;
        }
    }
    if (recording && pthread_equal(pthread_self(), stepper))
        fprintf(trace, "%p %p\n", fn, site);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn, (void)site;
}
