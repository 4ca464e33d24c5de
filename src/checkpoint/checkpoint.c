/* Training checkpoints (include/tsrnn/checkpoint.h): the model's weights, Adam's moments and
 * the run's state in one safetensors file, and the checkpoints of a run folder. */
#include "tsrnn/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/crc32c.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENSURE_ASCII)

static const char *const time_unit_names[] = {
    "index", "year", "month", "day", "minute", "second"
};

/* --- writing --------------------------------------------------------------------------- */

static json_t *float_array(const float *v, size_t count)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < count; i++)
        json_array_append_new(a, json_real((double)v[i]));
    return a;
}

static char *model_json(const struct tsrnn_model_dims *d, const struct tsrnn_config *cfg)
{
    json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:i, s:i}", "model",
                          tsrnn_model_kind_name(d->kind), "input_size", (json_int_t)d->input_count,
                          "hidden_dim", (json_int_t)d->hidden_count, "n_rnn_layers",
                          (json_int_t)d->layer_count, "output_size", (json_int_t)d->output_count,
                          "dropout", (double)d->dropout, "input_chunk_length",
                          cfg->input_chunk_length, "training_length", cfg->training_length);
    char *text = o ? json_dumps(o, JSON_FLAGS) : NULL;
    json_decref(o);
    return text;
}

static json_t *scaler_object(const struct tsrnn_scaler *s, enum tsrnn_scaler_kind kind)
{
    size_t C = s->component_count;
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "kind",
                     kind == TSRNN_SCALER_MINMAX ? "minmax" : "none", "data_min",
                     float_array(s->data_min, C), "data_max", float_array(s->data_max, C), "scale",
                     float_array(s->scale, C), "offset", float_array(s->offset, C));
}

static char *scaler_json(const struct tsrnn_scaler *s, const struct tsrnn_config *cfg)
{
    json_t *o = scaler_object(s, cfg->scaler);
    char *text = o ? json_dumps(o, JSON_FLAGS) : NULL;
    json_decref(o);
    return text;
}

/* tsrnn.covariates: the encoders ("kind:attribute", in order) and their scaler; NULL (and no
 * entry) without covariates. */
static char *covariates_json(const struct tsrnn_covariates *cov, const struct tsrnn_config *cfg)
{
    json_t *encoders = json_array();
    for (size_t e = 0; encoders != NULL && e < cov->encoder_count; e++) {
        char text[2 * TSRNN_ENCODER_NAME_MAX];
        snprintf(text, sizeof(text), "%s:%s", tsrnn_encoder_kind_name(cov->encoders[e].kind),
                 cov->encoders[e].name);
        json_array_append_new(encoders, json_string(text));
    }
    json_t *data_columns = json_array();
    for (size_t k = 0; data_columns != NULL && k < cov->column_count; k++)
        json_array_append_new(data_columns, json_string(cov->column_names[k]));
    json_t *o = json_pack("{s:o, s:o, s:I, s:o}", "data_columns", data_columns, "encoders",
                          encoders, "columns", (json_int_t)cov->count, "scaler",
                          scaler_object(&cov->scaler, cfg->cov_scaler));
    char *text = o ? json_dumps(o, JSON_FLAGS) : NULL;
    json_decref(o);
    return text;
}

/* tsrnn.series_list: every series of a run of named series (several files, or a long-format
 * file), with what forecasting it needs: its id, where its training part ends, its
 * frequency and its scaler, and with covariates their scaler (its own for the data file's
 * covariate columns, the shared one for the encoders'). */
static char *series_list_json(const struct tsrnn_dataset *ds, const struct tsrnn_config *cfg)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < ds->series_count; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        const struct tsrnn_series *s = &item->series;
        char end[64], freq[TSRNN_FREQ_NAME_MAX];
        tsrnn_time_format(s->times[item->train_length - 1], s->time_unit, end, sizeof(end));
        tsrnn_freq_name(&s->freq, freq, sizeof(freq));
        json_t *entry =
            json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:o}", "id", item->id, "time_unit",
                      time_unit_names[s->time_unit], "freq", freq, "length", (json_int_t)s->length,
                      "train_length", (json_int_t)item->train_length, "train_end",
                      (json_int_t)s->times[item->train_length - 1], "train_end_text", end, "scaler",
                      scaler_object(&item->scaler, cfg->scaler));
        if (entry != NULL && item->covariates != NULL)
            json_object_set_new(entry, "covariate_scaler",
                                scaler_object(&item->cov_scaler, cfg->cov_scaler));
        json_array_append_new(list, entry);
    }
    json_t *o = list ? json_pack("{s:o}", "series", list) : NULL;
    char *text = o ? json_dumps(o, JSON_FLAGS) : NULL;
    json_decref(o);
    return text;
}

static char *series_json(const struct tsrnn_dataset_series *ds)
{
    const struct tsrnn_series *s = &ds->series;
    char end[64];
    json_t *names = json_array();
    for (size_t c = 0; names != NULL && c < s->component_count; c++)
        json_array_append_new(names, json_string(s->component_names[c]));
    char freq[TSRNN_FREQ_NAME_MAX];
    tsrnn_time_format(s->times[ds->train_length - 1], s->time_unit, end, sizeof(end));
    tsrnn_freq_name(&s->freq, freq, sizeof(freq));
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:s}", "time_col", s->time_name,
                          "time_unit", time_unit_names[s->time_unit], "freq", freq, "components",
                          names, "train_length", (json_int_t)ds->train_length, "train_end",
                          (json_int_t)s->times[ds->train_length - 1], "train_end_text", end);
    char *text = o ? json_dumps(o, JSON_FLAGS) : NULL;
    json_decref(o);
    return text;
}

