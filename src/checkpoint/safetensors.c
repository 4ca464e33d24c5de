/* safetensors files: a strict reader and an atomic writer (include/tsrnn/checkpoint.h).
 *
 * Reference: huggingface/safetensors README "Format" and safetensors/src/tensor.rs
 * (`read_metadata`, `Metadata::validate`), summarised in shared
 * reference/ecosystem-formats.md §2.1. The reader enforces the same rules as the reference
 * reader, because a file tsrnn accepts should load in Python and the other way round, and
 * because a file that is entirely indexed cannot smuggle other content (anti-polyglot).
 * The header is parsed with jansson: its integers are 64-bit, it keeps insertion order, it
 * rejects duplicate keys and reports line and column.
 *
 * The reader keeps the whole file in one buffer; tensors point into it. It first checks the
 * 8-byte length, then every header entry on its own (dtype, shape, offsets, size), then the
 * layout of all tensors together, so each message can name the tensor at fault.
 */
#include "tsrnn/safetensors.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tensor bytes are copied as they are, and safetensors data is little-endian. */
#if !defined(__BYTE_ORDER__) || !defined(__ORDER_LITTLE_ENDIAN__)
#error "cannot tell the host's byte order"
#elif __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tsrnn's safetensors code needs a little-endian host"
#endif

#define HEADER_MAX_NBYTES 100000000u /* the reference reader's MAX_HEADER_SIZE */
#define METADATA_KEY      "__metadata__"
#define LAYOUT_HINT       "tensors must cover the data buffer exactly, without holes or overlaps"

static const struct {
    const char *name;
    size_t nbytes;
} dtype_table[TSRNN_DTYPE_COUNT] = {
    [TSRNN_DTYPE_F32] = { "F32", 4 },
    [TSRNN_DTYPE_F64] = { "F64", 8 },
    [TSRNN_DTYPE_I64] = { "I64", 8 },
    [TSRNN_DTYPE_I32] = { "I32", 4 },
    [TSRNN_DTYPE_F16] = { "F16", 2 },
    [TSRNN_DTYPE_BF16] = { "BF16", 2 },
    [TSRNN_DTYPE_I16] = { "I16", 2 },
    [TSRNN_DTYPE_I8] = { "I8", 1 },
    [TSRNN_DTYPE_U8] = { "U8", 1 },
    [TSRNN_DTYPE_U16] = { "U16", 2 },
    [TSRNN_DTYPE_U32] = { "U32", 4 },
    [TSRNN_DTYPE_U64] = { "U64", 8 },
    [TSRNN_DTYPE_BOOL] = { "BOOL", 1 },
    [TSRNN_DTYPE_C64] = { "C64", 8 },
    [TSRNN_DTYPE_F8_E5M2] = { "F8_E5M2", 1 },
    [TSRNN_DTYPE_F8_E4M3] = { "F8_E4M3", 1 },
    [TSRNN_DTYPE_F8_E8M0] = { "F8_E8M0", 1 },
    [TSRNN_DTYPE_F8_E4M3FNUZ] = { "F8_E4M3FNUZ", 1 },
    [TSRNN_DTYPE_F8_E5M2FNUZ] = { "F8_E5M2FNUZ", 1 },
};

const char *tsrnn_dtype_name(enum tsrnn_dtype dtype)
{
    if ((unsigned)dtype >= TSRNN_DTYPE_COUNT)
        return "?";
    return dtype_table[dtype].name;
}

size_t tsrnn_dtype_nbytes(enum tsrnn_dtype dtype)
{
    if ((unsigned)dtype >= TSRNN_DTYPE_COUNT)
        return 0;
    return dtype_table[dtype].nbytes;
}

static bool dtype_from_name(const char *name, enum tsrnn_dtype *dtype)
{
    for (unsigned i = 0; i < TSRNN_DTYPE_COUNT; i++) {
        if (strcmp(dtype_table[i].name, name) == 0) {
            *dtype = (enum tsrnn_dtype)i;
            return true;
        }
    }
    return false;
}

/* The number of elements of `shape` and their size in bytes; false on overflow of 64 bits
 * (checked dimension by dimension, as the reference reader does). */
