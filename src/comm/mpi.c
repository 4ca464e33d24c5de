/* The mpi comm backend (backend.h), the module tsrnn-comm-mpi.so: CPU ranks started by mpirun
 * or srun (DESIGN.md §2, §9). MPI itself is the rendezvous: MPI_Init meets the other ranks
 * through the launcher (Open MPI's daemons, Slurm's PMIx), and MPI_COMM_WORLD is the world.
 *
 * MPI has no per-call timeout. Every collective here is the non-blocking one
 * (MPI_Iallreduce, MPI_Ibcast, MPI_Ibarrier) completed by polling MPI_Test until it is done
 * or timeout_s has passed: a peer that is alive but never comes (stopped, stuck, cut off by
 * the network) is then a TSRNN_ERR_COMM like Gloo's timeout, and the worker calls abort(),
 * which is MPI_Abort: the launcher kills every rank of the job, which ends, never hangs. A
 * peer that dies is seen first by the launcher (Open MPI's daemons notice the process exit
 * and kill the job within about a second), not by this file.
 *
 * Except under srun: Slurm does not end a step when one of its tasks dies; with
 * --kill-on-bad-exit it sends SIGTERM to the others (SIGKILL KillWait seconds later, 30 by
 * default), and Open MPI only prints that a peer "unexpectedly disconnected" while the
 * collective waits on. SIGTERM is also how scancel asks every rank to stop after the same
 * step, a decision that travels in the next collective (src/train/). So once this rank is
 * asked to stop (options.stop_requested), the other ranks must answer: complete a collective
 * that began with the request known (it carries the request) within a grace (stop_grace_s()
 * below: twice the longest collective cycle seen, at least 2 s, at most timeout_s). Every
 * live rank does, as it was asked too or is one collective behind at most; after that answer
 * the waits are timeout_s again (rank 0 may be writing its checkpoint). Otherwise a peer is
 * gone, and the collective fails at once (TSRNN_ERR_COMM: the worker ends the job with exit
 * code 3) instead of after timeout_s or KillWait. (A peer that died inside a collective after
 * sending its share can still complete this rank's part of it; when that one is the first
 * begun after the SIGTERM, the answer is taken for given and the next collective waits
 * timeout_s, as before. With steps shorter than srun's reaction to the death, this rank is
 * already inside that collective when the SIGTERM comes.)
 *
 * MPI_Init meets the other ranks; a rank that then finds MPI's world is not the one its
 * launcher's variables described (world.h) cannot leave by MPI_Finalize, which waits for
 * peers that are elsewhere: its open() fails with the state set, the dispatcher hands out a
 * failed communicator, and the worker ends the job with MPI_Abort (exit code 2) at once.
 *
 * Polling keeps the cost of a collective near MPI's blocking one: MPI_Test in a loop that
 * yields the core while the collective is young (ranks may share cores), then sleeps 100 µs
 * between tests, so a long wait does not burn a core it shares with a peer.
 *
 * The NCCL hook: a GPU rank under mpirun gets NCCL's unique id from rank 0 by MPI_Bcast
 * (mpi_bootstrap_broadcast() below, which tsrnn_comm_mpi_bootstrap_broadcast() of backend.h
 * calls), and NCCL carries the gradients; MPI only bootstraps. */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "backend.h"

enum {
    MPI_ERR_NBYTES = MPI_MAX_ERROR_STRING,
};

/* Whether this file called MPI_Init (and so calls MPI_Finalize), and how many users (the mpi
 * backend, an NCCL bootstrap) hold it. */
static bool initialised_here;
static int holders;
/* MPI's world is not the launcher's (hold_mpi()): the peers may be anywhere, so no
 * MPI_Finalize, which would wait for them; ending the process ends the job (the launcher
 * sees a rank leave without it), MPI_Abort sooner. */
static bool world_mismatch;

/* How long a collective is polled with sched_yield() before the 100 µs sleeps start. */
#define YIELD_PHASE_S 0.01

/* The least time the other ranks get to answer once this rank is asked to stop. */
#define STOP_GRACE_MIN_S 2.0

static enum tsrnn_status mpi_failed(int code, const char *call)
{
    char text[MPI_ERR_NBYTES];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", code);
    return tsrnn_error(TSRNN_ERR_COMM, "%s: %s", call, text);
}

/* Joins MPI (MPI_Init_thread, once per process) and checks that MPI's world is the one the
 * launcher's variables described. Errors return instead of ending the process. */
