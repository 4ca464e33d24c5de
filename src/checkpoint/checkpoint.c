/* Training checkpoints (include/tsrnn/checkpoint.h): the file. The model's weights and the
 * optimizer's moments as safetensors tensors, with the run's state in its __metadata__
 * (metadata.c), written from a host snapshot and read back whole, checked, before anything
 * is restored. The run folder's checkpoints are run_folder.c's; the writer behind the
 * training is writer.c. */
#include "tsrnn/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata.h"
#include "tsrnn/crc32c.h"

/* The tensor groups of a checkpoint, in the file's order: the weights, then the optimizer's
 * moments (centered RMSprop's grad_avg only where the run keeps one). */
static const char *const group_prefixes[4] = { "", "optim.exp_avg.", "optim.exp_avg_sq.",
                                               "optim.grad_avg." };

enum tsrnn_status tsrnn_checkpoint_snapshot_take(struct tsrnn_checkpoint_snapshot **out,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_adam *adam,
                                                 const struct tsrnn_train_state *state)
{
    size_t count = model->table.total_count, groups = adam->grad_avg != NULL ? 4 : 3;
    const float *sources[4] = { model->params, adam->exp_avg, adam->exp_avg_sq, adam->grad_avg };
    *out = NULL;
    struct tsrnn_checkpoint_snapshot *snap = malloc(sizeof(*snap) + groups * count * sizeof(float));
    if (snap == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for a checkpoint of %zu parameters",
                           count);
    *snap = (struct tsrnn_checkpoint_snapshot){ .state = *state,
                                                .adam_step = adam->step,
                                                .adam_lr = adam->lr,
                                                .count = count,
                                                .group_count = groups };
    enum tsrnn_status status = TSRNN_OK;
    for (size_t g = 0; g < groups; g++) {
        status = tsrnn_compute_download(g == 0 ? model->compute : adam->compute,
                                        snap->host + g * count, sources[g], count * sizeof(float));
        if (status != TSRNN_OK)
            goto out;
    }
    *out = snap;
    snap = NULL;
out:
    free(snap);
    return status;
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
    size_t n = table->entry_count, count = snap->count, groups = snap->group_count;
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_checkpoint_metadata md = { 0 };
    struct tsrnn_tensor_desc *tensors = calloc(groups * n, sizeof(*tensors));
    char(*names)[TSRNN_PARAM_NAME_MAX + 24] = calloc(groups * n, sizeof(*names));
    if (tensors == NULL || names == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing the checkpoint %s",
                             tsrnn_display_path(path));
        goto out;
    }
    uint32_t crc = 0;
    for (size_t group = 0; group < groups; group++)
        for (size_t e = 0; e < n; e++) {
            const struct tsrnn_param_entry *entry = &table->entries[e];
            struct tsrnn_tensor_desc *t = &tensors[group * n + e];
            snprintf(names[group * n + e], sizeof(names[0]), "%s%s", group_prefixes[group],
                     entry->name);
            t->name = names[group * n + e];
            t->dtype = TSRNN_DTYPE_F32;
            t->rank = entry->rank;
            memcpy(t->shape, entry->shape, sizeof(entry->shape));
            t->data = snap->host + group * count + entry->offset;
            crc = tsrnn_crc32c(crc, t->data, entry->count * sizeof(float));
        }
    status = tsrnn_checkpoint_metadata_make(&md, snap, model, cfg, ds, crc, path);
    if (status != TSRNN_OK)
        goto out;
    status = sync_folder
                 ? tsrnn_safetensors_write(path, tensors, groups * n, md.entries, md.entry_count)
                 : tsrnn_safetensors_write_unsynced(path, tensors, groups * n, md.entries,
                                                    md.entry_count);
out:
    tsrnn_checkpoint_metadata_finish(&md);
    free(names);
    free(tensors);
    return status;
}

/* Whether the checkpoint holds centered RMSprop's grad_avg (its first tensor names it). */
static bool has_grad_avg(const struct tsrnn_checkpoint *ck, const struct tsrnn_param_table *table)
{
    char name[TSRNN_PARAM_NAME_MAX + 24];
    snprintf(name, sizeof(name), "optim.grad_avg.%s", table->entries[0].name);
    return tsrnn_safetensors_find(&ck->file, name) != NULL;
}

