/* The chart's axes (plot_axes.h): where the ticks go and what they read. The time axis on
 * round spacings and calendar boundaries (a week on Mondays, quarters, years, decades), the
 * value axis on 1-2-5 steps, as matplotlib's default locators place them. Arithmetic only:
 * the width of a label in pixels comes from the caller (plot.c measures it with cairo). */
#include "plot_axes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* --- integer helpers ------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) == (b < 0)) ? q + 1 : q;
}

/* Months since year 0 (year * 12 + month - 1) of the month holding `t`. The calendar lives
 * in src/data/time.c; going through its public format and parse keeps one copy of it. */
static int64_t month_of(int64_t t)
{
    char text[64];
    long long year = 0;
    int month = 1;
    tsrnn_time_format(t, TSRNN_TIME_MONTH, text, sizeof(text));
    if (sscanf(text, "%lld-%d", &year, &month) != 2)
        return 0;
    return (int64_t)year * 12 + month - 1;
}

/* The first second of month `m` (months since year 0); false outside years 0000..9999. */
static bool month_start(int64_t m, int64_t *t)
{
    char text[32];
    int64_t year = floor_div(m, 12);
    enum tsrnn_time_unit unit;
    if (year < 0 || year > 9999)
        return false;
    snprintf(text, sizeof(text), "%04d-%02d", (int)year, (int)(m - year * 12 + 1));
    return tsrnn_time_parse(text, t, &unit);
}

/* --- the time axis --------------------------------------------------------------------- */

/* A tick spacing: either a fixed number of `seconds` (aligned on its multiples since
 * 1970-01-01, a week on Mondays) or a number of calendar `months` (aligned on multiples since
 * year 0, so 3 gives quarters, 12 years, 120 decades). */
struct time_step {
    int64_t seconds;
    int64_t months;
};

static const struct time_step time_steps[] = {
    { 1, 0 },         { 2, 0 },         { 5, 0 },          { 10, 0 },    { 15, 0 },    { 30, 0 },
    { 60, 0 },        { 120, 0 },       { 300, 0 },        { 600, 0 },   { 900, 0 },   { 1800, 0 },
    { 3600, 0 },      { 7200, 0 },      { 10800, 0 },      { 21600, 0 }, { 43200, 0 }, { 86400, 0 },
    { 2 * 86400, 0 }, { 7 * 86400, 0 }, { 14 * 86400, 0 }, { 0, 1 },     { 0, 2 },     { 0, 3 },
    { 0, 6 },         { 0, 12 },        { 0, 24 },         { 0, 60 },    { 0, 120 },   { 0, 240 },
    { 0, 600 },       { 0, 1200 },      { 0, 2400 },       { 0, 6000 },  { 0, 12000 },
};

/* The spacing of one tick step and where ticks sit: t = offset + k * step for k in
 * [k0, k1] (seconds and index), or month_start(k * months) (calendar). */
struct tick_run {
    struct time_step step;
    int64_t offset;
    int64_t k0, k1;
};

static double tick_run_count(const struct tick_run *run)
{
    return run->k1 < run->k0 ? 0 : (double)run->k1 - (double)run->k0 + 1;
}

static void tick_run_fixed(struct tick_run *run, int64_t step, int64_t offset, int64_t t0,
                           int64_t t1)
{
    run->step = (struct time_step){ .seconds = step };
    run->offset = offset;
    run->k0 = ceil_div(t0 - offset, step);
    run->k1 = floor_div(t1 - offset, step);
}

static void tick_run_months(struct tick_run *run, int64_t months, int64_t t0, int64_t t1)
{
    int64_t first = month_of(t0), start;
    if (!month_start(first, &start) || start < t0)
        first++;
    run->step = (struct time_step){ .months = months };
    run->offset = 0;
    run->k0 = ceil_div(first, months);
    run->k1 = floor_div(month_of(t1), months);
}

/* How ticks of a time axis with `step` are written: in the series' own precision, or, for a
 * series finer than months, the coarsest one that still tells the ticks apart (as
 * matplotlib's date labels): "1995" for whole years, "2020-03" for months, "2020-03-01"
 * rather than "2020-03-01 00:00" for days. A monthly or yearly series keeps its own form. */
