/* The chart's axes (plot_axes.c), private to report/: the ticks of the time axis and of a
 * value axis, computed without cairo. */
#ifndef TSRNN_REPORT_PLOT_AXES_H
#define TSRNN_REPORT_PLOT_AXES_H

#include <stddef.h>
#include <stdint.h>

#include "tsrnn/data.h" /* enum tsrnn_time_unit, tsrnn_time_format */
#include "tsrnn/plot.h"

#define TSRNN_PLOT_TICKS_MAX 32

struct tsrnn_plot_x_axis {
    int64_t t0, t1; /* the range drawn, t0 < t1: seconds, or the integer index */
    enum tsrnn_time_unit label_unit;
    int64_t ticks[TSRNN_PLOT_TICKS_MAX];
    int tick_count;
};

struct tsrnn_plot_y_axis {
    double lo, hi;  /* the range drawn, lo < hi */
    double step;    /* between ticks: 1, 2 or 5 times a power of ten */
    double k0;      /* the first tick is k0 * step */
    int tick_count; /* ticks k0 .. k0 + tick_count - 1 */
};

/* The width in pixels of a label as the chart will draw it (the tick label font). */
struct tsrnn_plot_text_width {
    double (*px)(void *ctx, const char *text);
    void *ctx;
};

/* The time range of all lines; a single instant is widened by one step of its unit. */
void tsrnn_plot_x_axis_range(struct tsrnn_plot_x_axis *ax, const struct tsrnn_plot *plot);

/* Picks the finest tick spacing whose labels (measured by `width`) do not crowd `width_px`
 * at a font of `font_px`, and lists the ticks of ax's range; the labels' unit goes to
 * ax->label_unit. */
void tsrnn_plot_x_axis_ticks(struct tsrnn_plot_x_axis *ax,
                             const struct tsrnn_plot_text_width *width, enum tsrnn_time_unit unit,
                             double width_px, double font_px);

/* Range of component `c` over all lines, padded by 5%; a single value gets +-5% of itself
 * (or +-1 around 0). Ticks: the finest nice step giving at most `most` of them, but at
 * least 2. */
void tsrnn_plot_y_axis_init(struct tsrnn_plot_y_axis *ax, const struct tsrnn_plot *plot, size_t c,
                            int most);

/* Tick `i` as text: fixed decimals enough for the step (100, 150, 0.25), or the shortest
 * exponent form for very large or small numbers. */
void tsrnn_plot_y_tick_label(const struct tsrnn_plot_y_axis *ax, int i, char *out, size_t capacity);

#endif
