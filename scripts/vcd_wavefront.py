#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Shows the MXU's diagonal wavefront in a VCD written by the simulator.

For every array position (row r, column c) it finds the first cycle in which the input
register `u_mxu.lane_q[r][c]` of PE(r,c) (the lane it multiplies at the next edge; PE(0,0)
takes its lane from the input port and has none) holds a valid (nonzero) operand, and prints
the grid of those cycles, PE(r,c) counted from the cycle PE(0,0) multiplies: one after its
input register's. In a TPU-v1 style array that is r + c: data enters row r r cycles late and
moves one column per cycle. With --check the script exits non-zero
unless every PE follows that diagonal.

    scripts/vcd_wavefront.py run.vcd [--check]
"""
import re
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    check = "--check" in sys.argv
    if len(args) != 1:
        sys.exit("usage: vcd_wavefront.py FILE.vcd [--check]")
    ids = {}       # VCD identifier -> (r, c)
    first = {}     # (r, c) -> first time with a nonzero value
    scope = []
    time = 0
    in_header = True
    pat = re.compile(r"lane_q\[(\d+)\]\[(\d+)\]")
    try:
        f = open(args[0])
    except OSError as e:
        sys.exit(f"vcd_wavefront: cannot open {args[0]}: {e.strerror}")
    with f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if in_header:
                if tok[0] == "$scope":
                    scope.append(tok[2])
                elif tok[0] == "$upscope":
                    scope.pop()
                elif tok[0] == "$var" and scope and scope[-1] == "u_mxu":
                    m = pat.fullmatch(tok[4])
                    if m:
                        ids[tok[3]] = (int(m.group(1)), int(m.group(2)))
                elif tok[0] == "$enddefinitions":
                    in_header = False
                    if not ids:
                        sys.exit("vcd_wavefront: no u_mxu.lane_q signals in the VCD "
                                 "(trace depth too small, or not a tpu_core VCD)")
                continue
            if tok[0].startswith("#"):
                time = int(tok[0][1:])
                continue
            if tok[0].startswith("b") and len(tok) == 2 and tok[1] in ids:
                pos = ids[tok[1]]
                # Bits [10:2] are the operand; [1:0] the lane's buffer / unsigned tags.
                if pos not in first and (int(tok[0][1:], 2) >> 2) & 0x1FF:
                    first[pos] = time
    n = 1 + max(r for r, _ in ids.values())
    first.pop((0, 0), None)  # not an input register (unused)
    if len(first) < n * n - 1:
        sys.exit(f"vcd_wavefront: only {len(first)} of {n * n - 1} PE input registers ever saw "
                 "data; dump a window that contains a matmul")
    times = sorted(set(first.values()))
    step = min(b - a for a, b in zip(times, times[1:])) if len(times) > 1 else 1
    first[(0, 0)] = first[(0, 1)]  # PE(0,0) multiplies when PE(0,1)'s input register fills
    t0 = first[(0, 0)]
    bad = 0
    print(f"first cycle each PE holds data, relative to PE(0,0) (N = {n}):")
    for r in range(n):
        row = []
        for c in range(n):
            # An input register fills one cycle before its PE multiplies.
            d = (first[(r, c)] - t0) // step + (0 if (r, c) == (0, 0) else 1)
            bad += d != r + c
            row.append(f"{d:3d}")
        print(" ".join(row))
    if bad:
        print(f"{bad} PEs are off the r + c diagonal")
        return 1 if check else 0
    print("diagonal wavefront: PE(r, c) starts r + c cycles after PE(0, 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
