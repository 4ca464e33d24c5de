#!/usr/bin/env python3
"""Generate the PyTorch fixtures of tsrnn's training controls: AdamW, SGD with momentum,
L1Loss, ExponentialLR, StepLR, ReduceLROnPlateau, CosineAnnealingLR, OneCycleLR,
CosineAnnealingWarmRestarts, LinearLR, gradient clipping by norm and Lightning's
EarlyStopping; Adam's and SGD's L2 weight_decay, SGD with Nesterov momentum, RMSprop (plain;
centered with momentum; its momentum cycled by OneCycleLR), Adagrad, HuberLoss and
SmoothL1Loss; each on the whole-run AirPassengers configuration of scripts/gen-fixtures.py
(RNN, hidden 20, batch 16, training_length 20, shuffle off, the initial weights of
tests/fixtures/air_rnn_init.safetensors).

The schedulers step as Lightning steps Darts' (training_epoch_loop.py,
_update_learning_rates): interval "epoch" (Darts' default) after each epoch, interval "step"
after each optimizer step, each when (epoch + 1) or (batch_idx + 1) is a multiple of the
frequency. --darts-check runs each scheduler case through real Darts (RNNModel.fit with that
lr_scheduler_cls / lr_scheduler_kwargs) and checks that the learning rate (and Adam's beta1 or
SGD's momentum) of every optimizer step is the one this loop uses, bit for bit.
--darts-runs records whole runs of real Darts (the example's model, shuffled, as
scripts/gen-darts-fixtures.py) with the newer optimizers and losses and EarlyStopping on a
torchmetrics metric of torch_metrics (DARTS_RUNS below).

Needs torch and pytorch_lightning (the real classes are used: torch.optim.AdamW / SGD,
torch.optim.lr_scheduler.*, torch.nn.utils.clip_grad_norm_, and Lightning's
EarlyStopping._evaluate_stopping_criteria), e.g. the Darts virtual environment of
CONTRIBUTING.md:

    /tmp/venv-darts/bin/python scripts/gen-controls-fixtures.py

It writes, under tests/fixtures/:

* ctl_<case>_metrics.csv -- epoch, step, train_loss, val_loss of every step and epoch, as
  tsrnn's metrics.csv;
* ctl_<case>_lr.csv -- epoch, the learning rate that epoch's first step trained with;
* controls-fixtures.md -- each case's settings (as tsrnn --set values) and figures;
* darts_hparams_controls.yaml -- with --darts-hparams only (needs Darts and the AirPassengers
  CSV at ~/.darts/datasets/, as scripts/gen-darts-fixtures.py): the logs/hparams.yaml real
  Darts writes for an RNNModel with SGD(momentum), StepLR, L1Loss and gradient clipping
  (and darts_hparams_<optimizer>.yaml for RMSprop, Adagrad and SGD's nesterov);
* darts_ctl_<run>_metrics.csv, darts_ctl_<run>_metric.csv, darts-controls-fixtures.md -- with
  --darts-runs only (Darts, as above): every step's train_loss and every epoch's val_loss of
  real Darts, and every epoch's monitored torchmetrics value (epoch,step,<name>).

Single-threaded float32, deterministic: running it twice gives the same files.
"""

import csv
import importlib.util
from pathlib import Path

import numpy as np
import torch
from torch import nn

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

_spec = importlib.util.spec_from_file_location("gen_fixtures", ROOT / "scripts" / "gen-fixtures.py")
gf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gf)

