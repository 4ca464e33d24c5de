#!/usr/bin/env bash
# The AirPassengers example of the Darts guide: installs what it needs, builds tsrnn, and runs
# examples/air_passengers.ini. Extra arguments go to tsrnn-worker (e.g. --set ...).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

build=${TSRNN_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dtests=false >/dev/null
fi
meson compile -C "$build" >/dev/null

exec "$build/tsrnn-worker" "$@" examples/air_passengers.ini
