/* The local comm backend (backend.h): a world of one rank, where every collective leaves the
 * buffer as it is (the sum over one rank is its own values) and nothing is ever waited for. */
#include "backend.h"

static enum tsrnn_status local_open(void **state, const struct tsrnn_comm_options *opt)
{
    *state = NULL;
    if (opt->world_size != 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "comm backend \"local\" runs a world of 1 rank, not %d: use gloo "
                           "(or leave the backend unset) for more",
                           opt->world_size);
    return TSRNN_OK;
}

static enum tsrnn_status local_allreduce_sum(void *state, void *buf, size_t count,
                                             enum tsrnn_comm_dtype dtype)
{
    (void)state, (void)buf, (void)count, (void)dtype;
    return TSRNN_OK;
}

static enum tsrnn_status local_broadcast(void *state, void *buf, size_t nbytes, int root)
{
    (void)state, (void)buf, (void)nbytes, (void)root;
    return TSRNN_OK;
}

static enum tsrnn_status local_barrier(void *state)
{
    (void)state;
    return TSRNN_OK;
}

static void local_abort(void *state, int exit_code)
{
    (void)state, (void)exit_code;
}

static void local_close(void *state)
{
    (void)state;
}

const struct tsrnn_comm_backend tsrnn_comm_local_backend = {
    .name = "local",
    .needs_rendezvous = false,
    .device_buffers = false,
    .open = local_open,
    .allreduce_sum = local_allreduce_sum,
    .broadcast = local_broadcast,
    .barrier = local_barrier,
    .abort = local_abort,
    .close = local_close,
};