static bool shape_nbytes(const int64_t *shape, size_t rank, size_t elem_nbytes,
                         uint64_t *element_count, uint64_t *nbytes)
{
    uint64_t count = 1;
    *element_count = 0;
    *nbytes = 0;
    for (size_t k = 0; k < rank; k++)
        if (__builtin_mul_overflow(count, (uint64_t)shape[k], &count))
            return false;
    *element_count = count;
    return !__builtin_mul_overflow(count, (uint64_t)elem_nbytes, nbytes);
}

static void format_shape(char *out, size_t capacity, const int64_t *shape, size_t rank)
{
    size_t used = (size_t)snprintf(out, capacity, "[");
    for (size_t k = 0; k < rank && used < capacity; k++)
        used +=
            (size_t)snprintf(out + used, capacity - used, "%s%" PRId64, k ? ", " : "", shape[k]);
    if (used < capacity)
        snprintf(out + used, capacity - used, "]");
}

/* A JSON value as a message shows it: numbers as written, anything else by its kind. */
static void describe_json(char *out, size_t capacity, const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_INTEGER:
        snprintf(out, capacity, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
        break;
    case JSON_REAL: {
        int n = snprintf(out, capacity, "%.17g", json_real_value(value));
        /* 1.0 prints as "1", which would read as an integer */
        if (n > 0 && (size_t)n + 2 < capacity && strspn(out, "-0123456789") == (size_t)n)
            memcpy(out + n, ".0", 3);
        break;
    }
    case JSON_STRING:
        snprintf(out, capacity, "the string \"%.40s\"", json_string_value(value));
        break;
    case JSON_TRUE:
        snprintf(out, capacity, "true");
        break;
    case JSON_FALSE:
        snprintf(out, capacity, "false");
        break;
    case JSON_NULL:
        snprintf(out, capacity, "null");
        break;
    case JSON_ARRAY:
        snprintf(out, capacity, "an array of %zu values", json_array_size(value));
        break;
    case JSON_OBJECT:
        snprintf(out, capacity, "an object");
        break;
    }
}

/* --- reading --------------------------------------------------------------------------- */

/* Where one tensor lies in the data buffer, for the layout check. */
struct span {
    uint64_t begin, end;
    size_t tensor_idx;
};

/* What the reader holds while it validates a file. */
struct reader {
    const char *label;
    struct tsrnn_safetensors *st;
    const unsigned char *data; /* the data buffer, after the header */
    size_t data_nbytes;
    json_t *root;       /* the parsed header */
    struct span *spans; /* (tensor_count) */
    char *strings_next; /* free space in st->strings */
};

static uint64_t load_u64_le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* What torch.save() writes: a zip archive (torch >= 1.6), or a pickle that starts with
 * protocol 2 (the legacy format). Darts' `.ckpt`, `_model.pth.tar` and `model.save()`'s `.pt`
 * are all such files. */
static bool is_torch_file(const unsigned char *p, size_t nbytes)
{
    return (nbytes >= 4 && p[0] == 'P' && p[1] == 'K' && p[2] == 3 && p[3] == 4) ||
           (nbytes >= 2 && p[0] == 0x80 && p[1] == 0x02);
}

static enum tsrnn_status check_lengths(struct reader *r)
{
    const struct tsrnn_safetensors *st = r->st;
    if (is_torch_file(st->bytes, st->nbytes))
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: this is a PyTorch file (torch.save: Darts' .ckpt, _model.pth.tar "
                           "or model.save()'s .pt), not safetensors; convert a Darts model with "
                           "`scripts/darts-to-tsrnn MODEL.pt|.ckpt OUT_DIR` (Python with Darts), "
                           "then use OUT_DIR: tsrnn-predict --run OUT_DIR, --resume "
                           "OUT_DIR/checkpoints/last-epoch=0.safetensors, or init_weights = "
                           "OUT_DIR/weights.safetensors",
                           r->label);
    if (st->nbytes == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the file is empty; a safetensors file starts with an 8-byte "
                           "header length",
                           r->label);
    if (st->nbytes < 8)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the file has only %zu bytes; a safetensors file starts with an "
                           "8-byte header length",
                           r->label, st->nbytes);
    uint64_t header_nbytes = load_u64_le(st->bytes);
    if (header_nbytes > HEADER_MAX_NBYTES)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: header length %" PRIu64 " is over the limit of %u bytes; this "
                           "is not a safetensors file",
                           r->label, header_nbytes, HEADER_MAX_NBYTES);
    if (header_nbytes > st->nbytes - 8)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: header length %" PRIu64 " runs past the end of the file (%zu "
                           "bytes); the file is truncated or not a safetensors file",
                           r->label, header_nbytes, st->nbytes);
    if (header_nbytes == 0)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: header length is 0; expected a JSON object",
                           r->label);
    r->st->header_nbytes = (size_t)header_nbytes;
    r->data = st->bytes + 8 + header_nbytes;
    r->data_nbytes = st->nbytes - 8 - (size_t)header_nbytes;
    return TSRNN_OK;
}

