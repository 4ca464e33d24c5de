/* Training checkpoints: everything a run needs to continue exactly where it stopped, in one
 * safetensors file (include/tsrnn/safetensors.h) that PyTorch users can also load as it is.
 *
 * Tensors, F32, in this order:
 *     rnn.weight_ih_l0 ... V.weight, V.bias          the weights, PyTorch's state_dict names
 *     optim.exp_avg.<name>, optim.exp_avg_sq.<name>   Adam's moments of each weight
 *     optim.grad_avg.<name>                           centered RMSprop's grad_avg (only then)
 * so `model.load_state_dict(load_file(path), strict=False)` (or a filter on "optim.") gives
 * a Darts _RNNModule its weights.
 *
 * __metadata__ (strings only, as safetensors requires):
 *     format                  "pt"
 *     tsrnn.format_version    "2"; a reader refuses other versions than 1 and 2 (version 1
 *                             files lack tsrnn.metadata_crc32c)
 *     tsrnn.version           the tsrnn that wrote it
 *     tsrnn.epoch             the epoch this checkpoint ends (0-based, as Lightning counts)
 *     tsrnn.batches_done      batches of that epoch done (all of them unless max_steps cut it)
 *     tsrnn.global_step       optimizer steps done
 *     tsrnn.adam_step         Adam's step count (bias correction)
 *     tsrnn.rng_state         JSON: random_state, next_epoch, next_step. tsrnn's random
 *                             numbers are counter-based: the shuffle of epoch e is Darts' for
 *                             (random_state, e) and the dropout masks of step s come from
 *                             (random_state, s), so these three numbers are the whole state
 *     tsrnn.monitor           "val_loss" (or "train_loss" for a run without validation)
 *     tsrnn.monitor_value     its value at this epoch; tsrnn.best_value / tsrnn.best_epoch
 *                             the best so far (lowest)
 *     tsrnn.lr                the learning rate of the next step (a scheduler moves it)
 *     tsrnn.lr_scheduler      "last_epoch=N best=X num_bad_epochs=N cooldown_counter=N":
 *                             PyTorch's scheduler state (best: ReduceLROnPlateau's, inf first)
 *     tsrnn.early_stopping    "wait_count=N best_score=X": Lightning's EarlyStopping state
 *                             These three are absent from checkpoints written before them;
 *                             reading one without them restarts the controls from the config.
 *                             With optimizer_cls = SGD, optim.exp_avg.* hold PyTorch's
 *                             momentum_buffer and optim.exp_avg_sq.* zeros; with RMSprop,
 *                             the momentum_buffer (zeros without momentum) and square_avg;
 *                             with Adagrad, zeros and the sum.
 *     tsrnn.model             JSON: model, input_size, hidden_dim, n_rnn_layers, output_size,
 *                             dropout, input_chunk_length, training_length
 *     tsrnn.scaler            JSON: kind and per-component data_min, data_max, scale, offset
 *     tsrnn.series            JSON: time_col, time_unit, freq (pandas' name, or the step of
 *                             an integer index), components, train_length, train_end
 *     tsrnn.covariates        JSON, only for a model with future covariates: data_columns
 *                             (the data file's covariate columns, first), encoders
 *                             ("datetime_attribute:year", "one_hot:month", ... in Darts'
 *                             order), columns (K = input_size - output_size) and scaler (as
 *                             tsrnn.scaler, over the K columns): tsrnn-predict rebuilds the
 *                             covariates from the time index with them
 *     tsrnn.series_list       JSON {"series": [...]}, only in a run of named series (several
 *                             files, or a long-format file): per series, in the run's order,
 *                             id, time_unit, freq, length, train_length, train_end,
 *                             train_end_text and its scaler (as tsrnn.scaler); with covariates also
 *                             covariate_scaler (as tsrnn.covariates' scaler). tsrnn.scaler
 *                             and tsrnn.series then describe the first series. Optional, so
 *                             the format version stays 2: a checkpoint without it has the one
 *                             unnamed series of tsrnn.scaler and tsrnn.series
 *     tsrnn.config            the resolved config (INI text, as config.ini)
 *     tsrnn.data_crc32c       CRC-32C of the data buffer (8 hex digits)
 *     tsrnn.metadata_crc32c   CRC-32C of every other metadata entry (key NUL value NUL, keys
 *                             in byte order): a flipped bit anywhere is "damaged"
 * Doubles are written with 17 significant digits and floats with 9: both read back exactly.
 */
