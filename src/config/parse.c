/* Reading a config (include/tsrnn/config.h): INI files, the text a checkpoint holds, and
 * --set overrides, each value set through the schema (value.c).
 *
 * The INI syntax is libinih's (Debian's libinih-dev), with Debian's runtime knobs set to
 * Python configparser's behaviour: no multi-line values, no inline comments (`#` and `;`
 * start a comment only at the beginning of a line), no line-length limit, stop at the first
 * error. libinih reads through line_reader() below, which counts lines and sees section
 * headers, so every message can name `file:line` and an empty unknown section is an error too.
 */
#include "schema.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct parse_context {
    struct tsrnn_config *cfg;
    const char *ini_path; /* as the user gave it, for messages */
    const char *base_dir;
    FILE *file;
    int line;            /* number of the line libinih is working on */
    bool at_line_start;  /* the next read starts a new line */
    char line_text[256]; /* start of the current line, for syntax errors */
    int seen_line
        [TSRNN_CONFIG_MAX_KEYS]; /* line where each key was set in this file, 0 = not yet */
    enum tsrnn_status status;    /* set by the handler or reader that failed */
};

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len > 0 &&
           (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' || s[len - 1] == '\n'))
        s[--len] = '\0';
    return s;
}

/* libinih's fgets-style reader: counts lines, keeps the line's text and checks section
 * headers itself (libinih never reports a section that holds no key). */
static char *line_reader(char *buf, int capacity, void *stream)
{
    struct parse_context *ctx = stream;
    if (ctx->status != TSRNN_OK)
        return NULL;
    char *got = fgets(buf, capacity, ctx->file);
    if (got == NULL)
        return NULL;
    bool new_line = ctx->at_line_start;
    size_t len = strlen(buf);
    ctx->at_line_start = len > 0 && buf[len - 1] == '\n';
    if (!new_line)
        return got;

    ctx->line++;
    snprintf(ctx->line_text, sizeof(ctx->line_text), "%s", buf);
    char *text = trim(ctx->line_text);
    memmove(ctx->line_text, text, strlen(text) + 1);

    char *p = ctx->line_text;
    if (ctx->line == 1 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;
    char *close = strchr(p, ']');
    if (p[0] == '[' && close != NULL) {
        char name[128];
        size_t n = (size_t)(close - p - 1);
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, p + 1, n);
        name[n] = '\0';
        char *section = trim(name);
        if (!config_known_section(section)) {
            char origin[TSRNN_ORIGIN_MAX];
            snprintf(origin, sizeof(origin), "%s:%d", ctx->ini_path, ctx->line);
            ctx->status = config_unknown_section(section, origin);
            return NULL;
        }
    }
    return got;
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *value)
{
    struct parse_context *ctx = user;
    char origin[TSRNN_ORIGIN_MAX];
    snprintf(origin, sizeof(origin), "%s:%d", ctx->ini_path, ctx->line);

    if (section[0] == '\0') {
        ctx->status = tsrnn_error(TSRNN_ERR_USAGE,
                                  "%s: key '%s' appears before any [section]; put it under the "
                                  "section it belongs to, e.g. [model]",
                                  origin, name);
        return 0;
    }
    const struct config_key *k = config_find_key(section, name);
    if (k != NULL && ctx->seen_line[config_key_index(k)] != 0) {
        ctx->status = tsrnn_error(TSRNN_ERR_USAGE,
                                  "%s: duplicate key [%s] %s (first set at line %d); keep one",
                                  origin, k->section, k->name, ctx->seen_line[config_key_index(k)]);
        return 0;
    }
    ctx->status = tsrnn_config_set(ctx->cfg, section, name, value, origin, ctx->base_dir);
    if (ctx->status != TSRNN_OK)
        return 0;
    ctx->seen_line[config_key_index(k)] = ctx->line;
    return 1;
}

/* The absolute folder that holds `path`. */
static enum tsrnn_status folder_of(const char *path, char *out, size_t capacity)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    char resolved[PATH_MAX];
    if (realpath(dir, resolved) == NULL)
        return tsrnn_error_errno(TSRNN_ERR_USAGE, errno, "%s: cannot resolve its folder", path);
    if (strlen(resolved) >= capacity)
        return tsrnn_error(TSRNN_ERR_USAGE, "%s: path too long", path);
    strcpy(out, resolved);
    return TSRNN_OK;
}

