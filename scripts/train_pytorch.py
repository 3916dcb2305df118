#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch float32 reference of `tpusim train` (docs/training.md "Against PyTorch").

Trains the same initial ONNX model on the same images in the same order as `tpusim train` does,
in PyTorch float32 on the CPU, and prints one JSON object: every step's loss, per epoch the mean
loss and the test accuracy, the accuracy before training.

    tpusim train --save-initial init.onnx ...            # the initial model (e.g. the default)
    /usr/bin/python3 scripts/train_pytorch.py --model init.onnx [the same training options]

Options mirror tpusim train's: --epochs, --steps-per-epoch (default: whole set / batch), --batch,
--optimizer sgd|adam, --lr (default adam 0.001, sgd 0.01), --momentum, --weight-decay, --beta1,
--beta2, --epsilon (default 1e-7, Keras'), --shuffle off|SEED (the same SplitMix64 Fisher-Yates
order), --test-images K (default all), --data DIR (Fashion-MNIST). Weight decay is L2 added to
the gradient (torch.optim's weight_decay), as on the chip.

The ONNX graph is run by a small interpreter of the ops the training compiler takes (Conv,
MaxPool, AveragePool, GlobalAveragePool, Relu, Flatten, Reshape, Gemm, MatMul, Add, Identity,
Dropout, a final Softmax, which the loss includes); the float initializers read by Conv, Gemm
and MatMul (and the Add of an initializer after a MatMul: its bias) are the trained parameters.

Needs Debian's python3-torch and python3-onnx (not installed by scripts/setup.sh: only this
script and the training scripts use them; no test does).
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

MASK = (1 << 64) - 1


