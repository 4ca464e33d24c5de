/* The comm backend table (private to src/comm/; DESIGN.md §9): what a backend implements
 * for comm.c, which registers every backend in one table and dispatches the calls of
 * include/tsrnn/comm.h to it.
 *
 * What the dispatcher guarantees, so that a backend checks none of it:
 * - open() gets checked options (rank in the world, a timeout > 0 and <= 1e6 s) and, when
 *   needs_rendezvous is set, a rendezvous of the form "file:<dir>".
 * - A collective is called with valid arguments (a root in the world, a known dtype), never
 *   with 0 elements, and never after a failed collective or an abort.
 * - abort() is called at most once; close() once, last, also after abort().
 *
 * What a backend does in return:
 * - Every wait ends within the timeout of the options (a peer that died or never came is an
 *   error, not a hang).
 * - A failure returns TSRNN_ERR_* with a message that says what went wrong and no more: the
 *   dispatcher puts the rank and the call in front ("rank 1: allreduce of 483 floats failed
 *   (timeout 60 s): " + the backend's message), the same for every backend.
 */
#ifndef TSRNN_COMM_BACKEND_H
#define TSRNN_COMM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/comm.h"

struct tsrnn_comm_backend {
    const char *name;      /* as in tsrnn_comm_options.backend */
    bool needs_rendezvous; /* open() reads opt->rendezvous */
    /* Collectives take device memory of opt->compute (NCCL); otherwise host memory. The
     * dispatcher stages a buffer that is in the other place. */
    bool device_buffers;
    /* Optional (NULL: always): whether this machine can run it, asked before any worker
     * starts (the nccl backend: libnccl loads). On false fills `why`. */
    bool (*usable)(char *why, size_t why_nbytes);
    /* Joins the world; on success *state is the backend's (any value, NULL included). On
     * failure *state is NULL, unless the rank joined a job whose peers only abort() can
     * release (mpi: MPI's world is not the options'): then the dispatcher keeps the state in
     * a failed communicator, for the caller to abort() and close(). */
    enum tsrnn_status (*open)(void **state, const struct tsrnn_comm_options *opt);
    enum tsrnn_status (*allreduce_sum)(void *state, void *buf, size_t count,
                                       enum tsrnn_comm_dtype dtype);
    /* Optional (device_buffers only): the sum queued on the compute stream and left to run
     * there, so that it can be captured into a graph; `health` then says, without waiting,
     * whether the communicator has failed (a peer gone). */
    enum tsrnn_status (*allreduce_sum_queued)(void *state, void *buf, size_t count,
                                              enum tsrnn_comm_dtype dtype);
    enum tsrnn_status (*health)(void *state);
    enum tsrnn_status (*broadcast)(void *state, void *buf, size_t nbytes, int root);
    enum tsrnn_status (*barrier)(void *state);
    /* Tears the connections down without waiting; close() still follows. A backend that can
     * only stop its peers by ending the job (MPI_Abort) does so with exit_code and does not
     * return. */
    void (*abort)(void *state, int exit_code);
    /* Frees `state`. Never waits for a peer (the dispatcher's closing barrier did). */
    void (*close)(void *state);
};

/* The backends linked into libtsrnn, each in its own file; comm.c's table says which ones
 * this build has. */
extern const struct tsrnn_comm_backend tsrnn_comm_local_backend; /* local.c */
extern const struct tsrnn_comm_backend tsrnn_comm_nccl_backend;  /* nccl.c */

/* The backends whose libraries are heavy at start-up (Gloo: libstdc++, hiredis, ibverbs, ...;
 * Open MPI: its runtime, PMIx, hwloc, ...) are modules instead: tsrnn-comm-gloo.so (gloo.c,
 * gloo.cc) and tsrnn-comm-mpi.so (mpi.c), linked against their library and loaded with
 * dlopen only when the backend is chosen (module.c), so that a program that never uses them
 * never maps them. A module holds its backend's files only: every libtsrnn function it calls
 * (tsrnn_error, the clock, the store) is the program's, which exports them (meson.build's
 * module_host_symbols); one copy of the library's state, the thread's error message
 * included.
 *
 * A module exports one symbol, tsrnn_comm_NAME_module: a function returning its table. */
