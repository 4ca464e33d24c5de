#!/usr/bin/python3
"""tsrnn's CPU benchmark suite: trains each configuration with tsrnn-worker and, when Debian's
python3-torch imports, with plain PyTorch (scripts/bench_torch.py), and prints a Markdown
report on stdout (progress goes to stderr):

  * a header: date, machine, versions, which BLAS each side runs on, the sgemm peak;
  * one table row per configuration and thread count: tsrnn samples/s (median of the timed
    repetitions after a warm-up run), their spread, PyTorch samples/s, the ratio, tsrnn's
    achieved matmul GFLOP/s and its share of the sgemm peak, tsrnn's whole-process peak RSS,
    and the targets that apply to the row ("2x: ok", "2x: 1.3x");
  * the seed configuration's 300-epoch times and the LSTM-256 GEMM products (bench-gemm).

Configurations: the Darts guide's AirPassengers RNN-20 (examples/air_passengers.ini, 300
epochs, run as is: validation, checkpoints, TensorBoard, forecast and plot included in its
wall time and RSS; its samples/s counts optimizer steps only), then RNN/GRU/LSTM x hidden 128,
256 x batch 64, 256 x 1, 2 layers at training_length 64 on a 100,000-point synthetic series
(bench/synthetic.awk), one thread; the hidden-256 ones again with two threads.

samples/s counts optimizer steps only (batch gather, forward, backward, Adam) on both sides.
Each synthetic repetition is one tsrnn-worker process (or one fresh PyTorch model in one
process) of a fixed number of steps, chosen from the warm-up so that it lasts ~--target-s.
GFLOP/s counts matmul FLOPs as ../shared/reference/pytorch-baseline.md does: 3 x forward
(input projections, recurrent products, the Linear head). Peak RSS is each worker process's
ru_maxrss, read with os.wait4 as it is reaped.

PyTorch from PyPI (2.x: MKL + oneDNN, AVX-512 kernels, what users install) gets columns of its
own next to Debian's 1.13 when its virtual environment exists: --setup-torch creates it once
(python3 -m venv + pip install torch, CPU wheel index first, then PyPI) in
~/.cache/tsrnn/torch-venv (or $TSRNN_TORCH_VENV), outside the source tree; later runs reuse
it. Nothing else (tests, CI) uses it.

OpenBLAS core type: tsrnn and Debian's PyTorch run with OPENBLAS_CORETYPE as this process
has it (the header says which), or as --openblas-coretype sets it; the sgemm peak is always
measured with the CPU's own core type (SkylakeX kernels on AVX-512), the figure the "% peak"
targets are set against.

Run by scripts/bench/suite.sh (which builds tsrnn and finds an OpenBLAS for PyTorch); stdlib
only, for Debian's /usr/bin/python3.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_PYTHON = "/usr/bin/python3"
TORCH_VENV = os.environ.get("TSRNN_TORCH_VENV") or os.path.join(
    os.path.expanduser("~"), ".cache", "tsrnn", "torch-venv")
PYPI_PYTHON = os.path.join(TORCH_VENV, "bin", "python")
SYNTHETIC_POINTS = 100_000
SEED_SAMPLES = 300 * 101  # 300 epochs of the 101 AirPassengers training windows


@dataclass
class Config:
    name: str
    kind: str
    hidden: int
    layers: int
    batch: int
    length: int
    threads: int
    seed: bool = False
    sets: tuple = ()  # seed config: extra tsrnn-worker --set options
    tsrnn: dict = field(default_factory=dict)
    torch: dict = field(default_factory=dict)
    pypi: dict = field(default_factory=dict)  # PyTorch from PyPI

    @property
    def shape(self):
        """The configuration without its thread count."""
        return (self.kind, self.hidden, self.layers, self.batch, self.length, self.seed,
                self.sets)


def all_configs():
    # The Darts guide's run saves checkpoints every epoch; Darts' default does not. Both are
    # measured: the fsync'd writes between epochs cost the steps after them (docs/benchmarks.md).
    seed = Config("seed: RNN-20 B16 T20, AirPassengers, 300 epochs", "RNN", 20, 1, 16, 20, 1,
                  seed=True)
    seed_light = Config("seed, save_checkpoints = false (Darts' default)", "RNN", 20, 1, 16,
                        20, 1, seed=True, sets=("output.save_checkpoints=false",))
    configs = [seed, seed_light]
    for threads in (1, 2):
        for kind in ("RNN", "GRU", "LSTM"):
            for hidden in (128, 256):
                if threads == 2 and hidden != 256:
                    continue  # two threads only for the large models
                for batch in (64, 256):
                    for layers in (1, 2):
                        name = f"{kind}-{hidden} L{layers} B{batch} T64"
                        configs.append(Config(name, kind, hidden, layers, batch, 64, threads))
    for kind in ("RNN", "GRU", "LSTM"):  # hidden 512: one layer, batch 64, one thread
        configs.append(Config(f"{kind}-512 L1 B64 T64", kind, 512, 1, 64, 64, 1))
    return configs


QUICK = {("LSTM-256 L1 B64 T64", 1), ("LSTM-256 L1 B64 T64", 2), ("GRU-256 L1 B64 T64", 1),
         ("GRU-256 L1 B64 T64", 2), ("RNN-256 L1 B64 T64", 1), ("LSTM-256 L1 B256 T64", 1),
         ("LSTM-512 L1 B64 T64", 1)}


def measure_order(configs):
    """The report's order, except that a 2-thread row is measured right after its 1-thread
    row: the 2 thr 1.6x target compares the two, and this VM's speed drifts over minutes."""
    order, seen = [], set()
    for c in configs:
        if id(c) in seen:
            continue
        twins = [d for d in configs if d.threads > 1 and d.shape == c.shape and id(d) not in seen]
        for d in [c] + twins:
            order.append(d)
            seen.add(id(d))
    return order


