/* PyTorch / numpy / Darts random numbers (include/tsrnn/torch_rng.h) against the vectors that
 * scripts/gen-rng-vectors.py took from the real libraries (tests/fixtures/rng_vectors.txt).
 *
 * Each fixture line is `<case> <param> ... | <count> <hash> | <first values>`: the test
 * computes the case's `count` numbers, compares the first ones one by one and all of them
 * through the hash (FNV-1a 64 over each number as a little-endian uint64; floats as their
 * bits). The fixture is found under $TSRNN_SOURCE_ROOT (set by meson), else the current
 * folder. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tsrnn/torch_rng.h"

#define FIXTURE_PATH     "tests/fixtures/rng_vectors.txt"
#define MAX_LINES        256
#define MAX_PARAMS       12
#define MAX_PREFIX       16
#define MAX_TOKEN        64
#define MAX_LINE_NBYTES  4096
#define FNV_OFFSET_BASIS UINT64_C(0xCBF29CE484222325)
#define FNV_PRIME        UINT64_C(0x100000001B3)

struct vector_case {
    int line_number;
    char name[MAX_TOKEN];
    char params[MAX_PARAMS][MAX_TOKEN];
    size_t param_count;
    size_t count;
    uint64_t hash;
    uint64_t prefix[MAX_PREFIX];
    size_t prefix_count;
};

static struct vector_case cases[MAX_LINES];
static size_t case_count;

/* --- fixture --------------------------------------------------------------------------- */

static bool parse_u64(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-')
        return false;
    *out = (uint64_t)v;
    return true;
}

/* Splits `text` at spaces into at most `max` tokens of MAX_TOKEN bytes. */
static bool split_tokens(char *text, char (*tokens)[MAX_TOKEN], size_t max, size_t *count)
{
    *count = 0;
    for (char *tok = strtok(text, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
        if (*count == max || strlen(tok) >= MAX_TOKEN)
            return false;
        strcpy(tokens[(*count)++], tok);
    }
    return true;
}

static bool parse_line(char *text, struct vector_case *vc)
{
    char *bar1 = strchr(text, '|');
    char *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    if (!bar2)
        return false;
    *bar1 = '\0';
    *bar2 = '\0';
    char head[MAX_PARAMS + 1][MAX_TOKEN];
    char mid[2][MAX_TOKEN];
    char tail[MAX_PREFIX][MAX_TOKEN];
    size_t head_count, mid_count, tail_count;
    if (!split_tokens(text, head, MAX_PARAMS + 1, &head_count) || head_count < 1 ||
        !split_tokens(bar1 + 1, mid, 2, &mid_count) || mid_count != 2 ||
        !split_tokens(bar2 + 1, tail, MAX_PREFIX, &tail_count))
        return false;
    strcpy(vc->name, head[0]);
    vc->param_count = head_count - 1;
    for (size_t i = 1; i < head_count; i++)
        strcpy(vc->params[i - 1], head[i]);
    uint64_t count;
    char hash_text[MAX_TOKEN + 2] = "0x";
    strcat(hash_text, mid[1]);
    if (!parse_u64(mid[0], &count) || !parse_u64(hash_text, &vc->hash))
        return false;
    vc->count = (size_t)count;
    vc->prefix_count = tail_count;
    for (size_t i = 0; i < tail_count; i++)
        if (!parse_u64(tail[i], &vc->prefix[i]))
            return false;
    return vc->prefix_count <= vc->count;
}

static int load_fixture(void **state)
{
    (void)state;
    const char *root = getenv("TSRNN_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", root ? root : ".", FIXTURE_PATH);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s (set TSRNN_SOURCE_ROOT to the source tree)\n", path);
        return -1;
    }
    char text[MAX_LINE_NBYTES];
    int line_number = 0;
    int rc = 0;
    case_count = 0;
    while (fgets(text, sizeof(text), f)) {
        line_number++;
        if (text[0] == '#' || text[0] == '\n')
            continue;
        if (case_count == MAX_LINES || !parse_line(text, &cases[case_count])) {
            fprintf(stderr, "%s:%d: cannot parse this line\n", path, line_number);
            rc = -1;
            break;
        }
        cases[case_count++].line_number = line_number;
    }
    fclose(f);
    return rc;
}

/* --- checking one case ------------------------------------------------------------------ */

