#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Trains the bundled branching Fashion-MNIST CNNs and exports them as ONNX.

    /usr/bin/python3 scripts/train_cnn_zoo.py --model resnet|mobilenet|squeezenet|all \\
        [--epochs E] [--out-dir models]

Needs Debian's python3-torch, python3-onnx (only to check the export) and
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). CPU only, 2 threads; a few minutes per
model. Shares the data loader, training loop and export with train_fashion_cnn.py
(scripts/fashion_common.py).

The models (small, a few million MACs per image, so the RTL simulator runs the whole test set):
    resnet      ResNet: stem Conv 3x3 1->16 + BN + ReLU, MaxPool 3x3/2 pad 1, three BasicBlocks
                16->16 (identity), 16->32 /2 and 32->64 /2 (1x1 /2 Conv + BN projections),
                GlobalAveragePool, Linear 64->10. Also writes resnet_bn.onnx, the same network
                exported with its BatchNormalization nodes kept (not folded into the convs), if
                it is smaller than --bn-max-kb (300; it is about 321 KB, so not by default).
    mobilenet   MobileNetV2: stem Conv 3x3/2 1->16 + BN + ReLU6, inverted residual blocks (t=4)
                16->16 (residual), 16->32 /2, 32->32 (residual), Conv 1x1 32->64 + BN + ReLU6,
                mean over H, W (ReduceMean), Linear 64->10.
    squeezenet  SqueezeNet: stem Conv 3x3 1->32 + ReLU, MaxPool 2, Fire(16, 32+32), Fire(16, 32+32),
                MaxPool 3x3/2 ceil_mode, Fire(32, 64+64), Dropout, Conv 1x1 128->10 + ReLU,
                GlobalAveragePool, Flatten. Trained with BN after every conv (folded at export,
                so the graph has no BN, like the original SqueezeNet).
Input contract: NCHW float32 pixels scaled to [0, 1] (pixel / 255), no further normalization.
Each model is exported in eval mode (BN folded into the convs), opset 13, fixed batch 1, and its
float test accuracy, MACs and ONNX op types are written to <model>.json next to it.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from fashion_common import DATA, INPUT_DESC, OPSET, count_macs, evaluate, export_onnx, \
    load_split, train, write_meta


# ---- ResNet -------------------------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nn.Module):
    description = ("Conv 3x3 1->16 pad 1 + BN + ReLU (28x28) -> MaxPool 3x3 /2 pad 1 (14x14) "
                   "-> BasicBlock 16->16 (identity) -> BasicBlock 16->32 /2 (7x7, 1x1 /2 "
                   "projection) -> BasicBlock 32->64 /2 (4x4, projection) -> GlobalAveragePool "
                   "-> Flatten -> Linear 64->10")

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(x, 1))


# ---- MobileNetV2 --------------------------------------------------------------------------------

class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNet(nn.Module):
    description = ("Conv 3x3 1->16 /2 pad 1 + BN + ReLU6 (14x14) -> InvertedResidual t=4 16->16 "
                   "(residual) -> InvertedResidual t=4 16->32 /2 (7x7) -> InvertedResidual t=4 "
                   "32->32 (residual) -> Conv 1x1 32->64 + BN + ReLU6 -> mean over H, W -> "
                   "Linear 64->10; InvertedResidual = Conv 1x1 expand + BN + ReLU6, depthwise "
                   "Conv 3x3 + BN + ReLU6, Conv 1x1 project + BN")

    def __init__(self, expand=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 1, expand),
                                    InvertedResidual(16, 32, 2, expand),
                                    InvertedResidual(32, 32, 1, expand))
        self.head = nn.Sequential(nn.Conv2d(32, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU6())
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(x.mean((2, 3)))


# ---- SqueezeNet ---------------------------------------------------------------------------------

def conv_bn(cin, cout, kernel, padding=0):
    """Conv + BatchNorm: the SqueezeNet is trained with BN after every conv (without it, it trains
    far too slowly for a few epochs: 77 % after 2 epochs); the exporter folds each BN into its conv
    in eval mode, so the ONNX graph is the BN-less SqueezeNet (Conv, Relu, Concat, ...)."""
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, padding=padding, bias=False),
                         nn.BatchNorm2d(cout))


class Fire(nn.Module):
    def __init__(self, cin, squeeze, expand1, expand3):
        super().__init__()
        self.squeeze = conv_bn(cin, squeeze, 1)
        self.expand1 = conv_bn(squeeze, expand1, 1)
        self.expand3 = conv_bn(squeeze, expand3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1(x)), F.relu(self.expand3(x))], 1)


