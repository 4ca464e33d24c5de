#!/usr/bin/env python3
"""The second example (examples/tourism_monthly.ini) in real Darts: the reference numbers of
docs/benchmarks.md "Many series" and of docs/examples.md "Many series: the Tourism example".

    darts-tourism.py baseline [--csv OUT]    NaiveSeasonal(K=12) fitted on each series'
                                             training part, forecasting its 24 validation
                                             months: MAPE, MAE, RMSE per series and overall
    darts-tourism.py fit [--csv OUT]         the INI's global RNNModel, one process, fitted on
                                             all training parts with the validation parts as
                                             val_series and the INI's EarlyStopping; the same
                                             errors from the last epoch's weights (Darts'
                                             model.predict) and from the best checkpoint
                                             (load_from_checkpoint(best=True), tsrnn-predict's);
                                             --compare RUN/validation.csv: the worst relative
                                             difference of tsrnn's per-series errors (its
                                             end-of-run forecast, the last epoch's weights)
    darts-tourism.py speed --workers W --epochs E
                                             training speed: the same model without
                                             validation, E epochs on W CPU processes (W = 2:
                                             Lightning's ddp_spawn, Gloo); one JSON line with
                                             the samples per second of the training epochs

Needs Darts (the virtual environment of CONTRIBUTING.md, e.g. /work/venv-darts/bin/python)
and the data of scripts/fetch-tourism.sh. The model's settings are read from the INI
(--ini, default examples/tourism_monthly.ini), so both sides train the same model. Torch
runs on one thread per process, as tsrnn's workers do. "Overall" is the mean over the
series of each series' error (Darts' series_reduction=np.mean); a per-series CSV (--csv)
holds every series' errors. Each series is scored on its original scale, as tsrnn does.
"""

import argparse
import configparser
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from pytorch_lightning.callbacks import Callback

ROOT = Path(__file__).resolve().parent.parent
SEASON = 12  # monthly data


def load_ini(path):
    ini = configparser.ConfigParser(comment_prefixes=("#", ";"), interpolation=None)
    ini.optionxform = str  # keys keep their case
    with open(path) as f:
        ini.read_file(f)
    return ini


def load_series(ini, ini_path):
    """The INI's series as Darts reads them, split after [data] split_after."""
    import numpy as np
    import pandas as pd
    from darts import TimeSeries

    d = ini["data"]
    csv = Path(ini_path).parent / d["path"]
    if not csv.exists():
        sys.exit(f"darts-tourism: {csv} is missing: run scripts/fetch-tourism.sh first")
    df = pd.read_csv(csv)
    series = TimeSeries.from_group_dataframe(df, group_cols=d["id_col"], time_col=d["time_col"],
                                             value_cols=d["value_cols"])
    series = [s.astype(np.float32) for s in series]
    ids = [str(s.static_covariates.iloc[0, 0]) for s in series]
    split = int(d["split_after"])
    train, val = zip(*(s.split_after(split) for s in series))
    return ids, list(train), list(val)


def errors(actual, pred):
    """Per-series MAPE, MAE and RMSE (Darts' metrics), each a list over the series."""
    from darts.metrics import mae, mape, rmse

    return {"mape": mape(actual, pred), "mae": mae(actual, pred), "rmse": rmse(actual, pred)}


def print_errors(title, ids, errs):
    import numpy as np

    print(f"{title}: MAPE {np.mean(errs['mape']):.2f}%  MAE {np.mean(errs['mae']):.1f}  "
          f"RMSE {np.mean(errs['rmse']):.1f}  (mean over {len(ids)} series; median MAPE "
          f"{np.median(errs['mape']):.2f}%)")
    for i in range(min(3, len(ids))):
        print(f"  {ids[i]}: MAPE {errs['mape'][i]:.2f}%  MAE {errs['mae'][i]:.1f}  "
              f"RMSE {errs['rmse'][i]:.1f}")


def write_csv(path, ids, columns):
    """One row per series: id, then each named list's value."""
    tmp = f"{path}.part"
    with open(tmp, "w") as f:
        f.write("id," + ",".join(columns) + "\n")
        for i, sid in enumerate(ids):
            f.write(sid + "," + ",".join(f"{columns[c][i]:.6g}" for c in columns) + "\n")
    os.replace(tmp, path)


def rnn_model(ini, work_dir, n_epochs, checkpoints, callbacks, trainer_kwargs):
    from darts.models import RNNModel

    m, t = ini["model"], ini["training"]
    return RNNModel(
        model=m["model"], hidden_dim=int(m["hidden_dim"]), n_rnn_layers=int(m["n_rnn_layers"]),
        dropout=float(m["dropout"]), training_length=int(m["training_length"]),
        input_chunk_length=int(m["input_chunk_length"]), batch_size=int(t["batch_size"]),
        n_epochs=n_epochs, optimizer_kwargs={"lr": float(t["lr"])},
        random_state=int(t["random_state"]), model_name=ini["output"]["model_name"],
        work_dir=work_dir, save_checkpoints=checkpoints, force_reset=True,
        pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                           "enable_model_summary": False, "callbacks": callbacks,
                           **trainer_kwargs})


