#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ONNX conformance through the chip: runs ONNX's backend node tests (Debian's libonnx-testdata)
# for every op the compiler claims through `tpusim run-onnx --test-dir` and writes a Markdown
# report (docs/conformance.md): per test the op, pass / fail / skip, max error and tolerance, and
# the reason for every failure or skip; then a per-op summary.
#
#   scripts/onnx_conformance.sh [--backend rtl|model] [--fast] [--out FILE] [--tpusim PATH]
#                               [--data DIR] [--only NAME,...]
#
#   --backend   the chip backend (default rtl, the cycle-accurate RTL)
#   --fast      only the representative tests of the default ctest suite (label conformance)
#   --out       the report (default docs/conformance.md; "-" for none)
#   --tpusim    the tpusim binary (default $TPU_BUILD_DIR/tools/tpusim/tpusim or build/...)
#   --data      the node test directory (default /usr/share/libonnx-testdata/data/node)
#   --only      run just these tests (names without the test_ prefix)
#
# Exit code: 0 when every test that ran as "expected to pass" passed (with --fast: every test),
# 1 otherwise. Without --fast the exit code is 0 unless the script itself fails: the report is
# the result.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
backend=rtl
fast=0
out="$root/docs/conformance.md"
tpusim="${TPU_BUILD_DIR:-$root/build}/tools/tpusim/tpusim"
data=/usr/share/libonnx-testdata/data/node
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --backend) backend="$2"; shift 2 ;;
    --fast) fast=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --tpusim) tpusim="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "onnx_conformance: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$backend" == rtl || "$backend" == model ]] || { echo "onnx_conformance: --backend $backend: expected rtl or model" >&2; exit 2; }
