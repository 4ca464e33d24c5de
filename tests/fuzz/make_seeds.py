#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets, tests/fuzz/corpus/<target>/ (CONTRIBUTING.md
"Fuzzing"): valid inputs from examples/ and tests/fixtures/, small hand-made ones that reach
each format's corners, and a few malformed ones. The checkpoints are real ones, made by the
worker (pass its path), with every path in them under /tmp/tsrnn-seed.

    python3 tests/fuzz/make_seeds.py build/tsrnn-worker

The inputs' framing (the file, then arguments after \\x1e) is in tests/fuzz/fuzz.h. Run it
again only to change the seeds; libFuzzer adds its own findings to a corpus folder of yours,
never to these."""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SEP = b"\x1e"


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def source(relative):
    with open(os.path.join(ROOT, relative), "rb") as f:
        return f.read()


def ini_seeds():
    example = source("examples/air_passengers.ini")
    write("ini", "example.ini", example)
    write("ini", "example-overrides.ini", example + SEP + b"model.model=LSTM" + SEP +
          b"training.max_steps=10" + SEP + b"data.value_cols= a , b" + SEP +
          b"trainer.devices=0,1")
    write("ini", "minimal.ini", "[data]\npath = s.csv\n")
    write("ini", "every-section.ini",
          "\xef\xbb\xbf; comment\n[data]\npath = ./s.csv\ntime_col =\nval_fraction = 0.25\n"
          "scaler = none\n\n[model]\nmodel = gru\nhidden_dim = 65536\nn_rnn_layers = 64\n"
          "dropout = 0.5\ntraining_length = 1000000\ninput_chunk_length = 1\n"
          "[training]\nbatch_size = 1\nmax_steps = -1\nlr = 1e-300\nrandom_state = 0\n"
          "shuffle = off\nresume = best\n[trainer]\naccelerator = CPU\ndevices = auto\n"
          "num_threads = 2\ntimeout_s = 0.5\nmax_restarts = 3\n[output]\nwork_dir = runs\n"
          "model_name = m\nforce_reset = no\nsave_checkpoints = 0\nlog_tensorboard = yes\n"
          "[forecast]\nn = 0\nplot = false\n")
    write("ini", "crlf.ini", "[data]\r\npath = s.csv\r\n[model]\r\nhidden_dim=7\r\n")
    write("ini", "duplicate-key.ini", "[data]\npath = s.csv\npath = s.csv\n")
    write("ini", "unknown-section.ini", "[data]\npath = s.csv\n[modle]\nmodel = RNN\n")
    write("ini", "key-before-section.ini", "model = RNN\n[data]\npath = s.csv\n")
    write("ini", "syntax-error.ini", "[data]\npath\n")
    write("ini", "only-overrides.ini", SEP + b"data.path=s.csv" + SEP + b"model.hidden_dim=2" +
          SEP + b"nokey" + SEP + b"a.b.c=d")


def csv_seeds():
    # arguments: time_col, freq, fill options ('d' dates, 'v' values), value_cols...
    air = source("examples/data/air_passengers.csv")
    write("csv", "air-passengers.csv", air + SEP + b"Month" + SEP + b"MS" + SEP + SEP +
          b"#Passengers")
    write("csv", "air-passengers-no-args.csv", air[:200])
    write("csv", "index.csv", "t,a,b\n0,1.5,2\n1,-3e5,4\n2,nan,1\n" + "\x1et\x1e\x1ev\x1eb\x1ea")
    write("csv", "quoted-bom-crlf.csv",
          "\xef\xbb\xbf\"date\",\"x, y\",z\r\n\"2001-01-01 00:00\",1,2\r\n\r\n"
          "2001-01-01 12:30,\"3\",4\r\n2001-01-02 01:00,5,\r\n\x1edate\x1e\x1edv")
    write("csv", "seconds.csv", "when,v\n2020-02-28 23:59:59,1\n2020-02-29,2\n2020-03-01,3\n"
          "\x1ewhen\x1e\x1e\x1ev")
    write("csv", "missing-dates.csv", "d,v\n2021-01-29,1\n2021-02-01,NA\n2021-02-03,3\n"
          "2021-02-04,4\n\x1ed\x1eB\x1edv")
    write("csv", "weekly.csv", "w,v\n2024-01-07,1\n2024-01-14,2\n2024-01-28,3\n"
          "\x1ew\x1e\x1ed")
    write("csv", "quarters.csv", "q,v\n2023-03-31,1\n2023-06-30,2\n2023-09-30,3\n"
          "\x1eq\x1e2QE-DEC")
    write("csv", "not-increasing.csv", "Month,v\n1949-02,1\n1949-01,2\n\x1eMonth")
    write("csv", "ragged.csv", "a,b\n1,2\n3\n4,5,6\n")
    write("csv", "bad-number.csv", "a\n1\n1e39\n\"x\n")
    write("csv", "header-only.csv", "Month,#Passengers\n\x1eMonth")
    write("csv", "missing-column.csv", "a,b\n1,2\n\x1e\x1e\x1e\x1ec")
    # Long format (fill option 'g': id_col is the first column named after it).
    write("csv", "long-format.csv", source("tests/fixtures/global/long.csv") + SEP + b"date" +
          SEP + SEP + b"g" + SEP + b"id" + SEP + b"v")
    write("csv", "long-numeric-ids.csv", "d,id,v\n2020-01-01,10,1\n2020-01-01,9,2\n"
          "2020-01-02,10,3\n2020-01-02,9,NA\n2020-01-03,9,5\n2020-01-03,10,6\n"
          "\x1ed\x1eD\x1egv\x1eid\x1ev")


def st_file(header, data=b"", pad=True):
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    for name in ["air_rnn_init", "step_rnn_l1_c1", "rng_darts_init_gru_42"]:
        write("safetensors", name + ".safetensors", source(f"tests/fixtures/{name}.safetensors"))
    dtypes = {"F64": 8, "I64": 8, "U64": 8, "C64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2,
              "BF16": 2, "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E5M2": 1,
              "F8_E4M3": 1, "F8_E8M0": 1, "F8_E4M3FNUZ": 1, "F8_E5M2FNUZ": 1}
    header, data = {"__metadata__": {"format": "pt", "k": "v"}}, b""
    for i, (dtype, size) in enumerate(dtypes.items()):
        shape = [[], [2], [1, 2], [0, 3]][i % 4]
        count = 1
        for d in shape:
            count *= d
        header[f"t{i}"] = {"dtype": dtype, "shape": shape,
                           "data_offsets": [len(data), len(data) + count * size]}
        data += bytes(range(count * size))
    write("safetensors", "every-dtype.safetensors", st_file(header, data))
    write("safetensors", "empty.safetensors", st_file({}))
    write("safetensors", "unpadded.safetensors",
          st_file({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                  struct.pack("<f", 1.5), pad=False))
    write("safetensors", "hole.safetensors",
          st_file({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)))
    write("safetensors", "overlap.safetensors",
          st_file({"x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                   "y": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, bytes(3)))
    write("safetensors", "huge-shape.safetensors",
          st_file({"x": {"dtype": "F64", "shape": [4611686018427387904, 4],
                         "data_offsets": [0, 0]}}))
    write("safetensors", "header-too-long.safetensors", struct.pack("<Q", 1 << 62) + b"{}")
    write("safetensors", "truncated.safetensors", source(
        "tests/fixtures/air_rnn_init.safetensors")[:1000])


def checkpoint_seeds(worker):
    """A checkpoint of each model kind, 1 epoch of AirPassengers, hidden_dim 2: real files of a
    few KiB. Made in /tmp/tsrnn-seed, so that the configs inside name no one's folders."""
    work = "/tmp/tsrnn-seed"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "data"))
    shutil.copy(os.path.join(ROOT, "examples", "air_passengers.ini"), work)
    shutil.copy(os.path.join(ROOT, "examples", "data", "air_passengers.csv"),
                os.path.join(work, "data"))
    for kind, layers in [("RNN", 1), ("LSTM", 2), ("GRU", 1)]:
        subprocess.run([worker, "air_passengers.ini", "--quiet", "--set", f"model.model={kind}",
                        "--set", "model.hidden_dim=2", "--set", f"model.n_rnn_layers={layers}",
                        "--set", "model.dropout=0.1" if layers > 1 else "model.dropout=0",
                        "--set", "training.n_epochs=1", "--set", f"output.model_name={kind}",
                        "--set", "output.log_tensorboard=false", "--set", "forecast.n=0"],
                       cwd=work, check=True, stdout=subprocess.DEVNULL)
        last = glob.glob(os.path.join(work, "darts_logs", kind, "checkpoints", "last-*"))
        write("checkpoint", f"{kind.lower()}.safetensors", open(last[0], "rb").read())
    shutil.rmtree(work)
    global_checkpoint_seed(worker)
    # Format version 1, still read: no tsrnn.metadata_crc32c, so the metadata's mutations are
    # not all stopped by a checksum.
    for name in ["rnn", "global"]:
        with open(os.path.join(CORPUS, "checkpoint", name + ".safetensors"), "rb") as f:
            data = f.read()
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        del header["__metadata__"]["tsrnn.metadata_crc32c"]
        header["__metadata__"]["tsrnn.format_version"] = "1"
        write("checkpoint", name + "-version1.safetensors", st_file(header, data[8 + n:]))
    write("checkpoint", "weights-only.safetensors",
          source("tests/fixtures/air_rnn_init.safetensors"))


