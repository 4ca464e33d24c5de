/* tsrnn-launch's engine (launch.h). A job is one or more attempts; an attempt starts one
 * worker per device, supervises them in one poll() loop, and ends once every worker is
 * reaped and its pipes are drained. job.h lists the files that do each part.
 *
 * Failure handling follows torch.multiprocessing.spawn and torchrun
 * (reference/distributed.md A1): the first worker that fails makes the launcher SIGTERM the
 * others, SIGKILL them after a grace period, report which rank failed and how, and exit
 * non-zero; --max-restarts relaunches all workers from the last checkpoint. As in
 * Lightning's ddp_spawn, rank 0 hands its result back (the report pipe of
 * include/tsrnn/world.h) and the launcher prints it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "job.h"
#include "tsrnn/data.h"

static enum tsrnn_status load_config(struct launch *l)
{
    const struct tsrnn_launch_options *o = l->opt;
    const struct {
        const char *key, *value, *origin;
    } options[] = {
        { "accelerator", o->accelerator, "--accelerator" },
        { "devices", o->devices, "--devices" },
        { "max_restarts", o->max_restarts, "--max-restarts" },
    };

    /* tsrnn_config_load()'s steps, with the launcher's own options last so that they win and
     * their errors name them. */
    TSRNN_TRY(tsrnn_config_init(l->cfg));
    TSRNN_TRY(tsrnn_config_parse_file(l->cfg, o->ini_path));
    for (size_t i = 0; i < o->override_count; i++)
        TSRNN_TRY(tsrnn_config_apply_override(l->cfg, o->overrides[i]));
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
        if (options[i].value != NULL)
            TSRNN_TRY(tsrnn_config_set(l->cfg, "trainer", options[i].key, options[i].value,
                                       options[i].origin, "."));
    snprintf(l->model_name_arg, sizeof(l->model_name_arg), "output.model_name=%s",
             l->cfg->model_name);
    TSRNN_TRY(tsrnn_config_validate(l->cfg));
    return tsrnn_data_check_config(l->cfg);
}

enum tsrnn_status tsrnn_launch_run(const struct tsrnn_launch_options *opt, int *exit_code)
{
    struct launch *l = calloc(1, sizeof(*l));
    enum tsrnn_status status = TSRNN_OK;
    size_t env_count = 0;
    char message[2048];

    *exit_code = TSRNN_EXIT_RUNTIME;
    if (l == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    l->opt = opt;
    l->self = getpid();
    /* A process a worker started and left behind becomes the launcher's child, not init's:
     * reaped here, and never a zombie under an init that does not reap. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    l->devnull = -1;
    l->rendezvous_lock = -1;
    l->userns_fd = l->netns_fd = -1;
    l->cfg = malloc(sizeof(*l->cfg));
    while (environ[env_count] != NULL)
        env_count++;
    l->envp = calloc(env_count + ENV_OWN_MAX + 1, sizeof(*l->envp));
    if (l->cfg == NULL || l->envp == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        goto out;
    }
    status = load_config(l);
    if (status != TSRNN_OK)
        goto out;
    status = find_worker(l);
    if (status != TSRNN_OK)
        goto out;
    status = resolve_devices(l);
    if (status != TSRNN_OK)
        goto out;
    l->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (l->devnull < 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot open /dev/null");
        goto out;
    }
    status = make_private_network(l);
    if (status != TSRNN_OK)
        goto out;
    status = make_rendezvous(l);
    if (status != TSRNN_OK)
        goto out;
    status = run_job(l, exit_code);

out:
    /* Cleanup may set its own message: keep the one main() prints. */
    snprintf(message, sizeof(message), "%s", tsrnn_last_error());
    end_attempt(l);
    remove_rendezvous(l);
    if (status != TSRNN_OK)
        tsrnn_error(status, "%s", message);
    if (l->devnull >= 0)
        close(l->devnull);
    close_private_network(l);
    free(l->workers);
    free(l->pollfds);
    free(l->poll_streams);
    free(l->poll_workers);
    free(l->envp);
    free(l->cfg);
    free(l);
    return status;
}
