/* A time series from a CSV file (include/tsrnn/data.h).
 *
 * The reader is small and strict on purpose: the files Darts users have are what pandas'
 * `to_csv` writes (a header row, a comma between fields, optional double quotes), and every
 * problem must be reported as `file:line:column` with the column's name and the bad text.
 * The whole file is read into memory and split in place.
 *
 * Time column rule (pandas / Darts from_dataframe): a column whose every value is an integer
 * is an integer index; anything else must parse as a time stamp (tsrnn_time_parse()).
 * Either way the stamps must strictly increase, and follow one frequency (src/data/freq.c):
 * Darts builds its TimeSeries only on such an index, after inserting missing dates when asked
 * (fill_missing_dates / freq). Values are read in double, as pandas reads them, filled there
 * (src/data/fill.c) and only then rounded to float32, as Darts' `.astype(np.float32)` after
 * MissingValuesFiller().
 */
#include "tsrnn/data.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tsrnn/core.h"

struct field {
    char *text;
    size_t column; /* 1-based byte column of the field in its line */
};

struct csv_file {
    const char *path;
    char *buf;
    size_t nbytes;
    size_t pos;
    size_t line;          /* number of the line last returned by next_row() */
    struct field *fields; /* the fields of that line */
    size_t field_capacity;
};

/* Bytes read at a time: each piece is checked before the next is read. */
#define READ_CHUNK_NBYTES ((size_t)1 << 20)

/* The error for the byte at `bad` (a NUL, or one that is not UTF-8), with its line and
 * column. */
static enum tsrnn_status bad_byte(const struct csv_file *f, const char *buf, size_t bad)
{
    size_t line = 1, column = 1;
    for (size_t i = 0; i < bad; i++, column++)
        if (buf[i] == '\n')
            line++, column = 0;
    if (buf[bad] == '\0')
        return tsrnn_error(TSRNN_ERR_DATA, "%s:%zu:%zu: a NUL byte; accepted: text", f->path, line,
                           column);
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s:%zu:%zu: byte \\x%02x is not UTF-8; accepted: UTF-8 text (save the "
                       "file as UTF-8, as pandas reads it)",
                       f->path, line, column, (unsigned char)buf[bad]);
}

/* Reads the whole file, checking it as it comes: pandas reads UTF-8 and stops at a byte that
 * is not, and a NUL would end a field early here ("13<NUL>5" read as 13); either is refused
 * where it stands, before the rest is read (a sparse 1 GB file of zeros was read whole, 1 GB
 * and 3 s, before its first byte was refused). A file larger than the memory this process
 * can have is refused before a byte is read. Only what fstat promised is read: a file that
 * grows meanwhile is read as it was. */
static enum tsrnn_status read_all(struct csv_file *f)
{
    int fd;
    struct stat st;
    TSRNN_TRY(tsrnn_open_regular(f->path, O_RDONLY, "data file", TSRNN_ERR_DATA, &fd));
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return tsrnn_error_errno(TSRNN_ERR_DATA, err, "cannot read data file %s", f->path);
    }
    double available;
    char source[64];
    if (tsrnn_memory_available(&available, source, sizeof(source)) &&
        (double)st.st_size > available) {
        close(fd);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "data file %s is %.3g GB, more than the %.3g GB of memory this "
                           "process can have (%s); accepted: a file that fits in memory",
                           f->path, (double)st.st_size * 1e-9, available * 1e-9, source);
    }
    /* The buffer grows with what was read and checked, doubling, up to the file's size. */
    size_t total = (size_t)st.st_size, done = 0, checked = 0, capacity = 0;
    char *buf = NULL;
    enum tsrnn_status status = TSRNN_OK;
    for (bool end = false; status == TSRNN_OK && !end;) {
        if (done == capacity && capacity < total) {
            size_t grown = capacity < READ_CHUNK_NBYTES ? READ_CHUNK_NBYTES : 2 * capacity;
            grown = grown < total ? grown : total;
            char *more = realloc(buf, grown + 1);
            if (more == NULL) {
                status =
                    tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading data file %s (%zu bytes)",
                                f->path, total);
                break;
            }
            buf = more;
            capacity = grown;
        } else if (buf == NULL && (buf = malloc(1)) == NULL) { /* an empty file */
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading data file %s", f->path);
            break;
        }
        size_t want = capacity - done < READ_CHUNK_NBYTES ? capacity - done : READ_CHUNK_NBYTES;
        ssize_t n = want > 0 ? read(fd, buf + done, want) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            status = tsrnn_error_errno(TSRNN_ERR_DATA, errno, "cannot read data file %s", f->path);
            break;
        }
        done += (size_t)n;
        end = n == 0 || done == total; /* the end, or shrunk meanwhile: what is there */
        buf[done] = '\0';
        /* A sequence cut by the piece's end is checked with the next piece. */
        size_t valid = checked + tsrnn_utf8_prefix(buf + checked, done - checked);
        if (valid < done && (end || buf[valid] == '\0' || done - valid >= 4))
            status = bad_byte(f, buf, valid);
        checked = valid;
    }
    close(fd);
    if (status != TSRNN_OK) {
        free(buf);
        return status;
    }
    f->buf = buf;
    f->nbytes = done;
    f->pos = 0;
    /* A UTF-8 byte order mark (Excel writes one) is not part of the first column's name. */
    if (done >= 3 && memcmp(f->buf, "\xEF\xBB\xBF", 3) == 0)
        f->pos = 3;
    return TSRNN_OK;
}

static void trim_field(struct field *fld)
{
    char *s = fld->text;
    while (*s == ' ' || *s == '\t') {
        s++;
        fld->column++;
    }
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = '\0';
    fld->text = s;
}

/* Appends one field to f->fields, growing it; false when out of memory. */
static bool push_field(struct csv_file *f, size_t count, struct field fld)
{
    if (count == f->field_capacity) {
        size_t capacity = f->field_capacity ? f->field_capacity * 2 : 16;
        struct field *grown = realloc(f->fields, capacity * sizeof(*grown));
        if (grown == NULL) {
            tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", f->path);
            return false;
        }
        f->fields = grown;
        f->field_capacity = capacity;
    }
    f->fields[count] = fld;
    return true;
}

/* Splits the next non-blank line into f->fields (in place). Returns the field count, 0 at the
 * end of the file, or -1 after setting an error. */
