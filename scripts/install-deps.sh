#!/usr/bin/env bash
# Installs the Debian 12 packages tsrnn needs; does nothing (and needs no network) when they
# are all present. Usage: scripts/install-deps.sh [--test]
#   default  what building and running tsrnn needs
#   --test   also what the test suite needs (cmocka, clang-format, python3, and clang with
#            its libFuzzer runtime for the fuzz targets)
set -euo pipefail

packages=(meson ninja-build pkg-config gcc g++ libc6-dev libinih-dev libjansson-dev libopenblas-dev
    libcairo2-dev fonts-dejavu-core libgloo-dev libopenmpi-dev openmpi-bin)
if [ "${1:-}" = "--test" ]; then
    packages+=(libcmocka-dev clang-format python3 clang libclang-rt-dev iproute2)
fi

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
