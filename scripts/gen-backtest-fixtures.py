#!/usr/bin/env python3
"""Record real Darts' historical forecasts and backtests of a trained RNNModel as fixtures for
`tsrnn-predict --backtest` (tests/test_backtest.c).

Needs Darts (the virtual environment of CONTRIBUTING.md); reads examples/data/ only:

    /tmp/venv-darts/bin/python scripts/gen-backtest-fixtures.py [--multi]

The model is the AirPassengers example's (examples/air_passengers.ini) with model = LSTM:
hidden 20, input_chunk_length 14, training_length 20, batch 16, lr 1e-3, random_state 42,
trained by Darts for EPOCHS epochs on the float32 series scaled by Scaler() fitted on the part
up to 1959-01 (what tsrnn's [data] split_after = 1959-01, scaler = minmax does). Its weights go
to tests/fixtures/bt_lstm_weights.safetensors: tsrnn starts from them with
[model] init_weights and max_steps = 0, so both sides forecast with the same weights and the
same scaler.

For each case (start as a date or a fraction, stride 1 or 3, last_points_only True or False,
forecast_horizon 12) Darts runs

    model.historical_forecasts(series, start=..., forecast_horizon=12, stride=...,
                               retrain=False, last_points_only=..., data_transformers={"series": scaler})
    model.backtest(series, <same>)   # metric = mape, reduction = np.nanmean: Darts' defaults

on the whole series in the original scale, and the script writes, in the layout tsrnn-predict
--backtest writes (docs/usage.md):

* bt_<case>_forecasts.csv: last_points_only=False: `start,Month,#Passengers`, one row per
  (forecast, step), `start` the forecast's first month; True: `Month,#Passengers`, the series
  of last points;
* bt_<case>_errors.csv: `start,mape,mae,rmse`, one row per forecast (Darts' backtest with
  reduction=None: of the whole forecast, or of its last point for last_points_only=True), then
  `backtest,...`: backtest()'s value with its default reduction for each metric;
* backtest-fixtures.md: the cases and Darts' backtest values.

Then the same for a global model on a list of series (Darts' backtest of a list: one value
per series): three monthly series written to tests/fixtures/bt_global/ (a, b, c: seasonal,
positive, of different starts and lengths), each split after 1993-06 and scaled by its own
Scaler; an LSTM of hidden 8, input_chunk_length 5, training_length 8 trained by Darts for
GLOBAL_EPOCHS epochs on the list (bt_global_weights.safetensors), forecast_horizon 4. Its
files have the id column `series` first, each series after the previous one, and the errors
a `backtest` row per series and a last one with an empty id: the mean over the series.
(Monthly, because Darts 0.48.1 with pandas 3 cannot backtest a daily series from a `start`:
n_steps_between() divides a Timedelta by the Day offset, a TypeError.)

With --multi it writes only the multi-component fixtures (`mc_*`): two monthly series of
two components of different scales (tests/fixtures/mc/m1.csv, m2.csv: `a` near 100-200, `b`
near 1, m2's b exactly 0 at 1994-06), split after 1993-12, each scaled by its own Scaler; a
GRU of hidden 8 (training_length 8, input_chunk_length 5, random_state 7) trained by Darts
for MULTI_EPOCHS epochs on the list (mc_weights.safetensors); mc_validation.csv holds Darts'
mape, mae and rmse (component_reduction=np.nanmean: each component scored, then averaged)
of each series' predict(n = its validation length, series = its training part) and their
mean, in the layout of tsrnn's validation.csv; mc_backtest_errors.csv Darts' backtest (start
1994-01, horizon 3, stride 2, every forecast) with metric=[mape, mae, rmse], per forecast
and per series, then the mean over the series, as tsrnn-predict --backtest writes them.

Floats are written with 9 significant digits (float32 round trip). Single-threaded, CPU.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixturelib import write_safetensors  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EPOCHS = 60
HORIZON = 12

GLOBAL_EPOCHS = 20
GLOBAL_HORIZON = 4
# id: (first month, length)
GLOBAL_SERIES = {"a": ("1990-01", 60), "b": ("1992-05", 50), "c": ("1989-07", 72)}
GLOBAL_DIR = FIXTURES / "bt_global"

# name: (start as tsrnn-predict takes it, start as Darts takes it, stride, last_points_only)
CASES = {
    "date_s1_all": ("1959-02", "1959-02-01", 1, False),
    "date_s3_last": ("1957-06", "1957-06-01", 3, True),
    "frac_s3_all": ("0.75", 0.75, 3, False),
    "frac_s1_last": ("0.5", 0.5, 1, True),
}


# The global model's cases: the first forecast at each series' 60% point, or at the first
# validation day of every series (tsrnn-predict's default start).
GLOBAL_CASES = {
    "global_frac_s2_all": ("0.6", 0.6, 2, False),
    "global_date_s1_last": ("1993-07", "1993-07-01", 1, True),
}


def fmt(x):
    return "%.9g" % x


def stamp(t):
    return t.strftime("%Y-%m")


def load():
    import pandas as pd
    from darts import TimeSeries
    from darts.dataprocessing.transformers import Scaler

    series = TimeSeries.from_csv(
        str(ROOT / "examples" / "data" / "air_passengers.csv"), time_col="Month"
    ).astype(np.float32)
    train, _ = series.split_after(pd.Timestamp("1959-01-01"))
    scaler = Scaler()
    train_s = scaler.fit_transform(train)
    return series, train_s, scaler


def train_model(train_s):
    from darts.models import RNNModel

    model = RNNModel(
        model="LSTM",
        hidden_dim=20,
        dropout=0,
        batch_size=16,
        n_epochs=EPOCHS,
        optimizer_kwargs={"lr": 1e-3},
        random_state=42,
        training_length=20,
        input_chunk_length=14,
        force_reset=True,
        save_checkpoints=False,
        pl_trainer_kwargs={
            "accelerator": "cpu",
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "logger": False,
        },
    )
    model.fit(train_s)
    return model


def run_case(model, series, scaler, start, stride, last_points_only, horizon=HORIZON):
    """One series: (forecasts, per-forecast scores, backtest values)."""
    from darts.metrics import mae, mape, rmse

    kwargs = dict(
        start=start,
        forecast_horizon=horizon,
        stride=stride,
        retrain=False,
        last_points_only=last_points_only,
        data_transformers={"series": scaler},
        show_warnings=False,
    )
    hf = model.historical_forecasts(series, **kwargs)
    forecasts = [hf] if last_points_only else hf
    # Per forecast, named by its first point: last_points_only=True scores the one series of
    # last points, so each forecast's own row is the metric of its last point alone.
    if last_points_only:
        points = [hf[i : i + 1] for i in range(len(hf))]
        firsts = [t - (horizon - 1) * series.freq for t in hf.time_index]
    else:
        points = hf
        firsts = [f.start_time() for f in hf]
    per = [
        (t, [float(m(series, f)) for m in (mape, mae, rmse)]) for t, f in zip(firsts, points)
    ]
    total = [
        float(model.backtest(series, historical_forecasts=hf, last_points_only=last_points_only,
                             metric=m))
        for m in (mape, mae, rmse)
    ]
    # backtest() as a user calls it: Darts' defaults (metric mape, reduction np.nanmean).
    darts_value = float(model.backtest(series, **kwargs))
    assert darts_value == total[0], (darts_value, total[0])
    return forecasts, per, total


def write_case(name, parts, last_points_only, time_col="Month", value_col="#Passengers",
               stamp=stamp, mean=None):
    """parts: [(id or None, forecasts, per, total)], one per series."""
    lead = lambda sid: "" if sid is None else sid + ","  # noqa: E731
    head = lead(None if parts[0][0] is None else "series")
    with open(FIXTURES / ("bt_%s_forecasts.csv" % name), "w") as f:
        if last_points_only:
            f.write("%s%s,%s\n" % (head, time_col, value_col))
        else:
            f.write("%sstart,%s,%s\n" % (head, time_col, value_col))
        for sid, forecasts, _, _ in parts:
            for fc in forecasts:
                for t, v in zip(fc.time_index, fc.values()[:, 0]):
                    start = "" if last_points_only else stamp(fc.start_time()) + ","
                    f.write("%s%s%s,%s\n" % (lead(sid), start, stamp(t), fmt(float(v))))
    with open(FIXTURES / ("bt_%s_errors.csv" % name), "w") as f:
        f.write("%sstart,mape,mae,rmse\n" % head)
        for sid, _, per, total in parts:
            for t, values in per:
                f.write("%s%s,%s\n" % (lead(sid), stamp(t), ",".join(fmt(v) for v in values)))
            f.write("%sbacktest,%s\n" % (lead(sid), ",".join(fmt(v) for v in total)))
        if mean is not None:
            f.write(",backtest,%s\n" % ",".join(fmt(v) for v in mean))


def write_global_series():
    """The global model's series, one CSV each (`month,v`, two decimals)."""
    import pandas as pd

    rng = np.random.default_rng(21)
    GLOBAL_DIR.mkdir(exist_ok=True)
    for k, (sid, (first, length)) in enumerate(GLOBAL_SERIES.items()):
        months = pd.date_range(first, periods=length, freq="MS")
        t = np.arange(length)
        values = 100 + 30 * k + 15 * np.sin(2 * np.pi * t / 12 + k) + t * (0.8 + 0.3 * k) \
            + rng.normal(0, 3, length)
        lines = ["month,v"] + ["%s,%.2f" % (stamp(m), v) for m, v in zip(months, values)]
        (GLOBAL_DIR / (sid + ".csv")).write_text("\n".join(lines) + "\n")


