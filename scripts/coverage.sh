#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Verilator line + toggle coverage of rtl/ (docs/verification.md).
#
#   scripts/coverage.sh [--programs P] [--pod-programs Q] [--no-build] [--no-run] [--train-only]
#                       [--no-pod]
#
# Builds the chip with --coverage-line --coverage-toggle into build-cov/ ($TPU_COV_BUILD_DIR),
# the int8 chips of TPU_COV_N_LIST (default '16;4') and the training chips of
# TPU_COV_TRAIN_N_LIST (default the same; VMEM, the float units, the vector unit), runs the rtl
# test suite there (everything labelled rtl except slow) plus P random programs per array size
# on each chip (default 3000; on the training chip P of the default mix and P/4 with a fault in
# every case, then P/4 of the long-transfer mix, --long-mix, seeds from 6,000,000), merges
# every process's coverage with verilator_coverage and
# prints line and toggle coverage per module and the uncovered lines (report.txt in the
# coverage directory, points merged over the parametrizations of a module; annotated sources in
# annotated/), then the totals per parametrization (Verilator's module names, report_per_param.txt).
# Exits 1 if the merged totals are below TPU_COV_MIN_LINE / TPU_COV_MIN_TOGGLE (default 95 / 90).
# --train-only: only the training chips, built with only their test programs (the random
# training programs, the tests named train_n<N>.*: random_train_chip_test, train_rtl_tests,
# tpu_sim_chip_tests_train_n<N> with the register-map walk); the int8
# chip's units are then measured only as far as the training chip uses them.
# The pod (when the build has it: N = 4 among the training chips, TPU_SIM_POD_LINKS > 0) is
# measured as well unless --no-pod: the pod chip alone (pod_n4.*: link instructions as faults)
# and the RTL pod's chips (tpu_pod_rtl_n4: pod.core.*, pod.dist.*, and pod.random_rtl.* with
# Q random link programs per topology, default 25; tpu_pod_rtl_n4_l2, the pod chip's 2 links in
# rings: pod.random_rtl_l2.*, Q per ring as well; with --train-only these are the pod tests
# run, without it every pod test labelled rtl runs with the rtl suite as well).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TPU_COV_BUILD_DIR:-$root/build-cov}"
jobs="${TPU_JOBS:-$(nproc)}"
programs=3000 pod_programs=25 do_build=1 do_run=1 train_only=0 pod=1
while [ $# -gt 0 ]; do
  case "$1" in
    --programs) programs="$2"; shift 2 ;;
    --pod-programs) pod_programs="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-run) do_run=0; shift ;;
    --train-only) train_only=1; shift ;;
    --no-pod) pod=0; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "coverage.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for v in "$programs" "$pod_programs"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "coverage.sh: --programs / --pod-programs want a count (got '$v')" >&2; exit 2; }
done
# The pod is in the build when N = 4 is among the training chips and TPU_SIM_POD_LINKS > 0.
has_pod() {
  local links train
  links="$(sed -n 's/^TPU_SIM_POD_LINKS:STRING=//p' "$build/CMakeCache.txt")"
  train=" $(sed -n 's/^TPU_SIM_TRAIN_N_LIST:STRING=//p' "$build/CMakeCache.txt" | tr ';' ' ') "
  [ "$pod" = 1 ] && [ "${links:-0}" -gt 0 ] && [[ "$train" == *" 4 "* ]]
}
pod_targets=(random_pod_chip_test_n4 core_pod_test pod_dist_test random_pod_rtl_test
             random_pod_rtl_l2_test)
