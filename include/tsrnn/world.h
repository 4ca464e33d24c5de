/* Which rank of which world this process is, and the contract between tsrnn-launch and the
 * workers it starts (DESIGN.md §2 "Launch modes").
 *
 * tsrnn-launch gives every worker, in its environment:
 *     TSRNN_RANK, TSRNN_WORLD_SIZE              global rank 0 .. W-1 and W
 *     TSRNN_LOCAL_RANK, TSRNN_LOCAL_WORLD_SIZE  the same on this machine
 *     TSRNN_RENDEZVOUS=file:<dir>               a fresh private folder for this attempt
 *     TSRNN_RESTART_COUNT                       0, then 1, 2, ... after --max-restarts
 *     TSRNN_REPORT_FD                           rank 0 only: a pipe to the launcher
 *     TSRNN_COMM_BACKEND                        the comm backend every rank opens (comm.h)
 * tsrnn-launch runs one machine: local rank = rank, local world size = world size.
 *
 * Without TSRNN_RANK, a process started by an MPI launcher finds its place from that
 * launcher's variables, read before MPI_Init, the first set of these that is present:
 *     mpirun (Open MPI)  OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
 *     PMI                PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
 *     srun (Slurm)       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
 * The MPI tsrnn links is Open MPI, whose ranks join a job through its own mpirun or through
 * PMIx: mpirun, and srun --mpi=pmix (which sets PMIX_RANK and SLURM_STEP_ID), are what works.
 * A world of more than one rank in a Slurm step without PMIx (srun without --mpi where the
 * cluster's MpiDefault is none; srun --mpi=pmi2, whose PMI_* variables make it the PMI
 * launcher), or described by SLURM_* without SLURM_STEP_ID (the batch script itself, no
 * srun), is refused before MPI_Init (TSRNN_ERR_USAGE, with the srun --mpi=pmix hint): its
 * MPI_Init would fail on every rank. PMI_* outside Slurm (MPICH's or Intel MPI's hydra) is
 * read, but Open MPI cannot join such a job: each rank's MPI_Init makes it a world of one,
 * and the comm backend's check (MPI's world against these variables) refuses that.
 * Its comm backend is mpi (world size 1: local) until the rank, knowing its config and
 * device, chooses with tsrnn_world_choose_mpi_comm() (below: nccl and one GPU per GPU rank),
 * and a build without MPI refuses a world of more than one rank (TSRNN_ERR_USAGE: its ranks
 * would train separate models). Without any of these the process is a world of its own
 * (size 1, rank 0, backend local).
 *
 * Under tsrnn-launch the launcher alone chooses the comm backend (DESIGN.md §9), once for
 * all ranks: local for 1 worker, gloo for CPU workers, nccl for GPU workers. A worker uses
 * what it is told and derives nothing from its world size or device. (Under an MPI launcher
 * this file is the one place that chooses, as above.) TSRNN_COMM_BACKEND must name a backend tsrnn
 * knows (tsrnn_comm_backend_known(): local, gloo, mpi); it is required when TSRNN_WORLD_SIZE > 1, may
 * be left out for a world of 1 (= local), and must be local exactly when the world size is
 * 1. A known backend this build lacks is refused later, when the worker joins.
 *
 * tsrnn-launch passes the config's model_name to every worker, so that all of them (and a
 * restart) agree on the run folder even when it is the default, timestamped one.
 *
 * Rank 0 reports to the launcher through TSRNN_REPORT_FD, as ddp_spawn's rank 0 puts its
 * result on a queue: one "key=value\n" line per fact, each written whole,
 *     run_dir=<absolute path>      once the run folder is ready: force_reset has run, and
 *                                  nothing in it is deleted from then on, so the launcher
 *                                  may write {run_dir}/logs/rank-N.log
 *     epochs=, steps=, train_loss=, val_loss=, best_val_loss=, best_checkpoint=,
 *     last_checkpoint=, wall_s=    at the end of a successful fit
 *     done=1                       the last line
 * Values never contain a newline; a path that would is reported as "".
 */
#ifndef TSRNN_WORLD_H
#define TSRNN_WORLD_H

#include <limits.h>
#include <stdbool.h>

#include "tsrnn/config.h"
#include "tsrnn/core.h"

#define TSRNN_REPORT_LINE_MAX (PATH_MAX + 1024)
#define TSRNN_GPU_ID_MAX      96 /* an index, or a GPU-/MIG- UUID from CUDA_VISIBLE_DEVICES */

