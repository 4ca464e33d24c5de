/* The training progress bar: Lightning's TQDMProgressBar as tqdm draws it
 * (include/tsrnn/report.h).
 *
 * Reference: tqdm 4.x std.py (format_meter, format_interval, format_num, Bar.__format__,
 * _screen_shape_linux), lightning.pytorch callbacks/progress/tqdm_progress.py (BAR_FORMAT,
 * Tqdm.format_num, one training bar reset at each epoch); shared
 * reference/ecosystem-formats.md §6. Lightning redraws on every batch and never looks at
 * whether stdout is a terminal; here a terminal gets the bar redrawn in place at most
 * 10 times a second, and anything else one finished line per epoch.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tsrnn/report.h"

#define BAR_CELLS_DEFAULT 10 /* tqdm without a known width */
#define METRIC_PAD        5  /* Lightning's _PAD_SIZE */
#define NCOLS_MAX         1000

/* --- numbers ------------------------------------------------------------------------------ */

/* Whether `value` reads back from its text at `prec` significant digits, left in sci. */
static bool round_trips(char sci[40], double value, int prec)
{
    snprintf(sci, 40, "%.*e", prec - 1, value);
    return strtod(sci, NULL) == value;
}

/* The fewest significant digits, at most `max_prec`, whose text reads back as finite `value`,
 * that text in sci; 0 where even max_prec digits do not. A search by halves: the digits that
 * read back at prec do at prec + 1 too (the correctly rounded prec + 1 digits are at least as
 * close as those of prec with a 0 appended), and 17 always do. */
static int shortest_round_trip(char sci[40], double value, int max_prec)
{
    if (max_prec < 1 || !round_trips(sci, value, max_prec))
        return 0;
    int lo = 1, hi = max_prec; /* hi reads back; below lo none does */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (round_trips(sci, value, mid))
            hi = mid;
        else
            lo = mid + 1;
    }
    round_trips(sci, value, hi);
    return hi;
}

/* Python's repr() of finite `value` from its shortest round-trip text in sci. */
static size_t format_repr(char *dst, size_t dst_nbytes, const char *sci)
{
    /* Split "-d.ddde+XX" into sign, digits and the decimal exponent of the first digit. */
    const char *s = sci;
    const char *sign = "";
    if (*s == '-') {
        sign = "-";
        s++;
    }
    char digits[24];
    size_t nd = 0;
    for (; *s != 'e' && *s != '\0'; s++)
        if (*s != '.' && nd + 1 < sizeof(digits))
            digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = *s == 'e' ? atoi(s + 1) : 0;

    /* CPython float_repr_style 'short', repr mode: value = 0.digits * 10**decpt; an exponent
     * below decpt -3 or above 16, else positional with at least one digit after the point. */
    int decpt = exp10 + 1;
    if (decpt <= -4 || decpt > 16) {
        return (size_t)snprintf(dst, dst_nbytes, "%s%c%s%se%c%02d", sign, digits[0],
                                nd > 1 ? "." : "", digits + 1, exp10 < 0 ? '-' : '+', abs(exp10));
    }
    char text[64];
    size_t len = 0;
    if (decpt <= 0) {
        len += (size_t)snprintf(text + len, sizeof(text) - len, "0.%.*s%s", -decpt, "0000", digits);
    } else if ((size_t)decpt < nd) {
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%.*s.%s", decpt, digits,
                                digits + decpt);
    } else {
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%.*s.0", digits,
                                (int)((size_t)decpt - nd), "0000000000000000");
    }
    return (size_t)snprintf(dst, dst_nbytes, "%s%s", sign, text);
}

size_t tsrnn_report_format_pyfloat(char *dst, size_t dst_nbytes, double value)
{
    if (isnan(value))
        return (size_t)snprintf(dst, dst_nbytes, "nan");
    if (isinf(value))
        return (size_t)snprintf(dst, dst_nbytes, "%sinf", value < 0 ? "-" : "");
    char sci[40];
    shortest_round_trip(sci, value, 17);
    return format_repr(dst, dst_nbytes, sci);
}

/* "1e+05" -> "1e+5", "1e-05" -> "1e-5" (Python's replace("e+0", "e+").replace("e-0", "e-")),
 * in place. */
static void squeeze_exponent(char *s)
{
    char *e = strstr(s, "e");
    if (e != NULL && (e[1] == '+' || e[1] == '-') && e[2] == '0')
        memmove(e + 2, e + 3, strlen(e + 3) + 1);
}

