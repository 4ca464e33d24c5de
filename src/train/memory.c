/* What a run needs in memory, and the check against what the machine has
 * (include/tsrnn/memory.h; the machine's side: src/core/memory.c). */
#include "tsrnn/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t tsrnn_train_batch_capacity(const struct tsrnn_config *cfg, const struct tsrnn_dataset *ds,
                                  size_t world_size)
{
    size_t W = world_size > 0 ? world_size : 1;
    size_t train = (ds->train.count + W - 1) / W, val = (ds->val.count + W - 1) / W;
    size_t most = train > val ? train : val, B = (size_t)cfg->batch_size;
    if (most < 1)
        most = 1;
    return B < most ? B : most;
}

/* From this many recurrent weights (H x G*H) on, the CPU backend packs them (twice: for the
 * forward and the backward), on CPUs with AVX2 and FMA; counted on every CPU here
 * (src/compute/cpu/model.c, PACKED_MIN_WEIGHTS). */
#define PACKED_MIN_WEIGHTS (128.0 * 128.0)

/* The RNN "lanes" kernel's small layers (src/compute/cpu/cpu.h). */
#define LANES_MAX_HIDDEN 32.0

/* Floats of the workspace of a model of `d` for batches of B windows of T steps: the CPU
 * backend's layout (src/compute/cpu/model.c's layout()), also taken as the estimate of the
 * GPU's and the compiled program's buffers. */
static double workspace_floats(const struct tsrnn_model_dims *d, double B, double T)
{
    double H = (double)d->hidden_count, L = (double)d->layer_count;
    double GH = (double)tsrnn_model_gate_count(d->kind) * H;
    double I0 = (double)d->input_count, O = (double)d->output_count;
    double OP = (double)tsrnn_model_head_count(d); /* a likelihood's P parameters per target */
    bool lstm = d->kind == TSRNN_MODEL_LSTM, gru = d->kind == TSRNN_MODEL_GRU;
    bool packed = H * GH >= PACKED_MIN_WEIGHTS;
    double f = T * B * (I0 + O + 2.0 * OP); /* x, y, out, d_out */
    for (size_t l = 0; l < d->layer_count; l++) {
        double I = l == 0 ? I0 : H;
        f += T * B * GH;                                /* activated gates */
        f += (T + 1.0) * B * H * (lstm ? 2.0 : 1.0);    /* h (and c) with the initial state */
        f += lstm || gru ? T * B * H : 0.0;             /* tanh(c) or W_hn h + b_hn */
        f += I * GH + H * GH + (packed ? H * GH : 0.0); /* transposed (and packed) weights */
        f += d->kind == TSRNN_MODEL_RNN && H <= LANES_MAX_HIDDEN ? T * H * B + I * H + H : 0.0;
    }
    f += packed ? GH * H : 0.0;                                         /* packed for backward */
    f += L > 1 && d->dropout > 0.0 ? 2.0 * (L - 1.0) * T * B * H : 0.0; /* masks, dropped */
    f += T * B * H + T * B * GH * (gru ? 2.0 : 1.0);                    /* d_h, d_xg (, d_hg) */
    f += 8.0 * GH + B * GH + 4.0 * B * H;                               /* per-step scratch */
    f += L * B * H * (lstm ? 2.0 : 1.0);                                /* predict's state */
    /* the model's dropout masks (host): every layer's but the last */
    f += L > 1 && d->dropout > 0.0 ? (L - 1.0) * T * B * H : 0.0;
    return f;
}

static double param_floats(const struct tsrnn_model_dims *dims)
{
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, dims);
    return (double)table.total_count;
}

/* Splits the parts between the device and the host: a GPU holds the model's buffers. */
static void place(struct tsrnn_memory_need *need, enum tsrnn_compute_kind kind)
{
    double model = need->weights_nbytes + need->optimizer_nbytes + need->activations_nbytes;
    double host = need->batches_nbytes + need->copies_nbytes + need->forecast_nbytes;
    need->device_nbytes = kind == TSRNN_COMPUTE_CUDA ? model : 0.0;
    need->host_nbytes = kind == TSRNN_COMPUTE_CUDA ? host : model + host;
}

