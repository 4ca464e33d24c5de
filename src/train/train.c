/* The training loop of one rank (include/tsrnn/train.h). Reads top to bottom: set up
 * (setup.c), then per epoch train, validate, log, checkpoint; then the forecasts after the fit
 * (after_fit.c) and the summary (summary.c). */
#include <math.h>
#include <string.h>

#include "trainer.h"
#include "tsrnn/compute.h"
#include "tsrnn/optim.h"

/* Lightning's max_steps: the run ends after that many optimizer steps, mid-epoch if need be
 * (that epoch still validates). */
static bool steps_done(const struct trainer *tr)
{
    return tr->cfg->max_steps >= 0 && tr->pos.step >= tr->cfg->max_steps;
}

/* One optimizer step on the B windows idx, queued on the device: the batch, its dropout
 * masks, the optimizer's update for this step, then the whole step behind the compute door
 * (forward, loss, backward, the reduction over the ranks with this rank's stop request,
 * clipping, the update). Its loss and whether it diverged are read later (read_steps).
 * last_batch: the epoch's last. */
static enum tsrnn_status train_step(struct trainer *tr, const size_t *idx, size_t B,
                                    bool last_batch)
{
    size_t T = tr->ds->training_length;
    tsrnn_window_list_gather(&tr->ds->train, idx, B, tr->x, tr->y);
    struct tsrnn_step_args step = {
        .x = tr->x,
        .y = tr->y,
        .batch_count = B,
        .step_count = T,
        .dropout_masks = tsrnn_dropout_stream_next(&tr->dropout, &tr->model, B, T, last_batch),
        .loss = tr->model.loss,
        .loss_delta = tr->model.loss_delta,
        .clip_max_norm = (float)tr->cfg->gradient_clip_val,
        .reduce = tr->world.comm != NULL ? &tr->world.reduce : NULL,
        .stop_requested = tr->world.stop_requested != NULL && *tr->world.stop_requested,
    };
    tsrnn_adam_next_update(&tr->adam, &step.update);
    return tsrnn_compute_step(tr->model.ws, &step);
}

/* Reads the results of the pending steps, the first of which was batch `first_batch` of the
 * epoch and step tr->pos.step - pending_count, and logs each one that updated the model as
 * Lightning does (metrics.csv, TensorBoard every log_every_n_steps, the bar). A step that
 * diverged ends the run; one after which the ranks agreed to stop sets stop_agreed. Steps
 * queued after a halt did nothing: the step counters go back to what was done, and *next_batch
 * is the batch to go on with. */
