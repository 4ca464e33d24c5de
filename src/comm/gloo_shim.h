/* The C face of src/comm/gloo.cc: Gloo (C++, Debian's libgloo-dev) behind plain C types, for
 * gloo.c, the C side of the gloo backend.
 *
 * Every function returns 0 on success and -1 on failure; on failure it writes one line to
 * `err` (at most `err_nbytes` bytes, always terminated) and never lets a C++ exception out.
 * The messages are Gloo's own ("[./gloo/transport/tcp/pair.cc:598] Connection closed by
 * peer"), or the store's during the rendezvous; gloo.c and comm.c add who and what.
 */
#ifndef TSRNN_GLOO_SHIM_H
#define TSRNN_GLOO_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tsrnn_gloo;
struct tsrnn_store;

/* Creates the TCP device on `host` and connects to every other rank, exchanging addresses
 * through `store` (store.h, under keys "gloo.*"), whose deadline bounds the rendezvous.
 * `timeout_ms` (> 0) bounds each later collective. */
int tsrnn_gloo_open(struct tsrnn_gloo **gloo, int rank, int world_size, struct tsrnn_store *store,
                    const char *host, long long timeout_ms, char *err, size_t err_nbytes);

/* In-place sum of `count` (> 0) floats (`is_f64` 0) or doubles (`is_f64` 1). */
int tsrnn_gloo_allreduce_sum(struct tsrnn_gloo *gloo, void *buf, size_t count, int is_f64,
                             char *err, size_t err_nbytes);

/* `nbytes` (> 0) of `buf` from `root` to the other ranks. */
int tsrnn_gloo_broadcast(struct tsrnn_gloo *gloo, void *buf, size_t nbytes, int root, char *err,
                         size_t err_nbytes);

int tsrnn_gloo_barrier(struct tsrnn_gloo *gloo, char *err, size_t err_nbytes);

/* Closes every connection at once (peers see it close) and frees the context; later calls
 * fail without touching the network. */
void tsrnn_gloo_abort(struct tsrnn_gloo *gloo);

/* Closes the connections plainly (peers read what was sent, then the end) and frees;
 * accepts NULL. Never waits for a peer. */
void tsrnn_gloo_close(struct tsrnn_gloo *gloo);

#ifdef __cplusplus
}
#endif

#endif