pod_tests='^(pod_n4|pod[.](core|dist|random_rtl|random_rtl_l2))[.]'
if [ "$do_build" = 1 ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # --train-only leaves out the int8 weight port's test chip (configuring Verilates every chip).
  wport=ON
  [ "$train_only" = 1 ] && wport=OFF
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTPU_COVERAGE=ON \
        -DTPU_SIM_WPORT_TEST="$wport" \
        -DTPU_SIM_N_LIST="${TPU_COV_N_LIST:-16;4}" \
        -DTPU_SIM_TRAIN_N_LIST="${TPU_COV_TRAIN_N_LIST-${TPU_COV_N_LIST:-16;4}}" \
        "${launcher[@]}" >/dev/null
  if [ "$train_only" = 1 ]; then
    targets=()
    for n in $(sed -n 's/^TPU_SIM_TRAIN_N_LIST:STRING=//p' "$build/CMakeCache.txt" | tr ';' ' '); do
      targets+=("tpu_random_train_n$n" "random_train_chip_test_n$n" "train_rtl_tests_n$n"
                "tpu_sim_chip_tests_train_n$n")
    done
    has_pod && targets+=("${pod_targets[@]}")
    cmake --build "$build" -j "$jobs" --target "${targets[@]}" >/dev/null
  else
    cmake --build "$build" -j "$jobs" >/dev/null
  fi
fi
cov="$build/coverage"
if [ "$do_run" = 1 ]; then
  rm -rf "$cov"
  mkdir -p "$cov"
  export TPU_COVERAGE_DIR="$cov"
  labels=(-L rtl)
  [ "$train_only" = 1 ] && labels=(-R '^train_n[0-9]+[.]')  # the training chips' tests
  (cd "$build" && ctest "${labels[@]}" -LE slow -j "$jobs" --output-on-failure) || {
    echo "coverage.sh: tests failed (coverage still reported)" >&2; }
  if has_pod; then  # the pod chip alone and the RTL pod (with --train-only not run above)
    pod_run=(-R '^pod[.]random_rtl(_l2)?[.]')
    [ "$train_only" = 1 ] && pod_run=(-R "$pod_tests")
    (cd "$build" && TPU_POD_RANDOM_COUNT="$pod_programs" ctest "${pod_run[@]}" -LE slow \
       -j "$jobs" --output-on-failure) || {
      echo "coverage.sh: pod tests failed (coverage still reported)" >&2; }
  fi
  ns="$(sed -n 's/^TPU_SIM_N_LIST:STRING=//p' "$build/CMakeCache.txt" | tr ';' ' ')"
  [ "$train_only" = 1 ] && ns=""
  pids=()
  for n in $ns; do
    "$build/tests/verif/tpu_random_n$n" run --first 5000000 --count "$programs" --quiet \
      > "$cov/random_n$n.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "coverage.sh: random programs failed, see $cov" >&2; done
  pids=()
  for n in $(sed -n 's/^TPU_SIM_TRAIN_N_LIST:STRING=//p' "$build/CMakeCache.txt" | tr ';' ' '); do
    ( "$build/tests/verif/tpu_random_train_n$n" run --first 5000000 --count "$programs" --quiet \
        > "$cov/random_train_n$n.log" 2>&1 &&
      "$build/tests/verif/tpu_random_train_n$n" run --first 5000000 --count $(( programs / 4 )) \
        --fault-probability 1 --quiet > "$cov/random_train_faults_n$n.log" 2>&1 &&
      "$build/tests/verif/tpu_random_train_n$n" run --long-mix --first 6000000 \
        --count $(( programs / 4 )) --quiet > "$cov/random_train_long_n$n.log" 2>&1 ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p" || echo "coverage.sh: random training programs failed, see $cov" >&2
  done
fi
verilator_coverage -write "$cov/merged.dat" "$cov"/*_*.dat >/dev/null
rm -rf "$cov/annotated"
verilator_coverage -annotate "$cov/annotated" -annotate-min 1 "$cov/merged.dat" >/dev/null 2>&1 || true
python3 "$root/scripts/coverage_report.py" "$cov/merged.dat" --rtl "$root/rtl" --per-parametrization \
  > "$cov/report_per_param.txt" || true
echo "coverage.sh: per parametrization: $(tail -n 1 "$cov/report_per_param.txt")"
python3 "$root/scripts/coverage_report.py" "$cov/merged.dat" --rtl "$root/rtl" \
  --min-line "${TPU_COV_MIN_LINE:-95}" --min-toggle "${TPU_COV_MIN_TOGGLE:-90}" | tee "$cov/report.txt"
