#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Simulator benchmark of tpu-rtl: builds the harnesses of bench/, runs them and writes
docs/performance.md. Entry point: scripts/bench.sh (same arguments; --help).

Everything is measured in one run: cycles/s of the full core through the SystemC testbench,
through a bare Verilated C++ harness and with --threads 2, of the bare MXU, of the MXU under
Icarus; VCD off/on/windowed; build time and peak memory per N; the scale check at large N;
a callgrind profile. Raw results go to <build-root>/results.json; --render-only rewrites the
report from them.
"""
import argparse
import collections
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")

# Simulated cycles per run, chosen for ~1-4 s per run on this machine (the SystemC harness);
# --quick divides them by 5.
CYCLES = {4: 3_000_000, 8: 2_000_000, 16: 1_000_000, 32: 300_000, 64: 150_000,
          128: 40_000, 256: 90_000}
# Icarus runs of the bare MXU: cycles per run (it is 100-1000x slower).
ICARUS_CYCLES = {4: 20_000, 8: 12_000, 16: 4_000, 32: 1_200, 64: 300, 128: 80, 256: 20}


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def sh(cmd, cwd=None, timeout=None, check=True, nice=False):
    if nice:
        cmd = ["nice", "-n", "10"] + cmd
    p = subprocess.run(cmd, cwd=cwd, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd),
                                                              p.stdout[-4000:]))
    return p


def loadavg():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return [0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------
# Peak memory of a process tree: /usr/bin/time -v reports the largest single process
# (ru_maxrss); a sampler adds up the RSS of every process in the tree (ninja -j2 runs two
# compilers at once).

def _children_map():
    kids = collections.defaultdict(list)
    rss = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
            fields = st[st.rindex(")") + 2:].split()
            kids[int(fields[1])].append(int(pid))
            rss[int(pid)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
        except (OSError, ValueError, IndexError):
            pass
    return kids, rss


def measured(cmd, cwd=None, nice=True, timeout=None):
    """Runs cmd under /usr/bin/time -v; returns (returncode, output, stats)."""
    full = (["nice", "-n", "10"] if nice else []) + ["/usr/bin/time", "-v"] + cmd
    t0 = time.time()
    p = subprocess.Popen(full, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            kids, rss = _children_map()
            stack, total = [p.pid], 0
            while stack:
                q = stack.pop()
                total += rss.get(q, 0)
                stack.extend(kids.get(q, []))
            peak[0] = max(peak[0], total)
            done.wait(0.25)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        out += "\n[bench] TIMEOUT after %s s" % timeout
    done.set()
    th.join()
    wall = time.time() - t0
    stats = {"wall_s": wall, "peak_tree_kb": peak[0]}
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out)
    stats["max_rss_kb"] = int(m.group(1)) if m else 0
    m = re.search(r"User time \(seconds\): ([\d.]+)", out)
    u = float(m.group(1)) if m else 0.0
    m = re.search(r"System time \(seconds\): ([\d.]+)", out)
    stats["cpu_s"] = u + (float(m.group(1)) if m else 0.0)
    return p.returncode, out, stats


# ---------------------------------------------------------------------------------------------
# Builds

def configure(src, bdir, n, extra=()):
    cmd = ["cmake", "-S", src, "-B", bdir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
           "-DTPU_BUILD_TESTS=OFF", "-DTPU_BUILD_BENCH=ON", "-DTPU_SIM_N_LIST=%d" % n,
           "-DTPU_BENCH_N_LIST=%d" % n] + list(extra)
    rc, out, st = measured(cmd)
    return rc == 0, out, st


def first_errors(text, limit=6):
    errs = []
    for line in text.splitlines():
        if "%Error" in line and "Exiting due to" not in line:
            line = re.sub(r"^.*?(%Error)", r"\1", line).strip()
            line = line.replace(ROOT + "/", "")
            if line not in errs:
                errs.append(line)
    return errs[:limit]


def verilate_seconds(bdir, n):
    """Duration of the last Verilator run of tpu_sim_n<N>, from .ninja_log (the entry of its
    first generated file with the newest mtime; ninja may have recompacted the log)."""
    best = None
    try:
        for line in open(os.path.join(bdir, ".ninja_log")).read().splitlines()[1:]:
            f = line.split("\t")
            if len(f) >= 4 and f[3].endswith("tpu_sim_n%d.dir/Vtpu_core.dir/Vtpu_core.cpp" % n):
                if best is None or int(f[2]) > best[0]:
                    best = (int(f[2]), (int(f[1]) - int(f[0])) / 1000.0)
    except (OSError, ValueError):
        return None
    return best[1] if best else None


def build_n(args, n, res):
    """Configures and builds every harness of N, then times a clean rebuild of the SystemC core
    library tpu_sim_n<N> (verilate + compile). Fills res['builds'][n]."""
    b = {"n": n, "ok": False}
    res["builds"][str(n)] = b
    bdir = os.path.join(args.build_root, "n%d" % n)
    ok, out, st = (True, "", {})
    if not args.skip_build or not os.path.exists(os.path.join(bdir, "build.ninja")):
        log("configure N=%d" % n)
        ok, out, st = configure(ROOT, bdir, n)
        if not ok:
            b["rtl_errors"] = first_errors(out)
            log("N=%d does not verilate: %s" % (n, "; ".join(b["rtl_errors"][:2])))
            b["error"] = "configure failed"
            return b
    b["dir"] = bdir
    b["configure_s"] = st.get("wall_s")
    targets = ["bench_sc_n%d" % n, "bench_bare_n%d" % n, "bench_bare_mt_n%d" % n,
               "bench_mxu_n%d" % n]
    if n == args.vcd_n:
        targets.append("bench_bare_trace_n%d" % n)
    log("build N=%d: %s" % (n, " ".join(targets)))
    rc, out, st = measured(["ninja", "-j", str(args.jobs)] + targets, cwd=bdir,
                           timeout=args.build_timeout)
    if rc != 0:
        b["error"] = "build failed: " + out[-1500:]
        return b
    b["all_targets_s"] = st["wall_s"]
    # A compiler cache (CMake reads the launcher from the environment) makes that time a cache's.
    b["launcher"] = os.environ.get("CMAKE_CXX_COMPILER_LAUNCHER", "")
    if not args.skip_build_timing:
        # Clean rebuild of the core library alone: its Verilator run and its compile.
        lib = "tpu_sim_n%d" % n
        sh(["ninja", "-t", "clean", lib], cwd=bdir)
        log("timed rebuild of %s" % lib)
        rc, out, st = measured(["ninja", "-j", str(args.jobs), lib], cwd=bdir,
                               timeout=args.build_timeout)
        if rc != 0:
            b["error"] = "timed rebuild failed: " + out[-1500:]
            return b
        b["lib"] = st
        b["lib"]["verilate_s"] = verilate_seconds(bdir, n)
        vdir = os.path.join(bdir, "sim", "CMakeFiles", "%s.dir" % lib, "Vtpu_core.dir")
        size = 0
        for fn in os.listdir(vdir) if os.path.isdir(vdir) else []:
            if fn.endswith((".cpp", ".h")):
                size += os.path.getsize(os.path.join(vdir, fn))
        b["lib"]["cpp_bytes"] = size
    b["ok"] = True
    return b


# ---------------------------------------------------------------------------------------------
# Runs

def parse_result(text):
    for line in text.splitlines():
        if line.startswith("RESULT "):
            d = {}
            for kv in line.split()[1:]:
                k, _, v = kv.partition("=")
                try:
                    d[k] = float(v) if re.match(r"^-?[\d.]+(e[+-]?\d+)?$", v) else v
                except ValueError:
                    d[k] = v
            return d
    return None


def run_harness(bdir, n, harness, extra, timeout=3600):
    exe = os.path.join(bdir, "bench", "bench_%s_n%d" % (harness, n))
    la = loadavg()[0]
    p = subprocess.run([exe] + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    r = parse_result(p.stdout)
    if r is None or p.returncode != 0:
        return {"error": p.stdout[-800:], "harness": harness, "n": n, "load": la}
    r["load"] = la
    return r


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main_runs(args, n, bdir, res, reps, label="main", threads=True):
    cyc = int(CYCLES.get(n, 50_000) / (5 if args.quick else 1))
    runs = collections.defaultdict(list)
    pairs = collections.defaultdict(list)
    for rep in range(reps):
        this = {}
        for h in ("mxu", "bare", "sc"):
            log("N=%d %s rep %d/%d: %s" % (n, label, rep + 1, reps, h))
            r = run_harness(bdir, n, h, ["--cycles", str(cyc)])
            runs[h].append(r)
            this[h] = r.get("cps")
        if all(this.values()):
            pairs["sc_vs_bare"].append(this["bare"] / this["sc"])
            pairs["sc_vs_mxu"].append(this["mxu"] / this["sc"])
            pairs["bare_vs_mxu"].append(this["mxu"] / this["bare"])
    if threads and args.threads_reps > 0:
        mt_cyc = max(2000, cyc // 5)
        for rep in range(min(reps, args.threads_reps)):
            log("N=%d --threads 2 rep %d" % (n, rep + 1))
            r1 = run_harness(bdir, n, "bare", ["--cycles", str(mt_cyc)])
            r2 = run_harness(bdir, n, "bare_mt", ["--cycles", str(mt_cyc)])
            runs["bare_short"].append(r1)
            runs["bare_mt"].append(r2)
            if r1.get("cps") and r2.get("cps"):
                pairs["mt_vs_bare"].append(r2["cps"] / r1["cps"])
    out = {"cycles_arg": cyc, "runs": runs, "pairs": pairs, "commit": res["env"]["commit"]}
    res.setdefault(label, {})[str(n)] = out
    return out


# The SystemC harness of a reference commit (issue 14's "today": --speedup-ref) next to this
# tree's, built three ways: as the tests build it (assertions on), without assertions (as the
# reference, which had none), and as scripts/build_pgo.sh builds tpusim: without assertions and
# VCD tracing, profile-guided (TPU_SIM_PGO, trained on a short run of the same harness with
# another length). Runs back to back, ratios per repetition.
SPEEDUP_VARIANTS = [("ref", "reference"), ("assert", "this tree, assertions on"),
                    ("plain", "this tree, assertions off"),
                    ("pgo", "this tree, assertions and VCD tracing off, profile-guided")]


def speedup_build(args, n, out, main_dir=None):
    """Builds bench_sc_n<N> for every variant; returns {variant: build dir}. The assertions-on
    variant is the main table's build of N when there is one (the default configuration)."""
    dirs = {}
    ref_src = os.path.join(args.build_root, "ref-src")
    if not os.path.exists(os.path.join(ref_src, "CMakeLists.txt")):
        sh(["git", "-C", ROOT, "worktree", "add", "--detach", "--force", ref_src, args.speedup_ref])
    rev = sh(["git", "-C", ref_src, "rev-parse", "--short", "HEAD"]).stdout.strip()
    out["ref_commit"] = rev
    target = "bench_sc_n%d" % n

    def build(name, src, bdir, extra, no_ccache=False):
        """Configures and builds target in bdir; records and returns False on failure. A
        compiler cache may hand back an object compiled with another profile (or none), so
        profile-guided builds run without it."""
        ok, text, _ = configure(src, bdir, n, extra)
        env = ["env", "CCACHE_DISABLE=1"] if no_ccache else []
        rc, text2, _ = (measured(env + ["ninja", "-j", str(args.jobs), target], cwd=bdir,
                                 timeout=args.build_timeout) if ok else (1, "", {}))
        if not ok or rc != 0:
            out.setdefault("errors", {})[name] = (text + text2)[-1500:]
            return False
        return True

    plan = [("ref", ref_src, []), ("assert", ROOT, ["-DTPU_SIM_ASSERT=ON"]),
            ("plain", ROOT, ["-DTPU_SIM_ASSERT=OFF"]),
            ("pgo", ROOT, ["-DTPU_SIM_ASSERT=OFF", "-DTPU_SIM_TRACE=OFF",
                           "-DTPU_SIM_PGO=generate"])]
    for name, src, extra in plan:
        if name == "assert" and main_dir:
            dirs[name] = main_dir
            continue
        bdir = os.path.join(args.build_root, "speedup", "n%d-%s" % (n, name))
        log("speedup N=%d: build %s" % (n, name))
        if name != "pgo":
            if build(name, src, bdir, extra):
                dirs[name] = bdir
            continue
        pgo_dir = os.path.join(bdir, "pgo")
        shutil.rmtree(pgo_dir, ignore_errors=True)
        if not build(name, src, bdir, extra + ["-DTPU_SIM_PGO_DIR=" + pgo_dir], no_ccache=True):
            continue
        train = max(2000, int(CYCLES.get(n, 50_000) / 20))
        log("speedup N=%d: PGO training run, %d cycles" % (n, train))
        r = run_harness(bdir, n, "sc", ["--cycles", str(train)])
        if "error" in r:
            out.setdefault("errors", {})[name] = "training run: " + r["error"]
            continue
        if build(name, src, bdir, ["-DTPU_SIM_PGO=use"], no_ccache=True):
            out["pgo_train_cycles"] = train
            dirs[name] = bdir
    return dirs


