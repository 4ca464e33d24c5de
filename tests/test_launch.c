/* tsrnn-launch with real tsrnn-worker processes over real Gloo TCP on 127.0.0.1: data-parallel
 * training equals one process with the global batch, validation is exact, and every failure
 * (a killed worker, a worker that errs, one that hangs, Ctrl-C, a restart) ends in bounded
 * time with the documented exit code and no process left behind. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/data.h"
#include "tsrnn/fs.h"
#include "tsrnn/model.h"

#define MAX_RANKS 8
#define TIMEOUT_S 4 /* [trainer] timeout_s of these runs: failures must show within it */

/* A tsrnn-launch started in the background, its output going to files. */
struct job {
    pid_t pid;
    double started;
    char out[PATH_MAX], err[PATH_MAX];
    int exit_code; /* after job_wait: the exit code, or 128 + the signal */
    double seconds;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *run_path(const char *model_name, const char *file)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%s", tu_run_dir(), model_name, file);
    return path;
}

/* Starts tsrnn-launch --accelerator cpu on the example with output in the run folder
 * `model_name`; `args` (NULL-terminated) are more options, a bare "k=v" becomes --set k=v. */
static void job_start(struct job *j, const char *model_name, const char *const *args)
{
    const char *argv[64];
    char work_dir[PATH_MAX + 32], name[160], timeout[64];
    size_t n = 0;

    snprintf(work_dir, sizeof(work_dir), "output.work_dir=%s", tu_run_dir());
    snprintf(name, sizeof(name), "output.model_name=%s", model_name);
    snprintf(timeout, sizeof(timeout), "trainer.timeout_s=%d", TIMEOUT_S);
    argv[n++] = tu_env("TSRNN_LAUNCH");
    argv[n++] = "--accelerator";
    argv[n++] = "cpu";
    const char *sets[] = { work_dir, name, timeout };
    for (size_t i = 0; i < 3; i++) {
        argv[n++] = "--set";
        argv[n++] = sets[i];
    }
    for (size_t i = 0; args[i] != NULL; i++) {
        if (n >= 60)
            fail_msg("job_start: too many arguments");
        if (strncmp(args[i], "--", 2) != 0)
            argv[n++] = "--set";
        argv[n++] = args[i];
    }
    argv[n++] = tu_source("examples/air_passengers.ini");
    argv[n] = NULL;

    snprintf(j->out, sizeof(j->out), "%s/%s.out", tu_run_dir(), model_name);
    snprintf(j->err, sizeof(j->err), "%s/%s.err", tu_run_dir(), model_name);
    j->started = now_s();
    fflush(stdout); /* else the child's freopen() writes our buffered lines again */
    j->pid = fork();
    assert_true(j->pid >= 0);
    if (j->pid == 0) {
        /* The launcher's rendezvous folders go here too, where expect_clean() looks. */
        setenv("TMPDIR", tu_run_dir(), 1);
        if (chdir(tu_run_dir()) != 0 || !freopen("/dev/null", "r", stdin) ||
            !freopen(j->out, "w", stdout) || !freopen(j->err, "w", stderr))
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
}

/* Waits for the launcher to exit, at most timeout_s (then kills it and fails the test). */
static int job_wait(struct job *j, double timeout_s)
{
    int status;
    for (;;) {
        pid_t got = waitpid(j->pid, &status, WNOHANG);
        if (got == j->pid)
            break;
        if (now_s() - j->started > timeout_s) {
            kill(j->pid, SIGKILL);
            waitpid(j->pid, &status, 0);
            char *err = tu_read(j->err);
            fail_msg("tsrnn-launch still running after %.0f s; stderr:\n%s", timeout_s,
                     err ? err : "");
        }
        usleep(10000);
    }
    j->seconds = now_s() - j->started;
    j->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return j->exit_code;
}

/* The pids the launcher printed ("rank R ... pid P"), the newest per rank; returns the
 * number of ranks seen. */
static int job_pids(const struct job *j, pid_t pids[MAX_RANKS])
{
    int count = 0;
    for (int f = 0; f < 2; f++) {
        char *text = tu_read(f == 0 ? j->out : j->err);
        for (char *line = text; line != NULL && *line != '\0';) {
            char *end = strchr(line, '\n');
            const char *p = strstr(line, "pid ");
            int rank;
            if (end != NULL)
                *end = '\0';
            line += strspn(line, " ");
            if (strncmp(line, "rank ", 5) == 0 && p != NULL &&
                sscanf(line, "rank %d", &rank) == 1 && rank >= 0 && rank < MAX_RANKS) {
                pids[rank] = (pid_t)atol(p + 4);
                count = rank + 1 > count ? rank + 1 : count;
            }
            line = end ? end + 1 : NULL;
        }
        free(text);
    }
    return count;
}

/* Waits until the launcher has printed the pids of `ranks` workers. */
static void job_wait_pids(const struct job *j, int ranks, pid_t pids[MAX_RANKS])
{
    while (job_pids(j, pids) < ranks) {
        if (now_s() - j->started > 30)
            fail_msg("tsrnn-launch printed no pids for %d workers", ranks);
        usleep(10000);
    }
}

/* Waits until `path`'s folder holds a file starting with `prefix`. */
static void wait_for_file(const struct job *j, const char *dir, const char *prefix)
{
    while (!tsrnn_folder_holds(dir, prefix)) {
        int status;
        if (waitpid(j->pid, &status, WNOHANG) == j->pid)
            fail_msg("tsrnn-launch exited before %s/%s* appeared", dir, prefix);
        if (now_s() - j->started > 60)
            fail_msg("no %s/%s* after 60 s", dir, prefix);
        usleep(5000);
    }
}

/* Starts a 2-worker job and returns once it trains: its pids printed, its first "last"
 * checkpoint written. */
static void start_training(struct job *j, const char *model_name, const char *const *args,
                           pid_t pids[MAX_RANKS])
{
    job_start(j, model_name, args);
    job_wait_pids(j, 2, pids);
    wait_for_file(j, run_path(model_name, "checkpoints"), "last-");
}

static void expect_gone(const pid_t *pids, int count)
{
    for (int r = 0; r < count; r++)
        if (kill(pids[r], 0) == 0 || errno != ESRCH)
            fail_msg("worker rank %d (pid %d) is still there after the launcher exited", r,
                     (int)pids[r]);
}

/* The launcher removed its private rendezvous folder. */
static void expect_clean(void)
{
    if (tsrnn_folder_holds(tu_run_dir(), "tsrnn-rendezvous-"))
        fail_msg("a tsrnn-rendezvous-* folder is left in %s", tu_run_dir());
}

static void expect_file_has(const char *path, const char *needle)
{
    char *text = tu_read(path);
    if (text == NULL)
        fail_msg("cannot read %s", path);
    tu_expect_in(text, needle);
    free(text);
}

/* The newest checkpoint of kind `which`, read and checked (CRC included). */
static void read_checkpoint(struct tsrnn_checkpoint *ck, const char *model_name, const char *which)
{
    char path[PATH_MAX];
    if (tsrnn_checkpoint_locate(path, sizeof(path), run_path(model_name, "checkpoints"), which) !=
            TSRNN_OK ||
        tsrnn_checkpoint_read(ck, path) != TSRNN_OK)
        fail_msg("%s", tsrnn_last_error());
}

/* The CPU compute context the checks below evaluate checkpoints on. */
static struct tsrnn_compute *cpu_compute(void)
{
    struct tsrnn_compute *compute;
    struct tsrnn_compute_options options = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    assert_int_equal(tsrnn_compute_create(&compute, &options), TSRNN_OK);
    return compute;
}

/* A model on `compute` holding a checkpoint's weights, with room for `batch` windows of
 * `steps`. */
static void load_model(struct tsrnn_model *m, struct tsrnn_compute *compute,
                       const struct tsrnn_checkpoint *ck, size_t batch, size_t steps)
{
    assert_int_equal(tsrnn_model_init(m, compute, &ck->dims, batch, steps), TSRNN_OK);
    assert_int_equal(tsrnn_checkpoint_restore(ck, m, NULL), TSRNN_OK);
}

/* A shell script that runs the real worker, except for rank `rank`, which runs `instead`
 * (a shell command line); the launcher takes it through --worker. */
static const char *wrapper(const char *name, int rank, const char *instead)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "#!/bin/sh\n"
             "if [ \"$TSRNN_RANK\" = %d ]; then %s; fi\n"
             "exec '%s' \"$@\"\n",
             rank, instead, tu_env("TSRNN_WORKER"));
    const char *path = tu_write(tu_run_dir(), name, text);
    assert_int_equal(chmod(path, 0755), 0);
    static char copy[PATH_MAX + 16];
    snprintf(copy, sizeof(copy), "--worker=%s", path);
    return copy;
}

