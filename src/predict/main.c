/* tsrnn-predict: forecasts with a trained model, as Darts' RNNModel.load_from_checkpoint(...)
 * followed by predict(n) would, or backtests it, as historical_forecasts(retrain=False) and
 * backtest() would.
 *
 * The checkpoint carries everything needed: the weights, the model's dimensions, the scaler
 * fitted on the training part, the series' columns and time format, and the run's config
 * (which names the training series). The forecast starts after the training part of each
 * series the model was trained on (where the validation part gives actual values to score
 * against), or of the one --id names, or after the end of a series given with --series.
 * A backtest forecasts from every --stride-th point of each series from --start on, each
 * forecast --horizon steps inside the series. A model with a likelihood forecasts sample
 * paths (--num-samples), drawn as Darts draws them right after fit(), and writes their
 * quantiles (--quantiles).
 *
 * Exit codes: 0 ok, 1 runtime failure (a file could not be written), 2 usage, bad
 * checkpoint or bad series.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/compute.h"
#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/forecast.h"
#include "tsrnn/fs.h"
#include "tsrnn/memory.h"
#include "tsrnn/model.h"
#include "tsrnn/plot.h"

#define PROGRAM "tsrnn-predict"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " PROGRAM " --run DIR [--checkpoint best|last|FILE] [--id ID] [--series CSV]\n"
            "                     --n N [--out FILE.csv] [--plot FILE.png] [--size WxH]\n"
            "       " PROGRAM " --run DIR [--checkpoint ...] [--id ID] [--series CSV] --backtest\n"
            "                     --horizon H [--start WHEN] [--stride S] [--last-points-only]\n"
            "                     [--out DIR] [--plot FILE.png] [--size WxH]\n"
            "\n"
            "Forecasts N steps with a model trained by tsrnn-worker / tsrnn-launch, or\n"
            "backtests it: Darts' historical_forecasts(retrain=False) and backtest().\n"
            "\n"
            "Options:\n"
            "  -r, --run DIR          the run folder ({work_dir}/{model_name})\n"
            "  -c, --checkpoint WHICH best (default), last, or a checkpoint file (then --run\n"
            "                         is not needed)\n"
            "  -i, --id ID            of a model trained on several series: forecast only the\n"
            "                         series ID (default: every series, one CSV with an id\n"
            "                         column first)\n"
            "  -s, --series CSV       forecast after the end of this series (same columns as\n"
            "                         the training data; with several series, the continuation\n"
            "                         of the one --id names); default: after the training part\n"
            "                         of each training series, scored against the values after\n"
            "                         it\n"
            "  -n, --n N              steps to forecast (N >= 1)\n"
            "  -o, --out FILE         write the forecast CSV there (default: standard output);\n"
            "                         with --backtest the folder of its files (default: --run)\n"
            "  -p, --plot FILE        draw history, actual values and forecast into a PNG\n"
            "                         (--backtest: default DIR/backtest.png)\n"
            "  -b, --backtest         forecast from every stride-th point from --start on\n"
            "      --horizon H        steps of each backtest forecast (Darts' forecast_horizon)\n"
            "      --start WHEN       the first forecast's first point: a date of the series,\n"
            "                         an integer (position; an integer index's value) or a\n"
            "                         fraction in [0, 1] (default: after the training part)\n"
            "      --stride S         points between two forecasts' starts (default 1)\n"
            "      --last-points-only keep and score the last point of each forecast\n"
            "      --size WxH         the picture's size in pixels (default 1000x500)\n"
            "      --accelerator WHICH cpu (default: one window at a time is the CPU's work) or\n"
            "                           gpu (the CUDA backend; exit 2 where there is none)\n"
            "\n"
            "A model with a likelihood ([model] likelihood):\n"
            "      --num-samples N    sample paths per forecast (default: the run's [forecast]\n"
            "                         num_samples); the CSV holds their quantiles, the picture\n"
            "                         their median and 5-95%% band\n"
            "      --quantiles LIST   the CSV's quantiles, e.g. 0.1,0.5,0.9 (default: the run's\n"
            "                         [forecast] quantiles)\n"
            "      --samples FILE     also write every path there (<component>_s0, ...)\n"
            "      --likelihood-parameters  the distribution's parameters of the first step\n"
            "                         instead (--n 1)\n"
            "      --random-state R   draw as Darts' predict(random_state=R) (default: as the\n"
            "                         first predict() after fit(), from the run's random_state)\n"
            "  -h, --help             show this help and exit\n"
            "  -V, --version          show the version and exit\n"
            "\n"
            "Exit codes: 0 ok, 1 runtime failure, 2 usage, checkpoint or data error.\n");
}

struct options {
    const char *run_dir;
    const char *checkpoint;
    const char *series_path;
    const char *id; /* --id: one series of several; NULL: all */
    const char *out_path;
    const char *plot_path;
    bool checkpoint_given; /* --checkpoint on the command line, not the default "best" */
    long long n;
    int width, height;
    bool gpu; /* --accelerator gpu */
    bool backtest;
    const char *start; /* --start, or NULL */
    long long horizon, stride;
    bool last_points_only;
    const char *num_samples;  /* --num-samples, or NULL: the run's */
    const char *quantiles;    /* --quantiles, or NULL: the run's */
    const char *samples_path; /* --samples */
    bool likelihood_parameters;
    long long random_state; /* --random-state, or -1 */
};

/* Prints "error: <fmt with arg>" (through tsrnn_error(): the argument shown escaped, as every
 * message is) and returns the usage exit code. */
static int usage_error(const char *fmt, const char *arg)
{
    tsrnn_error(TSRNN_ERR_USAGE, fmt, arg);
    fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
    return TSRNN_EXIT_USAGE;
}

/* The options of a backtest (-1 to go on, else the exit code). */
static int check_backtest_options(struct options *o)
{
    if (o->n >= 0)
        return usage_error("--n belongs to a forecast%s; a backtest forecasts --horizon steps "
                           "from every start: give --horizon H instead",
                           "");
    if (o->horizon < 0)
        return usage_error("%s--backtest needs --horizon H, the steps of each forecast "
                           "(Darts' forecast_horizon), e.g. --horizon 12",
                           "");
    if (o->stride < 0)
        o->stride = 1;
    if (o->out_path == NULL && o->run_dir == NULL)
        return usage_error("%s--backtest writes its files into the run folder: give --run DIR "
                           "or --out DIR",
                           "");
    return -1;
}

