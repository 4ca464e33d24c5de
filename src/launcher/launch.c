/* tsrnn-launch's engine (launch.h). A job is one or more attempts; an attempt starts one
 * worker per device, supervises them in one poll() loop, and ends once every worker is
 * reaped and its pipes are drained.
 *
 * Failure handling follows torch.multiprocessing.spawn and torchrun
 * (reference/distributed.md A1): the first worker that fails makes the launcher SIGTERM the
 * others, SIGKILL them after a grace period, report which rank failed and how, and exit
 * non-zero; --max-restarts relaunches all workers from the last checkpoint. As in
 * Lightning's ddp_spawn, rank 0 hands its result back (the report pipe of
 * include/tsrnn/world.h) and the launcher prints it.
 *
 * Output: rank 0's stdout is the launcher's own (its live progress bar works on a terminal);
 * rank 0's stderr is copied through line by line. Ranks >= 1 write to
 * {run_dir}/logs/rank-N.log, and their stderr lines are also shown, prefixed "[rank N] ".
 * Every rank's last lines are kept for the failure report.
 */
#include "launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tsrnn/comm.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/run_folder.h"
#include "tsrnn/world.h"

#define PROGRAM         "tsrnn-launch"
#define TAIL_LINES      10                          /* a rank's last lines, for a failure report */
#define TAIL_LINE_MAX   512                         /* bytes kept of each of them */
#define STREAM_LINE_MAX (TSRNN_REPORT_LINE_MAX + 1) /* longer output lines are cut in pieces */
#define PENDING_MAX     (1u << 20) /* a rank's log kept in memory until the run folder exists */
#define GRACE_S         5.0        /* SIGTERM, then SIGKILL this much later, after a failure */
#define STOP_EXTRA_S    10.0       /* an agreed stop may take timeout_s plus this */
#define DRAIN_S         2.0        /* reading the pipes of workers already reaped */
#define REPORT_FD       3          /* rank 0 finds the report pipe here (TSRNN_REPORT_FD) */
#define MAX_GPUS        64
#define GPU_ID_MAX      96 /* an index, or a GPU-/MIG- UUID from CUDA_VISIBLE_DEVICES */
#define ENV_OWN_MAX     10 /* variables the launcher sets for a worker */

extern char **environ;

enum stream_kind {
    STREAM_OUT,
    STREAM_ERR,
    STREAM_REPORT,
};

/* One pipe from a worker, read line by line. */
struct stream {
    int fd; /* the read end; -1 when closed or not used */
    enum stream_kind kind;
    size_t len;                     /* bytes of the unfinished line in line[] */
    char line[STREAM_LINE_MAX + 2]; /* room for the line, '\n' and '\0' */
};

struct worker {
    int rank;               /* = local rank: one machine */
    int core;               /* the core it is pinned to; -1 = any */
    char gpu[GPU_ID_MAX];   /* its CUDA_VISIBLE_DEVICES; "" for a CPU worker */
    pid_t pid;              /* 0 = not started */
    bool alive;             /* started and not reaped yet */
    int wait_status;        /* waitpid()'s status once reaped */
    unsigned sent;          /* bit s set: the launcher sent it signal s */
    int failure_order;      /* 1, 2, ... in the order failures were reaped; 0 = no failure */
    struct stream out, err; /* rank 0 has no out: its stdout is the launcher's */
    int log_fd;             /* {run_dir}/logs/rank-N.log; -1 = not open */
    char *pending;          /* log lines kept until rank 0 reports the run folder */
    size_t pending_len, pending_cap, pending_dropped;
    size_t tail_count; /* lines seen; the last TAIL_LINES of them are in tail[] */
    char tail[TAIL_LINES][TAIL_LINE_MAX];
};

/* What rank 0 reported at the end of its fit (world.h), for the summary. */
struct report {
    char epochs[32], steps[32];
    char train_loss[64], val_loss[64], best_val_loss[64];
    char best_checkpoint[PATH_MAX], last_checkpoint[PATH_MAX];
    bool done;
};

enum logs_state {
    LOGS_WAITING, /* rank 0 has not named the run folder yet: keep lines in memory */
    LOGS_OPEN,
    LOGS_OFF, /* the folder could not be made: lines are not logged */
};

struct launch {
    const struct tsrnn_launch_options *opt;
    struct tsrnn_config *cfg;
    pid_t self;
    int devnull; /* the workers' stdin */
    char worker_path[PATH_MAX];
    char rendezvous[PATH_MAX]; /* the private folder; "" until it exists */
    bool gpu;                  /* GPU workers, else CPU workers */
    int count;                 /* workers = world size */
    struct worker *workers;
    struct pollfd *pollfds; /* [0] the signalfd, then one per open stream */
    struct stream **poll_streams;
    struct worker **poll_workers;
    char **envp; /* a worker's environment: env_own, then the launcher's own */
    char env_own[ENV_OWN_MAX][PATH_MAX + 64];
    double start_s;
    int interrupts;              /* SIGINT, SIGTERM or SIGHUP received */
    char run_dir[PATH_MAX];      /* rank 0's run folder, from this attempt or an earlier one */
    const char *restart_args[4]; /* what a restart adds to the workers' command line */
    size_t restart_argc;
    char model_name_arg[TSRNN_NAME_MAX + 32]; /* "output.model_name=<the config's>" */

    /* This attempt. */
    int attempt; /* 0, then 1, 2, ... after restarts = TSRNN_RESTART_COUNT */
    struct stream report_stream;
    struct report report;
    enum logs_state logs;
    int failures;
    bool terminating; /* every worker got SIGTERM */
    double kill_at;   /* when the live workers get SIGKILL; 0 = no deadline */
    double kill_from; /* when that deadline was set, and why: */
    char kill_reason[64];
    double drain_until; /* when to stop reading the pipes of reaped workers; 0 = not set */
};

/* ---- workers' exits and signals ---- */

static bool any_alive(const struct launch *l)
{
    for (int r = 0; r < l->count; r++)
        if (l->workers[r].alive)
            return true;
    return false;
}

static bool exited_with(int status, int code)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static bool sent_by_launcher(const struct worker *w, int sig)
{
    return sig > 0 && sig < 32 && (w->sent & (1u << sig)) != 0;
}