/* --- data-parallel numbers ------------------------------------------------------------- */

/* DESIGN.md §3: W ranks with per-rank batch b = one rank with batch W*b over the same global
 * order. training_length 21 leaves 100 training windows: no DistributedSampler padding. */
static void test_two_workers_equal_one_with_twice_the_batch(void **state)
{
    (void)state;
    const char *common[] = { "model.training_length=21", "training.shuffle=false",
                             "training.n_epochs=6", "model.model=LSTM", "model.hidden_dim=16" };
    const char *two[16], *one[16];
    size_t n = 0;
    for (; n < sizeof(common) / sizeof(common[0]); n++)
        one[n] = two[n] = common[n];
    two[n] = "training.batch_size=8", one[n] = "training.batch_size=16", n++;
    two[n] = "--devices=2", one[n] = "--devices=1", n++;
    two[n] = one[n] = NULL;

    struct job j2, j1;
    job_start(&j2, "ddp2", two);
    assert_int_equal(job_wait(&j2, 120), 0);
    job_start(&j1, "ddp1", one);
    assert_int_equal(job_wait(&j1, 120), 0);
    expect_file_has(j2.out, "2 workers");

    struct tsrnn_checkpoint *a = calloc(2, sizeof(*a)), *b = a + 1;
    read_checkpoint(a, "ddp2", "last");
    read_checkpoint(b, "ddp1", "last");
    assert_int_equal(a->state.global_step, b->state.global_step);
    assert_int_equal(a->state.global_step, 6 * 7); /* 100 windows: 7 batches of 16 (8 x 2) */
    struct tsrnn_compute *compute = cpu_compute();
    struct tsrnn_model ma = { 0 }, mb = { 0 };
    load_model(&ma, compute, a, 1, 1);
    load_model(&mb, compute, b, 1, 1);
    size_t count = ma.table.total_count;
    float *pa = malloc(count * sizeof(float)), *pb = malloc(count * sizeof(float));
    assert_int_equal(tsrnn_model_download_params(&ma, pa), TSRNN_OK);
    assert_int_equal(tsrnn_model_download_params(&mb, pb), TSRNN_OK);
    double worst = 0.0, moved = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = fabs((double)pa[i] - (double)pb[i]);
        double rel = d / fmax(fabs((double)pb[i]), 1e-3);
        worst = fmax(worst, rel);
        moved = fmax(moved, fabs((double)pa[i]));
    }
    free(pa);
    free(pb);
    printf("# 2 workers x batch 8 vs 1 worker x batch 16, %zu weights after 42 steps: max "
           "relative difference %.3g\n",
           ma.table.total_count, worst);
    assert_true(worst <= 1e-5);
    assert_true(moved > 0.0);
    tsrnn_model_finish(&ma);
    tsrnn_model_finish(&mb);
    tsrnn_compute_destroy(compute);
    tsrnn_checkpoint_finish(a);
    tsrnn_checkpoint_finish(b);
    free(a);
}

