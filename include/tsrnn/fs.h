/* File system helpers: mkdir -p, rm -r, and "does this folder hold such a file". The training
 * run makes and resets its run folder with them (src/train/), tsrnn-launch the ranks' logs
 * and its rendezvous folder (src/launcher/). Messages name the path as tsrnn_display_path()
 * shows it.
 */
#ifndef TSRNN_FS_H
#define TSRNN_FS_H

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
