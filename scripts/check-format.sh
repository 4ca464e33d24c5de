#!/usr/bin/env bash
# Fails when a C source or header differs from what .clang-format makes of it.
set -euo pipefail
root=${1:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}
cd "$root"
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cc' '*.cu' 2>/dev/null || find src include tests -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "no sources found"; exit 1; }
"${CLANG_FORMAT:-clang-format}" --dry-run --Werror "${files[@]}"
echo "${#files[@]} files formatted as .clang-format says"
