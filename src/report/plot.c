/* Forecast pictures (include/tsrnn/plot.h): the chart, laid out and drawn with cairo's image
 * surface and toy text API ("DejaVu Sans", from fonts-dejavu-core). Its neighbours: where
 * the axes' ticks go (plot_axes.c), cairo and fontconfig, loaded when first needed
 * (plot_libs.c), and the PNG file (png.c).
 *
 * The look follows Darts' TimeSeries.plot() on matplotlib's defaults: tab10 lines about
 * 1.5-2 px wide, a light grid, ticks at round values (1-2-5 steps on the value axis,
 * calendar boundaries on a time axis), a legend in a corner of the top panel.
 *
 * Layout, from the outside in: the title centred on top; one panel per component stacked
 * vertically, all sharing the time axis; the component name rotated at the left of its
 * panel, then its value tick labels; the time tick labels and the time column's name under
 * the bottom panel. Font sizes and line widths grow with the picture (1 at 1000x500).
 */
#include "tsrnn/plot.h"

#include "tsrnn_build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if TSRNN_HAVE_PLOTS
#include "plot_axes.h"
#include "plot_libs.h"
#include "png.h"
#endif

bool tsrnn_plot_available(void)
{
    return TSRNN_HAVE_PLOTS;
}

#if TSRNN_HAVE_PLOTS

#define FONT     "DejaVu Sans"
#define TEXT_MAX 512 /* bytes of a title or label drawn, "..." included */

/* Font sizes: the tick labels', axis names' and (at most) the component names' at 1000x500
 * pixels; the title's (bold, at most) and the legend's relative to it. */
#define FONT_PX      13
#define TITLE_SCALE  1.3
#define LEGEND_SCALE 0.95

/* --- text ------------------------------------------------------------------------------ */

/* The libraries for a picture at `path`: loaded, or why not. */
static enum tsrnn_status load_for(const char *path)
{
    const char *why;
    if (!tsrnn_plot_libs_load(&why))
        return tsrnn_error(TSRNN_ERR_IO, "cannot draw %s: %s", tsrnn_display_path(path), why);
    return TSRNN_OK;
}

enum valign {
    VALIGN_TOP,    /* y is the top of the font's ascent */
    VALIGN_MIDDLE, /* y is the middle of the text's ink */
};

static void set_font(cairo_t *cr, double size_px, bool bold)
{
    LIB(cairo_select_font_face)
    (cr, FONT, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    LIB(cairo_set_font_size)(cr, size_px);
}

static double text_width(cairo_t *cr, const char *text)
{
    cairo_text_extents_t te;
    LIB(cairo_text_extents)(cr, text, &te);
    return te.x_advance;
}

/* Draws `text` at (x, y): `halign` 0 puts x at its left end, 0.5 at its centre, 1 at its
 * right end. */
/* text_width() as the axes measure their labels (plot_axes.h): in the current font. */
static double measure_label(void *cr, const char *text)
{
    return text_width(cr, text);
}

static void draw_text(cairo_t *cr, const char *text, double x, double y, double halign,
                      enum valign valign)
{
    cairo_text_extents_t te;
    LIB(cairo_text_extents)(cr, text, &te);
    double baseline;
    if (valign == VALIGN_TOP) {
        cairo_font_extents_t fe;
        LIB(cairo_font_extents)(cr, &fe);
        baseline = y + fe.ascent;
    } else {
        baseline = y - (te.y_bearing + te.height / 2);
    }
    LIB(cairo_move_to)(cr, x - halign * te.x_advance, baseline);
    LIB(cairo_show_text)(cr, text);
}

/* The font size at most `size_px` (and at least `min_px`) at which `text` fits `room_px`. */
static double fit_font(cairo_t *cr, const char *text, double size_px, double min_px, double room_px,
                       bool bold)
{
    set_font(cr, size_px, bold);
    double w = text_width(cr, text);
    if (w > room_px && w > 0)
        size_px = fmax(min_px, size_px * room_px / w);
    return size_px;
}

/* Bytes in the UTF-8 sequence at `p` (1..4), or 0 when it is not valid UTF-8 (cairo refuses
 * to draw such text, and a CSV header may be Latin-1). */
static size_t utf8_sequence(const unsigned char *p)
{
    size_t n = p[0] < 0x80                    ? 1
               : p[0] >= 0xc2 && p[0] <= 0xdf ? 2
               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                              : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0; /* overlong forms, surrogates, beyond U+10FFFF */
    return n;
}

/* `text` (NULL = "") as valid UTF-8 into `out`: a '?' for each bad byte, cut at a character
 * boundary to fit. */
static const char *clean_text(const char *text, char *out, size_t capacity)
{
    const unsigned char *p = (const unsigned char *)(text != NULL ? text : "");
    size_t used = 0;
    while (*p != '\0') {
        size_t n = utf8_sequence(p);
        if (used + (n > 0 ? n : 1) >= capacity)
            break;
        if (n == 0) {
            out[used++] = '?';
            p++;
            continue;
        }
        memcpy(out + used, p, n);
        used += n;
        p += n;
    }
    out[used] = '\0';
    return out;
}

/* Cuts valid UTF-8 `text` in place, with "..." (U+2026) at the end, until it fits `room_px`
 * in the current font. `text` has room for the 3 more bytes. */
static void ellipsize(cairo_t *cr, char *text, double room_px)
{
    size_t n = strlen(text);
    if (text_width(cr, text) <= room_px)
        return;
    while (n > 0) {
        do
            n--;
        while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80);
        memcpy(text + n, "\xe2\x80\xa6", 4);
        if (text_width(cr, text) <= room_px)
            return;
    }
}