/* The options of a forecast (-1 to go on, else the exit code). */
static int check_forecast_options(const struct options *o)
{
    const char *extra = o->horizon >= 0       ? "--horizon"
                        : o->stride >= 0      ? "--stride"
                        : o->start != NULL    ? "--start"
                        : o->last_points_only ? "--last-points-only"
                                              : NULL;
    if (extra != NULL)
        return usage_error("%s belongs to a backtest: add --backtest", extra);
    if (o->n < 0)
        return usage_error("%s--n N is required", "");
    return -1;
}

/* Returns -1 to go on, else the exit code. */
static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option long_options[] = {
        { "run", required_argument, NULL, 'r' },
        { "checkpoint", required_argument, NULL, 'c' },
        { "series", required_argument, NULL, 's' },
        { "id", required_argument, NULL, 'i' },
        { "n", required_argument, NULL, 'n' },
        { "out", required_argument, NULL, 'o' },
        { "plot", required_argument, NULL, 'p' },
        { "size", required_argument, NULL, 'S' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "accelerator", required_argument, NULL, 'A' },
        { "backtest", no_argument, NULL, 'b' },
        { "horizon", required_argument, NULL, 'H' },
        { "start", required_argument, NULL, 'T' },
        { "stride", required_argument, NULL, 'R' },
        { "last-points-only", no_argument, NULL, 'L' },
        { "num-samples", required_argument, NULL, 'N' },
        { "quantiles", required_argument, NULL, 'Q' },
        { "samples", required_argument, NULL, 'M' },
        { "likelihood-parameters", no_argument, NULL, 'P' },
        { "random-state", required_argument, NULL, 'X' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    int64_t n;
    char tail;

    *o = (struct options){ .checkpoint = "best",
                           .n = -1,
                           .width = 1000,
                           .height = 500,
                           .horizon = -1,
                           .stride = -1,
                           .random_state = -1 };
    while ((opt = getopt_long(argc, argv, "r:c:s:i:n:o:p:bhV", long_options, NULL)) != -1) {
        switch (opt) {
        case 'r':
            o->run_dir = optarg;
            break;
        case 'c':
            o->checkpoint = optarg;
            o->checkpoint_given = true;
            break;
        case 's':
            o->series_path = optarg;
            break;
        case 'i':
            o->id = optarg;
            break;
        case 'n':
            if (!tsrnn_parse_int64(optarg, &n) || n < 1 || n > 100000000)
                return usage_error("--n %s: accepted: an integer from 1 to 100000000", optarg);
            o->n = n;
            break;
        case 'o':
            o->out_path = optarg;
            break;
        case 'p':
            o->plot_path = optarg;
            break;
        case 'S':
            if (sscanf(optarg, "%dx%d%c", &o->width, &o->height, &tail) != 2 ||
                o->width < TSRNN_PLOT_WIDTH_MIN || o->height < TSRNN_PLOT_HEIGHT_MIN ||
                o->width > TSRNN_PLOT_SIZE_MAX || o->height > TSRNN_PLOT_SIZE_MAX)
                return usage_error("--size %s: accepted: WIDTHxHEIGHT in pixels from 200x150 to "
                                   "8000x8000, e.g. 1000x500",
                                   optarg);
            break;
        case 'b':
            o->backtest = true;
            break;
        case 'H':
        case 'R':
            if (!tsrnn_parse_int64(optarg, &n) || n < 1 || n > 100000000)
                return usage_error(opt == 'H' ? "--horizon %s: accepted: an integer from 1 to "
                                                "100000000"
                                              : "--stride %s: accepted: an integer from 1 to "
                                                "100000000",
                                   optarg);
            *(opt == 'H' ? &o->horizon : &o->stride) = n;
            break;
        case 'T':
            o->start = optarg;
            break;
        case 'L':
            o->last_points_only = true;
            break;
        case 'N':
            o->num_samples = optarg;
            break;
        case 'Q':
            o->quantiles = optarg;
            break;
        case 'M':
            o->samples_path = optarg;
            break;
        case 'P':
            o->likelihood_parameters = true;
            break;
        case 'X':
            if (!tsrnn_parse_int64(optarg, &n) || n < 0 || n > 4294967295LL)
                return usage_error("--random-state %s: accepted: an integer from 0 to "
                                   "4294967295 (Darts' random_state)",
                                   optarg);
            o->random_state = n;
            break;
        case 'A':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "gpu") != 0)
                return usage_error("--accelerator %s: accepted: cpu or gpu", optarg);
            o->gpu = strcmp(optarg, "gpu") == 0;
            break;
        case 'h':
            usage(stdout);
            return TSRNN_EXIT_OK;
        case 'V':
            printf(PROGRAM " %s\n", tsrnn_version());
            return TSRNN_EXIT_OK;
        default:
            usage(stderr);
            return TSRNN_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    int code = o->backtest ? check_backtest_options(o) : check_forecast_options(o);
    if (code >= 0)
        return code;
    char why[1024], message[1200];
    if (o->plot_path != NULL && !tsrnn_plot_usable(why, sizeof(why))) {
        snprintf(message, sizeof(message), "--plot %s: the picture cannot be drawn here: %s",
                 o->plot_path, why);
        return usage_error("%s", message);
    }
    bool named = strcmp(o->checkpoint, "best") == 0 || strcmp(o->checkpoint, "last") == 0;
    if (named && o->run_dir == NULL)
        return usage_error("--run DIR is required with --checkpoint %s", o->checkpoint);
    return -1;
}

/* A series read for a forecast fits the model: the frequency it learnt (another one's stamps
 * would be wrong, and its steps mean something else) and its columns. */
static enum tsrnn_status check_series(const struct tsrnn_series *s,
                                      const struct tsrnn_checkpoint *ck,
                                      const struct tsrnn_freq *freq, const char *where)
{
    const struct tsrnn_series_info *info = &ck->series;
    if (freq->kind != TSRNN_FREQ_NONE && !tsrnn_freq_equal(freq, &s->freq)) {
        char have[TSRNN_FREQ_NAME_MAX], want[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&s->freq, have, sizeof(have));
        tsrnn_freq_name(freq, want, sizeof(want));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the series' frequency is %s, but the model was trained on a "
                           "series of freq %s; accepted: a series of freq %s",
                           where, have, want, want);
    }
    if (s->component_count != info->component_count)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s has %zu value columns; the model forecasts %zu (%s%s)", where,
                           s->component_count, info->component_count, info->component_names[0],
                           info->component_count > 1 ? ", ..." : "");
    for (size_t c = 0; c < info->component_count; c++)
        if (strcmp(s->component_names[c], info->component_names[c]) != 0)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: value column %zu is '%s'; the model was trained on '%s'", where,
                               c + 1, s->component_names[c], info->component_names[c]);
    return TSRNN_OK;
}