static uint64_t fnv1a64(const uint64_t *values, size_t count)
{
    uint64_t h = FNV_OFFSET_BASIS;
    for (size_t i = 0; i < count; i++) {
        uint64_t v = values[i];
        for (int b = 0; b < 8; b++) {
            h ^= v & 0xFF;
            h *= FNV_PRIME;
            v >>= 8;
        }
    }
    return h;
}

static uint64_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static uint64_t param_u64(const struct vector_case *vc, size_t i)
{
    uint64_t v = 0;
    if (i >= vc->param_count || !parse_u64(vc->params[i], &v))
        fail_msg("fixture line %d: param %zu is not an unsigned integer", vc->line_number, i);
    return v;
}

static double param_double(const struct vector_case *vc, size_t i)
{
    char *end = NULL;
    double v = i < vc->param_count ? strtod(vc->params[i], &end) : 0.0;
    if (i >= vc->param_count || *end != '\0')
        fail_msg("fixture line %d: param %zu is not a number", vc->line_number, i);
    return v;
}

static enum tsrnn_torch_uniform_rounding param_rounding(const struct vector_case *vc, size_t i)
{
    if (i < vc->param_count && strcmp(vc->params[i], "fused") == 0)
        return TSRNN_TORCH_UNIFORM_FUSED;
    if (i < vc->param_count && strcmp(vc->params[i], "unfused") == 0)
        return TSRNN_TORCH_UNIFORM_UNFUSED;
    fail_msg("fixture line %d: param %zu is not fused/unfused", vc->line_number, i);
    return TSRNN_TORCH_UNIFORM_FUSED;
}

static void expect_values(const struct vector_case *vc, const uint64_t *values)
{
    for (size_t i = 0; i < vc->prefix_count; i++)
        if (values[i] != vc->prefix[i])
            fail_msg("fixture line %d (%s): value %zu is %llu (0x%llx), expected %llu (0x%llx)",
                     vc->line_number, vc->name, i, (unsigned long long)values[i],
                     (unsigned long long)values[i], (unsigned long long)vc->prefix[i],
                     (unsigned long long)vc->prefix[i]);
    uint64_t h = fnv1a64(values, vc->count);
    if (h != vc->hash)
        fail_msg("fixture line %d (%s): hash of %zu values is %016llx, expected %016llx",
                 vc->line_number, vc->name, vc->count, (unsigned long long)h,
                 (unsigned long long)vc->hash);
}

typedef void (*case_fn)(const struct vector_case *vc, uint64_t *values);

/* Runs `fn` on every fixture line of case `name`; there must be at least `min_lines`. */
static void run_cases(const char *name, case_fn fn, size_t min_lines)
{
    size_t seen = 0;
    for (size_t i = 0; i < case_count; i++) {
        const struct vector_case *vc = &cases[i];
        if (strcmp(vc->name, name) != 0)
            continue;
        uint64_t *values = calloc(vc->count + 1, sizeof(*values));
        assert_non_null(values);
        fn(vc, values);
        expect_values(vc, values);
        free(values);
        seen++;
    }
    if (seen < min_lines)
        fail_msg("%s: %zu fixture lines, expected at least %zu", name, seen, min_lines);
}

/* --- cases --------------------------------------------------------------------------------- */

static void case_mt19937(const struct vector_case *vc, uint64_t *values)
{
    struct tsrnn_mt19937 mt;
    tsrnn_mt19937_seed(&mt, (uint32_t)param_u64(vc, 0));
    for (size_t i = 0; i < vc->count; i++)
        values[i] = tsrnn_mt19937_next(&mt);
}

static void case_numpy_randint31(const struct vector_case *vc, uint64_t *values)
{
    struct tsrnn_mt19937 rs;
    tsrnn_mt19937_seed(&rs, (uint32_t)param_u64(vc, 0));
    for (size_t i = 0; i < vc->count; i++)
        values[i] = (uint64_t)tsrnn_numpy_randint_31(&rs);
}

static void case_numpy_randint31_crafted(const struct vector_case *vc, uint64_t *values)
{
    struct tsrnn_mt19937 rs;
    tsrnn_mt19937_seed(&rs, (uint32_t)param_u64(vc, 0));
    tsrnn_mt19937_discard(&rs, param_u64(vc, 1));
    for (size_t j = 2; j < vc->param_count; j++) {
        assert_true(rs.index + j - 2 < TSRNN_MT19937_STATE_COUNT);
        rs.state[rs.index + j - 2] = (uint32_t)param_u64(vc, j);
    }
    for (size_t i = 0; i < vc->count; i++)
        values[i] = (uint64_t)tsrnn_numpy_randint_31(&rs);
}

