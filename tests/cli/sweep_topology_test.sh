#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tpusim run-topology and tpusim sweep (docs/tpusim.md), checked against independent figures:
# SCALE-Sim's WS formula and the MAC count computed here, a GEMM row against the same layer
# written as a convolution, sweep rows against direct run-cnn runs of the same configuration.
#
#   sweep_topology_test.sh CASE TPUSIM WORKDIR [N0 [TPUSIM2 N2]]
# CASE: topology | topology_shards | topology_errors | sweep | sweep_errors. sweep: N0 is TPUSIM's array size
# (TPU_DEFAULT_N), TPUSIM2 (optional) the tpusim_n<N2> of another size.
set -euo pipefail
case_="$1" sim="$2" work="$3" n0="${4:-16}" sim2="${5:-}" n2="${6:-}"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_error() {  # code regex command...: exits with `code`, stderr matches regex
  local code="$1" re="$2"; shift 2
  local got=0
  "$@" >out.txt 2>err.txt || got=$?
  [ "$got" -eq "$code" ] || { cat err.txt >&2; fail "'$*' exited $got, expected $code"; }
  grep -q -E -- "$re" err.txt || { cat err.txt >&2; fail "'$*': expected an error matching $re"; }
}

case "$case_" in
  topology)
    cat >conv.csv <<'EOF'
Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
Conv1, 16, 16, 3, 3, 3, 16, 1,
Conv2, 14, 14, 3, 3, 16, 40, 2,
PW, 8, 8, 1, 1, 48, 64, 1,
FC, 1, 1, 1, 1, 300, 10, 1,
Wide, 3, 4096, 3, 3, 1024, 16, 1,
Same, 20, 1, 1, 1, 33, 17, 1,
EOF
    printf 'Layer, M, N, K,\nSame, 20, 17, 33,\nG2, 50, 24, 70,\n' >gemm.csv
    "$sim" run-topology conv.csv --json >conv.json 2>conv.err || fail "run-topology conv.csv exited $?"
    "$sim" run-topology gemm.csv --json >gemm.json 2>gemm.err || fail "run-topology gemm.csv exited $?"
    "$sim" run-topology conv.csv --batch 2 >conv2.txt || fail "run-topology --batch 2 exited $?"
    python3 - <<'EOF' || fail "run-topology figures differ from the independent ones"
import json, math
conv, gemm = json.load(open("conv.json")), json.load(open("gemm.json"))
n = conv["chip_n"]
assert conv["format"] == "conv" and gemm["format"] == "gemm"
rows = [l.split(",") for l in open("conv.csv").read().splitlines()[1:]]
assert len(conv["layers"]) == len(rows) == 6
for r, l in zip(rows, conv["layers"]):
    h, w, fh, fw, c, k, s = (int(x) for x in r[1:8])
    eh, ew = (h - fh) // s + 1, (w - fw) // s + 1
    macs = eh * ew * fh * fw * c * k
    ss = math.ceil(fh * fw * c / n) * math.ceil(k / n) * (3 * n + eh * ew - 2) - 1
    assert l["macs_per_image"] == macs, (l["name"], l["macs_per_image"], macs)
    assert abs(l["scalesim_ws_cycles_per_image"] - ss) < 1e-6 * ss, (l["name"], ss)
    if l["name"] == "Wide":  # one line of 1024x4096 bytes does not fit the unified buffer
        assert not l["ran"] and l["status"].startswith("not run: "), l
        continue
    assert l["ran"] and l["matches_reference"], l
    # the chip cannot beat MACs / N^2 cycles; utilization is MACs / (cycles N^2)
    assert l["cycles"] >= macs / n / n, l
    assert abs(l["mxu_utilization"] - macs / (l["cycles"] * n * n)) < 1e-4, l
    assert l["dma_in_bytes"] >= fh * fw * c * k + h * w * c, l  # weights and input read
    assert l["dma_out_bytes"] >= eh * ew * k, l                  # output written
