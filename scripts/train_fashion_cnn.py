#!/usr/bin/python3
"""Trains the bundled Fashion-MNIST CNN and exports it as ONNX.

    /usr/bin/python3 scripts/train_fashion_cnn.py [--epochs 4] [--out models/fashion_cnn.onnx]

Needs Debian's python3-torch, python3-onnx (only to check the export) and
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). CPU only; a few minutes on 2 cores.

The network (the seed network of the CNN issue):
    Conv 3x3x32 + ReLU -> MaxPool 2 -> Conv 3x3x64 + ReLU -> MaxPool 2 -> Flatten
    -> Dense 128 + ReLU -> Dense 10
Input contract: NCHW float32 pixels scaled to [0, 1] (pixel / 255), no further normalization.
The model is exported with a fixed batch of 1 (the chip compiler runs it at any batch).
Writes the float test accuracy to <out>.json next to the model.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(count, rows, cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, offset=8)
    raise ValueError(f"{path}: not an idx file (magic {magic:#x})")


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


def evaluate(model, images, labels, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            logits = model(images[i:i + batch])
            correct += int((logits.argmax(1) == labels[i:i + batch]).sum())
    return correct / len(images)


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

    def tensors(prefix):
        x = load_idx(f"{DATA}/{prefix}-images-idx3-ubyte.gz")
        y = load_idx(f"{DATA}/{prefix}-labels-idx1-ubyte.gz")
        x = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
        return x, torch.from_numpy(y.astype(np.int64))

    train_x, train_y = tensors("train")
    test_x, test_y = tensors("t10k")
    model = FashionCnn()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(train_x))
        total = 0.0
        for i in range(0, len(perm), args.batch):
            idx = perm[i:i + args.batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        sched.step()
        acc = evaluate(model, test_x, test_y)
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total / len(perm):.4f}, "
              f"test accuracy {acc:.4f}, {time.time() - start:.0f} s", flush=True)

    accuracy = evaluate(model, test_x, test_y)
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), out, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      do_constant_folding=True)
    try:
        import onnx
        onnx.checker.check_model(onnx.load(out))
    except ImportError:
        pass
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
        "opset": 13,
        "input": "NCHW float32 [1, 1, 28, 28], pixel / 255",
        "train_seconds": round(time.time() - start, 1),
    }
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"wrote {out}: float test accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
