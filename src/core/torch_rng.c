/* MT19937 as torch's CPU generator and numpy's RandomState use it, and Darts' seeding on top
 * (include/tsrnn/torch_rng.h). */
#include "tsrnn/torch_rng.h"

#include <math.h>

/* MT19937 constants (Matsumoto & Nishimura 1998). */
#define MT_N          TSRNN_MT19937_STATE_COUNT
#define MT_M          397
#define MT_MATRIX_A   UINT32_C(0x9908B0DF)
#define MT_UPPER_MASK UINT32_C(0x80000000)
#define MT_LOWER_MASK UINT32_C(0x7FFFFFFF)

/* 24 = std::numeric_limits<float>::digits: uniform_ keeps that many random bits. */
#define FLOAT_RANDOM_MASK  ((UINT32_C(1) << 24) - 1)
#define FLOAT_RANDOM_SCALE 0x1.0p-24f

/* Darts' MAX_TORCH_SEED_VALUE: seeds are randint(0, 2**31 - 1). */
#define DARTS_SEED_MASK  UINT32_C(0x7FFFFFFF)
#define DARTS_SEED_BOUND UINT32_C(0x7FFFFFFE) /* largest value randint can return */
#define DARTS_FIT_DRAW   3                    /* __init__, fit, fit_from_dataset */
#define DRAWS_PER_INT64  2                    /* 32-bit outputs per random64() */
#define ITERATOR_DRAWS   DRAWS_PER_INT64      /* _BaseDataLoaderIter base_seed */
#define SAMPLER_DRAWS    DRAWS_PER_INT64      /* RandomSampler seed */

void tsrnn_mt19937_seed(struct tsrnn_mt19937 *mt, uint32_t seed)
{
    mt->state[0] = seed;
    for (uint32_t i = 1; i < MT_N; i++) {
        uint32_t prev = mt->state[i - 1];
        mt->state[i] = UINT32_C(1812433253) * (prev ^ (prev >> 30)) + i;
    }
    mt->index = MT_N;
}

/* Word k's next value from words k, k + 1 (its successor) and k + M (`far`). */
static uint32_t mt_word(uint32_t word, uint32_t next, uint32_t far)
{
    uint32_t y = (word & MT_UPPER_MASK) | (next & MT_LOWER_MASK);
    return far ^ (y >> 1) ^ ((y & 1) ? MT_MATRIX_A : 0);
}

/* Regenerates all N words in place; words k + M >= N already hold new values, as in the
 * reference algorithm. Three loops without the index wrap-around, the first two
 * vectorizable: with a remainder per word, the seed config's sampler (a generator seeded and
 * twisted every epoch) ran 9.3 M instructions over 300 epochs, 4.4 M now. */
static void mt_twist(struct tsrnn_mt19937 *mt)
{
    uint32_t *s = mt->state;
    size_t k = 0;
    for (; k < MT_N - MT_M; k++)
        s[k] = mt_word(s[k], s[k + 1], s[k + MT_M]);
    for (; k < MT_N - 1; k++)
        s[k] = mt_word(s[k], s[k + 1], s[k + MT_M - MT_N]);
    s[MT_N - 1] = mt_word(s[MT_N - 1], s[0], s[MT_M - 1]);
    mt->index = 0;
}

uint32_t tsrnn_mt19937_next(struct tsrnn_mt19937 *mt)
{
    if (mt->index >= MT_N)
        mt_twist(mt);
    uint32_t y = mt->state[mt->index++];
    y ^= y >> 11;
    y ^= (y << 7) & UINT32_C(0x9D2C5680);
    y ^= (y << 15) & UINT32_C(0xEFC60000);
    y ^= y >> 18;
    return y;
}

void tsrnn_mt19937_discard(struct tsrnn_mt19937 *mt, uint64_t count)
{
    /* Tempering does not change the state, so whole blocks cost one twist each. */
    while (count > 0) {
        if (mt->index >= MT_N)
            mt_twist(mt);
        uint64_t left = MT_N - mt->index;
        uint64_t take = count < left ? count : left;
        mt->index += (size_t)take;
        count -= take;
    }
}