struct tsrnn_world {
    int rank, world_size;
    int local_rank, local_world_size;
    bool local_world_size_known; /* false: the launcher does not say (srun, PMI without
                                    MPI_LOCALNRANKS); local_world_size is the world size */
    int restart_count;
    char rendezvous[PATH_MAX + 8]; /* "file:<dir>"; "" for a world of one */
    int report_fd;                 /* -1: nobody to report to */
    const char *launcher;          /* "tsrnn-launch", "mpirun (Open MPI)", "PMI",
                                      "srun (Slurm)" or "none" */
    bool mpi;                      /* started by an MPI launcher (not tsrnn-launch) */
    int device_index;              /* the GPU among the visible ones: 0 under tsrnn-launch
                                      (CUDA_VISIBLE_DEVICES holds one); under MPI the local
                                      rank, then tsrnn_world_choose_mpi_comm()'s choice */
    char comm_backend[16];         /* TSRNN_COMM_BACKEND; "local" for a world of one */
};

/* Reads the variables above. A set but malformed or inconsistent variable (rank >= world
 * size, a world > 1 without TSRNN_RENDEZVOUS or TSRNN_COMM_BACKEND, an unknown backend, ...)
 * is TSRNN_ERR_USAGE naming it and what is accepted. */
enum tsrnn_status tsrnn_world_from_env(struct tsrnn_world *world);

/* The GPUs the NVIDIA driver has, counted without initialising CUDA (src/world/gpus.c):
 * NVML (libnvidia-ml.so.1, loaded with dlopen) when it loads and answers, else the entries
 * of /proc/driver/nvidia/gpus; 0 when neither is there. *source (when not NULL) names the
 * one that answered: "NVML", "/proc/driver/nvidia/gpus" or "none (...)". For tests only,
 * TSRNN_TEST_NVML names the NVML library to load and TSRNN_TEST_NVIDIA_GPUS_DIR a folder to
 * count instead of /proc's (alone, it is the whole simulated machine: NVML is not asked). */
int tsrnn_world_driver_gpus(const char **source);

/* The GPUs CUDA would show this process, counted without initialising CUDA: the driver's
 * (tsrnn_world_driver_gpus()), as CUDA_VISIBLE_DEVICES filters them
 * (unset = all; a comma list of indices or GPU-/MIG- UUIDs, read up to the first invalid or
 * repeated entry; empty = none). Returns how many; ids[k] (when ids is not NULL, up to
 * `capacity`) is the k-th one's CUDA_VISIBLE_DEVICES entry. */
size_t tsrnn_world_visible_gpus(char ids[][TSRNN_GPU_ID_MAX], size_t capacity);

/* What a rank started by mpirun or srun knows of itself for tsrnn_world_choose_mpi_comm():
 * the config's choice, whether it trains on a GPU, and what its launcher shows it. */
struct tsrnn_rank_devices {
    enum tsrnn_comm_choice comm; /* [trainer] comm */
    const char *comm_origin;     /* tsrnn_config_origin() of it, for messages */
    bool gpu;                    /* the rank trains on a GPU (compute backend cuda) */
    size_t visible_gpu_count;    /* tsrnn_world_visible_gpus() */
    /* The launcher gave each rank GPUs of its own (srun --gpus-per-task, which sets
     * SLURM_GPUS_PER_TASK and a CUDA_VISIBLE_DEVICES per task): the rank takes its first. */
    bool gpus_per_task;
};

/* visible_gpu_count and gpus_per_task from this process's environment. */
void tsrnn_world_rank_devices_from_env(struct tsrnn_rank_devices *d, const struct tsrnn_world *w);

/* Under mpirun or srun there is no tsrnn-launch to choose: each rank decides its comm backend
 * and GPU from `d` alone, the same way on every rank of a uniform job (DESIGN.md §9). Sets
 * world->comm_backend and world->device_index; a world from tsrnn-launch is left as it is.
 *   CPU rank: mpi (local for a world of one); comm = nccl is refused.
 *   GPU rank, comm = auto (world > 1) or nccl (also a world of one): nccl, one GPU per rank:
 *     the GPU at its local rank among those it sees (its first with gpus_per_task). Refused
 *     when it sees none, or when two ranks of its node would share one (more local ranks
 *     than visible GPUs), or in a build without NCCL.
 *   GPU rank, comm = gloo (or auto with one rank): mpi (local), the gradients staged through
 *     host memory, so ranks may share GPUs: local rank r takes GPU r mod the visible count.
 * Refusals are TSRNN_ERR_USAGE (exit 2) naming the rank, the counts and what is accepted. */
enum tsrnn_status tsrnn_world_choose_mpi_comm(struct tsrnn_world *world,
                                              const struct tsrnn_rank_devices *d);

/* Writes "key=value\n" to the report pipe in one write(); does nothing without one. A
 * failed write (the launcher is gone) is ignored: the run's files are what matters. */
void tsrnn_world_report(const struct tsrnn_world *world, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
