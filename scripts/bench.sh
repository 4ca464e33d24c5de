#!/usr/bin/env bash
# Training speed of tsrnn next to plain PyTorch on this machine, one CPU thread each:
#   1. the Darts guide's AirPassengers model (RNN, hidden 20, batch 16, training_length 20,
#      300 epochs = 2100 optimizer steps): seconds of optimizer steps and steps/s;
#   2. LSTM hidden 256, batch 64, training_length 64 on a 100,000-point synthetic series
#      (bench/synthetic.awk): samples/s over 40 optimizer steps, and the ceiling that this
#      machine's GEMM speed puts on it (bench/gemm.c).
# PyTorch runs scripts/bench_torch.py with Debian's /usr/bin/python3 (python3-torch); without
# it, its column says so. Each measurement is the best of 3 runs (the VMs this runs on are
# noisy). Usage: scripts/bench.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-bench"
bash "$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$root" --buildtype=release -Dtests=false >/dev/null
fi
ninja -C "$build" tsrnn-worker bench-gemm >/dev/null
worker="$build/tsrnn-worker"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk -f "$root/bench/synthetic.awk" -v n=100000 >"$work/synthetic.csv"
cat >"$work/lstm256.ini" <<INI
[data]
path = synthetic.csv
value_cols = value
[model]
model = LSTM
hidden_dim = 256
training_length = 64
input_chunk_length = 64
[training]
batch_size = 64
n_epochs = 1
max_steps = 40
[output]
work_dir = runs
model_name = lstm256
INI

# best_of N COMMAND...: runs the command N times, prints the best "value" it printed.
best_of() {
    local n=$1 best="" v
    shift
    for _ in $(seq "$n"); do
        v=$("$@")
        if [ -z "$best" ] || awk -v a="$v" -v b="$best" -v dir="$direction" \
            'BEGIN { exit !((dir == "min" && a < b) || (dir == "max" && a > b)) }'; then
            best=$v
        fi
    done
    echo "$best"
}

# The worker's "(optimizer steps X s" and "Y samples/s" / "Z steps/s".
tsrnn_seed() {
    "$worker" -q "$root/examples/air_passengers.ini" --set output.work_dir="$work/runs" |
        sed -n 's/.*(optimizer steps \([0-9.]*\) s.*/\1/p'
}
tsrnn_lstm() {
    "$worker" -q "$work/lstm256.ini" | sed -n 's/.*steps\/s, \([0-9]*\) samples\/s.*/\1/p'
}

direction=min
t_seed=$(best_of 3 tsrnn_seed)
direction=max
t_lstm=$(best_of 3 tsrnn_lstm)

torch_seed="n/a" torch_lstm="n/a" torch_note="not installed: apt-get install python3-torch"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    direction=min
    torch_seed=$(best_of 3 /usr/bin/python3 "$root/scripts/bench_torch.py" seed \
        "$root/examples/data/air_passengers.csv")
    direction=max
    torch_lstm=$(best_of 3 /usr/bin/python3 "$root/scripts/bench_torch.py" lstm256 \
        "$work/synthetic.csv")
    torch_note=$(/usr/bin/python3 "$root/scripts/bench_torch.py" version)
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.1fx", a / b; else print "-" }'; }
steps=2100
echo "tsrnn $("$worker" --version | awk '{print $2}') vs PyTorch ($torch_note), 1 thread, best of 3"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), BLAS: OpenBLAS"
echo
printf '| %-52s | %10s | %10s | %8s |\n' "benchmark" "tsrnn" "PyTorch" "speed-up"
printf '|%s|%s|%s|%s|\n' "------------------------------------------------------" \
    "------------" "------------" "----------"
printf '| %-52s | %10s | %10s | %8s |\n' "AirPassengers RNN-20, 300 epochs: optimizer s" \
    "$t_seed" "$torch_seed" "$(ratio "$torch_seed" "$t_seed")"
printf '| %-52s | %10s | %10s | %8s |\n' "AirPassengers RNN-20: steps/s" \
    "$(awk -v t="$t_seed" -v s=$steps 'BEGIN { printf "%.0f", s / t }')" \
    "$(awk -v t="$torch_seed" -v s=$steps 'BEGIN { if (t + 0 > 0) printf "%.0f", s / t; else print "n/a" }')" \
    "$(ratio "$torch_seed" "$t_seed")"
printf '| %-52s | %10s | %10s | %8s |\n' "LSTM-256, batch 64, T 64, 100k points: samples/s" \
    "$t_lstm" "$torch_lstm" "$(ratio "$t_lstm" "$torch_lstm")"
echo
echo "The LSTM-256 step is GEMM-bound; its products on this machine, 1 thread:"
"$build/bench-gemm"
