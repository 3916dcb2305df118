#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the chip at other array sizes and runs the MXU block tests and the whole-chip tests
# against the golden model there. Default: N = 8 and 32 (the default suite covers 4 and 16).
#   ./scripts/test_sizes.sh            # N = 8 and 32
#   ./scripts/test_sizes.sh "64"       # any list of powers of two
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sizes="${1:-8;32}"
build="${TPU_BUILD_DIR:-$root/build-sizes}"
"$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTPU_SIM_N_LIST="$sizes"
targets=()
for n in ${sizes//;/ }; do targets+=(mxu_test_n"$n" chip_e2e_test_n"$n"); done
cmake --build "$build" -j "${TPU_JOBS:-$(nproc)}" --target "${targets[@]}"
cd "$build"
ctest --output-on-failure -j "${TPU_JOBS:-$(nproc)}" -R "Mxu|ChipFixture"