def in_quick(c):
    """--quick: the seed config and the rows of the headline targets."""
    return c.seed or (c.name, c.threads) in QUICK


def flops_per_sample(c):
    """3 x the forward matmul FLOPs of one window: per layer the input projection and the
    recurrent product over T steps, then the Linear head; univariate input and output."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[c.kind] * c.hidden
    forward = 0
    for layer in range(c.layers):
        inputs = 1 if layer == 0 else c.hidden
        forward += 2 * c.length * (inputs + c.hidden) * gates
    forward += 2 * c.length * c.hidden * 1
    return 3 * forward


def log(message):
    print(message, file=sys.stderr, flush=True)


# Starts argv[2:] and writes its ru_maxrss (KiB) and its wall time (s, spawn to wait4) to the
# fd argv[1]. Linux records, at exec, the peak RSS of the memory the exec replaces: a child that
# Python starts (vfork, sharing this process's memory) would report the suite's own peak RSS,
# ~18 MiB, if that is larger than its own. This small interpreter (-S, nothing imported but
# built-in modules) is what the measured program replaces. It times the program itself: its
# own start-up, ~13 ms, is no part of the program's wall time.
RSS_HELPER = ("import os, sys, time\n"
              "fd = int(sys.argv[1])\n"
              "start = time.perf_counter()\n"
              "pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)\n"
              "_, status, usage = os.wait4(pid, 0)\n"
              "wall = time.perf_counter() - start\n"
              "os.write(fd, b'%d %.6f' % (usage.ru_maxrss, wall))\n"
              "sys.exit(os.waitstatus_to_exitcode(status))\n")


def run_measured(cmd, cwd=None, env=None):
    """Runs cmd; returns (exit code, output, wall s, peak RSS MiB). The wall time and the RSS are
    the program's own, from wait4 in a small helper process (RSS_HELPER says why)."""
    cmd = [cmd[0] if os.sep in cmd[0] else (shutil.which(cmd[0]) or cmd[0])] + list(cmd[1:])
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-S", "-c", RSS_HELPER, str(write_fd)] + cmd,
                                cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                pass_fds=(write_fd,))
        os.close(write_fd)
        proc.wait()
        wall = time.perf_counter() - start  # with the helper's start-up, if it said nothing
        measured = os.read(read_fd, 64).split()
        os.close(read_fd)
        out.seek(0)
        rss_kib = int(measured[0]) if measured else 0
        wall = float(measured[1]) if len(measured) > 1 else wall
        return proc.returncode, out.read(), wall, rss_kib / 1024.0