#ifndef TSRNN_CHECKPOINT_H
#define TSRNN_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/encoders.h"
#include "tsrnn/model.h"
#include "tsrnn/optim.h"
#include "tsrnn/safetensors.h"

#define TSRNN_CHECKPOINT_FORMAT_VERSION 2

/* Where training stands; what a checkpoint restores besides weights and moments. */
struct tsrnn_train_state {
    int64_t epoch;        /* the last epoch trained (0-based); -1 before the first */
    int64_t batches_done; /* batches of `epoch` done */
    bool epoch_complete;  /* every batch of `epoch` ran and it was validated */
    int64_t global_step;  /* optimizer steps done */
    uint32_t random_state;
    const char *monitor;  /* "val_loss" or "train_loss" */
    double monitor_value; /* at `epoch` */
    double best_value;    /* lowest monitor_value so far; NaN before the first epoch */
    int64_t best_epoch;   /* its epoch; -1 likewise */
    /* The training controls' state after this epoch (tsrnn.lr, tsrnn.lr_scheduler,
     * tsrnn.early_stopping); false in checkpoints written before them: the config's lr and
     * fresh scheduler and early-stopping state. */
    bool has_controls;
    double lr; /* the learning rate of the next step */
    int64_t sched_last_epoch, sched_num_bad_epochs, sched_cooldown_counter;
    double sched_best;
    int64_t es_wait_count;
    double es_best_score; /* a float32 value */
};

/* What a run's data looked like to the model: saved so that a checkpoint alone can forecast
 * (tsrnn-predict) in the original scale with the right time stamps and column names. */
struct tsrnn_series_info {
    char time_name[TSRNN_NAME_MAX];
    enum tsrnn_time_unit time_unit;
    struct tsrnn_freq freq; /* kind TSRNN_FREQ_NONE in checkpoints older than the field */
    size_t component_count;
    char component_names[TSRNN_MAX_COMPONENTS][TSRNN_NAME_MAX];
    size_t train_length;
    int64_t train_end; /* time of the last training point */
};

/* One series a checkpoint's model was trained on: what forecasting it needs. */
struct tsrnn_checkpoint_series {
    char id[TSRNN_NAME_MAX]; /* "" in a run of one series */
    struct tsrnn_scaler scaler;
    struct tsrnn_scaler cov_scaler; /* (K) its covariates' scaler; covariates.scaler when K = 0 */
    struct tsrnn_freq freq;         /* kind TSRNN_FREQ_NONE in checkpoints older than the field */
    enum tsrnn_time_unit time_unit;
    size_t train_length;
    int64_t train_end; /* time of its last training point */
};

/* Writes the checkpoint atomically (tsrnn_safetensors_write()): the weights and moments of
 * `model` and `adam`, `state`, the dataset's scaler and series description, and `cfg`.
 * `sync_folder` false leaves the folder unsynced (tsrnn_safetensors_write_unsynced()): for a
 * checkpoint that another file's commit or link in the same folder makes durable.
 * Errors: TSRNN_ERR_IO naming the path and strerror (the previous file at `path`, if any,
 * is untouched), TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_checkpoint_save(const char *path, const struct tsrnn_model *model,
                                        const struct tsrnn_adam *adam,
                                        const struct tsrnn_train_state *state,
                                        const struct tsrnn_config *cfg,
                                        const struct tsrnn_dataset *ds, bool sync_folder);

/* A host copy of what one checkpoint holds, taken at an epoch's end on the thread that owns
 * the device: the checkpoint can then be written by another thread while training goes on
 * (the model's table and dims, the config and the dataset do not change during a run). One
 * allocation: free() it. */
