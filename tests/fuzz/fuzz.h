/* What the fuzz targets in this folder share (CONTRIBUTING.md "Fuzzing").
 *
 * Each fuzz_<target>.c defines libFuzzer's two entry points and feeds its input to the
 * library through the entry points the programs use. The same file is linked two ways:
 * with clang's libFuzzer (-Dfuzz=true), which generates inputs, and with replay.c in every
 * normal build, where the `fuzz_<target>` test replays the committed seed corpus and every
 * regression file, so a crash found once stays fixed under gcc, ASan and UBSan too.
 *
 * A target either returns 0 or stops the process with FUZZ_CHECK(): libFuzzer counts that as
 * a crash and keeps the input; a replay fails its test.
 */
#ifndef TSRNN_FUZZ_H
#define TSRNN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points: once per process, then once per input. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails the input: prints what was expected (and the library's last message) and aborts. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                     \
    } while (0)

_Noreturn void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A private folder for this process's files, made at the first call and removed at exit. */
const char *fuzz_dir(void);

/* Writes `nbytes` of `data` to fuzz_dir()/name (replacing it) and returns the path, in a
 * static buffer overwritten by the next call. */
const char *fuzz_write(const char *name, const void *data, size_t nbytes);

/* The input as a file and its arguments: `data` up to the first FUZZ_SEPARATOR is the file;
 * each FUZZ_SEPARATOR after it starts one more argument (a NUL-terminated copy), up to
 * `capacity` of them. The file may hold any byte but the separator, an argument any but NUL.
 * Returns the number of arguments; fuzz_args_free() frees them. */
#define FUZZ_SEPARATOR 0x1E /* ASCII record separator: no text format here needs it */
size_t fuzz_split(const uint8_t *data, size_t size, size_t *file_nbytes, char **args,
                  size_t capacity);
void fuzz_args_free(char **args, size_t count);

#endif