enum tsrnn_status tsrnn_checkpoint_snapshot_take(struct tsrnn_checkpoint_snapshot **out,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_adam *adam,
                                                 const struct tsrnn_train_state *state)
{
    size_t count = model->table.total_count, groups = adam->grad_avg != NULL ? 4 : 3;
    struct tsrnn_checkpoint_snapshot *snap = malloc(sizeof(*snap) + groups * count * sizeof(float));
    *out = NULL;
    if (snap == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a checkpoint of %zu parameters",
                           count);
    *snap = (struct tsrnn_checkpoint_snapshot){ .state = *state,
                                                .adam_step = adam->step,
                                                .adam_lr = adam->lr,
                                                .count = count,
                                                .group_count = groups };
    enum tsrnn_status status =
        tsrnn_compute_download(model->compute, snap->host, model->params, count * sizeof(float));
    if (status == TSRNN_OK)
        status = tsrnn_compute_download(adam->compute, snap->host + count, adam->exp_avg,
                                        count * sizeof(float));
    if (status == TSRNN_OK)
        status = tsrnn_compute_download(adam->compute, snap->host + 2 * count, adam->exp_avg_sq,
                                        count * sizeof(float));
    if (status == TSRNN_OK && groups == 4)
        status = tsrnn_compute_download(adam->compute, snap->host + 3 * count, adam->grad_avg,
                                        count * sizeof(float));
    if (status != TSRNN_OK) {
        free(snap);
        return status;
    }
    *out = snap;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_checkpoint_save(const char *path, const struct tsrnn_model *model,
                                        const struct tsrnn_adam *adam,
                                        const struct tsrnn_train_state *state,
                                        const struct tsrnn_config *cfg,
                                        const struct tsrnn_dataset *ds, bool sync_folder)
{
    struct tsrnn_checkpoint_snapshot *snap;
    TSRNN_TRY(tsrnn_checkpoint_snapshot_take(&snap, model, adam, state));
    enum tsrnn_status status = tsrnn_checkpoint_write(path, snap, model, cfg, ds, sync_folder);
    free(snap);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_write(const char *path,
                                         const struct tsrnn_checkpoint_snapshot *snap,
                                         const struct tsrnn_model *model,
                                         const struct tsrnn_config *cfg,
                                         const struct tsrnn_dataset *ds, bool sync_folder)
{
    const struct tsrnn_param_table *table = &model->table;
    const struct tsrnn_train_state *state = &snap->state;
    size_t n = table->entry_count, count = snap->count, groups = snap->group_count;
    struct tsrnn_tensor_desc *tensors = calloc(groups * n, sizeof(*tensors));
    char(*names)[TSRNN_PARAM_NAME_MAX + 24] = calloc(groups * n, sizeof(*names));
    static const char *const prefixes[4] = { "", "optim.exp_avg.", "optim.exp_avg_sq.",
                                             "optim.grad_avg." };
    uint32_t crc = 0;

    enum tsrnn_status status = TSRNN_OK;
    for (size_t group = 0; tensors != NULL && names != NULL && group < groups; group++)
        for (size_t e = 0; e < n; e++) {
            const struct tsrnn_param_entry *entry = &table->entries[e];
            struct tsrnn_tensor_desc *t = &tensors[group * n + e];
            snprintf(names[group * n + e], sizeof(names[0]), "%s%s", prefixes[group], entry->name);
            t->name = names[group * n + e];
            t->dtype = TSRNN_DTYPE_F32;
            t->rank = entry->rank;
            memcpy(t->shape, entry->shape, sizeof(entry->shape));
            t->data = snap->host + group * count + entry->offset;
            crc = tsrnn_crc32c(crc, t->data, entry->count * sizeof(float));
        }

    char epoch[32], batches[32], step[32], adam_step[32], version[16], crc_text[16], meta_crc[16];
    char value[32], best[32], best_epoch[32], lr[32], sched[160], es[96];
    snprintf(epoch, sizeof(epoch), "%" PRId64, state->epoch);
    snprintf(batches, sizeof(batches), "%" PRId64, state->batches_done);
    snprintf(step, sizeof(step), "%" PRId64, state->global_step);
    snprintf(adam_step, sizeof(adam_step), "%" PRIu64, snap->adam_step);
    snprintf(version, sizeof(version), "%d", TSRNN_CHECKPOINT_FORMAT_VERSION);
    snprintf(crc_text, sizeof(crc_text), "%08" PRIx32, crc);
    snprintf(value, sizeof(value), "%.17g", state->monitor_value);
    snprintf(best, sizeof(best), "%.17g", state->best_value);
    snprintf(best_epoch, sizeof(best_epoch), "%" PRId64, state->best_epoch);
    snprintf(lr, sizeof(lr), "%.17g", state->has_controls ? state->lr : snap->adam_lr);
    snprintf(sched, sizeof(sched),
             "last_epoch=%" PRId64 " best=%.17g num_bad_epochs=%" PRId64
             " cooldown_counter=%" PRId64,
             state->sched_last_epoch, state->has_controls ? state->sched_best : INFINITY,
             state->sched_num_bad_epochs, state->sched_cooldown_counter);
    snprintf(es, sizeof(es), "wait_count=%" PRId64 " best_score=%.9g", state->es_wait_count,
             state->has_controls ? state->es_best_score : INFINITY);

    json_t *rng =
        json_pack("{s:I, s:I, s:I}", "random_state", (json_int_t)state->random_state, "next_epoch",
                  (json_int_t)(state->epoch_complete ? state->epoch + 1 : state->epoch),
                  "next_step", (json_int_t)state->global_step);
    char *rng_text = rng ? json_dumps(rng, JSON_FLAGS) : NULL;
    json_decref(rng);
    char *model_text = model_json(&model->dims, cfg);
    char *scaler_text = scaler_json(&ds->items[0].scaler, cfg);
    char *series_text = series_json(&ds->items[0]);
    bool named = ds->items[0].id[0] != '\0';
    char *list_text = named ? series_list_json(ds, cfg) : NULL;
    char *cfg_text = tsrnn_config_text(cfg);
    bool has_covariates = ds->covariates != NULL && ds->covariates->count > 0;
    char *cov_text = has_covariates ? covariates_json(ds->covariates, cfg) : NULL;

    if (status == TSRNN_OK &&
        (tensors == NULL || names == NULL || rng_text == NULL || model_text == NULL ||
         scaler_text == NULL || series_text == NULL || cfg_text == NULL ||
         (has_covariates && cov_text == NULL) || (named && list_text == NULL)))
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing the checkpoint %s",
                             tsrnn_display_path(path));
    if (status == TSRNN_OK) {
        struct tsrnn_metadata_entry metadata[] = {
            { "format", "pt" },
            { "tsrnn.format_version", version },
            { "tsrnn.version", tsrnn_version() },
            { "tsrnn.epoch", epoch },
            { "tsrnn.batches_done", batches },
            { "tsrnn.epoch_complete", state->epoch_complete ? "true" : "false" },
            { "tsrnn.global_step", step },
            { "tsrnn.adam_step", adam_step },
            { "tsrnn.rng_state", rng_text },
            { "tsrnn.monitor", state->monitor },
            { "tsrnn.monitor_value", value },
            { "tsrnn.best_value", best },
            { "tsrnn.best_epoch", best_epoch },
            { "tsrnn.lr", lr },
            { "tsrnn.lr_scheduler", sched },
            { "tsrnn.early_stopping", es },
            { "tsrnn.model", model_text },
            { "tsrnn.scaler", scaler_text },
            { "tsrnn.series", series_text },
            { "tsrnn.config", cfg_text },
            { "tsrnn.data_crc32c", crc_text },
            { "tsrnn.covariates", cov_text },      /* only with covariates */
            { "tsrnn.series_list", list_text },    /* named series only */
            { "tsrnn.metadata_crc32c", meta_crc }, /* over all the others: last */
        };
        /* The optional entries without a value are dropped, the others keep their order. */
        size_t entry_count = 0;
        for (size_t k = 0; k < sizeof(metadata) / sizeof(metadata[0]); k++)
            if (metadata[k].value != NULL)
                metadata[entry_count++] = metadata[k];
        snprintf(meta_crc, sizeof(meta_crc), "%08" PRIx32,
                 tsrnn_safetensors_metadata_crc(metadata, entry_count));
        status = sync_folder
                     ? tsrnn_safetensors_write(path, tensors, groups * n, metadata, entry_count)
                     : tsrnn_safetensors_write_unsynced(path, tensors, groups * n, metadata,
                                                        entry_count);
    }
    free(rng_text);
    free(model_text);
    free(scaler_text);
    free(series_text);
    free(list_text);
    free(cfg_text);
    free(cov_text);
    free(names);
    free(tensors);
    return status;
}

/* --- reading --------------------------------------------------------------------------- */

/* The metadata value `key`, or an error naming the file. */
static enum tsrnn_status need(const struct tsrnn_checkpoint *ck, const char *key,
                              const char **value)
{
    *value = tsrnn_safetensors_metadata(&ck->file, key);
    if (*value == NULL)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: the checkpoint's __metadata__ lacks \"%s\"",
                           tsrnn_display_path(ck->path), key);
    return TSRNN_OK;
}

