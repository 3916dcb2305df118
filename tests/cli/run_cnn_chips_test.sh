#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run-cnn --chips P (docs/pod.md "Inference across chips"): the pod's predictions, accuracies,
# bit-exactness and image count equal the one-chip run's of the same images (rings of 2 and 4,
# the torus 2x2, slices of unequal size), every key of the one-chip JSON is kept and the pod's
# keys are there and consistent (chip_cycles and chip_images one per chip, the images add up,
# cycles_total = inference + gather, gather_share). With TPUSIM_RTL (tpusim_train_n16) instead:
# `tpusim run-cnn --chips 2 --backend rtl` (TPUSIM starts TPUSIM_RTL, the RTL pod) against the
# one RTL training chip's run, and the RTL pod's fixed link bandwidth.
#   run_cnn_chips_test.sh TPUSIM WORKDIR [TPUSIM_RTL]
set -u
sim="$1" work="$2" rtl="${3:-}"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common="--offset 30 --images 12 --calibration 10 --quiet --json"

compare() {  # compare ONE_CHIP.json POD.json CHIPS TOPOLOGY
  python3 - "$@" <<'PY' || fail "$2 differs from $1"
import json, sys
one, pod = (json.load(open(f)) for f in sys.argv[1:3])
chips, topo = int(sys.argv[3]), sys.argv[4]
for k in ("predictions", "accuracy", "float_accuracy", "reference_accuracy", "matches_golden",
          "mismatched_images", "images", "offset", "batch", "chip_n", "macs_per_image"):
    assert one[k] == pod[k], (k, one[k], pod[k])
assert pod["matches_golden"] is True
# "memory" is the one RTL chip's host-memory timing (--mem-*), which the pod does not have.
missing = [k for k in one if k not in pod and k != "memory"]
assert not missing, ("keys of the one-chip JSON missing", missing)
assert pod["chips"] == chips and pod["topology"] == topo, (pod["chips"], pod["topology"])
assert len(pod["chip_cycles"]) == chips and len(pod["chip_images"]) == chips
assert sum(pod["chip_images"]) == pod["images"], pod["chip_images"]
assert all(c > 0 for c, i in zip(pod["chip_cycles"], pod["chip_images"]) if i > 0)
assert pod["gather_cycles"] > 0 and pod["inference_cycles"] > 0
assert pod["cycles_total"] == pod["inference_cycles"] + pod["gather_cycles"]
share = pod["gather_cycles"] / pod["cycles_total"]
assert abs(pod["gather_share"] - share) <= 1e-5 * share, (pod["gather_share"], share)
assert (pod["gather_link_bytes"] > 0) == (chips > 1), pod["gather_link_bytes"]
print(sys.argv[2], "ok:", chips, topo, "gather", pod["gather_cycles"], "of", pod["cycles_total"])
PY
}

if [ -n "$rtl" ]; then  # the RTL pod only (P = 2) against the one RTL chip
  small="--offset 30 --images 4 --batch 4 --calibration 10 --quiet --json"
  "$rtl" run-cnn $small --backend rtl >rtl_one.json 2>rtl.err || fail "rtl one chip exited $?"
  "$sim" run-cnn $small --backend rtl --chips 2 >rtl_pod.json 2>rtl.err ||
    fail "rtl --chips 2 exited $?: $(tail -1 rtl.err)"
  compare rtl_one.json rtl_pod.json 2 ring
  python3 -c "import json; j = json.load(open('rtl_pod.json')); assert j['backend'] == 'rtl' and j['cycles_estimated'] is False, j['backend']" ||
    fail "rtl_pod.json is not the RTL pod's"
  "$rtl" run-cnn $small --backend rtl --chips 2 --ici-bandwidth 8 >/dev/null 2>rtl.err
  [ $? -eq 2 ] && grep -q "the RTL pod's links are 16 bytes per cycle" rtl.err ||
    fail "--ici-bandwidth 8 on the RTL pod: $(cat rtl.err)"
  echo "run-cnn --chips --backend rtl: all ok"
  exit 0
fi

for batch in 4 6; do
  "$sim" run-cnn $common --batch $batch --backend model >one_$batch.json 2>one_$batch.err ||
    fail "run-cnn --batch $batch exited $?: $(tail -1 one_$batch.err)"
done
for run in "2 ring 4" "4 ring 4" "4 torus:2x2 4" "4 ring 6" "3 ring 6"; do
  set -- $run
  "$sim" run-cnn $common --batch $3 --backend model --chips $1 --topology $2 >pod_$1_$3.json \
    2>pod.err || fail "run-cnn --chips $1 --topology $2 --batch $3 exited $?: $(tail -1 pod.err)"
  compare one_$3.json pod_$1_$3.json $1 $2
done
# The text output names the pod and its gather.
"$sim" run-cnn --images 4 --batch 4 --calibration 10 --quiet --backend model --chips 2 >text.out \
  2>&1 || fail "run-cnn --chips 2 (text) exited $?"
grep -q "^pod: 2 chips (ring): inference .* cycles, gather .* cycles" text.out ||
  fail "no pod summary line: $(cat text.out)"

echo "run-cnn --chips: all ok"
