#!/usr/bin/python3
"""The PyTorch side of scripts/bench.sh: the same two trainings in plain PyTorch, one thread.

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
Needs Debian's python3-torch (run with /usr/bin/python3).
"""
import os
import sys
import tempfile
import time

import numpy as np
import torch


class Module(torch.nn.Module):
    def __init__(self, kind, inputs, hidden):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(inputs, hidden, 1, batch_first=True)
        self.V = torch.nn.Linear(hidden, inputs)

    def forward(self, x):
        return self.V(self.rnn(x)[0])


def windows(values, steps):
    """All (input, target) windows of a scaled series, most recent first."""
    count = len(values) - steps
    starts = len(values) - steps - 1 - np.arange(count)
    idx = starts[:, None] + np.arange(steps)[None, :]
    series = torch.from_numpy(values[:, None])
    return series[idx], series[idx + 1]


def scaled(values, train_points):
    lo, hi = values[:train_points].min(), values[:train_points].max()
    scale = np.float32(1) / (hi - lo)
    return values * scale + (-lo * scale)


def timed_step(model, optimizer, loss_fn, x, y, idx):
    """One optimizer step on the windows idx, batch gather included; returns its seconds."""
    start = time.perf_counter()
    optimizer.zero_grad()
    loss = loss_fn(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


def train(kind, hidden, x, y, batch, epochs, max_steps):
    """Returns (seconds of optimizer steps, samples trained on)."""
    torch.manual_seed(0)
    model = Module(kind, 1, hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    seconds, samples, steps = 0.0, 0, 0
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for first in range(0, len(x), batch):
            if steps == max_steps:
                return seconds, samples
            idx = order[first:first + batch]
            seconds += timed_step(model, optimizer, loss_fn, x, y, idx)
            samples += len(idx)
            steps += 1
    return seconds, samples


def ddp_worker(rank, world, store, path, result):
    """One DDP process: its DistributedSampler shard of each epoch, timed as train()."""
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                                         world_size=world)
    values = read_column(path, 0)
    x, y = windows(scaled(values, len(values)), 64)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(Module("LSTM", 1, 256))
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


def read_column(path, column):
    return np.loadtxt(path, delimiter=",", skiprows=1, usecols=column, dtype=np.float32)


def main():
    torch.set_num_threads(1)
    what = sys.argv[1]
    if what == "version":
        blas = "OpenBLAS" if "openblas" in open("/proc/self/maps").read().lower() else "reference BLAS"
        print(f"torch {torch.__version__}, {blas}")
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
        sys.exit(f"usage: {sys.argv[0]} seed|lstm256 CSV | ddp256 CSV W | version")


if __name__ == "__main__":
    main()
