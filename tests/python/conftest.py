"""What the Python tests share: where the build's programs and libtsrnn.so are, the command
line's run of examples/air_passengers.ini to compare with, and running a script of the guide
as a user would (a process of its own, in a fresh folder).

meson runs these with TSRNN_SOURCE_ROOT, TSRNN_BIN_DIR (the build folder: tsrnn-worker,
tsrnn-launch, tsrnn-predict) and TSRNN_LIBRARY (its libtsrnn.so) set (tests/meson.build);
by hand, from the source folder: TSRNN_BIN_DIR=build TSRNN_LIBRARY=build/libtsrnn.so
python3 -m pytest tests/python. Darts is needed by a few tests only: $TSRNN_DARTS_PYTHON (a
Python that imports darts), else they skip, saying so.
"""

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(os.environ.get("TSRNN_SOURCE_ROOT", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("TSRNN_BIN_DIR", ROOT / "build")).resolve()
LIBRARY = Path(os.environ.get("TSRNN_LIBRARY", BIN / "libtsrnn.so")).resolve()
AIR_CSV = ROOT / "examples" / "data" / "air_passengers.csv"
AIR_INI = ROOT / "examples" / "air_passengers.ini"
GUIDE = ROOT / "tests" / "python" / "guide.py"
GUIDE_PANDAS = ROOT / "tests" / "python" / "guide_pandas.py"
TIMEOUT = 600

# This process imports the package from the source tree, with the build's library.
os.environ["TSRNN_LIBRARY"] = str(LIBRARY)
os.environ["TSRNN_BIN_DIR"] = str(BIN)
sys.path.insert(0, str(ROOT / "python"))


def package_env(**extra):
    """The environment of a process that imports tsrnn from the source tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python")] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


def run(argv, cwd, env=None, code=0, timeout=TIMEOUT):
    """Runs a program; its exit code must be `code`. Returns its standard output."""
    done = subprocess.run([str(a) for a in argv], cwd=str(cwd), env=env, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != code:
        raise AssertionError("%s exited %d, expected %d\n--- stdout\n%s\n--- stderr\n%s" % (
            " ".join(map(str, argv)), done.returncode, code, done.stdout[-4000:],
            done.stderr[-4000:]))
    return done.stdout


def printed_forecast(stdout):
    """The `forecast: v1 v2 ...` line a guide script prints, as its texts (%.9g)."""
    lines = [line for line in stdout.splitlines() if line.startswith("forecast:")]
    assert len(lines) == 1, stdout[-2000:]
    return lines[0].split()[1:]


def printed_mape(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("MAPE: ")]
    assert len(lines) == 1, stdout[-2000:]
    return lines[0]


def csv_column(path, column):
    with open(path, newline="", encoding="utf-8") as f:
        return [row[column] for row in csv.DictReader(f)]


def losses(run_dir):
    """metrics.csv's (train_loss, val_loss) columns, as written."""
    path = Path(run_dir) / "metrics.csv"
    return csv_column(path, "train_loss"), csv_column(path, "val_loss")


def first(values):
    return next(v for v in values if v)


def air_series():
    """AirPassengers as the guide reads it: a float32 pandas Series, monthly."""
    import pandas as pd

    series = pd.read_csv(AIR_CSV, index_col="Month", parse_dates=True)["#Passengers"]
    return series.astype(np.float32).asfreq("MS")


def darts_python():
    """$TSRNN_DARTS_PYTHON, if it imports darts; else skips the test, saying why."""
    python = os.environ.get("TSRNN_DARTS_PYTHON")
    if not python:
        pytest.skip("needs Darts: set TSRNN_DARTS_PYTHON to a Python that imports darts "
                    "(CI has none)")
    done = subprocess.run([python, "-c", "import darts"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("TSRNN_DARTS_PYTHON=%s cannot import darts: %s"
                    % (python, done.stderr.strip().splitlines()[-1:]))
    return python


@pytest.fixture(scope="session")
def cli_run(tmp_path_factory):
    """tsrnn-worker on examples/air_passengers.ini (the guide's model): its run folder
    (metrics.csv, forecast.csv, checkpoints)."""
    work = tmp_path_factory.mktemp("cli")
    run([BIN / "tsrnn-worker", AIR_INI, "--set", "output.work_dir=%s" % work, "--set",
         "trainer.num_threads=1", "--progress", "none"], cwd=work)
    return work / "Air_RNN"