static long next_row(struct csv_file *f)
{
    for (;;) {
        if (f->pos >= f->nbytes)
            return 0;
        char *line = f->buf + f->pos;
        char *end = memchr(line, '\n', f->nbytes - f->pos);
        size_t len = end ? (size_t)(end - line) : f->nbytes - f->pos;
        f->pos += len + (end != NULL);
        f->line++;
        line[len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (strspn(line, " \t") == len)
            continue; /* pandas skips blank lines */

        long count = 0;
        char *p = line;
        for (;;) {
            struct field fld = { .text = p, .column = (size_t)(p - line) + 1 };
            char *q = p;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '"') {
                /* Quoted: "" is a literal quote; the closing quote ends the field. */
                char *out = q, *in = q + 1;
                fld.text = q;
                fld.column = (size_t)(q - line) + 1;
                for (;;) {
                    if (*in == '\0') {
                        tsrnn_error(TSRNN_ERR_DATA,
                                    "%s:%zu:%zu: unterminated quoted field (a line break inside "
                                    "quotes is not supported)",
                                    f->path, f->line, fld.column);
                        return -1;
                    }
                    if (*in == '"' && in[1] == '"') {
                        *out++ = '"';
                        in += 2;
                    } else if (*in == '"') {
                        in++;
                        break;
                    } else {
                        *out++ = *in++;
                    }
                }
                while (*in == ' ' || *in == '\t')
                    in++;
                if (*in != ',' && *in != '\0') {
                    tsrnn_error(TSRNN_ERR_DATA, "%s:%zu:%zu: unexpected text after a closing quote",
                                f->path, f->line, (size_t)(in - line) + 1);
                    return -1;
                }
                char next = *in;
                *out = '\0';
                if (!push_field(f, (size_t)count++, fld))
                    return -1;
                if (next == '\0')
                    return count;
                p = in + 1;
                continue;
            }
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            trim_field(&fld);
            if (!push_field(f, (size_t)count++, fld))
                return -1;
            if (!comma)
                return count;
            p = comma + 1;
        }
    }
}

void tsrnn_series_finish(struct tsrnn_series *series)
{
    if (series == NULL)
        return;
    free(series->values);
    free(series->times);
    free(series->component_names);
    free(series->covariates);
    memset(series, 0, sizeof(*series));
}

/* value_cols then covariate_cols as one list of C + Kc names (owned), or NULL. */
static char (*joined_columns(const char (*value_cols)[TSRNN_NAME_MAX], size_t C,
                             const char (*covariate_cols)[TSRNN_NAME_MAX],
                             size_t Kc))[TSRNN_NAME_MAX]
{
    char(*all)[TSRNN_NAME_MAX] = malloc((C + Kc) * sizeof(*all));
    if (all == NULL) {
        tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu column names", C + Kc);
        return NULL;
    }
    memcpy(all, value_cols, C * sizeof(*all));
    memcpy(all + C, covariate_cols, Kc * sizeof(*all));
    return all;
}

/* A series read with C + Kc columns keeps the first C as its values; the others move to
 * series->covariates (L, Kc). Frees the series on error. */
static enum tsrnn_status split_covariates(struct tsrnn_series *series, size_t C, size_t Kc)
{
    size_t L = series->length;
    series->covariates = malloc((L > 0 ? L : 1) * Kc * sizeof(float));
    if (series->covariates == NULL) {
        tsrnn_series_finish(series);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu x %zu covariates", L, Kc);
    }
    /* (L, C + Kc) -> values (L, C) in place, covariates (L, Kc). */
    for (size_t t = 0; t < L; t++) {
        memcpy(series->covariates + t * Kc, series->values + t * (C + Kc) + C, Kc * sizeof(float));
        memmove(series->values + t * C, series->values + t * (C + Kc), C * sizeof(float));
    }
    series->component_count = C;
    series->covariate_count = Kc;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_series_load_csv_covariates(struct tsrnn_series *series, const char *path,
                                                   const char *time_col,
                                                   const char (*value_cols)[TSRNN_NAME_MAX],
                                                   size_t value_col_count,
                                                   const char (*covariate_cols)[TSRNN_NAME_MAX],
                                                   size_t covariate_col_count,
                                                   const struct tsrnn_series_options *options)
{
    size_t C = value_col_count, Kc = covariate_col_count;
    char(*all)[TSRNN_NAME_MAX] = joined_columns(value_cols, C, covariate_cols, Kc);
    if (all == NULL)
        return TSRNN_ERR_NOMEM;
    struct tsrnn_series_options labelled = options ? *options : (struct tsrnn_series_options){ 0 };
    labelled.target_col_count = C;
    enum tsrnn_status status = tsrnn_series_load_csv(
        series, path, time_col, (const char(*)[TSRNN_NAME_MAX])all, C + Kc, &labelled);
    free(all);
    if (status != TSRNN_OK)
        return status;
    return split_covariates(series, C, Kc);
}

enum tsrnn_status tsrnn_series_load_groups_covariates(
    struct tsrnn_series **series, char (**ids)[TSRNN_NAME_MAX], size_t *count, const char *path,
    const char *id_col, const char *time_col, const char (*value_cols)[TSRNN_NAME_MAX],
    size_t value_col_count, const char (*covariate_cols)[TSRNN_NAME_MAX],
    size_t covariate_col_count, const struct tsrnn_series_options *options)
{
    size_t C = value_col_count, Kc = covariate_col_count;
    char(*all)[TSRNN_NAME_MAX] = joined_columns(value_cols, C, covariate_cols, Kc);
    *series = NULL;
    *ids = NULL;
    *count = 0;
    if (all == NULL)
        return TSRNN_ERR_NOMEM;
    struct tsrnn_series_options labelled = options ? *options : (struct tsrnn_series_options){ 0 };
    labelled.target_col_count = C;
    enum tsrnn_status status =
        tsrnn_series_load_groups(series, ids, count, path, id_col, time_col,
                                 (const char(*)[TSRNN_NAME_MAX])all, C + Kc, &labelled);
    free(all);
    for (size_t i = 0; status == TSRNN_OK && i < *count; i++)
        status = split_covariates(&(*series)[i], C, Kc);
    if (status != TSRNN_OK && *series != NULL) {
        for (size_t i = 0; i < *count; i++)
            tsrnn_series_finish(&(*series)[i]);
        free(*series);
        free(*ids);
        *series = NULL;
        *ids = NULL;
    }
    return status;
}
/* The first missing value of a row of a long-format file (text NULL: none), for the message
 * that refuses its series' first one. */
struct row_missing {
    const char *text;
    size_t column, component;
};

/* Everything tsrnn_series_load_csv() holds while it reads. */
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

/* pandas' default NA texts (pandas._libs.parsers.STR_NA_VALUES): read_csv turns exactly these
 * into NaN, and so a Darts series gets a missing value there. */
static const char *const na_texts[] = { "",         "#N/A", "#N/A N/A", "#NA",    "-1.#IND",
                                        "-1.#QNAN", "-NaN", "-nan",     "1.#IND", "1.#QNAN",
                                        "<NA>",     "N/A",  "NA",       "NULL",   "NaN",
                                        "None",     "n/a",  "nan",      "null" };

static bool is_na_text(const char *text)
{
    for (size_t i = 0; i < sizeof(na_texts) / sizeof(na_texts[0]); i++)
        if (strcmp(text, na_texts[i]) == 0)
            return true;
    return false;
}

static long find_column(const struct loader *ld, const char *name)
{
    for (size_t i = 0; i < ld->column_count; i++)
        if (strcmp(ld->header[i], name) == 0)
            return (long)i;
    return -1;
}

static enum tsrnn_status missing_column(const struct loader *ld, const char *name, const char *key)
{
    char list[1024];
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < ld->column_count && used < sizeof(list); i++)
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s'%s'", i ? ", " : "",
                                 ld->header[i]);
    return tsrnn_error(TSRNN_ERR_DATA, "%s:%zu: no column '%s' (%s) in the header; it has: %s",
                       ld->file.path, ld->header_line, name, key, list);
}

