/* Sampler and RNG: permutations, determinism, DistributedSampler sharding and batch cuts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/core/rng.h"
#include "tsrnn/data.h"
#include "tsrnn/torch_rng.h"

/* The Darts guide's run: random_state 42, 481 parameters, validated every epoch. */
static const struct tsrnn_shuffle darts42 = { 42, 481, true, true, 0 }; /* guide-era order */
static const struct tsrnn_shuffle darts43 = { 43, 481, true, true, 0 };

static void copy_epoch(const struct tsrnn_sampler *s, size_t *out)
{
    memcpy(out, s->local, s->local_count * sizeof(*out));
}

static void test_rng_is_pinned(void **state)
{
    (void)state;
    /* SplitMix64 with the stream derivation of rng.h: these values must never change, or
     * every saved run and every multi-process shuffle changes with them. */
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 0, 0);
    uint64_t a = tsrnn_rng_next(&rng);
    tsrnn_rng_init(&rng, 0, 0);
    assert_int_equal(tsrnn_rng_next(&rng), a);
    tsrnn_rng_init(&rng, 42, UINT64_C(2) << 32);
    uint64_t b = tsrnn_rng_next(&rng);
    assert_true(a != b);
    /* Raw SplitMix64 from state 0: the reference first output is 0xE220A8397B1DCDAF. */
    rng.state = 0;
    assert_int_equal(tsrnn_rng_next(&rng), UINT64_C(0xE220A8397B1DCDAF));
    assert_int_equal(tsrnn_rng_next(&rng), UINT64_C(0x6E789E6AA1B965F4));
}

