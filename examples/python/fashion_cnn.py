#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The bundled Fashion-MNIST CNN on a batch of test images, with its per-layer profile and
(when matplotlib is installed) a per-layer utilization bar chart (docs/python.md).

    PYTHONPATH=build/python python3 examples/python/fashion_cnn.py [--images 32]
        [--backend rtl|model] [--chart utilization.png]
"""
import argparse
import gzip
import os
import pathlib

import numpy as np

import tpu_rtl

HERE = pathlib.Path(__file__).resolve().parent
DATA = pathlib.Path(os.environ.get("TPU_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))


def read_idx(path):
    """An idx file (gzip) of Fashion-MNIST: images (n, 28, 28) uint8 or labels (n,) uint8."""
    data = gzip.open(path).read()
    if data[3] == 3:  # 3 dimensions: images
        n, rows, cols = np.frombuffer(data[4:16], ">u4")
        return np.frombuffer(data[16:], np.uint8).reshape(int(n), int(rows), int(cols))
    return np.frombuffer(data[8:], np.uint8)


def chart(result, path):
    """Per-layer MXU utilization as a bar chart (needs matplotlib: apt install python3-matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"chart: matplotlib is not installed (apt install python3-matplotlib); {path} "
              "not written")
        return
    names = [layer.name for layer in result.layers]
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(names, [100 * (layer.utilization or 0) for layer in result.layers])
    ax.set_ylabel("MXU utilization (%)")
    ax.set_title("fashion_cnn per layer")
    fig.tight_layout()
    fig.savefig(path)
    print(f"chart: {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(HERE.parents[1] / "models" / "fashion_cnn.onnx"))
    p.add_argument("--images", type=int, default=32)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--backend", default="rtl", choices=["rtl", "model"])
    p.add_argument("--chart", help="write the per-layer utilization chart (PNG) here")
    args = p.parse_args()

    train = read_idx(DATA / "train-images-idx3-ubyte.gz")
    test = read_idx(DATA / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(DATA / "t10k-labels-idx1-ubyte.gz")

    # Import and quantize once (activation ranges from 200 training images) ...
    model = tpu_rtl.Model(args.model, calibration=train[:200])
    print(model)
    # ... then run a batch of test images on the chip.
    r = model.evaluate(test[:args.images], labels[:args.images], backend=args.backend,
                       batch=args.batch)
    print(f"{args.images} images on {args.backend}: accuracy {r.accuracy:.1%}, "
          f"{r.cycles_per_image:.0f} cycles per image, "
          f"outputs equal the integer reference: {bool(r.matches_reference.all())}")
    print(f"first predictions: {r.predicted[:10].tolist()} (labels {labels[:10].tolist()})")
    for layer in r.layers:
        util = "n/a" if layer.utilization is None else f"{layer.utilization:.1%}"
        print(f"  {layer.name:14} {layer.op:6} {layer.cycles:9.1f} cycles/image  "
              f"utilization {util}")
    if args.chart:
        chart(r, args.chart)
    return 0 if r.matches_reference.all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
