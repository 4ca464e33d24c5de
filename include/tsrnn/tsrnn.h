/* libtsrnn's C API: train Darts' RNNModel (RNN, LSTM, GRU with a linear head) on series a
 * program holds in memory or names in an INI file, forecast with it, backtest it, and read and
 * write its checkpoints. What tsrnn-worker and tsrnn-predict do, as calls; docs/api.md is the
 * guide, with an example.
 *
 * The contract:
 * - Three opaque handles: a run (a configuration, and after a fit or a checkpoint a model), a
 *   series set (the series a fit or a forecast reads) and a prediction (what a forecast or a
 *   backtest gives). No structure of the library is exposed; what a handle holds is read
 *   through functions.
 * - Every function that can fail returns an enum tsrnn_status; the message of the last call
 *   that failed on a handle (what, which value, what is accepted) is tsrnn_run_error(),
 *   tsrnn_series_set_error() or tsrnn_prediction_error() of that handle. A call that succeeds
 *   clears it. Nothing in the library prints an error, exits, aborts or installs a signal
 *   handler; warnings about settings without effect go to standard error.
 * - A handle is used by one thread at a time; different handles may be used by different
 *   threads at once: two runs train side by side in one process. tsrnn_run_cancel() is the
 *   exception: any thread or a signal handler may call it while the run trains.
 * - Strings are UTF-8 and copied; arrays of numbers given to a series set are NOT copied: they
 *   must stay valid and unchanged until the set is destroyed (zero-copy).
 * - Sizes are counts (`_count`, `length`), never bytes unless named `_nbytes`.
 *
 * Stable: the functions and enum values below keep their meaning within TSRNN_API_VERSION;
 * new functions and new configuration keys may be added. The configuration keys are the
 * INI file's (docs/configuration.md), set by section and key.
 */
#ifndef TSRNN_TSRNN_H
#define TSRNN_TSRNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* This header's API version: 1. */
#define TSRNN_API_VERSION 1

struct tsrnn_run;
struct tsrnn_series_set;
struct tsrnn_prediction;

/* enum tsrnn_status (TSRNN_OK, TSRNN_ERR_USAGE, ...), tsrnn_version(), tsrnn_status_name()
 * and tsrnn_status_exit_code(): tsrnn/status.h, installed beside this header. */

/* The API version the library implements (TSRNN_API_VERSION). */
int tsrnn_api_version(void);

/* --- series sets ------------------------------------------------------------------------
 * The series a fit trains on (one set) and validates on (another), or a forecast starts
 * from: Darts' TimeSeries, or a list of them. Each series has a time index (dates or
 * integers), values (L, C) and, for a model with future covariates, covariates aligned with
 * it by time stamp. */

enum tsrnn_status tsrnn_series_set_create(struct tsrnn_series_set **set);
void tsrnn_series_set_destroy(struct tsrnn_series_set *set); /* accepts NULL */
const char *tsrnn_series_set_error(const struct tsrnn_series_set *set);

/* Adds a series; *index (when not NULL) gets its position in the set.
 *   id         its name among several ("" or NULL: the one unnamed series of a set of one;
 *              in a set of several every series needs a distinct id)
 *   time_name  the name of its time index ("Month"; "" or NULL: "time")
 *   times      (length) strictly increasing: seconds since 1970-01-01 00:00 without a time
 *              zone when `dates`, else the values of an integer index
 *   freq       pandas' name of the frequency ("MS", "D", "h", "W-SUN"; an integer index's
 *              step, "1"); NULL or "": inferred from the stamps (3 at least, pandas'
 *              infer_freq), as Darts does for a series read without one
 *   values     (length, component_count) row-major float32: row t, component c at
 *              values[t * component_count + c]. Not copied.
 *   component_names  (component_count) the columns' names, distinct
 * TSRNN_ERR_DATA for stamps that do not follow the frequency, values that are not finite;
 * TSRNN_ERR_USAGE for a bad argument. */
enum tsrnn_status tsrnn_series_set_add(struct tsrnn_series_set *set, const char *id,
                                       const char *time_name, const int64_t *times, bool dates,
                                       const char *freq, size_t length, const float *values,
                                       size_t component_count, const char *const *component_names,
                                       size_t *index);

/* Gives series `index` its future covariates: (length, covariate_count) row-major float32 at
 * the stamps `times` (the series' kind of index and frequency), which must cover the series'
 * own stamps (and, to forecast n steps, the n after its end). Not copied. */
enum tsrnn_status tsrnn_series_set_add_covariates(struct tsrnn_series_set *set, size_t index,
                                                  const int64_t *times, size_t length,
                                                  const float *values, size_t covariate_count,
                                                  const char *const *covariate_names);