static enum tsrnn_time_unit label_unit_for(enum tsrnn_time_unit unit, struct time_step step)
{
    if (unit == TSRNN_TIME_INDEX || unit == TSRNN_TIME_YEAR || unit == TSRNN_TIME_MONTH)
        return unit;
    if (step.months > 0)
        return step.months % 12 == 0 ? TSRNN_TIME_YEAR : TSRNN_TIME_MONTH;
    if (step.seconds % 86400 == 0)
        return TSRNN_TIME_DAY;
    if (unit == TSRNN_TIME_SECOND && step.seconds % 60 == 0)
        return TSRNN_TIME_MINUTE;
    return unit;
}

/* The most ticks that fit `width_px` with labels as wide as `label_px` and a gap of
 * 2.5 font sizes between them. */
static double x_ticks_max(double width_px, double label_px, double font_px)
{
    double n = floor(width_px / (label_px + 2.5 * font_px)) + 1;
    return fmin(fmax(n, 2), 12);
}

static double label_width(const struct tsrnn_plot_text_width *width, int64_t t,
                          enum tsrnn_time_unit unit)
{
    char text[64];
    tsrnn_time_format(t, unit, text, sizeof(text));
    return width->px(width->ctx, text);
}

void tsrnn_plot_x_axis_ticks(struct tsrnn_plot_x_axis *ax,
                             const struct tsrnn_plot_text_width *width, enum tsrnn_time_unit unit,
                             double width_px, double font_px)
{
    struct tick_run run = { 0 };
    ax->label_unit = unit;
    if (unit == TSRNN_TIME_INDEX) {
        double label_px = fmax(label_width(width, ax->t0, unit), label_width(width, ax->t1, unit));
        double most = x_ticks_max(width_px, label_px, font_px);
        static const int64_t mantissas[] = { 1, 2, 5 };
        for (int64_t decade = 1;; decade *= 10) {
            bool done = false;
            for (int i = 0; i < 3 && !done; i++) {
                tick_run_fixed(&run, mantissas[i] * decade, 0, ax->t0, ax->t1);
                done = tick_run_count(&run) <= most;
            }
            if (done || decade > INT64_MAX / 100)
                break;
        }
    } else {
        int64_t finest = unit == TSRNN_TIME_SECOND   ? 1
                         : unit == TSRNN_TIME_MINUTE ? 60
                         : unit == TSRNN_TIME_DAY    ? 86400
                                                     : 0;
        int64_t finest_months = unit == TSRNN_TIME_YEAR ? 12 : 1;
        size_t count = sizeof(time_steps) / sizeof(time_steps[0]);
        for (size_t i = 0; i < count; i++) {
            struct time_step step = time_steps[i];
            if (step.seconds > 0 && (finest == 0 || step.seconds < finest))
                continue;
            if (step.months > 0 && step.months < finest_months)
                continue;
            if (step.seconds > 0)
                tick_run_fixed(&run, step.seconds, step.seconds % (7 * 86400) == 0 ? 4 * 86400 : 0,
                               ax->t0, ax->t1);
            else
                tick_run_months(&run, step.months, ax->t0, ax->t1);
            ax->label_unit = label_unit_for(unit, step);
            double label_px = label_width(width, ax->t1, ax->label_unit);
            if (tick_run_count(&run) <= x_ticks_max(width_px, label_px, font_px))
                break;
        }
    }

    ax->tick_count = 0;
    for (int64_t k = run.k0; k <= run.k1 && ax->tick_count < TSRNN_PLOT_TICKS_MAX; k++) {
        int64_t t;
        if (run.step.months > 0) {
            if (!month_start(k * run.step.months, &t))
                continue;
        } else {
            t = run.offset + k * run.step.seconds;
        }
        ax->ticks[ax->tick_count++] = t;
    }
}

/* --- a value axis ---------------------------------------------------------------------- */

/* 1, 2 or 5 times 10^(n / 3). */
static double nice_step(int n)
{
    static const double mantissas[] = { 1, 2, 5 };
    int decade = n >= 0 ? n / 3 : -((-n + 2) / 3);
    return mantissas[n - decade * 3] * pow(10, decade);
}

static double y_ticks_in(double lo, double hi, double step, double *k0)
{
    *k0 = ceil(lo / step);
    return floor(hi / step) - *k0 + 1;
}

/* Range of component `c` over all lines, padded by 5%; a single value gets +-5% of itself
 * (or +-1 around 0). Ticks: the finest nice step giving at most `most` of them, but at
 * least 2. */
