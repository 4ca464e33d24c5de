/* Private to src/report/: cairo and fontconfig, loaded when a picture first needs them
 * (plot_libs.c), for the charts (plot.c). Only in builds with plots (TSRNN_HAVE_PLOTS).
 *
 * Linked, cairo and fontconfig (with pixman, FreeType, libpng, the X libraries: 20 more
 * libraries) cost every process ~1.7 ms of start-up for a picture drawn, if at all, at its
 * end. They are loaded by soname when the first picture needs them, or before, on the thread
 * of tsrnn_plot_warmup(). zlib, small and cairo's own dependency, stays linked. Every cairo
 * and fontconfig function called is listed here and called as LIB(name)(...). */
#ifndef TSRNN_REPORT_PLOT_LIBS_H
#define TSRNN_REPORT_PLOT_LIBS_H

#include <stdbool.h>

#include <cairo.h>
#include <fontconfig/fontconfig.h>

/* clang-format off */
#define TSRNN_CAIRO_FUNCTIONS(X)          \
    X(cairo_arc)                          \
    X(cairo_clip)                         \
    X(cairo_create)                       \
    X(cairo_destroy)                      \
    X(cairo_fill)                         \
    X(cairo_fill_preserve)                \
    X(cairo_font_extents)                 \
    X(cairo_image_surface_create)         \
    X(cairo_image_surface_get_data)       \
    X(cairo_image_surface_get_height)     \
    X(cairo_image_surface_get_stride)     \
    X(cairo_image_surface_get_width)      \
    X(cairo_line_to)                      \
    X(cairo_move_to)                      \
    X(cairo_new_path)                     \
    X(cairo_paint)                        \
    X(cairo_rectangle)                    \
    X(cairo_restore)                      \
    X(cairo_rotate)                       \
    X(cairo_save)                         \
    X(cairo_select_font_face)             \
    X(cairo_set_antialias)                \
    X(cairo_set_font_size)                \
    X(cairo_set_line_cap)                 \
    X(cairo_set_line_join)                \
    X(cairo_set_line_width)               \
    X(cairo_set_source_rgb)               \
    X(cairo_set_source_rgba)              \
    X(cairo_show_text)                    \
    X(cairo_status)                       \
    X(cairo_status_to_string)             \
    X(cairo_stroke)                       \
    X(cairo_surface_destroy)              \
    X(cairo_surface_flush)                \
    X(cairo_text_extents)                 \
    X(cairo_translate)
#define TSRNN_FONTCONFIG_FUNCTIONS(X)     \
    X(FcConfigAppFontAddFile)             \
    X(FcConfigCreate)                     \
    X(FcConfigDestroy)                    \
    X(FcConfigParseAndLoadFromMemory)     \
    X(FcConfigSetCurrent)
/* clang-format on */

#define TSRNN_PLOT_LIB_POINTER(name) __typeof__(name) *name;
struct tsrnn_plot_libs {
    TSRNN_CAIRO_FUNCTIONS(TSRNN_PLOT_LIB_POINTER)
    TSRNN_FONTCONFIG_FUNCTIONS(TSRNN_PLOT_LIB_POINTER)
};

/* The functions, set once tsrnn_plot_libs_load() returned true. */
extern struct tsrnn_plot_libs tsrnn_plot_libs;
#define LIB(name) (tsrnn_plot_libs.name)

/* Loads both libraries, once per process (later calls return the first answer). False with
 * *why set to the loader's sentence ("cannot load libcairo.so.2 (...); install it (Debian:
 * libcairo2)") when either cannot be loaded. Safe on any thread. */
bool tsrnn_plot_libs_load(const char **why);

/* Points fontconfig at the DejaVu files where they are at a known place (plot_libs.c says
 * why), once per process. Call after a successful tsrnn_plot_libs_load(). */
void tsrnn_plot_fonts_setup(void);

#endif
