#!/usr/bin/env python3
"""The bridge to Darts both ways (scripts/tsrnn-to-darts, scripts/darts-to-tsrnn), against
real Darts: each side's forecast from the other's model within 1e-5 relative (measured
~1e-7), the weights and the optimizer's state moved bit for bit, for

* the example (RNN) and a Darts-trained LSTM from Lightning's checkpoints;
* a run with AdamW, StepLR, L1Loss, gradient clipping and EarlyStopping (the scheduler's,
  the optimizer's and EarlyStopping's state carried), and a Darts-trained SGD + OneCycleLR;
* the newer controls: RMSprop (centered, momentum) + HuberLoss + EarlyStopping on
  torch_metrics' MeanAbsoluteError both ways, Adagrad to Darts, and Darts-trained SGD with
  Nesterov + SmoothL1Loss and Adagrad + EarlyStopping on MeanSquaredError into tsrnn (every
  optimizer buffer bit for bit);
* a global model on two series of two components (Darts keeps no series of a list: they come
  back with --series), and a run whose missing values tsrnn interpolated;
* covariates: a data column with cyclic, datetime_attribute, one-hot and position encoders and
  their fitted scaler, and a Darts model fitted with user covariates and add_encoders;

and the refusals: what tsrnn has no counterpart for (exit 2, one line naming it), a crafted
Lightning checkpoint that is never unpickled without --trusted (issue 39: the file Darts
checks is the file loaded, read once), and an OUT_DIR name that would add keys to the INI
file (issue 39).

Needs Python with darts, torch and safetensors: $TSRNN_DARTS_PYTHON (e.g. a virtual
environment's python), else this python3. Without them it exits 77 (skipped), saying why.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
ROOT = Path(os.environ.get("TSRNN_SOURCE_ROOT", Path(__file__).resolve().parent.parent))
WORKER = os.environ.get("TSRNN_WORKER", str(ROOT / "build" / "tsrnn-worker"))
PREDICT = os.environ.get("TSRNN_PREDICT", str(ROOT / "build" / "tsrnn-predict"))
BOUND = 1e-5
PY = sys.executable
TO_DARTS = ROOT / "scripts" / "tsrnn-to-darts"
TO_TSRNN = ROOT / "scripts" / "darts-to-tsrnn"
QUIET = {"accelerator": "cpu", "enable_progress_bar": False, "enable_model_summary": False,
         "logger": False}


def reexec_with_darts():
    python = os.environ.get("TSRNN_DARTS_PYTHON")
    # A virtual environment's python is a link to the system's: compare by name, once.
    if python and not os.environ.get("TSRNN_BRIDGE_REEXEC"):
        if not os.access(python, os.X_OK):
            print("# TSRNN_DARTS_PYTHON=%s is not executable" % python)
            sys.exit(1)
        os.environ["TSRNN_BRIDGE_REEXEC"] = "1"
        os.execv(python, [python] + sys.argv)
    try:
        import darts  # noqa: F401
        import safetensors  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print("# skipped: %s has no Darts (%s); set TSRNN_DARTS_PYTHON to a Python that has "
              "darts, torch and safetensors" % (sys.executable, e))
        sys.exit(SKIP)


def run(argv, code=0, **kw):
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    if done.returncode != code:
        print(done.stdout)
        print(done.stderr)
        raise AssertionError("%s exited %d, expected %d" % (argv[0], done.returncode, code))
    return done


def rel(a, b):
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def predict_tsrnn(run_dir, n, *more):
    """{series id or None: (n, C) forecast} from tsrnn-predict's CSV."""
    import numpy as np

    lines = run([PREDICT, "--run", run_dir, "--n", n] + list(more)).stdout.strip().split("\n")
    named = lines[0].startswith("series,")
    out = {}
    for line in lines[1:]:
        f = line.split(",")
        key, values = (f[0], f[2:]) if named else (None, f[1:])
        out.setdefault(key, []).append([float(v) for v in values])
    return {k: np.asarray(v) for k, v in out.items()}


def train(tmp, name, *sets, ini="air_passengers.ini"):
    argv = [WORKER, "--quiet", "--set", "output.work_dir=%s" % tmp, "--set",
            "output.model_name=%s" % name]
    for s in sets:
        argv += ["--set", s]
    run(argv + [ROOT / "examples" / ini])
    return tmp / name


def tsrnn_series(run_dir, checkpoint="last"):
    """The run's series as the bridge reads them, with their fitted Darts Scalers."""
    import darts_bridge as bridge

    ck = bridge.TsrnnCheckpoint(bridge.find_checkpoint(run_dir, checkpoint))
    items = bridge.read_run_series(ck)
    for it in items:
        part = it["series"][: it["train_length"]]
        it["scaler_obj"] = bridge.darts_scaler_of(part, it["scaler"], it["id"])
        it["train_scaled"] = it["scaler_obj"].transform(part)
    return ck, items