static enum tsrnn_status read_steps(struct trainer *tr, int64_t epoch, size_t first_batch,
                                    struct tsrnn_train_result *r, double *loss_sum,
                                    size_t *next_batch)
{
    struct tsrnn_step_results res;
    int64_t first_step = tr->pos.step - (int64_t)tr->pending.count;
    TSRNN_TRY(tsrnn_compute_step_results(tr->model.ws, tr->pending.losses,
                                         TSRNN_MODEL_RESULTS_CAPACITY, &res));
    double now = tsrnn_clock_now_s();
    for (size_t k = 0; k < res.updated; k++) {
        int64_t step = first_step + (int64_t)k;
        float loss = tr->pending.losses[k];
        if (tr->world.writes_files) {
            TSRNN_TRY(tsrnn_metrics_csv_step(&tr->folder.metrics, epoch, step, loss));
            /* Lightning logs a step's metrics, with the epoch, every log_every_n_steps. */
            if (tsrnn_tb_is_open(&tr->folder.tb) && (step + 1) % tr->cfg->log_every_n_steps == 0) {
                TSRNN_TRY(tsrnn_tb_scalar(&tr->folder.tb, "train_loss", loss, step));
                TSRNN_TRY(tsrnn_tb_scalar(&tr->folder.tb, "epoch", (float)epoch, step));
            }
        }
        r->sample_count += (int64_t)tr->pending.windows[k];
        *loss_sum += loss;
        if (step == 0) /* the run's step 0 */
            r->first_step_loss = loss;
        r->last_step_loss = loss;
        tr->controls.last_step_loss = loss;
        tsrnn_progress_set_metric(&tr->report.progress, "train_loss", loss);
        tsrnn_progress_update(&tr->report.progress, first_batch + k + 1, now);
    }
    /* Steps queued after a halt updated nothing: neither they nor the optimizer's count of them
     * happened, nor the scheduler's steps after them. */
    tr->adam.step -= (uint64_t)(res.taken - res.updated);
    if (res.updated < res.taken) {
        tr->controls.scheduler.last_epoch = tr->pending.schedule[res.updated].last_epoch;
        tr->adam.lr = tr->pending.schedule[res.updated].lr;
        tsrnn_lr_scheduler_apply_momentum(&tr->controls.scheduler, &tr->adam);
    }
    tr->pos.step = first_step + (int64_t)res.updated;
    *next_batch = first_batch + res.updated;
    tr->pending.count = 0;
    if (res.halt == TSRNN_STEP_DIVERGED) {
        size_t k = res.halted_at;
        float loss = tr->pending.losses[k];
        if (!isfinite(loss))
            return tsrnn_error(TSRNN_ERR_NUMERIC,
                               "training diverged: the loss is %g at epoch %lld, step %lld "
                               "(batch %zu of the epoch); try a smaller [training] lr (this step's "
                               "learning rate: %g)",
                               (double)loss, (long long)epoch, (long long)(first_step + (int64_t)k),
                               first_batch + k, tr->adam.lr);
        return tsrnn_error(TSRNN_ERR_NUMERIC,
                           "training diverged: a gradient is NaN or infinite at epoch %lld, step "
                           "%lld (batch %zu of the epoch); try a smaller [training] lr (this "
                           "step's learning rate: %g)",
                           (long long)epoch, (long long)(first_step + (int64_t)k), first_batch + k,
                           tr->adam.lr);
    }
    tr->world.stop_agreed = res.halt == TSRNN_STEP_STOPPED;
    return TSRNN_OK;
}

/* The validation loss: the loss's errors (squared, absolute, Huber's) over every validation
 * window / their count, and the monitored torchmetrics metric the same way (tr->val.metric_value,
 * as torchmetrics' sum over every element / their count). Each rank evaluates its windows;
 * the per-window sums meet in one allreduce (every window's entry is non-zero on one rank
 * only, so the sum is exact) and are added in window order: the same value, bit for bit, as
 * one process evaluating them all. */
static enum tsrnn_status validate(struct trainer *tr, double *val_loss)
{
    const struct tsrnn_window_list *val = &tr->ds->val;
    size_t B = (size_t)tr->cfg->batch_size, T = tr->ds->training_length, V = val->count;
    size_t sums = tr->val.metric != NULL ? 2 : 1;
    double *se = tr->val.batch_se, *metric_se = tr->val.batch_se + tr->model.batch_capacity;

    memset(tr->val.se, 0, sums * V * sizeof(double));
    for (size_t first = 0; first < tr->val.local_count; first += B) {
        const size_t *idx = tr->val.idx + first;
        size_t count = tr->val.local_count - first < B ? tr->val.local_count - first : B;
        tsrnn_window_list_gather(val, idx, count, tr->x, tr->y);
        TSRNN_TRY(tsrnn_model_evaluate(&tr->model, tr->x, tr->y, count, T, se));
        if (tr->val.metric != NULL)
            TSRNN_TRY(tsrnn_model_window_errors(&tr->model, tr->val.metric_loss, 0.0f, metric_se));
        for (size_t i = 0; i < count; i++) {
            tr->val.se[idx[i]] = se[i];
            if (tr->val.metric != NULL)
                tr->val.se[V + idx[i]] = metric_se[i];
        }
    }
    if (tr->world.comm != NULL)
        TSRNN_TRY(tsrnn_comm_allreduce_sum(tr->world.comm, tr->val.se, sums * V, TSRNN_COMM_F64));
    double sum = 0.0, metric_sum = 0.0;
    for (size_t i = 0; i < V; i++) {
        sum += tr->val.se[i];
        if (tr->val.metric != NULL)
            metric_sum += tr->val.se[V + i];
    }
    double elements = (double)(V * T * tr->ds->component_count);
    *val_loss = sum / elements;
    tr->val.metric_value = tr->val.metric != NULL ? metric_sum / elements : NAN;
    return TSRNN_OK;
}

