#!/usr/bin/env bash
# Installs what the tests need, builds with warnings as errors, and runs every test twice:
# in the normal build and in a build with AddressSanitizer + UndefinedBehaviorSanitizer
# (memory errors, leaks and undefined behaviour fail the test that hits them); then builds
# the fuzz targets with clang and runs each for a fixed number of inputs.
# Ends with one line "tests: N passed, N failed, N skipped"; exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --test

build=${TSRNN_BUILD_DIR:-build}
pjrt_cache=${TSRNN_PJRT_CACHE:-$HOME/.cache/tsrnn/pjrt} # scripts/install-deps.sh's
asan_build=${build}-asan

configure() { # dir, extra meson options...
    local dir=$1
    shift
    # Configured before libgloo-dev was installed: meson keeps the failed header check.
    if grep -qs 'TSRNN_HAVE_GLOO 0' "$dir/include/tsrnn_build.h"; then
        rm -rf "$dir"
    fi
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" -Dwerror=true -Dtests=true -Dgloo=enabled -Dmpi=enabled \
            -Dpjrt_cache="$pjrt_cache" "$@"
    else
        meson setup "$dir" -Dwerror=true -Dtests=true -Dgloo=enabled -Dmpi=enabled \
            -Dpjrt_cache="$pjrt_cache" "$@"
    fi | sed -n '/^tsrnn /,$p' # meson's summary: which optional backends were found
    meson compile -C "$dir"
}

configure "$build"
# -fno-sanitize-recover=all: an undefined behaviour (an overflow, a misaligned load) ends the
# test that hits it, whatever UBSAN_OPTIONS says, instead of printing and going on.
# -Dcuda=disabled: the sanitized build checks the host code. Without a GPU the CUDA backend
# runs no more than its probe and library loading, which the normal build's tests run
# (test_cuda_libs); on a GPU machine ASan would also need ASAN_OPTIONS=protect_shadow_gap=0
# for the driver.
configure "$asan_build" -Db_sanitize=address,undefined -Dbuildtype=debug -Dcuda=disabled \
    -Dc_args=-fno-sanitize-recover=all -Dcpp_args=-fno-sanitize-recover=all

rc=0
echo "== tests ($build)"
meson test -C "$build" --print-errorlogs || rc=1
# Sanitized training runs are ten times slower: TSRNN_TEST_SHORT asks the slow tests for their
# short versions (test_train: 30-epoch runs against the PyTorch fixtures' first 30 epochs), so
# that this run takes seconds, not minutes. The full runs are the normal build's.
echo "== tests under ASan + UBSan ($asan_build; TSRNN_TEST_SHORT=1: short versions of the long training runs)"
TSRNN_TEST_SHORT=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
    meson test -C "$asan_build" --print-errorlogs --no-suite clang-format --no-suite gpu-bundle \
    --no-suite python || rc=1

# The fuzz targets (tests/fuzz/): clang's libFuzzer with ASan + UBSan, in a build folder of
# their own (the project's compiler is gcc). Each runs TSRNN_FUZZ_RUNS inputs (a few seconds)
# from a fixed seed, starting from its seed corpus and regression files, one per core; the
# inputs it finds go to a scratch folder, never to the committed corpus. Longer runs by hand:
# CONTRIBUTING.md "Fuzzing". Each target counts as one test below.
fuzz_build=${build}-fuzz
fuzz_runs=${TSRNN_FUZZ_RUNS:-20000}
fuzz_targets=(ini csv safetensors checkpoint tensorboard)
fuzz_log=$fuzz_build/meson-logs/fuzzlog.json
echo "== fuzz targets ($fuzz_build; clang, libFuzzer + ASan + UBSan; $fuzz_runs inputs each)"
if [ -f "$fuzz_build/build.ninja" ]; then
    meson setup --reconfigure "$fuzz_build" -Dfuzz=true -Dtests=false -Dwerror=true >/dev/null
else
    CC=clang meson setup "$fuzz_build" -Dfuzz=true -Dtests=false -Dwerror=true \
        -Dbuildtype=debugoptimized >/dev/null
fi
meson compile -C "$fuzz_build" fuzzers
fuzz_work=$(mktemp -d "${TMPDIR:-/tmp}/tsrnn-fuzz-XXXXXX")
fuzz_failed=0
fuzz_one() { # target: runs it, leaves its log and exit status in $fuzz_work
    local t=$1 dirs=("tests/fuzz/corpus/$1")
    [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
    mkdir "$fuzz_work/$t"
    set +e
    "$fuzz_build/tests/fuzz/fuzz_$t" -runs="$fuzz_runs" -seed=1 -artifact_prefix="$fuzz_work/$t-" \
        "$fuzz_work/$t" "${dirs[@]}" </dev/null >"$fuzz_work/$t.log" 2>&1
    echo $? >"$fuzz_work/$t.rc"
}
cores=$(nproc)
for t in "${fuzz_targets[@]}"; do
    fuzz_one "$t" &
    [ "$(jobs -rp | wc -l)" -lt "$cores" ] || wait -n
done
wait
mkdir -p "$(dirname "$fuzz_log")"
: >"$fuzz_log"
for t in "${fuzz_targets[@]}"; do
    summary=$(grep -a '^Done ' "$fuzz_work/$t.log" || true)
    if [ "$(cat "$fuzz_work/$t.rc")" = 0 ]; then
        echo "fuzz_$t: ok (${summary:-no summary})"
        result=OK
    else
        fuzz_failed=1
        echo "fuzz_$t: FAILED; the input is kept as $fuzz_work/$t-*: add it to" \
            "tests/fuzz/regressions/$t/ with the fix. The end of its log:"
        tail -n 40 "$fuzz_work/$t.log"
        result=FAIL
        rc=1
    fi
    python3 -c 'import json, sys; print(json.dumps({"name": sys.argv[1], "result": sys.argv[2]}))' \
        "fuzz_$t" "$result" >>"$fuzz_log"
done
[ $fuzz_failed -ne 0 ] || rm -rf "$fuzz_work"

# One closing line over every test case of the runs: a cmocka program counts its cases, and
# so does a pytest run (its closing "N passed, N skipped" line); any other test (a fuzz target
# included) counts once.
python3 - "$build/meson-logs/testlog.json" "$asan_build/meson-logs/testlog.json" "$fuzz_log" <<'PY'
import json, re, sys
passed = failed = skipped = 0
for log in sys.argv[1:]:
    for line in open(log):
        entry = json.loads(line)
        out = entry.get("stdout") or ""
        run = len(re.findall(r"^\[ RUN      \]", out, re.M))
        ok = len(re.findall(r"^\[       OK \]", out, re.M))
        skip = len(re.findall(r"^\[  SKIPPED \]", out, re.M))
        pytest = re.search(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", out, re.M)
        if pytest and entry["name"].split(" / ")[-1].startswith("python_"):
            counts = dict((w, int(n)) for n, w in re.findall(r"(\d+) (\w+)", pytest.group(1)))
            passed += counts.get("passed", 0)
            skipped += counts.get("skipped", 0)
            failed += counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
            if entry["result"] != "OK" and not counts.get("failed") and not counts.get("errors"):
                failed += 1  # timed out or crashed
            continue
        if entry["result"] == "SKIP":
            skipped += 1
        elif run:
            passed += ok
            skipped += skip
            failed += run - ok - skip
            if entry["result"] != "OK" and run == ok + skip:
                failed += 1  # crashed, leaked or timed out after its last case
        elif entry["result"] in ("OK", "EXPECTEDFAIL"):
            passed += 1
        else:
            failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