static enum tsrnn_status read_header(struct loader *ld, const char *time_col,
                                     const char (*value_cols)[TSRNN_NAME_MAX],
                                     size_t value_col_count, struct tsrnn_series *series)
{
    long count = next_row(&ld->file);
    if (count < 0)
        return TSRNN_ERR_DATA;
    if (count == 0)
        return tsrnn_error(TSRNN_ERR_DATA, "%s: the file is empty; expected a header row",
                           ld->file.path);
    ld->column_count = (size_t)count;
    ld->header_line = ld->file.line;
    ld->header = calloc(ld->column_count, sizeof(*ld->header));
    if (ld->header == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    for (size_t i = 0; i < ld->column_count; i++) {
        ld->header[i] = ld->file.fields[i].text;
        for (size_t j = 0; j < i; j++)
            if (strcmp(ld->header[i], ld->header[j]) == 0)
                return tsrnn_error(TSRNN_ERR_DATA, "%s:%zu:%zu: duplicate column name '%s'",
                                   ld->file.path, ld->file.line, ld->file.fields[i].column,
                                   ld->header[i]);
    }

    ld->time_idx = -1;
    if (time_col[0] != '\0') {
        ld->time_idx = find_column(ld, time_col);
        if (ld->time_idx < 0)
            return missing_column(ld, time_col, "[data] time_col");
    }

    ld->id_idx = -1;
    if (ld->id_col != NULL && ld->id_col[0] != '\0') {
        ld->id_idx = find_column(ld, ld->id_col);
        if (ld->id_idx < 0)
            return missing_column(ld, ld->id_col, "[data] id_col");
        if (ld->id_idx == ld->time_idx)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "[data] id_col and time_col are both '%s'; a column is either the "
                               "series' id or its time",
                               ld->id_col);
    }

    size_t c_count = value_col_count;
    if (c_count == 0)
        c_count = ld->column_count - (ld->time_idx >= 0) - (ld->id_idx >= 0);
    if (c_count == 0)
        return tsrnn_error(
            TSRNN_ERR_DATA, "%s:%zu: no value column besides the time column '%s'%s%s%s",
            ld->file.path, ld->header_line, time_col, ld->id_idx >= 0 ? " and the id column '" : "",
            ld->id_idx >= 0 ? ld->id_col : "", ld->id_idx >= 0 ? "'" : "");
    if (c_count > TSRNN_MAX_COMPONENTS)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: %zu value columns; at most %d are supported (choose some "
                           "with [data] value_cols)",
                           ld->file.path, ld->header_line, c_count, TSRNN_MAX_COMPONENTS);
    ld->value_idx = calloc(c_count, sizeof(*ld->value_idx));
    series->component_names = calloc(c_count, sizeof(*series->component_names));
    if (ld->value_idx == NULL || series->component_names == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    size_t c = 0;
    for (size_t i = 0; i < ld->column_count && value_col_count == 0; i++)
        if ((long)i != ld->time_idx && (long)i != ld->id_idx)
            ld->value_idx[c++] = i;
    size_t target_count = ld->options->target_col_count;
    for (size_t i = 0; i < value_col_count; i++) {
        long idx = find_column(ld, value_cols[i]);
        if (idx < 0)
            return missing_column(ld, value_cols[i],
                                  target_count > 0 && i >= target_count ? "[covariates] columns"
                                                                        : "[data] value_cols");
        if (idx == ld->time_idx)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "[data] value_cols lists the time column '%s'; a column is either "
                               "the time or a value",
                               value_cols[i]);
        if (idx == ld->id_idx)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "[data] value_cols lists the id column '%s'; a column is either "
                               "the series' id or a value",
                               value_cols[i]);
        ld->value_idx[c++] = (size_t)idx;
    }
    series->component_count = c_count;
    for (size_t i = 0; i < c_count; i++) {
        /* A name is printed in summaries, written into CSVs and checkpoints: no control
         * character (an escape sequence would drive the terminal; the file is UTF-8). */
        const char *name = ld->header[ld->value_idx[i]];
        if (!tsrnn_text_printable(name))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu:%zu: column name '%s' holds a control character; "
                               "accepted: printable text",
                               ld->file.path, ld->header_line,
                               ld->file.fields[ld->value_idx[i]].column, name);
        if (strlen(name) >= TSRNN_NAME_MAX)
            return tsrnn_error(
                TSRNN_ERR_DATA, "%s:%zu:%zu: a column name of %zu bytes; accepted: at most %d",
                ld->file.path, ld->header_line, ld->file.fields[ld->value_idx[i]].column,
                strlen(name), TSRNN_NAME_MAX - 1);
        snprintf(series->component_names[i], TSRNN_NAME_MAX, "%s", name);
    }
    snprintf(series->time_name, sizeof(series->time_name), "%s", time_col);
    return TSRNN_OK;
}

static enum tsrnn_status grow_rows(struct loader *ld, struct tsrnn_series *s)
{
    size_t capacity = ld->row_capacity ? ld->row_capacity * 2 : 1024;
    double *values = realloc(ld->values, capacity * s->component_count * sizeof(double));
    if (values != NULL)
        ld->values = values;
    char **text = realloc(ld->time_text, capacity * sizeof(*text));
    if (text != NULL)
        ld->time_text = text;
    size_t *line = realloc(ld->time_line, capacity * sizeof(*line));
    if (line != NULL)
        ld->time_line = line;
    size_t *column = realloc(ld->time_column, capacity * sizeof(*column));
    if (column != NULL)
        ld->time_column = column;
    bool grouped = ld->id_idx >= 0;
    char **ids = grouped ? realloc(ld->id_text, capacity * sizeof(*ids)) : NULL;
    if (ids != NULL)
        ld->id_text = ids;
    struct row_missing *missing =
        grouped ? realloc(ld->row_missing, capacity * sizeof(*missing)) : NULL;
    if (missing != NULL)
        ld->row_missing = missing;
    if (values == NULL || text == NULL || line == NULL || column == NULL ||
        (grouped && (ids == NULL || missing == NULL)))
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    ld->row_capacity = capacity;
    return TSRNN_OK;
}

