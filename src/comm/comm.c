/* tsrnn comm: the dispatcher of comm.h, option checks, and the backend table.
 *
 * A backend is a table of functions (open .. close) and a state pointer; the dispatcher
 * checks what every backend would check (ranks, sizes, roots), skips empty collectives, and
 * refuses collectives on a communicator that failed or was aborted, so a backend only ever
 * sees valid, non-empty calls on a live connection. local is here; gloo's C++ lives in
 * gloo.cc behind gloo_shim.h, with its thin C side (messages, rendezvous parsing) here.
 */
#include "tsrnn/comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tsrnn_build.h"

#if TSRNN_HAVE_GLOO
#include "gloo_shim.h"
#endif

struct tsrnn_comm_backend {
    const char *name;
    enum tsrnn_status (*open)(struct tsrnn_comm *comm, const struct tsrnn_comm_options *opt);
    enum tsrnn_status (*allreduce_sum)(struct tsrnn_comm *comm, void *buf, size_t count,
                                       enum tsrnn_comm_dtype dtype);
    enum tsrnn_status (*broadcast)(struct tsrnn_comm *comm, void *buf, size_t nbytes, int root);
    enum tsrnn_status (*barrier)(struct tsrnn_comm *comm);
    void (*abort)(struct tsrnn_comm *comm);
    void (*close)(struct tsrnn_comm *comm);
};

struct tsrnn_comm {
    const struct tsrnn_comm_backend *backend;
    void *state; /* the backend's */
    int rank;
    int world_size;
    double timeout_s;
    bool failed;  /* a collective failed: the peers are in an unknown state */
    bool aborted; /* tsrnn_comm_abort() was called */
};

/* Beyond this a timeout is a typo, and its milliseconds would not fit Gloo's types. */
#define MAX_TIMEOUT_S 1e6

static const char *dtype_name(enum tsrnn_comm_dtype dtype)
{
    return dtype == TSRNN_COMM_F64 ? "doubles" : "floats";
}

/* local: a world of one rank. */

static enum tsrnn_status local_open(struct tsrnn_comm *comm, const struct tsrnn_comm_options *opt)
{
    (void)comm;
    if (opt->world_size != 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm backend \"local\" runs a world of 1 rank, not %d: use gloo "
                           "(or leave the backend unset) for more",
                           opt->world_size);
    return TSRNN_OK;
}

static enum tsrnn_status local_allreduce_sum(struct tsrnn_comm *comm, void *buf, size_t count,
                                             enum tsrnn_comm_dtype dtype)
{
    (void)comm, (void)buf, (void)count, (void)dtype;
    return TSRNN_OK; /* the sum over one rank is its own values */
}

static enum tsrnn_status local_broadcast(struct tsrnn_comm *comm, void *buf, size_t nbytes,
                                         int root)
{
    (void)comm, (void)buf, (void)nbytes, (void)root;
    return TSRNN_OK;
}

static enum tsrnn_status local_barrier(struct tsrnn_comm *comm)
{
    (void)comm;
    return TSRNN_OK;
}

static void local_abort(struct tsrnn_comm *comm)
{
    (void)comm;
}

static void local_close(struct tsrnn_comm *comm)
{
    (void)comm;
}

static const struct tsrnn_comm_backend local_backend = {
    .name = "local",
    .open = local_open,
    .allreduce_sum = local_allreduce_sum,
    .broadcast = local_broadcast,
    .barrier = local_barrier,
    .abort = local_abort,
    .close = local_close,
};

#if TSRNN_HAVE_GLOO
/* gloo: the C side of gloo.cc. Gloo's own text goes after the colon. */

enum {
    GLOO_ERR_NBYTES = 1024
};

