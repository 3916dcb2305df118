# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the Fashion-MNIST training scripts (train_fashion_cnn.py, train_cnn_zoo.py).

Data: Debian's dataset-fashion-mnist idx files (/usr/share/datasets/fashion-mnist).
Input contract of every bundled model: NCHW float32 [1, 1, 28, 28], pixel / 255, no other
normalization; exported with ONNX opset 13 and a fixed batch of 1.
"""
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
OPSET = 13
INPUT_DESC = "NCHW float32 [1, 1, 28, 28], pixel / 255"


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


def load_split(prefix):
    """prefix "train" or "t10k" -> (images [N, 1, 28, 28] float32 in [0, 1], labels int64)."""
    x = load_idx(f"{DATA}/{prefix}-images-idx3-ubyte.gz")
    y = load_idx(f"{DATA}/{prefix}-labels-idx1-ubyte.gz")
    x = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
    return x, torch.from_numpy(y.astype(np.int64))


def evaluate(model, images, labels, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            logits = model(images[i:i + batch])
            correct += int((logits.argmax(1) == labels[i:i + batch]).sum())
    return correct / len(images)


def train(model, train_x, train_y, test_x, test_y, epochs, batch, lr, weight_decay=0.0):
    """Adam with cosine decay (stepped per epoch), cross entropy; prints the test accuracy after
    every epoch. Returns the elapsed seconds."""
    if weight_decay:
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    start = time.time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(train_x))
        total = 0.0
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        sched.step()
        acc = evaluate(model, test_x, test_y)
        print(f"epoch {epoch + 1}/{epochs}: loss {total / len(perm):.4f}, "
              f"test accuracy {acc:.4f}, {time.time() - start:.0f} s", flush=True)
    return time.time() - start


def count_macs(model):
    """Multiply-accumulates of one [1, 1, 28, 28] image in Conv2d and Linear layers (BN, pooling,
    Add and activations are not counted)."""
    macs = [0]

    def conv_hook(m, inputs, out):
        kh, kw = m.kernel_size
        macs[0] += out.numel() * (m.in_channels // m.groups) * kh * kw

    def linear_hook(m, inputs, out):
        macs[0] += out.numel() * m.in_features

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear_hook))
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 1, 28, 28))
    for h in hooks:
        h.remove()
    return macs[0]


def export_onnx(model, out, **kwargs):
    """Exports in eval mode, opset 13, fixed batch 1, input "input", output "logits". Checks the
    file with onnx.checker if python3-onnx is installed and returns the graph's op types in order
    of first use (None without onnx)."""
    out = os.path.abspath(out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    model.eval()
    kwargs.setdefault("do_constant_folding", True)
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), out, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"], **kwargs)
    try:
        import onnx
    except ImportError:
        return None
    graph = onnx.load(out)
    onnx.checker.check_model(graph)
    ops = []
    for node in graph.graph.node:
        if node.op_type not in ops:
            ops.append(node.op_type)
    return ops


def write_meta(out, meta):
    """Writes meta (a dict) to <out without extension>.json."""
    path = os.path.splitext(os.path.abspath(out))[0] + ".json"
    with open(path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return path
