#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tpusim_dw_n16, the tpusim of the depthwise chip (tpu_sim_dw_n16, issue 33), against tpusim
# (the same N = 16 chip without the unit): the bundled MobileNet on rtl is bit-exact on both,
# with the same predictions (and the same as the dw chip's model backend, which also compiles
# dwconv), and takes fewer cycles on the dw chip; fashion_cnn (no depthwise layer) takes exactly
# the same cycles and actions on both; --dw-width on rtl accepts only the built DwWidth.
#   run_cnn_dw_test.sh TPUSIM TPUSIM_DW WORKDIR
set -u
sim="$1" dw="$2" work="$3"
models="$(cd "$(dirname "$0")/../../models" && pwd)" || exit 1  # the bundled models
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common="--images 2 --batch 2 --calibration 4 --quiet --json --no-profile"
mob="--model $models/mobilenet.onnx"

"$dw" run-cnn $mob $common >mob_dw.json 2>err || fail "tpusim_dw_n16 mobilenet exited $?: $(cat err)"
"$sim" run-cnn $mob $common >mob.json 2>err || fail "tpusim mobilenet exited $?: $(cat err)"
"$dw" run-cnn $mob $common --backend model >mob_dw_model.json 2>err ||
  fail "tpusim_dw_n16 --backend model exited $?: $(cat err)"
"$dw" run-cnn $common >fashion_dw.json 2>err || fail "tpusim_dw_n16 fashion exited $?: $(cat err)"
"$sim" run-cnn $common >fashion.json 2>err || fail "tpusim fashion exited $?: $(cat err)"

python3 - <<'PY' || fail "the JSON figures"
import json
j = {n: json.load(open(n + ".json")) for n in
     ("mob_dw", "mob", "mob_dw_model", "fashion_dw", "fashion")}
for n, v in j.items():
    assert v["matches_golden"] is True and v["images"] == 2, (n, v["matches_golden"])
    assert v["chip_n"] == 16, (n, v["chip_n"])
preds = {n: v["predictions"] for n, v in j.items()}
assert preds["mob_dw"] == preds["mob"] == preds["mob_dw_model"], "mobilenet predictions differ"
assert preds["fashion_dw"] == preds["fashion"], "fashion_cnn predictions differ"
assert j["mob_dw"]["cycles_estimated"] is False and j["mob_dw_model"]["cycles_estimated"] is True
# dwconv replaces the diagonal matmuls: other programs, fewer cycles, fewer MXU MACs.
assert j["mob_dw"]["instructions_per_batch"] < j["mob"]["instructions_per_batch"]
assert j["mob_dw"]["cycles_total"] < j["mob"]["cycles_total"], \
    (j["mob_dw"]["cycles_total"], j["mob"]["cycles_total"])
assert j["mob_dw"]["macs_per_image"] == j["mob"]["macs_per_image"]
act = {n: v["energy"]["actions"] for n, v in j.items()}
assert act["mob_dw"]["mac_int8"] < act["mob"]["mac_int8"]
# No depthwise layer: the same program, cycle for cycle, action for action.
for k in ("instructions_per_batch", "cycles_total", "mxu_busy_fraction"):
    assert j["fashion_dw"][k] == j["fashion"][k], (k, j["fashion_dw"][k], j["fashion"][k])
assert act["fashion_dw"] == act["fashion"], "fashion_cnn's actions differ"
print("mobilenet cycles", j["mob"]["cycles_total"], "->", j["mob_dw"]["cycles_total"],
      "fashion_cnn", j["fashion"]["cycles_total"], "on both")
PY

# --dw-width on rtl: only the DwWidth the binary was built with (a usage error, exit 2).
"$sim" run-cnn --images 1 --dw-width 2 >/dev/null 2>err
rc=$?
[ $rc -eq 2 ] && grep -q "this binary's chip has DwWidth 0" err ||
  fail "tpusim --dw-width 2 on rtl: exit $rc: $(cat err)"
"$dw" run-cnn --images 1 --dw-width 0 >/dev/null 2>err
rc=$?
[ $rc -eq 2 ] && grep -q "this binary's chip has DwWidth [1-9]" err ||
  fail "tpusim_dw_n16 --dw-width 0 on rtl: exit $rc: $(cat err)"
echo "ok"
