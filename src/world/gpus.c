/* The GPUs the NVIDIA driver has, counted without a CUDA context (include/tsrnn/world.h):
 * the launcher forks its workers after counting, and CUDA does not survive fork
 * (reference/distributed.md A2).
 *
 * Two sources, because sandboxed GPU machines differ: NVML (libnvidia-ml.so.1, the driver's
 * management library, loaded with dlopen: no CUDA context, and nothing to link) when it
 * loads and answers, else the driver's /proc/driver/nvidia/gpus/, one folder per GPU. Some
 * machines have NVML without that folder (gVisor-style sandboxes), others the folder
 * without NVML on the library path.
 *
 * Tests only: TSRNN_TEST_NVML names the NVML library to load instead; TSRNN_TEST_NVIDIA_GPUS_DIR
 * a folder to count instead of /proc/driver/nvidia/gpus, and alone (without TSRNN_TEST_NVML)
 * it is the whole simulated machine: NVML is not asked. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "tsrnn/dynlib.h"
#include "tsrnn/world.h"

/* NVML's C ABI for the three calls made here (nvml.h: nvmlReturn_t is an int enum, 0 =
 * NVML_SUCCESS; the _v2 names are what the library exports for nvmlInit and
 * nvmlDeviceGetCount). */
static struct {
    int (*nvmlInit_v2)(void);
    int (*nvmlDeviceGetCount_v2)(unsigned int *count);
    int (*nvmlShutdown)(void);
} nvml;

/* The count NVML gives, or -1 when it cannot be loaded or does not answer. */
static int nvml_count(const char *library)
{
    const struct tsrnn_dynlib_symbol symbols[] = {
        TSRNN_DYNLIB_SYMBOL(nvml, nvmlInit_v2),
        TSRNN_DYNLIB_SYMBOL(nvml, nvmlDeviceGetCount_v2),
        TSRNN_DYNLIB_SYMBOL(nvml, nvmlShutdown),
    };
    void *lib = tsrnn_dynlib_open(library, NULL, symbols, sizeof(symbols) / sizeof(symbols[0]),
                                  NULL, NULL, NULL, 0);
    if (lib == NULL)
        return -1;
    unsigned int count = 0;
    int answer = -1;
    if (nvml.nvmlInit_v2() == 0) {
        if (nvml.nvmlDeviceGetCount_v2(&count) == 0 && count <= 4096)
            answer = (int)count;
        (void)nvml.nvmlShutdown();
    }
    dlclose(lib);
    return answer;
}

static int proc_count(const char *folder)
{
    DIR *dir = opendir(folder);
    int count = 0;
    struct dirent *e;
    if (dir == NULL)
        return -1;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.')
            count++;
    closedir(dir);
    return count;
}

int tsrnn_world_driver_gpus(const char **source)
{
    const char *test_nvml = getenv("TSRNN_TEST_NVML");
    const char *test_dir = getenv("TSRNN_TEST_NVIDIA_GPUS_DIR");
    const char *folder = test_dir != NULL ? test_dir : "/proc/driver/nvidia/gpus";
    int count = -1;
    if (test_dir == NULL || test_nvml != NULL)
        count = nvml_count(test_nvml != NULL ? test_nvml : "libnvidia-ml.so.1");
    if (count >= 0) {
        if (source != NULL)
            *source = "NVML";
        return count;
    }
    count = proc_count(folder);
    if (source != NULL)
        *source =
            count >= 0 ? "/proc/driver/nvidia/gpus" : "none (no NVML, no /proc/driver/nvidia/gpus)";
    return count > 0 ? count : 0;
}
