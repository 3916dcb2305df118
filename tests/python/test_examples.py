# SPDX-License-Identifier: Apache-2.0
"""The examples of docs/python.md (examples/python/*.py) run as a newcomer runs them: each a
process of its own with PYTHONPATH set to the build tree, exit code 0 and the promised lines."""

import os
import subprocess
import sys

import pytest

import tpu_rtl

from conftest import SOURCE_DIR

EXAMPLES = SOURCE_DIR / "examples" / "python"


def run(script, *args, cwd):
    p = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                       text=True, timeout=600, cwd=cwd, env=dict(os.environ))
    assert p.returncode == 0, f"{script} {args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


@pytest.mark.parametrize("backend", ["rtl", "model"])
def test_matmul_example(backend, tmp_path):
    out = run("matmul.py", "--backend", backend, "64", "50", "30", cwd=tmp_path)
    assert f"64 x 50 x 30 on {backend} (N = 16): matches NumPy" in out


@pytest.mark.parametrize("backend,transfer", [("rtl", "float32"), ("model", "bfloat16")])
def test_float_matmul_example(backend, transfer, tmp_path):
    if backend == "rtl" and tpu_rtl.DEFAULT_N not in tpu_rtl.TRAIN_CHIP_SIZES:
        pytest.skip("this build has no training chip (TPU_SIM_TRAIN_N_LIST)")
    out = run("float_matmul.py", "--backend", backend, "--transfer", transfer, "64", "50", "30",
              cwd=tmp_path)
    assert (f"64 x 50 x 30 float32 on {backend} (N = 16, {transfer} transfer): matches the "
            "bf16 product") in out


def test_fashion_example(fashion, tmp_path):
    chart = tmp_path / "utilization.png"
    out = run("fashion_cnn.py", "--images", "8", "--chart", str(chart), cwd=tmp_path)
    assert "8 images on rtl: accuracy" in out
    assert "outputs equal the integer reference: True" in out
    assert "/conv2/Conv" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out
    else:
        assert chart.stat().st_size > 1000 and chart.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("backend", ["rtl", "model"])
def test_fit_example(backend, tmp_path):
    if tpu_rtl.DEFAULT_N not in tpu_rtl.TRAIN_CHIP_SIZES:
        pytest.skip("this build has no training chip (TPU_SIM_TRAIN_N_LIST)")
    out = run("fit.py", "--backend", backend, "--steps", "2", "--batch", "4", "--hidden", "8",
              cwd=tmp_path)
    assert f"4 steps of 4 images on {backend} (N = 16): losses" in out
    other = "model" if backend == "rtl" else "rtl"
    assert f"{other} gives the same losses and weights bit for bit" in out
