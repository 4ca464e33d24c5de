#!/usr/bin/env bash
# Installs what the tests need, builds with warnings as errors, and runs every test.
# Ends with one line "tests: N passed, N failed, N skipped"; exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --test

build=${TSRNN_BUILD_DIR:-build}
if [ -f "$build/build.ninja" ]; then
    meson configure "$build" -Dwerror=true -Dtests=true >/dev/null
else
    meson setup "$build" -Dwerror=true -Dtests=true
fi
meson compile -C "$build"

rc=0
meson test -C "$build" --print-errorlogs || rc=$?

# One closing line over every test case: a cmocka program counts its cases, any other
# test counts once.
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, re, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
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
            failed += 1  # crashed or timed out after its last case
    elif entry["result"] in ("OK", "EXPECTEDFAIL"):
        passed += 1
    else:
        failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