def test_example_both_ways(tmp):
    """The example's RNN to Darts (weights and Adam's moments bit for bit; Darts' predict(24)
    is tsrnn's forecast), back (tsrnn-predict is Darts' predict), and a Darts-trained LSTM
    from Lightning's checkpoints (Adam's moments, trains on in tsrnn)."""
    import torch
    from darts.models import RNNModel
    from safetensors import safe_open
    from safetensors.torch import load_file

    run_dir = train(tmp, "t", "training.n_epochs=20")
    run([PY, TO_DARTS, run_dir, tmp / "air.pt", "--checkpoint", "last"])
    model = RNNModel.load(str(tmp / "air.pt"))
    _, items = tsrnn_series(run_dir)
    scaled = model.predict(24, verbose=False)
    darts_pred = items[0]["scaler_obj"].inverse_transform(scaled).values()
    ours = predict_tsrnn(run_dir, "24", "--checkpoint", "last")[None]
    err = rel(darts_pred, ours)
    print("# tsrnn -> Darts: RNNModel.load() predict(24) vs tsrnn's forecast: %.2e" % err)
    assert err <= BOUND
    ckpt = load_file(str(next((run_dir / "checkpoints").glob("last-epoch=*.safetensors"))))
    state = torch.load(str(tmp / "air.pt.ckpt"), weights_only=False)["optimizer_states"][0]
    names = [n for n, _ in model.model.named_parameters()]
    for i, name in enumerate(names):
        assert torch.equal(model.model.state_dict()[name], ckpt[name]), name
        assert torch.equal(state["state"][i]["exp_avg"], ckpt["optim.exp_avg." + name]), name
        assert torch.equal(state["state"][i]["exp_avg_sq"], ckpt["optim.exp_avg_sq." + name])
    print("# tsrnn -> Darts: %d tensors and their Adam moments bit for bit (step %d)"
          % (len(names), int(state["state"][0]["step"])))

    run([PY, TO_TSRNN, tmp / "air.pt", tmp / "back"])
    back = load_file(str(tmp / "back" / "weights.safetensors"))
    for name in names:
        assert torch.equal(back[name], ckpt[name]), name
    err = rel(predict_tsrnn(tmp / "back", "24")[None], scaled.values())
    print("# Darts -> tsrnn: round trip bit for bit; tsrnn-predict vs Darts' predict(24): %.2e"
          % err)
    assert err <= BOUND

    train_s = items[0]["train_scaled"]
    dm = RNNModel(model="LSTM", hidden_dim=12, training_length=20, input_chunk_length=14,
                  batch_size=16, n_epochs=3, random_state=1, model_name="lstm",
                  work_dir=str(tmp / "darts_logs"), save_checkpoints=True, force_reset=True,
                  pl_trainer_kwargs=QUIET)
    dm.fit(train_s, val_series=items[0]["scaler_obj"].transform(
        items[0]["series"][items[0]["train_length"]:]))
    last = tmp / "darts_logs" / "lstm" / "checkpoints" / "last-epoch=2.ckpt"
    done = run([PY, TO_TSRNN, last, tmp / "lstm"])
    assert "with the optimizer's state, step 21" in done.stdout, done.stdout
    converted = tmp / "lstm" / "checkpoints" / "last-epoch=0.safetensors"
    with safe_open(str(converted), "pt") as f:
        assert f.metadata()["tsrnn.adam_step"] == "21", f.metadata()["tsrnn.adam_step"]
    conv = load_file(str(converted))
    dstate = torch.load(str(last), weights_only=False)["optimizer_states"][0]["state"]
    for i, name in enumerate(n for n, _ in dm.model.named_parameters()):
        assert torch.equal(conv["optim.exp_avg." + name], dstate[i]["exp_avg"]), name
        assert torch.equal(conv["optim.exp_avg_sq." + name], dstate[i]["exp_avg_sq"]), name
    loaded = RNNModel.load_from_checkpoint("lstm", work_dir=str(tmp / "darts_logs"),
                                           file_name=last.name, best=False)
    err = rel(predict_tsrnn(tmp / "lstm", "24")[None], loaded.predict(24, verbose=False).values())
    print("# Darts -> tsrnn: a Darts-trained LSTM (Lightning checkpoint, Adam's moments at step "
          "21 bit for bit), tsrnn-predict vs Darts' predict(24): %.2e" % err)
    assert err <= BOUND
    run([WORKER, "--quiet", "--resume", "last", "--set", "training.max_steps=-1", "--set",
         "training.n_epochs=2", tmp / "lstm" / "config.ini"])
    rows = (tmp / "lstm" / "metrics.csv").read_text().strip().split("\n")
    assert len(rows) - 1 == 2 * 7  # 2 epochs x 7 steps, no validation part
    print("# the converted LSTM trained on by tsrnn: %d metrics rows" % (len(rows) - 1))
    return items


