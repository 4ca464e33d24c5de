/* What a run prints around the training: the banner before it (the program and its config,
 * the rank in its world, the compute backend, the data and this rank's batches, the checkpoint
 * resumed from, the devices, the model summary), once, and the summary after it (steps,
 * losses, times, the validation forecast's scores, each rank's GPU). */
#include <math.h>
#include <stdlib.h>

#include "trainer.h"
#include "tsrnn/comm.h"
#include "tsrnn/compute.h"

/* "Initializing distributed: ..." as Lightning prints it, with this rank's comm backend and
 * launcher. */
static void print_distributed(const struct trainer *tr, FILE *out)
{
    const struct tsrnn_world *w = tr->world.info;
    fprintf(out,
            "Initializing distributed: GLOBAL_RANK: %d, MEMBER: %d/%d (local rank %d, %s; "
            "started by %s)\n",
            w->rank, w->rank + 1, w->world_size, w->local_rank,
            tsrnn_comm_backend_name(tr->world.comm), w->launcher);
}

/* The CPU backend's warning when its large products run below what the CPU can do (BLAS):
 * models below 128 x 128 recurrent weights (the Darts guide's) keep their products in tsrnn's
 * loops and never reach BLAS, and get none. */
static void warn_blas(const struct trainer *tr, const char *program)
{
    const struct tsrnn_config *cfg = tr->cfg;
    size_t weights =
        tsrnn_model_gate_count(cfg->model) * (size_t)cfg->hidden_dim * (size_t)cfg->hidden_dim;
    const char *warning = tsrnn_compute_host_memory(tr->compute) && weights >= 128 * 128
                              ? tsrnn_compute_cpu_blas_warning()
                              : NULL;
    if (warning != NULL)
        fprintf(stderr, "%s: warning: %s\n", program, warning);
}

void tsrnn_trainer_print_banner(const struct trainer *tr, const struct tsrnn_train_options *options)
{
    const struct tsrnn_world *world = tr->world.info;
    FILE *out = options->out;
    bool distributed = world != NULL && world->world_size > 1;
    if (options->rank_zero_only && tr->world.rank > 0) {
        if (distributed)
            print_distributed(tr, out);
        fflush(out);
        return;
    }
    fprintf(out, "%s %s: %s, model %s\n", options->program, tsrnn_version(), options->config_path,
            tsrnn_model_kind_name(tr->cfg->model));
    if (distributed)
        print_distributed(tr, out);
    char kernels[1024];
    tsrnn_compute_describe(tr->compute, kernels, sizeof(kernels));
    fprintf(out, "Compute: %s\n", kernels);
    warn_blas(tr, options->program);
    tsrnn_report_dataset(out, tr->cfg, tr->ds, &tr->sampler);
    if (tr->report.restored[0] != '\0')
        fprintf(out,
                "Restored all states from the checkpoint at %s (epoch %lld, global step %lld)\n",
                tsrnn_display_path(tr->report.restored), (long long)tr->report.restored_epoch,
                (long long)tr->report.restored_step);
    bool gpu_used = tsrnn_compute_kind(tr->compute) == TSRNN_COMPUTE_CUDA;
    if (options->print_devices)
        tsrnn_report_devices(out, gpu_used || tsrnn_compute_available(TSRNN_COMPUTE_CUDA, NULL, 0),
                             gpu_used, tsrnn_compute_tpu_cores(tr->compute));
    if (gpu_used)
        tsrnn_report_cuda_devices(out, world != NULL ? world->local_rank : 0);
    tsrnn_report_model_summary(out, tsrnn_model_kind_name(tr->model.dims.kind),
                               (int64_t)tr->model.table.rnn_count,
                               (int64_t)tr->model.table.head_count);
    fflush(out);
}

/* Each rank's GPU for the summary, on every rank (Lightning's DeviceStatsMonitor reads the
 * same from CUDA): rank r's slot of (W, GPU_SLOT) doubles holds the memory in use and in all
 * (bytes) and the name, one character per double; every rank fills its own slot and one
 * allreduce sums the zeros of the others into it. GPU ranks only: a CPU run prints nothing
 * new and issues no extra collective. Not counted in the collectives' time per step. */
#define GPU_NAME_CHARS 64
#define GPU_SLOT       (2 + GPU_NAME_CHARS)

