#!/usr/bin/python3
"""Generate the random-number vectors that tests/test_torch_rng.c compares against.

Run with Debian's Python, which has python3-torch 1.13 and numpy 1.24 (the pyenv
`python3` on the PATH has no torch), on an x86-64 CPU with AVX2:

    /usr/bin/python3 scripts/gen-rng-vectors.py

Every number comes from the real libraries: numpy's legacy RandomState, torch's CPU
generator, torch.nn modules and torch.utils.data DataLoaders. It writes, under
tests/fixtures/:

* rng_vectors.txt -- one case a line (format below).
* rng_darts_init_{rnn,lstm,gru}_42.safetensors -- the initial weights of Darts'
  _RNNModule (nn.RNN|LSTM|GRU(1, 20) as `rnn`, nn.Linear(20, 1) as `V`) for
  RNNModel(random_state=42), PyTorch state_dict names, F32, sorted by name.

rng_vectors.txt: `#` lines are comments; every other line is

    <case> <param> ... | <count> <hash> | <value> ...

where the case and its params say what to compute, <count> is how many numbers it
yields, <hash> (16 hex digits) is FNV-1a 64 over all of them, each as 8 little-endian
bytes of a uint64 (int64 as two's complement, float32 as its bit pattern zero-extended),
and the values after the second `|` are the first few of them (floats as 0x bit patterns).

The float32 uniform_ kernel rounds differently per ATen CPU capability (fused
multiply-add under AVX2, separate roundings under the "default" capability); this
process must run with AVX2, and the `unfused` lines come from a child process started
with ATEN_CPU_CAPABILITY=default.
"""

import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

from fixturelib import write_safetensors
from torch.utils.data import DataLoader, RandomSampler

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
VECTORS = FIXTURES / "rng_vectors.txt"
GENERATOR = "scripts/gen-rng-vectors.py"

PREFIX = 8  # values written out in full per line; the hash covers the rest
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1

SEEDS_MT = (0, 1, 42, 5489, 4294967295)
SEEDS_NUMPY = (0, 1, 42, 4294967295)
SEEDS_TORCH = (0, 42, 4294967295)
SEEDS_TORCH_WIDE = (42 + (7 << 32), (1 << 64) - 1)  # manual_seed keeps the low 32 bits
UNIFORM_COUNT = 4096
UNIFORM_SEEDS = (0, 42)
# (from, to) as Python floats, as torch.nn.init passes them.
KAIMING_20 = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + math.sqrt(5) ** 2)) / math.sqrt(20))
UNIFORM_RANGES = (
    (-1 / math.sqrt(20), 1 / math.sqrt(20)),
    (-1 / math.sqrt(256), 1 / math.sqrt(256)),
    (-KAIMING_20, KAIMING_20),
    (0.0, 1.0),
    (-0.3, 0.7),
    (2.0, 5.5),
    (-1e-3, 1e-3),
    (0.1, 0.2),
)
RANDPERM_SIZES = (0, 1, 2, 3, 101, 1000, 100000)
RANDPERM_SEEDS = (0, 42)
SAMPLER_SIZES = (1, 101, 5000)
DARTS_STATES = (0, 1, 2, 3, 4, 42, 4294967295)
# Darts' _RNNModule: (kind, inputs, hidden, layers, outputs) for random_state 42.
INIT_MODELS = (
    ("RNN", 1, 20, 1, 1),
    ("LSTM", 1, 20, 1, 1),
    ("GRU", 1, 20, 1, 1),
    ("LSTM", 3, 7, 2, 2),
    ("GRU", 2, 256, 1, 1),
)
# Seed configuration: 101 train samples of batch 16, 3 val samples in one batch.
EPOCH_CASES = (
    # (kind, hidden, random_state, train n, val n or 0, epochs to write, epochs to run)
    ("RNN", 20, 42, 101, 3, (0, 1, 2, 299), 300),
    ("LSTM", 20, 42, 101, 3, (0, 299), 300),
    ("RNN", 20, 0, 101, 0, (0, 1, 5), 6),
    ("GRU", 20, 7, 1000, 30, (0, 3), 4),
)
SAFETENSORS_STATE = 42