/* Shuffled training on `workers` ranks: the val_loss rank 0 logs is exactly what one process
 * computes from its final weights over all validation windows in a single batch. */
static void check_val_loss(int workers)
{
    /* Split earlier than the example: 28 validation windows (3 workers: shards of 10, 9, 9;
     * the sampler pads the 76 training windows to 78). */
    char devices[32], name[32];
    snprintf(devices, sizeof(devices), "--devices=%d", workers);
    snprintf(name, sizeof(name), "val%d", workers);
    const char *args[] = { "training.n_epochs=4",      devices,
                           "model.model=GRU",          "model.hidden_dim=12",
                           "data.split_after=1956-12", NULL };
    struct job j;
    job_start(&j, name, args);
    assert_int_equal(job_wait(&j, 120), 0);
    expect_clean();

    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    read_checkpoint(ck, name, "last");
    struct tsrnn_config *cfg = &ck->config;
    struct tsrnn_dataset ds = { 0 };
    assert_int_equal(tsrnn_dataset_load(&ds, cfg), TSRNN_OK);
    size_t V = ds.val.count, T = ds.val.training_length, C = ds.val.component_count;
    assert_int_equal(V, 28);
    struct tsrnn_compute *compute = cpu_compute();
    struct tsrnn_model m = { 0 };
    load_model(&m, compute, ck, V, T);
    float *x = malloc(V * T * C * sizeof(float)), *y = malloc(V * T * C * sizeof(float));
    size_t *idx = malloc(V * sizeof(size_t));
    double *se = malloc(V * sizeof(double)), sum = 0.0;
    for (size_t i = 0; i < V; i++)
        idx[i] = i;
    tsrnn_windows_gather(&ds.val, idx, V, x, y);
    assert_int_equal(tsrnn_model_load_batch(&m, x, y, V, T), TSRNN_OK);
    assert_int_equal(tsrnn_model_forward(&m, false, NULL), TSRNN_OK);
    assert_int_equal(tsrnn_model_window_squared_errors(&m, se), TSRNN_OK);
    for (size_t i = 0; i < V; i++)
        sum += se[i];
    double val_loss = sum / (double)(V * T * C);
    printf("# %d workers: logged val_loss %.17g, one process %.17g\n", workers,
           ck->state.monitor_value, val_loss);
    assert_true(ck->state.monitor_value == val_loss);
    free(x);
    free(y);
    free(idx);
    free(se);
    tsrnn_model_finish(&m);
    tsrnn_compute_destroy(compute);
    tsrnn_dataset_finish(&ds);
    tsrnn_checkpoint_finish(ck);
    free(ck);
}

