/* Fuzz target: the safetensors reader (tsrnn_safetensors_parse(), and _read() on the same
 * bytes as a file: [model] init_weights and every checkpoint come through it).
 *
 * Input: the file's bytes.
 *
 * Checks: a refused file is TSRNN_ERR_DATA with a message and a zeroed struct; an accepted one
 * keeps every promise of include/tsrnn/safetensors.h: ranks and dtypes in range, sizes that
 * match shapes, tensors that lie in the data buffer and cover it exactly, unique names and
 * metadata keys that tsrnn_safetensors_find() and _metadata() return, F32 data that
 * tsrnn_tensor_copy_f32() copies. Reading the same bytes from a file gives the same result. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "tsrnn/safetensors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

static void check_accepted(const struct tsrnn_safetensors *st, const uint8_t *data, size_t size)
{
    FUZZ_CHECK(st->nbytes == size && memcmp(st->bytes, data, size) == 0, "bytes not kept");
    FUZZ_CHECK(size >= 8 && st->header_nbytes <= size - 8, "header of %zu bytes in a file of %zu",
               st->header_nbytes, size);
    const unsigned char *buffer = st->bytes + 8 + st->header_nbytes;
    size_t buffer_nbytes = size - 8 - st->header_nbytes, covered = 0;
    for (size_t i = 0; i < st->tensor_count; i++) {
        const struct tsrnn_tensor_info *t = &st->tensors[i];
        FUZZ_CHECK((unsigned)t->dtype < TSRNN_DTYPE_COUNT, "tensor %zu: dtype %d", i, t->dtype);
        FUZZ_CHECK(t->rank <= TSRNN_TENSOR_MAX_RANK, "tensor %zu: rank %zu", i, t->rank);
        size_t count = 1;
        for (size_t d = 0; d < t->rank; d++) {
            FUZZ_CHECK(t->shape[d] >= 0, "%s: dimension %lld", t->name, (long long)t->shape[d]);
            count *= (size_t)t->shape[d];
        }
        FUZZ_CHECK(t->element_count == count, "%s: %zu elements for its shape's %zu", t->name,
                   t->element_count, count);
        FUZZ_CHECK(t->nbytes == count * tsrnn_dtype_nbytes(t->dtype), "%s: %zu bytes", t->name,
                   t->nbytes);
        const unsigned char *p = t->data;
        FUZZ_CHECK(p >= buffer && t->nbytes <= buffer_nbytes &&
                       (size_t)(p - buffer) <= buffer_nbytes - t->nbytes,
                   "%s: data outside the buffer", t->name);
        covered += t->nbytes;
        FUZZ_CHECK(tsrnn_safetensors_find(st, t->name) == t, "%s: the name is not unique", t->name);
        if (t->dtype == TSRNN_DTYPE_F32) {
            float *copy = malloc(t->element_count * sizeof(float) + 1);
            FUZZ_CHECK(copy != NULL, "out of memory");
            FUZZ_CHECK(tsrnn_tensor_copy_f32(copy, t) == TSRNN_OK, "%s: copy refused", t->name);
            FUZZ_CHECK(memcmp(copy, t->data, t->nbytes) == 0, "%s: copy differs", t->name);
            free(copy);
        } else {
            float one;
            FUZZ_CHECK(tsrnn_tensor_copy_f32(&one, t) == TSRNN_ERR_DATA, "%s: %s copied as F32",
                       t->name, tsrnn_dtype_name(t->dtype));
        }
    }
    /* No holes or overlaps: in range and not overlapping, the sizes add up to the buffer. */
    FUZZ_CHECK(covered == buffer_nbytes, "tensors cover %zu of %zu bytes", covered, buffer_nbytes);
    for (size_t i = 0; i < st->metadata_count; i++)
        FUZZ_CHECK(tsrnn_safetensors_metadata(st, st->metadata[i].key) == st->metadata[i].value,
                   "metadata key '%s' is not unique", st->metadata[i].key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tsrnn_safetensors st, from_file;
    enum tsrnn_status status = tsrnn_safetensors_parse(&st, data, size, "fuzz.safetensors");
    if (status == TSRNN_OK) {
        check_accepted(&st, data, size);
    } else {
        FUZZ_CHECK(status == TSRNN_ERR_DATA, "status %s", tsrnn_status_name(status));
        FUZZ_CHECK(tsrnn_last_error()[0] != '\0', "a refusal without a message");
        FUZZ_CHECK(st.bytes == NULL && st.tensors == NULL && st.strings == NULL,
                   "a refused file left data");
    }

    const char *path = fuzz_write("fuzz.safetensors", data, size);
    enum tsrnn_status file_status = tsrnn_safetensors_read(&from_file, path);
    FUZZ_CHECK(file_status == status, "parse: %s, read: %s", tsrnn_status_name(status),
               tsrnn_status_name(file_status));
    FUZZ_CHECK(from_file.tensor_count == st.tensor_count &&
                   from_file.metadata_count == st.metadata_count,
               "parse and read disagree");
    tsrnn_safetensors_finish(&from_file);
    tsrnn_safetensors_finish(&st);
    return 0;
}