def global_checkpoint_seed(worker):
    """A checkpoint of a model of the three series of tests/fixtures/global/ (its
    tsrnn.series_list), 1 epoch, hidden_dim 2, made in /tmp/tsrnn-seed."""
    work = "/tmp/tsrnn-seed"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "global"), os.path.join(work, "g"))
    shutil.copy(os.path.join(ROOT, "examples", "air_passengers.ini"), work)
    subprocess.run([worker, "air_passengers.ini", "--quiet", "--set", "data.path=g/[abc].csv",
                    "--set", "data.time_col=date", "--set", "data.value_cols=v", "--set",
                    "data.split_after=2000-02-10", "--set", "model.training_length=8", "--set",
                    "model.input_chunk_length=5", "--set", "model.hidden_dim=2", "--set",
                    "training.n_epochs=1", "--set", "output.model_name=global", "--set",
                    "output.log_tensorboard=false", "--set", "forecast.n=0"],
                   cwd=work, check=True, stdout=subprocess.DEVNULL)
    last = glob.glob(os.path.join(work, "darts_logs", "global", "checkpoints", "last-*"))
    write("checkpoint", "global.safetensors", open(last[0], "rb").read())
    shutil.rmtree(work)


def tensorboard_seeds():
    def scalar(tag, value, step, flush=False):
        tag = tag.encode()
        return bytes([len(tag) | (64 if flush else 0)]) + tag + struct.pack("<fq", value, step)

    write("tensorboard", "train-loss", b"\x00" + scalar("train_loss", 0.5, 1) +
          scalar("val_loss", 0.25, 1) + scalar("train_loss", 0.125, 2, flush=True))
    write("tensorboard", "resumed", b"\x01" + struct.pack("<q", 1200) +
          scalar("train_loss", float("nan"), 1200) + scalar("epoch", 3.0, -1))
    write("tensorboard", "odd-values", b"\x00" + scalar("t" * 63, float("inf"), 1 << 62) +
          scalar("", -0.0, 0) + scalar("a\xffb", 1e-45, 127))
    write("tensorboard", "many", b"\x00" +
          b"".join(scalar(f"{i}" * i, i / 7, -i, flush=i % 5 == 0) for i in range(20)))
    write("tensorboard", "empty", b"\x00")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    shutil.rmtree(CORPUS, ignore_errors=True)
    ini_seeds()
    csv_seeds()
    safetensors_seeds()
    checkpoint_seeds(os.path.abspath(sys.argv[1]))
    tensorboard_seeds()
