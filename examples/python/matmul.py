#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A random int8 matmul on the cycle-accurate chip, checked against NumPy (docs/python.md).

    PYTHONPATH=build/python python3 examples/python/matmul.py [--backend rtl|model] [M K N]
"""
import argparse

import numpy as np

import tpu_rtl


def numpy_reference(a, w, bias, shift):
    """docs/isa.md activate in NumPy: (a @ w + bias) / 2^shift rounded half away from zero,
    saturated to int8, then ReLU."""
    v = a.astype(np.int64) @ w.astype(np.int64) + bias
    v = np.sign(v) * ((np.abs(v) + (1 << (shift - 1))) >> shift)
    return np.maximum(np.clip(v, -128, 127), 0).astype(np.int8)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="*", type=int, default=[100, 70, 40], help="M K N")
    p.add_argument("--backend", default="rtl", choices=["rtl", "model"])
    args = p.parse_args()
    m, k, n = args.sizes
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (k, n), dtype=np.int8)
    bias = rng.integers(-1000, 1000, n, dtype=np.int32)

    with tpu_rtl.Device(args.backend) as dev:
        out, stats = dev.matmul(a, w, bias=bias, shift=10, func="relu")

    same = np.array_equal(out, numpy_reference(a, w, bias, 10))
    print(f"{m} x {k} x {n} on {args.backend} (N = {dev.n}): "
          f"{'matches NumPy' if same else 'DIFFERS from NumPy'}")
    print(f"  {stats.cycles} cycles{' (estimate)' if stats.cycles_estimated else ''}, "
          f"MXU utilization {stats.utilization:.1%}, {stats.instructions} instructions")
    print(f"  counters: {stats.counters}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
