#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, run a workload on the
# simulated chip.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${TPU_BUILD_DIR:-$root/build}"
"$build/examples/raw_matmul" "$@"
