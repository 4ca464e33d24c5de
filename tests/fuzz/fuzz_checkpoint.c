/* Fuzz target: a training checkpoint read and restored, as --resume and tsrnn-predict do
 * (tsrnn_checkpoint_read(), then tsrnn_checkpoint_restore() into a model and Adam built for
 * the dimensions it describes).
 *
 * Input: the checkpoint file's bytes. The seeds are real checkpoints; their data buffer is
 * covered by tsrnn.data_crc32c, the metadata (model, scaler, series, state, config) is not,
 * so that is where most mutations go deep.
 *
 * Checks: a refused file is TSRNN_ERR_DATA (or _USAGE) with a message; an accepted one
 * restores into a model of its dimensions, after which the model's weights, Adam's moments
 * and step are the file's, and it is refused (TSRNN_ERR_DATA) by a model of other
 * dimensions, which it leaves as it was. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/compute.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"

static struct tsrnn_checkpoint *ck;
static struct tsrnn_compute *compute;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir();
    struct tsrnn_compute_options cpu = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    ck = malloc(sizeof(*ck)); /* a config and the series' names: large */
    if (ck == NULL || tsrnn_compute_create(&compute, &cpu) != TSRNN_OK)
        exit(1);
    return 0;
}

/* `count` floats of device memory, downloaded. */
static float *download(const float *device, size_t count)
{
    float *host = malloc(count * sizeof(float));
    FUZZ_CHECK(host != NULL, "out of memory");
    FUZZ_CHECK(tsrnn_compute_download(compute, host, device, count * sizeof(float)) == TSRNN_OK,
               "download failed");
    return host;
}

/* The file's tensors `prefix` + name in the table's layout equal `device`'s floats. */
static void check_restored(const struct tsrnn_param_table *table, const char *prefix,
                           const float *device)
{
    float *want = malloc(table->total_count * sizeof(float));
    FUZZ_CHECK(want != NULL, "out of memory");
    FUZZ_CHECK(tsrnn_model_read_tensors(want, table, &ck->file, prefix, ck->path) == TSRNN_OK,
               "tensors '%s*' read once, refused later", prefix);
    float *have = download(device, table->total_count);
    FUZZ_CHECK(memcmp(want, have, table->total_count * sizeof(float)) == 0,
               "tensors '%s*' restored with other values", prefix);
    free(have);
    free(want);
}

/* A model one hidden unit wider refuses the checkpoint and keeps its (zero) weights. */
static void check_other_model(void)
{
    struct tsrnn_model_dims dims = ck->dims;
    dims.hidden_count++;
    struct tsrnn_model other = { 0 };
    FUZZ_CHECK(tsrnn_model_init(&other, compute, &dims, 1, 1) == TSRNN_OK, "model_init: %s",
               tsrnn_last_error());
    FUZZ_CHECK(tsrnn_checkpoint_restore(ck, &other, NULL) == TSRNN_ERR_DATA,
               "restored into a model of other dimensions");
    float *params = download(other.params, other.table.total_count);
    for (size_t i = 0; i < other.table.total_count; i++)
        FUZZ_CHECK(params[i] == 0.0f, "a refused restore changed the model");
    free(params);
    tsrnn_model_finish(&other);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("last-epoch=0.safetensors", data, size);
    enum tsrnn_status status = tsrnn_checkpoint_read(ck, path);
    if (status != TSRNN_OK) {
        FUZZ_CHECK(status == TSRNN_ERR_DATA || status == TSRNN_ERR_USAGE, "status %s",
                   tsrnn_status_name(status));
        FUZZ_CHECK(tsrnn_last_error()[0] != '\0', "a refusal without a message");
        return 0;
    }

    /* One window of one step: restoring needs the parameters only, whatever the
     * input_chunk_length (up to 10^6) would make a forecast's workspace. */
    struct tsrnn_model model = { 0 };
    struct tsrnn_adam adam = { 0 };
    status = tsrnn_model_init(&model, compute, &ck->dims, 1, 1);
    if (status == TSRNN_OK)
        status = tsrnn_adam_init(&adam, compute, model.table.total_count, 1e-3);
    FUZZ_CHECK(status == TSRNN_OK, "a model for the checkpoint's dimensions: %s",
               tsrnn_last_error());
    status = tsrnn_checkpoint_restore(ck, &model, &adam);
    FUZZ_CHECK(status == TSRNN_OK, "an accepted checkpoint does not restore");
    check_restored(&model.table, "", model.params);
    check_restored(&model.table, "optim.exp_avg.", adam.exp_avg);
    check_restored(&model.table, "optim.exp_avg_sq.", adam.exp_avg_sq);
    FUZZ_CHECK(adam.step == ck->adam_step, "Adam step %llu, the file's %llu",
               (unsigned long long)adam.step, (unsigned long long)ck->adam_step);
    check_other_model();

    tsrnn_adam_finish(&adam);
    tsrnn_model_finish(&model);
    tsrnn_checkpoint_finish(ck);
    return 0;
}
