/* cairo and fontconfig for the pictures (plot_libs.h): loaded with the shared loader
 * (src/core/dynlib.c) when a picture first needs them, and fontconfig pointed at the DejaVu
 * faces the charts draw with. Compiled only in builds with plots. */
#include "plot_libs.h"

#include <pthread.h>
#include <unistd.h>

#include "tsrnn/dynlib.h"

#define CAIRO_SONAME      "libcairo.so.2"
#define FONTCONFIG_SONAME "libfontconfig.so.1"

struct tsrnn_plot_libs tsrnn_plot_libs;

#define TABLE_SYMBOL(fn) TSRNN_DYNLIB_SYMBOL(tsrnn_plot_libs, fn),
static const struct tsrnn_dynlib_symbol cairo_symbols[] = { TSRNN_CAIRO_FUNCTIONS(TABLE_SYMBOL) };
static const struct tsrnn_dynlib_symbol fontconfig_symbols[] = { TSRNN_FONTCONFIG_FUNCTIONS(
    TABLE_SYMBOL) };

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[1024];

static void load_libraries(void)
{
    /* Handles stay open for the life of the process. */
    loaded =
        tsrnn_dynlib_open(CAIRO_SONAME, NULL, cairo_symbols,
                          sizeof(cairo_symbols) / sizeof(cairo_symbols[0]),
                          "install it (Debian: libcairo2)", ": not the library of the build",
                          load_why, sizeof(load_why)) != NULL &&
        tsrnn_dynlib_open(FONTCONFIG_SONAME, NULL, fontconfig_symbols,
                          sizeof(fontconfig_symbols) / sizeof(fontconfig_symbols[0]),
                          "install it (Debian: libfontconfig1)", ": not the library of the build",
                          load_why, sizeof(load_why)) != NULL;
    /* read after pthread_once, which orders it */
}

bool tsrnn_plot_libs_load(const char **why)
{
    pthread_once(&load_once, load_libraries);
    *why = loaded ? NULL : load_why;
    return loaded;
}

/* --- fonts ----------------------------------------------------------------------------- */

/* Where fonts-dejavu-core (Debian, Ubuntu) and other distributions' DejaVu packages put the
 * two faces drawn: regular, then bold. */
static const char *const dejavu_files[][2] = {
    { "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
      "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf" },
    { "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
      "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans-Bold.ttf" },
    { "/usr/share/fonts/TTF/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf" },
    { "/usr/share/fonts/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf" },
};

/* How fontconfig's stock configuration renders DejaVu Sans: slight hinting, grey
 * antialiasing, FreeType's default LCD filter, and no hinting under 7.5 pixels. */
static const char dejavu_rendering[] =
    "<fontconfig>"
    "<match target=\"pattern\"><edit name=\"hintstyle\" mode=\"append\">"
    "<const>hintslight</const></edit></match>"
    "<match target=\"pattern\"><edit name=\"antialias\" mode=\"append\">"
    "<bool>true</bool></edit></match>"
    "<match target=\"pattern\"><edit name=\"lcdfilter\" mode=\"append\">"
    "<const>lcddefault</const></edit></match>"
    "<match target=\"font\"><test name=\"pixelsize\" compare=\"less\"><double>7.5</double>"
    "</test><edit name=\"hinting\"><bool>false</bool></edit></match>"
    "</fontconfig>";

/* cairo's toy text API finds FONT through fontconfig, whose first use parses the system's
 * whole configuration (some 40 XML files) and maps every font's cache: 24 M instructions,
 * ~4 ms (this set-up: 4 M). Where the DejaVu files are at a known place,
 * fontconfig gets a configuration of those two files and the stock rendering settings
 * instead: the same glyphs (a user's own fontconfig settings no longer apply to the
 * pictures). Elsewhere it loads its own as before. Once per process; the process draws
 * nothing else with fontconfig. */
static void use_dejavu_files(void)
{
    for (size_t i = 0; i < sizeof(dejavu_files) / sizeof(dejavu_files[0]); i++) {
        if (access(dejavu_files[i][0], R_OK) != 0 || access(dejavu_files[i][1], R_OK) != 0)
            continue;
        FcConfig *config = LIB(FcConfigCreate)();
        if (config != NULL &&
            LIB(FcConfigParseAndLoadFromMemory)(config, (const FcChar8 *)dejavu_rendering,
                                                FcTrue) &&
            LIB(FcConfigAppFontAddFile)(config, (const FcChar8 *)dejavu_files[i][0]) &&
            LIB(FcConfigAppFontAddFile)(config, (const FcChar8 *)dejavu_files[i][1]) &&
            LIB(FcConfigSetCurrent)(config)) {
            LIB(FcConfigDestroy)(config); /* the current configuration holds its own reference */
            return;
        }
        LIB(FcConfigDestroy)(config);
    }
}

void tsrnn_plot_fonts_setup(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, use_dejavu_files);
}
