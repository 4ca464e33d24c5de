#!/usr/bin/env bash
# One run on a GPU machine (issue: one GPU): builds the CUDA backend, runs the GPU tests, trains
# the AirPassengers example on the GPU through the README's command, compares its steps with
# PyTorch's on the same GPU, and benchmarks tsrnn against PyTorch side by side; prints a table
# last. Needs nvcc + cuDNN 9 (the CUDA toolkit), meson, ninja, the build's libraries
# (libinih, libjansson; cmocka for the tests) and python3 with torch built for CUDA; installs
# nothing and reaches no network. Designed to finish in under 8 minutes on an H100/H200.
#
#   bash scripts/gpu-check.sh            # build folder build-gpu, scratch in build-gpu/gpu-check
#   TSRNN_GPU_CHECK_PYTHON=python3.11 bash scripts/gpu-check.sh
#
# The multi-worker checks on one GPU: NCCL with world size 1 through the whole path (launcher,
# bootstrap, non-blocking communicator, collectives on the stream), 2 workers sharing the GPU
# over Gloo against 1 worker with twice the batch, and a worker killed (SIGKILL) or stopped
# (SIGSTOP) mid-run, which must end the job within timeout_s + 10 s with no worker left and
# the last checkpoint loadable. Two NCCL ranks need two GPUs: not checked here. Under mpirun
# (when the machine has it): `mpirun -np 1` with comm = nccl, the rank choosing nccl and its
# GPU itself and bootstrapping NCCL through MPI, against the same run over local; and the
# per-rank GPU summary line.
#
# Exit status: 0 when every check passed, 1 otherwise (each check runs whatever the others
# did; the table says which failed and the log above it why).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${TSRNN_GPU_BUILD_DIR:-build-gpu}
python=${TSRNN_GPU_CHECK_PYTHON:-python3}
start_s=$SECONDS
rows=()
failed=0

row() { # check, result, [FAIL]
    rows+=("$(printf '%-34s %s' "$1" "$2")")
    [ "${3:-}" != FAIL ] || failed=1
}
say() { echo "== $* ($((SECONDS - start_s)) s)"; }

say "the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
nvcc_version=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
torch_version=$("$python" scripts/gpu_torch.py version 2>&1 | tail -1)
echo "GPU: ${gpu:-none found}; driver ${driver:-?}; nvcc ${nvcc_version:-not found}"
echo "PyTorch: $torch_version"

say "build ($build, -Dcuda=enabled)"
# cuDNN is looked for next to the toolkit and in the system's folders. Where only PyTorch's
# own copy exists (the nvidia-cudnn wheel in site-packages), build against that one: its
# headers through CPATH, its library through LIBRARY_PATH (with the unversioned name the
# linker wants) and LD_LIBRARY_PATH.
toolkit=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
if [ ! -e "$toolkit/include/cudnn.h" ] && [ ! -e /usr/include/cudnn.h ] &&
    [ ! -e /usr/local/include/cudnn.h ] && [ ! -e /usr/include/x86_64-linux-gnu/cudnn.h ]; then
    wheel=$("$python" -c "import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))" \
        2>/dev/null || true)
    if [ -n "$wheel" ] && [ -e "$wheel/include/cudnn.h" ]; then
        mkdir -p "$build/cudnn-lib"
        link_dir=$(cd "$build/cudnn-lib" && pwd)
        for lib in "$wheel"/lib/libcudnn.so.*; do
            ln -sf "$lib" "$link_dir/libcudnn.so"
            break
        done
        export CPATH="$wheel/include${CPATH:+:$CPATH}"
        export LIBRARY_PATH="$link_dir:$wheel/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
        export LD_LIBRARY_PATH="$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        echo "cuDNN: PyTorch's copy in $wheel"
    fi
fi
tests=true
pkg-config --exists cmocka 2>/dev/null || tests=false
if [ -f "$build/build.ninja" ]; then
    meson setup --reconfigure "$build" -Dcuda=enabled -Dtests=$tests >/dev/null
else
    meson setup "$build" -Dcuda=enabled -Dtests=$tests --buildtype=release >/dev/null
fi
work=$(cd "$build" && pwd)/gpu-check # absolute: the runs below write there
mkdir -p "$work"
if meson compile -C "$build" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; false; }; then
    row "build (CUDA backend)" "ok"