static void set_rgb(cairo_t *cr, uint32_t rgb)
{
    LIB(cairo_set_source_rgb)
    (cr, ((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0);
}

/* --- layout ---------------------------------------------------------------------------- */

/* Pixel positions; panels have whole-pixel edges so that 1 px rules stay crisp. */
struct layout {
    double font_px;       /* tick labels, axis names, legend */
    double line_px;       /* data lines */
    double tick_px;       /* tick marks */
    double left, right;   /* the panels' x extent */
    double top;           /* the first panel's top */
    double panel_h;       /* each panel's height */
    double gap;           /* between panels */
    double title_px;      /* title font; 0 without a title */
    double title_y;       /* the title's top */
    double name_x;        /* the rotated component names' top (their leftmost pixel) */
    char title[TEXT_MAX]; /* cleaned and cut to the width */
};

struct chart {
    const struct tsrnn_plot *plot;
    cairo_t *cr;
    struct layout lo;
    struct tsrnn_plot_x_axis x;
    struct tsrnn_plot_y_axis *y; /* (component_count) */
};

static double panel_top(const struct layout *lo, size_t c)
{
    return lo->top + (double)c * (lo->panel_h + lo->gap);
}

static double map_x(const struct chart *ch, int64_t t)
{
    const struct tsrnn_plot_x_axis *ax = &ch->x;
    return ch->lo.left + ((double)t - (double)ax->t0) / ((double)ax->t1 - (double)ax->t0) *
                             (ch->lo.right - ch->lo.left);
}

static double map_y(const struct chart *ch, size_t c, double v)
{
    const struct tsrnn_plot_y_axis *ax = &ch->y[c];
    double bottom = panel_top(&ch->lo, c) + ch->lo.panel_h;
    return bottom - (v - ax->lo) / (ax->hi - ax->lo) * ch->lo.panel_h;
}

static const char *component_name(const struct tsrnn_plot *plot, size_t c)
{
    return plot->component_names != NULL ? plot->component_names[c] : "";
}

static double font_line_px(cairo_t *cr)
{
    cairo_font_extents_t fe;
    LIB(cairo_font_extents)(cr, &fe);
    return fe.ascent + fe.descent;
}

/* How much larger than at 1000x500 everything is drawn. */
static double picture_scale(double width, double height)
{
    return fmin(fmax(sqrt(width * height / (1000.0 * 500.0)), 0.6), 3.0);
}

/* Sizes everything from the picture's size, the title, the tick labels and the names. */
static void chart_layout(struct chart *ch)
{
    const struct tsrnn_plot *plot = ch->plot;
    cairo_t *cr = ch->cr;
    struct layout *lo = &ch->lo;
    size_t count = plot->component_count;
    double width = plot->width, height = plot->height;

    double scale = picture_scale(width, height);
    lo->font_px = FONT_PX * scale;
    lo->line_px = fmax(1.5, 1.8 * scale);
    lo->tick_px = 0.35 * lo->font_px;
    double font = lo->font_px, pad = 0.8 * font;

    /* vertically: the title, the panels, then the time tick labels and the time's name */
    lo->top = pad;
    clean_text(plot->title, lo->title, TEXT_MAX - 3);
    if (lo->title[0] != '\0') {
        lo->title_px =
            fit_font(cr, lo->title, TITLE_SCALE * font, 0.9 * font, width - 2 * pad, true);
        set_font(cr, lo->title_px, true);
        ellipsize(cr, lo->title, width - 2 * pad);
        lo->title_y = 0.7 * pad;
        lo->top = lo->title_y + font_line_px(cr) + 0.6 * pad;
    }
    set_font(cr, font, false);
    double line_h = font_line_px(cr);
    double below = lo->tick_px + 0.3 * font + line_h + 0.3 * font + line_h + 0.5 * pad;
    lo->top = round(lo->top);
    lo->gap = count > 1 ? round(1.2 * font) : 0;
    lo->panel_h = floor((height - lo->top - below - lo->gap * (double)(count - 1)) / (double)count);
    lo->panel_h = fmax(lo->panel_h, 4);

    /* the value axes, whose tick labels set the left margin */
    int most = (int)fmin(fmax(floor(lo->panel_h / (1.8 * font)), 2), 8);
    double label_px = 0;
    bool named = false;
    for (size_t c = 0; c < count; c++) {
        tsrnn_plot_y_axis_init(&ch->y[c], plot, c, most);
        for (int i = 0; i < ch->y[c].tick_count; i++) {
            char text[64];
            tsrnn_plot_y_tick_label(&ch->y[c], i, text, sizeof(text));
            label_px = fmax(label_px, text_width(cr, text));
        }
        named = named || component_name(plot, c)[0] != '\0';
    }
    lo->name_x = 0.6 * pad;
    lo->left =
        lo->name_x + (named ? line_h + 0.5 * font : 0) + label_px + 0.35 * font + lo->tick_px;
    lo->left = round(lo->left);

    /* room on the right for half of a time label centred on the last tick */
    tsrnn_plot_x_axis_range(&ch->x, plot);
    char last[64];
    tsrnn_time_format(ch->x.t1, plot->time_unit, last, sizeof(last));
    double last_px = text_width(cr, last);
    lo->right = round(width - fmax(1.5 * font, last_px / 2 + 0.3 * font));
    struct tsrnn_plot_text_width measure = { .px = measure_label, .ctx = cr };
    tsrnn_plot_x_axis_ticks(&ch->x, &measure, plot->time_unit, lo->right - lo->left, font);
}

/* --- drawing --------------------------------------------------------------------------- */

static void draw_grid(const struct chart *ch, size_t c)
{
    cairo_t *cr = ch->cr;
    const struct tsrnn_plot_y_axis *ya = &ch->y[c];
    double top = panel_top(&ch->lo, c), bottom = top + ch->lo.panel_h;

    LIB(cairo_set_line_width)(cr, 1);
    LIB(cairo_set_source_rgb)(cr, 0.88, 0.88, 0.88);
    for (int i = 0; i < ch->x.tick_count; i++) {
        double x = floor(map_x(ch, ch->x.ticks[i])) + 0.5;
        LIB(cairo_move_to)(cr, x, top);
        LIB(cairo_line_to)(cr, x, bottom);
    }
    for (int i = 0; i < ya->tick_count; i++) {
        double y = floor(map_y(ch, c, (ya->k0 + i) * ya->step)) + 0.5;
        LIB(cairo_move_to)(cr, ch->lo.left, y);
        LIB(cairo_line_to)(cr, ch->lo.right, y);
    }
    LIB(cairo_stroke)(cr);
}

/* The value ticks, their labels and the component's name at the left of panel `c`, and the
 * panel's frame. */
static void draw_value_axis(const struct chart *ch, size_t c)
{
    cairo_t *cr = ch->cr;
    const struct layout *lo = &ch->lo;
    const struct tsrnn_plot_y_axis *ya = &ch->y[c];
    double top = panel_top(lo, c);

    LIB(cairo_set_line_width)(cr, 1);
    LIB(cairo_set_source_rgb)(cr, 0.25, 0.25, 0.25);
    LIB(cairo_rectangle)(cr, lo->left + 0.5, top + 0.5, lo->right - lo->left - 1, lo->panel_h - 1);
    LIB(cairo_stroke)(cr);

    set_font(cr, lo->font_px, false);
    for (int i = 0; i < ya->tick_count; i++) {
        char text[64];
        double y = floor(map_y(ch, c, (ya->k0 + i) * ya->step)) + 0.5;
        LIB(cairo_move_to)(cr, lo->left - lo->tick_px, y);
        LIB(cairo_line_to)(cr, lo->left, y);
        LIB(cairo_stroke)(cr);
        tsrnn_plot_y_tick_label(ya, i, text, sizeof(text));
        draw_text(cr, text, lo->left - lo->tick_px - 0.35 * lo->font_px, y, 1, VALIGN_MIDDLE);
    }

    char name[TEXT_MAX];
    clean_text(component_name(ch->plot, c), name, TEXT_MAX - 3);
    if (name[0] != '\0') {
        set_font(cr, fit_font(cr, name, lo->font_px, 0.8 * lo->font_px, lo->panel_h, false), false);
        ellipsize(cr, name, lo->panel_h);
        LIB(cairo_save)(cr);
        LIB(cairo_translate)(cr, lo->name_x, top + lo->panel_h / 2);
        LIB(cairo_rotate)(cr, -M_PI / 2);
        draw_text(cr, name, 0, 0, 0.5, VALIGN_TOP);
        LIB(cairo_restore)(cr);
    }
}

/* A line's band for component `c`: each run of points whose bounds are finite, filled between
 * them in the line's colour at matplotlib's alpha 0.25 (Darts' fill_between); a run of one
 * point, a vertical line. */
static void draw_band(const struct chart *ch, const struct tsrnn_plot_line *line, size_t c)
{
    cairo_t *cr = ch->cr;
    size_t C = ch->plot->component_count;
    double r = (double)((line->rgb >> 16) & 0xff) / 255.0;
    double g = (double)((line->rgb >> 8) & 0xff) / 255.0, b = (double)(line->rgb & 0xff) / 255.0;
    for (size_t start = 0; start < line->length;) {
        size_t end = start;
        while (end < line->length && isfinite(line->band_low[end * C + c]) &&
               isfinite(line->band_high[end * C + c]))
            end++;
        if (end == start) {
            start++;
            continue;
        }
        LIB(cairo_new_path)(cr);
        for (size_t i = start; i < end; i++)
            LIB(cairo_line_to)
        (cr, map_x(ch, line->times[i]), map_y(ch, c, line->band_low[i * C + c]));
        for (size_t i = end; i-- > start;)
            LIB(cairo_line_to)
        (cr, map_x(ch, line->times[i]), map_y(ch, c, line->band_high[i * C + c]));
        if (end - start == 1) {
            LIB(cairo_set_source_rgb)(cr, r, g, b);
            LIB(cairo_stroke)(cr);
        } else {
            LIB(cairo_set_source_rgba)(cr, r, g, b, 0.25);
            LIB(cairo_fill)(cr);
        }
        start = end;
    }
}

/* Each line's points for component `c`, in order; a point between non-finite values (or a
 * line of one point) is a dot. A line's band lies under it. */
static void draw_lines(const struct chart *ch, size_t c)
{
    cairo_t *cr = ch->cr;
    const struct tsrnn_plot *plot = ch->plot;
    double top = panel_top(&ch->lo, c);

    /* every point lies inside the panel; the clip, wide enough for a dot at the edge, only
     * keeps rounding from painting into a neighbour */
    double dot = 1.6 * ch->lo.line_px, margin = dot + 1;
    LIB(cairo_save)(cr);
    LIB(cairo_rectangle)
    (cr, ch->lo.left - margin, top - margin, ch->lo.right - ch->lo.left + 2 * margin,
     ch->lo.panel_h + 2 * margin);
    LIB(cairo_clip)(cr);
    LIB(cairo_set_line_width)(cr, ch->lo.line_px);
    LIB(cairo_set_line_join)(cr, CAIRO_LINE_JOIN_ROUND);
    LIB(cairo_set_line_cap)(cr, CAIRO_LINE_CAP_ROUND);
    for (size_t l = 0; l < plot->line_count; l++) {
        const struct tsrnn_plot_line *line = &plot->lines[l];
        if (line->band_low != NULL && line->band_high != NULL)
            draw_band(ch, line, c);
        set_rgb(cr, line->rgb);
        size_t run = 0;
        double x = 0, y = 0;
        for (size_t i = 0; i <= line->length; i++) {
            double v = i < line->length ? line->values[i * plot->component_count + c] : NAN;
            if (isfinite(v)) {
                x = map_x(ch, line->times[i]);
                y = map_y(ch, c, v);
                if (run++ == 0)
                    LIB(cairo_move_to)(cr, x, y);
                else
                    LIB(cairo_line_to)(cr, x, y);
                continue;
            }
            if (run == 1) {
                LIB(cairo_new_path)(cr);
                LIB(cairo_arc)(cr, x, y, dot, 0, 2 * M_PI);
                LIB(cairo_fill)(cr);
            } else if (run > 1) {
                LIB(cairo_stroke)(cr);
            }
            run = 0;
        }
    }
    LIB(cairo_restore)(cr);
}

/* Tick marks and date labels under the bottom panel, and the time column's name. */
static void draw_time_axis(const struct chart *ch)
{
    cairo_t *cr = ch->cr;
    const struct layout *lo = &ch->lo;
    double bottom = panel_top(lo, ch->plot->component_count - 1) + lo->panel_h;
    double width = ch->plot->width;

    set_font(cr, lo->font_px, false);
    double line_h = font_line_px(cr);
    LIB(cairo_set_line_width)(cr, 1);
    LIB(cairo_set_source_rgb)(cr, 0.25, 0.25, 0.25);
    for (int i = 0; i < ch->x.tick_count; i++) {
        char text[64];
        double x = floor(map_x(ch, ch->x.ticks[i])) + 0.5;
        LIB(cairo_move_to)(cr, x, bottom);
        LIB(cairo_line_to)(cr, x, bottom + lo->tick_px);
        LIB(cairo_stroke)(cr);
        tsrnn_time_format(ch->x.ticks[i], ch->x.label_unit, text, sizeof(text));
        double half = text_width(cr, text) / 2;
        x = fmin(fmax(x, half + 2), width - half - 2);
        draw_text(cr, text, x, bottom + lo->tick_px + 0.3 * lo->font_px, 0.5, VALIGN_TOP);
    }

    char name[TEXT_MAX];
    clean_text(ch->plot->time_name, name, TEXT_MAX - 3);
    if (name[0] == '\0')
        snprintf(name, sizeof(name), "time");
    ellipsize(cr, name, lo->right - lo->left);
    double y = bottom + lo->tick_px + 0.3 * lo->font_px + line_h + 0.3 * lo->font_px;
    draw_text(cr, name, (lo->left + lo->right) / 2, y, 0.5, VALIGN_TOP);
}

/* Length of the segment (x0, y0)-(x1, y1) inside box[0..1] x box[2..3] (Liang-Barsky). */
static double clipped_length(double x0, double y0, double x1, double y1, const double box[4])
{
    double dx = x1 - x0, dy = y1 - y0, u0 = 0, u1 = 1;
    double p[4] = { -dx, dx, -dy, dy };
    double q[4] = { x0 - box[0], box[1] - x0, y0 - box[2], box[3] - y0 };
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0) {
            if (q[i] < 0)
                return 0;
        } else if (p[i] < 0) {
            u0 = fmax(u0, q[i] / p[i]);
        } else {
            u1 = fmin(u1, q[i] / p[i]);
        }
    }
    /* sqrt of the sum, not hypot(): the coordinates are pixels (no overflow), and hypot is
     * GLIBC_2.35 while the programs run on glibc 2.34 (scripts/gpu-bundle.sh) */
    return u1 > u0 ? (u1 - u0) * sqrt(dx * dx + dy * dy) : 0;
}

