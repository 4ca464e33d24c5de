/* The nccl comm backend (backend.h): GPU workers, one communicator per job, collectives on
 * the compute backend's stream (DESIGN.md §2, §9). Built with the CUDA backend and NCCL's
 * header; libnccl itself is loaded with dlopen when first used (nccl.h says why).
 *
 * Bootstrap: rank 0's ncclGetUniqueId goes to every rank through the rendezvous store under
 * tsrnn-launch (nccl_id.c), or by MPI_Bcast under mpirun / srun (mpi.c's hook), and each
 * waits for it with the job's deadline.
 *
 * Nothing here can block forever. The communicator is non-blocking (ncclConfig_t.blocking =
 * 0): ncclCommInitRankConfig and every collective may return ncclInProgress, and the call is
 * finished by polling ncclCommGetAsyncError. A collective is then queued on the compute
 * stream and completed by polling cudaStreamQuery together with the communicator's async
 * error, never by cudaStreamSynchronize, which waits forever for a peer that died or was
 * stopped. Every wait ends timeout_s after the call began. On an error or the deadline the
 * communicator is aborted here at once (ncclCommAbort: the queued kernels end, the peers'
 * connections close) and the message names the operation and NCCL's own words
 * (ncclGetErrorString, ncclGetLastError); comm.c puts the rank and the call in front, and
 * the worker exits 3, which the launcher's supervision turns into the end of the job.
 *
 * Polling: a collective of a training step takes tens of microseconds to milliseconds, so
 * the first millisecond yields the core between polls (latency), then sleeps grow to 200 µs
 * (a long wait does not burn a core that a peer or the data loader may need). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "nccl.h"
#include "tsrnn/dynlib.h"
#include "tsrnn_build.h"

#define STRINGIFY(x) #x
#define SONAME(b)    "libnccl.so." STRINGIFY(b)

/* --- libnccl, loaded on first use (nccl.h) ---------------------------------------------- */

struct tsrnn_nccl_lib tsrnn_nccl_lib;

#define TABLE_SYMBOL(fn) TSRNN_DYNLIB_SYMBOL(tsrnn_nccl_lib, fn),
static const struct tsrnn_dynlib_symbol nccl_symbols[] = { TSRNN_NCCL_FUNCTIONS(TABLE_SYMBOL) };

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static bool lib_loaded;
static char lib_why[1024];
static char lib_description[600];

static void load_lib(void)
{
    /* By soname, then in the folders the build found NCCL in; the handle stays open. */
    void *lib = tsrnn_dynlib_open(
        SONAME(NCCL_MAJOR), TSRNN_CUDA_LIBDIRS, nccl_symbols,
        sizeof(nccl_symbols) / sizeof(nccl_symbols[0]),
        "the nccl comm backend needs it: install NCCL (the pip wheel nvidia-nccl-cu13, "
        "Debian's libnccl2) or use [trainer] comm = gloo",
        ": an older NCCL than the build's", lib_why, sizeof(lib_why));
    if (lib == NULL)
        return;
    char path[512];
    int version = 0;
    tsrnn_dynlib_path(lib, path, sizeof(path));
    (void)NCCL(ncclGetVersion)(&version); /* major * 10000 + minor * 100 + patch */
    snprintf(lib_description, sizeof(lib_description), "NCCL %d.%d.%d (%s)", version / 10000,
             version / 100 % 100, version % 100, path);
    lib_loaded = true;
}

bool tsrnn_nccl_lib_load(char *why, size_t why_nbytes)
{
    pthread_once(&lib_once, load_lib);
    if (!lib_loaded && why != NULL && why_nbytes > 0)
        snprintf(why, why_nbytes, "%s", lib_why);
    return lib_loaded;
}

const char *tsrnn_nccl_lib_describe(void)
{
    return lib_loaded ? lib_description : "";
}

/* --- the communicator ------------------------------------------------------------------- */

struct nccl {
    ncclComm_t comm; /* NULL once aborted */
    cudaStream_t stream;
    struct tsrnn_compute *compute;
    float *barrier_buf; /* device: one float the barrier allreduces */
    double timeout_s;
    bool mpi_held; /* bootstrapped through mpi.c's hook: released in close() */
};