/* "exit code 3 (a peer failed)", "killed by signal 9 (SIGKILL)". */
static void describe_exit(char *out, size_t capacity, int status)
{
    if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        const char *meaning = code == TSRNN_EXIT_USAGE         ? " (usage or config error)"
                              : code == TSRNN_EXIT_PEER        ? " (a peer failed)"
                              : code == TSRNN_EXIT_INTERRUPTED ? " (interrupted)"
                              : code == 126 || code == 127     ? " (the program could not run)"
                                                               : "";
        snprintf(out, capacity, "exit code %d%s", code, meaning);
        return;
    }
    int sig = WTERMSIG(status);
    const char *abbrev = sigabbrev_np(sig);
    snprintf(out, capacity, "killed by signal %d (SIG%s)%s", sig, abbrev ? abbrev : "?",
             WCOREDUMP(status) ? ", core dumped" : "");
}

/* The launcher's exit code for a failure that caused a job to stop (README "Exit codes"). */
static int failure_exit_code(int status)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) == TSRNN_EXIT_PEER)
        return TSRNN_EXIT_PEER;
    if (WEXITSTATUS(status) == TSRNN_EXIT_USAGE)
        return TSRNN_EXIT_USAGE;
    return TSRNN_EXIT_RUNTIME;
}

/* Exit code 3 ("a peer failed") usually follows another rank's death: it is a cause only
 * when nothing else failed. */
static bool primary_failure(const struct worker *w)
{
    return !exited_with(w->wait_status, TSRNN_EXIT_PEER);
}

static void signal_worker(struct worker *w, int sig)
{
    if (!w->alive || sent_by_launcher(w, sig))
        return;
    w->sent |= 1u << sig;
    /* Its whole process group: a wrapper script's children go too. */
    if (kill(-w->pid, sig) != 0)
        kill(w->pid, sig);
}

static void signal_all(struct launch *l, int sig)
{
    for (int r = 0; r < l->count; r++)
        signal_worker(&l->workers[r], sig);
}

static void set_kill_deadline(struct launch *l, double at, const char *reason)
{
    if (l->kill_at != 0 && l->kill_at <= at)
        return;
    l->kill_at = at;
    l->kill_from = tsrnn_clock_now_s();
    snprintf(l->kill_reason, sizeof(l->kill_reason), "%s", reason);
}

/* ---- configuration and devices ---- */

static enum tsrnn_status load_config(struct launch *l)
{
    const struct tsrnn_launch_options *o = l->opt;
    const struct {
        const char *key, *value, *origin;
    } options[] = {
        { "accelerator", o->accelerator, "--accelerator" },
        { "devices", o->devices, "--devices" },
        { "max_restarts", o->max_restarts, "--max-restarts" },
    };

    /* tsrnn_config_load()'s steps, with the launcher's own options last so that they win and
     * their errors name them. */
    TSRNN_TRY(tsrnn_config_init(l->cfg));
    TSRNN_TRY(tsrnn_config_parse_file(l->cfg, o->ini_path));
    for (size_t i = 0; i < o->override_count; i++)
        TSRNN_TRY(tsrnn_config_apply_override(l->cfg, o->overrides[i]));
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
        if (options[i].value != NULL)
            TSRNN_TRY(tsrnn_config_set(l->cfg, "trainer", options[i].key, options[i].value,
                                       options[i].origin, "."));
    snprintf(l->model_name_arg, sizeof(l->model_name_arg), "output.model_name=%s",
             l->cfg->model_name);
    return tsrnn_config_validate(l->cfg);
}

/* The NVIDIA driver lists one folder per GPU here; reading it does not initialise CUDA,
 * which would not survive the fork that follows (reference/distributed.md A2). */
static int count_gpus(void)
{
    DIR *dir = opendir("/proc/driver/nvidia/gpus");
    int count = 0;
    struct dirent *e;
    if (dir == NULL)
        return 0;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.')
            count++;
    closedir(dir);
    return count;
}

/* The GPUs CUDA would show this process, as CUDA reads CUDA_VISIBLE_DEVICES: unset = all;
 * a comma list of indices or GPU-/MIG- UUIDs, read up to the first invalid entry; empty =
 * none. ids[k] is what worker k gets as its CUDA_VISIBLE_DEVICES. */
static size_t visible_gpus(char ids[][GPU_ID_MAX], size_t capacity, int gpu_count)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    size_t count = 0;

    if (env == NULL) {
        for (int i = 0; i < gpu_count && count < capacity; i++)
            snprintf(ids[count++], GPU_ID_MAX, "%d", i);
        return count;
    }
    for (const char *p = env; gpu_count > 0 && *p != '\0' && count < capacity;) {
        size_t len = strcspn(p, ",");
        char item[GPU_ID_MAX];
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
            repeated = repeated || strcmp(ids[i], item) == 0;
        if (repeated)
            break;
        memcpy(ids[count++], item, len + 1);
        p += len + (p[len] == ',');
    }
    return count;
}

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

/* Decides how many workers run where, from [trainer] accelerator and devices (Lightning's
 * meaning: -1 = every device, N = the first N, "i,j" = those). Prints Lightning's
 * "GPU available" line. */
static enum tsrnn_status resolve_devices(struct launch *l)
{
    const struct tsrnn_config *cfg = l->cfg;
    const char *devices = cfg->devices;
    const char *origin = tsrnn_config_origin(cfg, "trainer", "devices");
    const char *accel_origin = tsrnn_config_origin(cfg, "trainer", "accelerator");
    char ids[MAX_GPUS][GPU_ID_MAX];
    size_t gpus = visible_gpus(ids, MAX_GPUS, count_gpus());
    int64_t list[64];
    size_t list_count = 0;
    cpu_set_t allowed;
    int64_t count;