def run_global(lines):
    """The global model on the list of the three fixture series (see the docstring)."""
    import pandas as pd
    import torch
    from darts import TimeSeries
    from darts.dataprocessing.transformers import Scaler
    from darts.metrics import mape
    from darts.models import RNNModel

    write_global_series()
    series = [
        TimeSeries.from_csv(str(GLOBAL_DIR / (sid + ".csv")), time_col="month",
                            value_cols="v").astype(np.float32)
        for sid in GLOBAL_SERIES
    ]
    train = [s.split_after(pd.Timestamp("1993-06-01"))[0] for s in series]
    scaler = Scaler()
    train_s = scaler.fit_transform(train)
    model = RNNModel(
        model="LSTM", hidden_dim=8, dropout=0, batch_size=16, n_epochs=GLOBAL_EPOCHS,
        optimizer_kwargs={"lr": 5e-3}, random_state=5, training_length=8,
        input_chunk_length=5, force_reset=True, save_checkpoints=False,
        pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                           "enable_model_summary": False, "logger": False},
    )
    model.fit(train_s)
    write_safetensors(
        FIXTURES / "bt_global_weights.safetensors",
        {k: v.detach().to(torch.float32) for k, v in model.model.state_dict().items()},
        {"darts.epochs": str(GLOBAL_EPOCHS), "darts.random_state": "5"},
    )
    for name, (text, start, stride, lpo) in GLOBAL_CASES.items():
        darts_start = pd.Timestamp(start) if isinstance(start, str) else start
        # Darts on the list: one value per series, each from its own start.
        listed = model.backtest(
            series, start=darts_start, forecast_horizon=GLOBAL_HORIZON, stride=stride,
            retrain=False, last_points_only=lpo, data_transformers={"series": scaler},
            show_warnings=False, metric=mape)
        parts = []
        for k, sid in enumerate(GLOBAL_SERIES):
            # series k alone with its own scaler: the list's k-th, as the assert shows
            one = Scaler().fit(train[k])
            forecasts, per, total = run_case(model, series[k], one, darts_start, stride, lpo,
                                             horizon=GLOBAL_HORIZON)
            assert abs(total[0] - float(listed[k])) <= 1e-6 * abs(total[0]), (total, listed)
            parts.append((sid, forecasts, per, total))
        mean = [float(np.mean([p[3][m] for p in parts])) for m in range(3)]
        write_case(name, parts, lpo, time_col="month", value_col="v", mean=mean)
        lines.append(
            "| %s | %s | %d | %s | %s | %s | %.6f | %.6f | %.6f |"
            % (name, text, stride, lpo, "+".join(str(len(p[2])) for p in parts),
               " / ".join("%.4f" % p[3][0] for p in parts), mean[0], mean[1], mean[2])
        )
        print(lines[-1], flush=True)


