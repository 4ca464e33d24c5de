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

/* The command line. */
struct args {
    const char **overrides; /* (argc) the --set values and --resume's, in their order */
    size_t override_count;
    /* "training.resume=..." for --resume; a later --resume rewrites it, and wins. */
    char resume_override[PATH_MAX + 32];
    bool print_config;
    bool quiet;
    enum tsrnn_progress_mode progress;
    const char *ini_path;
};

/* "<program>: error: <message>" through tsrnn_error(), which shows the argument escaped as
 * every message does; the usage exit code. */
static int usage_error(const char *fmt, const char *arg)
{
    tsrnn_error(TSRNN_ERR_USAGE, fmt, arg);
    fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
    return TSRNN_EXIT_USAGE;
}

/* Fills `a` from the command line: -1 to go on, else the exit code (--help, --version, a
 * usage error: printed). a->overrides is freed unless the worker goes on. */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option options[] = {
        { "set", required_argument, NULL, 's' },      { "resume", required_argument, NULL, 'r' },
        { "print-config", no_argument, NULL, 'p' },   { "quiet", no_argument, NULL, 'q' },
        { "progress", required_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },        { NULL, 0, NULL, 0 },
    };
    int opt, code = -1;
    *a = (struct args){ .overrides = calloc((size_t)argc, sizeof(*a->overrides)) };
    if (a->overrides == NULL) {
        fprintf(stderr, PROGRAM ": error: out of memory\n");
        return TSRNN_EXIT_RUNTIME;
    }
    while (code < 0 && (opt = getopt_long(argc, argv, "s:r:pqhV", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            a->overrides[a->override_count++] = optarg;
            break;
        case 'r':
            if ((size_t)snprintf(a->resume_override, sizeof(a->resume_override),
                                 "training.resume=%s", optarg) >= sizeof(a->resume_override))
                code = usage_error("--resume %s: path too long", optarg);
            else
                a->overrides[a->override_count++] = a->resume_override;
            break;
        case 'p':
            a->print_config = true;
            break;
        case 'q':
            a->quiet = true;
            break;
        case 'P':
            if (!parse_progress(optarg, &a->progress))
                code = usage_error("--progress=%s: accepted: auto, bar, plain, none", optarg);
            break;
        case 'h':
            usage(stdout);
            code = TSRNN_EXIT_OK;
            break;
        case 'V':
            printf(PROGRAM " %s\n", tsrnn_version());
            code = TSRNN_EXIT_OK;
            break;
        default:
            usage(stderr);
            code = TSRNN_EXIT_USAGE;
            break;
        }
    }
    if (code < 0 && argc - optind != 1) {
        fprintf(stderr, PROGRAM ": error: expected one config file, got %d\n", argc - optind);
        usage(stderr);
        code = TSRNN_EXIT_USAGE;
    }
    if (code >= 0)
        free(a->overrides);
    else
        a->ini_path = argv[optind];
    return code;
}

/* What the worker sets up for the trainer. */
struct worker {
    struct tsrnn_config *cfg;
    struct tsrnn_world world; /* which rank of which world, from the environment */
    struct tsrnn_compute *compute;
    struct tsrnn_comm *comm; /* NULL: alone */
    struct tsrnn_dataset ds;
};

/* Under mpirun or srun this rank chooses its comm backend and GPU itself (world.h). */
static enum tsrnn_status choose_mpi_devices(struct worker *w)
{
    const struct tsrnn_config *cfg = w->cfg;
    struct tsrnn_rank_devices devices = {
        .comm = cfg->comm,
        .comm_origin = tsrnn_config_origin(cfg, "trainer", "comm"),
        .gpu = tsrnn_train_compute_kind(cfg) == TSRNN_COMPUTE_CUDA,
    };
    tsrnn_world_rank_devices_from_env(&devices, &w->world);
    return tsrnn_world_choose_mpi_comm(&w->world, &devices);
}

static enum tsrnn_status join_world(struct worker *w)
{
    struct tsrnn_comm_options opt = {
        .rank = w->world.rank,
        .world_size = w->world.world_size,
        .rendezvous = w->world.rendezvous[0] != '\0' ? w->world.rendezvous : NULL, /* MPI: none */
        .timeout_s = w->cfg->timeout_s,
        .backend = w->world.comm_backend, /* the launcher's choice, never derived here */
        .compute = w->compute,
        /* Under srun a SIGTERM may also mean a peer died (comm.h): mpi then ends the job. */
        .stop_requested = &stop_requested,
    };
    return tsrnn_comm_open(&w->comm, &opt);
}