/* The largest count of epochs, steps or batches a checkpoint may claim: far beyond any run
 * ([training] n_epochs <= 1e8, max_steps < 2^31), far below where counting would overflow. */
#define MAX_COUNT ((int64_t)1 << 53)

static enum tsrnn_status need_int_in(const struct tsrnn_checkpoint *ck, const char *key,
                                     int64_t min, int64_t max, int64_t *out)
{
    const char *text;
    TSRNN_TRY(need(ck, key, &text));
    if (!tsrnn_parse_int64(text, out) || *out < min || *out > max)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: __metadata__ \"%s\" = \"%s\"; expected an integer from %lld to "
                           "%lld",
                           tsrnn_display_path(ck->path), key, text, (long long)min, (long long)max);
    return TSRNN_OK;
}

static enum tsrnn_status need_int(const struct tsrnn_checkpoint *ck, const char *key, int64_t min,
                                  int64_t *out)
{
    return need_int_in(ck, key, min, MAX_COUNT, out);
}

static enum tsrnn_status need_double(const struct tsrnn_checkpoint *ck, const char *key,
                                     double *out)
{
    const char *text;
    char *end;
    TSRNN_TRY(need(ck, key, &text));
    errno = 0;
    *out = strtod(text, &end);
    if (end == text || *end != '\0')
        return tsrnn_error(TSRNN_ERR_DATA, "%s: __metadata__ \"%s\" = \"%s\"; expected a number",
                           tsrnn_display_path(ck->path), key, text);
    return TSRNN_OK;
}

static enum tsrnn_status need_json(const struct tsrnn_checkpoint *ck, const char *key, json_t **out)
{
    const char *text;
    json_error_t err;
    TSRNN_TRY(need(ck, key, &text));
    *out = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (*out == NULL || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return tsrnn_error(TSRNN_ERR_DATA, "%s: __metadata__ \"%s\" is not a JSON object (%s)",
                           tsrnn_display_path(ck->path), key, err.text);
    }
    return TSRNN_OK;
}

static enum tsrnn_status bad_json(const struct tsrnn_checkpoint *ck, const char *key,
                                  const char *what)
{
    return tsrnn_error(TSRNN_ERR_DATA, "%s: __metadata__ \"%s\": %s", tsrnn_display_path(ck->path),
                       key, what);
}

static enum tsrnn_status read_floats(const struct tsrnn_checkpoint *ck, const char *key, json_t *o,
                                     const char *field, float *out, size_t count)
{
    json_t *a = json_object_get(o, field);
    if (!json_is_array(a) || json_array_size(a) != count)
        return bad_json(ck, key, "an array has the wrong length");
    for (size_t i = 0; i < count; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return bad_json(ck, key, "an entry is not a finite number");
        out[i] = (float)json_number_value(v);
    }
    return TSRNN_OK;
}

static enum tsrnn_status read_model(struct tsrnn_checkpoint *ck)
{
    json_t *o;
    const char *kind = NULL;
    json_int_t in = 0, hidden = 0, layers = 0, out = 0, icl = 0, tl = 0;
    double dropout = -1;
    TSRNN_TRY(need_json(ck, "tsrnn.model", &o));
    int rc =
        json_unpack(o, "{s:s, s:I, s:I, s:I, s:I, s:F, s:I, s:I}", "model", &kind, "input_size",
                    &in, "hidden_dim", &hidden, "n_rnn_layers", &layers, "output_size", &out,
                    "dropout", &dropout, "input_chunk_length", &icl, "training_length", &tl);
    enum tsrnn_status status = TSRNN_OK;
    if (rc != 0 || in < 1 || in > 2 * TSRNN_MAX_COMPONENTS || hidden < 1 || hidden > 65536 ||
        layers < 1 || layers > TSRNN_MODEL_MAX_LAYERS || out < 1 || out > TSRNN_MAX_COMPONENTS ||
        !(dropout >= 0 && dropout < 1) || icl < 1 || tl < icl || tl > 1000000)
        status = bad_json(ck, "tsrnn.model", "a field is missing or out of range");
    else if (strcmp(kind, "RNN") == 0)
        ck->dims.kind = TSRNN_MODEL_RNN;
    else if (strcmp(kind, "LSTM") == 0)
        ck->dims.kind = TSRNN_MODEL_LSTM;
    else if (strcmp(kind, "GRU") == 0)
        ck->dims.kind = TSRNN_MODEL_GRU;
    else
        status = bad_json(ck, "tsrnn.model", "model is not RNN, LSTM or GRU");
    ck->dims.input_count = (size_t)in;
    ck->dims.hidden_count = (size_t)hidden;
    ck->dims.layer_count = (size_t)layers;
    ck->dims.output_count = (size_t)out;
    ck->dims.dropout = dropout;
    ck->input_chunk_length = (int)icl;
    ck->training_length = (int)tl;
    json_decref(o);
    return status;
}

