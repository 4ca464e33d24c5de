/* The CUDA backend's table (backend.h): probing for a GPU, its context (one device, one
 * stream, a cuBLAS and a cuDNN handle), memory, the optimizer's elementwise operations and
 * error reporting. The model's operations are in layers.c, the kernels in kernels.cu.
 *
 * No driver, no GPU: cudart loads the driver (libcuda.so.1) with dlopen on its first call,
 * so a CUDA build links and starts on any machine; probe() then says why the GPU cannot be
 * used, and `accelerator = auto` trains on the CPU. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda.h"
#include "tsrnn/dynlib.h"

/* The most tensors a model has: four per layer and the head's two. */
#define CLIP_TENSORS_MAX (4 * TSRNN_MODEL_MAX_LAYERS + 2)

/* Our kernels are built for compute capability 9.0 (sm_90 code and compute_90 PTX, which
 * newer GPUs compile when loading); older GPUs cannot run them. */
#define MIN_COMPUTE_MAJOR 9

/* --- cuBLAS and cuDNN, loaded on first use (cuda.h) ---------------------------------------- */

struct tsrnn_cuda_libs tsrnn_cuda_libs;

#define STRINGIFY(x)     #x
#define SONAME(a, b)     "lib" a ".so." STRINGIFY(b)
#define CUBLAS_SONAME    SONAME("cublas", CUBLAS_VER_MAJOR)
#define CUDNN_SONAME     SONAME("cudnn", CUDNN_MAJOR)
#define TABLE_SYMBOL(fn) TSRNN_DYNLIB_SYMBOL(tsrnn_cuda_libs, fn),

static const struct tsrnn_dynlib_symbol cublas_symbols[] = { TSRNN_CUBLAS_FUNCTIONS(TABLE_SYMBOL) };
static const struct tsrnn_dynlib_symbol cudnn_symbols[] = { TSRNN_CUDNN_FUNCTIONS(TABLE_SYMBOL) };

static pthread_once_t libs_once = PTHREAD_ONCE_INIT;
static bool libs_loaded;
static char libs_why[1024];
static char libs_description[1200];

static void load_libs(void)
{
    /* By soname (LD_LIBRARY_PATH, the run path: the folders the build found them in), then
     * in those folders; handles stay open (the backend may be created again). */
    const char *hint =
        "the CUDA backend needs it (NVIDIA's pip wheels nvidia-cublas and "
        "nvidia-cudnn-cu13, or the CUDA toolkit and cuDNN 9; scripts/gpu-bundle.sh's "
        "env.sh puts them on LD_LIBRARY_PATH)";
    char why[sizeof(libs_why) - 64];
    void *cublas = tsrnn_dynlib_open(CUBLAS_SONAME, TSRNN_CUDA_LIBDIRS, cublas_symbols,
                                     sizeof(cublas_symbols) / sizeof(cublas_symbols[0]), hint,
                                     ": an older cuBLAS than the build's", why, sizeof(why));
    void *cudnn = cublas == NULL
                      ? NULL
                      : tsrnn_dynlib_open(CUDNN_SONAME, TSRNN_CUDA_LIBDIRS, cudnn_symbols,
                                          sizeof(cudnn_symbols) / sizeof(cudnn_symbols[0]), hint,
                                          ": an older cuDNN than the build's", why, sizeof(why));
    if (cudnn == NULL) {
        snprintf(libs_why, sizeof(libs_why), "%s", why);
        return;
    }
    char cublas_path[512], cudnn_path[512];
    int major = 0, minor = 0, patch = 0;
    tsrnn_dynlib_path(cublas, cublas_path, sizeof(cublas_path));
    tsrnn_dynlib_path(cudnn, cudnn_path, sizeof(cudnn_path));
    (void)DL(cublasGetProperty)(MAJOR_VERSION, &major);
    (void)DL(cublasGetProperty)(MINOR_VERSION, &minor);
    (void)DL(cublasGetProperty)(PATCH_LEVEL, &patch);
    size_t cudnn_version = DL(cudnnGetVersion)(); /* major * 10000 + minor * 100 + patch */
    snprintf(libs_description, sizeof(libs_description),
             "cuBLAS %d.%d.%d (%s), cuDNN %zu.%zu.%zu (%s)", major, minor, patch, cublas_path,
             cudnn_version / 10000, cudnn_version / 100 % 100, cudnn_version % 100, cudnn_path);
    libs_loaded = true;
}

bool tsrnn_cuda_libs_load(char *why, size_t why_nbytes)
{
    pthread_once(&libs_once, load_libs);
    if (!libs_loaded && why != NULL && why_nbytes > 0)
        snprintf(why, why_nbytes, "%s", libs_why);
    return libs_loaded;
}