/* After an epoch's last batch (and validation): record where training stands, hand the
 * logs to the OS and write the checkpoints. */
static enum tsrnn_status end_epoch(struct trainer *tr, int64_t epoch, size_t batches_done,
                                   bool complete, double monitor_value)
{
    struct tsrnn_train_state *st = &tr->ckpt.state;

    st->epoch = epoch;
    st->batches_done = (int64_t)batches_done;
    st->epoch_complete = complete;
    st->global_step = tr->pos.step;
    st->monitor_value = monitor_value;
    /* NaN: an interrupted epoch, nothing to rank. */
    if (!isnan(monitor_value) && !(monitor_value >= st->best_value)) { /* best NaN: the first */
        st->best_value = monitor_value;
        st->best_epoch = epoch;
    }
    /* Lightning at the end of a whole epoch: EarlyStopping on the validation's end, then the
     * scheduler (interval "epoch"). The checkpoint below holds their new state. */
    if (complete) {
        const struct tsrnn_config *cfg = tr->cfg;
        bool on_val = cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_LOSS;
        /* Darts logs train_loss per step: Lightning's callback_metrics hold the last one. */
        const char *watched = tr->val.metric != NULL ? tr->val.metric
                              : on_val               ? "val_loss"
                                                     : "train_loss";
        double value = tr->val.metric != NULL ? tr->val.metric_value
                       : on_val               ? monitor_value
                                              : tr->controls.last_step_loss;
        tr->controls.stop_early =
            tsrnn_early_stopping_check(&tr->controls.early_stopping, watched, value,
                                       tr->controls.stop_reason, sizeof(tr->controls.stop_reason));
        tsrnn_lr_scheduler_update(&tr->controls.scheduler, &tr->adam, TSRNN_LR_INTERVAL_EPOCH,
                                  epoch, (double)(float)monitor_value);
    }
    st->has_controls = true;
    st->lr = tr->adam.lr;
    st->sched_last_epoch = tr->controls.scheduler.last_epoch;
    st->sched_best = tr->controls.scheduler.best;
    st->sched_num_bad_epochs = tr->controls.scheduler.num_bad_epochs;
    st->sched_cooldown_counter = tr->controls.scheduler.cooldown_counter;
    st->es_wait_count = tr->controls.early_stopping.wait_count;
    st->es_best_score = tr->controls.early_stopping.best_score;
    if (!tr->world.writes_files)
        return TSRNN_OK;
    /* A job beside the training failed (config.ini could not be written, ...): the run stops
     * here rather than train on to the end. */
    if (tsrnn_jobs_failed(&tr->folder.jobs))
        return tsrnn_jobs_finish(&tr->folder.jobs);
    TSRNN_TRY(tsrnn_metrics_csv_flush(&tr->folder.metrics));
    if (tsrnn_tb_is_open(&tr->folder.tb)) {
        TSRNN_TRY(
            tsrnn_tb_scalar(&tr->folder.tb, "lr", (float)tr->controls.epoch_lr, tr->pos.step - 1));
        TSRNN_TRY(tsrnn_tb_flush(&tr->folder.tb));
    }
    return tr->cfg->save_checkpoints ? tsrnn_trainer_save_checkpoints(tr) : TSRNN_OK;
}

/* The run stops before batch `batch` of `epoch`: rank 0 saves what is done, as the last
 * checkpoint, for --resume last. */
static enum tsrnn_status interrupt(struct trainer *tr, int64_t epoch, size_t batch)
{
    if (batch > 0) /* mid-epoch; else the previous epoch's checkpoint is the right one */
        TSRNN_TRY(end_epoch(tr, epoch, batch, false, NAN));
    TSRNN_TRY(tsrnn_trainer_drain_checkpoints(tr, TSRNN_OK)); /* on disk before the process ends */
    const char *saved = !tr->world.writes_files      ? "rank 0 saves it"
                        : !tr->cfg->save_checkpoints ? "none ([output] save_checkpoints = false)"
                        : tr->ckpt.last[0] == '\0'   ? "none yet"
                                                     : tsrnn_display_path(tr->ckpt.last);
    return tsrnn_error(TSRNN_ERR_INTERRUPTED,
                       "interrupted at epoch %lld after step %lld: %s/metrics.csv holds the %lld "
                       "finished steps; checkpoint: %s",
                       (long long)epoch, (long long)tr->pos.step - 1,
                       tsrnn_display_path(tr->folder.dir), (long long)tr->pos.step, saved);
}

