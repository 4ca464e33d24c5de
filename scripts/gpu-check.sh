#!/usr/bin/env bash
# The GPU check: every GPU row of tsrnn on one machine with an NVIDIA GPU, in one run of at
# most 6 minutes on an H100/H200, the table printed last (docs/gpu.md).
#
#   bash scripts/gpu-check.sh --bundle .gpu-bundle [--logs DIR]   # prebuilt: no compiler, no meson
#   bash scripts/gpu-check.sh [--logs DIR]                         # builds build-gpu from source
#
# --bundle DIR takes the programs and GPU test programs of scripts/gpu-bundle.sh's bundle and
# its env.sh (NVIDIA's libraries from the pip wheels or a toolkit). Without it, the CUDA
# backend is built from source in $TSRNN_GPU_BUILD_DIR (default build-gpu; needs nvcc, meson,
# ninja, libinih, libjansson, cmocka; cuDNN and NCCL from a toolkit or the pip wheels).
# --logs DIR (default build-gpu/gpu-check or the bundle's gpu-check folder) gets every log,
# and DIR.tar.gz all of them at the end. Python with torch (CUDA) runs the PyTorch side:
# $TSRNN_GPU_CHECK_PYTHON, default python3. Reaches no network, installs nothing.
#
# Rows: the library-loading tests and the conformance test (every op of the CUDA backend
# against the CPU reference), the whole-run GPU tests, the AirPassengers example through the
# README's GPU command, NCCL with world size 1 through the launcher (and under mpirun where
# the machine has it), 2 workers sharing the GPU over Gloo against 1 worker with twice the
# batch, a worker SIGKILLed / SIGSTOPped mid-run, checkpoint round trips GPU -> CPU and CPU ->
# GPU, a GPU resume bit for bit, every step against PyTorch on the same GPU for RNN, LSTM and
# GRU, the speed table against PyTorch, and where a step's time goes. Each row's result is
# "ok: ...", "FAILED: no GPU (...)" where the machine has none usable, "FAILED: <why>", or
# "skipped: <why>" where the machine lacks something the row needs (mpirun). Exit status 0
# when every row is ok or skipped, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
bundle=""
logs=""
while [ $# -gt 0 ]; do
    case $1 in
    --bundle) bundle=$(realpath -m "$2"); shift 2 ;;
    --logs) logs=$(realpath -m "$2"); shift 2 ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
python=${TSRNN_GPU_CHECK_PYTHON:-python3}
start_s=$SECONDS
rows=()
failed=0

say() { echo "== $* ($((SECONDS - start_s)) s)"; }
# A row: its name, then its result. "ok" and "skipped" pass; anything else fails the check.
row() {
    rows+=("$(printf '%-36s %s' "$1" "$2")")
    case $2 in ok* | skipped*) ;; *) failed=1 ;; esac
}
# What a failed row's log says: "no GPU (...)" where the machine has no usable GPU (the
# programs' own words for it), else its first error line.
why_failed() { # log...
    local line
    line=$(grep -h -m1 -E "no GPU is usable here|no GPU is visible|GPU available: False|torch\.cuda\.is_available\(\) is False|skipped: no GPU" "$@" 2>/dev/null | head -1)
    if [ -n "$line" ]; then
        echo "no GPU (${line:0:160})"
        return
    fi
    line=$(grep -h -m1 -iE "error|fail|Traceback|not found|No module" "$@" 2>/dev/null | head -1)
    echo "${line:0:200}${line:+ }(${1#"$logs"/})"
}
py() { "$python" -c "$@"; }
# The last value of "key <number>" lines in a log.
last_value() { sed -n "s/^$1 \\([0-9.e+-]*\\) .*/\\1/p" "$2" | tail -1; }

