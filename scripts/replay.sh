#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replays one random program from its seed on the chip and the golden model, printing the
# case (timing, windows, listing), both outcomes and, on a mismatch, the first instruction
# after which the state differs.
#
#   scripts/replay.sh [--n 4|16] SEED [--no-bisect]
#   scripts/replay.sh --show [--n N] SEED        # print the program only
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TPU_BUILD_DIR:-$root/build}"
n=16 cmd=replay
while [ $# -gt 0 ]; do
  case "$1" in
    --n) n="$2"; shift 2 ;;
    --show) cmd=show; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: scripts/replay.sh [--n N] SEED [--no-bisect]" >&2; exit 2; }
seed="$1"; shift
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${TPU_JOBS:-$(nproc)}" --target "tpu_random_n$n" >/dev/null
exec "$build/tests/verif/tpu_random_n$n" "$cmd" --seed "$seed" "$@"