    l->gpu = cfg->accelerator == TSRNN_ACCELERATOR_GPU;
    printf("GPU available: %s, used: %s\n", gpus > 0 ? "True" : "False",
           l->gpu && gpus > 0 ? "True" : "False");
    fflush(stdout);
    if (l->gpu && gpus == 0) {
        if (strcmp(accel_origin, "--accelerator") == 0)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "--accelerator gpu, but no GPU is visible "
                               "(/proc/driver/nvidia/gpus is empty or CUDA_VISIBLE_DEVICES "
                               "hides them); accepted: --accelerator cpu or auto");
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] accelerator = gpu, but no GPU is visible "
                           "(/proc/driver/nvidia/gpus is empty or CUDA_VISIBLE_DEVICES hides "
                           "them); accepted: cpu or auto (or --accelerator cpu)",
                           accel_origin);
    }
    if (cfg->accelerator == TSRNN_ACCELERATOR_AUTO && gpus > 0)
        fprintf(stderr,
                PROGRAM ": warning: %zu GPU%s visible, but this build trains on CPUs only (no "
                        "GPU training backend yet): starting CPU workers; --accelerator cpu "
                        "silences this\n",
                gpus, gpus == 1 ? " is" : "s are");
    if (!l->gpu && sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno,
                                 "cannot read the cores this process may "
                                 "use (sched_getaffinity)");
    size_t available = l->gpu ? gpus : (size_t)CPU_COUNT(&allowed);

    if (strcasecmp(devices, "auto") == 0)
        count = l->gpu ? (int64_t)gpus : 1;
    else if (strcmp(devices, "-1") == 0)
        count = (int64_t)available;
    else if (strchr(devices, ',') == NULL && tsrnn_parse_int64(devices, &count)) {
        /* More CPU workers than cores is allowed (slow, but a valid test of N ranks). */
        if (l->gpu && (size_t)count > gpus)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: [trainer] devices = '%s' asks for %lld GPUs, but %zu %s "
                               "visible; accepted: 1 to %zu, -1 (all) or a list of indices "
                               "below %zu",
                               origin, devices, (long long)count, gpus, gpus == 1 ? "is" : "are",
                               gpus, gpus);
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

    if (!l->gpu && count > 1 && !tsrnn_comm_backend_available("gloo"))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = '%s' asks for %lld CPU workers, but this "
                           "tsrnn was built without Gloo (libgloo-dev), which they need to "
                           "talk; install it and rebuild, or use one device",
                           origin, devices, (long long)count);
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
        if (l->gpu)
            memcpy(w->gpu, ids[list_count > 0 ? list[r] : r], GPU_ID_MAX);
        w->out.fd = w->err.fd = w->log_fd = -1;
    }
    l->report_stream.fd = -1;
    return TSRNN_OK;
}

static const char *backend_name(const struct launch *l)
{
    return l->gpu ? "nccl" : l->count == 1 ? "local" : "gloo";
}

static bool search_path(char *out, size_t capacity, const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        size_t len = strcspn(p, ":");
        /* An empty PATH entry means the current folder. */
        int n = snprintf(out, capacity, "%.*s/%s", (int)(len ? len : 1), len ? p : ".", name);
        if (n > 0 && (size_t)n < capacity && access(out, X_OK) == 0)
            return true;
        p += len;
        if (*p == '\0')
            return false;
    }
}

/* --worker, else tsrnn-worker beside this executable (an uninstalled build folder works),
 * else from PATH. Resolved here so that the child can execve() without a PATH search. */
static enum tsrnn_status find_worker(struct launch *l)
{
    const char *name = l->opt->worker ? l->opt->worker : "tsrnn-worker";
    char self[PATH_MAX];

    if (strchr(name, '/') != NULL) {
        if (strlen(name) >= sizeof(l->worker_path))
            return tsrnn_error(TSRNN_ERR_USAGE, "--worker %s: the path is too long", name);
        snprintf(l->worker_path, sizeof(l->worker_path), "%s", name);
        return TSRNN_OK;
    }
    ssize_t n = l->opt->worker ? -1 : readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        *(slash ? slash : self) = '\0';
        int len = snprintf(l->worker_path, sizeof(l->worker_path), "%s/%s", self, name);
        if (len > 0 && (size_t)len < sizeof(l->worker_path) && access(l->worker_path, X_OK) == 0)
            return TSRNN_OK;
    }
    if (search_path(l->worker_path, sizeof(l->worker_path), name))
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_IO,
                       "cannot run %s: not found %sin PATH; give its path with "
                       "--worker PATH",
                       name, l->opt->worker ? "" : "beside " PROGRAM " nor ");
}

/* A private folder (mode 0700) for the workers' file rendezvous: nobody else may place
 * addresses in it. */
static enum tsrnn_status make_rendezvous(struct launch *l)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    /* Room for "/attempt-N" and the store's own file names below it. */
    int n = snprintf(l->rendezvous, sizeof(l->rendezvous) - 64, "%s/tsrnn-rendezvous-XXXXXX", tmp);
    int err = n < 0 || (size_t)n >= sizeof(l->rendezvous) - 64 ? ENAMETOOLONG
              : mkdtemp(l->rendezvous) == NULL                 ? errno
                                                               : 0;
    if (err != 0) {
        l->rendezvous[0] = '\0';
        return tsrnn_error_errno(TSRNN_ERR_IO, err,
                                 "cannot make the rendezvous folder %s/tsrnn-rendezvous-XXXXXX "
                                 "(TMPDIR chooses the parent)",
                                 tmp);
    }
    return TSRNN_OK;
}

/* ---- output: tails, logs, the report ---- */

static void tail_add(struct worker *w, const char *line, size_t len)
{
    char *slot = w->tail[w->tail_count++ % TAIL_LINES];
    if (len >= TAIL_LINE_MAX)
        len = TAIL_LINE_MAX - 1;
    memcpy(slot, line, len);
    slot[len] = '\0';
}

/* Keeps a log line (with its '\n') until the log file can be opened. */
static void pending_add(struct worker *w, const char *line, size_t len)
{
    if (w->pending_len + len > PENDING_MAX) {
        /* Drop the oldest half at once, so that a long wait costs linear time. */
        size_t cut = 0;
        while (cut < w->pending_len && w->pending_len - cut + len > PENDING_MAX / 2) {
            char *nl = memchr(w->pending + cut, '\n', w->pending_len - cut);
            cut = nl ? (size_t)(nl - w->pending) + 1 : w->pending_len;
            w->pending_dropped++;
        }
        memmove(w->pending, w->pending + cut, w->pending_len - cut);
        w->pending_len -= cut;
    }
    if (w->pending_len + len > w->pending_cap) {
        size_t cap = w->pending_cap ? w->pending_cap : 4096;
        while (cap < w->pending_len + len)
            cap *= 2;
        char *grown = realloc(w->pending, cap);
        if (grown == NULL) {
            w->pending_dropped++;
            return;
        }
        w->pending = grown;
        w->pending_cap = cap;
    }
    memcpy(w->pending + w->pending_len, line, len);
    w->pending_len += len;
}

static void log_write(struct worker *w, const char *data, size_t nbytes)
{
    int err = 0;
    if (w->log_fd < 0 || tsrnn_write_all(w->log_fd, data, nbytes, &err) == nbytes)
        return;
    fprintf(stderr,
            PROGRAM ": warning: cannot write logs/rank-%d.log: %s; rank %d's next lines are "
                    "not logged\n",
            w->rank, strerror(err), w->rank);
    close(w->log_fd);
    w->log_fd = -1;
}