struct tsrnn_checkpoint_snapshot {
    struct tsrnn_train_state state;
    uint64_t adam_step; /* the step count of Adam's bias correction */
    double adam_lr;     /* tsrnn.lr when state.has_controls is false */
    size_t count;       /* P: the model's parameter count */
    size_t group_count; /* 3, or 4 with centered RMSprop's grad_avg */
    float host[];       /* (group_count, P) the weights, exp_avg, exp_avg_sq[, grad_avg] */
};

/* Downloads the weights and moments of `model` and `adam` with `state` into a new snapshot
 * (*out, NULL on error). Errors: the download's, TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_checkpoint_snapshot_take(struct tsrnn_checkpoint_snapshot **out,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_adam *adam,
                                                 const struct tsrnn_train_state *state);

/* tsrnn_checkpoint_save() from a snapshot of `model` (its parameter table and dims are read,
 * nothing on the device). Safe on any thread. */
enum tsrnn_status tsrnn_checkpoint_write(const char *path,
                                         const struct tsrnn_checkpoint_snapshot *snap,
                                         const struct tsrnn_model *model,
                                         const struct tsrnn_config *cfg,
                                         const struct tsrnn_dataset *ds, bool sync_folder);

/* A checkpoint read back: the file, its state and what its metadata describes. */
struct tsrnn_checkpoint {
    char path[PATH_MAX];
    struct tsrnn_safetensors file;
    struct tsrnn_train_state state;
    char monitor[16]; /* state.monitor points here */
    uint64_t adam_step;
    struct tsrnn_model_dims dims;
    int input_chunk_length, training_length;
    struct tsrnn_scaler scaler;
    struct tsrnn_covariates covariates; /* the model's future covariates; count 0: none */
    struct tsrnn_series_info series;
    size_t series_count;                         /* S: 1 without tsrnn.series_list */
    struct tsrnn_checkpoint_series *series_list; /* (S) owned; [0] is scaler and series */
    struct tsrnn_config config;                  /* parsed from tsrnn.config */
    struct tsrnn_likelihood likelihood;          /* its [model] likelihood (kind NONE: none) */
};

/* Reads and checks a checkpoint: a valid safetensors file (every rule of the reader), a tsrnn
 * checkpoint of this format version, a data buffer matching its CRC, metadata that parses,
 * and the weights and moments of the model it describes. Errors: TSRNN_ERR_DATA naming the
 * file and what is wrong; TSRNN_ERR_USAGE when it cannot be opened or read (a checkpoint is
 * named by the user, like a config file); TSRNN_ERR_NOMEM. On error `ck`
 * holds nothing to free. */
enum tsrnn_status tsrnn_checkpoint_read(struct tsrnn_checkpoint *ck, const char *path);

/* Frees what tsrnn_checkpoint_read() holds; accepts a zeroed struct. */
void tsrnn_checkpoint_finish(struct tsrnn_checkpoint *ck);

/* Copies the weights (and, when `adam` is not NULL, the moments and step count) into a model
 * built for the same dimensions. TSRNN_ERR_DATA when the checkpoint's model differs from
 * `model`'s (kind, sizes): the message names the file, both models and the [model] keys to
 * check. */
enum tsrnn_status tsrnn_checkpoint_restore(const struct tsrnn_checkpoint *ck,
                                           struct tsrnn_model *model, struct tsrnn_adam *adam);

/* The checkpoint's model for forecasts: built on `compute` for batches of `batch` windows (0:
 * 1) of input_chunk_length steps, its weights restored and its likelihood set. The caller
 * finishes the model, also on failure (tsrnn_model_finish()). */
enum tsrnn_status tsrnn_checkpoint_model_init(struct tsrnn_model *model,
                                              struct tsrnn_compute *compute,
                                              const struct tsrnn_checkpoint *ck, size_t batch);

/* --- the checkpoints of a run folder --------------------------------------------------- */

/* File names, as Darts' ModelCheckpoint names them (with .safetensors): "last-epoch=N" and
 * "best-epoch=N-<monitor>=X.XXXX". */
void tsrnn_checkpoint_name_last(char *out, size_t capacity, int64_t epoch);
void tsrnn_checkpoint_name_best(char *out, size_t capacity, int64_t epoch, const char *monitor,
                                double value);

