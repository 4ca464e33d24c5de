/* The training loop of one rank (include/tsrnn/train.h). Reads top to bottom: set up the
 * model, optimizer and sampler; per epoch train, validate, report; then forecast the
 * validation horizon and score it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/compute.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"
#include "tsrnn/rng.h"
#include "tsrnn/train.h"

struct trainer {
    const struct tsrnn_config *cfg;
    const struct tsrnn_dataset *ds;
    struct tsrnn_model model;
    struct tsrnn_adam adam;
    struct tsrnn_sampler sampler;
    struct tsrnn_metrics_csv metrics;
    struct tsrnn_progress progress;
    const volatile sig_atomic_t *stop_requested;
    float *x, *y;           /* (B, T, C) one batch, batch-first */
    size_t *val_idx;        /* (val count) 0, 1, 2, ... */
    char run_dir[PATH_MAX]; /* {work_dir}/{model_name} */
    int64_t step;           /* global step: optimizer updates done */
};

enum tsrnn_status tsrnn_train_check(const struct tsrnn_config *cfg)
{
    /* Lightning raises when asked for a GPU it cannot use; so does tsrnn until its CUDA
     * backend lands. */
    if (cfg->accelerator == TSRNN_ACCELERATOR_GPU)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: [trainer] accelerator = gpu, but this tsrnn trains on CPUs only "
                           "so far (the CUDA backend is planned); accepted here: cpu or auto",
                           tsrnn_config_origin(cfg, "trainer", "accelerator"));
    return TSRNN_OK;
}

/* mkdir -p: creates `path` and its missing parents. */
static enum tsrnn_status make_dirs(const char *path)
{
    char partial[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(partial))
        return tsrnn_error(TSRNN_ERR_IO, "path too long: %s", path);
    memcpy(partial, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (partial[i] != '/' && partial[i] != '\0')
            continue;
        char saved = partial[i];
        partial[i] = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST)
            return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot create the run folder %s",
                                     tsrnn_display_path(partial));
        partial[i] = saved;
    }
    return TSRNN_OK;
}

/* config.ini, the resolved configuration, written atomically. */
static enum tsrnn_status write_config(const struct trainer *tr)
{
    char path[PATH_MAX + 16];
    struct tsrnn_atomic_file af;
    snprintf(path, sizeof(path), "%s/config.ini", tr->run_dir);
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    fprintf(af.file, "# tsrnn %s: the resolved configuration of this run\n", tsrnn_version());
    enum tsrnn_status status = tsrnn_config_write(tr->cfg, af.file);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}

