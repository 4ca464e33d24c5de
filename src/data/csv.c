/* A CSV file read as a table (src/data/table.h): its header, then each row's value fields as
 * numbers (pandas' NA texts as NaN) beside its raw time and id fields.
 *
 * The reader is small and strict on purpose: the files Darts users have are what pandas'
 * `to_csv` writes (a header row, a comma between fields, optional double quotes), and every
 * problem must be reported as `file:line:column` with the column's name and the bad text.
 * The whole file is read into memory and split in place.
 */
#include "table.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tsrnn/core.h"

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
    enum tsrnn_status status = TSRNN_OK;
    int fd = -1;
    char *buf = NULL;
    struct stat st;
    double available;
    char source[64];
    status = tsrnn_open_regular(f->path, O_RDONLY, "data file", TSRNN_ERR_DATA, &fd);
    if (status != TSRNN_OK)
        goto out;
    if (fstat(fd, &st) != 0) {
        status = tsrnn_error_errno(TSRNN_ERR_DATA, errno, "cannot read data file %s", f->path);
        goto out;
    }
    if (tsrnn_memory_available(&available, source, sizeof(source)) &&
        (double)st.st_size > available) {
        status = tsrnn_error(TSRNN_ERR_DATA,
                             "data file %s is %.3g GB, more than the %.3g GB of memory this "
                             "process can have (%s); accepted: a file that fits in memory",
                             f->path, (double)st.st_size * 1e-9, available * 1e-9, source);
        goto out;
    }
    /* The buffer grows with what was read and checked, doubling, up to the file's size. */
    size_t total = (size_t)st.st_size, done = 0, checked = 0, capacity = 0;
    for (bool end = false; !end;) {
        if (done == capacity && capacity < total) {
            size_t grown = capacity < READ_CHUNK_NBYTES ? READ_CHUNK_NBYTES : 2 * capacity;
            grown = grown < total ? grown : total;
            char *more = realloc(buf, grown + 1);
            if (more == NULL) {
                status =
                    tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading data file %s (%zu bytes)",
                                f->path, total);
                goto out;
            }
            buf = more;
            capacity = grown;
        } else if (buf == NULL && (buf = malloc(1)) == NULL) { /* an empty file */
            status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading data file %s", f->path);
            goto out;
        }
        size_t want = capacity - done < READ_CHUNK_NBYTES ? capacity - done : READ_CHUNK_NBYTES;
        ssize_t n = want > 0 ? read(fd, buf + done, want) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            status = tsrnn_error_errno(TSRNN_ERR_DATA, errno, "cannot read data file %s", f->path);
            goto out;
        }
        done += (size_t)n;
        end = n == 0 || done == total; /* the end, or shrunk meanwhile: what is there */
        buf[done] = '\0';
        /* A sequence cut by the piece's end is checked with the next piece. */
        size_t valid = checked + tsrnn_utf8_prefix(buf + checked, done - checked);
        if (valid < done && (end || buf[valid] == '\0' || done - valid >= 4)) {
            status = bad_byte(f, buf, valid);
            goto out;
        }
        checked = valid;
    }
    f->buf = buf; /* the file's now */
    buf = NULL;
    f->nbytes = done;
    f->pos = 0;
    /* A UTF-8 byte order mark (Excel writes one) is not part of the first column's name. */
    if (done >= 3 && memcmp(f->buf, "\xEF\xBB\xBF", 3) == 0)
        f->pos = 3;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return status;
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

/* pandas' default NA texts (pandas._libs.parsers.STR_NA_VALUES): read_csv turns exactly these
 * into NaN, and so a Darts series gets a missing value there. */
static const char *const na_texts[] = { "",         "#N/A", "#N/A N/A", "#NA",    "-1.#IND",
                                        "-1.#QNAN", "-NaN", "-nan",     "1.#IND", "1.#QNAN",
                                        "<NA>",     "N/A",  "NA",       "NULL",   "NaN",
                                        "None",     "n/a",  "nan",      "null" };

bool data_is_na_text(const char *text)
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
            if (data_is_na_text(fld->text)) {
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

void data_loader_free(struct loader *ld, bool owns_file)
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

enum tsrnn_status data_read_table(struct loader *ld, const char *time_col,
                                  const char (*value_cols)[TSRNN_NAME_MAX], size_t value_col_count,
                                  struct tsrnn_series *series)
{
    TSRNN_TRY(read_all(&ld->file));
    TSRNN_TRY(read_header(ld, time_col, value_cols, value_col_count, series));
    return read_rows(ld, series);
}