/* Yields for the first millisecond of a wait, then sleeps up to 200 µs. */
static void pause_poll(double started_s)
{
    double waited_s = tsrnn_clock_now_s() - started_s;
    if (waited_s < 1e-3) {
        sched_yield();
        return;
    }
    long ns = waited_s < 0.1 ? 20000 : 200000;
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

/* Aborts the communicator, so that no later call (close included) can wait on it. */
static void abort_comm(struct nccl *n)
{
    if (n->comm != NULL)
        (void)NCCL(ncclCommAbort)(n->comm);
    n->comm = NULL;
}

/* NCCL's failure `r` while `what`: its words, then the abort. */
static enum tsrnn_status nccl_failed(struct nccl *n, ncclResult_t r, const char *what)
{
    const char *last = n->comm != NULL ? NCCL(ncclGetLastError)(n->comm) : "";
    enum tsrnn_status status =
        tsrnn_error(TSRNN_ERR_COMM, "NCCL failed while %s: %s%s%s (communicator aborted)", what,
                    NCCL(ncclGetErrorString)(r), last && last[0] ? ": " : "", last ? last : "");
    abort_comm(n);
    return status;
}

static enum tsrnn_status deadline_passed(struct nccl *n, const char *what)
{
    abort_comm(n);
    return tsrnn_error(TSRNN_ERR_COMM,
                       "NCCL made no progress %s within %g s: a peer died, is stopped, or is "
                       "not in the same collective (communicator aborted)",
                       what, n->timeout_s);
}

/* The communicator's async error: TSRNN_OK while it is fine or busy (*busy says which). */
static enum tsrnn_status check_async(struct nccl *n, const char *what, bool *busy)
{
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = NCCL(ncclCommGetAsyncError)(n->comm, &async);
    if (r != ncclSuccess)
        return nccl_failed(n, r, what);
    if (async != ncclSuccess && async != ncclInProgress)
        return nccl_failed(n, async, what);
    *busy = async == ncclInProgress;
    return TSRNN_OK;
}

/* Waits until the communicator's last call is no longer in progress (non-blocking mode). */
static enum tsrnn_status wait_comm(struct nccl *n, double started_s, const char *what)
{
    for (;;) {
        bool busy = false;
        TSRNN_TRY(check_async(n, what, &busy));
        if (!busy)
            return TSRNN_OK;
        if (tsrnn_clock_now_s() - started_s >= n->timeout_s)
            return deadline_passed(n, what);
        pause_poll(started_s);
    }
}

/* Waits until the stream has run what was queued on it, watching the communicator. */
static enum tsrnn_status wait_stream(struct nccl *n, double started_s, const char *what)
{
    for (;;) {
        cudaError_t e = cudaStreamQuery(n->stream);
        if (e == cudaSuccess)
            return TSRNN_OK;
        if (e != cudaErrorNotReady) {
            abort_comm(n);
            return tsrnn_error(TSRNN_ERR_COMM,
                               "CUDA failed while %s: %s (%s; communicator aborted)", what,
                               cudaGetErrorString(e), cudaGetErrorName(e));
        }
        bool busy = false;
        TSRNN_TRY(check_async(n, what, &busy));
        if (tsrnn_clock_now_s() - started_s >= n->timeout_s)
            return deadline_passed(n, what);
        pause_poll(started_s);
    }
}

/* A collective's call returned `r`: finishes it (non-blocking mode), then its stream work. */
static enum tsrnn_status complete(struct nccl *n, ncclResult_t r, double started_s,
                                  const char *what)
{
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_failed(n, r, what);
    if (r == ncclInProgress)
        TSRNN_TRY(wait_comm(n, started_s, what));
    return wait_stream(n, started_s, what);
}

static enum tsrnn_status generate_id(void *id, size_t nbytes, void *arg)
{
    (void)arg, (void)nbytes;
    ncclResult_t r = NCCL(ncclGetUniqueId)((ncclUniqueId *)id);
    if (r != ncclSuccess)
        return tsrnn_error(TSRNN_ERR_COMM, "ncclGetUniqueId failed: %s: %s",
                           NCCL(ncclGetErrorString)(r), NCCL(ncclGetLastError)(NULL));
    return TSRNN_OK;
}

/* Rank 0's unique id on every rank: the store under tsrnn-launch, MPI under mpirun. */
static enum tsrnn_status share_id(struct nccl *n, ncclUniqueId *id,
                                  const struct tsrnn_comm_options *opt)
{
    if (opt->rendezvous != NULL)
        return tsrnn_comm_nccl_id_exchange(id, sizeof(*id), opt->rank, opt->rendezvous,
                                           opt->timeout_s, generate_id, NULL);
    if (opt->world_size == 1)
        return generate_id(id, sizeof(*id), NULL);
#if TSRNN_HAVE_MPI_BACKEND
    TSRNN_TRY(tsrnn_comm_mpi_hold(opt->rank, opt->world_size));
    n->mpi_held = true;
    if (opt->rank == 0)
        TSRNN_TRY(generate_id(id, sizeof(*id), NULL));
    return tsrnn_comm_mpi_bootstrap_broadcast(id, sizeof(*id), opt->timeout_s);
#else
    (void)n;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "comm backend nccl with %d ranks needs rank 0's unique id: start the "
                       "workers with tsrnn-launch (TSRNN_RENDEZVOUS), or build with MPI "
                       "(libopenmpi-dev) to start them with mpirun",
                       opt->world_size);
#endif
}

static void nccl_close(void *state);

