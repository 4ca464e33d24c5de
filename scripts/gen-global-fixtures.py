#!/usr/bin/env python3
"""Generate the fixtures of Darts' global models (one RNNModel fitted on a list of series).

1. Darts' training windows over a list of series: which series and which window each sample
index of Darts' ShiftedTorchTrainingDataset holds, as RNNModel builds it (input_chunk_length
= output_chunk_length = training_length, shift 1), with and without max_samples_per_ts.

2. Real Darts RNNModel fits on a list of three short series of different lengths and start
dates (tests/fixtures/global/{a,b,c}.csv, and the same rows as one long-format file
long.csv, id column `id`), each split after 2000-02-10 and scaled by Scaler() fitted per
series on its training part, as a Darts user does:

    train, val = zip(*[s.split_after(pd.Timestamp("2000-02-10")) for s in series])
    scaler = Scaler().fit(train)
    model.fit(scaler.transform(train), val_series=scaler.transform(val), ...)

with random_state seeding the weights (tsrnn reproduces PyTorch's initialisation and Darts'
shuffle for it), shuffle off (dataloader_kwargs) and on, and with max_samples_per_ts. Each
case writes tests/fixtures/global_<case>_metrics.csv (every step's train_loss, every epoch's
val_loss, tsrnn's metrics.csv layout). The first case also writes
global_forecast.csv (`model.predict(6, series=train)` inverse-scaled, with an `id` column)
and global_validation.txt: each series' MAPE, MAE and RMSE of the forecast over its
validation part (Darts' metrics, original scale) and the overall values Darts'
`metric(val, pred, series_reduction=np.mean)` gives.

Needs Darts (the virtual environment of CONTRIBUTING.md):

    /tmp/venv-darts/bin/python scripts/gen-global-fixtures.py

Part 1 writes tests/fixtures/global_windows.txt: a `# case` line per case (series lengths,
training_length, max_samples_per_ts or 0, len(dataset)), then one line per sample index:
`index series start`, where the sample's input is series[start : start + T] and its target
series[start + 1 : start + T + 1]. Each series' values encode (series, position), so the
line is read off the sample Darts returns.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from darts import TimeSeries
from darts.utils.data.torch_datasets.training_dataset import ShiftedTorchTrainingDataset

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
OUT = FIXTURES / "global_windows.txt"
SERIES_DIR = FIXTURES / "global"

CASES = [
    # (lengths, training_length, max_samples_per_ts or None)
    ((30, 25, 40), 5, None),
    ((30, 25, 40), 5, 10),
    ((12, 60), 7, None),
    ((50, 50, 9), 3, 4),
]


def make_series(sid, length):
    values = np.array([1000.0 * sid + p for p in range(length)], dtype=np.float32)
    index = pd.date_range("2000-01-01", periods=length, freq="D")
    return TimeSeries.from_times_and_values(index, values)


# Part 2: three series (id, first day, length), a daily index, split after SPLIT_AFTER.
SERIES = (("a", "2000-01-01", 60), ("b", "2000-01-05", 48), ("c", "1999-12-20", 70))
SPLIT_AFTER = "2000-02-10"
FIT = dict(model="RNN", hidden_dim=8, training_length=8, input_chunk_length=5, batch_size=16,
           n_epochs=5, lr=5e-3)
FIT_CASES = {
    # name: (random_state, shuffle, max_samples_per_ts, model)
    "noshuffle": (3, False, None, "RNN"),
    "shuffle": (7, True, None, "RNN"),
    "capped": (11, True, 20, "GRU"),
}
FORECAST_N = 6


def write_series():
    """The fixture series: seasonal, positive, two decimals; each file and the long file."""
    rng = np.random.default_rng(2024)
    SERIES_DIR.mkdir(exist_ok=True)
    rows = []
    for k, (sid, start, length) in enumerate(SERIES):
        days = pd.date_range(start, periods=length, freq="D")
        t = np.arange(length)
        values = 50 + 10 * k + 8 * np.sin(2 * np.pi * t / 7 + k) + t * (0.3 + 0.1 * k) \
            + rng.normal(0, 1.5, length)
        lines = ["date,v"] + [f"{d:%Y-%m-%d},{v:.2f}" for d, v in zip(days, values)]
        (SERIES_DIR / f"{sid}.csv").write_text("\n".join(lines) + "\n")
        rows += [(d, sid, v) for d, v in zip(days, values)]
    # The long file's rows by date, the ids interleaved and not in sorted order.
    order = {"c": 0, "a": 1, "b": 2}
    rows.sort(key=lambda r: (r[0], order[r[1]]))
    lines = ["date,id,v"] + [f"{d:%Y-%m-%d},{sid},{v:.2f}" for d, sid, v in rows]
    (SERIES_DIR / "long.csv").write_text("\n".join(lines) + "\n")


def load_split():
    from darts.dataprocessing.transformers import Scaler

    series = [TimeSeries.from_csv(SERIES_DIR / f"{sid}.csv", time_col="date", value_cols="v")
              .astype(np.float32) for sid, _, _ in SERIES]
    # The long file gives the same series, in Darts' order (sorted by id).
    import pandas as pd_
    groups = TimeSeries.from_group_dataframe(
        pd_.read_csv(SERIES_DIR / "long.csv"), group_cols="id", time_col="date", value_cols="v")
    for s, g in zip(series, groups):
        assert np.array_equal(s.values(), g.astype(np.float32).values())
        assert s.time_index.equals(g.time_index)
    parts = [s.split_after(pd.Timestamp(SPLIT_AFTER)) for s in series]
    train = [p[0] for p in parts]
    val = [p[1] for p in parts]
    scaler = Scaler().fit(train)
    return series, train, val, scaler


def fit_case(name, case, data):
    from darts.models import RNNModel
    import tempfile

    seed, shuffle, cap, kind = case
    series, train, val, scaler = data
    _spec = importlib.util.spec_from_file_location("gen_darts", ROOT / "scripts" / "gen-darts-fixtures.py")
    gd = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(gd)
    rec = gd.make_recorder()()
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            model=kind, hidden_dim=FIT["hidden_dim"], dropout=0, batch_size=FIT["batch_size"],
            n_epochs=FIT["n_epochs"], optimizer_kwargs={"lr": FIT["lr"]}, model_name=name,
            work_dir=work_dir, random_state=seed, training_length=FIT["training_length"],
            input_chunk_length=FIT["input_chunk_length"], force_reset=True,
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "enable_model_summary": False, "callbacks": [rec]})
        model.fit(scaler.transform(train), val_series=scaler.transform(val),
                  max_samples_per_ts=cap, dataloader_kwargs={"shuffle": shuffle})
        pred = scaler.inverse_transform(model.predict(FORECAST_N, series=scaler.transform(train)))
        longest = max(len(v) for v in val)
        pred_val = scaler.inverse_transform(model.predict(longest, series=scaler.transform(train)))
    with open(FIXTURES / f"global_{name}_metrics.csv", "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rec.rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step, "" if train_loss is None else "%.9g" % train_loss,
                                       "" if val_loss is None else "%.9g" % val_loss))
    steps = [r for r in rec.rows if r[2] is not None]
    vals = [r for r in rec.rows if r[3] is not None]
    summary = (f"| {name} | {seed} | {shuffle} | {cap or 0} | {kind} | {len(steps)} | "
               f"{steps[0][2]:.9g} | {vals[-1][3]:.9g} |")
    return summary, pred, pred_val


def write_forecast(pred, pred_val, val):
    from darts.metrics import mae, mape, rmse

    lines = ["id,date,v"]
    for (sid, _, _), p in zip(SERIES, pred):
        lines += [f"{sid},{t:%Y-%m-%d},{v:.9g}" for t, v in zip(p.time_index, p.values()[:, 0])]
    (FIXTURES / "global_forecast.csv").write_text("\n".join(lines) + "\n")
    out = ["# series mape mae rmse: Darts' metrics of predict(n = the longest validation part, "
           "series=train), cut to each validation part, against it, original scale; overall: "
           "series_reduction=np.mean"]
    # Each forecast cut to its validation part's stamps: Darts' time intersection, which
    # intersect=True would compute (it fails on a daily index with pandas 3).
    pred_val = [p[: len(a)] for a, p in zip(val, pred_val)]
    for a, p in zip(val, pred_val):
        assert a.time_index.equals(p.time_index)
    kw = dict(intersect=False)
    for (sid, _, _), a, p in zip(SERIES, val, pred_val):
        out.append(f"{sid} {mape(a, p, **kw):.9g} {mae(a, p, **kw):.9g} {rmse(a, p, **kw):.9g}")
    out.append("overall %.9g %.9g %.9g" % tuple(
        float(m(val, pred_val, series_reduction=np.mean, **kw)) for m in (mape, mae, rmse)))
    (FIXTURES / "global_validation.txt").write_text("\n".join(out) + "\n")


def fit_fixtures():
    import darts
    import pytorch_lightning

    write_series()
    data = load_split()
    rows = []
    for name, case in FIT_CASES.items():
        summary, pred, pred_val = fit_case(name, case, data)
        rows.append(summary)
        if name == "noshuffle":
            write_forecast(pred, pred_val, data[2])
    text = f"""# Global-model fixtures (`global_*`)

