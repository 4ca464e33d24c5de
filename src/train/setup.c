/* Setting up one rank's training and tearing it down: the checks a config and its data must
 * pass before anything is written, the model and its initial parameters (or imported ones),
 * the optimizer, learning-rate scheduler and early stopping, the sampler and dropout stream,
 * the batch and validation buffers, then rank 0's run folder and checkpoint writer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/memory.h"
#include "tsrnn/plot.h"
#include "tsrnn/safetensors.h"

/* The initial parameters, made on the host (init_weights or Darts' initialisation for
 * random_state) and uploaded. */
static enum tsrnn_status initial_params(struct trainer *tr, const struct tsrnn_model_dims *dims)
{
    const struct tsrnn_config *cfg = tr->cfg;
    enum tsrnn_status status = TSRNN_OK;
    float *host = malloc(tr->model.table.total_count * sizeof(float) + 1);
    if (host == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu parameters",
                             tr->model.table.total_count);
        goto out;
    }
    if (cfg->init_weights[0] != '\0') {
        status = tsrnn_model_load_params(host, &tr->model.table, cfg->init_weights);
        if (status != TSRNN_OK)
            goto out;
    } else {
        tsrnn_model_init_params(host, &tr->model.table, dims, (uint32_t)cfg->random_state);
    }
    status = tsrnn_model_upload_params(&tr->model, host);
out:
    free(host);
    return status;
}

/* Adam's state of a model converted from Darts: an init_weights file written by
 * scripts/darts-to-tsrnn holds the moments of Darts' Lightning checkpoint under tsrnn's
 * names (the other optimizers' state as the checkpoint keeps it: include/tsrnn/checkpoint.h,
 * centered RMSprop's grad_avg as optim.grad_avg.*) and their step as `darts.adam_step`; a
 * new run continues them, as a Darts fit
 * from that checkpoint would. Other init_weights files (a tsrnn checkpoint, plain weights)
 * bring the weights only, as Darts' load_weights. */
static enum tsrnn_status imported_moments(struct trainer *tr)
{
    const char *path = tr->cfg->init_weights;
    const struct tsrnn_param_table *table = &tr->model.table;
    size_t count = table->total_count;
    struct tsrnn_safetensors st = { 0 };
    float *host = NULL;
    enum tsrnn_status status = tsrnn_safetensors_read(&st, path);
    if (status != TSRNN_OK)
        goto out;
    const char *step_text = tsrnn_safetensors_metadata(&st, "darts.adam_step");
    char *end = NULL;
    unsigned long long step = step_text ? strtoull(step_text, &end, 10) : 0;
    if (step_text != NULL && (end == step_text || *end != '\0' || step > (1ull << 53))) {
        status = tsrnn_error(TSRNN_ERR_DATA,
                             "%s: __metadata__ \"darts.adam_step\" = \"%s\"; expected an "
                             "integer from 0 to 2^53",
                             tsrnn_display_path(path), step_text);
        goto out;
    }
    if (step == 0) /* weights only */
        goto out;
    host = malloc(3 * count * sizeof(float) + 1);
    if (host == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for Adam's moments");
        goto out;
    }
    status = tsrnn_model_read_tensors(host, table, &st, "optim.exp_avg.", path);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_model_read_tensors(host + count, table, &st, "optim.exp_avg_sq.", path);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_adam_import(&tr->adam, host, host + count);
    if (status != TSRNN_OK)
        goto out;
    /* centered RMSprop's grad_avg, under its own name */
    if (tr->adam.grad_avg != NULL) {
        status = tsrnn_model_read_tensors(host + 2 * count, table, &st, "optim.grad_avg.", path);
        if (status != TSRNN_OK)
            goto out;
        status = tsrnn_compute_upload(tr->compute, tr->adam.grad_avg, host + 2 * count,
                                      count * sizeof(float));
        if (status != TSRNN_OK)
            goto out;
    }
    tr->adam.step = step;
out:
    free(host);
    tsrnn_safetensors_finish(&st);
    return status;
}

/* [forecast] plot = true written in the config (not the default): the picture is asked for,
 * so a machine where cairo cannot draw refuses the run before it trains, not after. */
