#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A float32 matmul on the bf16 matrix unit of the training chip, checked against NumPy
(docs/python.md "Float matmul (bf16)").

    PYTHONPATH=build/python python3 examples/python/float_matmul.py [--backend rtl|model]
        [--transfer float32|bfloat16] [M K N]
"""
import argparse

import numpy as np

import tpu_rtl


def bf16(x):
    """fp32 -> bf16 (round to nearest even) -> fp32, for finite normal values."""
    u = x.view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="*", type=int, default=[100, 70, 40], help="M K N")
    p.add_argument("--backend", default="rtl", choices=["rtl", "model"])
    p.add_argument("--transfer", default="float32", choices=["float32", "bfloat16"])
    args = p.parse_args()
    m, k, n = args.sizes
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)

    with tpu_rtl.Device(args.backend, training=True) as dev:
        out, stats = dev.matmul(a, w, transfer=args.transfer)

    # The chip's products of the bf16 operands are exact and its sums fp32: close to the
    # float64 product of the bf16-rounded operands.
    exact = bf16(a).astype(np.float64) @ bf16(w).astype(np.float64)
    same = bool(np.allclose(out, exact, rtol=1e-5, atol=1e-5 * np.sqrt(k)))
    print(f"{m} x {k} x {n} float32 on {args.backend} (N = {dev.n}, {args.transfer} transfer): "
          f"{'matches the bf16 product' if same else 'DIFFERS from the bf16 product'}")
    print(f"  largest difference to NumPy's float32 a @ w: {np.abs(out - a @ w).max():.3g}")
    print(f"  {stats.cycles} cycles{' (estimate)' if stats.cycles_estimated else ''}, "
          f"MXU utilization {stats.utilization:.1%}, {stats.instructions} instructions")
    print(f"  plan: {stats.plan}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
