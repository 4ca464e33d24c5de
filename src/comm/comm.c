/* tsrnn comm: the dispatcher of comm.h and the one table of backends.
 *
 * A backend (backend.h) is a table of functions (open .. close) and a state pointer, in its
 * own file: local.c and nccl.c linked in; gloo.c (with gloo.cc, the C++ shim) and mpi.c each
 * in a module loaded when the backend is chosen (module.c). This file checks what every
 * backend would check (options, ranks, sizes, roots), skips empty collectives, refuses
 * collectives on a communicator that failed or was aborted, and words every failure the same
 * way ("rank 1: allreduce of 483 floats failed (timeout 60 s): " + the backend's own text), so
 * a backend only ever sees valid, non-empty calls on a live connection and only says what went
 * wrong.
 */
#include "tsrnn/comm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "tsrnn_build.h"

struct tsrnn_comm {
    const struct tsrnn_comm_backend *backend;
    void *state; /* the backend's */
    int rank;
    int world_size;
    double timeout_s;
    bool failed;                   /* a collective failed: the peers are in an unknown state */
    bool aborted;                  /* tsrnn_comm_abort() was called */
    struct tsrnn_compute *compute; /* whose device memory the *_device calls take; NULL */
    void *staging;                 /* a buffer on the backend's side for staged calls */
    size_t staging_nbytes;
    double allreduce_s; /* time in allreduces that completed here (not the queued ones) */
};

/* Beyond this a timeout is a typo, and its milliseconds would not fit Gloo's types. */
#define MAX_TIMEOUT_S 1e6

static const char *dtype_name(enum tsrnn_comm_dtype dtype)
{
    return dtype == TSRNN_COMM_F64 ? "doubles" : "floats";
}

/* Every backend tsrnn knows and how this build has it: linked in (its table), in a module
 * loaded when chosen (backend.h, module.c), or not at all: the one place that knows which
 * backends were compiled. */
static const struct {
    const char *name;
    const struct tsrnn_comm_backend *backend; /* linked into libtsrnn; NULL otherwise */
    bool module;                              /* in tsrnn-comm-NAME.so */
    const char *needs;                        /* what a build needs for it */
    const char *installs;                     /* what its module needs at run time */
} backends[] = {
    { "local", &tsrnn_comm_local_backend, false, NULL, NULL },
    { "gloo", NULL, TSRNN_HAVE_GLOO, "libgloo-dev", "Gloo (Debian: libgloo0)" },
    { "mpi", NULL, TSRNN_HAVE_MPI_BACKEND, "libopenmpi-dev", "Open MPI (Debian: libopenmpi3)" },
#if TSRNN_HAVE_NCCL_BACKEND
    { "nccl", &tsrnn_comm_nccl_backend, false, NULL, NULL },
#else
    { "nccl", NULL, false, "the CUDA backend (CUDA toolkit with cuDNN 9) and NCCL's header", NULL },
#endif
};

enum {
    BACKEND_COUNT = sizeof(backends) / sizeof(backends[0])
};

static int find_backend(const char *name)
{
    for (int i = 0; i < BACKEND_COUNT; i++)
        if (strcmp(backends[i].name, name) == 0)
            return i;
    return -1;
}

bool tsrnn_comm_backend_available(const char *name)
{
    int i = name ? find_backend(name) : -1;
    return i >= 0 && (backends[i].backend != NULL || backends[i].module);
}

bool tsrnn_comm_backend_usable(const char *name, char *why, size_t why_nbytes)
{
    int i = name ? find_backend(name) : -1;
    if (!tsrnn_comm_backend_available(name)) {
        if (why != NULL && why_nbytes > 0)
            snprintf(why, why_nbytes, "this tsrnn was built without the %s comm backend",
                     name ? name : "(none)");
        return false;
    }
    const struct tsrnn_comm_backend *b = backends[i].backend;
    return b == NULL || b->usable == NULL || b->usable(why, why_nbytes);
}

bool tsrnn_comm_backend_known(const char *name)
{
    return name != NULL && find_backend(name) >= 0;
}

