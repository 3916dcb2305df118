#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Interleaved A/B simulation-speed benchmark of two tpusim builds (docs/performance.md).

Runs `tpusim run-cnn --json` of the same model and images with binary A and binary B in turns
(A B A B ..., so both see the same machine load), and reports per build the simulated cycles,
wall and CPU seconds, cycles per CPU second (user + sys of the run: on a shared machine the
wall clock mostly measures the other processes) and the simulator's own sim_cycles_per_second
(per wall second), then the B / A ratio of each repetition, their median and spread.

  scripts/bench_ab.py --a OLD/tpusim --b NEW/tpusim [--reps 5] [--model F.onnx] [--images 64]
                      [--batch 8] [--json OUT.json]

Fails (exit 1) when the two builds simulate different cycle counts: a speed comparison of
different work means nothing.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys


def run_once(exe, args):
    """One run; returns its figures (cycles, wall, cpu seconds)."""
    cmd = [exe, "run-cnn", "--json", "--quiet", "--no-profile", "--images", str(args.images),
           "--batch", str(args.batch)]
    if args.model:
        cmd += ["--model", args.model]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench_ab: %s failed (exit %d): %s" % (exe, p.returncode, p.stderr[-800:]))
    d = json.loads(p.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cycles": d["cycles_total"], "wall_seconds": d["wall_seconds"], "cpu_seconds": cpu,
            "cycles_per_cpu_second": d["cycles_total"] / cpu if cpu > 0 else None,
            "sim_cycles_per_second": d["sim_cycles_per_second"],
            "matches_golden": d["matches_golden"]}


def summary(xs):
    xs = [x for x in xs if x is not None]
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)} if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True, help="tpusim of the reference build")
    ap.add_argument("--b", required=True, help="tpusim of the build measured against it")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--model", default="", help="ONNX model (default: run-cnn's bundled one)")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()
    for exe in (args.a, args.b):
        if not os.access(exe, os.X_OK):
            sys.exit("bench_ab: %s is not an executable" % exe)
    runs = {"a": [], "b": []}
    for rep in range(args.reps):
        for key in ("a", "b") if rep % 2 == 0 else ("b", "a"):
            runs[key].append(run_once(getattr(args, key), args))
            r = runs[key][-1]
            print("rep %d %s: %d cycles, %.2f s CPU, %.0f cycles/CPU-s, %.0f cycles/wall-s" %
                  (rep + 1, key, r["cycles"], r["cpu_seconds"], r["cycles_per_cpu_second"],
                   r["sim_cycles_per_second"]), file=sys.stderr)
    cycles = {r["cycles"] for k in runs for r in runs[k]}
    ratio_cpu = [b["cycles_per_cpu_second"] / a["cycles_per_cpu_second"]
                 for a, b in zip(runs["a"], runs["b"])]
    ratio_wall = [b["sim_cycles_per_second"] / a["sim_cycles_per_second"]
                  for a, b in zip(runs["a"], runs["b"])]
    out = {"a": args.a, "b": args.b, "model": args.model or "(bundled fashion_cnn)",
           "images": args.images, "batch": args.batch, "reps": args.reps,
           "same_cycles": len(cycles) == 1, "cycles": sorted(cycles),
           "a_cycles_per_cpu_second": summary([r["cycles_per_cpu_second"] for r in runs["a"]]),
           "b_cycles_per_cpu_second": summary([r["cycles_per_cpu_second"] for r in runs["b"]]),
           "ratio_cpu": summary(ratio_cpu), "ratio_wall": summary(ratio_wall),
           "ratios_cpu": ratio_cpu, "ratios_wall": ratio_wall, "runs": runs,
           "loadavg": os.getloadavg()}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    if len(cycles) != 1:
        print("bench_ab: the builds simulate different cycle counts: %s" % sorted(cycles),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
