/* safetensors: writer -> reader round trip, the reader on hand-built bytes, one test per
 * rejection rule, atomic writes, and a deterministic fuzz run (which the ASan build of
 * scripts/test.sh turns into a memory-safety check). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/core/rng.h"
#include "testutil.h"
#include "tsrnn/atomic_file.h"
#include "tsrnn/safetensors.h"

/* --- helpers --------------------------------------------------------------------------- */

struct bytes {
    unsigned char data[4096];
    size_t nbytes;
};

static void put_u64_le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A file built by hand: N = strlen(header) + pad, the header, `pad` spaces, then `data`. */
static void build_file(struct bytes *b, const char *header, size_t pad, const void *data,
                       size_t data_nbytes)
{
    size_t header_nbytes = strlen(header) + pad;
    assert_true(8 + header_nbytes + data_nbytes <= sizeof(b->data));
    put_u64_le(b->data, header_nbytes);
    memcpy(b->data + 8, header, strlen(header));
    memset(b->data + 8 + strlen(header), ' ', pad);
    if (data_nbytes > 0)
        memcpy(b->data + 8 + header_nbytes, data, data_nbytes);
    b->nbytes = 8 + header_nbytes + data_nbytes;
}

static void read_bytes(struct bytes *b, const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    b->nbytes = fread(b->data, 1, sizeof(b->data), f);
    assert_true(b->nbytes < sizeof(b->data));
    fclose(f);
}

static void expect_message(const char *fragment)
{
    if (strstr(tsrnn_last_error(), fragment) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", tsrnn_last_error(), fragment);
}

/* Parsing `b` fails with TSRNN_ERR_DATA, a message holding `fragment`, and a zeroed struct. */
static void expect_reject(const struct bytes *b, const char *fragment)
{
    struct tsrnn_safetensors st;
    tsrnn_error_clear();
    assert_int_equal(tsrnn_safetensors_parse(&st, b->data, b->nbytes, "bad.safetensors"),
                     TSRNN_ERR_DATA);
    expect_message("bad.safetensors: ");
    expect_message(fragment);
    assert_null(st.bytes);
    assert_null(st.tensors);
    assert_int_equal(st.tensor_count, 0);
    tsrnn_safetensors_finish(&st);
}

static void expect_reject_header(const char *header, const void *data, size_t data_nbytes,
                                 const char *fragment)
{
    struct bytes b;
    build_file(&b, header, 0, data, data_nbytes);
    expect_reject(&b, fragment);
}

/* The names in a folder, sorted and joined by spaces. */
static void list_folder(const char *dir, char *out, size_t capacity)
{
    struct dirent **entries;
    int n = scandir(dir, &entries, NULL, alphasort);
    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(entries[i]->d_name, ".") != 0 && strcmp(entries[i]->d_name, "..") != 0) {
            size_t used = strlen(out);
            snprintf(out + used, capacity - used, "%s%s", used ? " " : "", entries[i]->d_name);
        }
        free(entries[i]);
    }
    free(entries);
}

/* A valid file: I64 scalar at [0, 8], F32 (2) at [8, 16], an empty F32 (0, 3) at [16, 16];
 * header order differs from data order, and the header has 5 spaces of padding. */
static const char hand_header[] =
    "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
    "\"__metadata__\":{\"k\":\"v\",\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
    "\"e\":{\"data_offsets\":[16,16],\"shape\":[0,3],\"dtype\":\"F32\"}}";

static void hand_built_file(struct bytes *b)
{
    unsigned char data[16];
    int64_t a = -3;
    float bv[2] = { 1.5f, -2.0f };
    memcpy(data, &a, 8);
    memcpy(data + 8, bv, 8);
    build_file(b, hand_header, 5, data, sizeof(data));
}

/* --- reading hand-built files ---------------------------------------------------------- */

