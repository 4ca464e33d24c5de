#!/usr/bin/env python3
"""Generate the fixture of Darts' training windows over a list of series (global models):
which series and which window each sample index of Darts' ShiftedTorchTrainingDataset
holds, as RNNModel builds it (input_chunk_length = output_chunk_length = training_length,
shift 1), with and without max_samples_per_ts.

Needs Darts (the virtual environment of CONTRIBUTING.md):

    /tmp/venv-darts/bin/python scripts/gen-global-fixtures.py

Writes tests/fixtures/global_windows.txt: a `# case` line per case (series lengths,
training_length, max_samples_per_ts or 0, len(dataset)), then one line per sample index:
`index series start`, where the sample's input is series[start : start + T] and its target
series[start + 1 : start + T + 1]. Each series' values encode (series, position), so the
line is read off the sample Darts returns.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from darts import TimeSeries
from darts.utils.data.torch_datasets.training_dataset import ShiftedTorchTrainingDataset

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "global_windows.txt"

CASES = [
    # (lengths, training_length, max_samples_per_ts or None)
    ((30, 25, 40), 5, None),
    ((30, 25, 40), 5, 10),
    ((12, 60), 7, None),
    ((50, 50, 9), 3, 4),
]


def make_series(sid, length):
    values = np.array([1000.0 * sid + p for p in range(length)], dtype=np.float32)
    index = pd.date_range("2000-01-01", periods=length, freq="D")
    return TimeSeries.from_times_and_values(index, values)


def main():
    import darts

    lines = [f"# Darts {darts.__version__}: ShiftedTorchTrainingDataset windows (index series start)"]
    for lengths, T, cap in CASES:
        series = [make_series(s, n) for s, n in enumerate(lengths)]
        ds = ShiftedTorchTrainingDataset(
            series=series, input_chunk_length=T, output_chunk_length=T, shift=1,
            max_samples_per_ts=cap,
        )
        lines.append(f"case {' '.join(map(str, lengths))} T {T} max_samples_per_ts {cap or 0} "
                     f"count {len(ds)}")
        for i in range(len(ds)):
            sample = ds[i]
            past, future = sample.past_target, sample.future_target
            sid, start = divmod(int(past[0, 0]), 1000)
            # the target is the input one step later, within the same series
            assert np.array_equal(future[:, 0], np.arange(T, dtype=np.float32) + 1000 * sid + start + 1)
            assert np.array_equal(past[:, 0], np.arange(T, dtype=np.float32) + 1000 * sid + start)
            lines.append(f"{i} {sid} {start}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(lines)} lines")


if __name__ == "__main__":
    main()
