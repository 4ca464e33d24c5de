"""Shared by scripts/tsrnn-to-darts and scripts/darts-to-tsrnn: moving one RNNModel between a
tsrnn run folder and Darts (optional; needs Python with darts, torch and safetensors).

tsrnn's checkpoints and Darts' module use the same PyTorch state_dict names
(`rnn.weight_ih_l0`, ..., `V.weight`, `V.bias`), so the weights move as they are; Adam's
moments travel under tsrnn's `optim.exp_avg.<name>` / `optim.exp_avg_sq.<name>` names.
"""

import configparser
import math
import os
import shutil
import sys
from pathlib import Path

EXIT_USAGE = 2  # bad arguments or files, as tsrnn's programs
EXIT_RUNTIME = 1


class BridgeError(Exception):
    """A message for the user and an exit code."""

    def __init__(self, message, code=EXIT_USAGE):
        super().__init__(message)
        self.code = code


def run_main(prog, main):
    try:
        main()
    except BridgeError as e:
        print("%s: error: %s" % (prog, e), file=sys.stderr)
        sys.exit(e.code)


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


# --- tsrnn's side -------------------------------------------------------------------------


def read_run_config(run_dir):
    """The resolved config.ini of a tsrnn run folder, as {section: {key: text}}."""
    path = Path(run_dir) / "config.ini"
    if not path.is_file():
        raise BridgeError("%s: no config.ini; expected a tsrnn run folder" % run_dir)
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"))
    parser.optionxform = str
    parser.read(path)
    return {s: dict(parser[s]) for s in parser.sections()}


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
    return found[0]


def load_series(cfg):
    """The run's series, split and scaled as tsrnn does: (train_scaled, val_scaled or None,
    scaler or None, train, val)."""
    import numpy as np
    import pandas as pd
    from darts import TimeSeries
    from darts.dataprocessing.transformers import Scaler

    data = cfg["data"]
    value_cols = [c.strip() for c in data.get("value_cols", "").split(",") if c.strip()]
    kwargs = {"value_cols": value_cols or None}
    if data.get("time_col"):
        kwargs["time_col"] = data["time_col"]
    if data.get("freq"):
        kwargs["freq"] = data["freq"]
    if data.get("fill_missing_dates") == "true":
        kwargs["fill_missing_dates"] = True
    series = TimeSeries.from_csv(data["path"], **kwargs).astype(np.float32)
    split = data.get("split_after", "")
    fraction = float(data.get("val_fraction", "0") or 0)
    train, val = series, None
    if split:
        at = int(split) if split.lstrip("-").isdigit() and not data.get("time_col") else None
        train, val = series.split_after(at if at is not None else pd.Timestamp(split))
    elif fraction > 0:
        n_val = math.floor(len(series) * fraction)
        train, val = series[: len(series) - n_val], series[len(series) - n_val :]
    scaler = None
    train_s, val_s = train, val
    if data.get("scaler", "minmax") == "minmax":
        scaler = Scaler()
        train_s = scaler.fit_transform(train)
        val_s = scaler.transform(val) if val is not None else None
    return train_s, val_s, scaler, train, val


def darts_model_of(cfg, work_dir, model_name):
    from darts.models import RNNModel

    m, t = cfg["model"], cfg["training"]
    return RNNModel(
        model=m["model"],
        hidden_dim=int(m["hidden_dim"]),
        n_rnn_layers=int(m["n_rnn_layers"]),
        dropout=float(m["dropout"]),
        training_length=int(m["training_length"]),
        input_chunk_length=int(m["input_chunk_length"]),
        batch_size=int(t["batch_size"]),
        n_epochs=int(t["n_epochs"]),
        optimizer_kwargs={"lr": float(t["lr"])},
        random_state=int(t["random_state"]),
        model_name=model_name,
        work_dir=str(work_dir),
        pl_trainer_kwargs={"accelerator": "cpu"},
    )


def quiet_trainer(max_steps=0):
    import pytorch_lightning as pl

    return pl.Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


def split_tensors(tensors):
    """(weights, {name: (exp_avg, exp_avg_sq)}) from a tsrnn checkpoint's tensors."""
    weights = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    moments = {}
    for name in weights:
        a, b = tensors.get("optim.exp_avg." + name), tensors.get("optim.exp_avg_sq." + name)
        if a is not None and b is not None:
            moments[name] = (a, b)
    return weights, moments


# --- Darts' side ---------------------------------------------------------------------------


def load_darts_model(path, trusted=False):
    """A Darts RNNModel from `X.pt` (model.save(): X.pt + X.pt.ckpt), `X.pt.ckpt`, or a
    Lightning checkpoint `darts_logs/NAME/checkpoints/*.ckpt` (with NAME/_model.pth.tar
    beside it); returns (model, the .ckpt path or None)."""
    from darts.models import RNNModel

    p = Path(path)
    if not p.is_file():
        raise BridgeError("%s: no such file" % path)
    if p.name.endswith(".pt.ckpt"):
        p = p.with_name(p.name[: -len(".ckpt")])
    if p.suffix == ".ckpt":
        run = p.parent.parent
        if not (run / "_model.pth.tar").is_file():
            raise BridgeError(
                "%s: a Lightning checkpoint without its model: expected %s/_model.pth.tar "
                "(Darts' run folder) beside checkpoints/; or pass the .pt that model.save() "
                "wrote" % (path, run)
            )
        model = safely(
            path,
            lambda: RNNModel.load_from_checkpoint(
                model_name=run.name, work_dir=str(run.parent), file_name=p.name, best=False,
                trusted=trusted,
            ),
        )
        return model, p
    if p.name == "_model.pth.tar":
        raise BridgeError(
            "%s: Darts' model without weights; pass one of %s/checkpoints/*.ckpt"
            % (path, p.parent)
        )
    model = safely(path, lambda: RNNModel.load(str(p), trusted=trusted))
    ckpt = Path(str(p) + ".ckpt")
    if model.model is None:
        raise BridgeError("%s: the model has no weights (no %s); fit it first" % (path, ckpt))
    return model, ckpt if ckpt.is_file() else None


def safely(path, load):
    """Darts' safe loading refuses pickled objects it does not know (a TensorBoardLogger in
    pl_trainer_kwargs, say): say so and how to go on."""
    try:
        return load()
    except Exception as e:  # darts.utils.serialization's UnpicklingError, pickle's
        if "UnpicklingError" not in type(e).__name__:
            raise
        raise BridgeError(
            "%s: Darts' safe loading refused it (%s); if you trust the file, pass --trusted"
            % (path, str(e).split("\n")[0])
        )


def adam_moments(ckpt_path, names):
    """Adam's moments and step from a Lightning checkpoint's optimizer state, by parameter
    name (model.parameters() order = state_dict order for this module), or ({}, 0)."""
    import torch

    if ckpt_path is None:
        return {}, 0
    ck = torch.load(str(ckpt_path), map_location="cpu", weights_only=False)
    states = ck.get("optimizer_states") or []
    if not states:
        return {}, 0
    state = states[0].get("state", {})
    moments, step = {}, 0
    for i, name in enumerate(names):
        s = state.get(i)
        if s is None or "exp_avg" not in s:
            return {}, 0
        moments[name] = (s["exp_avg"].float(), s["exp_avg_sq"].float())
        step = int(float(s["step"]))
    return moments, step


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
