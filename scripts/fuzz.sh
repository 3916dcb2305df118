#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer harnesses (fuzz/, clang, ASan + UBSan) into build-fuzz/
# ($TPU_FUZZ_BUILD_DIR) and runs each for a while, starting from the committed seed corpus.
#
#   scripts/fuzz.sh [--seconds S] [--parallel] [assembler] [binary] [onnx_loader] [tensor_files]
#
# Default: 60 s each, one after the other (--parallel: all at once). New corpus entries go to
# build-fuzz/corpus/<name>/ (not the source tree); a crash leaves build-fuzz/artifacts/<name>/
# crash-* and a non-zero exit. Turn each crash into a regression test (docs/verification.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TPU_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds=60 parallel=0 names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --parallel) parallel=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) names+=("$1"); shift ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=(assembler binary)
cxx="$(command -v clang++ || command -v clang++-14 || true)"
[ -n "$cxx" ] || { echo "fuzz.sh: clang++ is needed (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
onnx=OFF
for name in "${names[@]}"; do case "$name" in onnx_loader|tensor_files) onnx=ON ;; esac; done
cmake -S "$root/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTPU_FUZZ_ONNX=$onnx >/dev/null
cmake --build "$build" -j "${TPU_JOBS:-$(nproc)}" >/dev/null
run() {
  local name="$1"
  mkdir -p "$build/corpus/$name" "$build/artifacts/$name"
  "$build/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$name/" \
    "$build/corpus/$name" "$root/fuzz/corpus/$name" > "$build/$name.log" 2>&1
}
status=0
pids=()
for name in "${names[@]}"; do
  if [ "$parallel" = 1 ]; then run "$name" & pids+=($!); else run "$name" || status=1; fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
for name in "${names[@]}"; do
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/$name.log" | tail -1)"
  crashes="$(ls "$build/artifacts/$name" | wc -l)"
  echo "fuzz_$name: ${seconds} s, ${execs:-?} executions, corpus $(ls "$build/corpus/$name" | wc -l) new inputs, $crashes crash/leak/timeout artifacts"
done
exit $status
