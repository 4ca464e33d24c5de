#!/usr/bin/env bash
# The GPU bundle's node simulation (scripts/gpu-bundle.sh --selftest) as a test: run where
# NVIDIA's four wheels are cached (CONTRIBUTING.md "The GPU bundle": one command fills the
# cache) and mount namespaces can be made (root); skipped (77) otherwise, saying which.
# Builds its bundle in the build folder, never in the source tree.
set -uo pipefail
root=$1 build=$2
cache=${TSRNN_GPU_WHEELS_CACHE:-$HOME/.cache/tsrnn/gpu-wheels}
count=$(ls "$cache"/nvidia_*.whl 2>/dev/null | wc -l)
if [ "$count" -lt 4 ]; then
    echo "skipped: NVIDIA's wheels are not cached in $cache ($count of 4; CONTRIBUTING.md \"The GPU bundle\")"
    exit 77
fi
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "skipped: the node simulation needs a mount namespace (root)"
    exit 77
fi
exec bash "$root/scripts/gpu-bundle.sh" --selftest --out "$build/gpu-bundle" \
    --build-dir "$build/gpu-bundle-build"
