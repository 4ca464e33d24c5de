/* The PJRT runtime of the pjrt compute backend: one XLA plugin (a shared library exporting
 * GetPjrtApi: libtpu.so, XLA's CPU plugin, ...) loaded with dlopen, one client, its devices,
 * programs compiled from StableHLO text (cached by text within the process), device buffers
 * and executions. Every PJRT error becomes a tsrnn status whose message carries the plugin's.
 *
 * Also the client-less path: a TPU topology described by name ("v5e:2x2") and a program
 * compiled for it ahead of time, which libtpu does on a machine without a TPU.
 */
#ifndef TSRNN_COMPUTE_PJRT_RUNTIME_H
#define TSRNN_COMPUTE_PJRT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"

#define TSRNN_PJRT_MAX_DEVICES 64

struct tsrnn_pjrt;         /* a loaded plugin, with or without a client */
struct tsrnn_pjrt_program; /* a compiled program, owned by the runtime's cache */
struct tsrnn_pjrt_buffer;  /* one array on one device */

/* Where the plugin is looked for: `path` when not NULL or "", else $TSRNN_PJRT_PLUGIN, else
 * $TPU_LIBRARY_PATH, else "libtpu.so" through the dynamic loader's search (as JAX and
 * PyTorch/XLA look for it). Writes the choice into `out`. */
void tsrnn_pjrt_plugin_path(char *out, size_t out_nbytes, const char *path);

/* Loads the plugin and initialises it; with `client`, creates a client (cpu_device_count > 0
 * asks XLA's CPU plugin for that many devices). TSRNN_ERR_USAGE when the library cannot be
 * loaded or lacks GetPjrtApi, TSRNN_ERR_IO with the plugin's message when it fails. */
enum tsrnn_status tsrnn_pjrt_open(struct tsrnn_pjrt **rt, const char *plugin_path, bool client,
                                  int cpu_device_count);
/* Destroys programs, the client and closes the plugin; accepts NULL. Buffers first. */
void tsrnn_pjrt_close(struct tsrnn_pjrt *rt);

/* The client's platform ("cpu", "tpu", ...) and addressable device count. */
const char *tsrnn_pjrt_platform(const struct tsrnn_pjrt *rt);
size_t tsrnn_pjrt_device_count(const struct tsrnn_pjrt *rt);
/* "PJRT API 0.81" of the plugin. */
void tsrnn_pjrt_api_version(const struct tsrnn_pjrt *rt, int *major, int *minor);

/* Compiles `text` (StableHLO, MLIR text) for replica_count replicas on the client, or
 * returns the program compiled from the same text before. */
enum tsrnn_status tsrnn_pjrt_compile(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_program **prog,
                                     const char *text, int replica_count);
/* Compiles done by this runtime (cache misses) and the seconds they took. */
void tsrnn_pjrt_compile_stats(const struct tsrnn_pjrt *rt, size_t *count, double *seconds);
/* How many programs the cache holds (tests check the cache works). */
size_t tsrnn_pjrt_program_count(const struct tsrnn_pjrt *rt);

/* Compiles `text` for the topology `topology_name` without a client (ahead of time),
 * discarding the result: the check that a program is accepted by a TPU compiler. */
enum tsrnn_status tsrnn_pjrt_compile_for_topology(struct tsrnn_pjrt *rt, const char *topology_name,
                                                  const char *text, int replica_count);

/* An f32 array of `dims` on device `device_idx`, copied from host memory (which may be
 * reused when this returns). */
enum tsrnn_status tsrnn_pjrt_buffer_upload(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_buffer **buf,
                                           size_t device_idx, const float *data,
                                           const int64_t *dims, size_t rank);
/* Copies the whole array to host memory: nbytes must be its size. */
enum tsrnn_status tsrnn_pjrt_buffer_download(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_buffer *buf,
                                             void *dst, size_t nbytes);
void tsrnn_pjrt_buffer_destroy(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_buffer *buf);

/* Runs the program on replica_count devices: args[r] (arg_count) in, outs[r] (out_count)
 * out, new buffers the caller destroys. Arguments the program aliases to outputs are
 * donated: their memory is gone, the caller still destroys the handles. Waits for the end. */
enum tsrnn_status tsrnn_pjrt_execute(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_program *prog,
                                     size_t replica_count, struct tsrnn_pjrt_buffer *const *args,
                                     size_t arg_count, struct tsrnn_pjrt_buffer **outs,
                                     size_t out_count);

/* The runtime of a pjrt compute context (src/compute/pjrt/backend.c), for tests and reports. */
struct tsrnn_compute;
struct tsrnn_pjrt *tsrnn_pjrt_of(struct tsrnn_compute *ctx);

#endif