const char *tsrnn_cuda_libs_describe(void)
{
    return libs_loaded ? libs_description : "";
}

/* --- errors ----------------------------------------------------------------------------------- */

static void describe(const struct tsrnn_cuda *cuda, char *buf, size_t nbytes)
{
    if (cuda == NULL)
        snprintf(buf, nbytes, "the GPU");
    else
        snprintf(buf, nbytes, "GPU %d (%s)", cuda->device, cuda->device_name);
}

enum tsrnn_status tsrnn_cuda_check(cudaError_t e, const struct tsrnn_cuda *cuda, const char *what)
{
    if (e == cudaSuccess)
        return TSRNN_OK;
    char dev[300];
    describe(cuda, dev, sizeof(dev));
    return tsrnn_error(e == cudaErrorMemoryAllocation ? TSRNN_ERR_NOMEM : TSRNN_ERR_IO,
                       "CUDA failed on %s while %s: %s (%s)", dev, what, cudaGetErrorString(e),
                       cudaGetErrorName(e));
}

enum tsrnn_status tsrnn_cublas_check(cublasStatus_t s, const struct tsrnn_cuda *cuda,
                                     const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return TSRNN_OK;
    char dev[300];
    describe(cuda, dev, sizeof(dev));
    return tsrnn_error(s == CUBLAS_STATUS_ALLOC_FAILED ? TSRNN_ERR_NOMEM : TSRNN_ERR_IO,
                       "cuBLAS failed on %s while %s: %s", dev, what, DL(cublasGetStatusString)(s));
}

enum tsrnn_status tsrnn_cudnn_check(cudnnStatus_t s, const struct tsrnn_cuda *cuda,
                                    const char *what)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return TSRNN_OK;
    char dev[300], detail[512] = "";
    describe(cuda, dev, sizeof(dev));
    DL(cudnnGetLastErrorString)(detail, sizeof(detail));
    return tsrnn_error(s == CUDNN_STATUS_ALLOC_FAILED ? TSRNN_ERR_NOMEM : TSRNN_ERR_IO,
                       "cuDNN failed on %s while %s: %s%s%s", dev, what, DL(cudnnGetErrorString)(s),
                       detail[0] ? ": " : "", detail);
}

enum tsrnn_status tsrnn_cuda_malloc(struct tsrnn_cuda *cuda, void **buf, size_t nbytes,
                                    const char *for_what)
{
    *buf = NULL;
    cudaError_t e = cudaMalloc(buf, nbytes ? nbytes : 1);
    if (e == cudaSuccess)
        return TSRNN_OK;
    *buf = NULL;
    (void)cudaGetLastError(); /* an allocation failure is not sticky: clear it */
    size_t free_nbytes = 0, total_nbytes = 0;
    (void)cudaMemGetInfo(&free_nbytes, &total_nbytes);
    char dev[300];
    describe(cuda, dev, sizeof(dev));
    return tsrnn_error(e == cudaErrorMemoryAllocation ? TSRNN_ERR_NOMEM : TSRNN_ERR_IO,
                       "%s: cannot allocate %.3g MB for %s (%.3g MB free of %.3g MB): %s", dev,
                       (double)nbytes * 1e-6, for_what, (double)free_nbytes * 1e-6,
                       (double)total_nbytes * 1e-6, cudaGetErrorString(e));
}

static bool cuda_probe(char *why, size_t why_nbytes)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    struct stat st;
    if (e == cudaSuccess && count > 0 && !tsrnn_cuda_libs_load(why, why_nbytes))
        return false;
    if (e != cudaSuccess || count == 0) {
        if (why != NULL && why_nbytes > 0) {
            if (stat("/proc/driver/nvidia", &st) != 0)
                snprintf(why, why_nbytes,
                         "no GPU is usable here: no NVIDIA driver is loaded "
                         "(/proc/driver/nvidia is missing; CUDA says: %s)",
                         e != cudaSuccess ? cudaGetErrorString(e) : "no device");
            else
                snprintf(why, why_nbytes,
                         "no GPU is usable here (CUDA says: %s; CUDA_VISIBLE_DEVICES=%s)",
                         e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA-capable device",
                         getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
                                                        : "(unset)");
        }
        (void)cudaGetLastError();
        return false;
    }
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess &&
        major < MIN_COMPUTE_MAJOR) {
        if (why != NULL && why_nbytes > 0)
            snprintf(why, why_nbytes,
                     "GPU 0 has compute capability %d.%d, and this tsrnn's CUDA kernels are "
                     "built for %d.0 (Hopper) and newer",
                     major, minor, MIN_COMPUTE_MAJOR);
        return false;
    }
    return true;
}