/* A scaler object (tsrnn.scaler's layout) of C columns in the metadata entry `key`. */
static enum tsrnn_status parse_scaler(const struct tsrnn_checkpoint *ck, const char *key, json_t *o,
                                      struct tsrnn_scaler *sc, size_t C)
{
    sc->component_count = C;
    TSRNN_TRY(read_floats(ck, key, o, "data_min", sc->data_min, C));
    TSRNN_TRY(read_floats(ck, key, o, "data_max", sc->data_max, C));
    TSRNN_TRY(read_floats(ck, key, o, "scale", sc->scale, C));
    TSRNN_TRY(read_floats(ck, key, o, "offset", sc->offset, C));
    /* What a fitted MinMaxScaler (or the identity) can hold: finite bounds in order, a scale
     * whose inverse is finite (1e-45 would turn every forecast into -inf). */
    for (size_t c = 0; c < C; c++)
        if (!isfinite(sc->data_min[c]) || !isfinite(sc->data_max[c]) ||
            !(sc->data_min[c] <= sc->data_max[c]) || !isfinite(sc->offset[c]) ||
            !(sc->scale[c] >= FLT_MIN) || !isfinite(sc->scale[c]) || !isfinite(1.0f / sc->scale[c]))
            return bad_json(ck, key, "a bound, scale or offset is not what a fitted scaler holds");
    return TSRNN_OK;
}

static enum tsrnn_status read_scaler(struct tsrnn_checkpoint *ck)
{
    json_t *o;
    TSRNN_TRY(need_json(ck, "tsrnn.scaler", &o));
    enum tsrnn_status status =
        parse_scaler(ck, "tsrnn.scaler", o, &ck->scaler, ck->dims.output_count);
    json_decref(o);
    return status;
}

/* tsrnn.covariates, present exactly when the model has more inputs than outputs: the
 * encoders, in Darts' order, whose columns fill the difference, and their scaler. */
static enum tsrnn_status read_covariates(struct tsrnn_checkpoint *ck)
{
    const char *key = "tsrnn.covariates";
    struct tsrnn_covariates *cov = &ck->covariates;
    size_t K = ck->dims.input_count - ck->dims.output_count;
    memset(cov, 0, sizeof(*cov));
    if (tsrnn_safetensors_metadata(&ck->file, key) == NULL)
        return K == 0 ? TSRNN_OK
                      : bad_json(ck, key, "missing, but the model takes future covariates");
    json_t *o, *encoders = NULL, *scaler = NULL, *data_columns = NULL;
    json_int_t columns = 0;
    TSRNN_TRY(need_json(ck, key, &o));
    enum tsrnn_status status = TSRNN_OK;
    if (json_unpack(o, "{s:o, s:o, s:I, s:o}", "data_columns", &data_columns, "encoders", &encoders,
                    "columns", &columns, "scaler", &scaler) != 0 ||
        !json_is_array(encoders) || json_array_size(encoders) >= TSRNN_MAX_ENCODERS ||
        !json_is_array(data_columns) || json_array_size(data_columns) > TSRNN_MAX_COMPONENTS ||
        columns != (json_int_t)K)
        status = bad_json(ck, key, "a field is missing or does not fit the model's inputs");
    for (size_t k = 0; status == TSRNN_OK && k < json_array_size(data_columns); k++) {
        const char *name = json_string_value(json_array_get(data_columns, k));
        if (name == NULL || name[0] == '\0' || strlen(name) >= TSRNN_NAME_MAX ||
            !tsrnn_text_printable(name))
            status = bad_json(ck, key, "a data column is not a short printable string");
        else
            snprintf(cov->column_names[k], TSRNN_NAME_MAX, "%s", name);
        cov->column_count = k + 1;
        cov->count++;
    }
    for (size_t e = 0; status == TSRNN_OK && e < json_array_size(encoders); e++) {
        const char *text = json_string_value(json_array_get(encoders, e)), *why;
        const char *colon = text != NULL ? strchr(text, ':') : NULL;
        enum tsrnn_encoder_kind kinds[] = { TSRNN_ENCODER_CYCLIC, TSRNN_ENCODER_ATTRIBUTE,
                                            TSRNN_ENCODER_ONE_HOT, TSRNN_ENCODER_POSITION };
        bool ok = false;
        for (size_t k = 0; colon != NULL && !ok && k < 4; k++) {
            const char *name = tsrnn_encoder_kind_name(kinds[k]);
            ok = strlen(name) == (size_t)(colon - text) && strncmp(text, name, strlen(name)) == 0 &&
                 tsrnn_encoder_parse(&cov->encoders[e], kinds[k], colon + 1, &why);
        }
        if (!ok)
            status = bad_json(ck, key, "an encoder is not kind:attribute as tsrnn writes it");
        cov->count += ok ? tsrnn_encoder_width(&cov->encoders[e]) : 0;
        cov->encoder_count = e + 1;
    }
    if (status == TSRNN_OK && cov->count != K)
        status = bad_json(ck, key, "the encoders' columns do not fill the model's inputs");
    if (status == TSRNN_OK)
        status = parse_scaler(ck, key, scaler, &cov->scaler, K);
    json_decref(o);
    return status;
}

static bool parse_time_unit(const char *name, enum tsrnn_time_unit *unit)
{
    for (size_t u = 0; name != NULL && u < sizeof(time_unit_names) / sizeof(time_unit_names[0]);
         u++)
        if (strcmp(name, time_unit_names[u]) == 0) {
            *unit = (enum tsrnn_time_unit)u;
            return true;
        }
    return false;
}

/* One entry of tsrnn.series_list. */
static enum tsrnn_status parse_list_entry(const struct tsrnn_checkpoint *ck, json_t *e,
                                          struct tsrnn_checkpoint_series *out)
{
    static const char key[] = "tsrnn.series_list";
    const char *id = NULL, *unit = NULL, *freq = NULL;
    json_int_t length = 0, train_length = 0, train_end = 0;
    json_t *scaler = NULL;
    if (json_unpack(e, "{s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "id", &id, "time_unit", &unit, "freq",
                    &freq, "length", &length, "train_length", &train_length, "train_end",
                    &train_end, "scaler", &scaler) != 0 ||
        id[0] == '\0' || strlen(id) >= TSRNN_NAME_MAX || !tsrnn_text_printable(id) ||
        train_length < 1 || train_length > length || length > MAX_COUNT || !json_is_object(scaler))
        return bad_json(ck, key, "an entry's field is missing, out of range or not printable");
    snprintf(out->id, sizeof(out->id), "%s", id);
    out->train_length = (size_t)train_length;
    out->train_end = train_end;
    if (!parse_time_unit(unit, &out->time_unit))
        return bad_json(ck, key, "unknown time_unit");
    if (!tsrnn_freq_parse(&out->freq, freq) && strcmp(freq, "none") != 0)
        return bad_json(ck, key, "freq is not a frequency");
    TSRNN_TRY(parse_scaler(ck, key, scaler, &out->scaler, ck->dims.output_count));
    /* Without its own (a checkpoint of one series), a series' covariates use the shared scaler
     * of tsrnn.covariates. */
    json_t *cov_scaler = json_object_get(e, "covariate_scaler");
    out->cov_scaler = ck->covariates.scaler;
    if (cov_scaler == NULL || ck->covariates.count == 0)
        return TSRNN_OK;
    return parse_scaler(ck, key, cov_scaler, &out->cov_scaler, ck->covariates.count);
}

