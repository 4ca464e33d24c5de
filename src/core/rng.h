/* tsrnn's own random numbers: a small, portable generator for the tests' random inputs.
 * What a run draws (the initial weights, the shuffles, the dropout masks, the forecasts'
 * samples) follows Darts' PyTorch generator instead (include/tsrnn/torch_rng.h).
 *
 * The generator is SplitMix64 (Steele, Lea, Flood 2014: state += 0x9E3779B97F4A7C15, then
 * the variant-13 finaliser). It uses only 64-bit unsigned arithmetic, so the same seed gives
 * the same numbers on every platform, compiler and world size. A run derives independent
 * streams from one `random_state` (the Darts option) and a stream number:
 *
 *     state0 = mix(mix(random_state) + stream)
 */
#ifndef TSRNN_RNG_H
#define TSRNN_RNG_H

#include <stddef.h>
#include <stdint.h>

struct tsrnn_rng {
    uint64_t state;
};

/* Seeds `rng` for stream `stream` of `seed`. */
void tsrnn_rng_init(struct tsrnn_rng *rng, uint64_t seed, uint64_t stream);

/* The next 64 uniformly distributed bits. */
uint64_t tsrnn_rng_next(struct tsrnn_rng *rng);

/* A uniform integer in [0, bound), without modulo bias (rejection of the short last
 * interval). `bound` must be >= 1. */
uint64_t tsrnn_rng_below(struct tsrnn_rng *rng, uint64_t bound);

/* A uniform float in [0, 1) with 24 random bits (every value a multiple of 2^-24). */
float tsrnn_rng_uniform(struct tsrnn_rng *rng);

#endif
