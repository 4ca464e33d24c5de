#!/usr/bin/env bash
# tsrnn's CPU benchmark suite, one command: builds the release binaries (build-bench), points
# Debian's PyTorch at OpenBLAS (scripts/bench/lib.sh says how), and runs
# scripts/bench/suite.py, which prints a Markdown report on stdout -- date, machine, versions,
# BLAS on each side, the sgemm peak, then per configuration and thread count: tsrnn samples/s
# (median of 5 timed runs after a warm-up), PyTorch samples/s, the ratio, achieved GFLOP/s,
# peak RSS and whether each target holds. Progress goes to stderr. The full suite takes
# ~10 minutes on a 2-core machine; --quick ~1.
# Usage: scripts/bench/suite.sh [--quick] [--only REGEX] [--threads 1|2] [--no-torch]
#                               [--torch-blas DIR] [--json FILE] ...  (suite.py --help)
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

main() {
    local build blas="" arg
    build=$(bench_build tsrnn-worker bench-gemm)
    for arg in "$@"; do
        case "$arg" in
        --no-torch | --torch-blas | --torch-blas=* | -h | --help) blas=given ;;
        esac
    done
    if [ -z "$blas" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
        blas=$(torch_blas_dir)
        [ -z "$blas" ] || set -- --torch-blas "$blas" "$@"
    fi
    exec /usr/bin/python3 "$bench_root/scripts/bench/suite.py" --build "$build" "$@"
}

main "$@"