# --- the programs ---------------------------------------------------------------------------
if [ -n "$bundle" ]; then
    [ -x "$bundle/bin/tsrnn-worker" ] || { echo "gpu-check: $bundle is not a bundle (scripts/gpu-bundle.sh)" >&2; exit 2; }
    logs=${logs:-$bundle/gpu-check}
    mkdir -p "$logs"
    # shellcheck disable=SC1091
    source "$bundle/env.sh" 2>"$logs/env.log"
    bin=$bundle/bin
    tests_dir=$bundle/tests
else
    build=${TSRNN_GPU_BUILD_DIR:-build-gpu}
    logs=${logs:-$root/$build/gpu-check}
    mkdir -p "$logs"
    say "build ($build from source, -Dcuda=enabled)"
    tests=true
    pkg-config --exists cmocka 2>/dev/null || tests=false
    if [ -f "$build/build.ninja" ]; then
        meson setup --reconfigure "$build" -Dcuda=enabled -Dtests=$tests >"$logs/setup.log" 2>&1
    else
        meson setup "$build" -Dcuda=enabled -Dtests=$tests --buildtype=release >"$logs/setup.log" 2>&1
    fi || { cat "$logs/setup.log"; echo "gpu-check: meson setup failed (above)" >&2; exit 1; }
    meson compile -C "$build" >"$logs/build.log" 2>&1 ||
        { tail -40 "$logs/build.log"; echo "gpu-check: the build failed (above)" >&2; exit 1; }
    bin=$root/$build
    tests_dir=$root/$build/tests
    export TSRNN_MODULE_DIR=$bin
fi
work=$logs/work
rm -rf "$work"
mkdir -p "$work/runs"
export TSRNN_SOURCE_ROOT=$root TSRNN_WORKER=$bin/tsrnn-worker TSRNN_LAUNCH=$bin/tsrnn-launch \
    TSRNN_PREDICT=$bin/tsrnn-predict CMOCKA_MESSAGE_OUTPUT=STDOUT
# NCCL's bootstrap needs an interface; where only loopback is up, that one.
if [ -z "${NCCL_SOCKET_IFNAME:-}" ] && [ "$(grep -lx up /sys/class/net/*/operstate 2>/dev/null | grep -cv '/lo/')" = 0 ]; then
    export NCCL_SOCKET_IFNAME=lo
fi

# --- the machine ----------------------------------------------------------------------------
say "the machine"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader 2>&1 | head -4
    echo "/proc/driver/nvidia/gpus: $([ -d /proc/driver/nvidia/gpus ] && ls /proc/driver/nvidia/gpus | wc -l | sed 's/$/ entries/' || echo missing)"
    echo "NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-(unset)}; CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-(unset)}"
    [ -s "$logs/env.log" ] && sed 's/^/bundle /' "$logs/env.log"
    "$python" scripts/gpu_torch.py version 2>&1 | tail -1 | sed 's/^/PyTorch: /'
} | tee "$logs/machine.log"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)

# --- the test programs ----------------------------------------------------------------------
say "test programs: libraries, cuDNN's argument checks, every op against the CPU reference, whole GPU runs, NCCL"
run_test() { # name, timeout, label
    local t=$1 log=$logs/test_$1.log
    if [ ! -x "$tests_dir/test_$t" ]; then
        row "$3" "FAILED: $tests_dir/test_$t was not built (cmocka missing?)"
        return
    fi
    timeout "$2" "$tests_dir/test_$t" >"$log" 2>&1
    local code=$?
    grep -h '^# \(loaded\|cuda\|GPU\|seed\|graph\)' "$log" | head -4
    # The conformance test passes on a machine without a GPU on its CPU backend alone: there
    # its CUDA part skipped, which is this row's failure.
    if [ $code = 0 ] && grep -q '^# cuda: skipped' "$log"; then
        row "$3" "FAILED: $(why_failed "$log")"
    elif [ $code = 0 ]; then
        row "$3" "ok$(grep -c '^\[       OK \]' "$log" | sed 's/^/: /; s/$/ cases/')"
    elif [ $code = 77 ]; then
        row "$3" "FAILED: $(why_failed "$log")"
    else
        tail -30 "$log"
        row "$3" "FAILED: exit $code, $(why_failed "$log")"
    fi
}
run_test cuda_libs 60 "cuBLAS + cuDNN load (test_cuda_libs)"
run_test nccl_lib 60 "NCCL loads (test_nccl_lib)"
run_test cudnn_args 60 "cuDNN argument checks (test_cudnn_args)"
grep -h "^# loaded" "$logs"/test_cuda_libs.log "$logs"/test_nccl_lib.log 2>/dev/null | tee -a "$logs/machine.log"
run_test backend_ops 120 "every op vs CPU (test_backend_ops)"
run_test gpu 240 "whole GPU runs (test_gpu)"
run_test nccl_gpu 120 "nccl backend (test_nccl_gpu)"

