/* CRC-32C and TensorBoard event files.
 *
 * The CRC is checked against its published check value and a bitwise reference; the encoder
 * against the hand-encoding vectors of shared reference/ecosystem-formats.md §1.3 (decoded
 * there by protobuf itself); the writer by reading its files back with the independent strict
 * decoder of tests/util/tfevents.c. scripts/check-tensorboard.py does the same with
 * TensorBoard's own reader.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tfevents.h"
#include "tsrnn/crc32c.h"
#include "tsrnn/tensorboard.h"

/* xorshift64*: reproducible test data. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t next_random(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Du;
}

static void fill_random(unsigned char *buf, size_t nbytes)
{
    for (size_t i = 0; i < nbytes; i++)
        buf[i] = (unsigned char)(next_random() >> 56);
}

static size_t parse_hex(unsigned char *out, size_t capacity, const char *hex)
{
    size_t n = 0;
    for (const char *c = hex; *c != '\0';) {
        if (*c == ' ') {
            c++;
            continue;
        }
        unsigned byte;
        assert_int_equal(sscanf(c, "%2x", &byte), 1);
        assert_true(n < capacity);
        out[n++] = (unsigned char)byte;
        c += 2;
    }
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- CRC-32C ------------------------------------------------------------------------- */

static void test_crc_check_value(void **state)
{
    (void)state;
    assert_int_equal(tsrnn_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(tfev_crc32c("123456789", 9), 0xE3069283u);
    assert_int_equal(tsrnn_crc32c(0, NULL, 0), 0);
    assert_int_equal(tsrnn_crc32c(0x12345678u, NULL, 0), 0x12345678u);

    /* RFC 3720 (iSCSI) B.4: 32 bytes of 0x00, of 0xFF, ascending, descending. */
    unsigned char buf[32];
    memset(buf, 0, sizeof(buf));
    assert_int_equal(tsrnn_crc32c(0, buf, sizeof(buf)), 0x8A9136AAu);
    memset(buf, 0xFF, sizeof(buf));
    assert_int_equal(tsrnn_crc32c(0, buf, sizeof(buf)), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    assert_int_equal(tsrnn_crc32c(0, buf, sizeof(buf)), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    assert_int_equal(tsrnn_crc32c(0, buf, sizeof(buf)), 0x113FDB5Cu);
}

static void test_crc_mask(void **state)
{
    (void)state;
    assert_int_equal(tsrnn_crc32c_mask(0), 0xa282ead8u);
    assert_int_equal(tsrnn_crc32c_mask(0x00008000u), 0xa282ead9u);
    assert_int_equal(tsrnn_crc32c_mask(0x80000000u), 0xa283ead8u);
    for (int i = 0; i < 1000; i++) {
        uint32_t crc = (uint32_t)next_random();
        assert_int_equal(tsrnn_crc32c_mask(crc), tfev_mask(crc));
    }
}

/* Every length 0..300 at every alignment 0..7, and some long buffers: slice-by-8 vs bitwise. */
static void test_crc_matches_bitwise(void **state)
{
    (void)state;
    enum {
        MAX_NBYTES = 1 << 16
    };
    unsigned char *buf = malloc(MAX_NBYTES + 8);
    assert_non_null(buf);
    fill_random(buf, MAX_NBYTES + 8);
    for (size_t align = 0; align < 8; align++)
        for (size_t n = 0; n <= 300; n++)
            assert_int_equal(tsrnn_crc32c(0, buf + align, n), tfev_crc32c(buf + align, n));
    for (int i = 0; i < 50; i++) {
        size_t align = next_random() % 8;
        size_t n = next_random() % MAX_NBYTES;
        assert_int_equal(tsrnn_crc32c(0, buf + align, n), tfev_crc32c(buf + align, n));
    }
    free(buf);
}

static void test_crc_continuation(void **state)
{
    (void)state;
    enum {
        NBYTES = 5000
    };
    unsigned char buf[NBYTES];
    fill_random(buf, NBYTES);
    uint32_t whole = tsrnn_crc32c(0, buf, NBYTES);
    for (int i = 0; i < 200; i++) {
        /* Up to four pieces at random cut points, some of them empty. */
        size_t cuts[5] = { 0, next_random() % (NBYTES + 1), next_random() % (NBYTES + 1),
                           next_random() % (NBYTES + 1), NBYTES };
        for (int a = 1; a < 4; a++)
            for (int b = a + 1; b < 4; b++)
                if (cuts[b] < cuts[a]) {
                    size_t t = cuts[a];
                    cuts[a] = cuts[b];
                    cuts[b] = t;
                }
        uint32_t crc = 0;
        for (int k = 0; k < 4; k++)
            crc = tsrnn_crc32c(crc, buf + cuts[k], cuts[k + 1] - cuts[k]);
        assert_int_equal(crc, whole);
    }
}

/* Not a pass/fail test: prints what checkpoint checksums cost. */
static void test_crc_throughput(void **state)
{
    (void)state;
    enum {
        NBYTES = 16 << 20,
        ROUNDS = 8
    };
    unsigned char *buf = malloc(NBYTES);
    assert_non_null(buf);
    fill_random(buf, NBYTES);
    uint32_t crc = tsrnn_crc32c(0, buf, NBYTES); /* warm the tables and the pages */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < ROUNDS; r++)
        crc = tsrnn_crc32c(crc, buf, NBYTES);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("crc32c: %.0f MB/s over a 16 MiB buffer (crc %08x)\n", (double)NBYTES * ROUNDS / s / 1e6,
           (unsigned)crc);
    free(buf);
}

/* --- encoding: the reference vectors of ecosystem-formats.md §1.3 -------------------- */

static const char vector_file_version_payload[] =
    "0900000040fc54d941 1a0d 627261696e2e4576656e743a32";
static const char vector_file_version_record[] =
    "1800000000000000 a37f4b22 0900000040fc54d941 1a0d 627261696e2e4576656e743a32 eced8f9d";
static const char vector_scalar_payload[] =
    "0900001040fc54d941 100a 2a13 0a11 0a0a 747261696e5f6c6f7373 15 0000003f";
static const char vector_scalar_record[] = "2000000000000000 29eda950 0900001040fc54d941 100a 2a13 "
                                           "0a11 0a0a 747261696e5f6c6f7373 15 0000003f e24a3436";

static void test_encode_file_version_vector(void **state)
{
    (void)state;
    unsigned char expected[64], payload[64];
    size_t n = parse_hex(expected, sizeof(expected), vector_file_version_payload);
    assert_int_equal(n, 24);
    assert_int_equal(tsrnn_tb_encode_file_version(payload, sizeof(payload), 1700000000.0), n);
    assert_memory_equal(payload, expected, n);
    /* Exactly enough room works; one byte less reports 0. */
    assert_int_equal(tsrnn_tb_encode_file_version(payload, n, 1700000000.0), n);
    assert_int_equal(tsrnn_tb_encode_file_version(payload, n - 1, 1700000000.0), 0);

    struct tsrnn_tb_writer w = { 0 };
    assert_int_equal(tsrnn_tb_append_record(&w, payload, n), TSRNN_OK);
    n = parse_hex(expected, sizeof(expected), vector_file_version_record);
    assert_int_equal(w.len, n);
    assert_memory_equal(w.buf, expected, n);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK);
    assert_null(w.buf);
}

static void test_encode_scalar_vector(void **state)
{
    (void)state;
    unsigned char expected[64], payload[64];
    size_t n = parse_hex(expected, sizeof(expected), vector_scalar_payload);
    assert_int_equal(n, 32);
    assert_int_equal(
        tsrnn_tb_encode_scalar(payload, sizeof(payload), 1700000000.25, 10, "train_loss", 0.5f), n);
    assert_memory_equal(payload, expected, n);
    assert_int_equal(tsrnn_tb_encode_scalar(payload, n - 1, 1700000000.25, 10, "train_loss", 0.5f),
                     0);

    struct tsrnn_tb_writer w = { 0 };
    assert_int_equal(tsrnn_tb_append_record(&w, payload, n), TSRNN_OK);
    n = parse_hex(expected, sizeof(expected), vector_scalar_record);
    assert_int_equal(w.len, n);
    assert_memory_equal(w.buf, expected, n);

    /* The decoder reads the vectors back, both in one stream. */
    unsigned char stream[128];
    size_t first = parse_hex(stream, sizeof(stream), vector_file_version_record);
    memcpy(stream + first, w.buf, w.len);
    struct tfev_event *events;
    size_t count;
    char err[256];
    assert_int_equal(tfev_parse(stream, first + w.len, &events, &count, err, sizeof(err)), 0);
    assert_int_equal(count, 2);
    assert_string_equal(events[0].file_version, "brain.Event:2");
    assert_true(events[0].wall_time == 1700000000.0);
    assert_int_equal(events[0].step, 0);
    assert_int_equal(events[0].value_count, 0);
    assert_true(events[1].wall_time == 1700000000.25);
    assert_int_equal(events[1].step, 10);
    assert_int_equal(events[1].value_count, 1);
    assert_string_equal(events[1].values[0].tag, "train_loss");
    assert_true(events[1].values[0].value == 0.5f);
    assert_int_equal(events[1].session_status, -1);
    tfev_free(events);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK);
}