static void cuda_destroy(struct tsrnn_compute *ctx)
{
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    if (cuda == NULL)
        return;
    if (cuda->stream != NULL)
        (void)cudaStreamSynchronize(cuda->stream);
    if (cuda->flag != NULL)
        (void)cudaFree(cuda->flag);
    if (cuda->flag_host != NULL)
        (void)cudaFreeHost(cuda->flag_host);
    if (cuda->cublas_workspace != NULL)
        (void)cudaFree(cuda->cublas_workspace);
    if (cuda->clip_scratch != NULL)
        (void)cudaFree(cuda->clip_scratch);
    if (cuda->clip_layout != NULL)
        (void)cudaFree(cuda->clip_layout);
    if (cuda->cudnn != NULL)
        (void)DL(cudnnDestroy)(cuda->cudnn);
    if (cuda->cublas != NULL)
        (void)DL(cublasDestroy)(cuda->cublas);
    if (cuda->stream != NULL)
        (void)cudaStreamDestroy(cuda->stream);
    free(cuda);
}

/* Selects the device and starts what the backend keeps: its stream, cuBLAS and cuDNN on that
 * stream, cuBLAS's workspace, the gradient check's flag and clipping's buffers. What it makes
 * hangs off cuda, for cuda_destroy, also when it fails halfway. */
static enum tsrnn_status cuda_start(struct tsrnn_cuda *cuda)
{
    struct cudaDeviceProp prop;
    TSRNN_TRY(tsrnn_cuda_check(cudaSetDevice(cuda->device), cuda,
                               "selecting the device (cudaSetDevice)"));
    TSRNN_TRY(tsrnn_cuda_check(cudaGetDeviceProperties(&prop, cuda->device), cuda,
                               "reading the device's properties"));
    snprintf(cuda->device_name, sizeof(cuda->device_name), "%s", prop.name);
    TSRNN_TRY(tsrnn_cuda_check(cudaStreamCreateWithFlags(&cuda->stream, cudaStreamNonBlocking),
                               cuda, "creating a stream"));
    TSRNN_TRY(tsrnn_cublas_check(DL(cublasCreate)(&cuda->cublas), cuda, "starting cuBLAS"));
    TSRNN_TRY(tsrnn_cublas_check(DL(cublasSetStream)(cuda->cublas, cuda->stream), cuda,
                                 "giving cuBLAS the stream"));
    /* Full float32 products: no TF32 tensor-core conversion (cuBLAS uses it only when asked
     * with CUBLAS_TF32_TENSOR_OP_MATH). */
    TSRNN_TRY(tsrnn_cublas_check(DL(cublasSetMathMode)(cuda->cublas, CUBLAS_DEFAULT_MATH), cuda,
                                 "setting cuBLAS's math mode"));
    /* cuBLAS's workspace, given once: a product in a captured step then allocates nothing
     * (32 MiB: what NVIDIA's cuBLAS notes ask for on Hopper). */
    cuda->cublas_workspace_nbytes = 32u << 20;
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, &cuda->cublas_workspace, cuda->cublas_workspace_nbytes,
                                "cuBLAS's workspace"));
    TSRNN_TRY(tsrnn_cublas_check(
        DL(cublasSetWorkspace)(cuda->cublas, cuda->cublas_workspace, cuda->cublas_workspace_nbytes),
        cuda, "giving cuBLAS its workspace"));
    TSRNN_TRY(tsrnn_cudnn_check(DL(cudnnCreate)(&cuda->cudnn), cuda, "starting cuDNN"));
    TSRNN_TRY(tsrnn_cudnn_check(DL(cudnnSetStream)(cuda->cudnn, cuda->stream), cuda,
                                "giving cuDNN the stream"));
    TSRNN_TRY(
        tsrnn_cuda_malloc(cuda, (void **)&cuda->flag, sizeof(int), "the gradient check's flag"));
    TSRNN_TRY(tsrnn_cuda_check(cudaMallocHost((void **)&cuda->flag_host, sizeof(int)), cuda,
                               "allocating pinned host memory"));
    TSRNN_TRY(tsrnn_cuda_malloc(cuda, (void **)&cuda->clip_scratch,
                                (CLIP_TENSORS_MAX + 1) * sizeof(float), "clipping's norms"));
    return tsrnn_cuda_malloc(cuda, (void **)&cuda->clip_layout,
                             2 * CLIP_TENSORS_MAX * sizeof(size_t), "clipping's layout");
}

