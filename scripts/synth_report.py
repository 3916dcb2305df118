#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the Yosys output of scripts/synth.sh into DIR/report.md and DIR/report.json; fails on
latches, on Yosys' signs of an unfaithful elaboration, and on combinational loops."""
import argparse
import json
import re
import sys
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, required=True)
ap.add_argument("--top", default="tpu_core")
ap.add_argument("--target", required=True)
ap.add_argument("--dir", required=True)
ap.add_argument("--seconds", type=int, default=0)
ap.add_argument("--params", default="")
ap.add_argument("--hier", action="store_true",
                help="hierarchical netlist: totals from stat -top, depth per module")
a = ap.parse_args()
d = Path(a.dir)
log = (d / "yosys.log").read_text(errors="replace")
problems = []

# Latches: proc turns an incompletely assigned always_comb variable into a $dlatch.
latches = [l for l in (d / "latches.txt").read_text().split() if l.strip()]
if latches:
    problems.append(f"{len(latches)} latch(es): " + ", ".join(latches[:10]))
# Combinational loops and multiple drivers: `check -assert` stops Yosys on those; `ltp` says
# when the netlist is not a DAG.
ltp_file = d / "ltp.txt"  # generic target only (synth.sh)
ltp_text = ltp_file.read_text() if ltp_file.exists() else ""
if "loop" in ltp_text.lower():
    problems.append("combinational loop (ltp): " + ltp_text.strip()[:300])
# Constructs Yosys 0.23 did not elaborate faithfully (it warns and substitutes x).
bad = re.compile(r"Warning: (Identifier .* is implicitly declared|Range select .*out of bounds"
                 r".*undef|.*multiple conflicting drivers|.*found logic loop)")
for line in log.splitlines():
    if bad.search(line):
        problems.append(line.strip())

# Cells by type, from `stat -width` of the flattened top (hierarchical: the `stat -top` totals
# over the instances, after "design hierarchy"; each module's own cells and flip-flops kept).
stat = (d / "stat.txt").read_text()
modules = {}
if a.hier:
    for name, body in re.findall(r"=== (\S+) ===\n(.*?)(?=\n===|\Z)", stat, re.S):
        if name == "design":
            continue
        m = re.search(r"Number of cells:\s+(\d+)", body)
        ffs = sum(int(n) for k, n in re.findall(r"\s+(\$_\S+)\s+(\d+)", body)
                  if re.match(r"\$_(S?DFF|DFFE|SDFFE|SDFFCE|ALDFF|DFFSR|DFFSRE)", k))
        modules[name.split("\\")[-1] + ("" if "$paramod" not in name else " (" + name[9:17] + ")")] = {
            "cells": int(m.group(1)) if m else None, "flip_flops": ffs}
    if "=== design hierarchy ===" not in stat:
        problems.append("stat -top printed no design hierarchy")
    stat = stat.split("=== design hierarchy ===")[-1]
cells = {}
totals = {}
for line in stat.splitlines():
    m = re.match(r"\s+(\$?[\w$]+)\s+(\d+)\s*$", line)
    if m:
        cells[m.group(1)] = int(m.group(2))
    m = re.match(r"\s+Number of (cells|wires|wire bits|memories|memory bits):\s+(\d+)", line)
    if m:
        totals[m.group(1)] = int(m.group(2))

def count(pred):
    return sum(v for k, v in cells.items() if pred(k))

ff = count(lambda k: re.match(r"\$_(S?DFF|DFFE|SDFFE|SDFFCE|ALDFF|DFFSR|DFFSRE)", k) or
           k in ("$dff", "$adff", "$dffe", "$adffe", "$sdff", "$sdffe", "$sdffce") or
           re.match(r"FD[CPRSE]*$", k) or re.match(r"SB_DFF", k) or k in ("TRELLIS_FF",))
luts = count(lambda k: re.match(r"LUT\d$", k) or k == "SB_LUT4" or k == "LUT4")
dsps = count(lambda k: k.startswith("DSP48") or k == "SB_MAC16" or k.startswith("MULT18X18"))
brams = count(lambda k: k.startswith("RAMB") or k.startswith("SB_RAM") or k in ("DP16KD", "PDPW16KD"))
lutram = count(lambda k: k.startswith("RAM32") or k.startswith("RAM64") or k.startswith("RAM128") or
               k.startswith("RAM256") or k == "TRELLIS_DPR16X4")
gates = count(lambda k: k.startswith("$_") and not re.match(r"\$_(S?DFF|DFFE|SDFFE|SDFFCE|ALDFF|DFFSR|DLATCH)", k))