# Each case: tsrnn's --set values, and the same run in PyTorch terms.
CASES = {
    "adamw": dict(epochs=40, lr=3e-3, optimizer=("AdamW", {"weight_decay": 0.05}),
                  sets=["training.optimizer_cls=AdamW", "training.weight_decay=0.05"]),
    "sgd": dict(epochs=40, lr=0.05, optimizer=("SGD", {"momentum": 0.9}),
                sets=["training.optimizer_cls=SGD", "training.momentum=0.9"]),
    "explr": dict(epochs=40, lr=5e-3, scheduler=("ExponentialLR", {"gamma": 0.9}),
                  sets=["training.lr_scheduler_cls=ExponentialLR", "lr_scheduler_kwargs.gamma=0.9"]),
    "steplr": dict(epochs=40, lr=5e-3, scheduler=("StepLR", {"step_size": 7, "gamma": 0.5}),
                   sets=["training.lr_scheduler_cls=StepLR", "lr_scheduler_kwargs.step_size=7",
                         "lr_scheduler_kwargs.gamma=0.5"]),
    "plateau": dict(epochs=60, lr=2e-2,
                    scheduler=("ReduceLROnPlateau", {"patience": 2, "factor": 0.5,
                                                     "threshold": 0.01, "cooldown": 1}),
                    sets=["training.lr_scheduler_cls=ReduceLROnPlateau",
                          "lr_scheduler_kwargs.patience=2", "lr_scheduler_kwargs.factor=0.5",
                          "lr_scheduler_kwargs.threshold=0.01", "lr_scheduler_kwargs.cooldown=1"]),
    "clip": dict(epochs=40, lr=0.003, clip=0.3, sets=["trainer.gradient_clip_val=0.3"]),
    "early": dict(epochs=300, lr=2e-2, early=dict(patience=4, min_delta=1e-4),
                  sets=["early_stopping.monitor=val_loss", "early_stopping.patience=4",
                        "early_stopping.min_delta=0.0001"]),
    "l1": dict(epochs=40, lr=5e-3, loss="L1Loss", sets=["training.loss_fn=L1Loss"]),
    # Past T_max the recursive form climbs back: epochs 11 and 31 take its restart branch.
    "cosine": dict(epochs=40, lr=5e-3, scheduler=("CosineAnnealingLR", {"T_max": 10,
                                                                       "eta_min": 1e-4}),
                   sets=["training.lr_scheduler_cls=CosineAnnealingLR",
                         "lr_scheduler_kwargs.T_max=10", "lr_scheduler_kwargs.eta_min=0.0001"]),
    # Per step, every third batch of each epoch (Lightning counts batch_idx + 1 per epoch).
    "cosine_step": dict(epochs=40, lr=5e-3, interval="step", frequency=3,
                        scheduler=("CosineAnnealingLR", {"T_max": 25}),
                        sets=["training.lr_scheduler_cls=CosineAnnealingLR",
                              "lr_scheduler_kwargs.T_max=25", "lr_scheduler_kwargs.interval=step",
                              "lr_scheduler_kwargs.frequency=3"]),
    "warm": dict(epochs=40, lr=5e-3,
                 scheduler=("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2,
                                                            "eta_min": 1e-4}),
                 sets=["training.lr_scheduler_cls=CosineAnnealingWarmRestarts",
                       "lr_scheduler_kwargs.T_0=3", "lr_scheduler_kwargs.T_mult=2",
                       "lr_scheduler_kwargs.eta_min=0.0001"]),
    "linear": dict(epochs=40, lr=5e-3,
                   scheduler=("LinearLR", {"start_factor": 0.25, "total_iters": 12}),
                   sets=["training.lr_scheduler_cls=LinearLR",
                         "lr_scheduler_kwargs.start_factor=0.25",
                         "lr_scheduler_kwargs.total_iters=12"]),
    # OneCycleLR per optimizer step, as it is meant: Adam's beta1 cycles with it.
    "onecycle": dict(epochs=40, lr=1e-3, interval="step",
                     scheduler=("OneCycleLR", {"max_lr": 0.01, "total_steps": 280}),
                     sets=["training.lr_scheduler_cls=OneCycleLR", "lr_scheduler_kwargs.max_lr=0.01",
                           "lr_scheduler_kwargs.total_steps=280",
                           "lr_scheduler_kwargs.interval=step"]),
    # ... and with Darts' default interval "epoch": three phases, linear, SGD's momentum cycles.
    # Adam's L2 penalty (not AdamW's decay) with a larger eps
    "adam_l2": dict(epochs=40, lr=5e-3, optimizer=("Adam", {"weight_decay": 0.01, "eps": 1e-6}),
                    sets=["training.weight_decay=0.01", "training.eps=1e-6"]),
    "sgd_nesterov": dict(epochs=40, lr=0.05,
                         optimizer=("SGD", {"momentum": 0.9, "nesterov": True,
                                            "weight_decay": 1e-3}),
                         sets=["training.optimizer_cls=SGD", "training.momentum=0.9",
                               "training.nesterov=true", "training.weight_decay=0.001"]),
    "rmsprop": dict(epochs=40, lr=1e-3, optimizer=("RMSprop", {}),
                    sets=["training.optimizer_cls=RMSprop"]),
    # every option: centered (grad_avg), momentum, alpha, eps, weight_decay
    "rmsprop_centered": dict(epochs=40, lr=1e-3,
                             optimizer=("RMSprop", {"alpha": 0.9, "eps": 1e-6, "momentum": 0.5,
                                                    "centered": True, "weight_decay": 1e-3}),
                             sets=["training.optimizer_cls=RMSprop", "training.alpha=0.9",
                                   "training.eps=1e-6", "training.momentum=0.5",
                                   "training.centered=true", "training.weight_decay=0.001"]),
    # alpha < 0.5: the lerp of grad_avg takes ATen's other branch
    "rmsprop_low_alpha": dict(epochs=20, lr=1e-3,
                              optimizer=("RMSprop", {"alpha": 0.3, "centered": True}),
                              sets=["training.optimizer_cls=RMSprop", "training.alpha=0.3",
                                    "training.centered=true"]),
    "adagrad": dict(epochs=40, lr=0.05,
                    optimizer=("Adagrad", {"lr_decay": 0.01, "initial_accumulator_value": 0.1,
                                           "weight_decay": 1e-4}),
                    sets=["training.optimizer_cls=Adagrad", "training.lr_decay=0.01",
                          "training.initial_accumulator_value=0.1",
                          "training.weight_decay=0.0001"]),
    # (lr 3e-3: at 5e-3 float32 PyTorch itself drifts 2e-5 from float64 by the last epochs)
    "huber": dict(epochs=40, lr=3e-3, loss="HuberLoss", loss_kwargs={"delta": 0.1},
                  sets=["training.loss_fn=HuberLoss", "training.delta=0.1"]),
    "smooth_l1": dict(epochs=40, lr=3e-3, loss="SmoothL1Loss", loss_kwargs={"beta": 0.2},
                      sets=["training.loss_fn=SmoothL1Loss", "training.beta=0.2"]),
    # RMSprop's momentum cycled by OneCycleLR (PyTorch sets `momentum` where there are no
    # betas); max_lr 2e-3: at 5e-3 the run is chaotic, float32 PyTorch 1e-2 off float64's
    "rmsprop_onecycle": dict(epochs=40, lr=1e-3, optimizer=("RMSprop", {"momentum": 0.9}),
                             interval="step",
                             scheduler=("OneCycleLR", {"max_lr": 0.002, "total_steps": 280}),
                             sets=["training.optimizer_cls=RMSprop", "training.momentum=0.9",
                                   "training.lr_scheduler_cls=OneCycleLR",
                                   "lr_scheduler_kwargs.max_lr=0.002",
                                   "lr_scheduler_kwargs.total_steps=280",
                                   "lr_scheduler_kwargs.interval=step"]),
    "onecycle_epoch": dict(epochs=40, lr=0.05, optimizer=("SGD", {"momentum": 0.9}),
                           scheduler=("OneCycleLR", {"max_lr": 0.1, "epochs": 40,
                                                     "steps_per_epoch": 1, "three_phase": True,
                                                     "anneal_strategy": "linear"}),
                           sets=["training.optimizer_cls=SGD", "training.momentum=0.9",
                                 "training.lr_scheduler_cls=OneCycleLR",
                                 "lr_scheduler_kwargs.max_lr=0.1", "lr_scheduler_kwargs.epochs=40",
                                 "lr_scheduler_kwargs.steps_per_epoch=1",
                                 "lr_scheduler_kwargs.three_phase=true",
                                 "lr_scheduler_kwargs.anneal_strategy=linear"]),
}