size_t tsrnn_report_format_metric(char *dst, size_t dst_nbytes, double value)
{
    /* tqdm.format_num (4.70): f'{n:.3g}' with "e+0"/"e-0" squeezed to "e+"/"e-", unless
     * str(n) is as short. (4.64 squeezed every "+0"/"-0", so -0.5 gave "-.5"; losses are
     * never negative.) */
    char f[48], n[48];
    if (isnan(value))
        snprintf(f, sizeof(f), "nan"); /* glibc may print "-nan"; Python never does */
    else
        snprintf(f, sizeof(f), "%.3g", value);
    squeeze_exponent(f);
    /* str(n) wins a tie, and is longer than its p round-trip digits (it has a point or an
     * exponent besides): only p < len(f) digits can make it win, and a float32 loss seldom
     * reads back from so few (searching all 17 was most of the progress line's time). */
    char *text = f, sci[40];
    if (isfinite(value) && shortest_round_trip(sci, value, (int)strlen(f) - 1) > 0) {
        format_repr(n, sizeof(n), sci);
        text = strlen(f) < strlen(n) ? f : n;
    } /* not finite: "nan", "inf" or "-inf", which str() writes alike */

    /* Lightning's Tqdm.format_num: floats without an exponent are padded to 5 characters;
     * a '.' first when there is none and the text reads as a float ("-" does not). */
    size_t len = strlen(text);
    if (strchr(text, 'e') == NULL) {
        if (strchr(text, '.') == NULL && len < METRIC_PAD) {
            char *end;
            strtod(text, &end);
            if (end == text || *end != '\0')
                return (size_t)snprintf(dst, dst_nbytes, "%s", text);
            text[len++] = '.';
            text[len] = '\0';
        }
        while (len < METRIC_PAD) {
            text[len++] = '0';
            text[len] = '\0';
        }
    }
    return (size_t)snprintf(dst, dst_nbytes, "%s", text);
}

size_t tsrnn_report_format_interval(char *dst, size_t dst_nbytes, double seconds)
{
    /* Python's int(t) truncates; a clock that went backwards shows 00:00. */
    long long t = seconds > 0 && seconds < 1e15 ? (long long)seconds : 0;
    long long mins = t / 60, s = t % 60;
    long long h = mins / 60, m = mins % 60;
    if (h != 0)
        return (size_t)snprintf(dst, dst_nbytes, "%lld:%02lld:%02lld", h, m, s);
    return (size_t)snprintf(dst, dst_nbytes, "%02lld:%02lld", m, s);
}

/* --- one line ------------------------------------------------------------------------- */

/* An snprintf that appends: `len` counts every byte asked for, `dst` keeps what fits. */
struct line_buf {
    char *dst;
    size_t cap;
    size_t len;
};

