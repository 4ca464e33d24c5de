#!/usr/bin/env python3
"""The bridge to Darts both ways (scripts/tsrnn-to-darts, scripts/darts-to-tsrnn), against
real Darts: each side's forecast from the other's weights within 1e-6 relative, the weights
and Adam's moments moved bit for bit, and a converted Darts model trained on by tsrnn.

Needs Python with darts, torch and safetensors: $TSRNN_DARTS_PYTHON (e.g. a virtual
environment's python), else this python3. Without them it exits 77 (skipped), saying why.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
ROOT = Path(os.environ.get("TSRNN_SOURCE_ROOT", Path(__file__).resolve().parent.parent))
WORKER = os.environ.get("TSRNN_WORKER", str(ROOT / "build" / "tsrnn-worker"))
PREDICT = os.environ.get("TSRNN_PREDICT", str(ROOT / "build" / "tsrnn-predict"))
BOUND = 1e-6


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


def run(argv, **kw):
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    if done.returncode != 0:
        print(done.stdout)
        print(done.stderr)
        raise AssertionError("%s exited %d" % (argv[0], done.returncode))
    return done


def rel(a, b):
    import numpy as np

    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.abs(np.asarray(b))))


def predict_tsrnn(run_dir, n):
    out = run([PREDICT, "--run", run_dir, "--n", n]).stdout.strip().split("\n")[1:]
    return [float(line.split(",")[1]) for line in out]


def main():
    reexec_with_darts()
    import numpy as np
    import torch
    from safetensors.torch import load_file

    sys.path.insert(0, str(ROOT / "scripts"))
    import darts_bridge as bridge
    from darts.models import RNNModel

    torch.set_num_threads(1)
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # 1. tsrnn -> Darts: a 20-epoch tsrnn run, its last checkpoint in Darts.
        run([WORKER, "--quiet", "--set", "training.n_epochs=20", "--set",
             "output.work_dir=%s" % tmp, "--set", "output.model_name=t",
             ROOT / "examples" / "air_passengers.ini"])
        run_dir = tmp / "t"
        run([py, ROOT / "scripts" / "tsrnn-to-darts", run_dir, tmp / "air.pt", "--checkpoint",
             "last"])
        model = RNNModel.load(str(tmp / "air.pt"))
        cfg = bridge.read_run_config(run_dir)
        train_s, _, scaler, _, _ = bridge.load_series(cfg)
        darts_scaled = model.predict(24, series=train_s)
        darts_pred = scaler.inverse_transform(darts_scaled).values()[:, 0]
        ours = np.loadtxt(run_dir / "forecast.csv", delimiter=",", skiprows=1, usecols=1)
        err = rel(darts_pred, ours)
        print("# tsrnn -> Darts: RNNModel.load() predict(24) vs tsrnn's forecast: %.2e" % err)
        assert err <= BOUND
        ckpt = load_file(str(next((run_dir / "checkpoints").glob("last-epoch=*.safetensors"))))
        states = torch.load(str(tmp / "air.pt.ckpt"), weights_only=False)["optimizer_states"]
        state = states[0]["state"]
        names = [n for n, _ in model.model.named_parameters()]
        for i, name in enumerate(names):
            assert torch.equal(model.model.state_dict()[name], ckpt[name]), name
            assert torch.equal(state[i]["exp_avg"], ckpt["optim.exp_avg." + name]), name
            assert torch.equal(state[i]["exp_avg_sq"], ckpt["optim.exp_avg_sq." + name]), name
        print("# tsrnn -> Darts: %d tensors and their Adam moments bit for bit (step %d)"
              % (len(names), int(state[0]["step"])))

        # 2. ... and back: the same weights, and tsrnn's forecast is Darts' (scaled: the
        # imported run has Darts' scaled series and scaler = none).
        run([py, ROOT / "scripts" / "darts-to-tsrnn", tmp / "air.pt", tmp / "back"])
        back = load_file(str(tmp / "back" / "weights.safetensors"))
        for name in names:
            assert torch.equal(back[name], ckpt[name]), name
        err = rel(predict_tsrnn(tmp / "back", 24), darts_scaled.values()[:, 0])
        print("# Darts -> tsrnn: round trip bit for bit; tsrnn-predict vs Darts' predict(24): "
              "%.2e" % err)
        assert err <= BOUND

        # 3. A model Darts trained (LSTM, 3 epochs, Lightning checkpoints) into tsrnn, with
        # Adam's moments; tsrnn forecasts it and trains on.
        train_v, val_v = train_s, bridge.load_series(cfg)[1]
        dm = RNNModel(model="LSTM", hidden_dim=12, training_length=20, input_chunk_length=14,
                      batch_size=16, n_epochs=3, random_state=1, model_name="lstm",
                      work_dir=str(tmp / "darts_logs"), save_checkpoints=True, force_reset=True,
                      pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                                         "enable_model_summary": False, "logger": False})
        dm.fit(train_v, val_series=val_v)
        last = tmp / "darts_logs" / "lstm" / "checkpoints" / "last-epoch=2.ckpt"
        assert last.is_file(), sorted(os.listdir(last.parent))
        done = run([py, ROOT / "scripts" / "darts-to-tsrnn", last, tmp / "lstm"])
        assert "with Adam's moments, step 21" in done.stdout, done.stdout
        from safetensors import safe_open

        converted = tmp / "lstm" / "checkpoints" / "last-epoch=0.safetensors"
        with safe_open(str(converted), "pt") as f:
            assert f.metadata()["tsrnn.adam_step"] == "21", f.metadata()["tsrnn.adam_step"]
        conv = load_file(str(converted))
        dstate = torch.load(str(last), weights_only=False)["optimizer_states"][0]["state"]
        for i, name in enumerate(["rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0",
                                  "rnn.bias_hh_l0", "V.weight", "V.bias"]):
            assert torch.equal(conv["optim.exp_avg." + name], dstate[i]["exp_avg"]), name
            assert torch.equal(conv["optim.exp_avg_sq." + name], dstate[i]["exp_avg_sq"]), name
        print("# Darts -> tsrnn: the checkpoint holds Darts' Adam moments bit for bit, step 21")
        loaded = RNNModel.load_from_checkpoint("lstm", work_dir=str(tmp / "darts_logs"),
                                               file_name=last.name, best=False)
        darts_lstm = loaded.predict(24).values()[:, 0]
        err = rel(predict_tsrnn(tmp / "lstm", 24), darts_lstm)
        print("# Darts -> tsrnn: a Darts-trained LSTM, tsrnn-predict vs Darts' predict(24): "
              "%.2e" % err)
        assert err <= BOUND
        run([WORKER, "--quiet", "--resume", "last", "--set", "training.max_steps=-1", "--set",
             "training.n_epochs=2", tmp / "lstm" / "config.ini"])
        rows = (tmp / "lstm" / "metrics.csv").read_text().strip().split("\n")
        print("# the converted LSTM trained on by tsrnn: %d metrics rows" % (len(rows) - 1))
        assert len(rows) - 1 == 2 * 7  # 2 epochs x 7 steps, no validation part
    print("# bridge: all checks passed")


if __name__ == "__main__":
    main()
