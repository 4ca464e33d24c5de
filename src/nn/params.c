/* The model kinds, the parameter table (PyTorch state_dict names, shapes and order), typed
 * views into the flat buffers, and PyTorch's default initialisation (include/tsrnn/nn.h). */
#include <stdio.h>
#include <string.h>

#include "tsrnn/nn.h"
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

size_t tsrnn_model_head_count(const struct tsrnn_model_dims *dims)
{
    return dims->output_count * (dims->param_count > 1 ? dims->param_count : 1);
}
