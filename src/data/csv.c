/* A time series from a CSV file (include/tsrnn/data.h).
 *
 * The reader is small and strict on purpose: the files Darts users have are what pandas'
 * `to_csv` writes (a header row, a comma between fields, optional double quotes), and every
 * problem must be reported as `file:line:column` with the column's name and the bad text.
 * The whole file is read into memory and split in place.
 *
 * Time column rule (pandas / Darts from_dataframe): a column whose every value is an integer
 * is an integer index; anything else must parse as a time stamp (tsrnn_time_parse()).
 * Either way the stamps must strictly increase.
 */
#include "tsrnn/data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static enum tsrnn_status read_all(struct csv_file *f)
{
    FILE *fp = fopen(f->path, "rb");
    if (fp == NULL)
        return tsrnn_error_errno(TSRNN_ERR_DATA, errno, "cannot open data file %s", f->path);
    size_t capacity = 1 << 16, used = 0;
    char *buf = malloc(capacity);
    for (;;) {
        if (buf == NULL) {
            fclose(fp);
            return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", f->path);
        }
        used += fread(buf + used, 1, capacity - used - 1, fp);
        if (used < capacity - 1)
            break;
        capacity *= 2;
        char *grown = realloc(buf, capacity);
        if (grown == NULL)
            free(buf);
        buf = grown;
    }
    int err = errno;
    bool failed = ferror(fp) != 0;
    fclose(fp);
    if (failed) {
        free(buf);
        return tsrnn_error_errno(TSRNN_ERR_DATA, err, "cannot read data file %s", f->path);
    }
    buf[used] = '\0';
    f->buf = buf;
    f->nbytes = used;
    f->pos = 0;
    /* A UTF-8 byte order mark (Excel writes one) is not part of the first column's name. */
    if (used >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
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
    memset(series, 0, sizeof(*series));
}

/* Everything tsrnn_series_load_csv() holds while it reads. */
struct loader {
    struct csv_file file;
    size_t column_count; /* K, from the header */
    size_t header_line;  /* its line number (blank lines may come first) */
    char **header;       /* (K) column names, pointing into file.buf */
    long time_idx;       /* -1 without a time column */
    size_t *value_idx;   /* (C) header column of each component */
    size_t row_capacity;
    char **time_text;    /* (L) raw time fields, into file.buf */
    size_t *time_line;   /* (L) */
    size_t *time_column; /* (L) */
};

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

    size_t c_count = value_col_count;
    if (c_count == 0)
        c_count = ld->column_count - (ld->time_idx >= 0);
    if (c_count == 0)
        return tsrnn_error(TSRNN_ERR_DATA, "%s:%zu: no value column besides the time column '%s'",
                           ld->file.path, ld->header_line, time_col);
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
        if ((long)i != ld->time_idx)
            ld->value_idx[c++] = i;
    for (size_t i = 0; i < value_col_count; i++) {
        long idx = find_column(ld, value_cols[i]);
        if (idx < 0)
            return missing_column(ld, value_cols[i], "[data] value_cols");
        if (idx == ld->time_idx)
            return tsrnn_error(TSRNN_ERR_DATA,
                               "[data] value_cols lists the time column '%s'; a column is either "
                               "the time or a value",
                               value_cols[i]);
        ld->value_idx[c++] = (size_t)idx;
    }
    series->component_count = c_count;
    for (size_t i = 0; i < c_count; i++)
        snprintf(series->component_names[i], TSRNN_NAME_MAX, "%s", ld->header[ld->value_idx[i]]);
    snprintf(series->time_name, sizeof(series->time_name), "%s", time_col);
    return TSRNN_OK;
}

static enum tsrnn_status grow_rows(struct loader *ld, struct tsrnn_series *s)
{
    size_t capacity = ld->row_capacity ? ld->row_capacity * 2 : 1024;
    float *values = realloc(s->values, capacity * s->component_count * sizeof(float));
    if (values != NULL)
        s->values = values;
    char **text = realloc(ld->time_text, capacity * sizeof(*text));
    if (text != NULL)
        ld->time_text = text;
    size_t *line = realloc(ld->time_line, capacity * sizeof(*line));
    if (line != NULL)
        ld->time_line = line;
    size_t *column = realloc(ld->time_column, capacity * sizeof(*column));
    if (column != NULL)
        ld->time_column = column;
    if (values == NULL || text == NULL || line == NULL || column == NULL)
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
        for (size_t c = 0; c < C; c++) {
            const struct field *fld = &ld->file.fields[ld->value_idx[c]];
            const char *name = ld->header[ld->value_idx[c]];
            char *end;
            if (fld->text[0] == '\0')
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s:%zu:%zu: column '%s': empty value; every point needs a "
                                   "number (fill gaps before training)",
                                   ld->file.path, ld->file.line, fld->column, name);
            errno = 0;
            double v = strtod(fld->text, &end);
            if (*end != '\0' || end == fld->text)
                return tsrnn_error(
                    TSRNN_ERR_DATA, "%s:%zu:%zu: column '%s': '%s' is not a number%s",
                    ld->file.path, ld->file.line, fld->column, name, fld->text,
                    ld->time_idx < 0 && C > 1 ? " (if it is the time column, set [data] time_col)"
                                              : "");
            float f = (float)v;
            if (!isfinite(v) || !isfinite(f))
                return tsrnn_error(TSRNN_ERR_DATA,
                                   "%s:%zu:%zu: column '%s': '%s' is not a finite float32 value; "
                                   "NaN and infinity cannot be trained on",
                                   ld->file.path, ld->file.line, fld->column, name, fld->text);
            s->values[t * C + c] = f;
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
    for (size_t t = 0; t < s->length && all_integers; t++)
        all_integers = tsrnn_parse_int64(ld->time_text[t], &s->times[t]);
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

enum tsrnn_status tsrnn_series_load_csv(struct tsrnn_series *series, const char *path,
                                        const char *time_col,
                                        const char (*value_cols)[TSRNN_NAME_MAX],
                                        size_t value_col_count)
{
    struct loader ld = { .file = { .path = path } };
    memset(series, 0, sizeof(*series));

    enum tsrnn_status status = read_all(&ld.file);
    if (status == TSRNN_OK)
        status = read_header(&ld, time_col, value_cols, value_col_count, series);
    if (status == TSRNN_OK)
        status = read_rows(&ld, series);
    if (status == TSRNN_OK)
        status = parse_times(&ld, series);

    free(ld.file.buf);
    free(ld.file.fields);
    free(ld.header);
    free(ld.value_idx);
    free(ld.time_text);
    free(ld.time_line);
    free(ld.time_column);
    if (status != TSRNN_OK)
        tsrnn_series_finish(series);
    return status;
}
