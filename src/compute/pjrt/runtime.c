/* The PJRT runtime (runtime.h) over the PJRT C API (pjrt_c_api.h, taken at build time from the
 * xla-cpu-pjrt wheel scripts/install-deps.sh caches; never committed). The calls follow the
 * API's own contract: every Args struct carries struct_size, a function the header has may
 * be missing from an older plugin (checked against api->struct_size before the call), and
 * every returned PJRT_Error is read and destroyed here. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pjrt_c_api.h"
#include "runtime.h"

struct tsrnn_pjrt_program {
    char *text;
    int replica_count;
    PJRT_LoadedExecutable *exe;
    struct tsrnn_pjrt_program *next;
};

struct tsrnn_pjrt {
    void *dl;
    const PJRT_Api *api;
    char path[1024];
    PJRT_Client *client;
    PJRT_Device *devices[TSRNN_PJRT_MAX_DEVICES];
    size_t device_count;
    char platform[32];
    struct tsrnn_pjrt_program *programs;
    size_t compile_count;
    double compile_s;
    /* topologies described for compile_for_topology, kept until close */
    char topology_names[8][32];
    PJRT_TopologyDescription *topologies[8];
    size_t topology_count;
};

/* Whether the plugin's table reaches the member at `offset` (a newer header than plugin). */
#define HAS_FN(rt, member)                                                                         \
    ((rt)->api->struct_size >= offsetof(PJRT_Api, member) + sizeof((rt)->api->member) &&           \
     (rt)->api->member != NULL)

/* The status for a PJRT error: `what` failed, with the plugin's message; destroys it. */
static enum tsrnn_status pjrt_failed(const struct tsrnn_pjrt *rt, PJRT_Error *err, const char *what)
{
    PJRT_Error_Message_Args m = { .struct_size = PJRT_Error_Message_Args_STRUCT_SIZE,
                                  .error = err };
    rt->api->PJRT_Error_Message(&m);
    enum tsrnn_status status = tsrnn_error(TSRNN_ERR_IO, "pjrt (%s): %s failed: %.*s", rt->path,
                                           what, (int)m.message_size, m.message);
    PJRT_Error_Destroy_Args d = { .struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
                                  .error = err };
    rt->api->PJRT_Error_Destroy(&d);
    return status;
}

#define PJRT_TRY(rt, call, what)                                                                   \
    do {                                                                                           \
        PJRT_Error *err_ = (call);                                                                 \
        if (err_ != NULL)                                                                          \
            return pjrt_failed((rt), err_, (what));                                                \
    } while (0)

void tsrnn_pjrt_plugin_path(char *out, size_t out_nbytes, const char *path)
{
    const char *env_plugin = getenv("TSRNN_PJRT_PLUGIN");
    const char *env_tpu = getenv("TPU_LIBRARY_PATH");
    if (path != NULL && path[0] != '\0')
        snprintf(out, out_nbytes, "%s", path);
    else if (env_plugin != NULL && env_plugin[0] != '\0')
        snprintf(out, out_nbytes, "%s", env_plugin);
    else if (env_tpu != NULL && env_tpu[0] != '\0')
        snprintf(out, out_nbytes, "%s", env_tpu);
    else
        snprintf(out, out_nbytes, "libtpu.so");
}

static enum tsrnn_status await_event(const struct tsrnn_pjrt *rt, PJRT_Event *event,
                                     const char *what)
{
    if (event == NULL)
        return TSRNN_OK;
    PJRT_Event_Await_Args a = { .struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = event };
    PJRT_Error *err = rt->api->PJRT_Event_Await(&a);
    PJRT_Event_Destroy_Args d = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                  .event = event };
    PJRT_Error *derr = rt->api->PJRT_Event_Destroy(&d);
    if (err != NULL) {
        if (derr != NULL)
            (void)pjrt_failed(rt, derr, what);
        return pjrt_failed(rt, err, what);
    }
    return derr != NULL ? pjrt_failed(rt, derr, what) : TSRNN_OK;
}

