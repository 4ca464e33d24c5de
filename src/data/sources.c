/* The files of [data] path (include/tsrnn/data.h): one file, a comma-separated list, or glob
 * patterns, each file one series named by its stem.
 *
 * A pattern's matches are sorted by name, byte for byte (what Python's sorted() does with a
 * glob's UTF-8 names), not in the locale's collation glob(3) would use: a Darts user passes
 * `[TimeSeries.from_csv(p) for p in sorted(glob(...))]`, and the order of the list is the
 * order of Darts' samples.
 */
#include "tsrnn/data.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

static bool is_pattern(const char *path)
{
    return strpbrk(path, "*?[") != NULL;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum tsrnn_status push_path(struct tsrnn_data_paths *p, const char *path, size_t len)
{
    if (p->count == p->capacity) {
        size_t capacity = p->capacity ? 2 * p->capacity : 8;
        char **grown = realloc(p->paths, capacity * sizeof(*grown));
        if (grown == NULL)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu data files", capacity);
        p->paths = grown;
        p->capacity = capacity;
    }
    p->paths[p->count] = strndup(path, len);
    if (p->paths[p->count] == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the data file names");
    p->count++;
    return TSRNN_OK;
}

/* The matches of `pattern`, sorted by name, appended to p; none is an error. */
static enum tsrnn_status expand_pattern(struct tsrnn_data_paths *p, const char *pattern,
                                        const char *origin)
{
    enum tsrnn_status status = TSRNN_OK;
    glob_t g = { 0 };
    int rc = glob(pattern, GLOB_NOSORT | GLOB_ERR, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "%s: [data] path: the pattern '%s' matches no file; accepted: a CSV "
                             "file, a comma-separated list of them, or a pattern such as "
                             "data/*.csv that matches at least one",
                             origin, tsrnn_display_path(pattern));
        goto out;
    }
    if (rc != 0) {
        status = tsrnn_error(rc == GLOB_NOSPACE ? TSRNN_ERR_NOMEM : TSRNN_ERR_USAGE,
                             "%s: [data] path: cannot list the files of the pattern '%s'", origin,
                             tsrnn_display_path(pattern));
        goto out;
    }
    qsort(g.gl_pathv, g.gl_pathc, sizeof(*g.gl_pathv), compare_names);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        status = push_path(p, g.gl_pathv[i], strlen(g.gl_pathv[i]));
        if (status != TSRNN_OK)
            goto out;
    }
out:
    globfree(&g);
    return status;
}

void tsrnn_data_path_stem(const char *path, char *out, size_t capacity)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t len = dot != NULL && dot != base ? (size_t)(dot - base) : strlen(base);
    snprintf(out, capacity, "%.*s", (int)len, base);
}

enum tsrnn_status tsrnn_data_paths_expand(struct tsrnn_data_paths *p, const char *spec,
                                          const char *origin)
{
    enum tsrnn_status status = TSRNN_OK;
    char *one = NULL;
    memset(p, 0, sizeof(*p));
    for (const char *item = spec;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        if (len == 0) {
            status = tsrnn_error(TSRNN_ERR_USAGE,
                                 "%s: [data] path = '%s' has an empty entry; accepted: CSV "
                                 "files or patterns separated by single commas",
                                 origin, spec);
            goto out;
        }
        one = strndup(item, len);
        if (one == NULL) {
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the data file names");
            goto out;
        }
        status = is_pattern(one) ? expand_pattern(p, one, origin) : push_path(p, one, len);
        if (status != TSRNN_OK)
            goto out;
        free(one);
        one = NULL;
        if (comma == NULL)
            break;
        item = comma + 1;
    }
out:
    free(one);
    if (status != TSRNN_OK)
        tsrnn_data_paths_finish(p);
    return status;
}

void tsrnn_data_paths_finish(struct tsrnn_data_paths *p)
{
    for (size_t i = 0; p->paths != NULL && i < p->count; i++)
        free(p->paths[i]);
    free(p->paths);
    memset(p, 0, sizeof(*p));
}
