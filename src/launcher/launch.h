/* tsrnn-launch's engine (private to src/launcher/): resolve the devices, start one
 * tsrnn-worker per device, route their output, supervise them, restart after a failure and
 * print the result (DESIGN.md §2 "tsrnn-launch"; the worker side is include/tsrnn/world.h).
 */
#ifndef TSRNN_LAUNCH_H
#define TSRNN_LAUNCH_H

#include <stddef.h>

#include "tsrnn/core.h"

struct tsrnn_launch_options {
    const char *ini_path;
    /* The user's --set arguments, in command-line order: applied to the launcher's own copy
     * of the config and passed to every worker unchanged. */
    const char *const *overrides;
    size_t override_count;
    /* --accelerator, --devices, --max-restarts as typed; NULL = the config's value. They win
     * over [trainer] keys and --set. */
    const char *accelerator;
    const char *devices;
    const char *max_restarts;
    const char *worker; /* NULL = tsrnn-worker beside this executable, else from PATH */
    /* A signalfd for SIGCHLD, SIGINT, SIGTERM and SIGHUP, all blocked in every thread before
     * this is called (main.c): children are forked with them blocked and unblock them. */
    int signal_fd;
};

/* Runs the whole job. Returns TSRNN_OK once the workers ran, whatever their result, with the
 * launcher's exit code in *exit_code: 0 all finished, 1/2/3 the failure's code (README "Exit
 * codes"), 130 interrupted. Returns an error (and starts nothing, or stops what it started)
 * for the launcher's own failures: TSRNN_ERR_USAGE for the config or the device list,
 * TSRNN_ERR_IO when the rendezvous folder or a worker cannot be made or run. */
enum tsrnn_status tsrnn_launch_run(const struct tsrnn_launch_options *opt, int *exit_code);

#endif