# Two components of different scales (issue 36, point 2): Darts' metrics score each component,
# average the components (component_reduction=np.nanmean), then the series.
MULTI_DIR = FIXTURES / "mc"
MULTI_SERIES = {"m1": ("1990-01", 60), "m2": ("1991-04", 54)}
MULTI_SPLIT = "1993-12-01"
MULTI_EPOCHS = 15
MULTI_HORIZON = 3


def write_multi_series():
    """`month,a,b`: a near 100-200, b near 1; m2's b is exactly 0 at 1994-06 (a validation
    month), which Darts' MAPE leaves out of its mean."""
    import pandas as pd

    rng = np.random.default_rng(36)
    MULTI_DIR.mkdir(exist_ok=True)
    for k, (sid, (first, length)) in enumerate(MULTI_SERIES.items()):
        months = pd.date_range(first, periods=length, freq="MS")
        t = np.arange(length)
        a = 120 + 40 * k + 20 * np.sin(2 * np.pi * t / 12) + 0.9 * t + rng.normal(0, 4, length)
        b = 1.0 + 0.6 * np.cos(2 * np.pi * t / 12 + k) + rng.normal(0, 0.08, length)
        lines = ["month,a,b"]
        for m, x, y in zip(months, a, b):
            y_text = "0" if (sid == "m2" and stamp(m) == "1994-06") else "%.3f" % y
            lines.append("%s,%.2f,%s" % (stamp(m), x, y_text))
        (MULTI_DIR / (sid + ".csv")).write_text("\n".join(lines) + "\n")


