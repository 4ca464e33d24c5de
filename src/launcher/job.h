/* The state of one tsrnn-launch job, shared by the files of src/launcher/ (private: main.c
 * sees only launch.h). Each file owns one concern:
 *
 *     launch.c     tsrnn_launch_run(): the config, setting up and tearing down a job
 *     devices.c    which devices the workers get, and so the comm backend they use
 *     netns.c      the workers' network, private to the job (a network namespace)
 *     spawn.c      the worker program, the rendezvous folder, fork + exec with each worker's
 *                  environment and command line
 *     output.c     the workers' stdout/stderr/report pipes: logs, tails, the final summary
 *     supervise.c  waitpid, signals, SIGTERM then SIGKILL, how an attempt ended
 *     restart.c    the attempts of a job: --max-restarts, from the last checkpoint
 */
#ifndef TSRNN_LAUNCH_JOB_H
#define TSRNN_LAUNCH_JOB_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "launch.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
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
/* Workers on one machine: each holds a Gloo connection to every other. 1024 CPU workers were
 * measured to connect and train (347 s on 2 cores with timeout_s = 900; 512: 42 s), with a
 * loopback address per rank (src/comm/gloo.c); before that, ~170 ran out of ports. */
#define MAX_WORKERS 1024
/* Files a process needs beside its connections (libraries, logs, pipes, the lock). */
#define SPARE_FILES 64
#define GPU_ID_MAX  TSRNN_GPU_ID_MAX /* world.h */
#define ENV_OWN_MAX 12               /* room for the variables the launcher sets for a worker */
/* The file in a rendezvous folder that its launcher holds a record lock on while it lives
 * (fcntl: not inherited by the workers, gone with the launcher, SIGKILL included). */
#define RENDEZVOUS_LOCK "launcher.lock"
/* A rendezvous folder without that file and older than this is an older tsrnn's, or one whose
 * launcher died in the microseconds between making it and locking it. */
#define RENDEZVOUS_UNLOCKED_STALE_S (60 * 60)

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
    char state_at_failure;  /* its /proc state ('R', 'S', 'T', ...) when the first failure was a
                               peer's timeout; 0 = not looked at */
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
    int rendezvous_lock;       /* its RENDEZVOUS_LOCK, locked while this launcher lives; -1 */
    int userns_fd, netns_fd;   /* the namespaces the workers join (netns.c); -1 = none */
    bool gpu;                  /* GPU workers, else CPU workers */
    const char *comm_backend;  /* "local", "gloo" or "nccl": chosen with the devices */
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

/* devices.c */
enum tsrnn_status resolve_devices(struct launch *l);

/* netns.c: make_private_network() leaves netns_fd -1 when it cannot make one (it then
 * warns: that is no error); it fails only when the launcher cannot fork. */
enum tsrnn_status make_private_network(struct launch *l);
void close_private_network(struct launch *l);

/* spawn.c */
enum tsrnn_status find_worker(struct launch *l);
enum tsrnn_status make_rendezvous(struct launch *l);
void remove_rendezvous(struct launch *l);
enum tsrnn_status start_attempt(struct launch *l);

/* output.c */
void read_stream(struct launch *l, struct worker *w, struct stream *s);
void close_stream(struct stream *s);
void abandon_streams(struct launch *l);
void close_logs(struct launch *l);
void print_tail(const struct worker *w);
void print_summary(const struct launch *l);

/* supervise.c */
void supervise(struct launch *l);
void read_signals(struct launch *l);
void end_attempt(struct launch *l);
int finish_attempt(struct launch *l, bool *restartable);

/* restart.c */
enum tsrnn_status run_job(struct launch *l, int *exit_code);

#endif