static void test_read_hand_built(void **state)
{
    (void)state;
    struct bytes b;
    hand_built_file(&b);
    struct tsrnn_safetensors st;
    assert_int_equal(tsrnn_safetensors_parse(&st, b.data, b.nbytes, "hand.safetensors"), TSRNN_OK);
    assert_int_equal(st.header_nbytes, strlen(hand_header) + 5);
    assert_int_equal(st.nbytes, b.nbytes);

    /* header order */
    assert_int_equal(st.tensor_count, 3);
    assert_string_equal(st.tensors[0].name, "b");
    assert_string_equal(st.tensors[1].name, "a");
    assert_string_equal(st.tensors[2].name, "e");

    const struct tsrnn_tensor_info *a = tsrnn_safetensors_find(&st, "a");
    assert_ptr_equal(a, &st.tensors[1]);
    assert_int_equal(a->dtype, TSRNN_DTYPE_I64);
    assert_int_equal(a->rank, 0);
    assert_int_equal(a->element_count, 1);
    assert_int_equal(a->nbytes, 8);
    int64_t av;
    memcpy(&av, a->data, 8);
    assert_int_equal(av, -3);
    assert_ptr_equal(a->data, st.bytes + 8 + st.header_nbytes);

    const struct tsrnn_tensor_info *bt = tsrnn_safetensors_find(&st, "b");
    assert_int_equal(bt->dtype, TSRNN_DTYPE_F32);
    assert_int_equal(bt->rank, 1);
    assert_int_equal(bt->shape[0], 2);
    float bv[2];
    assert_int_equal(tsrnn_tensor_copy_f32(bv, bt), TSRNN_OK);
    assert_true(bv[0] == 1.5f && bv[1] == -2.0f);

    const struct tsrnn_tensor_info *e = tsrnn_safetensors_find(&st, "e");
    assert_int_equal(e->rank, 2);
    assert_int_equal(e->shape[0], 0);
    assert_int_equal(e->shape[1], 3);
    assert_int_equal(e->element_count, 0);
    assert_int_equal(e->nbytes, 0);

    assert_null(tsrnn_safetensors_find(&st, "c"));
    assert_null(tsrnn_safetensors_find(&st, "__metadata__"));
    assert_int_equal(st.metadata_count, 2);
    assert_string_equal(st.metadata[0].key, "k");
    assert_string_equal(tsrnn_safetensors_metadata(&st, "k"), "v");
    assert_string_equal(tsrnn_safetensors_metadata(&st, "format"), "pt");
    assert_null(tsrnn_safetensors_metadata(&st, "v"));

    /* The copy is independent of the caller's bytes. */
    memset(b.data, 0, b.nbytes);
    assert_int_equal(tsrnn_tensor_copy_f32(bv, bt), TSRNN_OK);
    assert_true(bv[0] == 1.5f);

    assert_int_equal(tsrnn_tensor_copy_f32(bv, a), TSRNN_ERR_DATA);
    expect_message("tensor \"a\" is I64; expected F32");
    tsrnn_safetensors_finish(&st);
    assert_null(st.bytes);
    tsrnn_safetensors_finish(&st); /* twice is harmless */
    tsrnn_safetensors_finish(NULL);
}

static void test_read_minimal_and_whitespace(void **state)
{
    (void)state;
    struct tsrnn_safetensors st;
    struct bytes b;

    /* No tensors, no data. */
    build_file(&b, "{}", 6, NULL, 0);
    assert_int_equal(tsrnn_safetensors_parse(&st, b.data, b.nbytes, "x"), TSRNN_OK);
    assert_int_equal(st.tensor_count, 0);
    assert_int_equal(st.metadata_count, 0);
    assert_null(tsrnn_safetensors_find(&st, "a"));
    assert_null(tsrnn_safetensors_metadata(&st, "a"));
    tsrnn_safetensors_finish(&st);

    /* Leading JSON whitespace, as the reference reader accepts, and an empty __metadata__. */
    float v = 7.0f;
    build_file(&b,
               "\n {\"__metadata__\":{}, \"s\" : {\"dtype\":\"F32\",\"shape\":[],"
               "\"data_offsets\":[0,4]}}",
               3, &v, 4);
    assert_int_equal(tsrnn_safetensors_parse(&st, b.data, b.nbytes, "x"), TSRNN_OK);
    assert_int_equal(st.tensor_count, 1);
    assert_int_equal(st.metadata_count, 0);
    float out = 0;
    assert_int_equal(tsrnn_tensor_copy_f32(&out, &st.tensors[0]), TSRNN_OK);
    assert_true(out == 7.0f);
    tsrnn_safetensors_finish(&st);

    /* A zeroed struct answers lookups. */
    memset(&st, 0, sizeof(st));
    assert_null(tsrnn_safetensors_find(&st, "a"));
    tsrnn_safetensors_finish(&st);
}

/* --- one test per rejection rule ------------------------------------------------------- */

static void test_reject_short_file(void **state)
{
    (void)state;
    struct bytes b = { .nbytes = 0 };
    expect_reject(&b, "the file is empty");
    memcpy(b.data, "\x02\0\0\0\0", 5);
    b.nbytes = 5;
    expect_reject(&b, "the file has only 5 bytes");
    /* A parse of nothing at all. */
    struct tsrnn_safetensors st;
    assert_int_equal(tsrnn_safetensors_parse(&st, NULL, 0, "null"), TSRNN_ERR_DATA);
}

