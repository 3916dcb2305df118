#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mutation testing of rtl/ (docs/verification.md "Mutation testing").
#
#   scripts/mutate.sh [--only ID[,ID...]] [--list] [--check] [--report] [--full | --train]
#                     [--no-baseline] [--dir DIR]
#
# The mutants are in scripts/mutants.py: (file, exact original text that must occur exactly once,
# replacement, description). First every selected mutant is checked to still apply to rtl/; if
# one does not (the RTL changed under it), the script stops and names it (exit 2). --check
# stops there. Then, in a scratch copy of the source tree ($TPU_MUT_DIR, default build-mut/:
# src/ and src/build/, configured with -DTPU_SIM_N_LIST=4 and ccache when present), it builds
# only the test programs of the default suite that run the RTL (the block tests, chip, error
# path, random, device and end-to-end tests) and runs them (`ctest -L rtl -LE
# 'slow|lint|synth|cnn|cli'`) on the unmutated RTL (baseline: all must pass), then for each
# mutant: applies it, rebuilds, runs the same tests and records which fail. --full also runs
# the CNN and CLI tests (`-LE 'slow|lint|synth'`, everything built) in src/build-full/,
# configured with the project's default N list (TPU_MUT_FULL_N_LIST, default '16;4'): those
# tests run on the default chip (the first N) and several need N >= 16. --train runs only the
# block tests and the training chip's tests (`ctest -L block`, then `ctest -R '^train_n4[.]'`:
# random_train_chip_test, train_rtl_tests) in src/build-train/ (N = 4, the int8 chip not built, results in
# train-results.tsv): for the mutants of the training units (issue 30), whose rebuild is then
# one chip instead of two. A mutant is `killed`
# when a test fails (an RTL assertion firing counts), `survived` when all pass, `build-failed`
# when it does not build, `timeout` when the tests take longer than TPU_MUT_TIMEOUT seconds
# (default: 4 x the baseline, at least 300) with no test failed so far: not a kill (on a loaded
# machine a mutant's run can just be slow), the score counts it apart, and such a mutant is to
# be rerun with a larger TPU_MUT_TIMEOUT (--only ID). Each test also has a limit of
# TPU_MUT_TEST_TIMEOUT seconds (default 300); a mutant that hangs the chip is killed by the
# tests' own cycle limits (the random and eval-modes tests stop at their first
# hung program) long before that. Results go to <dir>/results.tsv (id, status, tests killing
# it, seconds, description; --full: full-results.tsv), logs to <dir>/[full-]<id>.{build,test}.log,
# and a score table is printed (--report [--full]: only print it). TPU_JOBS sets the build and
# ctest parallelism (default nproc). Exit 0 if no mutant survived or timed out.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${TPU_MUT_DIR:-$root/build-mut}"
jobs="${TPU_JOBS:-$(nproc)}"
only="" baseline=1 full=0 train=0 check_only=0 report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --list) python3 "$root/scripts/mutants.py" list; exit 0 ;;
    --check) check_only=1; shift ;;
    --report) report_only=1; shift ;;
    --full) full=1; shift ;;
    --train) train=1; shift ;;
    --no-baseline) baseline=0; shift ;;
    --dir) dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "mutate.sh: unknown argument '$1' (expected --only, --list, --check, --report, --full, --train, --no-baseline, --dir)" >&2; exit 2 ;;
  esac
