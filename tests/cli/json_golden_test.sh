#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The exact text of tpusim's JSON (issue 29: "every JSON key and value the CLI prints stays the
# same"): run, matmul, run-cnn (with --report and --timeline), run-onnx, run-topology, their
# --shard files, merge and sweep.csv on small inputs with the model backend (sweep: rtl, its
# only backend), compared byte for byte with tests/cli/golden/ -- key order, integers against
# floats, digits, and the escaping of non-ASCII and control characters in file names. Only the
# wall-time values (which differ run to run) are replaced by "W" before comparing.
#
#   json_golden_test.sh TPUSIM WORKDIR [--update]   (--update rewrites the golden files)
# TPUSIM is the N = 16 chip (the golden figures are N = 16's).
set -euo pipefail
sim="$1" work="$2" update="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
golden="$here/golden"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Wall-time values: JSON keys, and sweep.csv's last column.
mask() {
  sed -E 's/"([a-z_]*(wall|second)[a-z_]*)": [-+0-9.eE]+/"\1": W/g' "$1"
}
check() {  # NAME FILE: FILE (masked) equals golden/NAME
  local name="$1" file="$2"
  [ -s "$file" ] || fail "$file is empty"
  if [ "$update" = "--update" ]; then
    mask "$file" >"$golden/$name"
    echo "updated $name"
    return
  fi
  if ! diff "$golden/$name" <(mask "$file") >diff.txt; then
    cat diff.txt >&2
    fail "$name: output differs from tests/cli/golden/$name"
  fi
  echo "same: $name"
}
# A file name with non-ASCII (UTF-8), a control character, a tab, a quote and a backslash.
odd=$'n\xc3\xa9\x01\t"\\'

cp "$root/firmware/matmul_tile.s" "prog$odd.s"
"$sim" run "prog$odd.s" --backend model --hostmem-in "$here/data/matmul_tile_n16.mem" --json \
  >run.json || fail "run exited $?"
check run.json run.json
"$sim" run "$here/data/dma_outside.s" --backend model --json >run_error.json 2>/dev/null || true
sed -i "s|$here/data/|DATA/|" run_error.json
check run_error.json run_error.json
"$sim" matmul --m 5 --k 7 --n 3 --backend model --json >matmul.json || fail "matmul exited $?"
check matmul.json matmul.json

cp "$root/models/fashion_cnn.onnx" "cnn$odd.onnx"
cnn=(run-cnn --model "cnn$odd.onnx" --backend model --images 6 --batch 2 --calibration 10)
"$sim" "${cnn[@]}" --json --report rep >run_cnn.json 2>/dev/null || fail "run-cnn exited $?"
check run_cnn.json run_cnn.json
check run_cnn_report.json rep/report.json
"$sim" "${cnn[@]}" --json --timeline tl.json >usage_error.json 2>/dev/null && fail "expected exit 2"
check usage_error.json usage_error.json
"$sim" run-cnn --model "cnn$odd.onnx" --images 2 --batch 2 --calibration 10 --timeline tl.json \
  >/dev/null 2>&1 || fail "run-cnn --timeline exited $?"
# The timeline (Chrome trace events) is large: its first and last lines and its digest.
{ head -n 40 tl.json; echo ...; tail -n 20 tl.json; wc -l <tl.json; sha256sum <tl.json; } >tl_short.txt
check run_cnn_timeline.txt tl_short.txt
for i in 0 1; do
  "$sim" "${cnn[@]}" --shard "$i/2" >"cnn_shard$i.json" 2>/dev/null || fail "run-cnn --shard $i/2 exited $?"
  check "run_cnn_shard$i.json" "cnn_shard$i.json"
done
"$sim" merge --json cnn_shard1.json cnn_shard0.json >cnn_merged.json 2>/dev/null || fail "merge exited $?"
check run_cnn_merged.json cnn_merged.json

python3 "$root/tests/scaling/make_onnx_test_dir.py" "$root/models/fashion_cnn.onnx" "t$odd" 3
onnx=(run-onnx --test-dir "t$odd" --backend model)
"$sim" "${onnx[@]}" --json >run_onnx.json 2>/dev/null || fail "run-onnx exited $?"
check run_onnx.json run_onnx.json
for i in 0 1; do
  "$sim" "${onnx[@]}" --shard "$i/2" >"onnx_shard$i.json" 2>/dev/null || fail "run-onnx --shard $i/2 exited $?"
  check "run_onnx_shard$i.json" "onnx_shard$i.json"
done
"$sim" merge --json onnx_shard0.json onnx_shard1.json >onnx_merged.json 2>/dev/null || fail "merge exited $?"
check run_onnx_merged.json onnx_merged.json

# One input, outputs written and compared with expected ones (the first run's).
one=(run-onnx --model "t$odd/model.onnx" --input "t$odd/test_data_set_1/input_0.pb" --backend model)
"$sim" "${one[@]}" --output-dir "exp$odd" >/dev/null 2>&1 || fail "run-onnx --output-dir exited $?"
"$sim" "${one[@]}" --expect "exp$odd" --output-dir "out$odd" --json >run_onnx_one.json 2>/dev/null ||
  fail "run-onnx --expect exited $?"
check run_onnx_one.json run_onnx_one.json

printf 'Layer, M, N, K,\nSame, 20, 17, 33,\nG2, 50, 24, 70,\n' >"gemm$odd.csv"
topo=(run-topology "gemm$odd.csv" --backend model)
"$sim" "${topo[@]}" --json >topology.json 2>/dev/null || fail "run-topology exited $?"
check run_topology.json topology.json
for i in 0 1; do
  "$sim" "${topo[@]}" --shard "$i/2" >"topo_shard$i.json" 2>/dev/null || fail "run-topology --shard $i/2 exited $?"
  check "run_topology_shard$i.json" "topo_shard$i.json"
done
"$sim" merge --json topo_shard0.json topo_shard1.json >topo_merged.json 2>/dev/null || fail "merge exited $?"
check run_topology_merged.json topo_merged.json

"$sim" sweep --n 16 --bandwidth 8 \
  --latency 10 --batch 2 --images 2 --calibration 10 --jobs 1 --out s >/dev/null 2>sweep.err ||
  { cat sweep.err >&2; fail "sweep exited $?"; }
sed -E 's/,[-+0-9.eE]+,$/,W,/' s/sweep.csv >sweep.csv
check sweep.csv sweep.csv
echo "json golden: ok"
