/* tsrnn-worker: one training process. It reads the run's INI file, applies --set overrides,
 * loads and windows the data, trains the model (src/train/) and prints what happened.
 *
 * Exit codes (include/tsrnn/core.h): 0 ok, 1 runtime failure, 2 usage/config/data error,
 * 130 interrupted (SIGINT/SIGTERM: it stops between two steps).
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/report.h"
#include "tsrnn/train.h"

#define PROGRAM "tsrnn-worker"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " PROGRAM " [OPTION]... FILE.ini\n"
            "\n"
            "Trains a Darts-style RNN/LSTM/GRU forecasting model as configured in FILE.ini.\n"
            "\n"
            "Options:\n"
            "  -s, --set section.key=value  override one config value (repeatable; wins over\n"
            "                               the file; later --set wins over earlier)\n"
            "  -r, --resume WHICH           continue a run from its checkpoint: last, best or\n"
            "                               a checkpoint file (= --set training.resume=WHICH)\n"
            "  -p, --print-config           print the fully resolved config and exit\n"
            "  -q, --quiet                  print only the final summary\n"
            "      --progress=MODE          the epoch progress bar: auto (a live bar on a\n"
            "                               terminal, else one line per epoch), bar, plain,\n"
            "                               none\n"
            "  -h, --help                   show this help and exit\n"
            "  -V, --version                show the version and exit\n"
            "\n"
            "Exit codes: 0 ok, 1 runtime failure, 2 usage, config or data error,\n"
            "130 interrupted (SIGINT/SIGTERM stop it between two training steps).\n");
}

static volatile sig_atomic_t stop_requested;

static void request_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGINT / SIGTERM stop training at the next step boundary (exit 130); a second one kills
 * at once (the default action is restored). */
static void install_stop_handlers(void)
{
    struct sigaction sa = { .sa_handler = request_stop, .sa_flags = SA_RESETHAND };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static bool parse_progress(const char *text, enum tsrnn_progress_mode *mode)
{
    static const struct {
        const char *name;
        enum tsrnn_progress_mode mode;
    } modes[] = {
        { "auto", TSRNN_PROGRESS_AUTO },
        { "bar", TSRNN_PROGRESS_BAR },
        { "plain", TSRNN_PROGRESS_PLAIN },
        { "none", TSRNN_PROGRESS_NONE },
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(text, modes[i].name) == 0) {
            *mode = modes[i].mode;
            return true;
        }
    return false;
}

static int fail(enum tsrnn_status status)
{
    fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
    return tsrnn_status_exit_code(status);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "set", required_argument, NULL, 's' },      { "resume", required_argument, NULL, 'r' },
        { "print-config", no_argument, NULL, 'p' },   { "quiet", no_argument, NULL, 'q' },
        { "progress", required_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },        { NULL, 0, NULL, 0 },
    };
    const char **overrides = calloc((size_t)argc, sizeof(*overrides));
    /* "training.resume=..." for --resume; a later --resume rewrites it, and wins. */
    static char resume_override[PATH_MAX + 32];
    size_t override_count = 0;
    int print_config = 0;
    struct tsrnn_train_options train_options = { .out = stdout, .stop_requested = &stop_requested };
    int opt;

    if (overrides == NULL) {
        fprintf(stderr, PROGRAM ": error: out of memory\n");
        return TSRNN_EXIT_RUNTIME;
    }
    while ((opt = getopt_long(argc, argv, "s:r:pqhV", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            overrides[override_count++] = optarg;
            break;
        case 'r':
            if ((size_t)snprintf(resume_override, sizeof(resume_override), "training.resume=%s",
                                 optarg) >= sizeof(resume_override)) {
                fprintf(stderr, PROGRAM ": error: --resume %s: path too long\n", optarg);
                free(overrides);
                return TSRNN_EXIT_USAGE;
            }
            overrides[override_count++] = resume_override;
            break;
        case 'p':
            print_config = 1;
            break;
        case 'q':
            train_options.quiet = true;
            break;
        case 'P':
            if (!parse_progress(optarg, &train_options.progress)) {
                fprintf(stderr,
                        PROGRAM ": error: --progress=%s: accepted: auto, bar, plain, none\n",
                        optarg);
                free(overrides);
                return TSRNN_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            free(overrides);
            return TSRNN_EXIT_OK;
        case 'V':
            printf(PROGRAM " %s\n", tsrnn_version());
            free(overrides);
            return TSRNN_EXIT_OK;
        default:
            usage(stderr);
            free(overrides);
            return TSRNN_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, PROGRAM ": error: expected one config file, got %d\n", argc - optind);
        usage(stderr);
        free(overrides);
        return TSRNN_EXIT_USAGE;
    }
    const char *ini_path = argv[optind];

    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    struct tsrnn_dataset ds = { 0 };
    struct tsrnn_sampler sampler = { 0 };
    enum tsrnn_status status = cfg ? TSRNN_OK : tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    if (status == TSRNN_OK)
        status = tsrnn_config_load(cfg, ini_path, overrides, override_count);
    if (status == TSRNN_OK && print_config) {
        printf("# tsrnn %s: resolved configuration of %s\n", tsrnn_version(), ini_path);
        status = tsrnn_config_write(cfg, stdout);
        goto done;
    }
    if (status == TSRNN_OK)
        status = tsrnn_train_check(cfg);
    if (status == TSRNN_OK)
        status = tsrnn_dataset_load(&ds, cfg);
    /* The summary reads the sampler's counts only; the trainer sets up the real shuffle. */
    struct tsrnn_shuffle summary_shuffle = { 0 };
    if (status == TSRNN_OK)
        status = tsrnn_sampler_init(&sampler, ds.train.count, (size_t)cfg->batch_size,
                                    cfg->shuffle ? &summary_shuffle : NULL, 0, 1);
    if (status == TSRNN_OK && !train_options.quiet) {
        printf(PROGRAM " %s: %s, model %s\n", tsrnn_version(), ini_path,
               tsrnn_model_kind_name(cfg->model));
        tsrnn_report_dataset(stdout, cfg, &ds, &sampler);
        fflush(stdout);
    }
    if (status == TSRNN_OK) {
        struct tsrnn_train_result result;
        install_stop_handlers();
        status = tsrnn_train(&result, cfg, &ds, &train_options);
        fflush(stdout);
    }

done:
    tsrnn_sampler_finish(&sampler);
    tsrnn_dataset_finish(&ds);
    free(cfg);
    free(overrides);
    return status == TSRNN_OK ? TSRNN_EXIT_OK : fail(status);
}