static void discard_pending(struct worker *w)
{
    free(w->pending);
    w->pending = NULL;
    w->pending_len = w->pending_cap = w->pending_dropped = 0;
}

/* Rank 0 has reported the run folder: from now on it will not delete it (force_reset came
 * before), so the ranks' logs can go there. */
static void open_logs(struct launch *l)
{
    char path[PATH_MAX + 64];
    l->logs = LOGS_OPEN;
    if (l->count == 1)
        return;
    snprintf(path, sizeof(path), "%s/logs", l->run_dir);
    if (tsrnn_make_dirs(path) != TSRNN_OK) {
        fprintf(stderr, PROGRAM ": warning: %s; the workers' output is not logged\n",
                tsrnn_last_error());
        l->logs = LOGS_OFF;
    }
    for (int r = 1; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        char note[160];
        if (l->logs == LOGS_OPEN) {
            snprintf(path, sizeof(path), "%s/logs/rank-%d.log", l->run_dir, r);
            w->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (w->log_fd < 0)
                fprintf(stderr,
                        PROGRAM ": warning: cannot open %s: %s; rank %d's output is not "
                                "logged\n",
                        tsrnn_display_path(path), strerror(errno), r);
        }
        if (w->log_fd >= 0 && l->attempt > 0)
            log_write(w, note,
                      (size_t)snprintf(note, sizeof(note), "--- restart %d ---\n", l->attempt));
        if (w->log_fd >= 0 && w->pending_dropped > 0)
            log_write(w, note,
                      (size_t)snprintf(note, sizeof(note),
                                       "[" PROGRAM ": %zu earlier lines dropped: more than %u "
                                       "bytes came before the run folder existed]\n",
                                       w->pending_dropped, PENDING_MAX));
        if (w->log_fd >= 0 && w->pending_len > 0)
            log_write(w, w->pending, w->pending_len);
        discard_pending(w);
    }
}

static void close_logs(struct launch *l)
{
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        if (w->log_fd >= 0)
            close(w->log_fd);
        w->log_fd = -1;
        discard_pending(w);
    }
}

/* One line of rank 0's report pipe: "key=value" (world.h). Unknown keys come from a newer
 * worker and are ignored. */
static void on_report_line(struct launch *l, char *line)
{
    struct report *rep = &l->report;
    const struct {
        const char *key;
        char *value;
        size_t capacity;
    } fields[] = {
        { "epochs", rep->epochs, sizeof(rep->epochs) },
        { "steps", rep->steps, sizeof(rep->steps) },
        { "train_loss", rep->train_loss, sizeof(rep->train_loss) },
        { "val_loss", rep->val_loss, sizeof(rep->val_loss) },
        { "best_val_loss", rep->best_val_loss, sizeof(rep->best_val_loss) },
        { "best_checkpoint", rep->best_checkpoint, sizeof(rep->best_checkpoint) },
        { "last_checkpoint", rep->last_checkpoint, sizeof(rep->last_checkpoint) },
    };
    char *eq = strchr(line, '=');
    if (eq == NULL)
        return;
    *eq = '\0';
    const char *key = line, *value = eq + 1;
    if (strcmp(key, "run_dir") == 0) {
        if (value[0] == '\0' || strlen(value) >= sizeof(l->run_dir))
            return;
        memcpy(l->run_dir, value, strlen(value) + 1);
        if (l->logs == LOGS_WAITING)
            open_logs(l);
    } else if (strcmp(key, "done") == 0) {
        rep->done = strcmp(value, "1") == 0;
    } else {
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            if (strcmp(key, fields[i].key) == 0)
                snprintf(fields[i].value, fields[i].capacity, "%s", value);
    }
}

/* A complete line of `s` (s->line[0 .. s->len)) goes where it belongs. */
static void emit_line(struct launch *l, struct worker *w, struct stream *s)
{
    size_t len = s->len;
    s->len = 0;
    if (s->kind == STREAM_REPORT) {
        s->line[len] = '\0';
        on_report_line(l, s->line);
        return;
    }
    tail_add(w, s->line, len);
    s->line[len] = '\n';
    if (w->rank == 0) {
        fwrite(s->line, 1, len + 1, stderr);
        return;
    }
    if (l->logs == LOGS_WAITING)
        pending_add(w, s->line, len + 1);
    else
        log_write(w, s->line, len + 1);
    /* Warnings and errors of every rank are seen without opening its log. */
    if (s->kind == STREAM_ERR)
        fprintf(stderr, "[rank %d] %.*s", w->rank, (int)(len + 1), s->line);
}

/* Reads what is there (poll said so) and hands out complete lines. At EOF the unfinished
 * last line counts as a line and the pipe is closed. */
static void read_stream(struct launch *l, struct worker *w, struct stream *s)
{
    char buf[65536];
    ssize_t n = read(s->fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        if (s->len > 0)
            emit_line(l, w, s);
        close(s->fd);
        s->fd = -1;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            emit_line(l, w, s);
            continue;
        }
        if (s->len == STREAM_LINE_MAX)
            emit_line(l, w, s);
        s->line[s->len++] = buf[i];
    }
}

static void close_stream(struct stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->len = 0;
}

/* The workers are reaped but a pipe is still open: a process they started holds it. */
static void abandon_streams(struct launch *l)
{
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        struct stream *streams[] = { &w->out, &w->err, r == 0 ? &l->report_stream : NULL };
        for (size_t i = 0; i < 3; i++) {
            if (streams[i] == NULL || streams[i]->fd < 0)
                continue;
            fprintf(stderr,
                    PROGRAM ": warning: rank %d's output pipe is still open %.0f s after it "
                            "exited (a process it started holds it): not read further\n",
                    r, DRAIN_S);
            if (streams[i]->len > 0)
                emit_line(l, w, streams[i]);
            close_stream(streams[i]);
        }
    }
}

/* ---- starting workers ---- */

/* A worker's environment: the launcher's, with world.h's variables (and the device's)
 * replacing any the launcher itself was given. */
