"""Shared by scripts/tsrnn-to-darts and scripts/darts-to-tsrnn: moving one RNNModel between a
tsrnn run folder and Darts (optional; needs Python with darts, torch and safetensors).

tsrnn's checkpoints and Darts' module use the same PyTorch state_dict names
(`rnn.weight_ih_l0`, ..., `V.weight`, `V.bias`), so the weights move as they are; the
optimizer's state travels under tsrnn's `optim.exp_avg.<name>` / `optim.exp_avg_sq.<name>`
names (SGD's and RMSprop's momentum_buffer in exp_avg, RMSprop's square_avg and Adagrad's sum
in exp_avg_sq, centered RMSprop's grad_avg as `optim.grad_avg.<name>`: STATE_NAMES). What each
side calls the optimizer, scheduler, loss, clipping, early stopping, covariates and encoders
is mapped here, both ways, in one place (SCHEDULER_KEYS, OPTIMIZER_KEYS, LOSS_KEYS, METRICS);
what has no counterpart is refused (exit 2, one line naming it) or, for what does not change
a forecast, named in a "not carried" line.

Security (docs/security.md): a Darts file is read once, from one file handle, into a private
folder; Darts' safe loading then vets and loads that copy, and the bridge's own reading of
the Lightning checkpoint unpickles the same copy with torch's weights_only=True and Darts'
allow-list (everything, only with --trusted). Every value written into an INI file is checked
(no control character, no surrounding blank, no comma in a list item) and paths are written
relative to the INI file's folder.
"""

import configparser
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

EXIT_USAGE = 2  # bad arguments or files, as tsrnn's programs
EXIT_RUNTIME = 1

# Each scheduler's PyTorch keyword arguments, as tsrnn's [lr_scheduler_kwargs] names them, and
# their types (i int, f float, b bool, s text); Lightning's interval and frequency ride along,
# as Darts takes them from lr_scheduler_kwargs.
SCHEDULER_KEYS = {
    "ExponentialLR": {"gamma": "f"},
    "StepLR": {"step_size": "i", "gamma": "f"},
    "ReduceLROnPlateau": {"factor": "f", "patience": "i", "threshold": "f", "threshold_mode": "s",
                          "cooldown": "i", "min_lr": "f", "mode": "s"},
    "CosineAnnealingLR": {"T_max": "i", "eta_min": "f"},
    "OneCycleLR": {"max_lr": "f", "total_steps": "i", "epochs": "i", "steps_per_epoch": "i",
                   "pct_start": "f", "anneal_strategy": "s", "cycle_momentum": "b",
                   "base_momentum": "f", "max_momentum": "f", "div_factor": "f",
                   "final_div_factor": "f", "three_phase": "b"},
    "CosineAnnealingWarmRestarts": {"T_0": "i", "T_mult": "i", "eta_min": "f"},
    "LinearLR": {"start_factor": "f", "end_factor": "f", "total_iters": "i"},
}
LIGHTNING_KEYS = {"interval": "s", "frequency": "i"}
# tsrnn keys meaning "not set" at these values (PyTorch has no default for them)
UNSET = {"T_max": 0, "T_0": 0, "max_lr": 0.0, "total_steps": 0, "epochs": 0,
         "steps_per_epoch": 0}
