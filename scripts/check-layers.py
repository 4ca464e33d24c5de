#!/usr/bin/env python3
"""The layering of src/: which module uses which, read from the code and the build.

A module is a folder of src/ (its backends' subfolders included) together with the public
headers of include/tsrnn/ that LAYERS gives it. Module A uses module B when
  - a file of A (a source or header under src/A/, or a header of A in include/tsrnn/)
    includes a header of B (#include lines, resolved as the compiler resolves them: the
    file's folder, then include/, then the repository root), or
  - an object file of A (the build's, from compile_commands.json, plus the objects that
    custom targets leave under BUILD/src/A/) references a symbol that an object of B
    defines (`nm`: a U in A, a strong definition in B).
It fails on
  (a) a cycle: modules that use each other, directly or through others;
  (b) an upward use: a module using one that LAYERS puts above it;
  (c) a private header (one under src/MODULE/) included from another module.
Each finding names the files and symbols behind it. Python 3's standard library and `nm`.

Usage: scripts/check-layers.py BUILD_FOLDER
Exit 0: the layering holds; 1: a violation (or docs/architecture.md's modules table out of
LAYERS' order); 2: usage (no build folder,
no nm, a folder of src/ or a header of include/tsrnn/ that LAYERS does not place).
Run by meson as the test `layers` (tests/meson.build); documented in docs/architecture.md.
"""
import json
import os
import re
import subprocess
import sys

# The modules, bottom first: each may use the ones before it, never one after it. Each
# with the public headers (include/tsrnn/) it owns. docs/architecture.md's modules table
# lists the same modules, top first.
LAYERS = [
    ("core", ["core.h", "arena.h", "atomic_file.h", "crc32c.h", "dynlib.h", "fs.h",
              "status.h", "thread.h", "torch_dist.h", "torch_rng.h"]),
    ("config", ["config.h"]),
    ("nn", ["nn.h", "likelihood.h"]),
    ("data", ["data.h", "encoders.h"]),
    ("compute", ["compute.h"]),
    ("comm", ["comm.h"]),
    ("world", ["world.h"]),
    ("model", ["model.h"]),
    ("optim", ["optim.h"]),
    ("checkpoint", ["checkpoint.h", "safetensors.h"]),
    ("report", ["report.h", "tensorboard.h", "plot.h"]),
    ("forecast", ["forecast.h", "sampling.h", "quantile_metrics.h"]),
    ("train", ["train.h", "memory.h"]),
    ("api", ["tsrnn.h"]),
    ("predict", []),
    ("worker", []),
    ("launcher", []),
]