/* Which of the checkpoint's series to forecast: all ([first, end) = every one), or --id's. */
static enum tsrnn_status select_series(const struct tsrnn_checkpoint *ck, const struct options *o,
                                       size_t *first, size_t *end)
{
    bool named = ck->series_list[0].id[0] != '\0';
    *first = 0;
    *end = ck->series_count;
    if (o->id == NULL && o->series_path != NULL && named)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "--series %s: the model was trained on %zu series; name the one this "
                           "file continues with --id (its scaler is that series')",
                           o->series_path, ck->series_count);
    if (o->id == NULL)
        return TSRNN_OK;
    if (!named)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "--id %s: the model was trained on one series without an id; leave "
                           "--id out",
                           o->id);
    for (size_t k = 0; k < ck->series_count; k++)
        if (strcmp(ck->series_list[k].id, o->id) == 0) {
            *first = k;
            *end = k + 1;
            return TSRNN_OK;
        }
    char known[512];
    size_t used = 0;
    known[0] = '\0';
    for (size_t k = 0; k < ck->series_count && k < 8; k++)
        used += (size_t)snprintf(known + used, sizeof(known) - used, "%s'%s'", k ? ", " : "",
                                 ck->series_list[k].id);
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "--id %s: the model was trained on no series of that id; accepted: one of "
                       "its %zu series (%s%s)",
                       o->id, ck->series_count, known, ck->series_count > 8 ? ", ..." : "");
}

/* The checkpoint's series `cs` as a forecast source: `series` and its history's end, with
 * the scalers and covariates the model was trained with. */
static struct tsrnn_forecast_source source_of(const struct tsrnn_checkpoint *ck,
                                              const struct tsrnn_checkpoint_series *cs,
                                              const struct tsrnn_series *series, size_t origin)
{
    return (struct tsrnn_forecast_source){
        .series = series,
        .scaler = &cs->scaler,
        .origin = origin,
        .id = cs->id[0] != '\0' ? cs->id : NULL,
        .covariates = &ck->covariates,
        .cov_scaler = &cs->cov_scaler,
    };
}

/* The run folder a checkpoint belongs to: --run DIR, or the folder holding the checkpoint's
 * checkpoints/ folder (the checkpoint's own folder when it lies elsewhere). */
static void run_folder_of(const struct options *o, const char *checkpoint, char *out,
                          size_t capacity)
{
    if (o->run_dir != NULL) {
        snprintf(out, capacity, "%s", o->run_dir);
        return;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", checkpoint);
    char *slash = strrchr(dir, '/');
    if (slash == NULL) {
        snprintf(out, capacity, ".");
        return;
    }
    *slash = '\0';
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (strcmp(base, "checkpoints") == 0 && base == dir)
        snprintf(out, capacity, ".");
    else if (strcmp(base, "checkpoints") == 0)
        snprintf(out, capacity, "%.*s", base - dir > 1 ? (int)(base - dir - 1) : 1, dir);
    else
        snprintf(out, capacity, "%s", dir[0] != '\0' ? dir : "/");
}

/* Whether `path` (a file) lies inside the folder `dir`, both with their links resolved; "/"
 * holds everything and is no run folder. */
static bool lies_inside(const char *path, const char *dir)
{
    char real_path[PATH_MAX], real_dir[PATH_MAX];
    if (realpath(path, real_path) == NULL || realpath(dir, real_dir) == NULL)
        return false;
    size_t n = strlen(real_dir);
    return n > 1 && strncmp(real_path, real_dir, n) == 0 && real_path[n] == '/';
}

/* A checkpoint names the files it was trained on ([data] path). They are read only where the
 * user asked for that run's data: the run folder's own config.ini (written by the run that
 * wrote the checkpoint) names the same files, or they lie inside the run folder. A file a
 * checkpoint alone names (/etc/shadow in a crafted one) is not opened; the message says so
 * and asks for --series. */
static enum tsrnn_status check_stored_data(const struct tsrnn_checkpoint *ck,
                                           const struct options *o, const char *checkpoint)
{
    const struct tsrnn_config *cfg = &ck->config;
    char run_dir[PATH_MAX], ini[PATH_MAX + 16];
    run_folder_of(o, checkpoint, run_dir, sizeof(run_dir));
    snprintf(ini, sizeof(ini), "%s/config.ini", run_dir);
    struct tsrnn_config *own = calloc(1, sizeof(*own));
    bool named = false;
    if (own != NULL && tsrnn_config_init(own) == TSRNN_OK &&
        tsrnn_config_parse_file(own, ini) == TSRNN_OK)
        named = strcmp(own->data_path, cfg->data_path) == 0;
    free(own);
    tsrnn_error_clear();
    if (named)
        return TSRNN_OK;
    struct tsrnn_data_paths paths;
    bool inside = tsrnn_data_paths_expand(&paths, cfg->data_path, "the checkpoint") == TSRNN_OK;
    for (size_t i = 0; inside && i < paths.count; i++)
        inside = lies_inside(paths.paths[i], run_dir);
    if (paths.paths != NULL)
        tsrnn_data_paths_finish(&paths);
    tsrnn_error_clear();
    if (inside)
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: the checkpoint names its training data %s, which the run folder's "
                       "config.ini (%s) does not name and which does not lie inside the run "
                       "folder %s; tsrnn-predict reads the data a checkpoint names only then. "
                       "Pass the series to forecast from with --series CSV",
                       tsrnn_display_path(checkpoint), cfg->data_path, tsrnn_display_path(ini),
                       tsrnn_display_path(run_dir));
}

/* The checkpoint's training series, read as training read them. The files come from the
 * checkpoint, so nothing of what they hold is shown when they are not the CSV the model was
 * trained on (a message would echo a line of whatever file the path names): only whether a
 * file can be opened, and a hint to read it with --series, whose messages show everything. */
static enum tsrnn_status load_stored_data(struct tsrnn_dataset *dataset,
                                          const struct tsrnn_checkpoint *ck)
{
    const struct tsrnn_config *cfg = &ck->config;
    struct tsrnn_data_paths paths;
    TSRNN_TRY(tsrnn_data_paths_expand(&paths, cfg->data_path, "the checkpoint's [data] path"));
    enum tsrnn_status status = TSRNN_OK;
    for (size_t i = 0; i < paths.count && status == TSRNN_OK; i++) {
        int fd;
        status = tsrnn_open_regular(paths.paths[i], O_RDONLY, "the checkpoint's training data",
                                    TSRNN_ERR_USAGE, &fd);
        if (status == TSRNN_OK)
            close(fd);
    }
    tsrnn_data_paths_finish(&paths);
    if (status == TSRNN_OK) {
        status = tsrnn_dataset_load(dataset, cfg);
        if (status != TSRNN_OK)
            tsrnn_error(status,
                        "%s, the checkpoint's training data, cannot be read as the series the "
                        "model was trained on (time column '%s', value columns from '%s'); what "
                        "it holds is not shown, as the checkpoint named it",
                        tsrnn_display_path(cfg->data_path), cfg->time_col,
                        ck->series.component_names[0]);
    }
    if (status != TSRNN_OK)
        tsrnn_error_append(status, "; pass the series to forecast from with --series CSV (its "
                                   "messages show what is wrong)");
    return status;
}