static void case_darts_fit_seed(const struct vector_case *vc, uint64_t *values)
{
    assert_int_equal(vc->count, 1);
    values[0] = tsrnn_darts_fit_seed((uint32_t)param_u64(vc, 0));
}

static void case_torch_random_int64(const struct vector_case *vc, uint64_t *values)
{
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, param_u64(vc, 0));
    for (size_t i = 0; i < vc->count; i++)
        values[i] = (uint64_t)tsrnn_torch_random_int64(&g);
}

/* A permutation of n from a generator seeded with the case's seed, then one int64 random_()
 * of that generator: randperm(n) on it, or (as_global_sampler) RandomSampler(range(n))
 * drawing its seed from it as from torch's global generator. */
static void permutation_case(const struct vector_case *vc, uint64_t *values, bool as_global_sampler)
{
    size_t n = (size_t)param_u64(vc, 1);
    assert_int_equal(vc->count, n + 1);
    size_t *perm = calloc(n + 1, sizeof(*perm));
    assert_non_null(perm);
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, param_u64(vc, 0));
    if (as_global_sampler)
        tsrnn_torch_random_sampler(perm, n, &g);
    else
        tsrnn_torch_randperm(perm, n, &g);
    for (size_t i = 0; i < n; i++)
        values[i] = perm[i];
    values[n] = (uint64_t)tsrnn_torch_random_int64(&g);
    free(perm);
}

static void case_torch_randperm(const struct vector_case *vc, uint64_t *values)
{
    permutation_case(vc, values, false);
}

static void case_torch_random_sampler(const struct vector_case *vc, uint64_t *values)
{
    permutation_case(vc, values, true);
}

static void case_torch_uniform(const struct vector_case *vc, uint64_t *values)
{
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, param_u64(vc, 0));
    double from = param_double(vc, 1);
    double to = param_double(vc, 2);
    enum tsrnn_torch_uniform_rounding rounding = param_rounding(vc, 3);
    float *out = calloc(vc->count + 1, sizeof(*out));
    assert_non_null(out);
    tsrnn_torch_uniform_fill(out, vc->count, &g, from, to, rounding);
    for (size_t i = 0; i < vc->count; i++) {
        values[i] = float_bits(out[i]);
        assert_true(out[i] >= (float)from && out[i] <= (float)to);
    }
    free(out);
}

/* darts_init <kind> <I> <H> <L> <O> <random_state> <rounding> */
static void case_darts_init(const struct vector_case *vc, uint64_t *values)
{
    const char *kind = vc->params[0];
    size_t gates = strcmp(kind, "LSTM") == 0 ? 4 : strcmp(kind, "GRU") == 0 ? 3 : 1;
    size_t inputs = (size_t)param_u64(vc, 1);
    size_t hidden = (size_t)param_u64(vc, 2);
    size_t layers = (size_t)param_u64(vc, 3);
    size_t outputs = (size_t)param_u64(vc, 4);
    size_t rnn_count = 0;
    for (size_t l = 0; l < layers; l++)
        rnn_count += gates * hidden * ((l == 0 ? inputs : hidden) + hidden + 2);
    assert_int_equal(vc->count, rnn_count + outputs * hidden + outputs);
    float *params = calloc(vc->count + 1, sizeof(*params));
    assert_non_null(params);
    tsrnn_darts_init_params(params, rnn_count, hidden, outputs, (uint32_t)param_u64(vc, 5),
                            param_rounding(vc, 6));
    for (size_t i = 0; i < vc->count; i++)
        values[i] = float_bits(params[i]);
    free(params);
}

/* darts_epoch <random_state> <n> <params> <epoch> <validation>: scripts/gen-rng-vectors.py
 * creates the sanity check's val iterator outside isolate_rng (the lightning1 order). */
