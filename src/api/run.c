/* Runs (include/tsrnn/tsrnn.h): a configuration, the world a program joins, the fit that
 * tsrnn_train() does (src/train/), and the model it leaves, read back from its last
 * checkpoint; loading and saving checkpoints. Forecasts are in predict.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/fs.h"
#include "tsrnn/model.h"

#include "tsrnn_build.h"

int tsrnn_api_version(void)
{
    return TSRNN_API_VERSION;
}

enum tsrnn_status tsrnn_run_create(struct tsrnn_run **out)
{
    struct tsrnn_run *run = calloc(1, sizeof(*run));
    *out = NULL;
    if (run == NULL || (run->cfg = malloc(sizeof(*run->cfg))) == NULL) {
        free(run);
        return TSRNN_ERR_NOMEM;
    }
    run->mode = TSRNN_PROGRESS_AUTO;
    run->world = (struct tsrnn_world){ .world_size = 1, .report_fd = -1 };
    run->predict_seed = -1;
    tsrnn_run_set_program(run, NULL);
    snprintf(run->config_label, sizeof(run->config_label), "the run's configuration");
    enum tsrnn_status status = tsrnn_config_init(run->cfg);
    if (status != TSRNN_OK) {
        free(run->cfg);
        free(run);
        return status;
    }
    *out = run;
    return TSRNN_OK;
}

/* The model of the last fit or load, and what came with it. */
static void forget_model(struct tsrnn_run *run)
{
    if (run->ck != NULL)
        tsrnn_checkpoint_finish(run->ck);
    free(run->ck);
    run->ck = NULL;
    tsrnn_dataset_finish(&run->stored);
    run->stored_loaded = false;
    run->predict_calls = 0;
}

static void forget_fit(struct tsrnn_run *run)
{
    api_dataset_finish(&run->arrays);
    tsrnn_dataset_finish(&run->files);
    run->ds = NULL;
    run->fitted = false;
}

void tsrnn_run_destroy(struct tsrnn_run *run)
{
    if (run == NULL)
        return;
    forget_model(run);
    forget_fit(run);
    tsrnn_comm_close(run->comm);
    tsrnn_compute_destroy(run->compute);
    free(run->cfg);
    free(run);
}

const char *tsrnn_run_error(const struct tsrnn_run *run)
{
    return run != NULL ? run->message : "no run (NULL)";
}

/* --- configuration ---------------------------------------------------------------------- */

enum tsrnn_status tsrnn_run_set(struct tsrnn_run *run, const char *section, const char *key,
                                const char *value, const char *origin)
{
    char cwd[PATH_MAX];
    tsrnn_error_clear();
    enum tsrnn_status status = TSRNN_OK;
    if (section == NULL || key == NULL || value == NULL)
        status = tsrnn_error(TSRNN_ERR_USAGE, "tsrnn_run_set: section, key and value are needed");
    else if (getcwd(cwd, sizeof(cwd)) == NULL)
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read the current directory");
    else
        status = tsrnn_config_set(run->cfg, section, key, value,
                                  origin != NULL ? origin : "tsrnn_run_set", cwd);
    run->checked = false;
    return api_result(run->message, status);
}

enum tsrnn_status tsrnn_run_set_override(struct tsrnn_run *run, const char *setting)
{
    tsrnn_error_clear();
    run->checked = false;
    return api_result(run->message, setting != NULL
                                        ? tsrnn_config_apply_override(run->cfg, setting)
                                        : tsrnn_error(TSRNN_ERR_USAGE, "no setting (NULL)"));
}

enum tsrnn_status tsrnn_run_read_ini(struct tsrnn_run *run, const char *path)
{
    tsrnn_error_clear();
    run->checked = false;
    if (path == NULL)
        return api_result(run->message, tsrnn_error(TSRNN_ERR_USAGE, "no INI file (NULL)"));
    snprintf(run->config_label, sizeof(run->config_label), "%s", path);
    return api_result(run->message, tsrnn_config_parse_file(run->cfg, path));
}

