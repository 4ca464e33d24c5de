#!/usr/bin/env python3
"""Checks the TensorBoard event files under a log folder and summarises their scalars.

    python3 scripts/check-tensorboard.py LOGDIR [--expect-tags train_loss,val_loss,lr]

Every events.out.tfevents.* file under LOGDIR is walked record by record with a stdlib-only
TFRecord reader that checks every length and data CRC-32C (shared
reference/ecosystem-formats.md §1.2-1.3). This runs even when TensorBoard is installed,
because TensorBoard's own loader stops quietly at a damaged record instead of reporting it.
The scalars are then read as the dashboard reads them: with TensorBoard's EventAccumulator
(simple_value migrated to rank-0 tensors, events after a SessionLog START purged) when the
`tensorboard` package is importable, else from the stdlib decoding. Per run folder and tag,
prints the number of points and the first and last step and value.

Exit status: 0 when all is well; 1 when a CRC or a record is bad, no event file is found,
or an expected tag is missing.
"""

import argparse
import os
import struct
import sys


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c = _TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class BadFile(Exception):
    pass


def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise BadFile("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos
        if shift >= 70:
            raise BadFile("varint longer than 10 bytes")


def _fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if pos + n > len(buf):
                raise BadFile("truncated fixed field %d" % field)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise BadFile("truncated field %d" % field)
            value, pos = buf[pos:pos + n], pos + n
        else:
            raise BadFile("unsupported wire type %d (field %d)" % (wire, field))
        yield field, wire, value


def read_records(path):
    """The payloads of all records in a file; raises BadFile naming the offset."""
    with open(path, "rb") as f:
        data = f.read()
    records, off = [], 0
    while off < len(data):
        if len(data) - off < 12:
            raise BadFile("offset %d: partial record header" % off)
        header = data[off:off + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[off + 8:off + 12])
        if length_crc != masked_crc32c(header):
            raise BadFile("offset %d: length CRC mismatch" % off)
        end = off + 12 + length
        if end + 4 > len(data):
            raise BadFile("offset %d: partial record (length %d)" % (off, length))
        payload = data[off + 12:end]
        (data_crc,) = struct.unpack("<I", data[end:end + 4])
        if data_crc != masked_crc32c(payload):
            raise BadFile("offset %d: data CRC mismatch" % off)
        records.append(payload)
        off = end + 4
    return records


def decode_event(payload):
    """(step, file_version, session_status, [(tag, simple_value)]) of one Event."""
    step, version, status, values = 0, None, None, []
    for field, wire, value in _fields(payload):
        if field == 2 and wire == 0:
            step = value - (1 << 64) if value >> 63 else value
        elif field == 3 and wire == 2:
            version = value.decode("utf-8")
        elif field == 5 and wire == 2:
            for f, w, v in _fields(value):
                if f == 1 and w == 2:
                    tag, simple = None, None
                    for vf, vw, vv in _fields(v):
                        if vf == 1 and vw == 2:
                            tag = vv.decode("utf-8")
                        elif vf == 2 and vw == 5:
                            (simple,) = struct.unpack("<f", vv)
                    if tag is not None and simple is not None:
                        values.append((tag, simple))
        elif field == 7 and wire == 2:
            status = 0
            for f, w, v in _fields(value):
                if f == 1 and w == 0:
                    status = v
    return step, version, status, values


def scalars_stdlib(files):
    """{tag: [(step, value)]} of a run's files, in file and record order."""
    series = {}
    for path in files:
        for payload in read_records(path):
            step, _, _, values = decode_event(payload)
            for tag, value in values:
                series.setdefault(tag, []).append((step, value))
    return series


def scalars_tensorboard(run_dir):
    """{tag: [(step, value)]} as TensorBoard's EventAccumulator sees the run."""
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.util import tensor_util

    acc = ea.EventAccumulator(run_dir, size_guidance={ea.TENSORS: 0, ea.SCALARS: 0})
    acc.Reload()
    series = {}
    for tag in acc.Tags().get(ea.TENSORS, []):
        points = []
        for event in acc.Tensors(tag):
            array = tensor_util.make_ndarray(event.tensor_proto)
            if array.size != 1:
                break
            points.append((event.step, float(array.reshape(()))))
        else:
            series[tag] = points
    for tag in acc.Tags().get(ea.SCALARS, []):  # only from writers that bypass migration
        series[tag] = [(e.step, e.value) for e in acc.Scalars(tag)]
    return series


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logdir")
    parser.add_argument("--expect-tags", default="",
                        help="comma-separated tags that every run must have")
    args = parser.parse_args()
    expected = [t for t in args.expect_tags.split(",") if t]

    runs = {}
    for root, _, names in os.walk(args.logdir):
        for name in sorted(names):
            if name.startswith("events.out.tfevents."):
                runs.setdefault(root, []).append(os.path.join(root, name))
    if not runs:
        print("no events.out.tfevents.* files under %s" % args.logdir)
        return 1

    try:
        import tensorboard  # noqa: F401
        reader = "tensorboard %s EventAccumulator" % tensorboard.__version__
    except ImportError:
        tensorboard = None
        reader = "stdlib decoder (the tensorboard package is not importable)"
    print("reader: %s" % reader)

    ok = True
    for run_dir in sorted(runs):
        files = runs[run_dir]
        bad = False
        nrecords = 0
        for path in files:
            try:
                records = read_records(path)
                for payload in records:
                    decode_event(payload)
            except BadFile as e:
                print("%s: %s" % (path, e))
                bad = True
                continue
            nrecords += len(records)
            first = decode_event(records[0])[1] if records else None
            if first != "brain.Event:2":
                print("%s: first event is not file_version brain.Event:2 (%r)" % (path, first))
                bad = True
        print("run %s: %d file(s), %d records, CRCs %s"
              % (run_dir, len(files), nrecords, "BAD" if bad else "ok"))
        if bad:
            ok = False
            continue
        series = scalars_tensorboard(run_dir) if tensorboard else scalars_stdlib(files)
        for tag in sorted(series):
            points = series[tag]
            if not points:  # all purged by a SessionLog START of a resumed run
                print("  %-24s %6d points" % (tag, 0))
                continue
            (s0, v0), (s1, v1) = points[0], points[-1]
            print("  %-24s %6d points  first step %d = %.9g  last step %d = %.9g"
                  % (tag, len(points), s0, v0, s1, v1))
        for tag in expected:
            if tag not in series:
                print("  missing expected tag %s" % tag)
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
