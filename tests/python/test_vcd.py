# SPDX-License-Identifier: Apache-2.0
"""Device(vcd=...) writes the chip's waveform (complete after close(), or at exit), limited to
vcd_window; the chip is gone afterwards, and a new rtl Device says to use another process."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tpu_rtl


def vcd_available():
    return tpu_rtl._ext(tpu_rtl.DEFAULT_N).compiled_with_vcd()


@pytest.mark.skipif(not vcd_available(), reason="built with -DTPU_SIM_TRACE=OFF")
def test_vcd_file_and_window(tmp_path):
    full, window = tmp_path / "full.vcd", tmp_path / "window.vcd"
    a = np.ones((20, 20), np.int8)
    # Only one chip per process, so the windowed one runs in a second process (spawned).
    code = ("import numpy as np, tpu_rtl, sys\n"
            "d = tpu_rtl.Device('rtl', vcd=sys.argv[1], vcd_window=(100, 200))\n"
            "d.matmul(np.ones((20, 20), np.int8), np.ones((20, 20), np.int8))\n")  # no close
    subprocess.run([sys.executable, "-c", code, str(window)], check=True, timeout=300,
                   env=dict(os.environ))
    with tpu_rtl.Device("rtl", vcd=full) as dev:
        out, st = dev.matmul(a, a)
        assert (out == 20).all()
    def stamps(path):  # VCD times in ps: the chip's clock is 1 GHz, 1000 per cycle
        return [int(line[1:]) for line in path.read_text().splitlines() if line.startswith("#")]

    assert "$enddefinitions" in full.read_text()
    assert max(stamps(full)) >= st.cycles * 1000
    windowed = stamps(window)  # written at exit without close()
    assert windowed and 99_000 <= min(windowed) and max(windowed) <= 200_000
    assert os.path.getsize(window) < os.path.getsize(full)
    with pytest.raises(tpu_rtl.DeviceError, match="closed after writing its VCD file"):
        tpu_rtl.Device("rtl")
    assert tpu_rtl.Device("model").matmul(a, a)[0][0, 0] == 20
