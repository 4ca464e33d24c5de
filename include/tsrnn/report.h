/* tsrnn report: what a run prints for a person: the dataset summary, Lightning's startup lines
 * and model summary, and the training progress bar.
 *
 * Reference: PyTorch Lightning 2.4/2.5 and tqdm 4.x console output (shared
 * reference/ecosystem-formats.md §6, §7). Every function writes to the FILE* its caller
 * gives (Lightning sends the startup lines and summary to stderr, the bar to stdout) and
 * never fails the run: a write error on a console is not a training error. */
#ifndef TSRNN_REPORT_H
#define TSRNN_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"

/* Prints the dataset summary: points and range, split, scaler, window and batch counts of
 * `sampler` (this rank's view). */
void tsrnn_report_dataset(FILE *out, const struct tsrnn_config *cfg, const struct tsrnn_dataset *ds,
                          const struct tsrnn_sampler *sampler);

/* --- numbers as Lightning and tqdm print them ------------------------------------------ */

/* The functions below write a NUL-terminated string into dst (truncated to dst_nbytes - 1
 * bytes) and return the length of the whole string, like snprintf. */

/* Python's str(float): the shortest text that reads back as `value` ("0.5", "1e-05",
 * "12345.6", "1e+16", "0.0", "-0.0", "inf", "nan"). */
size_t tsrnn_report_format_pyfloat(char *dst, size_t dst_nbytes, double value);

/* A metric value in the progress bar, as Lightning's Tqdm.format_num over tqdm 4.70's
 * format_num: '{:.3g}' with "e+0"/"e-0" squeezed to "e+"/"e-", unless str(value) is no
 * longer; then, without an exponent, a '.' and zeros up to 5 characters:
 * 0.0023312 -> "0.00233", 0.021 -> "0.021", 0.5 -> "0.500", 2.0 -> "2.000",
 * 1.23e-05 -> "1.23e-5", 1000.0 -> "1e+3", 12345.6 -> "12345.6" (a tie: str() wins). */
size_t tsrnn_report_format_metric(char *dst, size_t dst_nbytes, double value);

/* tqdm's format_interval: whole seconds as "MM:SS", or "H:MM:SS" from one hour on. */
size_t tsrnn_report_format_interval(char *dst, size_t dst_nbytes, double seconds);

/* Lightning's get_human_readable_count: "0  ", "460  " below 1000 (the unit is a blank),
 * then "1.9 K", "132 K", "2.0 M", ... up to "1,234 T". */
size_t tsrnn_report_format_count(char *dst, size_t dst_nbytes, int64_t count);

/* --- startup lines and model summary (Lightning's rank-zero log lines) ------------------ */

/* "GPU available: False, used: False" (or "True (cuda)") and
 * "TPU available: False, using: 0 TPU cores" (True and the count when tpu_cores > 0). */
void tsrnn_report_devices(FILE *out, bool gpu_available, bool gpu_used, size_t tpu_cores);

/* "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]": the GPUs this process was shown (the
 * environment's list, or every GPU the driver lists when it is unset). */
void tsrnn_report_cuda_devices(FILE *out, int local_rank);

/* One row of the model summary: a child module of Darts' PL module. */
struct tsrnn_report_layer {
    const char *name;      /* "rnn" */
    const char *type_name; /* "LSTM" */
    int64_t param_count;
    bool training; /* Mode column: "train", else "eval" */
};

/* Lightning's model summary table (_format_summary_table, 2.4/2.5 layout: index, Name, Type,
 * Params, Mode; no FLOPs) with its footer. Every parameter counts as trainable and float32
 * (4 bytes) for the size line. */
void tsrnn_report_layer_table(FILE *out, const struct tsrnn_report_layer *layers,
                              size_t layer_count);

/* The summary of Darts' RNN module: rows `criterion | MSELoss | 0`, `rnn | <rnn_type_name>`
 * ("RNN", "LSTM", "GRU") and `V | Linear`, all in train mode. The seed configuration (RNN,
 * hidden_dim 20) gives 460 + 21 = 481 parameters. */
void tsrnn_report_model_summary(FILE *out, const char *rnn_type_name, int64_t rnn_param_count,
                                int64_t head_param_count);

/* Lightning's last line of a fit that reached its limit ("max_epochs" or "max_steps"):
 * "`Trainer.fit` stopped: `max_epochs=300` reached." */
void tsrnn_report_fit_stopped(FILE *out, const char *limit, int64_t value);