static void case_darts_epoch(const struct vector_case *vc, uint64_t *values)
{
    size_t n = (size_t)param_u64(vc, 1);
    assert_int_equal(vc->count, n);
    size_t *perm = calloc(n + 1, sizeof(*perm));
    assert_non_null(perm);
    tsrnn_darts_epoch_permutation(perm, n, (uint32_t)param_u64(vc, 0), (size_t)param_u64(vc, 2),
                                  param_u64(vc, 3), param_u64(vc, 4) != 0, param_u64(vc, 4) != 0);
    for (size_t i = 0; i < n; i++)
        values[i] = perm[i];
    free(perm);
}

/* --- tests ---------------------------------------------------------------------------------- */

static void test_mt19937(void **state)
{
    (void)state;
    run_cases("mt19937", case_mt19937, 5);
    /* The C++ standard's check: the 10000th output of std::mt19937 (seed 5489). */
    struct tsrnn_mt19937 mt;
    tsrnn_mt19937_seed(&mt, 5489);
    tsrnn_mt19937_discard(&mt, 9999);
    assert_int_equal(tsrnn_mt19937_next(&mt), UINT32_C(4123659995));
    /* discard() is next() without the outputs, across block boundaries. */
    struct tsrnn_mt19937 a, b;
    tsrnn_mt19937_seed(&a, 7);
    tsrnn_mt19937_seed(&b, 7);
    for (int i = 0; i < 1500; i++)
        tsrnn_mt19937_next(&a);
    tsrnn_mt19937_discard(&b, 700);
    tsrnn_mt19937_discard(&b, 0);
    tsrnn_mt19937_discard(&b, 800);
    assert_int_equal(a.index, b.index);
    assert_memory_equal(a.state, b.state, sizeof(a.state));
}

static void test_numpy_randint(void **state)
{
    (void)state;
    run_cases("numpy_randint31", case_numpy_randint31, 4);
    run_cases("numpy_randint31_crafted", case_numpy_randint31_crafted, 1);
}

static void test_torch_generator(void **state)
{
    (void)state;
    run_cases("torch_random_int64", case_torch_random_int64, 5);
    /* random64 puts the first output high; int64 random_ clears only the top bit. */
    struct tsrnn_mt19937 g, raw;
    tsrnn_torch_manual_seed(&g, 42);
    tsrnn_mt19937_seed(&raw, 42);
    uint64_t hi = tsrnn_mt19937_next(&raw);
    uint64_t lo = tsrnn_mt19937_next(&raw);
    assert_int_equal(tsrnn_torch_random64(&g), (hi << 32) | lo);
    assert_int_equal(tsrnn_torch_random(&g), tsrnn_mt19937_next(&raw));
}

static void test_torch_uniform(void **state)
{
    (void)state;
    run_cases("torch_uniform", case_torch_uniform, 32);
    /* Linear's kaiming bound is not 1/sqrt(fan_in) as a double, but is as a float here. */
    double kaiming = tsrnn_torch_kaiming_uniform_bound(20);
    assert_true(kaiming != 1.0 / sqrt(20.0));
    assert_true((float)kaiming == (float)(1.0 / sqrt(20.0)));
}

static void test_torch_randperm(void **state)
{
    (void)state;
    run_cases("torch_randperm", case_torch_randperm, 14);
    run_cases("torch_random_sampler", case_torch_random_sampler, 6);
}

static void test_darts_seeds_and_init(void **state)
{
    (void)state;
    run_cases("darts_fit_seed", case_darts_fit_seed, 7);
    assert_int_equal(tsrnn_darts_fit_seed(42), UINT32_C(1935803228));
    run_cases("darts_init", case_darts_init, 6);
}

static void test_darts_epoch_permutation(void **state)
{
    (void)state;
    run_cases("darts_epoch", case_darts_epoch, 4);
    /* pytorch-baseline.md: the seed configuration's first batch is samples 12, 88, 37, ... */
    size_t perm[101];
    tsrnn_darts_epoch_permutation(perm, 101, 42, 481, 0, true, true);
    assert_int_equal(perm[0], 12);
    assert_int_equal(perm[1], 88);
    assert_int_equal(perm[2], 37);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mt19937),
        cmocka_unit_test(test_numpy_randint),
        cmocka_unit_test(test_torch_generator),
        cmocka_unit_test(test_torch_uniform),
        cmocka_unit_test(test_torch_randperm),
        cmocka_unit_test(test_darts_seeds_and_init),
        cmocka_unit_test(test_darts_epoch_permutation),
    };
    return cmocka_run_group_tests(tests, load_fixture, NULL);
}
