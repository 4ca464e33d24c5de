#!/usr/bin/env bash
# The sample paths of a probabilistic forecast, tsrnn beside Darts, in one run on this
# machine: the example's model with GaussianLikelihood() (examples/air_passengers.ini,
# [model] likelihood = gaussian, 100 epochs) trained by each, then 500 paths of 24 steps
# (predict(24, num_samples=500)) timed on one core: tsrnn's tsrnn_forecast_predict()
# (bench/sampling.c: the paths, their quantiles and scores) and Darts' model.predict() with
# torch.set_num_threads(1) (the median of 7 calls after 2 to warm up, its default batch_size
# 16 of the model). Prints a Markdown table with the ratio.
# The Darts side needs a Python with Darts: $DARTS_PYTHON (default /tmp/venv-darts/bin/python,
# CONTRIBUTING.md's), else it says so and prints tsrnn's figure alone.
# Usage: scripts/bench/sampling.sh [N] [NUM_SAMPLES]   (default 24 500)
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

work=""
cleanup() { [ -z "$work" ] || rm -rf "$work"; }
trap cleanup EXIT

main() {
    local n=${1:-24} samples=${2:-500} build ours theirs darts_python
    build=$(bench_build tsrnn-worker bench-sampling)
    work=$(mktemp -d)
    "$build/tsrnn-worker" "$bench_root/examples/air_passengers.ini" --quiet \
        --set model.likelihood=gaussian --set training.n_epochs=100 --set forecast.n=0 \
        --set output.work_dir="$work" --set output.model_name=bench \
        --set output.log_tensorboard=false >/dev/null
    ours=$("$build/bench-sampling" "$work"/bench/checkpoints/last-epoch=99.safetensors \
        "$n" "$samples" | awk '{ for (i = 1; i <= NF; i++) if ($(i+1) == "ms") { print $i; exit } }')
    darts_python=${DARTS_PYTHON:-/tmp/venv-darts/bin/python}
    theirs=-
    if "$darts_python" -c "import darts" 2>/dev/null; then
        theirs=$("$darts_python" - "$bench_root" "$n" "$samples" <<'PY' 2>/dev/null | tail -1
import sys, tempfile, time
import numpy as np, pandas as pd, torch
torch.set_num_threads(1)
from darts.dataprocessing.transformers import Scaler
from darts.datasets import AirPassengersDataset
from darts.models import RNNModel
from darts.utils.likelihood_models import GaussianLikelihood
root, n, samples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
series = AirPassengersDataset().load().astype(np.float32)
train, val = series.split_after(pd.Timestamp("19590101"))
scaler = Scaler()
train_s = scaler.fit_transform(train)
with tempfile.TemporaryDirectory() as work_dir:
    model = RNNModel(model="RNN", hidden_dim=20, batch_size=16, n_epochs=100,
                     optimizer_kwargs={"lr": 1e-3}, random_state=42, training_length=20,
                     input_chunk_length=14, likelihood=GaussianLikelihood(), work_dir=work_dir,
                     pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                                        "enable_model_summary": False, "logger": False})
    model.fit(train_s)
    times = []
    for call in range(9):
        t0 = time.perf_counter()
        model.predict(n, num_samples=samples, verbose=False)
        if call >= 2:
            times.append(time.perf_counter() - t0)
print("%.3f" % (1e3 * sorted(times)[len(times) // 2]))
PY
)
        [ -n "$theirs" ] || theirs=-
    else
        echo "bench: no Darts at $darts_python (DARTS_PYTHON): tsrnn's figure alone" >&2
    fi
    echo "| $samples paths of $n steps, one core | tsrnn ms | Darts ms | Darts / tsrnn |"
    echo "|---|---|---|---|"
    echo "| AirPassengers RNN-20, GaussianLikelihood | $ours | $theirs | $(ratio "$theirs" "$ours") |"
}

main "$@"
