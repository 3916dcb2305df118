#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Constrained-random differential regression, chip vs golden model (docs/verification.md).
#
#   scripts/regress.sh --programs 100000 [--n 4|16|all] [--jobs J] [--first S] [--max-length L]
#                      [--mpirun "mpirun -np K --hostfile H"] [--train] [--fault-probability P]
#
# --train: the training chip (tpu_random_train_n<N>: VMEM and the training instructions of
# issue 30) in place of the int8 chip (tpu_random_n<N>).
# Seeds first .. first+programs-1 are split into J contiguous shards per array size, each run
# by its own tpu_random_n<N> process (one simulated chip per process); shards run J at a time.
# With --mpirun LAUNCHER, every rank of `LAUNCHER` (mpirun, or srun inside an allocation) runs
# shard rank/size of the seeds; the logs (in the build directory: it must be shared) are summed
# here as for --jobs (docs/scaling.md).
# Prints every mismatch (seed, first differing instruction, replay command) and a summary (each
# shard's log has a progress line every 1000 programs);
# exits 1 if any program mismatched. Logs: $build/regress/. Build dir: $TPU_BUILD_DIR or build/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TPU_BUILD_DIR:-$root/build}"
programs=1000 ns="all" jobs="$(nproc)" first=0 extra=() mpirun="" tool=tpu_random_n
while [ $# -gt 0 ]; do
  case "$1" in
    --programs) programs="$2"; shift 2 ;;
    --n) ns="$2"; shift 2 ;;
    --jobs|-j) jobs="$2"; shift 2 ;;
    --first) first="$2"; shift 2 ;;
    --mpirun) mpirun="$2"; shift 2 ;;
    --train) tool=tpu_random_train_n; shift ;;
    --max-length|--min-length|--fault-probability) extra+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "regress.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$ns" = all ]; then
  ns="$(sed -n 's/^TPU_SIM_N_LIST:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null | tr ';' ' ')"
  [ -n "$ns" ] || ns="16 4"
fi
targets=()
for n in $ns; do targets+=("$tool$n"); done
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >/dev/null

logs="$build/regress"; [ "$tool" = tpu_random_n ] || logs="$build/regress/train"
mkdir -p "$logs"
for n in $ns; do rm -f "$logs"/n${n}_shard*.log; done
start=$(date +%s)
pids=()
run_shard() {  # n shard: shard i/jobs of the seeds (tpu::shard_range, driver/shard.h)
  "$build/tests/verif/$tool$1" run --first "$first" --count "$programs" \
    --shard "$2/$jobs" "${extra[@]}" >"$logs/n$1_shard$2.log" 2>&1
}
status=0
if [ -n "$mpirun" ]; then
  # Each rank: its rank and the world size from the launcher's environment (Open MPI, PMIx,
  # SLURM), shard rank/size of the seeds, its own log.
  for n in $ns; do
    # shellcheck disable=SC2016,SC2086
    $mpirun sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:?no MPI or SLURM rank}}}
      k=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:?no MPI or SLURM world size}}
      b="$1"; l="$2"; shift 2
      exec "$b" run --shard "$r/$k" --quiet "$@" >"$l$r.log" 2>&1' sh \
      "$build/tests/verif/$tool$n" "$logs/n${n}_shard" --first "$first" \
      --count "$programs" "${extra[@]}" || status=1
  done
  how="the ranks of $mpirun"
else
  for n in $ns; do
    for ((i = 0; i < jobs; i++)); do
      # at most $jobs shards at once
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
      run_shard "$n" "$i" &
      pids+=($!)
    done
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
fi
elapsed=$(( $(date +%s) - start ))

total_pass=0 total_fail=0
for n in $ns; do
  pass=0 fail=0
  for f in "$logs"/n${n}_shard*.log; do
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$f" | tail -1 || true)"
    if [ -z "$line" ]; then echo "regress.sh: $f has no summary (crashed?):" >&2; tail -5 "$f" >&2; status=1; continue; fi
    pass=$(( pass + ${line%% *} )); f2=${line#*, }; fail=$(( fail + ${f2%% *} ))
    grep -A4 '^MISMATCH' "$f" || true
  done
  echo "${tool%_n} N = $n: seeds $first..$(( first + programs - 1 )): $pass passed, $fail failed"
  total_pass=$(( total_pass + pass )); total_fail=$(( total_fail + fail ))
done
echo "regress.sh: ${elapsed} s with ${how:-$jobs jobs}"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$status" -eq 0 ]
