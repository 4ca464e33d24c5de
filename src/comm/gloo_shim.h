/* The C face of src/comm/gloo.cc: Gloo (C++, Debian's libgloo-dev) behind plain C types, for
 * the gloo entry of comm.c's backend table.
 *
 * Every function returns 0 on success and -1 on failure; on failure it writes one line to
 * `err` (at most `err_nbytes` bytes, always terminated) and never lets a C++ exception out.
 * The messages are Gloo's own ("[./gloo/transport/tcp/pair.cc:598] Connection closed by
 * peer"), except that tsrnn_gloo_open() names the ranks that never joined the rendezvous;
 * comm.c prefixes them with the rank and the collective.
 */
#ifndef TSRNN_GLOO_SHIM_H
#define TSRNN_GLOO_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tsrnn_gloo;

/* Creates the TCP device on `host`, publishes this rank in a FileStore in `store_dir` (an
 * existing folder) and connects to every other rank. `timeout_ms` (> 0) bounds the whole
 * rendezvous and later each collective. */
int tsrnn_gloo_open(struct tsrnn_gloo **gloo, int rank, int world_size, const char *store_dir,
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
