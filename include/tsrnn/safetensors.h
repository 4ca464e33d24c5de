/* tsrnn safetensors: reading and writing safetensors files.
 *
 * Format (huggingface/safetensors README "Format", shared reference/ecosystem-formats.md
 * §2.1): an 8-byte little-endian u64 N, then an N-byte JSON object (the header), then the
 * data buffer. The header maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} with offsets relative to the data buffer, and may hold a "__metadata__"
 * object of string -> string. Tensor data is row-major and little-endian. Files written here
 * load in Python with `safetensors.torch.load_file(path)`.
 *
 * The reader checks every rule the reference reader enforces (header size limit, JSON
 * without duplicate keys, known dtypes, sizes that match shapes, tensors that cover the data
 * buffer exactly with no holes, overlaps or trailing bytes) and reports the first violation
 * as TSRNN_ERR_DATA with the file, the tensor and the value found. Nothing in a file can
 * make it read outside the file's bytes.
 */
#ifndef TSRNN_SAFETENSORS_H
#define TSRNN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"

/* --- dtypes ---------------------------------------------------------------------------- */

/* The safetensors dtypes whose elements are whole bytes. Sub-byte types (F4, F6_*) are not
 * recognised: a file using them is rejected. */
enum tsrnn_dtype {
    TSRNN_DTYPE_F32,
    TSRNN_DTYPE_F64,
    TSRNN_DTYPE_I64,
    TSRNN_DTYPE_I32,
    TSRNN_DTYPE_F16,
    TSRNN_DTYPE_BF16,
    TSRNN_DTYPE_I16,
    TSRNN_DTYPE_I8,
    TSRNN_DTYPE_U8,
    TSRNN_DTYPE_U16,
    TSRNN_DTYPE_U32,
    TSRNN_DTYPE_U64,
    TSRNN_DTYPE_BOOL,
    TSRNN_DTYPE_C64,
    TSRNN_DTYPE_F8_E5M2,
    TSRNN_DTYPE_F8_E4M3,
    TSRNN_DTYPE_F8_E8M0,
    TSRNN_DTYPE_F8_E4M3FNUZ,
    TSRNN_DTYPE_F8_E5M2FNUZ,
    TSRNN_DTYPE_COUNT, /* not a dtype: the number of the above */
};

/* The dtype's name in a safetensors header ("F32"), or "?" for a value out of range. */
const char *tsrnn_dtype_name(enum tsrnn_dtype dtype);

/* Bytes per element (F32: 4, C64: 8), or 0 for a value out of range. */
size_t tsrnn_dtype_nbytes(enum tsrnn_dtype dtype);

/* --- reading --------------------------------------------------------------------------- */

#define TSRNN_TENSOR_MAX_RANK 8

/* One tensor of a file that was read; everything points into the struct tsrnn_safetensors
 * it came from and lives as long as that. */
struct tsrnn_tensor_info {
    const char *name;
    enum tsrnn_dtype dtype;
    size_t rank; /* 0 for a scalar */
    int64_t shape[TSRNN_TENSOR_MAX_RANK];
    size_t element_count; /* the product of shape[0..rank) (1 for a scalar) */
    size_t nbytes;        /* element_count * tsrnn_dtype_nbytes(dtype) */
    const void *data;     /* nbytes little-endian bytes in the file buffer; may be unaligned */
};

/* A key/value pair of "__metadata__" (reading), or one to write. */
struct tsrnn_metadata_entry {
    const char *key;
    const char *value;
};

/* A file read into memory. The caller owns the struct; the reader fills it and
 * tsrnn_safetensors_finish() frees what it holds. */
struct tsrnn_safetensors {
    unsigned char *bytes; /* (nbytes) the whole file, owned */
    size_t nbytes;
    size_t header_nbytes;              /* N: the JSON header's length, padding included */
    struct tsrnn_tensor_info *tensors; /* (tensor_count) in the order of the header */
    size_t tensor_count;
    struct tsrnn_metadata_entry *metadata; /* (metadata_count) in the order of the header */
    size_t metadata_count;
    char *strings; /* owned: the names, keys and values the above point to */
};

/* Reads and validates the safetensors file at `path` into `st`. Errors: TSRNN_ERR_IO when
 * the file cannot be opened or read (message with strerror), TSRNN_ERR_DATA when it is not a
 * valid safetensors file (message naming the file, the tensor and the offending value),
 * TSRNN_ERR_NOMEM. On any error `st` is left zeroed. */
enum tsrnn_status tsrnn_safetensors_read(struct tsrnn_safetensors *st, const char *path);

/* As tsrnn_safetensors_read(), from `nbytes` bytes in memory, which are copied (`bytes` may
 * be NULL when `nbytes` is 0). `label` stands for the file in messages ("weights.safetensors:
 * ..."). Errors: TSRNN_ERR_DATA, TSRNN_ERR_NOMEM; on any error `st` is left zeroed. */
enum tsrnn_status tsrnn_safetensors_parse(struct tsrnn_safetensors *st, const void *bytes,
                                          size_t nbytes, const char *label);

