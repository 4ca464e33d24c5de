/* Forecast pictures (src/report/plot.c): the file is a PNG of the requested size (read from
 * its IHDR chunk), and, read back with cairo, each line's colour covers the part of the
 * picture its times span; a picture drawn after tsrnn_plot_warmup() is the same bytes
 * as one drawn in a process without it; a libcairo.so.2 that is not cairo is reported. Builds without cairo check the "built without cairo"
 * error and skip the rest.
 */
#include "tsrnn_build.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#if TSRNN_HAVE_PLOTS
#include <cairo.h>
#endif

#include "testutil.h"
#include "tsrnn/data.h"
#include "tsrnn/plot.h"
#include "tsrnn/thread.h"

/* --- data ------------------------------------------------------------------------------ */

/* An AirPassengers-like monthly series, 1949-01 .. 1959-12: 108 months of history, then
 * 24 of actual values and a forecast below them. */
#define HISTORY_N 108
#define ACTUAL_N  24
#define MONTHS_N  (HISTORY_N + ACTUAL_N)

struct monthly {
    int64_t times[MONTHS_N];
    float values[MONTHS_N]; /* (MONTHS_N, 1) */
    float forecast[ACTUAL_N];
    float values2[MONTHS_N * 2]; /* (MONTHS_N, 2) */
    float forecast2[ACTUAL_N * 2];
    struct tsrnn_plot_line lines[3];
    char names[2][TSRNN_NAME_MAX];
};

static void monthly_init(struct monthly *m)
{
    for (int i = 0; i < MONTHS_N; i++) {
        char text[16];
        enum tsrnn_time_unit unit;
        snprintf(text, sizeof(text), "%04d-%02d", 1949 + i / 12, i % 12 + 1);
        assert_true(tsrnn_time_parse(text, &m->times[i], &unit));
        assert_int_equal(unit, TSRNN_TIME_MONTH);
        m->values[i] = (float)(110 * exp(0.012 * i) * (1 + 0.15 * sin(2 * M_PI * i / 12)));
        m->values2[2 * i] = m->values[i];
        m->values2[2 * i + 1] = (float)(0.3 + 0.2 * sin(2 * M_PI * i / 12 + 1));
    }
    for (int i = 0; i < ACTUAL_N; i++) {
        m->forecast[i] = 0.85f * m->values[HISTORY_N + i];
        m->forecast2[2 * i] = m->forecast[i];
        m->forecast2[2 * i + 1] = 0.9f * m->values2[2 * (HISTORY_N + i) + 1];
    }
    m->lines[0] =
        (struct tsrnn_plot_line){ "history", TSRNN_PLOT_BLUE, m->times, m->values, HISTORY_N };
    m->lines[1] = (struct tsrnn_plot_line){ "actual", TSRNN_PLOT_ORANGE, m->times + HISTORY_N,
                                            m->values + HISTORY_N, ACTUAL_N };
    m->lines[2] = (struct tsrnn_plot_line){ "forecast", TSRNN_PLOT_GREEN, m->times + HISTORY_N,
                                            m->forecast, ACTUAL_N };
    snprintf(m->names[0], sizeof(m->names[0]), "#Passengers");
    snprintf(m->names[1], sizeof(m->names[1]), "load factor");
}

static struct tsrnn_plot monthly_plot(const struct monthly *m, int width, int height)
{
    return (struct tsrnn_plot){
        .title = "LSTM on air_passengers.csv",
        .time_unit = TSRNN_TIME_MONTH,
        .time_name = "Month",
        .component_count = 1,
        .component_names = (const char(*)[TSRNN_NAME_MAX])m->names,
        .lines = m->lines,
        .line_count = 3,
        .width = width,
        .height = height,
    };
}

/* --- files ----------------------------------------------------------------------------- */

static int setup_dir(void **state)
{
    *state = tu_mkdtemp();
    return *state == NULL ? -1 : 0;
}

static int teardown_dir(void **state)
{
    tu_rmtree(*state);
    free(*state);
    return 0;
}

/* Entries of `dir` other than . and .. */
static int entry_count(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int count = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        count += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return count;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The PNG signature, then the IHDR chunk (length 13) with the picture's size. */
static void assert_png_size(const char *path, int width, int height)
{
    static const unsigned char signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    unsigned char head[24];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(head, 1, sizeof(head), f), sizeof(head));
    fclose(f);
    assert_memory_equal(head, signature, sizeof(signature));
    assert_int_equal(be32(head + 8), 13);
    assert_memory_equal(head + 12, "IHDR", 4);
    assert_int_equal(be32(head + 16), width);
    assert_int_equal(be32(head + 20), height);
}