/* Reads the CSV file `path` as `run`'s configuration reads its training data ([data] time_col,
 * value_cols, freq, the fill options; [covariates] columns) and adds it as series `id` (NULL
 * for the one series of an unnamed model). The set owns these values. */
enum tsrnn_status tsrnn_series_set_read_csv(struct tsrnn_series_set *set,
                                            const struct tsrnn_run *run, const char *path,
                                            const char *id);

size_t tsrnn_series_set_count(const struct tsrnn_series_set *set);

/* --- runs ------------------------------------------------------------------------------- */

/* A run with the configuration's defaults (docs/configuration.md: Darts' where Darts has
 * one; work_dir ./darts_logs, a timestamped model_name). */
enum tsrnn_status tsrnn_run_create(struct tsrnn_run **run);
void tsrnn_run_destroy(struct tsrnn_run *run); /* accepts NULL */
const char *tsrnn_run_error(const struct tsrnn_run *run);

/* Sets one configuration key from its text, as an INI line `key = value` in [section] would
 * (relative paths against the current folder). `origin` names the setting in messages
 * ("RNNModel(hidden_dim=20)"; NULL: "tsrnn_run_set"). */
enum tsrnn_status tsrnn_run_set(struct tsrnn_run *run, const char *section, const char *key,
                                const char *value, const char *origin);

/* `section.key=value`, as tsrnn-worker's --set reads it. */
enum tsrnn_status tsrnn_run_set_override(struct tsrnn_run *run, const char *setting);

/* Reads an INI file (relative paths against its folder), or INI text (named `label` in
 * messages, relative paths against the current folder), over the values set so far. */
enum tsrnn_status tsrnn_run_read_ini(struct tsrnn_run *run, const char *path);
enum tsrnn_status tsrnn_run_read_ini_text(struct tsrnn_run *run, const char *text,
                                          const char *label);

/* Checks the configuration as a whole for a fit on `series` (NULL: on the files of [data]
 * path), as tsrnn-worker does before it joins a world: the rules across keys
 * (docs/configuration.md) and, for the files, what the data's settings say of them (the files
 * exist, the frequency, the covariates' columns). Warnings about settings without effect go
 * to standard error here, once. A fit checks an unchecked configuration itself; call this to
 * fail early (before joining a world or printing the configuration). Setting a key or
 * reading an INI again undoes it. */
enum tsrnn_status tsrnn_run_check(struct tsrnn_run *run, const struct tsrnn_series_set *series);

/* The program the run's report names in its first line ("tsrnn-worker 0.1.0: train.ini,
 * model ..."): `program` (NULL: "libtsrnn"); the configuration is named by the last INI file
 * read (else "the run's configuration"). */
void tsrnn_run_set_program(struct tsrnn_run *run, const char *program);

/* The text of one key's value as config.ini writes it, snprintf-like into out: returns the
 * length of the whole text, or 0 with the run's error set for an unknown key. */
size_t tsrnn_run_get(struct tsrnn_run *run, const char *section, const char *key, char *out,
                     size_t capacity);

/* The whole resolved configuration as an INI text that reads back to the same values (what
 * config.ini and --print-config hold), snprintf-like; 0 with the run's error on failure. */
size_t tsrnn_run_config_text(struct tsrnn_run *run, char *out, size_t capacity);

/* Where the run's report goes (the banner, the dataset summary, the progress bar, the
 * summary after the fit): `write` gets each piece of text as it is produced (NULL: standard
 * output). `mode` is the progress bar's: "auto" (a bar redrawn in place on a terminal, else
 * one line per epoch), "bar", "plain" or "none"; `quiet` prints the final summary only. */
enum tsrnn_status tsrnn_run_set_output(struct tsrnn_run *run,
                                       void (*write)(void *ctx, const char *text, size_t nbytes),
                                       void *ctx, const char *mode, bool quiet);

/* Called during a fit on the fitting thread: after every optimizer step (`val_loss` NaN) and
 * after each epoch's validation (`batch` = `batch_count`, `val_loss` the epoch's; NaN
 * without validation). `epoch` counts from 0, `batch` is the number of the epoch's batches
 * done. Returning non-zero cancels the run as tsrnn_run_cancel() does. NULL: none. */
enum tsrnn_status tsrnn_run_set_progress(struct tsrnn_run *run,
                                         int (*progress)(void *ctx, int64_t epoch, int64_t batch,
                                                         int64_t batch_count, double train_loss,
                                                         double val_loss),
                                         void *ctx);

/* Asks a fit to stop at the next step boundary (the step queued next carries the request to
 * every rank and is the last one): it returns TSRNN_ERR_INTERRUPTED,
 * with the steps done in metrics.csv and, with save_checkpoints, a last checkpoint to resume
 * from. Async-signal-safe; any thread. A later fit clears the request when it starts. */