# The scheduler cases --darts-check runs through real Darts.
SCHEDULER_CASES = ("cosine", "cosine_step", "warm", "linear", "onecycle", "onecycle_epoch")

# --darts-runs: whole runs of real Darts, the example's model (examples/air_passengers.ini:
# hidden 20, batch 16, training_length 20, shuffled, validated every epoch) with the newer
# optimizers, losses and EarlyStopping on a torchmetrics metric; tsrnn's settings beside them.
DARTS_RUNS = {
    "rmsprop_huber_mae": dict(
        model="RNN", seed=0, epochs=60, optimizer=("RMSprop", {
            "lr": 1e-3, "alpha": 0.9, "eps": 1e-7, "momentum": 0.5, "centered": True,
            "weight_decay": 1e-4}),
        loss=("HuberLoss", {"delta": 0.05}), metric="MeanAbsoluteError",
        early=dict(patience=3, min_delta=1e-4),
        sets=["model.model=RNN", "training.random_state=0", "training.n_epochs=60",
              "training.optimizer_cls=RMSprop", "training.lr=0.001", "training.alpha=0.9",
              "training.eps=1e-7", "training.momentum=0.5", "training.centered=true",
              "training.weight_decay=0.0001", "training.loss_fn=HuberLoss",
              "training.delta=0.05", "early_stopping.monitor=val_MeanAbsoluteError",
              "early_stopping.patience=3", "early_stopping.min_delta=0.0001"]),
    "adagrad_smoothl1_mse": dict(
        model="LSTM", seed=1, epochs=60, optimizer=("Adagrad", {
            "lr": 0.02, "lr_decay": 0.01, "initial_accumulator_value": 0.1,
            "weight_decay": 1e-4, "eps": 1e-9}),
        loss=("SmoothL1Loss", {"beta": 0.1}), metric="MeanSquaredError",
        early=dict(patience=3),
        sets=["model.model=LSTM", "training.random_state=1", "training.n_epochs=60",
              "training.optimizer_cls=Adagrad", "training.lr=0.02", "training.lr_decay=0.01",
              "training.initial_accumulator_value=0.1", "training.weight_decay=0.0001",
              "training.eps=1e-9", "training.loss_fn=SmoothL1Loss", "training.beta=0.1",
              "early_stopping.monitor=val_MeanSquaredError", "early_stopping.patience=3"]),
    "sgd_nesterov": dict(
        model="GRU", seed=42, epochs=20, optimizer=("SGD", {
            "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
        sets=["model.model=GRU", "training.random_state=42", "training.n_epochs=20",
              "training.optimizer_cls=SGD", "training.lr=0.05", "training.momentum=0.9",
              "training.nesterov=true", "training.weight_decay=0.001"]),
    "adam_l2": dict(
        model="RNN", seed=42, epochs=20, optimizer=("Adam", {
            "lr": 3e-3, "weight_decay": 1e-3, "eps": 1e-6}),
        sets=["model.model=RNN", "training.random_state=42", "training.n_epochs=20",
              "training.lr=0.003", "training.weight_decay=0.001", "training.eps=1e-6"]),
}


def build_model():
    model = gf.RNNModule("RNN", 1, gf.AIR_HIDDEN, 1)
    tensors, _ = gf.read_safetensors(FIXTURES / "air_rnn_init.safetensors")
    model.load_state_dict(tensors, strict=True)
    return model


def make_optimizer(model, lr, spec):
    name, kwargs = spec or ("Adam", {})
    cls = getattr(torch.optim, name)
    return cls(model.parameters(), lr=lr, foreach=False, **kwargs)


def evaluate(model, inputs, targets, loss_fn):
    """Lightning's epoch val_loss: batch-size-weighted mean of the batch losses."""
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in gf.batches(inputs, targets, gf.AIR_BATCH):
            total += loss_fn(model(x)[0], y).item() * len(x)
            count += len(x)
    return total / count


def run_case(name, case, months, values):
    n_train = months.index(gf.AIR_SPLIT_AFTER) + 1
    scale, min_ = gf.fit_min_max(values[:n_train])
    scaled = values * scale + min_
    train_x, train_y = gf.shifted_windows(scaled[:n_train], gf.AIR_TRAINING_LENGTH)
    val_x, val_y = gf.shifted_windows(scaled[n_train:], gf.AIR_TRAINING_LENGTH)

    model = build_model()
    loss_fn = getattr(nn, case.get("loss", "MSELoss"))(**case.get("loss_kwargs", {}))
    optimizer = make_optimizer(model, case["lr"], case.get("optimizer"))
    scheduler = None
    if "scheduler" in case:
        sname, skw = case["scheduler"]
        scheduler = getattr(torch.optim.lr_scheduler, sname)(optimizer, **skw)
    early = None
    if "early" in case:
        from pytorch_lightning.callbacks import EarlyStopping
        early = EarlyStopping(monitor="val_loss", mode="min", **case["early"])

    rows = [("epoch", "step", "train_loss", "val_loss")]
    lrs = [("epoch", "lr")]
    step, clipped, stop_reason = 0, 0, ""
    interval, frequency = case.get("interval", "epoch"), case.get("frequency", 1)
    step_rates = []  # (lr, beta1 or momentum) of every optimizer step
    for epoch in range(case["epochs"]):
        lrs.append((epoch, repr(optimizer.param_groups[0]["lr"])))
        for batch_idx, (x, y) in enumerate(gf.batches(train_x, train_y, gf.AIR_BATCH)):
            step_rates.append(optimizer_rates(optimizer))
            optimizer.zero_grad()
            out, _ = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            if "clip" in case:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), case["clip"])
                clipped += int(norm > case["clip"])
            optimizer.step()
            rows.append((epoch, step, f"{loss.item():.9g}", ""))
            step += 1
            if scheduler is not None and interval == "step" and (batch_idx + 1) % frequency == 0:
                scheduler.step()
        val_loss = evaluate(model, val_x, val_y, loss_fn)
        rows.append((epoch, step - 1, "", f"{val_loss:.9g}"))
        current = torch.tensor(val_loss, dtype=torch.float32)  # Lightning's logged value
        stop = False
        if early is not None:
            stop, stop_reason = early._evaluate_stopping_criteria(current)
        if scheduler is not None and interval == "epoch" and (epoch + 1) % frequency == 0:
            if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                scheduler.step(current)
            else:
                scheduler.step()
        if stop:
            break
    with open(FIXTURES / f"ctl_{name}_metrics.csv", "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    with open(FIXTURES / f"ctl_{name}_lr.csv", "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(lrs)
    distinct = len({r[1] for r in lrs[1:]})
    summary = (f"| {name} | `{' '.join(case['sets'])}` | {case['lr']} | {epoch + 1} | {step} | "
               f"{rows[1][2]} | {rows[-2][2]} | {val_loss:.6g} | {distinct} |"
               + (f" {clipped} of {step} steps clipped |" if "clip" in case else "")
               + (f" {stop_reason} |" if stop_reason else ""))
    print(summary)
    return summary, step_rates


def optimizer_rates(optimizer):
    """The learning rate and the momentum (Adam's beta1, SGD's and RMSprop's momentum; Adagrad
    has none) of the next step."""
    group = optimizer.param_groups[0]
    return (group["lr"], group["betas"][0] if "betas" in group else group.get("momentum"))


def darts_check(name, case, expected):
    """Real Darts with the case's scheduler: the rates of every optimizer step, recorded by a
    callback, must be the loop's (the data's order does not move them)."""
    import tempfile

    import pytorch_lightning as pl
    from darts.dataprocessing.transformers import Scaler
    from darts.datasets import AirPassengersDataset
    from darts.models import RNNModel

    class Rates(pl.Callback):
        def __init__(self):
            self.rates = []

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self.rates.append(optimizer_rates(trainer.optimizers[0]))

    series = AirPassengersDataset().load().astype("float32")
    train, val = series.split_after(series.time_index[120])
    scaler = Scaler()
    train, val = scaler.fit_transform(train), scaler.transform(val)
    sname, skw = case["scheduler"]
    kwargs = dict(skw)
    if "interval" in case:
        kwargs["interval"] = case["interval"]
    if "frequency" in case:
        kwargs["frequency"] = case["frequency"]
    oname, okw = case.get("optimizer") or ("Adam", {})
    rec = Rates()
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            model="RNN", hidden_dim=20, dropout=0, input_chunk_length=14, training_length=20,
            n_epochs=case["epochs"], batch_size=16, optimizer_cls=getattr(torch.optim, oname),
            optimizer_kwargs=dict({"lr": case["lr"]}, **okw),
            lr_scheduler_cls=getattr(torch.optim.lr_scheduler, sname), lr_scheduler_kwargs=kwargs,
            model_name=name, work_dir=work_dir, random_state=0,
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "enable_model_summary": False, "logger": False,
                               "callbacks": [rec]})
        model.fit(train, val_series=val)
    same = rec.rates == expected
    line = (f"| {name} | {sname} {kwargs} | {len(rec.rates)} steps | "
            f"{'identical' if same else 'DIFFERENT'} |")
    print(line, flush=True)
    if not same:
        for i, (a, b) in enumerate(zip(rec.rates, expected)):
            if a != b:
                raise SystemExit(f"{name}: step {i}: Darts {a}, this loop {b}")
        raise SystemExit(f"{name}: Darts took {len(rec.rates)} steps, this loop {len(expected)}")
    return line