static void test_val_loss_equals_one_process_evaluation(void **state)
{
    (void)state;
    check_val_loss(2);
    check_val_loss(3);
}

/* --- the README's command -------------------------------------------------------------- */

/* `tsrnn-launch --devices -1 examples/air_passengers.ini` on a machine without a GPU: one CPU
 * worker per core, Gloo; rank 0's report on stdout, the others' in logs/rank-N.log. */
static void test_readme_command_falls_back_to_cpu(void **state)
{
    (void)state;
    /* -1 is every core the launcher may use: on a big machine, let it use MAX_RANKS. */
    cpu_set_t all, some;
    assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
    CPU_ZERO(&some);
    for (int c = 0; c < CPU_SETSIZE && CPU_COUNT(&some) < MAX_RANKS; c++)
        if (CPU_ISSET(c, &all))
            CPU_SET(c, &some);
    int cores = CPU_COUNT(&some);
    assert_int_equal(sched_setaffinity(0, sizeof(some), &some), 0);
    const char *args[] = { "--accelerator=auto", "--devices=-1", "training.n_epochs=20", NULL };
    struct job j;
    job_start(&j, "Air", args);
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
    assert_int_equal(job_wait(&j, 120), 0);
    pid_t pids[MAX_RANKS];
    assert_int_equal(job_pids(&j, pids), cores);
    expect_gone(pids, cores);
    expect_file_has(j.out, "GPU available: False, used: False");
    expect_file_has(j.out, "Epoch 19");
    expect_file_has(j.out, "best checkpoint");
    assert_true(tsrnn_folder_holds(run_path("Air", "checkpoints"), "best-epoch="));
    assert_true(tsrnn_folder_holds(run_path("Air", "logs"), "tfevents"));
    struct tu_metrics_row rows[400];
    size_t count = tu_read_metrics(run_path("Air", "metrics.csv"), rows, 400);
    size_t per_rank = (101 + (size_t)cores - 1) / (size_t)cores; /* DistributedSampler */
    assert_int_equal(count, 20 * ((per_rank + 15) / 16) + 20);   /* steps + validations */
    if (cores > 1) {
        expect_file_has(run_path("Air", "logs/rank-1.log"), "GLOBAL_RANK: 1");
        char *out = tu_read(j.out);
        assert_null(strstr(out, "GLOBAL_RANK: 1")); /* rank 1's lines stay in its log */
        free(out);
    }
}

/* --- the comm backend ------------------------------------------------------------------ */

