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

/* Completes `req` or gives up after timeout_s; `what` names the call for the message. */
static enum tsrnn_status wait_for(MPI_Request *req, double timeout_s, const char *what)
{
    double start_s = tsrnn_clock_now_s();
    for (;;) {
        int done = 0;
        int code = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (code != MPI_SUCCESS)
            return mpi_failed(code, what);
        if (done)
            return TSRNN_OK;
        double waited_s = tsrnn_clock_now_s() - start_s;
        if (waited_s > timeout_s)
            return tsrnn_error(TSRNN_ERR_COMM,
                               "%s did not complete within %g s: a rank is stopped, stuck or "
                               "cut off from this one (MPI has no timeout of its own; this "
                               "rank now ends the job with MPI_Abort)",
                               what, timeout_s);
        if (waited_s < YIELD_PHASE_S) {
            sched_yield();
        } else {
            struct timespec pause = { .tv_nsec = 100 * 1000 };
            nanosleep(&pause, NULL);
        }
    }
}

struct mpi_state {
    double timeout_s;
};

static struct mpi_state the_state;

static enum tsrnn_status mpi_hold(int rank, int world_size);

static enum tsrnn_status mpi_open(void **state, const struct tsrnn_comm_options *opt)
{
    the_state.timeout_s = opt->timeout_s;
    enum tsrnn_status status = mpi_hold(opt->rank, opt->world_size);
    /* After MPI_Init, a world that is not the launcher's leaves the peers waiting: the state
     * goes with the failure, for the worker to abort the job (backend.h). */
    *state = status == TSRNN_OK || world_mismatch ? &the_state : NULL;
    return status;
}

static enum tsrnn_status mpi_allreduce_sum(void *state, void *buf, size_t count,
                                           enum tsrnn_comm_dtype dtype)
{
    const struct mpi_state *s = state;
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
        TSRNN_TRY(wait_for(&req, s->timeout_s, "MPI_Iallreduce"));
        done += (size_t)n;
    }
    return TSRNN_OK;
}

static enum tsrnn_status broadcast_bytes(void *buf, size_t nbytes, int root, double timeout_s)
{
    for (size_t done = 0; done < nbytes;) {
        int n = nbytes - done > INT_MAX ? INT_MAX : (int)(nbytes - done);
        MPI_Request req;
        int code = MPI_Ibcast((char *)buf + done, n, MPI_BYTE, root, MPI_COMM_WORLD, &req);
        if (code != MPI_SUCCESS)
            return mpi_failed(code, "MPI_Ibcast");
        TSRNN_TRY(wait_for(&req, timeout_s, "MPI_Ibcast"));
        done += (size_t)n;
    }
    return TSRNN_OK;
}

static enum tsrnn_status mpi_broadcast(void *state, void *buf, size_t nbytes, int root)
{
    const struct mpi_state *s = state;
    return broadcast_bytes(buf, nbytes, root, s->timeout_s);
}

static enum tsrnn_status mpi_barrier(void *state)
{
    const struct mpi_state *s = state;
    MPI_Request req;
    int code = MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (code != MPI_SUCCESS)
        return mpi_failed(code, "MPI_Ibarrier");
    return wait_for(&req, s->timeout_s, "MPI_Ibarrier");
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
    return broadcast_bytes(buf, nbytes, 0, timeout_s);
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