/* Every series of the run: tsrnn.series_list, or the one of tsrnn.scaler and tsrnn.series. */
static enum tsrnn_status read_series_list(struct tsrnn_checkpoint *ck)
{
    json_t *o = NULL, *list = NULL;
    bool named = tsrnn_safetensors_metadata(&ck->file, "tsrnn.series_list") != NULL;
    if (named) {
        TSRNN_TRY(need_json(ck, "tsrnn.series_list", &o));
        list = json_object_get(o, "series");
        if (!json_is_array(list) || json_array_size(list) == 0) {
            json_decref(o);
            return bad_json(ck, "tsrnn.series_list", "expected a non-empty array \"series\"");
        }
    }
    size_t S = named ? json_array_size(list) : 1;
    ck->series_list = calloc(S, sizeof(*ck->series_list));
    enum tsrnn_status status = TSRNN_OK;
    if (ck->series_list == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ck->path);
    ck->series_count = ck->series_list ? S : 0;
    for (size_t i = 0; named && status == TSRNN_OK && i < S; i++) {
        status = parse_list_entry(ck, json_array_get(list, i), &ck->series_list[i]);
        for (size_t j = 0; status == TSRNN_OK && j < i; j++)
            if (strcmp(ck->series_list[j].id, ck->series_list[i].id) == 0)
                status = bad_json(ck, "tsrnn.series_list", "two series have one id");
    }
    if (status == TSRNN_OK && !named)
        ck->series_list[0] = (struct tsrnn_checkpoint_series){
            .scaler = ck->scaler,
            .cov_scaler = ck->covariates.scaler,
            .freq = ck->series.freq,
            .time_unit = ck->series.time_unit,
            .train_length = ck->series.train_length,
            .train_end = ck->series.train_end,
        };
    json_decref(o);
    return status;
}

static enum tsrnn_status read_series(struct tsrnn_checkpoint *ck)
{
    json_t *o, *names = NULL;
    const char *time_col = NULL, *unit = NULL;
    json_int_t train_length = 0, train_end = 0;
    struct tsrnn_series_info *s = &ck->series;
    TSRNN_TRY(need_json(ck, "tsrnn.series", &o));
    int rc =
        json_unpack(o, "{s:s, s:s, s:o, s:I, s:I}", "time_col", &time_col, "time_unit", &unit,
                    "components", &names, "train_length", &train_length, "train_end", &train_end);
    enum tsrnn_status status = TSRNN_OK;
    if (rc != 0 || strlen(time_col) >= TSRNN_NAME_MAX || !tsrnn_text_printable(time_col) ||
        train_length < 1 || train_length > MAX_COUNT || !json_is_array(names) ||
        json_array_size(names) != ck->dims.output_count)
        status = bad_json(ck, "tsrnn.series", "a field is missing or does not fit the model");
    if (status == TSRNN_OK) {
        snprintf(s->time_name, sizeof(s->time_name), "%s", time_col);
        s->time_unit = TSRNN_TIME_INDEX;
        if (!parse_time_unit(unit, &s->time_unit))
            status = bad_json(ck, "tsrnn.series", "unknown time_unit");
        s->component_count = ck->dims.output_count;
        s->train_length = (size_t)train_length;
        s->train_end = train_end;
        /* Checkpoints written before tsrnn recorded the frequency have none: the series
         * tsrnn-predict reads then brings its own. */
        const char *freq = json_string_value(json_object_get(o, "freq"));
        s->freq.kind = TSRNN_FREQ_NONE;
        if (freq != NULL && !tsrnn_freq_parse(&s->freq, freq))
            status = bad_json(ck, "tsrnn.series", "freq is not a frequency");
    }
    for (size_t c = 0; status == TSRNN_OK && c < s->component_count; c++) {
        const char *name = json_string_value(json_array_get(names, c));
        if (name == NULL || strlen(name) >= TSRNN_NAME_MAX || !tsrnn_text_printable(name))
            status =
                bad_json(ck, "tsrnn.series", "a component name is not a short printable string");
        else
            snprintf(s->component_names[c], TSRNN_NAME_MAX, "%s", name);
    }
    json_decref(o);
    return status;
}

/* tsrnn.lr, tsrnn.lr_scheduler and tsrnn.early_stopping: all three or none (a checkpoint
 * written before the training controls). */
static enum tsrnn_status read_controls(struct tsrnn_checkpoint *ck)
{
    struct tsrnn_train_state *st = &ck->state;
    const char *lr = tsrnn_safetensors_metadata(&ck->file, "tsrnn.lr");
    const char *sched = tsrnn_safetensors_metadata(&ck->file, "tsrnn.lr_scheduler");
    const char *es = tsrnn_safetensors_metadata(&ck->file, "tsrnn.early_stopping");
    if (lr == NULL && sched == NULL && es == NULL)
        return TSRNN_OK;
    TSRNN_TRY(need_double(ck, "tsrnn.lr", &st->lr));
    /* 0 is a rate a schedule reaches: CosineAnnealingLR at T_max with eta_min 0, LinearLR
     * with end_factor 0. */
    if (!(st->lr >= 0.0) || !isfinite(st->lr))
        return bad_json(ck, "tsrnn.lr", "expected a finite learning rate >= 0");
    long long last_epoch, bad, cooldown, wait;
    int used = 0;
    TSRNN_TRY(need(ck, "tsrnn.lr_scheduler", &sched));
    if (sscanf(sched, "last_epoch=%lld best=%lf num_bad_epochs=%lld cooldown_counter=%lld%n",
               &last_epoch, &st->sched_best, &bad, &cooldown, &used) != 4 ||
        sched[used] != '\0' || last_epoch < 0 || bad < 0 || cooldown < 0 || isnan(st->sched_best))
        return bad_json(ck, "tsrnn.lr_scheduler",
                        "expected \"last_epoch=N best=X num_bad_epochs=N cooldown_counter=N\" "
                        "with counts >= 0");
    used = 0;
    TSRNN_TRY(need(ck, "tsrnn.early_stopping", &es));
    if (sscanf(es, "wait_count=%lld best_score=%lf%n", &wait, &st->es_best_score, &used) != 2 ||
        es[used] != '\0' || wait < 0 || isnan(st->es_best_score))
        return bad_json(ck, "tsrnn.early_stopping",
                        "expected \"wait_count=N best_score=X\" with a count >= 0");
    st->sched_last_epoch = last_epoch;
    st->sched_num_bad_epochs = bad;
    st->sched_cooldown_counter = cooldown;
    st->es_wait_count = wait;
    st->has_controls = true;
    return TSRNN_OK;
}

static enum tsrnn_status read_state(struct tsrnn_checkpoint *ck)
{
    struct tsrnn_train_state *st = &ck->state;
    const char *text;
    int64_t v;

