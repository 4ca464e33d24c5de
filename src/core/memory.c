/* What memory this process can still have (include/tsrnn/core.h): the machine's, its
 * cgroup's and its own limits. In core/ because the data reader bounds a file by it too. */
#include "tsrnn/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Reads the first number of a file, or "max" (false: no limit, or unreadable). */
static bool read_number(const char *path, double *value)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    unsigned long long v;
    bool ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    /* cgroup v1 writes "no limit" as the largest page-aligned int64 */
    if (!ok || v >= (1ull << 62))
        return false;
    *value = (double)v;
    return true;
}

/* A smaller headroom `value` from `source` replaces the current one. */
static void take(double *best, char *source, size_t source_nbytes, double value, const char *what)
{
    if (value < 0.0)
        value = 0.0;
    if (*best < 0.0 || value < *best) {
        *best = value;
        snprintf(source, source_nbytes, "%s", what);
    }
}

static void meminfo(double *best, char *source, size_t source_nbytes)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (f == NULL)
        return;
    char line[256];
    double available = -1.0, swap = 0.0;
    unsigned long long kb;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            available = 1024.0 * (double)kb;
        else if (sscanf(line, "SwapFree: %llu kB", &kb) == 1)
            swap = 1024.0 * (double)kb;
    }
    fclose(f);
    if (available >= 0.0)
        take(best, source, source_nbytes, available + swap,
             swap > 0.0 ? "MemAvailable + SwapFree" : "MemAvailable");
}

/* This process's cgroups (v2 "0::/path", v1 "N:...memory...:/path") and their ancestors: the
 * least limit less usage. */
static void cgroups(double *best, char *source, size_t source_nbytes)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f == NULL)
        return;
    char line[4096];
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *first = strchr(line, ':'), *second = first ? strchr(first + 1, ':') : NULL;
        if (second == NULL)
            continue;
        *second = '\0';
        const char *controllers = first + 1;
        bool v2 = strcmp(line, "0") == 0 && *controllers == '\0';
        bool v1 =
            !v2 && (strcmp(controllers, "memory") == 0 || strstr(controllers, ",memory") != NULL ||
                    strncmp(controllers, "memory,", 7) == 0);
        if (!v1 && !v2)
            continue;
        static const char *const v2_roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
        static const char *const v1_roots[] = { "/sys/fs/cgroup/memory" };
        const char *const *roots = v2 ? v2_roots : v1_roots;
        size_t root_count = v2 ? 2 : 1;
        char path[4096];
        snprintf(path, sizeof(path), "%s", second + 1);
        for (;;) { /* the cgroup, then each ancestor up to the root */
            for (size_t r = 0; r < root_count; r++) {
                char limit_path[8192], usage_path[8192];
                snprintf(limit_path, sizeof(limit_path), "%s%s/%s", roots[r],
                         strcmp(path, "/") == 0 ? "" : path,
                         v2 ? "memory.max" : "memory.limit_in_bytes");
                snprintf(usage_path, sizeof(usage_path), "%s%s/%s", roots[r],
                         strcmp(path, "/") == 0 ? "" : path,
                         v2 ? "memory.current" : "memory.usage_in_bytes");
                double limit, usage = 0.0;
                if (read_number(limit_path, &limit)) {
                    read_number(usage_path, &usage);
                    take(best, source, source_nbytes, limit - usage,
                         v2 ? "the cgroup's memory.max" : "the cgroup's memory.limit_in_bytes");
                }
            }
            char *slash = strrchr(path, '/');
            if (slash == NULL || strcmp(path, "/") == 0)
                break;
            if (slash == path)
                slash[1] = '\0';
            else
                *slash = '\0';
        }
    }
    fclose(f);
}

/* RLIMIT_AS less the address space mapped, RLIMIT_DATA less the data mapped. */
static void rlimits(double *best, char *source, size_t source_nbytes)
{
    double page = (double)sysconf(_SC_PAGESIZE);
    unsigned long long size = 0, resident, shared, text, lib, data = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f != NULL) {
        if (fscanf(f, "%llu %llu %llu %llu %llu %llu", &size, &resident, &shared, &text, &lib,
                   &data) != 6)
            size = data = 0;
        fclose(f);
    }
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        take(best, source, source_nbytes, (double)lim.rlim_cur - page * (double)size,
             "RLIMIT_AS (ulimit -v)");
    if (getrlimit(RLIMIT_DATA, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        take(best, source, source_nbytes, (double)lim.rlim_cur - page * (double)data,
             "RLIMIT_DATA (ulimit -d)");
}

bool tsrnn_memory_available(double *nbytes, char *source, size_t source_nbytes)
{
    double best = -1.0;
    snprintf(source, source_nbytes, "unknown");
    meminfo(&best, source, source_nbytes);
    cgroups(&best, source, source_nbytes);
    rlimits(&best, source, source_nbytes);
    *nbytes = best;
    return best >= 0.0;
}