else
    row "build (CUDA backend)" "FAILED" FAIL
    printf '%s\n' "${rows[@]}"
    exit 1
fi
cudnn=$(sed -n 's/^#define CUDNN_MAJOR \([0-9]*\)/\1/p;s/^#define CUDNN_MINOR \([0-9]*\)/\1/p;s/^#define CUDNN_PATCHLEVEL \([0-9]*\)/\1/p' \
    "$(dirname "$(command -v nvcc)")/../include/cudnn_version.h" 2>/dev/null | paste -sd.)

say "GPU tests (backend_ops: every op against the reference; gpu: whole runs; nccl_gpu: the nccl backend)"
if [ $tests = true ]; then
    for t in backend_ops gpu nccl_gpu; do
        if timeout 420 meson test -C "$build" "$t" --print-errorlogs >"$work/$t.log" 2>&1; then
            out=$(grep -h -E '^# (cuda|GPU|seed|steps_|[a-z_]+ vs |allreduce|rank 1 never)' "$build/meson-logs/testlog.txt" | tail -3)
            if grep -q "SKIP" "$work/$t.log" || grep -q "cuda: skipped" "$build/meson-logs/testlog.txt"; then
                row "test $t" "SKIPPED: no usable GPU (see the log)" FAIL
            else
                row "test $t" "ok"
            fi
            echo "$out"
        else
            tail -40 "$work/$t.log"
            row "test $t" "FAILED ($work/$t.log)" FAIL
        fi
    done
else
    row "tests" "not built (no cmocka)" FAIL
fi

say "AirPassengers on the GPU (README: tsrnn-launch --accelerator gpu --devices 1)"
if timeout 120 "$build/tsrnn-launch" --accelerator gpu --devices 1 examples/air_passengers.ini \
    --set output.work_dir="$work/runs" >"$work/air.log" 2>&1; then
    grep -E "GPU available|CUDA_VISIBLE|^Trained|^val_loss|^MAPE" "$work/air.log"
    val=$(sed -n 's/^val_loss \([0-9.e-]*\) .*/\1/p' "$work/air.log" | tail -1)
    mape=$(sed -n 's/^MAPE \([0-9.]*\)%.*/\1/p' "$work/air.log" | tail -1)
    rate=$(sed -n 's/.* \([0-9]*\) steps\/s.*/\1/p' "$work/air.log" | tail -1)
    verdict=ok
    grep -q "GPU available: True (cuda), used: True" "$work/air.log" || verdict=FAIL
    "$python" -c "import sys; v, m = float(sys.argv[1]), float(sys.argv[2]); \
        sys.exit(0 if 0.014 <= v <= 0.026 and 12 <= m <= 20 else 1)" "${val:-nan}" "${mape:-nan}" ||
        verdict=FAIL
    row "AirPassengers (launch, GPU)" "$verdict: val_loss $val, MAPE $mape %, $rate steps/s" \
        "$verdict"
else
    tail -20 "$work/air.log"
    row "AirPassengers (launch, GPU)" "FAILED ($work/air.log)" FAIL
fi

say "multi-worker on one GPU: NCCL world 1, 2 workers sharing the GPU over Gloo, killed and stopped workers"
launch() { # log, model_name, more tsrnn-launch arguments...
    local log=$1 name=$2
    shift 2
    timeout 180 "$build/tsrnn-launch" --accelerator gpu examples/air_passengers.ini \
        --set output.work_dir="$work/runs" --set output.model_name="$name" \
        --set output.force_reset=true "$@" >"$log" 2>&1
}
# NCCL, world size 1: the same numbers as the local backend (a sum over one rank is itself).
if launch "$work/nccl1.log" nccl1 --devices 1 --set trainer.comm=nccl --set training.n_epochs=20 &&
    launch "$work/local1.log" local1 --devices 1 --set training.n_epochs=20; then
    a=$(sed -n 's/^val_loss \([0-9.e-]*\) .*/\1/p' "$work/nccl1.log" | tail -1)
    b=$(sed -n 's/^val_loss \([0-9.e-]*\) .*/\1/p' "$work/local1.log" | tail -1)
    verdict=FAIL
    grep -q "Launching 1 worker process (gpu, nccl)" "$work/nccl1.log" &&
        "$python" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-5 * abs(b))" \
            "${a:-nan}" "${b:-nan}" && verdict=ok
    row "NCCL world 1 (whole path)" "$verdict: val_loss $a over nccl, $b over local" "$verdict"