def test_training_controls_both_ways(tmp, items):
    """AdamW, StepLR, L1Loss, clipping and EarlyStopping to Darts (classes, kwargs and state:
    the scheduler at its last_epoch and rate, the moments, EarlyStopping's wait_count and
    best_score) and back; a Darts-trained SGD(momentum) + OneCycleLR per step into tsrnn
    (SGD's momentum buffer as its moments)."""
    import torch
    from darts.models import RNNModel
    from safetensors import safe_open
    from safetensors.torch import load_file

    run_dir = train(tmp, "ctl", "training.n_epochs=12", "training.optimizer_cls=AdamW",
                    "training.weight_decay=0.05", "training.lr=0.005",
                    "training.lr_scheduler_cls=StepLR", "lr_scheduler_kwargs.step_size=3",
                    "lr_scheduler_kwargs.gamma=0.5", "training.loss_fn=L1Loss",
                    "trainer.gradient_clip_val=0.5", "early_stopping.monitor=val_loss",
                    "early_stopping.patience=20")
    done = run([PY, TO_DARTS, run_dir, tmp / "ctl.pt", "--checkpoint", "last"])
    assert "AdamW, StepLR, L1Loss" in done.stdout, done.stdout
    model = RNNModel.load(str(tmp / "ctl.pt"))
    p = model.model_params
    assert p["optimizer_cls"] is torch.optim.AdamW and p["optimizer_kwargs"] == \
        {"lr": 0.005, "weight_decay": 0.05}, p
    assert p["lr_scheduler_cls"] is torch.optim.lr_scheduler.StepLR
    assert p["lr_scheduler_kwargs"] == {"step_size": 3, "gamma": 0.5}, p["lr_scheduler_kwargs"]
    assert type(p["loss_fn"]).__name__ == "L1Loss"
    assert p["pl_trainer_kwargs"]["gradient_clip_val"] == 0.5
    es = p["pl_trainer_kwargs"]["callbacks"][0]
    assert type(es).__name__ == "EarlyStopping" and es.monitor == "val_loss" and es.patience == 20
    with safe_open(str(run_dir / "checkpoints" / "last-epoch=11.safetensors"), "pt") as f:
        meta = f.metadata()
    ck = torch.load(str(tmp / "ctl.pt.ckpt"), weights_only=False)
    sched = ck["lr_schedulers"][0]
    assert sched["last_epoch"] == 12 and sched["_last_lr"] == [float(meta["tsrnn.lr"])], sched
    assert ck["optimizer_states"][0]["param_groups"][0]["lr"] == float(meta["tsrnn.lr"])
    cb = next(iter(ck["callbacks"].values()))
    wait = int(meta["tsrnn.early_stopping"].split()[0].split("=")[1])
    assert cb["wait_count"] == wait, (cb, meta["tsrnn.early_stopping"])
    it = items[0]
    scaled = model.predict(12, verbose=False)
    err = rel(it["scaler_obj"].inverse_transform(scaled).values(),
              predict_tsrnn(run_dir, "12", "--checkpoint", "last")[None])
    print("# tsrnn -> Darts with AdamW, StepLR (last_epoch 12, lr %s), L1Loss, clipping 0.5, "
          "EarlyStopping (wait_count %d): predict(12) vs tsrnn: %.2e"
          % (meta["tsrnn.lr"], wait, err))
    assert err <= BOUND

    done = run([PY, TO_TSRNN, tmp / "ctl.pt", tmp / "ctl_back"])
    assert "EarlyStopping on val_loss: the imported run has no validation part" \
        in done.stdout, done.stdout
    config = (tmp / "ctl_back" / "config.ini").read_text()
    for line in ("optimizer_cls = AdamW", "weight_decay = 0.05", "lr_scheduler_cls = StepLR",
                 "step_size = 3", "gamma = 0.5", "loss_fn = L1Loss", "gradient_clip_val = 0.5"):
        assert "\n%s\n" % line in config, line
    # with the validation part (the run's whole series, split where Darts' training ended)
    it0 = items[0]
    it0["scaler_obj"].transform(it0["series"]).to_csv(tmp / "air_full.csv")
    run([PY, TO_TSRNN, tmp / "ctl.pt", tmp / "ctl_val", "--series", tmp / "air_full.csv"])
    config = (tmp / "ctl_val" / "config.ini").read_text()
    for line in ("split_after = 1959-01-01", "monitor = val_loss", "patience = 20"):
        assert "\n%s\n" % line in config, line
    err = rel(predict_tsrnn(tmp / "ctl_back", "12")[None], scaled.values())
    print("# ... and back: config.ini with AdamW, StepLR, L1Loss, clipping (EarlyStopping "
          "with --series, which gives the run a validation part); tsrnn-predict vs Darts: %.2e"
          % err)
    assert err <= BOUND

    dm = RNNModel(model="GRU", hidden_dim=10, training_length=20, input_chunk_length=14,
                  batch_size=16, n_epochs=4, random_state=3, optimizer_cls=torch.optim.SGD,
                  optimizer_kwargs={"lr": 0.05, "momentum": 0.9},
                  lr_scheduler_cls=torch.optim.lr_scheduler.OneCycleLR,
                  lr_scheduler_kwargs={"max_lr": 0.1, "total_steps": 28, "interval": "step"},
                  pl_trainer_kwargs=QUIET)
    dm.fit(it["train_scaled"])
    dm.save(str(tmp / "sgd.pt"))
    done = run([PY, TO_TSRNN, tmp / "sgd.pt", tmp / "sgd"])
    config = (tmp / "sgd" / "config.ini").read_text()
    for line in ("optimizer_cls = SGD", "momentum = 0.9", "lr_scheduler_cls = OneCycleLR",
                 "max_lr = 0.1", "total_steps = 28", "interval = step"):
        assert "\n%s\n" % line in config, line
    assert "Not carried: the scheduler's state (last_epoch 28" in done.stdout, done.stdout
    conv = load_file(str(tmp / "sgd" / "checkpoints" / "last-epoch=0.safetensors"))
    dstate = torch.load(str(tmp / "sgd.pt.ckpt"), weights_only=False)["optimizer_states"][0]
    for i, name in enumerate(n for n, _ in dm.model.named_parameters()):
        assert torch.equal(conv["optim.exp_avg." + name], dstate["state"][i]["momentum_buffer"])
    err = rel(predict_tsrnn(tmp / "sgd", "12")[None], dm.predict(12, verbose=False).values())
    print("# Darts -> tsrnn: SGD(momentum 0.9) + OneCycleLR per step (momentum buffers bit for "
          "bit; the scheduler's state named as not carried): tsrnn-predict vs Darts: %.2e" % err)
    assert err <= BOUND