enum tsrnn_status tsrnn_run_read_ini_text(struct tsrnn_run *run, const char *text,
                                          const char *label)
{
    tsrnn_error_clear();
    run->checked = false;
    return api_result(
        run->message,
        text != NULL ? tsrnn_config_parse_text(run->cfg, text, label != NULL ? label : "INI text")
                     : tsrnn_error(TSRNN_ERR_USAGE, "no INI text (NULL)"));
}

void tsrnn_run_set_program(struct tsrnn_run *run, const char *program)
{
    snprintf(run->program, sizeof(run->program), "%s", program != NULL ? program : "libtsrnn");
}

/* The resolved configuration as config.ini's text (malloc'd). */
static char *config_text(struct tsrnn_run *run)
{
    char *text = tsrnn_config_text(run->cfg);
    if (text == NULL)
        tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing the configuration");
    return text;
}

size_t tsrnn_run_config_text(struct tsrnn_run *run, char *out, size_t capacity)
{
    tsrnn_error_clear();
    char *text = config_text(run);
    api_result(run->message, text != NULL ? TSRNN_OK : TSRNN_ERR_NOMEM);
    if (text == NULL) {
        if (capacity > 0)
            out[0] = '\0';
        return 0;
    }
    size_t n = (size_t)snprintf(out, capacity, "%s", text);
    free(text);
    return n;
}

size_t tsrnn_run_get(struct tsrnn_run *run, const char *section, const char *key, char *out,
                     size_t capacity)
{
    tsrnn_error_clear();
    if (capacity > 0)
        out[0] = '\0';
    if (section == NULL || key == NULL || tsrnn_config_origin(run->cfg, section, key) == NULL) {
        api_result(run->message,
                   tsrnn_error(TSRNN_ERR_USAGE, "[%s] %s: no such key; see docs/configuration.md",
                               section ? section : "(NULL)", key ? key : "(NULL)"));
        return 0;
    }
    /* The key's line in config.ini's text: "key = value" under "[section]". */
    char *text = config_text(run);
    if (text == NULL) {
        api_result(run->message, TSRNN_ERR_NOMEM);
        return 0;
    }
    size_t n = 0;
    bool in_section = false;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '[') {
            size_t len = strlen(section);
            in_section = strncmp(line + 1, section, len) == 0 && line[1 + len] == ']';
            continue;
        }
        size_t len = strlen(key);
        if (in_section && strncmp(line, key, len) == 0 && strncmp(line + len, " =", 2) == 0) {
            const char *value = line + len + 2;
            value += *value == ' ';
            n = (size_t)snprintf(out, capacity, "%s", value);
            break;
        }
    }
    free(text);
    api_result(run->message, TSRNN_OK);
    return n;
}

/* --- output and progress ---------------------------------------------------------------- */

enum tsrnn_status tsrnn_run_set_output(struct tsrnn_run *run,
                                       void (*write)(void *ctx, const char *text, size_t nbytes),
                                       void *ctx, const char *mode, bool quiet)
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
    tsrnn_error_clear();
    size_t i = 0;
    while (i < sizeof(modes) / sizeof(modes[0]) && mode != NULL && strcmp(mode, modes[i].name))
        i++;
    if (mode != NULL && i == sizeof(modes) / sizeof(modes[0]))
        return api_result(run->message,
                          tsrnn_error(TSRNN_ERR_USAGE,
                                      "progress mode '%s': accepted: auto, bar, plain, none",
                                      mode));
    run->write = write;
    run->write_ctx = ctx;
    run->mode = mode != NULL ? modes[i].mode : TSRNN_PROGRESS_AUTO;
    run->quiet = quiet;
    return api_result(run->message, TSRNN_OK);
}

enum tsrnn_status tsrnn_run_set_progress(struct tsrnn_run *run,
                                         int (*progress)(void *ctx, int64_t epoch, int64_t batch,
                                                         int64_t batch_count, double train_loss,
                                                         double val_loss),
                                         void *ctx)
{
    run->progress = progress;
    run->progress_ctx = ctx;
    return api_result(run->message, TSRNN_OK);
}

