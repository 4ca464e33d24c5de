/* tsrnn under a real Slurm (Debian 12's slurm-wlm 22.05), as a cluster user runs it: srun
 * and sbatch on two nodes.
 *
 * The cluster, made per run and gone after it: munged, slurmctld and two slurmds started by
 * hand as root (no systemd, no cgroups: ProctrackType=proctrack/linuxproc,
 * TaskPlugin=task/none). Each node is a "host" of its own: a network namespace and a UTS
 * namespace (its own hostname, which Open MPI and PMIx take for the node's identity), held by
 * a small process of this test, the two joined by a veth pair on a private subnet; each
 * slurmd has its own spool folder and TmpFS (PMIx puts its per-step folders there, and the
 * two nodes share one file system). The daemons are entered into the namespaces with nsenter
 * --net/--uts, not `ip netns exec`, which remounts /sys (slurmd 22.05 then fails on cgroups).
 * Names, subnet and ports come from this process's id, so concurrent runs do not collide.
 * Every daemon, slurmstepd, srun and task of the cluster lives in one of the two network
 * namespaces; each holder, when told to or when this test dies (PR_SET_PDEATHSIG), kills
 * every process in its namespace, which then disappears with its end of the veth pair.
 *
 * The cases, each asserting numbers:
 *   srun --mpi=pmix -N2 -n2: one task on each host, the final weights of the one-host
 *     `mpirun -np 2` run (within 1e-6; 0 expected);
 *   srun without --mpi (MpiDefault=none) and with --mpi=pmi2: exit 2 before MPI_Init, with
 *     the --mpi=pmix hint;
 *   sbatch scripts/cluster/tsrnn.sbatch, as a checkout holds it, no variable set: completes,
 *     rank 0 writes the run folder;
 *   scancel of a running batch job: both ranks stop after the same step, exit 130, rank 0's
 *     checkpoint loads, and a resume from it equals an uninterrupted run bit for bit;
 *   one rank SIGKILLed under srun --kill-on-bad-exit (KillWait is Slurm's stock 30 s): the job
 *     ends within 5 s, non-zero, no task left; a resume from the last checkpoint equals an
 *     uninterrupted run bit for bit;
 *   one rank SIGSTOPped: the job ends within timeout_s + 5 s, exit 3, no task left.
 * Left out: a cut link (the node stays COMPLETING for about 90 s afterwards, longer than the
 * whole test may take); tests/test_mpi.c cuts one under mpirun.
 *
 * Exits 77 (skipped), saying why, without root, namespaces, Slurm and munge
 * (scripts/install-deps.sh --test installs slurmctld slurmd slurm-client munge), mpirun, or
 * a build with the mpi backend.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/fs.h"
#include "tsrnn/model.h"

#define NODE_COUNT     2
#define KILL_WAIT_S    30  /* Slurm's default KillWait: what a rank that ignores SIGTERM costs */
#define DEAD_PEER_S    5.0 /* a killed rank ends the job within this */
#define STOP_TIMEOUT_S 4   /* [trainer] timeout_s of the SIGSTOP case */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --- the programs ------------------------------------------------------------------- */

enum program {
    P_MUNGED,
    P_SLURMCTLD,
    P_SLURMD,
    P_SRUN,
    P_SBATCH,
    P_SCANCEL,
    P_SCONTROL,
    P_SINFO,
    P_NSENTER,
    P_IP,
    PROGRAM_COUNT
};
static const char *const program_names[PROGRAM_COUNT] = {
    "munged",  "slurmctld", "slurmd", "srun",    "sbatch",
    "scancel", "scontrol",  "sinfo",  "nsenter", "ip",
};
static char programs[PROGRAM_COUNT][PATH_MAX];

/* Finds every program in the usual folders (root's PATH may lack /usr/sbin). */
static bool find_programs(void)
{
    static const char *const dirs[] = { "/usr/sbin", "/usr/bin", "/sbin", "/bin" };
    for (int p = 0; p < PROGRAM_COUNT; p++) {
        programs[p][0] = '\0';
        for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]) && programs[p][0] == '\0'; d++) {
            snprintf(programs[p], PATH_MAX, "%s/%s", dirs[d], program_names[p]);
            if (access(programs[p], X_OK) != 0)
                programs[p][0] = '\0';
        }
        if (programs[p][0] == '\0') {
            printf("# skipped: no %s (scripts/install-deps.sh --test installs slurmctld slurmd "
                   "slurm-client munge iproute2)\n",
                   program_names[p]);
            return false;
        }
    }
    return true;
}

/* --- the hosts: one network + UTS namespace each, held by a child of this test ------- */

struct host {
    pid_t holder;
    char name[32]; /* hostname and Slurm node name */
    char addr[20];
    char veth[16];
    char net_ns[64], uts_ns[64]; /* nsenter's --net= and --uts= arguments */
};

static struct cluster {
    bool made;
    char dir[64]; /* /tmp/tsrnn-slurm-XXXXXX: keys, configuration, state, spool, logs */
    char conf[PATH_MAX];
    char subnet[24];
    int ctld_port, slurmd_port;
    struct host hosts[NODE_COUNT];
} cl;

/* Kills every process other than this one whose network namespace is this one's; returns how
 * many it found. Async-signal-safe enough for the holder, which does nothing else. */
static int kill_namespace_peers(void)
{
    char self[64], link[128], path[64];
    ssize_t n = readlink("/proc/self/ns/net", self, sizeof(self) - 1);
    if (n <= 0)
        return 0;
    self[n] = '\0';
    int found = 0;
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(proc)) != NULL) {
        pid_t pid = (pid_t)atol(e->d_name);
        if (pid <= 0 || pid == getpid())
            continue;
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
        ssize_t m = readlink(path, link, sizeof(link) - 1);
        if (m <= 0)
            continue; /* gone, or a zombie */
        link[m] = '\0';
        if (strcmp(link, self) == 0) {
            kill(pid, SIGKILL);
            found++;
        }
    }
    closedir(proc);
    return found;
}

/* The holder of host `h`: makes its namespaces, says so on `ready`, then waits for SIGTERM
 * (from teardown, or PR_SET_PDEATHSIG when this test dies), empties its namespace and exits. */