void tsrnn_comm_backend_list(char *out, size_t capacity)
{
    size_t used = 0;
    if (capacity == 0)
        return;
    out[0] = '\0';
    for (int k = 0; k < BACKEND_COUNT && used < capacity; k++) {
        int n = snprintf(out + used, capacity - used, "%s%s", k ? ", " : "", backends[k].name);
        used += n > 0 ? (size_t)n : 0;
    }
}

static enum tsrnn_status check_options(const struct tsrnn_comm_options *opt)
{
    if (opt->world_size < 1)
        return tsrnn_error(TSRNN_ERR_USAGE, "comm: world size %d is not valid: it must be >= 1",
                           opt->world_size);
    if (opt->rank < 0 || opt->rank >= opt->world_size)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm: rank %d is outside the world of %d rank(s): it must be in "
                           "0..%d",
                           opt->rank, opt->world_size, opt->world_size - 1);
    if (!(opt->timeout_s > 0 && opt->timeout_s <= MAX_TIMEOUT_S))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm: timeout %g s is not valid: it must be > 0 and <= %g s",
                           opt->timeout_s, MAX_TIMEOUT_S);
    return TSRNN_OK;
}

static enum tsrnn_status pick_backend(const struct tsrnn_comm_backend **backend,
                                      const struct tsrnn_comm_options *opt)
{
    /* NULL is a default for library users (tests, benchmarks); tsrnn-worker always names the
     * backend the launcher chose (TSRNN_COMM_BACKEND, world.h). */
    const char *name = opt->backend ? opt->backend : opt->world_size == 1 ? "local" : "gloo";
    int i = find_backend(name);
    if (i < 0) {
        char accepted[128];
        tsrnn_comm_backend_list(accepted, sizeof(accepted));
        return tsrnn_error(TSRNN_ERR_USAGE, "comm: unknown backend \"%s\": accepted are %s", name,
                           accepted);
    }
    if (backends[i].module) {
        const struct tsrnn_comm_module *module;
        TSRNN_TRY(tsrnn_comm_module_load(&module, name, backends[i].installs));
        *backend = module->backend;
        return TSRNN_OK;
    }
    if (!backends[i].backend)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm: backend \"%s\" is not in this build: it was built without %s "
                           "(install it and rebuild)%s",
                           name, backends[i].needs,
                           opt->backend ? "" : "; a world of more than 1 rank needs it");
    *backend = backends[i].backend;
    return TSRNN_OK;
}

/* Whether `rendezvous` names a folder ("file:<dir>"), the one kind there is (store.h). */
static bool is_file_rendezvous(const char *rendezvous)
{
    return rendezvous && strncmp(rendezvous, "file:", 5) == 0 && rendezvous[5] != '\0';
}

static enum tsrnn_status check_rendezvous(const struct tsrnn_comm_backend *backend,
                                          const struct tsrnn_comm_options *opt)
{
    const char *rdv = opt->rendezvous;
    if (!backend->needs_rendezvous || is_file_rendezvous(rdv))
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "rank %d: comm backend %s needs a rendezvous \"file:<dir>\" (which "
                       "tsrnn-launch sets in TSRNN_RENDEZVOUS), got %s%s%s",
                       opt->rank, backend->name, rdv ? "\"" : "", rdv ? rdv : "none",
                       rdv ? "\"" : "");
}

/* A backend's failure, worded the same for every backend: `fmt` (the rank and the call) in
 * front of the backend's own message. */
__attribute__((format(printf, 2, 3))) static enum tsrnn_status
backend_failed(enum tsrnn_status status, const char *fmt, ...)
{
    char cause[1536], what[256];
    snprintf(cause, sizeof(cause), "%s", tsrnn_last_error());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return tsrnn_error(status, "%s: %s", what, cause);
}

