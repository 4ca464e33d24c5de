#!/usr/bin/env python3
"""Record real Darts' AirPassengers runs as fixtures for tsrnn's parity test.

Needs a virtual environment with Darts, outside the source tree (the tests do not):

    python3 -m venv /work/venv-darts
    /work/venv-darts/bin/pip install "darts==0.48.1" "pytorch-lightning==2.6.*" tensorboard
    cp examples/data/air_passengers.csv ~/.darts/datasets/   # same md5: loads offline
    /work/venv-darts/bin/python scripts/gen-darts-fixtures.py --logs /tmp/darts-logs   # also tests/fixtures/darts_hparams.yaml

Recorded with: darts 0.48.1, pytorch-lightning 2.6.6, torch 2.15.0 (see darts-fixtures.md it writes
for the exact versions of the last run), CPU, torch.set_num_threads(1).

For each model (RNN, LSTM, GRU) and random_state (0, 1, 42) it trains the Darts guide's model
("Using Torch models with GPUs and TPUs") exactly as a user would -- no seed_everything, no
change to Lightning's defaults (num_sanity_val_steps = 2, the sanity check under
isolate_rng) -- on the float32 series, scaled by Scaler() fitted on the part up to 1959-01,
validated on the rest, and writes under tests/fixtures/:

* darts_<model>_<seed>_metrics.csv: tsrnn's metrics.csv layout (header
  `epoch,step,train_loss,val_loss`): one row per optimizer step with that batch's
  train_loss (Darts' logged value, before the update), then one row per epoch with val_loss;
  floats `%.9g`. Captured by a callback (reads only, draws no random number).
* darts_<model>_<seed>_forecast.csv: `model.predict(24)` inverse-scaled, `Month,#Passengers`.
* darts-fixtures.md: versions and the figures (first step, last epoch's mean train loss,
  last val_loss, MAPE over the 23 validation months).

Optionally (`--logs DIR`) one more RNN seed 42 run with log_tensorboard=True and
save_checkpoints=True is kept in DIR for inspecting Darts' files (event files, checkpoints,
`model.save()`'s Air_RNN.pt), and its logs/hparams.yaml is copied to
tests/fixtures/darts_hparams.yaml.
"""

import argparse
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
MODELS = ("RNN", "LSTM", "GRU")
SEEDS = (0, 1, 42)
EPOCHS = 300
FORECAST_N = 24


def load_data():
    from darts.dataprocessing.transformers import Scaler
    from darts.datasets import AirPassengersDataset
    import pandas as pd

    series = AirPassengersDataset().load().astype(np.float32)
    train, val = series.split_after(pd.Timestamp("19590101"))
    scaler = Scaler()
    train_s = scaler.fit_transform(train)
    val_s = scaler.transform(val)
    return series, train, val, train_s, val_s, scaler


def make_recorder():
    import pytorch_lightning as pl

    class Recorder(pl.Callback):
        """Per-step train_loss and per-epoch val_loss, as Darts logs them."""

        def __init__(self):
            self.rows = []  # (epoch, step, train_loss, val_loss)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            self.rows.append(
                (trainer.current_epoch, trainer.global_step - 1, float(loss.detach()), None)
            )

        def on_train_epoch_end(self, trainer, pl_module):
            # Lightning 2 validates inside the epoch loop's last advance, before this hook,
            # and has reduced the epoch's val_loss into callback_metrics by now.
            value = trainer.callback_metrics.get("val_loss")
            if value is not None:
                self.rows.append(
                    (trainer.current_epoch, trainer.global_step - 1, None, float(value))
                )

    return Recorder


def build(model_kind, seed, work_dir, name, callbacks, logs=False):
    from darts.models import RNNModel

    return RNNModel(
        model=model_kind,
        hidden_dim=20,
        dropout=0,
        batch_size=16,
        n_epochs=EPOCHS,
        optimizer_kwargs={"lr": 1e-3},
        model_name=name,
        work_dir=str(work_dir),
        log_tensorboard=logs,
        save_checkpoints=logs,
        random_state=seed,
        training_length=20,
        input_chunk_length=14,
        force_reset=True,
        pl_trainer_kwargs={
            "accelerator": "cpu",
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": callbacks,
        },
    )


