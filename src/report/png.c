/* PNG files of the pictures (png.h): an 8-bit RGB image, zlib's run-length strategy, one
 * unfiltered row after the other, written through tsrnn_atomic_file. Compiled only in builds
 * with plots.
 *
 * Why not cairo's own writer: it (libpng, zlib's default level 6, each row's filter chosen by
 * trying them all) spent 220 M instructions (~20 ms) on the seed config's 1000x500 picture, a
 * third of its 2,100 optimizer steps' time. These pictures are lines and text on white: long
 * runs of one byte, which zlib's run-length strategy codes in 38 M (~4 ms), into a file about
 * a quarter larger (64 KB instead of 50). Rows go unfiltered: Sub, Up and Paeth, made for
 * photographs, cost time here and gain at most a tenth. */
#include "png.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tsrnn/atomic_file.h"

#define PNG_IDAT_MAX (64 * 1024) /* bytes of zlib stream per IDAT chunk */

struct png_out {
    FILE *file; /* errors: ferror(), which tsrnn_atomic_file_commit() reports */
    z_stream z;
    unsigned char idat[PNG_IDAT_MAX];
};

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* One chunk: its length, type and data, and the CRC-32 of type and data. */
static void png_chunk(FILE *file, const char *type, const unsigned char *data, size_t length)
{
    unsigned char head[8], crc[4];
    put_be32(head, (uint32_t)length);
    memcpy(head + 4, type, 4);
    uLong sum = crc32(0, head + 4, 4);
    if (length > 0)
        sum = crc32(sum, data, (uInt)length);
    put_be32(crc, (uint32_t)sum);
    fwrite(head, 1, sizeof(head), file);
    if (length > 0)
        fwrite(data, 1, length, file);
    fwrite(crc, 1, sizeof(crc), file);
}

/* Compresses what is pending in `out->z` (`flush` Z_FINISH: to the stream's end), writing
 * each full buffer as an IDAT chunk (the last one too when finishing). */
static void png_deflate(struct png_out *out, int flush)
{
    for (;;) {
        int rc = deflate(&out->z, flush);
        bool done = flush == Z_FINISH ? rc == Z_STREAM_END : out->z.avail_in == 0;
        if (out->z.avail_out == 0 || (done && flush == Z_FINISH) || rc == Z_STREAM_ERROR) {
            png_chunk(out->file, "IDAT", out->idat, PNG_IDAT_MAX - out->z.avail_out);
            out->z.next_out = out->idat;
            out->z.avail_out = PNG_IDAT_MAX;
        }
        if (done || rc == Z_STREAM_ERROR) /* the latter: a misuse, never seen */
            return;
    }
}

/* The picture as a PNG into `file`. */
static enum tsrnn_status encode(FILE *file, const char *path, const uint32_t *pixels, int width,
                                int height, size_t stride_nbytes)
{
    enum tsrnn_status status = TSRNN_OK;
    size_t row_bytes = 1 + 3 * (size_t)width; /* the filter type (0: None), then R G B ... */
    unsigned char *row = malloc(row_bytes);
    struct png_out *out = calloc(1, sizeof(*out));
    bool deflating = false;
    if (row == NULL || out == NULL ||
        deflateInit2(&out->z, Z_BEST_SPEED, Z_DEFLATED, 15, 8, Z_RLE) != Z_OK) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory drawing %s", tsrnn_display_path(path));
        goto out;
    }
    deflating = true;
    out->file = file;
    out->z.next_out = out->idat;
    out->z.avail_out = PNG_IDAT_MAX;

    unsigned char ihdr[13] = { [8] = 8, [9] = 2 }; /* 8 bits per sample, RGB */
    put_be32(ihdr, (uint32_t)width);
    put_be32(ihdr + 4, (uint32_t)height);
    fwrite("\x89PNG\r\n\x1a\n", 1, 8, file);
    png_chunk(file, "IHDR", ihdr, sizeof(ihdr));
    row[0] = 0;
    for (int y = 0; y < height; y++) {
        const uint32_t *px = (const uint32_t *)(const void *)((const unsigned char *)pixels +
                                                              (size_t)y * stride_nbytes);
        unsigned char *rgb = row + 1;
        for (int x = 0; x < width; x++) {
            rgb[3 * x] = (unsigned char)(px[x] >> 16);
            rgb[3 * x + 1] = (unsigned char)(px[x] >> 8);
            rgb[3 * x + 2] = (unsigned char)px[x];
        }
        out->z.next_in = row;
        out->z.avail_in = (uInt)row_bytes;
        png_deflate(out, Z_NO_FLUSH);
    }
    png_deflate(out, Z_FINISH);
    png_chunk(file, "IEND", NULL, 0);
out:
    if (deflating)
        deflateEnd(&out->z);
    free(out);
    free(row);
    return status;
}

enum tsrnn_status tsrnn_png_write(const char *path, const uint32_t *pixels, int width, int height,
                                  size_t stride_nbytes)
{
    struct tsrnn_atomic_file af;
    TSRNN_TRY(tsrnn_atomic_file_open(&af, path));
    enum tsrnn_status status = encode(af.file, path, pixels, width, height, stride_nbytes);
    if (status != TSRNN_OK) {
        tsrnn_atomic_file_abort(&af);
        return status;
    }
    return tsrnn_atomic_file_commit(&af);
}
