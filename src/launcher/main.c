/* tsrnn-launch: starts one tsrnn-worker per device on this machine and supervises them, as
 * Lightning's ddp_spawn and torchrun do (DESIGN.md §2). This file parses the command line and
 * sets up signals; launch.c does the rest.
 *
 * Exit codes (include/tsrnn/core.h): 0 every worker finished, 1 a worker failed at run time
 * (or the launcher could not start it), 2 usage/config error, 3 a worker was killed or a
 * peer failed, 130 interrupted.
 */
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "launch.h"
#include "tsrnn/core.h"

#define PROGRAM "tsrnn-launch"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " PROGRAM " [OPTION]... FILE.ini\n"
            "\n"
            "Trains the model FILE.ini describes data-parallel: one tsrnn-worker process per\n"
            "device on this machine, supervised (a failed worker stops the others).\n"
            "\n"
            "Options:\n"
            "      --accelerator WHICH  cpu, gpu or auto (= [trainer] accelerator)\n"
            "      --devices WHICH      -1 (every GPU / every core), a count N, or a list of\n"
            "                           indices like 0,2 (= [trainer] devices)\n"
            "      --max-restarts N     restart all workers from the last checkpoint up to N\n"
            "                           times after a failure (= [trainer] max_restarts)\n"
            "  -r, --resume WHICH       continue a run from its checkpoint: last, best or a\n"
            "                           file (= --set training.resume=WHICH)\n"
            "  -s, --set section.key=value  override one config value (repeatable; passed to\n"
            "                           every worker)\n"
            "      --worker PATH        the worker program (default: tsrnn-worker beside this\n"
            "                           program, else from PATH)\n"
            "  -h, --help               show this help and exit\n"
            "  -V, --version            show the version and exit\n"
            "\n"
            "Exit codes: 0 ok, 1 a worker failed, 2 usage or config error, 3 a worker was\n"
            "killed or lost a peer, 130 interrupted (SIGINT/SIGTERM: the workers stop at a\n"
            "step, rank 0 writes a checkpoint).\n");
}

/* A launcher started with stdin, stdout or stderr closed would hand those numbers to its
 * pipes, and the workers' dup2 onto 0-2 would then clobber them: give 0-2 /dev/null. */
static void open_standard_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
            return;
}

/* The supervision loop reads signals from a signalfd instead of handlers: they must be
 * blocked before any worker is forked, so none is lost and none interrupts a system call.
 * SIGPIPE is ignored so that a closed terminal pipe does not kill the launcher before it has
 * stopped and reaped the workers (each worker resets it before exec). */
static int setup_signals(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

int main(int argc, char **argv)
{
    enum {
        OPT_ACCELERATOR = 256,
        OPT_DEVICES,
        OPT_MAX_RESTARTS,
        OPT_WORKER
    };
    /* --resume W is --set training.resume=W, as for tsrnn-worker. */
    static char resume_override[PATH_MAX + 32];
    static const struct option options[] = {
        { "accelerator", required_argument, NULL, OPT_ACCELERATOR },
        { "devices", required_argument, NULL, OPT_DEVICES },
        { "max-restarts", required_argument, NULL, OPT_MAX_RESTARTS },
        { "set", required_argument, NULL, 's' },
        { "resume", required_argument, NULL, 'r' },
        { "worker", required_argument, NULL, OPT_WORKER },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct tsrnn_launch_options lo = { .signal_fd = -1 };
    const char **overrides = calloc((size_t)argc, sizeof(*overrides));
    int opt, exit_code = TSRNN_EXIT_OK;

    if (overrides == NULL) {
        fprintf(stderr, PROGRAM ": error: out of memory\n");
        return TSRNN_EXIT_RUNTIME;
    }
    while ((opt = getopt_long(argc, argv, "s:r:hV", options, NULL)) != -1) {
        switch (opt) {
        case OPT_ACCELERATOR:
            lo.accelerator = optarg;
            break;
        case OPT_DEVICES:
            lo.devices = optarg;
            break;
        case OPT_MAX_RESTARTS:
            lo.max_restarts = optarg;
            break;
        case 's':
            overrides[lo.override_count++] = optarg;
            break;
        case 'r':
            if ((size_t)snprintf(resume_override, sizeof(resume_override), "training.resume=%s",
                                 optarg) >= sizeof(resume_override)) {
                tsrnn_error(TSRNN_ERR_USAGE, "--resume %s: path too long", optarg);
                fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
                exit_code = TSRNN_EXIT_USAGE;
                goto out;
            }
            overrides[lo.override_count++] = resume_override;
            break;
        case OPT_WORKER:
            lo.worker = optarg;
            break;
        case 'h':
            usage(stdout);
            goto out;
        case 'V':
            printf(PROGRAM " %s\n", tsrnn_version());
            goto out;
        default:
            usage(stderr);
            exit_code = TSRNN_EXIT_USAGE;
            goto out;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, PROGRAM ": error: expected one config file, got %d\n", argc - optind);
        usage(stderr);
        exit_code = TSRNN_EXIT_USAGE;
        goto out;
    }
    lo.ini_path = argv[optind];
    lo.overrides = overrides;

    open_standard_fds();
    lo.signal_fd = setup_signals();
    if (lo.signal_fd < 0) {
        perror(PROGRAM ": error: cannot set up signal handling (signalfd)");
        exit_code = TSRNN_EXIT_RUNTIME;
        goto out;
    }
    enum tsrnn_status status = tsrnn_launch_run(&lo, &exit_code);
    if (status != TSRNN_OK) {
        fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
        exit_code = tsrnn_status_exit_code(status);
    }

out:
    if (lo.signal_fd >= 0)
        close(lo.signal_fd);
    free(overrides);
    return exit_code;
}