void tsrnn_run_cancel(struct tsrnn_run *run);

/* --- the data-parallel world (programs started as ranks) -------------------------------- */

/* Finds out which rank of which world this process is, as tsrnn-worker does (tsrnn-launch's
 * TSRNN_* variables, mpirun's or srun's, or none: alone), chooses the device and joins the
 * other ranks within [trainer] timeout_s. Call it after the configuration is complete and
 * before the fit; without it a run trains alone. Ranks above 0 then write no files. Within
 * one process, one run at a time may be in a world. */
enum tsrnn_status tsrnn_run_join_world(struct tsrnn_run *run);
int tsrnn_run_rank(const struct tsrnn_run *run);       /* 0 alone */
int tsrnn_run_world_size(const struct tsrnn_run *run); /* 1 alone */

/* After a failed call in a world: ends the job without waiting for the other ranks, which
 * learn of it as a failed peer (under mpirun or srun the whole job ends with `exit_code`, and
 * this does not return). Call it after printing the error. */
void tsrnn_run_abort_world(struct tsrnn_run *run, int exit_code);

/* --- fit -------------------------------------------------------------------------------- */

/* Darts' fit(series, val_series=val): trains the configured model on `series` (NULL: the
 * files [data] path names, split as [data] says) validated on `val` (NULL: none; else one
 * series per training series, in the same order, each continuing its training series: its
 * first stamp the step after the training series' last, as split_after gives them), and
 * writes the run folder {work_dir}/{model_name} as tsrnn-worker does. The series are used
 * as given: [data] scaler applies to them ("none" for series a program scaled itself).
 * Covariates in `series` (and in `val`) are the model's future covariates.
 *
 * After it the run holds the trained model for tsrnn_run_predict() and tsrnn_run_backtest():
 * the last checkpoint the fit wrote, which needs [output] save_checkpoints = true (without
 * it the fit trains and writes its files, and predicting refuses: docs/api.md).
 * Errors: TSRNN_ERR_USAGE (configuration), TSRNN_ERR_DATA (series), TSRNN_ERR_NUMERIC (the
 * loss diverged), TSRNN_ERR_INTERRUPTED (cancelled), TSRNN_ERR_COMM (a rank failed),
 * TSRNN_ERR_IO, TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_run_fit(struct tsrnn_run *run, const struct tsrnn_series_set *series,
                                const struct tsrnn_series_set *val);

/* A number the last fit produced, by name: "epochs", "steps", "first_step_loss",
 * "last_step_loss", "epoch_mean_loss", "val_loss", "best_val_loss", "best_epoch", "mape",
 * "mae", "rmse" (of the forecast over the validation part), "train_s", "val_s", "total_s",
 * "param_count", "stopped_early" (1 or 0). NaN for a name it does not know or a value the fit
 * did not compute. */
double tsrnn_run_result(const struct tsrnn_run *run, const char *name);

/* A path, by name: "run_dir", "best_checkpoint", "last_checkpoint" (of the last fit) or
 * "checkpoint" (the model's: the checkpoint tsrnn_run_load_checkpoint() read or the fit's
 * last), snprintf-like into out; "" when there is none. */
size_t tsrnn_run_path(const struct tsrnn_run *run, const char *name, char *out, size_t capacity);

/* --- checkpoints ------------------------------------------------------------------------ */

/* Loads a model: `which` is "best" or "last" of the run folder `run_dir` (the folder
 * {work_dir}/{model_name}), or a checkpoint file (run_dir may be NULL), as Darts'
 * load_from_checkpoint(model_name, best=True) and tsrnn-predict --checkpoint. The run's
 * configuration becomes the checkpoint's; a run folder being trained is waited for by
 * nobody: TSRNN_ERR_USAGE. With "best" and no best checkpoint (a run without validation),
 * the last. */
enum tsrnn_status tsrnn_run_load_checkpoint(struct tsrnn_run *run, const char *run_dir,
                                            const char *which);

/* Writes the run's model (weights, optimizer state, configuration, scalers) to `path`, a
 * checkpoint that tsrnn_run_load_checkpoint() and tsrnn-predict read: Darts' save(path). */
enum tsrnn_status tsrnn_run_save_checkpoint(struct tsrnn_run *run, const char *path);

/* --- forecasts and backtests ------------------------------------------------------------ */

/* Darts' predict(n, series=...): forecasts n steps after the end of each series of `series`,
 * or, with NULL, after the training part of each series the model was trained on (the fit's
 * series, or those a loaded checkpoint's [data] path holds) scored against the values that
 * follow it. A model with a likelihood draws [forecast] num_samples paths as Darts'
 * predict(num_samples) does (the k-th call after a fit draws as Darts' k-th does; see
 * tsrnn_run_set_predict_seed()). A series of a set must be one the model knows by its id
 * (its scaler is that series'), or, for a model of one series, unnamed. */
