#!/usr/bin/env bash
# Data-parallel training speed on many series: the second example's global LSTM-32 (batch 32
# per worker, training_length 23) on the training parts of the Tourism competition's 366
# monthly series (examples/tourism_monthly.ini; scripts/fetch-tourism.sh writes the data),
# trained with tsrnn-launch --accelerator cpu --devices 1|2 (one thread per worker, Gloo
# allreduce) and by mpirun -np 1|2 (the mpi comm backend), next to the same model in real
# Darts, fitted in one process and in two CPU processes with Lightning's ddp_spawn
# (scripts/darts-tourism.py speed). Both sides train
# $EPOCHS epochs (default 1: 104,676 windows, 3,272 steps at one worker) without early
# stopping. Prints a Markdown table: samples/s of the whole job, scaling efficiency, the
# allreduce time per step, the speed-up. Each figure is the best of 3 runs.
# The Darts side needs a Python with Darts: $DARTS_PYTHON (default python3), else its
# columns read n/a.
# Usage: scripts/bench/global.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

epochs=${EPOCHS:-1}
darts_python=${DARTS_PYTHON:-python3}
ini=$bench_root/examples/tourism_monthly.ini

build=$(bench_build tsrnn-worker tsrnn-launch)
bash "$bench_root/scripts/fetch-tourism.sh" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The job of the tsrnn columns: $epochs epochs, no early stopping; the validation part stays
# (tsrnn's samples/s count the optimizer steps only); the run folder goes to the scratch
# folder, without checkpoints, TensorBoard logs or forecast.
job=(--set training.n_epochs="$epochs" --set early_stopping.monitor=none
    --set output.work_dir="$work" --set output.save_checkpoints=false
    --set output.log_tensorboard=false --set forecast.n=0 "$ini")

# tsrnn N: "samples/s collective-ms-per-step" of tsrnn-launch --devices N (Gloo).
tsrnn() { "$build/tsrnn-launch" --accelerator cpu --devices "$1" "${job[@]}" | training_rate; }

# mpi N: the same, the N workers started by mpirun (the mpi comm backend, shared memory).
mpi() { mpi_train "$1" "${job[@]}"; }

# darts N: "samples/s 0" of the Darts fit in N CPU processes (ddp_spawn for N > 1).
darts() {
    "$darts_python" "$bench_root/scripts/darts-tourism.py" speed --workers "$1" \
        --epochs "$epochs" 2>/dev/null |
        awk -F'"samples_per_s": ' 'NF > 1 { printf "%.0f 0\n", $2 + 0 }'
}

row() {
    printf '| %-7s | %15s | %7s | %12s | %13s | %7s | %11s | %15s | %7s | %8s |\n' "$@"
}

main() {
    local t1 t2 m1="n/a" m2="n/a n/a" d1="n/a" d2="n/a" version
    t1=$(best_of3 tsrnn 1)
    t2=$(best_of3 tsrnn 2)
    if have_mpi; then
        m1=$(best_of3 mpi 1)
        m2=$(best_of3 mpi 2)
    fi
    if "$darts_python" -c "import darts" 2>/dev/null; then
        d1=$(best_of3 darts 1)
        d2=$(best_of3 darts 2)
        [ "${d2%% *}" != 0 ] || d2="failed"
    fi
    echo "Global LSTM-32 on 366 series, batch 32 per worker, T 23, one thread per worker,"
    version=$("$darts_python" -c 'import darts; print(darts.__version__)' 2>/dev/null || echo n/a)
    echo "$epochs epoch(s), best of 3 (tsrnn-launch --accelerator cpu --devices N, Gloo;"
    echo "mpirun -np N tsrnn-worker, MPI; Darts $version: RNNModel.fit, one process, or"
    echo "ddp_spawn over N CPU processes):"
    echo
    row "workers" "tsrnn samples/s" "scaling" "Gloo ms/step" "MPI samples/s" "scaling" \
        "MPI ms/step" "Darts samples/s" "scaling" "speed-up"
    printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' "---------" "----------------:" "--------:" \
        "-------------:" "--------------:" "--------:" "------------:" "----------------:" \
        "--------:" "---------:"
    row 1 "${t1%% *}" "-" "-" "${m1%% *}" "-" "-" "${d1%% *}" "-" \
        "$(ratio "${t1%% *}" "${d1%% *}")"
    row 2 "${t2%% *}" "$(scaling "${t2%% *}" "${t1%% *}")" "${t2##* }" "${m2%% *}" \
        "$(scaling "${m2%% *}" "${m1%% *}")" "${m2##* }" "${d2%% *}" \
        "$(scaling "${d2%% *}" "${d1%% *}")" "$(ratio "${t2%% *}" "${d2%% *}")"
    echo
    echo "(tsrnn: samples/s of the optimizer steps; Darts: of its training epochs, data loading"
    echo "included, validation off; ms/step: time in the step's allreduce, waiting for the"
    echo "slower worker included; speed-up: tsrnn-launch against Darts)"
}

main