def fnv64(values):
    h = FNV_OFFSET
    for v in values:
        v &= MASK64
        for _ in range(8):
            h ^= v & 0xFF
            h = (h * FNV_PRIME) & MASK64
            v >>= 8
    return h


def float_bits(values):
    return [struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in values]


def line(head, values, floats=False):
    values = [int(v) for v in values]
    shown = [f"0x{v:08x}" if floats else str(v) for v in values[:PREFIX]]
    return f"{head} | {len(values)} {fnv64(values):016x} | {' '.join(shown)}".rstrip()


def capability():
    for text in torch.__config__.show().splitlines():
        if "CPU capability usage:" in text:
            return text.split(":", 1)[1].strip()
    return "?"


# --- numpy and Darts' seeds -------------------------------------------------------------


def raw_mt(seed, count):
    """MT19937 outputs: with high = 2**32 and dtype uint32, legacy randint returns the raw
    32-bit output (rng = 0xFFFFFFFF takes no masking)."""
    return np.random.RandomState(seed).randint(0, 2**32, size=count, dtype=np.uint32).tolist()


def untemper(y):
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    t = y
    for _ in range(5):
        t = y ^ ((t << 7) & 0x9D2C5680)
    y = t & 0xFFFFFFFF
    t = y
    for _ in range(3):
        t = y ^ (t >> 11)
    return t & 0xFFFFFFFF


def darts_fit_seed(random_state):
    rs = np.random.RandomState(random_state)  # sklearn check_random_state(int)
    draws = [rs.randint(0, 2**31 - 1) for _ in range(3)]  # __init__, fit, fit_from_dataset
    return int(draws[2])


def numpy_lines():
    out = ["# MT19937 outputs (init_genrand seeding): mt19937 <seed>"]
    for seed in SEEDS_MT:
        out.append(line(f"mt19937 {seed}", raw_mt(seed, 2000)))
    out.append("# numpy RandomState(<seed>).randint(0, 2**31 - 1), int64: numpy_randint31 <seed>")
    for seed in SEEDS_NUMPY:
        rs = np.random.RandomState(seed)
        out.append(line(f"numpy_randint31 {seed}", [rs.randint(0, 2**31 - 1) for _ in range(200)]))
    # The rejection branch (1 in 2^31): RandomState(seed) after `advance` outputs, with the
    # state words at the current position replaced so that the next outputs are `outputs`.
    out.append(
        "# rejection: RandomState(<seed>), <advance> outputs drawn, then the next state words"
        " set to <w>... (untempered <outputs>); then randint draws:"
        " numpy_randint31_crafted <seed> <advance> <w1> <w2> <w3> <w4>"
    )
    seed, advance = 42, 1
    outputs = (0xFFFFFFFF, 0x7FFFFFFF, 0xFFFFFFFE, 0x12345678)
    words = [untemper(v) for v in outputs]
    rs = np.random.RandomState(seed)
    rs.randint(0, 2**32, size=advance, dtype=np.uint32)
    name, key, pos, has_gauss, gauss = rs.get_state()
    key = key.copy()
    key[pos : pos + len(words)] = words
    rs.set_state((name, key, pos, has_gauss, gauss))
    probe = np.random.RandomState()
    probe.set_state((name, key, pos, has_gauss, gauss))
    assert probe.randint(0, 2**32, size=4, dtype=np.uint32).tolist() == list(outputs)
    draws = [rs.randint(0, 2**31 - 1) for _ in range(2)]
    assert draws[0] == 0x7FFFFFFE and draws[1] == 0x12345678, draws
    params = " ".join(str(w) for w in words)
    out.append(line(f"numpy_randint31_crafted {seed} {advance} {params}", draws))
    out.append("# Darts: third RandomState(<random_state>).randint(0, 2**31 - 1): darts_fit_seed <s>")
    for state in DARTS_STATES:
        out.append(line(f"darts_fit_seed {state}", [darts_fit_seed(state)]))
    return out