    TSRNN_TRY(need_int_in(ck, "tsrnn.epoch", 0, 100000000, &st->epoch)); /* n_epochs <= 1e8 */
    /* 0 batches, 0 steps: the untrained checkpoint of a max_steps = 0 run (checked below). */
    TSRNN_TRY(need_int(ck, "tsrnn.batches_done", 0, &st->batches_done));
    TSRNN_TRY(need(ck, "tsrnn.epoch_complete", &text));
    if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
        return bad_json(ck, "tsrnn.epoch_complete", "expected true or false");
    st->epoch_complete = strcmp(text, "true") == 0;
    TSRNN_TRY(need_int(ck, "tsrnn.global_step", 0, &st->global_step));
    TSRNN_TRY(need_int(ck, "tsrnn.adam_step", 0, &v));
    ck->adam_step = (uint64_t)v;
    TSRNN_TRY(need(ck, "tsrnn.monitor", &text));
    if (strcmp(text, "val_loss") != 0 && strcmp(text, "train_loss") != 0)
        return bad_json(ck, "tsrnn.monitor", "expected val_loss or train_loss");
    snprintf(ck->monitor, sizeof(ck->monitor), "%s", text);
    st->monitor = ck->monitor;
    TSRNN_TRY(need_double(ck, "tsrnn.monitor_value", &st->monitor_value));
    TSRNN_TRY(need_double(ck, "tsrnn.best_value", &st->best_value));
    /* -1: no epoch finished yet (a run interrupted in its first epoch) */
    TSRNN_TRY(need_int_in(ck, "tsrnn.best_epoch", -1, st->epoch, &st->best_epoch));
    /* Adam's step may exceed global_step: a model imported from Darts (darts-to-tsrnn's
     * init_weights with darts.adam_step) continues Darts' count from its step 0. */
    bool untrained = st->epoch == 0 && !st->epoch_complete && st->global_step == 0;
    if ((st->batches_done == 0 || st->global_step == 0) && !(untrained && st->batches_done == 0))
        return bad_json(ck, "tsrnn.batches_done",
                        "0 batches or 0 steps only in an untrained checkpoint (epoch 0 not "
                        "complete, batches_done 0, global_step 0)");

    json_t *rng;
    json_int_t random_state = -1;
    TSRNN_TRY(need_json(ck, "tsrnn.rng_state", &rng));
    int rc = json_unpack(rng, "{s:I}", "random_state", &random_state);
    json_decref(rng);
    if (rc != 0 || random_state < 0 || random_state > UINT32_MAX)
        return bad_json(ck, "tsrnn.rng_state", "random_state is missing or out of range");
    st->random_state = (uint32_t)random_state;
    return read_controls(ck);
}

/* Whether the checkpoint holds centered RMSprop's grad_avg (its first tensor names it). */
static bool has_grad_avg(const struct tsrnn_checkpoint *ck, const struct tsrnn_param_table *table)
{
    char name[TSRNN_PARAM_NAME_MAX + 24];
    snprintf(name, sizeof(name), "optim.grad_avg.%s", table->entries[0].name);
    return tsrnn_safetensors_find(&ck->file, name) != NULL;
}

enum tsrnn_status tsrnn_checkpoint_read(struct tsrnn_checkpoint *ck, const char *path)
{
    const char *text;
    int64_t version;

    memset(ck, 0, sizeof(*ck));
    if (strlen(path) >= sizeof(ck->path))
        return tsrnn_error(TSRNN_ERR_USAGE, "checkpoint path too long: %s", path);
    strcpy(ck->path, path);
    enum tsrnn_status read = tsrnn_safetensors_read(&ck->file, path);
    if (read != TSRNN_OK)
        return read == TSRNN_ERR_IO ? TSRNN_ERR_USAGE : read;

    enum tsrnn_status status = TSRNN_OK;
    if (tsrnn_safetensors_metadata(&ck->file, "tsrnn.format_version") == NULL)
        status = tsrnn_error(TSRNN_ERR_DATA,
                             "%s: not a tsrnn checkpoint (its __metadata__ has no "
                             "tsrnn.format_version); a file of weights only goes to [model] "
                             "init_weights",
                             tsrnn_display_path(path));
    if (status == TSRNN_OK)
        status = need_int(ck, "tsrnn.format_version", 0, &version);
    /* Version 1 files (before the metadata had its own checksum) are still read; their
     * metadata gets the range checks below only. */
    if (status == TSRNN_OK && version != TSRNN_CHECKPOINT_FORMAT_VERSION && version != 1)
        status = tsrnn_error(
            TSRNN_ERR_DATA, "%s: checkpoint format version %lld; this tsrnn reads versions 1 to %d",
            tsrnn_display_path(path), (long long)version, TSRNN_CHECKPOINT_FORMAT_VERSION);
    if (status == TSRNN_OK)
        status = need(ck, "tsrnn.data_crc32c", &text);
    if (status == TSRNN_OK && version >= 2)
        status = need(ck, "tsrnn.metadata_crc32c", &text);
    if (status == TSRNN_OK)
        status = tsrnn_safetensors_check_crcs(&ck->file, path);
    if (status == TSRNN_OK)
        status = read_model(ck);
    if (status == TSRNN_OK)
        status = read_scaler(ck);
    if (status == TSRNN_OK)
        status = read_covariates(ck);
    if (status == TSRNN_OK)
        status = read_series(ck);
    if (status == TSRNN_OK)
        status = read_series_list(ck);
    if (status == TSRNN_OK)
        status = read_state(ck);
    if (status == TSRNN_OK)
        status = need(ck, "tsrnn.config", &text);
    if (status == TSRNN_OK)
        status = tsrnn_config_init(&ck->config);
    if (status == TSRNN_OK)
        status = tsrnn_config_parse_text(&ck->config, text, path);
    if (status == TSRNN_OK) {
        /* A probabilistic model's head: P outputs per target, as its config's likelihood. */
        tsrnn_likelihood_from_config(&ck->likelihood, &ck->config);
        ck->dims.param_count = tsrnn_likelihood_param_count(&ck->likelihood);
    }
    if (status == TSRNN_OK) {
        /* Every tensor a model of these dimensions needs, with its shape and finite values. */
        struct tsrnn_param_table table;
        tsrnn_param_table_init(&table, &ck->dims);
        float *scratch = malloc(table.total_count * sizeof(float));
        static const char *const prefixes[] = { "", "optim.exp_avg.", "optim.exp_avg_sq.",
                                                "optim.grad_avg." };
        if (scratch == NULL)
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", path);
        for (size_t g = 0; status == TSRNN_OK && g < 4; g++)
            if (g < 3 || has_grad_avg(ck, &table))
                status = tsrnn_model_read_tensors(scratch, &table, &ck->file, prefixes[g], path);
        free(scratch);
    }
    if (status != TSRNN_OK)
        tsrnn_checkpoint_finish(ck);
    return status;
}

