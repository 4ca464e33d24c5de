/* The nccl comm backend's library table, private to src/comm/ (and tests/test_nccl_lib.c).
 *
 * libnccl is loaded with dlopen when a GPU worker first opens an nccl communicator, not
 * linked, for two reasons. A linked libnccl.so.2 that is missing on the machine stops every
 * tsrnn program from starting, CPU runs and `--help` included; loaded here, only the nccl
 * backend needs it, and it names the library it could not find. And it is a 218 MB file:
 * linked, every process start maps and relocates it (measured on this project's 2-core VM
 * with the file in the page cache: an empty program starts in 3.4 ms linked against it
 * against 1.0 ms without; more from a cold cache), which the tests that start hundreds of
 * workers pay for nothing, as they did for cuBLAS and cuDNN (src/compute/cuda/cuda.h). Every
 * NCCL function the backend calls is listed below and called as NCCL(name)(...). */
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
 * (LD_LIBRARY_PATH, the executable's run path, the system's folders), then from the folders
 * the build found it in (the toolkit's, the system's or the nvidia-nccl-cu13 wheel's). On false fills `why` (which library, dlerror's text,
 * or the function an older library lacks). */
bool tsrnn_nccl_lib_load(char *why, size_t why_nbytes);

/* After a successful load: "NCCL 2.28.9 (/path/libnccl.so.2)"; "" before. */
const char *tsrnn_nccl_lib_describe(void);

#endif