static enum tsrnn_status gloo_open(struct tsrnn_comm *comm, const struct tsrnn_comm_options *opt)
{
    const char *rdv = opt->rendezvous;
    if (!rdv || strncmp(rdv, "file:", 5) != 0 || rdv[5] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rank %d: comm backend gloo needs a rendezvous \"file:<dir>\" (which "
                           "tsrnn-launch sets in TSRNN_RENDEZVOUS), got %s%s%s",
                           opt->rank, rdv ? "\"" : "", rdv ? rdv : "none", rdv ? "\"" : "");
    const char *dir = rdv + 5;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rank %d: rendezvous folder %s does not exist (the launcher creates "
                           "it before starting the ranks)",
                           opt->rank, dir);
    const char *host = opt->host ? opt->host : "127.0.0.1";
    if (host[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rank %d: the comm host is empty: give an address to listen on, "
                           "or none for 127.0.0.1",
                           opt->rank);
    /* Rounded up: 0 ms would mean "no timeout" to Gloo. */
    long long timeout_ms = (long long)ceil(opt->timeout_s * 1000.0);
    char err[GLOO_ERR_NBYTES];
    struct tsrnn_gloo *gloo;
    if (tsrnn_gloo_open(&gloo, opt->rank, opt->world_size, dir, host, timeout_ms, err,
                        sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "rank %d: %s", opt->rank, err);
    comm->state = gloo;
    return TSRNN_OK;
}

static enum tsrnn_status gloo_allreduce_sum(struct tsrnn_comm *comm, void *buf, size_t count,
                                            enum tsrnn_comm_dtype dtype)
{
    char err[GLOO_ERR_NBYTES];
    if (tsrnn_gloo_allreduce_sum(comm->state, buf, count, dtype == TSRNN_COMM_F64, err,
                                 sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "rank %d: allreduce of %zu %s failed (timeout %g s): %s",
                           comm->rank, count, dtype_name(dtype), comm->timeout_s, err);
    return TSRNN_OK;
}

static enum tsrnn_status gloo_broadcast(struct tsrnn_comm *comm, void *buf, size_t nbytes, int root)
{
    char err[GLOO_ERR_NBYTES];
    if (tsrnn_gloo_broadcast(comm->state, buf, nbytes, root, err, sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM,
                           "rank %d: broadcast of %zu bytes from rank %d failed (timeout %g s): "
                           "%s",
                           comm->rank, nbytes, root, comm->timeout_s, err);
    return TSRNN_OK;
}

static enum tsrnn_status gloo_barrier(struct tsrnn_comm *comm)
{
    char err[GLOO_ERR_NBYTES];
    if (tsrnn_gloo_barrier(comm->state, err, sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "rank %d: barrier failed (timeout %g s): %s", comm->rank,
                           comm->timeout_s, err);
    return TSRNN_OK;
}

static void gloo_abort(struct tsrnn_comm *comm)
{
    tsrnn_gloo_abort(comm->state);
}

static void gloo_close(struct tsrnn_comm *comm)
{
    tsrnn_gloo_close(comm->state);
}

static const struct tsrnn_comm_backend gloo_backend = {
    .name = "gloo",
    .open = gloo_open,
    .allreduce_sum = gloo_allreduce_sum,
    .broadcast = gloo_broadcast,
    .barrier = gloo_barrier,
    .abort = gloo_abort,
    .close = gloo_close,
};
#endif

/* Every backend tsrnn knows, with the table of this build (NULL when it was built without). */
static const struct {
    const char *name;
    const struct tsrnn_comm_backend *backend;
    const char *needs; /* what a build needs for it */
} backends[] = {
    { "local", &local_backend, NULL },
#if TSRNN_HAVE_GLOO
    { "gloo", &gloo_backend, "libgloo-dev" },
#else
    { "gloo", NULL, "libgloo-dev" },
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
    return i >= 0 && backends[i].backend != NULL;
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
    if (!backends[i].backend)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm: backend \"%s\" is not in this build: it was built without %s "
                           "(install it and rebuild)%s",
                           name, backends[i].needs,
                           opt->backend ? "" : "; a world of more than 1 rank needs it");
    *backend = backends[i].backend;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_comm_open(struct tsrnn_comm **comm, const struct tsrnn_comm_options *opt)
{
    *comm = NULL;
    const struct tsrnn_comm_backend *backend = NULL;
    TSRNN_TRY(check_options(opt));
    TSRNN_TRY(pick_backend(&backend, opt));
    struct tsrnn_comm *c = malloc(sizeof(*c));
    if (!c)
        return tsrnn_error(TSRNN_ERR_NOMEM, "comm: out of memory");
    *c = (struct tsrnn_comm){
        .backend = backend,
        .rank = opt->rank,
        .world_size = opt->world_size,
        .timeout_s = opt->timeout_s,
    };
    enum tsrnn_status status = backend->open(c, opt);
    if (status != TSRNN_OK) {
        free(c);
        return status;
    }
    *comm = c;
    return TSRNN_OK;
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

static enum tsrnn_status note_failure(struct tsrnn_comm *comm, enum tsrnn_status status)
{
    if (status != TSRNN_OK)
        comm->failed = true;
    return status;
}

enum tsrnn_status tsrnn_comm_allreduce_sum(struct tsrnn_comm *comm, void *buf, size_t count,
                                           enum tsrnn_comm_dtype dtype)
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
    return note_failure(comm, comm->backend->allreduce_sum(comm, buf, count, dtype));
}

enum tsrnn_status tsrnn_comm_broadcast(struct tsrnn_comm *comm, void *buf, size_t nbytes, int root)
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
    return note_failure(comm, comm->backend->broadcast(comm, buf, nbytes, root));
}

enum tsrnn_status tsrnn_comm_barrier(struct tsrnn_comm *comm)
{
    TSRNN_TRY(check_live(comm, "barrier"));
    return note_failure(comm, comm->backend->barrier(comm));
}

void tsrnn_comm_abort(struct tsrnn_comm *comm)
{
    if (!comm || comm->aborted)
        return;
    comm->aborted = true;
    comm->backend->abort(comm);
}

void tsrnn_comm_close(struct tsrnn_comm *comm)
{
    if (!comm)
        return;
    if (!comm->failed && !comm->aborted && comm->world_size > 1 &&
        comm->backend->barrier(comm) != TSRNN_OK)
        tsrnn_error_clear(); /* a peer already gone: nothing left to deliver to it */
    comm->backend->close(comm);
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
