/* Starting workers: the worker program, the private rendezvous folder, and per attempt one
 * fork + exec per worker with world.h's environment, its device and its command line. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "tsrnn/fs.h"

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
enum tsrnn_status find_worker(struct launch *l)
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

/* Whether `fd` (an open RENDEZVOUS_LOCK) is free: its launcher is gone. The lock taken to
 * find out is kept until `fd` is closed, so that no two launchers clean up the same folder. */
static bool lock_is_free(int fd)
{
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    return fcntl(fd, F_SETLK, &fl) == 0;
}

/* Removes the rendezvous folders in `tmp` whose launcher is gone (a SIGKILLed launcher could
 * not remove its own). Only this user's folders, never through a link; one whose launcher
 * still holds its lock stays. Failures are warnings: a stale folder costs only space. */
static void remove_stale_rendezvous(const char *tmp)
{
    static const char prefix[] = "tsrnn-rendezvous-";
    DIR *dir = opendir(tmp);
    struct dirent *e;
    if (dir == NULL)
        return;
    while ((e = readdir(dir)) != NULL) {
        char path[PATH_MAX], lock[PATH_MAX + 32];
        struct stat st;
        if (strncmp(e->d_name, prefix, sizeof(prefix) - 1) != 0 ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name) >= sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        snprintf(lock, sizeof(lock), "%s/%s", path, RENDEZVOUS_LOCK);
        int fd = open(lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        bool stale =
            fd >= 0 ? lock_is_free(fd)
                    : errno == ENOENT && time(NULL) - st.st_mtime > RENDEZVOUS_UNLOCKED_STALE_S;
        if (stale && tsrnn_remove_tree(path) == TSRNN_OK)
            fprintf(stderr, PROGRAM ": removed %s, left by a launcher that is gone\n", path);
        else if (stale)
            fprintf(stderr, PROGRAM ": warning: a stale rendezvous folder: %s\n",
                    tsrnn_last_error());
        if (fd >= 0)
            close(fd);
    }
    closedir(dir);
}

/* A private folder (mode 0700) for the workers' file rendezvous: nobody else may place
 * addresses in it. The launcher holds a lock on a file in it while it lives, so that a later
 * launcher can tell a folder that a SIGKILLed one left behind, and removes those first. */
enum tsrnn_status make_rendezvous(struct launch *l)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    remove_stale_rendezvous(tmp);
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
    char lock[PATH_MAX + 32];
    snprintf(lock, sizeof(lock), "%s/%s", l->rendezvous, RENDEZVOUS_LOCK);
    l->rendezvous_lock = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (l->rendezvous_lock < 0 || !lock_is_free(l->rendezvous_lock))
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot lock the rendezvous folder %s",
                                 l->rendezvous);
    return TSRNN_OK;
}