static enum tsrnn_status read_rows(struct loader *ld, struct tsrnn_series *s)
{
    size_t C = s->component_count;
    for (;;) {
        long count = next_row(&ld->file);
        if (count < 0)
            return TSRNN_ERR_DATA;
        if (count == 0)
            return TSRNN_OK;
        if ((size_t)count != ld->column_count)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: %ld fields, but the header has %zu; every row needs one "
                               "value per column",
                               ld->file.path, ld->file.line, count, ld->column_count);
        if (s->length == ld->row_capacity)
            TSRNN_TRY(grow_rows(ld, s));

        size_t t = s->length;
        if (ld->id_idx >= 0) {
            ld->id_text[t] = ld->file.fields[ld->id_idx].text;
            ld->row_missing[t].text = NULL;
        }
        for (size_t c = 0; c < C; c++) {
            const struct field *fld = &ld->file.fields[ld->value_idx[c]];
            const char *name = ld->header[ld->value_idx[c]];
            char *end;
            if (is_na_text(fld->text)) {
                if (ld->id_idx >= 0 && ld->row_missing[t].text == NULL)
                    ld->row_missing[t] = (struct row_missing){ fld->text, fld->column, c };
                if (!ld->any_missing) {
                    ld->any_missing = true;
                    ld->missing_row = t;
                    ld->missing_line = ld->file.line;
                    ld->missing_column = fld->column;
                    ld->missing_component = c;
                    ld->missing_text = fld->text;
                }
                ld->values[t * C + c] = NAN;
                continue;
            }
            errno = 0;
            double v = strtod(fld->text, &end);
            /* strtod also reads "NAN" and "nan(1)", which pandas keeps as text, and
             * hexadecimal ("0x10", "0x1p3"), which pandas reads as text too. */
            if (*end != '\0' || end == fld->text || isnan(v) || strpbrk(fld->text, "xX") != NULL)
                return tsrnn_error(
                    TSRNN_ERR_DATA, "%s:%zu:%zu: column '%s': '%s' is not a number%s",
                    ld->file.path, ld->file.line, fld->column, name, fld->text,
                    ld->time_idx < 0 && C > 1 ? " (if it is the time column, set [data] time_col)"
                                              : "");
            if (!isfinite(v) || !isfinite((float)v))
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s:%zu:%zu: column '%s': '%s' is not a finite float32 value; "
                                   "infinity cannot be trained on",
                                   ld->file.path, ld->file.line, fld->column, name, fld->text);
            ld->values[t * C + c] = v;
        }
        if (ld->time_idx >= 0) {
            ld->time_text[t] = ld->file.fields[ld->time_idx].text;
            ld->time_line[t] = ld->file.line;
            ld->time_column[t] = ld->file.fields[ld->time_idx].column;
        }
        s->length++;
    }
}

static enum tsrnn_status parse_times(struct loader *ld, struct tsrnn_series *s)
{
    s->times = malloc((s->length ? s->length : 1) * sizeof(*s->times));
    if (s->times == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    s->time_unit = TSRNN_TIME_INDEX;
    if (ld->time_idx < 0) {
        for (size_t t = 0; t < s->length; t++)
            s->times[t] = (int64_t)t;
        return TSRNN_OK;
    }

    bool all_integers = true;
    size_t t_bad = 0;
    for (; t_bad < s->length && all_integers; t_bad++)
        all_integers = tsrnn_parse_int64(ld->time_text[t_bad], &s->times[t_bad]);
    /* Digits that do not fit int64, where the column is an index: say so, not "not a time
     * stamp" of its first row. */
    const char *bad = all_integers ? NULL : ld->time_text[t_bad - 1];
    if (bad != NULL && bad[strspn(bad, "+-")] != '\0' &&
        strspn(bad + strspn(bad, "+-"), "0123456789") == strlen(bad + strspn(bad, "+-")))
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu:%zu: time column '%s': '%s' is beyond the integers an index "
                           "can hold; accepted: -9223372036854775808 .. 9223372036854775807",
                           ld->file.path, ld->time_line[t_bad - 1], ld->time_column[t_bad - 1],
                           s->time_name, bad);
    if (!all_integers) {
        s->time_unit = TSRNN_TIME_YEAR;
        for (size_t t = 0; t < s->length; t++) {
            enum tsrnn_time_unit unit;
            if (!tsrnn_time_parse(ld->time_text[t], &s->times[t], &unit))
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s:%zu:%zu: time column '%s': '%s' is not a time stamp; "
                                   "accepted: YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], "
                                   "or integers in every row",
                                   ld->file.path, ld->time_line[t], ld->time_column[t],
                                   s->time_name, ld->time_text[t]);
            if (unit > s->time_unit)
                s->time_unit = unit;
        }
    }
    for (size_t t = 1; t < s->length; t++)
        if (s->times[t] <= s->times[t - 1])
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu:%zu: time column '%s': '%s' %s the previous row's '%s' "
                               "(line %zu); time stamps must strictly increase",
                               ld->file.path, ld->time_line[t], ld->time_column[t], s->time_name,
                               ld->time_text[t],
                               s->times[t] == s->times[t - 1] ? "repeats" : "comes before",
                               ld->time_text[t - 1], ld->time_line[t - 1]);
    return TSRNN_OK;
}

/* --- one frequency: the index as Darts builds it ----------------------------------------- */

/* Values (points times value columns) a series may have after missing dates are inserted: a
 * wrong freq (seconds over a decade) must not exhaust the memory before it can be reported. */
#define SERIES_VALUES_MAX 100000000

/* Frequencies a column's three consecutive stamps show, as Darts observes them. */
#define OBSERVED_MAX 8

struct observation {
    struct tsrnn_freq freqs[OBSERVED_MAX];
    size_t counts[OBSERVED_MAX];
    size_t distinct; /* may exceed OBSERVED_MAX */
};

/* `t` in the series' format and in the unit `f` needs ("1955-06"). */
static void format_stamp(const struct tsrnn_series *s, const struct tsrnn_freq *f, int64_t t,
                         char *out, size_t capacity)
{
    enum tsrnn_time_unit unit = s->time_unit;
    if (f != NULL && tsrnn_freq_unit(f) > unit)
        unit = tsrnn_freq_unit(f);
    tsrnn_time_format(t, unit, out, capacity);
}

/* Whether every stamp is on the grid of `f` through times[0]: then *points is the size of that
 * grid up to the last stamp; else *bad is the first stamp off it. */