/* The series to forecast, each with where its history ends and the checkpoint's scaler for
 * it: --series whole (one series), or the training series of the checkpoint's config split as
 * in training. sources[] has room for the checkpoint's series count. */
static enum tsrnn_status load_sources(struct tsrnn_dataset *dataset, struct tsrnn_series *own,
                                      struct tsrnn_forecast_source *sources, size_t *count,
                                      const struct tsrnn_checkpoint *ck, const struct options *o,
                                      const char *checkpoint)
{
    const struct tsrnn_config *cfg = &ck->config;
    size_t first, end;
    TSRNN_TRY(select_series(ck, o, &first, &end));
    bool named = ck->series_list[0].id[0] != '\0';
    *count = 0;
    if (o->series_path != NULL) {
        /* Read as the training series was read ([data] freq, fill_missing_*), and at the
         * model's frequency when the series is too short to show its own. */
        const struct tsrnn_checkpoint_series *cs = &ck->series_list[first];
        struct tsrnn_series_options options;
        TSRNN_TRY(tsrnn_series_options_from_config(&options, cfg));
        options.short_series_freq = cs->freq;
        const struct tsrnn_covariates *cov = &ck->covariates;
        if (cov->column_count > 0)
            TSRNN_TRY(tsrnn_series_load_csv_covariates(
                own, o->series_path, cfg->time_col, (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                cfg->value_col_count, (const char(*)[TSRNN_NAME_MAX])cov->column_names,
                cov->column_count, &options));
        else
            TSRNN_TRY(tsrnn_series_load_csv(own, o->series_path, cfg->time_col,
                                            (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                                            cfg->value_col_count, &options));
        TSRNN_TRY(check_series(own, ck, &cs->freq, tsrnn_display_path(o->series_path)));
        sources[(*count)++] = source_of(ck, cs, own, own->length);
        return TSRNN_OK;
    }
    TSRNN_TRY(check_stored_data(ck, o, checkpoint));
    TSRNN_TRY(load_stored_data(dataset, ck));
    for (size_t k = first; k < end; k++) {
        const struct tsrnn_checkpoint_series *cs = &ck->series_list[k];
        const struct tsrnn_dataset_series *item = NULL;
        for (size_t i = 0; i < dataset->series_count && item == NULL; i++)
            if (strcmp(dataset->items[i].id, cs->id) == 0)
                item = &dataset->items[i];
        if (item == NULL)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: the model was trained on series '%s', which [data] path no "
                               "longer holds; pass the series to forecast from with --id %s "
                               "--series CSV",
                               tsrnn_display_path(cfg->data_path), cs->id, cs->id);
        char where[PATH_MAX + TSRNN_NAME_MAX + 16];
        snprintf(where, sizeof(where), "%s%s%s%s", tsrnn_display_path(cfg->data_path),
                 named ? " (series '" : "", cs->id, named ? "')" : "");
        TSRNN_TRY(check_series(&item->series, ck, &cs->freq, where));
        if (item->train_length != cs->train_length)
            tsrnn_warn("%s now has %zu training points, the model was trained on %zu", where,
                       item->train_length, cs->train_length);
        sources[(*count)++] = source_of(ck, cs, &item->series, item->train_length);
    }
    return TSRNN_OK;
}

/* "Forecast 24 steps, 1959-02 .. 1961-01" and the scores against the actual values it has,
 * led by the series' id when it has one. */
static void print_scores(const struct tsrnn_forecast *f, const struct tsrnn_series *s,
                         const char *id)
{
    char first[64], last[64];
    tsrnn_time_format(f->times[0], s->time_unit, first, sizeof(first));
    tsrnn_time_format(f->times[f->length - 1], s->time_unit, last, sizeof(last));
    if (id != NULL)
        fprintf(stderr, "Series %s: ", id);
    fprintf(stderr, "Forecast %zu steps, %s .. %s%s", f->length, first, last,
            id != NULL && f->actual_count > 0 ? "; " : "\n");
    if (f->actual_count == 0)
        return;
    fprintf(stderr, "%sgainst the %zu actual values:", id != NULL ? "a" : "A", f->actual_count);
    if (!isnan(f->mape))
        fprintf(stderr, " MAPE %.2f%%", f->mape);
    fprintf(stderr, " MAE %.6g RMSE %.6g\n", f->mae, f->rmse);
}

/* Forecasts each source to print its scores (and, with several scored series, their mean as
 * Darts' series_reduction=np.mean gives it). */
static enum tsrnn_status report_scores(struct tsrnn_model *model, const struct tsrnn_checkpoint *ck,
                                       const struct tsrnn_forecast_source *sources, size_t count,
                                       size_t n)
{
    struct tsrnn_forecast_scores *each = calloc(count, sizeof(*each)), mean;
    size_t scored = 0;
    enum tsrnn_status status = each ? TSRNN_OK : tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < count && status == TSRNN_OK; i++) {
        struct tsrnn_forecast f;
        status = tsrnn_forecast_run(&f, model, &sources[i], (size_t)ck->input_chunk_length, n);
        if (status != TSRNN_OK)
            break;
        print_scores(&f, sources[i].series, sources[i].id);
        if (f.actual_count > 0)
            each[scored++] = (struct tsrnn_forecast_scores){ f.mape, f.mae, f.rmse };
        tsrnn_forecast_finish(&f);
    }
    if (status == TSRNN_OK && scored > 1) {
        tsrnn_forecast_scores_mean(&mean, each, scored);
        fprintf(stderr, "Mean over the %zu series with actual values:", scored);
        if (!isnan(mean.mape))
            fprintf(stderr, " MAPE %.2f%%", mean.mape);
        fprintf(stderr, " MAE %.6g RMSE %.6g\n", mean.mae, mean.rmse);
    }
    free(each);
    return status;
}

static void print_loaded(const struct tsrnn_checkpoint *ck, const char *path)
{
    if (ck->state.global_step == 0)
        fprintf(stderr, "Loaded %s (%s, untrained: saved by a max_steps = 0 run)\n",
                tsrnn_display_path(path), tsrnn_model_kind_name(ck->dims.kind));
    else
        fprintf(stderr, "Loaded %s (%s, epoch %lld, %s %.6g)\n", tsrnn_display_path(path),
                tsrnn_model_kind_name(ck->dims.kind), (long long)ck->state.epoch, ck->state.monitor,
                ck->state.monitor_value);
}

