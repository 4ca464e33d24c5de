/* Monotonic time for progress bars, throughput and training-time reports. */
#include <time.h>

#include "tsrnn/core.h"

double tsrnn_clock_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
