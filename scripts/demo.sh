#!/usr/bin/env bash
# The AirPassengers example of the Darts guide: installs what it needs, builds tsrnn, trains
# examples/air_passengers.ini into darts_logs/Air_RNN (checkpoints, TensorBoard logs,
# metrics.csv, forecast.csv and forecast.png) and lists the run folder. Extra arguments go to
# tsrnn-worker (e.g. --set training.n_epochs=50).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

build=${TSRNN_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dtests=false >/dev/null
fi
meson compile -C "$build" >/dev/null

"$build/tsrnn-worker" "$@" examples/air_passengers.ini

run=darts_logs/Air_RNN
echo
echo "Run folder $run:"
(cd "$run" && find . -type f | sort | sed 's|^\./|  |')
echo
echo "Forecast again from the best checkpoint: $build/tsrnn-predict --run $run --n 24 --plot f.png"
echo "TensorBoard (pip install tensorboard): tensorboard --logdir darts_logs"