static void holder_main(const char *name, int ready, pid_t parent)
{
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(0);
    char ok = 'R';
    if (unshare(CLONE_NEWNET | CLONE_NEWUTS) != 0 || sethostname(name, strlen(name)) != 0)
        ok = 'E';
    if (write(ready, &ok, 1) != 1 || ok != 'R')
        _exit(1);
    close(ready);
    int sig;
    sigwait(&term, &sig);
    /* New processes may still be forked while the first ones die: sweep until none is left
     * (at most 5 s; SIGKILL takes effect at once). */
    for (int round = 0; round < 500 && kill_namespace_peers() > 0; round++)
        usleep(10000);
    _exit(0);
}

/* Runs a command line, its output to stderr; returns its exit status. */
__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    fflush(stdout);
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static bool make_hosts(void)
{
    pid_t me = getpid();
    int tag = (int)(me % 100000);
    /* 10.X.Y.0/24 from the pid: another run has another subnet (and, the namespaces being
     * private, could not see this one anyway). */
    snprintf(cl.subnet, sizeof(cl.subnet), "10.%d.%d.0/24", 100 + (int)(me % 100),
             (int)((me / 100) % 250));
    cl.made = true; /* from here on, cluster_remove() ends what there is */
    for (int h = 0; h < NODE_COUNT; h++) {
        struct host *host = &cl.hosts[h];
        snprintf(host->name, sizeof(host->name), "tsrnn%d-n%d", tag, h);
        snprintf(host->addr, sizeof(host->addr), "10.%d.%d.%d", 100 + (int)(me % 100),
                 (int)((me / 100) % 250), h + 1);
        snprintf(host->veth, sizeof(host->veth), "tss%d-%d", tag, h);
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) != 0)
            return false;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return false;
        if (pid == 0) {
            close(pipefd[0]);
            holder_main(host->name, pipefd[1], me);
        }
        close(pipefd[1]);
        host->holder = pid;
        char ok = 0;
        ssize_t n = read(pipefd[0], &ok, 1);
        close(pipefd[0]);
        if (n != 1 || ok != 'R') {
            printf("# skipped: cannot make a network and UTS namespace here (not root, or no "
                   "CAP_SYS_ADMIN in this container)\n");
            return false;
        }
        snprintf(host->net_ns, sizeof(host->net_ns), "--net=/proc/%d/ns/net", (int)pid);
        snprintf(host->uts_ns, sizeof(host->uts_ns), "--uts=/proc/%d/ns/uts", (int)pid);
    }
    /* The veth pair is made with its ends in the namespaces: its names never exist outside. */
    const char *ip = programs[P_IP], *ns = programs[P_NSENTER];
    int bad = sh("%s link add %s netns %d type veth peer name %s netns %d", ip, cl.hosts[0].veth,
                 (int)cl.hosts[0].holder, cl.hosts[1].veth, (int)cl.hosts[1].holder);
    for (int h = 0; h < NODE_COUNT && !bad; h++)
        bad = sh("%s %s %s addr add %s/24 dev %s && %s %s %s link set lo up && %s %s %s link set "
                 "%s up",
                 ns, cl.hosts[h].net_ns, ip, cl.hosts[h].addr, cl.hosts[h].veth, ns,
                 cl.hosts[h].net_ns, ip, ns, cl.hosts[h].net_ns, ip, cl.hosts[h].veth);
    if (bad) {
        printf("# skipped: could not join the two namespaces by a veth pair\n");
        return false;
    }
    return true;
}

/* --- the daemons -------------------------------------------------------------------- */

/* argv with nsenter into host h's namespaces in front, in a static buffer per slot. */
static const char **on_host(int slot, int h, const char *const *argv)
{
    static const char *buf[4][96];
    size_t n = 0;
    buf[slot][n++] = programs[P_NSENTER];
    buf[slot][n++] = cl.hosts[h].net_ns;
    buf[slot][n++] = cl.hosts[h].uts_ns;
    for (; *argv != NULL && n < 95; argv++)
        buf[slot][n++] = *argv;
    buf[slot][n] = NULL;
    return buf[slot];
}

/* Starts argv in the background, its output appended to `log` (NULL: /dev/null), in folder
 * `cwd` (NULL: this one); it dies with this test. Returns its pid. */
static pid_t spawn(const char *const *argv, const char *log, const char *cwd)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int in = open("/dev/null", O_RDONLY);
    int out = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0600) : open("/dev/null", O_WRONLY);
    if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(127);
    if (cwd != NULL && chdir(cwd) != 0)
        _exit(127);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

static const char *cluster_path(int slot, const char *name)
{
    static char paths[8][PATH_MAX];
    snprintf(paths[slot], PATH_MAX, "%s/%s", cl.dir, name);
    return paths[slot];
}

static bool write_conf(void)
{
    FILE *f = fopen(cl.conf, "w");
    if (f == NULL)
        return false;
    fprintf(f,
            "# tests/test_slurm.c: a two-node cluster of this run\n"
            "ClusterName=tsrnn%d\n"
            "SlurmctldHost=%s(%s)\n"
            "SlurmctldPort=%d\n"
            "SlurmdPort=%d\n"
            "SlurmUser=root\n"
            "SlurmdUser=root\n"
            "AuthType=auth/munge\n"
            "AuthInfo=socket=%s/munge.sock\n"
            "CredType=cred/munge\n"
            "StateSaveLocation=%s/state\n"
            "SlurmdSpoolDir=%s/spool/%%n\n"
            "TmpFS=%s/tmp/%%n\n"
            "SlurmctldPidFile=%s/slurmctld.pid\n"
            "SlurmdPidFile=%s/slurmd-%%n.pid\n"
            "SlurmctldLogFile=%s/slurmctld.log\n"
            "SlurmdLogFile=%s/slurmd-%%n.log\n"
            "ProctrackType=proctrack/linuxproc\n"
            "TaskPlugin=task/none\n"
            "JobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\n"
            "SelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_CPU\n"
            "SchedulerType=sched/builtin\n"
            "MpiDefault=none\n"
            "ReturnToService=2\n"
            "SlurmdParameters=config_overrides\n"
            "KillWait=%d\n"
            "MinJobAge=300\n"
            "InactiveLimit=0\n",
            (int)(getpid() % 100000), cl.hosts[0].name, cl.hosts[0].addr, cl.ctld_port,
            cl.slurmd_port, cl.dir, cl.dir, cl.dir, cl.dir, cl.dir, cl.dir, cl.dir, cl.dir,
            KILL_WAIT_S);
    for (int h = 0; h < NODE_COUNT; h++)
        fprintf(f, "NodeName=%s NodeAddr=%s CPUs=2 State=UNKNOWN\n", cl.hosts[h].name,
                cl.hosts[h].addr);
    fprintf(f, "PartitionName=test Nodes=%s,%s Default=YES MaxTime=INFINITE State=UP\n",
            cl.hosts[0].name, cl.hosts[1].name);
    return fclose(f) == 0;
}

