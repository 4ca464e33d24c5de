"""tsrnn.RNNModel without Darts (pandas and NumPy series), against the programs: arguments
refused by name; covariates and encoders, a data-parallel fit, a checkpoint loaded from a run
folder, backtests, each equal to what tsrnn-worker, tsrnn-launch and tsrnn-predict give on the
same data; save/load; zero-copy; Ctrl-C; the core's imports."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from conftest import (AIR_INI, BIN, air_series, csv_column, losses, package_env, run)

import tsrnn
from tsrnn import RNNModel, TsrnnUsageError
from tsrnn import _series

QUIET = {"accelerator": "cpu", "enable_progress_bar": False}


def scaled_air():
    """The guide's series split after 1959-01 and scaled as Darts' Scaler does (float32)."""
    series = air_series()
    train, val = series[:"1959-01-01"], series["1959-02-01":]
    lo, hi = train.min(), train.max()
    scale = np.float32(1) / (hi - lo)
    offset = np.float32(0) - lo * scale
    return ((train * scale + offset).astype(np.float32),
            (val * scale + offset).astype(np.float32), scale, offset)


def texts(values):
    return ["%.9g" % v for v in np.asarray(values, dtype=np.float32).ravel()]


def guide_model(**kwargs):
    args = dict(model="RNN", hidden_dim=20, dropout=0, batch_size=16, n_epochs=300,
                optimizer_kwargs={"lr": 1e-3}, model_name="Air_RNN", random_state=42,
                training_length=20, input_chunk_length=14, force_reset=True,
                pl_trainer_kwargs=QUIET)
    args.update(kwargs)
    return RNNModel(**args)


# --- arguments -----------------------------------------------------------------------------

def test_unknown_arguments_are_refused_by_name():
    with pytest.raises(TypeError) as e:
        RNNModel(14, hiden_dim=20, foo=1)
    assert "unexpected keyword arguments 'foo', 'hiden_dim'" in str(e.value)
    assert "hidden_dim" in str(e.value)  # what it takes


@pytest.mark.parametrize("kwargs, words", [
    (dict(model="TCN"), ["RNNModel(model='TCN')", "'RNN', 'LSTM', 'GRU'"]),
    (dict(hidden_dim=0), ["RNNModel(hidden_dim=0)", "[model] hidden_dim", "1 to 65536"]),
    (dict(pl_trainer_kwargs={"accelerator": "cpu", "foo": 1}), ["pl_trainer_kwargs", "'foo'"]),
    (dict(pl_trainer_kwargs={"precision": "16-mixed"}), ["precision", "32-true"]),
    (dict(optimizer_kwargs={"lr": 1e-3, "betas": (0.8, 0.9)}), ["betas", "PyTorch's default"]),
    (dict(nr_epochs_val_period=2), ["nr_epochs_val_period=2", "every epoch"]),
    (dict(output_chunk_length=3), ["output_chunk_length=3", "forces"]),
])
def test_values_tsrnn_does_not_have_are_refused_naming_them(kwargs, words):
    with pytest.raises(TsrnnUsageError) as e:
        RNNModel(14, **kwargs)
    for word in words:
        assert word in str(e.value)


def test_fit_and_predict_arguments_tsrnn_does_not_have_are_refused(tmp_path):
    model = RNNModel(4, n_epochs=1, work_dir=str(tmp_path), pl_trainer_kwargs=QUIET)
    values = np.arange(30, dtype=np.float32) / 30
    with pytest.raises(TsrnnUsageError, match=r"past_covariates.*future covariates only"):
        model.fit(values, past_covariates=values)
    with pytest.raises(TsrnnUsageError, match=r"stride=2"):
        model.fit(values, stride=2)
    with pytest.raises(TsrnnUsageError, match=r"not fitted"):
        model.predict(3)
    model.fit(values)
    with pytest.raises(TsrnnUsageError, match=r"retrain=True.*retrain=False"):
        model.historical_forecasts(values)


# --- series in and out ---------------------------------------------------------------------

def test_numpy_float32_rows_are_not_copied():
    rows = np.random.default_rng(0).random((50, 2), dtype=np.float32)
    assert _series.to_series(rows).values is rows
    column = np.arange(50, dtype=np.float32)
    assert np.shares_memory(_series.to_series(column).values, column)
    frame = pd.DataFrame(rows, index=pd.date_range("2000-01-01", periods=50, freq="D"))
    assert np.shares_memory(_series.to_series(frame).values, rows)
    # other layouts and types are converted
    assert not np.shares_memory(_series.to_series(rows.astype(np.float64)).values, rows)
    assert not np.shares_memory(_series.to_series(rows[::2]).values, rows)


def test_forecasts_come_back_in_the_kind_given(tmp_path):
    values = (np.sin(np.arange(60, dtype=np.float32) / 4) + 1) / 2
    args = dict(input_chunk_length=8, model="GRU", hidden_dim=8, n_epochs=3, random_state=0,
                work_dir=str(tmp_path), pl_trainer_kwargs=QUIET)
    by_array = RNNModel(model_name="array", **args).fit(values).predict(5)
    assert isinstance(by_array, np.ndarray) and by_array.shape == (5,)
    series = pd.Series(values, index=pd.date_range("2001-01-01", periods=60, freq="MS"),
                       name="y")
    model = RNNModel(model_name="pandas", **args).fit(series)
    forecast = model.predict(5)
    assert isinstance(forecast, pd.Series) and forecast.name == "y"
    assert list(forecast.index) == list(pd.date_range("2006-01-01", periods=5, freq="MS"))
    assert texts(forecast) == texts(by_array)  # the same windows, weights and steps
    both = model.predict(5, series=[series, series.to_frame()])
    assert isinstance(both, list) and isinstance(both[1], pd.DataFrame)
    assert texts(both[0]) == texts(both[1]) == texts(forecast)
    with pytest.raises(tsrnn.TsrnnDataError, match=r"freq"):
        model.predict(5, series=values)  # an integer index for a model of monthly series


# --- checkpoints and backtests against tsrnn-predict ---------------------------------------

def test_load_from_checkpoint_equals_tsrnn_predict(cli_run, tmp_path):
    run([BIN / "tsrnn-predict", "--run", cli_run, "--checkpoint", "best", "--n", 24, "--out",
         tmp_path / "best.csv"], cwd=tmp_path)
    model = RNNModel.load_from_checkpoint("Air_RNN", work_dir=str(cli_run.parent), best=True)
    assert os.path.basename(model.checkpoint).startswith("best-epoch=245-")
    train = air_series()[:"1959-01-01"]
    forecast = model.predict(24, series=train)  # the checkpoint's scaler: the original scale
    assert texts(forecast) == csv_column(tmp_path / "best.csv", "#Passengers")
    assert forecast.index[0] == pd.Timestamp("1959-02-01")
    last = RNNModel.load_from_checkpoint("Air_RNN", work_dir=str(cli_run.parent), best=False)
    assert texts(last.predict(24, series=train)) == csv_column(cli_run / "forecast.csv",
                                                               "#Passengers")


def test_historical_forecasts_and_backtest_equal_tsrnn_predict(cli_run, tmp_path):
    run([BIN / "tsrnn-predict", "--run", cli_run, "--checkpoint", "best", "--backtest",
         "--horizon", 6, "--start", "1958-01", "--stride", 3, "--out", tmp_path], cwd=tmp_path)
    model = RNNModel.load_from_checkpoint("Air_RNN", work_dir=str(cli_run.parent))
    series = air_series()
    forecasts = model.historical_forecasts(series, start=pd.Timestamp("1958-01-01"),
                                           forecast_horizon=6, stride=3, retrain=False,
                                           last_points_only=False)
    assert len(forecasts) == 11 and all(len(f) == 6 for f in forecasts)
    assert [texts(f) for f in forecasts] == \
        [csv_column(tmp_path / "backtest.csv", "#Passengers")[i:i + 6] for i in range(0, 66, 6)]
    errors = {row_start: mape for row_start, mape in zip(
        csv_column(tmp_path / "backtest_errors.csv", "start"),
        csv_column(tmp_path / "backtest_errors.csv", "mape"))}
    value = model.backtest(series, start=pd.Timestamp("1958-01-01"), forecast_horizon=6,
                           stride=3, retrain=False)
    assert "%.9g" % value == errors["backtest"] == "10.4924609"


def test_save_and_load_give_the_same_forecasts(tmp_path):
    train, val, _, _ = scaled_air()
    os.chdir(tmp_path)
    model = guide_model(n_epochs=20).fit(train, val_series=val)
    before = model.predict(24)
    path = model.save(str(tmp_path / "air.safetensors"))
    loaded = RNNModel.load(path)
    assert texts(loaded.predict(24)) == texts(before)  # its training series beside it
    assert loaded.model_params["hidden_dim"] == 20
    best = RNNModel.load_from_checkpoint("Air_RNN", best=True)
    assert texts(best.predict(24)) != texts(before)  # the best epoch is not the last
    assert texts(RNNModel.load_from_checkpoint("Air_RNN", best=False).predict(24)) == \
        texts(before)


# --- covariates and encoders, and a data-parallel fit, against the programs ----------------

def test_covariates_and_encoders_equal_the_command_line(tmp_path):
    series = air_series()
    cov = pd.DataFrame({"trend": np.linspace(0, 1, len(series), dtype=np.float32),
                        "wave": np.cos(np.arange(len(series)) / 3).astype(np.float32)},
                       index=series.index)
    data = tmp_path / "air_cov.csv"
    frame = series.to_frame().join(cov)
    frame.index = frame.index.strftime("%Y-%m")
    frame.to_csv(data, float_format="%.9g")
    run([BIN / "tsrnn-worker", AIR_INI, "--set", "data.path=%s" % data, "--set",
         "covariates.columns=trend,wave", "--set", "covariates.cyclic=month", "--set",
         "training.n_epochs=40", "--set", "forecast.n=23", "--set",
         "output.work_dir=%s" % (tmp_path / "cli"), "--progress", "none"], cwd=tmp_path)
    train, val, scale, offset = scaled_air()
    model = guide_model(n_epochs=40, work_dir=str(tmp_path / "py"),
                        add_encoders={"cyclic": {"future": ["month"]}})
    model.fit(train, future_covariates=cov, val_series=val, val_future_covariates=cov)
    assert losses(tmp_path / "py" / "Air_RNN") == losses(tmp_path / "cli" / "Air_RNN")
    forecast = ((model.predict(23, future_covariates=cov) - offset) / scale).astype(np.float32)
    assert texts(forecast) == csv_column(tmp_path / "cli" / "Air_RNN" / "forecast.csv",
                                         "#Passengers")


def test_devices_2_runs_the_launcher_and_equals_tsrnn_launch(tmp_path):
    run([BIN / "tsrnn-launch", "--accelerator", "cpu", "--devices", 2, "--set",
         "training.n_epochs=30", "--set", "output.work_dir=%s" % (tmp_path / "cli"), AIR_INI],
        cwd=tmp_path)
    train, val, scale, offset = scaled_air()
    model = guide_model(n_epochs=30, work_dir=str(tmp_path / "py"),
                        pl_trainer_kwargs={"accelerator": "cpu", "devices": 2,
                                           "strategy": "ddp_spawn", "enable_progress_bar": False})
    model.fit(train, val_series=val)
    cli_losses = losses(tmp_path / "cli" / "Air_RNN")
    assert losses(tmp_path / "py" / "Air_RNN") == cli_losses
    assert cli_losses[0][0] == "0.084212333"  # two ranks' mean: not the one-process step
    assert model.metrics["epochs"] == 30
    forecast = ((model.predict(24) - offset) / scale).astype(np.float32)
    assert texts(forecast) == csv_column(tmp_path / "cli" / "Air_RNN" / "forecast.csv",
                                         "#Passengers")


# --- Ctrl-C --------------------------------------------------------------------------------

INTERRUPTED_FIT = """
import os, sys, time
import numpy as np
from tsrnn import RNNModel
values = (np.sin(np.arange(400, dtype=np.float32) / 6) + 1) / 2
model = RNNModel(12, model="LSTM", hidden_dim=16, batch_size=8, n_epochs=1000000,
                 model_name="long", random_state=1, force_reset=True,
                 pl_trainer_kwargs={"accelerator": "cpu", "devices": int(sys.argv[1]),
                                    "enable_progress_bar": False})
