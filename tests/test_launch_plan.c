/* tsrnn-launch's plan for GPU workers on a machine without a GPU: a simulated GPU list
 * (TSRNN_TEST_NVIDIA_GPUS_DIR, a folder with one entry per GPU, read where the launcher
 * reads /proc/driver/nvidia/gpus) and a stand-in worker that writes down what it was given.
 * Checked: how many workers, the comm backend each is told (local / nccl / gloo, [trainer]
 * comm), CUDA_VISIBLE_DEVICES and LOCAL_RANK per rank, CUDA_VISIBLE_DEVICES of the launcher
 * honoured, and the refusals (exit 2) with the counts they name. No CUDA call is made. */
#include <setjmp.h>
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
#include "tsrnn/comm.h"
#include "tsrnn/core.h"

static char gpus_dir[4200], env_dir[4200], worker_arg[4200];
static char out_path[4200], err_path[4200];
static int plan_count;
/* The NVML the launcher loads (tests/stub/nvml.c): none unless a test sets these; its
 * nvmlInit_v2 answer (0 = success) and device count. */
static const char *nvml_library;
static int nvml_init = 0, nvml_count = 0;

/* A fresh simulated machine with `count` GPUs (folders named as the driver names them). */
static void make_gpus(int count)
{
    char path[4300];
    snprintf(gpus_dir, sizeof(gpus_dir), "%s/gpus-%d", tu_run_dir(), plan_count);
    assert_int_equal(mkdir(gpus_dir, 0700), 0);
    for (int g = 0; g < count; g++) {
        snprintf(path, sizeof(path), "%s/0000:%02x:00.0", gpus_dir, g + 1);
        assert_int_equal(mkdir(path, 0700), 0);
    }
}

/* Runs tsrnn-launch with `args` (NULL-terminated, before the INI file) and
 * CUDA_VISIBLE_DEVICES = `visible` (NULL: unset); returns its exit code. */