static void test_rng_below_and_uniform(void **state)
{
    (void)state;
    struct tsrnn_rng rng;
    tsrnn_rng_init(&rng, 7, 0);
    size_t counts[6] = { 0 };
    for (int i = 0; i < 60000; i++) {
        uint64_t v = tsrnn_rng_below(&rng, 6);
        assert_true(v < 6);
        counts[v]++;
    }
    for (int i = 0; i < 6; i++) /* 10000 expected each; 5 sigma is about 456 */
        assert_in_range(counts[i], 9500, 10500);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        float u = tsrnn_rng_uniform(&rng);
        assert_true(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    assert_true(sum / 100000 > 0.49 && sum / 100000 < 0.51);
}

static void test_epoch_is_a_permutation(void **state)
{
    (void)state;
    struct tsrnn_sampler s;
    assert_int_equal(tsrnn_sampler_init(&s, 101, 16, &darts42, 0, 1), TSRNN_OK);
    for (uint64_t epoch = 0; epoch < 5; epoch++) {
        tsrnn_sampler_set_epoch(&s, epoch);
        assert_int_equal(s.local_count, 101);
        int seen[101] = { 0 };
        for (size_t i = 0; i < 101; i++) {
            assert_true(s.local[i] < 101);
            seen[s.local[i]]++;
        }
        for (size_t i = 0; i < 101; i++)
            assert_int_equal(seen[i], 1);
    }
    tsrnn_sampler_finish(&s);
}

static void test_deterministic_and_epoch_dependent(void **state)
{
    (void)state;
    struct tsrnn_sampler a, b, c;
    size_t a0[101], a1[101], b0[101], c0[101];
    assert_int_equal(tsrnn_sampler_init(&a, 101, 16, &darts42, 0, 1), TSRNN_OK);
    assert_int_equal(tsrnn_sampler_init(&b, 101, 16, &darts42, 0, 1), TSRNN_OK);
    assert_int_equal(tsrnn_sampler_init(&c, 101, 16, &darts43, 0, 1), TSRNN_OK);
    copy_epoch(&a, a0);
    tsrnn_sampler_set_epoch(&a, 1);
    copy_epoch(&a, a1);
    /* b jumps straight to epoch 1 after epoch 5: the order depends on (seed, epoch) only. */
    tsrnn_sampler_set_epoch(&b, 5);
    tsrnn_sampler_set_epoch(&b, 0);
    copy_epoch(&b, b0);
    copy_epoch(&c, c0);
    assert_memory_equal(a0, b0, sizeof(a0));
    assert_memory_not_equal(a0, a1, sizeof(a0));
    assert_memory_not_equal(a0, c0, sizeof(a0));
    tsrnn_sampler_set_epoch(&b, 1);
    assert_memory_equal(a1, b.local, sizeof(a1));
    tsrnn_sampler_finish(&a);
    tsrnn_sampler_finish(&b);
    tsrnn_sampler_finish(&c);
}

/* Epochs in a row continue Darts' generator; any epoch alone replays it: the same orders. */
static void test_consecutive_epochs_match_replay(void **state)
{
    (void)state;
    struct tsrnn_sampler s;
    size_t want[101];
    assert_int_equal(tsrnn_sampler_init(&s, 101, 16, &darts42, 0, 1), TSRNN_OK);
    for (uint64_t epoch = 0; epoch < 50; epoch++) {
        tsrnn_sampler_set_epoch(&s, epoch);
        tsrnn_darts_epoch_permutation(want, 101, 42, 481, epoch, true, true);
        assert_memory_equal(s.order, want, sizeof(want));
    }
    tsrnn_sampler_finish(&s);
}

static void test_pinned_order(void **state)
{
    (void)state;
    /* Darts' first shuffled batch of the guide's run (reference/pytorch-baseline.md §3:
     * "sample idx 12, 88, 37, ..."), whose loss PyTorch computes as 0.10871751606464386. */
    struct tsrnn_sampler s;
    assert_int_equal(tsrnn_sampler_init(&s, 101, 16, &darts42, 0, 1), TSRNN_OK);
    assert_int_equal(s.local[0], 12);
    assert_int_equal(s.local[1], 88);
    assert_int_equal(s.local[2], 37);
    tsrnn_sampler_finish(&s);
}

/* Lightning 2's order (the default) is Lightning 1's without the sanity check's draw: two
 * outputs fewer before every epoch's sampler seed, as if the model had two parameters
 * fewer; without validation the two agree. Epoch 0's first batch of Darts 0.48.1's
 * random_state 42 run (its loss, 0.0775388628, is in tests/fixtures/darts-fixtures.md). */
static void test_lightning2_order(void **state)
{
    (void)state;
    size_t now[101], old[101];
    for (uint64_t epoch = 0; epoch < 20; epoch++) {
        tsrnn_darts_epoch_permutation(now, 101, 42, 481, epoch, true, false);
        tsrnn_darts_epoch_permutation(old, 101, 42, 479, epoch, true, true);
        assert_memory_equal(now, old, sizeof(now));
        tsrnn_darts_epoch_permutation(now, 101, 42, 481, epoch, false, false);
        tsrnn_darts_epoch_permutation(old, 101, 42, 481, epoch, false, true);
        assert_memory_equal(now, old, sizeof(now));
    }
    struct tsrnn_sampler s;
    struct tsrnn_shuffle today = { 42, 481, true, false, 0 };
    assert_int_equal(tsrnn_sampler_init(&s, 101, 16, &today, 0, 1), TSRNN_OK);
    tsrnn_darts_epoch_permutation(now, 101, 42, 481, 0, true, false);
    assert_memory_equal(s.order, now, sizeof(now));
    printf("# lightning2 order, random_state 42, epoch 0: %zu, %zu, %zu, ...\n", s.local[0],
           s.local[1], s.local[2]);
    assert_int_not_equal(s.local[0], 12);
    tsrnn_sampler_finish(&s);
}

static void test_no_shuffle_is_index_order(void **state)
{
    (void)state;
    struct tsrnn_sampler s;
    assert_int_equal(tsrnn_sampler_init(&s, 101, 16, NULL, 0, 1), TSRNN_OK);
    tsrnn_sampler_set_epoch(&s, 3);
    for (size_t i = 0; i < 101; i++)
        assert_int_equal(s.local[i], i);
    tsrnn_sampler_finish(&s);
}

static void test_batches(void **state)
{
    (void)state;
    struct tsrnn_sampler s;
    assert_int_equal(tsrnn_sampler_init(&s, 101, 16, &darts42, 0, 1), TSRNN_OK);
    assert_int_equal(tsrnn_sampler_batch_count(&s), 7);
    size_t total = 0;
    for (size_t b = 0; b < 7; b++) {
        const size_t *idx;
        size_t n = tsrnn_sampler_batch(&s, b, &idx);
        assert_int_equal(n, b < 6 ? 16 : 5);
        assert_ptr_equal(idx, s.local + b * 16);
        total += n;
    }
    assert_int_equal(total, 101);
    const size_t *idx;
    assert_int_equal(tsrnn_sampler_batch(&s, 7, &idx), 0);
    tsrnn_sampler_finish(&s);
}

/* DistributedSampler: pad by wrap-around to a multiple of W, rank r takes r, r+W, ... */
static void check_shards(size_t n, size_t world, bool shuffle)
{
    struct tsrnn_sampler *ranks = calloc(world, sizeof(*ranks));
    size_t per_rank = (n + world - 1) / world;
    size_t padded = per_rank * world;
    size_t *coverage = calloc(n, sizeof(*coverage));
    for (size_t r = 0; r < world; r++) {
        assert_int_equal(tsrnn_sampler_init(&ranks[r], n, 4, shuffle ? &darts42 : NULL, r, world),
                         TSRNN_OK);
        tsrnn_sampler_set_epoch(&ranks[r], 2);
        assert_int_equal(ranks[r].local_count, per_rank);
        for (size_t k = 0; k < per_rank; k++) {
            /* position r + k*W of the padded order */
            size_t pos = r + k * world;
            assert_int_equal(ranks[r].local[k], ranks[0].order[pos % n]);
            coverage[ranks[r].local[k]]++;
        }
        /* every rank computes the same global permutation */
        assert_memory_equal(ranks[r].order, ranks[0].order, n * sizeof(size_t));
    }
    /* covering: every sample is used; disjoint: only the padding repeats, and it repeats
     * the first (padded - n) samples of the order exactly once more */
    size_t repeats = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(coverage[i] >= 1);
        repeats += coverage[i] - 1;
    }
    assert_int_equal(repeats, padded - n);
    for (size_t p = 0; p < padded - n; p++)
        assert_int_equal(coverage[ranks[0].order[p]], 2);
    for (size_t r = 0; r < world; r++)
        tsrnn_sampler_finish(&ranks[r]);
    free(ranks);
    free(coverage);
}