/* The run folder a checkpoint file belongs to: the folder holding its checkpoints/ folder, or
 * the file's own folder when it lies elsewhere. */
void tsrnn_checkpoint_run_folder(const char *checkpoint, char *out, size_t capacity);

/* Whether the training data a checkpoint names ([data] path) may be read for it: only where
 * its run asked for that data, that is where `run_dir`'s own config.ini (written by the run)
 * names the same files, or where every file lies inside `run_dir` (links resolved). A file a
 * checkpoint alone names (/etc/shadow in a crafted one) is never opened: the caller says so
 * and asks for the series instead. Leaves no error set. */
bool tsrnn_checkpoint_data_trusted(const struct tsrnn_checkpoint *ck, const char *run_dir);

/* --- the series a checkpoint was trained on (src/checkpoint/training_data.c) ------------
 * What tsrnn-predict and the C API read to forecast from a checkpoint's own series. Each
 * message that ends in "pass the series to forecast from" is the caller's to complete with
 * how its user passes them (tsrnn-predict: " with --series CSV"). */

/* Whether series `s` (read for a forecast) fits the model: the frequency `freq` it learnt
 * (TSRNN_FREQ_NONE: not checked; another frequency's stamps would be wrong, and its steps
 * mean something else) and the checkpoint's value columns, by name. `where` names the series
 * in the message. TSRNN_ERR_DATA. */
enum tsrnn_status tsrnn_checkpoint_check_series(const struct tsrnn_checkpoint *ck,
                                                const struct tsrnn_series *s,
                                                const struct tsrnn_freq *freq, const char *where);

/* tsrnn_checkpoint_data_trusted(ck, run_dir), or TSRNN_ERR_USAGE saying why the files are not
 * read, with `reader` ("tsrnn-predict") as the one who reads them only then. */
enum tsrnn_status tsrnn_checkpoint_check_data(const struct tsrnn_checkpoint *ck,
                                              const char *run_dir, const char *reader);

/* Reads the checkpoint's training series (its config's [data] path, after
 * tsrnn_checkpoint_check_data()) into `dataset` as training read them, split as in training.
 * Of files that are not the CSV the model was trained on, nothing they hold is shown (a
 * message would echo a line of whatever file the checkpoint names). The caller finishes the
 * dataset, also on failure. */
enum tsrnn_status tsrnn_checkpoint_load_data(struct tsrnn_dataset *dataset,
                                             const struct tsrnn_checkpoint *ck);

/* The series of `dataset` (tsrnn_checkpoint_load_data()'s) that the checkpoint's series k was
 * trained on, by id, into *item, checked with tsrnn_checkpoint_check_series(); a warning where
 * its training part's length changed. TSRNN_ERR_DATA with *item NULL where the data no longer
 * holds it (else *item is the series, also when the check fails). */
enum tsrnn_status tsrnn_checkpoint_data_series(const struct tsrnn_dataset_series **item,
                                               const struct tsrnn_checkpoint *ck,
                                               const struct tsrnn_dataset *dataset, size_t k);

/* The checkpoint `which` names: for "last" the newest last-epoch=N file in `checkpoint_dir`
 * (the highest epoch); for "best" the newest best-epoch=N file, unless the newest last
 * checkpoint is newer and itself the best by its metadata (tsrnn.best_epoch = tsrnn.epoch:
 * what a run killed between writing last-epoch=N and linking best-epoch=N to it leaves);
 * else `which` itself, a path. TSRNN_ERR_USAGE when the folder holds none of that kind (the
 * message says what was looked for and where). */
enum tsrnn_status tsrnn_checkpoint_locate(char *out, size_t capacity, const char *checkpoint_dir,
                                          const char *which);

/* Reads the checkpoint `which` names into `ck` (tsrnn_checkpoint_read(); ck->path is the file
 * read): "best" or "last" of the run folder `run_dir` (tsrnn_checkpoint_locate() in its
 * checkpoints/ folder), or a checkpoint file (run_dir may then be NULL). For best or last,
 * under the run folder's shared lock while the file is found and read: a training run of that
 * folder is refused meanwhile, and a folder being trained is refused (TSRNN_ERR_USAGE:
 * "...; wait for it to end, or forecast from a copy of one of its checkpoints" followed by
 * `busy_hint`, how the caller's user does that, "" for none); nobody waits. With `fallback`,
 * "best" in a run without a best checkpoint (no validation, or untrained: max_steps = 0)
 * reads the last one and sets *fell_back (also when reading it then fails); without one, the
 * message is the best one's search. */
