/* TensorBoard event files, written by rank 0 (shared reference/ecosystem-formats.md §1).
 *
 * One file per run of the trainer, `<log_dir>/events.out.tfevents.<%010d seconds>.<host>.
 * <pid>.<n>` (TensorBoard's own naming; n makes the name unique). Each record is TFRecord
 * framing (u64 length, masked CRC-32C of the length, a serialized tensorboard.Event, masked
 * CRC-32C of it); the first event is file_version "brain.Event:2", then scalar summaries
 * (Summary.Value.simple_value), which TensorBoard's scalars dashboard shows by tag.
 *
 * Scalars are buffered in memory and reach the file in whole records at tsrnn_tb_flush()
 * (the trainer flushes at every epoch end) or when the buffer fills: a crash can lose the
 * unflushed tail but never leaves a torn record that TensorBoard would report.
 */
#ifndef TSRNN_TENSORBOARD_H
#define TSRNN_TENSORBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"

/* A zeroed writer is a closed one: tsrnn_tb_is_open() says whether it has a file. */
struct tsrnn_tb_writer {
    int fd;             /* the event file's descriptor while open */
    char *path;         /* the event file (owned); NULL exactly when closed */
    unsigned char *buf; /* encoded records not yet written */
    size_t len, cap;
};

/* Creates a new event file in the existing folder `log_dir` and writes the file_version
 * event. When `resumed`, also writes Event{step = start_step, session_log{status = START}},
 * so TensorBoard drops the events of an earlier run at steps >= start_step (the steps the
 * resumed run does again). Errors: TSRNN_ERR_IO naming the path and strerror;
 * TSRNN_ERR_NOMEM. On error `w` needs no close. */
enum tsrnn_status tsrnn_tb_open(struct tsrnn_tb_writer *w, const char *log_dir, int64_t start_step,
                                bool resumed);

/* Whether `w` has an event file (tsrnn_tb_open() succeeded and no close since): whether the
 * run logs to TensorBoard. */
bool tsrnn_tb_is_open(const struct tsrnn_tb_writer *w);

/* Adds one scalar (tag, value) at `step`, stamped with the current wall time
 * (CLOCK_REALTIME). Allocates nothing once the buffer has grown. Errors: tsrnn_tb_flush()'s,
 * when the buffer is written out to make room; TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_tb_scalar(struct tsrnn_tb_writer *w, const char *tag, float value,
                                  int64_t step);

/* Writes the buffered records to the file (no fsync), retrying short writes and EINTR.
 * TSRNN_ERR_IO naming the path and strerror; what was not written stays buffered.
 * TSRNN_ERR_USAGE on a writer without a file. */
enum tsrnn_status tsrnn_tb_flush(struct tsrnn_tb_writer *w);

/* Flushes, closes and frees; accepts a closed or zeroed writer. Returns the flush's or
 * close's error, if any. */
enum tsrnn_status tsrnn_tb_close(struct tsrnn_tb_writer *w);

/* --- encoding, exposed for tests ----------------------------------------------------- */

/* Appends one framed record holding `payload` to the writer's buffer, first writing the
 * buffer out if the record would take it past 64 KiB and the writer has a file. Works on a
 * writer without a file (zeroed), whose buffer then holds the framed bytes. */
enum tsrnn_status tsrnn_tb_append_record(struct tsrnn_tb_writer *w, const void *payload,
                                         size_t nbytes);

/* Encodes Event{wall_time, step, summary{value{tag, simple_value}}} into `out` (capacity
 * bytes); returns its length, or 0 if it does not fit. step 0 is omitted (proto3). */
size_t tsrnn_tb_encode_scalar(unsigned char *out, size_t capacity, double wall_time, int64_t step,
                              const char *tag, float value);

/* Encodes Event{wall_time, file_version = "brain.Event:2"}; as above. */
size_t tsrnn_tb_encode_file_version(unsigned char *out, size_t capacity, double wall_time);

#endif