enum tsrnn_status tsrnn_run_predict(struct tsrnn_run *run, size_t n,
                                    const struct tsrnn_series_set *series,
                                    struct tsrnn_prediction **prediction);

/* Darts' historical_forecasts(series, start, forecast_horizon, stride, retrain=False,
 * last_points_only) and backtest(): forecasts of `horizon` steps from every `stride`-th
 * point of each series from `start` on (NULL: after each series' training part; else a
 * stamp "1959-02", a position or integer index value "100", or a fraction "0.75"), all
 * inside the series. */
enum tsrnn_status tsrnn_run_backtest(struct tsrnn_run *run, const struct tsrnn_series_set *series,
                                     const char *start, size_t horizon, size_t stride,
                                     bool last_points_only, struct tsrnn_prediction **prediction);

/* Darts' predict(random_state=R): the next forecasts of a model with a likelihood draw from
 * R; -1 (the default) draws as the calls after fit() do. */
void tsrnn_run_set_predict_seed(struct tsrnn_run *run, int64_t random_state);

void tsrnn_prediction_destroy(struct tsrnn_prediction *prediction); /* accepts NULL */
const char *tsrnn_prediction_error(const struct tsrnn_prediction *prediction);

/* The forecasts a prediction holds: one per series for tsrnn_run_predict(), each series'
 * backtest forecasts in order for tsrnn_run_backtest(). */
size_t tsrnn_prediction_count(const struct tsrnn_prediction *prediction);
size_t tsrnn_prediction_series_count(const struct tsrnn_prediction *prediction);
size_t tsrnn_prediction_component_count(const struct tsrnn_prediction *prediction);
/* Sample paths per forecast: 1 for a point forecast. */
size_t tsrnn_prediction_sample_count(const struct tsrnn_prediction *prediction);
/* The series forecast i belongs to (its index in the set, or in the model's series). */
size_t tsrnn_prediction_series_index(const struct tsrnn_prediction *prediction, size_t i);
/* The id of series s ("" unnamed). */
const char *tsrnn_prediction_series_id(const struct tsrnn_prediction *prediction, size_t s);
/* Forecast i: its steps, their stamps (seconds or integer index values, as the series'),
 * its values (length, C) (the samples' median with several paths) and its sample paths
 * (sample_count, length, C), NULL for a point forecast. Owned by the prediction. */
size_t tsrnn_prediction_length(const struct tsrnn_prediction *prediction, size_t i);
const int64_t *tsrnn_prediction_times(const struct tsrnn_prediction *prediction, size_t i);
const float *tsrnn_prediction_values(const struct tsrnn_prediction *prediction, size_t i);
const float *tsrnn_prediction_samples(const struct tsrnn_prediction *prediction, size_t i);
/* Darts' mape, mae and rmse of forecast i against the series' values where it has them (each
 * component scored, then the components averaged): false, and NaN, when it has none. */
bool tsrnn_prediction_scores(const struct tsrnn_prediction *prediction, size_t i, double *mape,
                             double *mae, double *rmse);
/* A backtest's value for series s, as Darts' backtest(reduction=np.mean) of mape, mae and
 * rmse gives it; false for a forecast. */
bool tsrnn_prediction_backtest_scores(const struct tsrnn_prediction *prediction, size_t s,
                                      double *mape, double *mae, double *rmse);

/* Writes the forecasts as CSV to `path` (replaced atomically; NULL: standard output):
 * TimeSeries.to_csv()'s layout, an id column first for named series; sample quantiles for a
 * model with a likelihood (tsrnn-predict's file); a backtest's as tsrnn-predict --backtest's
 * backtest.csv. */
enum tsrnn_status tsrnn_prediction_write_csv(struct tsrnn_prediction *prediction, const char *path);

/* A backtest's scores as tsrnn-predict --backtest's backtest_errors.csv: each forecast's
 * mape, mae and rmse, then each series' backtest value (and their mean over several). */
enum tsrnn_status tsrnn_prediction_write_scores_csv(struct tsrnn_prediction *prediction,
                                                    const char *path);

/* Draws series s's history, actual values and forecasts into a PNG (width x height pixels)
 * at `path`, titled `title`; TSRNN_ERR_USAGE where this build or machine cannot draw. */
enum tsrnn_status tsrnn_prediction_plot(struct tsrnn_prediction *prediction, size_t s,
                                        const char *title, int width, int height, const char *path);

#ifdef __cplusplus
}
#endif

#endif
