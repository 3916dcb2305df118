#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on a fresh machine: install what is missing, build only what the demo runs
# (tpusim, the simulator of the default chip; not the test suite), and run the bundled
# Fashion-MNIST CNN on the simulated chip (tpusim run-cnn: ONNX model quantized to int8, every
# layer on the chip, each image checked bit-exactly against the integer reference).
# Extra arguments go to run-cnn, e.g. ./scripts/demo.sh --images 10000 --quiet
# The build directory is the one scripts/build.sh uses (build/, or $TPU_BUILD_DIR), so a later
# ./scripts/build.sh or ./scripts/test.sh builds the rest on top of it.
# Time from an empty build folder, packages installed, 100 images: 12 min 7 s on this project's
# 2-core machine while other jobs kept its load at 13 (63 objects compiled, of the 216 of a full
# build with its tests; the run-cnn itself 8 s). Measured at the commit that made the build
# targeted; before, it built every test first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
build="${TPU_BUILD_DIR:-$root/build}"
jobs="${TPU_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs" --target tpusim
"$build/tools/tpusim/tpusim" run-cnn "$@"