/* Step 0 is omitted (proto3); large and negative steps are plain varints. */
static void test_encode_steps(void **state)
{
    (void)state;
    static const int64_t steps[] = {
        0, 1, 127, 128, 16383, 16384, (int64_t)1 << 40, INT64_MAX, -1
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct tsrnn_tb_writer w = { 0 };
        unsigned char payload[128];
        size_t n = tsrnn_tb_encode_scalar(payload, sizeof(payload), 1.5, steps[i], "t", -2.25f);
        assert_true(n > 0);
        assert_int_equal(payload[9] == 0x10, steps[i] != 0);
        assert_int_equal(tsrnn_tb_append_record(&w, payload, n), TSRNN_OK);
        struct tfev_event *events;
        size_t count;
        char err[256];
        assert_int_equal(tfev_parse(w.buf, w.len, &events, &count, err, sizeof(err)), 0);
        assert_int_equal(count, 1);
        assert_int_equal(events[0].step, steps[i]);
        assert_true(events[0].values[0].value == -2.25f);
        tfev_free(events);
        tsrnn_tb_close(&w);
    }
}

/* The test decoder is strict: a flipped bit or a cut record is found, with its offset. */
static void test_decoder_rejects_damage(void **state)
{
    (void)state;
    unsigned char stream[128];
    size_t n = parse_hex(stream, sizeof(stream), vector_file_version_record);
    n += parse_hex(stream + n, sizeof(stream) - n, vector_scalar_record);
    struct tfev_event *events;
    size_t count;
    char err[256];

    stream[40 + 20] ^= 0x01; /* a payload byte of the second record */
    assert_int_equal(tfev_parse(stream, n, &events, &count, err, sizeof(err)), -1);
    tu_expect_in(err, "offset 40: data CRC mismatch");
    stream[40 + 20] ^= 0x01;

    stream[40] ^= 0x01; /* its length */
    assert_int_equal(tfev_parse(stream, n, &events, &count, err, sizeof(err)), -1);
    tu_expect_in(err, "offset 40: length CRC mismatch");
    stream[40] ^= 0x01;

    assert_int_equal(tfev_parse(stream, n - 1, &events, &count, err, sizeof(err)), -1);
    tu_expect_in(err, "offset 40: partial record");
    assert_int_equal(tfev_parse(stream, 45, &events, &count, err, sizeof(err)), -1);
    tu_expect_in(err, "offset 40: partial record header");

    /* A valid frame around an Event with wire type 3 (start group). */
    struct tsrnn_tb_writer w = { 0 };
    const unsigned char bad[] = { 0x0B, 0x0C };
    assert_int_equal(tsrnn_tb_append_record(&w, bad, sizeof(bad)), TSRNN_OK);
    assert_int_equal(tfev_parse(w.buf, w.len, &events, &count, err, sizeof(err)), -1);
    tu_expect_in(err, "wire type 3");
    tsrnn_tb_close(&w);

    assert_int_equal(tfev_parse(stream, n, &events, &count, err, sizeof(err)), 0);
    assert_int_equal(count, 2);
    tfev_free(events);
}

