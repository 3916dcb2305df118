# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures of the tpu_rtl pytest suite (tests/python, registered with ctest by
python/CMakeLists.txt, label `python`). The environment gives the tools: TPU_TPUSIM (the CLI),
TPU_PY_MATMUL_REF (tests/python/matmul_ref.cpp), TPU_PY_FLOAT_MATMUL_REF
(tests/python/float_matmul_ref.cpp), TPU_SOURCE_DIR. The harness the test files share: the C++
tools' JSON (run_json), the GIL check (ticks_while) and the memory check (rss_growth_kib). Each test file runs in its own
process (one rtl chip per process)."""

import gzip
import json
import os
import pathlib
import subprocess
import threading
import time

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


def ticks_while(work):
    """Runs work() in a second thread while this thread ticks (one tick per ms of sleep) until it
    is done: (work's result, seconds work() took, ticks). A call that held the GIL for its whole
    simulation would leave this thread 0 or 1 ticks."""
    done, result = threading.Event(), {}

    def run():
        start = time.perf_counter()
        try:
            result["value"] = work()
        except BaseException as e:  # noqa: B902 -- re-raised in the test's thread
            result["error"] = e
        result["seconds"] = time.perf_counter() - start
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    if "error" in result:
        raise result["error"]
    return result.get("value"), result["seconds"], ticks


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def rss_growth_kib(calls, warmup, count):
    """The resident set's growth in KiB over calls(count), after calls(warmup) has warmed up the
    allocator pools and the chip's memory pages."""
    calls(warmup)
    before = rss_kib()
    calls(count)
    return rss_kib() - before
