/* Which rank of which world this process is (include/tsrnn/world.h): the launcher <-> worker
 * contract, read from the environment. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/comm.h"
#include "tsrnn/world.h"

/* The launcher whose variables are being read, for messages. */
static _Thread_local const char *reading_for = "tsrnn-launch";

/* Reads the integer variable `name` into *value; absent leaves *value as it is. */
static enum tsrnn_status env_int(const char *name, int *value, int64_t lo, int64_t hi)
{
    const char *text = getenv(name);
    int64_t v;
    if (text == NULL)
        return TSRNN_OK;
    if (!tsrnn_parse_int64(text, &v) || v < lo || v > hi)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "environment variable %s=%s: accepted: an integer from %lld to %lld "
                           "(%s sets it for every worker)",
                           name, text, (long long)lo, (long long)hi, reading_for);
    *value = (int)v;
    return TSRNN_OK;
}

/* TSRNN_COMM_BACKEND, checked against the world size (world.h): the launcher's choice is
 * taken as it is, never re-derived, so a missing or inconsistent one is an error. */
static enum tsrnn_status comm_backend_from_env(struct tsrnn_world *w)
{
    const char *name = getenv("TSRNN_COMM_BACKEND");
    char accepted[64];

    tsrnn_comm_backend_list(accepted, sizeof(accepted));
    if (name == NULL && w->world_size == 1)
        return TSRNN_OK; /* "local" */
    if (name == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "TSRNN_WORLD_SIZE=%d needs TSRNN_COMM_BACKEND (accepted: %s); start "
                           "workers with tsrnn-launch, which chooses it",
                           w->world_size, accepted);
    if (!tsrnn_comm_backend_known(name) || strlen(name) >= sizeof(w->comm_backend))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "environment variable TSRNN_COMM_BACKEND=%s: unknown comm backend; "
                           "accepted: %s (tsrnn-launch sets it for every worker)",
                           name, accepted);
    bool local = strcmp(name, "local") == 0;
    if (local && w->world_size > 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "environment variable TSRNN_COMM_BACKEND=local runs a world of 1 "
                           "rank, but TSRNN_WORLD_SIZE=%d; accepted: a backend other than "
                           "local (tsrnn knows %s)",
                           w->world_size, accepted);
    /* nccl with one rank is allowed: [trainer] comm = nccl runs the NCCL path on one GPU. */
    if (!local && w->world_size == 1 && strcmp(name, "nccl") != 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "environment variable TSRNN_COMM_BACKEND=%s with TSRNN_WORLD_SIZE=1: "
                           "a world of 1 rank talks to nobody; accepted: local (or leave it "
                           "unset)",
                           name);
    memcpy(w->comm_backend, name, strlen(name) + 1);
    return TSRNN_OK;
}

/* The variables one MPI launcher sets for each process (DESIGN.md §2), read before MPI_Init:
 * the world and this process's place in it. local_size may be NULL (the launcher does not
 * say how many ranks share the node). */
struct mpi_launcher {
    const char *name; /* struct tsrnn_world.launcher */
    const char *rank, *size, *local_rank, *local_size;
    enum {
        LAUNCHER_OPEN_MPI,
        LAUNCHER_PMI,
        LAUNCHER_SLURM
    } kind;
};