static void lb_printf(struct line_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void lb_printf(struct line_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int written = vsnprintf(room > 0 ? b->dst + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (written > 0)
        b->len += (size_t)written;
}

/* tqdm's Bar with the UTF-8 charset " ▏▎▍▌▋▊▉█": the filled length in eighths of a cell,
 * full cells, one partial cell (index 0 is a blank), blanks. */
static void append_bar(struct line_buf *b, double frac, int cells)
{
    static const char *const eighths[9] = { " ", "▏", "▎", "▍", "▌", "▋", "▊", "▉", "█" };
    long units = (long)(frac * cells * 8);
    long full = units / 8, partial = units % 8;
    for (long i = 0; i < full && i < cells; i++)
        lb_printf(b, "%s", eighths[8]);
    if (full < cells) {
        lb_printf(b, "%s", eighths[partial]);
        for (long i = full + 1; i < cells; i++)
            lb_printf(b, " ");
    }
}

static void append_postfix(struct line_buf *b, const struct tsrnn_progress_metric *metrics,
                           size_t metric_count)
{
    char value[48];
    for (size_t i = 0; i < metric_count; i++) {
        tsrnn_report_format_metric(value, sizeof(value), metrics[i].value);
        lb_printf(b, ", %s=%s", metrics[i].name, value);
    }
}

/* Cuts dst to `ncols` characters (UTF-8 code points; every character here is one column). */
static void trim_columns(struct line_buf *b, int ncols)
{
    size_t stored = b->len < b->cap ? b->len : (b->cap > 0 ? b->cap - 1 : 0);
    int cols = 0;
    for (size_t i = 0; i < stored; i++) {
        if (((unsigned char)b->dst[i] & 0xC0) == 0x80)
            continue;
        if (cols == ncols) {
            b->dst[i] = '\0';
            b->len = i;
            return;
        }
        cols++;
    }
}

size_t tsrnn_progress_format_line(char *dst, size_t dst_nbytes, const char *desc, size_t n,
                                  size_t total, double elapsed_s, int ncols,
                                  const struct tsrnn_progress_metric *metrics, size_t metric_count)
{
    struct line_buf b = { dst, dst_nbytes, 0 };
    if (dst_nbytes > 0)
        dst[0] = '\0';
    if (ncols > NCOLS_MAX)
        ncols = NCOLS_MAX;
    if (ncols < 0)
        ncols = 0;

    /* format_meter: with smoothing=0 the rate is the epoch's average, none before any time
     * has passed or any batch is done. */
    char elapsed[32], remaining[32], rate[48];
    if (!(elapsed_s > 0))
        elapsed_s = 0;
    tsrnn_report_format_interval(elapsed, sizeof(elapsed), elapsed_s);
    double it_per_s = elapsed_s > 0 ? (double)n / elapsed_s : 0;
    if (it_per_s > 0) {
        snprintf(rate, sizeof(rate), "%5.2fit/s", it_per_s);
        /* tqdm: (total - n) / rate with a total, else 0 */
        tsrnn_report_format_interval(remaining, sizeof(remaining),
                                     total >= n ? (double)(total - n) / it_per_s : 0);
    } else {
        snprintf(rate, sizeof(rate), "?it/s");
        snprintf(remaining, sizeof(remaining), "?");
    }

    /* Without a usable total (0, or n past it: tqdm drops it) the bar is blank, the
     * percentage goes and the total shows as "0" or "?". */
    bool has_total = total > 0 && n <= total;
    double frac = has_total ? (double)n / (double)total : 0;
    char left[256], total_text[32], right[TSRNN_PROGRESS_LINE_MAX / 2];
    if (has_total)
        snprintf(left, sizeof(left), "%s: %3.0f%%|", desc, frac * 100);
    else
        snprintf(left, sizeof(left), "%s: |", desc);
    if (total > 0 && !has_total)
        snprintf(total_text, sizeof(total_text), "?");
    else
        snprintf(total_text, sizeof(total_text), "%zu", total);
    struct line_buf r = { right, sizeof(right), 0 };
    lb_printf(&r, "| %zu/%s [%s<%s, %s", n, total_text, elapsed, remaining, rate);
    append_postfix(&r, metrics, metric_count);
    lb_printf(&r, "]");

    int cells = BAR_CELLS_DEFAULT;
    if (ncols > 0) {
        long room = (long)ncols - (long)(strlen(left) + r.len); /* ASCII: a column a byte */
        cells = room > 1 ? (int)room : 1;
    }
    lb_printf(&b, "%s", left);
    append_bar(&b, frac, cells);
    lb_printf(&b, "%s", right);
    if (ncols > 0)
        trim_columns(&b, ncols);
    return b.len;
}

/* --- the bar over a run --------------------------------------------------------------- */

enum tsrnn_progress_mode tsrnn_progress_resolve_mode(enum tsrnn_progress_mode mode, FILE *out)
{
    if (mode != TSRNN_PROGRESS_AUTO)
        return mode;
    int fd = out != NULL ? fileno(out) : -1;
    if (fd < 0 || !isatty(fd))
        return TSRNN_PROGRESS_PLAIN;
    const char *term = getenv("TERM");
    if (term != NULL && strcmp(term, "dumb") == 0)
        return TSRNN_PROGRESS_PLAIN;
    return TSRNN_PROGRESS_BAR;
}

int tsrnn_progress_terminal_columns(FILE *out)
{
    struct winsize ws;
    int fd = out != NULL ? fileno(out) : -1;
    if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    int64_t value;
    if (columns != NULL && tsrnn_parse_int64(columns, &value) && value > 1 && value < 100000)
        return (int)value - 1;
    return 0;
}

/* The observer of the bars this thread starts (tsrnn_progress_observe()). */
static _Thread_local const struct tsrnn_progress_observer *thread_observer;

const struct tsrnn_progress_observer *
tsrnn_progress_observe(const struct tsrnn_progress_observer *observer)
{
    const struct tsrnn_progress_observer *previous = thread_observer;
    thread_observer = observer;
    return previous;
}

double tsrnn_progress_metric(const struct tsrnn_progress *p, const char *name)
{
    for (size_t i = 0; i < p->metric_count; i++)
        if (strcmp(p->metrics[i].name, name) == 0)
            return p->metrics[i].value;
    return NAN;
}

static void notify(const struct tsrnn_progress *p, bool epoch_end)
{
    if (p->observer != NULL)
        p->observer->notify(p->observer->ctx, p, epoch_end);
}

void tsrnn_progress_init(struct tsrnn_progress *p, FILE *out, enum tsrnn_progress_mode mode)
{
    memset(p, 0, sizeof(*p));
    p->observer = thread_observer;
    p->out = out;
    p->mode = out != NULL ? tsrnn_progress_resolve_mode(mode, out) : TSRNN_PROGRESS_NONE;
    p->fit_terminal = p->mode == TSRNN_PROGRESS_BAR;
}

static size_t format_current(const struct tsrnn_progress *p, char *line, size_t line_nbytes,
                             int ncols)
{
    char desc[48];
    snprintf(desc, sizeof(desc), "Epoch %" PRId64, p->epoch);
    return tsrnn_progress_format_line(line, line_nbytes, desc, p->n, p->total,
                                      p->last_now_s - p->epoch_start_s, ncols, p->metrics,
                                      p->metric_count);
}

static void draw(struct tsrnn_progress *p)
{
    char line[TSRNN_PROGRESS_LINE_MAX];
    if (p->fit_terminal)
        p->ncols = tsrnn_progress_terminal_columns(p->out);
    format_current(p, line, sizeof(line), p->ncols);
    /* tqdm pads over the old text with blanks; erasing to the end of line does the same */
    fprintf(p->out, "\r%s\x1b[K", line);
    fflush(p->out);
    p->drawn = true;
    p->pending = false;
    p->last_draw_s = p->last_now_s;
}

/* BAR: records a change at now_s and draws it unless the last draw is too recent. */
static void changed(struct tsrnn_progress *p, double now_s)
{
    p->last_now_s = now_s;
    if (p->mode != TSRNN_PROGRESS_BAR)
        return;
    p->pending = true;
    if (!p->drawn || now_s - p->last_draw_s >= TSRNN_PROGRESS_REDRAW_S || now_s < p->last_draw_s)
        draw(p);
}

void tsrnn_progress_begin_epoch(struct tsrnn_progress *p, int64_t epoch, size_t total, double now_s)
{
    p->epoch = epoch;
    p->total = total;
    p->n = 0;
    p->epoch_start_s = now_s;
    changed(p, now_s);
}

enum tsrnn_status tsrnn_progress_set_metric(struct tsrnn_progress *p, const char *name,
                                            double value)
{
    size_t i;
    for (i = 0; i < p->metric_count; i++)
        if (strcmp(p->metrics[i].name, name) == 0)
            break;
    if (i == p->metric_count) {
        if (strlen(name) >= TSRNN_PROGRESS_NAME_MAX)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "progress bar: metric name '%s' is longer than %d bytes", name,
                               TSRNN_PROGRESS_NAME_MAX - 1);
        if (p->metric_count == TSRNN_PROGRESS_METRIC_MAX)
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "progress bar: no room for metric '%s' (at most %d metrics)", name,
                               TSRNN_PROGRESS_METRIC_MAX);
        snprintf(p->metrics[i].name, sizeof(p->metrics[i].name), "%s", name);
        p->metric_count++;
    }
    p->metrics[i].value = value;
    if (p->mode == TSRNN_PROGRESS_BAR)
        p->pending = true;
    return TSRNN_OK;
}

void tsrnn_progress_update(struct tsrnn_progress *p, size_t n, double now_s)
{
    p->n = n;
    changed(p, now_s);
    notify(p, false);
}

void tsrnn_progress_end_epoch(struct tsrnn_progress *p, double now_s)
{
    if (p->mode == TSRNN_PROGRESS_PLAIN) {
        char line[TSRNN_PROGRESS_LINE_MAX];
        p->last_now_s = now_s;
        format_current(p, line, sizeof(line), 0);
        fprintf(p->out, "%s\n", line);
        fflush(p->out);
    } else {
        changed(p, now_s);
    }
    notify(p, true);
}

void tsrnn_progress_finish(struct tsrnn_progress *p)
{
    if (p->mode != TSRNN_PROGRESS_BAR)
        return;
    if (p->pending && p->drawn)
        draw(p);
    if (p->drawn) {
        fputc('\n', p->out);
        fflush(p->out);
    }
    p->drawn = false;
    p->pending = false;
}