/* Runs a Slurm client on host 0 (where slurmctld is), in folder `cwd` (NULL: the run folder). */
static int client(struct tu_result *res, const char *cwd, const char *const *argv, int timeout_s)
{
    const char *full[96];
    size_t n = 0;
    full[n++] = "/bin/sh";
    full[n++] = "-c";
    full[n++] = "cd \"$0\" && exec \"$@\"";
    full[n++] = cwd != NULL ? cwd : tu_run_dir();
    for (const char **p = on_host(0, 0, argv); *p != NULL && n < 95; p++)
        full[n++] = *p;
    full[n] = NULL;
    assert_int_equal(tu_run(full, timeout_s, res), 0);
    if (res->timed_out)
        fail_msg("%s did not end within %d s; stderr:\n%s", argv[0], timeout_s, res->err);
    return res->exit_code;
}

static void print_logs(void)
{
    sh("tail -n 20 %s/*.log %s/munged.out >&2", cl.dir, cl.dir);
}

/* Waits until both nodes are idle (the slurmds registered); false after 60 s. */
static bool wait_nodes_idle(void)
{
    struct tu_result *res = malloc(sizeof(*res));
    const char *argv[] = { programs[P_SINFO], "-h", "-N", "-o", "%T", NULL };
    bool idle = false;
    for (double t0 = now_s(); !idle && now_s() - t0 < 60;) {
        if (client(res, NULL, argv, 30) == 0) {
            int count = 0;
            for (const char *p = res->out; (p = strstr(p, "idle")) != NULL; p += 4)
                count++;
            idle = count == NODE_COUNT;
        }
        if (!idle)
            usleep(100000);
    }
    free(res);
    return idle;
}

static bool start_cluster(void)
{
    snprintf(cl.dir, sizeof(cl.dir), "/tmp/tsrnn-slurm-XXXXXX");
    if (mkdtemp(cl.dir) == NULL || chmod(cl.dir, 0711) != 0)
        return false;
    pid_t me = getpid();
    cl.ctld_port = 20000 + (int)(me % 20000) * 2;
    cl.slurmd_port = cl.ctld_port + 1;
    snprintf(cl.conf, sizeof(cl.conf), "%s/slurm.conf", cl.dir);
    const char *folders[] = { "state", "spool", "tmp" };
    for (size_t i = 0; i < 3; i++) {
        if (mkdir(cluster_path(0, folders[i]), 0700) != 0)
            return false;
        for (int h = 0; h < NODE_COUNT; h++) {
            char sub[PATH_MAX + 64];
            snprintf(sub, sizeof(sub), "%s/%s", cluster_path(0, folders[i]), cl.hosts[h].name);
            if (i > 0 && mkdir(sub, 0700) != 0)
                return false;
        }
    }
    if (!write_conf())
        return false;
    /* munge's key: 1024 random bytes, readable by its owner only. */
    if (sh("head -c 1024 /dev/urandom > %s/munge.key && chmod 400 %s/munge.key", cl.dir, cl.dir))
        return false;
    setenv("SLURM_CONF", cl.conf, 1);

    char key[PATH_MAX + 32], sock[PATH_MAX + 32], pid[PATH_MAX + 32], log[PATH_MAX + 32],
        seed[PATH_MAX + 32];
    snprintf(key, sizeof(key), "--key-file=%s/munge.key", cl.dir);
    snprintf(sock, sizeof(sock), "--socket=%s/munge.sock", cl.dir);
    snprintf(pid, sizeof(pid), "--pid-file=%s/munged.pid", cl.dir);
    snprintf(log, sizeof(log), "--log-file=%s/munged.log", cl.dir);
    snprintf(seed, sizeof(seed), "--seed-file=%s/munged.seed", cl.dir);
    const char *munged[] = { programs[P_MUNGED], "-F", "-f", key, sock, pid, log, seed, NULL };
    if (spawn(on_host(0, 0, munged), cluster_path(1, "munged.out"), NULL) < 0)
        return false;
    /* slurmctld and the slurmds reach munged by its socket: wait until it exists. */
    char sock_path[PATH_MAX + 32];
    snprintf(sock_path, sizeof(sock_path), "%s/munge.sock", cl.dir);
    for (double t0 = now_s(); access(sock_path, F_OK) != 0; usleep(10000))
        if (now_s() - t0 > 20)
            return false;
    const char *ctld[] = { programs[P_SLURMCTLD], "-D", "-i", "-f", cl.conf, NULL };
    if (spawn(on_host(0, 0, ctld), cluster_path(1, "ctld.out"), NULL) < 0)
        return false;
    for (int h = 0; h < NODE_COUNT; h++) {
        const char *slurmd[] = {
            programs[P_SLURMD], "-D", "-N", cl.hosts[h].name, "-f", cl.conf, NULL
        };
        char out[64];
        snprintf(out, sizeof(out), "slurmd-%d.out", h);
        if (spawn(on_host(0, h, slurmd), cluster_path(1, out), NULL) < 0)
            return false;
    }
    return wait_nodes_idle();
}

static void cluster_remove(void)
{
    if (!cl.made)
        return;
    cl.made = false;
    for (int h = 0; h < NODE_COUNT; h++)
        if (cl.hosts[h].holder > 0)
            kill(cl.hosts[h].holder, SIGTERM);
    for (int h = 0; h < NODE_COUNT; h++)
        if (cl.hosts[h].holder > 0)
            waitpid(cl.hosts[h].holder, NULL, 0);
    /* Every process of the cluster is gone: reap the daemons and what this test adopted as
     * the subreaper (slurmstepds, tasks). */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    if (cl.dir[0] != '\0')
        tu_rmtree(cl.dir);
}