/* The launcher chooses the comm backend once, with the devices (gloo for CPU workers, local
 * for one), prints it, and tells every worker in TSRNN_COMM_BACKEND; the workers open what
 * they are told. A wrapper shows one rank's variable on its stderr. */
static void test_workers_are_told_the_comm_backend(void **state)
{
    (void)state;
    const char *two[] = { wrapper("backend-rank1.sh", 1,
                                  "echo \"told TSRNN_COMM_BACKEND=$TSRNN_COMM_BACKEND\" >&2"),
                          "training.n_epochs=1", "--devices=2", NULL };
    struct job j;
    job_start(&j, "backend2", two);
    assert_int_equal(job_wait(&j, 60), 0);
    expect_file_has(j.out, "Launching 2 worker processes (cpu, gloo)");
    expect_file_has(j.err, "[rank 1] told TSRNN_COMM_BACKEND=gloo\n");
    expect_file_has(j.out, "GLOBAL_RANK: 0, MEMBER: 1/2 (local rank 0, gloo)");
    expect_file_has(run_path("backend2", "logs/rank-1.log"),
                    "GLOBAL_RANK: 1, MEMBER: 2/2 (local rank 1, gloo)");
    expect_file_has(j.out, "tsrnn-launch: 2 workers (cpu, gloo) finished");

    const char *one[] = { wrapper("backend-rank0.sh", 0,
                                  "echo \"told TSRNN_COMM_BACKEND=$TSRNN_COMM_BACKEND\" >&2"),
                          "training.n_epochs=1", "--devices=1", NULL };
    job_start(&j, "backend1", one);
    assert_int_equal(job_wait(&j, 60), 0);
    expect_file_has(j.out, "Launching 1 worker process (cpu, local)");
    expect_file_has(j.err, "told TSRNN_COMM_BACKEND=local\n");
    expect_file_has(j.out, "tsrnn-launch: 1 worker (cpu, local) finished");
}

/* --- failures -------------------------------------------------------------------------- */

static const char *const long_run[] = { "training.n_epochs=100000", "model.model=LSTM",
                                        "model.hidden_dim=32", "--devices=2", NULL };

/* SIGKILL to one worker mid-training: the launcher names it, stops the other and exits 3
 * within timeout_s + 10 s; no worker is left; the last checkpoint reads back whole. */
static void test_killed_worker_stops_the_job(void **state)
{
    (void)state;
    struct job j;
    pid_t pids[MAX_RANKS];
    start_training(&j, "killed", long_run, pids);
    double killed_at = now_s();
    kill(pids[1], SIGKILL);
    assert_int_equal(job_wait(&j, 120), 3);
    double took = now_s() - killed_at;
    expect_clean();
    printf("# launcher exited %.2f s after rank 1 was killed\n", took);
    assert_true(took < TIMEOUT_S + 10);
    expect_gone(pids, 2);
    expect_file_has(j.err, "rank 1");
    expect_file_has(j.err, "SIGKILL");
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    read_checkpoint(ck, "killed", "last");
    assert_true(ck->state.global_step > 0);
    tsrnn_checkpoint_finish(ck);
    free(ck);
}

/* A worker that fails by itself (rank 1's config names a missing file): the launcher reports
 * that rank and its message, with its exit code (2), and stops the other. */
static void test_failing_worker_stops_the_job(void **state)
{
    (void)state;
    const char *args[] = { wrapper("bad-rank1.sh", 1,
                                   "set -- --set data.path=/nonexistent/air.csv \"$@\""),
                           "training.n_epochs=100000", "--devices=2", NULL };
    struct job j;
    pid_t pids[MAX_RANKS];
    job_start(&j, "failing", args);
    job_wait_pids(&j, 2, pids);
    assert_int_equal(job_wait(&j, 60), 2);
    assert_true(j.seconds < TIMEOUT_S + 10);
    expect_gone(pids, 2);
    expect_file_has(j.err, "rank 1");
    expect_file_has(j.err, "/nonexistent/air.csv");
}

/* A worker started with another setting than the others: it refuses to train a model of its
 * own in lockstep with them (exit 2, naming itself), and the job stops. */
