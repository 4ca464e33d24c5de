/* Windows over several series (Darts' global models): tsrnn_window_list against real Darts
 * 0.48.1's ShiftedTorchTrainingDataset over a list of series (tests/fixtures/
 * global_windows.txt, scripts/gen-global-fixtures.py): for every sample index of four cases
 * (2-3 series of different lengths, with and without max_samples_per_ts) the same series,
 * the same window and the same input and target values; and the refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/data.h"

#define MAX_SERIES 4
#define MAX_POINTS 128

/* Series s holds 1000 s + p at position p, as the generator's. */
static float values[MAX_SERIES][MAX_POINTS];

static void test_window_list_matches_darts(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("tests/fixtures/global_windows.txt"));
    assert_non_null(text);
    for (size_t s = 0; s < MAX_SERIES; s++)
        for (size_t p = 0; p < MAX_POINTS; p++)
            values[s][p] = (float)(1000 * s + p);

    size_t cases = 0, samples = 0;
    char *save = NULL;
    struct tsrnn_windows series[MAX_SERIES];
    struct tsrnn_window_list list = { 0 };
    size_t T = 0;
    float input[MAX_POINTS], target[MAX_POINTS];
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        if (strncmp(line, "case ", 5) == 0) {
            size_t lengths[MAX_SERIES], S = 0, cap, count;
            char *cursor = line + 5;
            while (S < MAX_SERIES && strncmp(cursor, "T ", 2) != 0)
                lengths[S++] = strtoul(cursor, &cursor, 10), cursor++;
            assert_int_equal(
                sscanf(cursor, "T %zu max_samples_per_ts %zu count %zu", &T, &cap, &count), 3);
            for (size_t s = 0; s < S; s++)
                tsrnn_windows_init(&series[s], values[s], lengths[s], 1, T);
            assert_int_equal(tsrnn_window_list_init(&list, series, S, cap), TSRNN_OK);
            assert_int_equal(list.count, count); /* S * M, Darts' len(dataset) */
            cases++;
            continue;
        }
        size_t idx, sid, start, s, w;
        assert_int_equal(sscanf(line, "%zu %zu %zu", &idx, &sid, &start), 3);
        assert_true(idx < list.count);
        tsrnn_window_list_locate(&list, idx, &s, &w);
        assert_int_equal(s, sid);
        assert_int_equal(tsrnn_windows_start(&series[s], w), start);
        tsrnn_window_list_gather(&list, &idx, 1, input, target);
        for (size_t t = 0; t < T; t++) {
            assert_true(input[t] == (float)(1000 * sid + start + t));
            assert_true(target[t] == (float)(1000 * sid + start + t + 1));
        }
        samples++;
    }
    printf("# %zu cases, %zu samples: the same series, window and values as Darts\n", cases,
           samples);
    assert_int_equal(cases, 4);
    assert_int_equal(samples, 105 + 30 + 106 + 12);
    free(text);
}

static void test_window_list_refuses_a_series_without_window(void **state)
{
    (void)state;
    struct tsrnn_windows series[2];
    struct tsrnn_window_list list;
    tsrnn_windows_init(&series[0], values[0], 30, 1, 5);
    tsrnn_windows_init(&series[1], values[1], 5, 1, 5); /* 5 points: no window of 5 + 1 */
    assert_int_equal(tsrnn_window_list_init(&list, series, 2, 0), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "series 1 has 5 points, too few for one window of "
                                     "training_length 5 + 1 points");
    tsrnn_windows_init(&series[0], values[0], 4, 1, 5);
    assert_int_equal(tsrnn_window_list_init(&list, series, 2, 0), TSRNN_ERR_DATA);
    tu_expect_in(tsrnn_last_error(), "none of the 2 series is long enough");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_list_matches_darts),
        cmocka_unit_test(test_window_list_refuses_a_series_without_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
