#!/usr/bin/env bash
# The whole test suite, again and again, on a machine made busy on purpose: CI runs on shared
# machines, and a test that passes alone but fails under load is a bug (in the test, which
# must assert events rather than durations, or in tsrnn). Runs `meson test` ROUNDS times while
# HOGS busy loops and a disk-heavy writer (a file written, fsync'd and removed, over and over)
# compete with it, then prints each test that failed, in how many rounds, and which cases;
# each failing round's log is kept. Exits 1 if any round failed.
#
#   bash scripts/stress-tests.sh [--rounds N] [--hogs M] [--no-writer] [--build DIR]
#                                [-- MESON-TEST-ARGS...]
#
# Defaults: 10 rounds, 2 hogs, the writer on, build/ (configured and built already: the
# script builds nothing). Arguments after -- go to every `meson test` (test names, --suite).
# The last line is the figure: "stress: R rounds, M hogs + writer, F failed test runs in K
# rounds".
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=10 hogs=2 writer=1 build=build
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    --no-writer) writer=0; shift ;;
    --build) build=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stress-tests.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$rounds$hogs" in *[!0-9]*) echo "stress-tests.sh: --rounds and --hogs take counts" >&2; exit 2 ;; esac
if [ ! -f "$build/build.ninja" ]; then
    echo "stress-tests.sh: $build is not a configured build folder (meson setup $build ...;" \
        "meson compile -C $build)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tsrnn-stress-XXXXXX")
pids=()
stop_load() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    pids=()
    rm -f "$work"/writer.*
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM

for ((h = 0; h < hogs; h++)); do
    (while :; do :; done) &
    pids+=($!)
done
if [ "$writer" = 1 ]; then
    # 256 MiB written and fsync'd, removed, again: the page cache and the disk stay busy, as
    # on a CI machine whose neighbours build and write.
    (while :; do
        dd if=/dev/zero of="$work/writer.$BASHPID" bs=1M count=256 conv=fsync status=none
        rm -f "$work/writer.$BASHPID"
    done) &
    pids+=($!)
fi
echo "stress: $rounds rounds of 'meson test -C $build ${extra[*]}' with $hogs busy loops" \
    "$([ "$writer" = 1 ] && echo "and a disk writer" || echo "and no writer") (load now:" \
    "$(cut -d' ' -f1-3 /proc/loadavg))"

failed_rounds=0
for ((r = 1; r <= rounds; r++)); do
    start=$(date +%s)
    set +e
    meson test -C "$build" --no-rebuild "${extra[@]}" >"$work/round-$r.out" 2>&1
    code=$?
    set -e
    cp "$build/meson-logs/testlog.json" "$work/round-$r.json"
    if [ $code -ne 0 ]; then
        failed_rounds=$((failed_rounds + 1))
        cp "$build/meson-logs/testlog.txt" "$work/round-$r.txt"
    fi
    echo "round $r: exit $code, $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg)"
done
stop_load

python3 - "$work" "$rounds" "$hogs" "$writer" "$failed_rounds" <<'PY'
import collections, glob, json, os, re, sys
work, rounds, hogs, writer, failed_rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", int(sys.argv[5])
failures = collections.defaultdict(list)   # test -> [(round, result, cases)]
durations = collections.defaultdict(list)  # test -> seconds of its OK runs
for r in range(1, rounds + 1):
    for line in open(os.path.join(work, f"round-{r}.json")):
        entry = json.loads(line)
        name = entry["name"]
        if entry["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
            durations[name].append(entry.get("duration", 0.0))
            continue
        out = entry.get("stdout") or ""
        cases = sorted(set(re.findall(r"^\[  FAILED  \] (test_\w+)", out, re.M)))
        failures[name].append((r, entry["result"], cases))
total = sum(len(v) for v in failures.values())
if failures:
    print("failures (test: rounds, result, cmocka cases):")
    for name in sorted(failures):
        runs = failures[name]
        print(f"  {name}: {len(runs)} of {rounds}")
        for r, result, cases in runs:
            print(f"    round {r}: {result}{': ' + ', '.join(cases) if cases else ''}"
                  f" (log: {os.path.join(work, f'round-{r}.txt')})")
slowest = sorted(((max(d), n) for n, d in durations.items() if d), reverse=True)[:5]
print("slowest passing tests (most seconds in a round): " +
      ", ".join(f"{n.split(' / ')[-1]} {s:.0f} s" for s, n in slowest))
print(f"stress: {rounds} rounds, {hogs} hogs{' + writer' if writer else ''}, "
      f"{total} failed test runs in {failed_rounds} rounds")
PY
if [ "$failed_rounds" -eq 0 ]; then
    rm -rf "$work"
    exit 0
fi
echo "stress: the failing rounds' logs are in $work"
exit 1