/* How much of the top panel's lines a legend box would hide, in pixels of line length. */
static double legend_overlap(const struct chart *ch, const double box[4])
{
    const struct tsrnn_plot *plot = ch->plot;
    double hidden = 0;
    for (size_t l = 0; l < plot->line_count; l++) {
        const struct tsrnn_plot_line *line = &plot->lines[l];
        bool have = false;
        double px = 0, py = 0;
        for (size_t i = 0; i < line->length; i++) {
            double v = line->values[i * plot->component_count];
            if (!isfinite(v)) {
                have = false;
                continue;
            }
            double x = map_x(ch, line->times[i]), y = map_y(ch, 0, v);
            if (have)
                hidden += clipped_length(px, py, x, y, box);
            else /* a lone point counts as one pixel */
                hidden += x >= box[0] && x <= box[1] && y >= box[2] && y <= box[3];
            have = true;
            px = x;
            py = y;
        }
    }
    return hidden;
}

/* A line's label as drawn: at most 40% of the panels' width. */
static const char *legend_label(const struct chart *ch, const struct tsrnn_plot_line *line,
                                char out[TEXT_MAX])
{
    clean_text(line->label, out, TEXT_MAX - 3);
    ellipsize(ch->cr, out, 0.4 * (ch->lo.right - ch->lo.left));
    return out;
}