static enum tsrnn_status check_plot(const struct tsrnn_config *cfg)
{
    const char *origin = tsrnn_config_origin(cfg, "forecast", "plot");
    char why[1024];
    if (cfg->forecast_n == 0 || !cfg->forecast_plot || strcmp(origin, "default") == 0 ||
        tsrnn_plot_usable(why, sizeof(why)))
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "%s: [forecast] plot = true, but the picture cannot be drawn here: %s; "
                       "accepted: plot = false (or leave it out: the picture is then skipped with "
                       "a warning)",
                       origin, why);
}

/* A likelihood whose torch distribution validates its targets (negative_binomial and
 * geometric: counts; lognormal, gamma and weibull: positive; halfnormal and exponential:
 * non-negative; bernoulli: 0 or 1; Darts stops on the first batch otherwise) trains on such targets only: refused before anything is written, naming the
 * first value that is not one. */
static enum tsrnn_status check_support(const struct trainer *tr, const struct tsrnn_likelihood *lik)
{
    enum tsrnn_likelihood_support support = tsrnn_likelihood_support(lik->kind);
    const struct tsrnn_dataset *ds = tr->ds;
    for (size_t i = 0; i < ds->series_count; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        size_t C = item->series.component_count;
        for (size_t p = 0; p < item->series.length; p++)
            for (size_t c = 0; c < C; c++) {
                float v = item->scaled[p * C + c];
                if (tsrnn_likelihood_supports(support, v))
                    continue;
                char stamp[64];
                tsrnn_time_format(item->series.times[p], item->series.time_unit, stamp,
                                  sizeof(stamp));
                return tsrnn_error(
                    TSRNN_ERR_DATA,
                    "%s: [model] likelihood = %s models %s, but %s%s%s%s at %s is %g after "
                    "[data] scaler = %s; accepted: such targets (a minmax scaler maps the "
                    "training minimum to 0: scaler = none), as Darts' %s validates them (torch's "
                    "log_prob)",
                    tsrnn_config_origin(tr->cfg, "model", "likelihood"),
                    tsrnn_likelihood_name(lik->kind), tsrnn_likelihood_support_text(support),
                    item->series.component_names[c], item->id[0] ? " of series '" : "", item->id,
                    item->id[0] ? "'" : "", stamp, (double)v,
                    tr->cfg->scaler == TSRNN_SCALER_NONE ? "none" : "minmax",
                    tsrnn_likelihood_darts_class(lik->kind));
            }
    }
    return TSRNN_OK;
}

/* The model's dimensions: RNNModel's input is the target's C components beside the K future
 * covariates; a likelihood's P parameters per target come out of the head. */
static void model_dims(const struct trainer *tr, const struct tsrnn_likelihood *likelihood,
                       struct tsrnn_model_dims *dims)
{
    const struct tsrnn_config *cfg = tr->cfg;
    size_t C = tr->ds->component_count, K = tr->ds->covariates->count;
    *dims = (struct tsrnn_model_dims){
        .kind = cfg->model,
        .input_count = C + K,
        .hidden_count = (size_t)cfg->hidden_dim,
        .layer_count = (size_t)cfg->n_rnn_layers,
        .output_count = C,
        .dropout = cfg->dropout,
        .param_count = tsrnn_likelihood_param_count(likelihood),
    };
}

/* What a run must pass before anything is allocated or written: the accelerator, the targets
 * a likelihood models, a picture asked for, the device (made here unless the caller brought
 * one), the memory it all needs; then rank 0 locks the run folder. */
static enum tsrnn_status check_run(struct trainer *tr, const struct tsrnn_likelihood *likelihood,
                                   const struct tsrnn_model_dims *dims, size_t batch_capacity)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_world *world = tr->world.info;
    TSRNN_TRY(tsrnn_train_check(cfg));
    if (tsrnn_likelihood_support(likelihood->kind) != TSRNN_SUPPORT_REAL)
        TSRNN_TRY(check_support(tr, likelihood));
    if (tr->world.writes_files)
        TSRNN_TRY(check_plot(cfg));
    if (tr->compute == NULL) {
        TSRNN_TRY(
            tsrnn_train_compute_create(&tr->compute, cfg, world != NULL ? world->device_index : 0));
        tr->owns_compute = true;
    }
    size_t local_processes =
        world != NULL && world->local_world_size_known ? (size_t)world->local_world_size : 1;
    TSRNN_TRY(
        tsrnn_train_check_memory(cfg, tr->ds, dims, tr->compute, batch_capacity, local_processes));
    if ((size_t)snprintf(tr->folder.dir, sizeof(tr->folder.dir), "%s/%s", cfg->work_dir,
                         cfg->model_name) >= sizeof(tr->folder.dir) - 16)
        return tsrnn_error(TSRNN_ERR_USAGE, "[output] work_dir + model_name is too long");
    snprintf(tr->folder.ckpt_dir, sizeof(tr->folder.ckpt_dir), "%s/checkpoints", tr->folder.dir);
    if (tr->world.writes_files)
        TSRNN_TRY(tsrnn_trainer_lock_folder(tr, false));
    return TSRNN_OK;
}