void tsrnn_run_cancel(struct tsrnn_run *run)
{
    if (run != NULL)
        run->stop = 1;
}

static ssize_t write_out(void *cookie, const char *text, size_t nbytes)
{
    const struct tsrnn_run *run = cookie;
    run->write(run->write_ctx, text, nbytes);
    return (ssize_t)nbytes;
}

/* The stream the fit's report goes to: the caller's write function behind a FILE (line
 * buffered; the bar flushes what it draws), or standard output. */
static FILE *open_output(struct tsrnn_run *run)
{
    if (run->write == NULL)
        return stdout;
    FILE *out = fopencookie(run, "w", (cookie_io_functions_t){ .write = write_out });
    if (out != NULL)
        setvbuf(out, NULL, _IOLBF, 0);
    return out;
}

static void close_output(FILE *out)
{
    if (out == stdout)
        fflush(out);
    else if (out != NULL)
        fclose(out);
}

/* The progress bar's observer: the caller's callback after each step and each epoch. */
static void notify_progress(void *ctx, const struct tsrnn_progress *p, bool epoch_end)
{
    struct tsrnn_run *run = ctx;
    if (run->progress == NULL)
        return;
    double val_loss = epoch_end ? tsrnn_progress_metric(p, "val_loss") : NAN;
    if (run->progress(run->progress_ctx, p->epoch, (int64_t)p->n, (int64_t)p->total,
                      tsrnn_progress_metric(p, "train_loss"), val_loss) != 0)
        run->stop = 1;
}

/* --- the world -------------------------------------------------------------------------- */

static enum tsrnn_status join_world(struct tsrnn_run *run)
{
    const struct tsrnn_config *cfg = run->cfg;
    if (run->in_world)
        return tsrnn_error(TSRNN_ERR_USAGE, "the run is in a world already");
    TSRNN_TRY(tsrnn_world_from_env(&run->world));
    /* Under mpirun or srun this rank chooses its comm backend and GPU itself (world.h). */
    if (run->world.mpi) {
        struct tsrnn_rank_devices devices = {
            .comm = cfg->comm,
            .comm_origin = tsrnn_config_origin(cfg, "trainer", "comm"),
            .gpu = tsrnn_train_compute_kind(cfg) == TSRNN_COMPUTE_CUDA,
        };
        tsrnn_world_rank_devices_from_env(&devices, &run->world);
        TSRNN_TRY(tsrnn_world_choose_mpi_comm(&run->world, &devices));
    }
    /* The device first: the comm orders its device collectives on it. */
    TSRNN_TRY(tsrnn_train_compute_create(&run->compute, cfg, run->world.device_index));
    run->in_world = true;
    if (strcmp(run->world.comm_backend, "local") == 0)
        return TSRNN_OK;
    struct tsrnn_comm_options opt = {
        .rank = run->world.rank,
        .world_size = run->world.world_size,
        .rendezvous = run->world.rendezvous[0] != '\0' ? run->world.rendezvous : NULL,
        .timeout_s = cfg->timeout_s,
        .backend = run->world.comm_backend, /* the launcher's choice, never derived here */
        .compute = run->compute,
        /* Under srun a SIGTERM may also mean a peer died (comm.h): mpi then ends the job. */
        .stop_requested = &run->stop,
    };
    return tsrnn_comm_open(&run->comm, &opt);
}

enum tsrnn_status tsrnn_run_join_world(struct tsrnn_run *run)
{
    tsrnn_error_clear();
    return api_result(run->message, join_world(run));
}

int tsrnn_run_rank(const struct tsrnn_run *run)
{
    return run->world.rank;
}

int tsrnn_run_world_size(const struct tsrnn_run *run)
{
    return run->world.world_size;
}

void tsrnn_run_abort_world(struct tsrnn_run *run, int exit_code)
{
    if (run->comm != NULL)
        tsrnn_comm_abort_job(run->comm, exit_code);
}

/* --- fit -------------------------------------------------------------------------------- */