# --- the README's command -------------------------------------------------------------------
say "AirPassengers on the GPU (README: tsrnn-launch --accelerator gpu --devices 1)"
launch() { # log, model_name, more tsrnn-launch arguments...
    local log=$1 name=$2
    shift 2
    (cd "$work" && timeout 180 "$bin/tsrnn-launch" --accelerator gpu "$root/examples/air_passengers.ini" \
        --set output.work_dir="$work/runs" --set output.model_name="$name" \
        --set output.force_reset=true "$@" >"$log" 2>&1)
}
if launch "$logs/air.log" air --devices 1; then
    grep -E "GPU available|CUDA_VISIBLE|^Trained|^val_loss|^MAPE|^rank 0: GPU" "$logs/air.log"
    val=$(last_value val_loss "$logs/air.log")
    mape=$(sed -n 's/^MAPE \([0-9.]*\)%.*/\1/p' "$logs/air.log" | tail -1)
    rate=$(sed -n 's/.* \([0-9]*\) steps\/s.*/\1/p' "$logs/air.log" | tail -1)
    verdict=ok
    grep -q "GPU available: True (cuda), used: True" "$logs/air.log" || verdict="FAILED: no 'GPU available: True (cuda), used: True'"
    py "import sys; v, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if 0.014 <= v <= 0.026 and 12 <= m <= 20 else 1)" \
        "${val:-nan}" "${mape:-nan}" || verdict="FAILED: outside the CPU's ranges (val_loss 0.014-0.026, MAPE 12-20 %)"
    row "AirPassengers (launch, GPU)" "$verdict: val_loss $val, MAPE $mape %, $rate steps/s"
else
    tail -20 "$logs/air.log"
    row "AirPassengers (launch, GPU)" "FAILED: $(why_failed "$logs/air.log")"
fi

# --- several workers on one GPU -------------------------------------------------------------
say "NCCL world 1, mpirun, 2 workers sharing the GPU over Gloo, killed and stopped workers"
same_val() { # a, b: relative difference <= 1e-5
    py "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-5 * abs(b))" "${1:-nan}" "${2:-nan}"
}
if launch "$logs/nccl1.log" nccl1 --devices 1 --set trainer.comm=nccl --set training.n_epochs=20 &&
    launch "$logs/local1.log" local1 --devices 1 --set training.n_epochs=20; then
    a=$(last_value val_loss "$logs/nccl1.log")
    b=$(last_value val_loss "$logs/local1.log")
    verdict="FAILED: not the same val_loss"
    grep -q "Launching 1 worker process (gpu, nccl)" "$logs/nccl1.log" || verdict="FAILED: not launched over nccl"
    grep -q "Launching 1 worker process (gpu, nccl)" "$logs/nccl1.log" && same_val "$a" "$b" && verdict=ok
    row "NCCL world 1 (whole path)" "$verdict: val_loss $a over nccl, $b over local"
else
    row "NCCL world 1 (whole path)" "FAILED: $(why_failed "$logs/nccl1.log" "$logs/local1.log")"