def darts_run(name, run):
    """One real Darts fit of the example's model with the run's optimizer, loss and
    EarlyStopping on a torchmetrics metric: every step's train_loss, every epoch's val_loss
    and monitored metric, as Lightning's callback metrics hold them."""
    import tempfile

    import pandas as pd
    import pytorch_lightning as pl
    import torchmetrics
    from darts.dataprocessing.transformers import Scaler
    from darts.datasets import AirPassengersDataset
    from darts.models import RNNModel
    from pytorch_lightning.callbacks import EarlyStopping

    monitor = "val_" + run["metric"] if "metric" in run else None

    class Recorder(pl.Callback):
        def __init__(self):
            self.rows, self.metric = [], []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            self.rows.append((trainer.current_epoch, trainer.global_step - 1,
                              float(loss.detach()), None))

        def on_train_epoch_end(self, trainer, pl_module):
            m = trainer.callback_metrics
            self.rows.append((trainer.current_epoch, trainer.global_step - 1, None,
                              float(m["val_loss"])))
            if monitor is not None:
                self.metric.append((trainer.current_epoch, trainer.global_step - 1,
                                    float(m[monitor])))

    series = AirPassengersDataset().load().astype("float32")
    train, val = series.split_after(pd.Timestamp("19590101"))
    scaler = Scaler()
    train_s, val_s = scaler.fit_transform(train), scaler.transform(val)
    rec = Recorder()
    callbacks = [rec]
    if monitor is not None:
        callbacks.append(EarlyStopping(monitor=monitor, mode="min", **run["early"]))
    oname, okw = run["optimizer"]
    lname, lkw = run.get("loss", ("MSELoss", {}))
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            model=run["model"], hidden_dim=20, dropout=0, batch_size=16, n_epochs=run["epochs"],
            training_length=20, input_chunk_length=14, random_state=run["seed"],
            optimizer_cls=getattr(torch.optim, oname), optimizer_kwargs=okw,
            loss_fn=getattr(nn, lname)(**lkw),
            torch_metrics=getattr(torchmetrics, run["metric"])() if monitor else None,
            model_name=name, work_dir=work_dir, force_reset=True,
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "enable_model_summary": False, "logger": False,
                               "callbacks": callbacks})
        model.fit(train_s, val_series=val_s)
    with open(FIXTURES / f"darts_ctl_{name}_metrics.csv", "w", newline="") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, tl, vl in rec.rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step, "" if tl is None else "%.9g" % tl,
                                        "" if vl is None else "%.9g" % vl))
    if monitor is not None:
        with open(FIXTURES / f"darts_ctl_{name}_metric.csv", "w", newline="") as f:
            f.write("epoch,step,%s\n" % monitor)
            for epoch, step, value in rec.metric:
                f.write("%d,%d,%.9g\n" % (epoch, step, value))
    steps = [r for r in rec.rows if r[2] is not None]
    vals = [r for r in rec.rows if r[3] is not None]
    line = (f"| {name} | `{' '.join(run['sets'])}` | {len(vals)} of {run['epochs']} | "
            f"{len(steps)} | {steps[0][2]:.9g} | {steps[-1][2]:.9g} | {vals[-1][3]:.6g} | "
            + (f"{monitor} {rec.metric[-1][2]:.6g} |" if monitor else "|"))
    print(line, flush=True)
    return line