try:
    model.fit(values)
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
    print("forecast after it:", len(model.predict(3)), os.path.basename(model.checkpoint))
    print("checkpoints:", " ".join(sorted(os.listdir(os.path.join(model.run_dir,
                                                                   "checkpoints")))))
    sys.exit(42)
"""


@pytest.mark.parametrize("devices", [1, 2])
def test_ctrl_c_stops_the_fit_cleanly(tmp_path, devices):
    script = tmp_path / "fit.py"
    script.write_text(INTERRUPTED_FIT, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), str(devices)], cwd=str(tmp_path),
                            env=package_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    metrics = tmp_path / "darts_logs" / "long" / "metrics.csv"
    deadline = time.monotonic() + 60
    while not (metrics.is_file() and metrics.stat().st_size > 2000):
        assert proc.poll() is None and time.monotonic() < deadline, "the fit did not start"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C or a notebook's interrupt does
    sent = time.monotonic()
    out, _ = proc.communicate(timeout=60)
    stopped_s = time.monotonic() - sent
    assert proc.returncode == 42, out[-3000:]
    assert re.search(r"^KeyboardInterrupt: (tsrnn: the data-parallel fit stopped at a step "
                     r"boundary|interrupted at epoch \d+ after step \d+: .*metrics.csv holds "
                     r"the \d+ finished steps; checkpoint: .*last-epoch=\d+\.safetensors)$",
                     out, re.M), out[-3000:]
    assert "last-epoch=" in out.splitlines()[-1]  # a checkpoint to resume from
    # the model is what it trained so far, as Darts' after a KeyboardInterrupt
    assert re.search(r"^forecast after it: 3 last-epoch=\d+\.safetensors$", out, re.M), out
    steps = [line for line in metrics.read_text().splitlines()[1:] if line.split(",")[2]]
    assert len(steps) > 10
    assert stopped_s < 10, "took %.1f s to stop" % stopped_s


# --- imports -------------------------------------------------------------------------------

def test_the_core_needs_numpy_alone_and_tsrnn_darts_says_what_to_install(tmp_path):
    code = ("import sys\n"
            "import tsrnn\n"
            "assert tsrnn.version() == '%s'\n"
            "assert not {'pandas', 'darts', 'torch'} & set(sys.modules), sys.modules.keys()\n"
            "sys.modules['darts'] = None  # as where Darts is not installed\n"
            "try:\n"
            "    import tsrnn.darts\n"
            "except ImportError as e:\n"
            "    print(e)\n" % tsrnn.version())
    out = run([sys.executable, "-c", code], cwd=tmp_path, env=package_env())
    assert "tsrnn.darts is for scripts written for Darts and needs it: pip install darts" in out


def test_a_failed_data_parallel_fit_raises_with_the_launchers_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the guide's GPU settings on no GPU
    model = RNNModel(4, n_epochs=2, work_dir=str(tmp_path),
                     pl_trainer_kwargs={"accelerator": "gpu", "devices": -1,
                                        "enable_progress_bar": False})
    with pytest.raises(TsrnnUsageError) as e:
        model.fit(np.arange(40, dtype=np.float32) / 40)
    assert str(e.value).startswith("tsrnn-launch exited with 2: tsrnn-launch: error: "
                                   "--accelerator gpu, but no GPU is visible")
