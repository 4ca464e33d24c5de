/* The dataset summary a run prints before training (include/tsrnn/report.h). */
#include "tsrnn/report.h"

#include "tsrnn/encoders.h"

static void print_range(FILE *out, const struct tsrnn_series *s, size_t first, size_t count)
{
    char a[64], b[64];
    tsrnn_time_format(s->times[first], s->time_unit, a, sizeof(a));
    tsrnn_time_format(s->times[first + count - 1], s->time_unit, b, sizeof(b));
    fprintf(out, "%s .. %s", a, b);
}

/* What [data] fill_missing_dates and fill_missing_values did, when they did anything:
 * "Filled: 1 missing date inserted (1955-06), 1 missing value interpolated". */
static void print_filled(FILE *out, const struct tsrnn_series *s)
{
    if (s->inserted_count == 0 && s->filled_count == 0)
        return;
    fputs("Filled:", out);
    if (s->inserted_count > 0) {
        fprintf(out, " %zu missing date%s inserted (", s->inserted_count,
                s->inserted_count == 1 ? "" : "s");
        for (size_t i = 0; i < s->inserted_count && i < TSRNN_SERIES_INSERTED_NOTED; i++) {
            char stamp[64];
            tsrnn_time_format(s->inserted_times[i], s->time_unit, stamp, sizeof(stamp));
            fprintf(out, "%s%s", i ? ", " : "", stamp);
        }
        fprintf(out, "%s)%s", s->inserted_count > TSRNN_SERIES_INSERTED_NOTED ? ", ..." : "",
                s->filled_count > 0 ? "," : "");
    }
    if (s->filled_count > 0)
        fprintf(out, " %zu missing value%s interpolated", s->filled_count,
                s->filled_count == 1 ? "" : "s");
    fputc('\n', out);
}

/* "Covariates: 13 future covariates (the model's input: 1 + 13): datetime_attribute year,
 * one_hot month (12 columns); scaler minmax" when there are any. */
static void print_covariates(FILE *out, const struct tsrnn_config *cfg,
                             const struct tsrnn_dataset *ds)
{
    const struct tsrnn_covariates *cov = ds->covariates;
    if (cov == NULL || cov->count == 0)
        return;
    fprintf(out, "Covariates: %zu future covariates (the model's input: %zu + %zu):", cov->count,
            ds->component_count, cov->count);
    const char *sep = " ";
    for (size_t k = 0; k < cov->column_count; k++, sep = ", ")
        fprintf(out, "%scolumn %s", sep, cov->column_names[k]);
    for (size_t e = 0; e < cov->encoder_count; e++, sep = ", ") {
        size_t width = tsrnn_encoder_width(&cov->encoders[e]);
        fprintf(out, "%s%s %s", sep, tsrnn_encoder_kind_name(cov->encoders[e].kind),
                cov->encoders[e].name);
        if (width > 1)
            fprintf(out, " (%zu columns)", width);
    }
    fprintf(out, "; scaler %s\n", cfg->cov_scaler == TSRNN_SCALER_MINMAX ? "minmax" : "none");
}

/* Series listed one per line in the summary of a run of several; the rest are counted. */
#define SUMMARY_SERIES 10