static void test_worker_with_other_settings_is_refused(void **state)
{
    (void)state;
    const char *args[] = { wrapper("lr-rank1.sh", 1, "set -- --set training.lr=0.5 \"$@\""),
                           "--devices=2", NULL };
    struct job j;
    pid_t pids[MAX_RANKS];
    job_start(&j, "other", args);
    job_wait_pids(&j, 2, pids);
    assert_int_equal(job_wait(&j, 60), 2);
    expect_gone(pids, 2);
    expect_file_has(j.err, "rank 1: its configuration or data differ from rank 0's");
}

/* A worker that hangs before it joins: the others give up after timeout_s with an error that
 * names the missing rank; the launcher exits 3 and leaves nothing behind. */
static void test_hanging_worker_is_named(void **state)
{
    (void)state;
    const char *args[] = { wrapper("hang-rank1.sh", 1, "exec sleep 600"), "--devices=2", NULL };
    struct job j;
    pid_t pids[MAX_RANKS];
    job_start(&j, "hanging", args);
    job_wait_pids(&j, 2, pids);
    assert_int_equal(job_wait(&j, 60), 3);
    expect_clean();
    printf("# launcher exited after %.2f s (timeout_s %d)\n", j.seconds, TIMEOUT_S);
    assert_true(j.seconds >= TIMEOUT_S - 0.5 && j.seconds < TIMEOUT_S + 10);
    expect_gone(pids, 2);
    expect_file_has(j.err, "rank 1 did not join");
}

/* Rank 0 stops answering (SIGSTOP) mid-training: rank 1 times out waiting for it and exits 3
 * ("a peer failed"). The launcher must name rank 0, the one that stopped answering (it
 * ignores SIGTERM too, and has to be killed), not the healthy rank 1 that reported it. */
static void test_stopped_worker_is_named(void **state)
{
    (void)state;
    struct job j;
    pid_t pids[MAX_RANKS];
    start_training(&j, "stopped", long_run, pids);
    assert_int_equal(kill(pids[0], SIGSTOP), 0);
    assert_int_equal(job_wait(&j, TIMEOUT_S + 30), 3);
    expect_gone(pids, 2);
    expect_clean();
    char named[96], blamed[96];
    snprintf(named, sizeof(named), "rank 0 (pid %ld) stopped answering", (long)pids[0]);
    snprintf(blamed, sizeof(blamed), "rank 1 (pid %ld) failed:", (long)pids[1]);
    expect_file_has(j.err, named);
    expect_file_has(j.err, "in state T (stopped");
    char *err = tu_read(j.err);
    if (strstr(err, blamed) != NULL)
        fail_msg("the launcher blames the healthy rank 1:\n%s", err);
    free(err);
}

/* Ctrl-C to the launcher: every worker stops after the same step, rank 0 saves a checkpoint
 * of every step done, all exit 130 and so does the launcher. */
static void test_interrupt_saves_a_checkpoint(void **state)
{
    (void)state;
    struct job j;
    pid_t pids[MAX_RANKS];
    start_training(&j, "interrupted", long_run, pids);
    usleep(100000);
    kill(j.pid, SIGINT);
    assert_int_equal(job_wait(&j, TIMEOUT_S + 20), 130);
    expect_gone(pids, 2);
    expect_clean();
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    read_checkpoint(ck, "interrupted", "last");
    static struct tu_metrics_row rows[20000];
    size_t count = tu_read_metrics(run_path("interrupted", "metrics.csv"), rows, 20000);
    int64_t train_rows = 0;
    for (size_t i = 0; i < count; i++)
        train_rows += !isnan(rows[i].train_loss);
    printf("# interrupted at step %lld (epoch %lld, %lld batches done)\n",
           (long long)ck->state.global_step, (long long)ck->state.epoch,
           (long long)ck->state.batches_done);
    assert_int_equal(ck->state.global_step, train_rows); /* the checkpoint has every step */

    /* The launcher's --resume continues it: 10 more steps (max_steps counts all of them). */
    int64_t done = ck->state.global_step;
    char max_steps[64];
    snprintf(max_steps, sizeof(max_steps), "training.max_steps=%lld", (long long)done + 10);
    const char *resume[] = { "training.n_epochs=100000",
                             "model.model=LSTM",
                             "model.hidden_dim=32",
                             "--devices=2",
                             "--resume=last",
                             "output.force_reset=false",
                             max_steps,
                             NULL };
    struct job again;
    job_start(&again, "interrupted", resume);
    assert_int_equal(job_wait(&again, 120), 0);
    expect_file_has(again.out, "Restored all states from the checkpoint");
    tsrnn_checkpoint_finish(ck);
    read_checkpoint(ck, "interrupted", "last");
    assert_int_equal(ck->state.global_step, done + 10);
    tsrnn_checkpoint_finish(ck);
    free(ck);
}