def test_newer_controls_both_ways(tmp, items):
    """RMSprop (centered, momentum, alpha, eps, weight_decay) + HuberLoss + EarlyStopping on
    val_MeanAbsoluteError to Darts (classes, kwargs, torch_metrics, the callback; RMSprop's
    square_avg, momentum_buffer and grad_avg bit for bit) and back; Adagrad to Darts (its sums
    and step); a Darts-trained SGD(nesterov, weight_decay) + SmoothL1Loss and a Darts-trained
    Adagrad + EarlyStopping on torch_metrics' MeanSquaredError into tsrnn, which trains on."""
    import torch
    import torchmetrics
    from darts.models import RNNModel
    from safetensors.torch import load_file

    run_dir = train(tmp, "rms", "training.n_epochs=8", "training.optimizer_cls=RMSprop",
                    "training.alpha=0.9", "training.eps=1e-7", "training.momentum=0.5",
                    "training.centered=true", "training.weight_decay=0.0001",
                    "training.loss_fn=HuberLoss", "training.delta=0.05",
                    "early_stopping.monitor=val_MeanAbsoluteError", "early_stopping.patience=20")
    done = run([PY, TO_DARTS, run_dir, tmp / "rms.pt", "--checkpoint", "last"])
    assert "RMSprop, HuberLoss, EarlyStopping on val_MeanAbsoluteError" in done.stdout, \
        done.stdout
    model = RNNModel.load(str(tmp / "rms.pt"))
    p = model.model_params
    assert p["optimizer_cls"] is torch.optim.RMSprop and p["optimizer_kwargs"] == {
        "lr": 0.001, "alpha": 0.9, "eps": 1e-07, "weight_decay": 0.0001, "momentum": 0.5,
        "centered": True}, p["optimizer_kwargs"]
    assert type(p["loss_fn"]) is torch.nn.HuberLoss and p["loss_fn"].delta == 0.05
    assert type(p["torch_metrics"]) is torchmetrics.MeanAbsoluteError, p["torch_metrics"]
    assert p["pl_trainer_kwargs"]["callbacks"][0].monitor == "val_MeanAbsoluteError"
    ckpt = load_file(str(run_dir / "checkpoints" / "last-epoch=7.safetensors"))
    state = torch.load(str(tmp / "rms.pt.ckpt"), weights_only=False)["optimizer_states"][0]
    names = [n for n, _ in model.model.named_parameters()]
    for i, name in enumerate(names):
        s = state["state"][i]
        assert torch.equal(s["square_avg"], ckpt["optim.exp_avg_sq." + name]), name
        assert torch.equal(s["momentum_buffer"], ckpt["optim.exp_avg." + name]), name
        assert torch.equal(s["grad_avg"], ckpt["optim.grad_avg." + name]), name
    it = items[0]
    scaled = model.predict(12, verbose=False)
    err = rel(it["scaler_obj"].inverse_transform(scaled).values(),
              predict_tsrnn(run_dir, "12", "--checkpoint", "last")[None])
    print("# tsrnn -> Darts with centered RMSprop (momentum, alpha, eps, weight_decay), "
          "HuberLoss(delta=0.05), EarlyStopping on val_MeanAbsoluteError (torch_metrics): "
          "square_avg, momentum_buffer and grad_avg bit for bit (step %d); predict(12) vs "
          "tsrnn: %.2e" % (int(state["state"][0]["step"]), err))
    assert err <= BOUND
    done = run([PY, TO_TSRNN, tmp / "rms.pt", tmp / "rms_back", "--series",
                tmp / "air_full.csv"])
    config = (tmp / "rms_back" / "config.ini").read_text()
    for line in ("optimizer_cls = RMSprop", "alpha = 0.9", "eps = 1e-07", "momentum = 0.5",
                 "centered = true", "weight_decay = 0.0001", "loss_fn = HuberLoss",
                 "delta = 0.05", "monitor = val_MeanAbsoluteError", "patience = 20"):
        assert "\n%s\n" % line in config, line
    back = load_file(str(tmp / "rms_back" / "checkpoints" / "last-epoch=0.safetensors"))
    for name in names:
        for what in ("exp_avg.", "exp_avg_sq.", "grad_avg."):
            assert torch.equal(back["optim." + what + name], ckpt["optim." + what + name])
    err = rel(predict_tsrnn(tmp / "rms_back", "12")[None], scaled.values())
    print("# ... and back (--series: a validation part for the EarlyStopping): its buffers "
          "bit for bit; tsrnn-predict vs Darts: %.2e" % err)
    assert err <= BOUND

    run_dir = train(tmp, "ada", "training.n_epochs=3", "training.optimizer_cls=Adagrad",
                    "training.lr=0.02", "training.lr_decay=0.01",
                    "training.initial_accumulator_value=0.1", "training.loss_fn=SmoothL1Loss",
                    "training.beta=0.3")
    run([PY, TO_DARTS, run_dir, tmp / "ada.pt", "--checkpoint", "last"])
    model = RNNModel.load(str(tmp / "ada.pt"))
    p = model.model_params
    assert p["optimizer_kwargs"] == {"lr": 0.02, "lr_decay": 0.01,
                                     "initial_accumulator_value": 0.1}, p["optimizer_kwargs"]
    assert type(p["loss_fn"]) is torch.nn.SmoothL1Loss and p["loss_fn"].beta == 0.3
    ckpt = load_file(str(run_dir / "checkpoints" / "last-epoch=2.safetensors"))
    state = torch.load(str(tmp / "ada.pt.ckpt"), weights_only=False)["optimizer_states"][0]
    for i, name in enumerate(names):
        assert torch.equal(state["state"][i]["sum"], ckpt["optim.exp_avg_sq." + name]), name
        assert float(state["state"][i]["step"]) == 21.0
    err = rel(it["scaler_obj"].inverse_transform(model.predict(12, verbose=False)).values(),
              predict_tsrnn(run_dir, "12", "--checkpoint", "last")[None])
    print("# tsrnn -> Darts with Adagrad (lr_decay, initial_accumulator_value) and "
          "SmoothL1Loss(beta=0.3): its sums bit for bit at step 21; predict(12) vs tsrnn: %.2e"
          % err)
    assert err <= BOUND

    dm = RNNModel(model="GRU", hidden_dim=6, training_length=20, input_chunk_length=14,
                  batch_size=16, n_epochs=3, random_state=5, optimizer_cls=torch.optim.SGD,
                  optimizer_kwargs={"lr": 0.05, "momentum": 0.9, "nesterov": True,
                                    "weight_decay": 1e-3},
                  loss_fn=torch.nn.SmoothL1Loss(beta=0.3), pl_trainer_kwargs=QUIET)
    dm.fit(it["train_scaled"])
    dm.save(str(tmp / "nag.pt"))
    run([PY, TO_TSRNN, tmp / "nag.pt", tmp / "nag"])
    config = (tmp / "nag" / "config.ini").read_text()
    for line in ("optimizer_cls = SGD", "momentum = 0.9", "nesterov = true",
                 "weight_decay = 0.001", "loss_fn = SmoothL1Loss", "beta = 0.3"):
        assert "\n%s\n" % line in config, line
    conv = load_file(str(tmp / "nag" / "checkpoints" / "last-epoch=0.safetensors"))
    dstate = torch.load(str(tmp / "nag.pt.ckpt"), weights_only=False)["optimizer_states"][0]
    for i, name in enumerate(n for n, _ in dm.model.named_parameters()):
        assert torch.equal(conv["optim.exp_avg." + name], dstate["state"][i]["momentum_buffer"])
    err = rel(predict_tsrnn(tmp / "nag", "12")[None], dm.predict(12, verbose=False).values())
    print("# Darts -> tsrnn: SGD(momentum 0.9, nesterov, weight_decay) + SmoothL1Loss(beta=0.3): "
          "momentum buffers bit for bit; tsrnn-predict vs Darts: %.2e" % err)
    assert err <= BOUND

    from pytorch_lightning.callbacks import EarlyStopping
    val = it["scaler_obj"].transform(it["series"][it["train_length"]:])
    dm = RNNModel(model="LSTM", hidden_dim=6, training_length=20, input_chunk_length=14,
                  batch_size=16, n_epochs=4, random_state=6, optimizer_cls=torch.optim.Adagrad,
                  optimizer_kwargs={"lr": 0.02, "lr_decay": 0.01, "eps": 1e-9},
                  torch_metrics=torchmetrics.MeanSquaredError(),
                  pl_trainer_kwargs=dict(QUIET, callbacks=[EarlyStopping(
                      monitor="val_MeanSquaredError", patience=5)]))
    dm.fit(it["train_scaled"], val_series=val)
    dm.save(str(tmp / "dada.pt"))
    run([PY, TO_TSRNN, tmp / "dada.pt", tmp / "dada", "--series", tmp / "air_full.csv"])
    config = (tmp / "dada" / "config.ini").read_text()
    for line in ("optimizer_cls = Adagrad", "lr_decay = 0.01", "eps = 1e-09",
                 "monitor = val_MeanSquaredError", "patience = 5"):
        assert "\n%s\n" % line in config, line
    conv = load_file(str(tmp / "dada" / "checkpoints" / "last-epoch=0.safetensors"))
    dstate = torch.load(str(tmp / "dada.pt.ckpt"), weights_only=False)["optimizer_states"][0]
    for i, name in enumerate(n for n, _ in dm.model.named_parameters()):
        assert torch.equal(conv["optim.exp_avg_sq." + name], dstate["state"][i]["sum"])
    err = rel(predict_tsrnn(tmp / "dada", "12")[None], dm.predict(12, verbose=False).values())
    print("# Darts -> tsrnn: Adagrad + EarlyStopping on torch_metrics' MeanSquaredError: sums "
          "bit for bit (step %d); tsrnn-predict vs Darts: %.2e"
          % (int(dstate["state"][0]["step"]), err))
    assert err <= BOUND
    run([WORKER, "--quiet", "--resume", "last", "--set", "training.max_steps=-1", "--set",
         "training.n_epochs=2", tmp / "dada" / "config.ini"])
    rows = (tmp / "dada" / "metrics.csv").read_text().strip().split("\n")
    assert len(rows) - 1 == 2 * 8  # 2 epochs x (7 steps + validation)
    print("# the converted Adagrad model trained on by tsrnn: %d metrics rows" % (len(rows) - 1))


