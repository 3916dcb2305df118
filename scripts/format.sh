#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Formats every tracked C++ file with .clang-format (Debian's clang-format), or with --check
# lists the files that differ from it and fails. The ctest `clang_format` runs --check.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
clang_format="${CLANG_FORMAT:-clang-format}"
if ! command -v "$clang_format" >/dev/null; then
  echo "format.sh: $clang_format not found (apt-get install clang-format)" >&2
  exit 2
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
else  # an unpacked source tarball
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.h' \) -print | sort)
fi
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1; then
      echo "format.sh: $f is not formatted as .clang-format says (run scripts/format.sh)" >&2
      bad=1
    fi
  done
  [ $bad -eq 0 ] && echo "format.sh: ${#files[@]} C++ files formatted"
  exit $bad
elif [ $# -gt 0 ]; then
  echo "format.sh: unknown argument '$1' (expected nothing or --check)" >&2
  exit 2
fi
"$clang_format" -i "${files[@]}"
