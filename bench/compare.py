#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Simulated cycles per second of two builds of the benchmarks, run interleaved on one machine.

Each repetition runs every (N, harness) of the "before" build and then the same of the "after"
build back to back, so both see the same machine state; the ratio of a pair is after / before,
and the table gives medians. Both the harness's own wall-clock figure (`cps`, timed part only)
and one from the process's user + system CPU time (the whole run, warm-up included, so it is
lower; it does not count time the process waited for a CPU, which on a shared machine is most
of the wall-clock difference between runs) are reported. Every pair must report the same
simulated CYCLES (same chip) and no result mismatch.

    bench/compare.py --before build-perf/base --after build-perf/new \
        --case 256:mxu --case 256:sc --case 16:sc --reps 3 [--json out.json]

A case is N:HARNESS[:EXTRA ARGS] (bench/bench_<harness>_n<N> of each build directory).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys


def parse_result(text):
    for line in text.splitlines():
        if line.startswith("RESULT "):
            d = {}
            for kv in line.split()[1:]:
                k, _, v = kv.partition("=")
                try:
                    d[k] = float(v)
                except ValueError:
                    d[k] = v
            return d
    return None


def run(bdir, n, harness, extra):
    exe = os.path.join(bdir, "bench", "bench_%s_n%d" % (harness, n))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([exe] + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = parse_result(p.stdout)
    if p.returncode != 0 or r is None:
        sys.exit("%s failed (exit %d):\n%s" % (exe, p.returncode, p.stdout[-2000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    total_cycles = r.get("start_cycle", 0) + r.get("warmup", 0) + r["measured_cycles"]
    r["cpu_seconds"] = cpu
    r["cpu_cps"] = total_cycles / cpu if cpu > 0 else float("nan")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    cases = []
    for c in args.case:
        parts = c.split(":", 2)
        cases.append((int(parts[0]), parts[1], parts[2].split() if len(parts) > 2 else []))
    res = {"before": args.before, "after": args.after, "reps": args.reps, "cases": []}
    rows = {c: {"before": [], "after": []} for c in range(len(cases))}
    for rep in range(args.reps):
        for i, (n, h, extra) in enumerate(cases):
            b = run(args.before, n, h, extra)
            a = run(args.after, n, h, extra)
            for k in ("start_cycle", "measured_cycles"):
                if b.get(k) != a.get(k):
                    sys.exit("N=%d %s: %s differs: before %s, after %s" % (n, h, k, b.get(k), a.get(k)))
            if b.get("mismatches", 0) or a.get("mismatches", 0):
                sys.exit("N=%d %s: result mismatches" % (n, h))
            rows[i]["before"].append(b)
            rows[i]["after"].append(a)
            print("rep %d N=%d %s: cps %.1f -> %.1f (x%.2f), CPU-time cps %.1f -> %.1f (x%.2f)" % (
                rep + 1, n, h, b["cps"], a["cps"], a["cps"] / b["cps"], b["cpu_cps"], a["cpu_cps"],
                a["cpu_cps"] / b["cpu_cps"]), flush=True)
    print("\n| N | harness | cycles | before (wall) | after (wall) | ratio | before (CPU time) | "
          "after (CPU time) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, (n, h, extra) in enumerate(cases):
        bs, as_ = rows[i]["before"], rows[i]["after"]
        ratio = statistics.median(a["cps"] / b["cps"] for a, b in zip(as_, bs))
        cratio = statistics.median(a["cpu_cps"] / b["cpu_cps"] for a, b in zip(as_, bs))
        case = {"n": n, "harness": h, "extra": extra,
                "cycles": bs[0].get("start_cycle", 0) + bs[0].get("warmup", 0) + bs[0]["measured_cycles"],
                "before_cps": statistics.median(b["cps"] for b in bs),
                "after_cps": statistics.median(a["cps"] for a in as_),
                "ratio": ratio,
                "before_cpu_cps": statistics.median(b["cpu_cps"] for b in bs),
                "after_cpu_cps": statistics.median(a["cpu_cps"] for a in as_),
                "cpu_ratio": cratio, "runs": {"before": bs, "after": as_}}
        res["cases"].append(case)
        print("| %d | %s | %d | %.1f | %.1f | %.2fx | %.1f | %.1f | %.2fx |" % (
            n, h, case["cycles"], case["before_cps"], case["after_cps"], ratio,
            case["before_cpu_cps"], case["after_cpu_cps"], cratio))
    res["loadavg"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