static void build_env(struct launch *l, const struct worker *w)
{
    size_t own = 0, n = 0;
    const size_t cap = sizeof(l->env_own[0]);

    snprintf(l->env_own[own++], cap, "TSRNN_RANK=%d", w->rank);
    snprintf(l->env_own[own++], cap, "TSRNN_WORLD_SIZE=%d", l->count);
    snprintf(l->env_own[own++], cap, "TSRNN_LOCAL_RANK=%d", w->rank);
    snprintf(l->env_own[own++], cap, "TSRNN_LOCAL_WORLD_SIZE=%d", l->count);
    snprintf(l->env_own[own++], cap, "TSRNN_RENDEZVOUS=file:%s/attempt-%d", l->rendezvous,
             l->attempt);
    snprintf(l->env_own[own++], cap, "TSRNN_RESTART_COUNT=%d", l->attempt);
    if (w->rank == 0)
        snprintf(l->env_own[own++], cap, "TSRNN_REPORT_FD=%d", REPORT_FD);
    if (l->gpu) {
        snprintf(l->env_own[own++], cap, "CUDA_VISIBLE_DEVICES=%s", w->gpu);
    } else {
        /* One thread per CPU worker: W workers already use W cores. */
        snprintf(l->env_own[own++], cap, "OPENBLAS_NUM_THREADS=1");
        snprintf(l->env_own[own++], cap, "OMP_NUM_THREADS=1");
    }
    for (size_t i = 0; i < own; i++)
        l->envp[n++] = l->env_own[i];
    for (char **e = environ; *e != NULL; e++) {
        /* Only rank 0 reports: the others must not inherit a TSRNN_REPORT_FD either. */
        bool replaced = strncmp(*e, "TSRNN_REPORT_FD=", 16) == 0;
        for (size_t i = 0; i < own && !replaced; i++) {
            size_t name_len = (size_t)(strchr(l->env_own[i], '=') - l->env_own[i]) + 1;
            replaced = strncmp(*e, l->env_own[i], name_len) == 0;
        }
        if (!replaced)
            l->envp[n++] = *e;
    }
    l->envp[n] = NULL;
}

enum child_stage {
    CHILD_SETUP,
    CHILD_AFFINITY,
    CHILD_EXEC,
};

struct child_error {
    int stage; /* enum child_stage */
    int errnum;
};

static _Noreturn void child_fail(int status_fd, enum child_stage stage)
{
    struct child_error e = { stage, errno };
    ssize_t rc = write(status_fd, &e, sizeof(e));
    (void)rc;
    _exit(127);
}

/* The child between fork and exec: async-signal-safe calls only. fds[i] becomes descriptor
 * i (stdin, stdout, stderr, and the report pipe for rank 0). */
static _Noreturn void exec_worker(const struct launch *l, const struct worker *w,
                                  char *const argv[], const int fds[], int fd_count, int status_fd)
{
    int moved[4];
    sigset_t none;
    struct sigaction dfl = { .sa_handler = SIG_DFL };

    /* Die with the launcher; and do not start at all if it died before this line. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != l->self)
        _exit(127);
    /* Its own process group: a terminal's Ctrl-C reaches only the launcher, which forwards
     * it once. */
    setpgid(0, 0);
    /* Ignored signals and the signal mask survive exec: the worker starts with defaults. */
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Move every source above the targets first, so that no dup2() clobbers a source (or
     * the status pipe) that is still to be used. The copies are close-on-exec. */
    status_fd = fcntl(status_fd, F_DUPFD_CLOEXEC, fd_count);
    if (status_fd < 0)
        _exit(127);
    for (int i = 0; i < fd_count; i++)
        if ((moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, fd_count)) < 0)
            child_fail(status_fd, CHILD_SETUP);
    for (int i = 0; i < fd_count; i++)
        if (dup2(moved[i], i) < 0)
            child_fail(status_fd, CHILD_SETUP);
    if (w->core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->core, &set);
        if (sched_setaffinity(0, sizeof(set), &set) != 0)
            child_fail(status_fd, CHILD_AFFINITY);
    }
    execve(l->worker_path, argv, l->envp);
    child_fail(status_fd, CHILD_EXEC);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Forks and execs worker `w`. Every launcher descriptor is close-on-exec, so the worker gets
 * only the ones dup2()ed for it. Returns once exec succeeded (the status pipe closed) or
 * with the reason it failed (the child reaped). */
static enum tsrnn_status spawn_worker(struct launch *l, struct worker *w, char *const argv[])
{
    int out[2] = { -1, -1 }, err[2] = { -1, -1 }, report[2] = { -1, -1 }, status[2] = { -1, -1 };
    enum tsrnn_status st = TSRNN_OK;
    struct child_error ce;
    ssize_t n;

    if (pipe2(err, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0 ||
        pipe2(w->rank == 0 ? report : out, O_CLOEXEC) != 0) {
        st = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot start rank %d: pipe", w->rank);
        goto done;
    }
    const int fds[4] = { l->devnull, w->rank == 0 ? STDOUT_FILENO : out[1], err[1], report[1] };
    pid_t pid = fork();
    if (pid < 0) {
        st = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot start rank %d: fork", w->rank);
        goto done;
    }
    if (pid == 0)
        exec_worker(l, w, argv, fds, w->rank == 0 ? 4 : 3, status[1]);
    /* Also here, so that a signal sent before the child ran setpgid() reaches its group. */
    setpgid(pid, pid);
    w->pid = pid;
    w->alive = true;
    close_fd(&status[1]);
    do
        n = read(status[0], &ce, sizeof(ce));
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(ce)) {
        while (waitpid(pid, &w->wait_status, 0) < 0 && errno == EINTR)
            ;
        w->alive = false;
        if (ce.stage == CHILD_EXEC)
            st = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum, "cannot run %s", l->worker_path);
        else if (ce.stage == CHILD_AFFINITY)
            st = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum, "cannot pin rank %d to core %d",
                                   w->rank, w->core);
        else
            st = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum,
                                   "cannot set up rank %d's standard streams", w->rank);
        goto done;
    }
    w->err.fd = err[0];
    w->out.fd = out[0];
    l->report_stream.fd = w->rank == 0 ? report[0] : l->report_stream.fd;
    err[0] = out[0] = report[0] = -1;

done:
    for (int i = 0; i < 2; i++) {
        close_fd(&out[i]);
        close_fd(&err[i]);
        close_fd(&report[i]);
        close_fd(&status[i]);
    }
    return st;
}

/* Ends an attempt (or a failed start): SIGKILLs and reaps whatever still runs, the workers
 * and anything they left in their process groups (the launcher is the subreaper of those),
 * waiting at most a second for the leftovers; then closes the pipes and logs. No orphan, no
 * zombie. */
