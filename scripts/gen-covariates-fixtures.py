#!/usr/bin/env python3
"""Generate the fixtures of future covariates and Darts' encoders (tests/test_covariates.c):

  tests/fixtures/encoders.txt   what Darts 0.48.1 computes from a time index: the
      datetime attributes (add_encoders' 'datetime_attribute', 0-based as Darts shifts them),
      their one-hot form (datetime_attribute_timeseries(one_hot=True)), the cyclic sin/cos
      ('cyclic') and the relative position ('position'), for a monthly (AirPassengers), an
      hourly and a daily index; then the whole add_encoders pipeline with its Scaler
      transformer (SequentialEncoder.encode_train on the training part, encode_inference for
      a 26-step forecast).

  tests/fixtures/cov_lstm_42_metrics.csv, cov_lstm_42_forecast.csv, cov_lstm_42_init.safetensors
      the Darts RNN example notebook's covariate run (examples/04-RNN-examples.ipynb:
      LSTM, hidden_dim 20, dropout 0, batch_size 16, n_epochs 300, lr 1e-3,
      training_length 20, input_chunk_length 14, random_state 42, AirPassengers split
      after 1959-01 and scaled on the training part, future covariates year and month
      one-hot, predict(n=26)) with real Darts, its year covariate scaled as add_encoders'
      transformer does (Scaler fitted on the training part's years) rather than on the
      notebook's 1000 months: every step's train_loss and every epoch's val_loss
      (tsrnn's metrics.csv layout), the 26-month forecast in the original scale, the
      initial weights; tests/fixtures/covariates-fixtures.md the figures, with the
      notebook's own covariates beside them (--seeds adds random_state 0 and 1).

  tests/fixtures/cov_enc_gru_1_metrics.csv, cov_enc_gru_1_forecast.csv   a GRU (random_state
      1, 30 epochs) with Darts' own add_encoders (cyclic month, year, relative position,
      Scaler transformer) through fit() and predict(n=26).
  tests/fixtures/cov_global/{a,b,c}.csv, cov_global_metrics.csv, cov_global_forecast.csv,
  cov_global_backtest.csv   a global model with add_encoders: Darts' RNNModel (LSTM, hidden 8,
      training_length 8, input_chunk_length 5, batch 16, 5 epochs, lr 5e-3, random_state 5)
      fitted on three monthly series of different starts and lengths, each split after
      1993-06 and scaled by its own Scaler, with add_encoders cyclic month, year, relative
      position and a Scaler transformer (fitted once on the training parts of all three):
      every step's train_loss and epoch's val_loss, predict(6, series=train) of each series
      (`series,month,v`) and historical_forecasts(start=1993-07, forecast_horizon=3,
      stride=2, retrain=False, last_points_only=False) of each whole series
      (`series,start,month,v`), original scale. (--global writes only these.)
  tests/fixtures/cov_load.csv, cov_colenc_metrics.csv, cov_colenc_forecast.csv,
  covariates-columns-encoders.md   a covariate column (`temp`) together with add_encoders
      (datetime_attribute month, year; Scaler transformer): with user covariates Darts
      encodes over the covariates' own index and fits the transformer on all of it. Every
      step's train_loss and epoch's val_loss, predict(24) in the original scale.
      (--columns-encoders writes only these.)
  tests/fixtures/darts_hparams_covariates.yaml   the logs/hparams.yaml of a Darts RNNModel
      with one future covariate (add_encoders' year).
  tests/fixtures/air_covariates.csv   AirPassengers with the notebook's covariates as data
      columns (year, month_0 .. month_11, unscaled): [covariates] columns reads them.

Needs Darts (the virtual environment of CONTRIBUTING.md):

    /work/venv-darts/bin/python scripts/gen-covariates-fixtures.py [--parity] [--seeds] [--global]
        [--columns-encoders]

encoders.txt: `case <index start> <freq> <length> <kind> <attribute> <reference> <width>`
(kind: attribute, one_hot, cyclic, position; reference: the position of the target's end in
the index, what 'position' counts from), then `length` rows of `width` float32 values
(%.9g). A `pipeline` case lists its encoders and the rows train and inference give.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from darts import TimeSeries
from darts.dataprocessing.encoders import SequentialEncoder
from darts.dataprocessing.encoders.encoders import FutureIntegerIndexEncoder
from darts.dataprocessing.encoders.encoder_base import FutureCovariatesIndexGenerator
from darts.dataprocessing.transformers import Scaler
from darts.utils.timeseries_generation import datetime_attribute_timeseries

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# (start, freq, length, [(kind, attribute)], reference)
INDEXES = [
    ("1949-01-01", "MS", 170, [
        ("attribute", "month"), ("attribute", "year"), ("one_hot", "month"),
        ("cyclic", "month"), ("cyclic", "quarter"), ("position", "relative"),
    ], 120),
    ("2020-02-28 22:00:00", "h", 60, [
        ("attribute", "hour"), ("attribute", "dayofweek"), ("attribute", "day"),
        ("one_hot", "hour"), ("cyclic", "hour"), ("cyclic", "day"), ("cyclic", "weekday"),
        ("one_hot", "day_of_week"), ("position", "relative"),
    ], 75),
    ("2019-12-20", "D", 400, [
        ("attribute", "dayofyear"), ("attribute", "week"), ("attribute", "quarter"),
        ("cyclic", "dayofyear"), ("cyclic", "week"), ("cyclic", "day"), ("cyclic", "month"),
        ("one_hot", "quarter"), ("position", "relative"),
    ], -3),
    # a short index in one year (from Sunday 2021-03-07): no 53rd week, no leap day
    ("2021-03-01", "W-SUN", 20, [
        ("cyclic", "week"), ("cyclic", "dayofyear"), ("attribute", "minute"),
    ], 19),
]


def encode(index, kind, attribute, reference):
    if kind == "position":
        enc = FutureIntegerIndexEncoder(input_chunk_length=1, output_chunk_length=1,
                                        attribute=attribute)
        # the target's end, `reference` steps after index[0] (before it when negative)
        end = index[0] + reference * index.freq
        return enc._encode(index, end, np.float32).values()
    series = datetime_attribute_timeseries(index, attribute=attribute, one_hot=kind == "one_hot",
                                           cyclic=kind == "cyclic", dtype=np.float32)
    return series.values()


def rows(values):
    return [" ".join(f"{v:.9g}" for v in row) for row in np.asarray(values, dtype=np.float32)]


def pipeline_case(lines):
    """RNNModel's add_encoders on AirPassengers' training part (up to 1959-01), as fit() and
    predict(n=26) run them: input_chunk_length 14, output_chunk_length 1."""
    df = pd.read_csv(ROOT / "examples" / "data" / "air_passengers.csv")
    series = TimeSeries.from_dataframe(df, time_col="Month", value_cols="#Passengers",
                                       freq="MS").astype(np.float32)
    train, val = series.split_after(pd.Timestamp("1959-01-01"))
    add_encoders = {
        "datetime_attribute": {"future": ["year", "month"]},
        "cyclic": {"future": ["month"]},
        "position": {"future": ["relative"]},
        "transformer": Scaler(),
    }
    enc = SequentialEncoder(add_encoders=add_encoders, input_chunk_length=14,
                            output_chunk_length=1, takes_past_covariates=False,
                            takes_future_covariates=True)
    _, fit_cov = enc.encode_train(target=train)
    _, val_cov = enc.encode_train(target=val)  # fit() encodes the validation series this way
    _, pred_cov = enc.encode_inference(n=26, target=train)
    lines.append("pipeline datetime_attribute year month cyclic month position relative "
                 "scaler minmax")
    for name, cov in (("train", fit_cov), ("val", val_cov), ("inference", pred_cov)):
        lines.append(f"part {name} {cov.start_time().strftime('%Y-%m-%d')} {len(cov)} "
                     f"{cov.width}")
        lines.extend(rows(cov.values()))


def air_passengers():
    df = pd.read_csv(ROOT / "examples" / "data" / "air_passengers.csv")
    return TimeSeries.from_dataframe(df, time_col="Month", value_cols="#Passengers",
                                     freq="MS").astype(np.float32)


def notebook_covariates(series, train, year_scaled_on):
    """The notebook's cell: year (scaled) and month one-hot over 1000 months from the start.
    year_scaled_on = "notebook": its Scaler fitted on all 1000 months; "train": fitted on the
    training part's months, as add_encoders' transformer (and tsrnn) fits it."""
    from darts.dataprocessing.transformers import Scaler as DScaler

    index = pd.date_range(start=series.start_time(), freq=series.freq_str, periods=1000)
    year = datetime_attribute_timeseries(index, attribute="year", one_hot=False,
                                         dtype=series.dtype)
    scaler = DScaler()
    if year_scaled_on == "train":
        scaler.fit(year.slice(train.start_time(), train.end_time()))
    else:
        scaler.fit(year)
    year = scaler.transform(year)
    month = datetime_attribute_timeseries(year, attribute="month", one_hot=True,
                                          dtype=series.dtype)
    return year.stack(month)


def parity_run(seed, year_scaled_on, record, encoders=None):
    """One fit + predict(26) of the notebook's model; returns its figures. With `encoders`
    (kind, epochs, add_encoders), that model with Darts' own add_encoders instead of the
    notebook's covariates, recorded as cov_enc_<kind>_<seed>_*."""
    import tempfile

    import pytorch_lightning as pl
    from darts.dataprocessing.transformers import Scaler as DScaler
    from darts.metrics import mape
    from darts.models import RNNModel

    class Recorder(pl.Callback):
        def __init__(self):
            self.rows, self.init = [], None

        def on_train_start(self, trainer, pl_module):
            self.init = {k: v.detach().clone() for k, v in pl_module.state_dict().items()}

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            self.rows.append((trainer.current_epoch, trainer.global_step - 1,
                              float(loss.detach()), None))

        def on_train_epoch_end(self, trainer, pl_module):
            value = trainer.callback_metrics.get("val_loss")
            if value is not None:
                self.rows.append((trainer.current_epoch, trainer.global_step - 1, None,
                                  float(value)))

    series = air_passengers()
    train, val = series.split_after(pd.Timestamp("19590101"))
    transformer = DScaler()
    train_t = transformer.fit_transform(train)
    val_t = transformer.transform(val)
    covariates = None if encoders else notebook_covariates(series, train, year_scaled_on)
    kind, epochs, add_encoders = encoders or ("LSTM", 300, None)
    rec = Recorder()
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            input_chunk_length=14, training_length=20, model=kind, hidden_dim=20, dropout=0,
            batch_size=16, n_epochs=epochs, optimizer_kwargs={"lr": 1e-3}, model_name="Air_RNN",
            random_state=seed, force_reset=True, work_dir=work_dir, add_encoders=add_encoders,
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "enable_model_summary": False, "callbacks": [rec]})
        model.fit(train_t, future_covariates=covariates, val_series=val_t,
                  val_future_covariates=covariates)
        pred = model.predict(n=26, future_covariates=covariates)
    pred_original = transformer.inverse_transform(pred)
    figures = {
        "first": rec.rows[0][2],
        "val": [r[3] for r in rec.rows if r[3] is not None][-1],
        "mape_scaled": float(mape(val_t, pred)),  # the notebook's title
        "mape": float(mape(val, pred_original)),  # tsrnn's: the original scale
    }
    if not record:
        return figures
    name = FIXTURES / (f"cov_enc_{kind.lower()}_{seed}" if encoders else f"cov_lstm_{seed}")
    with open(f"{name}_metrics.csv", "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rec.rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step,
                                        "" if train_loss is None else f"{train_loss:.9g}",
                                        "" if val_loss is None else f"{val_loss:.9g}"))
    with open(f"{name}_forecast.csv", "w") as f:
        f.write("Month,#Passengers\n")
        for t, v in zip(pred_original.time_index, pred_original.values()[:, 0]):
            f.write(f"{t.strftime('%Y-%m')},{float(v):.9g}\n")
    if encoders:
        return figures
    from fixturelib import write_safetensors

    write_safetensors(Path(f"{name}_init.safetensors"),
                      {k.replace("model.", "", 1) if k.startswith("model.") else k: v
                       for k, v in rec.init.items()},
                      {"source": "Darts RNNModel(model='LSTM', random_state=%d) with 13 future "
                                 "covariates, at on_train_start" % seed})
    return figures


