/* tsrnn-worker: one training process. It reads the run's INI file, applies --set overrides,
 * finds out which rank of which world it is (include/tsrnn/world.h: alone, or started by
 * tsrnn-launch), joins the others, loads and windows the data, trains the model (src/train/)
 * and prints what happened; rank 0 reports the result to the launcher.
 *
 * Exit codes (include/tsrnn/core.h): 0 ok, 1 runtime failure, 2 usage/config/data error,
 * 3 a peer failed or timed out, 130 interrupted (SIGINT/SIGTERM: every rank stops after the
 * same step, rank 0 saves a checkpoint; under srun a SIGTERM may also say that a peer died,
 * and the ranks that find nobody answering end the job with 3: src/comm/mpi.c).
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/comm.h"
#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/model.h"
#include "tsrnn/report.h"
#include "tsrnn/train.h"
#include "tsrnn/world.h"

#define PROGRAM "tsrnn-worker"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " PROGRAM " [OPTION]... FILE.ini\n"
            "\n"
            "Trains a Darts-style RNN/LSTM/GRU forecasting model as configured in FILE.ini.\n"
            "\n"
            "Options:\n"
            "  -s, --set section.key=value  override one config value (repeatable; wins over\n"
            "                               the file; later --set wins over earlier)\n"
            "  -r, --resume WHICH           continue a run from its checkpoint: last, best or\n"
            "                               a checkpoint file (= --set training.resume=WHICH)\n"
            "  -p, --print-config           print the fully resolved config and exit\n"
            "  -q, --quiet                  print only the final summary\n"
            "      --progress=MODE          the epoch progress bar: auto (a live bar on a\n"
            "                               terminal, else one line per epoch), bar, plain,\n"
            "                               none\n"
            "  -h, --help                   show this help and exit\n"
            "  -V, --version                show the version and exit\n"
            "\n"
            "Started by tsrnn-launch, it reads its rank from TSRNN_RANK, TSRNN_WORLD_SIZE,\n"
            "TSRNN_LOCAL_RANK, TSRNN_RENDEZVOUS and TSRNN_COMM_BACKEND; started by mpirun\n"
            "or srun --mpi=pmix, from OMPI_COMM_WORLD_* or SLURM_* and talks through MPI;\n"
            "without any of them it trains alone.\n"
            "\n"
            "Exit codes: 0 ok, 1 runtime failure, 2 usage, config or data error, 3 a peer\n"
            "failed or timed out, 130 interrupted (SIGINT/SIGTERM stop it between two\n"
            "training steps).\n");
}

static volatile sig_atomic_t stop_requested;

static void request_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGINT / SIGTERM stop training at the next step boundary (exit 130); a second one kills
 * at once (the default action is restored). */
static void install_stop_handlers(void)
{
    struct sigaction sa = { .sa_handler = request_stop, .sa_flags = SA_RESETHAND };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A peer's closed socket or a gone launcher's pipe is an error to report, not a death. */
    signal(SIGPIPE, SIG_IGN);
}

static bool parse_progress(const char *text, enum tsrnn_progress_mode *mode)
{
    static const struct {
        const char *name;
        enum tsrnn_progress_mode mode;
    } modes[] = {
        { "auto", TSRNN_PROGRESS_AUTO },
        { "bar", TSRNN_PROGRESS_BAR },
        { "plain", TSRNN_PROGRESS_PLAIN },
        { "none", TSRNN_PROGRESS_NONE },
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(text, modes[i].name) == 0) {
            *mode = modes[i].mode;
            return true;
        }
    return false;
}

static enum tsrnn_status join_world(struct tsrnn_comm **comm, const struct tsrnn_world *world,
                                    const struct tsrnn_config *cfg, struct tsrnn_compute *compute)
{
    struct tsrnn_comm_options opt = {
        .rank = world->rank,
        .world_size = world->world_size,
        .rendezvous = world->rendezvous[0] != '\0' ? world->rendezvous : NULL, /* MPI: none */
        .timeout_s = cfg->timeout_s,
        .backend = world->comm_backend, /* the launcher's choice, never derived here */
        .compute = compute,
        /* Under srun a SIGTERM may also mean a peer died (comm.h): mpi then ends the job. */
        .stop_requested = &stop_requested,
    };
    return tsrnn_comm_open(comm, &opt);
}

/* ddp_spawn's rank 0 puts the fit's outcome on a queue for the main process; ours writes it
 * to the launcher's pipe (include/tsrnn/world.h). */
