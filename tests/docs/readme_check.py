#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README's commands run as written, and the numbers it quotes are what they print.

  readme_check.py --source SRC --build BUILD --default-n N

Checks (each failure names the README line and what the command printed):
  * `./build/examples/hello_matmul`: the two output lines in the README's comment are the
    lines the program prints (values, cycles, instructions).
  * every `tpusim run firmware/...` / `tpusim asm firmware/...` line of a README (and
    docs/tpusim.md) sh block runs
    as written (tpusim = the built one, in a fresh directory where firmware/ is the source
    tree's), exits 0, and a --hostmem-out image equals the build's expected image.
  * firmware/*.n<N>.mem of the source tree equal what tpu_firmware_images writes.
  * the CNN figures: `run-cnn ... --batch 8` cycles per image, and the Performance section's
    batch-16 MXU utilization, batch-1 cycles per image and its ratio to SCALE-Sim's estimate,
    are what `tpusim run-cnn --json` reports (cycles per image at a batch size do not depend on
    how many full batches run: every batch runs the same program).
  * docs/tpusim.md's run-onnx sample: the command runs as written (on the first six
    Fashion-MNIST test images) and prints every line shown, but the wall time.
  * the training figures (when the build has the training chip tpusim_train_n16): one step of
    the Keras example on the RTL, `tpusim_train_n16 train --backend rtl --epochs 1
    --steps-per-epoch 1 --batch 32 --test-images 0 --json`: the cycles and MXU utilization the
    README's "Training on the chip" quotes, and the golden model agreeing.
The numbers are those of the default chip N = 16; with another default N the check is skipped
(exit code 77).
"""
import argparse
import gzip
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile

SKIP = 77
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run(cmd, cwd, shell=False):
    r = subprocess.run(cmd, cwd=cwd, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


def sh_lines(readme):
    """(line number, text) of every line inside ```sh blocks."""
    out, inside = [], False
    for i, line in enumerate(readme.splitlines(), 1):
        if line.startswith("```"):
            inside = line.strip() == "```sh" if not inside else False
            continue
        if inside:
            out.append((i, line))
    return out


def check_hello_matmul(readme, build):
    lines = readme.splitlines()
    idx = next((i for i, l in enumerate(lines) if l.startswith("./build/examples/hello_matmul")),
               None)
    if idx is None:
        return fail("README: no ./build/examples/hello_matmul line")
    quoted = [lines[idx].split("#", 1)[1].strip()]
    j = idx + 1
    while j < len(lines) and lines[j].lstrip().startswith("#"):
        quoted.append(lines[j].strip()[1:].strip())
        j += 1
    rc, out, err = run([os.path.join(build, "examples", "hello_matmul")], cwd=build)
    printed = [l.strip() for l in out.splitlines() if l.strip()]
    if rc != 0:
        return fail("hello_matmul exited %d: %s" % (rc, err.strip()))
    if printed != quoted:
        fail("README line %d quotes hello_matmul as\n  %s\nbut it prints\n  %s" %
             (idx + 1, "\n  ".join(quoted), "\n  ".join(printed)))


def check_firmware_commands(readme, source, build, n, doc="README"):
    tpusim = os.path.join(build, "tools", "tpusim", "tpusim")
    ran = 0
    for lineno, line in sh_lines(readme):
        cmd = line.split("#", 1)[0].strip()
        if not re.match(r"tpusim (run|asm) firmware/", cmd):
            continue
        ran += 1
        with tempfile.TemporaryDirectory(prefix="tpu-rtl-readme-") as d:
            os.symlink(os.path.join(source, "firmware"), os.path.join(d, "firmware"))
            shell_cmd = re.sub(r"(^|&& )tpusim ", lambda m: m.group(1) + shlex.quote(tpusim) + " ",
                               cmd)
            rc, out, err = run(shell_cmd, cwd=d, shell=True)
            if rc != 0:
                fail("%s line %d: `%s` exited %d: %s" % (doc, lineno, cmd, rc, err.strip()))
                continue
            m = re.search(r"tpusim run firmware/(\w+)\.s .*--hostmem-out (\S+)", cmd)
            if m:
                expected = os.path.join(build, "firmware", "%s.n%d.expected.mem" % (m.group(1), n))
                with open(os.path.join(d, m.group(2))) as f, open(expected) as g:
                    if f.read() != g.read():
                        fail("%s line %d: `%s` wrote %s, which differs from %s" %
                             (doc, lineno, cmd, m.group(2), expected))
    if ran == 0:
        fail("%s: no `tpusim run firmware/...` command found" % doc)


def check_committed_images(source, build, n):
    gen = os.path.join(build, "firmware", "tpu_firmware_images")
    committed = sorted(f for f in os.listdir(os.path.join(source, "firmware"))
                       if f.endswith(".mem"))
    if not committed:
        return fail("firmware/: no host memory images (*.mem) in the source tree")
    with tempfile.TemporaryDirectory(prefix="tpu-rtl-images-") as d:
        rc, out, err = run([gen, str(n), d], cwd=d)
        if rc != 0:
            return fail("tpu_firmware_images exited %d: %s" % (rc, err.strip()))
        for f in committed:
            with open(os.path.join(source, "firmware", f)) as a:
                want = a.read()
            path = os.path.join(d, f)
            if not os.path.exists(path) or open(path).read() != want:
                fail("firmware/%s is not what `tpu_firmware_images %d` writes (regenerate it)" %
                     (f, n))
        for prog in sorted(f[:-2] for f in os.listdir(os.path.join(source, "firmware"))
                           if f.endswith(".s")):
            if "%s.n%d.mem" % (prog, n) not in committed:
                fail("firmware/%s.s has no host memory image firmware/%s.n%d.mem" % (prog, prog, n))


def run_cnn(build, *args):
    tpusim = os.path.join(build, "tools", "tpusim", "tpusim")
    rc, out, err = run([tpusim, "run-cnn", "--json", "--backend", "rtl"] + list(args), cwd=build)
    if rc != 0:
        fail("tpusim run-cnn %s exited %d: %s" % (" ".join(args), rc, err.strip()))
        return None
    return json.loads(out)


def find_line(readme, pattern):
    for i, line in enumerate(readme.splitlines(), 1):
        m = re.search(pattern, line)
        if m:
            return i, m
    fail("README: no line matches %r" % pattern)
    return None, None


def number(text):
    return float(text.replace(",", ""))


def check_cnn_numbers(readme, build):
    # `run-cnn --images 10000 --batch 8 --quiet   # ..., 10,689 cycles per image`
    i, m = find_line(readme, r"tpusim run-cnn --images \d+ --batch 8 .*# .*?([\d,]+) cycles per image")
    j8 = run_cnn(build, "--images", "16", "--batch", "8")
    if m and j8:
        got = j8["cycles_per_image"]
        if round(got) != number(m.group(1)):
            fail("README line %d: %s cycles per image at batch 8, run-cnn --json says %.1f" %
                 (i, m.group(1), got))
    # Performance: "90.8 % MXU utilization over the whole network at batch 16"
    i, m = find_line(readme, r"([\d.]+) % MXU utilization over the whole network at batch 16")
    j16 = run_cnn(build, "--images", "16", "--batch", "16")
    if m and j16:
        got = 100 * j16["mxu_utilization"]
        if abs(got - number(m.group(1))) > 0.05 + 1e-9:
            fail("README line %d: %s %% MXU utilization at batch 16, run-cnn --json says %.2f %%"
                 % (i, m.group(1), got))
    # "and 24,089 cycles per image at batch 1 = 0.47 × the"
    i, m = find_line(readme, r"([\d,]+) cycles per image at batch 1 = ([\d.]+) ×")
    j1 = run_cnn(build, "--images", "2", "--batch", "1")
    if m and j1:
        if round(j1["cycles_per_image"]) != number(m.group(1)):
            fail("README line %d: %s cycles per image at batch 1, run-cnn --json says %.1f" %
                 (i, m.group(1), j1["cycles_per_image"]))
        ratio = j1["cycles_vs_scalesim"]
        if abs(ratio - number(m.group(2))) > 0.005 + 1e-9:
            fail("README line %d: %s x the SCALE-Sim estimate at batch 1, run-cnn --json says "
                 "%.3f" % (i, m.group(2), ratio))


FASHION_TEST_IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def write_npy_float32(path, shape, values):
    """A NumPy .npy file (format 1.0, little-endian float32, C order) without NumPy."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % \
        "".join("%d, " % d for d in shape).rstrip(" ")
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def check_run_onnx_sample(source, build):
    with open(os.path.join(source, "docs", "tpusim.md")) as f:
        doc = f.read().splitlines()
    start = next((i for i, l in enumerate(doc)
                  if l.startswith("$ tpusim run-onnx --model models/fashion_cnn.onnx --input six.npy")),
                 None)
    if start is None:
        return fail("docs/tpusim.md: no `$ tpusim run-onnx ... --input six.npy` sample")
    cmd = doc[start][2:]
    shown = []
    for line in doc[start + 1:]:
        if line.startswith("```"):
            break
        if line.strip() != "...":
            shown.append(re.sub(r" \(wall time [^)]*\)$", "", line))
    with gzip.open(FASHION_TEST_IMAGES) as f:
        raw = f.read()
    pixels = raw[16:16 + 6 * 784]
    tpusim = os.path.join(build, "tools", "tpusim", "tpusim")
    with tempfile.TemporaryDirectory(prefix="tpu-rtl-run-onnx-") as d:
        os.symlink(os.path.join(source, "models"), os.path.join(d, "models"))
        write_npy_float32(os.path.join(d, "six.npy"), (6, 1, 28, 28), [p / 255.0 for p in pixels])
        ref = cmd.replace("--output-dir out --expect ref", "--output-dir ref --backend model")
        rc, out, err = run(shlex.split(ref.replace("tpusim", tpusim, 1)), cwd=d)
        if rc != 0:
            return fail("`%s` exited %d: %s" % (ref, rc, err.strip()))
        r = subprocess.run(shlex.split(cmd.replace("tpusim", tpusim, 1)), cwd=d,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        if r.returncode != 0:
            return fail("docs/tpusim.md: `%s` exited %d: %s" % (cmd, r.returncode, r.stdout))
        printed = [re.sub(r" \(wall time [^)]*\)$", "", l) for l in r.stdout.splitlines()]
        for line in shown:
            if line not in printed:
                fail("docs/tpusim.md line %d shows\n  %s\nwhich `%s` does not print; it prints\n  %s"
                     % (start + 1, line, cmd, "\n  ".join(printed)))


def check_train_numbers(readme, build):
    # "One step at N = 16, batch 32 takes 480,827 cycles (MXU utilization 28.7 %"
    train = os.path.join(build, "tools", "tpusim", "tpusim_train_n16")
    if not os.path.exists(train):
        print("training figures not checked: %s is not built" % train)
        return
    i, m = find_line(readme, r"One step at N = 16, batch 32 takes ([\d,]+) cycles "
                             r"\(MXU utilization ([\d.]+) %")
    if not m:
        return
    cmd = [train, "train", "--backend", "rtl", "--epochs", "1", "--steps-per-epoch", "1",
           "--batch", "32", "--test-images", "0", "--json"]
    with tempfile.TemporaryDirectory(prefix="tpu-rtl-readme-train-") as d:
        rc, out, err = run(cmd, cwd=d)
    if rc != 0:
        return fail("tpusim_train_n16 train (one step) exited %d: %s" % (rc, err.strip()))
    j = json.loads(out)
    if j["cycles_per_step"] != number(m.group(1)):
        fail("README line %d: %s cycles per step, tpusim train --json says %d" %
             (i, m.group(1), j["cycles_per_step"]))
    got = 100 * j["mxu_utilization"]
    if abs(got - number(m.group(2))) > 0.05 + 1e-9:
        fail("README line %d: %s %% MXU utilization per step, tpusim train --json says %.2f %%" %
             (i, m.group(2), got))
    if j.get("matches_golden") is not True:
        fail("tpusim_train_n16 train (one step): matches_golden is %r" % j.get("matches_golden"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--default-n", type=int, required=True)
    p.add_argument("--no-cnn", action="store_true", help="skip the CNN figures")
    a = p.parse_args()
    a.source, a.build = os.path.abspath(a.source), os.path.abspath(a.build)
    if a.default_n != 16:
        print("skipped: the README's figures are for the default chip N = 16, this build's is N = %d"
              % a.default_n)
        return SKIP
    with open(os.path.join(a.source, "README.md")) as f:
        readme = f.read()
    check_hello_matmul(readme, a.build)
    check_firmware_commands(readme, a.source, a.build, a.default_n)
    with open(os.path.join(a.source, "docs", "tpusim.md")) as f:
        check_firmware_commands(f.read(), a.source, a.build, a.default_n, "docs/tpusim.md")
    check_committed_images(a.source, a.build, a.default_n)
    if not a.no_cnn:
        check_cnn_numbers(readme, a.build)
        check_run_onnx_sample(a.source, a.build)
        check_train_numbers(readme, a.build)
    if failures:
        print("%d README check(s) failed" % len(failures))
        return 1
    print("README commands and figures: all as the programs print them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