else
    tail -n 20 "$work/nccl1.log" "$work/local1.log" 2>/dev/null
    row "NCCL world 1 (whole path)" "FAILED ($work/nccl1.log)" FAIL
fi
# NCCL under mpirun, world size 1: the rank chooses nccl and GPU 0 itself (world.h), NCCL's
# unique id goes through MPI; the same numbers as the local run above, and the summary names
# the rank's GPU.
mpirun_bin=$(command -v mpirun || true)
if [ -z "$mpirun_bin" ]; then
    row "NCCL under mpirun -np 1" "skipped: no mpirun on this machine"
elif OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 180 "$mpirun_bin" \
    --oversubscribe -np 1 "$build/tsrnn-worker" --progress=none examples/air_passengers.ini \
    --set trainer.accelerator=gpu --set trainer.comm=nccl --set training.n_epochs=20 \
    --set output.work_dir="$work/runs" --set output.model_name=mpi_nccl1 \
    --set output.force_reset=true >"$work/mpi-nccl1.log" 2>&1; then
    a=$(sed -n 's/^val_loss \([0-9.e-]*\) .*/\1/p' "$work/mpi-nccl1.log" | tail -1)
    b=$(sed -n 's/^val_loss \([0-9.e-]*\) .*/\1/p' "$work/local1.log" | tail -1)
    gpu_line=$(grep -m1 "^rank 0: GPU " "$work/mpi-nccl1.log")
    verdict=FAIL
    grep -q "^1 rank (nccl):" "$work/mpi-nccl1.log" && [ -n "$gpu_line" ] &&
        "$python" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-5 * abs(b))" \
            "${a:-nan}" "${b:-nan}" && verdict=ok
    row "NCCL under mpirun -np 1" \
        "$verdict: val_loss $a over nccl, $b over local; ${gpu_line:-no GPU line}" "$verdict"
else
    tail -n 20 "$work/mpi-nccl1.log"
    row "NCCL under mpirun -np 1" "FAILED ($work/mpi-nccl1.log)" FAIL
fi
# 2 workers x batch 8 sharing the GPU over Gloo = 1 worker x batch 16 (DESIGN.md §3).
same=(--set model.training_length=21 --set training.shuffle=false --set training.n_epochs=6
    --set model.model=LSTM --set model.hidden_dim=16)
if launch "$work/gloo2.log" gloo2 --devices 2 --set trainer.comm=gloo --set training.batch_size=8 "${same[@]}" &&
    launch "$work/gloo1.log" gloo1 --devices 1 --set training.batch_size=16 "${same[@]}"; then
    verdict=$("$python" - "$work/runs/gloo2" "$work/runs/gloo1" <<'PY'
import array, glob, json, struct, sys
def weights(run):
    path = glob.glob(run + "/checkpoints/last-*.safetensors")[0]
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or name.startswith("optim.") or t["dtype"] != "F32":
            continue
        lo, hi = t["data_offsets"]
        out[name] = array.array("f", data[8 + n + lo:8 + n + hi])
    return out
a, b = weights(sys.argv[1]), weights(sys.argv[2])
worst = max(abs(x - y) / max(abs(y), 1e-3) for k in b for x, y in zip(a[k], b[k]))
count = sum(len(v) for v in b.values())
ok = sorted(a) == sorted(b) and worst <= 1e-5
print(f"{'ok' if ok else 'FAIL'}: {count} weights, worst relative difference {worst:.2e} (<= 1e-5)")
PY
)
    grep -q "Launching 2 worker processes (gpu, gloo)" "$work/gloo2.log" || verdict="FAIL: not 2 gloo workers"
    row "2 workers on 1 GPU (gloo) = 1 x 2b" "$verdict" "${verdict%%:*}"
else
    tail -n 20 "$work/gloo2.log" "$work/gloo1.log" 2>/dev/null
    row "2 workers on 1 GPU (gloo) = 1 x 2b" "FAILED ($work/gloo2.log)" FAIL
