#!/usr/bin/env bash
# Installs what the tests need, builds with warnings as errors, and runs every test twice:
# in the normal build and in a build with AddressSanitizer + UndefinedBehaviorSanitizer
# (memory errors, leaks and undefined behaviour fail the test that hits them).
# Ends with one line "tests: N passed, N failed, N skipped"; exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --test

build=${TSRNN_BUILD_DIR:-build}
asan_build=${build}-asan

configure() { # dir, extra meson options...
    local dir=$1
    shift
    # Configured before libgloo-dev was installed: meson keeps the failed header check.
    if grep -qs 'TSRNN_HAVE_GLOO 0' "$dir/tsrnn_build.h"; then
        rm -rf "$dir"
    fi
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" -Dwerror=true -Dtests=true -Dgloo=enabled "$@"
    else
        meson setup "$dir" -Dwerror=true -Dtests=true -Dgloo=enabled "$@"
    fi | sed -n '/^tsrnn /,$p' # meson's summary: which optional backends were found
    meson compile -C "$dir"
}

configure "$build"
# -fno-sanitize-recover=all: an undefined behaviour (an overflow, a misaligned load) ends the
# test that hits it, whatever UBSAN_OPTIONS says, instead of printing and going on.
configure "$asan_build" -Db_sanitize=address,undefined -Dbuildtype=debug \
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
    meson test -C "$asan_build" --print-errorlogs --no-suite clang-format || rc=1

# One closing line over every test case of both runs: a cmocka program counts its cases,
# any other test counts once.
python3 - "$build/meson-logs/testlog.json" "$asan_build/meson-logs/testlog.json" <<'PY'
import json, re, sys
passed = failed = skipped = 0
for log in sys.argv[1:]:
    for line in open(log):
        entry = json.loads(line)
        out = entry.get("stdout") or ""
        run = len(re.findall(r"^\[ RUN      \]", out, re.M))
        ok = len(re.findall(r"^\[       OK \]", out, re.M))
        skip = len(re.findall(r"^\[  SKIPPED \]", out, re.M))
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