/* Parses `file` (named `label` in messages) over `cfg`; relative paths join `base_dir`. */
static enum tsrnn_status parse_stream(struct tsrnn_config *cfg, FILE *file, const char *label,
                                      const char *base_dir)
{
    struct parse_context ctx = {
        .cfg = cfg,
        .ini_path = label,
        .base_dir = base_dir,
        .file = file,
        .at_line_start = true,
    };

    /* Debian's libinih exposes its compile-time options as globals: configparser semantics. */
    ini_allow_multiline = false;
    ini_allow_inline_comments = false;
    ini_stop_on_first_error = true;
    ini_allow_no_value = false;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_max_line = 1 << 20;

    int rc = ini_parse_stream(line_reader, &ctx, ini_handler_fn, &ctx);
    if (ctx.status != TSRNN_OK)
        return ctx.status;
    if (ferror(file))
        return tsrnn_error(TSRNN_ERR_USAGE, "cannot read config file %s", label);
    if (rc == -2)
        return tsrnn_error(TSRNN_ERR_NOMEM, "out of memory parsing %s", label);
    if (rc != 0)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s:%d: syntax error in '%s'; expected '[section]', 'key = value' or "
                           "a comment starting with # or ;",
                           label, rc, ctx.line_text);
    return TSRNN_OK;
}

/* A config file is text a person wrote: far below this. */
#define MAX_CONFIG_NBYTES (16u << 20)

/* What libinih would read differently from what the file says: a NUL byte ends its line
 * early ("hidden_dim = 2<NUL>0" would read as 2), and old-Mac CR-only line ends make the
 * whole file one line. */
static enum tsrnn_status check_config_text(const char *text, size_t nbytes, const char *path)
{
    int line = 1, column = 1;
    for (size_t i = 0; i < nbytes; i++, column++) {
        if (text[i] == '\0')
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s:%d:%d: a NUL byte; accepted: text (save the file as UTF-8 "
                               "or ASCII)",
                               path, line, column);
        if (text[i] == '\r' && (i + 1 == nbytes || text[i + 1] != '\n'))
            return tsrnn_error(TSRNN_ERR_USAGE,
                               "%s:%d:%d: a carriage return that ends no line (old-Mac line "
                               "ends); accepted: LF or CRLF line ends",
                               path, line, column);
        if (text[i] == '\n')
            line++, column = 0;
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_config_parse_file(struct tsrnn_config *cfg, const char *ini_path)
{
    enum tsrnn_status status = TSRNN_OK;
    char base_dir[PATH_MAX];
    char *text = NULL;
    size_t nbytes = 0;
    FILE *file = NULL;

    status = tsrnn_read_file(ini_path, MAX_CONFIG_NBYTES, "config file", TSRNN_ERR_USAGE, &text,
                             &nbytes);
    if (status != TSRNN_OK)
        goto out;
    status = check_config_text(text, nbytes, ini_path);
    if (status != TSRNN_OK)
        goto out;
    status = folder_of(ini_path, base_dir, sizeof(base_dir));
    if (status != TSRNN_OK)
        goto out;
    file = fmemopen(nbytes ? text : (char *)"\n", nbytes ? nbytes : 1, "r");
    if (file == NULL) {
        status = tsrnn_error_errno(TSRNN_ERR_NOMEM, errno, "cannot read config file %s", ini_path);
        goto out;
    }
    status = parse_stream(cfg, file, ini_path, base_dir);
out:
    if (file != NULL)
        fclose(file);
    free(text);
    return status;
}

enum tsrnn_status tsrnn_config_parse_text(struct tsrnn_config *cfg, const char *text,
                                          const char *label)
{
    size_t len = strlen(text);
    FILE *file = fmemopen(len ? (void *)text : (void *)"\n", len ? len : 1, "r");
    if (file == NULL)
        return tsrnn_error_errno(TSRNN_ERR_NOMEM, errno, "cannot read the config of %s", label);
    enum tsrnn_status status = parse_stream(cfg, file, label, NULL);
    fclose(file);
    return status;
}

enum tsrnn_status tsrnn_config_apply_override(struct tsrnn_config *cfg, const char *arg)
{
    char origin[TSRNN_ORIGIN_MAX];
    char text[4096];
    char cwd[PATH_MAX];

    snprintf(origin, sizeof(origin), "--set %s", arg);
    if (strlen(arg) >= sizeof(text))
        return tsrnn_error(TSRNN_ERR_USAGE, "--set argument too long");
    strcpy(text, arg);
    char *eq = strchr(text, '=');
    char *dot = eq ? memchr(text, '.', (size_t)(eq - text)) : NULL;
    if (eq == NULL || dot == NULL)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "%s: expected section.key=value, e.g. --set model.hidden_dim=32",
                           origin);
    *eq = '\0';
    *dot = '\0';
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read the current directory");
    return tsrnn_config_set(cfg, trim(text), trim(dot + 1), trim(eq + 1), origin, cwd);
}

enum tsrnn_status tsrnn_config_load(struct tsrnn_config *cfg, const char *ini_path,
                                    const char *const *overrides, size_t override_count)
{
    TSRNN_TRY(tsrnn_config_init(cfg));
    TSRNN_TRY(tsrnn_config_parse_file(cfg, ini_path));
    for (size_t i = 0; i < override_count; i++)
        TSRNN_TRY(tsrnn_config_apply_override(cfg, overrides[i]));
    return tsrnn_config_validate(cfg);
}
