/* Optional run-time libraries, loaded with dlopen when first needed (cuBLAS, cuDNN, NCCL,
 * NVML, OpenBLAS, cairo): one loader, one message shape.
 *
 * A library is opened by its soname (the dynamic linker's search: LD_LIBRARY_PATH, the
 * program's run path, the system's folders), then in each folder of `fallback_dirs`, and
 * every symbol of its table is resolved. The handle stays open for the life of the process.
 * On failure `why` gets one sentence:
 *     "cannot load libcudnn.so.9 (<dlerror>); <hint>"
 *     "libcudnn.so.9 (<path>) has no cudnnRNNForward: <hint for an older library>"
 * which the caller completes with what the library was for and what to do. */
#ifndef TSRNN_DYNLIB_H
#define TSRNN_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* One function to resolve: its exported name and where its address goes. */
struct tsrnn_dynlib_symbol {
    const char *name;
    void **address;
};

/* Builds a table entry from a struct of function pointers named as the functions:
 *     TSRNN_DYNLIB_SYMBOL(table, cudnnCreate) -> { "cudnnCreate", &table.cudnnCreate }
 * A header that maps a name to a versioned one (cublasCreate -> cublasCreate_v2) gives
 * the mapped name, which is the one the library exports. */
#define TSRNN_DYNLIB_STRING(x) #x
#define TSRNN_DYNLIB_NAME(x)   TSRNN_DYNLIB_STRING(x)
#define TSRNN_DYNLIB_SYMBOL(table, f)                                                              \
    {                                                                                              \
        TSRNN_DYNLIB_NAME(f), (void **)&(table).f                                                  \
    }

/* Opens `soname` and resolves `symbols` (see above). fallback_dirs: a ':'-separated list of
 * folders to try after the soname search, or NULL. missing_hint: what to install, appended to
 * the "cannot load" sentence; older_hint: appended to the "has no" sentence. Returns the
 * handle, or NULL with `why` filled (when not NULL). Symbols already resolved stay set on
 * failure: the caller must not use them then. */
void *tsrnn_dynlib_open(const char *soname, const char *fallback_dirs,
                        const struct tsrnn_dynlib_symbol *symbols, size_t symbol_count,
                        const char *missing_hint, const char *older_hint, char *why,
                        size_t why_nbytes);

/* The file a handle was loaded from (the dynamic linker's path for it), into `path`; "" when
 * it cannot say. For banners and checks that name the library a process uses. */
void tsrnn_dynlib_path(void *handle, char *path, size_t path_nbytes);

#endif