static bool in_legend(const struct tsrnn_plot_line *line)
{
    return line->length > 0 && line->label != NULL;
}

/* The lines' colours and labels in a white, slightly transparent box: at the top left of the
 * top panel, or in the first other corner that hides less of the lines. */
static void draw_legend(const struct chart *ch)
{
    cairo_t *cr = ch->cr;
    const struct tsrnn_plot *plot = ch->plot;
    const struct layout *lo = &ch->lo;
    double font = LEGEND_SCALE * lo->font_px;

    set_font(cr, font, false);
    char label[TEXT_MAX];
    size_t rows = 0;
    double text_px = 0;
    for (size_t l = 0; l < plot->line_count; l++) {
        if (!in_legend(&plot->lines[l]))
            continue;
        rows++;
        text_px = fmax(text_px, text_width(cr, legend_label(ch, &plot->lines[l], label)));
    }
    double pad = 0.6 * font, row_h = 1.45 * font, swatch = 2 * font;
    double box_w = round(pad + swatch + 0.6 * font + text_px + pad);
    double box_h = round(2 * pad + (double)rows * row_h - 0.3 * font);
    double inset = round(0.7 * font);
    double top = panel_top(lo, 0), bottom = top + lo->panel_h;
    const double corners[4][2] = {
        { lo->left + inset, top + inset },
        { lo->right - inset - box_w, top + inset },
        { lo->left + inset, bottom - inset - box_h },
        { lo->right - inset - box_w, bottom - inset - box_h },
    };
    int best = 0;
    double best_hidden = INFINITY;
    for (int k = 0; k < 4; k++) {
        double margin = lo->line_px;
        double box[4] = { corners[k][0] - margin, corners[k][0] + box_w + margin,
                          corners[k][1] - margin, corners[k][1] + box_h + margin };
        double hidden = legend_overlap(ch, box);
        if (hidden < best_hidden - 0.5) {
            best = k;
            best_hidden = hidden;
        }
        if (best_hidden < 0.5)
            break;
    }
    double x = corners[best][0], y = corners[best][1];

    LIB(cairo_rectangle)(cr, x + 0.5, y + 0.5, box_w, box_h);
    LIB(cairo_set_source_rgba)(cr, 1, 1, 1, 0.85);
    LIB(cairo_fill_preserve)(cr);
    LIB(cairo_set_source_rgb)(cr, 0.8, 0.8, 0.8);
    LIB(cairo_set_line_width)(cr, 1);
    LIB(cairo_stroke)(cr);

    double row_y = y + pad + (row_h - 0.3 * font) / 2;
    LIB(cairo_set_line_cap)(cr, CAIRO_LINE_CAP_BUTT);
    for (size_t l = 0; l < plot->line_count; l++) {
        const struct tsrnn_plot_line *line = &plot->lines[l];
        if (!in_legend(line))
            continue;
        set_rgb(cr, line->rgb);
        LIB(cairo_set_line_width)(cr, lo->line_px);
        LIB(cairo_move_to)(cr, x + pad, row_y);
        LIB(cairo_line_to)(cr, x + pad + swatch, row_y);
        LIB(cairo_stroke)(cr);
        LIB(cairo_set_source_rgb)(cr, 0.1, 0.1, 0.1);
        draw_text(cr, legend_label(ch, line, label), x + pad + swatch + 0.6 * font, row_y, 0,
                  VALIGN_MIDDLE);
        row_y += row_h;
    }
}

