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
 *     PMI (MPICH, Intel MPI's hydra, srun --mpi=pmi2)  PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
 *                        MPI_LOCALNRANKS
 *     srun (Slurm)       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
 * Its comm backend is mpi (there is no launcher to choose; world size 1: local), and a
 * build without MPI refuses a world of more than one rank (TSRNN_ERR_USAGE: its ranks would
 * train separate models). GPU ranks use GPU device_index = the local rank among the GPUs
 * the process sees. Without any of these the process is a world of its own (size 1, rank 0,
 * backend local).
 *
 * Under tsrnn-launch the launcher alone chooses the comm backend (DESIGN.md §9), once for
 * all ranks: local for 1 worker, gloo for CPU workers, nccl for GPU workers (not in tsrnn
 * yet: the launcher refuses more than one GPU worker until it is). A worker uses what it is
 * told and derives nothing from its world size or device. (Under an MPI launcher this file
 * is the one place that chooses, as above.) TSRNN_COMM_BACKEND must name a backend tsrnn
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

#include "tsrnn/core.h"

#define TSRNN_REPORT_LINE_MAX (PATH_MAX + 1024)

struct tsrnn_world {
    int rank, world_size;
    int local_rank, local_world_size;
    int restart_count;
    char rendezvous[PATH_MAX + 8]; /* "file:<dir>"; "" for a world of one */
    int report_fd;                 /* -1: nobody to report to */
    const char *launcher;          /* "tsrnn-launch", "mpirun (Open MPI)", "PMI",
                                      "srun (Slurm)" or "none" */
    bool mpi;                      /* started by an MPI launcher (not tsrnn-launch) */
    int device_index;              /* the GPU among the visible ones: 0 under tsrnn-launch
                                      (CUDA_VISIBLE_DEVICES holds one), the local rank under
                                      MPI (every rank of a node sees all its GPUs) */
    char comm_backend[16];         /* TSRNN_COMM_BACKEND; "local" for a world of one */
};

/* Reads the variables above. A set but malformed or inconsistent variable (rank >= world
 * size, a world > 1 without TSRNN_RENDEZVOUS or TSRNN_COMM_BACKEND, an unknown backend, ...)
 * is TSRNN_ERR_USAGE naming it and what is accepted. */
enum tsrnn_status tsrnn_world_from_env(struct tsrnn_world *world);

/* Writes "key=value\n" to the report pipe in one write(); does nothing without one. A
 * failed write (the launcher is gone) is ignored: the run's files are what matters. */
void tsrnn_world_report(const struct tsrnn_world *world, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