def run_multi():
    """A GRU trained by Darts on the list of the two 2-component series; its validation
    forecasts' scores (predict(n = the validation length, series = the training part) of each
    series, as tsrnn's validation.csv) and its backtest (start 1994-01, horizon 3, stride 2,
    all forecasts) with metric=[mape, mae, rmse], as tsrnn-predict --backtest writes them."""
    import pandas as pd
    import torch
    from darts import TimeSeries
    from darts.dataprocessing.transformers import Scaler
    from darts.metrics import mae, mape, rmse
    from darts.models import RNNModel

    write_multi_series()
    series = [TimeSeries.from_csv(str(MULTI_DIR / (sid + ".csv")), time_col="month",
                                  value_cols=["a", "b"]).astype(np.float32)
              for sid in MULTI_SERIES]
    parts = [s.split_after(pd.Timestamp(MULTI_SPLIT)) for s in series]
    train, val = [p[0] for p in parts], [p[1] for p in parts]
    scalers = [Scaler().fit(tr) for tr in train]
    train_s = [sc.transform(tr) for sc, tr in zip(scalers, train)]
    model = RNNModel(
        model="GRU", hidden_dim=8, dropout=0, batch_size=16, n_epochs=MULTI_EPOCHS,
        optimizer_kwargs={"lr": 5e-3}, random_state=7, training_length=8,
        input_chunk_length=5, force_reset=True, save_checkpoints=False,
        pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                           "enable_model_summary": False, "logger": False},
    )
    model.fit(train_s)
    write_safetensors(
        FIXTURES / "mc_weights.safetensors",
        {k: v.detach().to(torch.float32) for k, v in model.model.state_dict().items()},
        {"darts.epochs": str(MULTI_EPOCHS), "darts.random_state": "7"},
    )
    metrics = (mape, mae, rmse)
    rows = ["series,steps,mape,mae,rmse"]
    scores = []
    for sid, sc, tr, v in zip(MULTI_SERIES, scalers, train_s, val):
        pred = sc.inverse_transform(model.predict(len(v), series=tr))
        scores.append([float(m(v, pred)) for m in metrics])
        pooled = float(np.sqrt(np.mean((v.values() - pred.values()) ** 2)))
        print("%s: Darts rmse %.6f (mean of the components'), pooled %.6f" % (sid, scores[-1][2],
                                                                            pooled))
        rows.append("%s,%d,%s" % (sid, len(v), ",".join(fmt(x) for x in scores[-1])))
    mean = [float(np.mean([s[k] for s in scores])) for k in range(3)]
    preds = [sc.inverse_transform(model.predict(len(v), series=tr))
             for sc, tr, v in zip(scalers, train_s, val)]
    for k, m in enumerate(metrics):  # Darts' own reduction over the list agrees
        reduced = float(m(val, preds, series_reduction=np.mean))
        assert abs(reduced - mean[k]) <= 1e-6 * abs(mean[k]), (reduced, mean[k])
    rows.append(",%d,%s" % (sum(len(v) for v in val), ",".join(fmt(x) for x in mean)))
    (FIXTURES / "mc_validation.csv").write_text("\n".join(rows) + "\n")
    rows = ["series,start,mape,mae,rmse"]
    totals = []
    for sid, sc, s in zip(MULTI_SERIES, scalers, series):
        hf = model.historical_forecasts(
            s, start=pd.Timestamp("1994-01-01"), forecast_horizon=MULTI_HORIZON, stride=2,
            retrain=False, last_points_only=False, data_transformers={"series": sc},
            show_warnings=False)
        per = model.backtest(s, historical_forecasts=hf, metric=list(metrics), reduction=None)
        total = model.backtest(s, historical_forecasts=hf, metric=list(metrics))
        for fc, values in zip(hf, per):
            rows.append("%s,%s,%s" % (sid, stamp(fc.start_time()),
                                      ",".join(fmt(float(x)) for x in values)))
        rows.append("%s,backtest,%s" % (sid, ",".join(fmt(float(x)) for x in total)))
        totals.append([float(x) for x in total])
    rows.append(",backtest,%s" % ",".join(fmt(float(np.mean([t[k] for t in totals])))
                                          for k in range(3)))
    (FIXTURES / "mc_backtest_errors.csv").write_text("\n".join(rows) + "\n")
    print("\n".join(rows[-3:]))