done
# The default and the --full run keep their results, baselines and logs apart.
mode=""
[ "$full" = 1 ] && mode="full-"
[ "$train" = 1 ] && mode="train-"
if [ "$full" = 1 ] && [ "$train" = 1 ]; then echo "mutate.sh: --full and --train exclude each other" >&2; exit 2; fi
results="$dir/${mode}results.tsv"
report() {  # the score table of results.tsv; status 0 if no mutant survived or timed out
  echo
  # awk, not `read`: an empty killed_by field must stay a field. Killers are separated by '|'
  # (ctest names of parametrized tests contain spaces).
  tail -n +2 "$results" | sort | awk -F'\t' '
    BEGIN { printf "%-24s %-12s %7s %6s  %s\n", "mutant", "status", "killers", "secs", "first killing test" }
    { delete t  # a survivor has no killers: no stale name from the row before
      n = ($3 == "") ? 0 : split($3, t, "|")
      printf "%-24s %-12s %7d %6s  %s\n", $1, $2, n, $4, (n > 0 ? t[1] : "") }'
  local k t s b o
  k=$(tail -n +2 "$results" | awk -F'\t' '$2 == "killed"' | wc -l)
  t=$(tail -n +2 "$results" | wc -l)
  s=$(tail -n +2 "$results" | awk -F'\t' '$2 == "survived"' | wc -l)
  b=$(tail -n +2 "$results" | awk -F'\t' '$2 == "build-failed"' | wc -l)
  o=$(tail -n +2 "$results" | awk -F'\t' '$2 == "timeout"' | wc -l)
  echo "mutate.sh: score: $k of $t mutants killed, $s survived, $o timed out, $b did not build ($results)"
  if [ "$o" != 0 ]; then
    echo "mutate.sh: a timed-out mutant is not a kill: rerun with a larger TPU_MUT_TIMEOUT" \
         "(seconds for one mutant's tests) and --only $(tail -n +2 "$results" | awk -F'\t' '$2 == "timeout" { print $1 }' | paste -sd, -)"
  fi
  [ "$s" = 0 ] && [ "$o" = 0 ]
}
if [ "$report_only" = 1 ]; then report; exit; fi
if [ -n "$only" ]; then
  IFS=',' read -r -a ids <<< "$only"
else
  mapfile -t ids < <(python3 "$root/scripts/mutants.py" list | cut -f1)
fi
if ! python3 "$root/scripts/mutants.py" check "$root/rtl" "${ids[@]}"; then
  echo "mutate.sh: the mutants above no longer apply to $root/rtl; re-anchor them in scripts/mutants.py" >&2
  exit 2
fi
echo "mutate.sh: ${#ids[@]} mutants apply to $root/rtl"
[ "$check_only" = 1 ] && exit 0

src="$dir/src" build="$dir/src/build"
n_list=4 train_n_list=4
if [ "$full" = 1 ]; then
  # The CNN and CLI tests run on the default chip (the first N), and some need N >= 16: the
  # full run uses the project's default N list, in a build directory of its own.
  build="$dir/src/build-full" n_list="${TPU_MUT_FULL_N_LIST:-16;4}" train_n_list="$n_list"
elif [ "$train" = 1 ]; then
  build="$dir/src/build-train"
fi
mkdir -p "$src"
# The working tree as it is (tracked and new files, not ignored ones). Only files whose
# content differs are copied, with a fresh timestamp, so the scratch build stays incremental;
# files of the copy that the tree no longer has are removed (not the build directory).
(cd "$root" && git ls-files -z --cached --others --exclude-standard) | python3 -c '
import filecmp, os, shutil, sys
root, dst = sys.argv[1], sys.argv[2]
keep = set()
for rel in sys.stdin.read().split("\0"):
    s, d = os.path.join(root, rel), os.path.join(dst, rel)
    if not rel or not os.path.isfile(s) or rel.startswith("build"):
        continue
    keep.add(rel)
    if os.path.isfile(d) and filecmp.cmp(s, d, shallow=False):
        continue
    os.makedirs(os.path.dirname(d), exist_ok=True)
    shutil.copyfile(s, d)
    shutil.copymode(s, d)
for top, dirs, files in os.walk(dst):
    rel_top = os.path.relpath(top, dst)
    if rel_top.split(os.sep)[0].startswith("build"):  # build/, build-full/
        dirs[:] = []
        continue
    for f in files:
        rel = os.path.normpath(os.path.join(rel_top, f))
        if rel not in keep:
            os.remove(os.path.join(top, f))