static void skip_without_cairo(void)
{
    if (!tsrnn_plot_available())
        skip();
}

/* --- pixels ---------------------------------------------------------------------------- */

#if TSRNN_HAVE_PLOTS

struct picture {
    cairo_surface_t *surface;
    int width, height, stride;
    const unsigned char *data;
};

static void picture_load(struct picture *p, const char *path)
{
    p->surface = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(p->surface), CAIRO_STATUS_SUCCESS);
    cairo_surface_flush(p->surface);
    p->width = cairo_image_surface_get_width(p->surface);
    p->height = cairo_image_surface_get_height(p->surface);
    p->stride = cairo_image_surface_get_stride(p->surface);
    p->data = cairo_image_surface_get_data(p->surface);
}

static void picture_finish(struct picture *p)
{
    cairo_surface_destroy(p->surface);
}

/* Whether `px` is `rgb` drawn over white with a coverage of at least one half (anti-aliased
 * edges of a line blend it with the background). */
static bool is_colour(uint32_t px, uint32_t rgb)
{
    int shift_max = 0;
    for (int shift = 8; shift < 24; shift += 8)
        if ((rgb >> shift & 0xff) < (rgb >> shift_max & 0xff))
            shift_max = shift;
    double alpha = (255.0 - (px >> shift_max & 0xff)) / (255.0 - (rgb >> shift_max & 0xff));
    if (alpha < 0.5 || alpha > 1.1)
        return false;
    for (int shift = 0; shift < 24; shift += 8) {
        double expected = alpha * (rgb >> shift & 0xff) + (1 - alpha) * 255;
        if (fabs((px >> shift & 0xff) - expected) > 20)
            return false;
    }
    return true;
}

/* Pixels of colour `rgb` in [x0, x1) x [y0, y1) (fractions of the size). */
static long count_colour(const struct picture *p, uint32_t rgb, double x0, double x1, double y0,
                         double y1)
{
    long count = 0;
    for (int y = (int)(y0 * p->height); y < (int)(y1 * p->height); y++) {
        const uint32_t *row = (const uint32_t *)(p->data + (size_t)y * (size_t)p->stride);
        for (int x = (int)(x0 * p->width); x < (int)(x1 * p->width); x++)
            count += is_colour(row[x], rgb);
    }
    return count;
}

static long count_white(const struct picture *p)
{
    long count = 0;
    for (int y = 0; y < p->height; y++) {
        const uint32_t *row = (const uint32_t *)(p->data + (size_t)y * (size_t)p->stride);
        for (int x = 0; x < p->width; x++)
            count += (row[x] & 0xffffff) == 0xffffff;
    }
    return count;
}

/* The mean row of the pixels of colour `rgb` right of x0 (a fraction of the width). */
static double mean_row(const struct picture *p, uint32_t rgb, double x0)
{
    double sum = 0;
    long count = 0;
    for (int y = 0; y < p->height; y++) {
        long n = count_colour(p, rgb, x0, 1, (double)y / p->height, (y + 1.0) / p->height);
        sum += (double)n * y;
        count += n;
    }
    return count > 0 ? sum / (double)count : 0;
}

static long count_all(const struct picture *p, uint32_t rgb)
{
    return count_colour(p, rgb, 0, 1, 0, 1);
}

#endif

/* --- tests ----------------------------------------------------------------------------- */

static void test_available_matches_build(void **state)
{
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    struct tsrnn_plot plot = monthly_plot(&m, 1000, 500);

    assert_int_equal(tsrnn_plot_available(), TSRNN_HAVE_PLOTS);
    if (tsrnn_plot_available())
        return;
    assert_int_equal(tsrnn_plot_png(&plot, tu_path(dir, "plot.png")), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "built without cairo: install libcairo2-dev and rebuild");
    assert_int_equal(entry_count(dir), 0);
}

