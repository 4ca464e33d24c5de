/* Optional run-time libraries (include/tsrnn/dynlib.h). */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "tsrnn/dynlib.h"

static void *open_soname(const char *soname, const char *fallback_dirs, char *first_error,
                         size_t first_error_nbytes)
{
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle != NULL)
        return handle;
    /* The soname search's reason is the one a user can act on (LD_LIBRARY_PATH, what is
     * installed); the fallbacks only add their own when they had a file that did not load. */
    snprintf(first_error, first_error_nbytes, "%s", dlerror());
    for (const char *p = fallback_dirs; p != NULL && *p != '\0';) {
        size_t len = strcspn(p, ":");
        char path[4096];
        if (len > 0 && len + strlen(soname) + 2 <= sizeof(path)) {
            snprintf(path, sizeof(path), "%.*s/%s", (int)len, p, soname);
            handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (handle != NULL)
                return handle;
        }
        p += len + (p[len] == ':');
    }
    return NULL;
}

void *tsrnn_dynlib_open(const char *soname, const char *fallback_dirs,
                        const struct tsrnn_dynlib_symbol *symbols, size_t symbol_count,
                        const char *missing_hint, const char *older_hint, char *why,
                        size_t why_nbytes)
{
    char error[1024];
    void *handle = open_soname(soname, fallback_dirs, error, sizeof(error));
    if (handle == NULL) {
        if (why != NULL && why_nbytes > 0)
            snprintf(why, why_nbytes, "cannot load %s (%s)%s%s", soname, error,
                     missing_hint != NULL ? "; " : "", missing_hint != NULL ? missing_hint : "");
        return NULL;
    }
    for (size_t i = 0; i < symbol_count; i++) {
        *symbols[i].address = dlsym(handle, symbols[i].name);
        if (*symbols[i].address == NULL) {
            char path[1024];
            tsrnn_dynlib_path(handle, path, sizeof(path));
            if (why != NULL && why_nbytes > 0)
                snprintf(why, why_nbytes, "%s (%s) has no %s%s", soname, path[0] ? path : "?",
                         symbols[i].name, older_hint != NULL ? older_hint : "");
            dlclose(handle);
            return NULL;
        }
    }
    return handle;
}

void tsrnn_dynlib_path(void *handle, char *path, size_t path_nbytes)
{
    struct link_map *map = NULL;
    if (path_nbytes == 0)
        return;
    path[0] = '\0';
    if (handle != NULL && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL &&
        map->l_name != NULL)
        snprintf(path, path_nbytes, "%s", map->l_name);
}