/* --- the writer ---------------------------------------------------------------------- */

/* The names of the event files in `dir`, sorted; returns how many (at most `capacity`). */
static size_t list_event_files(const char *dir, char names[][256], size_t capacity)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (strncmp(entry->d_name, "events.out.tfevents.", 20) != 0)
            continue;
        assert_true(n < capacity);
        snprintf(names[n++], 256, "%s", entry->d_name);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], 256);
            memcpy(names[j], names[j - 1], 256);
            memcpy(names[j - 1], t, 256);
        }
    return n;
}

/* Checks `name` is events.out.tfevents.<10 digits>.<host>.<our pid>.<n>; returns n. */
static long check_file_name(const char *name)
{
    const char *p = name + 20;
    for (int i = 0; i < 10; i++)
        assert_true(p[i] >= '0' && p[i] <= '9');
    long long seconds = strtoll(p, NULL, 10);
    assert_true(llabs(seconds - (long long)now_s()) < 60);
    assert_int_equal(p[10], '.');
    char suffix[64];
    snprintf(suffix, sizeof(suffix), ".%ld.", (long)getpid());
    const char *at = strstr(p + 11, suffix);
    assert_non_null(at);
    assert_true(at > p + 11); /* a host name */
    char *end;
    long n = strtol(at + strlen(suffix), &end, 10);
    assert_int_equal(*end, '\0');
    return n;
}