void tsrnn_torch_manual_seed(struct tsrnn_mt19937 *g, uint64_t seed)
{
    tsrnn_mt19937_seed(g, (uint32_t)(seed & UINT32_MAX));
}

uint32_t tsrnn_torch_random(struct tsrnn_mt19937 *g)
{
    return tsrnn_mt19937_next(g);
}

uint64_t tsrnn_torch_random64(struct tsrnn_mt19937 *g)
{
    uint64_t hi = tsrnn_mt19937_next(g);
    uint64_t lo = tsrnn_mt19937_next(g);
    return (hi << 32) | lo;
}

int64_t tsrnn_torch_random_int64(struct tsrnn_mt19937 *g)
{
    /* transformation::uniform_int<int64_t>: val % (INT64_MAX + 1). */
    return (int64_t)(tsrnn_torch_random64(g) & (uint64_t)INT64_MAX);
}

double tsrnn_torch_uniform_double(struct tsrnn_mt19937 *g)
{
    /* 53 = std::numeric_limits<double>::digits */
    return (double)(tsrnn_torch_random64(g) & ((UINT64_C(1) << 53) - 1)) * 0x1.0p-53;
}

float tsrnn_torch_uniform(struct tsrnn_mt19937 *g, double from, double to,
                          enum tsrnn_torch_uniform_rounding rounding)
{
    /* at::uniform_real_distribution<float> holds from and to as float and computes in float
     * (DistAccumType<float> is float). */
    float lo = (float)from;
    float width = (float)to - lo;
    float x = (float)(tsrnn_torch_random(g) & FLOAT_RANDOM_MASK) * FLOAT_RANDOM_SCALE;
    if (rounding == TSRNN_TORCH_UNIFORM_FUSED)
        return fmaf(x, width, lo);
    /* Two separate float roundings. The volatile store keeps compilers that contract
     * floating-point expressions (-ffp-contract=fast with -mfma or -march=native) from
     * turning them back into one fused multiply-add. */
    volatile float product = x * width;
    return product + lo;
}

void tsrnn_torch_uniform_fill(float *out, size_t count, struct tsrnn_mt19937 *g, double from,
                              double to, enum tsrnn_torch_uniform_rounding rounding)
{
    for (size_t i = 0; i < count; i++)
        out[i] = tsrnn_torch_uniform(g, from, to, rounding);
}

double tsrnn_torch_kaiming_uniform_bound(size_t fan_in)
{
    /* torch.nn.init: calculate_gain("leaky_relu", sqrt(5)), std = gain / sqrt(fan),
     * bound = sqrt(3) * std, each step rounded to double as Python does. */
    double slope = sqrt(5.0);
    double gain = sqrt(2.0 / (1.0 + slope * slope));
    double std_dev = gain / sqrt((double)fan_in);
    return sqrt(3.0) * std_dev;
}

void tsrnn_torch_randperm(size_t *perm, size_t n, struct tsrnn_mt19937 *g)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = 0; i + 1 < n; i++) {
        size_t z = (size_t)((uint64_t)tsrnn_torch_random(g) % (uint64_t)(n - i));
        size_t tmp = perm[i];
        perm[i] = perm[i + z];
        perm[i + z] = tmp;
    }
}

void tsrnn_torch_random_sampler(size_t *perm, size_t n, struct tsrnn_mt19937 *global)
{
    struct tsrnn_mt19937 own;
    tsrnn_torch_manual_seed(&own, (uint64_t)tsrnn_torch_random_int64(global));
    tsrnn_torch_randperm(perm, n, &own);
}

int64_t tsrnn_numpy_randint_31(struct tsrnn_mt19937 *rs)
{
    /* random_bounded_uint64_fill with rng = 2^31 - 2 <= 0xFFFFFFFF and use_masked: the
     * smallest all-ones mask covering rng, reject what lies above it. */
    for (;;) {
        uint32_t v = tsrnn_mt19937_next(rs) & DARTS_SEED_MASK;
        if (v <= DARTS_SEED_BOUND)
            return (int64_t)v;
    }
}