static enum tsrnn_status hold_mpi(int rank, int world_size)
{
    int flag = 0;
    MPI_Initialized(&flag);
    if (!flag) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return tsrnn_error(TSRNN_ERR_COMM, "MPI_Init_thread failed: is this process started "
                                               "by mpirun or srun?");
        initialised_here = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    holders++;
    int mpi_rank = -1, mpi_size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    if (mpi_rank != rank || mpi_size != world_size) {
        world_mismatch = true;
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "MPI says this process is rank %d of %d%s, but its launcher's "
                           "variables said rank %d of %d: start tsrnn-worker directly under "
                           "mpirun or srun --mpi=pmix, one process per rank",
                           mpi_rank, mpi_size,
                           mpi_size == 1 ? " (MPI_Init found no launcher it can join)" : "", rank,
                           world_size);
    }
    return TSRNN_OK;
}

static void release_mpi(void)
{
    if (holders > 0 && --holders == 0 && initialised_here) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized && !world_mismatch)
            MPI_Finalize();
        initialised_here = false;
    }
}

struct mpi_state {
    double timeout_s;
    const volatile sig_atomic_t *stop_requested; /* options.stop_requested; may be NULL */
    bool stop_seen; /* a collective saw the stop request, at stop_seen_s */
    double stop_seen_s;
    bool stop_answered; /* a collective begun with the request seen completed */
    bool any_done;      /* a collective completed, the last at last_done_s */
    double last_done_s;
    double longest_cycle_s; /* the longest time from one completion to the next */
};

static struct mpi_state the_state;

/* How long the other ranks get to answer once this rank is asked to stop. A live rank is at
 * most one collective behind this one, so it answers within the longest cycle seen (a step,
 * or an epoch's end with rank 0's checkpoint); twice that, for a machine under load, and
 * never less than STOP_GRACE_MIN_S nor more than timeout_s. */
static double stop_grace_s(const struct mpi_state *s)
{
    double grace_s = fmax(STOP_GRACE_MIN_S, 2.0 * s->longest_cycle_s);
    return fmin(grace_s, s->timeout_s);
}

/* Completes `req` or gives up after timeout_s, or sooner where this rank was asked to stop
 * and nobody answers (the file's comment); `what` names the call for the message. */
static enum tsrnn_status wait_for(struct mpi_state *s, MPI_Request *req, const char *what)
{
    double start_s = tsrnn_clock_now_s();
    if (s->stop_requested != NULL && *s->stop_requested && !s->stop_seen) {
        s->stop_seen = true; /* before this collective began: it carries the request */
        s->stop_seen_s = start_s;
    }
    bool answers_stop = s->stop_seen && !s->stop_answered;
    for (;;) {
        int done = 0;
        int code = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (code != MPI_SUCCESS)
            return mpi_failed(code, what);
        double now_s = tsrnn_clock_now_s();
        if (done) {
            if (s->any_done)
                s->longest_cycle_s = fmax(s->longest_cycle_s, now_s - s->last_done_s);
            s->any_done = true;
            s->last_done_s = now_s;
            s->stop_answered = s->stop_answered || answers_stop;
            return TSRNN_OK;
        }
        double waited_s = now_s - start_s;
        if (waited_s > s->timeout_s)
            return tsrnn_error(TSRNN_ERR_COMM,
                               "%s did not complete within %g s: a rank is stopped, stuck or "
                               "cut off from this one (MPI has no timeout of its own; this "
                               "rank now ends the job with MPI_Abort)",
                               what, s->timeout_s);
        if (s->stop_requested != NULL && *s->stop_requested && !s->stop_answered) {
            if (!s->stop_seen) {
                s->stop_seen = true; /* during this collective, which does not carry it */
                s->stop_seen_s = now_s;
            }
            double grace_s = stop_grace_s(s);
            if (now_s - s->stop_seen_s > grace_s)
                return tsrnn_error(TSRNN_ERR_COMM,
                                   "%s: this rank was asked to stop (SIGTERM or SIGINT) %.1f s "
                                   "ago and the other ranks did not answer within %.1f s: a "
                                   "rank is gone (srun --kill-on-bad-exit sends SIGTERM to "
                                   "the others when a task dies; this rank now ends the job "
                                   "with MPI_Abort)",
                                   what, now_s - s->stop_seen_s, grace_s);
        }
        if (waited_s < YIELD_PHASE_S) {
            sched_yield();
        } else {
            struct timespec pause = { .tv_nsec = 100 * 1000 };
            nanosleep(&pause, NULL);
        }
    }
}

