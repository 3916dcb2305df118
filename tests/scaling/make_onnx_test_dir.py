#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes an ONNX test directory for run-onnx sharding tests (tests/scaling/scaling_test.sh):
DIR/model.onnx (a copy of MODEL) and DIR/test_data_set_0..SETS-1/input_0.pb, each a float32
TensorProto [B, 1, 28, 28] of 2, 3 or 4 pseudo-random images (fixed seed). Standard library only
(the protobuf wire format by hand: dims = 1, data_type = 2, raw_data = 9).

usage: make_onnx_test_dir.py MODEL DIR SETS
"""
import os
import random
import shutil
import struct
import sys


def varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def tensor_proto(dims, values):
    m = b"".join(b"\x08" + varint(d) for d in dims)
    m += b"\x10" + varint(1)  # FLOAT
    raw = struct.pack("<%df" % len(values), *values)
    return m + b"\x4a" + varint(len(raw)) + raw


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model, out, sets = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(model, os.path.join(out, "model.onnx"))
    rnd = random.Random(7)
    for s in range(sets):
        d = os.path.join(out, "test_data_set_%d" % s)
        os.makedirs(d, exist_ok=True)
        n = 2 + s % 3
        values = [rnd.random() for _ in range(n * 784)]
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(tensor_proto([n, 1, 28, 28], values))


if __name__ == "__main__":
    main()