static enum tsrnn_status load_header(struct reader *r)
{
    json_error_t error;
    /* Trailing space padding is JSON whitespace, which jansson skips. */
    r->root = json_loadb((const char *)r->st->bytes + 8, r->st->header_nbytes,
                         JSON_REJECT_DUPLICATES, &error);
    if (r->root == NULL)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: the header is not valid JSON (line %d, column %d): %s", r->label,
                           error.line, error.column, error.text);
    if (!json_is_object(r->root)) {
        char found[80];
        describe_json(found, sizeof(found), r->root);
        return tsrnn_error(TSRNN_ERR_DATA, "%s: the header is %s; expected a JSON object", r->label,
                           found);
    }
    return TSRNN_OK;
}

/* Checks "__metadata__" (string -> string) and adds the bytes its strings need. */
static enum tsrnn_status check_metadata(const struct reader *r, const json_t *metadata,
                                        size_t *strings_nbytes)
{
    char found[80];
    if (!json_is_object(metadata)) {
        describe_json(found, sizeof(found), metadata);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: " METADATA_KEY " is %s; expected an object of string values",
                           r->label, found);
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)metadata, key, value)
    {
        if (!json_is_string(value)) {
            describe_json(found, sizeof(found), value);
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: " METADATA_KEY " \"%s\" is %s; metadata values must be "
                               "strings",
                               r->label, key, found);
        }
        *strings_nbytes += strlen(key) + 1 + json_string_length(value) + 1;
    }
    return TSRNN_OK;
}

static char *keep_string(struct reader *r, const char *text)
{
    size_t nbytes = strlen(text) + 1;
    char *kept = memcpy(r->strings_next, text, nbytes);
    r->strings_next += nbytes;
    return kept;
}

/* A non-negative JSON integer, or an error naming `what` ("shape[1]") of tensor `name`. */
static enum tsrnn_status get_count(const struct reader *r, const char *name, const char *what,
                                   const char *rule, const json_t *value, uint64_t *out)
{
    if (json_is_integer(value) && json_integer_value(value) >= 0) {
        *out = (uint64_t)json_integer_value(value);
        return TSRNN_OK;
    }
    char found[80];
    describe_json(found, sizeof(found), value);
    return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\": %s is %s; %s", r->label, name, what,
                       found, rule);
}

static enum tsrnn_status get_dtype(const struct reader *r, const char *name, const json_t *value,
                                   enum tsrnn_dtype *dtype)
{
    char found[80];
    if (!json_is_string(value)) {
        describe_json(found, sizeof(found), value);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": dtype is %s; expected a string such as \"F32\"",
                           r->label, name, found);
    }
    if (dtype_from_name(json_string_value(value), dtype))
        return TSRNN_OK;
    char accepted[256];
    size_t used = 0;
    accepted[0] = '\0';
    for (unsigned i = 0; i < TSRNN_DTYPE_COUNT && used < sizeof(accepted); i++)
        used += (size_t)snprintf(accepted + used, sizeof(accepted) - used, "%s%s", i ? ", " : "",
                                 dtype_table[i].name);
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s: tensor \"%s\": dtype \"%.40s\" is not one tsrnn reads; "
                       "accepted: %s",
                       r->label, name, json_string_value(value), accepted);
}

static enum tsrnn_status get_shape(const struct reader *r, const char *name, const json_t *value,
                                   struct tsrnn_tensor_info *info)
{
    if (!json_is_array(value) || json_array_size(value) > TSRNN_TENSOR_MAX_RANK) {
        char found[80];
        describe_json(found, sizeof(found), value);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": shape is %s; expected an array of at most %d "
                           "dimensions such as [20, 1]",
                           r->label, name, found, TSRNN_TENSOR_MAX_RANK);
    }
    info->rank = json_array_size(value);
    for (size_t k = 0; k < info->rank; k++) {
        char what[32];
        uint64_t dim = 0;
        snprintf(what, sizeof(what), "shape[%zu]", k);
        TSRNN_TRY(get_count(r, name, what, "dimensions are non-negative integers",
                            json_array_get(value, k), &dim));
        info->shape[k] = (int64_t)dim;
    }
    return TSRNN_OK;
}

