/* Strict TensorBoard event-file decoder for tests (tests/util/tfevents.h). */
#include "tfevents.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t tfev_crc32c(const void *data, size_t nbytes)
{
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < nbytes; i++) {
        c ^= p[i];
        for (int bit = 0; bit < 8; bit++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

uint32_t tfev_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* A view of protobuf bytes; `base` is the offset of `p` in the file, for messages. */
struct reader {
    const unsigned char *p, *end;
    size_t base;
    const unsigned char *start;
    char *err;
    size_t errcap;
};

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
    char message[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errcap, "offset %zu: %s", r->base + (size_t)(r->p - r->start), message);
    return -1;
}

static int get_varint(struct reader *r, uint64_t *v)
{
    *v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return fail(r, "truncated varint");
        unsigned char b = *r->p++;
        if (i == 9 && b > 1)
            return fail(r, "varint longer than 64 bits");
        *v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80)
            return 0;
    }
    return fail(r, "varint longer than 10 bytes");
}

static uint64_t load_le(const unsigned char *p, int nbytes)
{
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* One field: its number, wire type and value (varint or fixed bits in *v; bytes in *sub). */
struct field {
    uint64_t number;
    int wire_type;
    uint64_t v;
    struct reader sub;
};

static int get_field(struct reader *r, struct field *f)
{
    uint64_t key;
    if (get_varint(r, &key) != 0)
        return -1;
    f->number = key >> 3;
    f->wire_type = (int)(key & 7);
    if (f->number == 0)
        return fail(r, "field number 0");
    size_t left = (size_t)(r->end - r->p);
    switch (f->wire_type) {
    case 0:
        return get_varint(r, &f->v);
    case 1:
    case 5: {
        int nbytes = f->wire_type == 1 ? 8 : 4;
        if (left < (size_t)nbytes)
            return fail(r, "truncated fixed%d field %llu", nbytes * 8,
                        (unsigned long long)f->number);
        f->v = load_le(r->p, nbytes);
        r->p += nbytes;
        return 0;
    }
    case 2: {
        uint64_t n;
        if (get_varint(r, &n) != 0)
            return -1;
        left = (size_t)(r->end - r->p);
        if (n > left)
            return fail(r, "length %llu of field %llu exceeds the %zu bytes left",
                        (unsigned long long)n, (unsigned long long)f->number, left);
        f->sub = (struct reader){ .p = r->p,
                                  .end = r->p + n,
                                  .base = r->base + (size_t)(r->p - r->start),
                                  .start = r->p,
                                  .err = r->err,
                                  .errcap = r->errcap };
        r->p += n;
        return 0;
    }
    default:
        return fail(r, "unsupported wire type %d (field %llu)", f->wire_type,
                    (unsigned long long)f->number);
    }
}

static int expect_wire(struct reader *r, const struct field *f, int wire_type, const char *what)
{
    if (f->wire_type != wire_type)
        return fail(r, "%s has wire type %d, expected %d", what, f->wire_type, wire_type);
    return 0;
}

static int copy_string(struct reader *r, const struct field *f, char *out, size_t capacity,
                       const char *what)
{
    size_t n = (size_t)(f->sub.end - f->sub.p);
    if (n >= capacity)
        return fail(r, "%s of %zu bytes is too long for the decoder", what, n);
    if (memchr(f->sub.p, '\0', n) != NULL)
        return fail(r, "%s contains a NUL byte", what);
    memcpy(out, f->sub.p, n);
    out[n] = '\0';
    return 0;
}

static int parse_value(struct reader *r, struct tfev_event *e)
{
    if (e->value_count == TFEV_MAX_VALUES)
        return fail(r, "more than %d summary values in one event", TFEV_MAX_VALUES);
    size_t k = e->value_count++;
    bool have_tag = false, have_value = false;
    struct field f;
    while (r->p < r->end) {
        if (get_field(r, &f) != 0)
            return -1;
        if (f.number == 1) {
            if (expect_wire(r, &f, 2, "Value.tag") != 0 ||
                copy_string(r, &f, e->values[k].tag, sizeof(e->values[k].tag), "tag") != 0)
                return -1;
            have_tag = true;
        } else if (f.number == 2) {
            if (expect_wire(r, &f, 5, "Value.simple_value") != 0)
                return -1;
            uint32_t bits = (uint32_t)f.v;
            memcpy(&e->values[k].value, &bits, sizeof(bits));
            have_value = true;
        }
    }
    if (!have_tag || !have_value)
        return fail(r, "summary value without %s", have_tag ? "simple_value" : "tag");
    return 0;
}

static int parse_summary(struct reader *r, struct tfev_event *e)
{
    struct field f;
    while (r->p < r->end) {
        if (get_field(r, &f) != 0)
            return -1;
        if (f.number == 1) {
            if (expect_wire(r, &f, 2, "Summary.value") != 0 || parse_value(&f.sub, e) != 0)
                return -1;
        }
    }
    return 0;
}

static int parse_session_log(struct reader *r, struct tfev_event *e)
{
    e->session_status = 0; /* proto3 default: UNSPECIFIED */
    struct field f;
    while (r->p < r->end) {
        if (get_field(r, &f) != 0)
            return -1;
        if (f.number == 1) {
            if (expect_wire(r, &f, 0, "SessionLog.status") != 0)
                return -1;
            if (f.v > 3)
                return fail(r, "SessionLog.status %llu is not a known value",
                            (unsigned long long)f.v);
            e->session_status = (int)f.v;
        }
    }
    return 0;
}

static int parse_event(struct reader *r, struct tfev_event *e)
{
    *e = (struct tfev_event){ .session_status = -1 };
    struct field f;
    while (r->p < r->end) {
        if (get_field(r, &f) != 0)
            return -1;
        switch (f.number) {
        case 1:
            if (expect_wire(r, &f, 1, "Event.wall_time") != 0)
                return -1;
            memcpy(&e->wall_time, &f.v, sizeof(e->wall_time));
            break;
        case 2:
            if (expect_wire(r, &f, 0, "Event.step") != 0)
                return -1;
            e->step = (int64_t)f.v;
            break;
        case 3:
            if (expect_wire(r, &f, 2, "Event.file_version") != 0 ||
                copy_string(r, &f, e->file_version, sizeof(e->file_version), "file_version") != 0)
                return -1;
            break;
        case 5:
            if (expect_wire(r, &f, 2, "Event.summary") != 0 || parse_summary(&f.sub, e) != 0)
                return -1;
            break;
        case 7:
            if (expect_wire(r, &f, 2, "Event.session_log") != 0 ||
                parse_session_log(&f.sub, e) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return 0;
}

int tfev_parse(const void *data, size_t nbytes, struct tfev_event **events, size_t *count,
               char *err, size_t errcap)
{
    const unsigned char *bytes = data;
    struct tfev_event *out = NULL;
    size_t n = 0, cap = 0, off = 0;
    *events = NULL;
    *count = 0;
    while (off < nbytes) {
        size_t left = nbytes - off;
        if (left < 12) {
            snprintf(err, errcap, "offset %zu: partial record header (%zu bytes)", off, left);
            goto fail;
        }
        uint64_t length = load_le(bytes + off, 8);
        uint32_t length_crc = (uint32_t)load_le(bytes + off + 8, 4);
        if (length_crc != tfev_mask(tfev_crc32c(bytes + off, 8))) {
            snprintf(err, errcap, "offset %zu: length CRC mismatch", off);
            goto fail;
        }
        if (length > left - 12 || left - 12 - length < 4) {
            snprintf(err, errcap, "offset %zu: partial record (length %llu, %zu bytes left)", off,
                     (unsigned long long)length, left);
            goto fail;
        }
        const unsigned char *payload = bytes + off + 12;
        uint32_t data_crc = (uint32_t)load_le(payload + length, 4);
        if (data_crc != tfev_mask(tfev_crc32c(payload, (size_t)length))) {
            snprintf(err, errcap, "offset %zu: data CRC mismatch", off);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            struct tfev_event *grown = realloc(out, cap * sizeof(*out));
            if (grown == NULL) {
                snprintf(err, errcap, "out of memory");
                goto fail;
            }
            out = grown;
        }
        struct reader r = { .p = payload,
                            .end = payload + length,
                            .base = off + 12,
                            .start = payload,
                            .err = err,
                            .errcap = errcap };
        if (parse_event(&r, &out[n]) != 0)
            goto fail;
        n++;
        off += 16 + (size_t)length;
    }
    *events = out;
    *count = n;
    return 0;
fail:
    free(out);
    return -1;
}

int tfev_read(const char *path, struct tfev_event **events, size_t *count, char *err, size_t errcap)
{
    *events = NULL;
    *count = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errcap, "cannot open %s", path);
        return -1;
    }
    unsigned char *data = NULL;
    size_t nbytes = 0, cap = 0;
    for (;;) {
        if (nbytes == cap) {
            cap = cap ? 2 * cap : 65536;
            unsigned char *grown = realloc(data, cap);
            if (grown == NULL) {
                snprintf(err, errcap, "out of memory reading %s", path);
                free(data);
                fclose(f);
                return -1;
            }
            data = grown;
        }
        size_t got = fread(data + nbytes, 1, cap - nbytes, f);
        nbytes += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errcap, "cannot read %s", path);
        free(data);
        return -1;
    }
    int rc = tfev_parse(data, nbytes, events, count, err, errcap);
    free(data);
    return rc;
}

void tfev_free(struct tfev_event *events)
{
    free(events);
}