/* --- progress bar (Lightning's TQDMProgressBar training bar) ---------------------------- */

enum tsrnn_progress_mode {
    TSRNN_PROGRESS_AUTO,  /* BAR when `out` is a terminal and TERM is not "dumb", else PLAIN */
    TSRNN_PROGRESS_BAR,   /* one line redrawn in place (\r ... ESC[K), at most 10 times a second */
    TSRNN_PROGRESS_PLAIN, /* one finished line per epoch, no control characters: logs, pipes */
    TSRNN_PROGRESS_NONE,  /* nothing (ranks other than 0, --progress=none) */
};

#define TSRNN_PROGRESS_METRIC_MAX 8
#define TSRNN_PROGRESS_NAME_MAX   32
/* Minimum seconds between two redraws in BAR mode. */
#define TSRNN_PROGRESS_REDRAW_S 0.1
/* A buffer this large holds any line the bar draws (the bar is capped to fit). */
#define TSRNN_PROGRESS_LINE_MAX 4096

struct tsrnn_progress_metric {
    char name[TSRNN_PROGRESS_NAME_MAX];
    double value;
};

struct tsrnn_progress;

/* Who else follows a bar: `notify` is called after every tsrnn_progress_update() and
 * tsrnn_progress_end_epoch() (`epoch_end` true) with the bar's state, whatever its mode
 * (NONE and a NULL `out` included): what the C API's progress callback reports
 * (src/api/). */
struct tsrnn_progress_observer {
    void (*notify)(void *ctx, const struct tsrnn_progress *p, bool epoch_end);
    void *ctx;
};

/* Caller-owned state of one training bar: tsrnn_progress_init(), then per epoch begin /
 * set_metric / update / end, then tsrnn_progress_finish(). It holds no resources. Times are
 * the caller's monotonic seconds (tsrnn_clock_now_s()), so the output depends only on the
 * arguments. */
struct tsrnn_progress {
    /* tsrnn_progress_observe()'s observer on the thread that initialised the bar; NULL */
    const struct tsrnn_progress_observer *observer;
    FILE *out;
    enum tsrnn_progress_mode mode; /* resolved: BAR, PLAIN or NONE */
    bool fit_terminal;             /* BAR: size the line to the terminal at each draw */
    int ncols;                     /* line width; 0 = unknown: a 10-cell bar, no trimming */
    int64_t epoch;
    size_t total; /* batches in this epoch */
    size_t n;     /* batches done */
    double epoch_start_s;
    double last_now_s;  /* time of the latest call: what a pending line shows */
    double last_draw_s; /* BAR: when the line was last drawn */
    bool drawn;         /* BAR: the current terminal line holds the bar */
    bool pending;       /* BAR: the state changed since the last draw */
    size_t metric_count;
    struct tsrnn_progress_metric metrics[TSRNN_PROGRESS_METRIC_MAX]; /* postfix, in order */
};

/* What AUTO means for `out`; other modes are returned unchanged. */
enum tsrnn_progress_mode tsrnn_progress_resolve_mode(enum tsrnn_progress_mode mode, FILE *out);

/* The terminal width of `out` (TIOCGWINSZ, else $COLUMNS - 1 as tqdm does), 0 if unknown. */
int tsrnn_progress_terminal_columns(FILE *out);

/* The text of one bar line (no \r, no newline), as tqdm's format_meter with Lightning's
 * BAR_FORMAT "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
 * "{rate_noinv_fmt}{postfix}]", desc "Epoch <n>" and a postfix ", name=value" per metric:
 *   Epoch 299: 100%|██████████| 7/7 [00:00<00:00, 9123.45it/s, train_loss=0.00233, val_loss=0.021]
 * The bar has 10 cells when ncols is 0; otherwise it fills the line to ncols columns and the
 * line is cut to ncols. With total 0 or n > total tqdm drops the percentage and blanks the
 * bar ("Epoch 0: |          | 9/? [00:01<00:00,  8.00it/s]"). snprintf-like return; a
 * buffer of TSRNN_PROGRESS_LINE_MAX bytes always holds the line. */
size_t tsrnn_progress_format_line(char *dst, size_t dst_nbytes, const char *desc, size_t n,
                                  size_t total, double elapsed_s, int ncols,
                                  const struct tsrnn_progress_metric *metrics, size_t metric_count);