static void read_events(const char *path, struct tfev_event **events, size_t *count)
{
    char err[256];
    if (tfev_read(path, events, count, err, sizeof(err)) != 0)
        fail_msg("%s: %s", path, err);
}

static void test_writer_round_trip(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    static const struct {
        const char *tag;
        float value;
        int64_t step;
    } points[] = {
        { "train_loss", 0.75f, 0 },
        { "lr", 1e-3f, 0 },
        { "train_loss", 0.1234567f, 1 },
        { "val_loss", 3.4028235e38f, 50 },
        { "epoch", 7.0f, 16384 },
        { "train_loss", -0.0f, (int64_t)1 << 40 },
        { "a/nested tag", 1.17549435e-38f, ((int64_t)1 << 40) + 1 },
    };
    enum {
        NPOINTS = sizeof(points) / sizeof(points[0])
    };
    double before = now_s();
    struct tsrnn_tb_writer w = { 0 };
    assert_false(tsrnn_tb_is_open(&w)); /* a zeroed writer: no TensorBoard */
    assert_int_equal(tsrnn_tb_open(&w, dir, 0, false), TSRNN_OK);
    assert_true(tsrnn_tb_is_open(&w));

    /* The file_version event is on disk at once, before any scalar or flush. */
    struct tfev_event *events;
    size_t count;
    read_events(w.path, &events, &count);
    assert_int_equal(count, 1);
    tfev_free(events);

    for (int i = 0; i < NPOINTS; i++)
        assert_int_equal(tsrnn_tb_scalar(&w, points[i].tag, points[i].value, points[i].step),
                         TSRNN_OK);
    assert_int_equal(tsrnn_tb_flush(&w), TSRNN_OK);
    assert_int_equal(w.len, 0);
    char *path = strdup(w.path);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK);
    assert_false(tsrnn_tb_is_open(&w));
    assert_null(w.path);
    double after = now_s();

    char names[4][256];
    assert_int_equal(list_event_files(dir, names, 4), 1);
    assert_int_equal(check_file_name(names[0]), 0);
    assert_string_equal(path, tu_path(dir, names[0]));

    read_events(path, &events, &count);
    assert_int_equal(count, 1 + NPOINTS);
    assert_string_equal(events[0].file_version, "brain.Event:2");
    assert_int_equal(events[0].step, 0);
    assert_int_equal(events[0].value_count, 0);
    assert_int_equal(events[0].session_status, -1);
    for (size_t i = 0; i < count; i++) {
        /* Stamped while the writer ran (so well within a minute of now), in order. */
        assert_true(events[i].wall_time >= before - 1e-3 && events[i].wall_time <= after + 1e-3);
        if (i > 0)
            assert_true(events[i].wall_time >= events[i - 1].wall_time);
    }
    for (int i = 0; i < NPOINTS; i++) {
        const struct tfev_event *e = &events[1 + i];
        assert_string_equal(e->file_version, "");
        assert_int_equal(e->session_status, -1);
        assert_int_equal(e->step, points[i].step);
        assert_int_equal(e->value_count, 1);
        assert_string_equal(e->values[0].tag, points[i].tag);
        assert_memory_equal(&e->values[0].value, &points[i].value, sizeof(float)); /* bits */
    }
    tfev_free(events);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

