"""pip install . in a fresh virtual environment, offline, as docs/python.md says: the wheel
meson-python builds carries libtsrnn.so and the programs, and the installed package, with no
build tree in sight, runs the guide's pandas script to the command line's numbers and a
data-parallel fit through its own tsrnn-launch.

The environment is made with --system-site-packages (NumPy, pandas, meson-python from the
system: Debian's python3-numpy, python3-pandas, python3-mesonpy), and pip runs with
--no-build-isolation --no-deps --no-index: nothing is downloaded. The build folder is the
test's own (meson-python's builddir setting), so that it never touches the project's."""

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import AIR_CSV, AIR_INI, BIN, GUIDE_PANDAS, ROOT, csv_column, printed_forecast, run


def clean_env(home):
    """An environment without the source tree's package or the build's library."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TSRNN_LIBRARY", "TSRNN_BIN_DIR", "VIRTUAL_ENV")}
    env["PIP_NO_INDEX"] = "1"
    env["PIP_NO_CACHE_DIR"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["HOME"] = str(home)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A virtual environment with tsrnn installed by pip install .: its python."""
    try:
        import mesonpy  # noqa: F401
    except ImportError as e:
        pytest.skip("needs meson-python (Debian's python3-mesonpy, scripts/install-deps.sh "
                    "--test): %s" % e)
    where = tmp_path_factory.mktemp("wheel")
    env_dir = where / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # pip is the system's (Debian's python3-pip, seen through --system-site-packages)
    run([python, "-m", "pip", "--version"], cwd=where, env=clean_env(where))
    run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
         "--config-settings=builddir=%s" % (where / "build"), str(ROOT)], cwd=where,
        env=clean_env(where))
    return python, where


def test_the_wheel_carries_the_library_and_the_programs(installed):
    python, where = installed
    code = ("import os, tsrnn\n"
            "folder = os.path.dirname(tsrnn.__file__)\n"
            "print(tsrnn.version())\n"
            "print(folder)\n"
            "print(' '.join(sorted(os.listdir(os.path.join(folder, '_bin')))))\n")
    out = run([python, "-c", code], cwd=where, env=clean_env(where))
    version, folder, programs = out.splitlines()
    assert version == "0.1.0"
    assert Path(folder).resolve().is_relative_to(where.resolve())  # not the source tree
    assert (Path(folder) / "libtsrnn.so").is_file()
    for program in ("tsrnn-worker", "tsrnn-launch", "tsrnn-predict"):
        assert program in programs.split()
    assert any(p.startswith("tsrnn-comm-gloo") for p in programs.split())


def test_the_installed_package_gives_the_command_lines_numbers(installed, cli_run, tmp_path):
    python, where = installed
    out = run([python, GUIDE_PANDAS, AIR_CSV], cwd=tmp_path, env=clean_env(where))
    assert printed_forecast(out) == csv_column(cli_run / "forecast.csv", "#Passengers")
    assert "train_loss 0.0775389 (first step)" in out
    assert "val_loss 0.0204097 (last epoch)" in out


def test_the_installed_package_runs_its_own_launcher(installed, tmp_path):
    python, where = installed
    run([BIN / "tsrnn-launch", "--accelerator", "cpu", "--devices", 2, "--set",
         "training.n_epochs=5", "--set", "output.work_dir=%s" % (tmp_path / "cli"), AIR_INI],
        cwd=tmp_path)
    script = GUIDE_PANDAS.read_text(encoding="utf-8").replace(
        "n_epochs=300,", "n_epochs=5, pl_trainer_kwargs={'accelerator': 'cpu', 'devices': 2},")
    (tmp_path / "dp.py").write_text(script, encoding="utf-8")
    out = run([python, tmp_path / "dp.py", AIR_CSV], cwd=tmp_path, env=clean_env(where))
    assert "tsrnn-launch: 2 workers (cpu, gloo)" in out
    assert printed_forecast(out) == csv_column(tmp_path / "cli" / "Air_RNN" / "forecast.csv",
                                               "#Passengers")