/* One series, history then actual and forecast, at two sizes. */
static void test_monthly(void **state)
{
    skip_without_cairo();
#if TSRNN_HAVE_PLOTS
    const char *dir = *state;
    static const int sizes[][2] = { { 1000, 500 }, { 640, 480 } };
    struct monthly m;
    monthly_init(&m);

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int width = sizes[k][0], height = sizes[k][1];
        struct tsrnn_plot plot = monthly_plot(&m, width, height);
        char path[4096];
        snprintf(path, sizeof(path), "%s", tu_path(dir, "forecast.png"));
        assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
        assert_png_size(path, width, height);

        struct picture p;
        picture_load(&p, path);
        assert_int_equal(p.width, width);
        assert_int_equal(p.height, height);
        long pixels = (long)width * height;
        long blue = count_all(&p, TSRNN_PLOT_BLUE), orange = count_all(&p, TSRNN_PLOT_ORANGE),
             green = count_all(&p, TSRNN_PLOT_GREEN);
        /* the history spans about 80% of the width, actual and forecast the last 18% */
        assert_true(blue >= width);
        assert_true(orange >= width / 2);
        assert_true(green >= width / 2);
        assert_true(count_colour(&p, TSRNN_PLOT_BLUE, 0, 0.5, 0, 1) >= width / 2);
        /* apart from the legend's swatches (top left), actual and forecast lie right of 3/4 */
        assert_true(count_colour(&p, TSRNN_PLOT_ORANGE, 0.75, 1, 0, 1) >= orange * 4 / 5);
        assert_true(count_colour(&p, TSRNN_PLOT_GREEN, 0.75, 1, 0, 1) >= green * 4 / 5);
        /* the forecast (85% of the actual values) is drawn lower than them */
        assert_true(mean_row(&p, TSRNN_PLOT_GREEN, 0.75) >
                    mean_row(&p, TSRNN_PLOT_ORANGE, 0.75) + 10);
        assert_true(count_white(&p) >= pixels * 7 / 10);
        assert_true(blue + orange + green <= pixels / 10);
        picture_finish(&p);
    }
    assert_int_equal(entry_count(dir), 1);
#else
    (void)state;
#endif
}

/* Two components: two panels, each with the history and the forecast. */
static void test_two_components(void **state)
{
    skip_without_cairo();
#if TSRNN_HAVE_PLOTS
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    m.lines[0].values = m.values2;
    m.lines[1].values = m.values2 + 2 * HISTORY_N;
    m.lines[2].values = m.forecast2;
    struct tsrnn_plot plot = monthly_plot(&m, 1000, 600);
    plot.component_count = 2;
    const char *path = tu_path(dir, "two.png");
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    assert_png_size(path, 1000, 600);

    struct picture p;
    picture_load(&p, path);
    for (int half = 0; half < 2; half++) {
        double y0 = half * 0.5, y1 = y0 + 0.5;
        assert_true(count_colour(&p, TSRNN_PLOT_BLUE, 0, 1, y0, y1) >= 1000);
        assert_true(count_colour(&p, TSRNN_PLOT_ORANGE, 0.75, 1, y0, y1) >= 200);
        assert_true(count_colour(&p, TSRNN_PLOT_GREEN, 0.75, 1, y0, y1) >= 200);
    }
    picture_finish(&p);
#else
    (void)state;
#endif
}

/* An integer time axis (no time column). */
static void test_index_axis(void **state)
{
    skip_without_cairo();
#if TSRNN_HAVE_PLOTS
    const char *dir = *state;
    int64_t times[100];
    float values[100];
    for (int i = 0; i < 100; i++) {
        times[i] = i;
        values[i] = (float)(0.5 + 0.4 * sin(i * 0.3));
    }
    const struct tsrnn_plot_line lines[] = {
        { "history", TSRNN_PLOT_BLUE, times, values, 80 },
        { "forecast", TSRNN_PLOT_GREEN, times + 80, values + 80, 20 },
    };
    const struct tsrnn_plot plot = {
        .title = "index",
        .time_unit = TSRNN_TIME_INDEX,
        .component_count = 1,
        .lines = lines,
        .line_count = 2,
        .width = 800,
        .height = 400,
    };
    const char *path = tu_path(dir, "index.png");
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    assert_png_size(path, 800, 400);
    struct picture p;
    picture_load(&p, path);
    assert_true(count_colour(&p, TSRNN_PLOT_BLUE, 0, 0.75, 0, 1) >= 1000);
    assert_true(count_colour(&p, TSRNN_PLOT_GREEN, 0.75, 1, 0, 1) >= 300);
    picture_finish(&p);
#else
    (void)state;
#endif
}