fi
# A worker killed or stopped mid-run: the job ends within timeout_s + 10 s, nobody is left,
# the last checkpoint loads (tsrnn-predict forecasts from it).
failure_check() { # signal
    local sig=$1 name=fail_${1,,} log pid1 pids launcher t0 took rc left verdict
    log="$work/$name.log"
    timeout 240 "$build/tsrnn-launch" --accelerator gpu --devices 2 examples/air_passengers.ini \
        --set trainer.comm=gloo --set trainer.timeout_s=10 --set training.n_epochs=100000 \
        --set model.model=LSTM --set model.hidden_dim=32 --set output.work_dir="$work/runs" \
        --set output.model_name="$name" --set output.force_reset=true >"$log" 2>&1 &
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
        tail -n 20 "$log"
        row "worker $sig mid-run" "FAILED: the job did not start training ($log)" FAIL
        return
    fi
    t0=$(date +%s.%N)
    kill -"$sig" "$pid1"
    wait $launcher
    rc=$?
    took=$("$python" -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0")
    left=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    verdict=ok
    "$python" -c "import sys; sys.exit(float(sys.argv[1]) > 20)" "$took" || verdict=FAIL
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || verdict=FAIL
    [ -z "$left" ] || verdict=FAIL
    "$build/tsrnn-predict" --run "$work/runs/$name" --checkpoint last --n 3 \
        --out "$work/$name.csv" >>"$log" 2>&1 || verdict=FAIL
    [ "$verdict" = ok ] || tail -n 15 "$log"
    row "worker $sig mid-run" "$verdict: job ended in $took s (<= 10 + 10), exit $rc, left:${left:- none}, last checkpoint loads" "$verdict"
    for p in $left; do kill -KILL "$p" 2>/dev/null; done
}
failure_check KILL
failure_check STOP

say "every step against PyTorch on the same GPU (same initial weights, shuffle off, 43 epochs)"
if timeout 120 "$python" scripts/gpu_torch.py steps examples/data/air_passengers.csv \
    "$work/init.safetensors" 43 >"$work/torch_steps.json" 2>"$work/torch_steps.err" &&
    timeout 120 "$build/tsrnn-worker" -q examples/air_passengers.ini \
        --set output.work_dir="$work/runs" --set output.model_name=parity \
        --set model.init_weights="$work/init.safetensors" --set training.shuffle=false \
        --set training.n_epochs=43 --set trainer.accelerator=gpu >"$work/parity.log" 2>&1; then
    parity=$("$python" - "$work/torch_steps.json" "$work/runs/parity/metrics.csv" <<'PY'
import csv, json, sys
torch_losses = json.load(open(sys.argv[1]))["losses"]
ours = [float(r["train_loss"]) for r in csv.DictReader(open(sys.argv[2])) if r["train_loss"]]
n = min(300, len(torch_losses), len(ours))
worst = max(abs(a - b) / abs(b) for a, b in zip(ours[:n], torch_losses[:n]))
print(f"{'ok' if worst <= 1e-5 else 'FAIL'}: {n} steps, worst relative difference {worst:.2e} (<= 1e-5)")
PY
)
    row "steps vs PyTorch (GPU)" "$parity" "${parity%%:*}"
else
    tail -20 "$work/torch_steps.err" "$work/parity.log" 2>/dev/null
    row "steps vs PyTorch (GPU)" "FAILED (see $work/)" FAIL
fi

say "benchmarks: tsrnn and PyTorch on this GPU, same run"
awk -f bench/synthetic.awk -v n=100000 >"$work/synthetic.csv"
tflops() { # kind H B T samples/s -> achieved TFLOP/s of the recurrent layer's GEMMs (fwd + bwd = 3x fwd)
    "$python" -c "import sys; k, h, b, t, r = sys.argv[1], *map(float, sys.argv[2:]); \
        g = {'RNN': 1, 'GRU': 3, 'LSTM': 4}[k]; \
        print(f'{3 * 2 * g * h * (h + 1) * t * r / 1e12:.1f}')" "$@"
}
bench_pair() { # label kind hidden batch length steps
    local label=$1 kind=$2 hidden=$3 batch=$4 length=$5 steps=$6 ours theirs
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
INI
    ours=$(timeout 120 "$build/tsrnn-worker" -q "$work/bench.ini" 2>&1 |
        sed -n 's/.*steps\/s, \([0-9]*\) samples\/s.*/\1/p')
    theirs=$(timeout 120 "$python" scripts/gpu_torch.py bench "$work/synthetic.csv" --kind "$kind" \
        --hidden "$hidden" --batch "$batch" --length "$length" --steps "$steps" 2>/dev/null |
        "$python" -c "import json, sys; print(round(json.load(sys.stdin)['samples_per_s']))" 2>/dev/null)
    if [ -n "$ours" ] && [ -n "$theirs" ]; then
        local ratio verdict
        ratio=$("$python" -c "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.2f}')" "$ours" "$theirs")
        verdict=$("$python" -c "import sys; print('ok' if float(sys.argv[1]) >= 1.0 else 'below target')" "$ratio")
        row "$label" "$verdict: tsrnn $ours, PyTorch $theirs samples/s (x$ratio, target >= 1.0); tsrnn $(tflops "$kind" "$hidden" "$batch" "$length" "$ours") TFLOP/s"
    else
        row "$label" "FAILED (tsrnn '${ours}', PyTorch '${theirs}')" FAIL
    fi
}
seed_ours=$(timeout 120 "$build/tsrnn-worker" -q examples/air_passengers.ini \
    --set output.work_dir="$work/runs" --set output.model_name=bench_seed \
    --set trainer.accelerator=gpu --set output.save_checkpoints=false \
    --set output.log_tensorboard=false --set forecast.n=0 2>&1 |
    sed -n 's/.* \([0-9]*\) steps\/s.*/\1/p')
seed_theirs=$(timeout 120 "$python" scripts/gpu_torch.py bench examples/data/air_passengers.csv \
    --epochs 300 2>/dev/null | "$python" -c "import json, sys; print(round(json.load(sys.stdin)['steps_per_s']))" 2>/dev/null)
if [ -n "$seed_ours" ] && [ -n "$seed_theirs" ]; then
    ratio=$("$python" -c "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.1f}')" "$seed_ours" "$seed_theirs")
    verdict=$("$python" -c "import sys; print('ok' if float(sys.argv[1]) >= 20 else 'below target')" "$ratio")
    row "seed config (RNN-20, b16, T20)" "$verdict: tsrnn $seed_ours, PyTorch $seed_theirs steps/s (x$ratio, target >= 20)"
else
    row "seed config (RNN-20, b16, T20)" "FAILED (tsrnn '${seed_ours}', PyTorch '${seed_theirs}')" FAIL
fi
# Where the seed config's step time goes (the issue asks before any persistent kernel):
# kernels per step and time per kernel, from Nsight Systems where the machine has it.
nsys=$(command -v nsys || true)
for candidate in /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys; do
    [ -n "$nsys" ] || [ ! -x "$candidate" ] || nsys=$candidate
done
if [ -n "$nsys" ]; then
    say "profile of the seed config (nsys, 20 epochs = 140 steps)"
    if timeout 180 "$nsys" profile --force-overwrite=true -o "$work/seed-profile" --stats=true \
        "$build/tsrnn-worker" -q examples/air_passengers.ini --set output.work_dir="$work/runs" \
        --set output.model_name=profile --set trainer.accelerator=gpu --set training.n_epochs=20 \
        >"$work/nsys.txt" 2>&1; then
        grep -A14 -E "cuda_gpu_kern_sum|CUDA Kernel Statistics" "$work/nsys.txt" | head -16
        row "seed config profile" "ok: $work/nsys.txt (kernel and API summaries, 140 steps)"
    else
        tail -5 "$work/nsys.txt"
        row "seed config profile" "nsys failed ($work/nsys.txt)"
    fi
else
    row "seed config profile" "skipped: no nsys on this machine"
fi
bench_pair "LSTM-512, b256, T64" LSTM 512 256 64 100
bench_pair "LSTM-1024, b512, T64" LSTM 1024 512 64 40

echo
echo "== gpu-check: ${gpu:-no GPU}, driver ${driver:-?}, CUDA ${nvcc_version:-?}, cuDNN ${cudnn:-?}; $torch_version; $((SECONDS - start_s)) s"
echo "(TFLOP/s: 3 x 2 G H (H + 1) T per sample, the recurrent GEMMs of forward and backward;"
echo " the H100/H200 SXM datasheet's FP32 (non-tensor) peak is 67 TFLOP/s)"
printf '%s\n' "${rows[@]}"
exit $failed
