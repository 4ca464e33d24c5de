#!/usr/bin/env python3
"""Generate the fixtures of future covariates and Darts' encoders (tests/test_covariates.c):

  tests/fixtures/encoders.txt   what Darts 0.48.1 computes from a time index: the
      datetime attributes (add_encoders' 'datetime_attribute', 0-based as Darts shifts them),
      their one-hot form (datetime_attribute_timeseries(one_hot=True)), the cyclic sin/cos
      ('cyclic') and the relative position ('position'), for a monthly (AirPassengers), an
      hourly and a daily index; then the whole add_encoders pipeline with its Scaler
      transformer (SequentialEncoder.encode_train on the training part, encode_inference for
      a 26-step forecast).

Needs Darts (the virtual environment of CONTRIBUTING.md):

    /work/venv-darts/bin/python scripts/gen-covariates-fixtures.py

encoders.txt: `case <index start> <freq> <length> <kind> <attribute> <reference> <width>`
(kind: attribute, one_hot, cyclic, position; reference: the position of the target's end in
the index, what 'position' counts from), then `length` rows of `width` float32 values
(%.9g). A `pipeline` case lists its encoders and the rows train and inference give.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from darts import TimeSeries
from darts.dataprocessing.encoders import SequentialEncoder
from darts.dataprocessing.encoders.encoders import FutureIntegerIndexEncoder
from darts.dataprocessing.encoders.encoder_base import FutureCovariatesIndexGenerator
from darts.dataprocessing.transformers import Scaler
from darts.utils.timeseries_generation import datetime_attribute_timeseries

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# (start, freq, length, [(kind, attribute)], reference)
INDEXES = [
    ("1949-01-01", "MS", 170, [
        ("attribute", "month"), ("attribute", "year"), ("one_hot", "month"),
        ("cyclic", "month"), ("cyclic", "quarter"), ("position", "relative"),
    ], 120),
    ("2020-02-28 22:00:00", "h", 60, [
        ("attribute", "hour"), ("attribute", "dayofweek"), ("attribute", "day"),
        ("one_hot", "hour"), ("cyclic", "hour"), ("cyclic", "day"), ("cyclic", "weekday"),
        ("one_hot", "day_of_week"), ("position", "relative"),
    ], 75),
    ("2019-12-20", "D", 400, [
        ("attribute", "dayofyear"), ("attribute", "week"), ("attribute", "quarter"),
        ("cyclic", "dayofyear"), ("cyclic", "week"), ("cyclic", "day"), ("cyclic", "month"),
        ("one_hot", "quarter"), ("position", "relative"),
    ], -3),
    # a short index in one year (from Sunday 2021-03-07): no 53rd week, no leap day
    ("2021-03-01", "W-SUN", 20, [
        ("cyclic", "week"), ("cyclic", "dayofyear"), ("attribute", "minute"),
    ], 19),
]


def encode(index, kind, attribute, reference):
    if kind == "position":
        enc = FutureIntegerIndexEncoder(input_chunk_length=1, output_chunk_length=1,
                                        attribute=attribute)
        # the target's end, `reference` steps after index[0] (before it when negative)
        end = index[0] + reference * index.freq
        return enc._encode(index, end, np.float32).values()
    series = datetime_attribute_timeseries(index, attribute=attribute, one_hot=kind == "one_hot",
                                           cyclic=kind == "cyclic", dtype=np.float32)
    return series.values()


def rows(values):
    return [" ".join(f"{v:.9g}" for v in row) for row in np.asarray(values, dtype=np.float32)]


def pipeline_case(lines):
    """RNNModel's add_encoders on AirPassengers' training part (up to 1959-01), as fit() and
    predict(n=26) run them: input_chunk_length 14, output_chunk_length 1."""
    df = pd.read_csv(ROOT / "examples" / "data" / "air_passengers.csv")
    series = TimeSeries.from_dataframe(df, time_col="Month", value_cols="#Passengers",
                                       freq="MS").astype(np.float32)
    train, val = series.split_after(pd.Timestamp("1959-01-01"))
    add_encoders = {
        "datetime_attribute": {"future": ["year", "month"]},
        "cyclic": {"future": ["month"]},
        "position": {"future": ["relative"]},
        "transformer": Scaler(),
    }
    enc = SequentialEncoder(add_encoders=add_encoders, input_chunk_length=14,
                            output_chunk_length=1, takes_past_covariates=False,
                            takes_future_covariates=True)
    _, fit_cov = enc.encode_train(target=train)
    _, val_cov = enc.encode_train(target=val)  # fit() encodes the validation series this way
    _, pred_cov = enc.encode_inference(n=26, target=train)
    lines.append("pipeline datetime_attribute year month cyclic month position relative "
                 "scaler minmax")
    for name, cov in (("train", fit_cov), ("val", val_cov), ("inference", pred_cov)):
        lines.append(f"part {name} {cov.start_time().strftime('%Y-%m-%d')} {len(cov)} "
                     f"{cov.width}")
        lines.extend(rows(cov.values()))


def main():
    import darts

    lines = [f"# Darts {darts.__version__}: encoders (scripts/gen-covariates-fixtures.py)"]
    for start, freq, length, encoders, reference in INDEXES:
        index = pd.date_range(start, periods=length, freq=freq)
        for kind, attribute in encoders:
            values = encode(index, kind, attribute, reference)
            first = index[0].strftime("%Y-%m-%dT%H:%M:%S")
            lines.append(f"case {first} {freq} {length} {kind} {attribute} "
                         f"{reference} {values.shape[1]}")
            lines.extend(rows(values))
    pipeline_case(lines)
    (FIXTURES / "encoders.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {FIXTURES / 'encoders.txt'}: {len(lines)} lines")


if __name__ == "__main__":
    main()