def darts_hparams():
    """One epoch of the notebook's LSTM with add_encoders' year (13 -> 1 covariate) and
    log_tensorboard: the logs/hparams.yaml real Darts writes, for tsrnn's to equal."""
    import glob
    import tempfile

    from darts.dataprocessing.transformers import Scaler as DScaler
    from darts.models import RNNModel

    series = air_passengers()
    train, val = series.split_after(pd.Timestamp("19590101"))
    transformer = DScaler()
    train_t, val_t = transformer.fit_transform(train), transformer.transform(val)
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            input_chunk_length=14, training_length=20, model="LSTM", hidden_dim=20, dropout=0,
            batch_size=16, n_epochs=1, optimizer_kwargs={"lr": 1e-3}, model_name="h",
            random_state=42, log_tensorboard=True, work_dir=work_dir, force_reset=True,
            add_encoders={"datetime_attribute": {"future": ["year"]}, "transformer": DScaler()},
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False})
        model.fit(train_t, val_series=val_t)
        found = glob.glob(work_dir + "/**/hparams.yaml", recursive=True)
        (FIXTURES / "darts_hparams_covariates.yaml").write_text(Path(found[0]).read_text())


def parity(seeds):
    import darts
    import pytorch_lightning

    from darts.dataprocessing.transformers import Scaler as DScaler

    # Darts' own add_encoders (cyclic, position, year and the transformer) through fit() and
    # predict(): the validation part's positions count from its own end.
    enc = parity_run(1, "train", True, encoders=("GRU", 30, {
        "cyclic": {"future": ["month"]}, "datetime_attribute": {"future": ["year"]},
        "position": {"future": ["relative"]}, "transformer": DScaler()}))
    print("add_encoders GRU 1:", enc, flush=True)
    lines = []
    for seed in seeds:
        for scaled_on in ("train", "notebook"):
            f = parity_run(seed, scaled_on, record=seed == 42 and scaled_on == "train")
            lines.append(f"| {seed} | {scaled_on} | {f['first']:.9g} | {f['val']:.6g} | "
                         f"{f['mape_scaled']:.4f} | {f['mape']:.4f} |")
            print(lines[-1], flush=True)
    text = f"""# Covariate fixtures (`cov_lstm_42_*`, `encoders.txt`)

Written by `scripts/gen-covariates-fixtures.py` with darts {darts.__version__},
pytorch-lightning {pytorch_lightning.__version__}, torch {torch.__version__}, CPU, one thread.

The Darts RNN example notebook's covariate run (`examples/04-RNN-examples.ipynb`): LSTM,
hidden_dim 20, dropout 0, batch_size 16, n_epochs 300, lr 1e-3, training_length 20,
input_chunk_length 14, AirPassengers split after 1959-01 and scaled on the training part,
future covariates year (scaled) and month one-hot (13 columns), `predict(n=26)`. "year
scaled on": `train` fits the year's Scaler on the training part (1949..1959), as
`add_encoders`' transformer and tsrnn's `[covariates] scaler = minmax` do: the recorded run
(random_state 42); `notebook` fits it on the notebook's 1000 months (1949..2032).
MAPE over the 23 validation months: "scaled" as the notebook's plot title computes it
(`mape(val_transformed, pred)`), "original" on passengers, as tsrnn prints it.

| random_state | year scaled on | first step train_loss | last val_loss | MAPE % scaled | MAPE % original |
|---|---|---|---|---|---|
""" + "\n".join(lines) + f"""

`cov_enc_gru_1_*`: the same model as a GRU, random_state 1, 30 epochs, with Darts' own
`add_encoders={{'cyclic': {{'future': ['month']}}, 'datetime_attribute': {{'future': ['year']}},
'position': {{'future': ['relative']}}, 'transformer': Scaler()}}` through `fit()` and
`predict(n=26)`: first step {enc['first']:.9g}, last val_loss {enc['val']:.6g}, MAPE
{enc['mape']:.4f} % (original scale).
"""
    (FIXTURES / "covariates-fixtures.md").write_text(text)