# Memories kept as memories ($mem_v2 after `memory -nomap`).
mems = []
cur = None
for line in (d / "memories.txt").read_text().splitlines():
    m = re.match(r"\s*cell \$mem_v2 (\S+)", line)
    if m:
        cur = {"name": m.group(1)}
        mems.append(cur)
        continue
    m = re.match(r"\s*parameter \\(\w+) (.*)", line)
    if m and cur is not None:
        k, v = m.group(1), m.group(2).strip()
        if k in ("WIDTH", "SIZE", "RD_PORTS", "WR_PORTS"):
            if re.match(r"^\d+'[01]+$", v):
                v = int(v.split("'")[1], 2)
            cur[k] = int(v)
        if k == "RD_CLK_ENABLE" and re.match(r"^\d+'[01]+$", v):
            bits = v.split("'")[1]
            cur["read"] = ("synchronous" if set(bits) == {"1"} else
                           "combinational" if set(bits) == {"0"} else "mixed")
        if k == "MEMID":
            cur["memid"] = v.strip('"\\')

m = re.search(r"Longest topological path in \S+ \(length=(\d+)\):", ltp_text)
depth = int(m.group(1)) if m else None
path = re.findall(r"\s+\d+: (\S+)", ltp_text)
depth_module = None
if a.hier:  # one path per module: the deepest, and each module's
    for name, length in re.findall(r"Longest topological path in (\S+) \(length=(\d+)\):", ltp_text):
        short = name.split("\\")[-1] + ("" if "$paramod" not in name else " (" + name[9:17] + ")")
        modules.setdefault(short, {})["logic_depth"] = int(length)
        if depth is None or int(length) > depth or depth_module is None:
            if depth_module is None or int(length) > depth:
                depth, depth_module = int(length), short
    path = []

res = {
    "top": a.top, "n": a.n, "target": a.target, "params": a.params, "seconds": a.seconds,
    "cells": totals.get("cells"), "cells_by_type": cells, "flip_flops": ff,
    "gates": gates, "luts": luts, "dsps": dsps, "brams": brams, "lutram": lutram,
    "memories": mems, "memory_bits": sum(m_.get("WIDTH", 0) * m_.get("SIZE", 0) for m_ in mems),
    "logic_depth": depth, "longest_path_ends": [path[0], path[-1]] if path else [],
    "problems": problems, "hierarchical": a.hier, "depth_module": depth_module,
    "modules": modules,
}
(d / "report.json").write_text(json.dumps(res, indent=1) + "\n")

out = [f"# {a.top} synthesis: " + (f"N = {a.n}, " if a.n else "") + f"target {a.target}" + (f", {a.params}" if a.params else ""), ""]
out.append(f"Yosys 0.23, {a.seconds} s. Cells {totals.get('cells')}, flip-flops {ff}" +
           (f", gates {gates}" if a.target == "generic" else
            f", LUTs {luts}, DSPs {dsps}, block RAMs {brams}, LUT RAMs {lutram}") + ".")
if a.hier:
    out.append(f"Hierarchical (not flattened): totals over the instances (`stat -top`). Logic "
               f"depth per module (ltp, an instance one cell): deepest {depth} in {depth_module}.")
elif a.target == "generic":
    out.append(f"Logic depth (ltp, cells on the longest flop-to-flop path): {depth}"
               + (f", from {path[0]} to {path[-1]}" if path else "") + ".")
else:
    out.append("Logic depth: not computed on the vendor-mapped netlist (ltp takes each carry-chain "
               "cell for one node from every input to every output and reports loops); the "
               "generic target's depth is the frequency proxy.")
out.append("")
if mems:
    out.append("| memory | words | bits/word | read ports | write ports | read |")
    out.append("|---|---:|---:|---:|---:|---|")
    for m_ in mems:
        out.append(f"| {m_.get('memid', m_['name'])} | {m_.get('SIZE')} | {m_.get('WIDTH')} | "
                   f"{m_.get('RD_PORTS')} | {m_.get('WR_PORTS')} | {m_.get('read', '')} |")
    out.append("")
if modules:
    out.append("| module (parametrization) | own cells | own flip-flops | logic depth |")
    out.append("|---|---:|---:|---:|")
    for k, v in sorted(modules.items(), key=lambda kv: -(kv[1].get("cells") or 0)):
        out.append(f"| {k} | {v.get('cells')} | {v.get('flip_flops')} | {v.get('logic_depth')} |")
    out.append("")
out.append("| cell type | count |")
out.append("|---|---:|")
for k, v in sorted(cells.items(), key=lambda kv: -kv[1]):
    out.append(f"| `{k}` | {v} |")
out.append("")
if problems:
    out.append("## Problems")
    out += [f"- {p}" for p in problems]
(d / "report.md").write_text("\n".join(out) + "\n")
print("\n".join(out[:4]))
print(f"report: {d / 'report.md'}")
if problems:
    print("synth.sh: FAILED:\n  " + "\n  ".join(problems[:20]), file=sys.stderr)
    sys.exit(1)