def test_global_both_ways(tmp):
    """A global GRU on two series of two components (tests/fixtures/mc/) to Darts (a model
    fitted on the list; predict(series=each training part)) and back with --series."""
    from darts.models import RNNModel

    mc = ROOT / "tests" / "fixtures" / "mc"
    run_dir = train(tmp, "g", "data.path=%s,%s" % (mc / "m1.csv", mc / "m2.csv"),
                    "data.time_col=month", "data.value_cols=a,b", "data.split_after=1993-12",
                    "model.model=GRU", "model.hidden_dim=8", "model.training_length=8",
                    "model.input_chunk_length=5", "training.n_epochs=6", "forecast.n=6")
    done = run([PY, TO_DARTS, run_dir, tmp / "g.pt", "--checkpoint", "last"])
    assert "the 2 training series (Darts keeps none" in done.stdout, done.stdout
    model = RNNModel.load(str(tmp / "g.pt"))
    _, items = tsrnn_series(run_dir)
    ours = predict_tsrnn(run_dir, "6", "--checkpoint", "last")
    worst, files = 0.0, []
    for it in items:
        scaled = model.predict(6, series=it["train_scaled"], verbose=False)
        worst = max(worst, rel(it["scaler_obj"].inverse_transform(scaled).values(),
                               ours[it["id"]]))
        files += ["--series", tmp / ("%s.csv" % it["id"])]
        it["train_scaled"].to_csv(tmp / ("%s.csv" % it["id"]))
        it["darts_scaled"] = scaled
    print("# tsrnn -> Darts, a global model of 2 series x 2 components: predict(6) of each vs "
          "tsrnn: %.2e" % worst)
    assert worst <= BOUND
    done = run([PY, TO_TSRNN, tmp / "g.pt", tmp / "g_back"], code=2)
    assert "was fitted on a list of series, which Darts does not keep" in done.stderr
    assert not (tmp / "g_back").exists()
    run([PY, TO_TSRNN, tmp / "g.pt", tmp / "g_back"] + files)
    back = predict_tsrnn(tmp / "g_back", "6")
    worst = max(rel(back[it["id"]], it["darts_scaled"].values()) for it in items)
    print("# ... and back with --series: tsrnn-predict of each vs Darts: %.2e" % worst)
    assert worst <= BOUND


