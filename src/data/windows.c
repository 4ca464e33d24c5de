/* Darts' ShiftedTorchTrainingDataset windows (include/tsrnn/data.h; reference
 * darts-semantics.md §2: end_of_output = L - i, output = y[end-T, end), input one step
 * earlier). */
#include "tsrnn/data.h"

#include <string.h>

void tsrnn_windows_init(struct tsrnn_windows *w, const float *values, size_t length,
                        size_t component_count, size_t training_length)
{
    w->values = values;
    w->length = length;
    w->component_count = component_count;
    w->training_length = training_length;
    w->count = length > training_length ? length - training_length : 0;
}

size_t tsrnn_windows_start(const struct tsrnn_windows *w, size_t idx)
{
    return w->length - w->training_length - 1 - idx;
}

void tsrnn_windows_gather(const struct tsrnn_windows *w, const size_t *idx, size_t batch_count,
                          float *input, float *target)
{
    size_t row_count = w->training_length * w->component_count; /* T * C */
    for (size_t b = 0; b < batch_count; b++) {
        const float *src = w->values + tsrnn_windows_start(w, idx[b]) * w->component_count;
        memcpy(input + b * row_count, src, row_count * sizeof(float));
        memcpy(target + b * row_count, src + w->component_count, row_count * sizeof(float));
    }
}
