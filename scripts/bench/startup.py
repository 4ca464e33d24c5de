#!/usr/bin/env python3
"""Start-up time of a 2-worker tsrnn-launch, two builds compared.

For each run: the time from starting tsrnn-launch (--accelerator cpu --devices 2, the
AirPassengers example, max_steps 1) to rank 0's first logged training step, which is the
wall_time of the first summary event in its TensorBoard file; and the whole launch. The two
builds alternate run by run, so that a machine that gets busier slows both alike; the result
is the median of each, and the median of the paired differences with a bootstrap 95% interval.
docs/distributed.md ("Who can reach the workers") quotes it for the private network namespace.

Usage: scripts/bench/startup.py BEFORE/tsrnn-launch AFTER/tsrnn-launch [RUNS]
(each tsrnn-launch finds the tsrnn-worker beside it; run it as a user other than root to time
the user-namespace path).
"""
import glob
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def first_summary_wall_time(path):
    """The wall_time (field 1) of the first Event holding a summary (field 5): TFRecords of
    a length, its CRC, the Event, the Event's CRC."""
    data = open(path, "rb").read()
    i = 0
    while i + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, i)
        event = data[i + 12:i + 12 + length]
        i += 12 + length + 4
        j, wall_time, summary = 0, None, False
        while j < len(event):
            key, j = varint(event, j)
            field, kind = key >> 3, key & 7
            if kind == 1:  # 64-bit
                if field == 1:
                    (wall_time,) = struct.unpack_from("<d", event, j)
                j += 8
            elif kind == 0:  # varint
                _, j = varint(event, j)
            elif kind == 2:  # length-delimited
                n, j = varint(event, j)
                j += n
                summary = summary or field == 5
            else:
                raise ValueError(f"{path}: unexpected wire type {kind}")
        if summary:
            return wall_time
    raise ValueError(f"{path}: no summary event")


def run(launch, work, name):
    command = [launch, "--accelerator", "cpu", "--devices", "2",
               "--set", f"output.work_dir={work}", "--set", f"output.model_name={name}",
               "--set", "output.force_reset=true", "--set", "training.max_steps=1",
               os.path.join(ROOT, "examples", "air_passengers.ini")]
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=work))
    ended = time.time()
    if done.returncode != 0:
        sys.exit(f"{launch} exited {done.returncode}:\n{done.stderr}")
    events = glob.glob(os.path.join(work, name, "logs", "*tfevents*"))
    return (first_summary_wall_time(events[0]) - started) * 1e3, (ended - started) * 1e3


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    launches = {"before": sys.argv[1], "after": sys.argv[2]}
    runs = int(sys.argv[3]) if len(sys.argv) == 4 else 100
    first = {k: [] for k in launches}
    whole = {k: [] for k in launches}
    with tempfile.TemporaryDirectory() as work:
        for i in range(runs):
            for k in ("before", "after") if i % 2 == 0 else ("after", "before"):
                a, b = run(launches[k], work, k)
                first[k].append(a)
                whole[k].append(b)
    for k in launches:
        print(f"{k:6s} first step {statistics.median(first[k]):6.1f} ms, whole launch "
              f"{statistics.median(whole[k]):6.1f} ms (medians of {runs}): {launches[k]}")
    diff = [a - b for a, b in zip(first["after"], first["before"])]
    medians = sorted(statistics.median(random.choices(diff, k=len(diff))) for _ in range(2000))
    print(f"after - before, first step: median {statistics.median(diff):+.2f} ms, 95% interval "
          f"[{medians[50]:+.2f}, {medians[1949]:+.2f}] ms")


if __name__ == "__main__":
    main()
