# SPDX-License-Identifier: Apache-2.0
"""An independent NumPy reference of the float32 Device.matmul, written from docs/isa.md
("Floating point", `load_weights`, `matmul_bf16`) and docs/python.md (K padded with +0 to whole
N-wide tiles, tile sums added to the accumulator in K order). Native float64 arithmetic with one
rounding to float32 (correctly rounded: isa.md), DAZ / FTZ / canonical NaN around it with NumPy
bit operations. It shares no code with the driver's golden model (driver/fp.cpp)."""

import numpy as np

MIN_NORMAL = 2.0 ** -126
CANONICAL_NAN = np.uint32(0x7FC00000)


def bf16(x):
    """fp32 -> bf16 -> fp32 (isa.md): DAZ, NaN -> 0x7FC0, round the pattern to its upper 16 bits
    ties to even (a carry out of the largest finite value gives infinity)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    exp, frac, sign = (u >> 23) & 0xFF, u & 0x7FFFFF, u & 0x80000000
    u = np.where((exp == 0) & (frac != 0), sign, u)  # DAZ
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where((exp == 0xFF) & (frac != 0), 0x7FC0, r)
    return (r << 16).astype(np.uint32).view(np.float32)


def _finish(r):
    """A float64 result of one + or x of fp32 operands -> the fp32 the chip stores: rounded once
    (RNE), FTZ below 2^-126 (a zero of the result's sign), canonical NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = r.astype(np.float32)
    f = np.where((np.abs(f) < MIN_NORMAL) & (f != 0), np.copysign(np.float32(0), f), f)
    bits = f.view(np.uint32).copy()
    bits[np.isnan(f)] = CANONICAL_NAN
    return bits.view(np.float32)


def mul(a, w):
    """bf16 x bf16 (operands already bf16 values in fp32): exact in float64, then FTZ / inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _finish(a.astype(np.float64) * w.astype(np.float64))


def add(s, p):
    with np.errstate(invalid="ignore", over="ignore"):
        return _finish(s.astype(np.float64) + p.astype(np.float64))


def float_matmul(a, w, n_tile):
    """out[m][c] for the chip with N = n_tile, bit for bit (canonical NaN)."""
    m, k = a.shape
    cols = w.shape[1]
    kt = -(-k // n_tile)
    ab = np.zeros((m, kt * n_tile), np.float32)
    wb = np.zeros((kt * n_tile, cols), np.float32)
    ab[:, :k] = bf16(a)
    wb[:k, :] = bf16(w)
    acc = None
    for t in range(kt):
        s = np.zeros((m, cols), np.float32)  # +0.0
        for kk in range(t * n_tile, (t + 1) * n_tile):
            s = add(s, mul(ab[:, kk, None], wb[None, kk, :]))
        acc = s if acc is None else add(acc, s)
    return acc


def bits(x):
    return np.ascontiguousarray(x, np.float32).view(np.uint32)