/* The epoch's validation: its loss (a NaN or infinite one ends the run), logged where
 * Lightning logs it (metrics.csv, TensorBoard with the monitored metric, the bar); it becomes
 * *monitor_value. */
static enum tsrnn_status validate_epoch(struct trainer *tr, int64_t epoch,
                                        struct tsrnn_train_result *r, double *monitor_value)
{
    int64_t step = tr->pos.step - 1; /* the epoch's last */
    double t0 = tsrnn_clock_now_s(), val_loss;
    TSRNN_TRY(validate(tr, &val_loss));
    r->val_s += tsrnn_clock_now_s() - t0;
    if (!isfinite(val_loss))
        return tsrnn_error(TSRNN_ERR_NUMERIC,
                           "training diverged: the validation loss is %g after epoch %lld "
                           "(step %lld); try a smaller [training] lr (the epoch's learning "
                           "rate: %g)",
                           val_loss, (long long)epoch, (long long)step, tr->adam.lr);
    r->val_loss = val_loss;
    *monitor_value = val_loss;
    if (tr->world.writes_files) {
        TSRNN_TRY(tsrnn_metrics_csv_epoch(&tr->folder.metrics, epoch, step, val_loss));
        if (tsrnn_tb_is_open(&tr->folder.tb)) {
            TSRNN_TRY(tsrnn_tb_scalar(&tr->folder.tb, "val_loss", (float)val_loss, step));
            if (tr->val.metric != NULL)
                TSRNN_TRY(tsrnn_tb_scalar(&tr->folder.tb, tr->val.metric,
                                          (float)tr->val.metric_value, step));
            TSRNN_TRY(tsrnn_tb_scalar(&tr->folder.tb, "epoch", (float)epoch, step));
        }
    }
    tsrnn_progress_set_metric(&tr->report.progress, "val_loss", val_loss);
    if (tr->val.metric != NULL)
        tsrnn_progress_set_metric(&tr->report.progress, tr->val.metric, tr->val.metric_value);
    return TSRNN_OK;
}

/* One epoch from batch `first_batch` on: its steps (their results read every read_every), the
 * validation, the epoch's end (checkpoints, scheduler, early stopping); an agreed stop ends
 * the run here with a checkpoint (interrupt()). */
static enum tsrnn_status run_epoch(struct trainer *tr, int64_t epoch, size_t first_batch,
                                   struct tsrnn_train_result *r)
{
    size_t batch_count = tsrnn_sampler_batch_count(&tr->sampler);
    int64_t first_step = tr->pos.step;
    double loss_sum = 0.0;
    size_t b;

    tsrnn_sampler_set_epoch(&tr->sampler, (uint64_t)epoch);
    tr->controls.epoch_lr = tr->adam.lr;
    tsrnn_dropout_stream_seek(&tr->dropout, epoch, first_batch * (size_t)tr->cfg->batch_size);
    tsrnn_progress_begin_epoch(&tr->report.progress, epoch, batch_count, tsrnn_clock_now_s());
    for (b = first_batch; b < batch_count && !steps_done(tr); b++) {
        /* Asked to stop (the flag travelled with a step's gradients, so every rank agrees):
         * checkpoint the steps done so far; an epoch's last batch first finishes the epoch,
         * validation included, and the epoch's checkpoint covers it. */
        if (tr->world.stop_agreed)
            return interrupt(tr, epoch, b);
        const size_t *idx;
        size_t count = tsrnn_sampler_batch(&tr->sampler, b, &idx);
        double t0 = tsrnn_clock_now_s();
        TSRNN_TRY(train_step(tr, idx, count, b + 1 == batch_count));
        tr->pending.windows[tr->pending.count++] = count;
        tr->pos.step++;
        /* Lightning steps an interval-"step" scheduler after each optimizer step; the state
         * before it is kept until the step's result is read (a halt undoes later steps). */
        tr->pending.schedule[tr->pending.count - 1] =
            (struct pending_schedule){ tr->controls.scheduler.last_epoch, tr->adam.lr };
        tsrnn_lr_scheduler_update(&tr->controls.scheduler, &tr->adam, TSRNN_LR_INTERVAL_STEP,
                                  (int64_t)b, NAN);
        /* Every rank reads at the same steps: what decides it is the same everywhere. */
        if (tr->pending.count == tr->pending.read_every || b + 1 == batch_count || steps_done(tr)) {
            size_t next;
            TSRNN_TRY(read_steps(tr, epoch, b + 1 - tr->pending.count, r, &loss_sum, &next));
            b = next - 1;
        }
        r->train_s += tsrnn_clock_now_s() - t0;
    }
    r->epoch_mean_loss = loss_sum / (double)(tr->pos.step - first_step);
    double monitor_value = r->epoch_mean_loss;