assert conv["layers_run"] == 5 and conv["layers_not_run"] == 1 and conv["pass"]
# GEMM M, N, K is the 1x1 convolution of M pixels with K channels and N filters: the same
# layer (other random values; the chip's timing does not depend on them), the same cycles.
same_c = [l for l in conv["layers"] if l["name"] == "Same"][0]
same_g = gemm["layers"][0]
assert same_g["macs_per_image"] == 20 * 17 * 33 == same_c["macs_per_image"]
assert same_g["scalesim_ws_cycles_per_image"] == same_c["scalesim_ws_cycles_per_image"]
assert same_g["cycles"] == same_c["cycles"], (same_g, same_c)
assert gemm["layers"][1]["macs_per_image"] == 50 * 24 * 70 and gemm["pass"]
print("topology figures: ok")
EOF
    grep -q "^Conv1 .* yes$" conv2.txt || fail "conv2.txt: expected Conv1 bit-exact with --batch 2"
    grep -q "^total: 5 of 6 layers run (1 not run, 0 failed)" conv2.txt || fail "conv2.txt: bad total"
    # Layer cycles do not depend on which layers ran before (each starts from an empty arena).
    "$sim" run-topology conv.csv --layers 2:3 --json >one.json 2>/dev/null
    python3 -c "
