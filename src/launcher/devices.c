/* Which devices the workers get (DESIGN.md §2 "tsrnn-launch"): Lightning's [trainer]
 * accelerator and devices, GPUs counted without initialising CUDA (world.h), cores from this process's
 * affinity; and from that, the comm backend every worker is told to use (the only place
 * that chooses it). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "job.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"

/* "0-3,6" for a message. */
static void format_cores(char *out, size_t capacity, const cpu_set_t *set)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used < capacity; c++) {
        if (!CPU_ISSET(c, set) || (c > 0 && CPU_ISSET(c - 1, set)))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        int n = last == c
                    ? snprintf(out + used, capacity - used, "%s%d", used ? "," : "", c)
                    : snprintf(out + used, capacity - used, "%s%d-%d", used ? "," : "", c, last);
        used += n > 0 ? (size_t)n : 0;
    }
}

/* Parses the list form of [trainer] devices ("0,2"), already checked by the config. */
static size_t parse_device_list(const char *text, int64_t *indices, size_t capacity)
{
    size_t count = 0;
    for (const char *p = text; count < capacity;) {
        size_t len = strcspn(p, ","), start = 0;
        char item[32] = "";
        while (start < len && (p[start] == ' ' || p[start] == '\t'))
            start++;
        while (len > start && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len - start < sizeof(item))
            memcpy(item, p + start, len - start);
        if (tsrnn_parse_int64(item, &indices[count]))
            count++;
        p += strcspn(p, ",");
        if (*p++ == '\0')
            break;
    }
    return count;
}

/* What `count` workers on this machine need, checked before any starts: at most MAX_WORKERS,
 * and open files for their connections (a worker: one per peer; the launcher: two pipes and a
 * log file per worker). The soft limit is raised to what they need, up to the hard one, which the workers
 * inherit. */
static enum tsrnn_status check_worker_count(struct launch *l, int64_t count, const char *origin)
{
    if (count > MAX_WORKERS)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = '%s' asks for %lld workers; tsrnn-launch runs "
                           "at most %d on one machine (each holds a connection to every other; "
                           "%d were measured to train); accepted: 1 to %d, or more machines "
                           "under mpirun or srun",
                           origin, l->cfg->devices, (long long)count, MAX_WORKERS, MAX_WORKERS,
                           MAX_WORKERS);
    struct rlimit files;
    rlim_t need = 3 * (rlim_t)count + SPARE_FILES; /* the launcher's, more than a worker's */
    if (count == 1 || getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= need)
        return TSRNN_OK;
    if (files.rlim_max != RLIM_INFINITY && files.rlim_max < need)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = '%s': %lld workers need %llu open files (a "
                           "connection to every other worker; the launcher two pipes and a log "
                           "file for each), "
                           "but this process may open at most %llu (ulimit -Hn); accepted: up "
                           "to %lld workers here, or a higher hard limit",
                           origin, l->cfg->devices, (long long)count, (unsigned long long)need,
                           (unsigned long long)files.rlim_max,
                           (long long)((files.rlim_max - SPARE_FILES) / 3));
    files.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0)
        return tsrnn_error_errno(TSRNN_ERR_USAGE, errno,
                                 "%s: [trainer] devices = '%s': cannot raise the open-file "
                                 "limit to %llu for %lld workers",
                                 origin, l->cfg->devices, (unsigned long long)need,
                                 (long long)count);
    return TSRNN_OK;
}

/* Decides how many workers run where, from [trainer] accelerator and devices (Lightning's
 * meaning: -1 = every device, N = the first N, "i,j" = those). Prints Lightning's
 * "GPU available" line. */
enum tsrnn_status resolve_devices(struct launch *l)
{
    const struct tsrnn_config *cfg = l->cfg;
    const char *devices = cfg->devices;
    const char *origin = tsrnn_config_origin(cfg, "trainer", "devices");
    const char *accel_origin = tsrnn_config_origin(cfg, "trainer", "accelerator");
    char ids[MAX_GPUS][GPU_ID_MAX];
    size_t gpus = tsrnn_world_visible_gpus(ids, MAX_GPUS);
    if (gpus > MAX_GPUS)
        gpus = MAX_GPUS;
    int64_t list[64];
    size_t list_count = 0;
    cpu_set_t allowed;
    int64_t count;

