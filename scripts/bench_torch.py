#!/usr/bin/python3
"""The PyTorch side of scripts/bench.sh and scripts/bench/suite.py: the same trainings in plain
PyTorch.

  bench_torch.py run [OPTIONS] CSV         -> one JSON line: samples/s of each timed repetition
                                              of a synthetic-series training (see --help), or
                                              of 300-epoch AirPassengers runs with --seed
  bench_torch.py seed AIR_PASSENGERS.csv   -> seconds of optimizer steps for 300 epochs of the
                                              Darts guide's RNN (hidden 20, batch 16, T 20)
  bench_torch.py lstm256 SYNTHETIC.csv     -> samples/s of 40 optimizer steps of LSTM-256,
                                              batch 64, T 64
  bench_torch.py ddp256 SYNTHETIC.csv W    -> samples/s of the whole job: the same LSTM-256 in
                                              W processes (torch.multiprocessing.spawn, as
                                              ddp_spawn), DistributedDataParallel over Gloo on
                                              127.0.0.1, batch 64 per process, 30 steps
  bench_torch.py version                   -> "torch X, BLAS Y"

The model is Darts' _RNNModule (nn.RNN/LSTM/GRU(batch_first=True) + nn.Linear on every
step), the loss nn.MSELoss, the optimizer Adam(lr=1e-3); the data the same MinMax-scaled
windows tsrnn trains on (sample i starts at L - T - 1 - i), reshuffled every epoch. Only the
optimizer steps are timed (batch gather, forward, backward, Adam), as tsrnn reports them.

Threads: torch.set_num_threads() does not reach the BLAS of Debian's torch (built with
BLAS_INFO=generic, it calls libblas.so.3 without telling it a thread count), and OpenBLAS
behind that name starts one thread per core unless OPENBLAS_NUM_THREADS says otherwise. So the
thread count (--threads, else 1) goes into OPENBLAS_NUM_THREADS and OMP_NUM_THREADS before
torch is imported, and into torch.set_num_threads(). Which BLAS torch gets is the dynamic
loader's choice: LD_LIBRARY_PATH pointing at an OpenBLAS folder overrides the system's
libblas.so.3 (see scripts/bench/suite.py). Runs with Debian's python3-torch
(/usr/bin/python3) or with a PyTorch from PyPI (the virtual environment
scripts/bench/suite.py --setup-torch makes; built with MKL and oneDNN, which ignore
LD_LIBRARY_PATH's BLAS and take their thread count from torch.set_num_threads).
"""
import argparse
import ctypes
import json
import os
import re
import sys
import tempfile
import time

torch = None  # imported by load_torch(), after the thread environment is set


def load_torch(threads):
    """Imports torch with `threads` threads for OpenMP, OpenBLAS and torch's intra-op pool."""
    global torch
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[name] = str(threads)
    import torch as module

    torch = module
    torch.set_num_threads(threads)
    return torch


def make_module(kind, inputs, hidden, layers):
    """Darts' _RNNModule: the recurrent stack and a Linear head V on every step."""

    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(inputs, hidden, layers, batch_first=True)
            self.V = torch.nn.Linear(hidden, inputs)

        def forward(self, x):
            return self.V(self.rnn(x)[0])

    return Module()


def windows(values, steps):
    """All (input, target) windows of a scaled series, most recent first."""
    import numpy as np

    count = len(values) - steps
    starts = len(values) - steps - 1 - np.arange(count)
    idx = starts[:, None] + np.arange(steps)[None, :]
    series = torch.from_numpy(values[:, None])
    return series[idx], series[idx + 1]


def scaled(values, train_points):
    import numpy as np

    lo, hi = values[:train_points].min(), values[:train_points].max()
    scale = np.float32(1) / (hi - lo)
    return values * scale + (-lo * scale)


def read_column(path, column):
    import numpy as np

    return np.loadtxt(path, delimiter=",", skiprows=1, usecols=column, dtype=np.float32)


