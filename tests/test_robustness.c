/* Random inputs: the CSV reader and the INI parser either accept a text or refuse it with a
 * message; they never crash, hang or leak (this program also runs under ASan + UBSan in
 * scripts/test.sh). Inputs are built from the characters that matter to each format, from a
 * fixed seed, so a failure reproduces. */
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
#include "tsrnn/data.h"
#include "tsrnn/rng.h"

#define ROUNDS 1500

static void random_text(struct tsrnn_rng *rng, const char *alphabet, const char *const *words,
                        size_t word_count, char *out, size_t capacity)
{
    size_t len = (size_t)tsrnn_rng_below(rng, capacity / 8);
    size_t used = 0;
    size_t alphabet_count = strlen(alphabet);
    while (used < len && used + 32 < capacity) {
        if (tsrnn_rng_below(rng, 3) == 0) {
            const char *w = words[tsrnn_rng_below(rng, word_count)];
            size_t n = strlen(w);
            memcpy(out + used, w, n);
            used += n;
        } else {
            out[used++] = alphabet[tsrnn_rng_below(rng, alphabet_count)];
        }
    }
    out[used] = '\0';
}

static void test_random_csv(void **state)
{
    (void)state;
    static const char *const words[] = { "Month,v\n", "1949-01",      "1949-02-28", "12:30", "\r\n",
                                         "\"",        "\"\"",         ",",          "nan",   "1e39",
                                         "-3.5",      "\xEF\xBB\xBF", "2001",       "\n\n",  " " };
    char *dir = tu_mkdtemp();
    char text[4096];
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 2024, 0);
    size_t accepted = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (round % 2 == 0) {
            /* row-shaped text: mostly good rows, now and then one random field */
            size_t used = (size_t)snprintf(text, sizeof(text), "Month,v\n");
            size_t rows = 1 + (size_t)tsrnn_rng_below(&rng, 40);
            for (size_t r = 0; r < rows && used + 64 < sizeof(text); r++) {
                char field[256]; /* random_text() fills at most an eighth of it */
                random_text(&rng, "0123456789-,.:\" \rx", words, sizeof(words) / sizeof(words[0]),
                            field, sizeof(field));
                bool corrupt = tsrnn_rng_below(&rng, 60) == 0;
                used += (size_t)snprintf(text + used, sizeof(text) - used, "%d-%02zu,%s\n",
                                         1949 + (int)(r / 12), r % 12 + 1, corrupt ? field : "1.5");
            }
        } else {
            random_text(&rng, "0123456789-,.:\" \n\rMvtx", words, sizeof(words) / sizeof(words[0]),
                        text, sizeof(text));
        }
        const char *path = tu_write(dir, "r.csv", text);
        struct tsrnn_series s;
        const char *time_col = round % 3 == 0 ? "" : "Month";
        enum tsrnn_status status = tsrnn_series_load_csv(&s, path, time_col, NULL, 0);
        if (status == TSRNN_OK) {
            accepted++;
            assert_true(s.component_count >= 1);
            for (size_t t = 1; t < s.length; t++)
                assert_true(s.times[t] > s.times[t - 1]);
            tsrnn_series_finish(&s);
        } else {
            assert_int_equal(status, TSRNN_ERR_DATA);
            assert_true(strlen(tsrnn_last_error()) > 0);
            assert_null(s.values);
        }
    }
    /* the generator must reach both outcomes, or this test tests nothing */
    assert_true(accepted > 10);
    assert_true(accepted < ROUNDS - 10);
    tu_rmtree(dir);
    free(dir);
}

static void test_random_ini(void **state)
{
    (void)state;
    static const char *const words[] = {
        "[data]\n",
        "[model]\n",
        "[training]\n",
        "[trainer]\n",
        "[output]\n",
        "[forecast]\n",
        "[modle]\n",
        "path = s.csv\n",
        "hidden_dim = ",
        "dropout = ",
        "model = ",
        "LSTM",
        "batch_size = ",
        "split_after = ",
        "value_cols = ",
        "n = ",
        "devices = ",
        "-1",
        "0,2",
        "training_length = ",
        "input_chunk_length = ",
        "lr = ",
        "1e-3",
        "nan",
        "\n",
        "=",
        ";",
        "#",
        "[",
        "]",
        " ",
        "\t",
        "true",
        "99999999999999999999",
    };
    char *dir = tu_mkdtemp();
    tu_write(dir, "s.csv", "t,v\n1,1\n");
    char text[4096];
    char ini[4096];
    snprintf(ini, sizeof(ini), "%s/r.ini", dir);
    struct tsrnn_config *cfg = malloc(sizeof(*cfg));
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 7, 0);
    size_t accepted = 0;
    for (int round = 0; round < ROUNDS; round++) {
        random_text(&rng, "abcdehilmnoprstu_=[] 0123456789.\n", words,
                    sizeof(words) / sizeof(words[0]), text, sizeof(text));
        tu_write(dir, "r.ini", text);
        enum tsrnn_status status = tsrnn_config_load(cfg, ini, NULL, 0);
        if (status == TSRNN_OK) {
            accepted++;
            assert_true(cfg->hidden_dim >= 1);
            assert_true(cfg->training_length >= cfg->input_chunk_length);
            assert_true(cfg->dropout >= 0 && cfg->dropout < 1);
        } else {
            assert_int_equal(status, TSRNN_ERR_USAGE);
            assert_true(strlen(tsrnn_last_error()) > 0);
        }
    }
    /* every random file lacks something or has garbage: most are refused, with a message */
    assert_true(accepted < ROUNDS);
    free(cfg);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_csv),
        cmocka_unit_test(test_random_ini),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
