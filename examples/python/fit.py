#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains a small MLP on the chip with tpu_rtl.fit, Keras-style (docs/python.md "Training"), on
Fashion-MNIST when Debian's dataset-fashion-mnist is installed, else on synthetic images whose
label shows as a bright band; then checks that the rtl training chip and the golden model give
the same losses and weights bit for bit.

    PYTHONPATH=build/python python3 examples/python/fit.py [--backend rtl|model] [--steps S]
        [--batch B] [--hidden H] [--data DIR]
"""
import argparse
import gzip
import os

import numpy as np

import tpu_rtl


def idx(path):
    data = gzip.open(path).read()
    if data[3] == 3:
        return np.frombuffer(data, np.uint8, offset=16).reshape(-1, 1, 28, 28)
    return np.frombuffer(data, np.uint8, offset=8)


def load(folder, count):
    """(x, y, test x, test y): Fashion-MNIST from `folder`, or synthetic images."""
    if os.path.exists(os.path.join(folder, "train-images-idx3-ubyte.gz")):
        f = lambda name: idx(os.path.join(folder, name))  # noqa: E731
        return (f("train-images-idx3-ubyte.gz")[:count], f("train-labels-idx1-ubyte.gz")[:count],
                f("t10k-images-idx3-ubyte.gz")[:count], f("t10k-labels-idx1-ubyte.gz")[:count])
    rng = np.random.default_rng(1)
    y = rng.integers(0, 10, 2 * count)
    x = rng.integers(0, 80, (2 * count, 1, 28, 28)).astype(np.uint8)
    for i, label in enumerate(y):
        x[i, 0, :, 2 * label:2 * label + 4] += 170
    return x[:count], y[:count], x[count:], y[count:]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="rtl", choices=["rtl", "model"])
    p.add_argument("--steps", type=int, default=2, help="steps per epoch (2 epochs)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    x, y, tx, ty = load(args.data, 2 * args.steps * args.batch)
    model = tpu_rtl.mlp_example(hidden=args.hidden, seed=1)
    kw = dict(epochs=2, steps_per_epoch=args.steps, batch_size=args.batch, optimizer="adam",
              shuffle=1, validation_data=(tx, ty), test_images=len(tx))

    h = tpu_rtl.fit(model, x, y, backend=args.backend, **kw)
    print(f"{len(h.losses)} steps of {args.batch} images on {args.backend} (N = "
          f"{tpu_rtl.DEFAULT_N}): losses {', '.join(f'{v:.4f}' for v in h.losses)}")
    print(f"  history: {h.history}")
    print(f"  {h.cycles_total} cycles{' (estimate)' if h.cycles_estimated else ''}, "
          f"{h.wall_seconds:.2f} s")
    other = "model" if args.backend == "rtl" else "rtl"
    if other == "rtl" and tpu_rtl.DEFAULT_N not in tpu_rtl.TRAIN_CHIP_SIZES:
        print("  (no rtl training chip in this build: no comparison)")
        return 0
    g = tpu_rtl.fit(model, x, y, backend=other, **kw)
    same = g.losses == h.losses and g.model == h.model
    print(f"  {other} gives {'the same' if same else 'OTHER'} losses and weights bit for bit")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
