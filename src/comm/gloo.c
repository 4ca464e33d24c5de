/* The gloo comm backend (backend.h), C side of the module tsrnn-comm-gloo.so: the rendezvous
 * through the store (store.h) and what is said when it fails, what only Gloo needs checked,
 * and the calls to the C++ shim (gloo_shim.h, gloo.cc), whose error text becomes the message
 * (comm.c puts the rank and the call in front). */
#include <math.h>
#include <stdio.h>

#include "backend.h"
#include "gloo_shim.h"
#include "store.h"

enum {
    GLOO_ERR_NBYTES = 1024,
    KEY_NBYTES = 32,
    /* How much of the list of missing ranks a message shows. */
    MISSING_NBYTES = 256,
};

/* The key that says "this rank has reached the rendezvous", written before Gloo's own keys:
 * what a rank that timed out reads to name the ones that never came. */
static void joined_key(char *key, size_t key_nbytes, int rank)
{
    snprintf(key, key_nbytes, "joined.%d", rank);
}

static enum tsrnn_status join(struct tsrnn_store *store, int rank)
{
    char key[KEY_NBYTES];
    joined_key(key, sizeof(key), rank);
    bool found;
    TSRNN_TRY(tsrnn_store_has(store, key, &found));
    if (found)
        return tsrnn_error(TSRNN_ERR_COMM,
                           "rank %d already joined the rendezvous in %s: a folder serves one run "
                           "only, use a fresh one",
                           rank, store->dir);
    return tsrnn_store_set(store, key, "1", 1);
}

/* The rendezvous failed with the shim's `err`: names the ranks that never came when it ran
 * out of time waiting, else passes the reason on (a peer that came and died, a bad host). */
static enum tsrnn_status rendezvous_failed(struct tsrnn_store *store, int world_size,
                                           const char *err)
{
    char list[MISSING_NBYTES];
    size_t used = 0;
    int missing = 0;
    list[0] = '\0';
    bool out_of_time = tsrnn_clock_now_s() >= store->deadline_s;
    for (int r = 0; out_of_time && r < world_size; r++) {
        char key[KEY_NBYTES];
        joined_key(key, sizeof(key), r);
        bool found;
        if (tsrnn_store_has(store, key, &found) != TSRNN_OK) {
            missing = 0; /* who came is unknown: give Gloo's reason */
            break;
        }
        if (found)
            continue;
        if (used < sizeof(list)) {
            int n = snprintf(list + used, sizeof(list) - used, "%s%d", missing ? ", " : "", r);
            used += n > 0 ? (size_t)n : 0;
        }
        missing++;
    }
    if (missing == 0)
        return tsrnn_error(TSRNN_ERR_COMM, "could not connect to the other ranks through %s: %s",
                           store->dir, err);
    return tsrnn_error(TSRNN_ERR_COMM, "rank%s %s%s did not join the rendezvous in %s within %g s",
                       missing == 1 ? "" : "s", list, used >= sizeof(list) ? "..." : "", store->dir,
                       store->timeout_s);
}

/* The loopback address of a rank that was given none: 127.1.0.0 + rank, one of its own.
 * Gloo binds every socket a rank connects from to its device's address with port 0, and the
 * kernel gives bind() ports from half the ephemeral range (about 14000 of 32768-60999) per
 * address: with one address for all, a full mesh of N ranks (N(N-1)/2 connections) ran out
 * at about 170 ranks ("bind: Address already in use"). On an address of its own a rank uses N
 * ports. The whole of 127.0.0.0/8 is the loopback interface's, in the launcher's network
 * namespace as on the host. */
static void rank_address(int rank, char *out, size_t capacity)
{
    snprintf(out, capacity, "127.1.%d.%d", (rank >> 8) & 255, rank & 255);
}

static enum tsrnn_status gloo_open(void **state, const struct tsrnn_comm_options *opt)
{
    *state = NULL;
    char own[32];
    rank_address(opt->rank, own, sizeof(own));
    const char *host = opt->host ? opt->host : own;
    if (host[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE, "the comm host is empty: give an address to listen "
                                            "on, or none for one of 127.0.0.0/8");
    /* The store's deadline starts here: it bounds the whole rendezvous. */
    struct tsrnn_store store;
    TSRNN_TRY(tsrnn_store_open(&store, opt->rendezvous, opt->timeout_s));
    enum tsrnn_status status = join(&store, opt->rank);
    if (status != TSRNN_OK)
        goto out;
    /* Rounded up: 0 ms would mean "no timeout" to Gloo. */
    long long timeout_ms = (long long)ceil(opt->timeout_s * 1000.0);
    char err[GLOO_ERR_NBYTES];
    struct tsrnn_gloo *gloo;
    if (tsrnn_gloo_open(&gloo, opt->rank, opt->world_size, &store, host, timeout_ms, err,
                        sizeof(err)) != 0) {
        status = rendezvous_failed(&store, opt->world_size, err);
        goto out;
    }
    *state = gloo;
out:
    tsrnn_store_close(&store);
    return status;
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

static void gloo_abort(void *state, int exit_code)
{
    (void)exit_code; /* the peers see the connections close */
    tsrnn_gloo_abort(state);
}

static void gloo_close(void *state)
{
    tsrnn_gloo_close(state);
}

static const struct tsrnn_comm_backend gloo_backend = {
    .name = "gloo",
    .needs_rendezvous = true,
    .device_buffers = false, /* host memory: the dispatcher stages device buffers */
    .open = gloo_open,
    .allreduce_sum = gloo_allreduce_sum,
    .broadcast = gloo_broadcast,
    .barrier = gloo_barrier,
    .abort = gloo_abort,
    .close = gloo_close,
};

/* The module's entry (backend.h). */
const struct tsrnn_comm_module *tsrnn_comm_gloo_module(void)
{
    static const struct tsrnn_comm_module module = {
        .abi = TSRNN_COMM_MODULE_ABI,
        .backend = &gloo_backend,
    };
    return &module;
}