static bool on_grid(const struct tsrnn_freq *f, const int64_t *times, size_t length, size_t *bad,
                    int64_t *points)
{
    int64_t k = 0;
    *bad = 0;
    if (!tsrnn_freq_on(f, times[0]))
        return false;
    for (size_t i = 1; i < length; i++)
        if (!tsrnn_freq_steps(f, times[0], times[i], &k)) {
            *bad = i;
            return false;
        }
    *points = k + 1;
    *bad = length;
    return true;
}

/* The frequency fill_missing_dates inserts at without a freq: Darts takes the one frequency
 * seen over three consecutive stamps and refuses several; tsrnn takes, of those seen, the one
 * whose grid keeps every stamp with the fewest points (the same one where Darts finds one;
 * "B" rather than "D" for business days with a holiday, where Darts sees both). */
static bool fill_frequency(const struct observation *o, const int64_t *times, size_t length,
                           struct tsrnn_freq *f)
{
    int64_t best_points = 0;
    bool found = false;
    for (size_t j = 0; j < o->distinct && j < OBSERVED_MAX; j++) {
        size_t bad;
        int64_t points;
        if (on_grid(&o->freqs[j], times, length, &bad, &points) &&
            (!found || points < best_points)) {
            *f = o->freqs[j];
            best_points = points;
            found = true;
        }
    }
    return found;
}

/* "MS (130 times), 2MS (2 times)". */
static void list_observed(const struct observation *o, char *out, size_t capacity)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t j = 0; j < o->distinct && j < OBSERVED_MAX && used < capacity; j++) {
        char name[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&o->freqs[j], name, sizeof(name));
        used += (size_t)snprintf(out + used, capacity - used, "%s%s (%zu time%s)", j ? ", " : "",
                                 name, o->counts[j], o->counts[j] == 1 ? "" : "s");
    }
    if (o->distinct > OBSERVED_MAX && used < capacity)
        snprintf(out + used, capacity - used, ", ...");
}

/* The column does not follow one frequency and nothing asked to insert dates: name the first
 * place where it leaves the frequency the rest of it follows, and the remedy. */
static enum tsrnn_status irregular(const struct loader *ld, const struct tsrnn_series *s,
                                   const struct observation *o, const struct tsrnn_freq *fill)
{
    bool integer = s->time_unit == TSRNN_TIME_INDEX;
    const char *what = integer ? "indexes" : "dates";
    struct tsrnn_freq expected = { .kind = TSRNN_FREQ_NONE };
    size_t L = s->length, best = 0;
    if (fill != NULL)
        expected = *fill;
    for (size_t j = 0; fill == NULL && j < o->distinct && j < OBSERVED_MAX; j++)
        if (o->counts[j] > best) {
            best = o->counts[j];
            expected = o->freqs[j];
        }

    char remedy[512], name[TSRNN_FREQ_NAME_MAX];
    tsrnn_freq_name(&expected, name, sizeof(name));
    if (fill != NULL)
        snprintf(remedy, sizeof(remedy),
                 "if %s are missing, set [data] fill_missing_dates = true to insert them at %s %s "
                 "and [data] fill_missing_values = interpolate to fill their values (Darts: "
                 "fill_missing_dates=True, then MissingValuesFiller())",
                 what, integer ? "step" : "freq", name);
    else
        snprintf(
            remedy, sizeof(remedy),
            "no frequency seen in the column keeps every stamp; if you know the series' "
            "frequency, set [data] freq = %s with [data] fill_missing_dates = true "
            "(Darts: fill_missing_dates=True, freq=...)",
            integer
                ? "STEP (an integer)"
                : "ALIAS (pandas' offset aliases: D, B, W-SUN, MS, ME, QS, YS, h, min, s, ...)");

    size_t i =
        expected.kind == TSRNN_FREQ_NONE ? L : tsrnn_freq_first_break(&expected, s->times, L);
    int64_t next;
    if (i == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: time column '%s': the first stamp '%s' is not on freq %s, "
                           "which the stamps after it follow: the stamps keep to no one "
                           "frequency, and Darts refuses them (\"the frequency could not be "
                           "directly inferred\"); %s",
                           ld->file.path, ld->time_line[0], s->time_name, ld->time_text[0], name,
                           remedy);
    if (i < L && tsrnn_freq_advance(&expected, s->times[i - 1], 1, &next)) {
        char expect[64];
        format_stamp(s, &expected, next, expect, sizeof(expect));
        if (integer)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: time column '%s': %s follows %s (line %zu), but at "
                               "step %s the next index is %s: the index does not step evenly, "
                               "and Darts refuses it (\"Found non-unique step sizes\"); %s",
                               ld->file.path, ld->time_line[i], s->time_name, ld->time_text[i],
                               ld->time_text[i - 1], ld->time_line[i - 1], name, expect, remedy);
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: time column '%s': '%s' follows '%s' (line %zu), but at freq "
                           "%s the next stamp is '%s': the stamps keep to no one frequency, "
                           "and Darts refuses them (\"the frequency could not be directly "
                           "inferred\"); %s",
                           ld->file.path, ld->time_line[i], s->time_name, ld->time_text[i],
                           ld->time_text[i - 1], ld->time_line[i - 1], name, expect, remedy);
    }
    /* No three consecutive stamps follow a frequency tsrnn knows (the caller has three). */
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s:%zu: time column '%s': no frequency fits its stamps, not even three "
                       "consecutive ones ('%s', '%s', '%s' on lines %zu to %zu), so Darts refuses "
                       "it (\"the frequency could not be directly inferred\"); %s",
                       ld->file.path, ld->time_line[0], s->time_name, ld->time_text[0],
                       ld->time_text[1], ld->time_text[L > 2 ? 2 : L - 1], ld->time_line[0],
                       ld->time_line[L > 2 ? 2 : L - 1], remedy);
}

static enum tsrnn_status off_grid(const struct loader *ld, const struct tsrnn_series *s,
                                  const struct tsrnn_freq *f, size_t bad, const char *source)
{
    char name[TSRNN_FREQ_NAME_MAX];
    tsrnn_freq_name(f, name, sizeof(name));
    if (bad == 0)
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s:%zu: time column '%s': '%s' is not a stamp of freq %s (%s), so "
                           "Darts cannot index the series at it (\"Not all input time stamps "
                           "contained\"); accepted: a freq that every stamp of the column is on",
                           ld->file.path, ld->time_line[0], s->time_name, ld->time_text[0], name,
                           source);
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s:%zu: time column '%s': '%s' is not on freq %s (%s) counted from '%s' "
                       "(line %zu), so Darts cannot index the series at it (\"Not all input time "
                       "stamps contained\"); accepted: a freq that every stamp of the column is on",
                       ld->file.path, ld->time_line[bad], s->time_name, ld->time_text[bad], name,
                       source, ld->time_text[0], ld->time_line[0]);
}

