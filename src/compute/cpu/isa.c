/* Which vector instructions tsrnn's own kernels use (cpu.h): CPUID once, an environment cap,
 * a setter for the tests. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum tsrnn_cpu_isa tsrnn_cpu_isa = TSRNN_CPU_ISA_BASELINE;

enum tsrnn_cpu_isa tsrnn_cpu_isa_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return TSRNN_CPU_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return TSRNN_CPU_ISA_AVX2;
#endif
    return TSRNN_CPU_ISA_BASELINE;
}

enum tsrnn_cpu_isa tsrnn_cpu_isa_detect(void)
{
    enum tsrnn_cpu_isa isa = tsrnn_cpu_isa_supported();
    const char *cap = getenv("TSRNN_CPU_ISA");
    if (cap == NULL)
        return isa;
    if (strcmp(cap, "avx2") == 0 && isa > TSRNN_CPU_ISA_AVX2)
        return TSRNN_CPU_ISA_AVX2;
    if (strcmp(cap, "baseline") == 0)
        return TSRNN_CPU_ISA_BASELINE;
    return isa;
}

enum tsrnn_cpu_isa tsrnn_cpu_set_isa(enum tsrnn_cpu_isa isa)
{
    enum tsrnn_cpu_isa supported = tsrnn_cpu_isa_supported();
    tsrnn_cpu_isa = isa > supported ? supported : isa;
    return tsrnn_cpu_isa;
}

const char *tsrnn_cpu_isa_name(enum tsrnn_cpu_isa isa)
{
    switch (isa) {
    case TSRNN_CPU_ISA_AVX512:
        return "AVX-512";
    case TSRNN_CPU_ISA_AVX2:
        return "AVX2";
    case TSRNN_CPU_ISA_BASELINE:
        break;
    }
    return "baseline";
}