uint32_t tsrnn_darts_seed(uint32_t random_state, unsigned draw)
{
    struct tsrnn_mt19937 rs;
    tsrnn_mt19937_seed(&rs, random_state);
    int64_t value = 0;
    for (unsigned i = 0; i < draw; i++)
        value = tsrnn_numpy_randint_31(&rs);
    return (uint32_t)value;
}

uint32_t tsrnn_darts_fit_seed(uint32_t random_state)
{
    return tsrnn_darts_seed(random_state, DARTS_FIT_DRAW);
}

void tsrnn_darts_init_params(float *params, size_t rnn_count, size_t hidden_count,
                             size_t output_count, uint32_t random_state,
                             enum tsrnn_torch_uniform_rounding rounding)
{
    struct tsrnn_mt19937 g;
    tsrnn_torch_manual_seed(&g, tsrnn_darts_fit_seed(random_state));
    /* RNNBase.reset_parameters and Linear's bias both use 1.0 / math.sqrt(n). */
    double stdv = 1.0 / sqrt((double)hidden_count);
    double kaiming = tsrnn_torch_kaiming_uniform_bound(hidden_count);
    size_t weight_count = output_count * hidden_count;
    tsrnn_torch_uniform_fill(params, rnn_count, &g, -stdv, stdv, rounding);
    tsrnn_torch_uniform_fill(params + rnn_count, weight_count, &g, -kaiming, kaiming, rounding);
    tsrnn_torch_uniform_fill(params + rnn_count + weight_count, output_count, &g, -stdv, stdv,
                             rounding);
}

uint64_t tsrnn_darts_fit_epoch_start(const struct tsrnn_darts_fit *fit, uint64_t epoch)
{
    uint64_t loaders = ITERATOR_DRAWS + (fit->shuffle ? SAMPLER_DRAWS : 0) +
                       (fit->validation ? ITERATOR_DRAWS : 0); /* train, sampler, val */
    uint64_t before = fit->param_count;
    if (fit->validation && fit->sanity_check_draws) /* Lightning 1.x: the sanity check's */
        before += ITERATOR_DRAWS;
    before += epoch * (loaders + fit->epoch_draws);
    return before + ITERATOR_DRAWS + (fit->shuffle ? SAMPLER_DRAWS : 0);
}

uint64_t tsrnn_darts_fit_between_epochs(const struct tsrnn_darts_fit *fit)
{
    /* this epoch's val iterator, the next epoch's train iterator and sampler seed */
    return (fit->validation ? ITERATOR_DRAWS : 0) + ITERATOR_DRAWS +
           (fit->shuffle ? SAMPLER_DRAWS : 0);
}

void tsrnn_darts_loader_generator(struct tsrnn_mt19937 *g, uint32_t random_state,
                                  size_t param_count, uint64_t epoch, bool validation,
                                  bool sanity_check_draws, uint64_t epoch_draws)
{
    struct tsrnn_darts_fit fit = {
        .random_state = random_state,
        .param_count = param_count,
        .validation = validation,
        .sanity_check_draws = sanity_check_draws,
        .shuffle = true,
        .epoch_draws = epoch_draws,
    };
    tsrnn_torch_manual_seed(g, tsrnn_darts_fit_seed(random_state));
    tsrnn_mt19937_discard(g, tsrnn_darts_fit_epoch_start(&fit, epoch) - SAMPLER_DRAWS);
}

void tsrnn_darts_loader_next_epoch(struct tsrnn_mt19937 *g, bool validation, uint64_t epoch_draws)
{
    /* this epoch's steps, its val iterator (when validating), the next epoch's train
     * iterator */
    tsrnn_mt19937_discard(g, epoch_draws + (validation ? ITERATOR_DRAWS : 0) + ITERATOR_DRAWS);
}

void tsrnn_darts_epoch_permutation(size_t *perm, size_t n, uint32_t random_state,
                                   size_t param_count, uint64_t epoch, bool validation,
                                   bool sanity_check_draws)
{
    struct tsrnn_mt19937 g;
    tsrnn_darts_loader_generator(&g, random_state, param_count, epoch, validation,
                                 sanity_check_draws, 0);
    tsrnn_torch_random_sampler(perm, n, &g);
}
