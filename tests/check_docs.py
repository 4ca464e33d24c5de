#!/usr/bin/env python3
"""The documentation against the repository, as a newcomer would use it.

1. Links: every relative link and image in README.md, CONTRIBUTING.md and docs/*.md points
   at a file that exists (the part before any #anchor).
2. Quick start: the README's "## Quick start" section is run as written, in a fresh folder:
   its ini block is saved as the file its first command names, a CSV of the shape it
   describes is made (the AirPassengers numbers under the README's column names and dates),
   and every command of its sh blocks runs, with `build/` standing for this build's folder.
   Each must exit 0; a `--plot FILE` must leave a PNG and a forecast printed to standard
   output must have one row per step.
3. Cluster: the README's "## Running on a cluster" commands that run `mpirun -np 2` on this
   machine run as written, from a folder that holds the repository's examples/ (as root with
   Open MPI's two variables for root, which the README tells a reader to pass as an
   option): exit 0, two ranks, rank 0's run folder written. Skipped without mpirun
   (TSRNN_MPIRUN empty) or in a build without MPI.
4. Python: the statements of the README's "## Python" block are those of the Darts guide's
   script with its one import changed (tests/python/guide.py, which the python tests run,
   from a build and from the wheel `pip install .` makes).

Run by meson (tests/meson.build) with TSRNN_SOURCE_ROOT and TSRNN_LAUNCH set. Prints one
line per check and exits 1 on the first failure, with what and where.
"""
import ast
import csv
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.environ["TSRNN_SOURCE_ROOT"]
BUILD = os.path.dirname(os.environ["TSRNN_LAUNCH"])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def doc_files():
    files = ["README.md", "CONTRIBUTING.md"]
    files += sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                    if f.endswith(".md"))
    return files


def check_links():
    count = 0
    for name in doc_files():
        path = os.path.join(ROOT, name)
        if not os.path.exists(path):
            fail(f"{name} is missing")
        in_code = False
        for number, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.lstrip().startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue  # a web address, or an anchor in the same page
                file_part = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    fail(f"{name}:{number}: the link ({target}) points at "
                         f"{os.path.relpath(resolved, ROOT)}, which does not exist")
                count += 1
    print(f"ok: {count} relative links in {len(doc_files())} files point at files that exist")


def quick_start_blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    match = re.search(r"^## Quick start[^\n]*\n(.*?)(?=^## )", text, re.M | re.S)
    if match is None:
        fail("README.md has no '## Quick start' section")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", match.group(1), re.M | re.S)
    ini = [body for lang, body in blocks if lang == "ini"]
    commands = [line.strip() for lang, body in blocks if lang == "sh"
                for line in body.splitlines() if line.strip() and not line.startswith("#")]
    if len(ini) != 1 or not commands:
        fail(f"README.md's quick start: expected one ini block and sh commands, found "
             f"{len(ini)} ini block(s) and {len(commands)} command(s)")
    return ini[0], commands


def ini_value(ini, section, key):
    current = None
    for line in ini.splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif "=" in line and current == section and line.split("=")[0].strip() == key:
            return line.split("=", 1)[1].strip()
    return None


def make_series(ini, folder):
    """The CSV the ini describes: AirPassengers' 144 monthly values, its time column starting
    in 2009-01 (the README's split must fall inside), under the README's column names."""
    name = ini_value(ini, "data", "path")
    time_col = ini_value(ini, "data", "time_col")
    value_cols = ini_value(ini, "data", "value_cols") or "sales"
    rows = list(csv.reader(open(os.path.join(ROOT, "examples/data/air_passengers.csv"))))[1:]
    with open(os.path.join(folder, name), "w") as f:
        f.write(f"{time_col},{value_cols}\n")
        for i, row in enumerate(rows):
            f.write(f"{2009 + i // 12}-{i % 12 + 1:02d},{row[1]}\n")
    return name


