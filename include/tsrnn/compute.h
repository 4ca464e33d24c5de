/* tsrnn compute: the device a model trains on, behind one backend table (DESIGN.md §9).
 *
 *     cpu    this process's cores: the reference loops, packed AVX2 products, OpenBLAS
 *     cuda   one NVIDIA GPU: cuDNN's RNN API, cuBLAS, own kernels (src/compute/cuda/)
 *     pjrt   any XLA device through a PJRT plugin (libtpu.so for TPUs, XLA's CPU plugin):
 *            the training step compiled from StableHLO as one program
 *
 * A compute context owns its device's memory: the model's parameters, gradients, Adam's
 * moments and activations live there, and the rest of tsrnn reaches host copies only through
 * tsrnn_compute_upload() / tsrnn_compute_download(). A pointer into device memory ("device
 * pointer" below) may be offset and passed around, but only the backend dereferences it; on
 * the CPU backend it is an ordinary host pointer. The model's operations themselves are
 * private to the backends (src/compute/backend.h) and reached through include/tsrnn/model.h.
 *
 * One thread drives a context; the backend may use more internally (the CPU backend's
 * num_threads, a GPU's stream).
 */
#ifndef TSRNN_COMPUTE_H
#define TSRNN_COMPUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/core.h"

enum tsrnn_compute_kind {
    TSRNN_COMPUTE_CPU,
    TSRNN_COMPUTE_CUDA,
    TSRNN_COMPUTE_PJRT,
};

struct tsrnn_compute_options {
    enum tsrnn_compute_kind kind;
    int thread_count; /* cpu: threads for the recurrence and large products (>= 1) */
    int device_index; /* cuda: which visible GPU (0 under tsrnn-launch: it sets
                         CUDA_VISIBLE_DEVICES to the worker's one) */
    /* pjrt: the plugin (NULL: $TSRNN_PJRT_PLUGIN, $TPU_LIBRARY_PATH, libtpu.so), the platform
     * it must be (NULL: any; "tpu" for accelerator = tpu), replicas of the training step
     * inside this process (one per device; 0 = 1, -1 = every device), and the CPU plugin's
     * device count (0: its default) */
    const char *plugin_path;
    const char *platform;
    int replica_count;
    int cpu_device_count;
};

struct tsrnn_compute;

/* The backend's name as the config and messages spell it: "cpu", "cuda", "pjrt". */
const char *tsrnn_compute_kind_name(enum tsrnn_compute_kind kind);

/* Whether this build has the backend, without asking the machine (no CUDA call: the launcher
 * uses it before it forks). */
bool tsrnn_compute_compiled(enum tsrnn_compute_kind kind);

/* Whether this build has the backend and this machine can run it. On false, `why` (when not
 * NULL) gets a sentence a user can act on ("this tsrnn was built without CUDA ..."). */
bool tsrnn_compute_available(enum tsrnn_compute_kind kind, char *why, size_t why_nbytes);

/* Starts a context. TSRNN_ERR_USAGE for a backend this build or machine lacks (the message
 * says why), TSRNN_ERR_NOMEM, or the device's own failure. Sets *compute to NULL on failure. */
enum tsrnn_status tsrnn_compute_create(struct tsrnn_compute **compute,
                                       const struct tsrnn_compute_options *options);

/* Frees the context; accepts NULL. Every buffer must have been freed first. */
void tsrnn_compute_destroy(struct tsrnn_compute *compute);

/* The backend a context runs on (the banner's "GPU used"). */
enum tsrnn_compute_kind tsrnn_compute_kind(const struct tsrnn_compute *compute);

/* Whether the context's device pointers are host memory (the CPU backend): a comm backend
 * can then hand them to the network as they are. */
bool tsrnn_compute_host_memory(const struct tsrnn_compute *compute);

/* One line on what the context computes with, for the banner (CPU: "CPU kernels AVX2 (...),
 * 1 thread; BLAS OpenBLAS 0.3.21, core Haswell (OPENBLAS_CORETYPE=Haswell)"; with AVX-512
 * kernels "...; BLAS OpenBLAS (not loaded: no product goes to it with AVX-512 kernels)").
 * Returns what snprintf does. */
size_t tsrnn_compute_describe(const struct tsrnn_compute *compute, char *dst, size_t dst_nbytes);

/* The CPU backend's BLAS on this machine. OpenBLAS releases older than the CPU run generic
 * SSE kernels on it (Debian 12's 0.3.21 on recent Xeons) unless OPENBLAS_CORETYPE names a
 * core, which OpenBLAS reads once, when the process loads it (these functions load it, below
 * AVX-512 kernels; nothing else does until a product goes to it):
 *   tsrnn_compute_cpu_blas_coretype: the OPENBLAS_CORETYPE that gives OpenBLAS this CPU's
 *     vector level ("SkylakeX", "Haswell"), or NULL when it has it already, when there is no
 *     BLAS, or when tsrnn's kernels are AVX-512 (then no product goes to BLAS, and results do
 *     not depend on its core); nothing in tsrnn sets the variable (a rank must compute the
 *     same under tsrnn-launch and mpirun);
 *   tsrnn_compute_cpu_blas_warning: a sentence saying so, with what it costs and what to
 *     do; or that OpenBLAS cannot be loaded (which library, what to install; tsrnn's loops
 *     take its products); or NULL. */
const char *tsrnn_compute_cpu_blas_coretype(void);
const char *tsrnn_compute_cpu_blas_warning(void);

/* The queue a comm backend orders its work on (a cudaStream_t), or NULL (CPU). */
void *tsrnn_compute_stream(const struct tsrnn_compute *compute);

/* The TPU cores the context trains on (pjrt on a "tpu" platform: its replicas), else 0;
 * for Lightning's "TPU available: True, using: N TPU cores". */
size_t tsrnn_compute_tpu_cores(const struct tsrnn_compute *compute);

/* A GPU context's device for the end-of-training summary: its name, and the memory in use
 * and in all, in bytes, as the driver counts them for the whole device (this process's
 * context, buffers and workspaces, and any other process's on the same GPU); read at the end
 * of training, when every buffer of the run is still allocated. false: not a GPU (cpu,
 * pjrt), or the driver could not say. */
bool tsrnn_compute_device_memory(const struct tsrnn_compute *compute, char *name,
                                 size_t name_nbytes, size_t *used_nbytes, size_t *total_nbytes);

/* Device memory: nbytes (> 0) uninitialised; free accepts NULL. */
enum tsrnn_status tsrnn_compute_alloc(struct tsrnn_compute *compute, void **buf, size_t nbytes);
void tsrnn_compute_free(struct tsrnn_compute *compute, void *buf);

/* Copies nbytes host -> device (upload) or device -> host (download); both complete before
 * they return. zero sets nbytes of device memory to 0. */
enum tsrnn_status tsrnn_compute_upload(struct tsrnn_compute *compute, void *dst, const void *src,
                                       size_t nbytes);
enum tsrnn_status tsrnn_compute_download(struct tsrnn_compute *compute, void *dst, const void *src,
                                         size_t nbytes);
enum tsrnn_status tsrnn_compute_zero(struct tsrnn_compute *compute, void *buf, size_t nbytes);

/* Waits for everything queued on the context; reports a device error that happened since. */
enum tsrnn_status tsrnn_compute_synchronize(struct tsrnn_compute *compute);

#endif