fi
mpirun_bin=$(command -v mpirun || true)
if [ -z "$mpirun_bin" ]; then
    row "NCCL under mpirun -np 1" "skipped: no mpirun on this machine"
elif [ -n "$bundle" ]; then
    row "NCCL under mpirun -np 1" "skipped: the bundle is built without MPI (build from source for mpirun)"
elif (cd "$work" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 180 "$mpirun_bin" \
    --oversubscribe -np 1 "$bin/tsrnn-worker" --progress=none "$root/examples/air_passengers.ini" \
    --set trainer.accelerator=gpu --set trainer.comm=nccl --set training.n_epochs=20 \
    --set output.work_dir="$work/runs" --set output.model_name=mpi_nccl1 \
    --set output.force_reset=true >"$logs/mpi-nccl1.log" 2>&1); then
    a=$(last_value val_loss "$logs/mpi-nccl1.log")
    b=$(last_value val_loss "$logs/local1.log")
    gpu_line=$(grep -m1 "^rank 0: GPU " "$logs/mpi-nccl1.log")
    verdict="FAILED: not the same val_loss, or no rank line"
    grep -q "^1 rank (nccl):" "$logs/mpi-nccl1.log" && [ -n "$gpu_line" ] && same_val "$a" "$b" && verdict=ok
    row "NCCL under mpirun -np 1" "$verdict: val_loss $a over nccl, $b over local; ${gpu_line:-no GPU line}"
else
    row "NCCL under mpirun -np 1" "FAILED: $(why_failed "$logs/mpi-nccl1.log")"
fi

# The weights of a run's last checkpoint (PyTorch names) and their worst relative difference.
weights_diff() { # run_a run_b -> "worst count"
    py "
import glob, json, struct, sys
def weights(run):
    path = sorted(glob.glob(run + '/checkpoints/last-*.safetensors'))[-1]
    data = open(path, 'rb').read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == '__metadata__' or name.startswith('optim.') or t['dtype'] != 'F32':
            continue
        lo, hi = t['data_offsets']
        out[name] = struct.unpack(f'<{(hi - lo) // 4}f', data[8 + n + lo:8 + n + hi])
    return out
a, b = weights(sys.argv[1]), weights(sys.argv[2])
assert sorted(a) == sorted(b), 'different tensors'
worst = max(abs(x - y) / max(abs(y), 1e-3) for k in b for x, y in zip(a[k], b[k]))
print(f'{worst:.3g} {sum(len(v) for v in b.values())}')
" "$1" "$2" 2>&1 | tail -1
}
# 2 workers x batch 8 sharing the GPU over Gloo = 1 worker x batch 16 (DESIGN.md §3).
same=(--set model.training_length=21 --set training.shuffle=false --set training.n_epochs=6
    --set model.model=LSTM --set model.hidden_dim=16)
if launch "$logs/gloo2.log" gloo2 --devices 2 --set trainer.comm=gloo --set training.batch_size=8 "${same[@]}" &&
    launch "$logs/gloo1.log" gloo1 --devices 1 --set training.batch_size=16 "${same[@]}"; then
    read -r worst count <<<"$(weights_diff "$work/runs/gloo2" "$work/runs/gloo1")"
    verdict=ok
    py "import sys; sys.exit(not float(sys.argv[1]) <= 1e-5)" "${worst:-nan}" 2>/dev/null || verdict="FAILED: weights differ"
    grep -q "Launching 2 worker processes (gpu, gloo)" "$logs/gloo2.log" || verdict="FAILED: not 2 gloo workers"
    row "2 workers on 1 GPU (gloo) = 1 x 2b" "$verdict: $count weights, worst relative difference $worst (<= 1e-5)"
else
    row "2 workers on 1 GPU (gloo) = 1 x 2b" "FAILED: $(why_failed "$logs/gloo2.log" "$logs/gloo1.log")"