#define TSRNN_COMM_MODULE_ABI 2 /* raised when this header or comm.h's options change */

struct tsrnn_comm_module {
    int abi; /* TSRNN_COMM_MODULE_ABI of the module's build */
    const struct tsrnn_comm_backend *backend;
    /* The mpi module's NCCL bootstrap hooks (tsrnn_comm_mpi_hold() ... below); NULL in others. */
    enum tsrnn_status (*mpi_hold)(int rank, int world_size);
    enum tsrnn_status (*mpi_bootstrap_broadcast)(void *buf, size_t nbytes, double timeout_s);
    void (*mpi_release)(void);
};

#define TSRNN_COMM_MODULE_EXPORT __attribute__((visibility("default")))
TSRNN_COMM_MODULE_EXPORT const struct tsrnn_comm_module *tsrnn_comm_gloo_module(void);
TSRNN_COMM_MODULE_EXPORT const struct tsrnn_comm_module *tsrnn_comm_mpi_module(void);

/* module.c: the module of backend `name`, loaded on the first call (the later ones return the
 * same table). A module that is missing or does not load is TSRNN_ERR_USAGE (exit 2: this
 * machine cannot run the backend) with a message that names the module, every path tried and
 * the loader's reason, and says what to install (`installs`: the library the module needs). */
enum tsrnn_status tsrnn_comm_module_load(const struct tsrnn_comm_module **module, const char *name,
                                         const char *installs);

/* nccl_id.c (every build): the nccl backend's bootstrap under tsrnn-launch. Rank 0 calls
 * generate(id, nbytes, arg) (ncclGetUniqueId) and publishes the `nbytes` of `id` under the key
 * "nccl-id" of the store `rendezvous`; every other rank waits for them, until timeout_s after
 * the call, and copies them into `id`. TSRNN_ERR_COMM when rank 0 never published within the
 * deadline ("rank 0 did not publish NCCL's unique id ... within 5 s") or published a value
 * of another size; TSRNN_ERR_USAGE/IO as tsrnn_store_open() and tsrnn_store_set() say. */
enum tsrnn_status tsrnn_comm_nccl_id_exchange(
    void *id, size_t nbytes, int rank, const char *rendezvous, double timeout_s,
    enum tsrnn_status (*generate)(void *id, size_t nbytes, void *arg), void *arg);

/* comm.c, for a GPU backend under mpirun or srun (DESIGN.md §9: "NCCL's unique id from rank 0
 * by MPI_Bcast"): the mpi module's hooks (the first call loads it). The nccl backend's open()
 * uses them when the world is an MPI one (struct tsrnn_world.mpi; its comm options then carry
 * no rendezvous):
 *     tsrnn_comm_mpi_hold(rank, world_size);        MPI_Init once, checked against the world
 *     if (rank == 0) ncclGetUniqueId(&id);
 *     tsrnn_comm_mpi_bootstrap_broadcast(&id, sizeof(id), timeout_s);   rank 0's id to all
 *     ... cudaSetDevice(world.device_index); ncclCommInitRankConfig(...) ...
 *     tsrnn_comm_mpi_release();                     in close(): MPI_Finalize by the last holder
 * MPI then carries nothing else: NCCL does the collectives. The broadcast is bounded by
 * timeout_s like every collective of the mpi backend. */
enum tsrnn_status tsrnn_comm_mpi_hold(int rank, int world_size);
enum tsrnn_status tsrnn_comm_mpi_bootstrap_broadcast(void *buf, size_t nbytes, double timeout_s);
void tsrnn_comm_mpi_release(void);

#endif
