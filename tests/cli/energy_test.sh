#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run-cnn --json's "energy" (docs/energy.md) recomputed from its own action counts and memory
# sizes with the table file, independently of driver/energy.cpp; a swapped table (every energy
# doubled) doubles every figure; a bad table is a usage error naming the option and the key.
#   energy_test.sh TPUSIM WORKDIR SOURCE_DIR
set -u
sim="$1" work="$2" src="$3"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
run="run-cnn --images 4 --batch 2 --calibration 10 --backend model --quiet --json"
"$sim" $run >base.json 2>/dev/null || fail "run-cnn exited $?"
python3 - "$src/energy/horowitz_45nm.json" >double.json <<'PY' || fail "could not write the doubled table"
import json, sys
t = json.load(open(sys.argv[1]))
t["name"] = "doubled"
t["pj"] = {k: 2 * v for k, v in t["pj"].items()}
t["sram_pj_per_64bit"] = [[s, 2 * e] for s, e in t["sram_pj_per_64bit"]]
print(json.dumps(t))
PY
"$sim" $run --energy-table double.json >double_run.json 2>/dev/null || fail "run-cnn --energy-table exited $?"
printf 'Layer, M, N, K,\nA, 20, 17, 33,\nB, 50, 24, 70,\n' >gemm.csv
"$sim" run-topology gemm.csv --backend model --json >topo.json 2>/dev/null || fail "run-topology exited $?"
python3 - "$src/energy/horowitz_45nm.json" base.json double_run.json topo.json <<'PY' || exit 1
import json, math, sys
table = json.load(open(sys.argv[1]))
base, dbl = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))

def sram_pj_per_byte(size):
    pts = table["sram_pj_per_64bit"]
    if size <= pts[0][0]:
        return pts[0][1] / 8
    if size >= pts[-1][0]:
        return pts[-1][1] / 8
    for (s0, e0), (s1, e1) in zip(pts, pts[1:]):
        if s0 < size <= s1:
            t = math.log(size / s0) / math.log(s1 / s0)
            return e0 * (e1 / e0) ** t / 8

def components(a, mem):
    pj = table["pj"]
    sram = lambda b, size: b * sram_pj_per_byte(size) if size > 0 else 0.0
    return {
        "mac_int8": a["mac_int8"] * pj["mac_int8"],
        "mac_bf16": a["mac_bf16"] * pj["mac_bf16"],
        "requant": a["requant"] * pj["requant"],
        "vector": a["vector_fp_mul"] * pj["vector_fp_mul"] + a["vector_fp_op"] * pj["vector_fp_op"]
                  + a["vector_int_op"] * pj["vector_int_op"],
        "ub": sram(a["ub_read_bytes"] + a["ub_write_bytes"], mem["ub"]),
        "acc": sram(a["acc_read_bytes"] + a["acc_write_bytes"], mem["acc"]),
        "vmem": sram(a["vmem_read_bytes"] + a["vmem_write_bytes"], mem["vmem"]),
        "weight_fifo": sram(a["weight_fifo_bytes"], mem["weight_fifo"]),
        "param": sram(a["param_bytes"], mem["param"]),
        "host": (a["host_read_bytes"] + a["host_write_bytes"]) * pj["host_byte"],
    }

def close(x, y, what):
    if abs(x - y) > 1e-5 * max(abs(x), abs(y), 1e-30):  # the JSON prints 6 significant digits
        sys.exit(f"FAIL: {what}: reported {x}, recomputed {y}")

e = base["energy"]
images = base["images"]
mem = e["memory_bytes"]
want = components(e["actions"], mem)
for k, v in want.items():
    close(e["components_pj_per_image"][k], v / images, "components_pj_per_image." + k)
close(e["per_image_pj"], sum(want.values()) / images, "per_image_pj")
# Layers plus the instructions of no layer add up to the total.
layer_sum = {k: sum(l["actions"][k] for l in e["layers"]) + e["other_actions"][k] for k in e["actions"]}
if layer_sum != e["actions"]:
    sys.exit(f"FAIL: layer actions {layer_sum} do not add up to {e['actions']}")
for l in e["layers"]:
    close(l["pj_per_image"], sum(components(l["actions"], mem).values()) / images, l["name"])
close(e["tops_per_watt"], 2 * base["macs_per_image"] * images / (e["per_image_pj"] * images), "tops_per_watt")
d = dbl["energy"]
if d["table"] != "doubled" or d["actions"] != e["actions"]:
    sys.exit("FAIL: the swapped table changed the actions or is not named")
close(d["per_image_pj"], 2 * e["per_image_pj"], "doubled per_image_pj")
print(f"energy: {e['per_image_pj']:.4g} pJ per image recomputed from {len(want)} components")
topo = json.load(open(sys.argv[4]))
t = topo["energy"]
want = components(t["actions"], t["memory_bytes"])
for k, v in want.items():
    close(t["components_pj_per_image"][k], v / topo["batch"], "run-topology " + k)
close(sum(l["energy_pj_per_image"] for l in topo["layers"]), t["per_image_pj"], "run-topology layers")
print(f"run-topology energy: {t['per_image_pj']:.4g} pJ per image recomputed")
PY
echo '{"clock_mhz": 700, "pj": {}}' >bad.json
"$sim" $run --energy-table bad.json >bad_run.json 2>err.txt
[ $? -eq 2 ] || fail "a bad table: expected exit 2"
grep -q -- '--energy-table: energy table bad.json: pj: missing key "mac_int8"' err.txt ||
  fail "bad table message: $(cat err.txt)"
echo "energy: ok"
