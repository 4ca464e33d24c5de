/* tsrnn comm: the collectives data-parallel training needs, over one backend table
 * (DESIGN.md §2 "Communication").
 *
 *     local   world size 1: every collective is a no-op (broadcast, barrier) or the identity
 *     gloo    CPU workers: Gloo over TCP (127.0.0.1 by default), rendezvous through the
 *             rendezvous store (src/comm/store.h: one file per key) in the launcher's private
 *             folder
 *     mpi     CPU ranks started by mpirun or srun: MPI_Iallreduce, MPI_Ibcast, MPI_Ibarrier
 *             polled against timeout_s; MPI_Init is the rendezvous (no folder)
 *     nccl    GPU workers, one per GPU: NCCL on the compute stream, non-blocking and polled
 *             against timeout_s; rank 0's unique id through the rendezvous store (or MPI)
 *
 * Each backend lives in its own file of src/comm/ behind the table of src/comm/backend.h;
 * comm.c checks the options and the arguments and dispatches to it, and words every failure
 * the same way ("rank 1: allreduce of 483 floats failed (timeout 60 s): <the backend's
 * reason>").
 *
 * Every call has a finite deadline (timeout_s): a peer that died is reported at once (its
 * TCP connection closes), a peer that is alive but silent after timeout_s. Either way the
 * call returns TSRNN_ERR_COMM with a message naming this rank, the collective, and the peer
 * when it is known; the communicator is then broken: the caller aborts it and stops (no
 * further collective may be issued). Collectives must be issued by every rank in the same
 * order with the same sizes; one thread per rank calls them.
 */
#ifndef TSRNN_COMM_H
#define TSRNN_COMM_H

#include <signal.h>
#include <stddef.h>

#include "tsrnn/compute.h"
#include "tsrnn/core.h"

/* Element types of a reduction (named apart from checkpoint.h's enum tsrnn_dtype). */
enum tsrnn_comm_dtype {
    TSRNN_COMM_F32,
    TSRNN_COMM_F64,
};

struct tsrnn_comm_options {
    int rank;       /* 0 .. world_size - 1 */
    int world_size; /* >= 1 */
    /* "file:<dir>": an existing private folder shared by this attempt's ranks and used by
     * nobody else (the launcher makes a fresh one per attempt). Not needed for world 1. */
    const char *rendezvous;
    const char *host; /* the address this rank listens on; NULL = a loopback address of its
                         own (gloo: 127.1.0.0 + rank, src/comm/gloo.c) */
    double timeout_s; /* > 0: the longest wait for the rendezvous and for each collective */
    /* "local", "gloo", "mpi", "nccl", or NULL: local for world 1, else gloo. The NULL default is for
     * library users; tsrnn-worker passes what the launcher chose (TSRNN_COMM_BACKEND,
     * include/tsrnn/world.h), and nothing else in tsrnn picks a backend. */
    const char *backend;
    /* The compute context whose device memory the *_device collectives take, and whose
     * stream (tsrnn_compute_stream) a device backend orders its work on. NULL: no device;
     * the *_device calls then take host memory. Not owned; it outlives the communicator. */
    struct tsrnn_compute *compute;
    /* The worker's SIGINT/SIGTERM flag (NULL: none). mpi: once it is set, the other ranks must
     * complete a collective that began with it set within a short grace (at least 2 s; twice
     * the longest collective cycle seen, at most timeout_s), or the collective fails
     * (TSRNN_ERR_COMM, "a rank is gone"): under srun, SIGTERM is also what the surviving
     * ranks get when a task dies (src/comm/mpi.c). The other backends see a dead peer by
     * themselves and ignore it. */
    const volatile sig_atomic_t *stop_requested;
};

struct tsrnn_comm;

/* Joins the world: for gloo, publishes this rank's address in the store and connects to
 * every other rank, waiting up to timeout_s for all of them ("rank 2 did not join the
 * rendezvous in <dir> within 5 s" names the ones missing), and returns only once every rank's
 * connections are up (a barrier ends it): a rank that aborts right after fails its peers'
 * next collective, not their connecting. TSRNN_ERR_USAGE for a bad option
 * or a backend this build lacks, TSRNN_ERR_COMM for a peer that failed or timed out. Sets
 * *comm to NULL on failure, except where this rank had already joined a job that only an
 * abort ends (mpi: MPI_Init met the peers, then MPI's world proved not to be the one of the
 * options, TSRNN_ERR_USAGE): then *comm is a failed communicator, to pass to
 * tsrnn_comm_abort_job() (after printing the error: it does not return) and close. A
 * rendezvous folder serves one open per rank. */
enum tsrnn_status tsrnn_comm_open(struct tsrnn_comm **comm, const struct tsrnn_comm_options *opt);