def splitmix64(state):
    """One SplitMix64 step: (new state, output), as driver/train/io/train_data.cpp."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


class BatchOrder:
    """The index stream of tpu::train::BatchOrder: passes in file order, or one Fisher-Yates
    permutation per pass from one SplitMix64 stream seeded with the seed."""

    def __init__(self, count, seed):
        self.count, self.seed, self.state = count, seed, seed or 0
        self.pass_, self.pos = None, count

    def _new_pass(self):
        p = list(range(self.count))
        if self.seed is not None:
            for i in range(self.count - 1, 0, -1):
                self.state, z = splitmix64(self.state)
                j = z % (i + 1)
                p[i], p[j] = p[j], p[i]
        self.pass_, self.pos = p, 0

    def next(self, n):
        out = []
        for _ in range(n):
            if self.pos == self.count:
                self._new_pass()
            out.append(self.pass_[self.pos])
            self.pos += 1
        return out


def load_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(count, 1, rows, cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, offset=8)
    raise ValueError(f"{path}: not an idx file (magic {magic:#x})")


def load_split(data, stem):
    def pick(base):
        return base + ".gz" if os.path.exists(base + ".gz") or not os.path.exists(base) else base
    x = load_idx(pick(f"{data}/{stem}-images-idx3-ubyte"))
    y = load_idx(pick(f"{data}/{stem}-labels-idx1-ubyte"))
    # pixel / 255 in float32, as the host does it (float(p) / 255.0f)
    return torch.from_numpy(x.astype(np.float32) / np.float32(255.0)), torch.from_numpy(
        y.astype(np.int64))


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class OnnxModule(torch.nn.Module):
    """Runs the graph with torch ops; trainable initializers are Parameters."""

    def __init__(self, model):
        super().__init__()
        self.graph = model.graph
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        trainable = set()
        for i, n in enumerate(model.graph.node):
            if n.op_type in ("Conv", "Gemm", "MatMul"):
                trainable.update(n.input[1:])
            if n.op_type == "Add" and i > 0 and model.graph.node[i - 1].op_type == "MatMul":
                trainable.update(x for x in n.input if x in inits)
        self.params = torch.nn.ParameterDict()
        self.names = {}
        self.consts = {}
        for k, v in inits.items():
            if k in trainable and v.dtype == np.float32:
                key = f"p{len(self.names)}"
                self.names[k] = key
                self.params[key] = torch.nn.Parameter(torch.from_numpy(v.copy()))
            else:
                self.consts[k] = torch.from_numpy(np.array(v))
        inputs = [v.name for v in model.graph.input if v.name not in inits]
        self.input_name = inputs[0]
        self.output_name = model.graph.output[0].name

    def value(self, env, name):
        if name in env:
            return env[name]
        if name in self.names:
            return self.params[self.names[name]]
        return self.consts[name]

    def forward(self, x):
        env = {self.input_name: x}
        nodes = list(self.graph.node)
        for i, n in enumerate(nodes):
            a = attrs(n)
            v = [self.value(env, name) for name in n.input if name]
            op = n.op_type
            if op == "Conv":
                pads = a.get("pads", [0, 0, 0, 0])
                if pads[0] != pads[2] or pads[1] != pads[3]:
                    v[0] = F.pad(v[0], (pads[1], pads[3], pads[0], pads[2]))
                    pads = [0, 0, 0, 0]
                y = F.conv2d(v[0], v[1], v[2] if len(v) > 2 else None, a.get("strides", [1, 1]),
                             (pads[0], pads[1]), a.get("dilations", [1, 1]), a.get("group", 1))
            elif op in ("MaxPool", "AveragePool"):
                pads = a.get("pads", [0, 0, 0, 0])
                fn = F.max_pool2d if op == "MaxPool" else F.avg_pool2d
                kw = {} if op == "MaxPool" else {
                    "count_include_pad": bool(a.get("count_include_pad", 0))}
                y = fn(v[0], a["kernel_shape"], a.get("strides", a["kernel_shape"]),
                       (pads[0], pads[1]), ceil_mode=bool(a.get("ceil_mode", 0)), **kw)
            elif op == "GlobalAveragePool":
                y = v[0].mean(dim=(2, 3), keepdim=True)
            elif op == "Relu":
                y = F.relu(v[0])
            elif op == "Flatten":
                y = torch.flatten(v[0], a.get("axis", 1))
            elif op == "Reshape":
                y = v[0].reshape(v[0].shape[0], -1)
            elif op == "Gemm":
                if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                    raise ValueError(f"node {n.name}: Gemm with transA/alpha/beta")
                w = v[1].t() if a.get("transB", 0) else v[1]
                y = v[0] @ w + (v[2] if len(v) > 2 else 0)
            elif op == "MatMul":
                y = v[0] @ v[1]
            elif op == "Add":
                y = v[0] + v[1]
            elif op in ("Identity", "Dropout"):
                y = v[0]
            elif op == "Softmax" and i == len(nodes) - 1:
                y = v[0]  # the loss takes the logits
            else:
                raise ValueError(f"node {n.name} ({op}): not supported")
            env[n.output[0]] = y
        return env[self.output_name]


def accuracy(model, x, y):
    with torch.no_grad():
        correct = 0
        for i in range(0, len(x), 1000):
            correct += int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
    return correct / len(x)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--data", default=os.environ.get("TPU_FASHION_MNIST_DIR",
                                                    "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--steps-per-epoch", type=int, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    p.add_argument("--lr", type=float)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--epsilon", type=float, default=1e-7)
    p.add_argument("--shuffle", default="off")
    p.add_argument("--test-images", type=int)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    model = OnnxModule(onnx.load(args.model))
    train_x, train_y = load_split(args.data, "train")
    test_x, test_y = load_split(args.data, "t10k")
    k = len(test_x) if args.test_images is None else args.test_images
    test_x, test_y = test_x[:k], test_y[:k]
    lr = args.lr if args.lr is not None else (0.01 if args.optimizer == "sgd" else 0.001)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=args.momentum,
                              weight_decay=args.weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(args.beta1, args.beta2),
                               eps=args.epsilon, weight_decay=args.weight_decay)
    seed = None if args.shuffle == "off" else int(args.shuffle)
    order = BatchOrder(len(train_x), seed)
    steps = args.steps_per_epoch or len(train_x) // args.batch

    start = time.time()
    result = {"model": args.model, "framework": f"PyTorch {torch.__version__} float32",
              "initial_test_accuracy": accuracy(model, test_x, test_y) if k else None,
              "losses": [], "epochs": []}
    for epoch in range(args.epochs):
        total = 0.0
        for _ in range(steps):
            idx = torch.tensor(order.next(args.batch))
            opt.zero_grad()
            loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
            result["losses"].append(float(loss))
            total += float(loss)
        acc = accuracy(model, test_x, test_y) if k else None
        result["epochs"].append({"loss": total / steps, "test_accuracy": acc})
        print(f"epoch {epoch + 1}/{args.epochs}: mean loss {total / steps:.6f}, test accuracy "
              f"{acc}", file=sys.stderr, flush=True)
    result["steps"] = len(result["losses"])
    result["test_accuracy"] = result["epochs"][-1]["test_accuracy"] if result["epochs"] else None
    result["wall_seconds"] = time.time() - start
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