Generated by `scripts/gen-global-fixtures.py` with Darts {darts.__version__}, torch
{torch.__version__} and pytorch_lightning {pytorch_lightning.__version__}, single-threaded:
real `RNNModel.fit()` on the list of the three series of `global/` (a, b, c: {', '.join(str(n) for _, _, n in SERIES)}
daily points from {', '.join(d for _, d, _ in SERIES)}), each split after {SPLIT_AFTER} and
scaled by `Scaler()` fitted per series on its training part; hidden_dim {FIT['hidden_dim']},
training_length {FIT['training_length']}, input_chunk_length {FIT['input_chunk_length']},
batch_size {FIT['batch_size']}, {FIT['n_epochs']} epochs, lr {FIT['lr']}.

| case | random_state | shuffle | max_samples_per_ts | model | steps | first train_loss | last val_loss |
|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + "\n"
    (FIXTURES / "global-fixtures.md").write_text(text)
    print(text)


def main():
    import darts

    lines = [f"# Darts {darts.__version__}: ShiftedTorchTrainingDataset windows (index series start)"]
    for lengths, T, cap in CASES:
        series = [make_series(s, n) for s, n in enumerate(lengths)]
        ds = ShiftedTorchTrainingDataset(
            series=series, input_chunk_length=T, output_chunk_length=T, shift=1,
            max_samples_per_ts=cap,
        )
        lines.append(f"case {' '.join(map(str, lengths))} T {T} max_samples_per_ts {cap or 0} "
                     f"count {len(ds)}")
        for i in range(len(ds)):
            sample = ds[i]
            past, future = sample.past_target, sample.future_target
            sid, start = divmod(int(past[0, 0]), 1000)
            # the target is the input one step later, within the same series
            assert np.array_equal(future[:, 0], np.arange(T, dtype=np.float32) + 1000 * sid + start + 1)
            assert np.array_equal(past[:, 0], np.arange(T, dtype=np.float32) + 1000 * sid + start)
            lines.append(f"{i} {sid} {start}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(lines)} lines")
    fit_fixtures()


if __name__ == "__main__":
    main()