enum tsrnn_status tsrnn_comm_open(struct tsrnn_comm **comm, const struct tsrnn_comm_options *opt)
{
    *comm = NULL;
    const struct tsrnn_comm_backend *backend = NULL;
    TSRNN_TRY(check_options(opt));
    TSRNN_TRY(pick_backend(&backend, opt));
    TSRNN_TRY(check_rendezvous(backend, opt));
    struct tsrnn_comm *c = malloc(sizeof(*c));
    if (!c)
        return tsrnn_error(TSRNN_ERR_NOMEM, "comm: out of memory");
    *c = (struct tsrnn_comm){
        .backend = backend,
        .rank = opt->rank,
        .world_size = opt->world_size,
        .timeout_s = opt->timeout_s,
        .compute = opt->compute,
    };
    enum tsrnn_status status = backend->open(&c->state, opt);
    if (status != TSRNN_OK) {
        status = backend_failed(status, "rank %d", opt->rank);
        if (c->state == NULL) {
            free(c);
            return status;
        }
        /* Joined, then refused: the peers wait for this rank until the job is aborted. */
        c->failed = true;
    }
    *comm = c;
    return status;
}

/* Why no collective may run: the peers may be anywhere in their sequence of collectives. */
static enum tsrnn_status check_live(const struct tsrnn_comm *comm, const char *what)
{
    if (comm->aborted)
        return tsrnn_error(TSRNN_ERR_COMM, "rank %d: %s after the communicator was aborted",
                           comm->rank, what);
    if (comm->failed)
        return tsrnn_error(TSRNN_ERR_COMM,
                           "rank %d: %s after an earlier collective failed: abort and stop",
                           comm->rank, what);
    return TSRNN_OK;
}

/* Whether a buffer in device memory (device) or host memory must be copied to the other
 * side for this backend: only when there is a device whose memory is not host memory. */
static bool needs_staging(const struct tsrnn_comm *comm, bool device)
{
    if (comm->compute == NULL || tsrnn_compute_host_memory(comm->compute))
        return false;
    return device != comm->backend->device_buffers;
}

/* comm->staging with room for nbytes, on the backend's side. */
static enum tsrnn_status staging_buffer(struct tsrnn_comm *comm, size_t nbytes)
{
    if (comm->staging_nbytes >= nbytes)
        return TSRNN_OK;
    if (comm->backend->device_buffers)
        tsrnn_compute_free(comm->compute, comm->staging);
    else
        free(comm->staging);
    comm->staging = NULL;
    comm->staging_nbytes = 0;
    if (comm->backend->device_buffers)
        TSRNN_TRY(tsrnn_compute_alloc(comm->compute, &comm->staging, nbytes));
    else if ((comm->staging = malloc(nbytes)) == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "rank %d: out of memory staging %zu bytes", comm->rank,
                           nbytes);
    comm->staging_nbytes = nbytes;
    return TSRNN_OK;
}

/* Copies nbytes of buf (device memory when `device`) to the staging buffer, or back. */
static enum tsrnn_status stage(struct tsrnn_comm *comm, bool device, void *buf, size_t nbytes,
                               bool back)
{
    void *dst = back ? buf : comm->staging, *src = back ? comm->staging : buf;
    /* device -> host staging is a download; host -> device staging an upload. */
    return device != back ? tsrnn_compute_download(comm->compute, dst, src, nbytes)
                          : tsrnn_compute_upload(comm->compute, dst, src, nbytes);
}

static size_t dtype_nbytes(enum tsrnn_comm_dtype dtype)
{
    return dtype == TSRNN_COMM_F64 ? sizeof(double) : sizeof(float);
}