def timed_step(model, optimizer, loss_fn, x, y, idx):
    """One optimizer step on the windows idx, batch gather included; returns its seconds."""
    start = time.perf_counter()
    optimizer.zero_grad()
    loss = loss_fn(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


class Trainer:
    """A fresh model, Adam and shuffled epochs over (x, y); steps run on demand."""

    def __init__(self, kind, hidden, layers, x, y, batch):
        torch.manual_seed(0)
        self.model = make_module(kind, 1, hidden, layers)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.loss_fn = torch.nn.MSELoss()
        self.x, self.y, self.batch = x, y, batch
        self.order, self.first = torch.randperm(len(x)), 0

    def step(self):
        """One step on the next batch of the epoch (a new shuffle after the last one);
        returns (seconds, samples)."""
        if self.first >= len(self.x):
            self.order, self.first = torch.randperm(len(self.x)), 0
        idx = self.order[self.first:self.first + self.batch]
        self.first += self.batch
        return timed_step(self.model, self.optimizer, self.loss_fn, self.x, self.y, idx), len(idx)

    def epochs(self, count):
        """`count` whole epochs, the last batch short as with drop_last=False."""
        seconds = samples = 0
        for _ in range(count):
            self.first = len(self.x)
            while True:
                s, n = self.step()
                seconds, samples = seconds + s, samples + n
                if self.first >= len(self.x):
                    break
        return seconds, samples


def train(kind, hidden, x, y, batch, epochs, max_steps):
    """Returns (seconds of optimizer steps, samples trained on)."""
    trainer = Trainer(kind, hidden, 1, x, y, batch)
    if max_steps < 0:
        return trainer.epochs(epochs)
    seconds = samples = 0
    for _ in range(max_steps):
        s, n = trainer.step()
        seconds, samples = seconds + s, samples + n
    return seconds, samples


def blas_info():
    """(short name, detail) of the BLAS torch computes with: MKL (and oneDNN) where torch's
    build summary names it (PyPI's wheels link them statically), else the OpenBLAS or
    reference BLAS this process loaded, read from its memory map (numpy's own OpenBLAS, with
    prefixed symbols, is not torch's)."""
    config = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([0-9.]+)", config)
    if mkl and "BLAS_INFO=mkl" in config:
        dnn = re.search(r"(?:MKL-DNN|oneDNN) v([0-9.]+)", config)
        capability = re.search(r"CPU capability usage: (\S+)", config)
        return "MKL", (f"MKL {mkl.group(1)}" + (f", oneDNN {dnn.group(1)}" if dnn else "")
                       + (f", CPU capability {capability.group(1)}" if capability else ""))
    libs = sorted({line.split()[-1] for line in open("/proc/self/maps")
                   if "blas" in line.lower() and ".so" in line})
    for path in libs:
        if "openblas" in os.path.basename(path).lower():
            lib = ctypes.CDLL(path)
            try:
                lib.openblas_get_config.restype = ctypes.c_char_p
                lib.openblas_get_corename.restype = ctypes.c_char_p
            except AttributeError:
                continue
            config = lib.openblas_get_config().decode().split()
            version = config[1] if len(config) > 1 else "?"
            variant = os.path.basename(os.path.dirname(path)).replace("openblas-", "")
            return "OpenBLAS", (f"OpenBLAS {version} {variant}, "
                                f"core {lib.openblas_get_corename().decode()}, {path}")
    if libs:
        return "reference BLAS", f"reference BLAS (netlib), {libs[0]}"
    return "unknown BLAS", "no BLAS library in the process map"


def run(args):
    """The suite's measurement: a warm-up, then --reps timed repetitions, as one JSON line."""
    load_torch(args.threads)
    if args.seed:
        # The Darts guide's model: 121 training points, windows of 20, 300 epochs per rep.
        values = scaled(read_column(args.csv, 1), 121)
        x, y = windows(values[:121], 20)
        Trainer("RNN", 20, 1, x, y, 16).epochs(args.warmup_epochs)
        reps = []
        for _ in range(args.reps):
            seconds, samples = Trainer("RNN", 20, 1, x, y, 16).epochs(300)
            reps.append({"seconds": seconds, "samples": samples, "steps": 300 * 7})
    else:
        values = read_column(args.csv, 0)
        x, y = windows(scaled(values, len(values)), args.length)
        # Warm-up: at least 2 steps and ~args.warmup_s; the steps after the first set how
        # many steps make a repetition of ~args.target_s.
        trainer = Trainer(args.model, args.hidden, args.layers, x, y, args.batch)
        trainer.step()
        times = []
        while len(times) < 2 or sum(times) < args.warmup_s:
            times.append(trainer.step()[0])
        per_step = sum(times) / len(times)
        steps = args.steps or max(args.min_steps, min(args.max_steps,
                                                      round(args.target_s / per_step)))
        reps = []
        for _ in range(args.reps):
            trainer = Trainer(args.model, args.hidden, args.layers, x, y, args.batch)
            seconds = samples = 0
            for _ in range(steps):
                s, n = trainer.step()
                seconds, samples = seconds + s, samples + n
            reps.append({"seconds": seconds, "samples": samples, "steps": steps})
    for r in reps:
        r["samples_per_s"] = r["samples"] / r["seconds"]
    blas, detail = blas_info()
    print(json.dumps({"torch": torch.__version__, "blas": blas, "blas_detail": detail,
                      "threads": args.threads, "reps": reps}))


def ddp_worker(rank, world, store, path, result):
    """One DDP process: its DistributedSampler shard of each epoch, timed as train()."""
    load_torch(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                                         world_size=world)
    values = read_column(path, 0)
    x, y = windows(scaled(values, len(values)), 64)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(make_module("LSTM", 1, 256, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    sampler = torch.utils.data.distributed.DistributedSampler(range(len(x)), world, rank)
    order = torch.tensor(list(iter(sampler)))
    seconds, samples = 0.0, 0
    for step in range(30):
        idx = order[step * 64:(step + 1) * 64]
        seconds += timed_step(model, optimizer, loss_fn, x, y, idx)
        samples += len(idx)
    if rank == 0:
        result.put(world * samples / seconds)
    torch.distributed.destroy_process_group()


def parse_run(argv):
    p = argparse.ArgumentParser(prog="bench_torch.py run",
                                description="Timed repetitions of one training, as JSON.")
    p.add_argument("csv", help="the synthetic series (column 0), or AirPassengers with --seed")
    p.add_argument("--seed", action="store_true",
                   help="the Darts guide's RNN-20 on AirPassengers: 300 epochs per repetition")
    p.add_argument("--model", default="LSTM", choices=("RNN", "LSTM", "GRU"))
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--length", type=int, default=64, help="training_length")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=0, help="steps per repetition (0: from warm-up)")
    p.add_argument("--target-s", type=float, default=1.5, help="seconds per repetition")
    p.add_argument("--min-steps", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=1000)
    p.add_argument("--warmup-s", type=float, default=0.5)
    p.add_argument("--warmup-epochs", type=int, default=30, help="with --seed")
    return p.parse_args(argv)


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "run":
        run(parse_run(sys.argv[2:]))
        return
    load_torch(1)
    if what == "version":
        print(f"torch {torch.__version__}, {blas_info()[0]}")
    elif what == "seed":
        values = scaled(read_column(sys.argv[2], 1), 121)
        x, y = windows(values[:121], 20)
        seconds, _ = train("RNN", 20, x, y, 16, 300, -1)
        print(f"{seconds:.3f}")
    elif what == "lstm256":
        values = read_column(sys.argv[2], 0)
        x, y = windows(scaled(values, len(values)), 64)
        seconds, samples = train("LSTM", 256, x, y, 64, 1, 40)
        print(f"{samples / seconds:.0f}")
    elif what == "ddp256":
        world = int(sys.argv[3])
        context = torch.multiprocessing.get_context("spawn")
        result = context.SimpleQueue()
        with tempfile.TemporaryDirectory() as folder:
            torch.multiprocessing.spawn(ddp_worker, nprocs=world,
                                        args=(world, os.path.join(folder, "store"), sys.argv[2],
                                              result))
        print(f"{result.get():.0f}")
    else:
        sys.exit(f"usage: {sys.argv[0]} run [OPTIONS] CSV | seed|lstm256 CSV | ddp256 CSV W | "
                 "version")


if __name__ == "__main__":
    main()
