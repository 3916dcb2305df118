#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-module line and toggle coverage of rtl/ from a verilator_coverage data file.

    scripts/coverage_report.py merged.dat --rtl rtl [--min-line 95] [--min-toggle 90]

A coverage point is identified by (type, module, file, line, column, comment); points of the
same module in several instances, array sizes (N) or processes are merged (covered if any
count > 0): Verilator's parametrized module names (tpu_ctrl__N4_U2000_A800_W4_Q10,
tpu_ctrl__pi2) are merged into the module's name unless --per-parametrization.
Line coverage counts Verilator's line/block points (`v_line/...` pages: blocks,
if/else and case branches); toggle coverage counts `v_toggle/...` points (each bit of each
signal, 0->1 and 1->0 together, as Verilator counts them). Points marked with a
`// verilator coverage_off` region in the RTL are not generated at all (waivers: each needs a
comment saying why the code cannot be reached).

Prints a table per module, the totals, then every uncovered line point (file:line and what it
is) and a summary of uncovered toggle points. Exit status 1 if a total is below its minimum.
"""
import argparse
import collections
import os
import re
import sys


def parse(path):
    points = collections.OrderedDict()
    rx = re.compile(r"^C '(.*)' (\d+)$")
    with open(path, encoding="latin-1") as f:
        for line in f:
            m = rx.match(line.rstrip("\n"))
            if not m:
                continue
            fields = {}
            for item in m.group(1).split("\x01"):
                if not item:
                    continue
                k, _, v = item.partition("\x02")
                fields[k] = v
            page = fields.get("page", "")
            kind, _, module = page.partition("/")
            key = (kind, module, fields.get("f", ""), int(fields.get("l", "0") or 0),
                   fields.get("n", ""), fields.get("o", ""))
            count = int(m.group(2))
            if key in points:
                points[key]["count"] += count
            else:
                points[key] = {"count": count, "S": fields.get("S", "")}
    return points


def merge_parametrizations(points):
    """Merge the points of one module over its parametrizations.

    Verilator names a module by its parameters when they differ from the defaults
    (tpu_ctrl__N4_U2000_A800_W4_Q10) and numbers the others per build (tpu_ctrl__pi2), so the
    same module of the N = 4 and the N = 16 chip may or may not share a name, depending on
    the build. A point (file, line, column, signal[bit]) of a module is covered when any
    parametrization covers it (docs/verification.md "Coverage")."""
    merged = collections.OrderedDict()
    for (kind, module, f, l, col, comment), v in points.items():
        key = (kind, re.sub(r"__.*$", "", module), f, l, col, comment)
        if key in merged:
            merged[key]["count"] += v["count"]
        else:
            merged[key] = dict(v)
    return merged


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--rtl", default="rtl")
    ap.add_argument("--min-line", type=float, default=0)
    ap.add_argument("--min-toggle", type=float, default=0)
    ap.add_argument("--max-uncovered", type=int, default=400,
                    help="uncovered toggle points listed at most")
    ap.add_argument("--per-parametrization", action="store_true",
                    help="keep Verilator's parametrized module names (tpu_ctrl__N4_..., "
                         "tpu_ctrl__pi2) apart instead of merging them into tpu_ctrl")
    args = ap.parse_args()
    rtl = os.path.realpath(args.rtl)
    points = parse(args.data)
    if not args.per_parametrization:
        points = merge_parametrizations(points)
    # Only the RTL of this project (not Verilator's own files).
    points = {k: v for k, v in points.items()
              if os.path.realpath(k[2]).startswith(rtl + os.sep) or not os.path.isabs(k[2])}

    stats = collections.defaultdict(lambda: {"v_line": [0, 0], "v_toggle": [0, 0]})
    for (kind, module, _f, _l, _n, _o), v in points.items():
        if kind not in ("v_line", "v_toggle"):
            continue
        s = stats[module][kind]
        s[1] += 1
        if v["count"] > 0:
            s[0] += 1

    def pct(c, t):
        return 100.0 * c / t if t else 100.0

    print(f"{'module':<22} {'line':>16} {'toggle':>18}")
    tot = {"v_line": [0, 0], "v_toggle": [0, 0]}
    for module in sorted(stats):
        s = stats[module]
        for kind in tot:
            tot[kind][0] += s[kind][0]
            tot[kind][1] += s[kind][1]
        print(f"{module:<22} {pct(*s['v_line']):6.1f}% {s['v_line'][0]:4}/{s['v_line'][1]:<4} "
              f"{pct(*s['v_toggle']):6.1f}% {s['v_toggle'][0]:5}/{s['v_toggle'][1]:<5}")
    line_pct, toggle_pct = pct(*tot["v_line"]), pct(*tot["v_toggle"])
    print(f"{'TOTAL':<22} {line_pct:6.1f}% {tot['v_line'][0]:4}/{tot['v_line'][1]:<4} "
          f"{toggle_pct:6.1f}% {tot['v_toggle'][0]:5}/{tot['v_toggle'][1]:<5}")

    print("\nUncovered line points (file:line  what):")
    n = 0
    for (kind, module, f, l, col, comment), v in sorted(points.items(), key=lambda kv: (kv[0][2], kv[0][3])):
        if kind == "v_line" and v["count"] == 0:
            n += 1
            extra = f" (lines {v['S']})" if v["S"] and v["S"] != str(l) else ""
            print(f"  {os.path.relpath(f) if os.path.isabs(f) else f}:{l}  {comment}{extra}")
    if n == 0:
        print("  none")

    print("\nUncovered toggle points (module: signal[bit]):")
    shown = 0
    by_sig = collections.defaultdict(list)
    for (kind, module, f, l, col, comment), v in points.items():
        if kind == "v_toggle" and v["count"] == 0:
            sig = re.sub(r"\[\d+\]$", "", comment)
            by_sig[(module, sig)].append(comment)
    for (module, sig), bits in sorted(by_sig.items()):
        if shown >= args.max_uncovered:
            print(f"  ... {len(by_sig) - shown} more signals")
            break
        shown += 1
        print(f"  {module}: {sig} ({len(bits)} bit{'s' if len(bits) != 1 else ''})")
    if not by_sig:
        print("  none")

    ok = line_pct >= args.min_line and toggle_pct >= args.min_toggle
    print(f"\nline {line_pct:.1f}% (min {args.min_line}), toggle {toggle_pct:.1f}% "
          f"(min {args.min_toggle}): {'OK' if ok else 'BELOW TARGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
