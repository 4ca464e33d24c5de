/* NCCL's unique id from rank 0 to every rank through the rendezvous store (store.h), the
 * bootstrap of the nccl backend under tsrnn-launch (DESIGN.md §9). Compiled in every build,
 * with or without NCCL: the id is an opaque blob here, so the exchange, its deadline and its
 * errors are tested on machines without a GPU (tests/test_store.c). */
#include <stdio.h>

#include "backend.h"
#include "store.h"

#define ID_KEY "nccl-id"

/* Rank 0: the id, published whole or not at all (the store renames a complete file over the
 * key). */
static enum tsrnn_status
publish_id(struct tsrnn_store *store, void *id, size_t nbytes,
           enum tsrnn_status (*generate)(void *id, size_t nbytes, void *arg), void *arg)
{
    TSRNN_TRY(generate(id, nbytes, arg));
    return tsrnn_store_set(store, ID_KEY, id, nbytes);
}

/* The other ranks. A value longer than the id fails the get with TSRNN_ERR_COMM and its length
 * in `got`, a missing key with TSRNN_ERR_COMM and 0; a shorter value does not fail it. */
static enum tsrnn_status read_id(struct tsrnn_store *store, void *id, size_t nbytes)
{
    size_t got = 0;
    enum tsrnn_status status = tsrnn_store_get(store, ID_KEY, id, nbytes, &got);
    if (status == TSRNN_ERR_COMM && got <= nbytes)
        return tsrnn_error(TSRNN_ERR_COMM,
                           "rank 0 did not publish NCCL's unique id (key \"" ID_KEY "\") in %s "
                           "within %g s: it died, is stalled, or never started",
                           store->dir, store->timeout_s);
    if (status != TSRNN_OK && status != TSRNN_ERR_COMM)
        return status;
    if (got != nbytes)
        return tsrnn_error(TSRNN_ERR_COMM,
                           "the NCCL unique id in %s has %zu bytes, not %zu: the folder holds "
                           "another program's files, or rank 0 runs another tsrnn",
                           store->dir, got, nbytes);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_comm_nccl_id_exchange(
    void *id, size_t nbytes, int rank, const char *rendezvous, double timeout_s,
    enum tsrnn_status (*generate)(void *id, size_t nbytes, void *arg), void *arg)
{
    struct tsrnn_store store;
    TSRNN_TRY(tsrnn_store_open(&store, rendezvous, timeout_s));
    enum tsrnn_status status =
        rank == 0 ? publish_id(&store, id, nbytes, generate, arg) : read_id(&store, id, nbytes);
    tsrnn_store_close(&store);
    return status;
}