static void draw_chart(const struct chart *ch)
{
    cairo_t *cr = ch->cr;
    const struct tsrnn_plot *plot = ch->plot;

    LIB(cairo_set_source_rgb)(cr, 1, 1, 1);
    LIB(cairo_paint)(cr);
    LIB(cairo_set_antialias)(cr, CAIRO_ANTIALIAS_DEFAULT);
    for (size_t c = 0; c < plot->component_count; c++) {
        draw_grid(ch, c);
        draw_lines(ch, c);
        draw_value_axis(ch, c);
    }
    draw_time_axis(ch);
    draw_legend(ch);
    if (ch->lo.title_px > 0) {
        set_font(cr, ch->lo.title_px, true);
        LIB(cairo_set_source_rgb)(cr, 0.1, 0.1, 0.1);
        draw_text(cr, ch->lo.title, plot->width / 2.0, ch->lo.title_y, 0.5, VALIGN_TOP);
    }
}

static enum tsrnn_status cairo_failed(cairo_status_t cs, const char *path)
{
    if (cs == CAIRO_STATUS_NO_MEMORY)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory drawing %s", tsrnn_display_path(path));
    return tsrnn_error(TSRNN_ERR_IO, "cannot draw %s: cairo: %s", tsrnn_display_path(path),
                       LIB(cairo_status_to_string)(cs));
}