/* Every tensor a model of the checkpoint's dimensions needs, with its shape and finite
 * values. */
static enum tsrnn_status check_tensors(const struct tsrnn_checkpoint *ck)
{
    struct tsrnn_param_table table;
    tsrnn_param_table_init(&table, &ck->dims);
    enum tsrnn_status status = TSRNN_OK;
    float *scratch = malloc(table.total_count * sizeof(float));
    if (scratch == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ck->path);
        goto out;
    }
    for (size_t g = 0; g < 4; g++) {
        if (g == 3 && !has_grad_avg(ck, &table))
            break;
        status = tsrnn_model_read_tensors(scratch, &table, &ck->file, group_prefixes[g], ck->path);
        if (status != TSRNN_OK)
            goto out;
    }
out:
    free(scratch);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_read(struct tsrnn_checkpoint *ck, const char *path)
{
    memset(ck, 0, sizeof(*ck));
    if (strlen(path) >= sizeof(ck->path))
        return tsrnn_error(TSRNN_ERR_USAGE, "checkpoint path too long: %s", path);
    strcpy(ck->path, path);
    enum tsrnn_status status = tsrnn_safetensors_read(&ck->file, path);
    if (status != TSRNN_OK)
        return status == TSRNN_ERR_IO ? TSRNN_ERR_USAGE : status;
    status = tsrnn_checkpoint_metadata_check_version(ck);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_safetensors_check_crcs(&ck->file, path);
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_checkpoint_metadata_read(ck);
    if (status != TSRNN_OK)
        goto out;
    status = check_tensors(ck);
out:
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
     * checkpoint leaves the model as it was. The groups: the weights; with `adam` its two
     * moments, and centered RMSprop's grad_avg only where the run keeps one. */
    size_t count = model->table.total_count;
    size_t groups = adam == NULL ? 1 : adam->grad_avg != NULL ? 4 : 3;
    enum tsrnn_status status = TSRNN_OK;
    float *host = malloc(4 * count * sizeof(float) + 1);
    if (host == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading the checkpoint %s",
                             tsrnn_display_path(ck->path));
        goto out;
    }
    for (size_t g = 0; g < groups; g++) {
        status = tsrnn_model_read_tensors(host + g * count, &model->table, &ck->file,
                                          group_prefixes[g], ck->path);
        if (status != TSRNN_OK) {
            if (g == 3)
                status = tsrnn_error_append(status, " (centered RMSprop's grad_avg: the "
                                                    "checkpoint was not trained with [training] "
                                                    "centered = true)");
            goto out;
        }
    }
    status = tsrnn_model_upload_params(model, host);
    if (status != TSRNN_OK || adam == NULL)
        goto out;
    if (adam->grad_avg != NULL) {
        status = tsrnn_compute_upload(adam->compute, adam->grad_avg, host + 3 * count,
                                      count * sizeof(float));
        if (status != TSRNN_OK)
            goto out;
    }
    status =
        tsrnn_compute_upload(adam->compute, adam->exp_avg, host + count, count * sizeof(float));
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_compute_upload(adam->compute, adam->exp_avg_sq, host + 2 * count,
                                  count * sizeof(float));
    if (status != TSRNN_OK)
        goto out;
    adam->step = ck->adam_step;
out:
    free(host);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_model_init(struct tsrnn_model *model,
                                              struct tsrnn_compute *compute,
                                              const struct tsrnn_checkpoint *ck, size_t batch)
{
    TSRNN_TRY(tsrnn_model_init(model, compute, &ck->dims, batch > 0 ? batch : 1,
                               (size_t)ck->input_chunk_length));
    TSRNN_TRY(tsrnn_checkpoint_restore(ck, model, NULL));
    if (ck->likelihood.kind != TSRNN_LIKELIHOOD_NONE)
        TSRNN_TRY(tsrnn_model_likelihood(model, &ck->likelihood));
    return TSRNN_OK;
}
