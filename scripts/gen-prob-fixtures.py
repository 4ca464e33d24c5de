#!/usr/bin/env python3
"""Record real Darts' probabilistic RNNModel runs and PyTorch's CPU samplers as fixtures for
tsrnn's likelihood, sampling and dropout tests (tests/test_prob.c).

Needs the Darts virtual environment of CONTRIBUTING.md, outside the source tree (the tests
do not), with the AirPassengers data set where Darts loads it offline:

    python3 -m venv /tmp/venv-darts && /tmp/venv-darts/bin/pip install "darts==0.48.1" \\
        "pytorch-lightning==2.6.*" tensorboard safetensors
    mkdir -p ~/.darts/datasets && cp examples/data/air_passengers.csv ~/.darts/datasets/
    /tmp/venv-darts/bin/python scripts/gen-prob-fixtures.py [--only PART ...]

CPU, torch.set_num_threads(1). Every run trains exactly as a Darts user would (no
seed_everything, Lightning's defaults); a callback reads the losses (it draws no random
number). It writes under tests/fixtures/ (prob-fixtures.md lists versions and figures):

* dropout: prob_dropout_metrics.csv -- RNNModel(model="LSTM", n_rnn_layers=2,
  dropout=0.2) on the example's data and settings (random_state 42, shuffled,
  validated every epoch): every step's train_loss and every epoch's val_loss in tsrnn's
  metrics.csv layout, floats %.9g. The masks come from PyTorch's global generator inside
  each step, so these numbers hold tsrnn to PyTorch's draws and to the shuffles after them.
"""

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
PARTS = ("dropout",)
DROPOUT_EPOCHS = 60


def gen_darts():
    """scripts/gen-darts-fixtures.py as a module: its data loading and step recorder."""
    spec = importlib.util.spec_from_file_location("gen_darts", ROOT / "scripts" / "gen-darts-fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_metrics(path, rows):
    with open(path, "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step, "" if train_loss is None else "%.9g" % train_loss,
                                       "" if val_loss is None else "%.9g" % val_loss))


def air_model(gd, callbacks, work_dir, **overrides):
    """The example's RNNModel (examples/air_passengers.ini) with `overrides`."""
    from darts.models import RNNModel

    kw = dict(model="RNN", hidden_dim=20, dropout=0, batch_size=16, n_epochs=300,
              optimizer_kwargs={"lr": 1e-3}, model_name="prob", work_dir=str(work_dir),
              random_state=42, training_length=20, input_chunk_length=14, force_reset=True,
              pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                                 "enable_model_summary": False, "callbacks": callbacks})
    kw.update(overrides)
    return RNNModel(**kw)


def part_dropout(gd, summary):
    _, _, _, train_s, val_s, _ = gd.load_data()
    rec = gd.make_recorder()()
    with tempfile.TemporaryDirectory() as work_dir:
        model = air_model(gd, [rec], work_dir, model="LSTM", n_rnn_layers=2, dropout=0.2,
                          n_epochs=DROPOUT_EPOCHS)
        model.fit(train_s, val_series=val_s)
    write_metrics(FIXTURES / "prob_dropout_metrics.csv", rec.rows)
    steps = [r for r in rec.rows if r[2] is not None]
    vals = [r for r in rec.rows if r[3] is not None]
    summary.append(f"| dropout | LSTM, 2 layers, dropout 0.2, {DROPOUT_EPOCHS} epochs | "
                   f"{len(steps)} | {steps[0][2]:.9g} | {steps[-1][2]:.9g} | {vals[-1][3]:.9g} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=PARTS, help="write these parts only")
    args = ap.parse_args()
    import darts
    import pytorch_lightning
    import torch

    torch.set_num_threads(1)
    gd = gen_darts()
    summary = []
    for part in args.only or PARTS:
        globals()["part_" + part](gd, summary)
    text = f"""# Probabilistic fixtures (`prob_*`)

Written by `scripts/gen-prob-fixtures.py` (its docstring says what each file holds) with darts
{darts.__version__}, pytorch-lightning {pytorch_lightning.__version__}, torch {torch.__version__},
numpy {np.__version__}, Python {sys.version.split()[0]}, CPU, one thread.

| part | run | steps | first train_loss | last train_loss | last val_loss |
|---|---|---|---|---|---|
""" + "\n".join(summary) + "\n"
    (FIXTURES / "prob-fixtures.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