/* The series on the grid of `f` from its first to its last stamp: rows move to their points,
 * the points between them are inserted dates whose values are missing (Darts'
 * _restore_from_frequency). */
static enum tsrnn_status insert_dates(struct loader *ld, struct tsrnn_series *s,
                                      const struct tsrnn_freq *f, size_t points)
{
    size_t C = s->component_count, L = s->length;
    int64_t *times = malloc(points * sizeof(*times));
    double *values = malloc(points * C * sizeof(*values));
    ld->position = malloc(L * sizeof(*ld->position));
    if (times == NULL || values == NULL || ld->position == NULL) {
        free(times);
        free(values);
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory inserting %zu missing dates into %s",
                           points - L, ld->file.path);
    }
    for (size_t j = 0; j < points; j++) {
        /* On the grid up to the last stamp, so no step can fail. */
        if (!tsrnn_freq_advance(f, s->times[0], (int64_t)j, &times[j]))
            times[j] = s->times[0];
        for (size_t c = 0; c < C; c++)
            values[j * C + c] = NAN;
    }
    for (size_t i = 0; i < L; i++) {
        int64_t k = 0;
        tsrnn_freq_steps(f, s->times[0], s->times[i], &k);
        ld->position[i] = (size_t)k;
        memcpy(&values[(size_t)k * C], &ld->values[i * C], C * sizeof(double));
    }
    for (size_t i = 0, j = 0; j < points; j++) {
        if (i < L && ld->position[i] == j) {
            i++;
            continue;
        }
        if (s->inserted_count < TSRNN_SERIES_INSERTED_NOTED)
            s->inserted_times[s->inserted_count] = times[j];
        s->inserted_count++;
    }
    free(s->times);
    free(ld->values);
    s->times = times;
    ld->values = values;
    s->length = points;
    return TSRNN_OK;
}

static enum tsrnn_status make_regular(struct loader *ld, struct tsrnn_series *s)
{
    const struct tsrnn_series_options *o = ld->options;
    bool integer = s->time_unit == TSRNN_TIME_INDEX;
    size_t L = s->length;
    struct tsrnn_freq f = o->freq;
    const char *source = "inferred";
    /* A message about [data] freq starts where it was set (or at the file) and names it; one
     * about the file names the setting and where it was set. */
    const char *origin = o->freq_origin != NULL ? o->freq_origin : ld->file.path;
    char key[64], setting[TSRNN_ORIGIN_MAX + 64];
    snprintf(key, sizeof(key), "[data] freq = %s", o->freq_text ? o->freq_text : "");
    snprintf(setting, sizeof(setting), "%s%s%s%s", key, o->freq_origin ? " (" : "",
             o->freq_origin ? o->freq_origin : "", o->freq_origin ? ")" : "");

    ld->row_count = L;
    if (ld->time_idx < 0) {
        s->freq = (struct tsrnn_freq){ .kind = TSRNN_FREQ_STEP, .n = 1 };
        if (f.kind != TSRNN_FREQ_NONE && !tsrnn_freq_equal(&f, &s->freq))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s: %s, but %s has no time column ([data] time_col), so its "
                               "index is 0, 1, 2, ... with the step 1; accepted: freq not set, "
                               "or 1",
                               origin, key, ld->file.path);
        return TSRNN_OK;
    }
    if (L == 0)
        return TSRNN_OK; /* no point, no frequency: the dataset says what is too short */
    for (size_t t = 1; integer && t < L; t++) {
        int64_t step;
        if (__builtin_sub_overflow(s->times[t], s->times[t - 1], &step))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: time column '%s': the step from %s (line %zu) to %s is "
                               "beyond the 64-bit integers; accepted: indexes whose steps fit",
                               ld->file.path, ld->time_line[t], s->time_name, ld->time_text[t - 1],
                               ld->time_line[t - 1], ld->time_text[t]);
    }
    if (f.kind != TSRNN_FREQ_NONE && (f.kind == TSRNN_FREQ_STEP) != integer)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: %s, but the time column '%s' of %s holds %s; accepted: %s", origin,
                           key, s->time_name, ld->file.path, integer ? "integers" : "time stamps",
                           integer ? "an integer step like 1"
                                   : "a pandas offset alias like D, B, W-SUN, MS, ME, QS, YS, h, "
                                     "min, s");
    if (f.kind != TSRNN_FREQ_NONE) {
        source = setting;
    } else if (!tsrnn_freq_infer(&f, s->times, L, integer)) {
        size_t needed = integer ? 2 : 3;
        if (L < needed) {
            f = o->short_series_freq;
            source = "the model's";
            if (f.kind == TSRNN_FREQ_NONE || (f.kind == TSRNN_FREQ_STEP) != integer)
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s: time column '%s' has %zu %s, but its frequency is "
                                   "inferred from at least %zu (as %s does); set [data] freq "
                                   "to the series' frequency (a pandas offset alias such as MS, "
                                   "or an integer index's step)",
                                   ld->file.path, s->time_name, L,
                                   L == 1 ? (integer ? "index" : "stamp")
                                          : (integer ? "indexes" : "stamps"),
                                   needed, integer ? "Darts" : "pandas");
        } else {
            struct observation obs = { .distinct = 0 };
            obs.distinct =
                tsrnn_freq_observe(obs.freqs, obs.counts, OBSERVED_MAX, s->times, L, integer);
            bool found = fill_frequency(&obs, s->times, L, &f);
            if (!o->fill_missing_dates)
                return irregular(ld, s, &obs, found ? &f : NULL);
            if (!found) {
                char seen[512];
                list_observed(&obs, seen, sizeof(seen));
                /* Darts' words for each case of _fill_missing_dates(). */
                const char *darts = obs.distinct == 0 ? "Could not observe an inferred frequency"
                                    : obs.distinct == 1
                                        ? "Not all input time stamps contained"
                                        : "Could not find a unique inferred frequency";
                return tsrnn_error(
                    TSRNN_ERR_DATA,
                    "%s: time column '%s': [data] fill_missing_dates = true (%s) inserts the "
                    "dates missing from one frequency, but none keeps every stamp: %s%s (Darts: "
                    "\"%s\"); set [data] freq to the series' frequency",
                    ld->file.path, s->time_name,
                    o->fill_dates_origin ? o->fill_dates_origin : "set",
                    obs.distinct ? "three consecutive stamps show "
                                 : "no three consecutive stamps show a frequency",
                    seen, darts);
            }
            source = "inferred for fill_missing_dates";
        }
    }

    size_t bad;
    int64_t points;
    if (!on_grid(&f, s->times, L, &bad, &points))
        return off_grid(ld, s, &f, bad, source);
    int64_t points_max = SERIES_VALUES_MAX / (int64_t)(s->component_count ? s->component_count : 1);
    if (points > points_max) {
        char name[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&f, name, sizeof(name));
        return tsrnn_error(TSRNN_ERR_DATA,
                           "%s: time column '%s' from '%s' to '%s' at freq %s (%s) makes %" PRId64
                           " points; at most %" PRId64 " are supported with %zu value column(s) "
                           "(check the frequency)",
                           ld->file.path, s->time_name, ld->time_text[0], ld->time_text[L - 1],
                           name, source, points, points_max, s->component_count);
    }
    s->freq = f;
    if (tsrnn_freq_unit(&f) > s->time_unit)
        s->time_unit = tsrnn_freq_unit(&f);
    if ((size_t)points == L)
        return TSRNN_OK;
    return insert_dates(ld, s, &f, (size_t)points);
}