/* What the backend must provide, asked once, before anything is allocated (the pjrt
 * backend's compiled step has Adam and MSELoss only, ...); the learning-rate schedulers and
 * early stopping run on the host and work everywhere. */
static enum tsrnn_status check_needs(const struct trainer *tr,
                                     const struct tsrnn_likelihood *likelihood)
{
    const struct tsrnn_config *cfg = tr->cfg;
    bool probabilistic = likelihood->kind != TSRNN_LIKELIHOOD_NONE;
    struct tsrnn_compute_needs needs = {
        .loss = probabilistic                                              ? TSRNN_LOSS_LIKELIHOOD
                : cfg->loss_fn == TSRNN_LOSS_SMOOTH_L1 && cfg->beta == 0.0 ? TSRNN_LOSS_L1
                                                                           : cfg->loss_fn,
        .likelihood = tsrnn_likelihood_name(likelihood->kind),
        .likelihood_origin = tsrnn_config_origin(cfg, "model", "likelihood"),
        .other_optimizer = cfg->optimizer_cls != TSRNN_OPTIMIZER_ADAM,
        .rule = tsrnn_optimizer_rule(cfg->optimizer_cls, cfg->nesterov),
        .l2_weight_decay = cfg->optimizer_cls != TSRNN_OPTIMIZER_ADAMW && cfg->weight_decay > 0.0,
        .clipping = cfg->gradient_clip_val > 0.0,
        .world_size = tr->world.size,
        .loss_origin = tsrnn_config_origin(cfg, "training", "loss_fn"),
        .optimizer_origin = tsrnn_config_origin(cfg, "training", "optimizer_cls"),
        .clip_origin = tsrnn_config_origin(cfg, "trainer", "gradient_clip_val"),
        .weight_decay_origin = tsrnn_config_origin(cfg, "training", "weight_decay"),
        .nesterov_origin = tsrnn_config_origin(cfg, "training", "nesterov"),
        /* EarlyStopping on MeanAbsoluteError reads validation's absolute errors (L1Loss's) */
        .abs_errors = cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE,
        .monitor_origin = tsrnn_config_origin(cfg, "early_stopping", "monitor"),
    };
    return tsrnn_compute_check_needs(tr->compute, &needs);
}

/* The model with its loss and initial parameters, the optimizer bound to every step, the
 * host-side controls, the gradients' reduction over the ranks, and how often the steps'
 * results are read. */
static enum tsrnn_status make_model(struct trainer *tr, const struct tsrnn_likelihood *likelihood,
                                    const struct tsrnn_model_dims *dims, size_t batch_capacity)
{
    const struct tsrnn_config *cfg = tr->cfg;
    TSRNN_TRY(check_needs(tr, likelihood));
    TSRNN_TRY(
        tsrnn_model_init(&tr->model, tr->compute, dims, batch_capacity, tr->ds->training_length));
    tr->model.loss = cfg->loss_fn;
    tr->model.loss_delta = (float)(cfg->loss_fn == TSRNN_LOSS_HUBER       ? cfg->delta
                                   : cfg->loss_fn == TSRNN_LOSS_SMOOTH_L1 ? cfg->beta
                                                                          : 0.0);
    if (likelihood->kind != TSRNN_LIKELIHOOD_NONE)
        TSRNN_TRY(tsrnn_model_likelihood(&tr->model, likelihood));
    TSRNN_TRY(initial_params(tr, dims));
    TSRNN_TRY(tsrnn_adam_init(&tr->adam, tr->compute, tr->model.table.total_count, cfg->lr));
    TSRNN_TRY(tsrnn_adam_set_rule(&tr->adam, cfg));
    /* What every training step updates: the model's parameters, the optimizer's state. */
    struct tsrnn_step_state state = tsrnn_adam_step_state(&tr->adam, tr->model.params);
    TSRNN_TRY(tsrnn_compute_bind_state(tr->model.ws, &state));
    tsrnn_lr_scheduler_init(&tr->controls.scheduler, cfg);
    tr->adam.lr = tsrnn_lr_scheduler_initial_lr(&tr->controls.scheduler, cfg->lr);
    tsrnn_early_stopping_init(&tr->controls.early_stopping, cfg);
    if (tr->world.comm != NULL)
        tsrnn_comm_step_reduce(tr->world.comm, &tr->world.reduce);
    tr->pending.read_every = 1;
    if (!tsrnn_compute_caps(tr->compute)->immediate_results) {
        int64_t every = cfg->log_every_n_steps;
        tr->pending.read_every = every < 1 ? 1
                                 : every > TSRNN_MODEL_RESULTS_CAPACITY
                                     ? TSRNN_MODEL_RESULTS_CAPACITY
                                     : (size_t)every;
    }
    if (cfg->init_weights[0] != '\0' && cfg->resume[0] == '\0')
        TSRNN_TRY(imported_moments(tr));
    return TSRNN_OK;
}