enum tsrnn_status tsrnn_checkpoint_read_run(struct tsrnn_checkpoint *ck, const char *run_dir,
                                            const char *which, bool fallback, bool *fell_back,
                                            const char *busy_hint);

/* Makes the best checkpoint of `checkpoint_dir` (as tsrnn_checkpoint_locate() finds it)
 * the one best-epoch=N file again after a crash between a checkpoint's two names: a last
 * checkpoint that is the best gets its best-... name (a hard link, or a copy), with a
 * warning; older best-... files are removed. Nothing to do is TSRNN_OK; TSRNN_ERR_IO when
 * the name cannot be made. Call it with the run folder's lock held. */
enum tsrnn_status tsrnn_checkpoint_repair_best(const char *checkpoint_dir);

/* Removes the checkpoints of kind `which` ("last" / "best") in `checkpoint_dir` other than
 * `keep` (a file name), and the temporary files an interrupted write left ("" for `which`
 * removes those only). Failures are warnings: an extra old file is harmless. */
void tsrnn_checkpoint_prune(const char *checkpoint_dir, const char *which, const char *keep);

/* --- a run's epoch checkpoints, written behind the training ----------------------------- */

/* The writer of one run's epoch checkpoints in `checkpoint_dir`. It writes at write points
 * fixed by the epochs: every epoch whose number + 1 is a multiple of K, K fixed when it is
 * made (1 unthreaded; threaded, the fewest epochs whose training work, windows x
 * training_length x parameters, reaches 5e7: src/checkpoint/writer.c), and each drain. There
 * it writes the newest snapshot handed over and, first, the newest improving one since the
 * previous write point when that is an earlier epoch: for each, last-epoch=N.safetensors,
 * and best-epoch=N-<monitor>=X.XXXX.safetensors (a hard link to it, or a copy) when the
 * epoch improved the monitored loss (tsrnn.best_epoch = tsrnn.epoch); each durable before
 * it is visible, the previous ones pruned only after (docs/run-folder.md "Checkpoints"). */
struct tsrnn_checkpoint_writer;

/* `threaded`: the writes run on a thread of the writer's own, with every signal blocked,
 * while training goes on; else (or where no thread can be made) in put() and drain().
 * `model`, `cfg` and `ds` must stay unchanged until destroy (the model's table and dims are
 * read, nothing on the device). Errors: TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_checkpoint_writer_create(struct tsrnn_checkpoint_writer **out,
                                                 const char *checkpoint_dir,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_config *cfg,
                                                 const struct tsrnn_dataset *ds, bool threaded);

/* Hands an epoch's snapshot over (the writer owns and frees it). At a write point it first
 * waits until the previous write point's files are on disk, then hands the snapshots held
 * since to the thread and returns; elsewhere it returns at once (unless the thread is still
 * writing an improving epoch and two are held: the writer holds three snapshots at most).
 * Returns, at a write point, the failure of an earlier write (its message, as the
 * synchronous write would have returned it): the run stops; nothing more is written. */
enum tsrnn_status tsrnn_checkpoint_writer_put(struct tsrnn_checkpoint_writer *w,
                                              struct tsrnn_checkpoint_snapshot *snap);

/* Writes the snapshots held (as at a write point) and waits until everything handed over is
 * on disk (or a write failed: that failure is returned), then copies the paths of the newest
 * last and best checkpoints written into `last` and `best` (each left as it is when none
 * was). */
enum tsrnn_status tsrnn_checkpoint_writer_drain(struct tsrnn_checkpoint_writer *w, char *last,
                                                char *best, size_t capacity);

/* Writes what a drain would, ends the thread and frees the writer; accepts NULL. */
void tsrnn_checkpoint_writer_destroy(struct tsrnn_checkpoint_writer *w);

#endif