void tsrnn_memory_need_training(struct tsrnn_memory_need *need, const struct tsrnn_config *cfg,
                                const struct tsrnn_dataset *ds, const struct tsrnn_model_dims *dims,
                                enum tsrnn_compute_kind kind, size_t batch_capacity)
{
    double P = param_floats(dims), B = (double)batch_capacity;
    double T = (double)ds->training_length, C = (double)dims->output_count;
    double I = (double)dims->input_count, V = (double)ds->val.count;
    *need = (struct tsrnn_memory_need){ 0 };
    need->weights_nbytes = 4.0 * (2.0 * P + 2.0);
    /* Adam's and AdamW's two moments; SGD keeps its momentum in the first and the second
     * is allocated all the same (tsrnn_adam_init()) */
    need->optimizer_nbytes = 4.0 * 2.0 * P;
    need->activations_nbytes = 4.0 * workspace_floats(dims, B, T);
    /* x (B, T, I), y (B, T, C); per-window errors; the validation shard and its errors */
    need->batches_nbytes = 4.0 * B * T * (I + C) + 8.0 * B + 16.0 * (V + 1.0);
    /* Snapshots of the parameters and both moments (3P each): the checkpoint writer
     * (src/checkpoint/writer.c) may hold one being written, the newest and an improving one
     * queued behind it when it lags (a loaded machine), and the epoch's new one is taken
     * before the newest is dropped: four. A resumed checkpoint's file and its host copy (6P)
     * come before them. Else the host copy of the initial weights (and init_weights' file). */
    double copies = 4.0 * P;
    if (cfg->save_checkpoints)
        copies = 4.0 * 12.0 * P;
    else if (cfg->resume[0] != '\0')
        copies = 4.0 * 6.0 * P;
    else if (cfg->init_weights[0] != '\0')
        copies = 4.0 * 4.0 * P;
    need->copies_nbytes = copies + (cfg->gradient_clip_val > 0.0 ? 4.0 * P : 0.0);
    place(need, kind);
}

void tsrnn_memory_need_predict(struct tsrnn_memory_need *need, const struct tsrnn_model_dims *dims,
                               enum tsrnn_compute_kind kind, size_t batch_capacity, size_t icl,
                               double forecast_nbytes)
{
    double P = param_floats(dims), B = (double)batch_capacity, T = (double)icl;
    double I = (double)dims->input_count;
    *need = (struct tsrnn_memory_need){ 0 };
    need->weights_nbytes = 4.0 * (2.0 * P + 2.0);
    need->activations_nbytes = 4.0 * workspace_floats(dims, B, T);
    need->batches_nbytes = 4.0 * B * T * I;
    /* the checkpoint file (weights and moments), held while it is used, and its host copy */
    need->copies_nbytes = 4.0 * 6.0 * P;
    need->forecast_nbytes = forecast_nbytes;
    place(need, kind);
}

/* --- the check ------------------------------------------------------------------------- */

/* "1.5 GB", "117 MB", "12 kB" (powers of 1000, as the summary's MB). */
static const char *show(double nbytes, char *out, size_t capacity)
{
    if (nbytes >= 1e9)
        snprintf(out, capacity, "%.3g GB", nbytes * 1e-9);
    else if (nbytes >= 1e6)
        snprintf(out, capacity, "%.3g MB", nbytes * 1e-6);
    else if (nbytes >= 1e3)
        snprintf(out, capacity, "%.3g kB", nbytes * 1e-3);
    else
        snprintf(out, capacity, "%.0f bytes", nbytes);
    return out;
}

/* "parameters and gradients 6.4 GB, optimizer state 12.8 GB, ..." of the parts on one side. */
static void breakdown(const struct tsrnn_memory_need *need, bool device, char *out, size_t capacity)
{
    const struct {
        const char *name;
        double nbytes;
        bool on_device; /* where a GPU run keeps it */
    } parts[] = {
        { "parameters and gradients", need->weights_nbytes, true },
        { "optimizer state", need->optimizer_nbytes, true },
        { "activations", need->activations_nbytes, true },
        { "batches", need->batches_nbytes, false },
        { "checkpoint and weight copies", need->copies_nbytes, false },
        { "forecasts", need->forecast_nbytes, false },
    };
    size_t used = 0;
    out[0] = '\0';
    bool gpu = need->device_nbytes > 0.0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && used < capacity; i++) {
        if (parts[i].nbytes <= 0.0 || (gpu && parts[i].on_device != device))
            continue;
        char text[32];
        used += (size_t)snprintf(out + used, capacity - used, "%s%s %s", used ? ", " : "",
                                 parts[i].name, show(parts[i].nbytes, text, sizeof(text)));
    }
}