/* Everything before the training: which rank of which world this is, the config (with
 * --print-config: printed, and nothing more set up), the comm backend and GPU of an MPI rank,
 * the device, the world joined, the data read. */
static enum tsrnn_status set_up(struct worker *w, const struct args *a)
{
    w->cfg = malloc(sizeof(*w->cfg));
    if (w->cfg == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    TSRNN_TRY(tsrnn_world_from_env(&w->world));
    TSRNN_TRY(tsrnn_config_load(w->cfg, a->ini_path, a->overrides, a->override_count));
    TSRNN_TRY(tsrnn_data_check_config(w->cfg));
    if (a->print_config) {
        printf("# tsrnn %s: resolved configuration of %s\n", tsrnn_version(), a->ini_path);
        return tsrnn_config_write(w->cfg, stdout);
    }
    if (w->world.mpi)
        TSRNN_TRY(choose_mpi_devices(w));
    /* The device first: the comm orders its device collectives on it. */
    TSRNN_TRY(tsrnn_train_compute_create(&w->compute, w->cfg, w->world.device_index));
    /* Join the world before reading the data: a missing peer shows in timeout_s. A world of
     * one joins too where it was told nccl (comm = nccl: the NCCL path on one GPU). */
    install_stop_handlers();
    if (strcmp(w->world.comm_backend, "local") != 0)
        TSRNN_TRY(join_world(w));
    return tsrnn_dataset_load(&w->ds, w->cfg);
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

/* Trains (src/train/: it prints the banner, the epochs and the summary); rank 0 reports the
 * result to the launcher. */
static enum tsrnn_status train(struct worker *w, const struct args *a)
{
    struct tsrnn_train_options options = {
        .out = stdout,
        .progress = a->progress,
        .quiet = a->quiet,
        .program = PROGRAM,
        .config_path = a->ini_path,
        .print_devices = w->world.report_fd < 0 && w->world.world_size == 1,
        /* Under mpirun or srun every rank's output meets on one terminal. */
        .rank_zero_only = w->world.mpi,
        .comm = w->comm,
        .compute = w->compute,
        .world = &w->world,
        .stop_requested = &stop_requested,
    };
    struct tsrnn_train_result result;
    enum tsrnn_status status = tsrnn_train(&result, w->cfg, &w->ds, &options);
    fflush(stdout);
    TSRNN_TRY(status);
    report_result(&w->world, &result);
    return TSRNN_OK;
}

/* The exit code of `status`, after its message, and everything torn down. */
static int finish(struct worker *w, enum tsrnn_status status)
{
    int code = tsrnn_status_exit_code(status);
    /* Every rank stops at an interrupt; rank 0 says so for all (the others' note goes to
     * their logs, not to the launcher's error stream). */
    if (status == TSRNN_ERR_INTERRUPTED && w->world.rank > 0)
        printf(PROGRAM ": stopped: %s\n", tsrnn_last_error());
    else if (status != TSRNN_OK)
        fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
    /* After a failure no rank waits for this one: tear down, do not say goodbye. Under MPI
     * that ends the whole job (MPI_Abort does not return), hence the message first. At an
     * interrupt every rank stops after the same step: they close as after a success. */
    if (status != TSRNN_OK && status != TSRNN_ERR_INTERRUPTED && w->comm != NULL)
        tsrnn_comm_abort_job(w->comm, code);
    tsrnn_comm_close(w->comm);
    tsrnn_compute_destroy(w->compute);
    tsrnn_dataset_finish(&w->ds);
    free(w->cfg);
    return code;
}

int main(int argc, char **argv)
{
    struct args args;
    int code = parse_args(argc, argv, &args);
    if (code >= 0)
        return code;
    struct worker w = { .world = { .world_size = 1 } };
    enum tsrnn_status status = set_up(&w, &args);
    if (status != TSRNN_OK || args.print_config)
        goto out;
    status = train(&w, &args);
out:
    code = finish(&w, status);
    free(args.overrides);
    return code;
}