fi
# A worker killed or stopped mid-run: the job ends within timeout_s + 10 s, nobody is left,
# the last checkpoint loads (tsrnn-predict forecasts from it).
failure_check() { # signal
    local sig=$1 name=fail_${1,,} log pid1 pids launcher t0 took rc left verdict
    log="$logs/$name.log"
    (cd "$work" && exec timeout 240 "$bin/tsrnn-launch" --accelerator gpu --devices 2 \
        "$root/examples/air_passengers.ini" --set trainer.comm=gloo --set trainer.timeout_s=10 \
        --set training.n_epochs=100000 --set model.model=LSTM --set model.hidden_dim=32 \
        --set output.work_dir="$work/runs" --set output.model_name="$name" \
        --set output.force_reset=true) >"$log" 2>&1 &
    launcher=$!
    for _ in $(seq 600); do # up to 60 s for training to start and a last checkpoint
        ls "$work/runs/$name/checkpoints"/last-* >/dev/null 2>&1 && break
        kill -0 $launcher 2>/dev/null || break
        sleep 0.1
    done
    pids=$(sed -n 's/^ *rank [0-9]* (local [0-9]*): pid \([0-9]*\).*/\1/p' "$log")
    pid1=$(sed -n 's/^ *rank 1 (local 1): pid \([0-9]*\).*/\1/p' "$log")
    if [ -z "$pid1" ] || ! ls "$work/runs/$name/checkpoints"/last-* >/dev/null 2>&1; then
        kill $launcher 2>/dev/null
        wait $launcher
        row "worker $sig mid-run" "FAILED: $(why_failed "$log")"
        return
    fi
    t0=$(date +%s.%N)
    kill -"$sig" "$pid1"
    wait $launcher
    rc=$?
    took=$(py "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0")
    left=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    verdict=ok
    py "import sys; sys.exit(float(sys.argv[1]) > 20)" "$took" || verdict="FAILED: too slow"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || verdict="FAILED: exit $rc"
    [ -z "$left" ] || verdict="FAILED: workers left"
    "$bin/tsrnn-predict" --run "$work/runs/$name" --checkpoint last --n 3 \
        --out "$work/$name.csv" >>"$log" 2>&1 || verdict="FAILED: the last checkpoint does not load"
    row "worker $sig mid-run" "$verdict: ended in $took s (<= 10 + 10), exit $rc, left:${left:- none}"
    for p in $left; do kill -KILL "$p" 2>/dev/null; done
}
failure_check KILL
failure_check STOP

