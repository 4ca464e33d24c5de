#!/usr/bin/env python3
"""The PyTorch side of scripts/gpu-check.sh, on the GPU: needs only torch (with CUDA).

  gpu_torch.py steps AIR_PASSENGERS.csv INIT.safetensors EPOCHS [--kind RNN|LSTM|GRU]
      Loads the initial weights of Darts' _RNNModule (hidden 20, one layer; PyTorch names, as
      tsrnn writes them: the max_steps = 0 checkpoint of the same model) from
      INIT.safetensors, trains it on the GPU with Adam(lr=1e-3) on the AirPassengers windows
      in index order (shuffle off, batch 16) for EPOCHS epochs, and prints one JSON line:
      {"losses": [every step's loss]}.
  gpu_torch.py bench CSV --kind K --hidden H --batch B --length T --steps N [--column C]
      Times N optimizer steps (after 5 warm-up steps) of the same model on the GPU on
      shuffled windows of column C of CSV, scaled to [0, 1]; prints one JSON line with
      steps/s and samples/s. With --epochs E instead of --steps: E epochs of the Darts guide's
      configuration (AirPassengers, 121 training points).
  gpu_torch.py version

TF32 is off for cuDNN and cuBLAS (tsrnn's CUDA backend runs full float32), cuDNN is
deterministic. The data are tsrnn's: the series min-max scaled on the training part, window i
starting at L - T - 1 - i (most recent first), as scripts/bench_torch.py builds them.
"""
import argparse
import csv
import json
import os
import struct
import sys
import time

import torch

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.deterministic = True
# TSRNN_TORCH_DEVICE=cpu runs the same on the CPU: how the script itself is checked without a GPU.
DEVICE = os.environ.get("TSRNN_TORCH_DEVICE", "cuda")


def module(kind, inputs, hidden, layers):
    """Darts' _RNNModule: the recurrent stack and a Linear head V on every step."""

    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(inputs, hidden, layers, batch_first=True)
            self.V = torch.nn.Linear(hidden, inputs)

        def forward(self, x):
            return self.V(self.rnn(x)[0])

    return Module()


def read_column(path, column):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))[1:]
    return torch.tensor([float(r[column]) for r in rows], dtype=torch.float32)


def scaled(values, train_points):
    lo, hi = values[:train_points].min(), values[:train_points].max()
    scale = torch.tensor(1.0, dtype=torch.float32) / (hi - lo)
    return values * scale + (-lo * scale)


def windows(values, steps):
    """(x, y) of every window of `steps` points, most recent first, (N, T, 1)."""
    count = len(values) - steps
    starts = len(values) - steps - 1 - torch.arange(count)
    idx = starts[:, None] + torch.arange(steps)[None, :]
    series = values[:, None]
    return series[idx], series[idx + 1]


def read_safetensors(path):
    """The F32 tensors of a safetensors file (a u64 header length, the JSON header, the raw
    little-endian bytes) that are model weights: tsrnn's checkpoints also hold "optim.*"."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or name.startswith("optim.") or t["dtype"] != "F32":
            continue
        lo, hi = t["data_offsets"]
        values = struct.unpack(f"<{(hi - lo) // 4}f", data[8 + n + lo:8 + n + hi])
        out[name] = torch.tensor(values, dtype=torch.float32).reshape(t["shape"])
    return out


def steps(args):
    values = scaled(read_column(args.csv, 1), 121)
    x, y = windows(values[:121], 20)
    model = module(args.kind, 1, 20, 1)
    model.load_state_dict(read_safetensors(args.init))
    model = model.to(DEVICE)
    x, y = x.to(DEVICE), y.to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    losses = []
    for _ in range(args.epochs):
        for first in range(0, len(x), 16):
            optimizer.zero_grad()
            loss = loss_fn(model(x[first:first + 16]), y[first:first + 16])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    print(json.dumps({"losses": losses}))


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def bench(args):
    if args.epochs:  # the Darts guide's configuration
        values = scaled(read_column(args.csv, 1), 121)
        x, y = windows(values[:121], 20)
        kind, hidden, batch = "RNN", 20, 16
    else:
        values = read_column(args.csv, args.column)
        x, y = windows(scaled(values, len(values)), args.length)
        kind, hidden, batch = args.kind, args.hidden, args.batch
    x, y = x.to(DEVICE), y.to(DEVICE)
    torch.manual_seed(0)
    model = module(kind, 1, hidden, args.layers).to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()

    def batches():
        while True:
            order = torch.randperm(len(x), device=DEVICE)
            for first in range(0, len(x), batch):
                yield order[first:first + batch]

    def step(idx):
        optimizer.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
        return len(idx)

    it = batches()
    for _ in range(5):
        step(next(it))
    sync()
    count = args.epochs * ((len(x) + batch - 1) // batch) if args.epochs else args.steps
    samples = 0
    start = time.perf_counter()
    for _ in range(count):
        samples += step(next(it))
    sync()
    seconds = time.perf_counter() - start
    print(json.dumps({"steps": count, "seconds": seconds, "steps_per_s": count / seconds,
                      "samples_per_s": samples / seconds}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("steps")
    s.add_argument("csv")
    s.add_argument("init")
    s.add_argument("epochs", type=int)
    s.add_argument("--kind", default="RNN", choices=("RNN", "LSTM", "GRU"))
    b = sub.add_parser("bench")
    b.add_argument("csv")
    b.add_argument("--kind", default="LSTM", choices=("RNN", "LSTM", "GRU"))
    b.add_argument("--hidden", type=int, default=512)
    b.add_argument("--layers", type=int, default=1)
    b.add_argument("--batch", type=int, default=256)
    b.add_argument("--length", type=int, default=64)
    b.add_argument("--steps", type=int, default=100)
    b.add_argument("--epochs", type=int, default=0)
    b.add_argument("--column", type=int, default=0)
    sub.add_parser("version")
    args = p.parse_args()
    if DEVICE == "cuda" and args.what != "version" and not torch.cuda.is_available():
        sys.exit("gpu_torch.py: torch.cuda.is_available() is False")
    if args.what == "steps":
        steps(args)
    elif args.what == "bench":
        bench(args)
    else:
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
        print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
              f"cuDNN {torch.backends.cudnn.version()}, {gpu}")


if __name__ == "__main__":
    main()
