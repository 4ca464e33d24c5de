/* The attempts of a job: after a failure, --max-restarts relaunches all workers, from the
 * last checkpoint of the run when there is one (torchrun's restarts; DESIGN.md §2). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "job.h"

static bool holds_last_checkpoint(const char *folder)
{
    static const char prefix[] = "last-epoch=", suffix[] = ".safetensors";
    DIR *dir = opendir(folder);
    struct dirent *e;
    bool found = false;
    if (dir == NULL)
        return false;
    while (!found && (e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        found = strncmp(e->d_name, prefix, sizeof(prefix) - 1) == 0 && len >= sizeof(suffix) - 1 &&
                strcmp(e->d_name + len - (sizeof(suffix) - 1), suffix) == 0;
    }
    closedir(dir);
    return found;
}

/* Chooses what the next attempt adds to the workers' command line and says so. */
static void plan_restart(struct launch *l, int max_restarts)
{
    char folder[PATH_MAX + 32];
    const char *how = "as before", *why = ": no checkpoint of this run yet";

    l->restart_argc = 0;
    if (l->run_dir[0] == '\0') {
        fprintf(stderr,
                PROGRAM ": restarting all %d workers from the start (restart %d of %d): rank 0 "
                        "never reported its run folder\n",
                l->count, l->attempt + 1, max_restarts);
        return;
    }
    snprintf(folder, sizeof(folder), "%s/checkpoints", l->run_dir);
    if (holds_last_checkpoint(folder)) {
        l->restart_args[l->restart_argc++] = "--set";
        l->restart_args[l->restart_argc++] = "output.force_reset=false";
        l->restart_args[l->restart_argc++] = "--resume";
        l->restart_args[l->restart_argc++] = "last";
        how = "from the last checkpoint";
        why = "";
    } else if (l->cfg->resume[0] == '\0') {
        /* The folder holds only the failed attempt's files. */
        l->restart_args[l->restart_argc++] = "--set";
        l->restart_args[l->restart_argc++] = "output.force_reset=true";
        how = "from the start";
        why = ": no checkpoint yet";
    }
    fprintf(stderr, PROGRAM ": restarting all %d workers %s (restart %d of %d)%s\n", l->count, how,
            l->attempt + 1, max_restarts, why);
}

enum tsrnn_status run_job(struct launch *l, int *exit_code)
{
    int max_restarts = l->cfg->max_restarts;

    l->start_s = tsrnn_clock_now_s();
    for (l->attempt = 0;; l->attempt++) {
        bool restartable;
        TSRNN_TRY(start_attempt(l));
        supervise(l);
        end_attempt(l);
        *exit_code = finish_attempt(l, &restartable);
        if (*exit_code == TSRNN_EXIT_OK) {
            print_summary(l);
            return TSRNN_OK;
        }
        read_signals(l); /* an interrupt while the last workers were reaped stops the job */
        if (!restartable && max_restarts > 0 && *exit_code == TSRNN_EXIT_USAGE)
            fprintf(stderr, PROGRAM ": not restarting: exit code 2 is a usage or config error, "
                                    "which a restart would repeat\n");
        if (!restartable || l->interrupts > 0)
            return TSRNN_OK;
        if (l->attempt >= max_restarts) {
            if (max_restarts > 0)
                fprintf(stderr, PROGRAM ": giving up: all %d restarts used\n", max_restarts);
            return TSRNN_OK;
        }
        plan_restart(l, max_restarts);
    }
}
