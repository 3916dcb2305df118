#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sharded runs give what one process gives (docs/scaling.md): the same JSON object and the same
# printed lines, byte for byte, but for the wall-time figures (wall_seconds,
# wall_seconds_per_image, sim_cycles_per_second, the "wall time:" line).
#
#   scaling_test.sh CASE TPUSIM WORKDIR [TPU_RANDOM | MODEL | BUILD_DIR N]
# CASE: jobs | jobs_text | shard_merge | report_timeline | mpi | merge_errors |
#       random_shard (TPU_RANDOM) |
#       regress_mpi (BUILD_DIR N: scripts/regress.sh --mpirun) | topology_mpi (FILE.csv) |
#       onnx_jobs | onnx_shard_merge | onnx_mpi (MODEL: the .onnx model for run-onnx --test-dir)
set -euo pipefail
case_="$1" sim="$2" work="$3" random="${4:-}" model="${4:-}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work"
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
strip_wall() {  # and run-onnx's "result: PASS (wall time 0.54 s)" without its time
  grep -v -E '"(wall_seconds|wall_seconds_per_image|sim_cycles_per_second)"|^wall time: ' "$1" |
    sed -E 's/\(wall time [0-9.]+ s\)$/(wall time)/'
}
same() {  # A B: equal but for wall-time lines, and not trivially empty
  [ -s "$1" ] || fail "$1 is empty"
  if ! diff <(strip_wall "$1") <(strip_wall "$2") >diff.txt; then
    cat diff.txt >&2
    fail "$2 differs from the one-process $1 (beyond wall-time fields)"
  fi
  [ "$(strip_wall "$1" | wc -l)" -gt 10 ] || fail "$1 has too few lines to compare"
  echo "same: $1 $2"
}
# 28 images in batches of 8: 4 batches (the last of 4 images); 3 shards get 2, 1, 1 batches.
run=(run-cnn --images 28 --offset 50 --batch 8 --calibration 50)