/* Reads and checks one tensor entry on its own: its fields, and that its offsets hold exactly
 * its shape's bytes inside the data buffer. */
static enum tsrnn_status read_tensor(struct reader *r, const char *name, const json_t *entry,
                                     struct tsrnn_tensor_info *info, struct span *span)
{
    if (!json_is_object(entry)) {
        char found[80];
        describe_json(found, sizeof(found), entry);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\" is %s; expected an object with dtype, shape and "
                           "data_offsets",
                           r->label, name, found);
    }
    const json_t *fields[3] = { NULL, NULL, NULL };
    static const char *const field_names[3] = { "dtype", "shape", "data_offsets" };
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)entry, key, value)
    {
        size_t i = 0;
        while (i < 3 && strcmp(key, field_names[i]) != 0)
            i++;
        if (i == 3)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: tensor \"%s\": unexpected field \"%s\"; a tensor entry has "
                               "exactly dtype, shape and data_offsets",
                               r->label, name, key);
        fields[i] = value;
    }
    for (size_t i = 0; i < 3; i++)
        if (fields[i] == NULL)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: tensor \"%s\": no \"%s\" field; a tensor entry has exactly "
                               "dtype, shape and data_offsets",
                               r->label, name, field_names[i]);

    TSRNN_TRY(get_dtype(r, name, fields[0], &info->dtype));
    TSRNN_TRY(get_shape(r, name, fields[1], info));
    const json_t *offsets = fields[2];
    if (!json_is_array(offsets) || json_array_size(offsets) != 2) {
        char found[80];
        describe_json(found, sizeof(found), offsets);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": data_offsets is %s; expected [begin, end]", r->label,
                           name, found);
    }
    const char *offset_rule = "offsets are non-negative integers";
    TSRNN_TRY(get_count(r, name, "data_offsets[0]", offset_rule, json_array_get(offsets, 0),
                        &span->begin));
    TSRNN_TRY(
        get_count(r, name, "data_offsets[1]", offset_rule, json_array_get(offsets, 1), &span->end));
    uint64_t begin = span->begin, end = span->end;
    if (end < begin)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end "
                           "before they begin",
                           r->label, name, begin, end);

    char shape_text[256];
    format_shape(shape_text, sizeof(shape_text), info->shape, info->rank);
    uint64_t element_count, need;
    if (!shape_nbytes(info->shape, info->rank, tsrnn_dtype_nbytes(info->dtype), &element_count,
                      &need))
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": shape %s of %s needs more than 2^64 bytes", r->label,
                           name, shape_text, tsrnn_dtype_name(info->dtype));
    if (end - begin != need)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] hold "
                           "%" PRIu64 " bytes, shape %s of %s needs %" PRIu64,
                           r->label, name, begin, end, end - begin, shape_text,
                           tsrnn_dtype_name(info->dtype), need);
    if (end > r->data_nbytes)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] reach "
                           "past the end of the data buffer (%zu bytes after the header); the "
                           "file is truncated or the offsets are wrong",
                           r->label, name, begin, end, r->data_nbytes);
    /* end <= data_nbytes, so these fit a size_t. */
    info->element_count = (size_t)element_count;
    info->nbytes = (size_t)need;
    info->data = r->data + begin;
    return TSRNN_OK;
}

/* Fills st's tensors and metadata from the parsed header, in header order. */
static enum tsrnn_status read_entries(struct reader *r)
{
    struct tsrnn_safetensors *st = r->st;
    const json_t *metadata = json_object_get(r->root, METADATA_KEY);
    size_t strings_nbytes = 0;
    if (metadata != NULL)
        TSRNN_TRY(check_metadata(r, metadata, &strings_nbytes));
    const char *key;
    const json_t *value;
    json_object_foreach(r->root, key, value) if (value != metadata) strings_nbytes +=
        strlen(key) + 1;

