/* A CSV file read as a table (csv.c), then made a series: one (series.c) or one per id of a
 * long-format file (groups.c). Private to src/data/. */
#ifndef TSRNN_DATA_TABLE_H
#define TSRNN_DATA_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/data.h"

/* One field of the current line, unquoted and trimmed, NUL-terminated in the buffer. */
struct field {
    char *text;
    size_t column; /* 1-based byte column of the field in its line */
};

/* The file, read whole and split in place, one line at a time. */
struct csv_file {
    const char *path;
    char *buf;
    size_t nbytes;
    size_t pos;
    size_t line;          /* number of the line last returned by next_row() */
    struct field *fields; /* the fields of that line */
    size_t field_capacity;
};

/* The first missing value of a row of a long-format file (text NULL: none), for the message
 * that refuses its series' first one. */
struct row_missing {
    const char *text;
    size_t column, component;
};

/* Everything the reader holds while it reads a file and makes its series. */
struct loader {
    struct csv_file file;
    const struct tsrnn_series_options *options;
    size_t column_count;             /* K, from the header */
    size_t header_line;              /* its line number (blank lines may come first) */
    char **header;                   /* (K) column names, pointing into file.buf */
    long time_idx;                   /* -1 without a time column */
    const char *id_col;              /* a long-format file's id column ("" or NULL: none) */
    long id_idx;                     /* its header column; -1 without one */
    char **id_text;                  /* (L) each row's id, into file.buf; with id_col only */
    struct row_missing *row_missing; /* (L) likewise */
    size_t *value_idx;               /* (C) header column of each component */
    size_t row_capacity;
    double *values;      /* (L, C) as read; NaN = missing */
    char **time_text;    /* (L) raw time fields, into file.buf */
    size_t *time_line;   /* (L) */
    size_t *time_column; /* (L) */
    /* The first missing value in the file, for the message that refuses it. */
    size_t missing_row, missing_line, missing_column, missing_component;
    const char *missing_text;
    bool any_missing;
    /* After the time index is made regular: position[i] is row i's point in the series, so
     * a point that no row maps to is an inserted date. */
    size_t *position; /* (rows) */
    size_t row_count; /* rows read from the file */
};

/* --- csv.c ---------------------------------------------------------------------------- */

/* Reads ld->file.path: its header (the time, id and value columns, named in `series`: its
 * component names and count, time_name) and every row (ld->values as pandas reads them, NaN
 * where missing; the time and id fields as text). series->length is the rows read.
 * TSRNN_ERR_DATA naming path:line:column. */
enum tsrnn_status data_read_table(struct loader *ld, const char *time_col,
                                  const char (*value_cols)[TSRNN_NAME_MAX], size_t value_col_count,
                                  struct tsrnn_series *series);

/* Whether a field is one of pandas' NA texts (read_csv's missing values). */
bool data_is_na_text(const char *text);

/* Frees what the loader holds: the file and what points into it only with `owns_file` (a
 * group's loader borrows them from the file's). */
void data_loader_free(struct loader *ld, bool owns_file);

/* --- series.c ------------------------------------------------------------------------- */

/* The rows read become the series: its time index parsed and made regular (one frequency,
 * missing dates inserted where asked), its values filled or refused, then float32. */
enum tsrnn_status data_make_series(struct loader *ld, struct tsrnn_series *series);

/* value_cols then covariate_cols as one list of C + Kc names (owned), or NULL. */
char (*data_join_columns(const char (*value_cols)[TSRNN_NAME_MAX], size_t C,
                         const char (*covariate_cols)[TSRNN_NAME_MAX], size_t Kc))[TSRNN_NAME_MAX];

/* A series read with C + Kc columns keeps the first C as its values; the others move to
 * series->covariates (L, Kc). Frees the series on error. */
enum tsrnn_status data_split_covariates(struct tsrnn_series *series, size_t C, size_t Kc);

#endif