/* "<model_name> <kind>[, series <id>]": the pictures' title. */
static void plot_title(const struct tsrnn_checkpoint *ck, const char *id, char *out,
                       size_t capacity)
{
    snprintf(out, capacity, "%s %s%s%s", ck->config.model_name,
             tsrnn_model_kind_name(ck->dims.kind), id ? ", series " : "", id ? id : "");
}

/* The id column's name in the files of several series. */
static const char *id_name(const struct tsrnn_checkpoint *ck)
{
    return ck->config.id_col[0] != '\0' ? ck->config.id_col : "series";
}

/* The forecast options of a model with a likelihood: the run's [forecast] keys (with the
 * command line's over them, applied to ck->config by apply_sampling_options), drawing as
 * Darts' first predict() after fit() does (torch seed draw `draw`: 5 for predict(), 4 for
 * historical_forecasts()), or as predict(random_state=R). */
static void sampling_options(struct tsrnn_forecast_options *opt, const struct options *o,
                             const struct tsrnn_checkpoint *ck, unsigned draw)
{
    uint32_t seed = o->random_state >= 0
                        ? tsrnn_darts_seed((uint32_t)o->random_state, 1)
                        : tsrnn_darts_seed((uint32_t)ck->config.random_state, draw);
    tsrnn_forecast_options_from_config(opt, &ck->config, seed, o->likelihood_parameters);
}

/* "MQL 0.05: ..., 5-95% interval: coverage (MIC) ..., width (MIW) ..." after `lead`. */
static void print_quantile_scores(const char *lead, const struct tsrnn_quantile_scores *q)
{
    fprintf(stderr, "%sMQL", lead);
    for (size_t k = 0; k < q->quantile_count; k++)
        fprintf(stderr, "%s %g: %.6g", k ? "," : "", q->quantiles[k], q->mql[k]);
    fprintf(stderr, "; %g-%g%% interval: coverage (MIC) %.6g, width (MIW) %.6g\n", 100 * q->low,
            100 * q->high, q->mic, q->miw);
}

/* A model with a likelihood: every source's paths in one Darts predict() call, their scores
 * (the median's, the samples' quantile metrics), the quantiles' CSV (or the parameters'), the
 * paths with --samples, the picture of the first. */
static enum tsrnn_status forecast_sampled(const struct options *o,
                                          const struct tsrnn_checkpoint *ck, const char *path,
                                          struct tsrnn_model *model,
                                          const struct tsrnn_forecast_source *sources, size_t count)
{
    struct tsrnn_forecast_options opt;
    sampling_options(&opt, o, ck, TSRNN_DARTS_PREDICT_DRAW);
    struct tsrnn_forecast *f = calloc(count, sizeof(*f));
    if (f == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    enum tsrnn_status status = tsrnn_forecast_predict(
        f, model, sources, count, (size_t)ck->input_chunk_length, (size_t)o->n, NULL, &opt);
    if (status != TSRNN_OK) {
        free(f);
        return status;
    }
    print_loaded(ck, path);
    fprintf(stderr, "%zu sample path%s per forecast (%s)\n", f[0].sample_count,
            f[0].sample_count == 1 ? "" : "s",
            tsrnn_likelihood_darts_class(model->likelihood.kind));
    for (size_t i = 0; i < count && f[0].param_count == 0; i++) {
        print_scores(&f[i], sources[i].series, sources[i].id);
        if (f[i].has_quantile_scores)
            print_quantile_scores(sources[i].id != NULL ? "  " : "", &f[i].quantile_scores);
    }
    FILE *out = stdout;
    struct tsrnn_atomic_file af;
    if (o->out_path != NULL && (status = tsrnn_atomic_file_open(&af, o->out_path)) == TSRNN_OK)
        out = af.file;
    if (status == TSRNN_OK)
        status =
            tsrnn_forecast_write_set(f, sources, count, id_name(ck), &model->likelihood, &opt, out);
    if (o->out_path != NULL && out != stdout)
        status = status == TSRNN_OK ? tsrnn_atomic_file_commit(&af)
                                    : (tsrnn_atomic_file_abort(&af), status);
    if (status == TSRNN_OK && o->samples_path != NULL) {
        if (f[0].sample_count < 2) {
            status = tsrnn_error(TSRNN_ERR_USAGE,
                                 "--samples %s: a forecast of %zu path has no samples to write; "
                                 "accepted with --num-samples 2 or more",
                                 o->samples_path, f[0].sample_count);
        } else if ((status = tsrnn_atomic_file_open(&af, o->samples_path)) == TSRNN_OK) {
            status = tsrnn_forecast_write_samples(f, sources, count, id_name(ck), af.file);
            status = status == TSRNN_OK ? tsrnn_atomic_file_commit(&af)
                                        : (tsrnn_atomic_file_abort(&af), status);
        }
    }
    if (status == TSRNN_OK && o->plot_path != NULL && f[0].param_count > 0)
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "--plot %s: a forecast of the likelihood's parameters has no "
                             "picture; leave out --likelihood-parameters or --plot",
                             o->plot_path);
    if (status == TSRNN_OK && o->plot_path != NULL) {
        char title[3 * TSRNN_NAME_MAX + 32];
        plot_title(ck, sources[0].id, title, sizeof(title));
        status =
            tsrnn_forecast_plot(&f[0], sources[0].series, title, o->width, o->height, o->plot_path);
    }
    for (size_t i = 0; i < count; i++)
        tsrnn_forecast_finish(&f[i]);
    free(f);
    return status;
}

static enum tsrnn_status forecast(const struct options *o, const struct tsrnn_checkpoint *ck,
                                  const char *path, struct tsrnn_model *model,
                                  const struct tsrnn_forecast_source *sources, size_t count)
{
    if (model->likelihood.kind != TSRNN_LIKELIHOOD_NONE)
        return forecast_sampled(o, ck, path, model, sources, count);
    size_t icl = (size_t)ck->input_chunk_length;
    struct tsrnn_forecast f;
    /* The first forecast before anything is printed: one that cannot be made is the error
     * alone. */
    TSRNN_TRY(tsrnn_forecast_run(&f, model, &sources[0], icl, (size_t)o->n));
    print_loaded(ck, path);
    enum tsrnn_status status = report_scores(model, ck, sources, count, (size_t)o->n);
    if (status == TSRNN_OK)
        status = o->out_path ? tsrnn_forecast_save_all(model, sources, count, icl, (size_t)o->n,
                                                       id_name(ck), o->out_path)
                             : tsrnn_forecast_write_all(model, sources, count, icl, (size_t)o->n,
                                                        id_name(ck), stdout);
    if (status == TSRNN_OK && o->plot_path != NULL) {
        char title[3 * TSRNN_NAME_MAX + 32];
        plot_title(ck, sources[0].id, title, sizeof(title));
        status =
            tsrnn_forecast_plot(&f, sources[0].series, title, o->width, o->height, o->plot_path);
    }
    tsrnn_forecast_finish(&f);
    return status;
}

