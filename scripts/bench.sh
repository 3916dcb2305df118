#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Simulator benchmark: builds the harnesses of bench/ for each N, measures simulated cycles/s
# (SystemC Chip, bare Verilated core, --threads 2, bare MXU, Icarus), VCD cost, build time and
# memory, the N = 64/128/256 scale check and a callgrind profile, and writes
# docs/performance.md (raw results in build-bench/results.json).
#
#   scripts/bench.sh                 # everything (~1-2 h on 2 shared cores)
#   scripts/bench.sh --quick         # shorter runs, fewer repetitions
#   scripts/bench.sh --help          # all options (bench/bench.py)
#
# Builds run under nice with -j2 (--jobs); build output stays in build-bench/ (--build-root).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
missing=()
for tool in cmake ninja verilator g++ python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "bench.sh: missing ${missing[*]} (scripts/setup.sh; apt-get install ninja-build)" >&2
  exit 1
fi
command -v iverilog >/dev/null || echo "bench.sh: iverilog not found, the Icarus section is skipped (apt-get install iverilog)" >&2
command -v valgrind >/dev/null || echo "bench.sh: valgrind not found, the profile section is skipped (apt-get install valgrind)" >&2
exec python3 "$root/bench/bench.py" "$@"
