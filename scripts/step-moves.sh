#!/usr/bin/env bash
# How many times one training step crosses between modules (issue: one door to the device):
# builds tsrnn-worker with gcc's -finstrument-functions (tools/step-moves/hook.c records the
# functions entered during the 10th step), trains the seed config on the CPU (1 rank, or
# 2 ranks over Gloo with --world 2: the reduction's modules too), and counts the distinct
# calls from one module's function into another's (a module: src/<folder>, a backend's
# folder its own: compute/cpu, comm/gloo), each call site once however often it runs. It also
# lists any call from a module below train/ into train/ (none may exist).
#
#   bash scripts/step-moves.sh [--world 2] [--build-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$root/build-step-moves
world=1
while [ $# -gt 0 ]; do
    case $1 in
    --world) world=$2; shift 2 ;;
    --build-dir) build=$(realpath -m "$2"); shift 2 ;;
    *) echo "step-moves: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
mkdir -p "$build"
gcc -O1 -fPIC -c tools/step-moves/hook.c -o "$build/hook.o"
rm -f "$build/tsrnn-worker" # relinked with the hook as it is now
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dtests=false -Dcuda=disabled -Dpjrt=disabled -Dmpi=disabled \
        -Db_pie=false -Dbuildtype=debugoptimized \
        -Dc_args="-finstrument-functions -fno-inline -fno-optimize-sibling-calls" \
        -Dcpp_args=-finstrument-functions -Dc_link_args="$build/hook.o -no-pie" >/dev/null
fi
meson compile -C "$build" >/dev/null
worker=$build/tsrnn-worker
step_fn=$(nm "$worker" | awk '$3 == "train_step" {print $1}')
[ -n "$step_fn" ] || { echo "step-moves: no train_step in $worker" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tsrnn-step-moves-XXXXXX")
sets=(--set output.work_dir="$work" --set training.n_epochs=3 --set output.save_checkpoints=false
    --set forecast.n=0 --set trainer.accelerator=cpu)
if [ "$world" = 1 ]; then
    TSRNN_TRACE_FILE=$work/trace.0 TSRNN_TRACE_STEP_FN=$step_fn \
        "$worker" -q examples/air_passengers.ini "${sets[@]}"
else
    TSRNN_TRACE_FILE=$work/trace TSRNN_TRACE_STEP_FN=$step_fn \
        "$build/tsrnn-launch" --accelerator cpu --devices "$world" examples/air_passengers.ini \
        "${sets[@]}" >/dev/null
    mv "$work/trace" "$work/trace.0" 2>/dev/null || true
fi
python3 - "$worker" "$build/tsrnn-comm-gloo.so" "$work/trace.0" "$root" <<'PY'
import collections, re, subprocess, sys
worker, module_so, trace, root = sys.argv[1:]
pairs = [tuple(int(a, 16) for a in line.split()) for line in open(trace)]
addrs = sorted({a for p in pairs for a in p})
out = subprocess.run(["addr2line", "-f", "-e", worker] + [hex(a) for a in addrs],
                     capture_output=True, text=True).stdout.split("\n")
where = {}
for i, a in enumerate(addrs):
    fn, loc = out[2 * i], out[2 * i + 1]
    m = re.search(r"/src/([a-z_]+)/(?:(cpu|cuda|pjrt)/)?", loc)
    if m is None and "gloo" in loc:
        m = re.search(r"/src/(comm)/", loc)
    module = None if m is None else m.group(1) + ("/" + m.group(2) if m.group(2) else "")
    if module == "comm" and re.search(r"/comm/(gloo|mpi|nccl|local)", loc):
        module = "comm/" + re.search(r"/comm/(gloo|mpi|nccl|local)", loc).group(1)
    where[a] = (fn, module)
# caller: the function that contains the call site
def containing(site):
    return where.get(site)
edges = collections.Counter()
for fn, site in pairs:
    callee = where[fn]
    caller = where[site]
    if callee[1] is None or caller[1] is None or callee[1] == caller[1]:
        continue
    edges[(caller[1], caller[0], callee[1], callee[0])] += 1
modules = sorted({m for (cm, _, em, _) in edges for m in (cm, em)})
up = [e for e in edges if e[2] == "train" and e[0] != "train"]
# core (status, clock, random numbers) is every module's base, as libc is: counted apart.
moves = [e for e in edges if e[2] != "core"]
jumps = {(cm, cf, em) for (cm, cf, em, _) in moves}
print(f"one training step crosses between modules at {len(moves)} call sites, {len(edges) - len(moves)} more into core ({sum(edges.values())} calls in all); "
      f"{len(jumps)} jumps from a function into another module; modules: {', '.join(modules)}")
for (cm, cf, em, ef), n in sorted(edges.items()):
    print(f"  {cm:>12}.{cf:<28} -> {em}.{ef}" + (f"  x{n}" if n > 1 else ""))
print(f"calls up into train/: {len(up)}")
PY
rm -rf "$work"