static void end_attempt(struct launch *l)
{
    double until = tsrnn_clock_now_s() + 1.0;
    bool left = true;

    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        if (w->alive) {
            signal_worker(w, SIGKILL);
            while (waitpid(w->pid, &w->wait_status, 0) < 0 && errno == EINTR)
                ;
            w->alive = false;
        } else if (w->pid > 0 && kill(-w->pid, 0) == 0) {
            kill(-w->pid, SIGKILL);
        }
    }
    while (left) {
        struct timespec pause = { .tv_nsec = 10 * 1000 * 1000 };
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        left = false;
        for (int r = 0; r < l->count; r++)
            left = left || (l->workers[r].pid > 0 && kill(-l->workers[r].pid, 0) == 0);
        if (left && tsrnn_clock_now_s() < until)
            nanosleep(&pause, NULL);
        else
            break;
    }
    for (int r = 0; r < l->count; r++) {
        close_stream(&l->workers[r].out);
        close_stream(&l->workers[r].err);
    }
    close_stream(&l->report_stream);
    close_logs(l);
}

/* The workers' command line: the user's --set list unchanged and in order, then what the
 * launcher decides (later --set wins in the worker). argv[*progress_idx] is per rank. */
static char **worker_argv(const struct launch *l, size_t *progress_idx)
{
    const struct tsrnn_launch_options *o = l->opt;
    char **argv = calloc(2 * o->override_count + l->restart_argc + 10, sizeof(*argv));
    size_t n = 0;
    if (argv == NULL)
        return NULL;
    argv[n++] = (char *)l->worker_path;
    for (size_t i = 0; i < o->override_count; i++) {
        argv[n++] = "--set";
        argv[n++] = (char *)o->overrides[i];
    }
    /* The default model_name holds the time and a pid, different in every worker and every
     * attempt: all of them get the launcher's. */
    if (strcmp(tsrnn_config_origin(l->cfg, "output", "model_name"), "default") == 0) {
        argv[n++] = "--set";
        argv[n++] = (char *)l->model_name_arg;
    }
    argv[n++] = "--set";
    argv[n++] = l->gpu ? "trainer.accelerator=gpu" : "trainer.accelerator=cpu";
    if (!l->gpu) {
        argv[n++] = "--set";
        argv[n++] = "trainer.num_threads=1";
    }
    *progress_idx = n++;
    for (size_t i = 0; i < l->restart_argc; i++)
        argv[n++] = (char *)l->restart_args[i];
    argv[n++] = (char *)o->ini_path;
    argv[n] = NULL;
    return argv;
}

/* Starts attempt l->attempt: a fresh rendezvous subfolder, then every worker. */
static enum tsrnn_status start_attempt(struct launch *l)
{
    char dir[PATH_MAX + 32];
    size_t progress_idx;

    l->report_stream = (struct stream){ .fd = -1, .kind = STREAM_REPORT };
    memset(&l->report, 0, sizeof(l->report));
    l->logs = LOGS_WAITING;
    l->failures = 0;
    l->terminating = false;
    l->kill_at = l->drain_until = 0;
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        w->pid = 0;
        w->alive = false;
        w->wait_status = 0;
        w->sent = 0;
        w->failure_order = 0;
        w->out = (struct stream){ .fd = -1, .kind = STREAM_OUT };
        w->err = (struct stream){ .fd = -1, .kind = STREAM_ERR };
        w->log_fd = -1;
        w->tail_count = 0;
    }

    snprintf(dir, sizeof(dir), "%s/attempt-%d", l->rendezvous, l->attempt);
    if (mkdir(dir, 0700) != 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot make the rendezvous folder %s", dir);
    char **argv = worker_argv(l, &progress_idx);
    if (argv == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    printf("Launching %d worker process%s (%s, %s) for %s\n", l->count, l->count == 1 ? "" : "es",
           l->gpu ? "gpu" : "cpu", backend_name(l), l->opt->ini_path);
    fflush(stdout);
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        /* Rank 0 may draw a live bar on a terminal; the others write to a log. */
        argv[progress_idx] = r == 0 ? "--progress=auto" : "--progress=plain";
        build_env(l, w);
        enum tsrnn_status st = spawn_worker(l, w, argv);
        if (st != TSRNN_OK) {
            free(argv);
            end_attempt(l);
            return st;
        }
        if (l->gpu)
            printf("  rank %d (local %d): pid %ld, gpu %s\n", r, r, (long)w->pid, w->gpu);
        else if (w->core >= 0)
            printf("  rank %d (local %d): pid %ld, core %d\n", r, r, (long)w->pid, w->core);
        else
            printf("  rank %d (local %d): pid %ld, any core\n", r, r, (long)w->pid);
        fflush(stdout);
    }
    free(argv);
    return TSRNN_OK;
}

/* ---- supervision ---- */

static void on_worker_exit(struct launch *l, struct worker *w, int status)
{
    double now = tsrnn_clock_now_s();
    char how[96];

    w->alive = false;
    w->wait_status = status;
    if (exited_with(status, TSRNN_EXIT_OK))
        return;
    if (exited_with(status, TSRNN_EXIT_INTERRUPTED)) {
        /* Not a failure: someone stopped this worker, and the ranks agree on the step to stop
         * at, so the others follow within one collective's timeout. */
        if (!l->terminating && l->kill_at == 0 && any_alive(l)) {
            char reason[64];
            snprintf(reason, sizeof(reason), "rank %d stopped", w->rank);
            fprintf(stderr,
                    PROGRAM ": rank %d (pid %ld) was interrupted (exit code 130): waiting up to "
                            "%.0f s for the other workers to stop\n",
                    w->rank, (long)w->pid, l->cfg->timeout_s + STOP_EXTRA_S);
            set_kill_deadline(l, now + l->cfg->timeout_s + STOP_EXTRA_S, reason);
        }
        return;
    }
    if (WIFSIGNALED(status) && sent_by_launcher(w, WTERMSIG(status)))
        return;
    w->failure_order = ++l->failures;
    if (l->failures > 1 || !any_alive(l))
        return;
    describe_exit(how, sizeof(how), status);
    fprintf(stderr, PROGRAM ": rank %d (pid %ld): %s", w->rank, (long)w->pid, how);
    if (l->terminating)
        fprintf(stderr, "\n");
    else
        fprintf(stderr, "; stopping the other workers (SIGTERM, SIGKILL after %.0f s)\n", GRACE_S);
    signal_all(l, SIGTERM);
    l->terminating = true;
    set_kill_deadline(l, now + GRACE_S, "SIGTERM");
}