def test_covariates_both_ways(tmp):
    """A data column (temp) with cyclic, datetime_attribute, one-hot and position encoders and
    the covariate scaler to Darts (add_encoders with the run's fitted transformer; the column
    and the one-hot encoders as user covariates, the first layer's columns reordered) and back
    with the series and its covariates; then a model Darts fitted with user covariates and
    add_encoders into tsrnn."""
    import numpy as np
    import pandas as pd
    from darts import TimeSeries
    from darts.dataprocessing.transformers import Scaler
    from darts.models import RNNModel

    run_dir = train(tmp, "cov", "data.path=%s" % (ROOT / "tests" / "fixtures" / "cov_load.csv"),
                    "data.time_col=month", "data.value_cols=load", "data.split_after=2018-12",
                    "covariates.columns=temp", "covariates.datetime_attribute=month, year",
                    "covariates.cyclic=month", "covariates.position=relative",
                    "model.hidden_dim=12", "model.training_length=12",
                    "model.input_chunk_length=6", "training.n_epochs=6", "forecast.n=12",
                    ini="air_passengers_covariates.ini")
    done = run([PY, TO_DARTS, run_dir, tmp / "cov.pt", "--checkpoint", "last"])
    assert "18 future covariates" in done.stdout, done.stdout
    model = RNNModel.load(str(tmp / "cov.pt"))
    _, items = tsrnn_series(run_dir)
    it = items[0]
    scaled = model.predict(12, verbose=False)
    err = rel(it["scaler_obj"].inverse_transform(scaled).values(),
              predict_tsrnn(run_dir, "12", "--checkpoint", "last")[None])
    print("# tsrnn -> Darts with a covariate column, cyclic, datetime_attribute, one-hot and "
          "position encoders and their fitted scaler: predict(12) vs tsrnn: %.2e" % err)
    assert err <= BOUND
    cov = model.future_covariate_series
    full = it["scaler_obj"].transform(it["series"])
    full.stack(cov[list(cov.components[:13])].slice_intersect(full)).to_csv(tmp / "full.csv")
    run([PY, TO_TSRNN, tmp / "cov.pt", tmp / "cov_back", "--series", tmp / "full.csv"])
    err = rel(predict_tsrnn(tmp / "cov_back", "12")[None], scaled.values())
    print("# ... and back with --series (split after 2018-12): tsrnn-predict vs Darts: %.2e" % err)
    assert err <= BOUND

    # Darts' own: a temp column scaled by the user, add_encoders with a Scaler transformer
    series = TimeSeries.from_csv(ROOT / "tests" / "fixtures" / "cov_load.csv", time_col="month",
                                 value_cols="load").astype(np.float32)
    temp = TimeSeries.from_csv(ROOT / "tests" / "fixtures" / "cov_load.csv", time_col="month",
                               value_cols="temp").astype(np.float32)
    train_part, _ = series.split_after(pd.Timestamp("2018-12-01"))
    sc = Scaler().fit(train_part)
    temp_sc = Scaler().fit(temp.split_after(pd.Timestamp("2018-12-01"))[0])
    temp_s = temp_sc.transform(temp)
    dm = RNNModel(model="LSTM", hidden_dim=8, training_length=12, input_chunk_length=6,
                  batch_size=16, n_epochs=3, random_state=4,
                  add_encoders={"datetime_attribute": {"future": ["year"]},
                                "cyclic": {"future": ["month"]}, "transformer": Scaler()},
                  pl_trainer_kwargs=QUIET)
    dm.fit(sc.transform(train_part), future_covariates=temp_s)
    dm.save(str(tmp / "dcov.pt"))
    done = run([PY, TO_TSRNN, tmp / "dcov.pt", tmp / "dcov_short"], code=2)
    assert "add_encoders' transformer: Darts fitted it on" in done.stderr, done.stderr
    sc.transform(series).stack(temp_s).to_csv(tmp / "dcov.csv")
    run([PY, TO_TSRNN, tmp / "dcov.pt", tmp / "dcov", "--series", tmp / "dcov.csv"])
    config = (tmp / "dcov" / "config.ini").read_text()
    for line in ("columns = temp", "cyclic = month", "datetime_attribute = year",
                 "scaler = minmax", "split_after = 2018-12-01"):
        assert "\n%s\n" % line in config, line
    err = rel(predict_tsrnn(tmp / "dcov", "12")[None], dm.predict(12, verbose=False).values())
    print("# Darts -> tsrnn: user covariates with add_encoders and their transformer (without "
          "--series: refused, Darts fitted it past the series' end); tsrnn-predict vs Darts' "
          "predict(12): %.2e" % err)
    assert err <= BOUND