static const struct mpi_launcher mpi_launchers[] = {
    { "mpirun (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", LAUNCHER_OPEN_MPI },
    { "PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", LAUNCHER_PMI },
    { "srun (Slurm)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, LAUNCHER_SLURM },
};

/* The MPI tsrnn links is Open MPI, which joins a job that srun started only through PMIx
 * (srun --mpi=pmix sets PMIX_RANK, PMIX_NAMESPACE, ...; Debian's Open MPI 4.1 has no PMI-1
 * or PMI-2 client). Started by srun without it (no --mpi where the cluster's MpiDefault is
 * none, or --mpi=pmi2, which sets PMI_RANK and so reads as the PMI launcher), every rank would
 * fail in MPI_Init with Open MPI's message only. Without SLURM_STEP_ID no srun is there at
 * all: SLURM_PROCID and SLURM_NTASKS are the batch script's own (tsrnn-worker run by the
 * script itself), and MPI_Init would make this process a world of one. Both are refused
 * here, before MPI_Init, for a world of more than one rank. */
static enum tsrnn_status check_slurm_step(const struct tsrnn_world *w, const struct mpi_launcher *l)
{
    if (w->world_size == 1 || l->kind == LAUNCHER_OPEN_MPI) /* its ranks find their MPI */
        return TSRNN_OK;
    if (getenv("SLURM_STEP_ID") == NULL) {
        if (l->kind == LAUNCHER_PMI)
            return TSRNN_OK; /* another launcher than srun */
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "SLURM_PROCID=%d and SLURM_NTASKS=%d describe a job of %d tasks, but "
                           "SLURM_STEP_ID is unset: this process is the batch script itself, "
                           "not one of the tasks srun starts; accepted: srun --mpi=pmix "
                           "tsrnn-worker ... in the script (scripts/cluster/tsrnn.sbatch)",
                           w->rank, w->world_size, w->world_size);
    }
    if (getenv("PMIX_RANK") != NULL)
        return TSRNN_OK; /* srun --mpi=pmix */
    const char *mpi_type = getenv("SLURM_MPI_TYPE");
    char how[96];
    if (mpi_type != NULL)
        snprintf(how, sizeof(how), "SLURM_MPI_TYPE=%.40s", mpi_type);
    else
        snprintf(how, sizeof(how), "no --mpi, and the cluster's MpiDefault is none");
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "srun started this process as rank %d of %d (%s=%d, %s=%d) without PMIx "
                       "(%s), and the MPI tsrnn is built with, Open MPI, joins a job that srun "
                       "started only through PMIx: MPI_Init would fail on every rank; "
                       "accepted: srun --mpi=pmix (or MpiDefault=pmix in slurm.conf)",
                       w->rank, w->world_size, l->rank, w->rank, l->size, w->world_size, how);
}

/* A process started by an MPI launcher: its rank, world and local rank from the launcher's
 * variables; the comm backend is mpi (no tsrnn-launch is there to choose it). */
static enum tsrnn_status world_from_mpi(struct tsrnn_world *w, const struct mpi_launcher *l)
{
    w->launcher = l->name;
    w->mpi = true;
    reading_for = l->name;
    if (getenv(l->size) == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "environment variable %s=%s without %s: started by %s, but the world "
                           "size is missing; accepted: both set by the launcher",
                           l->rank, getenv(l->rank), l->size, l->name);
    TSRNN_TRY(env_int(l->size, &w->world_size, 1, 1 << 20));
    TSRNN_TRY(env_int(l->rank, &w->rank, 0, w->world_size - 1));
    w->local_world_size = w->world_size;
    w->local_world_size_known = l->local_size != NULL && getenv(l->local_size) != NULL;
    if (l->local_size != NULL)
        TSRNN_TRY(env_int(l->local_size, &w->local_world_size, 1, w->world_size));
    /* Without the launcher's local rank every rank is taken to have a node of its own. */
    w->local_rank = 0;
    TSRNN_TRY(env_int(l->local_rank, &w->local_rank, 0, w->local_world_size - 1));
    w->device_index = w->local_rank;
    if (w->world_size == 1)
        return TSRNN_OK; /* local: MPI is not even initialised */
    if (!tsrnn_comm_backend_available("mpi"))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "started by %s as rank %d of %d (%s=%d, %s=%d), but this "
                           "tsrnn-worker was built without MPI: its ranks would train %d "
                           "separate models; rebuild with libopenmpi-dev installed "
                           "(meson -Dmpi=enabled), or start the workers with tsrnn-launch",
                           l->name, w->rank, w->world_size, l->rank, w->rank, l->size,
                           w->world_size, w->world_size);
    TSRNN_TRY(check_slurm_step(w, l));
    snprintf(w->comm_backend, sizeof(w->comm_backend), "mpi");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_world_from_env(struct tsrnn_world *w)
{
    *w = (struct tsrnn_world){
        .world_size = 1,
        .local_world_size = 1,
        .report_fd = -1,
        .launcher = "none",
        .comm_backend = "local",
    };
    reading_for = "tsrnn-launch";
    if (getenv("TSRNN_RANK") == NULL) {
        for (size_t i = 0; i < sizeof(mpi_launchers) / sizeof(mpi_launchers[0]); i++)
            if (getenv(mpi_launchers[i].rank) != NULL)
                return world_from_mpi(w, &mpi_launchers[i]);
        return TSRNN_OK;
    }

    w->launcher = "tsrnn-launch";
    w->local_world_size_known = true;
    TSRNN_TRY(env_int("TSRNN_WORLD_SIZE", &w->world_size, 1, 1 << 20));
    TSRNN_TRY(env_int("TSRNN_RANK", &w->rank, 0, w->world_size - 1));
    w->local_world_size = w->world_size;
    TSRNN_TRY(env_int("TSRNN_LOCAL_WORLD_SIZE", &w->local_world_size, 1, w->world_size));
    w->local_rank = w->rank;
    TSRNN_TRY(env_int("TSRNN_LOCAL_RANK", &w->local_rank, 0, w->local_world_size - 1));
    w->device_index = 0; /* the launcher's CUDA_VISIBLE_DEVICES holds this worker's GPU only */
    TSRNN_TRY(env_int("TSRNN_RESTART_COUNT", &w->restart_count, 0, 1 << 20));
    TSRNN_TRY(env_int("TSRNN_REPORT_FD", &w->report_fd, 0, 1 << 20));
    if (w->report_fd >= 0 && fcntl(w->report_fd, F_GETFD) < 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "environment variable TSRNN_REPORT_FD=%d: not an open file descriptor",
                           w->report_fd);

    const char *rdzv = getenv("TSRNN_RENDEZVOUS");
    if (rdzv != NULL &&
        (size_t)snprintf(w->rendezvous, sizeof(w->rendezvous), "%s", rdzv) >= sizeof(w->rendezvous))
        return tsrnn_error(TSRNN_ERR_USAGE, "environment variable TSRNN_RENDEZVOUS is too long");
    if (w->world_size > 1 && strncmp(w->rendezvous, "file:", 5) != 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "TSRNN_WORLD_SIZE=%d needs TSRNN_RENDEZVOUS=file:<folder> (got %s); "
                           "start workers with tsrnn-launch",
                           w->world_size, rdzv ? rdzv : "nothing");
    return comm_backend_from_env(w);
}

