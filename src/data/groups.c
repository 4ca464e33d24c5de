/* Long-format CSV files (include/tsrnn/data.h): one series per id, as Darts'
 * TimeSeries.from_group_dataframe() makes them, each from its own rows of the table csv.c
 * read, made a series as series.c makes one. */
#include "table.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        if (data_is_na_text(text))
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
        series->component_names == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", all->file.path);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
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
    memcpy(series->component_names, header->component_names, C * sizeof(*series->component_names));
    memcpy(series->time_name, header->time_name, sizeof(series->time_name));
    status = data_make_series(&g, series);
out:
    data_loader_free(&g, false);
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
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_series header = { 0 };
    struct id_key *keys = NULL;
    size_t rows = 0, groups = 0;
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

    status = data_read_table(&ld, time_col, value_cols, value_col_count, &header);
    if (status != TSRNN_OK)
        goto out;
    rows = header.length;
    if (rows == 0) {
        status = tsrnn_error(TSRNN_ERR_DATA, "%s: no rows after the header, so no series", path);
        goto out;
    }
    keys = malloc(rows * sizeof(*keys));
    if (keys == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory reading %s", path);
        goto out;
    }
    status = sort_ids(&ld, rows, keys);
    if (status != TSRNN_OK)
        goto out;
    for (size_t r = 0; r < rows; r++)
        groups += r == 0 || compare_ids(&keys[r - 1], &keys[r]) != 0;
    *series = calloc(groups, sizeof(**series));
    *ids = calloc(groups, sizeof(**ids));
    if (*series == NULL || *ids == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory for %zu series", groups);
        goto out;
    }
    for (size_t first = 0; first < rows; (*count)++) {
        size_t end = first + 1;
        while (end < rows && compare_ids(&keys[first], &keys[end]) == 0)
            end++;
        snprintf((*ids)[*count], TSRNN_NAME_MAX, "%s", keys[first].text);
        status = make_group(&ld, &header, keys + first, end - first, &(*series)[*count]);
        if (status != TSRNN_OK) {
            tsrnn_error_append(status, " (series '%s' of id column '%s')", keys[first].text,
                               id_col);
            goto out;
        }
        first = end;
    }
out:
    free(keys);
    data_loader_free(&ld, true);
    tsrnn_series_finish(&header);
    if (status != TSRNN_OK) { /* nothing of the series is the caller's */
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

enum tsrnn_status tsrnn_series_load_groups_covariates(
    struct tsrnn_series **series, char (**ids)[TSRNN_NAME_MAX], size_t *count, const char *path,
    const char *id_col, const char *time_col, const char (*value_cols)[TSRNN_NAME_MAX],
    size_t value_col_count, const char (*covariate_cols)[TSRNN_NAME_MAX],
    size_t covariate_col_count, const struct tsrnn_series_options *options)
{
    enum tsrnn_status status = TSRNN_OK;
    size_t C = value_col_count, Kc = covariate_col_count;
    *series = NULL;
    *ids = NULL;
    *count = 0;
    char(*all)[TSRNN_NAME_MAX] = data_join_columns(value_cols, C, covariate_cols, Kc);
    if (all == NULL)
        return TSRNN_ERR_NOMEM;
    struct tsrnn_series_options labelled = options ? *options : (struct tsrnn_series_options){ 0 };
    labelled.target_col_count = C;
    status = tsrnn_series_load_groups(series, ids, count, path, id_col, time_col,
                                      (const char(*)[TSRNN_NAME_MAX])all, C + Kc, &labelled);
    if (status != TSRNN_OK)
        goto out;
    for (size_t i = 0; i < *count; i++) {
        status = data_split_covariates(&(*series)[i], C, Kc);
        if (status != TSRNN_OK)
            goto out;
    }
out:
    free(all);
    if (status != TSRNN_OK && *series != NULL) { /* nothing of the series is the caller's */
        for (size_t i = 0; i < *count; i++)
            tsrnn_series_finish(&(*series)[i]);
        free(*series);
        free(*ids);
        *series = NULL;
        *ids = NULL;
        *count = 0;
    }
    return status;
}
