/* The compute dispatcher (include/tsrnn/compute.h): the registered backends and the public
 * calls that reach their tables. The only place that lists backends. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "tsrnn_build.h"

static const struct tsrnn_compute_backend *const backends[] = {
    &tsrnn_compute_backend_cpu,
#if TSRNN_HAVE_CUDA_BACKEND
    &tsrnn_compute_backend_cuda,
#endif
#if TSRNN_HAVE_PJRT_BACKEND
    &tsrnn_compute_backend_pjrt,
#endif
};

static const struct tsrnn_compute_backend *find_backend(enum tsrnn_compute_kind kind)
{
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (backends[i]->kind == kind)
            return backends[i];
    return NULL;
}

const char *tsrnn_compute_kind_name(enum tsrnn_compute_kind kind)
{
    switch (kind) {
    case TSRNN_COMPUTE_CPU:
        return "cpu";
    case TSRNN_COMPUTE_CUDA:
        return "cuda";
    case TSRNN_COMPUTE_PJRT:
        return "pjrt";
    }
    return "?";
}

bool tsrnn_compute_compiled(enum tsrnn_compute_kind kind)
{
    return find_backend(kind) != NULL;
}

bool tsrnn_compute_available(enum tsrnn_compute_kind kind, char *why, size_t why_nbytes)
{
    const struct tsrnn_compute_backend *b = find_backend(kind);
    if (b == NULL) {
        if (why != NULL && why_nbytes > 0)
            snprintf(why, why_nbytes, "this tsrnn has no %s compute backend%s",
                     tsrnn_compute_kind_name(kind),
                     kind == TSRNN_COMPUTE_CUDA ? " (it was built without the CUDA toolkit: nvcc, "
                                                  "cuBLAS and cuDNN 9; this build trains on CPUs)"
                     : kind == TSRNN_COMPUTE_PJRT
                         ? " (it was built without the PJRT header: run scripts/install-deps.sh, "
                           "then reconfigure with -Dpjrt=enabled)"
                         : "");
        return false;
    }
    return b->probe == NULL || b->probe(why, why_nbytes);
}

enum tsrnn_status tsrnn_compute_create(struct tsrnn_compute **compute,
                                       const struct tsrnn_compute_options *options)
{
    char why[256] = "";
    *compute = NULL;
    if (!tsrnn_compute_available(options->kind, why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s", why);
    return find_backend(options->kind)->create(compute, options);
}

void tsrnn_compute_destroy(struct tsrnn_compute *compute)
{
    if (compute != NULL)
        compute->backend->destroy(compute);
}

enum tsrnn_compute_kind tsrnn_compute_kind(const struct tsrnn_compute *compute)
{
    return compute->backend->kind;
}

bool tsrnn_compute_host_memory(const struct tsrnn_compute *compute)
{
    return compute->backend->host_memory;
}

size_t tsrnn_compute_describe(const struct tsrnn_compute *compute, char *dst, size_t dst_nbytes)
{
    if (compute->backend->describe != NULL)
        return compute->backend->describe(compute, dst, dst_nbytes);
    return (size_t)snprintf(dst, dst_nbytes, "%s", compute->backend->name);
}

void *tsrnn_compute_stream(const struct tsrnn_compute *compute)
{
    return compute->backend->stream ? compute->backend->stream(compute) : NULL;
}

bool tsrnn_compute_device_memory(const struct tsrnn_compute *compute, char *name,
                                 size_t name_nbytes, size_t *used_nbytes, size_t *total_nbytes)
{
    return compute->backend->device_memory != NULL &&
           compute->backend->device_memory(compute, name, name_nbytes, used_nbytes, total_nbytes);
}

size_t tsrnn_compute_tpu_cores(const struct tsrnn_compute *compute)
{
    return compute->backend->tpu_cores ? compute->backend->tpu_cores(compute) : 0;
}

enum tsrnn_status tsrnn_compute_alloc(struct tsrnn_compute *compute, void **buf, size_t nbytes)
{
    return compute->backend->alloc(compute, buf, nbytes);
}

void tsrnn_compute_free(struct tsrnn_compute *compute, void *buf)
{
    if (buf != NULL)
        compute->backend->free(compute, buf);
}

enum tsrnn_status tsrnn_compute_upload(struct tsrnn_compute *compute, void *dst, const void *src,
                                       size_t nbytes)
{
    return nbytes == 0 ? TSRNN_OK : compute->backend->upload(compute, dst, src, nbytes);
}

enum tsrnn_status tsrnn_compute_download(struct tsrnn_compute *compute, void *dst, const void *src,
                                         size_t nbytes)
{
    return nbytes == 0 ? TSRNN_OK : compute->backend->download(compute, dst, src, nbytes);
}

enum tsrnn_status tsrnn_compute_zero(struct tsrnn_compute *compute, void *buf, size_t nbytes)
{
    return nbytes == 0 ? TSRNN_OK : compute->backend->zero(compute, buf, nbytes);
}

enum tsrnn_status tsrnn_compute_synchronize(struct tsrnn_compute *compute)
{
    return compute->backend->synchronize(compute);
}