static void report_result(const struct tsrnn_world *world, const struct tsrnn_train_result *r)
{
    tsrnn_world_report(world, "epochs", "%lld", (long long)r->epoch_count);
    tsrnn_world_report(world, "steps", "%lld", (long long)r->step_count);
    /* A loss this process did not compute (no validation; a resumed run with nothing left to
     * train) is NaN: not reported, so the launcher prints no line for it. */
    if (isfinite(r->last_step_loss))
        tsrnn_world_report(world, "train_loss", "%.9g", r->last_step_loss);
    if (isfinite(r->val_loss))
        tsrnn_world_report(world, "val_loss", "%.9g", r->val_loss);
    if (isfinite(r->best_val_loss))
        tsrnn_world_report(world, "best_val_loss", "%.9g", r->best_val_loss);
    tsrnn_world_report(world, "best_checkpoint", "%s", r->best_checkpoint);
    tsrnn_world_report(world, "last_checkpoint", "%s", r->last_checkpoint);
    tsrnn_world_report(world, "wall_s", "%.3f", r->total_s);
    tsrnn_world_report(world, "done", "1");
}

static int fail(enum tsrnn_status status)
{
    fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
    return tsrnn_status_exit_code(status);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "set", required_argument, NULL, 's' },      { "resume", required_argument, NULL, 'r' },
        { "print-config", no_argument, NULL, 'p' },   { "quiet", no_argument, NULL, 'q' },
        { "progress", required_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },        { NULL, 0, NULL, 0 },
    };
    const char **overrides = calloc((size_t)argc, sizeof(*overrides));
    /* "training.resume=..." for --resume; a later --resume rewrites it, and wins. */
    static char resume_override[PATH_MAX + 32];
    size_t override_count = 0;
    int print_config = 0;
    struct tsrnn_train_options train_options = { .out = stdout, .stop_requested = &stop_requested };
    int opt;

    if (overrides == NULL) {
        fprintf(stderr, PROGRAM ": error: out of memory\n");
        return TSRNN_EXIT_RUNTIME;
    }
    while ((opt = getopt_long(argc, argv, "s:r:pqhV", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            overrides[override_count++] = optarg;
            break;
        case 'r':
            if ((size_t)snprintf(resume_override, sizeof(resume_override), "training.resume=%s",
                                 optarg) >= sizeof(resume_override)) {
                tsrnn_error(TSRNN_ERR_USAGE, "--resume %s: path too long", optarg);
                fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
                free(overrides);
                return TSRNN_EXIT_USAGE;
            }
            overrides[override_count++] = resume_override;
            break;
        case 'p':
            print_config = 1;
            break;
        case 'q':
            train_options.quiet = true;
            break;
        case 'P':
            if (!parse_progress(optarg, &train_options.progress)) {
                tsrnn_error(TSRNN_ERR_USAGE, "--progress=%s: accepted: auto, bar, plain, none",
                            optarg);
                fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
                free(overrides);
                return TSRNN_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            free(overrides);
            return TSRNN_EXIT_OK;
        case 'V':
            printf(PROGRAM " %s\n", tsrnn_version());
            free(overrides);
            return TSRNN_EXIT_OK;
        default:
            usage(stderr);
            free(overrides);
            return TSRNN_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, PROGRAM ": error: expected one config file, got %d\n", argc - optind);
        usage(stderr);
        free(overrides);
        return TSRNN_EXIT_USAGE;
    }
    const char *ini_path = argv[optind];

    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    struct tsrnn_dataset ds = { 0 };
    struct tsrnn_sampler sampler = { 0 };
    struct tsrnn_world world = { .world_size = 1 };
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_comm *comm = NULL;
    enum tsrnn_status status = cfg ? TSRNN_OK : tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    if (status == TSRNN_OK)
        status = tsrnn_world_from_env(&world);
    if (status == TSRNN_OK)
        status = tsrnn_config_load(cfg, ini_path, overrides, override_count);
    if (status == TSRNN_OK)
        status = tsrnn_data_check_config(cfg);
    if (status == TSRNN_OK && print_config) {
        printf("# tsrnn %s: resolved configuration of %s\n", tsrnn_version(), ini_path);
        status = tsrnn_config_write(cfg, stdout);
        goto done;
    }
    /* Under mpirun or srun this rank chooses its comm backend and GPU itself (world.h). */
    if (status == TSRNN_OK && world.mpi) {
        struct tsrnn_rank_devices devices = {
            .comm = cfg->comm,
            .comm_origin = tsrnn_config_origin(cfg, "trainer", "comm"),
            .gpu = tsrnn_train_compute_kind(cfg) == TSRNN_COMPUTE_CUDA,
        };
        tsrnn_world_rank_devices_from_env(&devices, &world);
        status = tsrnn_world_choose_mpi_comm(&world, &devices);
    }
    /* The device first: the comm orders its device collectives on it. */
    if (status == TSRNN_OK)
        status = tsrnn_train_compute_create(&compute, cfg, world.device_index);
    /* Join the world before reading the data: a missing peer shows in timeout_s. A world of
     * one joins too where it was told nccl (comm = nccl: the NCCL path on one GPU). */
    install_stop_handlers();
    if (status == TSRNN_OK && strcmp(world.comm_backend, "local") != 0)
        status = join_world(&comm, &world, cfg, compute);
    /* Under mpirun or srun every rank's output meets on one terminal: rank 0 speaks for all,
     * as Lightning's rank_zero_only (the others print their banner line and errors only). */
    bool rank_quiet = world.mpi && world.rank > 0;
    if (status == TSRNN_OK)
        status = tsrnn_dataset_load(&ds, cfg);
    /* The summary reads the sampler's counts only; the trainer sets up the real shuffle. */
    struct tsrnn_shuffle summary_shuffle = { 0 };
    if (status == TSRNN_OK)
        status = tsrnn_sampler_init(&sampler, ds.train.count, (size_t)cfg->batch_size,
                                    cfg->shuffle ? &summary_shuffle : NULL, (size_t)world.rank,
                                    (size_t)world.world_size);
    if (status == TSRNN_OK && !train_options.quiet && rank_quiet)
        printf("Initializing distributed: GLOBAL_RANK: %d, MEMBER: %d/%d (local rank %d, %s; "
               "started by %s)\n",
               world.rank, world.rank + 1, world.world_size, world.local_rank,
               tsrnn_comm_backend_name(comm), world.launcher);
    if (rank_quiet)
        train_options.quiet = true;
    if (status == TSRNN_OK && !train_options.quiet) {
        printf(PROGRAM " %s: %s, model %s\n", tsrnn_version(), ini_path,
               tsrnn_model_kind_name(cfg->model));
        if (world.world_size > 1)
            printf("Initializing distributed: GLOBAL_RANK: %d, MEMBER: %d/%d (local rank %d, "
                   "%s; started by %s)\n",
                   world.rank, world.rank + 1, world.world_size, world.local_rank,
                   tsrnn_comm_backend_name(comm), world.launcher);
        char kernels[1024];
        tsrnn_compute_describe(compute, kernels, sizeof(kernels));
        printf("Compute: %s\n", kernels);
        /* Models below 128 x 128 recurrent weights (the Darts guide's) keep their products in
         * tsrnn's loops and never reach BLAS: no warning for them. */
        size_t weights =
            tsrnn_model_gate_count(cfg->model) * (size_t)cfg->hidden_dim * (size_t)cfg->hidden_dim;
        const char *blas_warning = tsrnn_compute_host_memory(compute) && weights >= 128 * 128
                                       ? tsrnn_compute_cpu_blas_warning()
                                       : NULL;
        if (blas_warning != NULL)
            fprintf(stderr, PROGRAM ": warning: %s\n", blas_warning);
        tsrnn_report_dataset(stdout, cfg, &ds, &sampler);
        fflush(stdout);
    }
    if (status == TSRNN_OK) {
        struct tsrnn_train_result result;
        train_options.comm = comm;
        train_options.compute = compute;
        train_options.world = &world;
        train_options.print_devices = world.report_fd < 0 && world.world_size == 1;
        status = tsrnn_train(&result, cfg, &ds, &train_options);
        fflush(stdout);
        if (status == TSRNN_OK)
            report_result(&world, &result);
    }

done:;
    /* Every rank stops at an interrupt; rank 0 says so for all (the others' note goes to
     * their logs, not to the launcher's error stream). */
    int code = tsrnn_status_exit_code(status);
    if (status == TSRNN_ERR_INTERRUPTED && world.rank > 0)
        printf(PROGRAM ": stopped: %s\n", tsrnn_last_error());
    else if (status != TSRNN_OK)
        fail(status);
    /* After a failure no rank waits for this one: tear down, do not say goodbye. Under MPI
     * that ends the whole job (MPI_Abort does not return), hence the message first. At an
     * interrupt every rank stops after the same step: they close as after a success. */
    if (status != TSRNN_OK && status != TSRNN_ERR_INTERRUPTED && comm != NULL)
        tsrnn_comm_abort_job(comm, code);
    tsrnn_comm_close(comm);
    tsrnn_compute_destroy(compute);
    tsrnn_sampler_finish(&sampler);
    tsrnn_dataset_finish(&ds);
    free(cfg);
    free(overrides);
    return code;
}