def test_filled_gaps_to_darts(tmp):
    """A run that interpolated missing values: Darts' training series holds the filled values,
    not NaNs, and Darts' forecast is tsrnn's."""
    import numpy as np
    from darts.models import RNNModel

    lines = (ROOT / "examples" / "data" / "air_passengers.csv").read_text().strip().split("\n")
    for row in (30, 31, 77):  # 1951-06, 1951-07, 1955-05: inside the training part
        lines[row] = lines[row].split(",")[0] + ","
    (tmp / "gaps.csv").write_text("\n".join(lines) + "\n")
    run_dir = train(tmp, "gaps", "data.path=%s" % (tmp / "gaps.csv"),
                    "data.fill_missing_values=interpolate", "training.n_epochs=5",
                    "forecast.n=12")
    run([PY, TO_DARTS, run_dir, tmp / "gaps.pt", "--checkpoint", "last"])
    model = RNNModel.load(str(tmp / "gaps.pt"))
    values = model.training_series.values()[:, 0]
    assert not np.isnan(values).any()
    _, items = tsrnn_series(run_dir)
    sc = items[0]["scaler_obj"]
    filled = sc.inverse_transform(model.training_series).values()[:, 0]
    # 1951-05 = 172, 1951-08 = 199: a straight line between them
    assert abs(filled[29] - (172 + (199 - 172) / 3)) < 1e-3, filled[28:32]
    err = rel(sc.inverse_transform(model.predict(12, verbose=False)).values(),
              predict_tsrnn(run_dir, "12", "--checkpoint", "last")[None])
    print("# tsrnn -> Darts, 3 missing values interpolated by the run: Darts' training series "
          "holds them filled (1951-06: %.4f); predict(12) vs tsrnn: %.2e" % (filled[29], err))
    assert err <= BOUND


