/* Replays saved inputs through a fuzz target without libFuzzer: the `fuzz_<target>` test of
 * every normal build (tests/fuzz/meson.build), so the seed corpus and each regression file run
 * under gcc and, in scripts/test.sh's second build, under ASan + UBSan.
 *
 * Usage: fuzz_replay_<target> PATH...   (a file, or a folder whose files are all replayed;
 * a folder that does not exist holds nothing yet). Exits 0 after the last input; a failing
 * input aborts in the target (fuzz.h), after the line naming it. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static size_t replayed;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t capacity = 4096, nbytes = 0;
    uint8_t *data = malloc(capacity);
    while (data != NULL) {
        nbytes += fread(data + nbytes, 1, capacity - nbytes, f);
        if (nbytes < capacity)
            break;
        capacity *= 2;
        uint8_t *grown = realloc(data, capacity);
        if (grown == NULL)
            free(data);
        data = grown;
    }
    int failed = data == NULL || ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(data);
        return 1;
    }
    printf("replay %s (%zu bytes)\n", path, nbytes);
    fflush(stdout);
    /* An exact-size copy, so that ASan sees a read past the input's end, as libFuzzer's does. */
    uint8_t *input = malloc(nbytes ? nbytes : 1);
    if (input == NULL) {
        free(data);
        return 1;
    }
    memcpy(input, data, nbytes);
    free(data);
    LLVMFuzzerTestOneInput(input, nbytes);
    free(input);
    replayed++;
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder's regular files in name order (the order of the log does not depend on readdir). */
static int replay_dir(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t count = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue; /* ., .. and hidden files */
        char **grown = realloc(names, (count + 1) * sizeof(*names));
        if (grown == NULL || (grown[count] = strdup(e->d_name)) == NULL) {
            names = grown ? grown : names;
            rc = 1;
            break;
        }
        names = grown;
        count++;
    }
    closedir(d);
    qsort(names, count, sizeof(*names), compare_names);
    for (size_t i = 0; i < count; i++) {
        char file[PATH_MAX];
        struct stat st;
        snprintf(file, sizeof(file), "%s/%s", path, names[i]);
        if (rc == 0 && stat(file, &st) == 0 && S_ISREG(st.st_mode))
            rc = replay_file(file);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            if (errno == ENOENT)
                continue;
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if ((S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i])) != 0)
            return 1;
    }
    printf("replayed %zu inputs\n", replayed);
    return 0;
}