# --- torch generator ----------------------------------------------------------------------


def int64_draws(gen, count):
    return torch.empty(count, dtype=torch.int64).random_(generator=gen).tolist()


def torch_lines():
    out = ["# torch Generator.manual_seed(<seed>) then torch.empty(n, dtype=int64).random_():"
           " torch_random_int64 <seed>"]
    for seed in SEEDS_TORCH + SEEDS_TORCH_WIDE:
        gen = torch.Generator()
        gen.manual_seed(seed)
        out.append(line(f"torch_random_int64 {seed}", int64_draws(gen, 100)))
    out.append("# randperm(<n>, generator seeded <seed>), then one int64 random_() of that"
               " generator: torch_randperm <seed> <n>")
    for seed in RANDPERM_SEEDS:
        for n in RANDPERM_SIZES:
            gen = torch.Generator()
            gen.manual_seed(seed)
            perm = torch.randperm(n, generator=gen).tolist()
            out.append(line(f"torch_randperm {seed} {n}", perm + int64_draws(gen, 1)))
    out.append("# list(RandomSampler(range(<n>))) after torch.manual_seed(<seed>), then one int64"
               " random_() of the global generator: torch_random_sampler <seed> <n>")
    for seed in RANDPERM_SEEDS:
        for n in SAMPLER_SIZES:
            torch.manual_seed(seed)
            order = list(iter(RandomSampler(range(n))))
            after = torch.empty((), dtype=torch.int64).random_().item()
            out.append(line(f"torch_random_sampler {seed} {n}", order + [after]))
    return out


def uniform_lines(rounding):
    out = []
    for seed in UNIFORM_SEEDS:
        for lo, hi in UNIFORM_RANGES:
            gen = torch.Generator()
            gen.manual_seed(seed)
            values = torch.empty(UNIFORM_COUNT, dtype=torch.float32).uniform_(lo, hi, generator=gen)
            head = f"torch_uniform {seed} {lo.hex()} {hi.hex()} {rounding}"
            out.append(line(head, float_bits(values.tolist()), floats=True))
    return out


# --- Darts' module and DataLoaders ---------------------------------------------------------


def darts_module(kind, inputs, hidden, layers, outputs, random_state):
    """Darts' _RNNModule parameters as fit() creates them: rnn, then V."""
    torch.manual_seed(darts_fit_seed(random_state))
    rnn = getattr(nn, kind)(inputs, hidden, layers, batch_first=True)
    head = nn.Linear(hidden, outputs)
    named = [("rnn." + k, v) for k, v in rnn.state_dict().items()]
    named += [("V." + k, v) for k, v in head.state_dict().items()]
    return named


def init_lines(rounding):
    out = []
    for kind, inputs, hidden, layers, outputs in INIT_MODELS:
        named = darts_module(kind, inputs, hidden, layers, outputs, SAFETENSORS_STATE)
        flat = torch.cat([v.reshape(-1) for _, v in named]).tolist()
        head = f"darts_init {kind} {inputs} {hidden} {layers} {outputs} {SAFETENSORS_STATE} {rounding}"
        out.append(line(head, float_bits(flat), floats=True))
    return out


def epoch_orders(kind, hidden, random_state, n_train, n_val, epochs):
    """Real DataLoaders in the order Lightning uses them under Darts' fit(): the module is
    built, then (with validation) one sanity-check val iterator, then per epoch the whole
    shuffled train loader and (with validation) one val iterator."""
    named = darts_module(kind, 1, hidden, 1, 1, random_state)  # seeds the global generator
    param_count = sum(v.numel() for _, v in named)
    train = DataLoader(list(range(n_train)), batch_size=16, shuffle=True, drop_last=False)
    val = DataLoader(list(range(n_val)), batch_size=16, shuffle=False) if n_val else None
    if val is not None:
        next(iter(val))  # sanity check
    orders = []
    for _ in range(epochs):
        orders.append([int(i) for batch in train for i in batch])
        if val is not None:
            for _ in val:
                pass
    return param_count, orders