static enum tsrnn_status cuda_create(struct tsrnn_compute **ctx,
                                     const struct tsrnn_compute_options *options)
{
    char why[512];
    *ctx = NULL;
    if (!tsrnn_cuda_libs_load(why, sizeof(why)))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s", why);
    struct tsrnn_cuda *cuda = calloc(1, sizeof(*cuda));
    if (cuda == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the CUDA backend");
    cuda->base.backend = &tsrnn_compute_backend_cuda;
    cuda->device = options->device_index;
    enum tsrnn_status status = cuda_start(cuda);
    if (status != TSRNN_OK)
        cuda_destroy(&cuda->base);
    else
        *ctx = &cuda->base;
    return status;
}

static bool cuda_device_memory(const struct tsrnn_compute *ctx, char *name, size_t name_nbytes,
                               size_t *used_nbytes, size_t *total_nbytes)
{
    const struct tsrnn_cuda *cuda = (const struct tsrnn_cuda *)ctx;
    size_t free_nbytes = 0, total = 0;
    if (cudaSetDevice(cuda->device) != cudaSuccess ||
        cudaMemGetInfo(&free_nbytes, &total) != cudaSuccess) {
        (void)cudaGetLastError(); /* a summary line is not worth a sticky error */
        return false;
    }
    snprintf(name, name_nbytes, "%s", cuda->device_name);
    *used_nbytes = total - free_nbytes;
    *total_nbytes = total;
    return true;
}

static size_t cuda_describe(const struct tsrnn_compute *ctx, char *dst, size_t dst_nbytes)
{
    const struct tsrnn_cuda *cuda = (const struct tsrnn_cuda *)ctx;
    const char *graphs = getenv("TSRNN_CUDA_GRAPHS");
    bool on = graphs == NULL || strcmp(graphs, "0") != 0;
    return (size_t)snprintf(dst, dst_nbytes, "GPU %d (%s), %s; training step: %s", cuda->device,
                            cuda->device_name, tsrnn_cuda_libs_describe(),
                            on ? "one CUDA graph per batch shape (TSRNN_CUDA_GRAPHS=0: none)"
                               : "no CUDA graphs (TSRNN_CUDA_GRAPHS=0)");
}

static void *cuda_stream(const struct tsrnn_compute *ctx)
{
    return ((const struct tsrnn_cuda *)ctx)->stream;
}

static enum tsrnn_status cuda_alloc(struct tsrnn_compute *ctx, void **buf, size_t nbytes)
{
    return tsrnn_cuda_malloc((struct tsrnn_cuda *)ctx, buf, nbytes, "the model's buffers");
}

static void cuda_free(struct tsrnn_compute *ctx, void *buf)
{
    (void)ctx;
    (void)cudaFree(buf); /* cudaFree waits for the device: never inside a step */
}

static enum tsrnn_status cuda_copy(struct tsrnn_cuda *cuda, void *dst, const void *src,
                                   size_t nbytes, enum cudaMemcpyKind kind, const char *what)
{
    TSRNN_TRY(tsrnn_cuda_check(cudaMemcpyAsync(dst, src, nbytes, kind, cuda->stream), cuda, what));
    return tsrnn_cuda_check(cudaStreamSynchronize(cuda->stream), cuda, what);
}

static enum tsrnn_status cuda_upload(struct tsrnn_compute *ctx, void *dst, const void *src,
                                     size_t nbytes)
{
    return cuda_copy((struct tsrnn_cuda *)ctx, dst, src, nbytes, cudaMemcpyHostToDevice,
                     "copying to the GPU");
}

static enum tsrnn_status cuda_download(struct tsrnn_compute *ctx, void *dst, const void *src,
                                       size_t nbytes)
{
    return cuda_copy((struct tsrnn_cuda *)ctx, dst, src, nbytes, cudaMemcpyDeviceToHost,
                     "copying from the GPU");
}

static enum tsrnn_status cuda_zero(struct tsrnn_compute *ctx, void *buf, size_t nbytes)
{
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    return tsrnn_cuda_check(cudaMemsetAsync(buf, 0, nbytes, cuda->stream), cuda,
                            "zeroing GPU memory");
}

static enum tsrnn_status cuda_synchronize(struct tsrnn_compute *ctx)
{
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    return tsrnn_cuda_check(cudaStreamSynchronize(cuda->stream), cuda,
                            "waiting for the GPU's queued work");
}

static enum tsrnn_status cuda_scale_check(struct tsrnn_compute *ctx, float *buf, size_t count,
                                          float scale, bool *finite)
{
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    const char *what = "scaling and checking the gradients";
    TSRNN_TRY(
        tsrnn_cuda_check(cudaMemsetAsync(cuda->flag, 0, sizeof(int), cuda->stream), cuda, what));
    TSRNN_TRY(tsrnn_cuda_check(
        tsrnn_kernel_scale_check(buf, count, scale, cuda->flag, cuda->stream), cuda, what));
    TSRNN_TRY(tsrnn_cuda_check(cudaMemcpyAsync(cuda->flag_host, cuda->flag, sizeof(int),
                                               cudaMemcpyDeviceToHost, cuda->stream),
                               cuda, what));
    TSRNN_TRY(tsrnn_cuda_check(cudaStreamSynchronize(cuda->stream), cuda, what));
    *finite = *cuda->flag_host == 0;
    return TSRNN_OK;
}

static enum tsrnn_status cuda_adam_update(struct tsrnn_compute *ctx, float *params, float *exp_avg,
                                          float *exp_avg_sq, const float *grads, size_t count,
                                          const struct tsrnn_adam_scalars *s)
{
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    return tsrnn_cuda_check(tsrnn_kernel_adam_update(params, exp_avg, exp_avg_sq, grads, count,
                                                     s->beta1, s->one_minus_beta1, s->beta2,
                                                     s->one_minus_beta2, s->bias_correction2_sqrt,
                                                     s->eps, s->neg_step_size, cuda->stream),
                            cuda, "updating the parameters (Adam)");
}

/* clip_grad_norm outside a training step (the step runs the same kernels itself): the tensors'
 * layout copied up, the kernels, nothing skipped. */
static enum tsrnn_status cuda_clip_grad_norm(struct tsrnn_compute *ctx, float *grads,
                                             const struct tsrnn_param_table *table, float max_norm)
{
    struct tsrnn_cuda *cuda = (struct tsrnn_cuda *)ctx;
    const char *what = "clipping the gradients";
    size_t layout[2 * CLIP_TENSORS_MAX], n = table->entry_count;
    if (n > CLIP_TENSORS_MAX)
        return tsrnn_error(TSRNN_ERR_USAGE, "clipping %zu tensors, at most %d", n,
                           CLIP_TENSORS_MAX);
    for (size_t e = 0; e < n; e++) {
        layout[e] = table->entries[e].offset;
        layout[n + e] = table->entries[e].count;
    }
    TSRNN_TRY(tsrnn_cuda_check(cudaMemcpyAsync(cuda->clip_layout, layout, 2 * n * sizeof(size_t),
                                               cudaMemcpyHostToDevice, cuda->stream),
                               cuda, what));
    return tsrnn_cuda_check(tsrnn_kernel_clip(grads, table->total_count, cuda->clip_scratch,
                                              cuda->clip_scratch + CLIP_TENSORS_MAX,
                                              cuda->clip_layout, cuda->clip_layout + n, n, max_norm,
                                              NULL, cuda->stream),
                            cuda, what);
}

const struct tsrnn_compute_backend tsrnn_compute_backend_cuda = {
    .kind = TSRNN_COMPUTE_CUDA,
    .name = "cuda",
    /* cuDNN's RNN API per layer (the door composes validation's forward from them), the step
     * its own (step.c): captured as a graph per batch shape, results read later. No L1Loss. */
    .caps = {
        .host_memory = false,
        .layer_ops = true,
        .l1_loss = false,
        .optimizers = true,
        .clipping = true,
        .reduction = true,
        .immediate_results = false,
        .step_graphs = true,
    },
    .probe = cuda_probe,
    .create = cuda_create,
    .destroy = cuda_destroy,
    .stream = cuda_stream,
    .describe = cuda_describe,
    .device_memory = cuda_device_memory,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .zero = cuda_zero,
    .synchronize = cuda_synchronize,
    .workspace_create = tsrnn_cuda_workspace_create,
    .workspace_destroy = tsrnn_cuda_workspace_destroy,
    .batch_load = tsrnn_cuda_batch_load,
    .layer_forward = tsrnn_cuda_layer_forward,
    .layer_backward = tsrnn_cuda_layer_backward,
    .state_save = tsrnn_cuda_state_save,
    .head_forward = tsrnn_cuda_head_forward,
    .head_backward = tsrnn_cuda_head_backward,
    .mse_forward = tsrnn_cuda_mse_forward,
    .mse_backward = tsrnn_cuda_mse_backward,
    .window_squared_errors = tsrnn_cuda_window_squared_errors,
    .output_download = tsrnn_cuda_output_download,
    .scale_check = cuda_scale_check,
    .adam_update = cuda_adam_update,
    .clip_grad_norm = cuda_clip_grad_norm,
    .step = tsrnn_cuda_step,
    .step_results = tsrnn_cuda_step_results,
};
