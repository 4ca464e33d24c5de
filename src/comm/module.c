/* The comm backends in modules (backend.h): tsrnn-comm-NAME.so found and loaded with dlopen
 * when its backend is first chosen, once per process; the handle stays open for the life of
 * the process.
 *
 * Where a module is looked for, in order (docs/architecture.md "Comm modules"):
 * - $TSRNN_MODULE_DIR, when set and not empty, and then nowhere else (the tests point it at
 *   the build folder; a user at a module kept elsewhere);
 * - the folder of the running program (/proc/self/exe): the build folder, where meson puts
 *   the modules next to the programs;
 * - TSRNN_MODULE_INSTALL_DIR (<libdir>/tsrnn), where meson install puts them.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "tsrnn_build.h"

enum {
    MAX_DIRS = 3,
    MAX_MODULES = 4,
    /* What the message keeps of each path's failure. */
    WHY_NBYTES = 1536,
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const char *name; /* the backend's, static storage (comm.c's table) */
    const struct tsrnn_comm_module *module;
} loaded[MAX_MODULES];

/* The folder of the running program, without a trailing '/'; false when it cannot be read. */
static bool program_dir(char *dir, size_t dir_nbytes)
{
    ssize_t n = readlink("/proc/self/exe", dir, dir_nbytes - 1);
    if (n <= 0)
        return false;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    return true;
}

/* The folders to look in, in order, without repeats; returns how many. */
static int module_dirs(char dirs[MAX_DIRS][PATH_MAX])
{
    const char *env = getenv("TSRNN_MODULE_DIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(dirs[0], PATH_MAX, "%s", env);
        return 1;
    }
    int n = 0;
    if (program_dir(dirs[n], PATH_MAX))
        n++;
    if (n == 0 || strcmp(dirs[0], TSRNN_MODULE_INSTALL_DIR) != 0)
        snprintf(dirs[n++], PATH_MAX, "%s", TSRNN_MODULE_INSTALL_DIR);
    return n;
}

/* Appends to the text in `why` (of `why_nbytes`), cut to fit. */
__attribute__((format(printf, 3, 4))) static void append(char *why, size_t why_nbytes,
                                                         const char *fmt, ...)
{
    size_t used = strlen(why);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + used, why_nbytes - used, fmt, ap);
    va_end(ap);
}

/* Opens `path` and takes its table from `entry`; NULL with the reason appended to `why`. */
static const struct tsrnn_comm_module *open_module(const char *path, const char *entry, char *why,
                                                   size_t why_nbytes)
{
    if (access(path, F_OK) != 0) {
        append(why, why_nbytes, "; %s: not there", path);
        return NULL;
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        /* The loader names the file that failed: the module, or a library it needs. */
        const char *err = dlerror();
        if (strncmp(err, path, strlen(path)) == 0)
            append(why, why_nbytes, "; %s", err);
        else
            append(why, why_nbytes, "; %s: %s", path, err);
        return NULL;
    }
    const struct tsrnn_comm_module *(*get)(void);
    *(void **)&get = dlsym(handle, entry);
    const struct tsrnn_comm_module *module = get != NULL ? get() : NULL;
    if (module == NULL)
        append(why, why_nbytes, "; %s: has no %s, not a tsrnn comm module", path, entry);
    else if (module->abi != TSRNN_COMM_MODULE_ABI)
        append(why, why_nbytes,
               "; %s: built for module interface %d, this program has %d (a module of another "
               "tsrnn build)",
               path, module->abi, TSRNN_COMM_MODULE_ABI);
    else
        return module;
    dlclose(handle);
    return NULL;
}

/* Looks for the module in every folder; TSRNN_ERR_USAGE naming all of them when none loads. */
static enum tsrnn_status find_module(const struct tsrnn_comm_module **module, const char *name,
                                     const char *installs)
{
    char dirs[MAX_DIRS][PATH_MAX], file[64], entry[64], why[WHY_NBYTES] = "";
    snprintf(file, sizeof(file), "tsrnn-comm-%s.so", name);
    snprintf(entry, sizeof(entry), "tsrnn_comm_%s_module", name);
    int n = module_dirs(dirs);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        int len = snprintf(path, sizeof(path), "%s/%s", dirs[i], file);
        if (len < 0 || (size_t)len >= sizeof(path))
            append(why, sizeof(why), "; %s/%s: path too long", dirs[i], file);
        else if ((*module = open_module(path, entry, why, sizeof(why))) != NULL)
            return TSRNN_OK;
    }
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "comm backend %s: its module %s did not load (tried%s): it belongs next "
                       "to the program or in %s (meson install puts it there; TSRNN_MODULE_DIR "
                       "names another folder), and needs %s installed",
                       name, file, why + 1, TSRNN_MODULE_INSTALL_DIR, installs);
}

enum tsrnn_status tsrnn_comm_module_load(const struct tsrnn_comm_module **module, const char *name,
                                         const char *installs)
{
    pthread_mutex_lock(&lock);
    enum tsrnn_status status = TSRNN_OK;
    int i = 0;
    while (i < MAX_MODULES && loaded[i].name != NULL && strcmp(loaded[i].name, name) != 0)
        i++;
    if (i < MAX_MODULES && loaded[i].name != NULL) {
        *module = loaded[i].module;
        goto out;
    }
    status = find_module(module, name, installs);
    /* A failure is not kept: the next call looks again. */
    if (status != TSRNN_OK)
        goto out;
    if (i < MAX_MODULES)
        loaded[i].name = name, loaded[i].module = *module;
out:
    pthread_mutex_unlock(&lock);
    return status;
}