static void cluster_remove_on_signal(int sig)
{
    cluster_remove();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cluster_setup(void **state)
{
    if (tu_setup_run_dir(state) != 0)
        return -1;
    signal(SIGTERM, cluster_remove_on_signal);
    signal(SIGINT, cluster_remove_on_signal);
    double t0 = now_s();
    if (!start_cluster()) {
        fprintf(stderr, "the cluster did not start; its logs:\n");
        print_logs();
        return -1;
    }
    printf("# a two-node Slurm (%s, %s on %s; slurmctld port %d) up in %.2f s\n", cl.hosts[0].name,
           cl.hosts[1].name, cl.subnet, cl.ctld_port, now_s() - t0);
    return 0;
}

static int cluster_teardown(void **state)
{
    cluster_remove();
    return tu_teardown_run_dir(state);
}

/* --- runs --------------------------------------------------------------------------- */

/* A folder below the test's run folder, made if needed; static storage per slot. */
static const char *subdir(int slot, const char *name)
{
    static char paths[8][PATH_MAX];
    snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", tu_run_dir(), name);
    if (mkdir(paths[slot], 0700) != 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", paths[slot], strerror(errno));
    return paths[slot];
}

/* The options every run of this file shares, as test_mpi.c's: the example, a small LSTM,
 * single-threaded CPU ranks. */
static const char *const common_sets[] = {
    "model.model=LSTM",           "model.hidden_dim=16",          "training.n_epochs=5",
    "trainer.accelerator=cpu",    "trainer.num_threads=1",        "output.model_name=run",
    "output.work_dir=darts_logs", "output.log_tensorboard=false",
};

/* Appends the worker's arguments (the common sets, `extra`, the example) to argv at *n. */
static void worker_args(const char **argv, size_t *n, const char *const *extra)
{
    for (size_t i = 0; i < sizeof(common_sets) / sizeof(common_sets[0]); i++) {
        argv[(*n)++] = "--set";
        argv[(*n)++] = common_sets[i];
    }
    for (; extra != NULL && *extra != NULL; extra++) {
        if (strncmp(*extra, "--", 2) != 0)
            argv[(*n)++] = "--set";
        argv[(*n)++] = *extra;
    }
    argv[(*n)++] = "--progress=none";
    argv[(*n)++] = tu_source("examples/air_passengers.ini");
}

/* A script that records "<pid> <hostname>" of each task in dir/task.<SLURM_PROCID>, then
 * becomes the worker. */
static const char *task_script(const char *dir)
{
    static char path[PATH_MAX];
    char text[PATH_MAX * 2];
    snprintf(text, sizeof(text),
             "#!/bin/sh\necho \"$$ $(hostname)\" > '%s'/task.$SLURM_PROCID\nexec '%s' \"$@\"\n",
             dir, tu_env("TSRNN_WORKER"));
    snprintf(path, sizeof(path), "%s", tu_write(dir, "task.sh", text));
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

/* What tsrnn.sbatch runs srun with. */
static const char *const pmix_job[] = { "--mpi=pmix", "--kill-on-bad-exit=1", NULL };

/* srun <options> -N2 -n2 `program` with the worker's arguments. */
static const char **srun_argv(const char **argv, const char *const *options, const char *program,
                              const char *const *extra)
{
    size_t n = 0;
    argv[n++] = programs[P_SRUN];
    for (; *options != NULL; options++)
        argv[n++] = *options;
    argv[n++] = "-N2";
    argv[n++] = "-n2";
    argv[n++] = program;
    worker_args(argv, &n, extra);
    argv[n] = NULL;
    return argv;
}

/* srun in `dir`, waited for. */
static int srun(struct tu_result *res, const char *dir, const char *const *options,
                const char *program, const char *const *extra)
{
    const char *argv[96];
    return client(res, dir, srun_argv(argv, options, program, extra), 120);
}

/* dir/darts_logs/<model>, in a static buffer per slot. */
static const char *run_folder(int slot, const char *dir, const char *model)
{
    static char paths[4][PATH_MAX + 128];
    snprintf(paths[slot], sizeof(paths[slot]), "%s/darts_logs/%s", dir, model);
    return paths[slot];
}

/* The newest checkpoint `which` of a run folder: its parameters (count in *count; the caller
 * frees) and its training state. */
static float *checkpoint_params(const char *run, const char *which, size_t *count,
                                struct tsrnn_train_state *st)
{
    char ckdir[PATH_MAX + 256], path[PATH_MAX];
    snprintf(ckdir, sizeof(ckdir), "%s/checkpoints", run);
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    if (tsrnn_checkpoint_locate(path, sizeof(path), ckdir, which) != TSRNN_OK ||
        tsrnn_checkpoint_read(ck, path) != TSRNN_OK)
        fail_msg("%s", tsrnn_last_error());
    struct tsrnn_compute *compute;
    struct tsrnn_compute_options options = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    assert_int_equal(tsrnn_compute_create(&compute, &options), TSRNN_OK);
    struct tsrnn_model m = { 0 };
    assert_int_equal(tsrnn_model_init(&m, compute, &ck->dims, 1, 1), TSRNN_OK);
    assert_int_equal(tsrnn_checkpoint_restore(ck, &m, NULL), TSRNN_OK);
    *count = m.table.total_count;
    float *p = malloc(*count * sizeof(float));
    assert_int_equal(tsrnn_model_download_params(&m, p), TSRNN_OK);
    *st = ck->state;
    st->monitor = NULL; /* points into ck */
    tsrnn_model_finish(&m);
    tsrnn_compute_destroy(compute);
    tsrnn_checkpoint_finish(ck);
    free(ck);
    return p;
}

/* The largest relative difference between two runs' last weights; both ran *steps steps. */
static double weight_difference(const char *run_a, const char *run_b, int64_t *steps)
{
    size_t na, nb;
    struct tsrnn_train_state sa, sb;
    float *a = checkpoint_params(run_a, "last", &na, &sa);
    float *b = checkpoint_params(run_b, "last", &nb, &sb);
    assert_int_equal(na, nb);
    assert_int_equal(sa.global_step, sb.global_step);
    double worst = 0.0, moved = 0.0;
    for (size_t i = 0; i < na; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        worst = fmax(worst, d / fmax(fabs((double)b[i]), 1e-3));
        moved = fmax(moved, fabs((double)a[i]));
    }
    assert_true(moved > 0.0);
    free(a);
    free(b);
    *steps = sa.global_step;
    return worst;
}

/* Resumes the run `model` in `dir` from its last checkpoint to `epochs` epochs in all, and
 * trains the same `epochs` uninterrupted in a fresh folder, both under srun with `extra`;
 * returns the largest weight difference, 0 for a resume that is exact. */
static double resume_against_whole(const char *dir, const char *model, long epochs,
                                   const char *const *extra, int64_t *steps)
{
    struct tu_result *res = malloc(sizeof(*res));
    const char *sets[16];
    size_t n = 0;
    for (; extra != NULL && *extra != NULL && n < 10; extra++)
        sets[n++] = *extra;
    char total[64], name[64];
    snprintf(total, sizeof(total), "training.n_epochs=%ld", epochs);
    snprintf(name, sizeof(name), "output.model_name=%s", model);
    sets[n++] = total;
    sets[n++] = name;
    sets[n++] = "--resume=last";
    sets[n++] = "output.force_reset=false";
    sets[n] = NULL;
    if (srun(res, dir, pmix_job, tu_env("TSRNN_WORKER"), sets) != 0)
        fail_msg("the resumed run: exit %d; stderr:\n%s", res->exit_code, res->err);
    tu_expect_in(res->out, "Restored all states from the checkpoint");
    char whole_name[64];
    snprintf(whole_name, sizeof(whole_name), "%s-whole", model);
    const char *whole = subdir(3, whole_name);
    sets[n - 3] = "output.model_name=run";
    sets[n - 2] = NULL;
    if (srun(res, whole, pmix_job, tu_env("TSRNN_WORKER"), sets) != 0)
        fail_msg("the uninterrupted run: exit %d; stderr:\n%s", res->exit_code, res->err);
    free(res);
    return weight_difference(run_folder(0, dir, model), run_folder(1, whole, "run"), steps);
}

/* --- the cases ---------------------------------------------------------------------- */

/* One rank on each host, talking through Open MPI's TCP over the veth pair: the weights of
 * the same run under mpirun on one host. */
static void test_srun_equals_mpirun(void **state)
{
    (void)state;
    struct tu_result *res = malloc(sizeof(*res));
    const char *far = subdir(0, "srun"), *near = subdir(1, "mpirun");
    double t0 = now_s();
    int rc = srun(res, far, pmix_job, task_script(far), NULL);
    double srun_s = now_s() - t0;
    if (rc != 0)
        fail_msg("srun --mpi=pmix -N2 -n2: exit %d; stderr:\n%s", rc, res->err);
    tu_expect_in(res->out, "MEMBER: 2/2 (local rank 0, mpi; started by srun (Slurm))");
    tu_expect_in(res->out, "Run folder: darts_logs/run");
    for (int r = 0; r < NODE_COUNT; r++) {
        char name[32];
        snprintf(name, sizeof(name), "task.%d", r);
        char *task = tu_read(tu_path(far, name));
        assert_non_null(task);
        tu_expect_in(task, cl.hosts[r].name); /* rank r ran on host r */
        free(task);
    }

    const char *argv[96];
    size_t n = 0;
    argv[n++] = "/bin/sh";
    argv[n++] = "-c";
    argv[n++] = "cd \"$0\" && exec \"$@\"";
    argv[n++] = near;
    argv[n++] = tu_env("TSRNN_MPIRUN");
    argv[n++] = "--oversubscribe";
    argv[n++] = "-np";
    argv[n++] = "2";
    argv[n++] = tu_env("TSRNN_WORKER");
    worker_args(argv, &n, NULL);
    argv[n] = NULL;
    t0 = now_s();
    assert_int_equal(tu_run(argv, 120, res), 0);
    double mpirun_s = now_s() - t0;
    if (res->exit_code != 0)
        fail_msg("mpirun -np 2: exit %d; stderr:\n%s", res->exit_code, res->err);
    int64_t steps;
    double worst = weight_difference(run_folder(0, far, "run"), run_folder(1, near, "run"), &steps);
    printf("# srun --mpi=pmix -N2 -n2 (two hosts) %.2f s vs mpirun -np 2 (one host) %.2f s: "
           "%lld steps, final weights differ by %.3g relative at most\n",
           srun_s, mpirun_s, (long long)steps, worst);
    assert_true(steps > 0);
    assert_true(worst <= 1e-6);
    free(res);
}

/* The cluster's MpiDefault is none: srun without --mpi, and srun --mpi=pmi2, start ranks
 * that Open MPI cannot join; every rank refuses before MPI_Init, exit 2, saying what to run.
 * (Before: exit 1, Open MPI's "OMPI was not built with SLURM's PMI support" only.) */
static void test_srun_without_pmix_is_refused(void **state)
{
    (void)state;
    struct tu_result *res = malloc(sizeof(*res));
    const char *dir = subdir(0, "nopmix");
    /* Without --kill-on-bad-exit: with it, the rank that refuses first gets the other killed
     * (exit 143) before it has refused too, on a busy machine. */
    const char *const none[] = { NULL }, *const pmi2[] = { "--mpi=pmi2", NULL };
    const char *const *how[] = { none, pmi2 };
    const char *expect[] = { "without PMIx (no --mpi, and the cluster's MpiDefault is none)",
                             "without PMIx (SLURM_MPI_TYPE=pmi2)" };
    for (int i = 0; i < 2; i++) {
        double t0 = now_s();
        int rc = srun(res, dir, how[i], tu_env("TSRNN_WORKER"), NULL);
        printf("# srun %s-N2 -n2: exit %d after %.2f s\n", i == 0 ? "" : "--mpi=pmi2 ", rc,
               now_s() - t0);
        assert_int_equal(rc, 2);
        tu_expect_in(res->err, expect[i]);
        tu_expect_in(res->err, "accepted: srun --mpi=pmix");
    }
    char runs[PATH_MAX + 16];
    snprintf(runs, sizeof(runs), "%s/darts_logs", dir);
    assert_int_equal(access(runs, F_OK), -1); /* nothing written */
    free(res);
}

/* A checkout as a user has it: the script where the repository keeps it, build/ and
 * examples/ beside it (the build under test and the source's examples). */
static const char *checkout(void)
{
    static char root[PATH_MAX];
    snprintf(root, sizeof(root), "%s/checkout", tu_run_dir());
    if (access(root, F_OK) == 0)
        return root;
    char worker_dir[PATH_MAX], script[PATH_MAX], examples[PATH_MAX];
    snprintf(worker_dir, sizeof(worker_dir), "%s", tu_env("TSRNN_WORKER"));
    *strrchr(worker_dir, '/') = '\0';
    snprintf(script, sizeof(script), "%s", tu_source("scripts/cluster/tsrnn.sbatch"));
    snprintf(examples, sizeof(examples), "%s", tu_source("examples"));
    if (sh("mkdir -p '%s/scripts/cluster' && cp '%s' '%s/scripts/cluster/' && "
           "ln -s '%s' '%s/build' && ln -s '%s' '%s/examples'",
           root, script, root, worker_dir, root, examples, root) != 0)
        fail_msg("could not make a checkout in %s", root);
    return root;
}

/* sbatch [options] scripts/cluster/tsrnn.sbatch examples/air_passengers.ini <args>, from the
 * checkout, with no TSRNN_WORKER (meson sets it for the tests; a user has none): the job id. */
static long sbatch(const char *const *options, const char *const *extra)
{
    struct tu_result *res = malloc(sizeof(*res));
    const char *argv[96];
    size_t n = 0;
    argv[n++] = "/usr/bin/env";
    argv[n++] = "-u";
    argv[n++] = "TSRNN_WORKER";
    argv[n++] = programs[P_SBATCH];
    argv[n++] = "--parsable";
    for (; options != NULL && *options != NULL; options++)
        argv[n++] = *options;
    argv[n++] = "scripts/cluster/tsrnn.sbatch";
    argv[n++] = "examples/air_passengers.ini";
    for (size_t i = 0; i < sizeof(common_sets) / sizeof(common_sets[0]); i++) {
        argv[n++] = "--set";
        argv[n++] = common_sets[i];
    }
    for (; extra != NULL && *extra != NULL; extra++) {
        argv[n++] = "--set";
        argv[n++] = *extra;
    }
    argv[n++] = "--progress=none";
    argv[n] = NULL;
    if (client(res, checkout(), argv, 60) != 0)
        fail_msg("sbatch: exit %d; stderr:\n%s", res->exit_code, res->err);
    long id = atol(res->out);
    assert_true(id > 0);
    free(res);
    return id;
}

/* A job's state as scontrol says it (JobState=, ExitCode=N:S); false once it is forgotten. */
static bool job_state(long id, char *state, size_t capacity, int *exit_code)
{
    struct tu_result *res = malloc(sizeof(*res));
    char idtext[32];
    snprintf(idtext, sizeof(idtext), "%ld", id);
    const char *argv[] = { programs[P_SCONTROL], "-o", "show", "job", idtext, NULL };
    bool known = client(res, NULL, argv, 30) == 0;
    const char *s = strstr(res->out, "JobState="), *e = strstr(res->out, "ExitCode=");
    known = known && s != NULL && e != NULL;
    if (known) {
        s += strlen("JobState=");
        size_t len = strcspn(s, " \n");
        snprintf(state, capacity, "%.*s", (int)len, s);
        *exit_code = atoi(e + strlen("ExitCode="));
    }
    free(res);
    return known;
}

/* Waits until job `id` has ended (at most `limit_s`): its final state and exit code. */
static double job_wait(long id, char *state, size_t capacity, int *exit_code, double limit_s)
{
    double t0 = now_s();
    for (;;) {
        if (job_state(id, state, capacity, exit_code) && strcmp(state, "RUNNING") != 0 &&
            strcmp(state, "PENDING") != 0 && strcmp(state, "COMPLETING") != 0 &&
            strcmp(state, "CONFIGURING") != 0)
            return now_s() - t0;
        if (now_s() - t0 > limit_s)
            fail_msg("job %ld still %s after %.0f s", id, state, limit_s);
        usleep(50000);
    }
}

/* The job's output file, tsrnn-<id>.out in the checkout (the caller frees). */
static char *job_output(long id)
{
    char name[64];
    snprintf(name, sizeof(name), "tsrnn-%ld.out", id);
    char *text = tu_read(tu_path(checkout(), name));
    assert_non_null(text);
    return text;
}

/* The batch script as the repository holds it, submitted from a checkout with nothing set:
 * it finds tsrnn-worker (its copy in slurmd's spool folder is not in the checkout), srun
 * runs it on both nodes, rank 0 writes the run folder. (Before: exit 2, "execve():
 * <spool>/build/tsrnn-worker: No such file or directory".) */
static void test_sbatch_script(void **state)
{
    (void)state;
    const char *options[] = { "--ntasks-per-node=1", NULL };
    const char *extra[] = { "output.model_name=batch", NULL };
    double t0 = now_s();
    long id = sbatch(options, extra);
    char job[32];
    int rc;
    job_wait(id, job, sizeof(job), &rc, 120);
    double took_s = now_s() - t0;
    char *out = job_output(id);
    printf("# sbatch scripts/cluster/tsrnn.sbatch (2 nodes, 1 task each): job %ld %s, exit %d, "
           "%.2f s from sbatch to its end\n",
           id, job, rc, took_s);
    if (strcmp(job, "COMPLETED") != 0 || rc != 0) {
        print_logs();
        fail_msg("job %ld: %s, exit %d; its output:\n%s", id, job, rc, out);
    }
    tu_expect_in(out, "MEMBER: 2/2 (local rank 0, mpi; started by srun (Slurm))");
    tu_expect_in(out, "Run folder: darts_logs/batch");
    free(out);
    char metrics[PATH_MAX + 64];
    snprintf(metrics, sizeof(metrics), "%s/darts_logs/batch/metrics.csv", checkout());
    struct tu_metrics_row rows[64];
    assert_int_equal(tu_read_metrics(metrics, rows, 64), 20 + 5); /* 4 steps and 1 val a epoch */
    char ckdir[PATH_MAX + 256];
    snprintf(ckdir, sizeof(ckdir), "%s/darts_logs/batch/checkpoints", checkout());
    assert_true(tsrnn_folder_holds(ckdir, "last-epoch=4"));
}

/* "interrupted at epoch E after step S" in `text` after `prefix`: E and S. */
static void interrupted_at(const char *text, const char *prefix, long *epoch, long *step)
{
    const char *p = strstr(text, prefix);
    if (p == NULL ||
        sscanf(p + strlen(prefix), "interrupted at epoch %ld after step %ld", epoch, step) != 2)
        fail_msg("no '%sinterrupted at epoch E after step S' in:\n%s", prefix, text);
}

/* scancel of a running batch job: Slurm sends SIGTERM to every task; the ranks agree on the
 * step to stop after, rank 0 writes its checkpoint, every rank exits 130. The checkpoint
 * loads and holds every finished step, and a resume from it ends where an uninterrupted run
 * of the same length does, bit for bit. */
static void test_scancel_stops_every_rank_at_one_step(void **state)
{
    (void)state;
    const char *extra[] = { "output.model_name=cancel", "training.n_epochs=100000", NULL };
    long id = sbatch((const char *[]){ "--ntasks-per-node=1", NULL }, extra);
    char ckdir[PATH_MAX + 256];
    snprintf(ckdir, sizeof(ckdir), "%s/darts_logs/cancel/checkpoints", checkout());
    char job[32];
    int rc;
    for (double t0 = now_s(); !tsrnn_folder_holds(ckdir, "last-"); usleep(10000)) {
        if (now_s() - t0 > 60 || (job_state(id, job, sizeof(job), &rc) &&
                                  strcmp(job, "RUNNING") != 0 && strcmp(job, "PENDING") != 0)) {
            char *out = job_output(id);
            fail_msg("job %ld: no checkpoint (%s); its output:\n%s", id, job, out);
        }
    }
    struct tu_result *res = malloc(sizeof(*res));
    char idtext[32];
    snprintf(idtext, sizeof(idtext), "%ld", id);
    const char *cancel[] = { programs[P_SCANCEL], idtext, NULL };
    double t0 = now_s();
    assert_int_equal(client(res, NULL, cancel, 30), 0);
    job_wait(id, job, sizeof(job), &rc, KILL_WAIT_S + 30);
    double took_s = now_s() - t0;
    char *out = job_output(id);
    long epoch0, step0, epoch1, step1;
    interrupted_at(out, "tsrnn-worker: error: ", &epoch0, &step0);
    interrupted_at(out, "tsrnn-worker: stopped: ", &epoch1, &step1);
    printf("# scancel: job %s, exit %d, %.2f s after scancel; rank 0 stopped at epoch %ld after "
           "step %ld, rank 1 at epoch %ld after step %ld\n",
           job, rc, took_s, epoch0, step0, epoch1, step1);
    assert_int_equal(rc, 130);
    assert_int_equal(step0, step1);
    assert_int_equal(epoch0, epoch1);
    free(out);

    /* The checkpoint of the stop holds every finished step (mid-epoch, or at an epoch's end
     * the epoch's own), and a resume from it is exact. */
    size_t count;
    struct tsrnn_train_state st;
    free(checkpoint_params(run_folder(0, checkout(), "cancel"), "last", &count, &st));
    printf("# the checkpoint of the stop: epoch %lld, %lld batches of it, %lld steps\n",
           (long long)st.epoch, (long long)st.batches_done, (long long)st.global_step);
    assert_int_equal(st.global_step, step0 + 1);
    int64_t steps;
    const char *sets[] = { NULL };
    double worst = resume_against_whole(checkout(), "cancel", epoch0 + 2, sets, &steps);
    printf("# resumed to epoch %ld: %lld steps, weights differ by %.3g from an uninterrupted "
           "run\n",
           epoch0 + 2, (long long)steps, worst);
    assert_true(worst == 0.0);
    free(res);
}

/* --- a rank that dies or stops under srun --------------------------------------------- */

/* srun of 2 ranks in the background, each recording its pid (task_script()). */
struct job {
    pid_t pid; /* nsenter, then srun */
    const char *dir;
    char log[PATH_MAX + 16];
    pid_t tasks[NODE_COUNT];
    double ended;
    int exit_code;
};

static void job_start(struct job *j, const char *name, const char *const *extra)
{
    j->dir = subdir(2, name);
    snprintf(j->log, sizeof(j->log), "%s/srun.log", j->dir);
    const char *argv[96];
    srun_argv(argv, pmix_job, task_script(j->dir), extra);
    j->pid = spawn(on_host(1, 0, argv), j->log, j->dir);
    assert_true(j->pid > 0);
    /* Both tasks run and rank 0 has written its first checkpoint: training is on. */
    char ckdir[PATH_MAX + 256];
    snprintf(ckdir, sizeof(ckdir), "%s/checkpoints", run_folder(0, j->dir, "run"));
    for (double t0 = now_s();; usleep(10000)) {
        bool all = tsrnn_folder_holds(ckdir, "last-");
        for (int r = 0; r < NODE_COUNT; r++) {
            char name_r[32];
            snprintf(name_r, sizeof(name_r), "task.%d", r);
            char *text = tu_read(tu_path(j->dir, name_r));
            j->tasks[r] = text ? (pid_t)atol(text) : 0;
            all = all && j->tasks[r] > 0;
            free(text);
        }
        if (all)
            return;
        int status;
        if (waitpid(j->pid, &status, WNOHANG) == j->pid || now_s() - t0 > 60) {
            char *log = tu_read(j->log);
            fail_msg("srun ended or no training after 60 s; its output:\n%s", log ? log : "");
        }
    }
}

/* Waits for srun, at most `limit_s` after `since` (then kills the cluster's jobs, fails). */
static int job_wait_srun(struct job *j, double since, double limit_s)
{
    int status;
    while (waitpid(j->pid, &status, WNOHANG) != j->pid) {
        if (now_s() - since > limit_s) {
            kill(j->pid, SIGKILL);
            waitpid(j->pid, &status, 0);
            char *log = tu_read(j->log);
            fail_msg("srun still running %.0f s later; its output:\n%s", limit_s, log ? log : "");
        }
        usleep(5000);
    }
    j->ended = now_s();
    j->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return j->exit_code;
}

/* Whether `pid` no longer runs: gone, or a zombie (this test, the subreaper, reaps it last). */
static bool is_gone(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    char *text = tu_read(path);
    const char *paren = text ? strrchr(text, ')') : NULL;
    bool zombie = text == NULL || (paren != NULL && paren[1] == ' ' && paren[2] == 'Z');
    free(text);
    return zombie;
}

static void expect_no_task_left(const struct job *j)
{
    for (int tries = 0; tries < 100; tries++) {
        if (is_gone(j->tasks[0]) && is_gone(j->tasks[1]))
            return;
        usleep(10000);
    }
    sh("ps -o pid,ppid,stat,etime,args -p %d,%d >&2", (int)j->tasks[0], (int)j->tasks[1]);
    fail_msg("a task (pid %d or %d) still runs after srun ended", (int)j->tasks[0],
             (int)j->tasks[1]);
}

static void expect_log_has(const struct job *j, const char *needle)
{
    char *log = tu_read(j->log);
    assert_non_null(log);
    tu_expect_in(log, needle);
    free(log);
}

/* Rank 1 SIGKILLed mid-training under srun --kill-on-bad-exit: srun sends SIGTERM to rank 0,
 * which finds that nobody answers its stop and ends the job (exit 3) within seconds, not at
 * timeout_s (20 here) nor at KillWait (30). No task is left. A resume from the last epoch's
 * checkpoint, after the job, then ends where an uninterrupted run does, bit for bit. (Before:
 * srun exited 3 after 20.0 s, rank 0's timeout; with timeout_s 60, 137 after KillWait.) */
static void test_killed_rank_ends_the_job(void **state)
{
    (void)state;
    struct job j;
    const char *extra[] = { "training.n_epochs=100000", "model.hidden_dim=32",
                            "trainer.timeout_s=20", NULL };
    job_start(&j, "killed", extra);
    double at = now_s();
    assert_int_equal(kill(j.tasks[1], SIGKILL), 0);
    int rc = job_wait_srun(&j, at, 20 + KILL_WAIT_S + 10);
    printf("# rank 1 SIGKILLed under srun --kill-on-bad-exit: srun exited %d after %.2f s "
           "(timeout_s 20, KillWait %d)\n",
           rc, j.ended - at, KILL_WAIT_S);
    assert_int_equal(rc, 3);
    assert_true(j.ended - at < DEAD_PEER_S);
    expect_log_has(&j, "rank 0: allreduce of ");
    expect_log_has(&j, "the other ranks did not answer within");
    expect_no_task_left(&j);

    size_t count;
    struct tsrnn_train_state st;
    free(checkpoint_params(run_folder(0, j.dir, "run"), "last", &count, &st));
    int64_t steps;
    const char *sets[] = { "model.hidden_dim=32", NULL };
    long epochs = (long)st.epoch + 3;
    double worst = resume_against_whole(j.dir, "run", epochs, sets, &steps);
    printf("# resumed after the job from epoch %lld's checkpoint to %ld epochs: %lld steps, "
           "weights differ by %.3g from an uninterrupted run\n",
           (long long)st.epoch, epochs, (long long)steps, worst);
    assert_true(worst == 0.0);
}

/* Rank 1 SIGSTOPped: alive, never answering. Rank 0's collective gives up after timeout_s and
 * ends the job (exit 3); the stopped task is killed with it. */
static void test_stopped_rank_times_out(void **state)
{
    (void)state;
    struct job j;
    char timeout[64];
    snprintf(timeout, sizeof(timeout), "trainer.timeout_s=%d", STOP_TIMEOUT_S);
    const char *extra[] = { "training.n_epochs=100000", "model.hidden_dim=32", timeout, NULL };
    job_start(&j, "stopped", extra);
    double at = now_s();
    assert_int_equal(kill(j.tasks[1], SIGSTOP), 0);
    int rc = job_wait_srun(&j, at, STOP_TIMEOUT_S + KILL_WAIT_S + 10);
    printf("# rank 1 SIGSTOPped: srun exited %d after %.2f s (timeout_s %d)\n", rc, j.ended - at,
           STOP_TIMEOUT_S);
    assert_int_equal(rc, 3);
    assert_true(j.ended - at >= STOP_TIMEOUT_S);
    assert_true(j.ended - at < STOP_TIMEOUT_S + 5);
    expect_log_has(&j, "rank 0: allreduce of ");
    expect_log_has(&j, "did not complete within 4 s");
    expect_no_task_left(&j);
}

int main(void)
{
    const char *mpirun = getenv("TSRNN_MPIRUN");
    if (!tsrnn_comm_backend_available("mpi") || mpirun == NULL || mpirun[0] == '\0') {
        printf("# skipped: this build has no mpi comm backend or mpirun is not installed\n");
        return 77;
    }
    if (geteuid() != 0) {
        printf("# skipped: starting slurmctld, slurmd and munged needs root\n");
        return 77;
    }
    if (!find_programs())
        return 77;
    /* As test_mpi.c: whole stacks for tests/lsan.supp's Open MPI entries; mpirun as root. */
    const char *lsan = getenv("LSAN_OPTIONS");
    if (lsan != NULL) {
        char options[4096];
        snprintf(options, sizeof(options), "%s:fast_unwind_on_malloc=0", lsan);
        setenv("LSAN_OPTIONS", options, 1);
    }
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    /* The slurmstepds and tasks that lose their parent come to this process, which reaps them
     * at the end (else they would wait as zombies for this machine's init). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (!make_hosts()) {
        cluster_remove();
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srun_equals_mpirun),
        cmocka_unit_test(test_srun_without_pmix_is_refused),
        cmocka_unit_test(test_sbatch_script),
        cmocka_unit_test(test_scancel_stops_every_rank_at_one_step),
        cmocka_unit_test(test_killed_rank_ends_the_job),
        cmocka_unit_test(test_stopped_rank_times_out),
    };
    int failed = cmocka_run_group_tests(tests, cluster_setup, cluster_teardown);
    cluster_remove();
    return failed;
}