/* Sums `count` elements of `buf` over all ranks, in place; every rank gets the same sum, bit
 * for bit (each element is summed on one rank and copied to the others; the order of the
 * terms depends on the world size, so it may differ from a sequential sum in the last bits).
 * count 0 is a no-op. */
enum tsrnn_status tsrnn_comm_allreduce_sum(struct tsrnn_comm *comm, void *buf, size_t count,
                                           enum tsrnn_comm_dtype dtype);

/* Copies `nbytes` of `buf` from rank `root` to every other rank. nbytes 0 is a no-op. */
enum tsrnn_status tsrnn_comm_broadcast(struct tsrnn_comm *comm, void *buf, size_t nbytes, int root);

/* The same two collectives on device memory of options.compute: the model's gradients and
 * parameters, where the compute backend keeps them. A comm backend that takes device buffers
 * (NCCL) gets them as they are, on the compute stream; the others (local, gloo) get
 * them staged through host memory, except where the device's memory is host memory (the CPU
 * backend), which they take as it is: no copy. */
enum tsrnn_status tsrnn_comm_allreduce_sum_device(struct tsrnn_comm *comm, void *buf, size_t count,
                                                  enum tsrnn_comm_dtype dtype);
enum tsrnn_status tsrnn_comm_broadcast_device(struct tsrnn_comm *comm, void *buf, size_t nbytes,
                                              int root);

/* The training step's gradient reduction over this communicator (compute.h): the sum of
 * device memory of options.compute, queued on its stream where the backend can (NCCL:
 * device_queued, its completion and health watched when the step's results are read, within
 * timeout_s of the last progress), else complete when the call returns. */
void tsrnn_comm_step_reduce(struct tsrnn_comm *comm, struct tsrnn_step_reduce *reduce);

/* Seconds spent in allreduces that completed inside the call (the step's on host-staged
 * backends, validation's); queued ones run on the device's stream and are not counted. */
double tsrnn_comm_allreduce_seconds(const struct tsrnn_comm *comm);

/* Returns once every rank has called it (or fails within the timeout). */
enum tsrnn_status tsrnn_comm_barrier(struct tsrnn_comm *comm);

/* After an error (or to stop at once): tears the connections down without waiting for the
 * peers, so they fail fast instead of waiting out their timeout. Later collectives fail
 * (TSRNN_ERR_COMM) without touching the network; so do those after a failed collective.
 * Not safe to call while another thread is inside a collective of `comm`.
 * mpi: MPI can stop the peers only by ending the whole job, so this is MPI_Abort and does
 * not return (exit code 3 here; tsrnn_comm_abort_job() chooses it): print first. */
void tsrnn_comm_abort(struct tsrnn_comm *comm);

/* tsrnn_comm_abort(), and where the backend ends the job to stop the peers (mpi), the exit
 * code the launcher sees (core.h's TSRNN_EXIT_*). */
void tsrnn_comm_abort_job(struct tsrnn_comm *comm, int exit_code);

/* Frees the communicator; accepts NULL. A healthy one first waits (up to timeout_s) until
 * every rank has come to close it, as MPI_Finalize does: a collective may return on one rank
 * while its last messages to another are still queued (Gloo's halving-doubling sends a final
 * notification without waiting for it), and closing then would cut them off. A failed or
 * aborted one closes at once. */
void tsrnn_comm_close(struct tsrnn_comm *comm);

int tsrnn_comm_rank(const struct tsrnn_comm *comm);
int tsrnn_comm_world_size(const struct tsrnn_comm *comm);
const char *tsrnn_comm_backend_name(const struct tsrnn_comm *comm);

/* Whether this build has the backend `name` ("local" always; "gloo" with libgloo-dev; "mpi"
 * with libopenmpi-dev; "nccl" with the CUDA backend and NCCL's header). */
bool tsrnn_comm_backend_available(const char *name);

/* Whether this build has it and this machine can run it (the nccl backend: libnccl.so.2
 * loads; no CUDA call), asked before workers start. On false `why` says which. A module's
 * libraries (gloo, mpi) are checked when it is loaded (tsrnn_comm_open). */
bool tsrnn_comm_backend_usable(const char *name, char *why, size_t why_nbytes);

/* Whether `name` is a backend tsrnn knows ("local", "gloo", "mpi", "nccl"), in this build or not: a known
 * one this build lacks is refused by tsrnn_comm_open() with what the build needs. NULL: no. */
bool tsrnn_comm_backend_known(const char *name);

/* Writes the names of the backends tsrnn knows, "local, gloo, mpi", for messages (cut to fit
 * `capacity`, NUL-terminated). */
void tsrnn_comm_backend_list(char *out, size_t capacity);

#endif
