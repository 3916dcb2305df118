#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds tpu-rtl into build/ (or $TPU_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TPU_BUILD_DIR:-$root/build}"
jobs="${TPU_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$jobs"
