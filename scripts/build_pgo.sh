#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds tpusim for long runs: a profile-guided (g++ -fprofile-use) Verilated core without the
# RTL's assertions (-DTPU_SIM_ASSERT=OFF; pass -DTPU_SIM_ASSERT=ON to keep them) and without VCD
# tracing (-DTPU_SIM_TRACE=OFF: --vcd is refused; pass -DTPU_SIM_TRACE=ON to keep it), cycle for
# cycle the same chip. docs/performance.md ("Speed-up") has what each step gains.
#
#   scripts/build_pgo.sh [--build DIR] [--jobs J] [CMAKE_ARGS...]
#
# 1. configures DIR (default build-pgo/) with -DTPU_SIM_PGO=generate and builds tpusim for every
#    N of TPU_SIM_N_LIST (instrumented: about 1.6x slower at N = 16);
# 2. trains: each tpusim[_n<N>] runs the bundled CNNs (fashion_cnn, resnet, mobilenet,
#    squeezenet) on a few Fashion-MNIST images, which exercises every unit of the chip;
# 3. reconfigures DIR with -DTPU_SIM_PGO=use and rebuilds: the Verilated models are compiled
#    with the profile (DIR/pgo), everything else is unchanged.
# The tests are not built (TPU_BUILD_TESTS=OFF); pass -DTPU_SIM_N_LIST=... to choose the chips.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-pgo"
jobs="$(nproc)"
cmake_args=()
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "build_pgo.sh: --jobs must be a positive number (got '$jobs')" >&2; exit 2; }
build="$(mkdir -p "$build" && cd "$build" && pwd)"
# No compiler cache here: it may hand back an object compiled with another profile (or none).
export CCACHE_DISABLE=1
data="${TPU_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
[[ -d "$data" ]] || { echo "build_pgo.sh: Fashion-MNIST not found in $data (the training runs need it; apt-get install dataset-fashion-mnist or set TPU_FASHION_MNIST_DIR)" >&2; exit 1; }

configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTPU_BUILD_TESTS=OFF \
    -DTPU_SIM_ASSERT=OFF -DTPU_SIM_TRACE=OFF -DTPU_SIM_PGO="$1" -DTPU_SIM_PGO_DIR="$build/pgo" "${cmake_args[@]}" >/dev/null
}

echo "build_pgo.sh: [1/3] instrumented build in $build"
rm -rf "$build/pgo"
configure generate
cmake --build "$build" -j "$jobs" --target tpusim_all_n

echo "build_pgo.sh: [2/3] training runs"
shopt -s nullglob
exes=("$build"/tools/tpusim/tpusim "$build"/tools/tpusim/tpusim_n*)
for exe in "${exes[@]}"; do
  for model in fashion_cnn resnet mobilenet squeezenet; do
    echo "  $(basename "$exe") run-cnn --model models/$model.onnx --images 16 --batch 8"
    "$exe" run-cnn --model "$root/models/$model.onnx" --images 16 --batch 8 --calibration 16 \
      --quiet --no-profile --data "$data" >/dev/null
  done
done
[[ -n "$(find "$build/pgo" -name '*.gcda' -print -quit 2>/dev/null)" ]] ||
  { echo "build_pgo.sh: the training runs wrote no profile to $build/pgo" >&2; exit 1; }

echo "build_pgo.sh: [3/3] optimised build"
configure use
cmake --build "$build" -j "$jobs" --target tpusim_all_n
echo "build_pgo.sh: done: $build/tools/tpusim/tpusim (profile in $build/pgo)"