/* Constant values, single points, an empty line and a non-finite value all draw. */
static void test_degenerate(void **state)
{
    skip_without_cairo();
#if TSRNN_HAVE_PLOTS
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    const char *path = tu_path(dir, "degenerate.png");
    struct picture p;

    /* constant values everywhere */
    for (int i = 0; i < MONTHS_N; i++)
        m.values[i] = 42;
    for (int i = 0; i < ACTUAL_N; i++)
        m.forecast[i] = 42;
    struct tsrnn_plot plot = monthly_plot(&m, 640, 480);
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    assert_png_size(path, 640, 480);
    picture_load(&p, path);
    assert_true(count_all(&p, TSRNN_PLOT_BLUE) >= 300);
    picture_finish(&p);

    /* no actual values (length 0, no arrays), one forecast point */
    monthly_init(&m);
    m.lines[1] = (struct tsrnn_plot_line){ "actual", TSRNN_PLOT_ORANGE, NULL, NULL, 0 };
    m.lines[2].length = 1;
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    picture_load(&p, path);
    assert_int_equal(count_colour(&p, TSRNN_PLOT_ORANGE, 0, 1, 0, 1), 0); /* not in the legend */
    assert_true(count_colour(&p, TSRNN_PLOT_GREEN, 0.75, 1, 0, 1) >= 5);  /* a dot */
    picture_finish(&p);

    /* a single point in all: the time range is widened around it */
    m.lines[0].length = 1;
    m.lines[2].length = 0;
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    picture_load(&p, path);
    assert_true(count_colour(&p, TSRNN_PLOT_BLUE, 0.25, 0.75, 0.25, 0.75) >= 5);
    picture_finish(&p);

    /* a non-finite value breaks the history into two pieces */
    monthly_init(&m);
    m.values[50] = NAN;
    m.values[51] = INFINITY;
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    picture_load(&p, path);
    assert_true(count_all(&p, TSRNN_PLOT_BLUE) >= 300);
    picture_finish(&p);

    /* the smallest size, no title, no names */
    plot.width = 200;
    plot.height = 150;
    plot.title = NULL;
    plot.component_names = NULL;
    plot.time_name = NULL;
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    assert_png_size(path, 200, 150);
    assert_int_equal(entry_count(dir), 1);
#else
    (void)state;
#endif
}

/* Text cairo would refuse (Latin-1 bytes) and text longer than the picture still draws. */
static void test_odd_text(void **state)
{
    skip_without_cairo();
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    char title[2048];
    memset(title, 'W', sizeof(title) - 1);
    title[sizeof(title) - 1] = '\0';
    snprintf(m.names[0], sizeof(m.names[0]), "temp\xe9rature \xc3( %0100d", 0);
    m.lines[1].label = "\xff\xfe actual";
    struct tsrnn_plot plot = monthly_plot(&m, 640, 480);
    plot.title = title;
    plot.time_name = "Monat \xe4";
    const char *path = tu_path(dir, "odd.png");
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    assert_png_size(path, 640, 480);
}

static void test_bad_size(void **state)
{
    skip_without_cairo();
    const char *dir = *state;
    static const int sizes[][2] = {
        { 199, 150 }, { 200, 149 }, { 8001, 500 }, { 500, 8001 }, { 0, 0 }, { -640, 480 },
    };
    struct monthly m;
    monthly_init(&m);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        struct tsrnn_plot plot = monthly_plot(&m, sizes[k][0], sizes[k][1]);
        assert_int_equal(tsrnn_plot_png(&plot, tu_path(dir, "plot.png")), TSRNN_ERR_USAGE);
        tu_expect_in(tsrnn_last_error(), "is outside 200x150 .. 8000x8000");
    }
    assert_int_equal(entry_count(dir), 0);
}

static void test_nothing_to_draw(void **state)
{
    skip_without_cairo();
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    struct tsrnn_plot plot = monthly_plot(&m, 1000, 500);

    plot.line_count = 0;
    assert_int_equal(tsrnn_plot_png(&plot, tu_path(dir, "plot.png")), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "nothing to draw");

    plot.line_count = 3;
    for (int l = 0; l < 3; l++)
        m.lines[l].length = 0;
    assert_int_equal(tsrnn_plot_png(&plot, tu_path(dir, "plot.png")), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "every line is empty");

    monthly_init(&m);
    plot.component_count = 0;
    assert_int_equal(tsrnn_plot_png(&plot, tu_path(dir, "plot.png")), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "no components");
    assert_int_equal(entry_count(dir), 0);
}

static void test_missing_folder(void **state)
{
    skip_without_cairo();
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    struct tsrnn_plot plot = monthly_plot(&m, 1000, 500);
    char path[4096];
    snprintf(path, sizeof(path), "%s", tu_path(dir, "missing/forecast.png"));
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_ERR_IO);
    tu_expect_in(tsrnn_last_error(), "missing/forecast.png");
    tu_expect_in(tsrnn_last_error(), "No such file or directory");
    assert_int_equal(entry_count(dir), 0);
}