static int launch(const char *visible, const char *const *args)
{
    const char *argv[32];
    char work_dir[4300], name[64];
    size_t n = 0;
    plan_count++;
    snprintf(env_dir, sizeof(env_dir), "%s/env-%d", tu_run_dir(), plan_count);
    assert_int_equal(mkdir(env_dir, 0700), 0);
    snprintf(work_dir, sizeof(work_dir), "output.work_dir=%s", tu_run_dir());
    snprintf(name, sizeof(name), "output.model_name=plan%d", plan_count);
    argv[n++] = tu_env("TSRNN_LAUNCH");
    argv[n++] = worker_arg;
    argv[n++] = "--set";
    argv[n++] = work_dir;
    argv[n++] = "--set";
    argv[n++] = name;
    for (size_t i = 0; args[i] != NULL; i++)
        argv[n++] = args[i];
    argv[n++] = tu_source("examples/air_passengers.ini");
    argv[n] = NULL;
    snprintf(out_path, sizeof(out_path), "%s/plan%d.out", tu_run_dir(), plan_count);
    snprintf(err_path, sizeof(err_path), "%s/plan%d.err", tu_run_dir(), plan_count);
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TSRNN_TEST_NVIDIA_GPUS_DIR", gpus_dir, 1);
        if (nvml_library != NULL) {
            char number[16];
            setenv("TSRNN_TEST_NVML", nvml_library, 1);
            snprintf(number, sizeof(number), "%d", nvml_init);
            setenv("TSRNN_STUB_NVML_INIT", number, 1);
            snprintf(number, sizeof(number), "%d", nvml_count);
            setenv("TSRNN_STUB_NVML_COUNT", number, 1);
        }
        setenv("PLAN_ENV_DIR", env_dir, 1);
        setenv("TMPDIR", tu_run_dir(), 1);
        if (visible)
            setenv("CUDA_VISIBLE_DEVICES", visible, 1);
        else
            unsetenv("CUDA_VISIBLE_DEVICES");
        if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    double start = tsrnn_clock_now_s();
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (tsrnn_clock_now_s() - start > 30) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("tsrnn-launch still ran after 30 s");
        }
        usleep(5000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* What rank `rank` was given: "cvd=.. local=.. comm=.. world=..". */
static void expect_worker(int rank, const char *want)
{
    char name[32];
    snprintf(name, sizeof(name), "rank-%d", rank);
    char *got = tu_read(tu_path(env_dir, name));
    if (got == NULL)
        fail_msg("rank %d did not start", rank);
    if (strncmp(got, want, strlen(want)) != 0)
        fail_msg("rank %d was given '%s', expected '%s'", rank, got, want);
    free(got);
}

static void expect_no_worker(int rank)
{
    char name[32];
    snprintf(name, sizeof(name), "rank-%d", rank);
    assert_int_not_equal(access(tu_path(env_dir, name), F_OK), 0);
}

static void expect_file_has(const char *path, const char *needle)
{
    char *text = tu_read(path);
    tu_expect_in(text ? text : "", needle);
    free(text);
}

static int setup(void **state)
{
    if (tu_setup_run_dir(state) != 0)
        return -1;
    const char *script = tu_write(tu_run_dir(), "worker.sh",
                                  "#!/bin/sh\n"
                                  "echo \"cvd=$CUDA_VISIBLE_DEVICES local=$LOCAL_RANK "
                                  "comm=$TSRNN_COMM_BACKEND world=$TSRNN_WORLD_SIZE\" "
                                  "> \"$PLAN_ENV_DIR/rank-$TSRNN_RANK\"\n");
    assert_int_equal(chmod(script, 0755), 0);
    snprintf(worker_arg, sizeof(worker_arg), "--worker=%s", script);
    return 0;
}

static void test_every_gpu_one_worker_each(void **state)
{
    (void)state;
    bool nccl = tsrnn_comm_backend_available("nccl");
    make_gpus(3);
    const char *all[] = { "--accelerator=gpu", "--devices=-1", NULL };
    if (!nccl) { /* a build without the nccl backend says so, before starting anyone */
        assert_int_equal(launch(NULL, all), 2);
        expect_file_has(err_path, "asks for 3 GPU workers talking through NCCL, but this tsrnn "
                                  "was built without the nccl comm backend");
        expect_no_worker(0);
        return;
    }
    assert_int_equal(launch(NULL, all), 0);
    expect_file_has(out_path, "GPU available: True (cuda), used: True");
    expect_file_has(out_path, "Launching 3 worker processes (gpu, nccl)");
    for (int r = 0; r < 3; r++) {
        char want[96];
        snprintf(want, sizeof(want), "cvd=%d local=%d comm=nccl world=3", r, r);
        expect_worker(r, want);
    }
    expect_no_worker(3);

    /* The launcher's own CUDA_VISIBLE_DEVICES decides which GPUs there are, in its order. */
    assert_int_equal(launch("2,0", all), 0);
    expect_worker(0, "cvd=2 local=0 comm=nccl world=2");
    expect_worker(1, "cvd=0 local=1 comm=nccl world=2");
    expect_no_worker(2);

    const char *some[] = { "--accelerator=gpu", "--devices=0,2", NULL };
    assert_int_equal(launch(NULL, some), 0);
    expect_worker(0, "cvd=0 local=0 comm=nccl world=2");
    expect_worker(1, "cvd=2 local=1 comm=nccl world=2");

    const char *first[] = { "--accelerator=gpu", "--devices=2", NULL };
    assert_int_equal(launch(NULL, first), 0);
    expect_worker(0, "cvd=0 local=0 comm=nccl world=2");
    expect_worker(1, "cvd=1 local=1 comm=nccl world=2");
}

/* Sandboxed GPU machines may have NVML and no /proc/driver/nvidia/gpus: the launcher counts
 * the GPUs through NVML (loaded with dlopen, no CUDA context before the fork). */
static void test_gpus_counted_through_nvml(void **state)
{
    (void)state;
    char stub[4300];
    snprintf(stub, sizeof(stub), "%s/libnvidia-ml.so.1", tu_env("TSRNN_STUB_DIR"));
    snprintf(gpus_dir, sizeof(gpus_dir), "%s/no-proc-folder", tu_run_dir()); /* absent */
    nvml_library = stub;
    nvml_init = 0;
    nvml_count = 2;
    const char *all[] = { "--accelerator=gpu", "--devices=-1", "--set", "trainer.comm=gloo", NULL };
    assert_int_equal(launch(NULL, all), 0);
    expect_file_has(out_path, "GPU available: True (cuda), used: True");
    expect_file_has(out_path, "Launching 2 worker processes (gpu, gloo)");
    expect_worker(0, "cvd=0 local=0 comm=gloo world=2");
    expect_worker(1, "cvd=1 local=1 comm=gloo world=2");
    expect_no_worker(2);
    /* CUDA_VISIBLE_DEVICES filters NVML's GPUs as it filters /proc's. */
    assert_int_equal(launch("1", all), 0);
    expect_worker(0, "cvd=1 local=0 comm=local world=1");
    expect_no_worker(1);

    /* NVML there but not answering (nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED): /proc's
     * folder counts. */
    make_gpus(3);
    nvml_init = 9;
    assert_int_equal(launch(NULL, all), 0);
    expect_file_has(out_path, "Launching 3 worker processes (gpu, gloo)");
    expect_no_worker(3);

    /* Neither: no GPU, and the refusal says where it looked. */
    snprintf(gpus_dir, sizeof(gpus_dir), "%s/no-proc-folder", tu_run_dir());
    assert_int_equal(launch(NULL, all), 2);
    expect_file_has(out_path, "GPU available: False, used: False");
    expect_file_has(err_path, "no GPU is visible (the driver's count, from none (no NVML, no "
                              "/proc/driver/nvidia/gpus), is 0");
    expect_no_worker(0);
    nvml_library = NULL;
}

static void test_one_worker_is_local_unless_nccl_is_asked(void **state)
{
    (void)state;
    make_gpus(1);
    const char *one[] = { "--accelerator=gpu", "--devices=1", NULL };
    assert_int_equal(launch(NULL, one), 0);
    expect_file_has(out_path, "Launching 1 worker process (gpu, local)");
    expect_worker(0, "cvd=0 local=0 comm=local world=1");
    const char *nccl[] = { "--accelerator=gpu", "--devices=1", "--set", "trainer.comm=nccl", NULL };
    if (tsrnn_comm_backend_available("nccl")) {
        assert_int_equal(launch(NULL, nccl), 0);
        expect_worker(0, "cvd=0 local=0 comm=nccl world=1");
    }
}

static void test_more_workers_than_gpus(void **state)
{
    (void)state;
    make_gpus(2);
    const char *three[] = { "--accelerator=gpu", "--devices=3", NULL };
    assert_int_equal(launch(NULL, three), 2);
    expect_file_has(err_path, "--devices: [trainer] devices = '3' asks for 3 GPU workers, but 2 "
                              "GPUs are visible and NCCL runs one worker per GPU; accepted: 1 to "
                              "2, -1 (all), a list of indices below 2, or [trainer] comm = gloo");
    expect_no_worker(0);

    const char *missing[] = { "--accelerator=gpu", "--devices=0,3", NULL };
    assert_int_equal(launch(NULL, missing), 2);
    expect_file_has(err_path, "GPU 3 is not visible (2 GPUs); accepted: indices 0 to 1");

    /* Over Gloo, workers share the GPUs in turn. */
    const char *shared[] = { "--accelerator=gpu", "--devices=3", "--set", "trainer.comm=gloo",
                             NULL };
    if (!tsrnn_comm_backend_available("gloo"))
        return;
    assert_int_equal(launch(NULL, shared), 0);
    expect_file_has(out_path, "Launching 3 worker processes (gpu, gloo)");
    expect_worker(0, "cvd=0 local=0 comm=gloo world=3");
    expect_worker(1, "cvd=1 local=1 comm=gloo world=3");
    expect_worker(2, "cvd=0 local=2 comm=gloo world=3");
}

static void test_refusals(void **state)
{
    (void)state;
    make_gpus(0);
    const char *gpu[] = { "--accelerator=gpu", "--devices=1", NULL };
    assert_int_equal(launch(NULL, gpu), 2);
    expect_file_has(out_path, "GPU available: False, used: False");
    expect_file_has(err_path, "--accelerator gpu, but no GPU is visible");
    const char *cpu_nccl[] = { "--accelerator=cpu", "--devices=2", "--set", "trainer.comm=nccl",
                               NULL };
    assert_int_equal(launch(NULL, cpu_nccl), 2);
    expect_file_has(err_path, "--set trainer.comm=nccl: [trainer] comm = nccl needs GPU workers, "
                              "but these are CPU workers (accelerator cpu)");
    const char *bad[] = { "--set", "trainer.comm=mpi", NULL };
    assert_int_equal(launch(NULL, bad), 2);
    expect_file_has(err_path, "--set trainer.comm=mpi: [trainer] comm = 'mpi': unknown value; "
                              "accepted: auto, gloo or nccl");
    expect_no_worker(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_gpu_one_worker_each),
        cmocka_unit_test(test_gpus_counted_through_nvml),
        cmocka_unit_test(test_one_worker_is_local_unless_nccl_is_asked),
        cmocka_unit_test(test_more_workers_than_gpus),
        cmocka_unit_test(test_refusals),
    };
    int rc = cmocka_run_group_tests(tests, setup, tu_teardown_run_dir);
    return rc;
}
