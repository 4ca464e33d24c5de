/* Lightning's startup lines and model summary (include/tsrnn/report.h).
 *
 * Reference: lightning.pytorch trainer/setup.py _log_device_info and
 * utilities/model_summary/model_summary.py (_format_summary_table, get_human_readable_count,
 * get_formatted_model_size), 2.4/2.5 layout; shared reference/ecosystem-formats.md §7.
 * Python's format specs are spelled out where C's printf differs (the "," grouping).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsrnn/report.h"
#include "tsrnn/world.h"

#define FOOTER_WIDTH 10 /* "{:<10}" before each footer label */

/* Inserts Python's "," thousands separators into the integer digits of `text`, a number
 * printed by printf ("-1234.5" -> "-1,234.5"). */
static size_t group_thousands(char *dst, size_t dst_nbytes, const char *text)
{
    size_t sign = text[0] == '-' ? 1 : 0;
    size_t int_digits = strspn(text + sign, "0123456789");
    char buf[128];
    size_t len = 0;

    for (size_t i = 0; i < sign + int_digits && len + 2 < sizeof(buf); i++) {
        size_t left = sign + int_digits - i; /* digits from here to the point */
        if (i > sign && left % 3 == 0)
            buf[len++] = ',';
        buf[len++] = text[i];
    }
    buf[len] = '\0';
    return (size_t)snprintf(dst, dst_nbytes, "%s%s", buf, text + sign + int_digits);
}

size_t tsrnn_report_format_count(char *dst, size_t dst_nbytes, int64_t count)
{
    static const char *const units[] = { " ", "K", "M", "B", "T" };
    const int unit_count = (int)(sizeof(units) / sizeof(units[0]));
    char text[96];

    if (count <= 0) /* Lightning asserts count >= 0; 0 has one digit */
        return (size_t)snprintf(dst, dst_nbytes, "%" PRId64 " %s", count, units[0]);

    /* As Python computes it: digits from the float log10, groups of three, the shift as a
     * float power of ten, an int below "K" or from 100 in the unit, else one decimal. */
    int digits = (int)floor(log10((double)count)) + 1;
    int groups = (digits + 2) / 3;
    if (groups > unit_count)
        groups = unit_count;
    int index = groups - 1;
    if (index == 0)
        snprintf(text, sizeof(text), "%" PRId64, count);
    else {
        double scaled = (double)count * pow(10.0, -3.0 * index);
        if (scaled >= 100.0)
            snprintf(text, sizeof(text), "%.0f", trunc(scaled));
        else
            snprintf(text, sizeof(text), "%.1f", scaled);
    }
    char grouped[128];
    group_thousands(grouped, sizeof(grouped), text);
    return (size_t)snprintf(dst, dst_nbytes, "%s %s", grouped, units[index]);
}

void tsrnn_report_devices(FILE *out, bool gpu_available, bool gpu_used, size_t tpu_cores)
{
    fprintf(out, "GPU available: %s, used: %s\n", gpu_available ? "True (cuda)" : "False",
            gpu_used ? "True" : "False");
    fprintf(out, "TPU available: %s, using: %zu TPU cores\n", tpu_cores > 0 ? "True" : "False",
            tpu_cores);
}

void tsrnn_report_cuda_devices(FILE *out, int local_rank)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    fprintf(out, "LOCAL_RANK: %d - CUDA_VISIBLE_DEVICES: [", local_rank);
    if (env != NULL) {
        fputs(env, out);
    } else { /* the driver's GPUs, counted without touching CUDA */
        int count = tsrnn_world_driver_gpus(NULL);
        for (int i = 0; i < count; i++)
            fprintf(out, "%s%d", i > 0 ? "," : "", i);
    }
    fputs("]\n", out);
}

enum {
    COL_INDEX,
    COL_NAME,
    COL_TYPE,
    COL_PARAMS,
    COL_MODE,
    COL_COUNT
};

