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
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"
#include "tsrnn/config.h"
#include "tsrnn/fs.h"
#include "tsrnn/memory.h"
#include "tsrnn/plot.h"

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

/* What the forecasts hold: every source's forecast of n steps at once (stamps and C values,
 * its covariates; tsrnn_forecast_set_predict()); or every backtest's values and scores, each
 * series' at once. A model with a likelihood holds its S sample paths beside them, as drawn
 * and inverse-scaled (and each forecast's Q quantiles and band; tsrnn_forecast_predict(),
 * tsrnn_backtest_predict()). */
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
        return (double)count * (double)o->n * (8.0 + 4.0 * C * (1.0 + 2.0 * S + Q) + 8.0 * K);
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

/* Reads the checkpoint --checkpoint names: best (by default, and then the last one where a
 * run has no best), last, or a file; under a shared lock on the run folder
 * (tsrnn_checkpoint_read_run()). */
static enum tsrnn_status read_checkpoint(struct tsrnn_checkpoint *ck, const struct options *o)
{
    bool fell_back;
    enum tsrnn_status status = tsrnn_checkpoint_read_run(
        ck, o->run_dir, o->checkpoint, !o->checkpoint_given, &fell_back,
        " with --checkpoint FILE (and --run DIR for its data, or --series CSV)");
    if (fell_back) { /* said before the error of a last checkpoint that cannot be read */
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/checkpoints", o->run_dir);
        fprintf(stderr, "No best checkpoint in %s: using the last one\n", tsrnn_display_path(dir));
    }
    return status;
}

/* What the sources must be before any work: one for --plot, forecast dates that tsrnn can
 * write (stamps past the year 9999 are refused at once; a backtest forecasts inside its
 * series), a backtest's first forecasts (firsts[], and how many windows a batch holds). */
static enum tsrnn_status check_sources(const struct options *o, const struct tsrnn_checkpoint *ck,
                                       const struct tsrnn_forecast_source *sources, size_t count,
                                       size_t *firsts, size_t *batch)
{
    if (o->plot_path != NULL && count > 1)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "--plot %s draws one series; the model was trained on %zu: choose "
                           "one with --id",
                           o->plot_path, count);
    if (o->backtest)
        return predict_backtest_plan(o, ck, sources, count, firsts, batch);
    for (size_t i = 0; i < count; i++)
        TSRNN_TRY(tsrnn_forecast_error_series(tsrnn_forecast_check_range(&sources[i], (size_t)o->n),
                                              sources[i].id));
    return TSRNN_OK;
}

/* The checkpoint's model on the device that forecasts, for batches of `batch` windows (a
 * model with a likelihood: at least batch_size, as Darts tiles its sampled paths), once the
 * model and the forecasts are known to fit in memory. A forecast is one window at a time (a
 * backtest a batch of them): the CPU serves it, whatever trained the model, unless
 * --accelerator gpu asks for the CUDA backend. The caller finishes both. */
static enum tsrnn_status load_model(struct tsrnn_compute **compute, struct tsrnn_model *model,
                                    const struct options *o, const struct tsrnn_checkpoint *ck,
                                    const struct tsrnn_forecast_source *sources, size_t count,
                                    const size_t *firsts, size_t batch)
{
    struct tsrnn_compute_options device = {
        .kind = o->gpu ? TSRNN_COMPUTE_CUDA : TSRNN_COMPUTE_CPU,
        .thread_count = 1,
    };
    enum tsrnn_status status = tsrnn_compute_create(compute, &device);
    if (status == TSRNN_ERR_USAGE && o->gpu)
        return tsrnn_error_append(status, "; accepted here: --accelerator cpu");
    TSRNN_TRY(status);
    bool sampled = ck->likelihood.kind != TSRNN_LIKELIHOOD_NONE;
    if (sampled && (size_t)ck->config.batch_size > batch)
        batch = (size_t)ck->config.batch_size;
    TSRNN_TRY(check_memory(o, ck, *compute, sources, count, firsts, batch));
    return tsrnn_checkpoint_model_init(model, *compute, ck, batch);
}

/* The checkpoint, the series, the model, then the forecast or the backtest. */
static enum tsrnn_status predict(const struct options *o)
{
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    struct tsrnn_dataset ds = { 0 };
    struct tsrnn_series own = { 0 };
    struct tsrnn_forecast_source *sources = NULL;
    size_t count = 0, batch = 1, *firsts = NULL;
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_model model = { 0 };
    enum tsrnn_status status = TSRNN_OK;
    if (ck == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        goto out;
    }
    status = read_checkpoint(ck, o);
    if (status != TSRNN_OK)
        goto out;
    sources = calloc(ck->series_count, sizeof(*sources));
    firsts = calloc(ck->series_count, sizeof(*firsts));
    if (sources == NULL || firsts == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
        goto out;
    }
    status = apply_sampling_options(ck, o);
    if (status != TSRNN_OK)
        goto out;
    status = predict_load_sources(&ds, &own, sources, &count, ck, o, ck->path);
    if (status != TSRNN_OK)
        goto out;
    status = check_sources(o, ck, sources, count, firsts, &batch);
    if (status != TSRNN_OK)
        goto out;
    status = load_model(&compute, &model, o, ck, sources, count, firsts, batch);
    if (status != TSRNN_OK)
        goto out;
    status = o->backtest ? predict_backtest(o, ck, ck->path, &model, sources, count, firsts)
                         : predict_forecast(o, ck, ck->path, &model, sources, count);
out:
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
