/* The launch modes of include/tsrnn/world.h, from environment variables alone (no mpirun or
 * Slurm needed): tsrnn-launch's variables first, then Open MPI's, PMI's and Slurm's, else a
 * world of one; rank, world size, local rank, GPU index and comm backend of each; and the
 * messages for variables that are malformed or do not fit together. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void test_slurm(void **state)
{
    (void)state;
    const char *env[] = { "SLURM_PROCID=5", "SLURM_NTASKS=16", "SLURM_LOCALID=1", NULL };
    expect_mpi_world(env, &(struct expected){ 5, 16, 1, 1, "srun (Slurm)", "mpi", true });
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_launcher_is_a_world_of_one),
        cmocka_unit_test(test_open_mpi),
        cmocka_unit_test(test_pmi),
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_order_of_the_launch_modes),
        cmocka_unit_test(test_bad_variables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