/* --- missing values --------------------------------------------------------------------- */

/* The row of the file at point `j` of the series, or the row before the inserted date `j`. */
static size_t row_at_or_before(const struct loader *ld, size_t j)
{
    size_t i = 0;
    while (ld->position != NULL && i + 1 < ld->row_count && ld->position[i + 1] <= j)
        i++;
    return ld->position != NULL ? i : j;
}

static enum tsrnn_status refuse_missing(const struct loader *ld, const struct tsrnn_series *s)
{
    static const char remedy[] = "set [data] fill_missing_values = interpolate to fill missing "
                                 "values by linear interpolation (Darts: MissingValuesFiller()), "
                                 "or fill them in the file";
    size_t first_inserted = s->length;
    for (size_t i = 0, j = 0; ld->position != NULL && j < s->length; j++) {
        if (i < ld->row_count && ld->position[i] == j) {
            i++;
            continue;
        }
        first_inserted = j;
        break;
    }
    size_t missing_point = s->length;
    if (ld->any_missing)
        missing_point = ld->position ? ld->position[ld->missing_row] : ld->missing_row;
    if (missing_point <= first_inserted) {
        const char *name = s->component_names[ld->missing_component];
        if (ld->missing_text[0] == '\0')
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu:%zu: column '%s': empty value, a missing value; %s",
                               ld->file.path, ld->missing_line, ld->missing_column, name, remedy);
        return tsrnn_error(TSRNN_ERR_DATA, "%s:%zu:%zu: column '%s': '%s' is a missing value; %s",
                           ld->file.path, ld->missing_line, ld->missing_column, name,
                           ld->missing_text, remedy);
    }
    size_t row = row_at_or_before(ld, first_inserted);
    char stamp[64];
    tsrnn_time_format(s->times[first_inserted], s->time_unit, stamp, sizeof(stamp));
    return tsrnn_error(TSRNN_ERR_DATA,
                       "%s: time column '%s': '%s', a missing date inserted between lines %zu "
                       "and %zu, has no values; %s",
                       ld->file.path, s->time_name, stamp, ld->time_line[row],
                       ld->time_line[row + 1 < ld->row_count ? row + 1 : row], remedy);
}

/* Fills or refuses the missing values, then rounds the values to float32. */
static enum tsrnn_status fill_values(struct loader *ld, struct tsrnn_series *s)
{
    size_t C = s->component_count, count = s->length * C;
    bool missing = false;
    for (size_t i = 0; i < count && !missing; i++)
        missing = isnan(ld->values[i]);
    if (missing && ld->options->fill_missing_values == TSRNN_FILL_MISSING_NONE)
        return refuse_missing(ld, s);
    if (missing) {
        size_t c = tsrnn_fill_interpolate(ld->values, s->length, C, &s->filled_count);
        if (c < C)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s: column '%s' has no value at all, so interpolation has "
                               "nothing to fill its missing values from",
                               ld->file.path, s->component_names[c]);
    }
    s->values = malloc((count ? count : 1) * sizeof(float));
    if (s->values == NULL)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", ld->file.path);
    for (size_t i = 0; i < count; i++)
        s->values[i] = (float)ld->values[i];
    return TSRNN_OK;
}

static void loader_free(struct loader *ld, bool owns_file)
{
    if (owns_file) {
        free(ld->file.buf);
        free(ld->file.fields);
        free(ld->header);
        free(ld->value_idx);
        free(ld->id_text);
        free(ld->row_missing);
    }
    free(ld->values);
    free(ld->time_text);
    free(ld->time_line);
    free(ld->time_column);
    free(ld->position);
}

/* The file's header and rows, as read. */
static enum tsrnn_status read_table(struct loader *ld, const char *time_col,
                                    const char (*value_cols)[TSRNN_NAME_MAX],
                                    size_t value_col_count, struct tsrnn_series *series)
{
    TSRNN_TRY(read_all(&ld->file));
    TSRNN_TRY(read_header(ld, time_col, value_cols, value_col_count, series));
    return read_rows(ld, series);
}

/* The rows read become the series: its time index, made regular, and its values, filled. */
static enum tsrnn_status make_series(struct loader *ld, struct tsrnn_series *series)
{
    TSRNN_TRY(parse_times(ld, series));
    TSRNN_TRY(make_regular(ld, series));
    return fill_values(ld, series);
}

enum tsrnn_status tsrnn_series_load_csv(struct tsrnn_series *series, const char *path,
                                        const char *time_col,
                                        const char (*value_cols)[TSRNN_NAME_MAX],
                                        size_t value_col_count,
                                        const struct tsrnn_series_options *options)
{
    static const struct tsrnn_series_options defaults = { .fill_missing_dates = false };
    struct loader ld = { .file = { .path = path }, .options = options ? options : &defaults };
    memset(series, 0, sizeof(*series));

    enum tsrnn_status status = read_table(&ld, time_col, value_cols, value_col_count, series);
    if (status == TSRNN_OK)
        status = make_series(&ld, series);
    loader_free(&ld, true);
    if (status != TSRNN_OK)
        tsrnn_series_finish(series);
    return status;
}

/* --- long format: one series per id (Darts' from_group_dataframe) ------------------------- */

/* How the ids compare: as pandas reads the column (int64, float64 or text) and sorts it. */
enum id_kind {
    ID_INTEGER,
    ID_NUMBER,
    ID_TEXT
};

struct id_key {
    size_t row;
    const char *text;
    int64_t integer;
    double number;
    enum id_kind kind; /* the same in every key */
};

static int compare_ids(const struct id_key *a, const struct id_key *b)
{
    switch (a->kind) {
    case ID_INTEGER:
        return (a->integer > b->integer) - (a->integer < b->integer);
    case ID_NUMBER:
        return (a->number > b->number) - (a->number < b->number);
    case ID_TEXT:
        break;
    }
    return strcmp(a->text, b->text);
}

/* By id, then by row: each group's rows stay in file order. */
static int compare_keys(const void *pa, const void *pb)
{
    const struct id_key *a = pa, *b = pb;
    int c = compare_ids(a, b);
    return c != 0 ? c : (a->row > b->row) - (a->row < b->row);
}