void tsrnn_checkpoint_finish(struct tsrnn_checkpoint *ck)
{
    tsrnn_safetensors_finish(&ck->file);
    free(ck->series_list);
    ck->series_list = NULL;
    ck->series_count = 0;
}

static void describe_model(char *out, size_t capacity, const struct tsrnn_model_dims *d)
{
    int n =
        snprintf(out, capacity, "%s, hidden_dim %zu, n_rnn_layers %zu, %zu input(s), %zu output(s)",
                 tsrnn_model_kind_name(d->kind), d->hidden_count, d->layer_count, d->input_count,
                 d->output_count);
    if (d->param_count > 1 && n > 0 && (size_t)n < capacity)
        snprintf(out + n, capacity - (size_t)n, " of %zu likelihood parameters each",
                 d->param_count);
}

enum tsrnn_status tsrnn_checkpoint_restore(const struct tsrnn_checkpoint *ck,
                                           struct tsrnn_model *model, struct tsrnn_adam *adam)
{
    const struct tsrnn_model_dims *a = &ck->dims, *b = &model->dims;
    if (a->kind != b->kind || a->hidden_count != b->hidden_count ||
        a->layer_count != b->layer_count || a->input_count != b->input_count ||
        a->output_count != b->output_count ||
        tsrnn_model_head_count(a) != tsrnn_model_head_count(b)) {
        char have[160], want[160];
        describe_model(have, sizeof(have), a);
        describe_model(want, sizeof(want), b);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the checkpoint's model is %s; this run's config describes %s "
                           "(check [model] model, hidden_dim, n_rnn_layers and [data] "
                           "value_cols)",
                           tsrnn_display_path(ck->path), have, want);
    }
    /* Everything is read and checked into host memory before the device is touched: a bad
     * checkpoint leaves the model as it was. */
    size_t count = model->table.total_count;
    float *host = malloc(4 * count * sizeof(float) + 1);
    if (host == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading the checkpoint %s",
                           tsrnn_display_path(ck->path));
    enum tsrnn_status status =
        tsrnn_model_read_tensors(host, &model->table, &ck->file, "", ck->path);
    if (status == TSRNN_OK && adam != NULL)
        status = tsrnn_model_read_tensors(host + count, &model->table, &ck->file, "optim.exp_avg.",
                                          ck->path);
    if (status == TSRNN_OK && adam != NULL)
        status = tsrnn_model_read_tensors(host + 2 * count, &model->table, &ck->file,
                                          "optim.exp_avg_sq.", ck->path);
    /* centered RMSprop's grad_avg: only a run that keeps one reads it */
    if (status == TSRNN_OK && adam != NULL && adam->grad_avg != NULL) {
        status = tsrnn_model_read_tensors(host + 3 * count, &model->table, &ck->file,
                                          "optim.grad_avg.", ck->path);
        if (status != TSRNN_OK)
            status = tsrnn_error_append(status, " (centered RMSprop's grad_avg: the checkpoint "
                                                "was not trained with [training] centered = "
                                                "true)");
    }
    if (status == TSRNN_OK)
        status = tsrnn_model_upload_params(model, host);
    if (status == TSRNN_OK && adam != NULL && adam->grad_avg != NULL)
        status = tsrnn_compute_upload(adam->compute, adam->grad_avg, host + 3 * count,
                                      count * sizeof(float));
    if (status == TSRNN_OK && adam != NULL)
        status =
            tsrnn_compute_upload(adam->compute, adam->exp_avg, host + count, count * sizeof(float));
    if (status == TSRNN_OK && adam != NULL)
        status = tsrnn_compute_upload(adam->compute, adam->exp_avg_sq, host + 2 * count,
                                      count * sizeof(float));
    if (status == TSRNN_OK && adam != NULL)
        adam->step = ck->adam_step;
    free(host);
    return status;
}

/* --- the checkpoints of a run folder --------------------------------------------------- */

void tsrnn_checkpoint_name_last(char *out, size_t capacity, int64_t epoch)
{
    snprintf(out, capacity, "last-epoch=%" PRId64 ".safetensors", epoch);
}

void tsrnn_checkpoint_name_best(char *out, size_t capacity, int64_t epoch, const char *monitor,
                                double value)
{
    snprintf(out, capacity, "best-epoch=%" PRId64 "-%s=%.4f.safetensors", epoch, monitor, value);
}

/* The epoch of a checkpoint file name of kind `which` as tsrnn writes them
 * ("last-epoch=12.safetensors", "best-epoch=12-val_loss=0.0149.safetensors"), or -1 for any
 * other name: the epoch in decimal digits, without a sign, spaces or a leading zero, at most
 * what a checkpoint may hold (100000000). sscanf took "+12", " 12" and "007", and an epoch
 * past int64 was undefined behaviour that made the file the newest. */
static int64_t checkpoint_epoch(const char *name, const char *which)
{
    char prefix[16];
    size_t len = strlen(name);
    snprintf(prefix, sizeof(prefix), "%s-epoch=", which);
    if (strncmp(name, prefix, strlen(prefix)) != 0 || len < 12 ||
        strcmp(name + len - 12, ".safetensors") != 0)
        return -1;
    const char *start = name + strlen(prefix), *p = start;
    int64_t epoch = 0;
    for (; *p >= '0' && *p <= '9' && p - start < 10; p++)
        epoch = 10 * epoch + (*p - '0');
    if (p == start || (start[0] == '0' && p - start > 1) || epoch > 100000000)
        return -1;
    return *p == '.' || *p == '-' ? epoch : -1;
}

/* The newest checkpoint file of kind `which` in `checkpoint_dir`: its name in `name` (room
 * for 256 bytes) and its epoch, or -1 when there is none. */
static int64_t newest(const char *checkpoint_dir, const char *which, char *name)
{
    DIR *dir = opendir(checkpoint_dir);
    int64_t newest_epoch = -1;
    name[0] = '\0';
    if (dir == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        int64_t epoch = checkpoint_epoch(e->d_name, which);
        if (epoch > newest_epoch && strlen(e->d_name) < 256) {
            newest_epoch = epoch;
            strcpy(name, e->d_name);
        }
    }
    closedir(dir);
    return newest_epoch;
}

/* Whether the checkpoint at `path` is, by its own metadata, the best of its run so far
 * (the epoch it ends is its best_epoch, and was ranked: save_checkpoints' rule for a best
 * checkpoint), and then the name it has as one. Only the header is read: it is what
 * tsrnn_checkpoint_read() checks first anyway, and a damaged file is refused there. */