static enum tsrnn_status mpi_hold(int rank, int world_size);

static enum tsrnn_status mpi_open(void **state, const struct tsrnn_comm_options *opt)
{
    the_state = (struct mpi_state){
        .timeout_s = opt->timeout_s,
        .stop_requested = opt->stop_requested,
    };
    enum tsrnn_status status = mpi_hold(opt->rank, opt->world_size);
    /* After MPI_Init, a world that is not the launcher's leaves the peers waiting: the state
     * goes with the failure, for the worker to abort the job (backend.h). */
    *state = status == TSRNN_OK || world_mismatch ? &the_state : NULL;
    return status;
}

static enum tsrnn_status mpi_allreduce_sum(void *state, void *buf, size_t count,
                                           enum tsrnn_comm_dtype dtype)
{
    struct mpi_state *s = state;
    bool f64 = dtype == TSRNN_COMM_F64;
    size_t elem_nbytes = f64 ? sizeof(double) : sizeof(float);
    /* MPI counts are ints: a larger buffer goes in pieces. */
    for (size_t done = 0; done < count;) {
        int n = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        MPI_Request req;
        int code = MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + done * elem_nbytes, n,
                                  f64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        if (code != MPI_SUCCESS)
            return mpi_failed(code, "MPI_Iallreduce");
        TSRNN_TRY(wait_for(s, &req, "MPI_Iallreduce"));
        done += (size_t)n;
    }
    return TSRNN_OK;
}

static enum tsrnn_status broadcast_bytes(struct mpi_state *s, void *buf, size_t nbytes, int root)
{
    for (size_t done = 0; done < nbytes;) {
        int n = nbytes - done > INT_MAX ? INT_MAX : (int)(nbytes - done);
        MPI_Request req;
        int code = MPI_Ibcast((char *)buf + done, n, MPI_BYTE, root, MPI_COMM_WORLD, &req);
        if (code != MPI_SUCCESS)
            return mpi_failed(code, "MPI_Ibcast");
        TSRNN_TRY(wait_for(s, &req, "MPI_Ibcast"));
        done += (size_t)n;
    }
    return TSRNN_OK;
}

static enum tsrnn_status mpi_broadcast(void *state, void *buf, size_t nbytes, int root)
{
    return broadcast_bytes(state, buf, nbytes, root);
}

static enum tsrnn_status mpi_barrier(void *state)
{
    MPI_Request req;
    int code = MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (code != MPI_SUCCESS)
        return mpi_failed(code, "MPI_Ibarrier");
    return wait_for(state, &req, "MPI_Ibarrier");
}

/* The only way MPI offers to make the peers stop waiting: end the whole job. Does not
 * return; the launcher kills every rank and exits non-zero (Open MPI: with exit_code). */
static void mpi_abort(void *state, int exit_code)
{
    (void)state;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
}

static void mpi_close(void *state)
{
    (void)state;
    release_mpi();
}

static enum tsrnn_status mpi_hold(int rank, int world_size)
{
    enum tsrnn_status status = hold_mpi(rank, world_size);
    if (status != TSRNN_OK)
        release_mpi();
    return status;
}

static enum tsrnn_status mpi_bootstrap_broadcast(void *buf, size_t nbytes, double timeout_s)
{
    if (holders == 0)
        return tsrnn_error(TSRNN_ERR_USAGE, "MPI bootstrap broadcast before tsrnn_comm_mpi_hold()");
    struct mpi_state s = { .timeout_s = timeout_s };
    return broadcast_bytes(&s, buf, nbytes, 0);
}

static const struct tsrnn_comm_backend mpi_backend = {
    .name = "mpi",
    .needs_rendezvous = false, /* MPI_Init meets the others through mpirun or srun */
    .device_buffers = false,   /* host memory: the dispatcher stages device buffers */
    .open = mpi_open,
    .allreduce_sum = mpi_allreduce_sum,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .abort = mpi_abort,
    .close = mpi_close,
};

/* The module's entry (backend.h): the backend and the NCCL bootstrap hooks. */
const struct tsrnn_comm_module *tsrnn_comm_mpi_module(void)
{
    static const struct tsrnn_comm_module module = {
        .abi = TSRNN_COMM_MODULE_ABI,
        .backend = &mpi_backend,
        .mpi_hold = mpi_hold,
        .mpi_bootstrap_broadcast = mpi_bootstrap_broadcast,
        .mpi_release = release_mpi,
    };
    return &module;
}
