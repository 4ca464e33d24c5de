/* Helpers of the fuzz targets (fuzz.h). */
#include "fuzz.h"

#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tsrnn/core.h"

static void remove_dir(void);

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: fuzz check failed: %s: ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  last tsrnn message: %s\n", tsrnn_last_error());
    remove_dir(); /* abort() skips atexit(), and -minimize_crash fails thousands of times */
    abort();
}

static char dir[PATH_MAX];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_dir(void)
{
    if (dir[0] != '\0')
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(void)
{
    if (dir[0] != '\0')
        return dir;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/tsrnn-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("tsrnn fuzz: mkdtemp");
        exit(1);
    }
    atexit(remove_dir);
    return dir;
}

const char *fuzz_write(const char *name, const void *data, size_t nbytes)
{
    static char path[2 * PATH_MAX]; /* the folder and a name: no truncation */
    snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
    /* A new file, not the old one truncated: ext4 writes a file rewritten after a truncation
     * out to disk at close (auto_da_alloc), ten times the cost of the run itself. */
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, nbytes, f) != nbytes || fclose(f) != 0) {
        /* The harness's own failure, not the input's: stop rather than report a crash. */
        perror(path);
        exit(1);
    }
    return path;
}

size_t fuzz_split(const uint8_t *data, size_t size, size_t *file_nbytes, char **args,
                  size_t capacity)
{
    const uint8_t *sep = memchr(data, FUZZ_SEPARATOR, size);
    *file_nbytes = sep ? (size_t)(sep - data) : size;
    size_t count = 0;
    while (sep != NULL && count < capacity) {
        const uint8_t *start = sep + 1;
        size_t left = size - (size_t)(start - data);
        sep = memchr(start, FUZZ_SEPARATOR, left);
        size_t n = sep ? (size_t)(sep - start) : left;
        args[count] = strndup((const char *)start, n); /* stops at a NUL, as argv would */
        if (args[count] == NULL) {
            perror("tsrnn fuzz");
            exit(1);
        }
        count++;
    }
    return count;
}

void fuzz_args_free(char **args, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(args[i]);
}
