/* SplitMix64 streams and bounded integers (rng.h). */
#include "rng.h"

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void tsrnn_rng_init(struct tsrnn_rng *rng, uint64_t seed, uint64_t stream)
{
    rng->state = mix64(mix64(seed) + stream);
}

uint64_t tsrnn_rng_next(struct tsrnn_rng *rng)
{
    rng->state += UINT64_C(0x9E3779B97F4A7C15);
    return mix64(rng->state);
}

uint64_t tsrnn_rng_below(struct tsrnn_rng *rng, uint64_t bound)
{
    /* 2^64 mod bound values at the bottom would be drawn once more often than the rest. */
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t r = tsrnn_rng_next(rng);
        if (r >= threshold)
            return r % bound;
    }
}

float tsrnn_rng_uniform(struct tsrnn_rng *rng)
{
    return (float)(tsrnn_rng_next(rng) >> 40) * 0x1.0p-24f;
}