static void test_reject_header_length(void **state)
{
    (void)state;
    struct bytes b;
    build_file(&b, "{}", 6, NULL, 0);
    put_u64_le(b.data, 200000000);
    expect_reject(&b, "header length 200000000 is over the limit of 100000000 bytes");
    put_u64_le(b.data, UINT64_MAX);
    expect_reject(&b, "header length 18446744073709551615 is over the limit");
    put_u64_le(b.data, 0);
    expect_reject(&b, "header length is 0");
}

static void test_reject_header_past_end(void **state)
{
    (void)state;
    struct bytes b;
    build_file(&b, "{}", 6, NULL, 0);
    put_u64_le(b.data, 9);
    expect_reject(&b, "header length 9 runs past the end of the file (16 bytes)");
    put_u64_le(b.data, 1000);
    expect_reject(&b, "header length 1000 runs past the end of the file");
}

static void test_reject_not_json(void **state)
{
    (void)state;
    expect_reject_header("{\"a\": ", NULL, 0, "the header is not valid JSON (line 1, column 6)");
    expect_reject_header("{\"a\":{\n\"dtype\":F32}}", NULL, 0,
                         "the header is not valid JSON (line 2, column");
    expect_reject_header("[1, 2]", NULL, 0,
                         "the header is an array of 2 values; expected a JSON object");
    /* NUL padding is not JSON whitespace; neither are bytes after the object. */
    struct bytes b;
    build_file(&b, "{}\0\0", 0, NULL, 0);
    b.data[0] = 4;
    b.data[10] = 0;
    b.data[11] = 0;
    b.nbytes = 12;
    expect_reject(&b, "not valid JSON");
    expect_reject_header("{} {}", NULL, 0, "not valid JSON");
    /* Not UTF-8. */
    expect_reject_header("{\"\xff\":1}", NULL, 0, "not valid JSON");
}

static void test_reject_duplicate_key(void **state)
{
    (void)state;
    const char *entry = "{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}";
    char header[256];
    float v[1] = { 0 };
    snprintf(header, sizeof(header), "{\"w\":%s,\"w\":%s}", entry, entry);
    expect_reject_header(header, v, 4, "duplicate object key");
    expect_reject_header("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[],"
                         "\"data_offsets\":[0,4]}}",
                         v, 4, "duplicate object key");
}

static void test_reject_unknown_dtype(void **state)
{
    (void)state;
    float v[1] = { 0 };
    expect_reject_header("{\"w\":{\"dtype\":\"F33\",\"shape\":[],\"data_offsets\":[0,4]}}", v, 4,
                         "tensor \"w\": dtype \"F33\" is not one tsrnn reads; accepted: F32, "
                         "F64, I64");
    expect_reject_header("{\"w\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", v, 1,
                         "dtype \"F4\" is not one tsrnn reads");
    expect_reject_header("{\"w\":{\"dtype\":32,\"shape\":[],\"data_offsets\":[0,4]}}", v, 4,
                         "tensor \"w\": dtype is 32; expected a string such as \"F32\"");
}

static void test_reject_size_mismatch(void **state)
{
    (void)state;
    float w[20] = { 0 };
    struct bytes b;
    build_file(&b,
               "{\"rnn.weight_ih_l0\":{\"dtype\":\"F32\",\"shape\":[20,1],"
               "\"data_offsets\":[0,76]}}",
               0, w, 76);
    struct tsrnn_safetensors st;
    assert_int_equal(tsrnn_safetensors_parse(&st, b.data, b.nbytes, "weights.safetensors"),
                     TSRNN_ERR_DATA);
    assert_string_equal(tsrnn_last_error(),
                        "weights.safetensors: tensor \"rnn.weight_ih_l0\": data_offsets [0, 76] "
                        "hold 76 bytes, shape [20, 1] of F32 needs 80");
    /* Sizes that overflow 64 bits. */
    expect_reject_header("{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],"
                         "\"data_offsets\":[0,0]}}",
                         NULL, 0, "shape [4294967296, 4294967296] of F64 needs more than 2^64");
    expect_reject_header("{\"w\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],"
                         "\"data_offsets\":[0,0]}}",
                         NULL, 0, "needs more than 2^64 bytes");
}