SOURCE_SUFFIXES = (".c", ".h", ".cc", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
STRONG = set("TDBRCGS")  # nm's global definitions; weak ones (W, V) do not own a name
SHOWN = 4  # evidence lines printed per use


def usage_error(message):
    print(f"check-layers: {message}", file=sys.stderr)
    sys.exit(2)


class Layers:
    def __init__(self, root):
        self.root = root
        self.rank = {name: i for i, (name, _) in enumerate(LAYERS)}
        self.header_module = {}
        for name, headers in LAYERS:
            for header in headers:
                self.header_module[os.path.join("include", "tsrnn", header)] = name
        folders = sorted(d for d in os.listdir(os.path.join(root, "src"))
                         if os.path.isdir(os.path.join(root, "src", d)))
        unplaced = [d for d in folders if d not in self.rank]
        missing = [name for name in self.rank if name not in folders]
        if unplaced or missing:
            usage_error(f"LAYERS and src/ disagree: folders LAYERS does not place: "
                        f"{unplaced or 'none'}; modules without a folder: {missing or 'none'} "
                        f"(edit LAYERS in {os.path.relpath(__file__, root)})")
        headers = sorted(os.path.join("include", "tsrnn", h)
                         for h in os.listdir(os.path.join(root, "include", "tsrnn"))
                         if h.endswith(".h"))
        unowned = [h for h in headers if h not in self.header_module]
        gone = [h for h in self.header_module if h not in headers]
        if unowned or gone:
            usage_error(f"LAYERS and include/tsrnn/ disagree: headers without a module: "
                        f"{unowned or 'none'}; headers LAYERS names that do not exist: "
                        f"{gone or 'none'}")

    def module_of(self, rel):
        """The module of a path relative to the root, or None (generated, external)."""
        parts = rel.split(os.sep)
        if len(parts) >= 3 and parts[0] == "src":
            return parts[1]
        return self.header_module.get(rel)


def read_includes(layers):
    """{(user, used): [evidence]} from the #include lines; [evidence] of a private header
    (one under src/MODULE/) included from another module; the number of files read."""
    root = layers.root
    files = [os.path.relpath(os.path.join(d, f), root)
             for d, _, names in os.walk(os.path.join(root, "src"))
             for f in names if f.endswith(SOURCE_SUFFIXES)]
    files += list(layers.header_module)
    uses, private = {}, []
    for rel in sorted(files):
        user = layers.module_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m is None:
                    continue
                quoted, name = m.group(1) == '"', m.group(2)
                # As meson's include path has it: the file's folder, then include/ alone.
                places = ([os.path.dirname(rel)] if quoted else []) + ["include"]
                for place in places:
                    target = os.path.normpath(os.path.join(place, name))
                    if os.path.isfile(os.path.join(root, target)):
                        break
                else:
                    continue  # a system header, or generated (tsrnn_build.h), or external
                used = layers.module_of(target)
                if used is not None and used != user:
                    uses.setdefault((user, used), []).append(
                        f"{rel}:{number} includes {target}")
                    if target.startswith("src" + os.sep):
                        private.append(f"{rel}:{number} includes {target}")
    return uses, private, len(files)


def objects_of(layers, build):
    """[(object path, its source relative to the root)] of src/'s code in the build."""
    path = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(path):
        usage_error(f"{path} is missing: give a meson build folder, configured and built")
    objects = []
    for entry in json.load(open(path)):
        source = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(source, layers.root)
        if rel.startswith("src" + os.sep):
            objects.append((os.path.join(entry["directory"], entry["output"]), rel))
    # Objects of custom targets (nvcc's kernels.o): BUILD/src/MODULE/...
    for d, _, names in os.walk(os.path.join(build, "src")):
        for name in names:
            if name.endswith(".o"):
                obj = os.path.join(d, name)
                objects.append((obj, os.path.relpath(obj, build)))
    absent = [obj for obj, _ in objects if not os.path.isfile(obj)]
    if absent:
        usage_error(f"{len(absent)} objects are not built ({absent[0]}, ...): "
                    f"meson compile -C {build} first")
    return objects


def read_symbols(layers, build):
    """{(user, used): [evidence]} from the objects' symbol tables; the number of objects."""
    nm = os.environ.get("NM", "nm")
    defined, undefined = {}, []
    objects = objects_of(layers, build)
    for obj, rel in objects:
        module = layers.module_of(rel)
        try:
            out = subprocess.run([nm, "-P", "-g", obj], capture_output=True, text=True,
                                 check=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            usage_error(f"{nm} -P -g {obj}: {e}")
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 2:
                continue
            symbol, kind = fields[0], fields[1]
            if kind == "U":
                undefined.append((module, rel, symbol))
            elif kind in STRONG:
                defined.setdefault(symbol, []).append((module, rel))
    uses = {}
    for module, rel, symbol in undefined:
        owners = defined.get(symbol, [])
        if any(owner == module for owner, _ in owners):
            continue
        for owner, where in owners[:1]:
            uses.setdefault((module, owner), []).append(
                f"{rel} uses {symbol} (defined in {where})")
    return uses, len(objects)


def cycles(modules, edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component, key=modules.index))

    for v in modules:
        if v not in index:
            visit(v)
    return found


def shortest_loop(user, used, component, edges):
    """user -> used closed the shortest way back to user inside the component."""
    inside = set(component)
    paths, queue = {used: [used]}, [used]
    while queue and user not in paths:  # breadth first, from used back to user
        v = queue.pop(0)
        for w in sorted(edges.get(v, ()) & inside, key=component.index):
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return [user] + paths[user][:-1]


def print_evidence(evidence):
    for line in sorted(set(evidence))[:SHOWN]:
        print(f"      {line}")
    if len(set(evidence)) > SHOWN:
        print(f"      ... and {len(set(evidence)) - SHOWN} more")


def check_docs(layers):
    """docs/architecture.md's modules table lists LAYERS' modules, top first."""
    path = os.path.join(layers.root, "docs", "architecture.md")
    text = open(path, encoding="utf-8").read()
    section = re.search(r"^## Modules\n(.*?)(?=^## )", text, re.S | re.M)
    rows = re.findall(r"^\| `(\w+)/` \|", section.group(1) if section else "", re.M)
    want = [name for name, _ in reversed(LAYERS)]
    if rows != want:
        print(f"FAIL docs/architecture.md: the modules table (## Modules) lists {rows}; "
              f"LAYERS, top first, is {want}")
        return False
    return True


def main(argv):
    if len(argv) != 1 or argv[0].startswith("-"):
        usage_error("usage: check-layers.py BUILD_FOLDER")
    build = os.path.abspath(argv[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    layers = Layers(root)
    modules = [name for name, _ in LAYERS]

    include_uses, private, file_count = read_includes(layers)
    symbol_uses, object_count = read_symbols(layers, build)
    uses = {}
    for pair, evidence in list(include_uses.items()) + list(symbol_uses.items()):
        uses.setdefault(pair, []).extend(evidence)
    print(f"layers, bottom first: {' < '.join(modules)}")
    print(f"read: #include lines of {file_count} files, symbols of {object_count} objects; "
          f"{len(uses)} uses between modules")

    failures = 0
    edges = {}
    for (user, used) in uses:
        edges.setdefault(user, set()).add(used)
    # Every cycle holds at least one upward use (LAYERS is a total order): each upward use
    # inside a cycle is shown with the shortest loop it closes, the others on their own.
    in_cycle = {}
    for component in cycles(modules, edges):
        for user in component:
            for used in edges.get(user, ()):
                if used in component and layers.rank[used] > layers.rank[user]:
                    in_cycle[(user, used)] = shortest_loop(user, used, component, edges)
    for (user, used), loop in sorted(in_cycle.items()):
        failures += 1
        print(f"FAIL cycle: {' -> '.join(loop + [loop[0]])} ({user} -> {used} goes up)")
        for a, b in zip(loop, loop[1:] + loop[:1]):
            print(f"    {a} -> {b}{' (up)' if layers.rank[b] > layers.rank[a] else ''}")
            print_evidence(uses[(a, b)])
    for (user, used), evidence in sorted(uses.items()):
        if (user, used) in in_cycle or layers.rank[used] < layers.rank[user]:
            continue
        failures += 1
        print(f"FAIL upward: {user} uses {used}, which LAYERS puts above it:")
        print_evidence(evidence)

    for evidence in private:
        failures += 1
        print(f"FAIL private header: {evidence}, another module's private header (what other "
              f"modules use goes to include/tsrnn/)")
    if not check_docs(layers):
        failures += 1
    if failures:
        print(f"check-layers: {failures} violation(s)")
        return 1
    print("check-layers: ok, no cycle and no upward use")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
