/* A libnvidia-ml.so.1 standing in for the NVIDIA driver's NVML on a machine without a GPU:
 * test_launch_plan loads it (TSRNN_TEST_NVML) to see the launcher count GPUs through NVML and
 * fall back to /proc/driver/nvidia/gpus when NVML does not answer. Its answers come from the
 * environment: TSRNN_STUB_NVML_INIT, nvmlInit_v2's return value (0 = NVML_SUCCESS; 9 =
 * NVML_ERROR_DRIVER_NOT_LOADED, ...), and TSRNN_STUB_NVML_COUNT, the device count. */
#include <stdlib.h>

int nvmlInit_v2(void);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlShutdown(void);

int nvmlInit_v2(void)
{
    const char *init = getenv("TSRNN_STUB_NVML_INIT");
    return init != NULL ? atoi(init) : 0;
}

int nvmlDeviceGetCount_v2(unsigned int *count)
{
    const char *env = getenv("TSRNN_STUB_NVML_COUNT");
    *count = env != NULL ? (unsigned int)atoi(env) : 0;
    return 0;
}

int nvmlShutdown(void)
{
    return 0;
}
