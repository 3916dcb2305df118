# SPDX-License-Identifier: Apache-2.0
"""tpu_rtl.fit of the Keras Fashion-MNIST CNN (tpu_rtl.keras_example: Conv, MaxPool, Dense) on
the rtl training chip: a step of batch 16 gives the golden model's loss and trained weights bit
for bit, checked in lockstep too (golden_check). About a minute on the rtl chip: label `slow`
(python/CMakeLists.txt), not in the default suite; test_fit.py has the fast MLP cases."""

import numpy as np
import pytest

import tpu_rtl


@pytest.mark.skipif(tpu_rtl.DEFAULT_N not in tpu_rtl.TRAIN_CHIP_SIZES,
                    reason="this build has no rtl training chip (TPU_SIM_TRAIN_N_LIST)")
def test_keras_cnn_step_rtl_equals_model():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (16, 1, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, 16)
    cnn = tpu_rtl.keras_example(1)
    kw = dict(epochs=1, steps_per_epoch=1, batch_size=16, optimizer="adam")
    m = tpu_rtl.fit(cnn, x, y, **kw)
    r = tpu_rtl.fit(cnn, x, y, backend="rtl", golden_check=True, **kw)
    assert np.isfinite(r.losses).all()
    assert np.array_equal(np.float32(r.losses), np.float32(m.losses))  # bit for bit
    assert r.model == m.model and r.matches_golden is True
    assert not r.cycles_estimated and r.step_cycles[0] > 0
    print(f"Keras CNN step (batch 16) on rtl: {r.step_cycles[0]} cycles, "
          f"{r.wall_seconds:.1f} s; model estimate {m.step_cycles[0]}")