def darts_runs():
    import darts
    import pytorch_lightning
    import torchmetrics

    lines = [darts_run(name, run) for name, run in DARTS_RUNS.items()]
    (FIXTURES / "darts-controls-fixtures.md").write_text(f"""# Real Darts runs with the newer controls (`darts_ctl_*`)

Generated by `scripts/gen-controls-fixtures.py --darts-runs` with darts {darts.__version__},
pytorch_lightning {pytorch_lightning.__version__}, torchmetrics {torchmetrics.__version__} and
torch {torch.__version__}, single-threaded: Darts' `RNNModel.fit(train, val_series=val)` of
the example's model (hidden 20, batch 16, training_length 20, input_chunk_length 14,
shuffled; AirPassengers scaled by `Scaler()` fitted up to 1959-01) with the optimizer, loss,
`torch_metrics` and `EarlyStopping` below. tsrnn runs `examples/air_passengers.ini` with the
settings. `darts_ctl_<run>_metrics.csv` holds every step's train_loss and every epoch's
val_loss, `darts_ctl_<run>_metric.csv` every epoch's monitored metric (Lightning's callback
metrics).

| run | tsrnn settings | epochs | steps | first train_loss | last train_loss | last val_loss | metric |
|---|---|---|---|---|---|---|---|
""" + "\n".join(lines) + "\n")