def speedup_runs(args, n, res, main_dir=None):
    out = {"runs": collections.defaultdict(list), "ratios": collections.defaultdict(list),
           "commit": res["env"]["commit"]}
    res.setdefault("speedup", {})[str(n)] = out
    dirs = speedup_build(args, n, out, main_dir)
    cyc = int(CYCLES.get(n, 50_000) / (5 if args.quick else 1))
    for rep in range(args.speedup_reps):
        this = {}
        for name, _ in SPEEDUP_VARIANTS:
            if name not in dirs:
                continue
            log("speedup N=%d rep %d/%d: %s" % (n, rep + 1, args.speedup_reps, name))
            r = run_harness(dirs[name], n, "sc", ["--cycles", str(cyc)])
            out["runs"][name].append(r)
            this[name] = r.get("cps")
        for name, _ in SPEEDUP_VARIANTS[1:]:
            if this.get("ref") and this.get(name):
                out["ratios"][name].append(this[name] / this["ref"])
    # The same chip: every variant counts the same CYCLES for the same workload.
    cycles = {name: {r.get("counter_cycles") for r in runs if "error" not in r}
              for name, runs in out["runs"].items()}
    out["same_cycles"] = len({c for v in cycles.values() for c in v}) == 1
    return out


def vcd_runs(args, n, bdir, res):
    """VCD off / on / windowed through the SystemC Chip, and trace compiled in but off (bare)."""
    vdir = os.path.join(args.build_root, "vcd")
    os.makedirs(vdir, exist_ok=True)
    out = collections.defaultdict(list)
    on_cycles = int(args.vcd_cycles / (5 if args.quick else 1))
    long_cycles = int(CYCLES.get(n, 50_000) / (5 if args.quick else 1))
    warm = 5000
    win = ["--vcd-from", "0", "--vcd-to", "1000"]
    for rep in range(args.vcd_reps):
        log("N=%d VCD rep %d" % (n, rep + 1))
        f = os.path.join(vdir, "on.vcd")
        off = run_harness(bdir, n, "sc", ["--cycles", str(on_cycles)])
        on = run_harness(bdir, n, "sc", ["--cycles", str(on_cycles), "--vcd", f])
        on["vcd_bytes"] = os.path.getsize(f) if os.path.exists(f) else 0
        if os.path.exists(f):
            os.remove(f)
        f = os.path.join(vdir, "win.vcd")
        woff = run_harness(bdir, n, "sc", ["--cycles", str(long_cycles), "--warmup", str(warm)])
        w = run_harness(bdir, n, "sc", ["--cycles", str(long_cycles), "--warmup", str(warm),
                                        "--vcd", f] + win)
        w["vcd_bytes"] = os.path.getsize(f) if os.path.exists(f) else 0
        if os.path.exists(f):
            os.remove(f)
        b = run_harness(bdir, n, "bare", ["--cycles", str(long_cycles)])
        bt = run_harness(bdir, n, "bare_trace", ["--cycles", str(long_cycles)])
        for k, v in (("off", off), ("on", on), ("win_off", woff), ("win", w), ("bare", b),
                     ("bare_trace", bt)):
            out[k].append(v)
    res["vcd"] = {"n": n, "on_cycles": on_cycles, "long_cycles": long_cycles, "warmup": warm,
                  "window": [0, 1000], "runs": out}


# ---------------------------------------------------------------------------------------------
# Icarus

def _sub(path, old, new):
    s = open(path).read()
    if old not in s:
        return False
    open(path, "w").write(s.replace(old, new))
    return True


def icarus_stages(rtl_dir):
    """Source changes that get the core through Icarus 11, in the order its errors show up.
    Each is (title, where, function(dir) -> bool applied)."""

    def int_unsigned(d):
        hit = False
        for fn in os.listdir(d):
            if fn.endswith(".sv"):
                p = os.path.join(d, fn)
                s = open(p).read()
                if "int unsigned" in s:
                    open(p, "w").write(s.replace("int unsigned", "int"))
                    hit = True
        return hit

    def func_output(d):
        p = os.path.join(d, "tpu_regs.sv")
        a = _sub(p, "function automatic logic [31:0] read_value(input logic [11:0] a, output logic ok);\n    ok = 1'b1;",
                 "function automatic logic [32:0] read_value(input logic [11:0] a);\n    logic ok;\n    ok = 1'b1;")
        b = _sub(p, "        default: ok = 1'b0;\n      endcase\n    end\n  endfunction",
                 "        default: ok = 1'b0;\n      endcase\n    end\n    read_value[32] = ok;\n  endfunction")
        c = _sub(p, "        logic ok;\n        rdata_q  <= read_value(araddr_i, ok);\n        rresp_q  <= ok ? 2'b00 : 2'b10;",
                 "        logic [32:0] rv;\n        rv = read_value(araddr_i);\n        rdata_q  <= rv[31:0];\n        rresp_q  <= rv[32] ? 2'b00 : 2'b10;")
        return a and b and c

    def wire_arrays(d):
        p = os.path.join(d, "tpu_core.sv")
        s = open(p).read()
        s2, k = re.subn(r"^(\s*)logic(\s[^;=]*\w+\s*\[[A-Za-z0-9]+\];)", r"\1wire\2", s,
                        flags=re.M)
        open(p, "w").write(s2)
        return k > 0

    return [
        ("`int unsigned` parameter / localparam / variable types", "every file", int_unsigned),
        ("function with an `output` argument", "tpu_regs.sv (read_value)", func_output),
        ("unpacked-array *variables* connected to output ports stay X in the parent "
         "(declared as `wire` instead)", "tpu_core.sv (18 arrays)", wire_arrays),
    ]


def icarus_errors(text):
    errs = []
    for line in text.splitlines():
        if ("error" in line or "syntax" in line or "assert" in line or "I give up" in line
                or "Abort" in line) and "sorry: constant selects" not in line:
            line = re.sub(r"^/.*/(rtl|bench)/", r"\1/", line.strip())
            line = re.sub(r"^.*/(tpu_[a-z_]+\.sv)", r"rtl/\1", line)
            if line not in errs:
                errs.append(line)
    return errs[:6]


