#!/usr/bin/env bash
# Data-parallel training speed: LSTM hidden 256, batch 64 per worker, training_length 64 on the
# 100,000-point synthetic series (bench/synthetic.awk), trained with tsrnn-launch
# --accelerator cpu --devices 1|2 (one thread per worker, Gloo allreduce, 30 steps) next to
# PyTorch DistributedDataParallel over Gloo with torch.multiprocessing.spawn (ddp_spawn's
# mechanism; scripts/bench_torch.py ddp256), and the same workers started by mpirun -np 1|2
# (the mpi comm backend). Prints a Markdown table -- samples/s of the whole job, scaling
# efficiency, the allreduce time per step, the speed-up -- then the bare allreduce times
# (bench/allreduce.c, Gloo and MPI). Each figure is the best of 3 runs (the VMs this runs on
# are noisy).
# Usage: scripts/bench/ddp.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

build=$(bench_build tsrnn-worker tsrnn-launch bench-allreduce)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

write_inputs() {
    awk -f "$bench_root/bench/synthetic.awk" -v n=100000 >"$work/synthetic.csv"
    cp "$bench_root/bench/lstm256.ini" "$work/lstm256.ini"
}

# tsrnn-launch --devices N: rank 0's "N ranks (gloo): X samples/s in all; collectives S s
# (M ms per step)" (N > 1) or its "Y samples/s" (one worker): prints "X M".
tsrnn_ddp() {
    "$build/tsrnn-launch" --accelerator cpu --devices "$1" "$work/lstm256.ini" | training_rate
}

# mpi_ddp N: the same as tsrnn_ddp, the N workers started by mpirun (the mpi comm backend).
mpi_ddp() { mpi_train "$1" "$work/lstm256.ini"; }

# torch_ddp N: PyTorch DDP's samples/s with N processes, on the suite's OpenBLAS.
torch_ddp() {
    LD_LIBRARY_PATH="$torch_blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        /usr/bin/python3 "$bench_root/scripts/bench_torch.py" ddp256 "$work/synthetic.csv" "$1"
}

row() {
    printf '| %-7s | %15s | %7s | %18s | %13s | %7s | %14s | %15s | %7s | %8s |\n' "$@"
}

main() {
    write_inputs
    local d1 d2 p1="n/a" p2="n/a" m1="n/a" m2="n/a n/a"
    d1=$(best_of3 tsrnn_ddp 1)
    d2=$(best_of3 tsrnn_ddp 2)
    if have_mpi; then
        m1=$(best_of3 mpi_ddp 1)
        m2=$(best_of3 mpi_ddp 2)
    fi
    if /usr/bin/python3 -c "import torch" 2>/dev/null; then
        torch_blas=$(torch_blas_dir)
        p1=$(best_of3 torch_ddp 1)
        p2=$(best_of3 torch_ddp 2)
    fi
    echo "Data-parallel LSTM-256, batch 64 per worker, T 64, one thread per worker, 30 steps, best of 3"
    echo "(tsrnn-launch --accelerator cpu --devices N, Gloo; mpirun -np N tsrnn-worker, MPI;"
    echo "PyTorch: DistributedDataParallel, Gloo, spawn):"
    echo
    row "workers" "tsrnn samples/s" "scaling" "Gloo ms/step" "MPI samples/s" "scaling" \
        "MPI ms/step" "PyTorch samp/s" "scaling" "speed-up"
    printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' "---------" "----------------:" "--------:" \
        "-------------------:" "--------------:" "--------:" "---------------:" \
        "----------------:" "--------:" "---------:"
    row 1 "${d1%% *}" "-" "-" "${m1%% *}" "-" "-" "${p1%% *}" "-" "$(ratio "${d1%% *}" "${p1%% *}")"
    row 2 "${d2%% *}" "$(scaling "${d2%% *}" "${d1%% *}")" "${d2##* }" "${m2%% *}" \
        "$(scaling "${m2%% *}" "${m1%% *}")" "${m2##* }" "${p2%% *}" \
        "$(scaling "${p2%% *}" "${p1%% *}")" "$(ratio "${d2%% *}" "${p2%% *}")"
    echo
    echo "(ms/step: time in the step's allreduce, waiting for the slower worker included;"
    echo "speed-up: tsrnn-launch against PyTorch)"
    echo
    "$build/bench-allreduce"
    if [ "${m1%% *}" != n/a ]; then
        mpirun "${mpirun_root[@]}" -np 2 "$build/bench-allreduce"
    fi
}

torch_blas=""
main
