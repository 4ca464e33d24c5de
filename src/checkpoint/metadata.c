/* A checkpoint's __metadata__ (metadata.h): the schema include/tsrnn/checkpoint.h describes,
 * written from a run's state and read back with every value checked, so that a damaged or
 * foreign file is refused with the key and what is wrong. Strings only, as safetensors
 * requires: counts in decimal, doubles with 17 significant digits and floats with 9 (both
 * read back exactly), the structured parts as compact JSON. */
#include "metadata.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum tsrnn_status tsrnn_checkpoint_metadata_make(struct tsrnn_checkpoint_metadata *md,
                                                 const struct tsrnn_checkpoint_snapshot *snap,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_config *cfg,
                                                 const struct tsrnn_dataset *ds, uint32_t data_crc,
                                                 const char *path)
{
    const struct tsrnn_train_state *state = &snap->state;
    *md = (struct tsrnn_checkpoint_metadata){ 0 };
    snprintf(md->epoch, sizeof(md->epoch), "%" PRId64, state->epoch);
    snprintf(md->batches, sizeof(md->batches), "%" PRId64, state->batches_done);
    snprintf(md->step, sizeof(md->step), "%" PRId64, state->global_step);
    snprintf(md->adam_step, sizeof(md->adam_step), "%" PRIu64, snap->adam_step);
    snprintf(md->version, sizeof(md->version), "%d", TSRNN_CHECKPOINT_FORMAT_VERSION);
    snprintf(md->data_crc, sizeof(md->data_crc), "%08" PRIx32, data_crc);
    snprintf(md->monitor_value, sizeof(md->monitor_value), "%.17g", state->monitor_value);
    snprintf(md->best, sizeof(md->best), "%.17g", state->best_value);
    snprintf(md->best_epoch, sizeof(md->best_epoch), "%" PRId64, state->best_epoch);
    snprintf(md->lr, sizeof(md->lr), "%.17g", state->has_controls ? state->lr : snap->adam_lr);
    snprintf(md->sched, sizeof(md->sched),
             "last_epoch=%" PRId64 " best=%.17g num_bad_epochs=%" PRId64
             " cooldown_counter=%" PRId64,
             state->sched_last_epoch, state->has_controls ? state->sched_best : INFINITY,
             state->sched_num_bad_epochs, state->sched_cooldown_counter);
    snprintf(md->es, sizeof(md->es), "wait_count=%" PRId64 " best_score=%.9g", state->es_wait_count,
             state->has_controls ? state->es_best_score : INFINITY);

    json_t *rng =
        json_pack("{s:I, s:I, s:I}", "random_state", (json_int_t)state->random_state, "next_epoch",
                  (json_int_t)(state->epoch_complete ? state->epoch + 1 : state->epoch),
                  "next_step", (json_int_t)state->global_step);
    md->rng = rng ? json_dumps(rng, JSON_FLAGS) : NULL;
    json_decref(rng);
    md->model = model_json(&model->dims, cfg);
    md->scaler = scaler_json(&ds->items[0].scaler, cfg);
    md->series = series_json(&ds->items[0]);
    bool named = ds->items[0].id[0] != '\0';
    md->series_list = named ? series_list_json(ds, cfg) : NULL;
    md->config = tsrnn_config_text(cfg);
    bool has_covariates = ds->covariates != NULL && ds->covariates->count > 0;
    md->covariates = has_covariates ? covariates_json(ds->covariates, cfg) : NULL;
    if (md->rng == NULL || md->model == NULL || md->scaler == NULL || md->series == NULL ||
        md->config == NULL || (has_covariates && md->covariates == NULL) ||
        (named && md->series_list == NULL))
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing the checkpoint %s",
                           tsrnn_display_path(path));

    const struct tsrnn_metadata_entry entries[] = {
        { "format", "pt" },
        { "tsrnn.format_version", md->version },
        { "tsrnn.version", tsrnn_version() },
        { "tsrnn.epoch", md->epoch },
        { "tsrnn.batches_done", md->batches },
        { "tsrnn.epoch_complete", state->epoch_complete ? "true" : "false" },
        { "tsrnn.global_step", md->step },
        { "tsrnn.adam_step", md->adam_step },
        { "tsrnn.rng_state", md->rng },
        { "tsrnn.monitor", state->monitor },
        { "tsrnn.monitor_value", md->monitor_value },
        { "tsrnn.best_value", md->best },
        { "tsrnn.best_epoch", md->best_epoch },
        { "tsrnn.lr", md->lr },
        { "tsrnn.lr_scheduler", md->sched },
        { "tsrnn.early_stopping", md->es },
        { "tsrnn.model", md->model },
        { "tsrnn.scaler", md->scaler },
        { "tsrnn.series", md->series },
        { "tsrnn.config", md->config },
        { "tsrnn.data_crc32c", md->data_crc },
        { "tsrnn.covariates", md->covariates },    /* only with covariates */
        { "tsrnn.series_list", md->series_list },  /* named series only */
        { "tsrnn.metadata_crc32c", md->meta_crc }, /* over all the others: last */
    };
    _Static_assert(sizeof(entries) / sizeof(entries[0]) <=
                       sizeof(md->entries) / sizeof(md->entries[0]),
                   "room for every entry");
    /* The optional entries without a value are dropped, the others keep their order. */
    for (size_t k = 0; k < sizeof(entries) / sizeof(entries[0]); k++)
        if (entries[k].value != NULL)
            md->entries[md->entry_count++] = entries[k];
    snprintf(md->meta_crc, sizeof(md->meta_crc), "%08" PRIx32,
             tsrnn_safetensors_metadata_crc(md->entries, md->entry_count));
    return TSRNN_OK;
}