/* Where each series' first backtest forecast starts, and how many forecasts a batch holds. */
static enum tsrnn_status backtest_plan(const struct options *o, const struct tsrnn_checkpoint *ck,
                                       const struct tsrnn_forecast_source *sources, size_t count,
                                       size_t *firsts, size_t *batch)
{
    size_t most = 1;
    for (size_t i = 0; i < count; i++) {
        const struct tsrnn_series *s = sources[i].series;
        enum tsrnn_status status =
            tsrnn_backtest_first(s, o->start, sources[i].origin,
                                 o->series_path ? "the end of the series (no --start)"
                                                : "the validation part's start (no --start)",
                                 (size_t)ck->input_chunk_length, (size_t)o->horizon, &firsts[i]);
        if (status != TSRNN_OK && o->start == NULL)
            tsrnn_error_append(status, "; choose the first forecast's start with --start");
        if (status != TSRNN_OK)
            return tsrnn_forecast_error_series(status, sources[i].id);
        size_t forecasts = (s->length - (size_t)o->horizon - firsts[i]) / (size_t)o->stride + 1;
        most = forecasts > most ? forecasts : most;
    }
    /* As many windows per batch as training took (of training_length >= input_chunk_length
     * steps, so the workspace fits where training's did), as Darts predicts with the
     * model's batch_size. */
    size_t batch_size = ck->config.batch_size > 0 ? (size_t)ck->config.batch_size : 1;
    *batch = most < batch_size ? most : batch_size;
    return TSRNN_OK;
}

/* A score as the CSVs write it. */
static void print_score(FILE *out, const char *name, double value)
{
    if (isnan(value))
        fprintf(out, " %s nan", name);
    else
        fprintf(out, " %s %.9g", name, value);
}

/* Darts' backtest() value: "backtest[ ID]: MAPE x MAE y RMSE z" on standard output. */
static void print_backtest(const char *id, const struct tsrnn_forecast_scores *s)
{
    printf("backtest%s%s:", id ? " " : "", id ? id : "");
    print_score(stdout, "MAPE", s->mape);
    print_score(stdout, "MAE", s->mae);
    print_score(stdout, "RMSE", s->rmse);
    printf("\n");
}

static void print_plan(const struct tsrnn_backtest *bt, const struct tsrnn_series *s,
                       const char *id)
{
    char from[64], to[64];
    tsrnn_time_format(s->times[bt->first], s->time_unit, from, sizeof(from));
    tsrnn_time_format(s->times[bt->first + (bt->forecast_count - 1) * bt->stride], s->time_unit, to,
                      sizeof(to));
    if (id != NULL)
        fprintf(stderr, "Series %s: ", id);
    fprintf(stderr,
            "%s: %zu forecast%s of %zu steps starting %s .. %s, stride %zu "
            "(historical_forecasts(retrain=False, last_points_only=%s))\n",
            id ? "backtest" : "Backtest", bt->forecast_count, bt->forecast_count == 1 ? "" : "s",
            bt->horizon, from, to, bt->stride, bt->last_points_only ? "True" : "False");
}

/* The pictures: --plot FILE (one series), DIR/backtest.png of the one unnamed series, or
 * DIR/backtest_<id>.png of the first TSRNN_FORECAST_PLOTS named ones; none without cairo. */
static enum tsrnn_status plot_backtests(const struct options *o, const struct tsrnn_checkpoint *ck,
                                        const struct tsrnn_backtest_part *parts, size_t count,
                                        const char *dir, size_t *drawn)
{
    char why[1024];
    *drawn = 0;
    if (o->plot_path == NULL && !tsrnn_plot_usable(why, sizeof(why))) {
        /* the default picture: skipped where cairo cannot draw (--plot was checked up front) */
        tsrnn_warn("the backtest picture is not drawn: %s", why);
        return TSRNN_OK;
    }
    size_t plots = count < TSRNN_FORECAST_PLOTS ? count : TSRNN_FORECAST_PLOTS;
    const char *ids[TSRNN_FORECAST_PLOTS];
    for (size_t i = 0; i < plots; i++) {
        char path[PATH_MAX], file_id[TSRNN_NAME_MAX], title[3 * TSRNN_NAME_MAX + 32];
        ids[i] = parts[i].id;
        if (parts[i].id != NULL)
            tsrnn_forecast_plot_file_id(ids, i, file_id, sizeof(file_id));
        int length = o->plot_path ? snprintf(path, sizeof(path), "%s", o->plot_path)
                     : parts[i].id
                         ? snprintf(path, sizeof(path), "%s/backtest_%s.png", dir, file_id)
                         : snprintf(path, sizeof(path), "%s/backtest.png", dir);
        if (length >= (int)sizeof(path))
            return tsrnn_error(TSRNN_ERR_USAGE, "%s: the path is too long", path);
        plot_title(ck, parts[i].id, title, sizeof(title));
        TSRNN_TRY(
            tsrnn_backtest_plot(parts[i].bt, parts[i].series, title, o->width, o->height, path));
        ++*drawn;
    }
    return TSRNN_OK;
}

/* The backtest of every source, its files in --out DIR (or the run folder), and Darts'
 * backtest values on standard output: each series', and their mean over several. */