enum tsrnn_status tsrnn_trainer_gather_gpus(struct trainer *tr)
{
    char name[GPU_NAME_CHARS] = "";
    size_t used = 0, total = 0, W = (size_t)tr->world.size;
    if (tsrnn_compute_kind(tr->compute) != TSRNN_COMPUTE_CUDA)
        return TSRNN_OK;
    bool known = tsrnn_compute_device_memory(tr->compute, name, sizeof(name), &used, &total);
    if ((tr->report.gpus = calloc(W * GPU_SLOT, sizeof(double))) == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for the GPU summary");
    double *mine = tr->report.gpus + (size_t)tr->world.rank * GPU_SLOT;
    mine[0] = known ? (double)used : -1.0;
    mine[1] = (double)total;
    for (size_t i = 0; i < GPU_NAME_CHARS; i++)
        mine[2 + i] = (double)(unsigned char)name[i];
    if (tr->world.comm == NULL)
        return TSRNN_OK;
    return tsrnn_comm_allreduce_sum(tr->world.comm, tr->report.gpus, W * GPU_SLOT, TSRNN_COMM_F64);
}

/* "rank 1: NVIDIA H200, 1.21 GiB of 139.8 GiB in use (the device's, end of training)" per rank. */
static void print_gpus(const struct trainer *tr, FILE *out)
{
    for (int k = 0; tr->report.gpus != NULL && k < tr->world.size; k++) {
        const double *slot = tr->report.gpus + (size_t)k * GPU_SLOT;
        char name[GPU_NAME_CHARS];
        for (size_t i = 0; i < GPU_NAME_CHARS; i++)
            name[i] = (char)(unsigned char)slot[2 + i];
        name[GPU_NAME_CHARS - 1] = '\0';
        if (slot[0] < 0)
            fprintf(out, "rank %d: GPU %s, memory in use unknown\n", k, name);
        else
            fprintf(
                out,
                "rank %d: GPU %s, %.2f GiB of %.1f GiB in use (the device's, end of training)\n", k,
                name, slot[0] / 1073741824.0, slot[1] / 1073741824.0);
    }
}

/* "MQL 0.05: 4.12, 0.5: 9.87, 0.95: 3.33; 5-95% interval: coverage (MIC) 0.913, width (MIW)
 * 61.2 (500 sample paths, original scale)" */
static void print_quantile_scores(FILE *out, const struct tsrnn_quantile_scores *q, size_t samples)
{
    fprintf(out, "MQL");
    for (size_t k = 0; k < q->quantile_count; k++)
        fprintf(out, "%s %g: %.6g", k ? "," : "", q->quantiles[k], q->mql[k]);
    fprintf(out,
            "; %g-%g%% interval: coverage (MIC) %.6g, width (MIW) %.6g (%zu sample paths, "
            "original scale)\n",
            100 * q->low, 100 * q->high, q->mic, q->miw, samples);
}

void tsrnn_trainer_print_result(const struct trainer *tr, const struct tsrnn_train_result *r,
                                FILE *out)
{
    double train_s = r->train_s > 0.0 ? r->train_s : 1e-9;
    int64_t steps = r->step_count - r->first_step;
    if (steps == 0 && r->first_step == 0 && tr->cfg->max_steps == 0) {
        fprintf(out, "No training step (max_steps = 0): the %s weights are saved as %s\n",
                tr->cfg->init_weights[0] != '\0' ? "imported (init_weights)" : "initial",
                tr->ckpt.last[0] != '\0' ? tsrnn_display_path(tr->ckpt.last)
                                         : "rank 0's checkpoint");
    } else if (steps == 0) { /* resumed past the end: Lightning also just stops */
        fprintf(out,
                "Nothing left to train: the checkpoint ends at epoch %lld (step %lld) and "
                "n_epochs = %d, max_steps = %lld; raise them to train on\n",
                (long long)r->epoch_count - 1, (long long)r->step_count, tr->cfg->n_epochs,
                (long long)tr->cfg->max_steps);
    } else {
        if (r->first_step > 0)
            fprintf(out, "Resumed at step %lld: ", (long long)r->first_step);
        fprintf(out,
                "Trained %lld epochs (%lld steps) in %.3f s: %.0f steps/s, %.0f samples/s "
                "(optimizer steps %.3f s, validation %.3f s)\n",
                (long long)r->epoch_count, (long long)r->step_count, r->total_s,
                (double)steps / train_s, (double)r->sample_count / train_s, r->train_s, r->val_s);
        if (tr->world.comm != NULL)
            fprintf(out,
                    "%d rank%s (%s): %.0f samples/s in all; collectives %.3f s (%.3f ms per "
                    "step)\n",
                    tr->world.size, tr->world.size == 1 ? "" : "s",
                    tsrnn_comm_backend_name(tr->world.comm),
                    (double)r->sample_count * tr->world.size / train_s, r->comm_s,
                    1e3 * r->comm_s / (double)steps);
        print_gpus(tr, out);
        if (r->first_step == 0) /* a new run: its first step, as Darts' first logged loss */
            fprintf(out, "train_loss %.6g (first step), ", r->first_step_loss);
        else
            fprintf(out, "train_loss ");
        fprintf(out, "%.6g (last step), %.6g (mean of the last epoch)\n", r->last_step_loss,
                r->epoch_mean_loss);
    }
    if (!isnan(r->val_loss))
        fprintf(out, "val_loss %.6g (last epoch), best %.6g at epoch %lld\n", r->val_loss,
                r->best_val_loss, (long long)r->best_epoch);
    if (!isnan(r->mape) && !tsrnn_trainer_named_series(tr->ds))
        fprintf(out,
                "MAPE %.2f%% over the %zu validation steps (forecast from the last %d "
                "training points, original scale)\n",
                r->mape, r->forecast_count, tr->cfg->input_chunk_length);
    else if (!isnan(r->mae) && tsrnn_trainer_named_series(tr->ds))
        fprintf(out,
                "MAPE %.2f%%, MAE %.6g, RMSE %.6g: the mean over the %zu series of each one's "
                "validation forecast (%zu steps in all, original scale; per series: "
                "validation.csv)\n",
                r->mape, r->mae, r->rmse, tr->ds->series_count, r->forecast_count);
    if (r->has_quantile_scores)
        print_quantile_scores(out, &r->quantile_scores, (size_t)tr->cfg->num_samples);
    fprintf(out, "Run folder: %s\n", tsrnn_display_path(tr->folder.dir));
}