enum tsrnn_status tsrnn_memory_check(const struct tsrnn_memory_need *need,
                                     struct tsrnn_compute *compute, size_t processes,
                                     const char *what, const char *advice)
{
    char source[64], parts[512], a[32], b[32], c[32];
    double available;
    double host = need->host_nbytes * (double)(processes > 0 ? processes : 1);
    if (tsrnn_memory_available(&available, source, sizeof(source)) && host > available) {
        breakdown(need, false, parts, sizeof(parts));
        char each[96] = "";
        if (processes > 1)
            snprintf(each, sizeof(each), " for its %zu processes on this machine (%s each)",
                     processes, show(need->host_nbytes, c, sizeof(c)));
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s needs about %s of memory%s (%s), but this machine has %s "
                           "available (%s); %s",
                           what, show(host, a, sizeof(a)), each, parts,
                           show(available, b, sizeof(b)), source, advice);
    }
    char name[128];
    size_t used_nbytes, total_nbytes;
    if (need->device_nbytes > 0.0 && compute != NULL &&
        tsrnn_compute_device_memory(compute, name, sizeof(name), &used_nbytes, &total_nbytes)) {
        double free_nbytes = (double)total_nbytes - (double)used_nbytes;
        if (need->device_nbytes > free_nbytes) {
            breakdown(need, true, parts, sizeof(parts));
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s needs about %s of GPU memory (%s), but the GPU (%s) has %s "
                               "free of %s; %s",
                               what, show(need->device_nbytes, a, sizeof(a)), parts, name,
                               show(free_nbytes, b, sizeof(b)),
                               show((double)total_nbytes, c, sizeof(c)), advice);
        }
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_train_check_memory(const struct tsrnn_config *cfg,
                                           const struct tsrnn_dataset *ds,
                                           const struct tsrnn_model_dims *dims,
                                           struct tsrnn_compute *compute, size_t batch_capacity,
                                           size_t local_processes)
{
    struct tsrnn_memory_need need;
    enum tsrnn_compute_kind kind = compute ? tsrnn_compute_kind(compute) : TSRNN_COMPUTE_CPU;
    tsrnn_memory_need_training(&need, cfg, ds, dims, kind, batch_capacity);
    char advice[1024];
    double weights = need.weights_nbytes + need.optimizer_nbytes + need.copies_nbytes;
    double batches = need.activations_nbytes + need.batches_nbytes;
    if (weights >= batches)
        snprintf(advice, sizeof(advice),
                 "the largest part, the parameters and their copies, grows with [model] "
                 "hidden_dim = %d (%s) squared and n_rnn_layers = %d (%s): reduce them%s",
                 cfg->hidden_dim, tsrnn_config_origin(cfg, "model", "hidden_dim"),
                 cfg->n_rnn_layers, tsrnn_config_origin(cfg, "model", "n_rnn_layers"),
                 local_processes > 1 ? ", or run fewer workers on this machine" : "");
    else
        snprintf(advice, sizeof(advice),
                 "the largest part, the activations, grows with [training] batch_size = %d "
                 "(%s; %zu windows per batch here), [model] training_length = %d (%s), "
                 "hidden_dim = %d and n_rnn_layers = %d: reduce batch_size or "
                 "training_length%s",
                 cfg->batch_size, tsrnn_config_origin(cfg, "training", "batch_size"),
                 batch_capacity, cfg->training_length,
                 tsrnn_config_origin(cfg, "model", "training_length"), cfg->hidden_dim,
                 cfg->n_rnn_layers,
                 local_processes > 1 ? ", or run fewer workers on this machine" : "");
    return tsrnn_memory_check(&need, compute, local_processes, "the run", advice);
}
