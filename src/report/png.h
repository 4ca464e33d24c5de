/* Private to src/report/: a picture in memory written as a PNG file (png.c), for the charts
 * (plot.c). Only in builds with plots (TSRNN_HAVE_PLOTS: zlib). */
#ifndef TSRNN_REPORT_PNG_H
#define TSRNN_REPORT_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/core.h"

/* Writes the (height, width) picture `pixels` (rows `stride_nbytes` apart, each pixel one
 * uint32_t 0x00RRGGBB, as cairo's RGB24 image surfaces hold them) as an 8-bit RGB PNG at
 * `path`, atomically (tsrnn_atomic_file). Errors: the atomic file's (TSRNN_ERR_IO naming
 * the path), TSRNN_ERR_NOMEM ("out of memory drawing <path>"). */
enum tsrnn_status tsrnn_png_write(const char *path, const uint32_t *pixels, int width, int height,
                                  size_t stride_nbytes);

#endif