static void test_reject_hole(void **state)
{
    (void)state;
    float v[6] = { 0 };
    expect_reject_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}",
                         v, 24,
                         "tensor \"b\": data_offsets [16, 24] leave a hole of 8 bytes after "
                         "tensor \"a\" [0, 8]; tensors must cover the data buffer exactly");
    expect_reject_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", v, 16,
                         "tensor \"a\": data_offsets [8, 16] leave a hole: the first 8 bytes of "
                         "the data buffer belong to no tensor");
}

static void test_reject_overlap(void **state)
{
    (void)state;
    float v[3] = { 0 };
    expect_reject_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                         v, 12, "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" [0, 8]");
    /* Two tensors on the same bytes (a polyglot-style alias). */
    expect_reject_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                         "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                         v, 8, "overlap tensor \"a\" [0, 8]");
    /* An empty tensor inside another one. */
    expect_reject_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                         "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
                         v, 8, "tensor \"e\": data_offsets [4, 4] overlap");
}

static void test_reject_trailing_bytes(void **state)
{
    (void)state;
    float v[3] = { 0 };
    expect_reject_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", v, 11,
                         "3 trailing bytes after the last tensor (the data buffer has 11 bytes, "
                         "the tensors cover 8)");
    expect_reject_header("{}", v, 1, "1 trailing bytes after the last tensor");
}

static void test_reject_bad_metadata(void **state)
{
    (void)state;
    expect_reject_header("{\"__metadata__\":{\"format\":\"pt\",\"epoch\":3}}", NULL, 0,
                         "__metadata__ \"epoch\" is 3; metadata values must be strings");
    expect_reject_header("{\"__metadata__\":{\"x\":{\"y\":\"z\"}}}", NULL, 0,
                         "__metadata__ \"x\" is an object; metadata values must be strings");
    expect_reject_header("{\"__metadata__\":[\"a\"]}", NULL, 0,
                         "__metadata__ is an array of 1 values; expected an object of string");
    expect_reject_header("{\"__metadata__\":null}", NULL, 0, "__metadata__ is null");
}

static void test_reject_truncated(void **state)
{
    (void)state;
    struct bytes b;
    hand_built_file(&b);
    /* Every proper prefix of a file whose last tensor has bytes is invalid. */
    size_t full = b.nbytes;
    for (size_t n = 0; n < full; n++) {
        struct tsrnn_safetensors st;
        assert_int_equal(tsrnn_safetensors_parse(&st, b.data, n, "cut.safetensors"),
                         TSRNN_ERR_DATA);
        assert_null(st.bytes);
    }
    b.nbytes = full - 1;
    expect_reject(&b, "tensor \"b\": data_offsets [8, 16] reach past the end of the data buffer "
                      "(15 bytes after the header); the file is truncated");
    b.nbytes = full - 20;
    expect_reject(&b, "runs past the end of the file");
}

static void test_reject_missing_file(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_safetensors st;
    const char *path = tu_path(dir, "missing.safetensors");
    assert_int_equal(tsrnn_safetensors_read(&st, path), TSRNN_ERR_IO);
    expect_message("cannot open safetensors file ");
    expect_message("missing.safetensors: No such file or directory");
    assert_null(st.bytes);
    tsrnn_safetensors_finish(&st);

    /* A folder is not a file. */
    assert_int_equal(tsrnn_safetensors_read(&st, dir), TSRNN_ERR_IO);
    expect_message("cannot read safetensors file");

    /* An empty file on disk. */
    path = tu_write(dir, "empty.safetensors", "");
    assert_int_equal(tsrnn_safetensors_read(&st, path), TSRNN_ERR_DATA);
    expect_message("empty.safetensors: the file is empty");
    tu_rmtree(dir);
    free(dir);
}