static enum tsrnn_status create_client(struct tsrnn_pjrt *rt, int cpu_device_count)
{
    PJRT_NamedValue opt = {
        .struct_size = PJRT_NamedValue_STRUCT_SIZE,
        .name = "cpu_device_count",
        .name_size = strlen("cpu_device_count"),
        .type = PJRT_NamedValue_kInt64,
        .int64_value = cpu_device_count,
        .value_size = 1,
    };
    PJRT_Client_Create_Args c = { .struct_size = PJRT_Client_Create_Args_STRUCT_SIZE };
    if (cpu_device_count > 0) {
        c.create_options = &opt;
        c.num_options = 1;
    }
    PJRT_TRY(rt, rt->api->PJRT_Client_Create(&c), "creating a client");
    rt->client = c.client;

    PJRT_Client_PlatformName_Args pn = { .struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE,
                                         .client = rt->client };
    PJRT_TRY(rt, rt->api->PJRT_Client_PlatformName(&pn), "asking the platform's name");
    snprintf(rt->platform, sizeof(rt->platform), "%.*s", (int)pn.platform_name_size,
             pn.platform_name);

    PJRT_Client_AddressableDevices_Args ad = {
        .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE,
        .client = rt->client,
    };
    PJRT_TRY(rt, rt->api->PJRT_Client_AddressableDevices(&ad), "listing the devices");
    rt->device_count = ad.num_addressable_devices < TSRNN_PJRT_MAX_DEVICES
                           ? ad.num_addressable_devices
                           : TSRNN_PJRT_MAX_DEVICES;
    for (size_t i = 0; i < rt->device_count; i++)
        rt->devices[i] = ad.addressable_devices[i];
    if (rt->device_count == 0)
        return tsrnn_error(TSRNN_ERR_IO, "pjrt (%s): the %s client has no device", rt->path,
                           rt->platform);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_pjrt_open(struct tsrnn_pjrt **out, const char *plugin_path, bool client,
                                  int cpu_device_count)
{
    enum tsrnn_status status = TSRNN_OK;
    *out = NULL;
    struct tsrnn_pjrt *rt = calloc(1, sizeof(*rt));
    if (rt == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the PJRT runtime");
    tsrnn_pjrt_plugin_path(rt->path, sizeof(rt->path), plugin_path);
    rt->dl = dlopen(rt->path, RTLD_NOW | RTLD_LOCAL);
    if (rt->dl == NULL) {
        const char *why = dlerror();
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "cannot load the PJRT plugin %s: %s; name one with [trainer] "
                             "pjrt_plugin or TSRNN_PJRT_PLUGIN (scripts/install-deps.sh caches "
                             "XLA's CPU plugin, docs/architecture.md \"The pjrt backend\")",
                             rt->path, why != NULL ? why : "?");
        goto out;
    }
    const PJRT_Api *(*get_api)(void);
    *(void **)&get_api = dlsym(rt->dl, "GetPjrtApi");
    rt->api = get_api != NULL ? get_api() : NULL;
    if (rt->api == NULL) {
        status = tsrnn_error(TSRNN_ERR_USAGE, "%s is not a PJRT plugin (no GetPjrtApi)", rt->path);
        goto out;
    }
    if (rt->api->pjrt_api_version.major_version != PJRT_API_MAJOR) {
        status = tsrnn_error(TSRNN_ERR_USAGE, "%s speaks PJRT API %d.%d; tsrnn was built for %d.x",
                             rt->path, rt->api->pjrt_api_version.major_version,
                             rt->api->pjrt_api_version.minor_version, PJRT_API_MAJOR);
        goto out;
    }
    PJRT_Plugin_Initialize_Args init = { .struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE };
    if (HAS_FN(rt, PJRT_Plugin_Initialize)) {
        PJRT_Error *err = rt->api->PJRT_Plugin_Initialize(&init);
        if (err != NULL) {
            status = pjrt_failed(rt, err, "initialising the plugin");
            goto out;
        }
    }
    if (client)
        status = create_client(rt, cpu_device_count);
out:
    /* Nothing made yet (no api) or made in part: tsrnn_pjrt_close releases what there is. */
    if (status != TSRNN_OK)
        tsrnn_pjrt_close(rt);
    else
        *out = rt;
    return status;
}

void tsrnn_pjrt_close(struct tsrnn_pjrt *rt)
{
    if (rt == NULL)
        return;
    while (rt->programs != NULL) {
        struct tsrnn_pjrt_program *p = rt->programs;
        rt->programs = p->next;
        PJRT_LoadedExecutable_Destroy_Args d = {
            .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
            .executable = p->exe,
        };
        PJRT_Error *err = rt->api->PJRT_LoadedExecutable_Destroy(&d);
        if (err != NULL)
            (void)pjrt_failed(rt, err, "destroying a program");
        free(p->text);
        free(p);
    }
    for (size_t i = 0; i < rt->topology_count; i++) {
        PJRT_TopologyDescription_Destroy_Args td = {
            .struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE,
            .topology = rt->topologies[i],
        };
        PJRT_Error *err = rt->api->PJRT_TopologyDescription_Destroy(&td);
        if (err != NULL)
            (void)pjrt_failed(rt, err, "destroying a topology");
    }
    if (rt->client != NULL) {
        PJRT_Client_Destroy_Args d = { .struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE,
                                       .client = rt->client };
        PJRT_Error *err = rt->api->PJRT_Client_Destroy(&d);
        if (err != NULL)
            (void)pjrt_failed(rt, err, "destroying the client");
    }
    /* The plugin stays mapped: XLA's plugins start threads and register atexit handlers
     * that must outlive dlclose, and a process loads one plugin once. */
    free(rt);
}

const char *tsrnn_pjrt_platform(const struct tsrnn_pjrt *rt)
{
    return rt->platform;
}

size_t tsrnn_pjrt_device_count(const struct tsrnn_pjrt *rt)
{
    return rt->device_count;
}

void tsrnn_pjrt_api_version(const struct tsrnn_pjrt *rt, int *major, int *minor)
{
    *major = rt->api->pjrt_api_version.major_version;
    *minor = rt->api->pjrt_api_version.minor_version;
}

/* A serialized xla.CompileOptionsProto: executable_build_options (field 3) { num_replicas
 * (field 4) = n, num_partitions (field 5) = 1 }. The 0.81 CPU plugin aborts on empty options. */
static size_t compile_options(char *out, int replica_count)
{
    size_t n = 0;
    char inner[16];
    size_t k = 0;
    inner[k++] = 0x20; /* field 4, varint */
    for (unsigned v = (unsigned)replica_count;; v >>= 7) {
        inner[k++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f)
            break;
    }
    inner[k++] = 0x28; /* field 5, varint */
    inner[k++] = 0x01;
    out[n++] = 0x1a; /* field 3, length-delimited */
    out[n++] = (char)k;
    memcpy(out + n, inner, k);
    return n + k;
}

enum tsrnn_status tsrnn_pjrt_compile(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_program **prog,
                                     const char *text, int replica_count)
{
    for (struct tsrnn_pjrt_program *p = rt->programs; p != NULL; p = p->next)
        if (p->replica_count == replica_count && strcmp(p->text, text) == 0) {
            *prog = p;
            return TSRNN_OK;
        }
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_pjrt_program *p = calloc(1, sizeof(*p));
    char *copy = strdup(text);
    if (p == NULL || copy == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a PJRT program");
        goto out;
    }
    char options[24];
    PJRT_Program program = {
        .struct_size = PJRT_Program_STRUCT_SIZE,
        .code = copy,
        .code_size = strlen(copy),
        .format = "mlir",
        .format_size = 4,
    };
    PJRT_Client_Compile_Args c = {
        .struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
        .client = rt->client,
        .program = &program,
        .compile_options = options,
        .compile_options_size = compile_options(options, replica_count),
    };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    PJRT_Error *err = rt->api->PJRT_Client_Compile(&c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    rt->compile_count++;
    rt->compile_s += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (err != NULL) {
        status = pjrt_failed(rt, err, "compiling a program");
        goto out;
    }
    p->text = copy;
    p->replica_count = replica_count;
    p->exe = c.executable;
    p->next = rt->programs;
    rt->programs = p;
    *prog = p;
out:
    if (status != TSRNN_OK) {
        free(p);
        free(copy);
    }
    return status;
}

void tsrnn_pjrt_compile_stats(const struct tsrnn_pjrt *rt, size_t *count, double *seconds)
{
    *count = rt->compile_count;
    *seconds = rt->compile_s;
}

size_t tsrnn_pjrt_program_count(const struct tsrnn_pjrt *rt)
{
    size_t n = 0;
    for (const struct tsrnn_pjrt_program *p = rt->programs; p != NULL; p = p->next)
        n++;
    return n;
}

enum tsrnn_status tsrnn_pjrt_compile_for_topology(struct tsrnn_pjrt *rt, const char *topology_name,
                                                  const char *text, int replica_count)
{
    if (!HAS_FN(rt, PJRT_TopologyDescription_Create) || !HAS_FN(rt, PJRT_Compile))
        return tsrnn_error(TSRNN_ERR_USAGE, "pjrt (%s): the plugin cannot compile without a client",
                           rt->path);
    PJRT_TopologyDescription *topology = NULL;
    for (size_t i = 0; i < rt->topology_count; i++)
        if (strcmp(rt->topology_names[i], topology_name) == 0)
            topology = rt->topologies[i];
    if (topology == NULL) {
        if (rt->topology_count == 8 || strlen(topology_name) >= sizeof(rt->topology_names[0]))
            return tsrnn_error(TSRNN_ERR_USAGE, "pjrt: too many or too long topology names (%s)",
                               topology_name);
        PJRT_TopologyDescription_Create_Args tc = {
            .struct_size = PJRT_TopologyDescription_Create_Args_STRUCT_SIZE,
            .topology_name = topology_name,
            .topology_name_size = strlen(topology_name),
        };
        PJRT_TRY(rt, rt->api->PJRT_TopologyDescription_Create(&tc), "describing a topology");
        topology = tc.topology;
        snprintf(rt->topology_names[rt->topology_count], sizeof(rt->topology_names[0]), "%s",
                 topology_name);
        rt->topologies[rt->topology_count++] = topology;
    }
    char options[24];
    PJRT_Program program = {
        .struct_size = PJRT_Program_STRUCT_SIZE,
        .code = (char *)text,
        .code_size = strlen(text),
        .format = "mlir",
        .format_size = 4,
    };
    PJRT_Compile_Args c = {
        .struct_size = PJRT_Compile_Args_STRUCT_SIZE,
        .topology = topology,
        .program = &program,
        .compile_options = options,
        .compile_options_size = compile_options(options, replica_count),
    };
    PJRT_Error *err = rt->api->PJRT_Compile(&c);
    enum tsrnn_status status = TSRNN_OK;
    if (err != NULL) {
        status = pjrt_failed(rt, err, "compiling for the topology");
    } else {
        PJRT_Executable_Destroy_Args d = { .struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                           .executable = c.executable };
        err = rt->api->PJRT_Executable_Destroy(&d);
        if (err != NULL)
            status = pjrt_failed(rt, err, "destroying an executable");
    }
    return status;
}

enum tsrnn_status tsrnn_pjrt_buffer_upload(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_buffer **buf,
                                           size_t device_idx, const float *data,
                                           const int64_t *dims, size_t rank)
{
    *buf = NULL;
    if (device_idx >= rt->device_count)
        return tsrnn_error(TSRNN_ERR_USAGE, "pjrt: device %zu asked for, the %s client has %zu",
                           device_idx, rt->platform, rt->device_count);
    PJRT_Client_BufferFromHostBuffer_Args a = {
        .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
        .client = rt->client,
        .data = data,
        .type = PJRT_Buffer_Type_F32,
        .dims = dims,
        .num_dims = rank,
        .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
        .device = rt->devices[device_idx],
    };
    PJRT_TRY(rt, rt->api->PJRT_Client_BufferFromHostBuffer(&a), "copying to the device");
    enum tsrnn_status status = await_event(rt, a.done_with_host_buffer, "copying to the device");
    if (status != TSRNN_OK) {
        tsrnn_pjrt_buffer_destroy(rt, (struct tsrnn_pjrt_buffer *)a.buffer);
        return status;
    }
    *buf = (struct tsrnn_pjrt_buffer *)a.buffer;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_pjrt_buffer_download(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_buffer *buf,
                                             void *dst, size_t nbytes)
{
    PJRT_Buffer_ToHostBuffer_Args a = {
        .struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
        .src = (PJRT_Buffer *)buf,
    };
    PJRT_TRY(rt, rt->api->PJRT_Buffer_ToHostBuffer(&a), "asking a buffer's size");
    if (a.dst_size != nbytes)
        return tsrnn_error(TSRNN_ERR_IO,
                           "pjrt (%s): a device buffer holds %zu bytes, %zu were expected",
                           rt->path, a.dst_size, nbytes);
    a.dst = dst;
    a.event = NULL;
    PJRT_TRY(rt, rt->api->PJRT_Buffer_ToHostBuffer(&a), "copying from the device");
    return await_event(rt, a.event, "copying from the device");
}

void tsrnn_pjrt_buffer_destroy(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_buffer *buf)
{
    if (buf == NULL)
        return;
    PJRT_Buffer_Destroy_Args d = { .struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                   .buffer = (PJRT_Buffer *)buf };
    PJRT_Error *err = rt->api->PJRT_Buffer_Destroy(&d);
    if (err != NULL)
        (void)pjrt_failed(rt, err, "destroying a buffer");
}

enum tsrnn_status tsrnn_pjrt_execute(struct tsrnn_pjrt *rt, struct tsrnn_pjrt_program *prog,
                                     size_t replica_count, struct tsrnn_pjrt_buffer *const *args,
                                     size_t arg_count, struct tsrnn_pjrt_buffer **outs,
                                     size_t out_count)
{
    PJRT_Buffer *const *arg_lists[TSRNN_PJRT_MAX_DEVICES];
    PJRT_Buffer **out_lists[TSRNN_PJRT_MAX_DEVICES];
    PJRT_Event *events[TSRNN_PJRT_MAX_DEVICES] = { 0 };

    if (replica_count == 0 || replica_count > rt->device_count)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "pjrt: %zu replicas asked for, the %s client has %zu "
                           "devices",
                           replica_count, rt->platform, rt->device_count);
    for (size_t r = 0; r < replica_count; r++) {
        arg_lists[r] = (PJRT_Buffer *const *)(args + r * arg_count);
        out_lists[r] = (PJRT_Buffer **)(outs + r * out_count);
        for (size_t j = 0; j < out_count; j++)
            outs[r * out_count + j] = NULL;
    }
    PJRT_ExecuteOptions options = { .struct_size = PJRT_ExecuteOptions_STRUCT_SIZE };
    PJRT_LoadedExecutable_Execute_Args e = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
        .executable = prog->exe,
        .options = &options,
        .argument_lists = arg_lists,
        .num_devices = replica_count,
        .num_args = arg_count,
        .output_lists = out_lists,
        .device_complete_events = events,
    };
    PJRT_TRY(rt, rt->api->PJRT_LoadedExecutable_Execute(&e), "running a program");
    enum tsrnn_status status = TSRNN_OK;
    for (size_t r = 0; r < replica_count; r++) {
        enum tsrnn_status s = await_event(rt, events[r], "running a program");
        if (status == TSRNN_OK)
            status = s;
    }
    if (status != TSRNN_OK)
        for (size_t i = 0; i < replica_count * out_count; i++) {
            tsrnn_pjrt_buffer_destroy(rt, outs[i]);
            outs[i] = NULL;
        }
    return status;
}