def darts_hparams():
    """One epoch of real Darts with the controls on; copies its hparams.yaml."""
    import tempfile

    from darts.dataprocessing.transformers import Scaler
    from darts.datasets import AirPassengersDataset
    from darts.models import RNNModel

    series = Scaler().fit_transform(AirPassengersDataset().load().astype("float32"))
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            model="RNN", hidden_dim=20, dropout=0, input_chunk_length=14, training_length=20,
            n_epochs=1, batch_size=16, optimizer_cls=torch.optim.SGD,
            optimizer_kwargs={"lr": 0.05, "momentum": 0.9},
            lr_scheduler_cls=torch.optim.lr_scheduler.StepLR,
            lr_scheduler_kwargs={"step_size": 7, "gamma": 0.5}, loss_fn=torch.nn.L1Loss(),
            log_tensorboard=True, model_name="h", work_dir=work_dir, force_reset=True,
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "gradient_clip_val": 0.3})
        model.fit(series)
        found = list(Path(work_dir).rglob("hparams.yaml"))
        (FIXTURES / "darts_hparams_controls.yaml").write_text(found[0].read_text())
    # The new schedulers' kwargs as PyYAML writes them: ints, floats ("1.0e-05"), a bool and
    # Lightning's interval, which Darts keeps among the kwargs.
    for name, cls, kwargs in (
            ("onecycle", torch.optim.lr_scheduler.OneCycleLR,
             {"max_lr": 0.01, "total_steps": 8, "interval": "step", "pct_start": 0.25,
              "three_phase": True}),
            ("cosine", torch.optim.lr_scheduler.CosineAnnealingLR,
             {"T_max": 10, "eta_min": 1e-05})):
        with tempfile.TemporaryDirectory() as work_dir:
            model = RNNModel(
                model="RNN", hidden_dim=20, dropout=0, input_chunk_length=14, training_length=20,
                n_epochs=1, batch_size=16, optimizer_kwargs={"lr": 1e-3}, lr_scheduler_cls=cls,
                lr_scheduler_kwargs=kwargs, log_tensorboard=True, model_name="h",
                work_dir=work_dir, force_reset=True,
                pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False})
            model.fit(series)
            found = list(Path(work_dir).rglob("hparams.yaml"))
            (FIXTURES / f"darts_hparams_{name}.yaml").write_text(found[0].read_text())
    # The newer optimizers' kwargs: floats, bools, PyYAML's exponents, the module paths.
    for name, cls, kwargs in (
            ("rmsprop", torch.optim.RMSprop,
             {"lr": 1e-3, "alpha": 0.9, "eps": 1e-07, "momentum": 0.5, "centered": True,
              "weight_decay": 1e-4}),
            ("adagrad", torch.optim.Adagrad,
             {"lr": 0.02, "lr_decay": 0.01, "initial_accumulator_value": 0.1, "eps": 1e-09}),
            ("nesterov", torch.optim.SGD,
             {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001})):
        with tempfile.TemporaryDirectory() as work_dir:
            model = RNNModel(
                model="RNN", hidden_dim=20, dropout=0, input_chunk_length=14, training_length=20,
                n_epochs=1, batch_size=16, optimizer_cls=cls, optimizer_kwargs=kwargs,
                log_tensorboard=True, model_name="h", work_dir=work_dir, force_reset=True,
                pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False})
            model.fit(series)
            found = list(Path(work_dir).rglob("hparams.yaml"))
            (FIXTURES / f"darts_hparams_{name}.yaml").write_text(found[0].read_text())