static void test_shards(void **state)
{
    (void)state;
    for (size_t world = 2; world <= 4; world++) {
        check_shards(101, world, true); /* 101 = not a multiple of 2, 3 or 4: padding */
        check_shards(12, world, true);  /* a multiple of 2, 3 and 4: disjoint */
        check_shards(101, world, false);
        check_shards(3, world, true); /* fewer samples than... or equal to ranks */
    }
    check_shards(2, 4, true); /* padding longer than half the data */
}

static void test_bad_arguments(void **state)
{
    (void)state;
    struct tsrnn_sampler s;
    assert_int_equal(tsrnn_sampler_init(&s, 10, 4, &darts42, 2, 2), TSRNN_ERR_USAGE);
    assert_int_equal(tsrnn_sampler_init(&s, 10, 0, &darts42, 0, 1), TSRNN_ERR_USAGE);
    assert_int_equal(tsrnn_sampler_init(&s, 10, 4, &darts42, 0, 0), TSRNN_ERR_USAGE);
    tsrnn_sampler_finish(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_is_pinned),
        cmocka_unit_test(test_rng_below_and_uniform),
        cmocka_unit_test(test_epoch_is_a_permutation),
        cmocka_unit_test(test_deterministic_and_epoch_dependent),
        cmocka_unit_test(test_pinned_order),
        cmocka_unit_test(test_lightning2_order),
        cmocka_unit_test(test_no_shuffle_is_index_order),
        cmocka_unit_test(test_consecutive_epochs_match_replay),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_shards),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
