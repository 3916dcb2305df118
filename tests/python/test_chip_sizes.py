# SPDX-License-Identifier: Apache-2.0
"""The other chip sizes of TPU_SIM_N_LIST (one module each, tpu_rtl._chip_n<N>): a matmul on
each rtl chip equals NumPy and the model backend of the same N; a process holds one rtl chip."""

import numpy as np
import pytest

import tpu_rtl

OTHER = [n for n in tpu_rtl.CHIP_SIZES if n != tpu_rtl.DEFAULT_N]


@pytest.mark.skipif(not OTHER, reason="this build has one chip size (TPU_SIM_N_LIST)")
def test_other_chip_size_and_one_chip_per_process():
    n = OTHER[0]
    rng = np.random.default_rng(n)
    a = rng.integers(0, 256, (30, 21), dtype=np.uint8)
    w = rng.integers(-128, 128, (21, 13), dtype=np.int8)
    with tpu_rtl.Device("rtl", n=n) as rtl, tpu_rtl.Device("model", n=n) as model:
        assert rtl.params["n"] == n and model.params["n"] == n
        out, st = rtl.matmul(a, w, shift=6, out_dtype=np.uint8, func="relu")
        ref, _ = model.matmul(a, w, shift=6, out_dtype=np.uint8, func="relu")
        assert st.utilization == pytest.approx(30 * 21 * 13 / (st.cycles * n * n))
    v = a.astype(np.int64) @ w.astype(np.int64)
    v = np.sign(v) * ((np.abs(v) + 32) >> 6)
    np.testing.assert_array_equal(out, np.clip(v, 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(tpu_rtl.DeviceError, match=f"this process's chip has N = {n}"):
        tpu_rtl.Device("rtl", n=tpu_rtl.DEFAULT_N)