size_t tsrnn_world_visible_gpus(char ids[][TSRNN_GPU_ID_MAX], size_t capacity)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    int gpu_count = tsrnn_world_driver_gpus(NULL);
    char seen[64][TSRNN_GPU_ID_MAX];
    size_t count = 0;

    if (env == NULL) {
        for (int i = 0; i < gpu_count; i++, count++)
            if (ids != NULL && count < capacity)
                snprintf(ids[count], TSRNN_GPU_ID_MAX, "%d", i);
        return count;
    }
    for (const char *p = env; gpu_count > 0 && *p != '\0' && count < 64;) {
        size_t len = strcspn(p, ",");
        char item[TSRNN_GPU_ID_MAX];
        int64_t index;
        if (len >= sizeof(item))
            break;
        memcpy(item, p, len);
        item[len] = '\0';
        if (tsrnn_parse_int64(item, &index)
                ? index < 0 || index >= gpu_count
                : strncmp(item, "GPU-", 4) != 0 && strncmp(item, "MIG-", 4) != 0)
            break;
        bool repeated = false;
        for (size_t i = 0; i < count; i++)
            repeated = repeated || strcmp(seen[i], item) == 0;
        if (repeated)
            break;
        memcpy(seen[count], item, len + 1);
        if (ids != NULL && count < capacity)
            memcpy(ids[count], item, len + 1);
        count++;
        p += len + (p[len] == ',');
    }
    return count;
}

void tsrnn_world_rank_devices_from_env(struct tsrnn_rank_devices *d, const struct tsrnn_world *w)
{
    d->visible_gpu_count = tsrnn_world_visible_gpus(NULL, 0);
    d->gpus_per_task =
        strcmp(w->launcher, "srun (Slurm)") == 0 && getenv("SLURM_GPUS_PER_TASK") != NULL;
}

/* What CUDA_VISIBLE_DEVICES says, for messages. */
static const char *visible_devices_text(void)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    return env != NULL ? env : "unset: every GPU of the node";
}

