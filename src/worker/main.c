/* tsrnn-worker: one training process. It reads the run's INI file, applies --set overrides,
 * finds out which rank of which world it is (include/tsrnn/world.h: alone, or started by
 * tsrnn-launch), joins the others, loads and windows the data, trains the model (src/train/)
 * and prints what happened; rank 0 reports the result to the launcher. It does all of it
 * through the C API that libtsrnn.so and the Python package use (include/tsrnn/tsrnn.h).
 *
 * Exit codes (include/tsrnn/core.h): 0 ok, 1 runtime failure, 2 usage/config/data error,
 * 3 a peer failed or timed out, 130 interrupted (SIGINT/SIGTERM: every rank stops after the
 * same step, rank 0 saves a checkpoint; under srun a SIGTERM may also say that a peer died,
 * and the ranks that find nobody answering end the job with 3: src/comm/mpi.c).
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/core.h" /* tsrnn_error(): the usage messages, escaped as every message is */
#include "tsrnn/tsrnn.h"

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

/* The run a SIGINT or SIGTERM cancels (tsrnn_run_cancel() is async-signal-safe). */
static struct tsrnn_run *volatile stopping_run;

static void request_stop(int sig)
{
    (void)sig;
    tsrnn_run_cancel(stopping_run);
}

/* SIGINT / SIGTERM stop training at the next step boundary (exit 130); a second one kills
 * at once (the default action is restored). */
static void install_stop_handlers(struct tsrnn_run *run)
{
    stopping_run = run;
    struct sigaction sa = { .sa_handler = request_stop, .sa_flags = SA_RESETHAND };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A peer's closed socket or a gone launcher's pipe is an error to report, not a death. */
    signal(SIGPIPE, SIG_IGN);
}

static bool progress_mode_known(const char *text)
{
    static const char *const modes[] = { "auto", "bar", "plain", "none" };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(text, modes[i]) == 0)
            return true;
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
    const char *progress; /* --progress's mode, as tsrnn_run_set_output() reads it */
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
    *a = (struct args){ .overrides = calloc((size_t)argc, sizeof(*a->overrides)),
                        .progress = "auto" };
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
            if (!progress_mode_known(optarg))
                code = usage_error("--progress=%s: accepted: auto, bar, plain, none", optarg);
            else
                a->progress = optarg;
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

/* --print-config: the resolved configuration, as config.ini will hold it. */
static enum tsrnn_status print_config(struct tsrnn_run *run, const char *ini_path)
{
    size_t nbytes = tsrnn_run_config_text(run, NULL, 0);
    char *text = nbytes > 0 ? malloc(nbytes + 1) : NULL;
    if (text == NULL)
        return TSRNN_ERR_NOMEM;
    tsrnn_run_config_text(run, text, nbytes + 1);
    printf("# tsrnn %s: resolved configuration of %s\n%s", tsrnn_version(), ini_path, text);
    free(text);
    return TSRNN_OK;
}

/* Everything before the training, through the C API (include/tsrnn/tsrnn.h): the config
 * (--set overrides last, checked as a whole; with --print-config printed, and nothing more
 * set up), where the report goes, then which rank of which world this is, its device and the
 * others joined (tsrnn_run_join_world: before the data is read, so that a missing peer shows
 * in timeout_s). */
static enum tsrnn_status set_up(struct tsrnn_run *run, const struct args *a)
{
    tsrnn_run_set_program(run, PROGRAM);
    TSRNN_TRY(tsrnn_run_read_ini(run, a->ini_path));
    for (size_t i = 0; i < a->override_count; i++)
        TSRNN_TRY(tsrnn_run_set_override(run, a->overrides[i]));
    TSRNN_TRY(tsrnn_run_check(run, NULL)); /* the files of [data] path */
    if (a->print_config)
        return print_config(run, a->ini_path);
    TSRNN_TRY(tsrnn_run_set_output(run, NULL, NULL, a->progress, a->quiet));
    install_stop_handlers(run);
    return tsrnn_run_join_world(run);
}

/* The exit code of `status`, after its message. */
static int finish(struct tsrnn_run *run, enum tsrnn_status status)
{
    int code = tsrnn_status_exit_code(status);
    /* The run's message; a failure of the worker's own (out of memory) has only its name. */
    const char *why =
        tsrnn_run_error(run)[0] != '\0' ? tsrnn_run_error(run) : tsrnn_status_name(status);
    /* Every rank stops at an interrupt; rank 0 says so for all (the others' note goes to
     * their logs, not to the launcher's error stream). */
    if (status == TSRNN_ERR_INTERRUPTED && tsrnn_run_rank(run) > 0)
        printf(PROGRAM ": stopped: %s\n", why);
    else if (status != TSRNN_OK)
        fprintf(stderr, PROGRAM ": error: %s\n", why);
    /* After a failure no rank waits for this one: tear down, do not say goodbye. Under MPI
     * that ends the whole job (MPI_Abort does not return), hence the message first. At an
     * interrupt every rank stops after the same step: they close as after a success. */
    if (status != TSRNN_OK && status != TSRNN_ERR_INTERRUPTED)
        tsrnn_run_abort_world(run, code);
    return code;
}

int main(int argc, char **argv)
{
    struct args args;
    int code = parse_args(argc, argv, &args);
    if (code >= 0)
        return code;
    struct tsrnn_run *run = NULL;
    enum tsrnn_status status = tsrnn_run_create(&run);
    if (status != TSRNN_OK) {
        fprintf(stderr, PROGRAM ": error: out of memory\n");
        free(args.overrides);
        return tsrnn_status_exit_code(status);
    }
    status = set_up(run, &args);
    /* Trains on the files of [data] path (src/train/ prints the banner, the epochs and the
     * summary); rank 0 reports the result to the launcher. */
    if (status == TSRNN_OK && !args.print_config)
        status = tsrnn_run_fit(run, NULL, NULL);
    fflush(stdout);
    code = finish(run, status);
    stopping_run = NULL;
    tsrnn_run_destroy(run);
    free(args.overrides);
    return code;
}
