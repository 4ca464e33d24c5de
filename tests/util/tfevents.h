/* A strict decoder of TensorBoard event files for tests, independent of the writer in
 * src/report/tensorboard.c: its own bitwise CRC-32C, libc only.
 *
 * Follows shared reference/ecosystem-formats.md §1.2-1.3. Every record's length CRC and data
 * CRC is checked; a trailing partial record, a truncated or overlong field, a wire type that is
 * not 0, 1, 2 or 5, or a known field with the wrong wire type is an error. Fields it does not
 * know are skipped, as protobuf readers do.
 */
#ifndef TSRNN_TFEVENTS_H
#define TSRNN_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#define TFEV_MAX_VALUES 4

struct tfev_event {
    double wall_time;
    int64_t step;
    char file_version[32]; /* "" when absent */
    int session_status;    /* SessionLog.status; -1 when the event has no session_log */
    size_t value_count;
    struct {
        char tag[64];
        float value; /* simple_value */
    } values[TFEV_MAX_VALUES];
};

/* The bitwise CRC-32C of `nbytes` bytes (init and final xor 0xFFFFFFFF), and TFRecord's mask. */
uint32_t tfev_crc32c(const void *data, size_t nbytes);
uint32_t tfev_mask(uint32_t crc);

/* Decodes the records in `data`. On success returns 0 with a malloc'd array in *events (free
 * with tfev_free()); otherwise -1 with a message naming the byte offset in `err`. */
int tfev_parse(const void *data, size_t nbytes, struct tfev_event **events, size_t *count,
               char *err, size_t errcap);

/* tfev_parse() on the whole file at `path`. */
int tfev_read(const char *path, struct tfev_event **events, size_t *count, char *err,
              size_t errcap);

void tfev_free(struct tfev_event *events);

#endif
