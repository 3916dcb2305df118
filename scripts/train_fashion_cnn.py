#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Trains the bundled Fashion-MNIST CNN and exports it as ONNX.

    /usr/bin/python3 scripts/train_fashion_cnn.py [--epochs 4] [--out models/fashion_cnn.onnx]

Needs Debian's python3-torch, python3-onnx (only to check the export) and
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). CPU only; a few minutes on 2 cores.

The network (the seed network of the CNN issue):
    Conv 3x3x32 + ReLU -> MaxPool 2 -> Conv 3x3x64 + ReLU -> MaxPool 2 -> Flatten
    -> Dense 128 + ReLU -> Dense 10
Input contract: NCHW float32 pixels scaled to [0, 1] (pixel / 255), no further normalization.
The model is exported with a fixed batch of 1 (the chip compiler runs it at any batch).
Writes the float test accuracy to <out>.json next to the model. The idx loader, training loop and
export are shared with train_cnn_zoo.py (scripts/fashion_common.py).
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from fashion_common import DATA, INPUT_DESC, OPSET, evaluate, export_onnx, load_split, train, \
    write_meta


class FashionCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(64 * 5 * 5, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models",
                                                  "fashion_cnn.onnx"))
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)

    train_x, train_y = load_split("train")
    test_x, test_y = load_split("t10k")
    model = FashionCnn()
    start = time.time()
    train(model, train_x, train_y, test_x, test_y, args.epochs, args.batch, args.lr)

    accuracy = evaluate(model, test_x, test_y)
    out = os.path.abspath(args.out)
    export_onnx(model, out)
    meta = {
        "model": os.path.basename(out),
        "dataset": "Fashion-MNIST (" + DATA + ")",
        "float_test_accuracy": accuracy,
        "test_images": len(test_x),
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "seed": args.seed,
        "torch": torch.__version__,
        "opset": OPSET,
        "input": INPUT_DESC,
        "train_seconds": round(time.time() - start, 1),
    }
    write_meta(out, meta)
    print(f"wrote {out}: float test accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
