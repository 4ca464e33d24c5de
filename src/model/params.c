/* The parameter table (PyTorch state_dict names, shapes and order), typed views into the
 * flat buffers, PyTorch's default initialisation, and loading weights by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tsrnn/model.h"
#include "tsrnn/safetensors.h"
#include "tsrnn/torch_rng.h"

const char *tsrnn_model_kind_name(enum tsrnn_model_kind kind)
{
    switch (kind) {
    case TSRNN_MODEL_LSTM:
        return "LSTM";
    case TSRNN_MODEL_GRU:
        return "GRU";
    case TSRNN_MODEL_RNN:
        break;
    }
    return "RNN";
}

size_t tsrnn_model_gate_count(enum tsrnn_model_kind kind)
{
    switch (kind) {
    case TSRNN_MODEL_LSTM:
        return 4; /* i, f, g, o */
    case TSRNN_MODEL_GRU:
        return 3; /* r, z, n */
    case TSRNN_MODEL_RNN:
        break;
    }
    return 1;
}

static void add_entry(struct tsrnn_param_table *table, const char *name, size_t rows, size_t cols)
{
    struct tsrnn_param_entry *e = &table->entries[table->entry_count++];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->rank = cols == 0 ? 1 : 2;
    e->shape[0] = (int64_t)rows;
    e->shape[1] = (int64_t)cols;
    e->offset = table->total_count;
    e->count = cols == 0 ? rows : rows * cols;
    table->total_count += e->count;
}

void tsrnn_param_table_init(struct tsrnn_param_table *table, const struct tsrnn_model_dims *dims)
{
    size_t G = tsrnn_model_gate_count(dims->kind), H = dims->hidden_count;
    char name[TSRNN_PARAM_NAME_MAX];

    *table = (struct tsrnn_param_table){ 0 };
    for (size_t l = 0; l < dims->layer_count; l++) {
        size_t in = l == 0 ? dims->input_count : H;
        snprintf(name, sizeof(name), "rnn.weight_ih_l%zu", l);
        add_entry(table, name, G * H, in);
        snprintf(name, sizeof(name), "rnn.weight_hh_l%zu", l);
        add_entry(table, name, G * H, H);
        snprintf(name, sizeof(name), "rnn.bias_ih_l%zu", l);
        add_entry(table, name, G * H, 0);
        snprintf(name, sizeof(name), "rnn.bias_hh_l%zu", l);
        add_entry(table, name, G * H, 0);
    }
    table->rnn_count = table->total_count;
    add_entry(table, "V.weight", tsrnn_model_head_count(dims), H);
    add_entry(table, "V.bias", tsrnn_model_head_count(dims), 0);
    table->head_count = table->total_count - table->rnn_count;
}

const struct tsrnn_param_entry *tsrnn_param_table_find(const struct tsrnn_param_table *table,
                                                       const char *name)
{
    for (size_t i = 0; i < table->entry_count; i++)
        if (strcmp(table->entries[i].name, name) == 0)
            return &table->entries[i];
    return NULL;
}

void tsrnn_model_params_view(struct tsrnn_model_params *view, const struct tsrnn_model_dims *dims,
                             float *flat)
{
    size_t G = tsrnn_model_gate_count(dims->kind), H = dims->hidden_count;
    float *next = flat;

    *view = (struct tsrnn_model_params){ 0 };
    for (size_t l = 0; l < dims->layer_count; l++) {
        size_t in = l == 0 ? dims->input_count : H;
        struct tsrnn_layer_params *p = &view->layers[l];
        p->w_ih = next;
        next += G * H * in;
        p->w_hh = next;
        next += G * H * H;
        p->b_ih = next;
        next += G * H;
        p->b_hh = next;
        next += G * H;
    }
    view->v_w = next;
    next += tsrnn_model_head_count(dims) * H;
    view->v_b = next;
}

void tsrnn_model_init_params(float *flat, const struct tsrnn_param_table *table,
                             const struct tsrnn_model_dims *dims, uint32_t random_state)
{
    /* torch's CPU uniform_ fuses the multiply-add on AVX2 machines (every x86-64 CPU of the
     * last decade), which is what a Darts user's PyTorch does. */
    tsrnn_darts_init_params(flat, table->rnn_count, dims->hidden_count,
                            tsrnn_model_head_count(dims), random_state, TSRNN_TORCH_UNIFORM_FUSED);
}

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
    /* A tsrnn checkpoint given as weights is checked as resume and predict check it. */
    if (status == TSRNN_OK)
        status = tsrnn_safetensors_check_crcs(&st, path);

    for (size_t i = 0; status == TSRNN_OK && i < st.tensor_count; i++) {
        const char *name = st.tensors[i].name;
        if (strncmp(name, "optim.", 6) != 0 && tsrnn_param_table_find(table, name) == NULL)
            status = tsrnn_error(TSRNN_ERR_DATA,
                                 "%s: unexpected tensor \"%s\"; this model has %s ... %s (%zu "
                                 "tensors)",
                                 tsrnn_display_path(path), name, table->entries[0].name,
                                 table->entries[table->entry_count - 1].name, table->entry_count);
    }
    if (status == TSRNN_OK)
        status = tsrnn_model_read_tensors(flat, table, &st, "", path);
    tsrnn_safetensors_finish(&st);
    return status;
}

size_t tsrnn_model_head_count(const struct tsrnn_model_dims *dims)
{
    return dims->output_count * (dims->param_count > 1 ? dims->param_count : 1);
}
