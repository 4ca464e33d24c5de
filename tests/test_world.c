/* The launch modes of include/tsrnn/world.h, from environment variables alone (no mpirun or
 * Slurm needed): tsrnn-launch's variables first, then Open MPI's, PMI's and Slurm's, else a
 * world of one; rank, world size, local rank, GPU index and comm backend of each; and the
 * messages for variables that are malformed or do not fit together, a Slurm step without
 * PMIx and a batch script without srun among them. Then what a rank under
 * mpirun or srun chooses (tsrnn_world_choose_mpi_comm: comm backend and GPU from the config,
 * its compute backend and the GPUs it sees), and the visible GPUs counted from a simulated
 * driver list (TSRNN_TEST_NVIDIA_GPUS_DIR) filtered by CUDA_VISIBLE_DEVICES: no GPU needed. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/comm.h"
#include "tsrnn/world.h"

/* Every variable world.c reads: each case starts from none of them. */
static const char *const all_vars[] = {
    "TSRNN_RANK",
    "TSRNN_WORLD_SIZE",
    "TSRNN_LOCAL_RANK",
    "TSRNN_LOCAL_WORLD_SIZE",
    "TSRNN_RENDEZVOUS",
    "TSRNN_COMM_BACKEND",
    "TSRNN_RESTART_COUNT",
    "TSRNN_REPORT_FD",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "SLURM_GPUS_PER_TASK",
    "SLURM_STEP_ID",
    "SLURM_MPI_TYPE",
    "PMIX_RANK",
    "CUDA_VISIBLE_DEVICES",
    "TSRNN_TEST_NVIDIA_GPUS_DIR",
};

/* Sets exactly the "NAME=value" entries of `env` (NULL-terminated) among all_vars. */
static void set_env(const char *const *env)
{
    for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
        unsetenv(all_vars[i]);
    for (; *env != NULL; env++) {
        char name[64];
        const char *eq = strchr(*env, '=');
        assert_non_null(eq);
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *env), *env);
        assert_int_equal(setenv(name, eq + 1, 1), 0);
    }
}

static bool have_mpi(void)
{
    return tsrnn_comm_backend_available("mpi");
}

struct expected {
    int rank, world_size, local_rank, device_index;
    const char *launcher, *backend;
    bool mpi;
};

static void expect_world(const char *const *env, const struct expected *e)
{
    struct tsrnn_world w;
    set_env(env);
    if (tsrnn_world_from_env(&w) != TSRNN_OK)
        fail_msg("%s: %s", env[0] ? env[0] : "(nothing set)", tsrnn_last_error());
    assert_int_equal(w.rank, e->rank);
    assert_int_equal(w.world_size, e->world_size);
    assert_int_equal(w.local_rank, e->local_rank);
    assert_int_equal(w.device_index, e->device_index);
    assert_string_equal(w.launcher, e->launcher);
    assert_string_equal(w.comm_backend, e->backend);
    assert_int_equal(w.mpi, e->mpi);
}

/* A world of more than one rank under an MPI launcher: the mpi backend, or, in a build
 * without MPI, a usage error that says the ranks would train separate models. */
static void expect_mpi_world(const char *const *env, const struct expected *e)
{
    if (have_mpi()) {
        expect_world(env, e);
        return;
    }
    struct tsrnn_world w;
    set_env(env);
    assert_int_equal(tsrnn_world_from_env(&w), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "built without MPI");
    tu_expect_in(tsrnn_last_error(), "separate models");
}

static void test_no_launcher_is_a_world_of_one(void **state)
{
    (void)state;
    const char *none[] = { NULL };
    expect_world(none, &(struct expected){ 0, 1, 0, 0, "none", "local", false });
}