/* An existing file is replaced whole, with no temporary file left beside it. */
static void test_replaces_file(void **state)
{
    skip_without_cairo();
    const char *dir = *state;
    struct monthly m;
    monthly_init(&m);
    struct tsrnn_plot plot = monthly_plot(&m, 640, 480);
    char path[4096];
    snprintf(path, sizeof(path), "%s", tu_write(dir, "forecast.png", "old"));
    assert_int_equal(tsrnn_plot_png(&plot, path), TSRNN_OK);
    assert_png_size(path, 640, 480);
    assert_int_equal(entry_count(dir), 1);
}

/* This program again, as `test_plot draw cold|warm PATH`: a process whose first picture is
 * the monthly one at 1000x500, drawn from scratch or after the warm-up. Its exit status. */
static const char *self_path(void)
{
    static char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    return self;
}

static int draw_in_child(const char *how, const char *path)
{
    char *self = (char *)self_path();
    char *argv[] = { self, "draw", (char *)how, (char *)path, NULL };
    extern char **environ;
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static enum tsrnn_status warmup_job(void *arg)
{
    (void)arg;
    tsrnn_plot_warmup(1000, 500);
    return TSRNN_OK;
}

/* The child's side: 0 drawn, 1 not. "warm" readies the picture on a helper thread first, as
 * the trainer does while it trains. */
static int draw_main(const char *how, const char *path)
{
    struct monthly m;
    monthly_init(&m);
    struct tsrnn_plot plot = monthly_plot(&m, 1000, 500);
    if (strcmp(how, "warm") == 0) {
        struct tsrnn_jobs jobs = { 0 };
        if (tsrnn_jobs_add(&jobs, warmup_job, NULL) != TSRNN_OK)
            return 1;
        tsrnn_jobs_start(&jobs);
        if (tsrnn_jobs_finish(&jobs) != TSRNN_OK)
            return 1;
    }
    if (tsrnn_plot_png(&plot, path) != TSRNN_OK) {
        fprintf(stderr, "%s\n", tsrnn_last_error());
        return 1;
    }
    return 0;
}

/* The warm-up's fonts and glyphs change no byte of the picture. */
static void test_warmup_same_bytes(void **state)
{
    skip_without_cairo();
    const char *dir = *state;
    char cold[4096], warm[4096];
    snprintf(cold, sizeof(cold), "%s", tu_path(dir, "cold.png"));
    snprintf(warm, sizeof(warm), "%s", tu_path(dir, "warm.png"));
    assert_int_equal(draw_in_child("cold", cold), 0);
    assert_int_equal(draw_in_child("warm", warm), 0);
    size_t cold_nbytes, warm_nbytes;
    char *a = tu_read_bytes(cold, &cold_nbytes), *b = tu_read_bytes(warm, &warm_nbytes);
    assert_true(cold_nbytes > 10000);
    assert_int_equal(warm_nbytes, cold_nbytes);
    assert_memory_equal(a, b, cold_nbytes);
    free(a);
    free(b);
    assert_png_size(warm, 1000, 500);
}

/* A libcairo.so.2 that is not the build's cairo (tests/stub/), found first: the picture,
 * warmed up or not, is refused with a message naming the library and what it lacks, and
 * nothing is written. */
static void test_wrong_cairo_is_reported(void **state)
{
    skip_without_cairo();
    const char *dir = *state, *stub = getenv("TSRNN_CAIRO_STUB_DIR");
    assert_non_null(stub); /* meson test sets it */
    char path[4096];
    snprintf(path, sizeof(path), "%s", tu_path(dir, "p.png"));
    struct tu_result *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    static const char *const hows[] = { "cold", "warm" };
    for (int i = 0; i < 2; i++) {
        const char *argv[] = { self_path(), "draw", hows[i], path, NULL };
        assert_int_equal(setenv("LD_LIBRARY_PATH", stub, 1), 0);
        int ran = tu_run(argv, 30, r);
        unsetenv("LD_LIBRARY_PATH");
        assert_int_equal(ran, 0);
        assert_int_equal(r->exit_code, 1);
        tu_expect_in(r->err, "cannot draw ");
        tu_expect_in(r->err, "p.png: libcairo.so.2 (");
        tu_expect_in(r->err, ") has no cairo_arc: not the library of the build");
        assert_int_equal(entry_count(dir), 0);
    }
    free(r);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "draw") == 0)
        return draw_main(argv[2], argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_available_matches_build, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_monthly, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_two_components, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_index_axis, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_degenerate, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_odd_text, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_bad_size, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_nothing_to_draw, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_missing_folder, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_replaces_file, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_warmup_same_bytes, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_wrong_cairo_is_reported, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
