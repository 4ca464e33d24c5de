#!/usr/bin/env bash
# Installs the Debian 12 packages tsrnn needs; does nothing (and needs no network) when they
# are all present. Usage: scripts/install-deps.sh [--test]
#   default  what building and running tsrnn needs
#   --test   also what the test suite needs (cmocka, clang-format, python3, pip, clang with
#            its libFuzzer runtime for the fuzz targets, Slurm with munge for the two-node
#            cluster of tests/test_slurm.c, and NumPy, pandas, pytest and meson-python for
#            the Python package's tests, tests/python/), and libtpu (below)
# Then the PJRT pieces (docs/architecture.md "The pjrt backend"): the PyPI wheel
# xla-cpu-pjrt==0.0.1 (the PJRT C API header and XLA's CPU plugin) into a cache outside the
# source tree, $TSRNN_PJRT_CACHE (default ~/.cache/tsrnn/pjrt), checked by its sha256 and
# unpacked there; meson's `pjrt` feature takes the header from it. A failed download leaves
# a build without the pjrt backend, whose tests skip.
set -euo pipefail

packages=(meson ninja-build pkg-config gcc g++ libc6-dev libinih-dev libjansson-dev libopenblas-dev
    libcairo2-dev fonts-dejavu-core libgloo-dev libopenmpi-dev openmpi-bin)
if [ "${1:-}" = "--test" ]; then
    packages+=(libcmocka-dev clang-format python3 python3-pip clang libclang-rt-dev iproute2
        slurmctld slurmd slurm-client munge python3-numpy python3-pandas python3-pytest
        python3-mesonpy)
fi

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The PJRT wheel: never fatal (the pjrt backend is optional), never in the source tree.
pjrt_cache=${TSRNN_PJRT_CACHE:-$HOME/.cache/tsrnn/pjrt}
pjrt_wheel=xla_cpu_pjrt-0.0.1-py3-none-manylinux_2_27_x86_64.whl
pjrt_sha256=55837b6b7b47daa717f2d9a5a03563ea0ceaa338d06a81a1e2d3f060d960decc
pjrt_fetch() {
    local plugin=$pjrt_cache/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so
    local header=$pjrt_cache/xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h
    [ -f "$plugin" ] && [ -f "$header" ] && return 0
    [ "$(uname -m)" = x86_64 ] || { echo "install-deps: no xla-cpu-pjrt wheel for $(uname -m)"; return 1; }
    python3 -m pip --version >/dev/null 2>&1 || { echo "install-deps: pip is missing"; return 1; }
    mkdir -p "$pjrt_cache"
    if [ ! -f "$pjrt_cache/$pjrt_wheel" ]; then
        python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
            --platform manylinux_2_27_x86_64 -d "$pjrt_cache" xla-cpu-pjrt==0.0.1 || return 1
    fi
    if ! echo "$pjrt_sha256  $pjrt_cache/$pjrt_wheel" | sha256sum -c --quiet -; then
        echo "install-deps: $pjrt_cache/$pjrt_wheel does not have the expected sha256; removed"
        rm -f "$pjrt_cache/$pjrt_wheel"
        return 1
    fi
    python3 - "$pjrt_cache/$pjrt_wheel" "$pjrt_cache" <<'PY' || return 1
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h",
                 "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"):
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(name) as src, open(path + ".part", "wb") as dst:
            dst.write(src.read())
        os.replace(path + ".part", path)
PY
    echo "install-deps: XLA's CPU PJRT plugin and the PJRT C API header in $pjrt_cache"
}
pjrt_fetch || echo "install-deps: the pjrt backend will not be built (its tests skip)"

# --test: libtpu (PyPI wheel libtpu==0.0.52, Google Cloud's terms: never committed, never in
# the source tree), for the test that compiles every emitted program for TPUs ahead of time
# (tests/test_pjrt_tpu.c, run without network). Its sha256 was recorded when first
# downloaded here (2026-12-03). $TSRNN_LIBTPU_CACHE, default ~/.cache/tsrnn/libtpu.
libtpu_cache=${TSRNN_LIBTPU_CACHE:-$HOME/.cache/tsrnn/libtpu}
libtpu_wheel=libtpu-0.0.52-cp311-cp311-manylinux_2_31_x86_64.whl
libtpu_sha256=f5e2e596eaea9357fbb5a6755a7a9007c6ab75bfde4a55191b03eff402971140
libtpu_fetch() {
    [ -f "$libtpu_cache/libtpu/libtpu.so" ] && return 0
    [ "$(uname -m)" = x86_64 ] || return 1
    python3 -m pip --version >/dev/null 2>&1 || return 1
    mkdir -p "$libtpu_cache"
    if [ ! -f "$libtpu_cache/$libtpu_wheel" ]; then
        python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
            --platform manylinux_2_31_x86_64 -d "$libtpu_cache" libtpu==0.0.52 || return 1
    fi
    if ! echo "$libtpu_sha256  $libtpu_cache/$libtpu_wheel" | sha256sum -c --quiet -; then
        echo "install-deps: $libtpu_cache/$libtpu_wheel does not have the expected sha256; removed"
        rm -f "$libtpu_cache/$libtpu_wheel"
        return 1
    fi
    python3 - "$libtpu_cache/$libtpu_wheel" "$libtpu_cache" <<'PY' || return 1
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("libtpu/LICENSE", "libtpu/libtpu.so"):
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(name) as src, open(path + ".part", "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(path + ".part", path)
PY
    echo "install-deps: libtpu (Google Cloud terms: $libtpu_cache/libtpu/LICENSE) in $libtpu_cache"
}
if [ "${1:-}" = "--test" ]; then
    libtpu_fetch || echo "install-deps: no libtpu: the TPU compile test will be skipped"
fi