/* Cell `col` of row `row` (row -1: the header) into buf. */
static const char *cell(const struct tsrnn_report_layer *layers, long row, int col, char *buf,
                        size_t buf_nbytes)
{
    static const char *const headers[COL_COUNT] = { " ", "Name", "Type", "Params", "Mode" };
    if (row < 0)
        return headers[col];
    const struct tsrnn_report_layer *l = &layers[row];
    switch (col) {
    case COL_INDEX:
        snprintf(buf, buf_nbytes, "%ld", row);
        return buf;
    case COL_NAME:
        return l->name;
    case COL_TYPE:
        return l->type_name;
    case COL_PARAMS:
        tsrnn_report_format_count(buf, buf_nbytes, l->param_count);
        return buf;
    default:
        return l->training ? "train" : "eval";
    }
}

static void print_row(FILE *out, const struct tsrnn_report_layer *layers, long row,
                      const size_t *widths)
{
    char buf[64];
    for (int c = 0; c < COL_COUNT; c++) {
        /* Python's "{:<{w}}" pads; " | ".join leaves the last cell's padding in place */
        fprintf(out, "%s%-*s", c > 0 ? " | " : "", (int)widths[c],
                cell(layers, row, c, buf, sizeof(buf)));
    }
    fputc('\n', out);
}

static void print_rule(FILE *out, size_t width)
{
    for (size_t i = 0; i < width; i++)
        fputc('-', out);
    fputc('\n', out);
}

void tsrnn_report_layer_table(FILE *out, const struct tsrnn_report_layer *layers,
                              size_t layer_count)
{
    size_t widths[COL_COUNT];
    size_t rule_width = 0;
    char buf[64];
    int64_t total = 0;
    int64_t train_count = 0;

    for (int c = 0; c < COL_COUNT; c++) {
        widths[c] = strlen(cell(layers, -1, c, buf, sizeof(buf)));
        for (size_t r = 0; r < layer_count; r++) {
            size_t w = strlen(cell(layers, (long)r, c, buf, sizeof(buf)));
            if (w > widths[c])
                widths[c] = w;
        }
        rule_width += widths[c];
    }
    rule_width += 3 * (COL_COUNT + 1); /* Lightning counts one column more than it has */

    for (size_t r = 0; r < layer_count; r++) {
        total += layers[r].param_count;
        train_count += layers[r].training ? 1 : 0;
    }

    print_row(out, layers, -1, widths);
    print_rule(out, rule_width);
    for (size_t r = 0; r < layer_count; r++)
        print_row(out, layers, (long)r, widths);
    print_rule(out, rule_width);

    /* Every tsrnn parameter is trainable and float32: precision 32 bits -> MB per param as
     * Lightning computes it, (32 / 8.0) * 1e-6. */
    double size_mb = (double)total * ((32 / 8.0) * 1e-6);
    char size_text[64], size_grouped[96];
    snprintf(size_text, sizeof(size_text), "%.3f", size_mb);
    group_thousands(size_grouped, sizeof(size_grouped), size_text);

    tsrnn_report_format_count(buf, sizeof(buf), total);
    fprintf(out, "%-*sTrainable params\n", FOOTER_WIDTH, buf);
    tsrnn_report_format_count(buf, sizeof(buf), 0);
    fprintf(out, "%-*sNon-trainable params\n", FOOTER_WIDTH, buf);
    tsrnn_report_format_count(buf, sizeof(buf), total);
    fprintf(out, "%-*sTotal params\n", FOOTER_WIDTH, buf);
    fprintf(out, "%-*sTotal estimated model params size (MB)\n", FOOTER_WIDTH, size_grouped);
    fprintf(out, "%-*" PRId64 "Modules in train mode\n", FOOTER_WIDTH, train_count);
    fprintf(out, "%-*" PRId64 "Modules in eval mode\n", FOOTER_WIDTH,
            (int64_t)layer_count - train_count);
}

void tsrnn_report_model_summary(FILE *out, const char *rnn_type_name, int64_t rnn_param_count,
                                int64_t head_param_count)
{
    const struct tsrnn_report_layer layers[] = {
        { "criterion", "MSELoss", 0, true },
        { "rnn", rnn_type_name, rnn_param_count, true },
        { "V", "Linear", head_param_count, true },
    };
    tsrnn_report_layer_table(out, layers, sizeof(layers) / sizeof(layers[0]));
}

void tsrnn_report_fit_stopped(FILE *out, const char *limit, int64_t value)
{
    fprintf(out, "`Trainer.fit` stopped: `%s=%" PRId64 "` reached.\n", limit, value);
}