static bool is_own_best(const char *path, char *best_name, size_t capacity)
{
    FILE *f = fopen(path, "rb");
    unsigned char len_bytes[8];
    uint64_t header_nbytes = 0;
    bool best = false;
    if (f == NULL)
        return false;
    if (fread(len_bytes, 1, 8, f) == 8)
        for (int i = 7; i >= 0; i--)
            header_nbytes = header_nbytes << 8 | len_bytes[i];
    char *header =
        header_nbytes > 0 && header_nbytes <= 100000000u ? malloc((size_t)header_nbytes) : NULL;
    json_t *root = header != NULL && fread(header, 1, (size_t)header_nbytes, f) == header_nbytes
                       ? json_loadb(header, (size_t)header_nbytes, 0, NULL)
                       : NULL;
    fclose(f);
    free(header);
    json_t *meta = json_object_get(root, "__metadata__");
    const char *epoch_text = json_string_value(json_object_get(meta, "tsrnn.epoch")),
               *best_epoch_text = json_string_value(json_object_get(meta, "tsrnn.best_epoch")),
               *monitor = json_string_value(json_object_get(meta, "tsrnn.monitor")),
               *value_text = json_string_value(json_object_get(meta, "tsrnn.monitor_value")),
               *best_text = json_string_value(json_object_get(meta, "tsrnn.best_value"));
    int64_t epoch, best_epoch;
    if (epoch_text != NULL && best_epoch_text != NULL && monitor != NULL && value_text != NULL &&
        best_text != NULL && tsrnn_parse_int64(epoch_text, &epoch) &&
        tsrnn_parse_int64(best_epoch_text, &best_epoch) && epoch >= 0 && epoch == best_epoch &&
        (strcmp(monitor, "val_loss") == 0 || strcmp(monitor, "train_loss") == 0)) {
        double value = strtod(value_text, NULL), best_value = strtod(best_text, NULL);
        best = !isnan(value) && !isnan(best_value);
        if (best)
            tsrnn_checkpoint_name_best(best_name, capacity, epoch, monitor, best_value);
    }
    json_decref(root);
    return best;
}

/* The best checkpoint: the newest best-epoch=N file, unless the newest last-epoch=M (M > N,
 * or no best file at all) is itself the best by its metadata. That is what a run killed
 * between renaming last-epoch=M into place and linking best-epoch=M to it leaves behind:
 * the older best-epoch=N is then not the best any more. Its best-... name goes in
 * `best_name`. Returns the file's name (in `name`), or false when there is none. */
static bool find_best(const char *checkpoint_dir, char *name, char *best_name)
{
    char last[256], path[PATH_MAX];
    int64_t best_epoch = newest(checkpoint_dir, "best", name);
    int64_t last_epoch = newest(checkpoint_dir, "last", last);
    snprintf(best_name, 256, "%s", name);
    if (last_epoch > best_epoch &&
        (size_t)snprintf(path, sizeof(path), "%s/%s", checkpoint_dir, last) < sizeof(path) &&
        is_own_best(path, best_name, 256)) {
        strcpy(name, last);
        return true;
    }
    return best_epoch >= 0;
}

enum tsrnn_status tsrnn_checkpoint_locate(char *out, size_t capacity, const char *checkpoint_dir,
                                          const char *which)
{
    if (strcmp(which, "last") != 0 && strcmp(which, "best") != 0) {
        if ((size_t)snprintf(out, capacity, "%s", which) >= capacity)
            return tsrnn_error(TSRNN_ERR_USAGE, "checkpoint path too long: %s", which);
        return TSRNN_OK;
    }
    char name[256], best_name[256];
    bool found = strcmp(which, "best") == 0 ? find_best(checkpoint_dir, name, best_name)
                                            : newest(checkpoint_dir, "last", name) >= 0;
    if (!found)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "no %s checkpoint (%s-epoch=N*.safetensors) in %s; runs with [output] "
                           "save_checkpoints = true write them",
                           which, which, tsrnn_display_path(checkpoint_dir));
    if ((size_t)snprintf(out, capacity, "%s/%s", checkpoint_dir, name) >= capacity)
        return tsrnn_error(TSRNN_ERR_USAGE, "checkpoint path too long in %s", checkpoint_dir);
    return TSRNN_OK;
}

/* Copies `from` to `to` as an atomic file: a best checkpoint's bytes where the file system
 * has no hard links. */
static enum tsrnn_status copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (in == NULL)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read %s", tsrnn_display_path(from));
    struct tsrnn_atomic_file af;
    enum tsrnn_status status = tsrnn_atomic_file_open(&af, to);
    char buf[65536];
    size_t n;
    while (status == TSRNN_OK && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, af.file);
    if (status == TSRNN_OK && ferror(in)) {
        tsrnn_atomic_file_abort(&af);
        status = tsrnn_error(TSRNN_ERR_IO, "cannot read %s", tsrnn_display_path(from));
    } else if (status == TSRNN_OK) {
        status = tsrnn_atomic_file_commit(&af);
    }
    fclose(in);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_repair_best(const char *checkpoint_dir)
{
    char name[256], best_name[256], from[PATH_MAX], to[PATH_MAX];
    if (!find_best(checkpoint_dir, name, best_name))
        return TSRNN_OK;
    if (strcmp(name, best_name) != 0) {
        snprintf(from, sizeof(from), "%s/%s", checkpoint_dir, name);
        if ((size_t)snprintf(to, sizeof(to), "%s/%s", checkpoint_dir, best_name) >= sizeof(to))
            return tsrnn_error(TSRNN_ERR_IO, "checkpoint path too long in %s", checkpoint_dir);
        if (tsrnn_atomic_file_link(from, to) != TSRNN_OK) {
            tsrnn_error_clear();
            TSRNN_TRY(copy_file(from, to));
        }
        tsrnn_warn("%s is the best checkpoint so far but had no %s name (a run stopped between "
                   "writing the two): restored it",
                   tsrnn_display_path(from), best_name);
    }
    tsrnn_checkpoint_prune(checkpoint_dir, "best", best_name);
    return TSRNN_OK;
}

void tsrnn_checkpoint_prune(const char *checkpoint_dir, const char *which, const char *keep)
{
    DIR *dir = opendir(checkpoint_dir);
    if (dir == NULL)
        return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(dir)) != NULL) {
        bool stale_tmp = strstr(e->d_name, ".safetensors.tmp.") != NULL;
        if (!stale_tmp && (checkpoint_epoch(e->d_name, which) < 0 || strcmp(e->d_name, keep) == 0))
            continue;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", checkpoint_dir, e->d_name) >=
            sizeof(path))
            continue;
        if (unlink(path) != 0 && errno != ENOENT)
            tsrnn_warn("cannot remove the old checkpoint %s: %s", tsrnn_display_path(path),
                       strerror(errno));
    }
    closedir(dir);
}
