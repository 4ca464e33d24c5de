/* Fuzz target: the TensorBoard writer (src/report/tensorboard.c) round trip through the
 * independent test decoder (tests/util/tfevents.c).
 *
 * Input: a byte of flags (bit 0: a resumed run), then the start step (8 bytes, little-endian)
 * when resumed, then scalars until the input runs out, each a byte b (tag length b & 63, the
 * decoder's limit; b & 64: flush after it), the tag's bytes (up to the first NUL), the value
 * (4 bytes: any float bits) and the step (8 bytes). Files past the writer's 64 KiB buffer are
 * test_tensorboard's (10000 scalars): here they made the fuzzing twenty times slower.
 *
 * Checks: the file decodes, record by record with both CRCs, to exactly the events written:
 * file_version first, the session START at the start step when resumed, then every scalar
 * with its tag, step and value bit for bit. tsrnn_tb_encode_scalar() fills a buffer of
 * exactly the event's size, and refuses (0) one byte less without writing past it. */
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tfevents.h"
#include "tsrnn/tensorboard.h"

#define MAX_SCALARS 1024

struct scalar {
    char tag[64];
    float value;
    int64_t step;
    bool flush;
};

static struct scalar scalars[MAX_SCALARS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

static uint64_t load_le(const uint8_t *p, size_t nbytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < nbytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The encoder against buffers of exactly its size and one byte less. */
static void check_encode(const struct scalar *s)
{
    unsigned char big[256];
    double wall_time = (double)s->value;
    size_t nbytes = tsrnn_tb_encode_scalar(big, sizeof(big), wall_time, s->step, s->tag, s->value);
    FUZZ_CHECK(nbytes > 0, "tag '%s' does not fit in %zu bytes", s->tag, sizeof(big));
    unsigned char *exact = malloc(nbytes);
    FUZZ_CHECK(exact != NULL, "out of memory");
    FUZZ_CHECK(tsrnn_tb_encode_scalar(exact, nbytes, wall_time, s->step, s->tag, s->value) ==
                       nbytes &&
                   memcmp(exact, big, nbytes) == 0,
               "an exact buffer gets another encoding");
    FUZZ_CHECK(tsrnn_tb_encode_scalar(exact, nbytes - 1, wall_time, s->step, s->tag, s->value) == 0,
               "an event of %zu bytes fits in %zu", nbytes, nbytes - 1);
    free(exact);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool resumed = data[0] & 1;
    size_t pos = 1;
    int64_t start_step = 0;
    if (resumed && size - pos >= 8) {
        start_step = (int64_t)load_le(data + pos, 8);
        pos += 8;
    }
    size_t count = 0;
    while (count < MAX_SCALARS && pos < size) {
        struct scalar *s = &scalars[count];
        size_t tag_nbytes = data[pos] & 63;
        s->flush = data[pos] & 64;
        pos++;
        if (size - pos < tag_nbytes + 12)
            break;
        memcpy(s->tag, data + pos, tag_nbytes);
        s->tag[tag_nbytes] = '\0';
        pos += tag_nbytes;
        uint32_t bits = (uint32_t)load_le(data + pos, 4);
        memcpy(&s->value, &bits, sizeof(bits));
        s->step = (int64_t)load_le(data + pos + 4, 8);
        pos += 12;
        check_encode(s);
        count++;
    }

    struct tsrnn_tb_writer w;
    FUZZ_CHECK(tsrnn_tb_open(&w, fuzz_dir(), start_step, resumed) == TSRNN_OK, "open: %s",
               tsrnn_last_error());
    char *path = strdup(w.path);
    FUZZ_CHECK(path != NULL, "out of memory");
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(tsrnn_tb_scalar(&w, scalars[i].tag, scalars[i].value, scalars[i].step) ==
                       TSRNN_OK,
                   "scalar: %s", tsrnn_last_error());
        if (scalars[i].flush)
            FUZZ_CHECK(tsrnn_tb_flush(&w) == TSRNN_OK, "flush: %s", tsrnn_last_error());
    }
    FUZZ_CHECK(tsrnn_tb_close(&w) == TSRNN_OK, "close: %s", tsrnn_last_error());

    struct tfev_event *events;
    size_t event_count;
    char err[256];
    FUZZ_CHECK(tfev_read(path, &events, &event_count, err, sizeof(err)) == 0,
               "the decoder refuses the file: %s", err);
    size_t first = resumed ? 2 : 1;
    FUZZ_CHECK(event_count == first + count, "%zu events, %zu written", event_count, first + count);
    FUZZ_CHECK(strcmp(events[0].file_version, "brain.Event:2") == 0 && events[0].value_count == 0 &&
                   events[0].session_status == -1,
               "the first event is not file_version");
    if (resumed)
        FUZZ_CHECK(events[1].session_status == 1 && events[1].step == start_step &&
                       events[1].value_count == 0,
                   "no session START at step %lld", (long long)start_step);
    for (size_t e = first; e < event_count; e++) {
        const struct tfev_event *ev = &events[e];
        const struct scalar *s = &scalars[e - first];
        FUZZ_CHECK(ev->value_count == 1 && ev->session_status == -1 && ev->file_version[0] == '\0',
                   "event %zu is not one scalar", e);
        FUZZ_CHECK(strcmp(ev->values[0].tag, s->tag) == 0, "event %zu: tag '%s', written '%s'", e,
                   ev->values[0].tag, s->tag);
        FUZZ_CHECK(ev->step == s->step, "event %zu: step %lld, written %lld", e,
                   (long long)ev->step, (long long)s->step);
        FUZZ_CHECK(memcmp(&ev->values[0].value, &s->value, sizeof(float)) == 0,
                   "event %zu: another value", e);
        FUZZ_CHECK(ev->wall_time > 0, "event %zu: wall time %g", e, ev->wall_time);
    }
    tfev_free(events);
    unlink(path);
    free(path);
    return 0;
}