static void test_writer_resumed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_tb_writer w;
    assert_int_equal(tsrnn_tb_open(&w, dir, 1200, true), TSRNN_OK);
    assert_int_equal(tsrnn_tb_scalar(&w, "train_loss", 0.25f, 1201), TSRNN_OK);
    char *path = strdup(w.path);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK); /* close flushes */

    struct tfev_event *events;
    size_t count;
    read_events(path, &events, &count);
    assert_int_equal(count, 3);
    assert_string_equal(events[0].file_version, "brain.Event:2");
    assert_int_equal(events[0].session_status, -1);
    assert_int_equal(events[1].session_status, 1); /* START */
    assert_int_equal(events[1].step, 1200);
    assert_string_equal(events[1].file_version, "");
    assert_int_equal(events[1].value_count, 0);
    assert_int_equal(events[2].step, 1201);
    assert_true(events[2].values[0].value == 0.25f);
    tfev_free(events);
    free(path);

    /* Resumed at step 0: the START event has no step field, which reads as 0. */
    assert_int_equal(tsrnn_tb_open(&w, dir, 0, true), TSRNN_OK);
    path = strdup(w.path);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK);
    read_events(path, &events, &count);
    assert_int_equal(count, 2);
    assert_int_equal(events[1].session_status, 1);
    assert_int_equal(events[1].step, 0);
    tfev_free(events);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

static void test_writer_unique_names(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    enum {
        NWRITERS = 3
    };
    struct tsrnn_tb_writer w[NWRITERS];
    for (int i = 0; i < NWRITERS; i++)
        assert_int_equal(tsrnn_tb_open(&w[i], dir, 0, false), TSRNN_OK);
    for (int i = 0; i < NWRITERS; i++) {
        assert_int_equal(tsrnn_tb_scalar(&w[i], "writer", (float)i, 1), TSRNN_OK);
        assert_int_equal(tsrnn_tb_close(&w[i]), TSRNN_OK);
    }
    char names[8][256];
    assert_int_equal(list_event_files(dir, names, 8), NWRITERS);
    /* Within one second the names differ only in n; across a second boundary in the time. */
    long seen = 0;
    for (int i = 0; i < NWRITERS; i++) {
        long n = check_file_name(names[i]);
        assert_true(n >= 0 && n < NWRITERS);
        seen |= 1L << n;
        struct tfev_event *events;
        size_t count;
        read_events(tu_path(dir, names[i]), &events, &count);
        assert_int_equal(count, 2);
        tfev_free(events);
    }
    assert_true(seen & 1);

    /* A trailing slash on the folder gives no "//". */
    char slashed[4096];
    snprintf(slashed, sizeof(slashed), "%s/", dir);
    struct tsrnn_tb_writer v;
    assert_int_equal(tsrnn_tb_open(&v, slashed, 0, false), TSRNN_OK);
    assert_null(strstr(v.path, "//"));
    assert_int_equal(tsrnn_tb_close(&v), TSRNN_OK);
    tu_rmtree(dir);
    free(dir);
}

static void test_writer_open_error(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char missing[4096];
    snprintf(missing, sizeof(missing), "%s/no-such-folder", dir);
    struct tsrnn_tb_writer w;
    tsrnn_error_clear();
    assert_int_equal(tsrnn_tb_open(&w, missing, 0, false), TSRNN_ERR_IO);
    tu_expect_in(tsrnn_last_error(), missing);
    tu_expect_in(tsrnn_last_error(), strerror(ENOENT));
    assert_int_equal(w.fd, -1);
    assert_null(w.path);
    assert_null(w.buf);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK); /* harmless, though not needed */

    /* A zeroed writer (fd 0) is accepted by close and fd 0 stays open. */
    int fd0_flags = fcntl(0, F_GETFD);
    struct tsrnn_tb_writer zero = { 0 };
    assert_int_equal(tsrnn_tb_close(&zero), TSRNN_OK);
    assert_int_equal(fcntl(0, F_GETFD), fd0_flags);
    tu_rmtree(dir);
    free(dir);
}

