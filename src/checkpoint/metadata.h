/* Private to src/checkpoint/: a checkpoint's __metadata__ (the schema that
 * include/tsrnn/checkpoint.h describes), made from a run's state and read back into a
 * struct tsrnn_checkpoint, with every value checked (metadata.c). The file around it is
 * checkpoint.c's. */
#ifndef TSRNN_CHECKPOINT_METADATA_H
#define TSRNN_CHECKPOINT_METADATA_H

#include <stdint.h>

#include "tsrnn/checkpoint.h"

/* The entries of one checkpoint, in the order they are written, and the texts they point
 * to (owned). */
struct tsrnn_checkpoint_metadata {
    struct tsrnn_metadata_entry entries[24];
    size_t entry_count;
    char epoch[32], batches[32], step[32], adam_step[32], version[16], data_crc[16];
    char monitor_value[32], best[32], best_epoch[32], lr[32], sched[160], es[96], meta_crc[16];
    char *rng, *model, *scaler, *series, *series_list, *config, *covariates;
};

/* The metadata of a checkpoint of `snap` (a snapshot of `model`), `cfg` and `ds`, whose
 * tensors' data has the CRC-32C `data_crc`; tsrnn.metadata_crc32c last, over the others.
 * TSRNN_ERR_NOMEM naming `path`. Finish it in every case. */
enum tsrnn_status tsrnn_checkpoint_metadata_make(struct tsrnn_checkpoint_metadata *md,
                                                 const struct tsrnn_checkpoint_snapshot *snap,
                                                 const struct tsrnn_model *model,
                                                 const struct tsrnn_config *cfg,
                                                 const struct tsrnn_dataset *ds, uint32_t data_crc,
                                                 const char *path);

/* Frees what _make() allocated; accepts a zeroed struct. */
void tsrnn_checkpoint_metadata_finish(struct tsrnn_checkpoint_metadata *md);

/* Before the file's checksums are checked: that ck->file is a tsrnn checkpoint of a format
 * version this tsrnn reads, with the checksum entries that version has. TSRNN_ERR_DATA naming
 * the file and what is wrong. */
enum tsrnn_status tsrnn_checkpoint_metadata_check_version(struct tsrnn_checkpoint *ck);

/* After them: the model, scaler, covariates, series, state, training controls and config of
 * ck->file's metadata into `ck` (its series_list allocated: tsrnn_checkpoint_finish() frees
 * it). TSRNN_ERR_DATA naming the file, the key and what is wrong; TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_checkpoint_metadata_read(struct tsrnn_checkpoint *ck);

/* The largest count of epochs, steps or batches a checkpoint may claim: far beyond any run
 * ([training] n_epochs <= 1e8, max_steps < 2^31), far below where counting would overflow. */
#define TSRNN_CHECKPOINT_MAX_COUNT ((int64_t)1 << 53)

#endif