void tsrnn_plot_y_axis_init(struct tsrnn_plot_y_axis *ax, const struct tsrnn_plot *plot, size_t c,
                            int most)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t l = 0; l < plot->line_count; l++) {
        const struct tsrnn_plot_line *line = &plot->lines[l];
        for (size_t i = 0; i < line->length; i++) {
            size_t at = i * plot->component_count + c;
            double v[3] = { line->values[at], line->band_low ? line->band_low[at] : NAN,
                            line->band_high ? line->band_high[at] : NAN };
            for (size_t k = 0; k < 3; k++)
                if (isfinite(v[k])) {
                    lo = fmin(lo, v[k]);
                    hi = fmax(hi, v[k]);
                }
        }
    }
    if (lo > hi) { /* no finite value */
        lo = 0;
        hi = 1;
    }
    double span = hi - lo, mid = lo / 2 + hi / 2;
    if (span <= fabs(mid) * 1e-7) {
        double pad = fabs(mid) > 0 ? fabs(mid) * 0.05 : 1;
        lo = mid - pad;
        hi = mid + pad;
    } else {
        lo -= span * 0.05;
        hi += span * 0.05;
    }
    ax->lo = lo;
    ax->hi = hi;

    /* from a decade below the step that gives `most` ticks upwards; bounded, as rounding of
     * huge values can make the tick counts jitter */
    int n = 3 * (int)floor(log10((hi - lo) / most)) - 3;
    double k0;
    for (int tries = 0; tries < 12 && y_ticks_in(lo, hi, nice_step(n), &k0) > most; tries++)
        n++;
    for (int tries = 0; tries < 6 && y_ticks_in(lo, hi, nice_step(n), &k0) < 2; tries++)
        n--;
    ax->step = nice_step(n);
    double count = y_ticks_in(lo, hi, ax->step, &ax->k0);
    ax->tick_count = (int)fmax(0, fmin(count, TSRNN_PLOT_TICKS_MAX));
}

/* Tick `i` as text: fixed decimals enough for the step (100, 150, 0.25), or the shortest
 * exponent form for very large or small numbers. */
void tsrnn_plot_y_tick_label(const struct tsrnn_plot_y_axis *ax, int i, char *out, size_t capacity)
{
    double v = (ax->k0 + i) * ax->step + 0.0; /* + 0.0: no "-0" */
    double magnitude = fmax(fabs(ax->lo), fabs(ax->hi));
    if (magnitude >= 1e6 || ax->step < 1e-4) {
        int digits = (int)floor(log10(magnitude)) - (int)floor(log10(ax->step)) + 1;
        snprintf(out, capacity, "%.*g", digits < 1 ? 1 : digits > 12 ? 12 : digits, v);
        /* "2e+07" -> "2e7", "5e-05" -> "5e-5" */
        char *e = strchr(out, 'e');
        if (e != NULL) {
            char *digit = e + 1 + (e[1] == '+' || e[1] == '-');
            char *first = digit;
            while (*first == '0' && first[1] != '\0')
                first++;
            memmove(digit, first, strlen(first) + 1);
            if (e[1] == '+')
                memmove(e + 1, e + 2, strlen(e + 2) + 1);
        }
    } else {
        int decimals = ax->step >= 1 ? 0 : (int)ceil(-log10(ax->step) - 1e-9);
        snprintf(out, capacity, "%.*f", decimals, v);
    }
}

/* The time range of all lines; a single instant is widened by one step of its unit. */
void tsrnn_plot_x_axis_range(struct tsrnn_plot_x_axis *ax, const struct tsrnn_plot *plot)
{
    ax->t0 = INT64_MAX;
    ax->t1 = INT64_MIN;
    for (size_t l = 0; l < plot->line_count; l++) {
        const struct tsrnn_plot_line *line = &plot->lines[l];
        for (size_t i = 0; i < line->length; i++) {
            ax->t0 = line->times[i] < ax->t0 ? line->times[i] : ax->t0;
            ax->t1 = line->times[i] > ax->t1 ? line->times[i] : ax->t1;
        }
    }
    if (ax->t0 == ax->t1) {
        int64_t pad = plot->time_unit == TSRNN_TIME_YEAR     ? 366 * 86400
                      : plot->time_unit == TSRNN_TIME_MONTH  ? 31 * 86400
                      : plot->time_unit == TSRNN_TIME_DAY    ? 86400
                      : plot->time_unit == TSRNN_TIME_MINUTE ? 60
                                                             : 1;
        ax->t0 = ax->t0 >= INT64_MIN + pad ? ax->t0 - pad : ax->t0;
        ax->t1 = ax->t1 <= INT64_MAX - pad ? ax->t1 + pad : ax->t1;
    }
}