static void test_open_mpi(void **state)
{
    (void)state;
    const char *env[] = { "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
                          "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL };
    expect_mpi_world(env, &(struct expected){ 3, 4, 1, 1, "mpirun (Open MPI)", "mpi", true });
    /* mpirun -np 1: nothing to talk to, MPI is not even started. */
    const char *one[] = { "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1",
                          "OMPI_COMM_WORLD_LOCAL_RANK=0", NULL };
    expect_world(one, &(struct expected){ 0, 1, 0, 0, "mpirun (Open MPI)", "local", true });
}

static void test_pmi(void **state)
{
    (void)state;
    const char *env[] = { "PMI_RANK=2", "PMI_SIZE=4", NULL };
    /* No local rank given: every rank is taken to have a node (and GPU 0) of its own. */
    expect_mpi_world(env, &(struct expected){ 2, 4, 0, 0, "PMI", "mpi", true });
    const char *local[] = { "PMI_RANK=5", "PMI_SIZE=8", "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=4",
                            NULL };
    expect_mpi_world(local, &(struct expected){ 5, 8, 1, 1, "PMI", "mpi", true });
}

/* A task of srun --mpi=pmix: Slurm's variables, a step, and PMIx's. */
static void test_slurm(void **state)
{
    (void)state;
    const char *env[] = { "SLURM_PROCID=5",  "SLURM_NTASKS=16", "SLURM_LOCALID=1",
                          "SLURM_STEP_ID=0", "PMIX_RANK=5",     NULL };
    expect_mpi_world(env, &(struct expected){ 5, 16, 1, 1, "srun (Slurm)", "mpi", true });
    /* srun -n 1 without PMIx: nothing to join, MPI is not even started. */
    const char *one[] = { "SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_ID=3", NULL };
    expect_world(one, &(struct expected){ 0, 1, 0, 0, "srun (Slurm)", "local", true });
}

/* The MPI tsrnn links (Open MPI) joins a job that srun started only through PMIx: a Slurm
 * step of several tasks without it, and Slurm's variables without a step (the batch script
 * running tsrnn-worker itself), are refused before MPI_Init with what to run instead. */
static void test_slurm_without_pmix_is_refused(void **state)
{
    (void)state;
    const struct {
        const char *env[8];
        const char *expect[4];
    } cases[] = {
        /* srun -n 2 where the cluster's MpiDefault is none */
        { { "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_STEP_ID=0" },
          { "srun started this process as rank 1 of 2 (SLURM_PROCID=1, SLURM_NTASKS=2) without "
            "PMIx (no --mpi, and the cluster's MpiDefault is none)",
            "accepted: srun --mpi=pmix" } },
        /* srun --mpi=pmi2: PMI's variables, so read as the PMI launcher */
        { { "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_ID=0", "SLURM_MPI_TYPE=pmi2",
            "PMI_RANK=1", "PMI_SIZE=2" },
          { "as rank 1 of 2 (PMI_RANK=1, PMI_SIZE=2) without PMIx (SLURM_MPI_TYPE=pmi2)",
            "Open MPI, joins a job that srun started only through PMIx",
            "accepted: srun --mpi=pmix" } },
        /* sbatch --ntasks=4 whose script runs tsrnn-worker without srun */
        { { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0" },
          { "SLURM_PROCID=0 and SLURM_NTASKS=4 describe a job of 4 tasks, but SLURM_STEP_ID is "
            "unset: this process is the batch script itself",
            "accepted: srun --mpi=pmix tsrnn-worker" } },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tsrnn_world w;
        set_env(cases[i].env);
        enum tsrnn_status status = tsrnn_world_from_env(&w);
        if (status != TSRNN_ERR_USAGE)
            fail_msg("case %zu: status %d, expected a usage error", i, (int)status);
        if (!have_mpi()) { /* a build without MPI says that first */
            tu_expect_in(tsrnn_last_error(), "built without MPI");
            continue;
        }
        for (size_t k = 0; k < 4 && cases[i].expect[k] != NULL; k++)
            tu_expect_in(tsrnn_last_error(), cases[i].expect[k]);
    }
}

/* tsrnn-launch's variables win over any MPI launcher's (a tsrnn-launch inside an allocation),
 * and mpirun's over Slurm's (mpirun inside an sbatch script, where the batch shell's
 * SLURM_PROCID is 0 for every rank). */
static void test_order_of_the_launch_modes(void **state)
{
    (void)state;
    const char *launch[] = { "TSRNN_RANK=1",
                             "TSRNN_WORLD_SIZE=2",
                             "TSRNN_RENDEZVOUS=file:/tmp",
                             "TSRNN_COMM_BACKEND=gloo",
                             "OMPI_COMM_WORLD_RANK=0",
                             "OMPI_COMM_WORLD_SIZE=4",
                             "SLURM_PROCID=0",
                             "SLURM_NTASKS=4",
                             NULL };
    expect_world(launch, &(struct expected){ 1, 2, 1, 0, "tsrnn-launch", "gloo", false });
    const char *mpirun[] = { "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3", "SLURM_PROCID=0",
                             "SLURM_NTASKS=1", NULL };
    expect_mpi_world(mpirun, &(struct expected){ 2, 3, 0, 0, "mpirun (Open MPI)", "mpi", true });
    const char *pmi[] = { "PMI_RANK=1", "PMI_SIZE=2", "SLURM_PROCID=0", "SLURM_NTASKS=1", NULL };
    expect_mpi_world(pmi, &(struct expected){ 1, 2, 0, 0, "PMI", "mpi", true });
}

/* A malformed or inconsistent variable: exit-code-2 errors naming it, the accepted values and
 * the launcher that set it. */
static void test_bad_variables(void **state)
{
    (void)state;
    const struct {
        const char *env[6];
        const char *expect[3];
    } cases[] = {
        { { "SLURM_PROCID=16", "SLURM_NTASKS=16" },
          { "SLURM_PROCID=16", "an integer from 0 to 15", "srun (Slurm) sets it" } },
        { { "SLURM_PROCID=0", "SLURM_NTASKS=zero" },
          { "SLURM_NTASKS=zero", "an integer from 1 to", "srun (Slurm)" } },
        { { "PMI_RANK=1" }, { "PMI_RANK=1 without PMI_SIZE", "started by PMI" } },
        { { "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
            "OMPI_COMM_WORLD_LOCAL_RANK=2" },
          { "OMPI_COMM_WORLD_LOCAL_RANK=2", "an integer from 0 to 1", "mpirun (Open MPI)" } },
        { { "SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=-1" },
          { "SLURM_LOCALID=-1", "an integer from 0 to 1" } },
        /* tsrnn-launch's own variables keep naming tsrnn-launch. */
        { { "TSRNN_RANK=2", "TSRNN_WORLD_SIZE=2" },
          { "TSRNN_RANK=2", "an integer from 0 to 1", "tsrnn-launch sets it" } },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tsrnn_world w;
        const char *env[8] = { 0 };
        for (size_t k = 0; k < 6 && cases[i].env[k] != NULL; k++)
            env[k] = cases[i].env[k];
        set_env(env);
        enum tsrnn_status status = tsrnn_world_from_env(&w);
        if (status != TSRNN_ERR_USAGE)
            fail_msg("case %zu: status %d, expected a usage error", i, (int)status);
        for (size_t k = 0; k < 3 && cases[i].expect[k] != NULL; k++)
            tu_expect_in(tsrnn_last_error(), cases[i].expect[k]);
    }
}

/* --- the choice of a rank under mpirun or srun ------------------------------------------- */

/* One rank's situation and what it must choose: backend and GPU, or a refusal whose message
 * holds `expect` (up to 4 parts). */
struct choice_case {
    const char *env[8];
    enum tsrnn_comm_choice comm;
    bool gpu;
    size_t visible;
    bool per_task;
    const char *backend; /* NULL: refused */
    int device_index;
    const char *expect[4];
};

static void expect_choice(size_t i, const struct choice_case *c)
{
    struct tsrnn_world w;
    const char *env[10] = { 0 };
    for (size_t k = 0; k < 8 && c->env[k] != NULL; k++)
        env[k] = c->env[k];
    set_env(env);
    if (tsrnn_world_from_env(&w) != TSRNN_OK)
        fail_msg("case %zu: %s", i, tsrnn_last_error());
    struct tsrnn_rank_devices d = { .comm = c->comm,
                                    .comm_origin = "train.ini:7",
                                    .gpu = c->gpu,
                                    .visible_gpu_count = c->visible,
                                    .gpus_per_task = c->per_task };
    enum tsrnn_status status = tsrnn_world_choose_mpi_comm(&w, &d);
    bool nccl_missing = c->backend != NULL && strcmp(c->backend, "nccl") == 0 &&
                        !tsrnn_comm_backend_available("nccl");
    if (c->backend == NULL || nccl_missing) {
        if (status != TSRNN_ERR_USAGE)
            fail_msg("case %zu: status %d, expected a usage error", i, (int)status);
        tu_expect_in(tsrnn_last_error(), "train.ini:7: [trainer] comm = ");
        if (nccl_missing)
            tu_expect_in(tsrnn_last_error(), "built without the nccl comm backend");
        for (size_t k = 0; !nccl_missing && k < 4 && c->expect[k] != NULL; k++)
            tu_expect_in(tsrnn_last_error(), c->expect[k]);
        return;
    }
    if (status != TSRNN_OK)
        fail_msg("case %zu: %s", i, tsrnn_last_error());
    if (strcmp(w.comm_backend, c->backend) != 0 || w.device_index != c->device_index)
        fail_msg("case %zu: %s on GPU %d, expected %s on GPU %d", i, w.comm_backend, w.device_index,
                 c->backend, c->device_index);
}

#define OMPI(rank, size, local, local_size)                                                        \
    "OMPI_COMM_WORLD_RANK=" #rank, "OMPI_COMM_WORLD_SIZE=" #size,                                  \
        "OMPI_COMM_WORLD_LOCAL_RANK=" #local, "OMPI_COMM_WORLD_LOCAL_SIZE=" #local_size
#define SRUN(rank, size, local)                                                                    \
    "SLURM_PROCID=" #rank, "SLURM_NTASKS=" #size, "SLURM_LOCALID=" #local, "SLURM_STEP_ID=0",      \
        "PMIX_RANK=" #rank

static void test_mpi_rank_chooses_backend_and_gpu(void **state)
{
    (void)state;
    if (!have_mpi())
        skip(); /* a world of several MPI ranks is refused before any choice (test_open_mpi) */
    const struct choice_case cases[] = {
        /* CPU ranks talk over MPI, whatever auto or gloo say; their GPU index is unused. */
        { { OMPI(3, 4, 1, 2) }, TSRNN_COMM_CHOICE_AUTO, false, 0, false, "mpi", 0, { NULL } },
        { { OMPI(3, 4, 1, 2) }, TSRNN_COMM_CHOICE_GLOO, false, 2, false, "mpi", 0, { NULL } },
        /* GPU ranks: nccl, the GPU at the local rank (2 per node, 2 GPUs each). */
        { { OMPI(3, 4, 1, 2) }, TSRNN_COMM_CHOICE_AUTO, true, 2, false, "nccl", 1, { NULL } },
        { { OMPI(2, 4, 0, 2) }, TSRNN_COMM_CHOICE_NCCL, true, 8, false, "nccl", 0, { NULL } },
        /* 4 ranks on a node of 2 GPUs: every rank refuses, rank 0 too. */
        { { OMPI(0, 4, 0, 4) },
          TSRNN_COMM_CHOICE_AUTO,
          true,
          2,
          false,
          NULL,
          0,
          { "comm = auto runs one rank per GPU", "puts 4 ranks on rank 0's node and 2 GPUs are",
            "local rank 2 would share GPU 0 with local rank 0",
            "at most 2 ranks per node (mpirun --map-by ppr:2:node" } },
        /* ... which comm = gloo allows: the ranks take the GPUs in turn, over MPI. */
        { { OMPI(3, 4, 3, 4) }, TSRNN_COMM_CHOICE_GLOO, true, 2, false, "mpi", 1, { NULL } },
        /* comm = nccl on a CPU rank, or on a GPU rank that sees none. */
        { { OMPI(1, 2, 1, 2) },
          TSRNN_COMM_CHOICE_NCCL,
          false,
          2,
          false,
          NULL,
          0,
          { "comm = nccl, but rank 1 (started by mpirun (Open MPI)) trains on the CPU",
            "NCCL carries GPU ranks only", "accepted: comm = auto or gloo" } },
        { { OMPI(1, 2, 1, 2), "CUDA_VISIBLE_DEVICES=" },
          TSRNN_COMM_CHOICE_NCCL,
          true,
          0,
          false,
          NULL,
          0,
          { "rank 1 (started by mpirun (Open MPI)) trains on a GPU but sees none",
            "(CUDA_VISIBLE_DEVICES=)" } },
        /* srun does not say how many tasks share the node: local rank 3 of >= 4 on 4 GPUs is
         * fine, local rank 1 on 1 GPU is refused, unless srun --gpus-per-task gave every
         * task a GPU of its own (then its first). */
        { { SRUN(11, 16, 3) }, TSRNN_COMM_CHOICE_AUTO, true, 4, false, "nccl", 3, { NULL } },
        { { SRUN(5, 16, 1) },
          TSRNN_COMM_CHOICE_AUTO,
          true,
          1,
          false,
          NULL,
          0,
          { "srun (Slurm) puts at least 2 ranks on rank 5's node and 1 GPU is visible",
            "local rank 1 would share GPU 0 with local rank 0", "srun --gpus-per-task=1" } },
        { { SRUN(5, 16, 1) }, TSRNN_COMM_CHOICE_AUTO, true, 1, true, "nccl", 0, { NULL } },
        /* mpirun -np 1: alone (local), or the NCCL path on one GPU when comm = nccl asks. */
        { { OMPI(0, 1, 0, 1) }, TSRNN_COMM_CHOICE_AUTO, true, 1, false, "local", 0, { NULL } },
        { { OMPI(0, 1, 0, 1) }, TSRNN_COMM_CHOICE_NCCL, true, 1, false, "nccl", 0, { NULL } },
        /* tsrnn-launch chose already: nothing changes. */
        { { "TSRNN_RANK=1", "TSRNN_WORLD_SIZE=2", "TSRNN_RENDEZVOUS=file:/tmp",
            "TSRNN_COMM_BACKEND=gloo" },
          TSRNN_COMM_CHOICE_AUTO,
          true,
          1,
          false,
          "gloo",
          0,
          { NULL } },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_choice(i, &cases[i]);
}

/* The GPUs a rank sees: a simulated driver list of 4, filtered by CUDA_VISIBLE_DEVICES as
 * CUDA reads it; and srun's per-task GPUs. */
static void test_visible_gpus(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/tsrnn-test-world-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    for (int g = 0; g < 4; g++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/0000:%02x:00.0", dir, g);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    const struct {
        const char *visible; /* NULL: unset */
        size_t count;
        const char *ids[4];
    } cases[] = {
        { NULL, 4, { "0", "1", "2", "3" } },
        { "2,0", 2, { "2", "0" } },
        { "1,7,2", 1, { "1" } }, /* CUDA stops at the first invalid entry */
        { "3,3", 1, { "3" } },   /* and at a repeated one */
        { "", 0, { NULL } },
        { "GPU-8f2a,MIG-1c", 2, { "GPU-8f2a", "MIG-1c" } },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[3] = { NULL };
        char fake[PATH_MAX + 40], visible[64];
        snprintf(fake, sizeof(fake), "TSRNN_TEST_NVIDIA_GPUS_DIR=%s", dir);
        env[0] = fake;
        if (cases[i].visible != NULL) {
            snprintf(visible, sizeof(visible), "CUDA_VISIBLE_DEVICES=%s", cases[i].visible);
            env[1] = visible;
        }
        set_env(env);
        char ids[8][TSRNN_GPU_ID_MAX];
        assert_int_equal(tsrnn_world_visible_gpus(ids, 8), cases[i].count);
        assert_int_equal(tsrnn_world_visible_gpus(NULL, 0), cases[i].count);
        for (size_t k = 0; k < cases[i].count; k++)
            assert_string_equal(ids[k], cases[i].ids[k]);
    }
    /* srun --gpus-per-task: each task its own GPUs; mpirun has no such thing. */
    struct tsrnn_world w;
    struct tsrnn_rank_devices d;
    const char *srun[] = { SRUN(1, 2, 1), "SLURM_GPUS_PER_TASK=1", "CUDA_VISIBLE_DEVICES=", NULL };
    set_env(srun);
    if (have_mpi()) {
        assert_int_equal(tsrnn_world_from_env(&w), TSRNN_OK);
        tsrnn_world_rank_devices_from_env(&d, &w);
        assert_true(d.gpus_per_task);
        assert_int_equal(d.visible_gpu_count, 0);
        const char *ompi[] = { OMPI(1, 2, 1, 2), "SLURM_GPUS_PER_TASK=1", NULL };
        set_env(ompi);
        assert_int_equal(tsrnn_world_from_env(&w), TSRNN_OK);
        tsrnn_world_rank_devices_from_env(&d, &w);
        assert_false(d.gpus_per_task);
    }
    set_env((const char *[]){ NULL });
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_launcher_is_a_world_of_one),
        cmocka_unit_test(test_open_mpi),
        cmocka_unit_test(test_pmi),
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_slurm_without_pmix_is_refused),
        cmocka_unit_test(test_order_of_the_launch_modes),
        cmocka_unit_test(test_bad_variables),
        cmocka_unit_test(test_mpi_rank_chooses_backend_and_gpu),
        cmocka_unit_test(test_visible_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