# Each optimizer's PyTorch keyword arguments (beside lr) that tsrnn's [training] carries under
# the same names, their types, and PyTorch's defaults (tsrnn's -1 for weight_decay and eps
# means the optimizer's default).
OPTIMIZER_KEYS = {
    "Adam": {"weight_decay": ("f", 0.0), "eps": ("f", 1e-8)},
    "AdamW": {"weight_decay": ("f", 0.01), "eps": ("f", 1e-8)},
    "SGD": {"momentum": ("f", 0.0), "nesterov": ("b", False), "weight_decay": ("f", 0.0)},
    "RMSprop": {"alpha": ("f", 0.99), "eps": ("f", 1e-8), "weight_decay": ("f", 0.0),
                "momentum": ("f", 0.0), "centered": ("b", False)},
    "Adagrad": {"lr_decay": ("f", 0.0), "weight_decay": ("f", 0.0),
                "initial_accumulator_value": ("f", 0.0), "eps": ("f", 1e-10)},
}
OPTIMIZERS = tuple(OPTIMIZER_KEYS)
# Each optimizer's state in torch (per parameter) and where tsrnn keeps it: exp_avg,
# exp_avg_sq, grad_avg (None: a buffer tsrnn keeps as zeros).
STATE_NAMES = {
    "Adam": ("exp_avg", "exp_avg_sq", None),
    "AdamW": ("exp_avg", "exp_avg_sq", None),
    "SGD": ("momentum_buffer", None, None),
    "RMSprop": ("momentum_buffer", "square_avg", "grad_avg"),
    "Adagrad": (None, "sum", None),
}
# Each loss's constructor argument, as tsrnn's [training] key, and PyTorch's default.
LOSS_KEYS = {"MSELoss": {}, "L1Loss": {}, "HuberLoss": {"delta": 1.0},
             "SmoothL1Loss": {"beta": 1.0}}
LOSSES = tuple(LOSS_KEYS)
# [early_stopping] monitor values on a torchmetrics metric: the torchmetrics class each is
# (Darts logs the metrics of its torch_metrics as val_<name>).
METRICS = {"val_MeanAbsoluteError": "MeanAbsoluteError",
           "val_MeanSquaredError": "MeanSquaredError"}
ENCODER_KINDS = ("cyclic", "datetime_attribute", "position")  # add_encoders' keys tsrnn has


class BridgeError(Exception):
    """A message for the user and an exit code."""

    def __init__(self, message, code=EXIT_USAGE):
        super().__init__(message)
        self.code = code


def run_main(prog, main):
    try:
        main()
    except BridgeError as e:
        print("%s: error: %s" % (prog, printable(str(e))), file=sys.stderr)
        sys.exit(e.code)


def printable(text):
    """`text` with every byte a terminal would act on escaped (\\xNN), as tsrnn prints values
    from files."""
    return "".join(c if (c >= " " and c != "\x7f") or c == "\n" else "\\x%02x" % ord(c)
                   for c in str(text))


def import_darts(prog):
    try:
        import darts  # noqa: F401
        import safetensors  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        raise BridgeError(
            "%s needs Python with darts, torch and safetensors (%s); e.g. `python3 -m venv "
            "venv && venv/bin/pip install darts safetensors`, then run it with venv/bin/python"
            % (prog, e),
            EXIT_USAGE,
        )


# --- INI files (issue 39: a value must not be able to add keys) ---------------------------


def ini_value(key, value, list_item=False):
    """`value` as INI text for `key`, or BridgeError: tsrnn's INI has no quoting, so a control
    character (a newline would start a new key), a blank at either end (trimmed by the
    parser) or, in a list, a comma would change what the file says."""
    text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else \
        str(value).lower() if isinstance(value, bool) else str(value)
    bad = [c for c in text if c < " " or c == "\x7f"]
    what = None
    if bad:
        what = "holds the control character %r" % bad[0]
    elif text != text.strip():
        what = "begins or ends with a blank"
    elif list_item and ("," in text or not text):
        what = "holds a comma or is empty, in a comma-separated list"
    if what is not None:
        raise BridgeError("%s = %r %s, which tsrnn's INI cannot hold; accepted: printable "
                          "text without one (rename it)" % (key, text, what))
    return text


def ini_text(comment, sections):
    """An INI file: `comment` lines, then each (section, [(key, value or list)])."""
    lines = ["# " + printable(line).replace("\n", "\\n") for line in comment]
    for section, items in sections:
        lines.append("")
        lines.append("[%s]" % section)
        for key, value in items:
            if isinstance(value, (list, tuple)):
                text = ",".join(ini_value("[%s] %s" % (section, key), v, True) for v in value)
            else:
                text = ini_value("[%s] %s" % (section, key), value)
            lines.append("%s = %s" % (key, text))
    return "\n".join(lines) + "\n"