/* Where the run starts: a new run at step 0; resuming, rank 0 restores the checkpoint; then
 * every rank takes rank 0's state (resume.c). */
static enum tsrnn_status start_position(struct trainer *tr)
{
    const struct tsrnn_config *cfg = tr->cfg;
    tr->ckpt.state.random_state = (uint32_t)cfg->random_state;
    tr->ckpt.state.monitor = tr->ds->val.count > 0 ? "val_loss" : "train_loss";
    tr->ckpt.state.best_value = NAN;
    tr->ckpt.state.best_epoch = -1;
    if (cfg->resume[0] != '\0' && tr->world.writes_files)
        TSRNN_TRY(tsrnn_trainer_resume(tr, cfg->resume));
    TSRNN_TRY(tsrnn_trainer_share_rank0_state(tr));
    /* OneCycleLR's momentum, at its step */
    tsrnn_lr_scheduler_apply_momentum(&tr->controls.scheduler, &tr->adam);
    return TSRNN_OK;
}

/* The sampler (PyTorch's DistributedSampler over Darts' shuffle) and the dropout stream, both
 * positioned for this random_state; a resumed epoch that had fewer batches is done. */
static enum tsrnn_status make_sampler(struct trainer *tr, const struct tsrnn_model_dims *dims)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t W = (size_t)tr->world.size, rank = (size_t)tr->world.rank;
    /* Darts' shuffle for this random_state: the weight initialisation has drawn one number
     * per parameter before the loaders start (also when init_weights replaces it); whether
     * Lightning's sanity check drew one more is rng_compat's. */
    struct tsrnn_darts_fit fit = {
        .random_state = (uint32_t)cfg->random_state,
        .param_count = tr->model.table.total_count,
        .validation = ds->val.count > 0,
        .sanity_check_draws = cfg->rng_compat == TSRNN_RNG_COMPAT_LIGHTNING1,
        .shuffle = cfg->shuffle,
    };
    /* Dropout draws inside each step from the same generator (dropout.h), which moves the
     * later epochs' shuffles on. */
    tsrnn_dropout_stream_init(&tr->dropout, &fit,
                              tsrnn_model_dropout_draws(dims, ds->training_length),
                              (ds->train.count + W - 1) / W, rank, W);
    struct tsrnn_shuffle shuffle = {
        .random_state = fit.random_state,
        .param_count = fit.param_count,
        .validation = fit.validation,
        .sanity_check_draws = fit.sanity_check_draws,
        .epoch_draws = tr->dropout.fit.epoch_draws,
    };
    TSRNN_TRY(tsrnn_sampler_init(&tr->sampler, ds->train.count, (size_t)cfg->batch_size,
                                 cfg->shuffle ? &shuffle : NULL, rank, W));
    size_t batch_count = tsrnn_sampler_batch_count(&tr->sampler);
    if (tr->pos.start_batch >= batch_count) {
        tr->pos.start_epoch++; /* the checkpoint's epoch had fewer batches: it is done */
        tr->pos.start_batch = 0;
    }
    return tsrnn_lr_scheduler_check_steps(&tr->controls.scheduler, cfg, (int64_t)batch_count);
}

/* The batch buffers (x, y) and the validation pass's: this rank's windows (each window
 * evaluated exactly once: shards without padding) and their sums. */