def epoch_lines():
    out = ["# Darts fit() train order of epoch <e> (0-based) for <n> samples, a model of"
           " <params> parameters, validation 1/0: darts_epoch <random_state> <n> <params> <e>"
           " <validation>"]
    for kind, hidden, state, n_train, n_val, write, run in EPOCH_CASES:
        param_count, orders = epoch_orders(kind, hidden, state, n_train, n_val, run)
        if (kind, state, n_train, n_val) == ("RNN", 42, 101, 3):
            # pytorch-baseline.md: the reference run's first batch is samples 12, 88, 37, ...
            assert param_count == 481 and orders[0][:3] == [12, 88, 37], orders[0][:3]
        for epoch in write:
            head = f"darts_epoch {state} {n_train} {param_count} {epoch} {1 if n_val else 0}"
            out.append(line(head, orders[epoch]))
    return out


def write_init_safetensors():
    for kind in ("RNN", "LSTM", "GRU"):
        named = darts_module(kind, 1, 20, 1, 1, SAFETENSORS_STATE)
        metadata = {
            "generator": GENERATOR,
            "torch": torch.__version__,
            "model": kind,
            "input_size": "1",
            "hidden_dim": "20",
            "n_rnn_layers": "1",
            "output_size": "1",
            "random_state": str(SAFETENSORS_STATE),
            "torch_seed": str(darts_fit_seed(SAFETENSORS_STATE)),
            "cpu_capability": capability(),
        }
        path = FIXTURES / f"rng_darts_init_{kind.lower()}_{SAFETENSORS_STATE}.safetensors"
        write_safetensors(path, dict(named), metadata)


def main():
    torch.set_num_threads(1)
    if len(sys.argv) > 1 and sys.argv[1] == "--unfused":
        if capability() != "NO AVX":
            sys.exit(f"child expected CPU capability 'NO AVX', got {capability()!r}")
        print("\n".join(uniform_lines("unfused") + init_lines("unfused")))
        return
    if capability() != "AVX2":
        sys.exit(f"{GENERATOR}: needs torch's AVX2 CPU capability, got {capability()!r}")
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    child = subprocess.run([sys.executable, __file__, "--unfused"], env=env, check=True,
                           capture_output=True, text=True)
    lines = [
        f"# Generated by {GENERATOR} (torch {torch.__version__}, numpy {np.__version__}); do not edit.",
        "# <case> <param> ... | <count> <FNV-1a 64 of all values as uint64 LE> | <first values>",
    ]
    lines += numpy_lines()
    lines += torch_lines()
    lines.append("# float32 torch.empty(4096).uniform_(<from>, <to>) from a generator seeded <seed>,"
                 " kernel rounding fused (AVX2) / unfused (default): torch_uniform <seed> <from>"
                 " <to> <rounding>")
    lines += uniform_lines("fused")
    lines += [t for t in child.stdout.splitlines() if t.startswith("torch_uniform")]
    lines.append("# Darts _RNNModule initial weights, state_dict order (rnn, then V), for"
                 " random_state <s>: darts_init <kind> <inputs> <hidden> <layers> <outputs> <s>"
                 " <rounding>")
    lines += init_lines("fused")
    lines += [t for t in child.stdout.splitlines() if t.startswith("darts_init")]
    lines += epoch_lines()
    VECTORS.write_text("\n".join(lines) + "\n")
    write_init_safetensors()
    print(f"wrote {VECTORS.relative_to(ROOT)} ({len(lines)} lines) and 3 safetensors files")


if __name__ == "__main__":
    main()