static bool parse_number(const char *text, double *v)
{
    char *end;
    *v = strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*v) && strpbrk(text, "xX") == NULL;
}

/* Every row's id key, sorted; refuses a missing id. */
static enum tsrnn_status sort_ids(const struct loader *ld, size_t rows, struct id_key *keys)
{
    enum id_kind kind = ID_INTEGER;
    for (size_t r = 0; r < rows; r++) {
        const char *text = ld->id_text[r];
        if (is_na_text(text))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: id column '%s': '%s' is a missing id; every row needs the "
                               "id of its series",
                               ld->file.path, ld->time_line[r], ld->id_col, text);
        if (strlen(text) >= TSRNN_NAME_MAX)
            return tsrnn_error(
                TSRNN_ERR_DATA, "%s:%zu: id column '%s': an id of %zu bytes; accepted: at most %d",
                ld->file.path, ld->time_line[r], ld->id_col, strlen(text), TSRNN_NAME_MAX - 1);
        if (!tsrnn_text_printable(text))
            return tsrnn_error(TSRNN_ERR_DATA,
                               "%s:%zu: id column '%s': the id '%s' holds a control character; "
                               "accepted: printable text",
                               ld->file.path, ld->time_line[r], ld->id_col, text);
        keys[r] = (struct id_key){ .row = r, .text = text };
        if (kind == ID_INTEGER && !tsrnn_parse_int64(text, &keys[r].integer))
            kind = ID_NUMBER;
        if (kind != ID_TEXT && !parse_number(text, &keys[r].number))
            kind = ID_TEXT;
    }
    for (size_t r = 0; r < rows; r++) {
        keys[r].kind = kind;
        if (kind == ID_NUMBER)
            parse_number(keys[r].text, &keys[r].number);
    }
    qsort(keys, rows, sizeof(*keys), compare_keys);
    return TSRNN_OK;
}

/* The rows keys[0..n) of `all` (one id) as a series of their own. */
static enum tsrnn_status make_group(const struct loader *all, const struct tsrnn_series *header,
                                    const struct id_key *keys, size_t n,
                                    struct tsrnn_series *series)
{
    size_t C = header->component_count;
    struct loader g = {
        .file = { .path = all->file.path },
        .options = all->options,
        .time_idx = all->time_idx,
        .id_idx = -1,
        .values = malloc(n * C * sizeof(double)),
        .time_text = malloc(n * sizeof(char *)),
        .time_line = malloc(n * sizeof(size_t)),
        .time_column = malloc(n * sizeof(size_t)),
    };
    *series = (struct tsrnn_series){ .length = n, .component_count = C };
    series->component_names = malloc(C * sizeof(*series->component_names));
    enum tsrnn_status status = TSRNN_OK;
    if (g.values == NULL || g.time_text == NULL || g.time_line == NULL || g.time_column == NULL ||
        series->component_names == NULL)
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", all->file.path);
    for (size_t k = 0; k < n && status == TSRNN_OK; k++) {
        size_t r = keys[k].row;
        memcpy(g.values + k * C, all->values + r * C, C * sizeof(double));
        g.time_text[k] = all->time_text[r];
        g.time_line[k] = all->time_line[r];
        g.time_column[k] = all->time_column[r];
        const struct row_missing *m = &all->row_missing[r];
        if (m->text != NULL && !g.any_missing) {
            g.any_missing = true;
            g.missing_row = k;
            g.missing_line = all->time_line[r];
            g.missing_column = m->column;
            g.missing_component = m->component;
            g.missing_text = m->text;
        }
    }
    if (status == TSRNN_OK) {
        memcpy(series->component_names, header->component_names,
               C * sizeof(*series->component_names));
        memcpy(series->time_name, header->time_name, sizeof(series->time_name));
        status = make_series(&g, series);
    }
    loader_free(&g, false);
    return status;
}

enum tsrnn_status
tsrnn_series_load_groups(struct tsrnn_series **series, char (**ids)[TSRNN_NAME_MAX], size_t *count,
                         const char *path, const char *id_col, const char *time_col,
                         const char (*value_cols)[TSRNN_NAME_MAX], size_t value_col_count,
                         const struct tsrnn_series_options *options)
{
    static const struct tsrnn_series_options defaults = { .fill_missing_dates = false };
    struct loader ld = {
        .file = { .path = path },
        .options = options ? options : &defaults,
        .id_col = id_col,
    };
    struct tsrnn_series header = { 0 };
    struct id_key *keys = NULL;
    *series = NULL;
    *ids = NULL;
    *count = 0;
    if (id_col[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: a long-format file needs an id column", path);
    /* Darts' groups each take their rows' stamps; a row number means nothing in a group. */
    if (time_col[0] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "[data] id_col = '%s' needs [data] time_col: each series of a "
                           "long-format file takes its time index from its rows",
                           id_col);

    enum tsrnn_status status = read_table(&ld, time_col, value_cols, value_col_count, &header);
    size_t rows = header.length;
    if (status == TSRNN_OK && rows == 0)
        status = tsrnn_error(TSRNN_ERR_DATA, "%s: no rows after the header, so no series", path);
    if (status == TSRNN_OK) {
        keys = malloc(rows * sizeof(*keys));
        if (keys == NULL)
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", path);
    }
    if (status == TSRNN_OK)
        status = sort_ids(&ld, rows, keys);
    size_t groups = 0;
    for (size_t r = 0; status == TSRNN_OK && r < rows; r++)
        groups += r == 0 || compare_ids(&keys[r - 1], &keys[r]) != 0;
    if (status == TSRNN_OK) {
        *series = calloc(groups, sizeof(**series));
        *ids = calloc(groups, sizeof(**ids));
        if (*series == NULL || *ids == NULL)
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", groups);
    }
    for (size_t first = 0; status == TSRNN_OK && first < rows; (*count)++) {
        size_t end = first + 1;
        while (end < rows && compare_ids(&keys[first], &keys[end]) == 0)
            end++;
        snprintf((*ids)[*count], TSRNN_NAME_MAX, "%s", keys[first].text);
        status = make_group(&ld, &header, keys + first, end - first, &(*series)[*count]);
        if (status != TSRNN_OK)
            tsrnn_error_append(status, " (series '%s' of id column '%s')", keys[first].text,
                               id_col);
        first = end;
    }
    free(keys);
    loader_free(&ld, true);
    tsrnn_series_finish(&header);
    if (status != TSRNN_OK) {
        for (size_t i = 0; *series != NULL && i < groups; i++)
            tsrnn_series_finish(&(*series)[i]);
        free(*series);
        free(*ids);
        *series = NULL;
        *ids = NULL;
        *count = 0;
    }
    return status;
}