    if (tr->ds->val.count > 0)
        TSRNN_TRY(validate_epoch(tr, epoch, r, &monitor_value));
    /* The bar's rate is the training's; checkpoints are written after it is done. */
    tsrnn_progress_end_epoch(&tr->report.progress, tsrnn_clock_now_s());
    TSRNN_TRY(end_epoch(tr, epoch, b, b == batch_count, monitor_value));
    if (tr->world.stop_agreed && b == batch_count)
        return interrupt(tr, epoch + 1, 0);
    if (tr->ds->val.count > 0) {
        r->best_val_loss = tr->ckpt.state.best_value;
        r->best_epoch = tr->ckpt.state.best_epoch;
    }
    r->epoch_count = epoch + 1;
    r->step_count = tr->pos.step;
    r->final_lr = tr->adam.lr;
    r->stopped_early = tr->controls.stop_early;
    return TSRNN_OK;
}

/* The set-up (tsrnn_trainer_setup), the banner, then the epochs, from where the run starts to
 * n_epochs, max_steps or early stopping, under the progress bar; then every rank's GPU for the
 * summary. */
static enum tsrnn_status fit(struct trainer *tr, struct tsrnn_train_result *r,
                             const struct tsrnn_train_options *options,
                             enum tsrnn_progress_mode progress)
{
    enum tsrnn_status status = TSRNN_OK;
    TSRNN_TRY(tsrnn_trainer_setup(tr));
    r->param_count = tr->model.table.total_count;
    r->first_step = r->step_count = tr->pos.step;
    r->epoch_count = tr->pos.start_epoch;
    r->final_lr = tr->adam.lr;
    if (!options->quiet)
        tsrnn_trainer_print_banner(tr, options);
    tsrnn_progress_init(&tr->report.progress, tr->report.out, progress);
    for (int64_t epoch = tr->pos.start_epoch;
         epoch < tr->cfg->n_epochs && !steps_done(tr) && !tr->controls.stop_early; epoch++) {
        status = run_epoch(tr, epoch, epoch == tr->pos.start_epoch ? tr->pos.start_batch : 0, r);
        if (status != TSRNN_OK)
            break;
    }
    tsrnn_progress_finish(&tr->report.progress);
    TSRNN_TRY(status);
    /* Right after the last step, before rank 0 alone writes the forecast: no rank waits. */
    return tsrnn_trainer_gather_gpus(tr);
}

/* Why the fit ended: Lightning's EarlyStopping reason (it logs it with verbose=True; rank 0
 * reports it to the launcher too), or its "`Trainer.fit` stopped" line. */
static void print_stop(const struct trainer *tr, const struct tsrnn_train_result *r, FILE *out)
{
    if (tr->controls.stop_early) {
        fprintf(out, "Early stopping after epoch %lld: %s\n", (long long)r->epoch_count - 1,
                tr->controls.stop_reason);
        tsrnn_world_report(tr->world.info, "early_stopping", "%s", tr->controls.stop_reason);
    } else if (tr->report.out != NULL) {
        bool steps = steps_done(tr);
        tsrnn_report_fit_stopped(out, steps ? "max_steps" : "max_epochs",
                                 steps ? tr->cfg->max_steps : tr->cfg->n_epochs);
    }
}