/* A full disk: the flush names the file and the cause. */
static void test_writer_write_error(void **state)
{
    (void)state;
    int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (full < 0)
        skip();
    char *dir = tu_mkdtemp();
    struct tsrnn_tb_writer w;
    assert_int_equal(tsrnn_tb_open(&w, dir, 0, false), TSRNN_OK);
    assert_true(dup2(full, w.fd) == w.fd);
    close(full);
    assert_int_equal(tsrnn_tb_scalar(&w, "train_loss", 1.0f, 1), TSRNN_OK);
    tsrnn_error_clear();
    assert_int_equal(tsrnn_tb_flush(&w), TSRNN_ERR_IO);
    tu_expect_in(tsrnn_last_error(), w.path);
    tu_expect_in(tsrnn_last_error(), strerror(ENOSPC));
    assert_true(w.len > 0); /* nothing was written, nothing was lost */
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_ERR_IO);
    assert_int_equal(w.fd, -1);
    tu_rmtree(dir);
    free(dir);
}

/* 10000 scalars: the buffer is written out at 64 KiB and every record arrives whole. */
static void test_writer_many_scalars(void **state)
{
    (void)state;
    enum {
        NSCALARS = 10000
    };
    char *dir = tu_mkdtemp();
    struct tsrnn_tb_writer w;
    assert_int_equal(tsrnn_tb_open(&w, dir, 0, false), TSRNN_OK);
    char *path = strdup(w.path);
    struct stat st;
    size_t max_cap = 0;
    for (int i = 0; i < NSCALARS; i++) {
        const char *tag = i % 2 ? "val_loss" : "train_loss";
        assert_int_equal(tsrnn_tb_scalar(&w, tag, (float)i * 0.001f, i), TSRNN_OK);
        assert_true(w.len <= 64 * 1024);
        if (w.cap > max_cap)
            max_cap = w.cap;
        /* What has reached the file so far is whole records. */
        if (i == NSCALARS / 2) {
            assert_int_equal(stat(path, &st), 0);
            assert_true(st.st_size > 64 * 1024);
            struct tfev_event *events;
            size_t count;
            read_events(path, &events, &count);
            assert_true(count > 1000);
            tfev_free(events);
        }
    }
    assert_true(max_cap <= 64 * 1024);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK);

    struct tfev_event *events;
    size_t count;
    read_events(path, &events, &count);
    assert_int_equal(count, 1 + NSCALARS);
    for (int i = 0; i < NSCALARS; i++) {
        const struct tfev_event *e = &events[1 + i];
        assert_int_equal(e->step, i);
        assert_string_equal(e->values[0].tag, i % 2 ? "val_loss" : "train_loss");
        assert_true(e->values[0].value == (float)i * 0.001f);
    }
    tfev_free(events);

    /* One record larger than the whole buffer still goes through. */
    assert_int_equal(tsrnn_tb_open(&w, dir, 0, false), TSRNN_OK);
    free(path);
    path = strdup(w.path);
    char *long_tag = malloc(100000);
    assert_non_null(long_tag);
    memset(long_tag, 'x', 99999);
    long_tag[99999] = '\0';
    assert_int_equal(tsrnn_tb_scalar(&w, "short", 1.0f, 1), TSRNN_OK);
    assert_int_equal(tsrnn_tb_scalar(&w, long_tag, 2.0f, 2), TSRNN_OK);
    assert_int_equal(tsrnn_tb_close(&w), TSRNN_OK);
    /* Its CRCs check out; only the decoder's tag field is too short for it. */
    char err[256];
    assert_int_equal(tfev_read(path, &events, &count, err, sizeof(err)), -1);
    tu_expect_in(err, "tag of 99999 bytes is too long for the decoder");
    free(long_tag);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_check_value),
        cmocka_unit_test(test_crc_mask),
        cmocka_unit_test(test_crc_matches_bitwise),
        cmocka_unit_test(test_crc_continuation),
        cmocka_unit_test(test_crc_throughput),
        cmocka_unit_test(test_encode_file_version_vector),
        cmocka_unit_test(test_encode_scalar_vector),
        cmocka_unit_test(test_encode_steps),
        cmocka_unit_test(test_decoder_rejects_damage),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_writer_resumed),
        cmocka_unit_test(test_writer_unique_names),
        cmocka_unit_test(test_writer_open_error),
        cmocka_unit_test(test_writer_write_error),
        cmocka_unit_test(test_writer_many_scalars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