void tsrnn_checkpoint_metadata_finish(struct tsrnn_checkpoint_metadata *md)
{
    free(md->rng);
    free(md->model);
    free(md->scaler);
    free(md->series);
    free(md->series_list);
    free(md->config);
    free(md->covariates);
    *md = (struct tsrnn_checkpoint_metadata){ 0 };
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
    return need_int_in(ck, key, min, TSRNN_CHECKPOINT_MAX_COUNT, out);
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
        columns != (json_int_t)K) {
        status = bad_json(ck, key, "a field is missing or does not fit the model's inputs");
        goto out;
    }
    for (size_t k = 0; k < json_array_size(data_columns); k++) {
        const char *name = json_string_value(json_array_get(data_columns, k));
        if (name == NULL || name[0] == '\0' || strlen(name) >= TSRNN_NAME_MAX ||
            !tsrnn_text_printable(name)) {
            status = bad_json(ck, key, "a data column is not a short printable string");
            goto out;
        }
        snprintf(cov->column_names[k], TSRNN_NAME_MAX, "%s", name);
        cov->column_count = k + 1;
        cov->count++;
    }
    for (size_t e = 0; e < json_array_size(encoders); e++) {
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
        if (!ok) {
            status = bad_json(ck, key, "an encoder is not kind:attribute as tsrnn writes it");
            goto out;
        }
        cov->count += tsrnn_encoder_width(&cov->encoders[e]);
        cov->encoder_count = e + 1;
    }
    if (cov->count != K) {
        status = bad_json(ck, key, "the encoders' columns do not fill the model's inputs");
        goto out;
    }
    status = parse_scaler(ck, key, scaler, &cov->scaler, K);
out:
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
        train_length < 1 || train_length > length || length > TSRNN_CHECKPOINT_MAX_COUNT ||
        !json_is_object(scaler))
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
    enum tsrnn_status status = TSRNN_OK;
    json_t *o = NULL, *list = NULL;
    bool named = tsrnn_safetensors_metadata(&ck->file, "tsrnn.series_list") != NULL;
    if (named) {
        TSRNN_TRY(need_json(ck, "tsrnn.series_list", &o));
        list = json_object_get(o, "series");
        if (!json_is_array(list) || json_array_size(list) == 0) {
            status = bad_json(ck, "tsrnn.series_list", "expected a non-empty array \"series\"");
            goto out;
        }
    }
    size_t S = named ? json_array_size(list) : 1;
    ck->series_list = calloc(S, sizeof(*ck->series_list));
    if (ck->series_list == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ck->path);
        goto out;
    }
    ck->series_count = S;
    for (size_t i = 0; named && i < S; i++) {
        status = parse_list_entry(ck, json_array_get(list, i), &ck->series_list[i]);
        if (status != TSRNN_OK)
            goto out;
        for (size_t j = 0; j < i; j++)
            if (strcmp(ck->series_list[j].id, ck->series_list[i].id) == 0) {
                status = bad_json(ck, "tsrnn.series_list", "two series have one id");
                goto out;
            }
    }
    if (!named)
        ck->series_list[0] = (struct tsrnn_checkpoint_series){
            .scaler = ck->scaler,
            .cov_scaler = ck->covariates.scaler,
            .freq = ck->series.freq,
            .time_unit = ck->series.time_unit,
            .train_length = ck->series.train_length,
            .train_end = ck->series.train_end,
        };
