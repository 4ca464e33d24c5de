/* The nccl comm backend's library table, private to src/comm/ (and tests/test_nccl_lib.c).
 *
 * libnccl is loaded with dlopen when a GPU worker first opens an nccl communicator, not
 * linked: it is a 200+ MB library (kernels for every GPU architecture), and linked it would
 * be mapped and relocated by every tsrnn process at start, CPU runs and `tsrnn-launch
 * --help` included, as cuBLAS and cuDNN were (src/compute/cuda/cuda.h: ~0.3 s per start).
 * Loaded here, a CPU run never touches it, and a machine without NCCL still runs every
 * other backend; the nccl backend then says which library it could not find. Every NCCL
 * function the backend calls is listed below and called as NCCL(name)(...). */
#ifndef TSRNN_COMM_NCCL_H
#define TSRNN_COMM_NCCL_H

#include <stdbool.h>
#include <stddef.h>

#include <nccl.h>

/* clang-format off */
#define TSRNN_NCCL_FUNCTIONS(X)  \
    X(ncclGetVersion)            \
    X(ncclGetUniqueId)           \
    X(ncclCommInitRankConfig)    \
    X(ncclCommGetAsyncError)     \
    X(ncclCommFinalize)          \
    X(ncclCommDestroy)           \
    X(ncclCommAbort)             \
    X(ncclAllReduce)             \
    X(ncclBroadcast)             \
    X(ncclGetErrorString)        \
    X(ncclGetLastError)
/* clang-format on */

#define TSRNN_NCCL_LIB_POINTER(name) __typeof__(name) *name;
struct tsrnn_nccl_lib {
    TSRNN_NCCL_FUNCTIONS(TSRNN_NCCL_LIB_POINTER)
};
extern struct tsrnn_nccl_lib tsrnn_nccl_lib;
#define NCCL(name) (tsrnn_nccl_lib.name)

/* Loads libnccl.so.<NCCL_MAJOR> (once; later calls return the first answer): by soname
 * (the executable's run path, LD_LIBRARY_PATH, the system's folders), then from the folder
 * of the CUDA toolkit the build used. On false fills `why` (which library, dlerror's text,
 * or the function an older library lacks). */
bool tsrnn_nccl_lib_load(char *why, size_t why_nbytes);

#endif