static enum tsrnn_status nccl_open(void **state, const struct tsrnn_comm_options *opt)
{
    *state = NULL;
    if (opt->compute == NULL || tsrnn_compute_host_memory(opt->compute))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm backend nccl needs GPU workers (the CUDA compute backend); CPU "
                           "workers talk through gloo");
    char why[512];
    if (!tsrnn_nccl_lib_load(why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s", why);

    double started_s = tsrnn_clock_now_s();
    struct nccl *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    n->compute = opt->compute;
    n->stream = (cudaStream_t)tsrnn_compute_stream(opt->compute);
    n->timeout_s = opt->timeout_s;

    ncclUniqueId id;
    enum tsrnn_status status = share_id(n, &id, opt);
    if (status != TSRNN_OK)
        goto out;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r =
        NCCL(ncclCommInitRankConfig)(&n->comm, opt->world_size, id, opt->rank, &config);
    if (r != ncclSuccess && r != ncclInProgress)
        status = nccl_failed(n, r, "creating the communicator (ncclCommInitRankConfig)");
    else
        status = wait_comm(n, started_s, "creating the communicator (ncclCommInitRankConfig)");
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_alloc(opt->compute, (void **)&n->barrier_buf, sizeof(float));
    if (status != TSRNN_OK)
        goto out;
    *state = n;
out:
    if (status != TSRNN_OK) {
        abort_comm(n);
        nccl_close(n);
    }
    return status;
}

static ncclDataType_t nccl_dtype(enum tsrnn_comm_dtype dtype)
{
    return dtype == TSRNN_COMM_F64 ? ncclFloat64 : ncclFloat32;
}

static enum tsrnn_status nccl_allreduce_sum(void *state, void *buf, size_t count,
                                            enum tsrnn_comm_dtype dtype)
{
    struct nccl *n = state;
    double started_s = tsrnn_clock_now_s();
    ncclResult_t r =
        NCCL(ncclAllReduce)(buf, buf, count, nccl_dtype(dtype), ncclSum, n->comm, n->stream);
    return complete(n, r, started_s, "summing (ncclAllReduce)");
}

/* The same, left on the stream (a graph may capture it): only the call itself is finished;
 * nccl_health and the reader of the step's results watch the rest. */
static enum tsrnn_status nccl_allreduce_sum_queued(void *state, void *buf, size_t count,
                                                   enum tsrnn_comm_dtype dtype)
{
    struct nccl *n = state;
    const char *what = "summing (ncclAllReduce, queued)";
    double started_s = tsrnn_clock_now_s();
    ncclResult_t r =
        NCCL(ncclAllReduce)(buf, buf, count, nccl_dtype(dtype), ncclSum, n->comm, n->stream);
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_failed(n, r, what);
    return r == ncclInProgress ? wait_comm(n, started_s, what) : TSRNN_OK;
}

static enum tsrnn_status nccl_health(void *state)
{
    bool busy;
    return check_async(state, "running a queued ncclAllReduce", &busy);
}

static enum tsrnn_status nccl_broadcast(void *state, void *buf, size_t nbytes, int root)
{
    struct nccl *n = state;
    double started_s = tsrnn_clock_now_s();
    ncclResult_t r = NCCL(ncclBroadcast)(buf, buf, nbytes, ncclUint8, root, n->comm, n->stream);
    return complete(n, r, started_s, "broadcasting (ncclBroadcast)");
}

/* NCCL has no barrier: a sum of one float that every rank must join. */
static enum tsrnn_status nccl_barrier(void *state)
{
    struct nccl *n = state;
    double started_s = tsrnn_clock_now_s();
    ncclResult_t r = NCCL(ncclAllReduce)(n->barrier_buf, n->barrier_buf, 1, ncclFloat32, ncclSum,
                                         n->comm, n->stream);
    return complete(n, r, started_s, "waiting for every rank (a one-float ncclAllReduce)");
}

static void nccl_abort(void *state, int exit_code)
{
    (void)exit_code; /* the peers' NCCL sees the connections close */
    abort_comm(state);
}

/* A healthy communicator is finalized (ncclCommFinalize, polled up to timeout_s: the peers
 * have passed comm.c's closing barrier) and destroyed; one that does not finish in time is
 * aborted. */
static void nccl_close(void *state)
{
    struct nccl *n = state;
    if (n == NULL)
        return;
    if (n->comm != NULL) {
        double started_s = tsrnn_clock_now_s();
        ncclResult_t r = NCCL(ncclCommFinalize)(n->comm);
        if ((r == ncclSuccess || r == ncclInProgress) &&
            wait_comm(n, started_s, "closing the communicator") == TSRNN_OK) {
            (void)NCCL(ncclCommDestroy)(n->comm);
            n->comm = NULL;
        } else
            tsrnn_error_clear(); /* nothing left to deliver: the abort below frees it */
        abort_comm(n);
    }
    tsrnn_compute_free(n->compute, n->barrier_buf);
#if TSRNN_HAVE_MPI_BACKEND
    if (n->mpi_held)
        tsrnn_comm_mpi_release();
#endif
    free(n);
}

const struct tsrnn_comm_backend tsrnn_comm_nccl_backend = {
    .name = "nccl",
    /* "file:<dir>" under tsrnn-launch; none under mpirun (MPI bootstraps) or for one rank. */
    .needs_rendezvous = false,
    .device_buffers = true, /* device memory of opt.compute, on its stream */
    .usable = tsrnn_nccl_lib_load,
    .open = nccl_open,
    .allreduce_sum = nccl_allreduce_sum,
    .allreduce_sum_queued = nccl_allreduce_sum_queued,
    .health = nccl_health,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .abort = nccl_abort,
    .close = nccl_close,
};