def covariate_columns_csv():
    """AirPassengers beside the raw year and the month one-hot, as data columns."""
    series = air_passengers()
    index = series.time_index
    year = datetime_attribute_timeseries(index, attribute="year", dtype=np.float32).values()
    month = datetime_attribute_timeseries(index, attribute="month", one_hot=True,
                                          dtype=np.float32).values()
    lines = ["Month,#Passengers,year," + ",".join(f"month_{m}" for m in range(12))]
    for i, t in enumerate(index):
        lines.append(f"{t.strftime('%Y-%m')},{series.values()[i, 0]:g},{year[i, 0]:g},"
                     + ",".join(f"{v:g}" for v in month[i]))
    (FIXTURES / "air_covariates.csv").write_text("\n".join(lines) + "\n")


# The global model with add_encoders: (id, first month, length), split after GLOBAL_SPLIT.
GLOBAL_SERIES = (("a", "1990-01-01", 60), ("b", "1991-07-01", 48), ("c", "1989-04-01", 72))
GLOBAL_SPLIT = "1993-06-01"
GLOBAL_DIR = FIXTURES / "cov_global"


def global_run():
    """Darts' RNNModel with add_encoders fitted on a list of three monthly series."""
    import importlib.util
    import tempfile

    from darts.dataprocessing.transformers import Scaler as DScaler
    from darts.models import RNNModel

    rng = np.random.default_rng(77)
    GLOBAL_DIR.mkdir(exist_ok=True)
    series = []
    for k, (sid, start, length) in enumerate(GLOBAL_SERIES):
        months = pd.date_range(start, periods=length, freq="MS")
        t = np.arange(length)
        values = 100 + 20 * k + 15 * np.sin(2 * np.pi * (months.month - 1) / 12 + k) \
            + t * (0.8 + 0.3 * k) + rng.normal(0, 3, length)
        lines = ["month,v"] + [f"{m:%Y-%m},{v:.2f}" for m, v in zip(months, values)]
        (GLOBAL_DIR / f"{sid}.csv").write_text("\n".join(lines) + "\n")
        series.append(TimeSeries.from_csv(GLOBAL_DIR / f"{sid}.csv", time_col="month",
                                          value_cols="v").astype(np.float32))
    parts = [s.split_after(pd.Timestamp(GLOBAL_SPLIT)) for s in series]
    train = [p[0] for p in parts]
    val = [p[1] for p in parts]
    scalers = [DScaler().fit(tr) for tr in train]
    train_t = [sc.transform(tr) for sc, tr in zip(scalers, train)]
    val_t = [sc.transform(v) for sc, v in zip(scalers, val)]
    spec = importlib.util.spec_from_file_location("gen_darts",
                                                  ROOT / "scripts" / "gen-darts-fixtures.py")
    gd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gd)
    rec = gd.make_recorder()()
    add_encoders = {"cyclic": {"future": ["month"]}, "datetime_attribute": {"future": ["year"]},
                    "position": {"future": ["relative"]}, "transformer": DScaler()}
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            model="LSTM", hidden_dim=8, dropout=0, batch_size=16, n_epochs=5,
            optimizer_kwargs={"lr": 5e-3}, model_name="cov_global", work_dir=work_dir,
            random_state=5, training_length=8, input_chunk_length=5, force_reset=True,
            add_encoders=add_encoders,
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "enable_model_summary": False, "callbacks": [rec]})
        model.fit(train_t, val_series=val_t)
        pred = model.predict(6, series=train_t)
        hist = model.historical_forecasts(
            [sc.transform(s) for sc, s in zip(scalers, series)],
            start=pd.Timestamp("1993-07-01"), forecast_horizon=3, stride=2, retrain=False,
            last_points_only=False, show_warnings=False)
    with open(FIXTURES / "cov_global_metrics.csv", "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rec.rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step,
                                        "" if train_loss is None else f"{train_loss:.9g}",
                                        "" if val_loss is None else f"{val_loss:.9g}"))
    lines = ["series,month,v"]
    for (sid, _, _), sc, p in zip(GLOBAL_SERIES, scalers, pred):
        p = sc.inverse_transform(p)
        lines += [f"{sid},{t:%Y-%m},{v:.9g}" for t, v in zip(p.time_index, p.values()[:, 0])]
    (FIXTURES / "cov_global_forecast.csv").write_text("\n".join(lines) + "\n")
    lines = ["series,start,month,v"]
    for (sid, _, _), sc, forecasts in zip(GLOBAL_SERIES, scalers, hist):
        for fc in forecasts:
            fc = sc.inverse_transform(fc)
            lines += [f"{sid},{fc.time_index[0]:%Y-%m},{t:%Y-%m},{v:.9g}"
                      for t, v in zip(fc.time_index, fc.values()[:, 0])]
    (FIXTURES / "cov_global_backtest.csv").write_text("\n".join(lines) + "\n")
    steps = [r for r in rec.rows if r[2] is not None]
    print(f"cov_global: {len(steps)} steps, first train_loss {steps[0][2]:.9g}, "
          f"{len(lines) - 1} backtest rows", flush=True)


