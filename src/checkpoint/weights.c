/* The model's weights from a safetensors file by PyTorch name (include/tsrnn/safetensors.h):
 * every tensor of the parameter table checked (present, F32, its shape, finite) and copied
 * into a flat buffer in the table's layout. For [training] init_weights, resume and
 * tsrnn-predict. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tsrnn/nn.h"
#include "tsrnn/safetensors.h"

static void format_shape(char *out, size_t capacity, size_t rank, const int64_t *shape)
{
    size_t used = (size_t)snprintf(out, capacity, "[");
    for (size_t d = 0; d < rank && used < capacity; d++)
        used += (size_t)snprintf(out + used, capacity - used, "%s%lld", d ? ", " : "",
                                 (long long)shape[d]);
    if (used < capacity)
        snprintf(out + used, capacity - used, "]");
}

static enum tsrnn_status check_tensor(const struct tsrnn_param_entry *want, const char *name,
                                      const struct tsrnn_tensor_info *have, const char *path)
{
    char want_shape[64], have_shape[160];

    format_shape(want_shape, sizeof(want_shape), want->rank, want->shape);
    if (have == NULL)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\" is missing; this model needs it with shape %s "
                           "(check [model] model, hidden_dim, n_rnn_layers and the data's "
                           "columns against the run that wrote the file)",
                           tsrnn_display_path(path), name, want_shape);
    format_shape(have_shape, sizeof(have_shape), have->rank, have->shape);
    if (have->dtype != TSRNN_DTYPE_F32)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\" is %s; tsrnn needs F32",
                           tsrnn_display_path(path), name, tsrnn_dtype_name(have->dtype));
    bool same = have->rank == want->rank;
    for (size_t d = 0; same && d < want->rank; d++)
        same = have->shape[d] == want->shape[d];
    if (!same)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\" has shape %s; this model needs %s (check [model] "
                           "model, hidden_dim, n_rnn_layers and the data's columns)",
                           tsrnn_display_path(path), name, have_shape, want_shape);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_model_read_tensors(float *flat, const struct tsrnn_param_table *table,
                                           const struct tsrnn_safetensors *st, const char *prefix,
                                           const char *path)
{
    char name[TSRNN_PARAM_NAME_MAX + 64];

    for (size_t e = 0; e < table->entry_count; e++) {
        snprintf(name, sizeof(name), "%s%s", prefix, table->entries[e].name);
        TSRNN_TRY(check_tensor(&table->entries[e], name, tsrnn_safetensors_find(st, name), path));
    }
    for (size_t e = 0; e < table->entry_count; e++) {
        const struct tsrnn_param_entry *entry = &table->entries[e];
        snprintf(name, sizeof(name), "%s%s", prefix, entry->name);
        TSRNN_TRY(tsrnn_tensor_copy_f32(flat + entry->offset, tsrnn_safetensors_find(st, name)));
        for (size_t i = 0; i < entry->count; i++)
            if (!isfinite(flat[entry->offset + i]))
                return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\" holds %g at element %zu",
                                   tsrnn_display_path(path), name, (double)flat[entry->offset + i],
                                   i);
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_model_load_params(float *flat, const struct tsrnn_param_table *table,
                                          const char *path)
{
    struct tsrnn_safetensors st = { 0 };
    enum tsrnn_status status = tsrnn_safetensors_read(&st, path);
    if (status != TSRNN_OK)
        goto out;
    /* A tsrnn checkpoint given as weights is checked as resume and predict check it. */
    status = tsrnn_safetensors_check_crcs(&st, path);
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < st.tensor_count; i++) {
        const char *name = st.tensors[i].name;
        if (strncmp(name, "optim.", 6) != 0 && tsrnn_param_table_find(table, name) == NULL) {
            status = tsrnn_error(TSRNN_ERR_DATA,
                                 "%s: unexpected tensor \"%s\"; this model has %s ... %s (%zu "
                                 "tensors)",
                                 tsrnn_display_path(path), name, table->entries[0].name,
                                 table->entries[table->entry_count - 1].name, table->entry_count);
            goto out;
        }
    }
    status = tsrnn_model_read_tensors(flat, table, &st, "", path);
out:
    tsrnn_safetensors_finish(&st);
    return status;
}