def fmt(x):
    return "%.9g" % x


def run_one(model_kind, seed, data, work_dir):
    from darts.metrics import mape

    series, train, val, train_s, val_s, scaler = data
    Recorder = make_recorder()
    rec = Recorder()
    model = build(model_kind, seed, work_dir, "fx_%s_%d" % (model_kind, seed), [rec])
    model.fit(train_s, val_series=val_s)
    pred = scaler.inverse_transform(model.predict(FORECAST_N))

    rows = []
    for epoch, step, train_loss, val_loss in rec.rows:
        if val_loss is not None:
            val_loss = float(val_loss)
        rows.append((epoch, step, train_loss, val_loss))
    name = "darts_%s_%d" % (model_kind.lower(), seed)
    with open(FIXTURES / (name + "_metrics.csv"), "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rows:
            f.write(
                "%d,%d,%s,%s\n"
                % (
                    epoch,
                    step,
                    "" if train_loss is None else fmt(train_loss),
                    "" if val_loss is None else fmt(val_loss),
                )
            )
    values = pred.values()[:, 0]
    with open(FIXTURES / (name + "_forecast.csv"), "w") as f:
        f.write("Month,#Passengers\n")
        for t, v in zip(pred.time_index, values):
            f.write("%s,%s\n" % (t.strftime("%Y-%m"), fmt(float(v))))

    steps = [r for r in rows if r[2] is not None]
    vals = [r for r in rows if r[3] is not None]
    last_epoch = steps[-1][0]
    last = [r[2] for r in steps if r[0] == last_epoch]
    return {
        "first": steps[0][2],
        "last_step": steps[-1][2],
        "epoch_mean": sum(last) / len(last),
        "val": vals[-1][3],
        "mape": float(mape(val, pred)),
        "steps": len(steps),
        "epochs": len(vals),
    }


def keep_logs(data, out):
    series, train, val, train_s, val_s, scaler = data
    model = build("RNN", 42, out, "Air_RNN", [], logs=True)
    model.fit(train_s, val_series=val_s)
    model.predict(FORECAST_N)
    model.save(str(Path(out) / "Air_RNN.pt"))
    shutil.copyfile(Path(out) / "Air_RNN" / "logs" / "hparams.yaml",
                    FIXTURES / "darts_hparams.yaml")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="e.g. RNN:42 (one run; the README is not rewritten)")
    ap.add_argument("--logs", help="also keep one logged RNN 42 run in this folder")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    import darts
    import pytorch_lightning

    data = load_data()
    runs = [(m, s) for m in MODELS for s in SEEDS]
    if args.only:
        m, s = args.only.split(":")
        runs = [(m, int(s))]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for m, s in runs:
            r = run_one(m, s, data, tmp)
            results[(m, s)] = r
            print(
                "%s %d: first step %s, last epoch mean %.8g, val %.8g, MAPE %.4f %% "
                "(%d steps, %d epochs)"
                % (m, s, fmt(r["first"]), r["epoch_mean"], r["val"], r["mape"], r["steps"],
                   r["epochs"]),
                flush=True,
            )
    if args.logs:
        keep_logs(data, args.logs)
    if args.only:
        return

    lines = [
        "# Real Darts fixtures (`darts_<model>_<seed>_*`)",
        "",
        "Written by `scripts/gen-darts-fixtures.py` (see its docstring for what it runs) with "
        "darts %s, pytorch-lightning %s, torch %s, numpy %s, Python %s, CPU, one thread."
        % (darts.__version__, pytorch_lightning.__version__, torch.__version__, np.__version__,
           sys.version.split()[0]),
        "",
        "| model | seed | first step train_loss | last step | last epoch mean train_loss "
        "| last val_loss | MAPE % (23 months) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (m, s), r in results.items():
        lines.append(
            "| %s | %d | %s | %s | %.9g | %.9g | %.4f |"
            % (m, s, fmt(r["first"]), fmt(r["last_step"]), r["epoch_mean"], r["val"], r["mape"])
        )
    (FIXTURES / "darts-fixtures.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
