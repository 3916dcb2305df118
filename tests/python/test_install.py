# SPDX-License-Identifier: Apache-2.0
"""`cmake --install` puts tpu_rtl into <prefix>/lib/python3.X/dist-packages (component python),
and the docs' example runs from there with the build tree out of the path."""

import os
import subprocess
import sys

from conftest import SOURCE_DIR, tool


def test_install_prefix_import(tmp_path):
    build, cmake = tool("TPU_BUILD_DIR"), tool("TPU_CMAKE")
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", build, "--prefix", str(prefix), "--component", "python"],
                   check=True, capture_output=True, timeout=300)
    site = prefix / os.environ["TPU_PYTHON_INSTALL_DIR"]
    env = dict(os.environ, PYTHONPATH=str(site))
    p = subprocess.run([sys.executable, "-c", "import tpu_rtl; print(tpu_rtl.__file__)"],
                       env=env, capture_output=True, text=True, cwd=tmp_path, check=True)
    assert p.stdout.startswith(str(site / "tpu_rtl")), p.stdout
    p = subprocess.run([sys.executable, str(SOURCE_DIR / "examples/python/matmul.py")], env=env,
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "100 x 70 x 40 on rtl (N = 16): matches NumPy" in p.stdout