# --- files read once ------------------------------------------------------------------------


def read_once(path, what):
    """The bytes of the regular file `path`, read through one file handle: opened without
    blocking (a FIFO would wait for a writer), refused unless a regular file, then read."""
    try:
        fd = os.open(str(path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise BridgeError("%s %s: %s" % (what, path, e.strerror))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BridgeError("%s %s is not a regular file" % (what, path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


class PrivateCopies:
    """A private folder (mode 0700) holding copies of the Darts files read once: Darts' safe
    loading checks and loads the copy, and nothing can swap it between the reads."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="darts-to-tsrnn-"))

    def put(self, relative, data):
        path = self.dir / relative
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def safely(path, load):
    """Darts' safe loading refuses pickled objects it does not know (a TensorBoardLogger in
    pl_trainer_kwargs, or a crafted file): say so, on one line (Darts' own log of the error
    is held back), and how to go on."""
    import logging

    darts_log = logging.getLogger("darts")
    level = darts_log.level
    darts_log.setLevel(logging.CRITICAL)
    try:
        return load()
    except BridgeError:
        raise
    except Exception as e:  # darts.utils.serialization's UnpicklingError, pickle's
        name = type(e).__name__
        if "Unpickling" not in name and "unsafe" not in str(e).lower() and \
                "weights_only" not in str(e):
            raise
        raise BridgeError(
            "%s: Darts' safe loading refused it (%s); if you trust the file, pass --trusted"
            % (path, str(e).strip().split("\n")[0][:300])
        )
    finally:
        darts_log.setLevel(level)


def load_darts_model(path, trusted, copies):
    """A Darts RNNModel from `X.pt` (model.save(): X.pt + X.pt.ckpt), `X.pt.ckpt`, or a
    Lightning checkpoint `darts_logs/NAME/checkpoints/*.ckpt` (with NAME/_model.pth.tar two
    folders up); returns (model, the checkpoint's dict or None). Each file is read once into
    `copies`; Darts (trusted=False: its safe loading) loads those copies, and the checkpoint's
    dict is the same copy unpickled under torch's weights_only=True with Darts' allow-list."""
    from darts.models import RNNModel

    p = Path(path)
    if not p.exists():
        raise BridgeError("%s: no such file" % path)
    if p.name.endswith(".pt.ckpt"):
        p = p.with_name(p.name[: -len(".ckpt")])
    if p.suffix == ".ckpt":
        run = p.parent.parent
        base = run / "_model.pth.tar"
        if not base.is_file():
            raise BridgeError(
                "%s: a Lightning checkpoint without its model: expected %s (Darts' run folder, "
                "the checkpoint in its checkpoints/); or pass the .pt that model.save() wrote"
                % (path, base)
            )
        ckpt = copies.put("m/checkpoints/model.ckpt", read_once(p, "checkpoint"))
        copies.put("m/_model.pth.tar", read_once(base, "Darts model"))
        model = safely(path, lambda: RNNModel.load_from_checkpoint(
            model_name="m", work_dir=str(copies.dir), file_name="model.ckpt", best=False,
            trusted=trusted))
        return model, read_ckpt(ckpt, trusted, path)
    if p.name == "_model.pth.tar":
        raise BridgeError(
            "%s: Darts' model without weights; pass one of %s/checkpoints/*.ckpt"
            % (path, p.parent)
        )
    pt = copies.put("model.pt", read_once(p, "Darts model"))
    ckpt_path = Path(str(p) + ".ckpt")
    ckpt = copies.put("model.pt.ckpt", read_once(ckpt_path, "checkpoint")) \
        if ckpt_path.exists() else None
    model = safely(path, lambda: RNNModel.load(str(pt), trusted=trusted))
    if model.model is None or ckpt is None:
        raise BridgeError("%s: the model has no weights (no %s); fit it first" % (path, ckpt_path))
    return model, read_ckpt(ckpt, trusted, path)


def read_ckpt(copy, trusted, shown):
    """The Lightning checkpoint dict of the private copy `copy`: weights_only=True with Darts'
    allow-list for that file, as Darts loaded it (any object only with --trusted)."""
    import torch
    from darts.utils.serialization.torch import load_ckpt_safely

    return safely(shown, lambda: load_ckpt_safely(
        load_fn=lambda f, **kw: torch.load(f, map_location="cpu", **kw), path=str(copy),
        trusted=trusted))


# --- tsrnn's run folder and checkpoints ----------------------------------------------------


def find_checkpoint(run_dir, which):
    """checkpoints/best-*.safetensors or last-*.safetensors of a run, or a file path."""
    if which not in ("best", "last"):
        if not Path(which).is_file():
            raise BridgeError("--checkpoint %s: no such file" % which)
        return Path(which)
    found = sorted((Path(run_dir) / "checkpoints").glob(which + "-epoch=*.safetensors"))
    if not found and which == "best":  # max_steps = 0 or no validation: only a last one
        found = sorted((Path(run_dir) / "checkpoints").glob("last-epoch=*.safetensors"))
    if not found:
        raise BridgeError(
            "%s/checkpoints holds no %s-epoch=*.safetensors; train with [output] "
            "save_checkpoints = true, or pass --checkpoint FILE" % (run_dir, which)
        )
    # the newest epoch (names sort as text: epoch=10 before epoch=9)
    return max(found, key=lambda f: int(f.name.split("epoch=")[1].split("-")[0].split(".")[0]))


def parse_config(text):
    """tsrnn's resolved INI as {section: {key: text}}."""
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"))
    parser.optionxform = str
    parser.read_string(text)
    return {s: dict(parser[s]) for s in parser.sections()}


class TsrnnCheckpoint:
    """A tsrnn checkpoint: its tensors, metadata, config, series and covariates."""

    def __init__(self, path):
        from safetensors import safe_open
        from safetensors.torch import load_file

        self.path = Path(path)
        try:
            self.tensors = load_file(str(path))
            with safe_open(str(path), "pt") as f:
                self.meta = dict(f.metadata() or {})
        except Exception as e:
            raise BridgeError("%s: not a readable safetensors file (%s)" % (path, e))
        if "tsrnn.config" not in self.meta:
            raise BridgeError("%s: no tsrnn.config in its metadata: not a tsrnn checkpoint" % path)
        self.cfg = parse_config(self.meta["tsrnn.config"])
        self.series_meta = json.loads(self.meta.get("tsrnn.series", "{}"))
        listed = json.loads(self.meta.get("tsrnn.series_list", "null"))
        self.series_list = listed["series"] if listed else None
        self.covariates = json.loads(self.meta.get("tsrnn.covariates", "null"))
        self.scaler = json.loads(self.meta.get("tsrnn.scaler", "null"))

    def weights_and_moments(self):
        """The weights, and {name: (exp_avg, exp_avg_sq, grad_avg or None)}."""
        weights = {k: v for k, v in self.tensors.items() if not k.startswith("optim.")}
        moments = {}
        for name in weights:
            a = self.tensors.get("optim.exp_avg." + name)
            b = self.tensors.get("optim.exp_avg_sq." + name)
            if a is not None and b is not None:
                moments[name] = (a, b, self.tensors.get("optim.grad_avg." + name))
        return weights, moments

    def state(self, key):
        """`tsrnn.lr_scheduler` / `tsrnn.early_stopping` as {name: float}."""
        text = self.meta.get(key, "")
        return {k: float(v) for k, v in (item.split("=") for item in text.split() if "=" in item)}


def config_value(cfg, section, key, kind):
    text = cfg[section][key]
    if kind == "i":
        return int(text)
    if kind == "f":
        return float(text)
    if kind == "b":
        return text.strip().lower() in ("true", "yes", "on", "1")
    return text


def optimizer_kwargs(cfg):
    """The Darts optimizer_kwargs of a tsrnn config: lr, AdamW's weight_decay and SGD's
    momentum always (as tsrnn-to-darts wrote them before the other optimizers), every other
    argument of the optimizer where it is not PyTorch's default."""
    name = cfg["training"]["optimizer_cls"]
    kwargs = {"lr": float(cfg["training"]["lr"])}
    for key, (kind, default) in OPTIMIZER_KEYS[name].items():
        # a checkpoint of an older tsrnn lacks the newer keys: their defaults
        value = config_value(cfg, "training", key, kind) if key in cfg["training"] else default
        if key in ("weight_decay", "eps") and value < 0:
            value = default  # -1: the optimizer's default
        always = (name, key) in (("AdamW", "weight_decay"), ("SGD", "momentum"))
        if always or value != default:
            kwargs[key] = value
    return kwargs


def loss_object(cfg):
    """The torch loss of a tsrnn config, with its argument."""
    import torch

    name = cfg["training"]["loss_fn"]
    kwargs = {key: float(cfg["training"].get(key, default))
              for key, default in LOSS_KEYS[name].items()}
    return getattr(torch.nn, name)(**kwargs)


def scheduler_kwargs(cfg):
    """The Darts lr_scheduler_kwargs of a tsrnn config: the scheduler's keys (those PyTorch
    needs set, and the others at their values), Lightning's interval and frequency when they
    are not the defaults."""
    name = cfg["training"]["lr_scheduler_cls"]
    kwargs = {}
    for key, kind in SCHEDULER_KEYS[name].items():
        value = config_value(cfg, "lr_scheduler_kwargs", key, kind)
        if key in UNSET and value == UNSET[key]:
            continue
        kwargs[key] = value
    if name == "OneCycleLR" and "total_steps" in kwargs:
        kwargs.pop("epochs", None)
        kwargs.pop("steps_per_epoch", None)
    if cfg["lr_scheduler_kwargs"]["interval"] != "epoch":
        kwargs["interval"] = cfg["lr_scheduler_kwargs"]["interval"]
    if int(cfg["lr_scheduler_kwargs"]["frequency"]) != 1:
        kwargs["frequency"] = int(cfg["lr_scheduler_kwargs"]["frequency"])
    return kwargs


# --- data as tsrnn reads it ------------------------------------------------------------------


def data_paths(text):
    import glob

    paths = []
    for item in text.split(","):
        item = item.strip()
        if any(c in item for c in "*?["):
            matched = sorted(glob.glob(item))
            if not matched:
                raise BridgeError("[data] path %s matches no file" % item)
            paths += matched
        elif item:
            paths.append(item)
    return paths


def read_run_series(ck):
    """The run's series as tsrnn read them, in the run's order: [{id, series (the values,
    float32, gaps filled as tsrnn filled them), covariates (the data file's covariate columns,
    the same rows) or None, train_length}]."""
    import numpy as np
    import pandas as pd
    from darts import TimeSeries
    from darts.dataprocessing.transformers import MissingValuesFiller

    data, cov_cfg = ck.cfg["data"], ck.cfg["covariates"]
    value_cols = [c.strip() for c in data["value_cols"].split(",") if c.strip()]
    cov_cols = [c.strip() for c in cov_cfg["columns"].split(",") if c.strip()]
    time_col = data["time_col"] or None
    freq = ck.series_meta.get("freq")
    if time_col is None and freq is not None:
        freq = int(freq)
    fill_dates = data["fill_missing_dates"] == "true" or bool(data["freq"])
    kwargs = dict(time_col=time_col, freq=freq if (fill_dates or time_col is None) else None,
                  fill_missing_dates=fill_dates)
    columns = (value_cols + cov_cols) or None
    found = []
    try:
        if data["id_col"]:
            df = pd.read_csv(data_paths(data["path"])[0])
            groups = TimeSeries.from_group_dataframe(
                df, group_cols=data["id_col"], value_cols=columns, **kwargs)
            for g in groups:
                sid = str(g.static_covariates.iloc[0, 0])
                found.append((sid, g))
        else:
            for p in data_paths(data["path"]):
                found.append((Path(p).stem, TimeSeries.from_csv(p, value_cols=columns, **kwargs)))
    except (OSError, ValueError, KeyError) as e:
        raise BridgeError("cannot read the run's data again (%s): %s" % (data["path"], e))
    order = [s["id"] for s in ck.series_list] if ck.series_list else [found[0][0]]
    by_id = dict(found)
    out = []
    for k, sid in enumerate(order):
        if sid not in by_id:
            raise BridgeError("the run's data no longer holds series '%s' (%s)"
                              % (sid, data["path"]))
        s = by_id[sid].astype(np.float32)
        if s.static_covariates is not None:
            s = s.with_static_covariates(None)
        if data["fill_missing_values"] == "interpolate":
            s = MissingValuesFiller().transform(s)
        elif np.isnan(s.values()).any():
            raise BridgeError("series '%s' holds missing values, which the run refuses" % sid)
        meta = ck.series_list[k] if ck.series_list else ck.series_meta
        values = s[value_cols] if value_cols else s
        out.append({
            "id": sid,
            "series": values,
            "covariates": s[cov_cols] if cov_cols else None,
            "train_length": int(meta["train_length"]),
            "scaler": meta.get("scaler", ck.scaler),
            "covariate_scaler": meta.get("covariate_scaler",
                                         (ck.covariates or {}).get("scaler")),
        })
    return out


def darts_scaler_of(series_train, tsrnn_scaler, what):
    """A Darts Scaler fitted on `series_train`, checked against the fitted scaler tsrnn
    recorded (the same data give the same float32 minimum and maximum)."""
    import numpy as np
    from darts.dataprocessing.transformers import Scaler

    sc = Scaler().fit(series_train)
    params = sc._fitted_params[0]
    if tsrnn_scaler is not None and tsrnn_scaler.get("kind") == "minmax":
        want = np.asarray(tsrnn_scaler["data_min"][: len(params.data_min_)], np.float32), \
            np.asarray(tsrnn_scaler["data_max"][: len(params.data_max_)], np.float32)
        if not (np.array_equal(want[0], params.data_min_.astype(np.float32)) and
                np.array_equal(want[1], params.data_max_.astype(np.float32))):
            raise BridgeError(
                "%s: the data's training part spans %s .. %s, but the run was trained on %s .. "
                "%s; the data file changed since" % (what, list(params.data_min_),
                                                     list(params.data_max_), list(want[0]),
                                                     list(want[1])))
    return sc


# --- covariates -----------------------------------------------------------------------------


def encoder_list(ck):
    """The run's encoders in tsrnn's column order: [(kind, attribute)]."""
    if not ck.covariates:
        return []
    return [tuple(e.split(":", 1)) for e in ck.covariates["encoders"]]


def encoder_width(kind, attribute):
    if kind == "cyclic":
        return 2
    if kind == "one_hot":
        periods = {"month": 12, "day": 31, "hour": 24, "minute": 60, "second": 60,
                   "dayofweek": 7, "weekday": 7, "day_of_week": 7, "quarter": 4}
        return periods[attribute]
    return 1


def covariate_layout(ck, C):
    """tsrnn's input columns [targets, data columns, cyclic, datetime_attribute, one_hot,
    position] against Darts' [targets, user covariates (data columns, then one_hot), cyclic,
    datetime_attribute, position]: (permutation p, one_hot ranges) with Darts column j =
    tsrnn column p[j], and the tsrnn covariate column ranges of the one_hot encoders."""
    Kc = len(ck.covariates["data_columns"]) if ck.covariates else 0
    at = C + Kc
    spans = []
    for kind, attribute in encoder_list(ck):
        w = encoder_width(kind, attribute)
        spans.append((kind, attribute, at, at + w))
        at += w
    order = list(range(C + Kc))
    order += [c for kind, _, a, b in spans if kind == "one_hot" for c in range(a, b)]
    order += [c for kind, _, a, b in spans if kind != "one_hot" for c in range(a, b)]
    one_hot = [(attribute, a - C, b - C) for kind, attribute, a, b in spans if kind == "one_hot"]
    return order, one_hot


def add_encoders_of(ck):
    """Darts' add_encoders for the run's encoders (one_hot is no add_encoders key: it rides
    as user covariates)."""
    from darts.dataprocessing.transformers import Scaler

    enc = {}
    for kind, attribute in encoder_list(ck):
        if kind in ENCODER_KINDS:
            enc.setdefault(kind, {"future": []})["future"].append(attribute)
    if not enc:
        return None
    if ck.cfg["covariates"]["scaler"] == "minmax":
        enc["transformer"] = Scaler()
    return enc


def user_covariates(ck, item, one_hot, extend):
    """Darts' future covariates of one series: the data file's covariate columns scaled as the
    run scaled them (that series' fitted scaler), then the one-hot encoders' columns over the
    same index (scaled with the run's encoder scaler); None without either. Without data
    columns the index runs `extend` steps past the series, as far as forecasts may need."""
    import numpy as np
    from darts import TimeSeries
    from darts.utils.timeseries_generation import datetime_attribute_timeseries

    parts = []
    sc = item["covariate_scaler"]
    cov = item["covariates"]
    if cov is not None:
        if ck.cfg["covariates"]["scaler"] == "minmax":
            train = cov[: item["train_length"]]
            cov = darts_scaler_of(train, {k: (v[: cov.width] if isinstance(v, list) else v)
                                          for k, v in sc.items()},
                                  "the covariate columns of series '%s'" % item["id"]
                                  ).transform(cov)
        parts.append(cov)
        index = cov.time_index
    else:
        s = item["series"]
        index = s.append_values(np.zeros((extend, s.width), np.float32)).time_index
    for attribute, a, b in one_hot:
        values = datetime_attribute_timeseries(index, attribute=attribute, one_hot=True,
                                               dtype=np.float32).values()
        scale = np.asarray(sc["scale"][a:b], np.float32)
        offset = np.asarray(sc["offset"][a:b], np.float32)
        values = values * scale + offset
        names = ["%s_%d" % (attribute, j) for j in range(b - a)]
        parts.append(TimeSeries.from_times_and_values(index, values.astype(np.float32),
                                                      columns=names))
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.stack(p)
    return out


def set_encoder_transformer(model, ck):
    """Puts the run's fitted encoder scaler into Darts' add_encoders transformer (fitted by
    fit() on the same encodings: checked equal where Darts fits the same columns)."""
    import numpy as np

    tf = model.encoders.future_transformer if model.encoders is not None else None
    if tf is None or ck.cfg["covariates"]["scaler"] != "minmax":
        return
    sc = ck.covariates["scaler"]
    Kc = len(ck.covariates["data_columns"])
    # tsrnn's encoder columns in Darts' order (one_hot went to the user covariates)
    cols = []
    at = Kc
    for kind, attribute in encoder_list(ck):
        w = encoder_width(kind, attribute)
        if kind != "one_hot":
            cols += list(range(at, at + w))
        at += w
    params = tf.transformer._fitted_params[0]
    mask = np.asarray(tf.transform_mask)
    n_user = int(len(mask) - len(cols))
    masked = [c for j, c in enumerate(cols) if mask[n_user + j]]
    if len(masked) != len(params.scale_):
        raise BridgeError("Darts' encoder transformer scales %d columns, the run's %d"
                          % (len(params.scale_), len(masked)))
    f32 = np.float32
    params.data_min_ = np.asarray([sc["data_min"][c] for c in masked], f32)
    params.data_max_ = np.asarray([sc["data_max"][c] for c in masked], f32)
    params.data_range_ = (params.data_max_ - params.data_min_).astype(f32)
    params.scale_ = np.asarray([sc["scale"][c] for c in masked], f32)
    params.min_ = np.asarray([sc["offset"][c] for c in masked], f32)


def worker_path(explicit):
    for candidate in (
        explicit,
        os.environ.get("TSRNN_WORKER"),
        str(Path(__file__).resolve().parent.parent / "build" / "tsrnn-worker"),
        shutil.which("tsrnn-worker"),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BridgeError(
        "no tsrnn-worker found: pass --tsrnn-worker PATH or set TSRNN_WORKER (it writes the "
        "run folder's checkpoint)"
    )
