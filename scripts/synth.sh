#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Synthesizes tpu_core (or one block, --top) with Yosys (Debian's 0.23) and writes a report: cells by type,
# flip-flops, memories (kept as memories), LUT/FF/DSP/BRAM for the FPGA targets, and a
# logic-depth estimate for the generic target (Yosys `ltp`: the longest path in cells between
# flip-flops/ports, after technology mapping) as a frequency proxy. docs/synthesis.md explains
# the figures.
#
#   scripts/synth.sh [--n N] [--target generic|xilinx|ice40|ecp5] [--param NAME=VALUE]...
#                    [--top MODULE] [--out DIR] [--hier]
#
# --hier (generic target): keeps the hierarchy instead of flattening: each module is
# synthesized once per parametrization (identical instances cost one), `stat -top` gives the
# totals over the instances and `ltp` the longest path inside each module (an instance is one
# cell there: a path through several modules is not measured). The pod chip: --param
# VmemRows=32768 --param IciLinks=2 (docs/synthesis.md).
# --top synthesizes one module of rtl/ (and the blocks it instantiates) alone (docs/synthesis.md);
# N is then set only when --n is given (default out dir build-synth/<MODULE>-<target>/).
#
# Fails (exit 1) when the design has latches, combinational loops, multiple drivers, or when
# Yosys reports a construct it did not elaborate faithfully (implicitly declared identifiers,
# out-of-bounds selects set to undef): Yosys 0.23 reads only part of SystemVerilog, and some of
# what it does not understand it turns into x silently. Output: DIR/report.md (default
# build-synth/n<N>-<target>/), the Yosys log and the statistics as JSON.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n=4
n_given=0
hier=0
top=tpu_core
target=generic
out=""
params=()
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --n) n="$2"; n_given=1; shift 2 ;;
    --top) top="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --param) params+=("$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --hier) hier=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "synth.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$target" in generic|xilinx|ice40|ecp5) ;; *)
  echo "synth.sh: --target must be generic, xilinx, ice40 or ecp5 (got '$target')" >&2; exit 2 ;;
esac
[[ "$hier" == 0 || "$target" == generic ]] || { echo "synth.sh: --hier is for the generic target" >&2; exit 2; }
[[ "$n" =~ ^[0-9]+$ ]] || { echo "synth.sh: --n must be a number (got '$n')" >&2; exit 2; }
command -v yosys >/dev/null || { echo "synth.sh: yosys not found (scripts/setup.sh installs it)" >&2; exit 1; }

[[ "$top" =~ ^[a-z][a-z0-9_]*$ ]] || { echo "synth.sh: --top must be a module name (got '$top')" >&2; exit 2; }
if [[ "$top" == tpu_core ]]; then
  suffix=""
  [[ "$hier" == 0 ]] || suffix=-hier
  out="${out:-$root/build-synth/n$n-$target$suffix}"
else
  out="${out:-$root/build-synth/$top-$target}"
fi
mkdir -p "$out"
rm -f "$out/ltp.txt"  # written again by the generic target only
log="$out/yosys.log"

sources=("$root/rtl/tpu_pkg.sv")
if [[ "$top" == tpu_core ]]; then
  for f in "$root"/rtl/*.sv; do [[ "$f" == */tpu_pkg.sv ]] || sources+=("$f"); done
else  # a block alone: the package, the tpu_sram memory wrapper (the weight FIFO and the
  # accumulators instantiate it) and the block's own file (rtl/<MODULE>.sv). With --n or
  # --param, Yosys 0.23 fails an internal assertion on a block that instantiates tpu_sram
  # (`hierarchy -chparam` on a deferred top with a submodule): docs/synthesis.md synthesizes
  # those through a one-instance wrapper.
  [[ -f "$root/rtl/$top.sv" ]] || { echo "synth.sh: --top $top: no file rtl/$top.sv" >&2; exit 2; }
  [[ "$top" == tpu_sram ]] || sources+=("$root/rtl/tpu_sram.sv")
  sources+=("$root/rtl/$top.sv")
fi

chparams=""
if [[ "$top" == tpu_core || "$n_given" == 1 ]]; then chparams="-chparam N $n"; fi
for p in "${params[@]}"; do
  [[ "$p" =~ ^[A-Za-z][A-Za-z0-9_]*=[0-9]+$ ]] || { echo "synth.sh: --param wants NAME=NUMBER (got '$p')" >&2; exit 2; }
  chparams+=" -chparam ${p%%=*} ${p#*=}"