static enum tsrnn_status check_plot(const struct tsrnn_plot *plot, const char *path)
{
    if (plot->width < TSRNN_PLOT_WIDTH_MIN || plot->height < TSRNN_PLOT_HEIGHT_MIN ||
        plot->width > TSRNN_PLOT_SIZE_MAX || plot->height > TSRNN_PLOT_SIZE_MAX)
        return tsrnn_error(
            TSRNN_ERR_USAGE, "cannot draw %s: the size %dx%d is outside %dx%d .. %dx%d pixels",
            tsrnn_display_path(path), plot->width, plot->height, TSRNN_PLOT_WIDTH_MIN,
            TSRNN_PLOT_HEIGHT_MIN, TSRNN_PLOT_SIZE_MAX, TSRNN_PLOT_SIZE_MAX);
    bool any = false;
    for (size_t l = 0; l < plot->line_count; l++) {
        const struct tsrnn_plot_line *line = &plot->lines[l];
        if (line->length > 0 && (line->times == NULL || line->values == NULL))
            return tsrnn_error(TSRNN_ERR_USAGE, "cannot draw %s: line %zu (%s) has no %s",
                               tsrnn_display_path(path), l, line->label ? line->label : "",
                               line->times == NULL ? "times" : "values");
        any = any || line->length > 0;
    }
    if (plot->component_count == 0 || !any)
        return tsrnn_error(TSRNN_ERR_DATA, "nothing to draw in %s: %s", tsrnn_display_path(path),
                           plot->component_count == 0 ? "the series has no components"
                                                      : "every line is empty");
    return TSRNN_OK;
}

