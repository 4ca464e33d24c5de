/* tsrnn-config-doc: writes docs/configuration.md, the reference of every config key, from the
 * schema in src/config/config.c (reference.c).
 *
 *     tsrnn-config-doc            the page on standard output
 *     tsrnn-config-doc FILE.md    the page into FILE.md, whole or not at all
 *
 * `ninja -C build config-doc` runs it on the source tree's docs/configuration.md, and the
 * config_doc test fails when the committed page differs from what it writes.
 *
 * Why tools/: it is a program for whoever edits tsrnn, built but never installed, so it stays
 * out of src/ (whose folders are the system a user runs) and out of scripts/ (scripts only);
 * like the programs in src/, its folder holds the program alone.
 *
 * Exit codes: 0 ok, 1 the page could not be written, 2 usage or a schema line without its
 * documentation.
 */
#include <stdio.h>
#include <string.h>

#include "reference.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/core.h"

#define PROGRAM "tsrnn-config-doc"

static enum tsrnn_status write_file(const char *path)
{
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    enum tsrnn_status status = config_doc_write(af.file);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
        fprintf(argc > 2 ? stderr : stdout,
                "Usage: " PROGRAM " [FILE.md]\n"
                "Writes the configuration reference (docs/configuration.md) from the config\n"
                "schema, into FILE.md or on standard output.\n");
        return argc > 2 ? TSRNN_EXIT_USAGE : TSRNN_EXIT_OK;
    }
    enum tsrnn_status status = argc == 2 ? write_file(argv[1]) : config_doc_write(stdout);
    if (status != TSRNN_OK) {
        fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
        return tsrnn_status_exit_code(status);
    }
    return TSRNN_EXIT_OK;
}
