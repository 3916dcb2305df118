#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# SIGINT / SIGTERM during a long `tpusim run` (docs/tpusim.md "Interrupting a run"): one line on
# stderr saying what was interrupted and how far it got, exit code 130 / 143, with --json one
# JSON object with "interrupted": true, and no output file destroyed or left half-written.
#   interrupt_test.sh TPUSIM WORKDIR
set -u
tpusim=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# About 8 M cycles of activates (several seconds on the rtl backend).
i=0
while [ $i -lt 4000 ]; do echo "activate acc=0 ub=0 width=1 height=2048"; i=$((i + 1)); done > long.s
echo halt >> long.s
printf 'OLD VCD\n' > wave.vcd
printf 'OLD IMAGE\n' > out.mem
printf '@0x10000 size=16 name=buf\n' > in.mem

for sig in INT TERM; do
  # env --default-signal: a background job of a script starts with SIGINT ignored.
  env --default-signal=INT "$tpusim" run long.s --hostmem-in in.mem --hostmem-out out.mem --vcd wave.vcd --json > out.txt 2> err.txt &
  pid=$!
  sleep 2
  kill -$sig $pid
  wait $pid
  rc=$?
  want=130; [ $sig = TERM ] && want=143
  echo "SIG$sig: exit code $rc"; cat err.txt; cat out.txt
  [ $rc -eq $want ] || fail "SIG$sig: exit code $rc, expected $want"
  [ "$(wc -l < err.txt)" -eq 1 ] || fail "SIG$sig: stderr is not one line"
  grep -q "^tpusim run: interrupted by SIG$sig while running long.s (4001 instructions) on the rtl backend, [0-9.]* s elapsed; exit code $want\$" err.txt ||
    fail "SIG$sig: no one-line message saying what was interrupted"
  grep -q '"interrupted": true' out.txt || fail "SIG$sig: no \"interrupted\": true in the JSON"
  grep -q "\"signal\": \"SIG$sig\"" out.txt || fail "SIG$sig: the JSON does not name the signal"
  [ "$(grep -c '^{' out.txt)" -eq 1 ] && [ "$(tail -n 1 out.txt)" = "}" ] || fail "SIG$sig: stdout is not one JSON object"
  [ "$(cat wave.vcd)" = "OLD VCD" ] || fail "SIG$sig: --vcd wave.vcd was changed"
  [ "$(cat out.mem)" = "OLD IMAGE" ] || fail "SIG$sig: --hostmem-out out.mem was changed"
  ls -a | grep -q '^\..*tmp' && fail "SIG$sig: temporary files left behind: $(ls -a)"
done
echo "ok"
