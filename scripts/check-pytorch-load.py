#!/usr/bin/env python3
"""Loads a tsrnn checkpoint into PyTorch modules and forecasts with them as Darts'
RNNModel.predict does, then compares with the forecast.csv that tsrnn wrote from the same
weights (the [forecast] section of the run's config, from the last checkpoint).

    python3 scripts/check-pytorch-load.py darts_logs/Air_RNN

Needs torch and safetensors (pip install torch safetensors; on Debian 12,
apt-get install python3-torch and pip install --target DIR safetensors, then PYTHONPATH=DIR
/usr/bin/python3 ...). Exits 0 when every forecast value agrees within 1e-5 relative.
"""
import csv
import glob
import json
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file


def main():
    run = sys.argv[1] if len(sys.argv) > 1 else "darts_logs/Air_RNN"
    lasts = glob.glob(os.path.join(run, "checkpoints", "last-epoch=*.safetensors"))
    if not lasts:
        sys.exit(f"no last-epoch=N.safetensors in {run}/checkpoints")
    path = max(lasts, key=lambda p: int(p.rsplit("=", 1)[1].split(".")[0]))
    with safe_open(path, "pt") as f:
        meta = f.metadata()
    model = json.loads(meta["tsrnn.model"])
    scaler = json.loads(meta["tsrnn.scaler"])
    series = json.loads(meta["tsrnn.series"])

    # Darts' _RNNModule: self.rnn = nn.<RNN|LSTM|GRU>(..., batch_first=True); self.V = nn.Linear.
    cell = getattr(torch.nn, model["model"])
    rnn = cell(model["input_size"], model["hidden_dim"], model["n_rnn_layers"], batch_first=True)
    head = torch.nn.Linear(model["hidden_dim"], model["output_size"])
    module = torch.nn.ModuleDict({"rnn": rnn, "V": head})
    state = load_file(path)
    module.load_state_dict({k: v for k, v in state.items() if not k.startswith("optim.")})
    module.eval()

    # The config the run used names the data; the forecast starts after the training part.
    config = {}
    section = None
    for line in meta["tsrnn.config"].splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line:
            key, value = (x.strip() for x in line.split("=", 1))
            config[f"{section}.{key}"] = value
    with open(config["data.path"], newline="") as f:
        rows = list(csv.DictReader(f))
    names = series["components"]
    values = torch.tensor([[float(r[c]) for c in names] for r in rows], dtype=torch.float32)
    scale = torch.tensor(scaler["scale"], dtype=torch.float32)
    offset = torch.tensor(scaler["offset"], dtype=torch.float32)
    icl, end = model["input_chunk_length"], series["train_length"]
    context = (values[end - icl:end] * scale + offset).unsqueeze(0)

    with open(os.path.join(run, "forecast.csv"), newline="") as f:
        ours = [[float(r[c]) for c in names] for r in csv.DictReader(f)]
    with torch.no_grad():
        out, hidden = rnn(context)
        y = head(out[:, -1:])
        steps = [y]
        for _ in range(len(ours) - 1):
            out, hidden = rnn(y, hidden)
            y = head(out)
            steps.append(y)
    torch_forecast = ((torch.cat(steps, 1)[0] - offset) / scale).tolist()

    worst = max(abs(a - b) / max(abs(b), 1e-12)
                for ta, tb in zip(torch_forecast, ours) for a, b in zip(ta, tb))
    print(f"{path}: {model['model']} loaded into torch {torch.__version__}; "
          f"{len(ours)}-step forecast vs tsrnn's forecast.csv: max relative difference {worst:.2e}")
    sys.exit(0 if worst <= 1e-5 else 1)


if __name__ == "__main__":
    main()