static enum tsrnn_status backtest(const struct options *o, const struct tsrnn_checkpoint *ck,
                                  const char *path, struct tsrnn_model *model,
                                  const struct tsrnn_forecast_source *sources, size_t count,
                                  const size_t *firsts)
{
    const char *dir = o->out_path ? o->out_path : o->run_dir;
    char csv[PATH_MAX], errors[PATH_MAX];
    struct tsrnn_backtest *bts = calloc(count, sizeof(*bts));
    struct tsrnn_backtest_part *parts = calloc(count, sizeof(*parts));
    struct tsrnn_forecast_scores *each = calloc(count, sizeof(*each)), mean;
    enum tsrnn_status status = TSRNN_OK;

    if (bts == NULL || parts == NULL || each == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    else if (snprintf(csv, sizeof(csv), "%s/backtest.csv", dir) >= (int)sizeof(csv) ||
             snprintf(errors, sizeof(errors), "%s/backtest_errors.csv", dir) >= (int)sizeof(errors))
        status = tsrnn_error(TSRNN_ERR_USAGE, "--out %s: the path is too long", dir);
    /* A model with a likelihood: each series' forecasts sampled as historical_forecasts()
     * right after fit() draws them (its predict_from_dataset() is draw 4). */
    struct tsrnn_forecast_options opt;
    sampling_options(&opt, o, ck, TSRNN_DARTS_PREDICT_DRAW - 1);
    for (size_t i = 0; i < count && status == TSRNN_OK; i++) {
        status = tsrnn_forecast_error_series(
            tsrnn_backtest_run_sampled(&bts[i], model, &sources[i], firsts[i],
                                       (size_t)ck->input_chunk_length, (size_t)o->horizon,
                                       (size_t)o->stride, o->last_points_only, &opt),
            sources[i].id);
        parts[i] = (struct tsrnn_backtest_part){ &bts[i], sources[i].series, sources[i].id };
        each[i] = bts[i].overall;
    }
    if (status == TSRNN_OK) {
        print_loaded(ck, path);
        for (size_t i = 0; i < count; i++)
            print_plan(&bts[i], sources[i].series, sources[i].id);
        tsrnn_forecast_scores_mean(&mean, each, count);
        status = tsrnn_make_dirs(dir);
    }
    if (status == TSRNN_OK)
        status = tsrnn_backtest_save_csv(parts, count, id_name(ck), csv);
    if (status == TSRNN_OK)
        status =
            tsrnn_backtest_save_errors(parts, count, id_name(ck), count > 1 ? &mean : NULL, errors);
    size_t drawn = 0;
    if (status == TSRNN_OK)
        status = plot_backtests(o, ck, parts, count, dir, &drawn);
    if (status == TSRNN_OK) {
        fprintf(stderr, "Wrote %s, %s", tsrnn_display_path(csv), tsrnn_display_path(errors));
        if (o->plot_path != NULL)
            fprintf(stderr, ", %s", tsrnn_display_path(o->plot_path));
        else if (drawn > 0 && sources[0].id == NULL)
            fprintf(stderr, ", %s/backtest.png", tsrnn_display_path(dir));
        else if (drawn > 0)
            fprintf(stderr, " and the plots of the first %zu series (backtest_<series>.png)",
                    drawn);
        else
            fprintf(stderr, " (no picture: see the warning above)");
        fprintf(stderr, "\n");
        for (size_t i = 0; i < count && sources[0].id != NULL; i++)
            print_backtest(sources[i].id, &bts[i].overall);
        print_backtest(NULL, &mean); /* one series: its own value */
        if (bts[0].has_quantile_scores) {
            struct tsrnn_quantile_scores q;
            tsrnn_backtest_quantile_mean(&q, parts, count);
            printf("backtest quantiles:");
            for (size_t k = 0; k < q.quantile_count; k++)
                printf(" MQL_%g %.9g", q.quantiles[k], q.mql[k]);
            printf(" MIC %.9g MIW %.9g\n", q.mic, q.miw);
        }
        if (fflush(stdout) != 0)
            status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write to standard output");
    }
    for (size_t i = 0; bts != NULL && i < count; i++)
        tsrnn_backtest_finish(&bts[i]);
    free(bts);
    free(parts);
    free(each);
    return status;
}

/* The sampling options given on the command line, over the run's [forecast] keys (checked as
 * the config checks them), and what a model without a likelihood refuses. */
static enum tsrnn_status apply_sampling_options(struct tsrnn_checkpoint *ck,
                                                const struct options *o)
{
    struct tsrnn_config *cfg = &ck->config;
    if (o->num_samples != NULL)
        TSRNN_TRY(tsrnn_config_set(cfg, "forecast", "num_samples", o->num_samples, "--num-samples",
                                   NULL));
    if (o->quantiles != NULL)
        TSRNN_TRY(
            tsrnn_config_set(cfg, "forecast", "quantiles", o->quantiles, "--quantiles", NULL));
    const char *sampling = o->num_samples             ? "--num-samples"
                           : o->quantiles             ? "--quantiles"
                           : o->samples_path          ? "--samples"
                           : o->likelihood_parameters ? "--likelihood-parameters"
                           : o->random_state >= 0     ? "--random-state"
                                                      : NULL;
    if (ck->likelihood.kind == TSRNN_LIKELIHOOD_NONE) {
        if (sampling != NULL)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: the model has no likelihood ([model] likelihood = none): its "
                               "forecast is one path, as Darts' point forecasts",
                               sampling);
        return TSRNN_OK;
    }
    if (o->likelihood_parameters && (cfg->num_samples != 1 || o->n != 1 || o->backtest))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "--likelihood-parameters predicts the first step's parameters: it "
                           "needs --n 1 and num_samples 1 (here %d), as Darts' "
                           "predict_likelihood_parameters",
                           cfg->num_samples);
    return TSRNN_OK;
}

/* What the forecasts hold: a forecast of n steps (stamps and C values, its covariates) kept
 * while the next one runs; or every backtest's values and scores, each series' at once. A
 * model with a likelihood holds its S sample paths beside them (and each forecast's Q
 * quantiles and band; tsrnn_forecast_predict(), tsrnn_backtest_predict()). */
static double forecast_nbytes(const struct options *o, const struct tsrnn_checkpoint *ck,
                              const struct tsrnn_forecast_source *sources, size_t count,
                              const size_t *firsts)
{
    double C = (double)ck->dims.output_count;
    double K = (double)(ck->dims.input_count - ck->dims.output_count);
    bool sampled = ck->likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    double S = sampled && ck->config.num_samples > 1 ? (double)ck->config.num_samples : 0.0;
    double q[TSRNN_FORECAST_MAX_QUANTILES]; /* and the picture's band: 2 more */
    size_t quantiles =
        tsrnn_config_forecast_quantiles(&ck->config, q, TSRNN_FORECAST_MAX_QUANTILES);
    double Q = S > 0.0 ? (double)quantiles + 2.0 : 0.0;
    if (!o->backtest)
        return 2.0 * (double)o->n * (8.0 + 4.0 * C * (1.0 + S + Q) + 8.0 * K);
    double total = 0.0, H = (double)o->horizon;
    for (size_t i = 0; i < count; i++) {
        double F = (double)((sources[i].series->length - (size_t)o->horizon - firsts[i]) /
                                (size_t)o->stride +
                            1);
        total += F * (H * 4.0 * C * (1.0 + S) + 64.0);
    }
    return total;
}

/* The model and the forecasts fit in memory (include/tsrnn/memory.h), before either is
 * made. */