static enum tsrnn_status plot_png(const struct tsrnn_plot *plot, const char *path)
{
    TSRNN_TRY(check_plot(plot, path));
    TSRNN_TRY(load_for(path));

    enum tsrnn_status status = TSRNN_OK;
    struct chart ch = { .plot = plot };
    cairo_surface_t *surface = NULL;
    ch.y = calloc(plot->component_count, sizeof(*ch.y));
    if (ch.y == NULL) {
        status = tsrnn_error(TSRNN_ERR_NOMEM, "out of memory drawing %s", tsrnn_display_path(path));
        goto out;
    }
    tsrnn_plot_fonts_setup();
    surface = LIB(cairo_image_surface_create)(CAIRO_FORMAT_RGB24, plot->width, plot->height);
    ch.cr = LIB(cairo_create)(surface); /* an error surface gives an error context */
    cairo_status_t cs = LIB(cairo_status)(ch.cr);
    if (cs != CAIRO_STATUS_SUCCESS) {
        status = cairo_failed(cs, path);
        goto out;
    }
    chart_layout(&ch);
    draw_chart(&ch);
    cs = LIB(cairo_status)(ch.cr);
    if (cs != CAIRO_STATUS_SUCCESS) {
        status = cairo_failed(cs, path);
        goto out;
    }
    LIB(cairo_surface_flush)(surface);
    status = tsrnn_png_write(
        path, (const uint32_t *)(const void *)LIB(cairo_image_surface_get_data)(surface),
        LIB(cairo_image_surface_get_width)(surface), LIB(cairo_image_surface_get_height)(surface),
        (size_t)LIB(cairo_image_surface_get_stride)(surface));
out:
    if (ch.cr != NULL)
        LIB(cairo_destroy)(ch.cr);
    if (surface != NULL)
        LIB(cairo_surface_destroy)(surface);
    free(ch.y);
    return status;
}

