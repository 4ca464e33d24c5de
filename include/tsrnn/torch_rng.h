/* PyTorch's and numpy's random numbers, bit for bit, so that `random_state` gives the initial
 * weights and the per-epoch shuffles of a real Darts run (torch 1.13 on CPU, one process).
 *
 * Everything rests on one generator, MT19937 (Matsumoto & Nishimura 1998, 32-bit, seeded with
 * init_genrand): torch's CPU generator (aten/src/ATen/core/MT19937RNGEngine.h) and numpy's
 * legacy RandomState are both exactly that, so one struct serves as either.
 *
 * How Darts uses them (darts/utils/torch.py random_method; scripts/gen-rng-vectors.py checks
 * each step against the real libraries and real torch.nn / DataLoader objects):
 *   1. rs = numpy RandomState(random_state); every decorated call seeds torch's global
 *      generator with rs.randint(0, 2**31 - 1). fit() is the third call (__init__, fit,
 *      fit_from_dataset), so weights and shuffles come from tsrnn_darts_fit_seed().
 *   2. The module is built in that generator: torch.nn.RNN|LSTM|GRU, every tensor
 *      U(-1/sqrt(H), 1/sqrt(H)) in state_dict order, then Linear V: weight
 *      kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(H), 1/sqrt(H)); one 32-bit draw per float
 *      (tsrnn_darts_init_params()).
 *   3. The DataLoaders draw from the same generator: each iterator creation takes one int64
 *      (its base_seed), and the train RandomSampler takes one more int64 per epoch to seed a
 *      private generator for randperm (tsrnn_darts_epoch_permutation()).
 *
 * Lightning's own use of the generator differs between versions (the sanity check; see
 * tsrnn_darts_epoch_permutation()); config `[training] rng_compat` picks one.
 *
 * Dropout between layers draws from the same generator inside each training step
 * (tsrnn_torch_uniform_double() per element: PyTorch's CPU bernoulli_), so a model with
 * dropout moves the later epochs' shuffles on by what its steps drew (`epoch_draws` below).
 *
 * Not covered: multi-process (DDP) runs, where Lightning's DistributedSampler shuffles with
 * seed 0 and the epoch (tsrnn documents its own order: docs/distributed.md).
 */
#ifndef TSRNN_TORCH_RNG_H
#define TSRNN_TORCH_RNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSRNN_MT19937_STATE_COUNT 624

/* One MT19937 generator. `index` is the position of the next output in `state`;
 * TSRNN_MT19937_STATE_COUNT means the state is regenerated (twisted) before the next output.
 * The same meaning as numpy's RandomState.get_state() `pos` and `key`. */
struct tsrnn_mt19937 {
    uint32_t state[TSRNN_MT19937_STATE_COUNT];
    size_t index;
};

/* init_genrand(seed): what torch's manual_seed() and numpy's RandomState(seed) do. */
void tsrnn_mt19937_seed(struct tsrnn_mt19937 *mt, uint32_t seed);

/* The next 32-bit output. */
uint32_t tsrnn_mt19937_next(struct tsrnn_mt19937 *mt);

/* Skips `count` outputs (same as calling tsrnn_mt19937_next() `count` times). */
void tsrnn_mt19937_discard(struct tsrnn_mt19937 *mt, uint64_t count);

/* --- torch's CPU generator (aten/src/ATen/CPUGeneratorImpl.cpp) ----------------------- */

/* torch.manual_seed(seed) / Generator.manual_seed(seed): only the low 32 bits of `seed`
 * count. (The cached normal samples torch also resets are not modelled: nothing here draws
 * normals.) */
void tsrnn_torch_manual_seed(struct tsrnn_mt19937 *g, uint64_t seed);

/* CPUGeneratorImpl::random(): one 32-bit output. */
uint32_t tsrnn_torch_random(struct tsrnn_mt19937 *g);

/* CPUGeneratorImpl::random64(): two outputs, the FIRST one in the high 32 bits. */
uint64_t tsrnn_torch_random64(struct tsrnn_mt19937 *g);

/* torch.empty((), dtype=torch.int64).random_(): random64() % 2^63, i.e. random64() with the
 * top bit cleared; in [0, 2^63). */
int64_t tsrnn_torch_random_int64(struct tsrnn_mt19937 *g);

/* at::uniform_real_distribution<double>(0, 1), what the CPU kernels of bernoulli_(p),
 * torch.poisson and the scalar normal draw from: (random64() & (2^53 - 1)) * 2^-53, in
 * [0, 1). One random64 (two outputs). */
double tsrnn_torch_uniform_double(struct tsrnn_mt19937 *g);