def test_refusals(tmp, items):
    """What tsrnn has no counterpart for: exit 2, one line naming it, nothing written."""
    import torch
    from darts.models import RNNModel
    from darts.utils.likelihood_models import GaussianLikelihood

    import torchmetrics
    from pytorch_lightning.callbacks import EarlyStopping

    cases = (
        ({"optimizer_cls": torch.optim.Adamax}, "optimizer_cls=Adamax: tsrnn has Adam, AdamW, "
                                                "SGD, RMSprop, Adagrad; not carried"),
        ({"optimizer_kwargs": {"lr": 1e-3, "amsgrad": True}},
         "optimizer_kwargs['amsgrad']=True with Adam"),
        ({"optimizer_cls": torch.optim.SGD, "optimizer_kwargs": {"lr": 0.01, "momentum": 0.9,
                                                                 "dampening": 0.5}},
         "optimizer_kwargs['dampening']=0.5 with SGD: tsrnn carries lr, momentum, nesterov, "
         "weight_decay"),
        ({"loss_fn": torch.nn.HuberLoss(reduction="sum")},
         "loss_fn=HuberLoss: tsrnn has MSELoss, L1Loss, HuberLoss, SmoothL1Loss (reduction "
         "'mean')"),
        ({"torch_metrics": torchmetrics.MeanAbsolutePercentageError(),
          "pl_trainer_kwargs": dict(QUIET, callbacks=[EarlyStopping(
              monitor="train_MeanAbsolutePercentageError")])},
         "EarlyStopping(monitor='train_MeanAbsolutePercentageError'): tsrnn watches val_loss, "
         "train_loss, or a MeanAbsoluteError or MeanSquaredError of torch_metrics"),
        ({"lr_scheduler_cls": torch.optim.lr_scheduler.MultiStepLR,
          "lr_scheduler_kwargs": {"milestones": [2]}}, "lr_scheduler_cls=MultiStepLR"),
        ({"likelihood": GaussianLikelihood()}, "likelihood=GaussianLikelihood"),
    )
    for k, (kwargs, message) in enumerate(cases):
        dm = RNNModel(**dict(dict(model="RNN", hidden_dim=4, training_length=12,
                                  input_chunk_length=6, n_epochs=1, random_state=0,
                                  pl_trainer_kwargs=QUIET), **kwargs))
        dm.fit(items[0]["train_scaled"])
        dm.save(str(tmp / ("r%d.pt" % k)))
        done = run([PY, TO_TSRNN, tmp / ("r%d.pt" % k), tmp / ("r%d" % k)], code=2)
        lines = done.stderr.strip().split("\n")
        assert len(lines) == 1 and message in lines[0], done.stderr
        assert not (tmp / ("r%d" % k)).exists()
    print("# Darts -> tsrnn refuses Adamax, Adam's amsgrad, SGD's dampening, a summed HuberLoss, "
          "EarlyStopping on a metric tsrnn does not compute, MultiStepLR and a likelihood: exit "
          "2, one line each, nothing written")


def test_untrusted_files(tmp):
    """Issue 39: a crafted Lightning checkpoint at run/sub/best.ckpt beside a genuine
    run/checkpoints/best.ckpt: without --trusted nothing of it is unpickled beyond Darts' safe
    loading (the file checked is the file loaded, read once): exit 2, the payload never runs.
    An OUT_DIR whose name holds a newline could add INI keys ([trainer] accelerator = xla):
    refused, nothing written."""
    import torch

    genuine = tmp / "darts_logs" / "lstm" / "checkpoints" / "best.ckpt"
    shutil.copy(genuine.parent / "last-epoch=2.ckpt", genuine)
    run_dir = genuine.parent.parent
    (run_dir / "sub").mkdir()
    marker = tmp / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (os.system, ("touch %s" % marker,))

    ck = torch.load(str(genuine), weights_only=False)
    ck["optimizer_states"][0]["payload"] = Payload()
    torch.save(ck, str(run_dir / "sub" / "best.ckpt"))
    done = run([PY, TO_TSRNN, run_dir / "sub" / "best.ckpt", tmp / "evil"], code=2)
    assert len(done.stderr.strip().split("\n")) == 1, done.stderr
    assert "Darts' safe loading refused it (Blocked unsafe global `posix.system`" in done.stderr, \
        done.stderr
    assert "if you trust the file, pass --trusted" in done.stderr
    assert not marker.exists(), "the crafted checkpoint ran its payload"
    assert not (tmp / "evil").exists()

    injected = tmp / "x\n[trainer]\naccelerator = xla"
    done = run([PY, TO_TSRNN, tmp / "air.pt", injected], code=2)
    assert "holds the control character '\\n'" in done.stderr, done.stderr
    assert not injected.exists()
    print("# a crafted checkpoint beside a genuine one: refused without --trusted, its payload "
          "never ran; an OUT_DIR name with a newline: refused, nothing written")


def main():
    reexec_with_darts()
    import torch

    sys.path.insert(0, str(ROOT / "scripts"))
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        items = test_example_both_ways(tmp)
        test_training_controls_both_ways(tmp, items)
        test_newer_controls_both_ways(tmp, items)
        test_global_both_ways(tmp)
        test_covariates_both_ways(tmp)
        test_filled_gaps_to_darts(tmp)
        test_refusals(tmp, items)
        test_untrusted_files(tmp)
    print("# bridge: all checks passed")


if __name__ == "__main__":
    main()