def main():
    import sys
    if "--darts-hparams" in sys.argv:
        darts_hparams()
        return
    if "--darts-runs" in sys.argv:
        darts_runs()
        return
    months, values = gf.load_air_passengers()
    if "--darts-check" in sys.argv:
        checked = [darts_check(name, CASES[name], run_case(name, CASES[name], months, values)[1])
                   for name in SCHEDULER_CASES]
        (FIXTURES / "controls-darts-check.md").write_text(
            "# Scheduler rates: real Darts against scripts/gen-controls-fixtures.py's loop\n\n"
            "`scripts/gen-controls-fixtures.py --darts-check`: real Darts' RNNModel.fit with each "
            "scheduler case's lr_scheduler_cls and lr_scheduler_kwargs (interval and frequency "
            "included), the learning rate and momentum of every optimizer step compared with "
            "the loop that writes `ctl_<case>_*`.\n\n| case | scheduler | steps | rates |\n"
            "|---|---|---|---|\n" + "\n".join(checked) + "\n")
        return
    lines = [run_case(name, case, months, values)[0] for name, case in CASES.items()]
    import pytorch_lightning
    text = f"""# Training-control fixtures (`ctl_*`)

Generated by `scripts/gen-controls-fixtures.py` with torch {torch.__version__} and
pytorch_lightning {pytorch_lightning.__version__}, single-threaded. Every case trains the
whole-run AirPassengers RNN of `air_rnn_*` (hidden 20, batch 16, training_length 20, no
shuffle, initial weights `air_rnn_init.safetensors`) with the controls below, as
`tsrnn-worker --set model.init_weights=... --set training.shuffle=false --set
training.lr=LR --set training.n_epochs=EPOCHS` plus the case's settings.
`ctl_<case>_metrics.csv` holds every step's train_loss and every epoch's val_loss;
`ctl_<case>_lr.csv` the learning rate each epoch trained with.

| case | tsrnn settings | lr | epochs run | steps | first train_loss | last train_loss | last val_loss | distinct lrs | notes |
|---|---|---|---|---|---|---|---|---|---|
""" + "\n".join(lines) + "\n"
    (FIXTURES / "controls-fixtures.md").write_text(text)


if __name__ == "__main__":
    main()