/* A GPU rank's device for nccl: its own GPU, or a refusal where it has none or would share. */
static enum tsrnn_status nccl_device(struct tsrnn_world *w, const struct tsrnn_rank_devices *d,
                                     const char *choice)
{
    size_t gpus = d->visible_gpu_count;
    if (gpus == 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] comm = %s: rank %d (started by %s) trains on a GPU but "
                           "sees none (CUDA_VISIBLE_DEVICES=%s); accepted: GPUs visible to every "
                           "rank, or accelerator = cpu",
                           d->comm_origin, choice, w->rank, w->launcher, visible_devices_text());
    if (d->gpus_per_task) { /* the launcher gave this rank its own: its first */
        w->device_index = 0;
        return TSRNN_OK;
    }
    /* Every rank of a node sees the same GPUs and takes the one at its local rank. Where the
     * launcher says how many ranks the node has, every one of them refuses alike (none waits
     * out timeout_s for a peer that stopped); otherwise the ranks past the last GPU do. */
    int here = w->local_world_size_known ? w->local_world_size : w->local_rank + 1;
    if ((size_t)here > gpus) {
        int sharer = (int)gpus; /* the first local rank without a GPU of its own */
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] comm = %s runs one rank per GPU (NCCL refuses two on "
                           "one), but %s puts %s%d ranks on rank %d's node and %zu GPU%s %s "
                           "visible (CUDA_VISIBLE_DEVICES=%s): local rank %d would share GPU 0 "
                           "with local rank 0; accepted: at most %zu rank%s per node "
                           "(mpirun --map-by ppr:%zu:node, srun --ntasks-per-node=%zu), srun "
                           "--gpus-per-task=1, or comm = gloo (ranks share GPUs, the gradients "
                           "staged through host memory over MPI)",
                           d->comm_origin, choice, w->launcher,
                           w->local_world_size_known ? "" : "at least ", here, w->rank, gpus,
                           gpus == 1 ? "" : "s", gpus == 1 ? "is" : "are", visible_devices_text(),
                           sharer, gpus, gpus == 1 ? "" : "s", gpus, gpus);
    }
    w->device_index = w->local_rank;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_world_choose_mpi_comm(struct tsrnn_world *w,
                                              const struct tsrnn_rank_devices *d)
{
    if (!w->mpi)
        return TSRNN_OK; /* tsrnn-launch chose, once for all workers */
    const char *choice = d->comm == TSRNN_COMM_CHOICE_NCCL   ? "nccl"
                         : d->comm == TSRNN_COMM_CHOICE_GLOO ? "gloo"
                                                             : "auto";
    if (d->comm == TSRNN_COMM_CHOICE_NCCL && !d->gpu)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] comm = nccl, but rank %d (started by %s) trains on the "
                           "CPU, and NCCL carries GPU ranks only; accepted: comm = auto or gloo "
                           "(CPU ranks talk over MPI), or accelerator = gpu on GPU nodes",
                           d->comm_origin, w->rank, w->launcher);
    bool nccl = d->gpu && (d->comm == TSRNN_COMM_CHOICE_NCCL ||
                           (d->comm == TSRNN_COMM_CHOICE_AUTO && w->world_size > 1));
    if (!nccl) {
        /* mpi (or local): GPU ranks, if any, take the visible GPUs in turn. */
        w->device_index = !d->gpu || d->gpus_per_task || d->visible_gpu_count == 0
                              ? 0
                              : w->local_rank % (int)d->visible_gpu_count;
        return TSRNN_OK;
    }
    TSRNN_TRY(nccl_device(w, d, choice));
    if (!tsrnn_comm_backend_available("nccl"))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] comm = %s chooses NCCL for GPU rank %d (started by "
                           "%s), but this tsrnn was built without the nccl comm backend (it "
                           "needs the CUDA backend and NCCL's header); accepted: comm = gloo "
                           "(the gradients over MPI, staged through host memory)",
                           d->comm_origin, choice, w->rank, w->launcher);
    snprintf(w->comm_backend, sizeof(w->comm_backend), "nccl");
    return TSRNN_OK;
}

void tsrnn_world_report(const struct tsrnn_world *w, const char *key, const char *fmt, ...)
{
    char line[TSRNN_REPORT_LINE_MAX];
    va_list ap;
    int err;

    if (w == NULL || w->report_fd < 0)
        return;
    int n = snprintf(line, sizeof(line), "%s=", key);
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) >= sizeof(line) - 1 || strchr(line + n, '\n') != NULL)
        line[n] = '\0'; /* cut or multi-line: report "" rather than half a value */
    size_t len = strlen(line);
    line[len++] = '\n';
    /* One write of < PIPE_BUF bytes reaches a pipe whole; a gone launcher is ignored. */
    (void)tsrnn_write_all(w->report_fd, line, len, &err);
}