' "$root" "$src"
restore_rtl() {
  for f in "$root"/rtl/*; do
    cmp -s "$f" "$src/rtl/$(basename "$f")" || cp "$f" "$src/rtl/$(basename "$f")"
  done
}
restore_rtl
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DTPU_SIM_N_LIST=$n_list" \
  "-DTPU_SIM_TRAIN_N_LIST=$train_n_list" "${launcher[@]}" >/dev/null

labels2=()  # a second selection of tests (run after the first), or none
block_targets=(mxu_test_n4 requant_test instr_layout_test assert_test fp_units_test mxu_fp_test_n4
               vpu_test_n4 vpu_test_n4_s2 vpu_test_n4_s4 mxu_path_test_n4 decoder_div_test regs_test
               ici_test_n4_w32 ici_test_n4_w128 vmem_test_s1 vmem_test_s4
               mxu_product_test vdma_rd_test_n4 vdma_wr_test_n4
               dw_test_n4_w1 dw_test_n4_w3 dw_test_n16_w4)
train_targets=(random_train_chip_test_n4 train_rtl_tests_n4)
if [ "$full" = 1 ]; then
  targets=(all)
  labels=(-L rtl -LE 'slow|lint|synth')
elif [ "$train" = 1 ]; then
  targets=("${block_targets[@]}" "${train_targets[@]}")
  labels=(-L block -LE 'slow|lint|synth')
  labels2=(-R '^train_n4[.]' -LE slow)  # the training chip's tests (TEST_PREFIX train_n4.)
else
  # The programs of the tests selected below (ctest -N -L rtl -LE 'slow|lint|synth|cnn|cli').
  targets=("${block_targets[@]}" "${train_targets[@]}"
           tpu_sim_unit_tests
           tpu_sim_chip_tests_n4 random_test_n4 error_paths_test_n4 device_tests_n4
           chip_e2e_test_n4 eval_modes_test_n4 raw_matmul counters_test_n4
           random_dw_chip_test_n16 random_train_test random_dw_test random_pod_chip_test_n4
           pod_mpi_test weight_port_test_n32)
  labels=(-L rtl -LE 'slow|lint|synth|cnn|cli')
fi
# Add the programs the selected tests run, as ctest lists them now (a test of a program not built
# yet is ctest's placeholder <target>_NOT_BUILT; any other names its program in its command),
# so a test added to the suite cannot fall out of this script's build: the lists above are a
# floor (the training chip's tests are selected by name, which placeholders do not carry).
derived_targets() {
  local sel
  for sel in labels labels2; do
    [ "$sel" = labels2 ] && [ "${#labels2[@]}" = 0 ] && continue
    local -n args="$sel"
    (cd "$build" && ctest -N --show-only=json-v1 "${args[@]}" 2>/dev/null) || true
  done | python3 -c '
import json, os, sys, re
known = set(sys.argv[1].split())
found = []
dec = json.JSONDecoder()
text, pos = sys.stdin.read(), 0
while True:
    m = re.compile(r"\S").search(text, pos)
    if not m:
        break
    doc, pos = dec.raw_decode(text, m.start())
    for t in doc.get("tests", []):
        words = [t["name"][: -len("_NOT_BUILT")]] if t["name"].endswith("_NOT_BUILT") else []
        for arg in t.get("command", []):
            words += [os.path.basename(w.strip("\x27\"")) for w in arg.split()]
        found += [w for w in words if w in known and w not in found]
print(" ".join(found))
' "$(cmake --build "$build" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | tr '\n' ' ')"
}
if [ "$full" = 0 ]; then
  for t in $(derived_targets); do
    [[ " ${targets[*]} " == *" $t "* ]] || targets+=("$t")
  done
fi
build_targets() {  # $1 = log
  local t
  for t in "${targets[@]}"; do
    cmake --build "$build" --target "$t" -j "$jobs" >> "$1" 2>&1 || return 1
  done
}
run_tests() {  # $1 = log; prints the failing tests, one per line
  : > "$1"
  local sel
  for sel in labels labels2; do
    [ "$sel" = labels2 ] && [ "${#labels2[@]}" = 0 ] && continue
    local -n args="$sel"
    rm -f "$build/Testing/Temporary/LastTestsFailed.log"
    (cd "$build" && timeout "$limit" ctest -j "$jobs" --timeout "${TPU_MUT_TEST_TIMEOUT:-300}" \
       "${args[@]}" >> "$1" 2>&1) || true
    if [ -f "$build/Testing/Temporary/LastTestsFailed.log" ]; then
      cut -d: -f2- "$build/Testing/Temporary/LastTestsFailed.log"
    fi
  done
}

limit="${TPU_MUT_TIMEOUT:-7200}"
if [ "$baseline" = 1 ]; then
  echo "mutate.sh: baseline build ($build, targets: ${targets[*]})"
  : > "$dir/${mode}baseline.build.log"
  build_targets "$dir/${mode}baseline.build.log" || {
    echo "mutate.sh: the unmutated tree does not build, see $dir/${mode}baseline.build.log" >&2; exit 1; }
  t0=$(date +%s)
  failed="$(run_tests "$dir/${mode}baseline.test.log")"
  secs=$(( $(date +%s) - t0 ))
  total="$(grep -c ' Test *#' "$dir/${mode}baseline.test.log" || true)"
  if [ -n "$failed" ] || ! grep -q "tests passed" "$dir/${mode}baseline.test.log"; then
    echo "mutate.sh: on the unmutated RTL these tests fail (see $dir/${mode}baseline.test.log):" >&2
    echo "$failed" >&2
    if grep -q '_NOT_BUILT' <<< "$failed"; then
      echo "mutate.sh: tests marked _NOT_BUILT run a program missing from this script's" \
           "target list (targets=... above): add it there" >&2
    fi
    exit 1
  fi
  echo "mutate.sh: baseline: $total tests pass in ${secs}s"
  echo "$secs" > "$dir/${mode}baseline.seconds"
fi
base_secs="$(cat "$dir/${mode}baseline.seconds" 2>/dev/null || echo 300)"
limit="${TPU_MUT_TIMEOUT:-$(( base_secs * 4 > 300 ? base_secs * 4 : 300 ))}"

selections=1
[ "${#labels2[@]}" = 0 ] || selections=2
[ -f "$results" ] || printf 'id\tstatus\tkilled_by\tseconds\tdescription\n' > "$results"
for id in "${ids[@]}"; do
  restore_rtl
  python3 "$root/scripts/mutants.py" apply "$src/rtl" "$id"
  desc="$(python3 "$root/scripts/mutants.py" list | awk -F'\t' -v id="$id" '$1 == id { print $3 }')"
  t0=$(date +%s)
  log="$dir/$mode$id"
  : > "$log.build.log"
  if ! build_targets "$log.build.log"; then
    status=build-failed killers=""
  else
    killers="$(run_tests "$log.test.log" | sort | paste -sd '|' -)"
    # One summary line per selection that ran to its end; fewer: ctest was stopped by `timeout`.
    summaries="$(grep -c "tests passed\|tests failed" "$log.test.log" || true)"
    if [ -n "$killers" ]; then
      status=killed
    elif [ "$summaries" -lt "$selections" ]; then
      status=timeout
    else
      status=survived
    fi
  fi
  secs=$(( $(date +%s) - t0 ))
  # Replace an earlier row of this mutant.
  grep -v -P "^\Q$id\E\t" "$results" > "$results.tmp" || true
  printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$status" "$killers" "$secs" "$desc" >> "$results.tmp"
  mv "$results.tmp" "$results"
  echo "mutate.sh: $id: $status ($(tr '|' '\n' <<< "$killers" | grep -c . || true) tests) ${secs}s"
done
restore_rtl

report