/* How torch's CPU float32 uniform_ kernel rounds x * (to - from) + from. The kernel is
 * compiled once per ATen CPU capability, and the AVX2 build lets the compiler fuse the
 * multiply-add. Both roundings were checked bit for bit against torch 1.13 (1.5 million
 * values over 300 random ranges each, plus the fixture's vectors).
 *   FUSED:   fmaf(x, to - from, from), one rounding. Capability "AVX2", torch's default on
 *            any x86-64 CPU with AVX2 (the reference machine and every fixture of tsrnn).
 *   UNFUSED: float multiply, then float add. Capability "NO AVX"/default (a CPU without AVX2,
 *            or ATEN_CPU_CAPABILITY=default).
 * Other builds (ATEN_CPU_CAPABILITY=avx512, aarch64, ...) were not checked. Ranges whose
 * width is a power of two (e.g. +-1/16 for H = 256) give the same numbers either way. */
enum tsrnn_torch_uniform_rounding {
    TSRNN_TORCH_UNIFORM_FUSED = 0,
    TSRNN_TORCH_UNIFORM_UNFUSED,
};

/* One element of a float32 tensor's uniform_(from, to): `from` and `to` are first rounded to
 * float, then x = (random() & (2^24 - 1)) * 2^-24 and x * (to - from) + from in float,
 * rounded as `rounding` says. One 32-bit draw. Requires from <= to (torch checks that). */
float tsrnn_torch_uniform(struct tsrnn_mt19937 *g, double from, double to,
                          enum tsrnn_torch_uniform_rounding rounding);

/* tensor.uniform_(from, to) for a contiguous float32 tensor of `count` elements: overwrites
 * out[0..count) in memory order, one draw each. */
void tsrnn_torch_uniform_fill(float *out, size_t count, struct tsrnn_mt19937 *g, double from,
                              double to, enum tsrnn_torch_uniform_rounding rounding);

/* The bound b of torch.nn.Linear's weight init, kaiming_uniform_(a=sqrt(5)) = U(-b, b),
 * computed in double exactly as torch/nn/init.py does (gain = sqrt(2 / (1 + sqrt(5)^2)),
 * b = sqrt(3) * gain / sqrt(fan_in)). Mathematically 1/sqrt(fan_in), but not always the same
 * double (for fan_in = 20 it is one ulp below). `fan_in` >= 1. */
double tsrnn_torch_kaiming_uniform_bound(size_t fan_in);

/* torch.randperm(n, generator=g) on CPU (aten/src/ATen/native/TensorFactories.cpp
 * randperm_cpu): perm = 0..n-1, then for i = 0 .. n-2 swap perm[i] with perm[i + z],
 * z = random() % (n - i). Draws n - 1 outputs (none for n <= 1). Overwrites perm[0..n). */
void tsrnn_torch_randperm(size_t *perm, size_t n, struct tsrnn_mt19937 *g);

/* One pass of torch.utils.data.RandomSampler(range(n)) without a generator of its own:
 * seed = the global generator's int64 random_(), then randperm(n) from a fresh generator
 * seeded with it. Draws two outputs of `global`. Overwrites perm[0..n). */
void tsrnn_torch_random_sampler(size_t *perm, size_t n, struct tsrnn_mt19937 *global);

/* --- numpy (legacy RandomState, numpy/random/_bounded_integers.pyx) --------------------- */

/* RandomState.randint(0, 2**31 - 1) with the default int64 dtype: masked rejection,
 * v = next() & 0x7FFFFFFF until v <= 2^31 - 2. In [0, 2^31 - 2]. */
int64_t tsrnn_numpy_randint_31(struct tsrnn_mt19937 *rs);

/* --- Darts ------------------------------------------------------------------------------ */

/* The torch seed under which Darts' fit() builds the model and runs its DataLoaders for
 * RNNModel(random_state=random_state): the third RandomState(random_state).randint(0,
 * 2**31 - 1). Darts accepts random_state in [0, 2^32 - 1]. */
uint32_t tsrnn_darts_fit_seed(uint32_t random_state);

/* The torch seed of Darts' `draw`-th decorated call (1-based) on a model made with this
 * random_state: RandomState(random_state)'s draw-th randint(0, 2**31 - 1). fit() is draw 3;
 * the first predict() after it draws 4 and seeds its predict_from_dataset(), where the
 * samples are drawn, with draw 5; each later predict() two more; historical_forecasts()
 * calls predict_from_dataset() alone (one draw). */
uint32_t tsrnn_darts_seed(uint32_t random_state, unsigned draw);