    size_t tensor_count = json_object_size(r->root) - (metadata != NULL);
    size_t metadata_count = metadata != NULL ? json_object_size(metadata) : 0;
    st->tensors = calloc(tensor_count + 1, sizeof(*st->tensors));
    st->metadata = calloc(metadata_count + 1, sizeof(*st->metadata));
    st->strings = malloc(strings_nbytes + 1);
    r->spans = calloc(tensor_count + 1, sizeof(*r->spans));
    if (st->tensors == NULL || st->metadata == NULL || st->strings == NULL || r->spans == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "%s: out of memory for the header of %zu tensors",
                           r->label, tensor_count);
    r->strings_next = st->strings;

    if (metadata != NULL) {
        json_object_foreach((json_t *)metadata, key, value)
        {
            struct tsrnn_metadata_entry *m = &st->metadata[st->metadata_count++];
            m->key = keep_string(r, key);
            m->value = keep_string(r, json_string_value(value));
        }
    }
    json_object_foreach(r->root, key, value)
    {
        if (value == metadata)
            continue;
        size_t i = st->tensor_count;
        struct tsrnn_tensor_info *info = &st->tensors[i];
        TSRNN_TRY(read_tensor(r, key, value, info, &r->spans[i]));
        info->name = keep_string(r, key);
        r->spans[i].tensor_idx = i;
        st->tensor_count++;
    }
    return TSRNN_OK;
}

static int compare_spans(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->tensor_idx < y->tensor_idx ? -1 : x->tensor_idx > y->tensor_idx;
}

/* Sorted by offset, the tensors must follow each other from byte 0 to the end of the file. */
static enum tsrnn_status check_layout(struct reader *r)
{
    const struct tsrnn_safetensors *st = r->st;
    qsort(r->spans, st->tensor_count, sizeof(*r->spans), compare_spans);
    uint64_t covered = 0;
    const struct span *prev = NULL;
    for (size_t i = 0; i < st->tensor_count; i++) {
        const struct span *s = &r->spans[i];
        const char *name = st->tensors[s->tensor_idx].name;
        if (s->begin > covered && prev == NULL)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] leave "
                               "a hole: the first %" PRIu64 " bytes of the data buffer belong "
                               "to no tensor; " LAYOUT_HINT,
                               r->label, name, s->begin, s->end, s->begin);
        if (s->begin > covered)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] leave "
                               "a hole of %" PRIu64 " bytes after tensor \"%s\" [%" PRIu64
                               ", %" PRIu64 "]; " LAYOUT_HINT,
                               r->label, name, s->begin, s->end, s->begin - covered,
                               st->tensors[prev->tensor_idx].name, prev->begin, prev->end);
        if (s->begin < covered)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] "
                               "overlap tensor \"%s\" [%" PRIu64 ", %" PRIu64 "]; " LAYOUT_HINT,
                               r->label, name, s->begin, s->end, st->tensors[prev->tensor_idx].name,
                               prev->begin, prev->end);
        covered = s->end;
        prev = s;
    }
    if (covered != r->data_nbytes)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: %" PRIu64 " trailing bytes after the last tensor (the data "
                           "buffer has %zu bytes, the tensors cover %" PRIu64 "); a "
                           "safetensors file ends with its last tensor",
                           r->label, r->data_nbytes - covered, r->data_nbytes, covered);
    return TSRNN_OK;
}

/* Validates the file in st->bytes (owned by st from here on); on error frees and zeroes st. */
static enum tsrnn_status parse_owned(struct tsrnn_safetensors *st, unsigned char *bytes,
                                     size_t nbytes, const char *label)
{
    memset(st, 0, sizeof(*st));
    st->bytes = bytes;
    st->nbytes = nbytes;
    struct reader r = { .label = label, .st = st };
    enum tsrnn_status status = check_lengths(&r);
    if (status != TSRNN_OK)
        goto out;
    status = load_header(&r);
    if (status != TSRNN_OK)
        goto out;
    status = read_entries(&r);
    if (status != TSRNN_OK)
        goto out;
    status = check_layout(&r);
out:
    json_decref(r.root);
    free(r.spans);
    if (status != TSRNN_OK)
        tsrnn_safetensors_finish(st);
    return status;
}

enum tsrnn_status tsrnn_safetensors_parse(struct tsrnn_safetensors *st, const void *bytes,
                                          size_t nbytes, const char *label)
{
    memset(st, 0, sizeof(*st));
    unsigned char *copy = malloc(nbytes + 1);
    if (copy == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "%s: out of memory for %zu bytes", label, nbytes);
    if (nbytes > 0)
        memcpy(copy, bytes, nbytes);
    return parse_owned(st, copy, nbytes, label);
}