# --- checkpoints across devices, and a GPU resume bit for bit -------------------------------
say "checkpoints: GPU -> CPU, CPU -> GPU, a GPU resume bit for bit"
worker() { # log, accelerator, model_name, more --set values...
    local log=$1 accel=$2 name=$3
    shift 3
    local sets=()
    for s in "$@"; do sets+=(--set "$s"); done
    (cd "$work" && timeout 180 "$bin/tsrnn-worker" --progress=none "$root/examples/air_passengers.ini" \
        --set trainer.accelerator="$accel" --set output.work_dir="$work/runs" \
        --set output.model_name="$name" "${sets[@]}" >"$log" 2>&1)
}
# Where a resumed run lands against an uninterrupted one on the other device: the same model,
# within the two devices' rounding (the CPU's sums and cuDNN's differ in order).
cross() { # label, first device, second device
    local label=$1 a=$2 b=$3 n=x_${2}_$3 log
    log=$logs/$n.log
    if worker "$log" "$a" "$n" training.n_epochs=20 output.force_reset=true &&
        worker "$log.2" "$b" "$n" training.n_epochs=40 output.resume=last &&
        worker "$log.3" "$b" "${n}_whole" training.n_epochs=40 output.force_reset=true; then
        local x y
        x=$(last_value val_loss "$log.2")
        y=$(last_value val_loss "$log.3")
        local verdict=ok
        grep -q "Resumed at step 140" "$log.2" || verdict="FAILED: not resumed at step 140"
        py "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-3 * abs(b))" "${x:-nan}" "${y:-nan}" ||
            verdict="FAILED: resumed and whole runs differ"
        row "$label" "$verdict: 20 epochs on $a + 20 on $b: val_loss $x; 40 on $b: $y (<= 1e-3)"
    else
        row "$label" "FAILED: $(why_failed "$log" "$log.2" "$log.3")"
    fi
}
cross "checkpoint GPU -> CPU resume" gpu cpu
cross "checkpoint CPU -> GPU resume" cpu gpu
# Bitwise: cuBLAS's workspace fixed (CUBLAS_WORKSPACE_CONFIG), cuDNN deterministic.
export CUBLAS_WORKSPACE_CONFIG=:4096:8
if worker "$logs/bit_whole.log" gpu bit_whole training.n_epochs=40 output.force_reset=true &&
    worker "$logs/bit_half.log" gpu bit_half training.n_epochs=20 output.force_reset=true &&
    worker "$logs/bit_half2.log" gpu bit_half training.n_epochs=40 output.resume=last; then
    read -r worst count <<<"$(weights_diff "$work/runs/bit_half" "$work/runs/bit_whole")"
    verdict=ok
    [ "$worst" = 0 ] || verdict="FAILED: not bit for bit"
    row "GPU resume bit for bit" "$verdict: $count weights after 20 + 20 epochs against 40, worst difference $worst (CUBLAS_WORKSPACE_CONFIG=$CUBLAS_WORKSPACE_CONFIG)"
else
    row "GPU resume bit for bit" "FAILED: $(why_failed "$logs"/bit_*.log)"
fi

# The step's CUDA graphs: the same bits as the step run stage by stage (TSRNN_CUDA_GRAPHS=0),
# and no capture refused (the worker warns when one is).
if worker "$logs/graphs_on.log" gpu graphs_on training.n_epochs=20 output.force_reset=true &&
    TSRNN_CUDA_GRAPHS=0 worker "$logs/graphs_off.log" gpu graphs_off training.n_epochs=20 \
        output.force_reset=true; then
    read -r worst count <<<"$(weights_diff "$work/runs/graphs_on" "$work/runs/graphs_off")"
    verdict=ok
    [ "$worst" = 0 ] || verdict="FAILED: the graphs change the numbers"
    cmp -s <(cut -d, -f3 "$work/runs/graphs_on/metrics.csv") \
        <(cut -d, -f3 "$work/runs/graphs_off/metrics.csv") || verdict="FAILED: other step losses"
    if grep -q "cannot be captured" "$logs/graphs_on.log"; then
        verdict="FAILED: $(grep -m1 "cannot be captured" "$logs/graphs_on.log")"
    fi
    row "CUDA graphs = stage by stage" "$verdict: $count weights and 140 step losses, worst difference $worst"
else
    row "CUDA graphs = stage by stage" "FAILED: $(why_failed "$logs/graphs_on.log" "$logs/graphs_off.log")"
fi