static enum tsrnn_status allreduce_sum(struct tsrnn_comm *comm, bool device, void *buf,
                                       size_t count, enum tsrnn_comm_dtype dtype)
{
    if (dtype != TSRNN_COMM_F32 && dtype != TSRNN_COMM_F64)
        return tsrnn_error(TSRNN_ERR_USAGE, "rank %d: allreduce of unknown dtype %d", comm->rank,
                           (int)dtype);
    if (count > 0 && !buf)
        return tsrnn_error(TSRNN_ERR_USAGE, "rank %d: allreduce of %zu %s from a NULL buffer",
                           comm->rank, count, dtype_name(dtype));
    TSRNN_TRY(check_live(comm, "allreduce"));
    if (count == 0)
        return TSRNN_OK;
    bool staged = needs_staging(comm, device);
    size_t nbytes = count * dtype_nbytes(dtype);
    if (staged) {
        TSRNN_TRY(staging_buffer(comm, nbytes));
        TSRNN_TRY(stage(comm, device, buf, nbytes, false));
    }
    double started_s = tsrnn_clock_now_s();
    enum tsrnn_status status =
        comm->backend->allreduce_sum(comm->state, staged ? comm->staging : buf, count, dtype);
    if (status != TSRNN_OK)
        goto out;
    if (staged)
        status = stage(comm, device, buf, nbytes, true);
out:
    comm->allreduce_s += tsrnn_clock_now_s() - started_s;
    if (status != TSRNN_OK) {
        comm->failed = true;
        return backend_failed(status, "rank %d: allreduce of %zu %s failed (timeout %g s)",
                              comm->rank, count, dtype_name(dtype), comm->timeout_s);
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_comm_allreduce_sum(struct tsrnn_comm *comm, void *buf, size_t count,
                                           enum tsrnn_comm_dtype dtype)
{
    return allreduce_sum(comm, false, buf, count, dtype);
}

enum tsrnn_status tsrnn_comm_allreduce_sum_device(struct tsrnn_comm *comm, void *buf, size_t count,
                                                  enum tsrnn_comm_dtype dtype)
{
    return allreduce_sum(comm, comm->compute != NULL, buf, count, dtype);
}

/* --- the training step's reduction (compute.h struct tsrnn_step_reduce) --------------------- */

static bool queues(const struct tsrnn_comm *comm)
{
    return comm->backend->allreduce_sum_queued != NULL && comm->compute != NULL &&
           !tsrnn_compute_host_memory(comm->compute);
}

static enum tsrnn_status step_allreduce(void *ctx, float *buf, size_t count)
{
    struct tsrnn_comm *comm = ctx;
    if (!queues(comm))
        return allreduce_sum(comm, true, buf, count, TSRNN_COMM_F32);
    TSRNN_TRY(check_live(comm, "allreduce"));
    enum tsrnn_status status =
        comm->backend->allreduce_sum_queued(comm->state, buf, count, TSRNN_COMM_F32);
    if (status != TSRNN_OK) {
        comm->failed = true;
        return backend_failed(status, "rank %d: queueing an allreduce of %zu floats failed",
                              comm->rank, count);
    }
    return TSRNN_OK;
}

static enum tsrnn_status step_health(void *ctx)
{
    struct tsrnn_comm *comm = ctx;
    TSRNN_TRY(check_live(comm, "a queued allreduce"));
    enum tsrnn_status status =
        comm->backend->health != NULL ? comm->backend->health(comm->state) : TSRNN_OK;
    if (status != TSRNN_OK) {
        comm->failed = true;
        return backend_failed(status, "rank %d: a queued allreduce failed", comm->rank);
    }
    return TSRNN_OK;
}

static void step_abort(void *ctx)
{
    tsrnn_comm_abort(ctx);
}

void tsrnn_comm_step_reduce(struct tsrnn_comm *comm, struct tsrnn_step_reduce *reduce)
{
    *reduce = (struct tsrnn_step_reduce){
        .allreduce_sum = step_allreduce,
        .health = step_health,
        .abort = step_abort,
        .ctx = comm,
        .world_size = comm->world_size,
        .device_queued = queues(comm),
        .timeout_s = comm->timeout_s,
    };
}

double tsrnn_comm_allreduce_seconds(const struct tsrnn_comm *comm)
{
    return comm->allreduce_s;
}

static enum tsrnn_status broadcast(struct tsrnn_comm *comm, bool device, void *buf, size_t nbytes,
                                   int root)
{
    if (root < 0 || root >= comm->world_size)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rank %d: broadcast from rank %d, outside the world of %d rank(s)",
                           comm->rank, root, comm->world_size);
    if (nbytes > 0 && !buf)
        return tsrnn_error(TSRNN_ERR_USAGE, "rank %d: broadcast of %zu bytes from a NULL buffer",
                           comm->rank, nbytes);
    TSRNN_TRY(check_live(comm, "broadcast"));
    if (nbytes == 0)
        return TSRNN_OK;
    bool staged = needs_staging(comm, device);
    if (staged) {
        TSRNN_TRY(staging_buffer(comm, nbytes));
        if (comm->rank == root)
            TSRNN_TRY(stage(comm, device, buf, nbytes, false));
    }
    enum tsrnn_status status =
        comm->backend->broadcast(comm->state, staged ? comm->staging : buf, nbytes, root);
    if (status != TSRNN_OK) {
        comm->failed = true;
        return backend_failed(status,
                              "rank %d: broadcast of %zu bytes from rank %d failed (timeout %g s)",
                              comm->rank, nbytes, root, comm->timeout_s);
    }
    return staged && comm->rank != root ? stage(comm, device, buf, nbytes, true) : TSRNN_OK;
}

enum tsrnn_status tsrnn_comm_broadcast(struct tsrnn_comm *comm, void *buf, size_t nbytes, int root)
{
    return broadcast(comm, false, buf, nbytes, root);
}

enum tsrnn_status tsrnn_comm_broadcast_device(struct tsrnn_comm *comm, void *buf, size_t nbytes,
                                              int root)
{
    return broadcast(comm, comm->compute != NULL, buf, nbytes, root);
}

enum tsrnn_status tsrnn_comm_barrier(struct tsrnn_comm *comm)
{
    TSRNN_TRY(check_live(comm, "barrier"));
    enum tsrnn_status status = comm->backend->barrier(comm->state);
    if (status != TSRNN_OK) {
        comm->failed = true;
        return backend_failed(status, "rank %d: barrier failed (timeout %g s)", comm->rank,
                              comm->timeout_s);
    }
    return TSRNN_OK;
}

void tsrnn_comm_abort_job(struct tsrnn_comm *comm, int exit_code)
{
    if (!comm || comm->aborted)
        return;
    comm->aborted = true;
    comm->backend->abort(comm->state, exit_code);
}

void tsrnn_comm_abort(struct tsrnn_comm *comm)
{
    tsrnn_comm_abort_job(comm, TSRNN_EXIT_PEER);
}

void tsrnn_comm_close(struct tsrnn_comm *comm)
{
    if (!comm)
        return;
    if (!comm->failed && !comm->aborted && comm->world_size > 1 &&
        comm->backend->barrier(comm->state) != TSRNN_OK)
        tsrnn_error_clear(); /* a peer already gone: nothing left to deliver to it */
    comm->backend->close(comm->state);
    if (comm->backend->device_buffers)
        tsrnn_compute_free(comm->compute, comm->staging);
    else
        free(comm->staging);
    free(comm);
}

int tsrnn_comm_rank(const struct tsrnn_comm *comm)
{
    return comm->rank;
}

int tsrnn_comm_world_size(const struct tsrnn_comm *comm)
{
    return comm->world_size;
}

const char *tsrnn_comm_backend_name(const struct tsrnn_comm *comm)
{
    return comm->backend->name;
}

/* The mpi module's NCCL bootstrap hooks (backend.h). */

static const struct tsrnn_comm_module *mpi_module;

enum tsrnn_status tsrnn_comm_mpi_hold(int rank, int world_size)
{
    int i = find_backend("mpi");
    if (mpi_module == NULL)
        TSRNN_TRY(tsrnn_comm_module_load(&mpi_module, "mpi", backends[i].installs));
    return mpi_module->mpi_hold(rank, world_size);
}

enum tsrnn_status tsrnn_comm_mpi_bootstrap_broadcast(void *buf, size_t nbytes, double timeout_s)
{
    if (mpi_module == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE, "MPI bootstrap broadcast before tsrnn_comm_mpi_hold()");
    return mpi_module->mpi_bootstrap_broadcast(buf, nbytes, timeout_s);
}

void tsrnn_comm_mpi_release(void)
{
    if (mpi_module != NULL)
        mpi_module->mpi_release();
}