/* Reads the whole file, growing the buffer past the size fstat() gave if the file grew. */
/* A safetensors file is as large as its model; this only keeps a claim of more than the
 * address space from being believed. */
#define MAX_FILE_NBYTES ((size_t)1 << 46)

enum tsrnn_status tsrnn_safetensors_read(struct tsrnn_safetensors *st, const char *path)
{
    memset(st, 0, sizeof(*st));
    char *bytes = NULL;
    size_t nbytes = 0;
    /* A regular file, read once: /dev/zero would never end, a FIFO would block. */
    TSRNN_TRY(
        tsrnn_read_file(path, MAX_FILE_NBYTES, "safetensors file", TSRNN_ERR_IO, &bytes, &nbytes));
    return parse_owned(st, (unsigned char *)bytes, nbytes, tsrnn_display_path(path));
}

const struct tsrnn_tensor_info *tsrnn_safetensors_find(const struct tsrnn_safetensors *st,
                                                       const char *name)
{
    for (size_t i = 0; i < st->tensor_count; i++)
        if (strcmp(st->tensors[i].name, name) == 0)
            return &st->tensors[i];
    return NULL;
}

const char *tsrnn_safetensors_metadata(const struct tsrnn_safetensors *st, const char *key)
{
    for (size_t i = 0; i < st->metadata_count; i++)
        if (strcmp(st->metadata[i].key, key) == 0)
            return st->metadata[i].value;
    return NULL;
}

static int compare_keys(const void *a, const void *b)
{
    const struct tsrnn_metadata_entry *const *x = a, *const *y = b;
    return strcmp((*x)->key, (*y)->key);
}

uint32_t tsrnn_safetensors_metadata_crc(const struct tsrnn_metadata_entry *metadata, size_t count)
{
    /* In key order, so that it does not depend on how a writer orders its JSON object. */
    const struct tsrnn_metadata_entry **sorted = malloc((count ? count : 1) * sizeof(*sorted));
    uint32_t crc = 0;
    if (sorted == NULL)
        return 0; /* cannot happen for a checkpoint's two dozen entries; checked as damage */
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (strcmp(metadata[i].key, "tsrnn.metadata_crc32c") != 0)
            sorted[n++] = &metadata[i];
    qsort(sorted, n, sizeof(*sorted), compare_keys);
    for (size_t i = 0; i < n; i++) {
        crc = tsrnn_crc32c(crc, sorted[i]->key, strlen(sorted[i]->key) + 1);
        crc = tsrnn_crc32c(crc, sorted[i]->value, strlen(sorted[i]->value) + 1);
    }
    free(sorted);
    return crc;
}