/* Field-level rules of one tensor entry. */
static void test_reject_bad_entries(void **state)
{
    (void)state;
    static const struct {
        const char *entry;
        const char *fragment;
    } cases[] = {
        { "\"x\"", "tensor \"w\" is the string \"x\"; expected an object with dtype, shape" },
        { "{\"dtype\":\"F32\",\"shape\":[1]}", "tensor \"w\": no \"data_offsets\" field" },
        { "{\"dtype\":\"F32\",\"data_offsets\":[0,4]}", "tensor \"w\": no \"shape\" field" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"strides\":[1]}",
          "tensor \"w\": unexpected field \"strides\"" },
        { "{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}",
          "shape is an array of 9 values; expected an array of at most 8 dimensions" },
        { "{\"dtype\":\"F32\",\"shape\":7,\"data_offsets\":[0,4]}", "shape is 7; expected" },
        { "{\"dtype\":\"F32\",\"shape\":[1,-4],\"data_offsets\":[0,4]}",
          "tensor \"w\": shape[1] is -4; dimensions are non-negative integers" },
        { "{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}", "shape[0] is 1.0;" },
        { "{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}",
          "shape[0] is the string \"1\"" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}",
          "data_offsets is an array of 3 values; expected [begin, end]" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}", "data_offsets is an object" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}",
          "data_offsets[0] is -4; offsets are non-negative integers" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,null]}",
          "data_offsets[1] is null" },
        { "{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}",
          "data_offsets [4, 0] end before they begin" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}",
          "not valid JSON" },
        { "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[9223372036854775800,"
          "9223372036854775804]}",
          "data_offsets [9223372036854775800, 9223372036854775804] reach past the end" },
    };
    float v[1] = { 0 };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char header[512];
        snprintf(header, sizeof(header), "{\"w\":%s}", cases[i].entry);
        expect_reject_header(header, v, 4, cases[i].fragment);
    }
}

/* --- writing --------------------------------------------------------------------------- */

static void test_write_read_round_trip(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);

    double d[2] = { 0.1, -1e300 };
    int64_t step = INT64_C(9007199254740993);
    float w[6] = { 1.0f, -2.5f, 3.25f, 1e-7f, -0.0f, 6e30f };
    float scalar = 42.5f;
    float c[6] = { 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f };
    const struct tsrnn_tensor_desc tensors[] = {
        { "optimizer.d", TSRNN_DTYPE_F64, 1, { 2 }, d },
        { "global_step", TSRNN_DTYPE_I64, 0, { 0 }, &step },
        { "rnn.weight_ih_l0", TSRNN_DTYPE_F32, 2, { 3, 2 }, w },
        { "loss", TSRNN_DTYPE_F32, 0, { 0 }, &scalar },
        { "empty", TSRNN_DTYPE_F32, 2, { 0, 4 }, NULL },
        { "V.weight", TSRNN_DTYPE_F32, 3, { 2, 1, 3 }, c },
    };
    const struct tsrnn_metadata_entry metadata[] = {
        { "format", "pt" },
        { "model", "LSTM" },
        { "note", "d\xc3\xa9j\xc3\xa0 \"quoted\"\n\\ {}" },
        { "", "" },
    };
    assert_int_equal(tsrnn_safetensors_write(path, tensors, 6, metadata, 4), TSRNN_OK);

    struct tsrnn_safetensors st;
    assert_int_equal(tsrnn_safetensors_read(&st, path), TSRNN_OK);
    assert_int_equal(st.header_nbytes % 8, 0);
    assert_int_equal(st.tensor_count, 6);
    size_t expect_nbytes[6] = { 16, 8, 24, 4, 0, 24 };
    size_t expect_count[6] = { 2, 1, 6, 1, 0, 6 };
    for (size_t i = 0; i < 6; i++) {
        const struct tsrnn_tensor_info *t = &st.tensors[i];
        assert_string_equal(t->name, tensors[i].name);
        assert_int_equal(t->dtype, tensors[i].dtype);
        assert_int_equal(t->rank, tensors[i].rank);
        for (size_t k = 0; k < t->rank; k++)
            assert_int_equal(t->shape[k], tensors[i].shape[k]);
        assert_int_equal(t->element_count, expect_count[i]);
        assert_int_equal(t->nbytes, expect_nbytes[i]);
        /* Packed in the given order; 8-byte dtypes first keeps every tensor aligned. */
        size_t offset = (size_t)((const unsigned char *)t->data - st.bytes);
        assert_int_equal(offset % tsrnn_dtype_nbytes(t->dtype), 0);
        if (t->nbytes > 0)
            assert_memory_equal(t->data, tensors[i].data, t->nbytes);
    }
    assert_int_equal((const unsigned char *)st.tensors[0].data - st.bytes, 8 + st.header_nbytes);
    assert_int_equal(st.nbytes, 8 + st.header_nbytes + 16 + 8 + 24 + 4 + 24);

    float out[6];
    assert_int_equal(tsrnn_tensor_copy_f32(out, tsrnn_safetensors_find(&st, "rnn.weight_ih_l0")),
                     TSRNN_OK);
    assert_memory_equal(out, w, sizeof(w)); /* bit for bit, -0.0 included */
    assert_int_equal(tsrnn_tensor_copy_f32(out, tsrnn_safetensors_find(&st, "loss")), TSRNN_OK);
    assert_true(out[0] == 42.5f);
    assert_int_equal(tsrnn_tensor_copy_f32(out, tsrnn_safetensors_find(&st, "empty")), TSRNN_OK);
    int64_t step_read;
    memcpy(&step_read, tsrnn_safetensors_find(&st, "global_step")->data, 8);
    assert_true(step_read == step);
    double d_read[2];
    memcpy(d_read, tsrnn_safetensors_find(&st, "optimizer.d")->data, 16);
    assert_true(d_read[0] == 0.1 && d_read[1] == -1e300);

    assert_int_equal(st.metadata_count, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(st.metadata[i].key, metadata[i].key);
        assert_string_equal(tsrnn_safetensors_metadata(&st, metadata[i].key), metadata[i].value);
    }
    tsrnn_safetensors_finish(&st);
    tu_rmtree(dir);
    free(dir);
}