/* Bars initialised on this thread from now on report to `observer` too (NULL: to nobody);
 * returns the observer it replaces. It must outlive those bars. Per thread, so that runs on
 * two threads report apart: the C API sets it around tsrnn_train(), whose bar it does not
 * own, until train.h's options carry an observer of their own (docs/api.md). */
const struct tsrnn_progress_observer *
tsrnn_progress_observe(const struct tsrnn_progress_observer *observer);

/* The value of metric `name` ("train_loss", "val_loss"); NaN when the bar has none. */
double tsrnn_progress_metric(const struct tsrnn_progress *p, const char *name);

/* Starts a bar on `out` in `mode` (AUTO resolved here). */
void tsrnn_progress_init(struct tsrnn_progress *p, FILE *out, enum tsrnn_progress_mode mode);

/* Resets the bar for epoch `epoch` (0-based, shown as "Epoch <epoch>") of `total` batches;
 * the elapsed time counts from now_s. Metrics set earlier stay (val_loss of the last epoch). */
void tsrnn_progress_begin_epoch(struct tsrnn_progress *p, int64_t epoch, size_t total,
                                double now_s);

/* Sets metric `name` to `value`; a new name goes to the end of the postfix. Lightning's
 * order for Darts is train_loss (the last batch's loss), then val_loss (the last
 * validation's mean). Shown from the next draw. TSRNN_ERR_USAGE for a name of
 * TSRNN_PROGRESS_NAME_MAX bytes or more, or more than TSRNN_PROGRESS_METRIC_MAX names. */
enum tsrnn_status tsrnn_progress_set_metric(struct tsrnn_progress *p, const char *name,
                                            double value);

/* `n` batches of this epoch are done. BAR: redraws unless the last draw was less than
 * TSRNN_PROGRESS_REDRAW_S ago. */
void tsrnn_progress_update(struct tsrnn_progress *p, size_t n, double now_s);

/* The epoch (with its validation) is over; call after setting its metrics. PLAIN: prints
 * the epoch's line. BAR: redraws, throttled like tsrnn_progress_update(). */
void tsrnn_progress_end_epoch(struct tsrnn_progress *p, double now_s);

/* BAR: draws the latest state if a throttled draw is pending, then ends the line. Safe to
 * call more than once, and on a bar that never drew. */
void tsrnn_progress_finish(struct tsrnn_progress *p);

/* --- metrics.csv (Lightning's CSVLogger layout) ----------------------------------------- */

/* {run folder}/metrics.csv: header "epoch,step,train_loss,val_loss"; one row per optimizer
 * step with train_loss, one row per validation with val_loss (the other column empty);
 * step is the 0-based global step (a validation row carries the epoch's last step); values
 * with 9 significant digits (%.9g, a float32 round-trips). Rows are collected in memory and
 * written whole, so the file never ends in half a row, even after a kill. */
#define TSRNN_METRICS_BUFFER_NBYTES 65536

struct tsrnn_metrics_csv {
    int fd; /* -1 when closed */
    char path[4096];
    size_t used_nbytes;
    char buffer[TSRNN_METRICS_BUFFER_NBYTES];
};

/* Opens `dir`/metrics.csv for a run that starts at global step `keep_before_step`: 0 creates
 * (truncates) it with its header; a resumed run keeps the rows of the steps before that one
 * (rewriting the file atomically without the rest) and appends. TSRNN_ERR_IO on failure,
 * TSRNN_ERR_DATA when an existing file is not a metrics.csv. */
enum tsrnn_status tsrnn_metrics_csv_open(struct tsrnn_metrics_csv *m, const char *dir,
                                         int64_t keep_before_step);

/* Hands the buffered rows to the OS (done at every epoch end). */
enum tsrnn_status tsrnn_metrics_csv_flush(struct tsrnn_metrics_csv *m);

/* Appends a training-step row. */
enum tsrnn_status tsrnn_metrics_csv_step(struct tsrnn_metrics_csv *m, int64_t epoch, int64_t step,
                                         double train_loss);

/* Appends a validation row and hands every row so far to the OS, so a crash loses no
 * finished epoch. */
enum tsrnn_status tsrnn_metrics_csv_epoch(struct tsrnn_metrics_csv *m, int64_t epoch, int64_t step,
                                          double val_loss);

/* Writes what is left and closes the file, reporting a failed write; accepts a closed struct
 * (but not a zeroed one: open sets fd). */
enum tsrnn_status tsrnn_metrics_csv_close(struct tsrnn_metrics_csv *m);

#endif
