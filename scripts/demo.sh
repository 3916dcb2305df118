#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on a fresh machine: install what is missing, build, and run the bundled
# Fashion-MNIST CNN on the simulated chip (tpusim run-cnn: ONNX model quantized to int8, every
# layer on the chip, each image checked bit-exactly against the integer reference).
# Extra arguments go to run-cnn, e.g. ./scripts/demo.sh --images 10000 --quiet
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${TPU_BUILD_DIR:-$root/build}"
"$build/tools/tpusim/tpusim" run-cnn "$@"