def run_quick_start():
    ini, commands = quick_start_blocks()
    with tempfile.TemporaryDirectory(prefix="tsrnn-readme-") as folder:
        ini_name = shlex.split(commands[0])[-1]
        with open(os.path.join(folder, ini_name), "w") as f:
            f.write(ini)
        series = make_series(ini, folder)
        print(f"ok: {ini_name} from the README, {series} made ({folder})")
        for command in commands:
            argv = shlex.split(command)
            if argv[0].startswith("build/"):
                argv[0] = os.path.join(BUILD, argv[0][len("build/"):])
            result = subprocess.run(argv, cwd=folder, capture_output=True, text=True,
                                    timeout=600)
            if result.returncode != 0:
                fail(f"README quick start: `{command}` exited {result.returncode}:\n"
                     f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
            if "--plot" in argv:
                png = os.path.join(folder, argv[argv.index("--plot") + 1])
                with open(png, "rb") as f:
                    if f.read(8) != b"\x89PNG\r\n\x1a\n":
                        fail(f"README quick start: `{command}` left no PNG at {png}")
            if "--n" in argv and "--out" not in argv:
                steps = int(argv[argv.index("--n") + 1])
                rows = result.stdout.strip().splitlines()
                if len(rows) != steps + 1:
                    fail(f"README quick start: `{command}` printed {len(rows)} lines, "
                         f"expected a header and {steps} forecast rows")
            print(f"ok: `{command}` exited 0")


def run_cluster_recipe():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    match = re.search(r"^## Running on a cluster[^\n]*\n(.*?)(?=^## )", text, re.M | re.S)
    if match is None:
        fail("README.md has no '## Running on a cluster' section")
    commands = [line.strip() for body in re.findall(r"^```sh\n(.*?)^```", match.group(1),
                                                     re.M | re.S)
                for line in body.splitlines() if line.strip().startswith("mpirun -np 2 ")]
    if not commands:
        fail("README.md's cluster section has no `mpirun -np 2 ...` command to run")
    build_h = open(os.path.join(BUILD, "include", "tsrnn_build.h")).read()
    if not os.environ.get("TSRNN_MPIRUN") or "TSRNN_HAVE_MPI_BACKEND 1" not in build_h:
        print("skip: README cluster recipe (no mpirun, or a build without MPI)")
        return
    env = dict(os.environ)
    if "LSAN_OPTIONS" in env:  # the ASan build: whole stacks, for tests/lsan.supp's Open MPI lines
        env["LSAN_OPTIONS"] += ":fast_unwind_on_malloc=0"
    if os.getuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory(prefix="tsrnn-readme-mpi-") as folder:
        os.symlink(os.path.join(ROOT, "examples"), os.path.join(folder, "examples"))
        os.symlink(BUILD, os.path.join(folder, "build"))
        for command in commands:
            argv = shlex.split(command)
            argv[0] = env["TSRNN_MPIRUN"]
            result = subprocess.run(argv, cwd=folder, capture_output=True, text=True,
                                    timeout=300, env=env)
            if result.returncode != 0:
                fail(f"README cluster recipe: `{command}` exited {result.returncode}:\n"
                     f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
            for needle in ("MEMBER: 1/2", "MEMBER: 2/2", "Run folder: darts_logs/"):
                if needle not in result.stdout:
                    fail(f"README cluster recipe: `{command}` printed no '{needle}':\n"
                         f"{result.stdout[-2000:]}")
            if not os.path.exists(os.path.join(folder, "darts_logs/Air_RNN/metrics.csv")):
                fail(f"README cluster recipe: `{command}` wrote no darts_logs/Air_RNN/metrics.csv")
            print(f"ok: `{command}` exited 0 with 2 ranks")


def check_python_section():
    """The README's Python lines are the Darts guide's script with its one import changed
    (tests/python/guide.py, which the python suite runs through test_guide.py and, after
    `pip install .`, test_wheel.py): every statement of its python block is one of the
    script's, compared as parsed code."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    match = re.search(r"^## Python[^\n]*\n(.*?)(?=^## )", text, re.M | re.S)
    if match is None:
        fail("README.md has no '## Python' section")
    blocks = re.findall(r"^```python\n(.*?)^```", match.group(1), re.M | re.S)
    if len(blocks) != 1:
        fail(f"README.md's Python section: expected one python block, found {len(blocks)}")
    guide = open(os.path.join(ROOT, "tests", "python", "guide.py"), encoding="utf-8").read()
    import_line = re.compile(r"^from darts\.models import RNNModel$", re.M)
    if len(import_line.findall(guide)) != 1:
        fail("tests/python/guide.py: expected the line 'from darts.models import RNNModel' once")
    guide = import_line.sub("from tsrnn.darts import RNNModel", guide)
    known = {ast.dump(node) for node in ast.parse(guide).body}
    statements = ast.parse(blocks[0]).body
    for node in statements:
        if ast.dump(node) not in known:
            fail(f"README.md's Python section, line {node.lineno} of its block: "
                 f"`{ast.unparse(node)[:80]}` is not a statement of tests/python/guide.py "
                 f"(with the tsrnn import), which the python tests run")
    print(f"ok: the README's {len(statements)} Python statements are tests/python/guide.py's")


def main():
    check_links()
    run_quick_start()
    run_cluster_recipe()
    check_python_section()


if __name__ == "__main__":
    main()