def main():
    import torch

    torch.set_num_threads(1)
    import darts
    import pytorch_lightning

    if "--multi" in sys.argv:
        run_multi()
        return

    series, train_s, scaler = load()
    model = train_model(train_s)
    write_safetensors(
        FIXTURES / "bt_lstm_weights.safetensors",
        {k: v.detach().to(torch.float32) for k, v in model.model.state_dict().items()},
        {"darts.epochs": str(EPOCHS), "darts.random_state": "42"},
    )
    lines = [
        "# Real Darts backtests (`bt_*`)",
        "",
        "Written by `scripts/gen-backtest-fixtures.py` (its docstring says what it runs) with "
        "darts %s, pytorch-lightning %s, torch %s, numpy %s, CPU, one thread. The LSTM of "
        "`bt_lstm_weights.safetensors` was trained %d epochs by Darts; forecast_horizon %d, "
        "retrain=False, overlap_end=False."
        % (darts.__version__, pytorch_lightning.__version__, torch.__version__, np.__version__,
           EPOCHS, HORIZON),
        "",
        "| case | --start | stride | last_points_only | forecasts | backtest MAPE | MAE | RMSE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, (text, start, stride, lpo) in CASES.items():
        import pandas as pd

        darts_start = pd.Timestamp(start) if isinstance(start, str) else start
        forecasts, per, total = run_case(model, series, scaler, darts_start, stride, lpo)
        write_case(name, [(None, forecasts, per, total)], lpo)
        lines.append(
            "| %s | %s | %d | %s | %d | %.6f | %.6f | %.6f |"
            % (name, text, stride, lpo, len(per), total[0], total[1], total[2])
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "The global LSTM of `bt_global_weights.safetensors` (series a, b, c of `bt_global/`; "
        "%d epochs; forecast_horizon %d): Darts' `backtest()` of the list gives each series' "
        "value; the mean is over the series." % (GLOBAL_EPOCHS, GLOBAL_HORIZON),
        "",
        "| case | --start | stride | last_points_only | forecasts | MAPE per series | mean MAPE "
        "| MAE | RMSE |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    run_global(lines)
    (FIXTURES / "backtest-fixtures.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