/* The tensor called `name`, or NULL if the file has none. */
const struct tsrnn_tensor_info *tsrnn_safetensors_find(const struct tsrnn_safetensors *st,
                                                       const char *name);

/* The "__metadata__" value of `key`, or NULL if the file has none. */
const char *tsrnn_safetensors_metadata(const struct tsrnn_safetensors *st, const char *key);

/* The checksums a tsrnn checkpoint carries in its metadata (include/tsrnn/checkpoint.h):
 * "tsrnn.data_crc32c", the CRC-32C of the data buffer, and "tsrnn.metadata_crc32c", that of
 * every other metadata entry (key, NUL, value, NUL, in byte order of the keys). Checks each
 * that the file has: TSRNN_ERR_DATA "the file is damaged" naming `label`, the stored and the
 * computed value. Files without them (plain weights) pass. */
enum tsrnn_status tsrnn_safetensors_check_crcs(const struct tsrnn_safetensors *st,
                                               const char *label);

/* The "tsrnn.metadata_crc32c" of `count` entries, skipping one named so. */
uint32_t tsrnn_safetensors_metadata_crc(const struct tsrnn_metadata_entry *metadata, size_t count);

/* Frees what the reader allocated and zeroes `st`; accepts NULL and a zeroed struct. */
void tsrnn_safetensors_finish(struct tsrnn_safetensors *st);

/* Copies the t->element_count values of an F32 tensor into `dst`, which has room for them;
 * t->data need not be aligned. Check the shape against what you expect first. Returns
 * TSRNN_ERR_DATA (naming the tensor and its dtype) and copies nothing when t->dtype is not
 * TSRNN_DTYPE_F32. */
enum tsrnn_status tsrnn_tensor_copy_f32(float *dst, const struct tsrnn_tensor_info *t);

/* --- the model's weights by name (src/checkpoint/weights.c) ----------------------------- */

struct tsrnn_param_table; /* include/tsrnn/nn.h */

/* Loads every tensor of the table from a safetensors file by PyTorch name, checking that
 * each is present, F32 and of the right shape, and that the file holds no other tensor
 * (names under "optim." are skipped: they belong to checkpoints). TSRNN_ERR_DATA names the
 * file, the tensor, what was expected and what was found. */
enum tsrnn_status tsrnn_model_load_params(float *flat, const struct tsrnn_param_table *table,
                                          const char *path);

/* Copies the table's tensors named `prefix` + PyTorch name ("" for the weights,
 * "optim.exp_avg." for Adam's first moments) from a file already read (`path` names it in
 * messages), with the checks above; other tensors in the file are not looked at. */
enum tsrnn_status tsrnn_model_read_tensors(float *flat, const struct tsrnn_param_table *table,
                                           const struct tsrnn_safetensors *st, const char *prefix,
                                           const char *path);

/* --- writing --------------------------------------------------------------------------- */

/* One tensor to write: `data` holds prod(shape) elements of `dtype`, row-major, in the host's
 * (little-endian) byte order; it may be NULL when that product is 0. */
struct tsrnn_tensor_desc {
    const char *name;
    enum tsrnn_dtype dtype;
    size_t rank; /* 0 for a scalar */
    int64_t shape[TSRNN_TENSOR_MAX_RANK];
    const void *data;
};

/* Writes a safetensors file at `path`: the header lists "__metadata__" first (when
 * metadata_count > 0) and then the tensors in the given order, as compact JSON padded with
 * spaces so that the data buffer starts at a multiple of 8 bytes; the data is packed in the
 * same order. Put the 8-byte dtypes (F64, I64) first, then 4-byte ones (F32, I32), and so
 * on, and every tensor is naturally aligned in the file (as the reference writer does).
 *
 * The file is replaced atomically (include/tsrnn/atomic_file.h): the bytes go to
 * `<path>.tmp.<random>` in the same folder, which is flushed, fsync'ed and renamed over
 * `path`, then the folder is fsync'ed. On any failure the temporary file is removed and
 * `path` is as it was before (a previous file stays intact). A symbolic link at `path` is
 * written through; a device or pipe is written in place.
 *
 * Errors: TSRNN_ERR_DATA (nothing written) for tensors that no reader would accept: a name
 * missing, repeated, not UTF-8 or "__metadata__", a dtype out of range, a rank over
 * TSRNN_TENSOR_MAX_RANK, a negative dimension, NULL data for a non-empty tensor, a
 * repeated or non-UTF-8 metadata key or value; TSRNN_ERR_IO (with strerror, naming `path`)
 * when the file cannot be created, written, synced or renamed; TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_safetensors_write(const char *path, const struct tsrnn_tensor_desc *tensors,
                                          size_t tensor_count,
                                          const struct tsrnn_metadata_entry *metadata,
                                          size_t metadata_count);

/* As tsrnn_safetensors_write(), but the folder is left unsynced
 * (tsrnn_atomic_file_commit_unsynced()): for a file that another one's folder sync will
 * cover. */
enum tsrnn_status tsrnn_safetensors_write_unsynced(const char *path,
                                                   const struct tsrnn_tensor_desc *tensors,
                                                   size_t tensor_count,
                                                   const struct tsrnn_metadata_entry *metadata,
                                                   size_t metadata_count);

#endif
