# SPDX-License-Identifier: Apache-2.0
"""Every ```python block of docs/python.md runs as written (a process each, in a temporary
directory where models/ is the repository's), so the page cannot drift from the module."""

import os
import re
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

DOC = SOURCE_DIR / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index, tmp_path, fashion):
    (tmp_path / "models").symlink_to(SOURCE_DIR / "models")
    script = tmp_path / f"block{index}.py"
    script.write_text(BLOCKS[index])
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path, env=dict(os.environ))
    assert p.returncode == 0, f"block {index}:\n{BLOCKS[index]}\n{p.stdout}\n{p.stderr}"