[[ -x "$tpusim" ]] || { echo "onnx_conformance: $tpusim: no tpusim binary (build it, or give --tpusim PATH)" >&2; exit 2; }
[[ -d "$data" ]] || { echo "onnx_conformance: $data: no ONNX node tests (install libonnx-testdata: scripts/setup.sh)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "onnx_conformance: python3 is needed for the report" >&2; exit 2; }

# The representative tests of the default suite.
fast_tests="conv_with_strides_padding basic_conv_with_padding gemm_default_vector_bias matmul_2d maxpool_2d_pads
maxpool_2d_uint8 averagepool_2d_pads_count_include_pad averagepool_2d_pads averagepool_2d_ceil globalaveragepool relu sigmoid identity softmax_example
matmulinteger convinteger_with_padding"

# The ops the compiler claims, as test name prefixes (test_<prefix>...). ConvTranspose and
# GlobalMaxPool are not claimed (no such patterns).
patterns="basic_conv conv_with qlinearconv qlinearmatmul matmul gemm relu clip maxpool averagepool
globalaveragepool add sigmoid tanh leakyrelu hardsigmoid hardswish prelu concat batchnorm flatten reshape
reduce_mean softmax dropout identity quantizelinear dequantizelinear convinteger basic_convinteger matmulinteger"

tests=()
if [[ -n "$only" ]]; then
  IFS=, read -r -a tests <<<"$only"
elif [[ $fast == 1 ]]; then
  read -r -a tests <<<"$(echo $fast_tests)"
else
  for d in "$data"/test_*; do
    n="${d##*/test_}"
    [[ "$n" == *_expanded* ]] && continue
    for p in $patterns; do
      if [[ "$n" == "$p" || "$n" == "$p"_* || ( "$p" == basic_conv && "$n" == basic_conv_* ) ]]; then
        tests+=("$n"); break
      fi
    done
  done
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for n in "${tests[@]}"; do
  d="$data/test_$n"
  if [[ ! -d "$d" ]]; then
    echo "missing" >"$work/$n.rc"; continue
  fi
  set +e
  timeout 600 "$tpusim" run-onnx --test-dir "$d" --backend "$backend" --tolerance-rule propagated --json >"$work/$n.json" 2>"$work/$n.err"
  echo $? >"$work/$n.rc"
  set -e
  printf '.' >&2
done
echo >&2

python3 - "$work" "$backend" "$out" "$fast" "$data" "${tests[@]}" <<'EOF'
import json, os, re, sys
work, backend, out, fast, data = sys.argv[1:6]
tests = sys.argv[6:]

# The op a test is for: its name up to the first known op prefix.
OPS = [("basic_convinteger", "ConvInteger"), ("convinteger", "ConvInteger"), ("basic_conv", "Conv"),
       ("conv_with", "Conv"), ("qlinearconv", "QLinearConv"), ("qlinearmatmul", "QLinearMatMul"),
       ("matmulinteger", "MatMulInteger"), ("matmul", "MatMul"), ("gemm", "Gemm"), ("relu", "Relu"),
       ("clip", "Clip"), ("maxpool", "MaxPool"), ("averagepool", "AveragePool"),
       ("globalaveragepool", "GlobalAveragePool"), ("add", "Add"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"),
       ("leakyrelu", "LeakyRelu"), ("hardsigmoid", "HardSigmoid"), ("hardswish", "HardSwish"), ("prelu", "PRelu"),
       ("concat", "Concat"), ("batchnorm", "BatchNormalization"), ("flatten", "Flatten"), ("reshape", "Reshape"),
       ("reduce_mean", "ReduceMean"), ("softmax", "Softmax"), ("dropout", "Dropout"), ("identity", "Identity"),
       ("quantizelinear", "QuantizeLinear"), ("dequantizelinear", "DequantizeLinear")]
def op_of(n):
    for p, op in OPS:
        if n == p or n.startswith(p + "_") or (p in ("basic_conv",) and n.startswith(p)):
            return op
    return "?"

def one_line(s):
    s = " ".join(s.split())
    return s if len(s) <= 400 else s[:397] + "..."

def error_of(err, js):
    # tpusim prints a one-line error; with --json it may be a JSON object on stderr or stdout.
    for text in (err, js):
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    o = json.loads(line)
                    if isinstance(o, dict) and o.get("message"):
                        return o["message"]
                except ValueError:
                    pass
    lines = [l for l in err.splitlines() if l.strip()]
    for l in reversed(lines):
        if "error" in l.lower():
            return re.sub(r"^tpusim( [a-z-]+)?: (error: )?", "", l.strip())
    return lines[-1] if lines else "(no message)"

rows = []
for n in tests:
    op = op_of(n)
    rc = open(os.path.join(work, n + ".rc")).read().strip()
    if rc == "missing":
        rows.append((n, op, "skip", None, None, "no such test directory in " + data)); continue
    js = open(os.path.join(work, n + ".json"), errors="replace").read()
    err = open(os.path.join(work, n + ".err"), errors="replace").read()
    res = None
    try:
        res = json.loads(js) if js.strip().startswith("{") else None
    except ValueError:
        res = None
    if res is not None and "results" in res:
        maxerr, tol, detail = None, None, ""
        for r in res["results"]:
            for o in r.get("outputs", []):
                e = o.get("max_abs_error")
                if e is not None:
                    maxerr = e if maxerr is None else max(maxerr, e)
                t = o.get("tolerance")
                if t is not None:
                    tol = t if tol is None else max(tol, t)
                if o.get("pass") is False and not detail:
                    detail = o.get("detail") or "output '%s' differs" % o.get("name")
            if not r.get("matches_reference", True) and not detail:
                detail = "the chip differs from the integer reference in %s images" % r.get("mismatched_images")
        exact = all(o.get("dtype") not in ("float32", "float16", "float64")
                    for r in res["results"] for o in r.get("outputs", []))
        toltxt = "exact" if exact else tol
        if res.get("pass"):
            rows.append((n, op, "pass", maxerr, toltxt, ""))
        else:
            rows.append((n, op, "fail", maxerr, toltxt, detail or "failed (see tpusim run-onnx --test-dir)"))
        continue
    reason = one_line(error_of(err, js)).replace(os.path.join(data, "test_" + n) + "/", "")
    if "is a constant" in reason or "constant of shape" in reason:
        reason += " (the test gives this operand as a graph input; graph inputs but the first are folded as " \
                  "constants, since the chip takes one data input)"
    if rc == "124":
        reason = "timed out after 600 s"
    rows.append((n, op, "skip", None, None, reason))

def num(v):
    if v is None: return ""
    if isinstance(v, str): return v
    return "%.4g" % v

status_ok = all(r[2] == "pass" for r in rows)
for n, op, st, e, t, why in rows:
    print("%-50s %-5s %s" % (n, st, why[:150]))
summary = {}
for n, op, st, e, t, why in rows:
    s = summary.setdefault(op, [0, 0, 0, 0])
    s[0] += 1
    s[{"pass": 1, "fail": 2, "skip": 3}[st]] += 1
tot = [sum(s[i] for s in summary.values()) for i in range(4)]
print("total: %d tests, %d pass, %d fail, %d skip" % tuple(tot))

if out != "-":
    L = []
    L.append("# ONNX conformance through the chip")
    L.append("")
    L.append("Generated by `scripts/onnx_conformance.sh%s` (backend `%s`): ONNX's backend node tests from "
             "Debian's `libonnx-testdata` (`%s`) for every op the compiler claims, each run with "
             "`tpusim run-onnx --test-dir` through the chip. Do not edit by hand; rerun the script." %
             (" --fast" if fast == "1" else "", backend, data))
    L.append("")
    L.append("## How a test is run and judged")
    L.append("")
    L.append("- The graph's first input is the image (data) input. Every other graph input of a node test "
             "(weights, biases, scales, zero points, the second operand of Add, ...) is a parameter: its value "
             "from `input_K.pb` is folded into the graph as a constant before import "
             "(`fold_inputs_as_constants`, driver/cnn/tensor_run.h).")
    L.append("- A float model is quantized to int8 as `run-cnn` does it, calibrated on the test's own input "
             "(min/max: every input value is representable, the input's quantization step is range / 255). "
             "Every data set also runs through the integer reference of the quantized network: the chip must "
             "equal it bit-exactly, or the test fails.")
    L.append("- **Integer outputs** (QLinearConv, QLinearMatMul, MaxPool on uint8, ...) must equal the "
             "expected tensor exactly (tolerance `exact`). The int32 results of MatMulInteger and "
             "ConvInteger leave the chip through `activate raw` (docs/isa.md), unrequantized.")
    L.append("- **Float outputs** pass within the *propagated quantization error bound* "
             "(`tpusim run-onnx --tolerance-rule propagated`, `propagated_tolerance` in "
             "driver/cnn/tensor_run.h): a bound on |float - dequantized| carried through the quantized "
             "network from the quantization steps of every tensor involved. The input contributes "
             "`s_x / 2` (its rounding; 0 for a uint8 / int8 input, which is exact). A Conv / Gemm / MatMul "
             "turns an input error `e` into `max_oc (sum_i |w_i| * e + K * x_max * s_w / 2)` (the "
             "weights' float values `w_i`, fan-in `K`, `x_max` the largest |x| the input's quantization "
             "represents, `s_w` the channel's weight step: each weight is off by at most `s_w / 2`; an "
             "AveragePool whose divisor changes at the borders sums with weights 1, and its bound is "
             "divided by its smallest divisor); an "
             "Add adds its operands' errors; a Copy (pooling, Identity, requantization) keeps it; max "
             "pooling, Relu and Clip do not grow it. A LUT activation rounds its input (`+ s_pre / 2`) and "
             "multiplies by its largest slope (Sigmoid 1/4, Tanh 1, HardSigmoid alpha, LeakyRelu "
             "max(1, alpha), HardSwish 3/2). Every layer's output requantization adds `s_y / 2`. After a "
             "host Softmax the bound is halved (logits within `d` move no probability by more than `d / 2`). "
             "Why not run-onnx's default (one output step per layer): a single op calibrated on its own "
             "input has an input step that can be larger than its output step (a Relu of inputs in "
             "[-2, 2]: `s_x = 4/255`, `s_y = 2/255`), so the input's rounding alone exceeds one output "
             "step; the bound is a worst case, so a correct chip always passes it.")
    L.append("- **Skip**: the compiler refuses the graph (an op, attribute or shape it does not take); the "
             "reason is the importer's error. **Fail**: the graph ran but an output is outside its tolerance "
             "(or the chip differs from the reference), or the op needs something the chip cannot do yet. "
             "No test is skipped without a reason.")
    L.append("")
    L.append("## Tests")
    L.append("")
    L.append("| test | op | result | max error | tolerance | reason |")
    L.append("|---|---|---|---|---|---|")
    for n, op, st, e, t, why in rows:
        L.append("| `test_%s` | %s | %s | %s | %s | %s |" % (n, op, st.upper() if st != "pass" else "pass", num(e),
                                                         num(t), why.replace("|", "\\|")))
    L.append("")
    L.append("## Summary per op")
    L.append("")
    L.append("| op | tests | passed | failed | skipped |")
    L.append("|---|---|---|---|---|")
    for op in sorted(summary):
        s = summary[op]
        L.append("| %s | %d | %d | %d | %d |" % (op, s[0], s[1], s[2], s[3]))
    L.append("| **total** | %d | %d | %d | %d |" % tuple(tot))
    L.append("")
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(L))
    os.replace(out + ".tmp", out)
    print("wrote " + out)
sys.exit(0 if (status_ok or fast != "1") else 1)
EOF