/* Removes this launcher's rendezvous folder, then lets go of its lock. */
void remove_rendezvous(struct launch *l)
{
    if (l->rendezvous[0] != '\0' && tsrnn_remove_tree(l->rendezvous) != TSRNN_OK)
        fprintf(stderr, PROGRAM ": warning: cannot remove the rendezvous folder %s: %s\n",
                l->rendezvous, tsrnn_last_error());
    if (l->rendezvous_lock >= 0)
        close(l->rendezvous_lock);
    l->rendezvous_lock = -1;
}

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
    snprintf(l->env_own[own++], cap, "TSRNN_COMM_BACKEND=%s", l->comm_backend);
    if (w->rank == 0)
        snprintf(l->env_own[own++], cap, "TSRNN_REPORT_FD=%d", REPORT_FD);
    if (l->gpu) {
        snprintf(l->env_own[own++], cap, "CUDA_VISIBLE_DEVICES=%s", w->gpu);
        /* PyTorch's name, which NCCL's and CUDA's tools (and users' scripts) read. */
        snprintf(l->env_own[own++], cap, "LOCAL_RANK=%d", w->rank);
    } else {
        /* One thread per CPU worker: W workers already use W cores. */
        snprintf(l->env_own[own++], cap, "OPENBLAS_NUM_THREADS=1");
        snprintf(l->env_own[own++], cap, "OMP_NUM_THREADS=1");
        /* OPENBLAS_CORETYPE is the user's: a worker here must compute what the same rank
         * computes under mpirun, which sets nothing (docs/numerics.md "Kernels and
         * OpenBLAS"); a misdetecting OpenBLAS gets the worker's warning instead. */
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
    CHILD_NETWORK,
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

    /* The job's private network (netns.c): the user namespace first, which gives the right to
     * join the network namespace it owns. Before PR_SET_PDEATHSIG, which a change of
     * credentials may clear. */
    if (l->userns_fd >= 0 && setns(l->userns_fd, CLONE_NEWUSER) != 0)
        child_fail(status_fd, CHILD_NETWORK);
    if (l->netns_fd >= 0 && setns(l->netns_fd, CLONE_NEWNET) != 0)
        child_fail(status_fd, CHILD_NETWORK);
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
    int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 }, report_pipe[2] = { -1, -1 },
        status_pipe[2] = { -1, -1 };
    enum tsrnn_status status = TSRNN_OK;
    struct child_error ce;
    ssize_t n;

    if (pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0 ||
        pipe2(w->rank == 0 ? report_pipe : out_pipe, O_CLOEXEC) != 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot start rank %d: pipe", w->rank);
        goto out;
    }
    const int fds[4] = { l->devnull, w->rank == 0 ? STDOUT_FILENO : out_pipe[1], err_pipe[1],
                         report_pipe[1] };
    pid_t pid = fork();
    if (pid < 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot start rank %d: fork", w->rank);
        goto out;
    }
    if (pid == 0)
        exec_worker(l, w, argv, fds, w->rank == 0 ? 4 : 3, status_pipe[1]);
    /* Also here, so that a signal sent before the child ran setpgid() reaches its group. */
    setpgid(pid, pid);
    w->pid = pid;
    w->alive = true;
    close_fd(&status_pipe[1]);
    do
        n = read(status_pipe[0], &ce, sizeof(ce));
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(ce)) {
        while (waitpid(pid, &w->wait_status, 0) < 0 && errno == EINTR)
            ;
        w->alive = false;
        if (ce.stage == CHILD_EXEC)
            status = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum, "cannot run %s", l->worker_path);
        else if (ce.stage == CHILD_NETWORK)
            status = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum,
                                       "cannot put rank %d in the job's private network (setns)",
                                       w->rank);
        else if (ce.stage == CHILD_AFFINITY)
            status = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum, "cannot pin rank %d to core %d",
                                       w->rank, w->core);
        else
            status = tsrnn_error_errno(TSRNN_ERR_IO, ce.errnum,
                                       "cannot set up rank %d's standard streams", w->rank);
        goto out;
    }
    w->err.fd = err_pipe[0];
    w->out.fd = out_pipe[0];
    l->report_stream.fd = w->rank == 0 ? report_pipe[0] : l->report_stream.fd;
    err_pipe[0] = out_pipe[0] = report_pipe[0] = -1;

out:
    for (int i = 0; i < 2; i++) {
        close_fd(&out_pipe[i]);
        close_fd(&err_pipe[i]);
        close_fd(&report_pipe[i]);
        close_fd(&status_pipe[i]);
    }
    return status;
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
enum tsrnn_status start_attempt(struct launch *l)
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
    enum tsrnn_status status = TSRNN_OK;
    char **argv = worker_argv(l, &progress_idx);
    if (argv == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    printf("Launching %d worker process%s (%s, %s) for %s\n", l->count, l->count == 1 ? "" : "es",
           l->gpu ? "gpu" : "cpu", l->comm_backend, l->opt->ini_path);
    fflush(stdout);
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        /* Rank 0 may draw a live bar on a terminal; the others write to a log. */
        argv[progress_idx] = r == 0 ? "--progress=auto" : "--progress=plain";
        build_env(l, w);
        status = spawn_worker(l, w, argv);
        if (status != TSRNN_OK)
            goto out;
        if (l->gpu)
            printf("  rank %d (local %d): pid %ld, gpu %s\n", r, r, (long)w->pid, w->gpu);
        else if (w->core >= 0)
            printf("  rank %d (local %d): pid %ld, core %d\n", r, r, (long)w->pid, w->core);
        else
            printf("  rank %d (local %d): pid %ld, any core\n", r, r, (long)w->pid);
        fflush(stdout);
    }
out:
    if (status != TSRNN_OK)
        end_attempt(l); /* the workers started so far */
    free(argv);
    return status;
}
