/* TensorBoard event files (include/tsrnn/tensorboard.h): a hand-written encoder for the few
 * tensorboard.Event fields tsrnn writes, TFRecord framing, and a buffered writer.
 *
 * Wire format: shared reference/ecosystem-formats.md §1.2-1.3 (tensorboard/compat/proto/
 * event.proto, summary.proto; TensorBoard's record_writer.py). Proto3 omits fields equal to
 * their default, so step 0 is not written, as protobuf itself would do.
 */
#include "tsrnn/tensorboard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tsrnn/crc32c.h"

/* Records are written out before the buffer would grow past this (one record may exceed it). */
#define TB_BUFFER_NBYTES (64 * 1024)

/* u64 length + masked CRC of it before the payload; masked CRC of the payload after. */
#define RECORD_HEADER_NBYTES   12
#define RECORD_OVERHEAD_NBYTES 16

/* Tag bytes: (field << 3) | wire type (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit). */
enum {
    EVENT_WALL_TIME = 0x09,    /* Event.wall_time = 1, double */
    EVENT_STEP = 0x10,         /* Event.step = 2, int64 */
    EVENT_FILE_VERSION = 0x1A, /* Event.file_version = 3, string */
    EVENT_SUMMARY = 0x2A,      /* Event.summary = 5, Summary */
    EVENT_SESSION_LOG = 0x3A,  /* Event.session_log = 7, SessionLog */
    SUMMARY_VALUE = 0x0A,      /* Summary.value = 1, repeated Value */
    VALUE_TAG = 0x0A,          /* Summary.Value.tag = 1, string */
    VALUE_SIMPLE_VALUE = 0x15, /* Summary.Value.simple_value = 2, float */
    SESSION_LOG_STATUS = 0x08, /* SessionLog.status = 1, enum */
};

enum {
    SESSION_LOG_START = 1
};

static const char file_version[] = "brain.Event:2";

/* --- protobuf encoding --------------------------------------------------------------- */

/* An output buffer that remembers overflow instead of checking at every field. */
struct pb_out {
    unsigned char *out;
    size_t capacity, len;
    bool overflow;
};

static void put_bytes(struct pb_out *o, const void *bytes, size_t nbytes)
{
    if (o->overflow || o->capacity - o->len < nbytes) {
        o->overflow = true;
        return;
    }
    memcpy(o->out + o->len, bytes, nbytes);
    o->len += nbytes;
}

static void put_byte(struct pb_out *o, unsigned char byte)
{
    put_bytes(o, &byte, 1);
}

