/* tsrnn-predict: forecasts with a trained model, as Darts' RNNModel.load_from_checkpoint(...)
 * followed by predict(n) would.
 *
 * The checkpoint carries everything needed: the weights, the model's dimensions, the scaler
 * fitted on the training part, the series' columns and time format, and the run's config
 * (which names the training series). The forecast starts after the training part of that
 * series (where the validation part gives actual values to score against), or after the end
 * of a series given with --series.
 *
 * Exit codes: 0 ok, 1 runtime failure (a file could not be written), 2 usage, bad
 * checkpoint or bad series.
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/compute.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/forecast.h"
#include "tsrnn/fs.h"
#include "tsrnn/model.h"
#include "tsrnn/plot.h"

#define PROGRAM "tsrnn-predict"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " PROGRAM " --run DIR [--checkpoint best|last|FILE] [--series CSV] --n N\n"
            "                     [--out FILE.csv] [--plot FILE.png] [--size WxH]\n"
            "\n"
            "Forecasts N steps with a model trained by tsrnn-worker / tsrnn-launch.\n"
            "\n"
            "Options:\n"
            "  -r, --run DIR          the run folder ({work_dir}/{model_name})\n"
            "  -c, --checkpoint WHICH best (default), last, or a checkpoint file (then --run\n"
            "                         is not needed)\n"
            "  -s, --series CSV       forecast after the end of this series (same columns as\n"
            "                         the training data); default: after the training part of\n"
            "                         the training series, scored against the values after it\n"
            "  -n, --n N              steps to forecast (N >= 1)\n"
            "  -o, --out FILE         write the forecast CSV there (default: standard output)\n"
            "  -p, --plot FILE        draw history, actual values and forecast into a PNG\n"
            "      --size WxH         the picture's size in pixels (default 1000x500)\n"
            "      --accelerator WHICH cpu (default: one window at a time is the CPU's work) or\n"
            "                           gpu (the CUDA backend; exit 2 where there is none)\n"
            "  -h, --help             show this help and exit\n"
            "  -V, --version          show the version and exit\n"
            "\n"
            "Exit codes: 0 ok, 1 runtime failure, 2 usage, checkpoint or data error.\n");
}

struct options {
    const char *run_dir;
    const char *checkpoint;
    const char *series_path;
    const char *out_path;
    const char *plot_path;
    bool checkpoint_given; /* --checkpoint on the command line, not the default "best" */
    long long n;
    int width, height;
    bool gpu; /* --accelerator gpu */
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROGRAM ": error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return TSRNN_EXIT_USAGE;
}

/* Returns -1 to go on, else the exit code. */
static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option long_options[] = {
        { "run", required_argument, NULL, 'r' },
        { "checkpoint", required_argument, NULL, 'c' },
        { "series", required_argument, NULL, 's' },
        { "n", required_argument, NULL, 'n' },
        { "out", required_argument, NULL, 'o' },
        { "plot", required_argument, NULL, 'p' },
        { "size", required_argument, NULL, 'S' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "accelerator", required_argument, NULL, 'A' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    int64_t n;
    char tail;

    *o = (struct options){ .checkpoint = "best", .n = -1, .width = 1000, .height = 500 };
    while ((opt = getopt_long(argc, argv, "r:c:s:n:o:p:hV", long_options, NULL)) != -1) {
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
    if (o->n < 0)
        return usage_error("%s--n N is required", "");
    if (o->plot_path != NULL && !tsrnn_plot_available())
        return usage_error("--plot %s: this tsrnn-predict was built without cairo; install "
                           "libcairo2-dev and rebuild",
                           o->plot_path);
    bool named = strcmp(o->checkpoint, "best") == 0 || strcmp(o->checkpoint, "last") == 0;
    if (named && o->run_dir == NULL)
        return usage_error("--run DIR is required with --checkpoint %s", o->checkpoint);
    return -1;
}

/* The series to forecast from and where its history ends: --series whole, or the training
 * series of the checkpoint's config split as in training. */
static enum tsrnn_status load_series(struct tsrnn_dataset *dataset, struct tsrnn_series *own,
                                     const struct tsrnn_series **series, size_t *origin,
                                     const struct tsrnn_checkpoint *ck, const char *series_path)
{
    const struct tsrnn_config *cfg = &ck->config;
    const struct tsrnn_series_info *info = &ck->series;

    if (series_path == NULL) {
        enum tsrnn_status status = tsrnn_dataset_load(dataset, cfg);
        if (status != TSRNN_OK)
            return tsrnn_error_append(status, "; the checkpoint's training series cannot be "
                                              "used: pass the series to forecast from with "
                                              "--series CSV");
        const struct tsrnn_dataset_series *item = &dataset->items[0];
        *series = &item->series;
        *origin = item->train_length;
        if (item->train_length != info->train_length)
            tsrnn_warn("%s now has %zu training points, the model was trained on %zu",
                       tsrnn_display_path(cfg->data_path), item->train_length, info->train_length);
    } else {
        /* Read as the training series was read ([data] freq, fill_missing_*), and at the
         * model's frequency when the series is too short to show its own. */
        struct tsrnn_series_options options;
        tsrnn_series_options_from_config(&options, cfg);
        options.short_series_freq = info->freq;
        const struct tsrnn_covariates *cov = &ck->covariates;
        if (cov->column_count > 0)
            TSRNN_TRY(tsrnn_series_load_csv_covariates(
                own, series_path, cfg->time_col, (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                cfg->value_col_count, (const char(*)[TSRNN_NAME_MAX])cov->column_names,
                cov->column_count, &options));
        else
            TSRNN_TRY(tsrnn_series_load_csv(own, series_path, cfg->time_col,
                                            (const char(*)[TSRNN_NAME_MAX])cfg->value_cols,
                                            cfg->value_col_count, &options));
        *series = own;
        *origin = own->length;
    }
    const struct tsrnn_series *s = *series;
    /* A forecast continues the frequency the model learnt; another one's stamps would be
     * wrong, and its steps mean something else. */
    if (info->freq.kind != TSRNN_FREQ_NONE && !tsrnn_freq_equal(&info->freq, &s->freq)) {
        char have[TSRNN_FREQ_NAME_MAX], want[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&s->freq, have, sizeof(have));
        tsrnn_freq_name(&info->freq, want, sizeof(want));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the series' frequency is %s, but the model was trained on a "
                           "series of freq %s; accepted: a series of freq %s",
                           tsrnn_display_path(series_path ? series_path : cfg->data_path), have,
                           want, want);
    }
    if (s->component_count != info->component_count)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s has %zu value columns; the model forecasts %zu (%s%s)",
                           tsrnn_display_path(series_path ? series_path : cfg->data_path),
                           s->component_count, info->component_count, info->component_names[0],
                           info->component_count > 1 ? ", ..." : "");
    for (size_t c = 0; c < info->component_count; c++)
        if (strcmp(s->component_names[c], info->component_names[c]) != 0)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: value column %zu is '%s'; the model was trained on '%s'",
                               tsrnn_display_path(series_path ? series_path : cfg->data_path),
                               c + 1, s->component_names[c], info->component_names[c]);
    return TSRNN_OK;
}