/* The exact bytes: length, compact header with __metadata__ first, space padding, data. */
static void test_write_format(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const char *path = tu_path(dir, "a.safetensors");
    float a[2] = { 1.0f, 2.0f };
    const struct tsrnn_tensor_desc t = { "a", TSRNN_DTYPE_F32, 1, { 2 }, a };
    const struct tsrnn_metadata_entry m = { "format", "pt" };
    assert_int_equal(tsrnn_safetensors_write(path, &t, 1, &m, 1), TSRNN_OK);

    struct bytes b;
    read_bytes(&b, path);
    const char *json =
        "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
        "\"data_offsets\":[0,8]}}";
    size_t n = (strlen(json) + 7) / 8 * 8;
    unsigned char expect[8];
    put_u64_le(expect, n);
    assert_int_equal(b.nbytes, 8 + n + 8);
    assert_memory_equal(b.data, expect, 8);
    assert_memory_equal(b.data + 8, json, strlen(json));
    for (size_t i = 8 + strlen(json); i < 8 + n; i++)
        assert_int_equal(b.data[i], ' ');
    assert_memory_equal(b.data + 8 + n, a, 8);

    /* No tensors, no metadata: "{}" and six spaces. */
    assert_int_equal(tsrnn_safetensors_write(path, NULL, 0, NULL, 0), TSRNN_OK);
    read_bytes(&b, path);
    assert_int_equal(b.nbytes, 16);
    assert_memory_equal(b.data, "\x08\0\0\0\0\0\0\0{}      ", 16);
    tu_rmtree(dir);
    free(dir);
}

static void test_write_rejects_bad_tensors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof(path), "%s/bad.safetensors", dir);
    static const struct {
        struct tsrnn_tensor_desc t[2];
        const char *fragment;
    } cases[] = {
        { { { "a", TSRNN_DTYPE_F32, 1, { 2 }, NULL }, { "a", TSRNN_DTYPE_F32, 0, { 0 }, NULL } },
          "tensor \"a\" has no data" },
        { { { "a", TSRNN_DTYPE_F32, 1, { 0 }, NULL }, { "a", TSRNN_DTYPE_F32, 1, { 0 }, NULL } },
          "tensor \"a\" is given twice" },
        { { { "__metadata__", TSRNN_DTYPE_F32, 1, { 0 }, NULL }, { .name = "b" } },
          "tensor 0 is called __metadata__" },
        { { { .name = NULL }, { .name = "b" } }, "tensor 0 has no name" },
        { { { "\xc3(", TSRNN_DTYPE_F32, 1, { 0 }, NULL }, { .name = "b" } },
          "tensor 0: the name is not valid UTF-8" },
        { { { "a", TSRNN_DTYPE_COUNT, 1, { 0 }, NULL }, { .name = "b" } }, "dtype 19 is not a" },
        { { { "a", TSRNN_DTYPE_F32, 9, { 0 }, NULL }, { .name = "b" } },
          "rank 9 is over the limit" },
        { { { "a", TSRNN_DTYPE_F32, 2, { 1, -1 }, NULL }, { .name = "b" } }, "shape[1] is -1" },
        { { { "a", TSRNN_DTYPE_F32, 2, { INT64_MAX, 4 }, NULL }, { .name = "b" } },
          "the shape has too many elements" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tsrnn_tensor_desc t[2];
        memcpy(t, cases[i].t, sizeof(t));
        assert_int_equal(tsrnn_safetensors_write(path, t, 2, NULL, 0), TSRNN_ERR_DATA);
        expect_message("bad.safetensors: ");
        expect_message(cases[i].fragment);
    }
    const struct tsrnn_metadata_entry dup[2] = { { "k", "1" }, { "k", "2" } };
    assert_int_equal(tsrnn_safetensors_write(path, NULL, 0, dup, 2), TSRNN_ERR_DATA);
    expect_message("metadata key \"k\" is given twice");
    const struct tsrnn_metadata_entry bad_utf8 = { "k", "\xed\xa0\x80" }; /* a surrogate */
    assert_int_equal(tsrnn_safetensors_write(path, NULL, 0, &bad_utf8, 1), TSRNN_ERR_DATA);
    expect_message("metadata \"k\": the value is not valid UTF-8");
    const struct tsrnn_metadata_entry no_value = { "k", NULL };
    assert_int_equal(tsrnn_safetensors_write(path, NULL, 0, &no_value, 1), TSRNN_ERR_DATA);
    expect_message("metadata entry 0 has no value");

    char listing[1024];
    list_folder(dir, listing, sizeof(listing));
    assert_string_equal(listing, ""); /* nothing was written */
    tu_rmtree(dir);
    free(dir);
}

