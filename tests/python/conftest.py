# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures of the tpu_rtl pytest suite (tests/python, registered with ctest by
python/CMakeLists.txt, label `python`). The environment gives the tools: TPU_TPUSIM (the CLI),
TPU_PY_MATMUL_REF (tests/python/matmul_ref.cpp), TPU_SOURCE_DIR. Each test file runs in its own
process (one rtl chip per process)."""

import gzip
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TPU_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
FASHION_DIR = pathlib.Path(os.environ.get("TPU_FASHION_MNIST_DIR",
                                          "/usr/share/datasets/fashion-mnist"))


def tool(name):
    path = os.environ.get(name)
    if not path or not os.path.exists(path):
        pytest.skip(f"{name} is not set (run the tests through ctest)")
    return path


def read_idx(path):
    """An idx file of Fashion-MNIST (gzip) as a NumPy array (images (n, 28, 28) or labels)."""
    data = gzip.open(path).read()
    if data[3] == 3:
        n, rows, cols = np.frombuffer(data[4:16], ">u4")
        return np.frombuffer(data[16:], np.uint8).reshape(int(n), int(rows), int(cols))
    return np.frombuffer(data[8:], np.uint8)


@pytest.fixture(scope="session")
def fashion():
    """(train images, test images, test labels) of Debian's dataset-fashion-mnist."""
    if not (FASHION_DIR / "t10k-images-idx3-ubyte.gz").exists():
        pytest.skip(f"Fashion-MNIST is not in {FASHION_DIR} (scripts/setup.sh installs it)")
    return (read_idx(FASHION_DIR / "train-images-idx3-ubyte.gz"),
            read_idx(FASHION_DIR / "t10k-images-idx3-ubyte.gz"),
            read_idx(FASHION_DIR / "t10k-labels-idx1-ubyte.gz"))


@pytest.fixture(scope="session")
def fashion_model():
    return SOURCE_DIR / "models" / "fashion_cnn.onnx"


def run_json(args, stdin=None):
    """Runs a tool and parses the one JSON object it prints."""
    p = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{args}: exit {p.returncode}\n{p.stderr}"
    return json.loads(p.stdout)