static enum tsrnn_status make_buffers(struct trainer *tr, size_t batch_capacity)
{
    const struct tsrnn_config *cfg = tr->cfg;
    const struct tsrnn_dataset *ds = tr->ds;
    size_t C = ds->component_count, T = ds->training_length, K = ds->covariates->count;
    size_t V = ds->val.count;
    if (cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE ||
        cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MSE) {
        bool mae = cfg->es_monitor == TSRNN_EARLY_STOPPING_VAL_MAE;
        tr->val.metric = mae ? "val_MeanAbsoluteError" : "val_MeanSquaredError";
        tr->val.metric_loss = mae ? TSRNN_LOSS_L1 : TSRNN_LOSS_MSE;
    }
    size_t sums = tr->val.metric != NULL ? 2 : 1;
    tr->val.metric_value = NAN;
    tr->x = malloc(batch_capacity * T * (C + K) * sizeof(float));
    tr->y = malloc(batch_capacity * T * C * sizeof(float));
    tr->val.idx = malloc((V + 1) * sizeof(size_t));
    tr->val.se = malloc((sums * V + 1) * sizeof(double));
    tr->val.batch_se = malloc(sums * batch_capacity * sizeof(double));
    if (tr->x == NULL || tr->y == NULL || tr->val.idx == NULL || tr->val.se == NULL ||
        tr->val.batch_se == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a batch of %zu windows",
                           batch_capacity);
    for (size_t i = (size_t)tr->world.rank; i < V; i += (size_t)tr->world.size)
        tr->val.idx[tr->val.local_count++] = i;
    return TSRNN_OK;
}

/* Rank 0's run folder, then its checkpoint writer. TSRNN_CHECKPOINT_SYNC=1 writes each
 * epoch's checkpoints before the next epoch starts, as tsrnn did before the writer thread:
 * for tests and comparisons (docs/run-folder.md). */
static enum tsrnn_status open_run_folder(struct trainer *tr)
{
    TSRNN_TRY(tsrnn_trainer_prepare_folder(tr));
    tsrnn_world_report(tr->world.info, "run_dir", "%s", tr->folder.dir);
    if (!tr->cfg->save_checkpoints)
        return TSRNN_OK;
    const char *sync = getenv("TSRNN_CHECKPOINT_SYNC");
    return tsrnn_checkpoint_writer_create(&tr->ckpt.writer, tr->folder.ckpt_dir, &tr->model,
                                          tr->cfg, tr->ds, sync == NULL || strcmp(sync, "1") != 0);
}

enum tsrnn_status tsrnn_trainer_setup(struct trainer *tr)
{
    struct tsrnn_likelihood likelihood;
    struct tsrnn_model_dims dims;
    /* Buffers for the largest batch this rank meets: batch_size, or its windows if fewer. */
    size_t batch_capacity = tsrnn_train_batch_capacity(tr->cfg, tr->ds, (size_t)tr->world.size);
    tsrnn_likelihood_from_config(&likelihood, tr->cfg);
    model_dims(tr, &likelihood, &dims);
    TSRNN_TRY(check_run(tr, &likelihood, &dims, batch_capacity));
    TSRNN_TRY(make_model(tr, &likelihood, &dims, batch_capacity));
    TSRNN_TRY(start_position(tr));
    TSRNN_TRY(make_sampler(tr, &dims));
    TSRNN_TRY(make_buffers(tr, batch_capacity));
    if (!tr->world.writes_files)
        return TSRNN_OK;
    return open_run_folder(tr);
}

void tsrnn_trainer_finish(struct trainer *tr)
{
    tsrnn_jobs_finish(&tr->folder.jobs); /* joined already where the run got that far */
    tsrnn_checkpoint_writer_destroy(tr->ckpt.writer); /* reads the model: first */
    tsrnn_metrics_csv_close(&tr->folder.metrics);
    tsrnn_tb_close(&tr->folder.tb);
    tsrnn_model_finish(&tr->model);
    tsrnn_adam_finish(&tr->adam);
    tsrnn_sampler_finish(&tr->sampler);
    if (tr->owns_compute)
        tsrnn_compute_destroy(tr->compute);
    free(tr->x);
    free(tr->y);
    free(tr->val.idx);
    free(tr->val.se);
    free(tr->val.batch_se);
    free(tr->report.gpus);
    tsrnn_run_lock_release(&tr->folder.lock);
}
