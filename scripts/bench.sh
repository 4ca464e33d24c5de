#!/usr/bin/env bash
# Training speed of tsrnn next to plain PyTorch on this machine, as Markdown on stdout:
#   1. scripts/bench/suite.sh: the CPU suite -- the Darts guide's AirPassengers RNN-20 (300
#      epochs) and RNN/GRU/LSTM hidden 128/256, batch 64/256, 1/2 layers, T 64 on a
#      100,000-point synthetic series, 1 thread (and 2 for hidden 256): tsrnn and PyTorch
#      samples/s, ratio, GFLOP/s, peak RSS, targets (docs/benchmarks.md shows a run);
#   2. scripts/bench/ddp.sh: LSTM-256 data-parallel, tsrnn-launch vs PyTorch DDP, 1 and 2
#      workers, and the bare allreduce times.
# Options go to the suite (scripts/bench/suite.py --help); --quick or --no-ddp skip part 2.
# Usage: scripts/bench.sh [--quick] [--no-ddp] [suite options]
set -euo pipefail

main() {
    local here ddp=yes arg
    local suite_args=()
    here=$(cd "$(dirname "$0")" && pwd)
    for arg in "$@"; do
        case "$arg" in
        --no-ddp) ddp=no ;;
        --quick)
            ddp=no
            suite_args+=("$arg")
            ;;
        *) suite_args+=("$arg") ;;
        esac
    done
    bash "$here/bench/suite.sh" "${suite_args[@]}"
    if [ "$ddp" = yes ]; then
        echo
        bash "$here/bench/ddp.sh"
    fi
}

main "$@"
