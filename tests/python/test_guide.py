"""The Darts guide's script (tests/python/guide.py) with one import changed, and its pandas
variant, give the command line's numbers exactly: the same metrics.csv (every step's loss,
every val_loss, the first step's 0.0775389 and the last val_loss 0.0204097 among them) and
the same 24-step forecast as tsrnn-worker on examples/air_passengers.ini. Where Darts is
importable, the unchanged script on real Darts gives the same MAPE and a forecast within
docs/numerics.md's bound (1e-4 relative)."""

import sys

import numpy as np

from conftest import (AIR_CSV, GUIDE, GUIDE_PANDAS, csv_column, darts_python, first, losses,
                      package_env, printed_forecast, printed_mape, run)

FORECAST_BOUND = 1e-4  # docs/numerics.md: the forecast against real Darts


def assert_same_as_command_line(stdout, run_dir, cli_run):
    train_loss, val_loss = losses(run_dir)
    cli_train_loss, cli_val_loss = losses(cli_run)
    assert first(train_loss) == first(cli_train_loss) == "0.0775388554"
    assert val_loss[-1] == cli_val_loss[-1] and val_loss[-1] == "0.0204097416"
    assert len(train_loss) == len(cli_train_loss) == 2100 + 300  # steps, then epochs' rows
    assert (train_loss, val_loss) == (cli_train_loss, cli_val_loss)
    assert "train_loss 0.0775389 (first step)" in stdout
    assert "val_loss 0.0204097 (last epoch)" in stdout
    forecast = printed_forecast(stdout)
    assert forecast == csv_column(cli_run / "forecast.csv", "#Passengers")
    assert len(forecast) == 24


def test_pandas_guide_equals_command_line(cli_run, tmp_path):
    stdout = run([sys.executable, GUIDE_PANDAS, AIR_CSV], cwd=tmp_path,
                 env=package_env())
    assert_same_as_command_line(stdout, tmp_path / "darts_logs" / "Air_RNN", cli_run)
    assert printed_mape(stdout) == "MAPE: 16.01%"
    # The run folder as tsrnn's: config, TensorBoard logs, the best and last checkpoints.
    run_dir = tmp_path / "darts_logs" / "Air_RNN"
    assert (run_dir / "config.ini").is_file()
    assert list((run_dir / "logs").iterdir())
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert names == sorted(p.name for p in (cli_run / "checkpoints").iterdir())


def guide_with_tsrnn(tmp_path):
    text = GUIDE.read_text(encoding="utf-8")
    assert text.count("from darts.models import RNNModel\n") == 1
    script = tmp_path / "guide_tsrnn.py"
    script.write_text(text.replace("from darts.models import RNNModel\n",
                                   "from tsrnn.darts import RNNModel\n"), encoding="utf-8")
    return script


def test_guide_with_one_import_changed_equals_command_line(cli_run, tmp_path):
    python = darts_python()
    stdout = run([python, guide_with_tsrnn(tmp_path)], cwd=tmp_path, env=package_env())
    assert_same_as_command_line(stdout, tmp_path / "darts_logs" / "Air_RNN", cli_run)
    assert printed_mape(stdout) == "MAPE: 16.01%"


def test_guide_on_real_darts_equals_tsrnn_within_bounds(cli_run, tmp_path):
    python = darts_python()
    stdout = run([python, GUIDE], cwd=tmp_path, env=package_env())
    darts = np.array(printed_forecast(stdout), dtype=np.float64)
    ours = np.array(csv_column(cli_run / "forecast.csv", "#Passengers"), dtype=np.float64)
    rel = float(np.max(np.abs(darts - ours) / np.abs(darts)))
    print("forecast against real Darts: within %.2g relative" % rel)
    assert rel < FORECAST_BOUND
    assert printed_mape(stdout) == "MAPE: 16.01%"