static void reap(struct launch *l)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int r = 0; r < l->count; r++)
            if (l->workers[r].alive && l->workers[r].pid == pid) {
                on_worker_exit(l, &l->workers[r], status);
                break;
            }
}

static void on_interrupt(struct launch *l)
{
    l->interrupts++;
    if (!any_alive(l))
        return;
    if (l->interrupts > 1) {
        fprintf(stderr, PROGRAM ": interrupted again: killing the workers (SIGKILL)\n");
        signal_all(l, SIGKILL);
        l->kill_at = 0;
        return;
    }
    if (l->terminating) {
        fprintf(stderr, PROGRAM ": interrupted: the workers are already being stopped (a second "
                                "interrupt kills them)\n");
        return;
    }
    fprintf(stderr, PROGRAM ": interrupted: asking the workers to stop at the next step (rank 0 "
                            "writes a checkpoint)\n");
    signal_all(l, SIGTERM);
    l->terminating = true;
    set_kill_deadline(l, tsrnn_clock_now_s() + l->cfg->timeout_s + STOP_EXTRA_S, "the interrupt");
}

static void read_signals(struct launch *l)
{
    struct signalfd_siginfo si;
    while (read(l->opt->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        if (si.ssi_signo != SIGCHLD)
            on_interrupt(l);
}

static void kill_stragglers(struct launch *l, double now)
{
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        if (!w->alive)
            continue;
        fprintf(stderr, PROGRAM ": rank %d (pid %ld) still running %.1f s after %s: SIGKILL\n",
                w->rank, (long)w->pid, now - l->kill_from, l->kill_reason);
        signal_worker(w, SIGKILL);
    }
    l->kill_at = 0;
}

static void poll_add(struct launch *l, int *n, struct stream *s, struct worker *w)
{
    if (s->fd < 0)
        return;
    l->pollfds[*n] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
    l->poll_streams[*n] = s;
    l->poll_workers[*n] = w;
    (*n)++;
}

/* The one loop of an attempt: signals, pipes and exits, until every worker is reaped and
 * its pipes are drained. Each wait is bounded: by a second while the workers run, by the
 * SIGKILL deadline while they stop, by DRAIN_S once they are gone. */
static void supervise(struct launch *l)
{
    for (;;) {
        double now = tsrnn_clock_now_s();
        int n = 0;

        if (l->kill_at > 0 && now >= l->kill_at)
            kill_stragglers(l, now);
        l->pollfds[n++] = (struct pollfd){ .fd = l->opt->signal_fd, .events = POLLIN };
        poll_add(l, &n, &l->report_stream, &l->workers[0]);
        for (int r = 0; r < l->count; r++) {
            poll_add(l, &n, &l->workers[r].out, &l->workers[r]);
            poll_add(l, &n, &l->workers[r].err, &l->workers[r]);
        }
        if (!any_alive(l)) {
            if (n == 1)
                return;
            if (l->drain_until == 0)
                l->drain_until = now + DRAIN_S;
            if (now >= l->drain_until) {
                abandon_streams(l);
                return;
            }
        }

        double until = now + 1.0;
        if (l->kill_at > 0 && l->kill_at < until)
            until = l->kill_at;
        if (l->drain_until > 0 && l->drain_until < until)
            until = l->drain_until;
        int timeout_ms = until > now ? (int)((until - now) * 1000.0) + 1 : 0;
        if (poll(l->pollfds, (nfds_t)n, timeout_ms) < 0 && errno != EINTR) {
            struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
            nanosleep(&pause, NULL); /* never spin on a persistent poll() error */
        }
        for (int i = 0; i < n; i++) {
            if ((l->pollfds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
                continue;
            if (i == 0)
                read_signals(l);
            else if (l->poll_streams[i]->fd >= 0)
                read_stream(l, l->poll_workers[i], l->poll_streams[i]);
        }
        reap(l);
    }
}

/* ---- outcome, restarts, summary ---- */

static void print_tail(const struct worker *w)
{
    size_t first = w->tail_count > TAIL_LINES ? w->tail_count - TAIL_LINES : 0;
    if (w->tail_count == 0)
        fprintf(stderr, "  rank %d: (no output%s)\n", w->rank, w->rank == 0 ? " on stderr" : "");
    for (size_t i = first; i < w->tail_count; i++)
        fprintf(stderr, "  rank %d: %s\n", w->rank, w->tail[i % TAIL_LINES]);
}

/* Reports how the attempt ended; returns the launcher's exit code for it. A failure names
 * its cause: the first failure that is not a consequence of another (exit code 3, "a peer
 * failed", is one when anything else failed). */
static int finish_attempt(struct launch *l, bool *restartable)
{
    const struct worker *cause = NULL, *first = NULL;
    char how[96];

    *restartable = false;
    if (l->failures == 0) {
        for (int r = 0; r < l->count; r++)
            if (!exited_with(l->workers[r].wait_status, TSRNN_EXIT_OK))
                return TSRNN_EXIT_INTERRUPTED;
        return TSRNN_EXIT_OK;
    }
    for (int order = 1; order <= l->failures; order++)
        for (int r = 0; r < l->count; r++) {
            const struct worker *w = &l->workers[r];
            if (w->failure_order != order)
                continue;
            first = first ? first : w;
            cause = cause ? cause : primary_failure(w) ? w : NULL;
        }
    cause = cause ? cause : first;
    describe_exit(how, sizeof(how), cause->wait_status);
    fprintf(stderr, PROGRAM ": rank %d (pid %ld) failed: %s\n", cause->rank, (long)cause->pid, how);
    print_tail(cause);
    for (int order = 1; order <= l->failures; order++)
        for (int r = 0; r < l->count; r++) {
            const struct worker *w = &l->workers[r];
            if (w->failure_order != order || w == cause)
                continue;
            describe_exit(how, sizeof(how), w->wait_status);
            fprintf(stderr, PROGRAM ": rank %d (pid %ld) also failed: %s\n", w->rank, (long)w->pid,
                    how);
        }
    int code = failure_exit_code(cause->wait_status);
    /* A usage or config error would only fail again. */
    *restartable = code != TSRNN_EXIT_USAGE && l->interrupts == 0;
    return code;
}

static bool holds_last_checkpoint(const char *folder)
{
    static const char prefix[] = "last-epoch=", suffix[] = ".safetensors";
    DIR *dir = opendir(folder);
    struct dirent *e;
    bool found = false;
    if (dir == NULL)
        return false;
    while (!found && (e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        found = strncmp(e->d_name, prefix, sizeof(prefix) - 1) == 0 && len >= sizeof(suffix) - 1 &&
                strcmp(e->d_name + len - (sizeof(suffix) - 1), suffix) == 0;
    }
    closedir(dir);
    return found;
}

/* Chooses what the next attempt adds to the workers' command line and says so. */
static void plan_restart(struct launch *l, int max_restarts)
{
    char folder[PATH_MAX + 32];
    const char *how = "as before", *why = ": no checkpoint of this run yet";

    l->restart_argc = 0;
    if (l->run_dir[0] == '\0') {
        fprintf(stderr,
                PROGRAM ": restarting all %d workers from the start (restart %d of %d): rank 0 "
                        "never reported its run folder\n",
                l->count, l->attempt + 1, max_restarts);
        return;
    }
    snprintf(folder, sizeof(folder), "%s/checkpoints", l->run_dir);
    if (holds_last_checkpoint(folder)) {
        l->restart_args[l->restart_argc++] = "--set";
        l->restart_args[l->restart_argc++] = "output.force_reset=false";
        l->restart_args[l->restart_argc++] = "--resume";
        l->restart_args[l->restart_argc++] = "last";
        how = "from the last checkpoint";
        why = "";
    } else if (l->cfg->resume[0] == '\0') {
        /* The folder holds only the failed attempt's files. */
        l->restart_args[l->restart_argc++] = "--set";
        l->restart_args[l->restart_argc++] = "output.force_reset=true";
        how = "from the start";
        why = ": no checkpoint yet";
    }
    fprintf(stderr, PROGRAM ": restarting all %d workers %s (restart %d of %d)%s\n", l->count, how,
            l->attempt + 1, max_restarts, why);
}

/* Printed last, on stdout: what rank 0 handed back (ddp_spawn's result queue). */
static void print_summary(const struct launch *l)
{
    const struct report *rep = &l->report;
    printf(PROGRAM ": %d worker%s (%s, %s) finished in %.2f s", l->count, l->count == 1 ? "" : "s",
           l->gpu ? "gpu" : "cpu", backend_name(l), tsrnn_clock_now_s() - l->start_s);
    if (rep->done && rep->epochs[0] && rep->steps[0])
        printf(": %s epochs, %s steps", rep->epochs, rep->steps);
    if (l->attempt > 0)
        printf(" (after %d restart%s)", l->attempt, l->attempt == 1 ? "" : "s");
    printf("\n");
    if (!rep->done) {
        printf("  rank 0 exited 0 but its report is missing (no done=1 on the report pipe): "
               "its output above is all there is\n");
        fflush(stdout);
        return;
    }
    printf("  best checkpoint: %s\n",
           rep->best_checkpoint[0] ? tsrnn_display_path(rep->best_checkpoint) : "none");
    if (rep->best_val_loss[0])
        printf("  best val_loss:   %s\n", rep->best_val_loss);
    if (rep->train_loss[0])
        printf("  train_loss:      %s\n", rep->train_loss);
    if (rep->val_loss[0])
        printf("  val_loss:        %s\n", rep->val_loss);
    if (rep->last_checkpoint[0])
        printf("  last checkpoint: %s\n", tsrnn_display_path(rep->last_checkpoint));
    fflush(stdout);
}

static enum tsrnn_status run_job(struct launch *l, int *exit_code)
{
    int max_restarts = l->cfg->max_restarts;

    l->start_s = tsrnn_clock_now_s();
    for (l->attempt = 0;; l->attempt++) {
        bool restartable;
        TSRNN_TRY(start_attempt(l));
        supervise(l);
        end_attempt(l);
        *exit_code = finish_attempt(l, &restartable);
        if (*exit_code == TSRNN_EXIT_OK) {
            print_summary(l);
            return TSRNN_OK;
        }
        read_signals(l); /* an interrupt while the last workers were reaped stops the job */
        if (!restartable && max_restarts > 0 && *exit_code == TSRNN_EXIT_USAGE)
            fprintf(stderr, PROGRAM ": not restarting: exit code 2 is a usage or config error, "
                                    "which a restart would repeat\n");
        if (!restartable || l->interrupts > 0)
            return TSRNN_OK;
        if (l->attempt >= max_restarts) {
            if (max_restarts > 0)
                fprintf(stderr, PROGRAM ": giving up: all %d restarts used\n", max_restarts);
            return TSRNN_OK;
        }
        plan_restart(l, max_restarts);
    }
}

enum tsrnn_status tsrnn_launch_run(const struct tsrnn_launch_options *opt, int *exit_code)
{
    struct launch *l = calloc(1, sizeof(*l));
    enum tsrnn_status status = TSRNN_OK;
    size_t env_count = 0;

    *exit_code = TSRNN_EXIT_RUNTIME;
    if (l == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    l->opt = opt;
    l->self = getpid();
    /* A process a worker started and left behind becomes the launcher's child, not init's:
     * reaped here, and never a zombie under an init that does not reap. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    l->devnull = -1;
    l->cfg = malloc(sizeof(*l->cfg));
    while (environ[env_count] != NULL)
        env_count++;
    l->envp = calloc(env_count + ENV_OWN_MAX + 1, sizeof(*l->envp));
    if (l->cfg == NULL || l->envp == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    if (status == TSRNN_OK)
        status = load_config(l);
    if (status == TSRNN_OK)
        status = find_worker(l);
    if (status == TSRNN_OK)
        status = resolve_devices(l);
    if (status == TSRNN_OK) {
        l->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (l->devnull < 0)
            status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot open /dev/null");
    }
    if (status == TSRNN_OK)
        status = make_rendezvous(l);
    if (status == TSRNN_OK)
        status = run_job(l, exit_code);

    /* Cleanup may set its own message: keep the one main() prints. */
    char message[2048];
    snprintf(message, sizeof(message), "%s", tsrnn_last_error());
    end_attempt(l);
    if (l->rendezvous[0] != '\0' && tsrnn_remove_tree(l->rendezvous) != TSRNN_OK)
        fprintf(stderr, PROGRAM ": warning: cannot remove the rendezvous folder %s: %s\n",
                l->rendezvous, tsrnn_last_error());
    if (status != TSRNN_OK)
        tsrnn_error(status, "%s", message);
    if (l->devnull >= 0)
        close(l->devnull);
    free(l->workers);
    free(l->pollfds);
    free(l->poll_streams);
    free(l->poll_workers);
    free(l->envp);
    free(l->cfg);
    free(l);
    return status;
}
