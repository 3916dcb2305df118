#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run-cnn --json's "energy" (docs/energy.md) recomputed from its own action counts and memory
# sizes with the table file, independently of driver/energy.cpp; a swapped table (every energy
# doubled) doubles every figure; a bad table is a usage error naming the option and the key.
# The same for run-topology, run-onnx (per data set), train (the steps run, per layer and
# phase of the step program) and sweep (its CSV's energy columns are run-cnn's).
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
python3 "$src/tests/scaling/make_onnx_test_dir.py" "$src/models/fashion_cnn.onnx" onnx_t 2 >/dev/null ||
  fail "could not write the ONNX test directory"
"$sim" run-onnx --test-dir onnx_t --backend model --batch 2 --json >onnx.json 2>/dev/null ||
  fail "run-onnx exited $?"
"$sim" run-onnx --test-dir onnx_t --backend model --batch 2 --json --energy-table double.json \
  >onnx_double.json 2>/dev/null || fail "run-onnx --energy-table exited $?"
"$sim" train --backend model --epochs 1 --steps-per-epoch 2 --batch 16 --test-images 0 --quiet \
  --json --report train_report >train.json 2>/dev/null || fail "train exited $?"
[ -s train_report/energy.svg ] || fail "train --report wrote no energy.svg"
python3 - "$src/energy/horowitz_45nm.json" base.json double_run.json topo.json onnx.json \
  onnx_double.json train.json <<'PY' || exit 1
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

def check_layers(e, total_key, divide, what):
    """Layers plus "other" add up to e[total_key]; each layer's pJ from its own actions."""
    mem = e["memory_bytes"]
    layer_sum = {k: sum(l["actions"][k] for l in e["layers"]) + e["other_actions"][k]
                 for k in e[total_key]}
    if layer_sum != e[total_key]:
        sys.exit(f"FAIL: {what}: layer actions {layer_sum} do not add up to {e[total_key]}")
    for l in e["layers"]:
        close(l["pj_per_image"], sum(components(l["actions"], mem).values()) / divide,
              what + " " + l["name"])
    close(e["other_pj_per_image"], sum(components(e["other_actions"], mem).values()) / divide,
          what + " other")

def check_total(e, images, what):
    want = components(e["actions"], e["memory_bytes"])
    for k, v in want.items():
        close(e["components_pj_per_image"][k], v / images, what + " " + k)
    close(e["total_pj"], sum(want.values()), what + " total_pj")
    close(e["per_image_pj"], sum(want.values()) / images, what + " per_image_pj")
    macs = e["actions"]["mac_int8"] + e["actions"]["mac_bf16"]
    close(e["array_tops_per_watt"], 2 * macs / e["total_pj"], what + " array_tops_per_watt")

onnx, onnx_dbl = json.load(open(sys.argv[5])), json.load(open(sys.argv[6]))
if len(onnx["results"]) != 2:
    sys.exit(f"FAIL: run-onnx: {len(onnx['results'])} data sets, expected 2")
for s, sd in zip(onnx["results"], onnx_dbl["results"]):
    e = s["energy"]
    check_total(e, s["images"], "run-onnx " + s["name"])
    check_layers(e, "actions", s["images"], "run-onnx " + s["name"])
    if e["actions"]["mac_int8"] == 0 or not e["layers"]:
        sys.exit("FAIL: run-onnx: no MACs or no layers counted")
    if sd["energy"]["actions"] != e["actions"]:
        sys.exit("FAIL: run-onnx: the swapped table changed the actions")
    close(sd["energy"]["per_image_pj"], 2 * e["per_image_pj"], "run-onnx doubled per_image_pj")
print(f"run-onnx energy: {onnx['results'][0]['energy']['per_image_pj']:.4g} pJ per image recomputed")

tr = json.load(open(sys.argv[7]))
e, steps, batch = tr["energy"], tr["steps"], tr["batch"]
if e["steps"] != steps or steps != 2:
    sys.exit(f"FAIL: train: energy of {e['steps']} steps, ran {steps} (expected 2)")
check_total(e, steps * batch, "train")
if e["actions"] != {k: steps * v for k, v in e["step_actions"].items()}:
    sys.exit("FAIL: train: the actions are not steps x the step's actions")
close(e["per_step_pj"], sum(components(e["step_actions"], e["memory_bytes"]).values()), "train per_step_pj")
check_layers(e, "step_actions", batch, "train")
close(e["tops_per_watt"], 2 * tr["macs_per_step"] * steps / e["total_pj"], "train tops_per_watt")
for k in ("mac_bf16", "vector_fp_op", "vector_fp_mul", "vmem_read_bytes", "vmem_write_bytes"):
    if e["step_actions"][k] == 0:
        sys.exit(f"FAIL: train: no {k} counted in a training step")
phases = {l["name"].rsplit(" ", 1)[-1] for l in e["layers"]}
if not {"forward", "backward", "update"} <= phases:
    sys.exit(f"FAIL: train: layer phases {sorted(phases)}")
print(f"train energy: {e['per_image_pj']:.4g} pJ per image ({e['per_step_pj']:.4g} per step) recomputed")
PY
echo '{"clock_mhz": 700, "pj": {}}' >bad.json
"$sim" $run --energy-table bad.json >bad_run.json 2>err.txt
[ $? -eq 2 ] || fail "a bad table: expected exit 2"
grep -q -- '--energy-table: energy table bad.json: pj: missing key "mac_int8"' err.txt ||
  fail "bad table message: $(cat err.txt)"
echo "energy: ok"