static enum tsrnn_status check_memory(const struct options *o, const struct tsrnn_checkpoint *ck,
                                      struct tsrnn_compute *compute,
                                      const struct tsrnn_forecast_source *sources, size_t count,
                                      const size_t *firsts, size_t batch)
{
    struct tsrnn_memory_need need;
    tsrnn_memory_need_predict(&need, &ck->dims, tsrnn_compute_kind(compute), batch,
                              (size_t)ck->input_chunk_length,
                              forecast_nbytes(o, ck, sources, count, firsts));
    char advice[256];
    if (need.forecast_nbytes > need.host_nbytes / 2)
        snprintf(advice, sizeof(advice), "the largest part, the forecasts, grows with %s",
                 o->backtest ? "--horizon and the forecasts' count: raise --stride, start later "
                               "with --start, or backtest one series with --id"
                             : "--n: forecast fewer steps");
    else
        snprintf(advice, sizeof(advice),
                 "the largest part is the model itself (hidden_dim %zu, n_rnn_layers %zu): "
                 "forecast on a machine with more memory",
                 ck->dims.hidden_count, ck->dims.layer_count);
    return tsrnn_memory_check(&need, compute, 1, "the forecast", advice);
}

static enum tsrnn_status predict(const struct options *o)
{
    char path[PATH_MAX];
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    struct tsrnn_dataset ds = { 0 };
    struct tsrnn_series own = { 0 };
    struct tsrnn_forecast_source *sources = NULL;
    size_t count = 0, batch = 1, *firsts = NULL;
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_model model = { 0 };
    enum tsrnn_status status = ck ? TSRNN_OK : tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");

    /* A shared lock on the run folder while its checkpoint is found and read: a training run
     * of that folder (which prunes and replaces checkpoints, or deletes them all) is refused
     * meanwhile, and this waits for none. */
    struct tsrnn_run_lock lock = { .fd = -1 };
    bool named = strcmp(o->checkpoint, "best") == 0 || strcmp(o->checkpoint, "last") == 0;
    if (status == TSRNN_OK && named) {
        status = tsrnn_run_lock_acquire(&lock, o->run_dir, TSRNN_RUN_LOCK_SHARED);
        if (status == TSRNN_ERR_USAGE)
            tsrnn_error_append(status, "; wait for it to end, or forecast from a copy of one of "
                                       "its checkpoints with --checkpoint FILE (and --run DIR "
                                       "for its data, or --series CSV)");
    }
    if (status == TSRNN_OK) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/checkpoints", o->run_dir ? o->run_dir : ".");
        status = tsrnn_checkpoint_locate(path, sizeof(path), dir, o->checkpoint);
        /* No best by default: a run without save_checkpoints' best, or an untrained one
         * (max_steps = 0, an imported model) has only its last checkpoint. */
        if (status != TSRNN_OK && !o->checkpoint_given) {
            char last[PATH_MAX];
            if (tsrnn_checkpoint_locate(last, sizeof(last), dir, "last") == TSRNN_OK) {
                tsrnn_error_clear();
                snprintf(path, sizeof(path), "%s", last);
                status = TSRNN_OK;
                fprintf(stderr, "No best checkpoint in %s: using the last one\n",
                        tsrnn_display_path(dir));
            } else {
                status = tsrnn_checkpoint_locate(path, sizeof(path), dir, o->checkpoint);
            }
        }
    }
    if (status == TSRNN_OK)
        status = tsrnn_checkpoint_read(ck, path);
    tsrnn_run_lock_release(&lock);
    if (status == TSRNN_OK) {
        sources = calloc(ck->series_count, sizeof(*sources));
        firsts = calloc(ck->series_count, sizeof(*firsts));
        if (sources == NULL || firsts == NULL)
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    }
    if (status == TSRNN_OK)
        status = apply_sampling_options(ck, o);
    if (status == TSRNN_OK)
        status = load_sources(&ds, &own, sources, &count, ck, o, path);
    if (status == TSRNN_OK && o->plot_path != NULL && count > 1)
        status = tsrnn_error(TSRNN_ERR_USAGE,
                             "--plot %s draws one series; the model was trained on %zu: choose "
                             "one with --id",
                             o->plot_path, count);
    /* Every series' forecast dates before any work: stamps past the year 9999 are refused at
     * once (a backtest forecasts inside its series). */
    for (size_t i = 0; status == TSRNN_OK && !o->backtest && i < count; i++)
        status = tsrnn_forecast_error_series(tsrnn_forecast_check_range(&sources[i], (size_t)o->n),
                                             sources[i].id);
    if (status == TSRNN_OK && o->backtest)
        status = backtest_plan(o, ck, sources, count, firsts, &batch);
    /* A forecast is one window at a time (a backtest a batch of them): the CPU serves it,
     * whatever trained the model, unless --accelerator gpu asks for the CUDA backend. */
    struct tsrnn_compute_options device = {
        .kind = o->gpu ? TSRNN_COMPUTE_CUDA : TSRNN_COMPUTE_CPU,
        .thread_count = 1,
    };
    if (status == TSRNN_OK)
        status = tsrnn_compute_create(&compute, &device);
    if (status == TSRNN_ERR_USAGE && o->gpu)
        status = tsrnn_error_append(status, "; accepted here: --accelerator cpu");
    /* Sampled paths go as Darts tiles them: up to batch_size windows at once. */
    bool sampled = ck->likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    if (sampled && (size_t)ck->config.batch_size > batch)
        batch = (size_t)ck->config.batch_size;
    if (status == TSRNN_OK)
        status = check_memory(o, ck, compute, sources, count, firsts, batch);
    if (status == TSRNN_OK)
        status =
            tsrnn_model_init(&model, compute, &ck->dims, batch, (size_t)ck->input_chunk_length);
    if (status == TSRNN_OK)
        status = tsrnn_checkpoint_restore(ck, &model, NULL);
    if (status == TSRNN_OK && sampled)
        status = tsrnn_model_likelihood(&model, &ck->likelihood);
    if (status == TSRNN_OK)
        status = o->backtest ? backtest(o, ck, path, &model, sources, count, firsts)
                             : forecast(o, ck, path, &model, sources, count);
    tsrnn_model_finish(&model);
    tsrnn_compute_destroy(compute);
    tsrnn_dataset_finish(&ds);
    tsrnn_series_finish(&own);
    free(sources);
    free(firsts);
    if (ck != NULL)
        tsrnn_checkpoint_finish(ck);
    free(ck);
    return status;
}

int main(int argc, char **argv)
{
    struct options o;
    int code = parse_options(argc, argv, &o);
    if (code >= 0)
        return code;
    enum tsrnn_status status = predict(&o);
    if (status != TSRNN_OK) {
        fprintf(stderr, PROGRAM ": error: %s\n", tsrnn_last_error());
        return tsrnn_status_exit_code(status);
    }
    return TSRNN_EXIT_OK;
}