def timed_vvp(cmd, timeout):
    """Runs vvp, timestamping MARK lines; returns (marks {name: (cycle, t)}, result, text)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         bufsize=1)
    marks, lines, t_end = {}, [], time.time() + timeout
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    try:
        for line in p.stdout:
            now = time.time()
            lines.append(line.rstrip())
            m = re.match(r"MARK (\w+) (\d+)", line)
            if m:
                marks[m.group(1)] = (int(m.group(2)), now)
    finally:
        timer.cancel()
        p.wait()
    text = "\n".join(lines)
    return marks, parse_result(text), text, time.time() > t_end


def icarus(args, res, main_dirs):
    out = {"version": "", "core_stages": [], "mxu": {}}
    res["icarus"] = out
    if not shutil.which("iverilog"):
        out["error"] = "iverilog not installed (apt-get install iverilog)"
        return
    out["version"] = re.sub(r"\s*version\s*|\s*\(.*$", " ", sh(["iverilog", "-V"], check=False)
                            .stdout.splitlines()[0]).strip()
    idir = os.path.join(args.build_root, "icarus")
    if os.path.isdir(idir):
        shutil.rmtree(idir)
    os.makedirs(idir)
    rtl_src = os.path.join(ROOT, "rtl")
    srcs = lambda d: [os.path.join(d, "tpu_pkg.sv")] + sorted(
        os.path.join(d, f) for f in os.listdir(d) if f.endswith(".sv") and f != "tpu_pkg.sv")

    # 1. The whole core: what Icarus rejects, stage by stage.
    n = 16 if 16 in main_dirs else min(main_dirs)
    img = os.path.join(idir, "img%d.hex" % n)
    p = sh([os.path.join(main_dirs[n], "bench", "bench_bare_n%d" % n), "--cycles", "4000",
            "--write-image", img])
    info = dict(kv.split("=") for kv in p.stdout.split()[1:])
    work = os.path.join(idir, "core-rtl")
    shutil.copytree(rtl_src, work)
    stages = [("as is (rtl/)", "", None)] + icarus_stages(work)
    for title, where, fn in stages:
        log("Icarus, whole core: %s" % title)
        applied = fn(work) if fn else True
        vvp = os.path.join(idir, "core.vvp")
        c = sh(["iverilog", "-g2012", "-o", vvp, "-s", "tb_core", "-P", "tb_core.N=%d" % n,
                "-I", work,  # rtl/tpu_assert.svh
                "-P", "tb_core.MEM_WORDS=%s" % info["mem_words"],
                os.path.join(BENCH, "icarus", "tb_core.sv")] + srcs(work), check=False,
               timeout=600)
        st = {"title": title, "where": where, "applied": applied,
              "compiles": c.returncode == 0 and os.path.exists(vvp),
              "errors": icarus_errors(c.stdout) if c.returncode else []}
        if st["compiles"]:
            marks, r, text, _ = timed_vvp(
                ["vvp", "-n", vvp, "+image=" + img, "+cmd_addr=" + info["cmd_addr"],
                 "+cmd_count=" + info["cmd_count"], "+out_addr=" + info["out_addr"],
                 "+out_bytes=" + info["out_bytes"], "+mem_base=" + info["mem_base"],
                 "+warmup=" + info["warmup"], "+max_cycles=40000"], timeout=300)
            st["run"] = r or {"error": text[-300:]}
        out["core_stages"].append(st)
        if os.path.exists(vvp):
            os.remove(vvp)
        if st["compiles"] and r and r.get("mismatches") == 0 and r.get("timeout", 0) == 0:
            break

    # 2. The bare MXU (only `int unsigned` changed), against the Verilated bare MXU.
    mdir = os.path.join(idir, "mxu-rtl")
    os.makedirs(mdir)
    s = open(os.path.join(rtl_src, "tpu_mxu.sv")).read().replace("int unsigned", "int")
    open(os.path.join(mdir, "tpu_mxu.sv"), "w").write(s)
    for n in args.icarus_ns:
        if n not in main_dirs:
            continue
        r_rows = max(256, n * n // 8)
        r_rows = (r_rows + 63) // 64 * 64
        vvp = os.path.join(idir, "mxu%d.vvp" % n)
        c = sh(["iverilog", "-g2012", "-o", vvp, "-s", "tb_mxu", "-P", "tb_mxu.N=%d" % n,
                "-P", "tb_mxu.R=%d" % r_rows, os.path.join(BENCH, "icarus", "tb_mxu.sv"),
                os.path.join(mdir, "tpu_mxu.sv")], check=False, timeout=600)
        entry = {"runs": [], "verilator": [], "pairs": []}
        out["mxu"][str(n)] = entry
        if c.returncode != 0:
            entry["error"] = icarus_errors(c.stdout)
            continue
        cyc = int(ICARUS_CYCLES.get(n, 1000) / (4 if args.quick else 1))
        warm = min(200, cyc // 5)
        for rep in range(args.icarus_reps):
            log("Icarus MXU N=%d rep %d (%d cycles)" % (n, rep + 1, cyc))
            marks, r, text, to = timed_vvp(["vvp", "-n", vvp, "+cycles=%d" % cyc,
                                            "+warmup=%d" % warm], timeout=args.icarus_timeout)
            if "warm" in marks and "done" in marks:
                dc = marks["done"][0] - marks["warm"][0]
                dt = marks["done"][1] - marks["warm"][1]
                run = {"cycles": dc, "seconds": dt, "cps": dc / dt, "load": loadavg()[0],
                       "checked": (r or {}).get("checked"),
                       "mismatches": (r or {}).get("mismatches")}
            else:
                run = {"error": "no MARK lines" + (" (timeout)" if to else "") + text[-200:]}
            entry["runs"].append(run)
            v = run_harness(main_dirs[n], n, "mxu",
                            ["--cycles", str(int(CYCLES.get(n, 50000) / (5 if args.quick else 1)))])
            entry["verilator"].append(v)
            if run.get("cps") and v.get("cps"):
                entry["pairs"].append(v["cps"] / run["cps"])
        os.remove(vvp)


# ---------------------------------------------------------------------------------------------
# Profile (callgrind: deterministic instruction counts)

def callgrind_ir(exe, extra, outfile):
    # Costs per instruction, positions and names written out in full (callgrind_instructions).
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outfile,
                        "--dump-instr=yes", "--compress-pos=no", "--compress-strings=no",
                        exe] + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    m = re.search(r"(?:refs|Collected)\s*:\s*([\d,]+)", p.stdout)
    return int(m.group(1).replace(",", "")) if m else None, parse_result(p.stdout)


def callgrind_instructions(cgfile):
    """The self cost of every instruction in a callgrind_ir output file (per-instruction
    positions and names written in full): (object, function, source file, address, line, Ir)."""
    obj = fn = fl = fi = None
    after_calls = False  # the line after calls= gives a call's inclusive cost, not its own
    with open(cgfile) as f:
        for line in f:
            if line.startswith("ob="):
                obj = line[3:].strip()
            elif line.startswith("fl="):
                fl, fi = line[3:].strip(), None
            elif line.startswith(("fi=", "fe=")):
                fi = line[3:].strip()
            elif line.startswith("fn="):
                fn, fi = line[3:].strip(), None
            elif line.startswith("calls="):
                after_calls = True
            elif line.startswith("0x"):
                if after_calls:
                    after_calls = False
                    continue
                addr, src_line, ir = line.split()[:3]
                yield obj, fn, fi or fl, int(addr, 16), int(src_line), int(ir)


def hot_code_kb(cgfile, cycles):
    """Per-cycle code: KB of 64-byte instruction-cache lines holding an instruction the run
    executed at least once every other simulated cycle on average (cycles / 2 times), in total
    and inside the Verilated model's functions (Vtpu_*). Such lines are fetched every cycle or
    two: while they fit the L1 instruction cache they stay there, beyond it they are fetched
    again each cycle."""
    count = collections.Counter()  # (object, line) -> the most any of its instructions ran
    model = set()
    for obj, fn, _, addr, _, ir in callgrind_instructions(cgfile):
        key = (obj, addr >> 6)
        count[key] = max(count[key], ir)
        if fn and fn.startswith("Vtpu_"):
            model.add(key)
    hot = [k for k, c in count.items() if c >= cycles / 2]
    return {"kb": len(hot) * 64 / 1024.0, "model_kb": sum(k in model for k in hot) * 64 / 1024.0}


def top_functions(cgfile, k=8):
    p = sh(["callgrind_annotate", "--threshold=99", "--auto=no", "--inclusive=no", cgfile],
           check=False)
    rows = []
    table = False
    for line in p.stdout.splitlines():
        if line.rstrip().endswith("file:function"):
            table = True
            continue
        if not table:
            continue
        m = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+(\S.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r"^\?\?\?:", "", m.group(3))
            name = re.sub(r"\s*\[.*\]$", "", name)
            name = re.sub(r"^(/[^:]*/)?[^:]*\.(cpp|h):", "", name)
            name = re.sub(r"\(.*\)$", "", name)
            rows.append((float(m.group(2)), name[:90]))
    agg = collections.Counter()
    for pc, name in rows:  # inlined header lines are listed apart: add them up
        agg[name] += pc
    return [(pc, name) for name, pc in agg.most_common(k)]


def instance_of_line(path, text, line_no, cache):
    """The RTL instance (u_mxu, ...) a line of Verilator's C++ works on: the nearest instance
    name at or above it within its statement's function (a statement spans many lines, and
    only some of them name a signal; with --context=0 the lines between are not shown).
    `text` is the file `path` as lines; `cache` maps (path, line number) to the answer."""
    key = (path, line_no)
    if key not in cache:
        mod = "other"
        for i in range(min(line_no, len(text)) - 1, max(line_no - 80, 0) - 1, -1):
            t = text[i]
            mods = re.findall(r"tpu_core__DOT__(u_[a-z_]+?)__DOT__", t)
            if mods:
                mod = mods[0]
                break
            if t and not t[0].isspace() and t.rstrip().endswith("{"):
                break  # the function's first line
        cache[key] = mod
    return cache[key]


def module_split(cgfile, bdir):
    """Instruction share per RTL instance (u_mxu, u_ctrl, ...) of the Verilated model's code,
    from the self cost of each source line (the bench_bare binaries have debug info). Reads
    callgrind_ir's output itself: callgrind_annotate's line annotation of a file with
    per-instruction costs came out different from one run of it to the next."""
    costs = collections.Counter()
    src_lines = {}
    owner = {}  # (source, line number) -> instance
    for _, _, path, _, line_no, ir in callgrind_instructions(cgfile):
        # Verilator puts set-up code (constructor, initial values) in *__Slow.cpp: not a
        # per-cycle cost (the constructor's array resets would otherwise dominate at N = 8).
        if not path or "Vtpu_core_bare___024root" not in path or "__Slow" in path:
            continue
        if path not in src_lines:
            full = path
            if not os.path.isabs(full):  # relative to where the build ran: the root or bdir
                cands = [os.path.join(ROOT, full), os.path.join(bdir, full)]
                full = next((c for c in cands if os.path.exists(c)), cands[0])
            src_lines[path] = open(full).read().splitlines() if os.path.exists(full) else []
        costs[instance_of_line(path, src_lines[path], line_no, owner)] += ir
    total = sum(costs.values())
    return [(c * 100.0 / total, mod) for mod, c in costs.most_common(8)] if total else []


def profile(args, res, main_dirs):
    out = res.setdefault("profile", {})
    if not shutil.which("valgrind"):
        out["error"] = "valgrind not installed"
        return
    pdir = os.path.join(args.build_root, "profile")
    os.makedirs(pdir, exist_ok=True)
    for n in args.profile_ns:
        if n not in main_dirs:
            continue
        bdir = main_dirs[n]
        c1 = max(2000, int(args.profile_cycles / 4))
        c2 = args.profile_cycles
        entry = {}
        out[str(n)] = entry
        for h in ("mxu", "bare", "sc"):
            exe = os.path.join(bdir, "bench", "bench_%s_n%d" % (h, n))
            log("callgrind N=%d %s" % (n, h))
            f1 = os.path.join(pdir, "%s_n%d_short.cg" % (h, n))
            f2 = os.path.join(pdir, "%s_n%d.cg" % (h, n))
            i1, r1 = callgrind_ir(exe, ["--cycles", str(c1)], f1)
            i2, r2 = callgrind_ir(exe, ["--cycles", str(c2)], f2)
            if not (i1 and i2 and r1 and r2):
                entry[h] = {"error": "callgrind failed"}
                continue
            k = "counter_cycles" if "counter_cycles" in r2 else "fed"
            dc = r2[k] - r1[k]
            entry[h] = {"ir_per_cycle": (i2 - i1) / dc, "top": top_functions(f2),
                        "hot_code": hot_code_kb(f2, r2[k]), "file": os.path.relpath(f2, ROOT)}
            if h == "bare":
                entry[h]["modules"] = module_split(f2, bdir)
            os.remove(f1)


# ---------------------------------------------------------------------------------------------
# Report

def fmt_cps(x):
    if x is None:
        return "—"
    if x >= 1e6:
        return "%.2f M" % (x / 1e6)
    if x >= 1e3:
        return "%.1f k" % (x / 1e3)
    return "%.0f" % x


def fmt_x(x, nd=2):
    return "—" if x is None else ("%." + str(nd) + "f×") % x


def fmt_s(x):
    if x is None:
        return "—"
    if x < 10:
        return "%.1f s" % x
    return "%.0f s" % x if x < 120 else "%.1f min" % (x / 60)


def fmt_mb(kb):
    return "—" if not kb else ("%.0f MB" % (kb / 1024) if kb < 1024 * 1024 else
                               "%.2f GB" % (kb / 1024 / 1024))


def cps_of(runs, key="cps"):
    return med([r.get(key) for r in runs if "error" not in r])


def busy_text(runs):
    a = med([r.get("busy_pct") for r in runs])
    b = med([r.get("timed_busy_pct") for r in runs])
    if a is None:
        return "—"
    return "%.1f %% / %s" % (a, "%.1f %%" % b if b is not None else "—")


def ok_mark(cond):
    return "—" if cond is None else ("yes" if cond else "**no**")


KEEP_MARK = "<!-- measured by bench/compare.py, kept by bench.py: -->"


def with_kept_tail(path, text):
    """`text`, then what the file at `path` holds from KEEP_MARK on (sections bench.py does not
    generate: bench/compare.py's before/after runs)."""
    try:
        old = open(path).read()
    except OSError:
        return text
    i = old.find(KEEP_MARK)
    return text if i < 0 else text.rstrip("\n") + "\n\n" + old[i:]


def render(args, res):
    L = []
    w = L.append
    env = res["env"]
    w("# Simulator performance\n")
    w("How fast the simulation runs. How close the simulated chip gets to its peak (MXU "
      "utilization of the bundled CNN per layer, against the ideal and SCALE-Sim) is in "
      "[cnn.md](cnn.md#results-bundled-model-n--16-rtl-chip), and `tpusim run-cnn --report DIR "
      "--timeline F.json` shows it for any run.\n")
    w("Generated by `scripts/bench.sh` (bench/bench.py) on %s; do not edit by hand. Raw results: "
      "`%s`.\n" % (env["date"], os.path.relpath(os.path.join(args.build_root, "results.json"), ROOT)))
    w("Machine: %s, %d CPUs, %s; load average %s at the start, %s at the end (other engineers "
      "share it: wall-clock figures are noisy, so every table gives medians of several runs "
      "and ratios taken from runs made back to back). Verilator %s, %s, %s, SystemC %s; "
      "commit %s%s.\n" % (env["cpu"], env["nproc"], env["mem"],
                          "/".join("%.1f" % x for x in env["load_start"]),
                          "/".join("%.1f" % x for x in env.get("load_end", [0, 0, 0])),
                          env["verilator"], env["gcc"], res.get("icarus", {}).get("version", "Icarus —"),
                          env["systemc"], env["commit"], " (+ uncommitted changes)" if env["dirty"] else ""))
    older = {st: c for st, c in res.get("stage_commits", {}).items()
             if c != env["commit"] and res.get(st)}
    if older:
        w("Sections not rerun with the rest (`--resume`) were measured at an earlier commit: " +
          ", ".join("%s at %s" % (st, c) for st, c in sorted(older.items())) + ".\n")
    # Rows of a section that were not rerun with it (a --resume for some N only) keep theirs.
    stale = []
    for st in ("main", "scale", "speedup"):
        for key in sorted(res.get(st) or {}, key=int):
            c = res[st][key].get("commit")
            if c and c != res.get("stage_commits", {}).get(st, env["commit"]):
                stale.append("%s N = %s at %s" % (st, key, c))
    if stale:
        w("Rows not rerun with their section (`--resume` for some N only): " +
          ", ".join(stale) + ".\n")
    w("## How it is measured\n")
    w("One workload for every harness (bench/workload.h): weights and 64 activation rows are "
      "loaded once, then back-to-back `matmul switch` instructions of R rows per weight tile "
      "(R = max(256, N²/8), split in chunks of ≤ 2048 = AccRows) with the next tiles' "
      "`read_weights` three tiles ahead, then one `activate` + `write_host` whose 64 result rows "
      "are checked against a C++ reference. Every harness runs an untimed warm-up (start-up "
      "DMA, the first tile and one more tile period) and times the rest of the run. \"MXU busy\" "
      "is the chip's MXU_BUSY ÷ CYCLES counters over the whole run and over the timed part "
      "only (the MXU is fed a row every cycle once the first tile is in; no weight stalls).\n")
    w("| harness | what | binary |")
    w("|---|---|---|")
    w("| SystemC | the core through `tpu::sim::Chip` (sim/: the Verilated model in a SystemC "
      "module evaluated once per cycle, sim/core_model.h; AXI bridges, TLM host memory, default "
      "timing: 10 cycles latency, 16 B/cycle) | `bench_sc_n<N>` |")
    w("| bare | the same RTL Verilated without SystemC (`Vtpu_core_bare`), clocked by hand (2 evals "
      "per cycle); a C++ AXI4 responder that reproduces the SystemC memory timing cycle for "
      "cycle (the chip's CYCLES counter is identical in both) and a minimal AXI4-Lite master | "
      "`bench_bare_n<N>` |")
    w("| threads 2 | bare, Verilated with `--threads 2` | `bench_bare_mt_n<N>` |")
    w("| MXU | `tpu_mxu` alone, a row every cycle from the same 64 rows, a new tile shifted in, "
      "committed and switched to every R rows (2 evals per cycle) | `bench_mxu_n<N>` |")
    w("| Icarus | `tpu_mxu` under Icarus Verilog 11 with bench/icarus/tb_mxu.sv, same schedule "
      "(see below for the whole core) | `vvp` |")
    w("")
    w("All Verilated models use the simulator's flags (sim/CMakeLists.txt): `-O3` (and "
      "`--unroll-stmts 3000` for N ≤ 16: `tpu_sim_verilator_opt`), generated per-cycle code "
      "compiled with `-O3 -march=native` (OPT_FAST: `TPU_SIM_OPT_FAST`, `TPU_SIM_ARCH`; `-O2` "
      "before issue 33), the rest `-O3`; g++ Release. The RTL's assertions are "
      "on (`--assert`, CMake's default `TPU_SIM_ASSERT=ON`, as the tests build it) except where "
      "the speed-up table says otherwise.\n")

    # --- main table
    w("## Simulated cycles per second\n")
    w("Medians; ratios are medians of per-repetition ratios (runs back to back). "
      "\"SystemC cost\" = bare ÷ SystemC cycles/s (target ≤ 1.5×), \"vs MXU\" = bare MXU ÷ "
      "SystemC (target ≤ 2×).\n")
    w("| N | reps | cycles/run | MXU busy (run / timed) | MXU alone | bare core | SystemC core | threads 2 (bare) "
      "| SystemC cost | SystemC vs MXU | bare vs MXU | threads 2 vs 1 | same CYCLES, result ok |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(res.get("main", {}), key=int):
        m = res["main"][key]
        runs, pairs = m["runs"], m["pairs"]
        sc_ok = [r for r in runs["sc"] if "error" not in r]
        bare_ok = [r for r in runs["bare"] if "error" not in r]
        same = None
        if sc_ok and bare_ok:
            same = (all(r["counter_cycles"] == sc_ok[0]["counter_cycles"] for r in sc_ok + bare_ok)
                    and all(r.get("mismatches") == 0 for r in sc_ok + bare_ok))
        w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key, len(runs["sc"]), "{:,}".format(int(sc_ok[0]["counter_cycles"])) if sc_ok else "—",
            busy_text(sc_ok),
            fmt_cps(cps_of(runs["mxu"])), fmt_cps(cps_of(runs["bare"])), fmt_cps(cps_of(runs["sc"])),
            fmt_cps(cps_of(runs.get("bare_mt", []))),
            fmt_x(med(pairs.get("sc_vs_bare", []))), fmt_x(med(pairs.get("sc_vs_mxu", []))),
            fmt_x(med(pairs.get("bare_vs_mxu", []))), fmt_x(med(pairs.get("mt_vs_bare", []))),
            ok_mark(same)))
    w("")
    loads = [r.get("load", 0) for m in res.get("main", {}).values() for rs in m["runs"].values()
             for r in rs]
    if loads:
        w("Load average during these runs: %.1f – %.1f (median %.1f) on %d CPUs.\n" % (
            min(loads), max(loads), statistics.median(loads), env["nproc"]))

    # --- builds
    w("## Build time and memory per N\n")
    w("Clean rebuild of the SystemC core library `tpu_sim_n<N>` alone (`ninja -t clean` then "
      "`ninja -j%d tpu_sim_n<N>` under `nice` and `/usr/bin/time -v`): Verilator's run "
      "(from .ninja_log), the whole rebuild (wall and CPU), the largest process (max RSS) and "
      "the peak RSS summed over the process tree (two compilers at once). \"all harnesses\" is "
      "the first build of the five bench executables of that N (includes tpu_driver; with a "
      "compiler cache, if it was set in CMAKE_CXX_COMPILER_LAUNCHER, the cache's time).\n" % args.jobs)
    w("| N | verilate | verilate + compile (wall) | CPU | max RSS (one process) | peak RSS (tree) "
      "| generated C++ | all harnesses (wall) |")
    w("|---|---|---|---|---|---|---|---|")
    for key in sorted(res.get("builds", {}), key=int):
        b = res["builds"][key]
        lib = b.get("lib", {})
        if not b.get("ok"):
            w("| %s | build failed: %s | | | | | | |" % (key, (b.get("error") or "")[:200].replace("\n", " ")))
            continue
        w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key, fmt_s(lib.get("verilate_s")), fmt_s(lib.get("wall_s")), fmt_s(lib.get("cpu_s")),
            fmt_mb(lib.get("max_rss_kb")), fmt_mb(lib.get("peak_tree_kb")),
            "%.1f MB" % (lib.get("cpp_bytes", 0) / 1e6) if lib.get("cpp_bytes") else "—",
            fmt_s(b.get("all_targets_s")) + (" (%s)" % os.path.basename(b["launcher"])
                                              if b.get("launcher") else "")))
    w("")
    failed = {k: b for k, b in res.get("builds", {}).items() if b.get("rtl_errors")}
    if failed:
        w("**rtl/ as it is does not verilate at N = %s** (Verilator %s):\n" % (
            ", ".join(sorted(failed, key=int)), env["verilator"]))
        w("```")
        seen = []
        for k in sorted(failed, key=int):
            for e in failed[k]["rtl_errors"]:
                if e not in seen:
                    seen.append(e)
        for e in seen[:12]:
            w(e)
        w("```")
        w("Verilator unrolls loops of up to 64 iterations; above that it keeps the loop and "
          "cannot keep a non-blocking assignment to an unpacked array inside it (BLKLOOPINIT): "
          "write whole rows, built in a temporary, instead.\n")

    # --- scale
    if res.get("scale"):
        w("## Scale: N = %s\n" % ", ".join(sorted(res["scale"], key=int)))
        w("Targets: each builds in ≤ 10 minutes and ≤ 8 GB and passes the matmul test (the "
          "workload's result check through the SystemC Chip: 64 rows × N columns, bit-exact).\n")
        w("| N | build (verilate + compile) | ≤ 10 min | max RSS / tree | ≤ 8 GB | matmul test | "
          "MXU busy | SystemC core | bare core | MXU alone | SystemC vs MXU |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for key in sorted(res["scale"], key=int):
            s = res["scale"][key]
            b = res["builds"].get(key, {})
            lib = b.get("lib", {})
            if not b.get("ok"):
                w("| %s | failed: %s | | | | | | | | | |" % (key, (b.get("error") or "")[:150].replace("\n", " ")))
                continue
            runs, pairs = s["runs"], s["pairs"]
            sc_ok = [r for r in runs["sc"] if "error" not in r]
            passed = bool(sc_ok) and all(r.get("mismatches") == 0 for r in sc_ok)
            wall = lib.get("wall_s")
            mem = max(lib.get("max_rss_kb", 0), lib.get("peak_tree_kb", 0))
            w("| %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s |" % (
                key, fmt_s(wall),
                ok_mark(None if wall is None else wall <= 600), fmt_mb(lib.get("max_rss_kb")),
                fmt_mb(lib.get("peak_tree_kb")), ok_mark(mem <= 8 * 1024 * 1024 if mem else None),
                "pass" if passed else "**FAIL**",
                busy_text(sc_ok),
                fmt_cps(cps_of(runs["sc"])), fmt_cps(cps_of(runs["bare"])), fmt_cps(cps_of(runs["mxu"])),
                fmt_x(med(pairs.get("sc_vs_mxu", [])))))
        w("")

    # --- Speed-up against the reference commit
    sp = res.get("speedup")
    if sp:
        ref = next((v.get("ref_commit") for v in sp.values() if v.get("ref_commit")), "?")
        # Repetitions per row (a --resume for some N may have run another number).
        reps = {k: len(v.get("runs", {}).get("ref", [])) for k, v in sp.items()}
        if len(set(reps.values())) <= 1:
            reps_text = str(next(iter(reps.values()), args.speedup_reps))
        else:
            reps_text = " or ".join("%d (N = %s)" % (r, ", ".join(k for k in sorted(reps, key=int)
                                                              if reps[k] == r))
                                    for r in sorted(set(reps.values())))
        w("## Speed-up against %s\n" % ref)
        w("The SystemC core (`bench_sc_n<N>`, the workload above) of commit %s — the simulator "
          "whose figures issue 14 quotes (0.92 M / 97.5 k / 4.8 k cycles/s at N = 16 / 64 / 256 on "
          "a quiet machine) — built and run back to back with this tree's, three ways: as the "
          "tests build it (`--assert`: the RTL's assertions, which %s did not have), without "
          "assertions (`-DTPU_SIM_ASSERT=OFF`, like %s), and as scripts/build_pgo.sh builds "
          "tpusim: without assertions and without VCD tracing (`-DTPU_SIM_TRACE=OFF`; %s had "
          "it), profile-guided (`-DTPU_SIM_PGO=generate`, one training run of the same harness "
          "with a shorter length, then `-DTPU_SIM_PGO=use`). "
          "Medians of %s repetitions; speed-up = cycles/s ÷ the reference's in the same "
          "repetition (median). \"same chip\": every build counts the same CYCLES for the "
          "workload.\n" % (ref, ref, ref, ref, reps_text))
        w("| N | reference | assertions on | speed-up | assertions off | speed-up | "
          "no VCD, profile-guided | speed-up | same chip |")
        w("|---|---|---|---|---|---|---|---|---|")
        for key in sorted(sp, key=int):
            v = sp[key]
            runs, ratios = v.get("runs", {}), v.get("ratios", {})
            cells = [fmt_cps(cps_of(runs.get("ref", [])))]
            for name in ("assert", "plain", "pgo"):
                cells += [fmt_cps(cps_of(runs.get(name, []))), fmt_x(med(ratios.get(name, [])))]
            w("| %s | %s | %s |" % (key, " | ".join(cells),
                                    "yes" if v.get("same_cycles") else "**no**"))
            for name, text in sorted(v.get("errors", {}).items()):
                w("\nN = %s, %s: failed: %s\n" % (key, name, text[:300].replace("\n", " ")))
        w("")

    # --- Icarus
    ic = res.get("icarus")
    if ic:
        w("## Verilator vs Icarus Verilog\n")
        if ic.get("error"):
            w(ic["error"] + "\n")
        else:
            w("**The whole core under %s.** Stage by stage, each change applied to a scratch copy "
              "of rtl/ (bench/bench.py `icarus_stages`; rtl/ is untouched), with bench/icarus/"
              "tb_core.sv (the same workload and memory timing, %s):\n" % (ic["version"],
                                                                           "N = 16"))
            w("| stage | change | where | compiles | runs the workload |")
            w("|---|---|---|---|---|")
            for i, st in enumerate(ic["core_stages"]):
                run = st.get("run")
                if not st["compiles"]:
                    rr = "—"
                elif run and run.get("timeout"):
                    rr = "**no**: not done after %d cycles" % int(run.get("timeout_cycles", 0))
                elif run and "mismatches" in run:
                    rr = "yes, %s mismatching bytes" % int(run["mismatches"])
                else:
                    rr = "**no**"
                errs = "<br>".join("`%s`" % e.replace("|", "\\|") for e in st["errors"][:3])
                w("| %d | %s | %s | %s | %s |" % (i, st["title"], st["where"] or "—",
                                                  "yes" if st["compiles"] else "no: " + errs, rr))
            w("")
            w("The unified buffer, accumulators, weight FIFO and quantization slots are `tpu_sram` "
              "(rtl/tpu_sram.sv), which Icarus 11 reads "
              "and runs: ctest `icarus_sram_be{0,1}_wf{0,1}` (label `icarus`) checks it cycle by "
              "cycle against a reference memory in its four configurations.\n")
            w("So the benchmark compares the **bare MXU** (tpu_mxu.sv with only `int unsigned` → "
              "`int`) under Icarus against the Verilated bare MXU, same schedule (bench/icarus/"
              "tb_mxu.sv ≙ bench/bench_mxu.cpp; the first result rows of two tiles are checked). "
              "Icarus wall time is taken between two `MARK` lines the testbench prints (after a "
              "warm-up and at the end), so compile and load time are excluded. Target: "
              "Verilator ≥ 100× Icarus.\n")
            w("| N | Icarus cycles/run | Icarus | Verilator (bare MXU) | Verilator ÷ Icarus | ≥ 100× | checked |")
            w("|---|---|---|---|---|---|---|")
            for key in sorted(ic["mxu"], key=int):
                e = ic["mxu"][key]
                if e.get("error"):
                    w("| %s | compile failed: %s | | | | | |" % (key, " ".join(e["error"])[:200]))
                    continue
                runs = [r for r in e["runs"] if "error" not in r]
                ratio = med(e["pairs"])
                chk = all(r.get("mismatches") == 0 and r.get("checked") == 2 for r in runs) if runs else None
                w("| %s | %s | %s | %s | %s | %s | %s |" % (
                    key, "{:,}".format(int(runs[0]["cycles"])) if runs else "—",
                    fmt_cps(cps_of(runs)), fmt_cps(cps_of(e["verilator"])),
                    fmt_x(ratio, 0) if ratio else "—", ok_mark(ratio >= 100 if ratio else None),
                    "ok" if chk else ("**mismatch**" if chk is False else "—")))
            w("")

    # --- VCD
    v = res.get("vcd")
    if v:
        runs = v["runs"]
        n = v["n"]
        w("## Waveforms (N = %d)\n" % n)
        off, on = cps_of(runs["off"]), cps_of(runs["on"])
        woff, win = cps_of(runs["win_off"]), cps_of(runs["win"])
        b, bt = cps_of(runs["bare"]), cps_of(runs["bare_trace"])
        pr = lambda a, c: med([x.get("cps") / y.get("cps") for x, y in zip(runs[a], runs[c])
                               if x.get("cps") and y.get("cps")])
        on_bytes = med([r.get("vcd_bytes") for r in runs["on"]])
        win_bytes = med([r.get("vcd_bytes") for r in runs["win"]])
        oncyc = med([r.get("counter_cycles") for r in runs["on"]])
        w("Through `tpu::sim::Chip` (ChipConfig::vcd_file / vcd_from_cycle / vcd_to_cycle, "
          "trace depth 99); the Chip library is built with `--trace` unless configured with "
          "`-DTPU_SIM_TRACE=OFF`.\n")
        w("| case | run | cycles/s | vs VCD off (same run) | VCD size |")
        w("|---|---|---|---|---|")
        w("| VCD off | %s cycles | %s | 1 | — |" % ("{:,}".format(int(oncyc)) if oncyc else "—", fmt_cps(off)))
        w("| VCD on, every cycle | same | %s | %s slower | %s (%s per cycle) |" % (
            fmt_cps(on), fmt_x(pr("off", "on"), 1), fmt_mb((on_bytes or 0) / 1024),
            "%.1f KB" % (on_bytes / oncyc / 1024) if on_bytes and oncyc else "—"))
        w("| VCD off | long run, warm-up %d cycles | %s | 1 | — |" % (v["warmup"], fmt_cps(woff)))
        w("| VCD window cycles [%d, %d), measured after cycle %d | same | %s | %s | %s |" % (
            v["window"][0], v["window"][1], v["warmup"], fmt_cps(win), fmt_x(pr("win_off", "win")),
            fmt_mb((win_bytes or 0) / 1024)))
        w("| bare core, no `--trace` | long run | %s | — | — |" % fmt_cps(b))
        w("| bare core, `--trace` compiled in, off | same | %s | %s | — |" % (
            fmt_cps(bt), fmt_x(pr("bare", "bare_trace"))))
        w("")
        w("Ratios > 1 are slowdowns (cycles/s of the reference ÷ cycles/s of the case, per "
          "back-to-back pair, median). Targets: VCD off costs nothing measurable (compare the "
          "last two rows: the same model with and without tracing compiled in); a window costs "
          "nothing outside itself (the windowed row).\n")

    # --- profile
    pf = res.get("profile")
    if pf:
        w("## Where the time goes (callgrind)\n")
        if pf.get("error"):
            w(pf["error"] + "\n")
        for key in sorted((k for k in pf if k != "error"), key=int):
            e = pf[key]
            w("Instructions per simulated cycle at N = %s (difference of a %d- and a %d-cycle run, "
              "so set-up is excluded; deterministic, unlike wall time):\n" % (
                  key, max(2000, int(args.profile_cycles / 4)), args.profile_cycles))
            w("| harness | instructions / cycle | vs MXU | per-cycle code (model) | top functions (self, % of the run) |")
            w("|---|---|---|---|---|")
            base = e.get("mxu", {}).get("ir_per_cycle")
            for h in ("mxu", "bare", "sc"):
                x = e.get(h, {})
                if "ir_per_cycle" not in x:
                    w("| %s | — | — | — | %s |" % (h, x.get("error", "")))
                    continue
                hc = x.get("hot_code")
                hot = "%.1f KB (%.1f KB)" % (hc["kb"], hc["model_kb"]) if hc else "—"
                tops = "; ".join("%s %.0f%%" % (nm.replace("Vtpu_core_bare___024root___", "")
                                                .replace("Vtpu_core___024root___", "")
                                                .replace("Vtpu_mxu___024root___", ""), pc)
                                 for pc, nm in x["top"][:5])
                w("| %s | %s | %s | %s | %s |" % (h, "{:,.0f}".format(x["ir_per_cycle"]),
                                                  fmt_x(x["ir_per_cycle"] / base) if base else "—",
                                                  hot, tops))
            if any(e.get(h, {}).get("hot_code") for h in ("mxu", "bare", "sc")):
                w("")
                w("Per-cycle code: the 64-byte lines of machine code holding an instruction the "
                  "longer run executed at least once every other simulated cycle on average, in "
                  "the whole process and (in brackets) in the Verilated model's own functions. "
                  "This machine's L1 instruction cache: %s." % (
                      "%d KB per core" % res["env"]["l1i_kb"] if res["env"].get("l1i_kb")
                      else "unknown"))
            mods = e.get("bare", {}).get("modules")
            if mods:
                w("")
                w("Bare core, share of the Verilated model's per-cycle code by RTL instance "
                  "(line-level annotation of the longer run; set-up code in Verilator's *__Slow "
                  "files left out; a line goes to the instance named nearest above it in its "
                  "function): " +
                  ", ".join("%s %.1f %%" % (m, pc) for pc, m in mods) + ".")
            w("")

    # --- notes
    notes = limits_notes(res)
    if notes:
        w("## What limits each figure\n")
        for line in notes:
            w("- " + line)
        w("")

    # --- targets
    w("## Targets\n")
    w("| target | measured | met |")
    w("|---|---|---|")
    for t in res.get("targets", []):
        w("| %s | %s | %s |" % (t["target"], t["measured"], ok_mark(t["met"])))
    w("")

    # --- commands
    w("## Commands\n")
    w("```sh")
    w("scripts/bench.sh                      # everything below, writes this file (~1-2 h here)")
    w("scripts/bench.sh --quick              # shorter runs, fewer repetitions")
    w("scripts/bench.sh --ns 16 --scale '' --skip-icarus --skip-profile   # one N only")
    w("scripts/bench.sh --render-only        # rewrite this file from build-bench/results.json")
    w("")
    w("# what it runs, per N (build-bench/n<N>):")
    w("cmake -S . -B build-bench/n16 -G Ninja -DTPU_BUILD_BENCH=ON -DTPU_BUILD_TESTS=OFF \\")
    w("      -DTPU_SIM_N_LIST=16 -DTPU_BENCH_N_LIST=16")
    w("ninja -C build-bench/n16 bench_sc_n16 bench_bare_n16 bench_bare_mt_n16 bench_mxu_n16 bench_bare_trace_n16")
    w("ninja -C build-bench/n16 -t clean tpu_sim_n16 && /usr/bin/time -v ninja -C build-bench/n16 -j2 tpu_sim_n16")
    w("build-bench/n16/bench/bench_mxu_n16   --cycles %d   # each prints RESULT ... cps=<cycles/s>" % CYCLES[16])
    w("build-bench/n16/bench/bench_bare_n16  --cycles %d" % CYCLES[16])
    w("build-bench/n16/bench/bench_sc_n16    --cycles %d" % CYCLES[16])
    w("build-bench/n16/bench/bench_bare_mt_n16 --cycles %d" % (CYCLES[16] // 5))
    w("build-bench/n16/bench/bench_sc_n16 --cycles %d --vcd on.vcd" % args.vcd_cycles)
    w("build-bench/n16/bench/bench_sc_n16 --cycles %d --warmup 5000 --vcd win.vcd --vcd-from 0 --vcd-to 1000" % CYCLES[16])
    w("build-bench/n16/bench/bench_bare_n16 --cycles 4000 --write-image img.hex   # Icarus host memory image")
    w("iverilog -g2012 -s tb_mxu -P tb_mxu.N=16 -P tb_mxu.R=256 -o mxu.vvp bench/icarus/tb_mxu.sv <tpu_mxu.sv, int unsigned -> int>")
    w("vvp -n mxu.vvp +cycles=%d +warmup=200" % ICARUS_CYCLES[16])
    w("valgrind --tool=callgrind build-bench/n16/bench/bench_bare_n16 --cycles %d" % args.profile_cycles)
    w("```")
    w("")
    return "\n".join(L)


def limits_notes(res):
    """Data-driven reading of the tables (what dominates where)."""
    out = []
    main = res.get("main", {})
    pf = res.get("profile", {})
    for key in sorted((k for k in pf if k.isdigit()), key=int):
        e = pf[key]
        m, b, c = (e.get(h, {}).get("ir_per_cycle") for h in ("mxu", "bare", "sc"))
        if m and b and c:
            out.append(
                "N = %s, instructions per cycle: MXU %s (%s per PE), rest of the core %s, "
                "SystemC testbench and kernel %s. The rest of the core and the testbench are a "
                "fixed cost per cycle, the MXU grows with N²: at N = %s they are %.0f %% of the "
                "SystemC run%s." % (
                    key, "{:,.0f}".format(m), "{:.0f}".format(m / int(key) ** 2),
                    "{:,.0f}".format(b - m), "{:,.0f}".format(c - b), key,
                    100.0 * (c - m) / c,
                    " — hence the ≤ 2× target missed at small N" if (c / m) > 2 else ""))
        hc = {h: e.get(h, {}).get("hot_code") for h in ("mxu", "bare", "sc")}
        l1i = res.get("env", {}).get("l1i_kb")
        pairs = main.get(key, {}).get("pairs", {})
        if hc["bare"] and hc["sc"] and b and c and l1i and pairs.get("sc_vs_bare"):
            out.append(
                "N = %s, per-cycle code (callgrind section): %sbare core %.1f KB, SystemC core "
                "%.1f KB, against this machine's %d KB L1 instruction cache: beyond the cache, "
                "lines are evicted and fetched again from L2 every cycle. The SystemC core "
                "executes %s the bare core's instructions per cycle but takes %s its time "
                "(main table)." % (
                    key, "MXU alone %.1f KB, " % hc["mxu"]["kb"] if hc["mxu"] else "",
                    hc["bare"]["kb"], hc["sc"]["kb"], l1i, fmt_x(c / b),
                    fmt_x(med(pairs["sc_vs_bare"]))))
    allruns = dict(main)
    allruns.update(res.get("scale_runs", {}))
    if allruns:
        big = max(allruns, key=int)
        p = allruns[big]["pairs"]
        out.append(
            "Large N: the MXU array is everything (at N = %s the SystemC core runs at %s of the bare "
            "MXU's speed, the testbench costs %s). Simulation time per cycle grows as N²: each PE "
            "is a multiply-add on values kept in the model's member arrays, inside loops: up to "
            "N = 64 Verilator unrolls each row of PEs into straight-line code and keeps the rows "
            "a loop (at N ≤ 16 through `--unroll-stmts 3000`, or it would unroll the whole "
            "array); from N = 128 both are loops."
            % (big, fmt_x(1.0 / med(p["sc_vs_mxu"])) if p.get("sc_vs_mxu") else "—",
               fmt_x(med(p.get("sc_vs_bare", [])))))
        mt = [(k, med(v["pairs"].get("mt_vs_bare", []))) for k, v in sorted(main.items(), key=lambda kv: int(kv[0]))]
        mt = [(k, x) for k, x in mt if x]
        if mt:
            worst = min(min(r.get("cps", 1e18) for r in v["runs"].get("bare_mt", []) or [{}])
                        for v in main.values())
            out.append(
                "`--threads 2` never helps on this 2-vCPU machine shared with other jobs: %s "
                "(threads 2 ÷ 1 thread, back to back); the slowest single run was %s cycles/s. "
                "The model has one dominant task (the array's always_ff), so there is little to "
                "run in parallel, while every eval pays a cross-thread hand-off that stalls "
                "whenever the other vCPU is taken by another job." % (
                    ", ".join("N = %s: %s" % (k, fmt_x(x)) for k, x in mt), fmt_cps(worst)))
    sp = res.get("speedup", {})
    if sp:
        ref = next((x.get("ref_commit") for x in sp.values() if x.get("ref_commit")), "?")
        mods = dict((m, share) for share, m in
                    res.get("profile", {}).get("16", {}).get("bare", {}).get("modules", []))
        mxu_share = ("%.0f %% of the bare core's per-cycle code (callgrind section)" % mods["u_mxu"]
                     if "u_mxu" in mods else "about a third of the core's time")
        figs = ", ".join("N = %s: %s / %s" % (k, fmt_x(med(sp[k]["ratios"].get("plain", []))),
                                              fmt_x(med(sp[k]["ratios"].get("pgo", []))))
                         for k in sorted(sp, key=int) if sp[k].get("ratios"))
        out.append(
            "Speed-up against %s (assertions off / no VCD tracing, profile-guided): %s. It "
            "comes from the MXU (rtl/tpu_mxu.sv written for the simulator: each PE one "
            "statement on its own registers, a PE's weights kept in both interpretations in one word "
            "(one shift selects), activations held sign-extended, delay lines that shift whole "
            "stages, the array left still while it holds no valid row), which is what counts "
            "where the array dominates (N ≥ 64); from g++'s vectorizer, left on for the "
            "Verilated models' per-cycle code, which copies and packs wide words with SSE2 moves "
            "(sim/CMakeLists.txt: 1.05-1.13× at N = 16); and from the testbench: sim/core_model.h evaluates Verilator's C++ model "
            "once per cycle, where Verilator's own SystemC wrapper evaluated it at the edge and "
            "again for the inputs driven after it, reading every input port and writing every "
            "output port each time, and while the AXI bridge and the register host sleep it "
            "evaluates the next edges at once, without the SystemC kernel in between, until an "
            "output changes (run-ahead: at N = 16 the model's per-cycle code and the kernel's do "
            "not fit the L1 instruction cache together). At N = 16 the array is %s, "
            "the rest the control logic of a dozen units, evaluated every cycle whether busy or "
            "not, and the SystemC kernel; profile-guided code helps most there (branchy control "
            "code). The assertions cost %s (assertions-off ÷ assertions-on speed)." % (
                ref, figs, mxu_share, ", ".join(
                "%s at N = %s" % (fmt_x(med(sp[k]["ratios"].get("plain", [])) /
                                        med(sp[k]["ratios"].get("assert", []))), k)
                for k in sorted(sp, key=int)
                if sp[k]["ratios"].get("plain") and sp[k]["ratios"].get("assert"))))
    v = res.get("vcd")
    if v:
        on = med([r.get("vcd_bytes") for r in v["runs"]["on"]])
        cyc = med([r.get("counter_cycles") for r in v["runs"]["on"]])
        if on and cyc:
            out.append("VCD on: the dump itself — %.1f KB of VCD text per cycle at N = %d (every "
                       "signal and array element of the design that changes, trace depth 99, "
                       "except the contents of the `tpu_sram` memories)." %
                       (on / cyc / 1024, v["n"]))
    b = res.get("builds", {})
    if b:
        worst = max((x for x in b.values() if x.get("lib")), key=lambda x: x["lib"].get("max_rss_kb", 0),
                    default=None)
        if worst:
            out.append(
                "Builds: nearly all of it is g++ on the generated model; Verilator itself takes "
                "seconds. The largest is N = %d (%.1f MB of C++, %s for one compiler) because "
                "Verilator unrolls the loops of ≤ 64 iterations over a row of PEs there; at "
                "N ≥ 128 they stay loops and the generated code shrinks again." % (
                    worst["n"], worst["lib"].get("cpp_bytes", 0) / 1e6, fmt_mb(worst["lib"].get("max_rss_kb"))))
    ic = res.get("icarus", {}).get("mxu", {})
    if ic:
        out.append("Icarus interprets the same loops statement by statement: about 10³× slower "
                   "than Verilator's compiled model.")
    return out


def targets(res):
    t = []
    main = res.get("main", {})
    for key in sorted(main, key=int):
        p = main[key]["pairs"]
        a = med(p.get("sc_vs_bare", []))
        b = med(p.get("sc_vs_mxu", []))
        t.append({"target": "N = %s: SystemC core ≤ 1.5× the bare Verilated core" % key,
                  "measured": fmt_x(a), "met": a <= 1.5 if a else None})
        t.append({"target": "N = %s: SystemC core ≤ 2× the bare MXU" % key,
                  "measured": fmt_x(b), "met": b <= 2.0 if b else None})
    for key in sorted(res.get("speedup", {}), key=int):
        ratios = res["speedup"][key].get("ratios", {})
        a, b = med(ratios.get("plain", [])), med(ratios.get("pgo", []))
        t.append({"target": "N = %s: SystemC core ≥ 2× the reference's cycles/s, same cycles "
                            "(assertions off / no VCD tracing, profile-guided)" % key,
                  "measured": "%s / %s" % (fmt_x(a), fmt_x(b)),
                  "met": (max(a or 0, b or 0) >= 2.0 and res["speedup"][key].get("same_cycles"))
                         if (a or b) else None})
    ic = res.get("icarus", {}).get("mxu", {})
    for key in sorted(ic, key=int):
        r = med(ic[key].get("pairs", []))
        t.append({"target": "N = %s: Verilator ≥ 100× Icarus (bare MXU)" % key,
                  "measured": fmt_x(r, 0) if r else "—", "met": r >= 100 if r else None})
    v = res.get("vcd")
    if v:
        runs = v["runs"]
        pr = lambda a, c: med([x.get("cps") / y.get("cps") for x, y in zip(runs[a], runs[c])
                               if x.get("cps") and y.get("cps")])
        x = pr("bare", "bare_trace")
        t.append({"target": "VCD off costs nothing measurable (trace compiled in vs not, ≤ 5 %)",
                  "measured": fmt_x(x), "met": x <= 1.05 if x else None})
        y = pr("win_off", "win")
        t.append({"target": "a VCD window costs nothing outside itself (≤ 5 %)",
                  "measured": fmt_x(y), "met": y <= 1.05 if y else None})
    b16 = res.get("builds", {}).get("16", {}).get("lib", {})
    if b16:
        t.append({"target": "N = 16 core builds in ≤ 3 minutes on 2 cores",
                  "measured": fmt_s(b16.get("wall_s")), "met": b16.get("wall_s", 1e9) <= 180})
    for key in sorted(res.get("scale", {}), key=int):
        b = res["builds"].get(key, {})
        lib = b.get("lib") or {}
        s = res["scale"][key]
        sc_ok = [r for r in s["runs"]["sc"] if "error" not in r]
        mem = max(lib.get("max_rss_kb", 0), lib.get("peak_tree_kb", 0))
        met = (b.get("ok") and lib.get("wall_s", 1e9) <= 600 and mem <= 8 * 1024 * 1024
               and bool(sc_ok) and all(r.get("mismatches") == 0 for r in sc_ok))
        if not lib:  # build timing skipped (--skip-build-timing): not measured, not failed
            met = None
        t.append({"target": "N = %s builds in ≤ 10 min, ≤ 8 GB, passes the matmul test" % key,
                  "measured": "%s, %s, %s" % (fmt_s(lib.get("wall_s")), fmt_mb(mem),
                                              "pass" if sc_ok and all(r.get("mismatches") == 0 for r in sc_ok) else "fail"),
                  "met": None if met is None else bool(met)})
    return t


def env_info():
    def out(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True).stdout.strip()
        except OSError:
            return ""
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(open("/proc/meminfo").readline().split()[1])
        mem = "%.0f GB RAM" % (kb / 1024 / 1024)
    except (OSError, ValueError):
        pass
    sysc = out(["dpkg-query", "-W", "-f=${Version}", "libsystemc-dev"]) or "?"
    l1i = out(["getconf", "LEVEL1_ICACHE_SIZE"])
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu or platform.processor(), "nproc": os.cpu_count(), "mem": mem,
        "load_start": loadavg(),
        "verilator": out(["verilator", "--version"]).split(" rev")[0].replace("Verilator ", ""),
        "gcc": "g++ " + out(["g++", "-dumpfullversion"]),
        "systemc": sysc,
        "commit": out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
        "dirty": bool(out(["git", "-C", ROOT, "status", "--porcelain", "--", "rtl", "sim", "bench"])),
        "l1i_kb": int(l1i) // 1024 if l1i.isdigit() and int(l1i) > 0 else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in re.split(r"[ ,;]+", s.strip()) if x]
    ap.add_argument("--ns", type=ints, default=[8, 16, 32, 64], help="array sizes of the main table")
    ap.add_argument("--scale", type=ints, default=[64, 128, 256], help="array sizes of the scale check")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per harness (main table)")
    ap.add_argument("--scale-reps", type=int, default=2)
    ap.add_argument("--threads-reps", type=int, default=3, help="0 skips --threads 2")
    ap.add_argument("--vcd-n", type=int, default=16)
    ap.add_argument("--vcd-reps", type=int, default=3)
    ap.add_argument("--vcd-cycles", type=int, default=5000, help="run length with VCD on")
    ap.add_argument("--icarus-ns", type=ints, default=[8, 16, 32])
    ap.add_argument("--icarus-reps", type=int, default=3)
    ap.add_argument("--icarus-timeout", type=int, default=900)
    ap.add_argument("--profile-ns", type=ints, default=[8, 16])
    ap.add_argument("--profile-cycles", type=int, default=20000)
    ap.add_argument("--speedup-ns", type=ints, default=[16, 64, 256],
                    help="array sizes of the speed-up table (this tree against --speedup-ref)")
    ap.add_argument("--speedup-ref", default="824ecaf",
                    help="reference commit of the speed-up table (issue 14's baseline)")
    ap.add_argument("--speedup-reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--build-timeout", type=int, default=3600)
    ap.add_argument("--build-root", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--quick", action="store_true", help="shorter runs, 2 repetitions")
    ap.add_argument("--skip-build", action="store_true", help="reuse configured build dirs")
    ap.add_argument("--skip-build-timing", action="store_true")
    ap.add_argument("--skip-icarus", action="store_true")
    ap.add_argument("--skip-profile", action="store_true")
    ap.add_argument("--skip-vcd", action="store_true")
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--stages", default="all",
                    help="comma list of build,main,vcd,scale,icarus,profile (default all)")
    ap.add_argument("--resume", action="store_true",
                    help="start from build-bench/results.json and replace only the stages run "
                         "(e.g. --resume --stages profile --profile-ns 8,16)")
    args = ap.parse_args()
    if args.quick:
        args.reps = min(args.reps, 2)
        args.scale_reps = 1
        args.threads_reps = min(args.threads_reps, 1)
        args.vcd_reps = min(args.vcd_reps, 1)
        args.icarus_reps = min(args.icarus_reps, 1)
    os.makedirs(args.build_root, exist_ok=True)
    rfile = os.path.join(args.build_root, "results.json")

    if args.render_only:
        res = json.load(open(rfile))
        for key, b in res.get("builds", {}).items():  # results of older versions of this script
            if b.get("lib") and not b["lib"].get("verilate_s") and b.get("dir"):
                b["lib"]["verilate_s"] = verilate_seconds(b["dir"], int(key))
        args.profile_cycles = res.get("args", {}).get("profile_cycles", args.profile_cycles)
        res["targets"] = targets(res)
        open(args.out, "w").write(with_kept_tail(args.out, render(args, res)))
        log("wrote", args.out)
        return 0

    all_stages = ["build", "main", "vcd", "scale", "speedup", "icarus", "profile"]
    stages = set(all_stages if args.stages == "all" else re.split(r"[ ,]+", args.stages.strip()))
    for flag, st in ((args.skip_icarus, "icarus"), (args.skip_profile, "profile"),
                     (args.skip_vcd, "vcd")):
        if flag:
            stages.discard(st)
    if args.resume and os.path.exists(rfile):
        res = json.load(open(rfile))
        # The stages not run now keep the commit they were measured at (rendered as such).
        commits = res.setdefault("stage_commits", {})
        for st in all_stages:
            commits.setdefault(st, res["env"].get("commit", "?"))
        res["env"] = env_info()
    else:
        res = {"env": env_info(), "builds": {}, "main": {}, "scale": {}, "stage_commits": {}}
    for st in stages:
        res["stage_commits"][st] = res["env"]["commit"]
    res["args"] = {k: v for k, v in vars(args).items()}

    def save():
        json.dump(res, open(rfile, "w"), indent=1, default=str)

    all_ns = sorted(set(args.ns) | set(args.scale))
    dirs = {}
    # Small N first; the large ones (slow to build) last, one at a time.
    for n in all_ns:
        if "build" in stages:
            b = build_n(args, n, res)
            save()
        else:
            b = res["builds"].get(str(n), {})
        if b.get("ok"):
            dirs[n] = b["dir"]
        if "main" in stages and n in args.ns and n in dirs:
            main_runs(args, n, dirs[n], res, args.reps)
            save()
        if "vcd" in stages and n == args.vcd_n and n in dirs:
            vcd_runs(args, n, dirs[n], res)
            save()
    if "scale" in stages:
        for n in args.scale:
            if n in dirs:
                if n in args.ns and str(n) in res.get("main", {}):
                    res["scale"][str(n)] = res["main"][str(n)]
                else:
                    res["scale"][str(n)] = main_runs(args, n, dirs[n], res, args.scale_reps,
                                                      "scale_runs", threads=False)
                save()
    if "speedup" in stages:
        for n in args.speedup_ns:
            speedup_runs(args, n, res, dirs.get(n))
            save()
    if "icarus" in stages:
        icarus(args, res, dirs)
        save()
    if "profile" in stages:
        profile(args, res, dirs)
        save()
    res["env"]["load_end"] = loadavg()
    res["targets"] = targets(res)
    save()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    open(args.out, "w").write(with_kept_tail(args.out, render(args, res)))
    log("wrote", args.out, "and", rfile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