def bench_env(args):
    """The environment of tsrnn and Debian's PyTorch: this one, OPENBLAS_CORETYPE as
    --openblas-coretype says ("unset" removes it)."""
    env = dict(os.environ)
    if args.openblas_coretype == "unset":
        env.pop("OPENBLAS_CORETYPE", None)
    elif args.openblas_coretype:
        env["OPENBLAS_CORETYPE"] = args.openblas_coretype
    return env


def setup_torch():
    """Creates the PyPI PyTorch venv (once): python3 -m venv, then pip install torch from the
    CPU wheel index, else from PyPI."""
    if os.access(PYPI_PYTHON, os.X_OK) and subprocess.run(
            [PYPI_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0:
        log(f"suite: PyTorch from PyPI already in {TORCH_VENV}")
        return
    os.makedirs(os.path.dirname(TORCH_VENV), exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", TORCH_VENV], check=True)
    pip = [os.path.join(TORCH_VENV, "bin", "pip"), "install", "--quiet"]
    log(f"suite: pip install torch into {TORCH_VENV} (CPU wheel index, else PyPI)")
    if subprocess.run(pip + ["torch", "--index-url",
                             "https://download.pytorch.org/whl/cpu"]).returncode != 0:
        subprocess.run(pip + ["torch"], check=True)


# --- tsrnn -----------------------------------------------------------------------------------

SYNTHETIC_INI = """[data]
path = synthetic.csv
value_cols = value
[model]
model = {kind}
hidden_dim = {hidden}
n_rnn_layers = {layers}
training_length = {length}
input_chunk_length = {length}
[training]
batch_size = {batch}
n_epochs = 1
max_steps = {steps}
[trainer]
num_threads = {threads}
[output]
work_dir = runs
model_name = bench
force_reset = true
"""

SUMMARY = re.compile(r"Trained \d+ epochs \((\d+) steps\) in ([0-9.]+) s: [0-9.]+ steps/s, "
                     r"([0-9.]+) samples/s \(optimizer steps ([0-9.]+) s")


def tsrnn_once(args, c, steps):
    """One tsrnn-worker process: {samples_per_s, train_s, wall_s, rss_mib, steps}."""
    if c.seed:
        cmd = [args.worker, "-q", os.path.join(ROOT, "examples", "air_passengers.ini"),
               "--set", f"output.work_dir={args.work}/seed-runs"]
        for option in c.sets:
            cmd += ["--set", option]
    else:
        ini = os.path.join(args.work, "bench.ini")
        with open(ini, "w") as f:
            f.write(SYNTHETIC_INI.format(kind=c.kind, hidden=c.hidden, layers=c.layers,
                                         length=c.length, batch=c.batch, steps=steps,
                                         threads=c.threads))
        cmd = [args.worker, "-q", ini]
    code, out, wall, rss = run_measured(cmd, cwd=args.work, env=bench_env(args))
    m = SUMMARY.search(out)
    if code != 0 or m is None:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {code}):\n{out}")
    step_count, train_s = int(m.group(1)), float(m.group(4))
    if c.seed:
        rate = float(m.group(3))  # printed to the sample; train_s has only 3 decimals
    else:
        rate = step_count * c.batch / train_s
    return {"samples_per_s": rate, "train_s": train_s, "wall_s": wall, "rss_mib": rss,
            "steps": step_count}


def full_batches(c):
    return (SYNTHETIC_POINTS - c.length) // c.batch  # steps in one epoch, none short


def tsrnn_measure(args, c):
    """A warm-up run, then args.reps timed runs of a step count set from the warm-up."""
    steps = 0
    if not c.seed:
        guess = 60e9 * c.threads  # FLOP/s; only sizes the warm-up run (~args.warmup_s)
        steps = round(args.warmup_s * guess / (flops_per_sample(c) * c.batch))
        steps = max(2, min(full_batches(c), steps))
    warm = tsrnn_once(args, c, steps)
    if not c.seed:
        per_step = warm["train_s"] / warm["steps"]
        steps = max(args.min_steps, min(full_batches(c), round(args.target_s / per_step)))
    runs = [tsrnn_once(args, c, steps) for _ in range(args.reps)]
    c.tsrnn = summarise(runs)


STAT = "median"  # --stat: what a row shows of its timed runs


def pick_time(seconds):
    """What a row shows of its timed runs' seconds (--stat): the best is the least."""
    seconds = list(seconds)
    return min(seconds) if STAT == "best" else statistics.median(seconds)


def summarise(runs):
    rates = [r["samples_per_s"] for r in runs]
    median = statistics.median(rates)
    shown = max(rates) if STAT == "best" else median
    return {"samples_per_s": shown, "spread": (max(rates) - min(rates)) / median,
            "rss_mib": max(r.get("rss_mib", 0.0) for r in runs), "runs": runs}


# --- PyTorch ---------------------------------------------------------------------------------

def torch_env(args, threads, pypi=False):
    env = bench_env(args)
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(threads)
    if args.torch_blas and not pypi:
        env["LD_LIBRARY_PATH"] = args.torch_blas + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def torch_measure(args, c, pypi=False):
    """One bench_torch.py process: its warm-up, then args.reps timed repetitions; into c.torch
    (Debian's PyTorch) or c.pypi (PyPI's)."""
    script = os.path.join(ROOT, "scripts", "bench_torch.py")
    python = PYPI_PYTHON if pypi else TORCH_PYTHON
    cmd = [python, script, "run", "--reps", str(args.reps), "--threads", str(c.threads)]
    if c.seed:
        cmd += ["--seed", os.path.join(ROOT, "examples", "data", "air_passengers.csv")]
    else:
        cmd += ["--model", c.kind, "--hidden", str(c.hidden), "--layers", str(c.layers),
                "--batch", str(c.batch), "--length", str(c.length), "--target-s",
                str(args.target_s), "--min-steps", str(args.min_steps), "--max-steps",
                str(full_batches(c)), "--warmup-s", str(args.warmup_s),
                os.path.join(args.work, "synthetic.csv")]
    code, out, _, rss = run_measured(cmd, env=torch_env(args, c.threads, pypi))
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if code != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {code}):\n{out}")
    result = json.loads(lines[-1])
    summary = summarise(result["reps"])
    summary["rss_mib"] = rss
    summary["blas"] = result["blas_detail"]
    if pypi:
        c.pypi = summary
    else:
        c.torch = summary
    return result


def torch_probe(args, pypi=False):
    """(torch version, BLAS detail) or None when torch does not import."""
    python = PYPI_PYTHON if pypi else TORCH_PYTHON
    if not os.path.exists(python):
        return None
    probe = ("import json, sys; sys.argv = ['x']; sys.path.insert(0, %r); import bench_torch as b;"
             "t = b.load_torch(1); print(json.dumps([t.__version__, b.blas_info()[1]]))"
             % os.path.join(ROOT, "scripts"))
    code, out, _, _ = run_measured([python, "-c", probe], env=torch_env(args, 1, pypi))
    lines = [line for line in out.splitlines() if line.startswith("[")]
    if code != 0 or not lines:
        return None
    return json.loads(lines[-1])


# --- the machine -----------------------------------------------------------------------------

def sgemm_peak(args, threads):
    """(best, median) GFLOP/s of bench-gemm --peak, with OpenBLAS on this CPU's own core type
    (OPENBLAS_CORETYPE from tsrnn's detection when OpenBLAS does not know the CPU)."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if args.cpu_coretype:
        env["OPENBLAS_CORETYPE"] = args.cpu_coretype
    out = subprocess.run([args.gemm, "--peak", str(threads)], check=True, capture_output=True,
                         text=True, env=env).stdout
    m = re.search(r"best ([0-9.]+) GFLOP/s, median ([0-9.]+)", out)
    return float(m.group(1)), float(m.group(2)), out.strip()


def tsrnn_blas(args):
    """The OpenBLAS tsrnn-worker loads where a product goes to it, and the core type it picks,
    as one line. The worker loads it with dlopen (src/compute/cpu/blas.c), so ldd reads
    bench-gemm, which links the same library (the same run path)."""
    out = subprocess.run(["ldd", args.gemm], capture_output=True, text=True).stdout
    m = re.search(r"(libopenblas\S*|libblas\S*) => (\S+)", out)
    if m is None:
        return "no BLAS (reference loops only)"
    path = os.path.realpath(m.group(2))
    probe = ("import ctypes; l = ctypes.CDLL(%r); l.openblas_get_config.restype = "
             "l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_config()"
             ".decode().split()[1], l.openblas_get_corename().decode())" % path)
    info = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=bench_env(args))
    if info.returncode != 0:
        return path
    version, core = info.stdout.split()
    variant = os.path.basename(os.path.dirname(path)).replace("openblas-", "")
    return f"OpenBLAS {version} {variant}, core {core}, {path}"


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def cpu_flags():
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni",
              "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = line.split(":", 1)[1].split()
            return " ".join(f for f in wanted if f in flags) or "no AVX2"
    return "?"


def cpu_family_model():
    fields = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
        if key.strip() == "flags":
            break
    return f"family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}"


def tsrnn_kernels(args):
    """bench-gemm's first line: tsrnn's kernel level and the BLAS core, in the suite's env."""
    out = subprocess.run([args.gemm, "--kernels"], capture_output=True, text=True,
                         env=bench_env(args)).stdout.strip()
    return out.replace("tsrnn kernels: ", "") or "?"


def coretype_hint(args):
    """The OPENBLAS_CORETYPE that gives OpenBLAS this CPU's level (bench-gemm --kernels), or
    the CPU's own when OpenBLAS detects it."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    out = subprocess.run([args.gemm, "--kernels"], capture_output=True, text=True,
                         env=env).stdout
    m = re.search(r"hint OPENBLAS_CORETYPE=(\S+)", out)
    return m.group(1) if m else None


def git_revision():
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def loadavg():
    return open("/proc/loadavg").read().split()[0]


# --- the report ------------------------------------------------------------------------------

def fmt_rate(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def reference(c):
    """The PyTorch the targets compare with: PyPI's when measured, else Debian's."""
    return c.pypi or c.torch


def targets(c, by_shape, peak1):
    """The issue's targets that apply to this row, each "name: ok" or "name: measured":
    against PyTorch from PyPI when it ran (else Debian's, marked "(1.13)")."""
    out = []
    ref = reference(c)
    ratio = c.tsrnn["samples_per_s"] / ref["samples_per_s"] if ref else None
    which = "" if c.pypi else " (1.13)"

    def vs_torch(goal):
        if ratio is None:
            out.append(f"{goal:g}x: n/a")
        else:
            out.append(f"{goal:g}x{which}: ok" if ratio >= goal
                       else f"{goal:g}x{which}: {ratio:.2f}x")

    if c.seed:  # the whole tsrnn-worker process against PyTorch's optimizer steps
        if ref is None:
            out.append("50x whole: n/a")
        else:
            whole = (pick_time(r["seconds"] for r in ref["runs"]) /
                     pick_time(r["wall_s"] for r in c.tsrnn["runs"]))
            out.append(f"50x whole{which}: ok" if whole >= 50
                       else f"50x whole{which}: {whole:.1f}x")
        rss = c.tsrnn["rss_mib"]
        out.append("RSS 16M: ok" if rss <= 16 else f"RSS 16M: {rss:.1f}M")
        return ", ".join(out)
    headline = c.hidden == 256 and c.batch == 64 and c.layers == 1 and c.length == 64
    if (headline and c.threads == 1) or c.batch == 256 or c.hidden == 512:
        vs_torch(1.5)
    if headline and c.threads == 1:
        share = c.tsrnn["gflops"] / peak1
        out.append("70% peak: ok" if share >= 0.7 else f"70% peak: {100 * share:.0f}%")
    if c.threads == 2 and c.kind in ("LSTM", "GRU") and headline:
        one = by_shape.get((c.shape, 1))
        if one is not None:
            scaling = c.tsrnn["samples_per_s"] / one.tsrnn["samples_per_s"]
            out.append("2 thr 1.7x: ok" if scaling >= 1.7 else f"2 thr 1.7x: {scaling:.2f}x")
    return ", ".join(out) or "-"


def report(args, configs, info):
    with_torch = info["torch"] is not None
    with_pypi = info.get("pypi") is not None
    by_shape = {(c.shape, c.threads): c for c in configs}
    peaks = info["peaks"]
    print(f"## tsrnn CPU benchmark, {info['date']}")
    print()
    print(f"* Machine: {info['cpu']} ({info['family_model']}; {info['flags']}), "
          f"{os.cpu_count()} CPUs, Linux {platform.release()}; load average "
          f"{info['load_start']} at the start, {info['load_end']} at the end.")
    print(f"* OPENBLAS_CORETYPE: {info['coretype_env']} for tsrnn and Debian's PyTorch.")
    print(f"* tsrnn {info['version']} (git {info['git']}), meson release build; kernels "
          f"{info['kernels']}; BLAS where loaded: {info['tsrnn_blas']}.")
    if with_pypi:
        print(f"* PyTorch {info['pypi'][0]} from PyPI ({TORCH_VENV.replace(os.path.expanduser('~'), '~')}"
              f"): {info['pypi'][1]}; torch.set_num_threads = thr. The targets compare with "
              "this one.")
    if with_torch:
        # Paths below the checkout are shown relative to it: the report goes into the repo.
        blas = info['torch'][1].replace(ROOT + os.sep, "")
        print(f"* PyTorch {info['torch'][0]} (Debian python3-torch) on {blas}"
              + (" (through LD_LIBRARY_PATH)" if args.torch_blas else "")
              + "; OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = torch.set_num_threads = thr.")
    elif args.no_torch:
        print("* Debian's PyTorch: skipped (--no-torch).")
    else:
        print("* PyTorch: not importable with /usr/bin/python3 (apt-get install python3-torch); "
              "its columns are left out.")
    print(f"* sgemm peak (bench-gemm --peak, 2048^3, OpenBLAS core "
          f"{info['peak_core']}): "
          + ", ".join(f"{t} thread{'s' if t > 1 else ''} {peaks[t][0]:.1f} GFLOP/s"
                      for t in sorted(peaks)) + ".")
    print(f"* samples/s: {args.stat} of {args.reps} timed runs after a warm-up run, optimizer steps "
          f"only; spread = (max - min) / median of tsrnn's runs; runs of ~{args.target_s:g} s "
          "(at least " f"{args.min_steps} steps). GFLOP/s: matmul FLOPs, 3 x forward; "
          "% peak: of the sgemm peak at the row's thread count; RSS: tsrnn-worker's "
          "whole-process peak.")
    print()
    head = ["config", "thr", "tsrnn samples/s", "spread"]
    if with_pypi:
        head += ["PyTorch 2 (PyPI)", "ratio"]
    if with_torch:
        head += ["PyTorch 1.13 (Debian)", "ratio"]
    head += ["GFLOP/s", "% peak", "peak RSS MiB", "target"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "--:" for i in range(len(head) - 1)) + "|---|")
    for c in configs:
        if not c.tsrnn:
            continue
        row = [c.name, str(c.threads), fmt_rate(c.tsrnn["samples_per_s"]),
               f"{100 * c.tsrnn['spread']:.0f}%"]
        if with_pypi:
            if c.pypi:
                row += [fmt_rate(c.pypi["samples_per_s"]),
                        f"{c.tsrnn['samples_per_s'] / c.pypi['samples_per_s']:.2f}x"]
            else:
                row += ["failed", "-"]
        if with_torch:
            if c.torch:
                row += [fmt_rate(c.torch["samples_per_s"]),
                        f"{c.tsrnn['samples_per_s'] / c.torch['samples_per_s']:.1f}x"]
            else:
                row += ["failed", "-"]
        row += [f"{c.tsrnn['gflops']:.1f}",
                f"{100 * c.tsrnn['gflops'] / peaks[c.threads][0]:.0f}%",
                f"{c.tsrnn['rss_mib']:.1f}", targets(c, by_shape, peaks[1][0])]
        print("| " + " | ".join(row) + " |")
    for seed in (c for c in configs if c.seed and c.tsrnn):
        runs = seed.tsrnn["runs"]
        train = pick_time(r["train_s"] for r in runs)
        wall = pick_time(r["wall_s"] for r in runs)
        checkpoints = "no checkpoints" if seed.sets else "checkpoints every epoch"
        title = seed.name.split(":")[0]
        print()
        line = (f"{title[0].upper() + title[1:]}, 300 epochs (2,100 optimizer steps): "
                f"tsrnn {train:.3f} s of optimizer steps, {wall:.3f} s for the whole process "
                f"(data, validation every epoch, {checkpoints}, TensorBoard, 24-step forecast "
                f"and plot), peak RSS {seed.tsrnn['rss_mib']:.1f} MiB")
        for label, ran in (("PyTorch 2 (PyPI)", seed.pypi), ("PyTorch 1.13", seed.torch)):
            if ran:
                torch_s = pick_time(r["seconds"] for r in ran["runs"])
                line += (f"; {label} {torch_s:.2f} s of optimizer steps (peak RSS of its "
                         f"process {ran['rss_mib']:.0f} MiB), {torch_s / wall:.1f}x tsrnn's "
                         f"whole process")
        print(line + ".")
    if info.get("products"):
        print()
        print("The LSTM-256 (batch 64) step's GEMM products on this machine, 1 thread "
              "(bench-gemm):")
        print()
        print("```")
        print(info["products"].rstrip())
        print("```")


# --- main ------------------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build-bench"),
                   help="the meson build folder with tsrnn-worker and bench-gemm")
    p.add_argument("--quick", action="store_true",
                   help="seed, LSTM-256 B64 (1 and 2 threads), GRU-256 B64, LSTM-256 B256; "
                        "3 repetitions of ~0.7 s")
    p.add_argument("--reps", type=int, help="timed repetitions per configuration (default 5)")
    p.add_argument("--target-s", type=float, help="seconds per timed run (default 1.0)")
    p.add_argument("--min-steps", type=int, default=3, help="fewest steps in a timed run")
    p.add_argument("--stat", choices=("median", "best"), default="median",
                   help="what a row shows of its timed runs: the median (default) or the best "
                        "(on a machine shared with other work, the closest to a quiet one)")
    p.add_argument("--warmup-s", type=float, default=0.4, help="seconds of warm-up steps")
    p.add_argument("--only", metavar="REGEX",
                   help="configurations whose name matches (e.g. 'LSTM-256', 'seed')")
    p.add_argument("--threads", type=int, choices=(1, 2), help="only this thread count")
    p.add_argument("--no-torch", action="store_true", help="skip Debian's PyTorch")
    p.add_argument("--no-pypi-torch", action="store_true", help="skip PyTorch from PyPI")
    p.add_argument("--setup-torch", action="store_true",
                   help="first create the PyPI PyTorch venv (pip install torch) if missing")
    p.add_argument("--openblas-coretype", metavar="CORE",
                   help="OPENBLAS_CORETYPE for tsrnn and Debian's PyTorch (e.g. SkylakeX, "
                        "Haswell; 'unset' removes it); default: as this environment has it")
    p.add_argument("--torch-blas", metavar="DIR",
                   help="folder with the libblas.so.3 PyTorch should load (LD_LIBRARY_PATH)")
    p.add_argument("--no-products", action="store_true", help="skip bench-gemm's products")
    p.add_argument("--kernels", action="store_true",
                   help="print the kernel / BLAS line and exit (no measurement)")
    p.add_argument("--json", metavar="FILE", help="also write every run's numbers here")
    args = p.parse_args()
    args.reps = args.reps or (3 if args.quick else 5)
    args.target_s = args.target_s or (0.7 if args.quick else 1.0)
    args.worker = os.path.join(args.build, "tsrnn-worker")
    args.gemm = os.path.join(args.build, "bench-gemm")
    for path in (args.worker, args.gemm):
        if not os.access(path, os.X_OK):
            p.error(f"{path} missing: run scripts/bench/suite.sh, which builds it")
    return args