done
# tpu_core with --param (the training chip: --param VmemRows=32768): Yosys 0.23 fails an
# internal assertion (`modules_.count(module->name) == 0`) when `hierarchy -chparam` sets them
# on the deferred tpu_core (it elaborates the parameterized core twice once its float blocks
# appear). So the parameters, N included, become the defaults of a copy of rtl/tpu_core.sv in
# the output directory, elaborated without -chparam: the same design.
if [[ "$top" == tpu_core && ${#params[@]} -gt 0 ]]; then
  core_copy="$out/tpu_core.sv"
  cp "$root/rtl/tpu_core.sv" "$core_copy"
  for p in "N=$n" "${params[@]}"; do
    name="${p%%=*}" value="${p#*=}"
    grep -qE "^[[:space:]]*parameter int unsigned $name[[:space:]]*=" "$core_copy" ||
      { echo "synth.sh: --param $name: tpu_core has no parameter $name" >&2; exit 2; }
    sed -i -E "s/^([[:space:]]*parameter int unsigned $name[[:space:]]*=[[:space:]]*)[^,]*(,.*)?\$/\1$value\2/" "$core_copy"
  done
  for i in "${!sources[@]}"; do
    [[ "${sources[$i]}" == */rtl/tpu_core.sv ]] && sources[$i]="$core_copy"
  done
  chparams=""
fi

# A block alone also brings the other rtl/ blocks it instantiates, recursively (tpu_vpu:
# tpu_vpu_lane); a line that starts with a module's name instantiates it.
if [[ "$top" != tpu_core ]]; then
  todo=("$top")
  seen=" tpu_sram $top "
  while ((${#todo[@]})); do
    m="${todo[0]}"
    todo=("${todo[@]:1}")
    for f in "$root"/rtl/tpu_*.sv; do
      sub="$(basename "$f" .sv)"
      if [[ "$seen" != *" $sub "* ]] && grep -qE "^[[:space:]]*$sub([[:space:]]|$)" "$root/rtl/$m.sv"; then
        sources+=("$f")
        todo+=("$sub")
        seen+="$sub "
      fi
    done
  done
fi

# Front end common to all targets: elaborate, check the structure, then map.
script="$out/synth.ys"
{
  # -defer: elaborate only what hierarchy asks for, with its parameters (not every module of
  # rtl/ at its defaults first: tpu_mxu_fp at N = 16 alone takes minutes).
  echo "read_verilog -defer -sv -DSYNTHESIS -I$root/rtl ${sources[*]}"
  echo "hierarchy -check -top $top $chparams"
  echo "proc"
  [[ "$hier" == 1 ]] || echo "flatten"
  echo "opt_clean"
  echo "tee -o $out/latches.txt select -list t:\$dlatch t:\$adlatch t:\$dlatchsr t:\$_DLATCH*"
  echo "check -assert"
  case "$target" in
    generic)
      # Memories stay memories ($mem_v2 cells); everything else is mapped to Yosys' internal
      # gate library, then ABC.
      echo "opt -fast"
      echo "wreduce"
      echo "alumacc"
      echo "opt -fast"
      echo "memory -nomap"
      echo "opt -fast"
      if [[ "$hier" == 1 ]]; then
        # One module (all its parametrizations) at a time from the gate mapping on: only one
        # module's fine-grained netlist, the largest before ABC, is in memory at once.
        for f in "${sources[@]}"; do
          for m in $(sed -n -E 's/^[[:space:]]*module[[:space:]]+(tpu_[a-z0-9_]+).*/\1/p' "$f"); do
            echo "techmap *$m"
            echo "opt -fast *$m"
            echo "abc -fast *$m"
            echo "opt_clean *$m"
          done
        done
      else
        echo "techmap"
        echo "opt -fast"
        echo "abc -fast"
        echo "opt_clean"
      fi
      ;;
    xilinx) echo "synth_xilinx -top $top -family xc7" ;;
    ice40)  echo "synth_ice40 -top $top -dsp" ;;
    ecp5)   echo "synth_ecp5 -top $top" ;;
  esac
  echo "check -assert"
  if [[ "$hier" == 1 ]]; then
    echo "tee -o $out/stat.txt stat -width -top $top"
  else
    echo "tee -o $out/stat.txt stat -width"
  fi
  echo "tee -o $out/memories.txt dump t:\$mem_v2"
  # Logic depth on the generic netlist only: on a vendor-mapped one, ltp takes each carry-chain
  # cell (CARRY4, CCU2C, SB_CARRY) for a node from every input to every output, so a chain
  # whose carry feeds a LUT that drives the same cell looks like a loop (millions of warnings).
  if [[ "$target" == generic ]]; then
    # Hierarchical: each module's own path; its instances of rtl/ modules are deleted first
    # (kept, ltp takes each for one cell from every input to every output, and a module that
    # feeds an instance and reads it back looks like a loop).
    [[ "$hier" == 1 ]] && echo "delete */t:tpu_* */t:\$paramod*"
    echo "tee -o $out/ltp.txt ltp -noff"
  fi
} > "$script"

start=$(date +%s)
set +e
yosys -l "$log" -q -s "$script" > /dev/null 2> "$out/yosys.stderr"
rc=$?
set -e
seconds=$(( $(date +%s) - start ))
if ((rc != 0)); then
  echo "synth.sh: yosys failed (exit $rc), see $log:" >&2
  grep -E "ERROR|Error|error" "$log" | head -20 >&2
  head -c 2000 "$out/yosys.stderr" >&2  # what the log misses (std::bad_alloc at a memory cap)
  exit 1
fi

[[ -n "$chparams" || -n "${core_copy:-}" ]] || n=0  # no N: a block without the parameter
hier_arg=()
[[ "$hier" == 1 ]] && hier_arg=(--hier)
python3 "$root/scripts/synth_report.py" --n "$n" --top "$top" --target "$target" --dir "$out" \
  --seconds "$seconds" --params "${params[*]:-}" "${hier_arg[@]}"
