/* The compute backend a run's config asks for ([trainer] accelerator, devices, num_threads):
 * include/tsrnn/train.h's tsrnn_train_compute_kind(), _check() and _compute_create(). */
#include <stdlib.h>
#include <string.h>

#include "tsrnn/compute.h"
#include "tsrnn/train.h"
#include "tsrnn/world.h"

/* Lightning's "auto": CUDA where this build and machine can run it, else the CPU. */
enum tsrnn_compute_kind tsrnn_train_compute_kind(const struct tsrnn_config *cfg)
{
    switch (cfg->accelerator) {
    case TSRNN_ACCELERATOR_GPU:
        return TSRNN_COMPUTE_CUDA;
    case TSRNN_ACCELERATOR_XLA:
    case TSRNN_ACCELERATOR_TPU:
        return TSRNN_COMPUTE_PJRT;
    case TSRNN_ACCELERATOR_AUTO:
        return tsrnn_compute_available(TSRNN_COMPUTE_CUDA, NULL, 0) ? TSRNN_COMPUTE_CUDA
                                                                    : TSRNN_COMPUTE_CPU;
    case TSRNN_ACCELERATOR_CPU:
        break;
    }
    return TSRNN_COMPUTE_CPU;
}

enum tsrnn_status tsrnn_train_check(const struct tsrnn_config *cfg)
{
    /* Lightning raises when asked for a GPU it cannot use; so does tsrnn. */
    char why[256];
    enum tsrnn_compute_kind kind = tsrnn_train_compute_kind(cfg);
    if (!tsrnn_compute_available(kind, why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] accelerator = %s, but %s; accepted here: cpu or auto",
                           tsrnn_config_origin(cfg, "trainer", "accelerator"),
                           cfg->accelerator == TSRNN_ACCELERATOR_GPU   ? "gpu"
                           : cfg->accelerator == TSRNN_ACCELERATOR_XLA ? "xla"
                           : cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu"
                                                                       : "auto",
                           why);
    return TSRNN_OK;
}

/* The pjrt backend's replicas in this one process from [trainer] devices: a count N is N;
 * -1 is every device of the plugin; auto is every TPU core for tpu and 1 for xla (whose
 * devices may be virtual CPU devices, no faster together). Device lists are refused: a
 * replica set is the plugin's first N devices. */
static enum tsrnn_status pjrt_replicas(const struct tsrnn_config *cfg, int *replicas)
{
    const char *d = cfg->devices;
    if (strcmp(d, "auto") == 0)
        *replicas = cfg->accelerator == TSRNN_ACCELERATOR_TPU ? -1 : 1;
    else if (strcmp(d, "-1") == 0)
        *replicas = -1;
    else if (strchr(d, ',') == NULL && atoi(d) >= 1)
        *replicas = atoi(d);
    else
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] devices = %s: accelerator = %s takes a count of devices "
                           "(replicas of the training step in this process), -1 or auto, not a "
                           "list",
                           tsrnn_config_origin(cfg, "trainer", "devices"), d,
                           cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu" : "xla");
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_train_compute_create(struct tsrnn_compute **compute,
                                             const struct tsrnn_config *cfg, int device_index)
{
    *compute = NULL;
    TSRNN_TRY(tsrnn_train_check(cfg));
    int replicas = 1;
    if (tsrnn_train_compute_kind(cfg) == TSRNN_COMPUTE_PJRT)
        TSRNN_TRY(pjrt_replicas(cfg, &replicas));
    enum tsrnn_compute_kind kind = tsrnn_train_compute_kind(cfg);
    char why[512];
    /* Lightning's "auto" takes a GPU that is there; where this one cannot be used (cuBLAS or
     * cuDNN do not load, an older GPU) the CPU trains, and the user is told why, once. */
    if (cfg->accelerator == TSRNN_ACCELERATOR_AUTO && kind == TSRNN_COMPUTE_CPU &&
        tsrnn_compute_compiled(TSRNN_COMPUTE_CUDA) && tsrnn_world_visible_gpus(NULL, 0) > 0 &&
        !tsrnn_compute_available(TSRNN_COMPUTE_CUDA, why, sizeof(why)))
        tsrnn_warn("a GPU is visible, but this process trains on the CPU: %s; [trainer] "
                   "accelerator = cpu silences this",
                   why);
    struct tsrnn_compute_options options = {
        .kind = kind,
        .thread_count = cfg->num_threads,
        .device_index = device_index,
        .plugin_path = cfg->pjrt_plugin,
        .platform = cfg->accelerator == TSRNN_ACCELERATOR_TPU ? "tpu" : NULL,
        .replica_count = replicas,
    };
    return tsrnn_compute_create(compute, &options);
}