    /* The pjrt backend runs its replicas inside one process, one per device of its plugin,
     * with the gradients summed inside the program (docs/architecture.md "The pjrt
     * backend"): nothing for a launcher to spread. */
    if (cfg->accelerator == TSRNN_ACCELERATOR_XLA || cfg->accelerator == TSRNN_ACCELERATOR_TPU)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: accelerator = %s trains in one process (a replica per device "
                           "inside it): run tsrnn-worker, with [trainer] devices = the count",
                           accel_origin, cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu" : "xla");
    /* Lightning's "auto": the GPUs when there are any and this build can train on them. */
    bool cuda_built = tsrnn_compute_compiled(TSRNN_COMPUTE_CUDA);
    l->gpu = cfg->accelerator == TSRNN_ACCELERATOR_GPU ||
             (cfg->accelerator == TSRNN_ACCELERATOR_AUTO && gpus > 0 && cuda_built);
    printf("GPU available: %s, used: %s\n", gpus > 0 ? "True (cuda)" : "False",
           l->gpu && gpus > 0 ? "True" : "False");
    fflush(stdout);
    if (l->gpu && gpus == 0) {
        const char *gpu_source, *visible = getenv("CUDA_VISIBLE_DEVICES");
        int driver_gpus = tsrnn_world_driver_gpus(&gpu_source);
        if (strcmp(accel_origin, "--accelerator") == 0)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "--accelerator gpu, but no GPU is visible (the driver's count, "
                               "from %s, is %d; CUDA_VISIBLE_DEVICES=%s); accepted: "
                               "--accelerator cpu or auto",
                               gpu_source, driver_gpus, visible ? visible : "(unset)");
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] accelerator = gpu, but no GPU is visible (the "
                           "driver's count, from %s, is %d; CUDA_VISIBLE_DEVICES=%s); accepted: "
                           "cpu or auto (or --accelerator cpu)",
                           accel_origin, gpu_source, driver_gpus, visible ? visible : "(unset)");
    }
    if (cfg->accelerator == TSRNN_ACCELERATOR_AUTO && gpus > 0 && !cuda_built)
        fprintf(stderr,
                PROGRAM ": warning: %zu GPU%s visible, but this tsrnn was built without the CUDA "
                        "backend (no CUDA toolkit with cuDNN 9 at build time): starting CPU "
                        "workers; --accelerator cpu silences this\n",
                gpus, gpus == 1 ? " is" : "s are");
    if (!l->gpu && sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno,
                                 "cannot read the cores this process may "
                                 "use (sched_getaffinity)");
    size_t available = l->gpu ? gpus : (size_t)CPU_COUNT(&allowed);

    /* NCCL where GPU workers would use it unasked: libnccl must load here; where it does not,
     * the launcher says so once and the workers talk over Gloo (an optional library's rule:
     * a default that cannot be honoured warns, an explicit comm = nccl is refused below). */
    char nccl_why[1024] = "";
    bool nccl_usable = l->gpu && cfg->comm != TSRNN_COMM_CHOICE_GLOO &&
                       tsrnn_comm_backend_usable("nccl", nccl_why, sizeof(nccl_why));
    if (strcasecmp(devices, "auto") == 0) /* every GPU where they can talk (NCCL), else one */
        count = nccl_usable ? (int64_t)gpus : 1;
    else if (strcmp(devices, "-1") == 0)
        count = (int64_t)available;
    else if (strchr(devices, ',') == NULL && tsrnn_parse_int64(devices, &count)) {
        /* More CPU workers than cores is allowed (slow, but a valid test of N ranks); more
         * GPU workers than GPUs only over Gloo, which lets workers share a GPU (NCCL
         * refuses two ranks on one GPU). */
        if (l->gpu && (size_t)count > gpus && cfg->comm != TSRNN_COMM_CHOICE_GLOO)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [trainer] devices = '%s' asks for %lld GPU workers, but %zu "
                               "GPU%s %s visible and NCCL runs one worker per GPU; accepted: 1 "
                               "to %zu, -1 (all), a list of indices below %zu, or [trainer] "
                               "comm = gloo to let workers share GPUs",
                               origin, devices, (long long)count, gpus, gpus == 1 ? "" : "s",
                               gpus == 1 ? "is" : "are", gpus, gpus);
    } else {
        list_count = parse_device_list(devices, list, 64);
        count = (int64_t)list_count;
    }
    if (count < 1)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: [trainer] devices = '%s' leaves no device to use",
                           origin, devices);
    for (size_t k = 0; k < list_count; k++) {
        if (l->gpu && list[k] >= (int64_t)gpus)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [trainer] devices = '%s': GPU %lld is not visible (%zu "
                               "GPU%s); accepted: indices 0 to %zu",
                               origin, devices, (long long)list[k], gpus, gpus == 1 ? "" : "s",
                               gpus - 1);
        if (!l->gpu && (list[k] >= CPU_SETSIZE || !CPU_ISSET((int)list[k], &allowed))) {
            char cores[256];
            format_cores(cores, sizeof(cores), &allowed);
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [trainer] devices = '%s': core %lld is not available to "
                               "this process (its cores: %s); accepted: a list of those "
                               "cores, a count N, or -1",
                               origin, devices, (long long)list[k], cores);
        }
    }

    if (!l->gpu && cfg->comm == TSRNN_COMM_CHOICE_NCCL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] comm = nccl needs GPU workers, but these are CPU "
                           "workers (accelerator %s); accepted: comm = auto or gloo, or "
                           "--accelerator gpu",
                           tsrnn_config_origin(cfg, "trainer", "comm"),
                           cfg->accelerator == TSRNN_ACCELERATOR_CPU ? "cpu" : "auto, no GPU");

    /* The one place the comm backend is chosen (DESIGN.md §9): every worker is told it
     * (TSRNN_COMM_BACKEND, world.h) and derives nothing itself. One this build lacks stops
     * the job here, before any worker starts. 1 worker: local, except where comm = nccl asks
     * for the NCCL path on its own; CPU workers: gloo; GPU workers: nccl, or gloo where
     * comm = gloo says so. */
    if (l->gpu && cfg->comm == TSRNN_COMM_CHOICE_NCCL)
        l->comm_backend = "nccl";
    else
        l->comm_backend = count == 1                                      ? "local"
                          : l->gpu && cfg->comm != TSRNN_COMM_CHOICE_GLOO ? "nccl"
                                                                          : "gloo";
    if (strcmp(l->comm_backend, "nccl") == 0 && cfg->comm == TSRNN_COMM_CHOICE_AUTO &&
        tsrnn_comm_backend_available("nccl") && !nccl_usable) {
        fprintf(stderr,
                PROGRAM ": warning: the GPU workers talk over Gloo: NCCL cannot be used here "
                        "(%s); [trainer] comm = gloo silences this\n",
                nccl_why);
        l->comm_backend = "gloo";
    }
    if (strcmp(l->comm_backend, "nccl") == 0 && tsrnn_comm_backend_available("nccl") &&
        !tsrnn_comm_backend_usable("nccl", nccl_why, sizeof(nccl_why)))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] comm = nccl, but NCCL cannot be used here: %s; "
                           "accepted: comm = gloo or auto",
                           tsrnn_config_origin(cfg, "trainer", "comm"), nccl_why);
    if (strcmp(l->comm_backend, "gloo") == 0 && !tsrnn_comm_backend_available("gloo"))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = '%s' asks for %lld %s workers, but this "
                           "tsrnn was built without Gloo (libgloo-dev), which they need to "
                           "talk; install it and rebuild, or use one device",
                           origin, devices, (long long)count, l->gpu ? "GPU" : "CPU");
    if (strcmp(l->comm_backend, "nccl") == 0 && !tsrnn_comm_backend_available("nccl"))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = '%s' asks for %lld GPU worker%s talking "
                           "through NCCL, but this tsrnn was built without the nccl comm "
                           "backend (it needs the CUDA backend and NCCL's header); accepted: "
                           "--devices 1, [trainer] comm = gloo, or --accelerator cpu",
                           origin, devices, (long long)count, count == 1 ? "" : "s");
    TSRNN_TRY(check_worker_count(l, count, origin));
    l->count = (int)count;
    l->workers = calloc((size_t)count, sizeof(*l->workers));
    l->pollfds = calloc(2 + 2 * (size_t)count, sizeof(*l->pollfds));
    l->poll_streams = calloc(2 + 2 * (size_t)count, sizeof(*l->poll_streams));
    l->poll_workers = calloc(2 + 2 * (size_t)count, sizeof(*l->poll_workers));
    if (!l->workers || !l->pollfds || !l->poll_streams || !l->poll_workers)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %lld workers", (long long)count);
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        w->rank = r;
        w->core = !l->gpu && list_count > 0 ? (int)list[r] : -1;
        /* More workers than GPUs (comm = gloo only): they take the GPUs in turn. */
        if (l->gpu)
            memcpy(w->gpu, ids[list_count > 0 ? list[r] : (int64_t)((size_t)r % gpus)], GPU_ID_MAX);
        w->out.fd = w->err.fd = w->log_fd = -1;
    }
    l->report_stream.fd = -1;
    return TSRNN_OK;
}