/* After the fit: the untrained weights of a max_steps = 0 run, the validation forecast and
 * its scores, the [forecast] files; metrics.csv and the TensorBoard file closed. */
static enum tsrnn_status after_fit(struct trainer *tr, struct tsrnn_train_result *r)
{
    const struct tsrnn_config *cfg = tr->cfg;
    bool rank0 = tr->world.writes_files;
    if (rank0 && cfg->max_steps == 0 && cfg->resume[0] == '\0')
        TSRNN_TRY(tsrnn_trainer_save_untrained(tr));
    if (tr->ds->val.count > 0)
        TSRNN_TRY(tsrnn_trainer_forecast_validation(tr, r));
    if (rank0 && cfg->forecast_n > 0)
        TSRNN_TRY(tsrnn_trainer_write_forecast(tr));
    TSRNN_TRY(tsrnn_metrics_csv_close(&tr->folder.metrics));
    return tsrnn_tb_close(&tr->folder.tb);
}

enum tsrnn_status tsrnn_train(struct tsrnn_train_result *result, const struct tsrnn_config *cfg,
                              const struct tsrnn_dataset *ds,
                              const struct tsrnn_train_options *options)
{
    int rank = options->comm ? tsrnn_comm_rank(options->comm) : 0;
    /* rank_zero_only: a rank other than 0 prints its "Initializing distributed" line alone */
    bool quiet = options->quiet || (options->rank_zero_only && rank > 0);
    struct trainer tr = {
        .cfg = cfg,
        .ds = ds,
        .compute = options->compute,
        .world = {
            .info = options->world,
            .comm = options->comm,
            .rank = rank,
            .size = options->comm ? tsrnn_comm_world_size(options->comm) : 1,
            .writes_files = rank == 0,
            .stop_requested = options->stop_requested,
        },
        .folder = {
            .lock = { .fd = -1 },
            .metrics = { .fd = -1 },
            .tb = { .fd = -1 },
        },
        .report = { .out = quiet ? NULL : options->out },
    };
    struct tsrnn_train_result r = {
        .first_step_loss = NAN,
        .last_step_loss = NAN,
        .epoch_mean_loss = NAN,
        .val_loss = NAN,
        .best_val_loss = NAN,
        .best_epoch = -1,
        .mape = NAN,
        .mae = NAN,
        .rmse = NAN,
    };
    double start = tsrnn_clock_now_s();
    enum tsrnn_status status = tsrnn_trainer_check_forecast(&tr);
    if (status != TSRNN_OK)
        goto out;
    status = fit(&tr, &r, options, quiet ? TSRNN_PROGRESS_NONE : options->progress);
    /* What the set-up and the epochs left to the writer thread and to the jobs beside the
     * training goes to disk: a failure there wins, as it happened earlier. */
    status = tsrnn_trainer_drain_checkpoints(&tr, status);
    status = tsrnn_trainer_finish_jobs(&tr, status);
    if (status != TSRNN_OK)
        goto out;
    print_stop(&tr, &r, options->out);
    status = after_fit(&tr, &r);
    if (status != TSRNN_OK)
        goto out;
    r.total_s = tsrnn_clock_now_s() - start;
    r.comm_s = tr.world.comm != NULL ? tsrnn_comm_allreduce_seconds(tr.world.comm) : 0.0;
    snprintf(r.run_dir, sizeof(r.run_dir), "%s", tr.folder.dir);
    tsrnn_trainer_find_best_checkpoint(&tr);
    snprintf(r.best_checkpoint, sizeof(r.best_checkpoint), "%s", tr.ckpt.best);
    snprintf(r.last_checkpoint, sizeof(r.last_checkpoint), "%s", tr.ckpt.last);
    /* A quiet rank other than 0 says nothing: rank 0 speaks for all. */
    if (!(quiet && rank > 0))
        tsrnn_trainer_print_result(&tr, &r, options->out);
out:
    tsrnn_trainer_finish(&tr);
    *result = r;
    return status;
}