import json
a, b = json.load(open('conv.json'))['layers'][2], json.load(open('one.json'))['layers'][0]
assert a['name'] == b['name'] == 'PW' and a['cycles'] == b['cycles'], (a, b)
" || fail "layer PW alone differs from PW after two other layers"
    # ResNet-50 in SCALE-Sim's format parses: 54 layers, SCALE-Sim figures for all.
    "$sim" run-topology "$here/data/topology_resnet50.csv" --layers 53:54 --json >r50.json 2>r50.err \
      || fail "run-topology topology_resnet50.csv exited $?"
    grep -q "54 layers (convolutions)" r50.err || fail "r50.err: expected 54 layers"
    grep -q '"name": "FC1000", .*"matches_reference": true' r50.json || fail "r50.json: FC1000 not bit-exact"
    ;;
  topology_shards)  # --jobs, --shard + merge: the output of one process but the wall times
    t="$here/data/topology_gemm.csv"
    sw() { sed -E 's/wall time [0-9.]+ s/wall time/; s/"wall_seconds": [0-9.e+-]+/"wall_seconds"/g' "$1"; }
    same() { diff <(sw "$1") <(sw "$2") >&2 || fail "$2 differs from the one-process $1"; }
    "$sim" run-topology "$t" >one.txt || fail "one process exited $?"
    "$sim" run-topology "$t" --json >one.json 2>/dev/null || fail "one process exited $?"
    "$sim" run-topology "$t" --jobs 2 >j2.txt || fail "--jobs 2 exited $?"
    "$sim" run-topology "$t" --jobs 7 --json >j7.json 2>/dev/null || fail "--jobs 7 exited $?"
    for i in 0 1 2; do "$sim" run-topology "$t" --shard "$i/3" >"s$i.json" || fail "--shard $i/3 exited $?"; done
    "$sim" merge s2.json s0.json s1.json >m.txt || fail "merge exited $?"
    "$sim" merge --json s1.json s2.json s0.json >m.json 2>/dev/null || fail "merge --json exited $?"
    same one.txt j2.txt
    same one.txt m.txt
    same one.json j7.json
    same one.json m.json
    grep -q "^total: 5 of 5 layers run" one.txt || fail "one.txt: expected 5 layers run"
    grep -c '"matches_reference": true' one.json | grep -q '^5$' || fail "one.json: expected 5 bit-exact layers"
    expect_error 1 "shard 1/3 is missing" "$sim" merge s0.json s2.json
    "$sim" run-topology "$t" --seed 2 --shard 1/3 >other.json
    expect_error 1 "other.json: a shard of another run \(seed 2" "$sim" merge s0.json other.json s2.json
    ;;
  topology_errors)
    printf 'Layer name, IFMAP Height\nA, 3\n' >header.csv
    expect_error 1 "header.csv:1: unknown header" "$sim" run-topology header.csv
    printf 'Layer, M, N, K,\nA, 3, 4,\n' >cols.csv
    expect_error 1 "cols.csv:2: 3 columns, expected 4 \(Layer, M, N, K\)" "$sim" run-topology cols.csv
    printf 'Layer, M, N, K,\nA, 3, x, 4,\n' >num.csv
    expect_error 1 "num.csv:2: column 3 'x' is not a whole number" "$sim" run-topology num.csv
    printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nA, 2, 2, 3, 3, 1, 1, 1,\n' >fit.csv
    expect_error 1 "fit.csv:2: the 3x3 filter is larger than the 2x2 IFMAP" "$sim" run-topology fit.csv
    printf 'Layer, M, N, K,\n' >empty.csv
    expect_error 1 "empty.csv: no layers" "$sim" run-topology empty.csv
    expect_error 1 "missing.csv: cannot open" "$sim" run-topology missing.csv
    printf 'Layer, M, N, K,\nA, 3, 4, 5,\n' >ok.csv
    expect_error 2 "--layers 1:1: expected 0 <= FROM < TO <= 1" "$sim" run-topology ok.csv --layers 1:1
    expect_error 2 "--layers x: expected FROM:TO" "$sim" run-topology ok.csv --layers x
    expect_error 2 "expected the topology file" "$sim" run-topology
    # A row too large to build in memory is refused naming the file, line and layer (it ended
    # in std::bad_alloc): 10^6 channels x 10^6 filters.
    printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nA, 3, 3, 1, 1, 2, 2, 1,\nHuge, 1, 1, 1, 1, 1000000, 1000000, 1,\n' >huge.csv
    expect_error 1 "huge.csv:3: layer 'Huge': its weights .* 1000000000000 is too large" \
      "$sim" run-topology huge.csv --backend model
    printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nBig, 65536, 65536, 1, 1, 1, 1, 1,\n' >bigmap.csv
    expect_error 1 "bigmap.csv:2: layer 'Big': its IFMAP .* is too large" "$sim" run-topology bigmap.csv
    # Memory running out anyway (here: a 400 MB address space for 256 MiB of weights) is a
    # message naming what was being done, never a bare std::bad_alloc.
    printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nBig, 1, 1, 1, 1, 16384, 16384, 1,\n' >oom.csv
    expect_error 1 "error: out of memory \(layer Big of oom.csv\)" \
      sh -c "ulimit -v 400000; exec '$sim' run-topology oom.csv --backend model"
    # --jobs beyond the layers: capped, said on stderr, the output of one process.
    "$sim" run-topology ok.csv --backend model >one.txt 2>/dev/null
    "$sim" run-topology ok.csv --backend model --jobs 6 >j6.txt 2>j6.err || fail "--jobs 6 exited $?"
    grep -q -- "--jobs 6 capped at 1: the run has only 1 layer" j6.err || fail "j6.err: no cap note"
    diff <(grep -v wall one.txt) <(grep -v wall j6.txt) >/dev/null || fail "--jobs 6 differs from one process"
    # Shard limits say what the limit is.
    expect_error 2 "--shard 0/1000000: out of range \(expected I/K with 0 <= I < K <= 65536\)" \
      "$sim" run-topology ok.csv --shard 0/1000000
    # merge: errors name the shard file and the key.
    "$sim" run-topology ok.csv --backend model --shard 0/1 >s0.json
    python3 -c 'import json,sys; d=json.load(open("s0.json")); del d["shard"]["count"]; json.dump(d, open("nokey.json","w"))'
    expect_error 1 "nokey.json: at shard: the key \"count\" is missing" "$sim" merge nokey.json
    # A full disk (stdout on /dev/full) is exit 1, never a silent success.
    expect_error 1 "standard output: write error" sh -c "'$sim' run-topology ok.csv --backend model >/dev/full"
    expect_error 1 "standard output: write error" sh -c "'$sim' merge s0.json >/dev/full"
    expect_error 1 "standard output: write error" sh -c "'$sim' merge --json s0.json >/dev/full"
    ;;
  sweep)
    # N0 (the default chip), and N2 too when its tpusim is given (slower).
    ns=$n0 cfgs=("$n0 $sim 8" "$n0 $sim 32")
    if [ -n "$sim2" ]; then ns=$n0,$n2 cfgs+=("$n2 $sim2 8" "$n2 $sim2 32"); fi
    "$sim" sweep --n $ns --bandwidth 8,32 --latency 10 --batch 2 --images 2 --jobs 2 --out s \
      >sweep.txt 2>sweep.err || { cat sweep.err >&2; fail "sweep exited $?"; }
    [ "$(wc -l <s/sweep.csv)" -eq $((${#cfgs[@]} + 1)) ] || fail "s/sweep.csv: expected a header and ${#cfgs[@]} rows"
    [ ! -e s/sweep_logs ] || fail "s/sweep_logs kept although every run succeeded"
    # Each row against a direct run of its configuration (its own process).
    for cfg in "${cfgs[@]}"; do
      set -- $cfg
      "$2" run-cnn --json --quiet --images 2 --batch 2 --mem-bandwidth "$3" --mem-latency 10 \
        >direct_$1_$3.json 2>/dev/null || fail "direct run N=$1 bandwidth $3 exited $?"
    done
    N0=$n0 N2=$n2 python3 - <<'EOF' || fail "sweep.csv differs from the direct runs"
import csv, json, os
n0, n2 = os.environ["N0"], os.environ["N2"]
rows = list(csv.DictReader(open("s/sweep.csv")))
want = [(n0, "8"), (n0, "32"), (n2, "8"), (n2, "32")]
assert [(r["n"], r["bandwidth_bytes_per_cycle"]) for r in rows] == want[:len(rows)], rows
for r in rows:
    d = json.load(open("direct_%s_%s.json" % (r["n"], r["bandwidth_bytes_per_cycle"])))
    assert d["chip_n"] == int(r["n"])
    assert int(r["cycles_total"]) == d["cycles_total"], (r, d["cycles_total"])
    assert abs(float(r["mxu_utilization"]) - d["mxu_utilization"]) < 1e-5
    assert float(r["dma_in_bytes_per_image"]) == d["dma_bytes_per_image"]["in"]
    assert r["matches_reference"] == "true" and r["error"] == ""
by = {(r["n"], r["bandwidth_bytes_per_cycle"]): int(r["cycles_total"]) for r in rows}
# a slower memory cannot make the run faster
assert by[(n0, "8")] >= by[(n0, "32")], by
assert len(rows) == 2 or by[(n2, "8")] >= by[(n2, "32")], by
print("sweep rows: ok")
EOF
    # Charts: a line per series with a point per x value. Against N: a line per bandwidth (2),
    # points per N; against bandwidth: a line per N, 2 points; DMA: a line per batch (1).
    nn=${#cfgs[@]}; nn=$((nn / 2))
    for spec in "sweep_cycles 2 $nn" "sweep_utilization 2 $nn" "sweep_cycles_bandwidth $nn 2" \
                "sweep_utilization_bandwidth $nn 2" "sweep_dma 1 $nn"; do
      set -- $spec
      python3 -c "
import xml.dom.minidom as m
lines = m.parse('s/$1.svg').getElementsByTagName('polyline')
assert len(lines) == $2, '%d lines, expected $2' % len(lines)
assert all(len(l.getAttribute('points').split()) == $3 for l in lines), 'expected $3 points per line'
" || fail "s/$1.svg: not the expected chart"
    done
    grep -q "configurations: ${#cfgs[@]}, failed or not bit-exact: 0" sweep.txt || fail "sweep.txt: bad summary"
    ;;
  sweep_errors)
    expect_error 2 "--n 3: no chip of N = 3 in this build" "$sim" sweep --n 3
    expect_error 2 "--bandwidth 0,8: 0 is outside 1..4096" "$sim" sweep --bandwidth 0,8
    expect_error 2 "--batch 1,x: 'x' is not a number" "$sim" sweep --batch 1,x
    expect_error 2 "--latency 10,10: 10 is given twice" "$sim" sweep --latency 10,10
    expect_error 1 "--model nope.onnx: not a readable file" "$sim" sweep --model nope.onnx
    # A configuration that fails: its row says why and its messages are kept.
    printf 'not onnx' >bad.onnx
    expect_error 1 "FAILED: run-cnn failed \(exit code 1\): .*bad.onnx" "$sim" sweep --n "$n0" --images 1 \
      --batch 1 --model bad.onnx --out bad
    grep -q 'cannot parse as an ONNX model' "bad/sweep_logs/n${n0}_bw16_lat10_batch1.log" \
      || fail "bad/sweep_logs: expected run-cnn's message"
    grep -q "^$n0,16,10,1,,.*\"run-cnn failed" bad/sweep.csv || fail "bad/sweep.csv: expected the failed row"
    ;;
  *) fail "unknown case $case_" ;;
esac
echo "PASS: $case_"