def main():
    args = parse_args()
    global STAT
    STAT = args.stat
    if args.setup_torch:
        setup_torch()
    args.cpu_coretype = coretype_hint(args)
    if args.kernels:
        print(tsrnn_kernels(args))
        return
    configs = [c for c in all_configs()
               if (not args.quick or in_quick(c))
               and (args.only is None or re.search(args.only, c.name))
               and (args.threads is None or c.threads == args.threads)]
    if not configs:
        sys.exit("suite: no configuration matches")
    started = time.monotonic()
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu_model(), "flags": cpu_flags(), "load_start": loadavg(),
            "family_model": cpu_family_model(), "kernels": tsrnn_kernels(args),
            "coretype_env": bench_env(args).get("OPENBLAS_CORETYPE", "unset"),
            "peak_core": args.cpu_coretype or "as detected",
            "git": git_revision(), "tsrnn_blas": tsrnn_blas(args),
            "version": subprocess.run([args.worker, "--version"], capture_output=True,
                                      text=True).stdout.split()[-1]}
    info["torch"] = None if args.no_torch else torch_probe(args)
    info["pypi"] = None if args.no_pypi_torch else torch_probe(args, pypi=True)
    log(f"suite: {len(configs)} configurations, {args.reps} timed runs each; kernels "
        f"{info['kernels']}; PyTorch: "
        + (f"{info['torch'][0]} on {info['torch'][1]}" if info["torch"] else "skipped")
        + "; PyPI PyTorch: " + (f"{info['pypi'][0]} ({info['pypi'][1]})" if info["pypi"]
                                else f"none (--setup-torch makes {TORCH_VENV})"))
    with tempfile.TemporaryDirectory(prefix="tsrnn-bench-") as work:
        args.work = work
        if any(not c.seed for c in configs):
            with open(os.path.join(work, "synthetic.csv"), "w") as f:
                subprocess.run(["awk", "-f", os.path.join(ROOT, "bench", "synthetic.awk"),
                                "-v", f"n={SYNTHETIC_POINTS}"], stdout=f, check=True)
        for i, c in enumerate(measure_order(configs), 1):
            tsrnn_measure(args, c)
            c.tsrnn["gflops"] = c.tsrnn["samples_per_s"] * flops_per_sample(c) * 1e-9
            note = ""
            for pypi, present in ((True, info["pypi"]), (False, info["torch"])):
                if not present:
                    continue
                label = "PyPI PyTorch" if pypi else "PyTorch 1.13"
                twin = next((d for d in configs if d is not c and d.seed and c.seed
                             and (d.pypi if pypi else d.torch)), None)
                try:
                    if twin is not None:  # PyTorch's seed run is the same for both seed rows
                        if pypi:
                            c.pypi = twin.pypi
                        else:
                            c.torch = twin.torch
                    else:
                        torch_measure(args, c, pypi)
                    ran = c.pypi if pypi else c.torch
                    note += f", {label} {fmt_rate(ran['samples_per_s'])}"
                except RuntimeError as e:
                    log(f"suite: {c.name}: {label} failed: {e}")
            log(f"suite: [{i}/{len(configs)}] {c.name}, {c.threads} thr: tsrnn "
                f"{fmt_rate(c.tsrnn['samples_per_s'])} samples/s ({c.tsrnn['runs'][0]['steps']} "
                f"steps/run){note}, {time.monotonic() - started:.0f} s so far")
    # The sgemm peak last: on this class of VM the host slows the vCPUs for a while after
    # seconds of full load on both (the seed config measured 0.071 s before a 2-thread peak
    # run and 0.08-0.10 s after), and the seed config comes first.
    info["peaks"] = {}
    for threads in sorted({c.threads for c in configs}):
        best, median, line = sgemm_peak(args, threads)
        info["peaks"][threads] = (best, median)
        log(f"suite: {line}")
    if not args.no_products and any(c.name.startswith("LSTM-256") or c.seed for c in configs):
        info["products"] = subprocess.run([args.gemm], capture_output=True, text=True,
                                          check=True, env=bench_env(args)).stdout
    info["load_end"] = loadavg()
    log(f"suite: done in {time.monotonic() - started:.0f} s")
    report(args, configs, info)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "configs": [c.__dict__ for c in configs]}, f, indent=1)


if __name__ == "__main__":
    main()