static void test_write_atomic(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096], listing[1024];
    snprintf(path, sizeof(path), "%s/last.safetensors", dir);
    float v1[2] = { 1.0f, 2.0f }, v2[3] = { 3.0f, 4.0f, 5.0f };
    struct tsrnn_tensor_desc t = { "w", TSRNN_DTYPE_F32, 1, { 2 }, v1 };
    assert_int_equal(tsrnn_safetensors_write(path, &t, 1, NULL, 0), TSRNN_OK);
    t.shape[0] = 3;
    t.data = v2;
    assert_int_equal(tsrnn_safetensors_write(path, &t, 1, NULL, 0), TSRNN_OK);
    list_folder(dir, listing, sizeof(listing));
    assert_string_equal(listing, "last.safetensors"); /* replaced; no temporary file left */

    struct tsrnn_safetensors st;
    assert_int_equal(tsrnn_safetensors_read(&st, path), TSRNN_OK);
    assert_int_equal(st.tensors[0].shape[0], 3);
    assert_memory_equal(st.tensors[0].data, v2, sizeof(v2));
    tsrnn_safetensors_finish(&st);

    /* The target is a folder: refused before any temporary file is made. */
    char folder_target[4096];
    snprintf(folder_target, sizeof(folder_target), "%s/sub", dir);
    assert_int_equal(mkdir(folder_target, 0700), 0);
    assert_int_equal(tsrnn_safetensors_write(folder_target, &t, 1, NULL, 0), TSRNN_ERR_IO);
    expect_message("cannot write ");
    expect_message("sub: it is a folder");
    list_folder(dir, listing, sizeof(listing));
    assert_string_equal(listing, "last.safetensors sub");

    /* The folder does not exist: nothing can be created. */
    char missing[4096];
    snprintf(missing, sizeof(missing), "%s/no/such/folder/x.safetensors", dir);
    assert_int_equal(tsrnn_safetensors_write(missing, &t, 1, NULL, 0), TSRNN_ERR_IO);
    expect_message("x.safetensors: create of the temporary file ");
    expect_message("No such file or directory");

    /* The previous file is untouched by the failures. */
    assert_int_equal(tsrnn_safetensors_read(&st, path), TSRNN_OK);
    assert_memory_equal(st.tensors[0].data, v2, sizeof(v2));
    tsrnn_safetensors_finish(&st);

    /* A second name for a complete file (best = last): the same file, no temporary left; it
     * replaces an older file of that name and survives the removal of the first name. */
    char best[4096];
    snprintf(best, sizeof(best), "%s/best.safetensors", dir);
    assert_int_equal(tsrnn_safetensors_write(best, &t, 1, NULL, 0), TSRNN_OK);
    assert_int_equal(tsrnn_atomic_file_link(path, best), TSRNN_OK);
    struct stat a, b;
    assert_int_equal(stat(path, &a), 0);
    assert_int_equal(stat(best, &b), 0);
    assert_true(a.st_ino == b.st_ino && b.st_nlink == 2);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(tsrnn_safetensors_read(&st, best), TSRNN_OK);
    assert_memory_equal(st.tensors[0].data, v2, sizeof(v2));
    tsrnn_safetensors_finish(&st);
    list_folder(dir, listing, sizeof(listing));
    assert_string_equal(listing, "best.safetensors sub");
    /* A missing source: an error naming both, nothing created. */
    assert_int_equal(tsrnn_atomic_file_link(path, folder_target), TSRNN_ERR_IO);
    expect_message("cannot link ");
    expect_message("last.safetensors: link failed: No such file or directory");
    list_folder(dir, listing, sizeof(listing));
    assert_string_equal(listing, "best.safetensors sub");
    tu_rmtree(dir);
    free(dir);
}