class SqueezeNet(nn.Module):
    description = ("Conv 3x3 1->32 pad 1 + ReLU (28x28) -> MaxPool 2 (14x14) -> Fire(16, 32+32) "
                   "-> Fire(16, 32+32) -> MaxPool 3x3 /2 ceil_mode (7x7) -> Fire(32, 64+64) -> "
                   "Dropout -> Conv 1x1 128->10 + ReLU -> GlobalAveragePool -> Flatten; "
                   "Fire(s, e1+e3) = Conv 1x1 ->s + ReLU, then Conv 1x1 ->e1 + ReLU and "
                   "Conv 3x3 pad 1 ->e3 + ReLU concatenated on channels; trained with BN after "
                   "every conv, folded into the convs at export")

    def __init__(self, dropout=0.2):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            Fire(32, 16, 32, 32), Fire(64, 16, 32, 32),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 32, 64, 64))
        self.classifier = nn.Sequential(nn.Dropout(dropout), conv_bn(128, 10, 1), nn.ReLU(),
                                        nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


# name -> (constructor, default epochs, default learning rate)
MODELS = {
    "resnet": (ResNet, 3, 3e-3),
    "mobilenet": (MobileNet, 3, 3e-3),
    "squeezenet": (SqueezeNet, 3, 3e-3),
}


def run(name, args, data):
    ctor, default_epochs, default_lr = MODELS[name]
    epochs = args.epochs or default_epochs
    lr = args.lr or default_lr
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    train_x, train_y, test_x, test_y = data
    model = ctor()
    params = sum(p.numel() for p in model.parameters())
    macs = count_macs(model)
    print(f"== {name}: {params} parameters, {macs} MACs per image; "
          f"{epochs} epochs, lr {lr}, batch {args.batch}", flush=True)
    seconds = train(model, train_x, train_y, test_x, test_y, epochs, args.batch, lr)
    accuracy = evaluate(model, test_x, test_y)

    out = os.path.join(os.path.abspath(args.out_dir), name + ".onnx")
    ops = export_onnx(model, out)
    print(f"{name}.onnx: {os.path.getsize(out)} bytes, ops {ops}")
    meta = {
        "model": os.path.basename(out),
        "architecture": ctor.description,
        "dataset": "Fashion-MNIST (" + DATA + ")",
        "float_test_accuracy": accuracy,
        "test_images": len(test_x),
        "macs_per_image": macs,
        "parameters": params,
        "onnx_ops": ops,
        "epochs": epochs,
        "batch": args.batch,
        "lr": lr,
        "optimizer": "Adam, cosine decay per epoch",
        "seed": args.seed,
        "threads": args.threads,
        "torch": torch.__version__,
        "opset": OPSET,
        "input": INPUT_DESC,
        "train_seconds": round(seconds, 1),
    }
    if name == "resnet":
        meta["bn_variant"] = export_bn_variant(model, args.out_dir, args.bn_max_kb * 1024)
    write_meta(out, meta)
    print(f"wrote {out}: float test accuracy {accuracy:.4f}, {seconds:.0f} s", flush=True)


def export_bn_variant(model, out_dir, limit):
    """resnet_bn.onnx: the trained ResNet exported with its BatchNormalization nodes kept
    (TrainingMode.PRESERVE on a model in eval mode skips the exporter's BN-into-Conv folding).
    Kept only if it is a valid inference graph (BN nodes with one output, no training_mode)
    smaller than `limit` bytes; returns its file name, or None when skipped (then the file is
    deleted)."""
    out = os.path.join(os.path.abspath(out_dir), "resnet_bn.onnx")
    ops = export_onnx(model, out, training=torch.onnx.TrainingMode.PRESERVE)
    ok = ops is not None and "BatchNormalization" in ops and os.path.getsize(out) < limit
    if ok:
        import onnx
        for node in onnx.load(out).graph.node:
            if node.op_type == "BatchNormalization":
                attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
                ok = ok and len(node.output) == 1 and not attrs.get("training_mode", 0)
    if not ok:
        print(f"resnet_bn.onnx: skipped ({os.path.getsize(out)} bytes, limit {limit}; ops {ops})")
        os.remove(out)
        return None
    print(f"resnet_bn.onnx: {os.path.getsize(out)} bytes, ops {ops}")
    return os.path.basename(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(MODELS) + ["all"])
    ap.add_argument("--epochs", type=int, default=0, help="default: per model (3)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.0, help="default: per model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bn-max-kb", type=int, default=300,
                    help="write resnet_bn.onnx only if smaller than this (KB)")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = load_split("train") + load_split("t10k")
    names = list(MODELS) if args.model == "all" else [args.model]
    for name in names:
        run(name, args, data)


if __name__ == "__main__":
    main()