# --- every step against PyTorch on the same GPU ---------------------------------------------
say "every step against PyTorch on the same GPU (same initial weights, shuffle off, 43 epochs)"
for kind in RNN LSTM GRU; do
    init=$work/runs/init_$kind
    log=$logs/parity_$kind.log
    # The initial weights from tsrnn itself (max_steps = 0 saves them), on the CPU.
    if worker "$log.init" cpu "init_$kind" model.model=$kind training.max_steps=0 output.force_reset=true &&
        worker "$log" gpu "parity_$kind" model.model=$kind \
            model.init_weights="$(ls "$init"/checkpoints/last-epoch=0*.safetensors)" \
            training.shuffle=false training.n_epochs=43 output.force_reset=true &&
        timeout 120 "$python" scripts/gpu_torch.py steps examples/data/air_passengers.csv \
            "$(ls "$init"/checkpoints/last-epoch=0*.safetensors)" 43 --kind $kind \
            >"$work/torch_$kind.json" 2>"$log.torch"; then
        parity=$(py "
import csv, json, sys
theirs = json.load(open(sys.argv[1]))['losses']
ours = [float(r['train_loss']) for r in csv.DictReader(open(sys.argv[2])) if r['train_loss']]
n = min(300, len(theirs), len(ours))
worst = max(abs(a - b) / abs(b) for a, b in zip(ours[:n], theirs[:n]))
print(f\"{'ok' if worst <= 1e-5 else 'FAILED: above 1e-5'}: {n} steps, worst relative difference {worst:.2e} (<= 1e-5)\")
" "$work/torch_$kind.json" "$work/runs/parity_$kind/metrics.csv" 2>&1 | tail -1)
        row "steps vs PyTorch, $kind (GPU)" "$parity"
    else
        row "steps vs PyTorch, $kind (GPU)" "FAILED: $(why_failed "$log.init" "$log" "$log.torch")"
    fi
done
unset CUBLAS_WORKSPACE_CONFIG

# --- speed ----------------------------------------------------------------------------------
say "speed: tsrnn and PyTorch on this GPU, same run"
awk -f bench/synthetic.awk -v n=100000 >"$work/synthetic.csv"
tflops() { # kind H samples/s T -> TFLOP/s of the recurrent GEMMs (forward + backward = 3x forward)
    py "import sys; k, h, r, t = sys.argv[1], *map(float, sys.argv[2:]); g = {'RNN': 1, 'GRU': 3, 'LSTM': 4}[k]; print(f'{3 * 2 * g * h * (h + 1) * t * r / 1e12:.1f}')" "$@"
}
bench_pair() { # label kind hidden batch length steps
    local label=$1 kind=$2 hidden=$3 batch=$4 length=$5 steps=$6 ours theirs log=$logs/bench_$2_$3.log
    cat >"$work/bench.ini" <<INI
[data]
path = $work/synthetic.csv
value_cols = value
[model]
model = $kind
hidden_dim = $hidden
training_length = $length
input_chunk_length = $length
[training]
batch_size = $batch
n_epochs = 1
max_steps = $steps
[trainer]
accelerator = gpu
[output]
work_dir = $work/runs
model_name = bench
force_reset = true
save_checkpoints = false
[forecast]
n = 0
INI
    timeout 120 "$bin/tsrnn-worker" -q "$work/bench.ini" >"$log" 2>&1
    ours=$(sed -n 's/.*steps\/s, \([0-9]*\) samples\/s.*/\1/p' "$log")
    if [ -z "$ours" ]; then
        row "$label" "FAILED: $(why_failed "$log")"
        return
    fi
    theirs=$(timeout 120 "$python" scripts/gpu_torch.py bench "$work/synthetic.csv" --kind "$kind" \
        --hidden "$hidden" --batch "$batch" --length "$length" --steps "$steps" 2>>"$log" |
        py "import json, sys; print(round(json.load(sys.stdin)['samples_per_s']))" 2>>"$log")
    if [ -z "$theirs" ]; then
        row "$label" "FAILED: PyTorch: $(why_failed "$log")"
        return
    fi
    local ratio
    ratio=$(py "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.2f}')" "$ours" "$theirs")
    row "$label" "ok: tsrnn $ours, PyTorch $theirs samples/s (x$ratio, goal >= 1.0); tsrnn $(tflops "$kind" "$hidden" "$ours" "$length") TFLOP/s of 67 (FP32)"
}
seed_log=$logs/bench_seed.log
seed_run() { # log, [env...]: the seed config, 300 epochs, steps/s
    (cd "$work" && env "${@:2}" timeout 120 "$bin/tsrnn-worker" -q "$root/examples/air_passengers.ini" \
        --set output.work_dir="$work/runs" --set output.model_name=bench_seed \
        --set trainer.accelerator=gpu --set output.save_checkpoints=false \
        --set output.log_tensorboard=false --set forecast.n=0 >"$1" 2>&1)
    sed -n 's/.* \([0-9]*\) steps\/s.*/\1/p' "$1"
}
seed_ours=$(seed_run "$seed_log")
seed_eager=$(seed_run "$logs/bench_seed_nographs.log" TSRNN_CUDA_GRAPHS=0)
if [ -z "$seed_ours" ]; then
    row "seed config (RNN-20, b16, T20)" "FAILED: $(why_failed "$seed_log")"
else
    seed_theirs=$(timeout 120 "$python" scripts/gpu_torch.py bench examples/data/air_passengers.csv \
        --epochs 300 2>>"$seed_log" | py "import json, sys; print(round(json.load(sys.stdin)['steps_per_s']))" 2>>"$seed_log")
    if [ -z "$seed_theirs" ]; then
        row "seed config (RNN-20, b16, T20)" "FAILED: PyTorch: $(why_failed "$seed_log")"
    else
        ratio=$(py "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.1f}')" "$seed_ours" "$seed_theirs")
        row "seed config (RNN-20, b16, T20)" "ok: tsrnn $seed_ours (without graphs ${seed_eager:-?}), PyTorch $seed_theirs steps/s (x$ratio, goal >= 20)"
    fi
fi
bench_pair "LSTM-512, b256, T64" LSTM 512 256 64 100
bench_pair "LSTM-1024, b512, T64" LSTM 1024 512 64 40

# Where the seed config's step goes: Nsight Compute's per-kernel times over a few steps (nsys
# is not on every machine; ncu is where the toolkit is).
ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$ncu_bin" ]; then
    row "seed step profile" "skipped: no ncu on this machine"
elif (cd "$work" && timeout 120 "$ncu_bin" --clock-control none --launch-skip 200 --launch-count 60 \
    --metrics gpu__time_duration.sum --csv "$bin/tsrnn-worker" -q "$root/examples/air_passengers.ini" \
    --set trainer.accelerator=gpu --set training.n_epochs=5 --set output.work_dir="$work/runs" \
    --set output.model_name=profile --set output.save_checkpoints=false >"$logs/ncu.csv" 2>"$logs/ncu.err"); then
    summary=$(py "
import csv, sys, collections
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('\"'))]
t = collections.defaultdict(float); n = collections.Counter()
for r in rows:
    t[r['Kernel Name'][:40]] += float(r['Metric Value']); n[r['Kernel Name'][:40]] += 1
print('; '.join(f'{k} x{n[k]} {t[k] / n[k] / 1e3:.1f} us' for k in sorted(t, key=t.get, reverse=True)[:6]))
" "$logs/ncu.csv" 2>&1 | tail -1)
    row "seed step profile" "ok: 60 kernels: $summary"
else
    row "seed step profile" "FAILED: $(why_failed "$logs/ncu.err" "$logs/ncu.csv")"
fi

took_s=$((SECONDS - start_s))
if [ "$took_s" -le 360 ]; then
    row "the whole check" "ok: $took_s s (<= 360)"
else
    row "the whole check" "FAILED: $took_s s, over its 360 s"
fi
echo
echo "== gpu-check: ${gpu:-no GPU}, driver ${driver:-?}; $took_s s; logs $logs.tar.gz"
echo "(TFLOP/s: 3 x 2 G H (H + 1) T per sample, the recurrent GEMMs of forward and backward;"
echo " the H100/H200 SXM datasheet's FP32 (non-tensor) peak is 67 TFLOP/s)"
printf '%s\n' "${rows[@]}" | tee "$logs/table.txt"
tar czf "$logs.tar.gz" -C "$(dirname "$logs")" "$(basename "$logs")" --exclude="$(basename "$logs")/work/runs" 2>/dev/null
exit $failed
