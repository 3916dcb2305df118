#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/mutate.sh --report: the score counts killed, survived and timed-out mutants apart and
# exits 0 only when every mutant was killed (a timeout is not a kill: docs/verification.md
# "Mutation testing"). Runs on hand-written results tables in its own temp directory.
set -euo pipefail
mutate="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
header=$'id\tstatus\tkilled_by\tseconds\tdescription'
fail() { echo "mutate_report_test: $*" >&2; exit 1; }
# $1 = expected exit status, $2 = expected score line fragment, rest = table rows
check() {
  local want_rc="$1" want="$2" rc=0 out
  shift 2
  printf '%s\n' "$header" "$@" > "$tmp/results.tsv"
  out="$("$mutate" --report --dir "$tmp" 2>&1)" || rc=$?
  [ "$rc" = "$want_rc" ] || fail "exit $rc, expected $want_rc for: $*"$'\n'"$out"
  grep -qF "$want" <<< "$out" || fail "no '$want' in:"$'\n'"$out"
}
check 0 "score: 2 of 2 mutants killed, 0 survived, 0 timed out, 0 did not build" \
  $'a\tkilled\tt1|t2\t10\tbug a' $'b\tkilled\tt3\t5\tbug b'
check 1 "score: 1 of 2 mutants killed, 0 survived, 1 timed out, 0 did not build" \
  $'a\tkilled\tt1\t10\tbug a' $'b\ttimeout\t\t1480\tbug b'
check 1 "and --only b,c" \
  $'a\tkilled\tt1\t10\tbug a' $'b\ttimeout\t\t1480\tbug b' $'c\ttimeout\t\t1490\tbug c'
check 1 "score: 1 of 2 mutants killed, 1 survived, 0 timed out, 0 did not build" \
  $'a\tkilled\tt1\t10\tbug a' $'b\tsurvived\t\t99\tbug b'
check 0 "score: 1 of 2 mutants killed, 0 survived, 0 timed out, 1 did not build" \
  $'a\tkilled\tt1\t10\tbug a' $'b\tbuild-failed\t\t3\tbug b'
echo "mutate_report_test: passed"
