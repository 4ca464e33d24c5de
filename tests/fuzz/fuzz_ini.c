/* Fuzz target: a run's configuration, as tsrnn-worker and tsrnn-launch load it
 * (tsrnn_config_load(): defaults, the INI file, --set overrides, validation; then
 * tsrnn_data_check_config(): what data/ makes of [data] and [covariates]).
 *
 * Input: the INI file, then optionally FUZZ_SEPARATOR and up to 8 overrides separated by it,
 * each as one argument after --set (fuzz.h). The file's folder holds s.csv and
 * data/air_passengers.csv, so that the example's [data] path and the tests' resolve.
 *
 * Checks: a refused input is TSRNN_ERR_USAGE with a message; an accepted config prints as
 * text (tsrnn_config_text(), what config.ini and every checkpoint hold) that parses again
 * and passes both checks, to a config that prints the same text. */
#include "fuzz.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tsrnn/config.h"
#include "tsrnn/data.h"

#define MAX_OVERRIDES 8

static const char series_csv[] = "Month,#Passengers\n1949-01,112\n1949-02,118\n1949-03,132\n";

static struct tsrnn_config *cfg, *again;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char data_dir[2 * PATH_MAX];
    snprintf(data_dir, sizeof(data_dir), "%s/data", fuzz_dir());
    if (mkdir(data_dir, 0700) != 0) {
        perror(data_dir);
        exit(1);
    }
    fuzz_write("s.csv", series_csv, sizeof(series_csv) - 1);
    fuzz_write("data/air_passengers.csv", series_csv, sizeof(series_csv) - 1);
    /* Large structs (paths, column names, origins): once, not on the stack of every run. */
    cfg = malloc(sizeof(*cfg));
    again = malloc(sizeof(*again));
    if (cfg == NULL || again == NULL)
        exit(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *overrides[MAX_OVERRIDES];
    size_t file_nbytes;
    size_t override_count = fuzz_split(data, size, &file_nbytes, overrides, MAX_OVERRIDES);
    const char *path = fuzz_write("run.ini", data, file_nbytes);

    enum tsrnn_status status =
        tsrnn_config_load(cfg, path, (const char *const *)overrides, override_count);
    if (status == TSRNN_OK)
        status = tsrnn_data_check_config(cfg);
    if (status != TSRNN_OK) {
        FUZZ_CHECK(status == TSRNN_ERR_USAGE, "status %s", tsrnn_status_name(status));
        FUZZ_CHECK(tsrnn_last_error()[0] != '\0', "a refusal without a message");
        fuzz_args_free(overrides, override_count);
        return 0;
    }

    char *text = tsrnn_config_text(cfg);
    FUZZ_CHECK(text != NULL, "tsrnn_config_text() failed");
    status = tsrnn_config_init(again);
    if (status == TSRNN_OK)
        status = tsrnn_config_parse_text(again, text, "the printed config");
    if (status == TSRNN_OK)
        status = tsrnn_config_validate(again);
    if (status == TSRNN_OK)
        status = tsrnn_data_check_config(again);
    FUZZ_CHECK(status == TSRNN_OK, "the printed config is refused:\n%s", text);
    char *text_again = tsrnn_config_text(again);
    FUZZ_CHECK(text_again != NULL, "tsrnn_config_text() failed");
    FUZZ_CHECK(strcmp(text, text_again) == 0, "printed:\n%s\nparsed and printed again:\n%s", text,
               text_again);
    free(text_again);
    free(text);
    fuzz_args_free(overrides, override_count);
    return 0;
}