static void print_scores(const struct tsrnn_forecast *f, const struct tsrnn_series *s)
{
    char first[64], last[64];
    tsrnn_time_format(f->times[0], s->time_unit, first, sizeof(first));
    tsrnn_time_format(f->times[f->length - 1], s->time_unit, last, sizeof(last));
    fprintf(stderr, "Forecast %zu steps, %s .. %s\n", f->length, first, last);
    if (f->actual_count == 0)
        return;
    fprintf(stderr, "Against the %zu actual values:", f->actual_count);
    if (!isnan(f->mape))
        fprintf(stderr, " MAPE %.2f%%", f->mape);
    fprintf(stderr, " MAE %.6g RMSE %.6g\n", f->mae, f->rmse);
}

static enum tsrnn_status predict(const struct options *o)
{
    char path[PATH_MAX];
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    struct tsrnn_dataset ds = { 0 };
    struct tsrnn_series own = { 0 };
    const struct tsrnn_series *series = NULL;
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_model model = { 0 };
    struct tsrnn_forecast f = { 0 };
    size_t origin = 0;
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
                                       "its checkpoints with --checkpoint FILE");
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
    /* A forecast is one window at a time: the CPU serves it, whatever trained the model,
     * unless --accelerator gpu asks for the CUDA backend. */
    struct tsrnn_compute_options device = {
        .kind = o->gpu ? TSRNN_COMPUTE_CUDA : TSRNN_COMPUTE_CPU,
        .thread_count = 1,
    };
    if (status == TSRNN_OK)
        status = tsrnn_compute_create(&compute, &device);
    if (status == TSRNN_ERR_USAGE && o->gpu)
        status = tsrnn_error_append(status, "; accepted here: --accelerator cpu");
    if (status == TSRNN_OK)
        status = tsrnn_model_init(&model, compute, &ck->dims, 1, (size_t)ck->input_chunk_length);
    if (status == TSRNN_OK)
        status = tsrnn_checkpoint_restore(ck, &model, NULL);
    if (status == TSRNN_OK)
        status = load_series(&ds, &own, &series, &origin, ck, o->series_path);
    if (status == TSRNN_OK)
        status = tsrnn_forecast_run(&f, &model, &ck->scaler, &ck->covariates, series, origin,
                                    (size_t)ck->input_chunk_length, (size_t)o->n);
    if (status == TSRNN_OK) {
        if (ck->state.global_step == 0)
            fprintf(stderr, "Loaded %s (%s, untrained: saved by a max_steps = 0 run)\n",
                    tsrnn_display_path(path), tsrnn_model_kind_name(ck->dims.kind));
        else
            fprintf(stderr, "Loaded %s (%s, epoch %lld, %s %.6g)\n", tsrnn_display_path(path),
                    tsrnn_model_kind_name(ck->dims.kind), (long long)ck->state.epoch,
                    ck->state.monitor, ck->state.monitor_value);
        print_scores(&f, series);
        status = o->out_path ? tsrnn_forecast_save_csv(&f, series, o->out_path)
                             : tsrnn_forecast_write_csv(&f, series, stdout);
    }
    if (status == TSRNN_OK && o->plot_path != NULL) {
        char title[TSRNN_NAME_MAX + 32];
        snprintf(title, sizeof(title), "%s %s", ck->config.model_name,
                 tsrnn_model_kind_name(ck->dims.kind));
        status = tsrnn_forecast_plot(&f, series, title, o->width, o->height, o->plot_path);
    }
    tsrnn_forecast_finish(&f);
    tsrnn_model_finish(&model);
    tsrnn_compute_destroy(compute);
    tsrnn_dataset_finish(&ds);
    tsrnn_series_finish(&own);
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