/* --- the warm-up ------------------------------------------------------------------------ */

/* Draws each printable ASCII character once in `size_px` (`bold`), turned by `angle` as the
 * component names are: cairo keeps the scaled font with its glyphs (rendered by FreeType),
 * and the picture's text in the same font, size and direction finds them ready. The same
 * glyphs as drawn without it: caching changes no pixel. */
static void warm_glyphs(cairo_t *cr, double size_px, bool bold, double angle)
{
    char text[2] = "";
    LIB(cairo_save)(cr);
    LIB(cairo_translate)(cr, 2 * size_px, 2 * size_px); /* the glyphs inside the surface */
    if (angle != 0)
        LIB(cairo_rotate)(cr, angle);
    set_font(cr, size_px, bold);
    for (char c = ' '; c <= '~'; c++) {
        text[0] = c;
        LIB(cairo_move_to)(cr, 0, 0);
        LIB(cairo_show_text)(cr, text);
    }
    LIB(cairo_restore)(cr);
}

static void plot_warmup(int width, int height)
{
    const char *why;
    if (!tsrnn_plot_libs_load(&why))
        return; /* the picture says why */
    tsrnn_plot_fonts_setup();
    double font = FONT_PX * picture_scale(width, height), largest = TITLE_SCALE * font;
    int side = (int)ceil(4 * largest);
    cairo_surface_t *surface = LIB(cairo_image_surface_create)(CAIRO_FORMAT_RGB24, side, side);
    cairo_t *cr = LIB(cairo_create)(surface); /* without memory: nothing drawn, nothing kept */
    /* tick labels and axis names; the component names, turned; the legend; the title */
    warm_glyphs(cr, font, false, 0);
    warm_glyphs(cr, font, false, -M_PI / 2);
    warm_glyphs(cr, LEGEND_SCALE * font, false, 0);
    warm_glyphs(cr, largest, true, 0);
    LIB(cairo_destroy)(cr);
    LIB(cairo_surface_destroy)(surface);
}

#endif /* TSRNN_HAVE_PLOTS */

bool tsrnn_plot_usable(char *why, size_t why_nbytes)
{
#if TSRNN_HAVE_PLOTS
    const char *load_why;
    bool loaded = tsrnn_plot_libs_load(&load_why);
    if (!loaded && why != NULL && why_nbytes > 0)
        snprintf(why, why_nbytes, "%s", load_why);
    return loaded;
#else
    if (why != NULL && why_nbytes > 0)
        snprintf(why, why_nbytes, "this tsrnn was built without cairo (libcairo2-dev)");
    return false;
#endif
}

void tsrnn_plot_warmup(int width, int height)
{
#if TSRNN_HAVE_PLOTS
    plot_warmup(width, height);
#else
    (void)width;
    (void)height;
#endif
}

enum tsrnn_status tsrnn_plot_png(const struct tsrnn_plot *plot, const char *path)
{
#if TSRNN_HAVE_PLOTS
    return plot_png(plot, path);
#else
    (void)plot;
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "cannot draw %s: tsrnn was built without cairo: install libcairo2-dev and "
                       "rebuild",
                       tsrnn_display_path(path));
#endif
}