static enum tsrnn_status setup(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t C = ds->series.component_count, T = (size_t)cfg->training_length;
    size_t B = (size_t)cfg->batch_size;
    struct tsrnn_model_dims dims = {
        .kind = cfg->model,
        .input_count = C,
        .hidden_count = (size_t)cfg->hidden_dim,
        .layer_count = (size_t)cfg->n_rnn_layers,
        .output_count = C,
        .dropout = (float)cfg->dropout,
    };

    TSRNN_TRY(tsrnn_train_check(cfg));
    tsrnn_cpu_set_thread_count(cfg->num_threads);
    /* Room for training and validation batches (B x T) and the forecast (1 x icl). */
    TSRNN_TRY(tsrnn_model_init(&tr->model, &dims, B, T));
    if (cfg->init_weights[0] != '\0')
        TSRNN_TRY(tsrnn_model_load_params(tr->model.params, &tr->model.table, cfg->init_weights));
    else
        tsrnn_model_init_params(tr->model.params, &tr->model.table, &dims,
                                (uint32_t)cfg->random_state);
    TSRNN_TRY(tsrnn_adam_init(&tr->adam, tr->model.table.total_count, cfg->lr));
    /* Darts' shuffle for this random_state: the weight initialisation has drawn one number
     * per parameter before the loaders start (also when init_weights replaces it). */
    struct tsrnn_shuffle shuffle = {
        .random_state = (uint32_t)cfg->random_state,
        .param_count = tr->model.table.total_count,
        .validation = ds->val.count > 0,
    };
    TSRNN_TRY(
        tsrnn_sampler_init(&tr->sampler, ds->train.count, B, cfg->shuffle ? &shuffle : NULL, 0, 1));

    tr->x = malloc(B * T * C * sizeof(float));
    tr->y = malloc(B * T * C * sizeof(float));
    tr->val_idx = malloc((ds->val.count + 1) * sizeof(size_t));
    if (tr->x == NULL || tr->y == NULL || tr->val_idx == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a batch of %zu windows", B);
    for (size_t i = 0; i < ds->val.count; i++)
        tr->val_idx[i] = i;

    if ((size_t)snprintf(tr->run_dir, sizeof(tr->run_dir), "%s/%s", cfg->work_dir,
                         cfg->model_name) >= sizeof(tr->run_dir))
        return tsrnn_error(TSRNN_ERR_USAGE, "[output] work_dir + model_name is too long");
    TSRNN_TRY(make_dirs(tr->run_dir));
    TSRNN_TRY(write_config(tr));
    return tsrnn_metrics_csv_open(&tr->metrics, tr->run_dir);
}

static void finish(struct trainer *tr)
{
    tsrnn_metrics_csv_close(&tr->metrics);
    tsrnn_model_finish(&tr->model);
    tsrnn_adam_finish(&tr->adam);
    tsrnn_sampler_finish(&tr->sampler);
    free(tr->x);
    free(tr->y);
    free(tr->val_idx);
}

static bool all_finite(const float *v, size_t count)
{
    float sum = 0.0f;
    for (size_t i = 0; i < count; i++)
        sum += v[i] * 0.0f; /* stays 0 unless some v[i] is NaN or inf */
    return sum == 0.0f;
}

/* Lightning's max_steps: the run ends after that many optimizer steps, mid-epoch if need be
 * (that epoch still validates). */
static bool steps_done(const struct trainer *tr)
{
    return tr->cfg->max_steps >= 0 && tr->step >= tr->cfg->max_steps;
}

/* One optimizer step on the B windows idx (batch `batch_idx` of the epoch); *loss gets its
 * MSE. */
static enum tsrnn_status train_step(struct trainer *tr, int64_t epoch, size_t batch_idx,
                                    const size_t *idx, size_t B, float *loss)
{
    struct tsrnn_model *model = &tr->model;
    struct tsrnn_rng dropout_rng;

    tsrnn_rng_init(&dropout_rng, tr->cfg->random_state,
                   TSRNN_RNG_STREAM_DROPOUT + (uint64_t)tr->step);
    tsrnn_windows_gather(&tr->ds->train, idx, B, tr->x, tr->y);
    tsrnn_model_forward(model, tr->x, B, tr->ds->train.training_length, true, &dropout_rng, NULL,
                        NULL);
    *loss = tsrnn_model_loss(model, tr->y);
    if (!isfinite(*loss))
        return tsrnn_error(TSRNN_ERR_NUMERIC,
                           "training diverged: the loss is %g at epoch %lld, step %lld (batch "
                           "%zu of the epoch); try a smaller [training] lr (now %g)",
                           (double)*loss, (long long)epoch, (long long)tr->step, batch_idx,
                           tr->cfg->lr);
    tsrnn_model_backward(model);
    if (!all_finite(model->grads, model->table.total_count))
        return tsrnn_error(TSRNN_ERR_NUMERIC,
                           "training diverged: a gradient is NaN or infinite at epoch %lld, step "
                           "%lld (batch %zu of the epoch); try a smaller [training] lr (now %g)",
                           (long long)epoch, (long long)tr->step, batch_idx, tr->cfg->lr);
    tsrnn_adam_step(&tr->adam, model->params, model->grads);
    return TSRNN_OK;
}

/* The validation loss: squared errors over every validation window / their count. */
static double validate(struct trainer *tr)
{
    const struct tsrnn_windows *val = &tr->ds->val;
    size_t B = (size_t)tr->cfg->batch_size, T = val->training_length;
    double sum = 0.0;

    for (size_t first = 0; first < val->count; first += B) {
        size_t count = val->count - first < B ? val->count - first : B;
        tsrnn_windows_gather(val, tr->val_idx + first, count, tr->x, tr->y);
        tsrnn_model_forward(&tr->model, tr->x, count, T, false, NULL, NULL, NULL);
        sum += tsrnn_model_squared_error(&tr->model, tr->y);
    }
    return sum / (double)(val->count * T * val->component_count);
}

static enum tsrnn_status run_epoch(struct trainer *tr, int64_t epoch, struct tsrnn_train_result *r)
{
    size_t batch_count = tsrnn_sampler_batch_count(&tr->sampler);
    int64_t first_step = tr->step;
    double loss_sum = 0.0;

    tsrnn_sampler_set_epoch(&tr->sampler, (uint64_t)epoch);
    tsrnn_progress_begin_epoch(&tr->progress, epoch, batch_count, tsrnn_clock_now_s());
    for (size_t b = 0; b < batch_count && !steps_done(tr); b++) {
        if (tr->stop_requested && *tr->stop_requested)
            return tsrnn_error(TSRNN_ERR_INTERRUPTED,
                               "interrupted at epoch %lld, step %lld: %s/metrics.csv holds the "
                               "%lld finished steps",
                               (long long)epoch, (long long)tr->step,
                               tsrnn_display_path(tr->run_dir), (long long)tr->step);
        const size_t *idx;
        size_t count = tsrnn_sampler_batch(&tr->sampler, b, &idx);
        double t0 = tsrnn_clock_now_s();
        float loss;
        TSRNN_TRY(train_step(tr, epoch, b, idx, count, &loss));
        double t1 = tsrnn_clock_now_s();
        r->train_s += t1 - t0;
        TSRNN_TRY(tsrnn_metrics_csv_step(&tr->metrics, epoch, tr->step, loss));
        tr->step++;
        r->sample_count += (int64_t)count;
        loss_sum += loss;
        r->last_step_loss = loss;
        tsrnn_progress_set_metric(&tr->progress, "train_loss", loss);
        tsrnn_progress_update(&tr->progress, b + 1, t1);
    }
    r->epoch_mean_loss = loss_sum / (double)(tr->step - first_step);

    if (tr->ds->val.count > 0) {
        double t0 = tsrnn_clock_now_s();
        double val_loss = validate(tr);
        r->val_s += tsrnn_clock_now_s() - t0;
        if (!isfinite(val_loss))
            return tsrnn_error(TSRNN_ERR_NUMERIC,
                               "training diverged: the validation loss is %g after epoch %lld "
                               "(step %lld); try a smaller [training] lr (now %g)",
                               val_loss, (long long)epoch, (long long)tr->step - 1, tr->cfg->lr);
        r->val_loss = val_loss;
        if (!(val_loss >= r->best_val_loss)) { /* also when best is still NaN */
            r->best_val_loss = val_loss;
            r->best_epoch = epoch;
        }
        TSRNN_TRY(tsrnn_metrics_csv_epoch(&tr->metrics, epoch, tr->step - 1, val_loss));
        tsrnn_progress_set_metric(&tr->progress, "val_loss", val_loss);
    }
    tsrnn_progress_end_epoch(&tr->progress, tsrnn_clock_now_s());
    r->epoch_count = epoch + 1;
    r->step_count = tr->step;
    return TSRNN_OK;
}

/* Darts' RNNModel.predict(n = validation length) from the end of the training part, in the
 * original scale, scored with Darts' mape(actual, pred) = 100 * mean |(a - p) / a|. */
static enum tsrnn_status forecast_validation(struct trainer *tr, struct tsrnn_train_result *r)
{
    const struct tsrnn_dataset *ds = tr->ds;
    size_t C = ds->series.component_count, icl = (size_t)tr->cfg->input_chunk_length;
    size_t n = ds->val_length;
    float *forecast = malloc(n * C * sizeof(float));

    if (forecast == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a %zu-step forecast", n);
    tsrnn_model_predict(&tr->model, forecast, ds->scaled + (ds->train_length - icl) * C, icl, n);
    tsrnn_scaler_inverse(&ds->scaler, forecast, n);

    const float *actual = ds->series.values + ds->train_length * C;
    double sum = 0.0;
    bool zero = false;
    for (size_t i = 0; i < n * C; i++) {
        zero |= actual[i] == 0.0f;
        sum += fabs(((double)actual[i] - (double)forecast[i]) / (double)actual[i]);
    }
    r->forecast_count = n;
    r->mape = zero ? NAN : 100.0 * sum / (double)(n * C);
    if (zero)
        tsrnn_warn("MAPE is undefined: the validation part holds a 0 (Darts' mape() needs "
                   "actual values that are not 0)");
    free(forecast);
    return TSRNN_OK;
}

static void print_banner(const struct trainer *tr, FILE *out)
{
    tsrnn_report_devices(out, false, false);
    tsrnn_report_model_summary(out, tr->model.cell->name, (int64_t)tr->model.table.rnn_count,
                               (int64_t)tr->model.table.head_count);
}

static void print_result(const struct trainer *tr, const struct tsrnn_train_result *r, FILE *out)
{
    double train_s = r->train_s > 0.0 ? r->train_s : 1e-9;
    fprintf(out,
            "Trained %lld epochs (%lld steps) in %.3f s: %.0f steps/s, %.0f samples/s "
            "(optimizer steps %.3f s, validation %.3f s)\n",
            (long long)r->epoch_count, (long long)r->step_count, r->total_s,
            (double)r->step_count / train_s, (double)r->sample_count / train_s, r->train_s,
            r->val_s);
    fprintf(out, "train_loss %.6g (last step), %.6g (mean of the last epoch)\n", r->last_step_loss,
            r->epoch_mean_loss);
    if (!isnan(r->val_loss))
        fprintf(out, "val_loss %.6g (last epoch), best %.6g at epoch %lld\n", r->val_loss,
                r->best_val_loss, (long long)r->best_epoch);
    if (!isnan(r->mape))
        fprintf(out,
                "MAPE %.2f%% over the %zu validation steps (forecast from the last %d "
                "training points, original scale)\n",
                r->mape, r->forecast_count, tr->cfg->input_chunk_length);
    fprintf(out, "Run folder: %s\n", tsrnn_display_path(tr->run_dir));
}

enum tsrnn_status tsrnn_train(struct tsrnn_train_result *result, const struct tsrnn_config *cfg,
                              const struct tsrnn_dataset *ds,
                              const struct tsrnn_train_options *options)
{
    struct trainer tr = {
        .cfg = cfg,
        .ds = ds,
        .stop_requested = options->stop_requested,
        .metrics = { .fd = -1 },
    };
    struct tsrnn_train_result r = {
        .val_loss = NAN,
        .best_val_loss = NAN,
        .best_epoch = -1,
        .mape = NAN,
    };
    FILE *out = options->out;
    double start = tsrnn_clock_now_s();
    enum tsrnn_status status = setup(&tr);

    r.param_count = tr.model.table.total_count;
    if (status == TSRNN_OK && !options->quiet)
        print_banner(&tr, out);
    tsrnn_progress_init(&tr.progress, out,
                        options->quiet ? TSRNN_PROGRESS_NONE : options->progress);
    for (int64_t epoch = 0; status == TSRNN_OK && epoch < cfg->n_epochs && !steps_done(&tr);
         epoch++)
        status = run_epoch(&tr, epoch, &r);
    tsrnn_progress_finish(&tr.progress);
    if (status == TSRNN_OK && !options->quiet)
        tsrnn_report_fit_stopped(out, steps_done(&tr) ? "max_steps" : "max_epochs",
                                 steps_done(&tr) ? cfg->max_steps : cfg->n_epochs);
    if (status == TSRNN_OK && ds->val_length > 0)
        status = forecast_validation(&tr, &r);
    if (status == TSRNN_OK)
        status = tsrnn_metrics_csv_close(&tr.metrics);
    r.total_s = tsrnn_clock_now_s() - start;
    if (status == TSRNN_OK)
        print_result(&tr, &r, out);
    finish(&tr);
    *result = r;
    return status;
}