# Covariate columns and encoders together (issue 36, point 1): a monthly load series with a
# temperature column. With user covariates, Darts builds the encodings over the covariates'
# own time index (FutureCovariatesIndexGenerator: "user supplied covariates: simply return
# the covariate time index") and fits add_encoders' transformer over all of it.
COLENC_CSV = FIXTURES / "cov_load.csv"
COLENC_SPLIT = "2018-12-01"


def colenc_run():
    """Darts' RNNModel on cov_load.csv: `temp` as future covariates (scaled by a Scaler fitted
    on the training part, as tsrnn's [covariates] scaler = minmax scales a column) and
    add_encoders datetime_attribute month, year with a Scaler transformer."""
    import importlib.util
    import tempfile

    import darts
    import pytorch_lightning
    from darts.dataprocessing.transformers import Scaler as DScaler
    from darts.metrics import mape
    from darts.models import RNNModel

    months = pd.date_range("2010-01-01", periods=132, freq="MS")
    t = np.arange(132)
    temp = 12 + 9 * np.sin(2 * np.pi * (months.month - 4) / 12) + np.random.default_rng(36).normal(
        0, 1.2, 132)
    load = 500 + 2.2 * t - 6 * temp + 25 * np.cos(2 * np.pi * (months.month - 1) / 12) \
        + np.random.default_rng(63).normal(0, 8, 132)
    lines = ["month,load,temp"] + [f"{m:%Y-%m},{v:.2f},{c:.2f}"
                                   for m, v, c in zip(months, load, temp)]
    COLENC_CSV.write_text("\n".join(lines) + "\n")
    series = TimeSeries.from_csv(COLENC_CSV, time_col="month", value_cols="load").astype(
        np.float32)
    cov = TimeSeries.from_csv(COLENC_CSV, time_col="month", value_cols="temp").astype(np.float32)
    train, val = series.split_after(pd.Timestamp(COLENC_SPLIT))
    scaler = DScaler()
    train_t, val_t = scaler.fit_transform(train), scaler.transform(val)
    cov_scaler = DScaler().fit(cov.split_after(pd.Timestamp(COLENC_SPLIT))[0])
    cov_t = cov_scaler.transform(cov)
    spec = importlib.util.spec_from_file_location("gen_darts",
                                                  ROOT / "scripts" / "gen-darts-fixtures.py")
    gd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gd)
    rec = gd.make_recorder()()
    with tempfile.TemporaryDirectory() as work_dir:
        model = RNNModel(
            model="LSTM", hidden_dim=12, dropout=0, batch_size=16, n_epochs=30,
            optimizer_kwargs={"lr": 5e-3}, model_name="colenc", work_dir=work_dir,
            random_state=3, training_length=12, input_chunk_length=6, force_reset=True,
            add_encoders={"datetime_attribute": {"future": ["month", "year"]},
                          "transformer": DScaler()},
            pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                               "enable_model_summary": False, "callbacks": [rec]})
        model.fit(train_t, future_covariates=cov_t, val_series=val_t, val_future_covariates=cov_t)
        pred = scaler.inverse_transform(model.predict(len(val), future_covariates=cov_t))
        # The fitted MinMaxScaler of the covariates [temp, month, year] (temp masked out).
        params = model.encoders.future_transformer.transformer._fitted_params[0]
    with open(FIXTURES / "cov_colenc_metrics.csv", "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rec.rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step,
                                        "" if train_loss is None else f"{train_loss:.9g}",
                                        "" if val_loss is None else f"{val_loss:.9g}"))
    lines = ["month,load"] + [f"{t:%Y-%m},{v:.9g}"
                              for t, v in zip(pred.time_index, pred.values()[:, 0])]
    (FIXTURES / "cov_colenc_forecast.csv").write_text("\n".join(lines) + "\n")
    steps = [r for r in rec.rows if r[2] is not None]
    vals = [r[3] for r in rec.rows if r[3] is not None]
    text = f"""# Covariate columns with encoders (`cov_load.csv`, `cov_colenc_*`)

Written by `scripts/gen-covariates-fixtures.py --columns-encoders` with darts
{darts.__version__}, pytorch-lightning {pytorch_lightning.__version__}, torch
{torch.__version__}, CPU, one thread.

`cov_load.csv`: 132 months (2010-01 .. 2020-12) of a `load` series and a `temp` column, split
after {COLENC_SPLIT[:7]} (108 / 24), `load` scaled by a Scaler fitted on the training part.
Darts' RNNModel (LSTM, hidden 12, training_length 12, input_chunk_length 6, batch 16, 30
epochs, lr 5e-3, random_state 3) with `temp` as future covariates (scaled by a Scaler fitted
on its training part) and `add_encoders={{'datetime_attribute': {{'future': ['month',
'year']}}, 'transformer': Scaler()}}`; tsrnn's `[covariates] columns = temp,
datetime_attribute = month, year, scaler = minmax`. With user covariates Darts encodes over
the covariates' own index (2010-01 .. 2020-12) and fits the transformer on all of it: the
year spans {params.data_min_[-1]:g} .. {params.data_max_[-1]:g} (the fitted transformer's
minimum and maximum of the encoders' columns month, year: {[float(v) for v in params.data_min_]}
and {[float(v) for v in params.data_max_]}), not the training part's 2010 .. 2018.

| steps | first train_loss | last train_loss | last val_loss | MAPE % of predict(24) |
|---|---|---|---|---|
| {len(steps)} | {steps[0][2]:.9g} | {steps[-1][2]:.9g} | {vals[-1]:.9g} | {float(mape(val, pred)):.4f} |
"""
    (FIXTURES / "covariates-columns-encoders.md").write_text(text)
    print(text)


def main():
    import sys

    import darts

    sys.path.insert(0, str(ROOT / "scripts"))
    if "--global" in sys.argv:
        global_run()
        return
    if "--columns-encoders" in sys.argv:
        colenc_run()
        return
    if "--parity" in sys.argv:
        darts_hparams()
        parity((42, 0, 1) if "--seeds" in sys.argv else (42,))
        return

    lines = [f"# Darts {darts.__version__}: encoders (scripts/gen-covariates-fixtures.py)"]
    for start, freq, length, encoders, reference in INDEXES:
        index = pd.date_range(start, periods=length, freq=freq)
        for kind, attribute in encoders:
            values = encode(index, kind, attribute, reference)
            first = index[0].strftime("%Y-%m-%dT%H:%M:%S")
            lines.append(f"case {first} {freq} {length} {kind} {attribute} "
                         f"{reference} {values.shape[1]}")
            lines.extend(rows(values))
    pipeline_case(lines)
    covariate_columns_csv()
    (FIXTURES / "encoders.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {FIXTURES / 'encoders.txt'}: {len(lines)} lines")


if __name__ == "__main__":
    main()