/* The stored 8-hex-digit CRC `key` against `computed`. */
static enum tsrnn_status check_crc(const struct tsrnn_safetensors *st, const char *label,
                                   const char *key, uint32_t computed, const char *what)
{
    const char *stored = tsrnn_safetensors_metadata(st, key);
    char have[16];
    snprintf(have, sizeof(have), "%08" PRIx32, computed);
    if (stored != NULL && strcmp(have, stored) != 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: checksum mismatch: the %s's CRC-32C is %s, %s says %s; the "
                           "file is damaged",
                           tsrnn_display_path(label), what, have, key, stored);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_safetensors_check_crcs(const struct tsrnn_safetensors *st,
                                               const char *label)
{
    size_t start = 8 + st->header_nbytes;
    TSRNN_TRY(check_crc(st, label, "tsrnn.metadata_crc32c",
                        tsrnn_safetensors_metadata_crc(st->metadata, st->metadata_count),
                        "metadata"));
    return check_crc(st, label, "tsrnn.data_crc32c",
                     tsrnn_crc32c(0, st->bytes + start, st->nbytes - start), "data");
}

void tsrnn_safetensors_finish(struct tsrnn_safetensors *st)
{
    if (st == NULL)
        return;
    free(st->bytes);
    free(st->tensors);
    free(st->metadata);
    free(st->strings);
    memset(st, 0, sizeof(*st));
}

enum tsrnn_status tsrnn_tensor_copy_f32(float *dst, const struct tsrnn_tensor_info *t)
{
    if (t->dtype != TSRNN_DTYPE_F32)
        return tsrnn_error(TSRNN_ERR_DATA, "tensor \"%s\" is %s; expected F32 (float32)", t->name,
                           tsrnn_dtype_name(t->dtype));
    if (t->nbytes > 0)
        memcpy(dst, t->data, t->nbytes);
    return TSRNN_OK;
}

/* --- writing --------------------------------------------------------------------------- */

/* {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}, or NULL when out of memory. */
static json_t *tensor_entry(const struct tsrnn_tensor_desc *t, uint64_t begin, uint64_t end)
{
    json_t *entry = json_pack("{s:s, s:[], s:[I, I]}", "dtype", tsrnn_dtype_name(t->dtype), "shape",
                              "data_offsets", (json_int_t)begin, (json_int_t)end);
    if (entry == NULL)
        return NULL;
    json_t *shape = json_object_get(entry, "shape");
    for (size_t k = 0; k < t->rank; k++) {
        if (json_array_append_new(shape, json_integer(t->shape[k])) != 0) {
            json_decref(entry);
            return NULL;
        }
    }
    return entry;
}

static enum tsrnn_status add_metadata(json_t *root, const char *shown,
                                      const struct tsrnn_metadata_entry *metadata,
                                      size_t metadata_count)
{
    json_t *object = json_object();
    if (json_object_set_new_nocheck(root, METADATA_KEY, object) != 0)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", shown);
    for (size_t i = 0; i < metadata_count; i++) {
        const struct tsrnn_metadata_entry *m = &metadata[i];
        if (m->key == NULL || m->value == NULL)
            return tsrnn_error(TSRNN_ERR_DATA, "%s: metadata entry %zu has no %s", shown, i,
                               m->key == NULL ? "key" : "value");
        if (!tsrnn_utf8_valid(m->key) || !tsrnn_utf8_valid(m->value))
            return tsrnn_error(TSRNN_ERR_DATA, "%s: metadata \"%s\": the %s is not valid UTF-8",
                               shown, m->key, tsrnn_utf8_valid(m->key) ? "value" : "key");
        if (json_object_get(object, m->key) != NULL)
            return tsrnn_error(TSRNN_ERR_DATA, "%s: metadata key \"%s\" is given twice", shown,
                               m->key);
        if (json_object_set_new_nocheck(object, m->key, json_string_nocheck(m->value)) != 0)
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", shown);
    }
    return TSRNN_OK;
}

/* Checks one tensor to write and gives its size in bytes. */
static enum tsrnn_status check_desc(const char *shown, const struct tsrnn_tensor_desc *t,
                                    size_t idx, const json_t *root, uint64_t *nbytes)
{
    if (t->name == NULL)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor %zu has no name", shown, idx);
    if (!tsrnn_utf8_valid(t->name))
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor %zu: the name is not valid UTF-8", shown,
                           idx);
    if (strcmp(t->name, METADATA_KEY) == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: tensor %zu is called " METADATA_KEY ", which is reserved for "
                           "metadata",
                           shown, idx);
    if (json_object_get(root, t->name) != NULL)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\" is given twice", shown, t->name);
    if ((unsigned)t->dtype >= TSRNN_DTYPE_COUNT)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\": dtype %d is not a tsrnn_dtype",
                           shown, t->name, (int)t->dtype);
    if (t->rank > TSRNN_TENSOR_MAX_RANK)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\": rank %zu is over the limit of %d",
                           shown, t->name, t->rank, TSRNN_TENSOR_MAX_RANK);
    for (size_t k = 0; k < t->rank; k++)
        if (t->shape[k] < 0)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: tensor \"%s\": shape[%zu] is %" PRId64 "; dimensions are "
                               "non-negative",
                               shown, t->name, k, t->shape[k]);
    uint64_t element_count;
    if (!shape_nbytes(t->shape, t->rank, tsrnn_dtype_nbytes(t->dtype), &element_count, nbytes) ||
        *nbytes > (uint64_t)INT64_MAX)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\": the shape has too many elements",
                           shown, t->name);
    if (t->data == NULL && *nbytes > 0)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: tensor \"%s\" has no data", shown, t->name);
    return TSRNN_OK;
}

/* The first 8 + N bytes of the file: the header length, then the header JSON padded with
 * spaces to a multiple of 8. */