def cmd_baseline(args, ini):
    from darts.models import NaiveSeasonal

    ids, train, val = load_series(ini, args.ini)
    n = len(val[0])
    pred = [NaiveSeasonal(K=SEASON).fit(s).predict(n) for s in train]
    errs = errors(val, pred)
    print_errors(f"NaiveSeasonal(K={SEASON}), {n} months", ids, errs)
    if args.csv:
        write_csv(args.csv, ids, errs)


def cmd_fit(args, ini):
    import torch
    from darts.dataprocessing.transformers import Scaler
    from darts.models import RNNModel
    from pytorch_lightning.callbacks import EarlyStopping

    torch.set_num_threads(1)
    ids, train, val = load_series(ini, args.ini)
    scaler = Scaler()  # one MinMaxScaler per series, fitted on its training part
    train_s = scaler.fit_transform(train)
    val_s = scaler.transform(val)
    es = ini["early_stopping"]
    stop = EarlyStopping(es["monitor"], patience=int(es["patience"]),
                         min_delta=float(es["min_delta"]), mode=es["mode"], verbose=True)
    with tempfile.TemporaryDirectory() as work_dir:
        model = rnn_model(ini, work_dir, int(ini["training"]["n_epochs"]), True, [stop], {})
        start = time.perf_counter()
        model.fit(train_s, val_series=val_s)
        fit_s = time.perf_counter() - start
        epochs = model.epochs_trained
        n = len(val[0])
        last = scaler.inverse_transform(model.predict(n, series=train_s))
        best_model = RNNModel.load_from_checkpoint(ini["output"]["model_name"], work_dir,
                                                   best=True)
        best = scaler.inverse_transform(best_model.predict(n, series=train_s))
    print(f"Darts RNNModel fit: {epochs} epochs in {fit_s:.1f} s (validation included), "
          f"early stopping best val_loss {float(stop.best_score):.6g}")
    errs_last, errs_best = errors(val, last), errors(val, best)
    print_errors(f"global {ini['model']['model']}, last epoch's weights, {n} months", ids,
                 errs_last)
    print_errors(f"global {ini['model']['model']}, best checkpoint, {n} months", ids, errs_best)
    if args.compare:
        compare(args.compare, ids, errs_last)
    if args.csv:
        write_csv(args.csv, ids, {**{f"last_{k}": v for k, v in errs_last.items()},
                                  **{f"best_{k}": v for k, v in errs_best.items()}})


def compare(validation_csv, ids, errs):
    """The worst relative difference between tsrnn's validation.csv (id,steps,mape,mae,rmse;
    a last row without id holds the means) and Darts' per-series errors."""
    import csv

    with open(validation_csv) as f:
        rows = {r["id"]: r for r in csv.DictReader(f) if r["id"]}
    missing = sorted(set(ids) - set(rows))
    if missing:
        sys.exit(f"darts-tourism: {validation_csv}: no row for {', '.join(missing[:5])}")
    for k in ("mape", "mae", "rmse"):
        worst = max(abs(float(rows[sid][k]) - v) / abs(v) for sid, v in zip(ids, errs[k]))
        print(f"tsrnn {validation_csv} against Darts, {k}: worst relative difference over "
              f"{len(ids)} series {worst:.1e}")


class EpochClock(Callback):
    """Seconds and samples of the training epochs (validation is off in `speed`), written by
    rank 0 to a JSON file: ddp_spawn's processes hand nothing else back to the parent. (At
    module level: ddp_spawn pickles the callbacks.)"""

    def __init__(self, out):
        self.out, self.seconds, self.samples, self.start = out, 0.0, 0, 0.0

    def on_train_epoch_start(self, trainer, module):
        self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.samples += batch.past_target.shape[0] * trainer.world_size

    def on_train_epoch_end(self, trainer, module):
        self.seconds += time.perf_counter() - self.start

    def on_train_end(self, trainer, module):
        if trainer.global_rank == 0:
            with open(self.out, "w") as f:
                json.dump({"seconds": self.seconds, "samples": self.samples,
                           "world_size": trainer.world_size}, f)


def cmd_speed(args, ini):
    import torch
    from darts.dataprocessing.transformers import Scaler

    torch.set_num_threads(1)
    _, train, _ = load_series(ini, args.ini)
    train_s = Scaler().fit_transform(train)
    kwargs = {"devices": args.workers}
    if args.workers > 1:
        kwargs["strategy"] = "ddp_spawn"
    with tempfile.TemporaryDirectory() as work_dir:
        out = os.path.join(work_dir, "clock.json")
        model = rnn_model(ini, work_dir, args.epochs, False, [EpochClock(out)], kwargs)
        model.fit(train_s)
        with open(out) as f:
            clock = json.load(f)
    clock["samples_per_s"] = clock["samples"] / clock["seconds"]
    print(json.dumps(clock))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("baseline", "fit", "speed"))
    p.add_argument("--ini", default=str(ROOT / "examples" / "tourism_monthly.ini"))
    p.add_argument("--csv", help="write the per-series errors to this CSV")
    p.add_argument("--compare", help="fit: tsrnn's validation.csv to hold against Darts")
    p.add_argument("--workers", type=int, default=1, help="speed: CPU processes")
    p.add_argument("--epochs", type=int, default=1, help="speed: training epochs")
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ini = load_ini(args.ini)
    {"baseline": cmd_baseline, "fit": cmd_fit, "speed": cmd_speed}[args.command](args, ini)


if __name__ == "__main__":
    main()
