/* The gloo comm backend (backend.h), C side: checks what only Gloo needs, turns the timeout
 * into Gloo's milliseconds, and passes the calls to the C++ shim (gloo_shim.h, gloo.cc),
 * whose error text becomes the message (comm.c puts the rank and the call in front). */
#include <math.h>
#include <sys/stat.h>

#include "backend.h"
#include "gloo_shim.h"

enum {
    GLOO_ERR_NBYTES = 1024
};

static enum tsrnn_status gloo_open(void **state, const struct tsrnn_comm_options *opt)
{
    *state = NULL;
    const char *dir = opt->rendezvous + 5; /* "file:<dir>", as comm.c checked */
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rendezvous folder %s does not exist (the launcher creates it before "
                           "starting the ranks)",
                           dir);
    const char *host = opt->host ? opt->host : "127.0.0.1";
    if (host[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE, "the comm host is empty: give an address to listen "
                                            "on, or none for 127.0.0.1");
    /* Rounded up: 0 ms would mean "no timeout" to Gloo. */
    long long timeout_ms = (long long)ceil(opt->timeout_s * 1000.0);
    char err[GLOO_ERR_NBYTES];
    struct tsrnn_gloo *gloo;
    if (tsrnn_gloo_open(&gloo, opt->rank, opt->world_size, dir, host, timeout_ms, err,
                        sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "%s", err);
    *state = gloo;
    return TSRNN_OK;
}

static enum tsrnn_status gloo_allreduce_sum(void *state, void *buf, size_t count,
                                            enum tsrnn_comm_dtype dtype)
{
    char err[GLOO_ERR_NBYTES];
    if (tsrnn_gloo_allreduce_sum(state, buf, count, dtype == TSRNN_COMM_F64, err, sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "%s", err);
    return TSRNN_OK;
}

static enum tsrnn_status gloo_broadcast(void *state, void *buf, size_t nbytes, int root)
{
    char err[GLOO_ERR_NBYTES];
    if (tsrnn_gloo_broadcast(state, buf, nbytes, root, err, sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "%s", err);
    return TSRNN_OK;
}

static enum tsrnn_status gloo_barrier(void *state)
{
    char err[GLOO_ERR_NBYTES];
    if (tsrnn_gloo_barrier(state, err, sizeof(err)) != 0)
        return tsrnn_error(TSRNN_ERR_COMM, "%s", err);
    return TSRNN_OK;
}

static void gloo_abort(void *state)
{
    tsrnn_gloo_abort(state);
}

static void gloo_close(void *state)
{
    tsrnn_gloo_close(state);
}

const struct tsrnn_comm_backend tsrnn_comm_gloo_backend = {
    .name = "gloo",
    .needs_rendezvous = true,
    .open = gloo_open,
    .allreduce_sum = gloo_allreduce_sum,
    .broadcast = gloo_broadcast,
    .barrier = gloo_barrier,
    .abort = gloo_abort,
    .close = gloo_close,
};