static enum tsrnn_status build_header(const char *shown, const struct tsrnn_tensor_desc *tensors,
                                      size_t tensor_count,
                                      const struct tsrnn_metadata_entry *metadata,
                                      size_t metadata_count, unsigned char **head,
                                      size_t *head_nbytes)
{
    enum tsrnn_status status = TSRNN_OK;
    char *text = NULL;
    json_t *root = json_object();
    if (root == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", shown);
        goto out;
    }
    if (metadata_count > 0) {
        status = add_metadata(root, shown, metadata, metadata_count);
        if (status != TSRNN_OK)
            goto out;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < tensor_count; i++) {
        uint64_t nbytes = 0;
        status = check_desc(shown, &tensors[i], i, root, &nbytes);
        if (status != TSRNN_OK)
            goto out;
        if (nbytes > (uint64_t)INT64_MAX - offset) {
            status =
                tsrnn_error(TSRNN_ERR_DATA, "%s: the tensors hold more than 2^63 bytes", shown);
            goto out;
        }
        json_t *entry = tensor_entry(&tensors[i], offset, offset + nbytes);
        if (json_object_set_new_nocheck(root, tensors[i].name, entry) != 0) {
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", shown);
            goto out;
        }
        offset += nbytes;
    }
    text = json_dumps(root, JSON_COMPACT);
    if (text == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", shown);
        goto out;
    }

    size_t text_nbytes = strlen(text);
    size_t padded = (text_nbytes + 7) / 8 * 8;
    if (padded > HEADER_MAX_NBYTES) {
        status = tsrnn_error(TSRNN_ERR_DATA,
                             "%s: the header would have %zu bytes, over the %u that readers accept",
                             shown, padded, HEADER_MAX_NBYTES);
        goto out;
    }
    *head = malloc(8 + padded);
    if (*head == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory writing %s", shown);
        goto out;
    }
    for (int i = 0; i < 8; i++)
        (*head)[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(*head + 8, text, text_nbytes);
    memset(*head + 8 + text_nbytes, ' ', padded - text_nbytes);
    *head_nbytes = 8 + padded;
out:
    json_decref(root);
    free(text);
    return status;
}

/* Header, then each tensor's bytes, into an atomic file. */
static enum tsrnn_status write_file(const char *path, const unsigned char *head, size_t head_nbytes,
                                    const struct tsrnn_tensor_desc *tensors, size_t tensor_count,
                                    bool sync_folder)
{
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    fwrite(head, 1, head_nbytes, af.file);
    for (size_t i = 0; i < tensor_count; i++) {
        uint64_t count, nbytes;
        shape_nbytes(tensors[i].shape, tensors[i].rank, tsrnn_dtype_nbytes(tensors[i].dtype),
                     &count, &nbytes); /* checked in build_header() */
        if (nbytes > 0)
            fwrite(tensors[i].data, 1, (size_t)nbytes, af.file);
    }
    /* a short write shows as ferror() there */
    return sync_folder ? tsrnn_atomic_file_commit(&af) : tsrnn_atomic_file_commit_unsynced(&af);
}

static enum tsrnn_status write_safetensors(const char *path,
                                           const struct tsrnn_tensor_desc *tensors,
                                           size_t tensor_count,
                                           const struct tsrnn_metadata_entry *metadata,
                                           size_t metadata_count, bool sync_folder)
{
    const char *shown = tsrnn_display_path(path);
    unsigned char *head = NULL;
    size_t head_nbytes = 0;
    TSRNN_TRY(
        build_header(shown, tensors, tensor_count, metadata, metadata_count, &head, &head_nbytes));
    enum tsrnn_status status =
        write_file(path, head, head_nbytes, tensors, tensor_count, sync_folder);
    free(head);
    return status;
}

enum tsrnn_status tsrnn_safetensors_write(const char *path, const struct tsrnn_tensor_desc *tensors,
                                          size_t tensor_count,
                                          const struct tsrnn_metadata_entry *metadata,
                                          size_t metadata_count)
{
    return write_safetensors(path, tensors, tensor_count, metadata, metadata_count, true);
}

enum tsrnn_status tsrnn_safetensors_write_unsynced(const char *path,
                                                   const struct tsrnn_tensor_desc *tensors,
                                                   size_t tensor_count,
                                                   const struct tsrnn_metadata_entry *metadata,
                                                   size_t metadata_count)
{
    return write_safetensors(path, tensors, tensor_count, metadata, metadata_count, false);
}
