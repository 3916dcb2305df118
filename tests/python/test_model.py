# SPDX-License-Identifier: Apache-2.0
"""tpu_rtl.Model against `tpusim run-cnn --json` (the same driver/cnn evaluation: every figure
equal but the wall-clock ones), the outputs against the integer reference, and the errors."""

import numpy as np
import pytest

import tpu_rtl
from conftest import run_json, tool

IMAGES, BATCH, CALIBRATION = 16, 8, 50
WALL_CLOCK = {"wall_seconds", "wall_seconds_per_image", "sim_cycles_per_second"}


@pytest.fixture(scope="module")
def model(fashion, fashion_model):
    train, _, _ = fashion
    return tpu_rtl.Model(fashion_model, calibration=train[:CALIBRATION])


@pytest.mark.parametrize("backend", ["model", "rtl"])
def test_evaluate_equals_run_cnn_json(model, fashion, fashion_model, backend):
    _, test, labels = fashion
    r = model.evaluate(test[:IMAGES], labels[:IMAGES], backend=backend, batch=BATCH)
    cli = run_json([tool("TPU_TPUSIM"), "run-cnn", "--model", str(fashion_model), "--images",
                    str(IMAGES), "--batch", str(BATCH), "--calibration", str(CALIBRATION),
                    "--backend", backend, "--json", "--quiet"])
    assert set(r.report) == set(cli)
    for key in set(cli) - WALL_CLOCK:
        assert r.report[key] == cli[key], key
    assert r.report["model"] == str(fashion_model)
    # The Python objects hold the same figures.
    assert r.cycles_total == cli["cycles_total"] and r.accuracy == cli["accuracy"]
    assert [layer.cycles for layer in r.layers] == [x["cycles"] for x in cli["layers"]]
    assert [layer.name for layer in r.layers] == [x["name"] for x in cli["layers"]]
    assert r.outputs.shape == (IMAGES, 10) and r.outputs.dtype == np.int32
    assert r.matches_reference.all()  # every image's outputs equal the integer reference
    np.testing.assert_array_equal(r.predicted, r.outputs.argmax(axis=1))
    np.testing.assert_array_equal(r.predicted, cli["predictions"])
    assert r.cycles_estimated == (backend == "model")
    if backend == "rtl":
        assert all(0 < layer.utilization <= 1.5 for layer in r.layers)
    else:
        assert all(layer.utilization is None for layer in r.layers)


def test_run_on_an_open_device_and_from_bytes(model, fashion, fashion_model):
    train, test, _ = fashion
    x = test[:5]
    with tpu_rtl.Device("rtl") as dev:
        a = model.run(x, backend=dev, batch=4)
        b = model.run(x, backend=dev, batch=4, profile=False)
        with pytest.raises(tpu_rtl.DeviceError, match="one chip per process"):
            model.run(x, backend="rtl")  # the chip is this Device's
    again = tpu_rtl.Model(fashion_model.read_bytes(), calibration=train[:CALIBRATION])
    c = again.run(x, backend="model", batch=4)
    np.testing.assert_array_equal(a.outputs, b.outputs)
    np.testing.assert_array_equal(a.outputs, c.outputs)  # both backends: bit-exact ISA
    assert a.cycles_total == b.cycles_total and b.layers == [] and a.accuracy is None
    assert a.scores.dtype == np.float32
    np.testing.assert_allclose(a.scores, (a.outputs - model.output_zero_point) *
                               np.float32(model.output_scale), rtol=1e-6)
    # Float input (the model's NCHW contract) equals uint8 pixels / 255.
    f = model.run((x.astype(np.float32) / np.float32(255)).reshape(5, 1, 28, 28),
                  backend="model", batch=4)
    np.testing.assert_array_equal(f.outputs, c.outputs)


def test_model_errors(model, fashion, fashion_model):
    train, test, labels = fashion
    with pytest.raises(ValueError, match=r"x: expected images of \[1, 28, 28\]"):
        model.run(test[:2, :27], backend="model")
    with pytest.raises(ValueError, match="x: expected dtype uint8 .pixels. or float32, got float64"):
        model.run(test[:2].astype(np.float64), backend="model")
    with pytest.raises(ValueError, match="labels: 3 labels for 2 images"):
        model.evaluate(test[:2], labels[:3], backend="model")
    with pytest.raises(ValueError, match="labels: 10 is not a class"):
        model.evaluate(test[:1], np.array([10]), backend="model")
    with pytest.raises(ValueError, match="batch: 0 is outside 1..4095"):
        model.run(test[:1], backend="model", batch=0)
    with pytest.raises(ValueError, match="needs calibration images"):
        tpu_rtl.Model(fashion_model)
    with pytest.raises(tpu_rtl.ModelError):
        tpu_rtl.Model(b"not an onnx model", calibration=train[:2])
    with pytest.raises(tpu_rtl.ModelError, match="missing.onnx"):
        tpu_rtl.Model("missing.onnx", calibration=train[:2])
    with pytest.raises(tpu_rtl.TimeoutError):
        model.run(test[:1], backend="rtl", max_cycles=100)
