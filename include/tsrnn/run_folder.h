/* The run folder {work_dir}/{model_name}/ that rank 0 writes (DESIGN.md §5):
 *
 *     config.ini        the resolved config
 *     metrics.csv       every step's train_loss, every epoch's val_loss
 *     checkpoints/      last-epoch=N.safetensors, best-epoch=N-val_loss=X.XXXX.safetensors
 *     logs/             events.out.tfevents.* (TensorBoard)
 *     forecast.csv, forecast.png
 */
#ifndef TSRNN_RUN_FOLDER_H
#define TSRNN_RUN_FOLDER_H

#include <stdbool.h>

#include "tsrnn/core.h"

/* mkdir -p. TSRNN_ERR_IO naming the folder that could not be made. */
enum tsrnn_status tsrnn_make_dirs(const char *path);

/* rm -r of `path` (a folder): never follows symbolic links, never leaves the file system it
 * starts on. A missing `path` is fine. TSRNN_ERR_IO naming what could not be removed. */
enum tsrnn_status tsrnn_remove_tree(const char *path);

/* True when the folder `path` exists and holds an entry whose name contains `needle`
 * ("" = any entry). */
bool tsrnn_folder_holds(const char *path, const char *needle);

#endif
