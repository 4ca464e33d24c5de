"""A fit on several devices: tsrnn-launch runs the data-parallel workers as processes, as
Lightning's ddp_spawn does, here for pl_trainer_kwargs={"devices": N > 1} (or -1).

The workers read files, so the series go into CSV files in a private folder (float32 values
with 9 significant digits: read back exactly), named in the run's configuration beside its
other keys; the launcher's report is this process's output; Ctrl-C reaches the launcher,
which stops the workers at a step boundary, has rank 0 write a checkpoint and exits 130. The
model is then the run's last checkpoint, as after a fit in this process.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from . import _lib

_EXIT_STATUS = {2: _lib.USAGE, 3: _lib.COMM, 130: _lib.INTERRUPTED}


def _stamp_format(series):
    """The coarsest of tsrnn's time formats that shows every stamp of the series."""
    import pandas as pd

    index = pd.to_datetime(np.concatenate([s.times for s in series]), unit="s")
    if np.any(index.hour.to_numpy()) or np.any(index.minute.to_numpy()) or \
            np.any(index.second.to_numpy()):
        return "%Y-%m-%d %H:%M:%S"
    if np.any(index.day.to_numpy() != 1):
        return "%Y-%m-%d"
    if np.any(index.month.to_numpy() != 1):
        return "%Y-%m"
    return "%Y"


def _stamps(times, s, fmt):
    if not s.dates:
        return [str(int(t)) for t in times]
    import pandas as pd

    return list(pd.to_datetime(times, unit="s").strftime(fmt))


def _check_name(name, what):
    if not name or any(c in name for c in ',"\r\n') or name != name.strip():
        raise _lib.TsrnnUsageError(
            "%s %r: the data-parallel fit writes the series to CSV files, which need names "
            "without commas, quotes, line breaks or surrounding blanks" % (what, name))


def _covariate_rows(cov, times):
    """The covariates' rows at `times` (Darts aligns them by stamp)."""
    index = {int(t): i for i, t in enumerate(cov.times)}
    missing = [t for t in times if int(t) not in index]
    if missing:
        raise _lib.TsrnnDataError("future covariates have no row at %d" % missing[0])
    return cov.values[[index[int(t)] for t in times]]


def _write_csv(path, s, val, fmt):
    """One series (its training part, then its validation part) with its covariate columns."""
    times = s.times if val is None else np.concatenate([s.times, val.times])
    values = s.values if val is None else np.concatenate([s.values, val.values])
    columns = list(s.components)
    cov = None
    if s.covariates is not None:
        parts = [_covariate_rows(s.covariates, s.times)]
        if val is not None:
            source = val.covariates if val.covariates is not None else s.covariates
            parts.append(_covariate_rows(source, val.times))
        cov = np.concatenate(parts)
        columns += list(s.covariates.components)
    for name in columns:
        _check_name(name, "column")
    stamps = _stamps(times, s, fmt)
    with open(path, "w", encoding="utf-8") as f:
        f.write(",".join([s.time_name or "time"] + columns) + "\n")
        for i, stamp in enumerate(stamps):
            row = [stamp] + ["%.9g" % v for v in values[i]]
            if cov is not None:
                row += ["%.9g" % v for v in cov[i]]
            f.write(",".join(row) + "\n")


def _data_settings(folder, train, val):
    """--set arguments naming the series' files and how to read and split them."""
    first = train[0]
    fmt = _stamp_format(train + (val or [])) if first.dates else None
    paths = []
    for i, s in enumerate(train):
        if s.components != first.components or s.dates != first.dates:
            raise _lib.TsrnnDataError("series %d has other components or another index than "
                                      "series 0" % i)
        name = "series.csv" if len(train) == 1 else "%d.csv" % i
        path = os.path.join(folder, name)
        _write_csv(path, s, val[i] if val else None, fmt)
        paths.append(path)
    sets = ["data.path=" + ",".join(paths), "data.time_col=" + (first.time_name or "time"),
            "data.value_cols=" + ",".join(first.components), "data.scaler=none"]
    if first.freq:
        sets.append("data.freq=" + first.freq)
    if first.covariates is not None:
        sets.append("covariates.columns=" + ",".join(first.covariates.components))
    if val:
        ends = {int(s.times[-1]) for s in train}
        if len(ends) != 1:
            raise _lib.TsrnnUsageError(
                "a data-parallel fit splits every series at one stamp (split_after), but the "
                "training series end at %d different stamps; give them one end, or train on "
                "one device" % len(ends))
        sets.append("data.split_after=" + _stamps(first.times[-1:], first, fmt)[0])
    return sets


def _relay(stream, write, tail):
    """The launcher's report to `write`; its last 8 KiB kept in `tail` for the error."""
    for chunk in iter(lambda: stream.read1(65536), b""):
        write(chunk)
        tail[0] = (tail[0] + chunk)[-8192:]


def _error_line(tail):
    """The last `error:` line of the launcher's report (the worker's or its own)."""
    lines = [line for line in tail.decode("utf-8", "replace").splitlines() if "error:" in line]
    return lines[-1].strip() if lines else None


def fit(model, train, val, mode, write):
    run = model._run
    settings = model._settings
    launch = _lib.programs_dir() / "tsrnn-launch"
    if not launch.is_file():
        raise _lib.TsrnnUsageError("%s is missing: a data-parallel fit runs tsrnn-launch, which "
                                   "the wheel carries (reinstall tsrnn) or TSRNN_BIN_DIR names"
                                   % launch)
    folder = tempfile.mkdtemp(prefix="tsrnn-fit-")
    try:
        ini = Path(folder) / "run.ini"
        ini.write_text(run.config_text(), encoding="utf-8")
        sets = _data_settings(folder, train, val)
        argv = [str(launch), "--accelerator", settings.accelerator, "--devices",
                settings.devices]
        for s in sets:
            argv += ["--set", s]
        argv.append(str(ini))
        # A session of its own: Ctrl-C reaches the launcher once, through this process.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        tail = [b""]
        relay = threading.Thread(target=_relay, args=(proc.stdout, write, tail), daemon=True)
        relay.start()
        interrupted = False
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                if not interrupted:
                    proc.send_signal(signal.SIGINT)  # the workers stop at a step boundary
                interrupted = True
        relay.join()
        proc.stdout.close()
        run_dir = os.path.join(run.get("output", "work_dir"), run.get("output", "model_name"))
        if code == 0 or code == 130:
            run.load_checkpoint(run_dir, "last")
        model._fit_metrics.update(_metrics(os.path.join(run_dir, "metrics.csv")))
        if code == 130 or interrupted:
            raise KeyboardInterrupt("tsrnn: the data-parallel fit stopped at a step boundary")
        if code != 0:
            status = _EXIT_STATUS.get(code, _lib.IO)
            line = _error_line(tail[0])
            raise _lib.error(status, "tsrnn-launch exited with %d: %s" % (
                code, line if line else "its report is above"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _metrics(path):
    """first_step_loss, val_loss, epochs from a run's metrics.csv."""
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            next(f)
            for line in f:
                epoch, _, train_loss, val_loss = line.rstrip("\n").split(",")
                if train_loss and "first_step_loss" not in out:
                    out["first_step_loss"] = float(train_loss)
                if train_loss:
                    out["last_step_loss"] = float(train_loss)
                if val_loss:
                    out["val_loss"] = float(val_loss)
                    out["best_val_loss"] = min(out.get("best_val_loss", np.inf), float(val_loss))
                out["epochs"] = int(epoch) + 1
    except (OSError, ValueError, StopIteration):
        pass
    return out