out:
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
        train_length < 1 || train_length > TSRNN_CHECKPOINT_MAX_COUNT || !json_is_array(names) ||
        json_array_size(names) != ck->dims.output_count) {
        status = bad_json(ck, "tsrnn.series", "a field is missing or does not fit the model");
        goto out;
    }
    snprintf(s->time_name, sizeof(s->time_name), "%s", time_col);
    s->time_unit = TSRNN_TIME_INDEX;
    if (!parse_time_unit(unit, &s->time_unit)) {
        status = bad_json(ck, "tsrnn.series", "unknown time_unit");
        goto out;
    }
    s->component_count = ck->dims.output_count;
    s->train_length = (size_t)train_length;
    s->train_end = train_end;
    /* Checkpoints written before tsrnn recorded the frequency have none: the series
     * tsrnn-predict reads then brings its own. */
    const char *freq = json_string_value(json_object_get(o, "freq"));
    s->freq.kind = TSRNN_FREQ_NONE;
    if (freq != NULL && !tsrnn_freq_parse(&s->freq, freq)) {
        status = bad_json(ck, "tsrnn.series", "freq is not a frequency");
        goto out;
    }
    for (size_t c = 0; c < s->component_count; c++) {
        const char *name = json_string_value(json_array_get(names, c));
        if (name == NULL || strlen(name) >= TSRNN_NAME_MAX || !tsrnn_text_printable(name)) {
            status =
                bad_json(ck, "tsrnn.series", "a component name is not a short printable string");
            goto out;
        }
        snprintf(s->component_names[c], TSRNN_NAME_MAX, "%s", name);
    }
out:
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

enum tsrnn_status tsrnn_checkpoint_metadata_check_version(struct tsrnn_checkpoint *ck)
{
    const char *text;
    int64_t version;
    if (tsrnn_safetensors_metadata(&ck->file, "tsrnn.format_version") == NULL)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: not a tsrnn checkpoint (its __metadata__ has no "
                           "tsrnn.format_version); a file of weights only goes to [model] "
                           "init_weights",
                           tsrnn_display_path(ck->path));
    TSRNN_TRY(need_int(ck, "tsrnn.format_version", 0, &version));
    /* Version 1 files (before the metadata had its own checksum) are still read; their
     * metadata gets the range checks of tsrnn_checkpoint_metadata_read() only. */
    if (version != TSRNN_CHECKPOINT_FORMAT_VERSION && version != 1)
        return tsrnn_error(
            TSRNN_ERR_DATA, "%s: checkpoint format version %lld; this tsrnn reads versions 1 to %d",
            tsrnn_display_path(ck->path), (long long)version, TSRNN_CHECKPOINT_FORMAT_VERSION);
    TSRNN_TRY(need(ck, "tsrnn.data_crc32c", &text));
    if (version >= 2)
        TSRNN_TRY(need(ck, "tsrnn.metadata_crc32c", &text));
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_checkpoint_metadata_read(struct tsrnn_checkpoint *ck)
{
    const char *text;
    TSRNN_TRY(read_model(ck));
    TSRNN_TRY(read_scaler(ck));
    TSRNN_TRY(read_covariates(ck));
    TSRNN_TRY(read_series(ck));
    TSRNN_TRY(read_series_list(ck));
    TSRNN_TRY(read_state(ck));
    TSRNN_TRY(need(ck, "tsrnn.config", &text));
    TSRNN_TRY(tsrnn_config_init(&ck->config));
    TSRNN_TRY(tsrnn_config_parse_text(&ck->config, text, ck->path));
    /* A probabilistic model's head: P outputs per target, as its config's likelihood. */
    tsrnn_likelihood_from_config(&ck->likelihood, &ck->config);
    ck->dims.param_count = tsrnn_likelihood_param_count(&ck->likelihood);
    return TSRNN_OK;
}