/* Draw 5: the samples of the first predict() after fit(). */
#define TSRNN_DARTS_PREDICT_DRAW 5

/* The initial parameters of Darts' _RNNModule in PyTorch's state_dict order, as fit() makes
 * them: the global generator seeded with tsrnn_darts_fit_seed(random_state), then
 * `rnn_count` floats U(-1/sqrt(H), 1/sqrt(H)) (all of torch.nn.RNN|LSTM|GRU: per layer
 * weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}), then V.weight (O, H) with
 * tsrnn_torch_kaiming_uniform_bound(H), then V.bias (O) with 1/sqrt(H). Overwrites
 * params[0 .. rnn_count + O*H + O). `hidden_count` (H) >= 1. Also right for float64 series:
 * Darts' _init_model() creates the module in float32 before it picks the precision, and the
 * cast to double comes afterwards. */
void tsrnn_darts_init_params(float *params, size_t rnn_count, size_t hidden_count,
                             size_t output_count, uint32_t random_state,
                             enum tsrnn_torch_uniform_rounding rounding);

/* The order in which the train DataLoader of Darts' fit() visits samples 0..n-1 in epoch
 * `epoch` (0-based), for a model of `param_count` parameters (the count of init draws, e.g.
 * 481 for RNN H=20). Overwrites perm[0..n).
 *
 * The global generator, seeded with tsrnn_darts_fit_seed(random_state), has by then drawn
 * param_count outputs for the init, then 2 per DataLoader iterator (base_seed) and 2 per
 * RandomSampler seed. Per epoch: train iterator (2), sampler seed (2) and, with validation
 * (val_series given, validated every epoch), the val iterator (2). Before epoch 0 Lightning
 * runs its sanity check (num_sanity_val_steps = 2) over the val loader: Lightning 2.x
 * (which Darts >= 0.24 requires) runs it inside isolate_rng(), so its iterator's draw is
 * undone (`sanity_check_draws` false); the older Lightning the Darts guide's printed
 * numbers come from kept it (true: 2 more outputs). So the sampler seed of epoch e is drawn
 * after param_count + 6e + 2 outputs with validation (+ 2 when the sanity check draws), and
 * after param_count + 4e + 2 without. Checked against real Darts 0.48.1 with Lightning
 * 2.6.6 (tests/fixtures/darts-fixtures.md) and, for the older order, against torch
 * DataLoaders created in that order (reference/pytorch-baseline.md: first batch 12, 88,
 * 37, ... for random_state 42). Costs O(param_count + e + n). */
void tsrnn_darts_epoch_permutation(size_t *perm, size_t n, uint32_t random_state,
                                   size_t param_count, uint64_t epoch, bool validation,
                                   bool sanity_check_draws);

/* The same order, incrementally: tsrnn_darts_loader_generator() positions `g` as Darts' global
 * generator stands just before epoch `epoch`'s RandomSampler seed (O(param_count + epoch),
 * each earlier epoch's steps having drawn `epoch_draws`: 0 without dropout);
 * tsrnn_torch_random_sampler(perm, n, g) then gives that epoch's order, and
 * tsrnn_darts_loader_next_epoch() moves `g` on to just before the next epoch's seed (O(1)),
 * so consecutive epochs cost no replay. */
void tsrnn_darts_loader_generator(struct tsrnn_mt19937 *g, uint32_t random_state,
                                  size_t param_count, uint64_t epoch, bool validation,
                                  bool sanity_check_draws, uint64_t epoch_draws);
void tsrnn_darts_loader_next_epoch(struct tsrnn_mt19937 *g, bool validation, uint64_t epoch_draws);

/* Darts' fit() as a sequence of draws from the global generator, for what a training step
 * draws (dropout masks): `epoch_draws` outputs per epoch, drawn by its steps in order after
 * the epoch's train iterator (2 outputs) and, with `shuffle`, its RandomSampler seed (2; a
 * SequentialSampler draws nothing); the validation iterator (2) after them. The loaders'
 * own draws are as tsrnn_darts_epoch_permutation() counts them. */
struct tsrnn_darts_fit {
    uint32_t random_state;
    size_t param_count;
    bool validation;
    bool sanity_check_draws;
    bool shuffle;
    uint64_t epoch_draws;
};

/* The outputs drawn since the seed when epoch `epoch`'s first training step starts. */
uint64_t tsrnn_darts_fit_epoch_start(const struct tsrnn_darts_fit *fit, uint64_t epoch);

/* The outputs drawn between an epoch's last training step and the next epoch's first. */
uint64_t tsrnn_darts_fit_between_epochs(const struct tsrnn_darts_fit *fit);

#endif