case "$case_" in
  jobs)
    "$sim" "${run[@]}" --json >one.json 2>/dev/null || fail "one process exited $?"
    "$sim" "${run[@]}" --json --jobs 2 >jobs2.json 2>/dev/null || fail "--jobs 2 exited $?"
    # more processes than batches: the extra shards have nothing to do
    "$sim" "${run[@]}" --json --jobs 6 >jobs6.json 2>/dev/null || fail "--jobs 6 exited $?"
    same one.json jobs2.json
    same one.json jobs6.json
    grep -q '"matches_golden": true' one.json || fail "one.json: not bit-exact"
    grep -q '"layers": \[$' one.json || fail "one.json: no per-layer profile to compare"
    ;;
  jobs_text)  # the printed lines, per-image lines with --top-k included
    "$sim" "${run[@]}" --top-k 3 >one.txt 2>/dev/null || fail "one process exited $?"
    "$sim" "${run[@]}" --top-k 3 --jobs 2 >jobs2.txt 2>/dev/null || fail "--jobs 2 exited $?"
    same one.txt jobs2.txt
    [ "$(grep -c '^  #' jobs2.txt)" -eq 28 ] || fail "jobs2.txt: expected 28 per-image lines"
    ;;
  shard_merge)
    "$sim" "${run[@]}" --json >one.json 2>/dev/null || fail "one process exited $?"
    "$sim" "${run[@]}" >one.txt 2>/dev/null || fail "one process exited $?"
    for i in 0 1 2; do
      "$sim" "${run[@]}" --shard "$i/3" >"shard$i.json" 2>/dev/null || fail "--shard $i/3 exited $?"
    done
    "$sim" merge --json shard2.json shard0.json shard1.json >merged.json || fail "merge exited $?"
    "$sim" merge shard0.json shard1.json shard2.json >merged.txt || fail "merge exited $?"
    same one.json merged.json
    same one.txt merged.txt
    ;;
  report_timeline)  # --report DIR and --timeline F: one process, --jobs 2, --shard + merge
    # Each run in its own directory with the same relative paths: the printed lines name them.
    mkdir -p one jobs2 shards
    for d in one jobs2 shards; do rm -rf "$d/rep" "$d/tl.json"; done
    (cd one && "$sim" "${run[@]}" --report rep --timeline tl.json >out.txt 2>/dev/null) ||
      fail "one process exited $?"
    (cd jobs2 && "$sim" "${run[@]}" --report rep --timeline tl.json --jobs 2 >out.txt 2>/dev/null) ||
      fail "--jobs 2 exited $?"
    (cd shards && for i in 0 1 2; do
       "$sim" "${run[@]}" --shard "$i/3" --timeline tl.json >"s$i.json" 2>/dev/null || exit 1
     done && "$sim" merge --report rep s2.json s0.json s1.json >out.txt) ||
      fail "--shard I/3 + merge --report exited $?"
    for d in jobs2 shards; do
      same one/out.txt "$d/out.txt"
      same one/rep/report.json "$d/rep/report.json"
      for f in rep/index.html rep/utilization.svg rep/energy.svg tl.json; do
        [ -s "one/$f" ] || fail "one/$f is empty"
        cmp -s "one/$f" "$d/$f" || fail "$d/$f differs from one/$f"
      done
    done
    grep -q '^timeline: tl.json' one/out.txt || fail "one/out.txt: expected the timeline line"
    ;;
  mpi)
    command -v mpirun >/dev/null || fail "mpirun not found (scripts/setup.sh installs openmpi-bin)"
    "$sim" "${run[@]}" --json >one.json 2>/dev/null || fail "one process exited $?"
    mpirun --allow-run-as-root --oversubscribe -np 2 "$sim" "${run[@]}" --json >np2.json \
      2>mpi.err || { cat mpi.err >&2; fail "mpirun -np 2 exited $?"; }
    same one.json np2.json
    mpirun --allow-run-as-root --oversubscribe -np 2 "$sim" "${run[@]}" >np2.txt 2>mpi.err \
      || { cat mpi.err >&2; fail "mpirun -np 2 exited $?"; }
    "$sim" "${run[@]}" >one.txt 2>/dev/null
    same one.txt np2.txt
    ;;
  onnx_jobs | onnx_shard_merge | onnx_mpi)  # run-onnx: 5 data sets of 2..4 images
    # The model is MODEL (4th argument); the data sets are written by make_onnx_test_dir.py.
    python3 "$here/make_onnx_test_dir.py" "$model" t 5
    onnx=(run-onnx --test-dir t)
    "$sim" "${onnx[@]}" --json >one.json 2>/dev/null || fail "one process exited $?"
    "$sim" "${onnx[@]}" >one.txt 2>/dev/null || fail "one process exited $?"
    grep -q '"data_sets": 5,' one.json || fail "one.json: expected 5 data sets"
    grep -q '"matches_reference": true' one.json || fail "one.json: not bit-exact"
    case "$case_" in
      onnx_jobs)
        "$sim" "${onnx[@]}" --json --jobs 2 >jobs2.json 2>/dev/null || fail "--jobs 2 exited $?"
        "$sim" "${onnx[@]}" --jobs 3 >jobs3.txt 2>/dev/null || fail "--jobs 3 exited $?"
        "$sim" "${onnx[@]}" --json --jobs 7 >jobs7.json 2>/dev/null || fail "--jobs 7 exited $?"
        same one.json jobs2.json
        same one.txt jobs3.txt
        same one.json jobs7.json
        ;;
      onnx_shard_merge)
        for i in 0 1 2; do
          "$sim" "${onnx[@]}" --shard "$i/3" >"shard$i.json" 2>/dev/null || fail "--shard $i/3 exited $?"
        done
        "$sim" merge --json shard1.json shard2.json shard0.json >merged.json || fail "merge exited $?"
        "$sim" merge shard0.json shard1.json shard2.json >merged.txt || fail "merge exited $?"
        same one.json merged.json
        same one.txt merged.txt
        if "$sim" merge shard0.json shard2.json >out.txt 2>err.txt; then fail "merge of 2 of 3 shards succeeded"; fi
        grep -q "shard 1/3 is missing" err.txt || { cat err.txt >&2; fail "expected 'shard 1/3 is missing'"; }
        ;;
      onnx_mpi)
        command -v mpirun >/dev/null || fail "mpirun not found (scripts/setup.sh installs openmpi-bin)"
        mpirun --allow-run-as-root --oversubscribe -np 2 "$sim" "${onnx[@]}" --json >np2.json \
          2>mpi.err || { cat mpi.err >&2; fail "mpirun -np 2 exited $?"; }
        same one.json np2.json
        mpirun --allow-run-as-root --oversubscribe -np 2 "$sim" "${onnx[@]}" >np2.txt 2>mpi.err \
          || { cat mpi.err >&2; fail "mpirun -np 2 exited $?"; }
        same one.txt np2.txt
        ;;
    esac
    ;;
  merge_errors)
    for i in 0 1 2; do "$sim" "${run[@]}" --shard "$i/3" >"shard$i.json" 2>/dev/null; done
    expect_error() {  # regex command...
      local re="$1"; shift
      if "$@" >out.txt 2>err.txt; then fail "'$*' succeeded; expected an error"; fi
      grep -q -E "$re" err.txt || { cat err.txt >&2; fail "'$*': expected an error matching $re"; }
    }
    expect_error "shard 1/3 is missing" "$sim" merge shard0.json shard2.json
    expect_error "shard 0/3 is also in shard0.json" "$sim" merge shard0.json shard0.json shard1.json shard2.json
    echo '{"images": 3}' >bogus.json
    expect_error "bogus.json: .*not a run-cnn shard" "$sim" merge shard0.json bogus.json
    head -c 200 shard1.json >cut.json
    expect_error "cut.json: JSON error at byte" "$sim" merge shard0.json cut.json shard2.json
    "$sim" run-cnn --images 28 --offset 51 --batch 8 --calibration 50 --shard 1/3 >other.json 2>/dev/null
    expect_error "another run" "$sim" merge shard0.json other.json shard2.json
    expect_error "expected I/K" "$sim" "${run[@]}" --shard 3
    expect_error "0 <= I < K" "$sim" "${run[@]}" --shard 3/3
    expect_error "exclude each other" "$sim" "${run[@]}" --shard 0/2 --jobs 2
    expect_error "needs one process" "$sim" "${run[@]}" --jobs 2 --vcd x.vcd
    expect_error "tpusim merge --report" "$sim" "${run[@]}" --shard 0/2 --report rep
    echo "merge errors: ok"
    ;;
  random_shard)  # the seeds of 3 shards are those of one run, each once
    "$random" run --first 5 --count 10 --quiet >one.txt || fail "tpu_random exited $?"
    grep -q "seeds 5..14:" one.txt || fail "one.txt: expected seeds 5..14"
    for i in 0 1 2; do "$random" run --first 5 --count 10 --shard "$i/3" --quiet >"r$i.txt"; done
    grep -q "seeds 5..8:" r0.txt || fail "r0.txt: expected seeds 5..8: $(cat r0.txt)"
    grep -q "seeds 9..11:" r1.txt || fail "r1.txt: expected seeds 9..11: $(cat r1.txt)"
    grep -q "seeds 12..14:" r2.txt || fail "r2.txt: expected seeds 12..14: $(cat r2.txt)"
    total=$(cat r0.txt r1.txt r2.txt | awk '/^[0-9]+ passed/ { t += $1 } END { print t + 0 }')
    [ "$total" -eq 10 ] || fail "the shards passed $total programs, expected 10"
    if "$random" run --count 10 --shard 2/2 >/dev/null 2>err.txt; then fail "--shard 2/2 accepted"; fi
    grep -q "0 <= I < K" err.txt || fail "--shard 2/2: expected a range error"
    ;;
  topology_mpi)  # run-topology under mpirun -np 2 (4th argument: the topology file)
    command -v mpirun >/dev/null || fail "mpirun not found (scripts/setup.sh installs openmpi-bin)"
    "$sim" run-topology "$4" --json >one.json 2>/dev/null || fail "one process exited $?"
    mpirun --allow-run-as-root --oversubscribe -np 2 "$sim" run-topology "$4" --json >np2.json \
      2>mpi.err || { cat mpi.err >&2; fail "mpirun -np 2 exited $?"; }
    sw() { sed -E 's/"wall_seconds": [0-9.e+-]+/"wall_seconds"/g' "$1"; }
    diff <(sw one.json) <(sw np2.json) >&2 || fail "np2.json differs from one.json"
    grep -q '"layers_run": 5,' one.json || fail "one.json: expected 5 layers run"
    # The printed table too (its total line holds the wall time).
    "$sim" run-topology "$4" >one.txt 2>/dev/null || fail "one process exited $?"
    mpirun --allow-run-as-root --oversubscribe -np 2 "$sim" run-topology "$4" >np2.txt \
      2>mpi.err || { cat mpi.err >&2; fail "mpirun -np 2 exited $?"; }
    tw() { sed -E 's/wall time [0-9.]+ s$/wall time/' "$1"; }
    diff <(tw one.txt) <(tw np2.txt) >&2 || fail "np2.txt differs from one.txt"
    [ "$(wc -l <one.txt)" -ge 8 ] || fail "one.txt: expected the header, 5 rows and the total"
    ;;
  regress_mpi)  # scripts/regress.sh --mpirun: the ranks run the seeds of --jobs 2, each once
    # 4th argument: the build directory; 5th: the array size.
    command -v mpirun >/dev/null || fail "mpirun not found (scripts/setup.sh installs openmpi-bin)"
    build="$4" n="$5"
    TPU_BUILD_DIR="$build" "$here/../../scripts/regress.sh" --programs 30 --first 7 --n "$n" \
      --mpirun "mpirun --allow-run-as-root --oversubscribe -np 2" >mpi.txt 2>&1 \
      || { cat mpi.txt >&2; fail "regress.sh --mpirun exited $?"; }
    grep -q "N = $n: seeds 7..36: 30 passed, 0 failed$" mpi.txt || { cat mpi.txt >&2; fail "mpi.txt: expected 30 passed"; }
    grep -q "seeds 7..21:" "$build/regress/n${n}_shard0.log" || fail "rank 0: expected seeds 7..21"
    grep -q "seeds 22..36:" "$build/regress/n${n}_shard1.log" || fail "rank 1: expected seeds 22..36"
    grep -q "with the ranks of mpirun" mpi.txt || fail "mpi.txt: expected the mpirun summary"
    ;;
  *) fail "unknown case $case_" ;;
esac
echo "PASS: $case_"
