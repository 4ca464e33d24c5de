/* Forecast pictures: a PNG of history, actual values and forecast over time, drawn with
 * cairo (built when the `plots` feature finds libcairo2-dev).
 *
 * The picture reads like Darts' `series.plot(); pred.plot(label="forecast")`: matplotlib's
 * tab10 colours, a legend at the top left (another corner of the top panel when the lines
 * run under it there), the time on the x axis with date labels in the series' own precision
 * (years, months, days, ...; ticks on calendar boundaries), one panel per component stacked
 * vertically, each with its name on the y axis and value ticks at round 1-2-5 steps, and the
 * title (e.g. the model and the forecast's MAPE) above. Font sizes and line widths grow
 * with the picture.
 */
#ifndef TSRNN_PLOT_H
#define TSRNN_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsrnn/config.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"

/* The picture sizes accepted, in pixels. */
#define TSRNN_PLOT_WIDTH_MIN  200
#define TSRNN_PLOT_HEIGHT_MIN 150
#define TSRNN_PLOT_SIZE_MAX   8000

/* tab10: history, actual, forecast. */
#define TSRNN_PLOT_BLUE   0x1f77b4u
#define TSRNN_PLOT_ORANGE 0xff7f0eu
#define TSRNN_PLOT_GREEN  0x2ca02cu

/* One line of the picture: `length` points (times[i], values[i * component_count + c]) per
 * component c, joined in the given order; lines are drawn in the order of the array, later
 * ones on top. A line with length 0 is skipped (and left out of the legend); a non-finite
 * value breaks the line (a point alone is a dot). */
struct tsrnn_plot_line {
    const char *label;    /* legend text; NULL: drawn, not in the legend (a backtest's 2nd,
                             3rd, ... forecasts under the first one's entry) */
    uint32_t rgb;         /* 0xRRGGBB */
    const int64_t *times; /* (length) seconds since 1970 (naive), or the integer index */
    const float *values;  /* (length, component_count) row-major */
    size_t length;
};

struct tsrnn_plot {
    const char *title;
    enum tsrnn_time_unit time_unit; /* how times are labelled (tsrnn_time_format()) */
    const char *time_name;          /* x axis label; "" or NULL: "time" */
    size_t component_count;
    const char (*component_names)[TSRNN_NAME_MAX]; /* (component_count) y axis labels, or NULL */
    const struct tsrnn_plot_line *lines;
    size_t line_count;
    int width, height; /* pixels */
};

/* True when this build can draw (cairo was found at build time). */
bool tsrnn_plot_available(void);

/* True when this build can draw and cairo and fontconfig load on this machine (loaded now,
 * once per process). On false `why` gets the sentence: the build has no cairo, or "cannot
 * load libcairo.so.2 (...); install it (Debian: libcairo2)", or the library lacks a function.
 * Pictures asked for explicitly are refused with it; a default picture is skipped with a
 * warning (docs/architecture.md "Optional libraries"). */
bool tsrnn_plot_usable(char *why, size_t why_nbytes);

/* The pictures' slow first steps, done now so that a later picture finds them done: cairo and
 * fontconfig loaded (they are not linked: loading them cost every process's start-up), the
 * DejaVu faces set up, and the glyphs of text at the font sizes of a `width` x `height`
 * picture rendered into cairo's caches. For a helper thread while the caller's thread works
 * on (the trainer's, while it trains). Nothing it does changes a picture's pixels or bytes,
 * and it reports nothing: libraries that cannot be loaded are the next tsrnn_plot_png()'s
 * error, as without it. Safe beside a tsrnn_plot_png() on another thread. Nothing without
 * cairo. */
void tsrnn_plot_warmup(int width, int height);

/* Draws `plot` into a PNG at `path`, replaced atomically (tsrnn_atomic_file). The time axis
 * spans all lines (a single instant is widened by one step of its unit), each value axis
 * all lines' values of its component plus 5% (a constant one +-5% of its value). Text that
 * is not UTF-8 is drawn with '?' for the bad bytes; text too long is cut with an ellipsis.
 * Errors: TSRNN_ERR_USAGE when this build has no cairo ("... built without cairo: install
 * libcairo2-dev and rebuild"), the size is outside 200x150 .. 8000x8000, or a line with
 * points lacks its times or values; TSRNN_ERR_DATA when there is nothing to draw (no
 * component, or every line empty); TSRNN_ERR_IO naming the path; TSRNN_ERR_NOMEM. */
enum tsrnn_status tsrnn_plot_png(const struct tsrnn_plot *plot, const char *path);

#endif