static void put_varint(struct pb_out *o, uint64_t v)
{
    unsigned char bytes[10];
    size_t n = 0;
    while (v >= 0x80) {
        bytes[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    bytes[n++] = (unsigned char)v;
    put_bytes(o, bytes, n);
}

static size_t varint_nbytes(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

static void put_le(struct pb_out *o, uint64_t v, size_t nbytes)
{
    unsigned char bytes[8];
    for (size_t i = 0; i < nbytes; i++)
        bytes[i] = (unsigned char)(v >> (8 * i));
    put_bytes(o, bytes, nbytes);
}

/* Event.wall_time and, unless 0, Event.step: the start of every event tsrnn writes. */
static void put_event_header(struct pb_out *o, double wall_time, int64_t step)
{
    uint64_t bits;
    memcpy(&bits, &wall_time, sizeof(bits));
    put_byte(o, EVENT_WALL_TIME);
    put_le(o, bits, 8);
    if (step != 0) {
        put_byte(o, EVENT_STEP);
        put_varint(o, (uint64_t)step); /* int64: two's complement, 10 bytes if negative */
    }
}

static size_t finish(const struct pb_out *o)
{
    return o->overflow ? 0 : o->len;
}

size_t tsrnn_tb_encode_scalar(unsigned char *out, size_t capacity, double wall_time, int64_t step,
                              const char *tag, float value)
{
    struct pb_out o = { .out = out, .capacity = capacity };
    size_t tag_nbytes = strlen(tag);
    size_t value_nbytes = 1 + varint_nbytes(tag_nbytes) + tag_nbytes + 1 + 4;
    size_t summary_nbytes = 1 + varint_nbytes(value_nbytes) + value_nbytes;
    uint32_t value_bits;
    memcpy(&value_bits, &value, sizeof(value_bits));

    put_event_header(&o, wall_time, step);
    put_byte(&o, EVENT_SUMMARY);
    put_varint(&o, summary_nbytes);
    put_byte(&o, SUMMARY_VALUE);
    put_varint(&o, value_nbytes);
    put_byte(&o, VALUE_TAG);
    put_varint(&o, tag_nbytes);
    put_bytes(&o, tag, tag_nbytes);
    put_byte(&o, VALUE_SIMPLE_VALUE);
    put_le(&o, value_bits, 4);
    return finish(&o);
}

size_t tsrnn_tb_encode_file_version(unsigned char *out, size_t capacity, double wall_time)
{
    struct pb_out o = { .out = out, .capacity = capacity };
    put_event_header(&o, wall_time, 0);
    put_byte(&o, EVENT_FILE_VERSION);
    put_varint(&o, sizeof(file_version) - 1);
    put_bytes(&o, file_version, sizeof(file_version) - 1);
    return finish(&o);
}

/* Event{wall_time, step, session_log{status = START}}. */
static size_t encode_session_start(unsigned char *out, size_t capacity, double wall_time,
                                   int64_t step)
{
    struct pb_out o = { .out = out, .capacity = capacity };
    put_event_header(&o, wall_time, step);
    put_byte(&o, EVENT_SESSION_LOG);
    put_varint(&o, 2);
    put_byte(&o, SESSION_LOG_STATUS);
    put_varint(&o, SESSION_LOG_START);
    return finish(&o);
}

/* --- TFRecord framing and the buffer ------------------------------------------------- */

static void store_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Frames the `nbytes` payload already at record + RECORD_HEADER_NBYTES. */
static void frame_record(unsigned char *record, size_t nbytes)
{
    uint64_t length = nbytes;
    for (int i = 0; i < 8; i++)
        record[i] = (unsigned char)(length >> (8 * i));
    store_le32(record + 8, tsrnn_crc32c_mask(tsrnn_crc32c(0, record, 8)));
    unsigned char *payload = record + RECORD_HEADER_NBYTES;
    store_le32(payload + nbytes, tsrnn_crc32c_mask(tsrnn_crc32c(0, payload, nbytes)));
}

static const char *writer_name(const struct tsrnn_tb_writer *w)
{
    return w->path != NULL ? tsrnn_display_path(w->path) : "(TensorBoard buffer)";
}

/* Makes room for `nbytes` more bytes: writes the buffer out first when it would pass
 * TB_BUFFER_NBYTES, then grows it if one record needs more. */
static enum tsrnn_status reserve(struct tsrnn_tb_writer *w, size_t nbytes)
{
    if (w->len > 0 && w->len + nbytes > TB_BUFFER_NBYTES && tsrnn_tb_is_open(w))
        TSRNN_TRY(tsrnn_tb_flush(w));
    if (w->cap - w->len >= nbytes)
        return TSRNN_OK;
    size_t cap = w->cap > 0 ? w->cap : 4096;
    while (cap - w->len < nbytes) {
        if (cap > SIZE_MAX / 2)
            return tsrnn_error(TSRNN_ERR_NOMEM, "TensorBoard record too large for %s",
                               writer_name(w));
        cap *= 2;
    }
    unsigned char *buf = realloc(w->buf, cap);
    if (buf == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory buffering TensorBoard events for %s",
                           writer_name(w));
    w->buf = buf;
    w->cap = cap;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_tb_append_record(struct tsrnn_tb_writer *w, const void *payload,
                                         size_t nbytes)
{
    if (nbytes > SIZE_MAX - RECORD_OVERHEAD_NBYTES)
        return tsrnn_error(TSRNN_ERR_NOMEM, "TensorBoard record too large for %s", writer_name(w));
    TSRNN_TRY(reserve(w, nbytes + RECORD_OVERHEAD_NBYTES));
    unsigned char *record = w->buf + w->len;
    memcpy(record + RECORD_HEADER_NBYTES, payload, nbytes);
    frame_record(record, nbytes);
    w->len += nbytes + RECORD_OVERHEAD_NBYTES;
    return TSRNN_OK;
}

static double wall_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum tsrnn_status tsrnn_tb_scalar(struct tsrnn_tb_writer *w, const char *tag, float value,
                                  int64_t step)
{
    /* Besides the tag, an event takes at most 58 bytes (every varint at its longest). */
    size_t bound = strlen(tag) + 64 + RECORD_OVERHEAD_NBYTES;
    TSRNN_TRY(reserve(w, bound));
    unsigned char *record = w->buf + w->len;
    size_t nbytes =
        tsrnn_tb_encode_scalar(record + RECORD_HEADER_NBYTES, bound - RECORD_OVERHEAD_NBYTES,
                               wall_time_now(), step, tag, value);
    frame_record(record, nbytes);
    w->len += nbytes + RECORD_OVERHEAD_NBYTES;
    return TSRNN_OK;
}

/* --- the file ------------------------------------------------------------------------ */

enum tsrnn_status tsrnn_tb_flush(struct tsrnn_tb_writer *w)
{
    if (!tsrnn_tb_is_open(w))
        return tsrnn_error(TSRNN_ERR_USAGE, "%s has no event file to write to", writer_name(w));
    int err = 0;
    size_t done = tsrnn_write_all(w->fd, w->buf, w->len, &err);
    enum tsrnn_status status = TSRNN_OK;
    if (done < w->len)
        status = tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot write %s", writer_name(w));
    /* Keep what was not written, so that a later flush continues where this one stopped. */
    memmove(w->buf, w->buf + done, w->len - done);
    w->len -= done;
    return status;
}

bool tsrnn_tb_is_open(const struct tsrnn_tb_writer *w)
{
    return w->path != NULL;
}

enum tsrnn_status tsrnn_tb_close(struct tsrnn_tb_writer *w)
{
    enum tsrnn_status status = TSRNN_OK;
    if (tsrnn_tb_is_open(w)) {
        status = tsrnn_tb_flush(w);
        if (close(w->fd) != 0 && status == TSRNN_OK)
            status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot close %s", writer_name(w));
    }
    free(w->path);
    free(w->buf);
    *w = (struct tsrnn_tb_writer){ .fd = -1 };
    return status;
}

/* The host name as Python's socket.gethostname() gives it, made safe for a file name. */
static void host_name(char *out, size_t capacity)
{
    if (gethostname(out, capacity) != 0 || out[0] == '\0')
        snprintf(out, capacity, "localhost");
    out[capacity - 1] = '\0';
    for (char *c = out; *c != '\0'; c++)
        if (*c == '/')
            *c = '_';
}

/* Creates `log_dir/events.out.tfevents.<seconds>.<host>.<pid>.<n>` with the first free n. */
static enum tsrnn_status create_file(struct tsrnn_tb_writer *w, const char *log_dir,
                                     double wall_time)
{
    char host[256];
    host_name(host, sizeof(host));
    size_t dir_nbytes = strlen(log_dir);
    const char *sep = dir_nbytes > 0 && log_dir[dir_nbytes - 1] == '/' ? "" : "/";
    for (unsigned n = 0;; n++) {
        if (asprintf(&w->path, "%s%sevents.out.tfevents.%010lld.%s.%ld.%u", log_dir, sep,
                     (long long)wall_time, host, (long)getpid(), n) < 0) {
            w->path = NULL;
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory creating an event file in %s",
                               tsrnn_display_path(log_dir));
        }
        w->fd = open(w->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
        if (w->fd >= 0)
            return TSRNN_OK;
        int err = errno;
        if (err != EEXIST || n == 9999) {
            enum tsrnn_status status =
                tsrnn_error_errno(TSRNN_ERR_IO, err, "cannot create the TensorBoard event file %s",
                                  tsrnn_display_path(w->path));
            free(w->path);
            w->path = NULL;
            return status;
        }
        free(w->path);
        w->path = NULL;
    }
}

enum tsrnn_status tsrnn_tb_open(struct tsrnn_tb_writer *w, const char *log_dir, int64_t start_step,
                                bool resumed)
{
    *w = (struct tsrnn_tb_writer){ .fd = -1 };
    double wall_time = wall_time_now();
    TSRNN_TRY(create_file(w, log_dir, wall_time));

    unsigned char event[64];
    size_t nbytes = tsrnn_tb_encode_file_version(event, sizeof(event), wall_time);
    enum tsrnn_status status = tsrnn_tb_append_record(w, event, nbytes);
    if (status != TSRNN_OK)
        goto out;
    if (resumed) {
        nbytes = encode_session_start(event, sizeof(event), wall_time, start_step);
        status = tsrnn_tb_append_record(w, event, nbytes);
        if (status != TSRNN_OK)
            goto out;
    }
    status = tsrnn_tb_flush(w);
out:
    if (status != TSRNN_OK) {
        unlink(w->path); /* leave no empty or torn file behind */
        close(w->fd);
        free(w->path);
        free(w->buf);
        *w = (struct tsrnn_tb_writer){ .fd = -1 };
    }
    return status;
}
