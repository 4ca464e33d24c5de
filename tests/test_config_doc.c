/* docs/configuration.md: the committed page is what the config schema writes today
 * (tools/config-doc, run as `ninja config-doc` runs it), so the reference cannot drift from the
 * parser. A mismatch names the first differing line and the command that regenerates it. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/config.h"

#define PAGE       "docs/configuration.md"
#define REGENERATE "ninja -C build config-doc"

/* What tsrnn-config-doc writes into a file (as `ninja config-doc` runs it) or, with
 * `to_stdout`, on its standard output (sent to that file by the shell); the caller frees. */
static char *program_page(bool to_stdout)
{
    struct tu_result *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    char *dir = tu_mkdtemp();
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/configuration.md", tu_path(dir, ""));
    const char *program = tu_env("TSRNN_CONFIG_DOC");
    const char *to_file[] = { program, out, NULL };
    const char *shell[] = { "/bin/sh", "-c", "exec \"$0\" > \"$1\"", program, out, NULL };
    assert_int_equal(tu_run(to_stdout ? shell : to_file, 30, r), 0);
    if (r->exit_code != 0)
        fail_msg("%s exited with %d: %s", program, r->exit_code, r->err);
    char *text = tu_read(out);
    assert_non_null(text);
    tu_rmtree(dir);
    free(dir);
    free(r);
    return text;
}

/* The page as the schema writes it now; the caller frees. */
static char *generated_page(void)
{
    return program_page(false);
}

/* Fails with the first line where `actual` (a file) and `expected` differ. */
static void expect_same_text(const char *actual, const char *expected, const char *what)
{
    if (strcmp(actual, expected) == 0)
        return;
    int line = 1;
    const char *a = actual, *e = expected;
    while (*a != '\0' && *a == *e) {
        line += *a == '\n';
        a++;
        e++;
    }
    while (a > actual && a[-1] != '\n') {
        a--;
        e--;
    }
    fail_msg("%s differs from the config schema at line %d:\n"
             "  %s: %.*s\n"
             "  schema: %.*s\n"
             "regenerate it with `%s` and commit it",
             what, line, what, (int)strcspn(a, "\n"), a, (int)strcspn(e, "\n"), e, REGENERATE);
}

static void test_committed_page_is_the_schemas(void **state)
{
    (void)state;
    char *expected = generated_page();
    char *committed = tu_read(tu_source(PAGE));
    if (committed == NULL)
        fail_msg("cannot read %s; write it with `%s`", tu_source(PAGE), REGENERATE);
    expect_same_text(committed, expected, PAGE);
    free(committed);
    free(expected);
}

/* The parser's own list of keys (the resolved config tsrnn_config_write() prints) against the
 * page's headings: each key documented once, none that the parser does not know. */
static void test_page_documents_every_key(void **state)
{
    (void)state;
    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    assert_non_null(cfg);
    assert_int_equal(tsrnn_config_init(cfg), TSRNN_OK);
    char *ini = tsrnn_config_text(cfg);
    assert_non_null(ini);
    char *page = generated_page();

    char section[64] = "", heading[256];
    size_t key_count = 0, heading_count = 0;
    for (char *line = strtok(ini, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (line[0] == '[') {
            snprintf(section, sizeof(section), "%.*s", (int)strcspn(line + 1, "]"), line + 1);
            continue;
        }
        snprintf(heading, sizeof(heading), "\n### `[%s] %.*s`\n", section, (int)strcspn(line, " ="),
                 line);
        const char *at = strstr(page, heading);
        if (at == NULL || strstr(at + 1, heading) != NULL)
            fail_msg("the page does not document %s exactly once", heading + 1);
        key_count++;
    }
    for (const char *at = page; (at = strstr(at, "\n### `[")) != NULL; at++)
        heading_count++;
    assert_true(key_count >= 30);
    assert_int_equal(heading_count, key_count);
    free(page);
    free(ini);
    free(cfg);
}

/* The program writes the same page on its standard output, and refuses a second argument
 * with exit code 2. */
static void test_program_writes_the_page(void **state)
{
    (void)state;
    char *written = program_page(true);
    char *expected = generated_page();
    expect_same_text(written, expected, "tsrnn-config-doc's standard output");

    struct tu_result *r = calloc(1, sizeof(*r));
    const char *program = tu_env("TSRNN_CONFIG_DOC");
    const char *two[] = { program, "a.md", "b.md", NULL };
    assert_int_equal(tu_run(two, 30, r), 0);
    assert_int_equal(r->exit_code, 2);
    tu_expect_in(r->err, "Usage: tsrnn-config-doc [FILE.md]");

    free(expected);
    free(written);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_committed_page_is_the_schemas),
        cmocka_unit_test(test_page_documents_every_key),
        cmocka_unit_test(test_program_writes_the_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