/* A run of several series: totals, then each of the first SUMMARY_SERIES on its own line. */
static void report_series_list(FILE *out, const struct tsrnn_config *cfg,
                               const struct tsrnn_dataset *ds)
{
    const struct tsrnn_series *first = &ds->items[0].series;
    size_t points = 0, train = 0, val = 0;
    for (size_t i = 0; i < ds->series_count; i++) {
        points += ds->items[i].series.length;
        train += ds->items[i].train_length;
        val += ds->items[i].val_length;
    }
    fprintf(out, "Data: %zu series (%s), %zu points in all, %zu component%s:", ds->series_count,
            cfg->data_path[0] == '\0' ? "given to the fit"
            : cfg->id_col[0] != '\0'  ? "one per id_col value"
                                      : "one per file",
            points, first->component_count, first->component_count == 1 ? "" : "s");
    for (size_t c = 0; c < first->component_count; c++)
        fprintf(out, " %s", first->component_names[c]);
    fprintf(out,
            "\nSplit: train %zu points, val %zu points; scaler %s, fitted on each series' "
            "training part\n",
            train, val, cfg->scaler == TSRNN_SCALER_MINMAX ? "minmax" : "none");
    print_covariates(out, cfg, ds);
    for (size_t i = 0; i < ds->series_count && i < SUMMARY_SERIES; i++) {
        const struct tsrnn_dataset_series *item = &ds->items[i];
        const struct tsrnn_series *s = &item->series;
        char freq[TSRNN_FREQ_NAME_MAX];
        tsrnn_freq_name(&s->freq, freq, sizeof(freq));
        fprintf(out, "  %s: %zu points (", item->id, s->length);
        print_range(out, s, 0, s->length);
        fprintf(out, ", freq %s), train %zu, val %zu, %s min %.9g max %.9g\n", freq,
                item->train_length, item->val_length, s->component_names[0],
                item->scaler.data_min[0], item->scaler.data_max[0]);
    }
    if (ds->series_count > SUMMARY_SERIES)
        fprintf(out, "  ... and %zu more series\n", ds->series_count - SUMMARY_SERIES);
    fprintf(out,
            "Windows: training_length %zu: %zu training samples (%zu series x %zu, Darts' "
            "max_samples_per_ts %d), %zu validation samples\n",
            ds->training_length, ds->train.count, ds->series_count, ds->train.samples_per_series,
            cfg->max_samples_per_ts, ds->val.count);
}

/* A run of one series: it, its split, its scaler and its windows. */
static void report_one_series(FILE *out, const struct tsrnn_config *cfg,
                              const struct tsrnn_dataset *ds)
{
    const struct tsrnn_dataset_series *item = &ds->items[0];
    const struct tsrnn_series *s = &item->series;

    char freq[TSRNN_FREQ_NAME_MAX];
    tsrnn_freq_name(&s->freq, freq, sizeof(freq));
    /* No [data] path: series a program gave the fit (the C API) */
    fprintf(out, "Data: %s: %zu points (",
            cfg->data_path[0] != '\0' ? tsrnn_display_path(cfg->data_path)
                                      : "the series given to the fit",
            s->length);
    print_range(out, s, 0, s->length);
    fprintf(out, ", freq %s), %zu component%s:", freq, s->component_count,
            s->component_count == 1 ? "" : "s");
    for (size_t c = 0; c < s->component_count; c++)
        fprintf(out, " %s", s->component_names[c]);
    fputc('\n', out);
    print_filled(out, s);

    if (item->val_length > 0) {
        fprintf(out, "Split: train %zu points (", item->train_length);
        print_range(out, s, 0, item->train_length);
        fprintf(out, "), val %zu points (", item->val_length);
        print_range(out, s, item->train_length, item->val_length);
        fputs(")\n", out);
    } else {
        fprintf(out, "Split: train %zu points, no validation\n", item->train_length);
    }

    fprintf(out, "Scaler: %s, fitted on the training part:",
            cfg->scaler == TSRNN_SCALER_MINMAX ? "minmax" : "none");
    for (size_t c = 0; c < s->component_count; c++)
        fprintf(out, " %s min %.9g max %.9g", s->component_names[c], item->scaler.data_min[c],
                item->scaler.data_max[c]);
    fputc('\n', out);

    print_covariates(out, cfg, ds);

    fprintf(out, "Windows: training_length %zu: %zu training samples, %zu validation samples\n",
            ds->training_length, ds->train.count, ds->val.count);
}

void tsrnn_report_dataset(FILE *out, const struct tsrnn_config *cfg, const struct tsrnn_dataset *ds,
                          const struct tsrnn_sampler *sampler)
{
    if (ds->items[0].id[0] != '\0')
        report_series_list(out, cfg, ds);
    else
        report_one_series(out, cfg, ds);
    fprintf(out, "Batches: %zu per epoch at batch_size %zu (rank %zu of %zu, shuffle %s)\n",
            tsrnn_sampler_batch_count(sampler), sampler->batch_size, sampler->rank,
            sampler->world_size, sampler->shuffle ? "on" : "off");
}
