#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up, builds and runs the whole default test suite (everything not labelled `slow`), then
# the synthesis test (label `synth`).
# Pass ctest arguments to narrow it, e.g. ./scripts/test.sh -L rtl
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${TPU_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j "${TPU_JOBS:-$(nproc)}" -LE slow "$@"
# The whole suite (no narrowing arguments) also synthesizes the core (label `synth`, slow:
# ctest leaves slow tests out unless TPU_SLOW_TESTS=1, cmake/slow_tests.cmake).
if [ $# -eq 0 ]; then
  TPU_SLOW_TESTS=1 ctest --output-on-failure -L synth
fi