/* Two runs of one model_name at once: while a 2-worker job trains, a tsrnn-worker with
 * force_reset (as the example has it), a resuming one, a second tsrnn-launch and
 * tsrnn-predict are each refused with exit 2 naming rank 0's pid, before they delete or write
 * anything; the job trains on, and once it has stopped the folder is free again. A reader's
 * shared lock (tsrnn-predict's) keeps a trainer out too, but not another reader. */
static void test_second_run_of_a_model_name_is_refused(void **state)
{
    (void)state;
    struct job j, second;
    pid_t pids[MAX_RANKS];
    struct tu_result *r = calloc(1, sizeof(*r));
    char holder[64], run[PATH_MAX];
    start_training(&j, "shared", long_run, pids);
    snprintf(holder, sizeof(holder), "process %d", (int)pids[0]);
    snprintf(run, sizeof(run), "%s/shared", tu_run_dir());

    const char *reset[] = { "training.n_epochs=1", "--quiet", NULL };
    assert_int_equal(tu_train(r, "shared", reset, 60), 2);
    tu_expect_in(r->err, holder);
    tu_expect_in(r->err, "choose another [output] model_name");
    printf("# %s", r->err);
    assert_int_equal(access(run_path("shared", "config.ini"), F_OK), 0);
    const char *resume[] = { "training.n_epochs=1", "--quiet", "--resume=last",
                             "output.force_reset=false", NULL };
    assert_int_equal(tu_train(r, "shared", resume, 60), 2);
    tu_expect_in(r->err, holder);
    const char *predict[] = { tu_env("TSRNN_PREDICT"), "--run", run, "--n", "3", NULL };
    assert_int_equal(tu_run(predict, 60, r), 0);
    assert_int_equal(r->exit_code, 2);
    tu_expect_in(r->err, holder);
    printf("# %s", r->err);
    const char *launch[] = { "training.n_epochs=1", "--devices=2", NULL };
    job_start(&second, "shared", launch);
    assert_int_equal(job_wait(&second, 60), 2);
    expect_file_has(second.err, holder);

    /* None of them stopped the job or took its files away: it trains on. */
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    read_checkpoint(ck, "shared", "last");
    int64_t seen = ck->state.global_step;
    tsrnn_checkpoint_finish(ck);
    for (double until = now_s() + 30; ck->state.global_step == seen && now_s() < until;) {
        usleep(20000);
        read_checkpoint(ck, "shared", "last");
        tsrnn_checkpoint_finish(ck);
    }
    assert_true(ck->state.global_step > seen);
    assert_int_equal(access(run_path("shared", "config.ini"), F_OK), 0);
    kill(j.pid, SIGINT);
    assert_int_equal(job_wait(&j, TIMEOUT_S + 20), 130);

    /* A reader's lock (taken here as tsrnn-predict takes it) refuses a trainer, naming this
     * process, and lets another reader in. */
    char lock_path[PATH_MAX + 16];
    snprintf(lock_path, sizeof(lock_path), "%s/.shared.lock", tu_run_dir());
    int fd = open(lock_path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct flock shared = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
    assert_int_equal(fcntl(fd, F_SETLK, &shared), 0);
    const char *more[] = { "training.n_epochs=100000",
                           "model.model=LSTM",
                           "model.hidden_dim=32",
                           "training.max_steps=1",
                           "--resume=last",
                           "output.force_reset=false",
                           "--quiet",
                           NULL };
    assert_int_equal(tu_train(r, "shared", more, 60), 2);
    snprintf(holder, sizeof(holder), "process %d", (int)getpid());
    tu_expect_in(r->err, holder);
    assert_int_equal(tu_run(predict, 60, r), 0);
    assert_int_equal(r->exit_code, 0);
    close(fd);
    /* Free: the resume runs. */
    assert_int_equal(tu_train(r, "shared", more, 60), 0);
    free(ck);
    free(r);
}

/* SIGKILL to the launcher itself: its workers die with it (PR_SET_PDEATHSIG). */
static void test_workers_die_with_the_launcher(void **state)
{
    (void)state;
    struct job j;
    pid_t pids[MAX_RANKS];
    start_training(&j, "orphans", long_run, pids);
    kill(j.pid, SIGKILL);
    assert_int_equal(job_wait(&j, 10), 128 + SIGKILL);
    double deadline = now_s() + 5;
    while ((kill(pids[0], 0) == 0 || kill(pids[1], 0) == 0) && now_s() < deadline)
        usleep(10000);
    expect_gone(pids, 2);
    assert_true(tsrnn_folder_holds(tu_run_dir(), "tsrnn-rendezvous-"));

    /* Nobody was left to remove the rendezvous folder: the next launch does. It keeps the
     * folder of a launcher that is still there (its lock held, here by this process). */
    char live[PATH_MAX + 32], lock[PATH_MAX + 64];
    snprintf(live, sizeof(live), "%s/tsrnn-rendezvous-live00", tu_run_dir());
    snprintf(lock, sizeof(lock), "%s/launcher.lock", live);
    assert_int_equal(mkdir(live, 0700), 0);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    struct flock held = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    assert_int_equal(fcntl(fd, F_SETLK, &held), 0);
    const char *args[] = { "training.n_epochs=1", "--devices=2", NULL };
    job_start(&j, "after_orphans", args);
    assert_int_equal(job_wait(&j, 60), 0);
    expect_file_has(j.err, "left by a launcher that is gone");
    assert_int_equal(access(lock, F_OK), 0);
    close(fd);
    tu_rmtree(live);
    expect_clean();
}

/* --max-restarts 1 and rank 1 killed once: the job restarts from the last checkpoint,
 * completes, and ends with the val_loss of an uninterrupted run (resume is exact). */
static void test_restart_recovers_the_same_result(void **state)
{
    (void)state;
    const char *base[] = { "training.n_epochs=60", "model.model=LSTM", "model.hidden_dim=32",
                           "--devices=2", NULL };
    const char *restart[] = { "training.n_epochs=60", "model.model=LSTM", "model.hidden_dim=32",
                              "--devices=2",          "--max-restarts=1", NULL };
    struct job j;
    pid_t pids[MAX_RANKS];
    job_start(&j, "reference", base);
    assert_int_equal(job_wait(&j, 120), 0);

    start_training(&j, "restarted", restart, pids);
    kill(pids[1], SIGKILL);
    assert_int_equal(job_wait(&j, 120), 0);
    expect_file_has(j.err, "restart 1 of 1");
    static struct tu_metrics_row a[2000], b[2000];
    size_t na = tu_read_metrics(run_path("reference", "metrics.csv"), a, 2000);
    size_t nb = tu_read_metrics(run_path("restarted", "metrics.csv"), b, 2000);
    assert_int_equal(na, nb);
    double va = a[na - 1].val_loss, vb = b[nb - 1].val_loss;
    printf("# final val_loss: uninterrupted %.9g, restarted %.9g\n", va, vb);
    assert_true(fabs(va - vb) <= 1e-6 * fabs(va));
}

int main(void)
{
    if (!tsrnn_comm_backend_available("gloo")) {
        printf("# tsrnn was built without Gloo (libgloo-dev): multi-process tests skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_workers_equal_one_with_twice_the_batch),
        cmocka_unit_test(test_val_loss_equals_one_process_evaluation),
        cmocka_unit_test(test_readme_command_falls_back_to_cpu),
        cmocka_unit_test(test_workers_are_told_the_comm_backend),
        cmocka_unit_test(test_killed_worker_stops_the_job),
        cmocka_unit_test(test_failing_worker_stops_the_job),
        cmocka_unit_test(test_worker_with_other_settings_is_refused),
        cmocka_unit_test(test_hanging_worker_is_named),
        cmocka_unit_test(test_stopped_worker_is_named),
        cmocka_unit_test(test_interrupt_saves_a_checkpoint),
        cmocka_unit_test(test_second_run_of_a_model_name_is_refused),
        cmocka_unit_test(test_restart_recovers_the_same_result),
        cmocka_unit_test(test_workers_die_with_the_launcher),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