/* --- fuzz ------------------------------------------------------------------------------ */

/* Mutates a valid file a few thousand times (seeded, so every run is the same): any result
 * must be TSRNN_OK or TSRNN_ERR_DATA, and an accepted file's tensors must lie in its bytes. */
static void test_fuzz_parse(void **state)
{
    (void)state;
    struct bytes base;
    hand_built_file(&base);
    size_t header_end = 8 + strlen(hand_header) + 5;
    static const char interesting[] = "{}[]\",:-0123456789eE. \\u\x00\x7f\xff";
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 20240501, 0);
    size_t ok_count = 0, data_count = 0;
    for (int iter = 0; iter < 5000; iter++) {
        struct bytes b = base;
        int kind = (int)tsrnn_rng_below(&rng, 4);
        if (kind == 0) { /* truncate */
            b.nbytes = (size_t)tsrnn_rng_below(&rng, base.nbytes + 1);
        } else if (kind == 1) { /* a random header length */
            uint64_t n =
                tsrnn_rng_below(&rng, 2) ? tsrnn_rng_below(&rng, b.nbytes) : tsrnn_rng_next(&rng);
            put_u64_le(b.data, n);
        } else { /* overwrite 1-4 bytes, mostly in the header */
            int edits = 1 + (int)tsrnn_rng_below(&rng, 4);
            for (int e = 0; e < edits; e++) {
                size_t limit = tsrnn_rng_below(&rng, 8) ? header_end : b.nbytes;
                size_t pos = (size_t)tsrnn_rng_below(&rng, limit);
                b.data[pos] = kind == 2
                                  ? (unsigned char)tsrnn_rng_next(&rng)
                                  : (unsigned char)
                                        interesting[tsrnn_rng_below(&rng, sizeof(interesting) - 1)];
            }
        }
        struct tsrnn_safetensors st;
        enum tsrnn_status status = tsrnn_safetensors_parse(&st, b.data, b.nbytes, "fuzz");
        if (status == TSRNN_OK) {
            ok_count++;
            unsigned sum = 0;
            for (size_t i = 0; i < st.tensor_count; i++) {
                const unsigned char *p = st.tensors[i].data;
                assert_true(p >= st.bytes && p + st.tensors[i].nbytes <= st.bytes + st.nbytes);
                for (size_t j = 0; j < st.tensors[i].nbytes; j++)
                    sum += p[j];
                assert_true(strlen(st.tensors[i].name) < st.header_nbytes);
            }
            for (size_t i = 0; i < st.metadata_count; i++)
                sum +=
                    (unsigned)strlen(st.metadata[i].key) + (unsigned)strlen(st.metadata[i].value);
            (void)sum;
        } else {
            if (status != TSRNN_ERR_DATA)
                fail_msg("iteration %d: status %d: %s", iter, (int)status, tsrnn_last_error());
            data_count++;
            assert_true(strncmp(tsrnn_last_error(), "fuzz: ", 6) == 0);
            assert_null(st.bytes);
        }
        tsrnn_safetensors_finish(&st);
    }
    print_message("fuzz: %zu accepted, %zu rejected\n", ok_count, data_count);
    /* Both outcomes are exercised. */
    assert_true(ok_count > 20);
    assert_true(data_count > 4000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_hand_built),
        cmocka_unit_test(test_read_minimal_and_whitespace),
        cmocka_unit_test(test_reject_short_file),
        cmocka_unit_test(test_reject_header_length),
        cmocka_unit_test(test_reject_header_past_end),
        cmocka_unit_test(test_reject_not_json),
        cmocka_unit_test(test_reject_duplicate_key),
        cmocka_unit_test(test_reject_unknown_dtype),
        cmocka_unit_test(test_reject_size_mismatch),
        cmocka_unit_test(test_reject_hole),
        cmocka_unit_test(test_reject_overlap),
        cmocka_unit_test(test_reject_trailing_bytes),
        cmocka_unit_test(test_reject_bad_metadata),
        cmocka_unit_test(test_reject_truncated),
        cmocka_unit_test(test_reject_missing_file),
        cmocka_unit_test(test_reject_bad_entries),
        cmocka_unit_test(test_write_read_round_trip),
        cmocka_unit_test(test_write_format),
        cmocka_unit_test(test_write_rejects_bad_tensors),
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_fuzz_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