/* Checks a configuration whose series come as arrays. tsrnn_config_validate() checks that
 * [data] path names readable files; a fit on arrays has none, so a copy is checked with the
 * path standing for a file that is always there (this program), and the real configuration
 * keeps an empty path. docs/api.md: until config.c checks the settings without the data
 * files. */
static enum tsrnn_status validate_for_arrays(const struct tsrnn_config *cfg)
{
    if (cfg->data_path[0] != '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [data] path = %s is set, but the fit is given its series; "
                           "accepted: one of them",
                           tsrnn_config_origin(cfg, "data", "path"), cfg->data_path);
    struct tsrnn_config *copy = malloc(sizeof(*copy));
    if (copy == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory");
    *copy = *cfg;
    snprintf(copy->data_path, sizeof(copy->data_path), "/proc/self/exe");
    enum tsrnn_status status = tsrnn_config_validate(copy);
    free(copy);
    return status;
}

/* The rules across keys, then what data/ makes of the data's keys, for a fit on the files
 * of [data] path; for one on series given, as validate_for_arrays() checks them. */
static enum tsrnn_status check(struct tsrnn_run *run, bool arrays)
{
    run->checked = false;
    if (arrays) {
        TSRNN_TRY(validate_for_arrays(run->cfg));
    } else {
        TSRNN_TRY(tsrnn_config_validate(run->cfg));
        TSRNN_TRY(tsrnn_data_check_config(run->cfg));
    }
    run->checked = true;
    run->checked_arrays = arrays;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_run_check(struct tsrnn_run *run, const struct tsrnn_series_set *series)
{
    tsrnn_error_clear();
    return api_result(run->message, check(run, series != NULL));
}

/* ddp_spawn's rank 0 puts the fit's outcome on a queue for the main process; a rank started
 * by tsrnn-launch writes it to the launcher's pipe (include/tsrnn/world.h). */
static void report_result(const struct tsrnn_world *world, const struct tsrnn_train_result *r)
{
    tsrnn_world_report(world, "epochs", "%lld", (long long)r->epoch_count);
    tsrnn_world_report(world, "steps", "%lld", (long long)r->step_count);
    if (isfinite(r->last_step_loss))
        tsrnn_world_report(world, "train_loss", "%.9g", r->last_step_loss);
    if (isfinite(r->val_loss))
        tsrnn_world_report(world, "val_loss", "%.9g", r->val_loss);
    if (isfinite(r->best_val_loss))
        tsrnn_world_report(world, "best_val_loss", "%.9g", r->best_val_loss);
    tsrnn_world_report(world, "best_checkpoint", "%s", r->best_checkpoint);
    tsrnn_world_report(world, "last_checkpoint", "%s", r->last_checkpoint);
    tsrnn_world_report(world, "wall_s", "%.3f", r->total_s);
    tsrnn_world_report(world, "done", "1");
}

/* Reads the checkpoint `which` of `run_dir` (tsrnn_checkpoint_read_run(): best falling back
 * to last; or a file) as the run's model. */
static enum tsrnn_status read_model(struct tsrnn_run *run, const char *run_dir, const char *which)
{
    struct tsrnn_checkpoint *ck = calloc(1, sizeof(*ck));
    bool fell_back;
    if (ck == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading a checkpoint");
    enum tsrnn_status status = tsrnn_checkpoint_read_run(ck, run_dir, which, true, &fell_back, "");
    if (status != TSRNN_OK) {
        free(ck);
        return status;
    }
    forget_model(run);
    run->ck = ck;
    return TSRNN_OK;
}

/* After an interrupted fit the model is what it trained so far, as Darts' after a
 * KeyboardInterrupt: the last checkpoint written on the way out, which tsrnn_train() does
 * not name in its result after a fit that failed, found in the run folder. Returns
 * TSRNN_ERR_INTERRUPTED with the interruption's message. */
static enum tsrnn_status keep_interrupted_model(struct tsrnn_run *run,
                                                const struct tsrnn_config *cfg)
{
    struct tsrnn_train_result *r = &run->result;
    char why[API_MESSAGE_MAX], dir[sizeof(r->run_dir) + sizeof("/checkpoints")];
    snprintf(why, sizeof(why), "%s", tsrnn_last_error());
    if (cfg->save_checkpoints && run->world.rank == 0 &&
        (size_t)snprintf(r->run_dir, sizeof(r->run_dir), "%s/%s", cfg->work_dir, cfg->model_name) <
            sizeof(r->run_dir)) {
        snprintf(dir, sizeof(dir), "%s/checkpoints", r->run_dir);
        if (tsrnn_checkpoint_locate(r->last_checkpoint, sizeof(r->last_checkpoint), dir, "last") ==
            TSRNN_OK)
            (void)read_model(run, NULL, r->last_checkpoint); /* a model, or none as before */
        else
            r->last_checkpoint[0] = '\0'; /* interrupted before its first checkpoint */
    }
    return tsrnn_error(TSRNN_ERR_INTERRUPTED, "%s", why);
}

static enum tsrnn_status fit(struct tsrnn_run *run, const struct tsrnn_series_set *series,
                             const struct tsrnn_series_set *val, FILE *out)
{
    struct tsrnn_config *cfg = run->cfg;
    if (val != NULL && series == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "a validation set without a training set: give both, or neither "
                           "(the files of [data] path, split as [data] says)");
    if (series != NULL) {
        if (!run->checked || !run->checked_arrays) /* else tsrnn_run_check() did, once */
            TSRNN_TRY(validate_for_arrays(cfg));
        TSRNN_TRY(api_dataset_build(&run->arrays, cfg, series, val));
        run->ds = &run->arrays.ds;
    } else {
        if (!run->checked || run->checked_arrays) /* else tsrnn_run_check() did, once */
            TSRNN_TRY(tsrnn_config_validate(cfg));
        TSRNN_TRY(tsrnn_dataset_load(&run->files, cfg));
        run->ds = &run->files;
    }
    struct tsrnn_compute *compute = run->compute, *own_compute = NULL;
    if (compute == NULL) {
        TSRNN_TRY(tsrnn_train_compute_create(&own_compute, cfg, 0));
        compute = own_compute;
    }
    /* The trainer prints the banner (its first line, the compute, the data, the devices and
     * the model summary), as tsrnn-worker's. */
    struct tsrnn_train_options options = {
        .out = out,
        .progress = run->mode,
        .quiet = run->quiet,
        .program = run->program,
        .config_path = run->config_label,
        .rank_zero_only = run->world.mpi,
        .print_devices = !run->in_world || (run->world.report_fd < 0 && run->world.world_size == 1),
        .comm = run->comm,
        .compute = compute,
        .world = run->in_world ? &run->world : NULL,
        .stop_requested = &run->stop,
    };
    struct tsrnn_progress_observer observer = { .notify = notify_progress, .ctx = run };
    const struct tsrnn_progress_observer *previous = tsrnn_progress_observe(&observer);
    enum tsrnn_status status = tsrnn_train(&run->result, cfg, run->ds, &options);
    tsrnn_progress_observe(previous);
    fflush(out);
    tsrnn_compute_destroy(own_compute);
    if (status == TSRNN_ERR_INTERRUPTED)
        return keep_interrupted_model(run, cfg);
    TSRNN_TRY(status);
    run->fitted = true;
    if (run->in_world)
        report_result(&run->world, &run->result);
    /* The model is the last checkpoint. */
    if (run->result.last_checkpoint[0] != '\0')
        TSRNN_TRY(read_model(run, NULL, run->result.last_checkpoint));
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_run_fit(struct tsrnn_run *run, const struct tsrnn_series_set *series,
                                const struct tsrnn_series_set *val)
{
    tsrnn_error_clear();
    run->stop = 0;
    forget_model(run);
    forget_fit(run);
    memset(&run->result, 0, sizeof(run->result));
    FILE *out = open_output(run);
    enum tsrnn_status status =
        out != NULL ? fit(run, series, val, out)
                    : tsrnn_error_errno(TSRNN_ERR_NOMEM, errno, "cannot open the report stream");
    close_output(out);
    return api_result(run->message, status);
}

double tsrnn_run_result(const struct tsrnn_run *run, const char *name)
{
    const struct tsrnn_train_result *r = &run->result;
    if (!run->fitted || name == NULL)
        return NAN;
    const struct {
        const char *name;
        double value;
    } values[] = {
        { "epochs", (double)r->epoch_count },
        { "steps", (double)r->step_count },
        { "first_step_loss", r->first_step_loss },
        { "last_step_loss", r->last_step_loss },
        { "epoch_mean_loss", r->epoch_mean_loss },
        { "val_loss", r->val_loss },
        { "best_val_loss", r->best_val_loss },
        { "best_epoch", r->best_epoch >= 0 ? (double)r->best_epoch : NAN },
        { "mape", r->mape },
        { "mae", r->mae },
        { "rmse", r->rmse },
        { "train_s", r->train_s },
        { "val_s", r->val_s },
        { "total_s", r->total_s },
        { "param_count", (double)r->param_count },
        { "stopped_early", r->stopped_early ? 1.0 : 0.0 },
    };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        if (strcmp(values[i].name, name) == 0)
            return values[i].value;
    return NAN;
}

size_t tsrnn_run_path(const struct tsrnn_run *run, const char *name, char *out, size_t capacity)
{
    const char *path = "";
    if (name == NULL)
        path = "";
    else if (strcmp(name, "checkpoint") == 0)
        path = run->ck != NULL ? run->ck->path : "";
    else if (run->fitted && strcmp(name, "run_dir") == 0)
        path = run->result.run_dir;
    else if (run->fitted && strcmp(name, "best_checkpoint") == 0)
        path = run->result.best_checkpoint;
    else if (run->fitted && strcmp(name, "last_checkpoint") == 0)
        path = run->result.last_checkpoint;
    return (size_t)snprintf(out, capacity, "%s", path);
}

/* --- checkpoints ------------------------------------------------------------------------ */

/* tsrnn-predict's way to a checkpoint (tsrnn_checkpoint_read_run()): `which` of the run
 * folder under its shared lock (a training run of that folder is refused meanwhile, and
 * nobody waits), "best" falling back to "last" for a run without one. */
static enum tsrnn_status load_checkpoint(struct tsrnn_run *run, const char *run_dir,
                                         const char *which)
{
    if (which == NULL || which[0] == '\0')
        which = "best";
    bool named = strcmp(which, "best") == 0 || strcmp(which, "last") == 0;
    if (named && (run_dir == NULL || run_dir[0] == '\0'))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "checkpoint '%s' of which run folder? accepted: a run folder "
                           "({work_dir}/{model_name}) with best or last, or a checkpoint file",
                           which);
    return read_model(run, run_dir, which);
}

enum tsrnn_status tsrnn_run_load_checkpoint(struct tsrnn_run *run, const char *run_dir,
                                            const char *which)
{
    tsrnn_error_clear();
    enum tsrnn_status status = load_checkpoint(run, run_dir, which);
    if (status == TSRNN_OK) {
        /* The run is now the checkpoint's: its configuration, no fit of its own. */
        forget_fit(run);
        *run->cfg = run->ck->config;
        run->checked = false;
    }
    return api_result(run->message, status);
}

static enum tsrnn_status save_checkpoint(const struct tsrnn_run *run, const char *path)
{
    if (run->ck == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "no model to save: fit the run (with [output] save_checkpoints = "
                           "true) or load a checkpoint first");
    if (path == NULL || path[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE, "no path to save the checkpoint to");
    /* The bytes read and checked at load: the same file, whatever became of the original. */
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    fwrite(run->ck->file.bytes, 1, run->ck->file.nbytes, af.file);
    return tsrnn_atomic_file_commit(&af);
}

enum tsrnn_status tsrnn_run_save_checkpoint(struct tsrnn_run *run, const char *path)
{
    tsrnn_error_clear();
    return api_result(run->message, save_checkpoint(run, path));
}
