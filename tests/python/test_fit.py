# SPDX-License-Identifier: Apache-2.0
"""tpu_rtl.fit (docs/python.md "Training"): the same training as `tpusim train` on the same
data gives the same losses bit for bit, the same test accuracies and the same trained ONNX
bytes; backend="rtl" (the training chip) gives the model's losses and weights bit for bit with
exact cycles, without holding the GIL; bad arguments are ValueError, a divergence RuntimeError
naming the step."""

import os
import re
import struct

import numpy as np
import pytest

import tpu_rtl
from conftest import run_json, ticks_while, tool


# ---- a small float ONNX MLP written with the protobuf wire format (no onnx package needed)

def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(num, payload):
    """A length-delimited field (bytes, str, or an embedded message)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _int_field(num, v):
    return _varint(num << 3) + _varint(v)


def _value_info(name, dims):
    shape = b"".join(_field(1, _field(2, "N") if d < 0 else _int_field(1, d)) for d in dims)
    tensor_type = _int_field(1, 1) + _field(2, shape)  # elem_type FLOAT
    return _field(1, name) + _field(2, _field(1, tensor_type))


def _tensor(name, array):
    a = np.ascontiguousarray(array, dtype="<f4")
    return (b"".join(_int_field(1, d) for d in a.shape) + _int_field(2, 1) + _field(8, name)
            + _field(9, a.tobytes()))


def _node(op, inputs, outputs, name, trans_b=False):
    n = b"".join(_field(1, i) for i in inputs) + b"".join(_field(2, o) for o in outputs)
    n += _field(3, name) + _field(4, op)
    if trans_b:  # AttributeProto transB: name, i, type INT (2)
        n += _field(5, _field(1, "transB") + _int_field(3, 1) + _int_field(20, 2))
    return n


def mlp_onnx(hidden=12, seed=3, act="Relu"):
    rng = np.random.default_rng(seed)
    w1 = rng.uniform(-0.08, 0.08, (hidden, 784)).astype(np.float32)
    w2 = rng.uniform(-0.3, 0.3, (10, hidden)).astype(np.float32)
    g = b"".join(_field(1, n) for n in (
        _node("Flatten", ["input"], ["flat"], "flatten"),
        _node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["h"], "fc1", trans_b=True),
        _node(act, ["h"], ["hr"], "act"),
        _node("Gemm", ["hr", "fc2.weight", "fc2.bias"], ["logits"], "fc2", trans_b=True)))
    g += _field(2, "mlp")
    for name, a in (("fc1.weight", w1), ("fc1.bias", np.zeros(hidden)), ("fc2.weight", w2),
                    ("fc2.bias", np.zeros(10))):
        g += _field(5, _tensor(name, a))
    g += _field(11, _value_info("input", [-1, 1, 28, 28]))
    g += _field(12, _value_info("logits", [-1, 10]))
    opset = _field(1, "") + _int_field(2, 13)
    return _int_field(1, 7) + _field(8, opset) + _field(7, g)


def data(count, seed):
    """Images whose label shows as a bright band (learnable), uint8, and labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, count)
    x = rng.integers(0, 80, (count, 1, 28, 28)).astype(np.uint8)
    for i, label in enumerate(y):
        x[i, 0, :, 2 * label:2 * label + 4] += 170
    return x, y


def write_idx(path_stem, x, y):
    with open(f"{path_stem}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, len(x), 28, 28) + x.tobytes())
    with open(f"{path_stem}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, len(y)) + y.astype(np.uint8).tobytes())


def test_fit_equals_tpusim_train(tmp_path):
    tpusim = tool("TPU_TPUSIM")
    x, y = data(40, 1)
    tx, ty = data(20, 2)
    (tmp_path / "data").mkdir()
    write_idx(tmp_path / "data" / "train", x, y)
    write_idx(tmp_path / "data" / "t10k", tx, ty)
    model = mlp_onnx()
    (tmp_path / "mlp.onnx").write_bytes(model)
    cli = run_json([tpusim, "train", "--backend", "model", "--n", "16", "--model",
                    str(tmp_path / "mlp.onnx"), "--data", str(tmp_path / "data"), "--epochs", "2",
                    "--steps-per-epoch", "3", "--batch", "8", "--test-images", "16",
                    "--shuffle", "5", "--lr", "0.01", "--json", "--quiet", "--output",
                    str(tmp_path / "trained.onnx")])
    h = tpu_rtl.fit(model, x, y, epochs=2, steps_per_epoch=3, batch_size=8, shuffle=5, lr=0.01,
                    validation_data=(tx, ty), test_images=16, n=16)
    assert len(h.losses) == 6
    assert np.array_equal(np.float32(h.losses), np.float32(cli["losses"]))  # bit for bit
    assert h.history["loss"] == pytest.approx([e["loss"] for e in cli["epochs"]], rel=1e-8)
    assert h.history["test_accuracy"] == [e["test_accuracy"] for e in cli["epochs"]]
    assert h.initial_test_accuracy == cli["initial_test_accuracy"]
    assert h.cycles_total == cli["cycles_total"]
    assert h.model == (tmp_path / "trained.onnx").read_bytes()
    # The trained model runs through tpu_rtl.Model (int8) like any float model.
    m = tpu_rtl.Model(h.model, calibration=x[:10])
    assert m.classes == 10


def test_fit_errors():
    x, y = data(16, 3)
    model = mlp_onnx()
    with pytest.raises(ValueError, match="optimizer"):
        tpu_rtl.fit(model, x, y, optimizer="rmsprop")
    with pytest.raises(ValueError, match="has label 10, outside the model's 10 classes"):
        tpu_rtl.fit(model, x, np.where(y == 0, 10, y), epochs=1, steps_per_epoch=1, batch_size=4)
    with pytest.raises(ValueError, match="batch 32 is larger than the 16 images"):
        tpu_rtl.fit(model, x, y, epochs=1)
    with pytest.raises(ValueError, match=r"'act' \(Sigmoid\)"):  # the compiler names node and op
        tpu_rtl.fit(mlp_onnx(act="Sigmoid"), x, y, epochs=1, steps_per_epoch=1, batch_size=4)
    with pytest.raises(ValueError, match="backend='tpu' is not a backend"):
        tpu_rtl.fit(model, x, y, backend="tpu")
    with pytest.raises(ValueError, match="golden_check applies to backend='rtl'"):
        tpu_rtl.fit(model, x, y, golden_check=True)
    with pytest.raises(ValueError, match="rtl training chips for N in"):
        tpu_rtl.fit(model, x, y, backend="rtl",
                    n=next(v for v in (8, 32, 64) if v not in tpu_rtl.TRAIN_CHIP_SIZES),
                    epochs=1, steps_per_epoch=1, batch_size=4)
    with tpu_rtl.Device("model") as int8:
        with pytest.raises(ValueError, match="not a training Device"):
            tpu_rtl.fit(model, x, y, device=int8)
    with pytest.raises(ValueError, match="device: expected a tpu_rtl.Device"):
        tpu_rtl.fit(model, x, y, device="rtl")
    with pytest.raises(RuntimeError, match=r"step \d+ \(epoch 1\): .*(nan|inf)"):
        tpu_rtl.fit(model, x, y, epochs=1, steps_per_epoch=8, batch_size=4, optimizer="sgd",
                    lr=1e30)


def test_keras_example_is_deterministic():
    a, b, c = tpu_rtl.keras_example(1), tpu_rtl.keras_example(1), tpu_rtl.keras_example(2)
    assert a == b and a != c
    m = tpu_rtl.Model(a, calibration=np.zeros((2, 1, 28, 28), np.uint8))
    assert m.classes == 10 and m.input_shape == (1, 28, 28)


needs_train_rtl = pytest.mark.skipif(
    tpu_rtl.DEFAULT_N not in tpu_rtl.TRAIN_CHIP_SIZES,
    reason="this build has no rtl training chip (TPU_SIM_TRAIN_N_LIST)")

# A small fit (a few seconds on the rtl chip): 2 steps of batch 4, the accuracy on 8 images.
SMALL = dict(epochs=2, steps_per_epoch=1, batch_size=4, shuffle=3, lr=0.01, test_images=8)


@needs_train_rtl
def test_fit_rtl_equals_model():
    x, y = data(8, 4)
    tx, ty = data(8, 5)
    model = mlp_onnx(hidden=8)
    m = tpu_rtl.fit(model, x, y, validation_data=(tx, ty), **SMALL)
    r = tpu_rtl.fit(model, x, y, validation_data=(tx, ty), backend="rtl", golden_check=True,
                    **SMALL)
    assert len(r.losses) == 2 and np.isfinite(r.losses).all()
    assert np.array_equal(np.float32(r.losses), np.float32(m.losses))  # bit for bit
    assert r.model == m.model  # the trained weights, bit for bit
    assert r.history == m.history and r.initial_test_accuracy == m.initial_test_accuracy
    assert r.matches_golden is True and m.matches_golden is None
    assert not r.cycles_estimated and m.cycles_estimated
    assert len(r.step_cycles) == 2 and all(c > 0 for c in r.step_cycles)
    assert r.cycles_total >= sum(r.step_cycles)  # plus the accuracy's forward passes
    # The losses change from step to step (the test can fail): training happened.
    assert r.losses[0] != r.losses[1]


@needs_train_rtl
def test_fit_chip_fault_raises_chip_error():
    """A fault of the chip in a training step (host memory answers the DMA of the step's data
    with an AXI error: Device.inject_bus_error over the driver's buffers) raises ChipError with
    the isa.md code and the faulting instruction, named as the message names it; once the errors
    are cleared the same Device trains as the model backend does, bit for bit."""
    x, y = data(8, 4)
    model = mlp_onnx(hidden=8)
    small = dict(epochs=1, steps_per_epoch=1, batch_size=4, lr=0.01)
    with tpu_rtl.Device("rtl", training=True) as dev:
        dev.inject_bus_error()  # the arena: data, weights, results (not the program)
        with pytest.raises(tpu_rtl.ChipError) as info:
            tpu_rtl.fit(model, x, y, device=dev, **small)
        e = info.value
        assert isinstance(e, tpu_rtl.DeviceError)
        assert e.code == "ERR_AXI_READ" and e.code_value == 9
        assert isinstance(e.pc, int)
        m = re.match(r"ERR_AXI_READ at instruction (\d+) \((\w+) ", str(e))
        assert m, str(e)
        assert int(m.group(1)) == e.pc
        # The instruction that faulted reads host memory (it is no data-independent one).
        assert m.group(2) in ("read_host", "read_weights", "read_vmem"), str(e)
        assert e.stats is not None and e.stats["cycles"] > 0
        dev.clear_bus_errors()
        r = tpu_rtl.fit(model, x, y, device=dev, **small)
    ref = tpu_rtl.fit(model, x, y, **small)
    assert np.array_equal(np.float32(r.losses), np.float32(ref.losses))
    with tpu_rtl.Device("model", training=True) as md:
        with pytest.raises(ValueError, match="inject_bus_error needs backend='rtl'"):
            md.inject_bus_error()
    with tpu_rtl.Device("rtl", training=True) as dev:
        with pytest.raises(ValueError, match="size"):
            dev.inject_bus_error(0xFFFF_FF00, 0x200)


@needs_train_rtl
def test_fit_rtl_equals_tpusim_train_rtl(tmp_path):
    """`tpusim train --backend rtl` (tpusim_train_n<N>, with its golden check) on the same data
    and arguments: the same losses bit for bit, the same exact cycles, the same trained ONNX."""
    tpusim = tool("TPU_TPUSIM")
    if not os.path.exists(os.path.join(os.path.dirname(tpusim),
                                       f"tpusim_train_n{tpu_rtl.DEFAULT_N}")):
        pytest.skip(f"tpusim_train_n{tpu_rtl.DEFAULT_N} is not built next to {tpusim}")
    x, y = data(8, 8)
    tx, ty = data(8, 9)
    (tmp_path / "data").mkdir()
    write_idx(tmp_path / "data" / "train", x, y)
    write_idx(tmp_path / "data" / "t10k", tx, ty)
    model = mlp_onnx(hidden=8)
    (tmp_path / "mlp.onnx").write_bytes(model)
    cli = run_json([tpusim, "train", "--backend", "rtl", "--model", str(tmp_path / "mlp.onnx"),
                    "--data", str(tmp_path / "data"), "--epochs", "2", "--steps-per-epoch", "1",
                    "--batch", "4", "--test-images", "8", "--shuffle", "3", "--lr", "0.01",
                    "--optimizer", "sgd", "--json", "--quiet",
                    "--output", str(tmp_path / "trained.onnx")])
    h = tpu_rtl.fit(model, x, y, validation_data=(tx, ty), backend="rtl", optimizer="sgd",
                    **SMALL)
    assert cli["matches_golden"] is True
    assert np.array_equal(np.float32(h.losses), np.float32(cli["losses"]))  # bit for bit
    assert h.cycles_total == cli["cycles_total"] and not h.cycles_estimated
    assert h.history["test_accuracy"] == [e["test_accuracy"] for e in cli["epochs"]]
    assert h.model == (tmp_path / "trained.onnx").read_bytes()


@needs_train_rtl
def test_fit_rtl_device_and_lease():
    """fit(backend="rtl") leases this process's chip: an open rtl Device is a clear DeviceError
    (pass it as device=), and fit on it gives the same result."""
    x, y = data(8, 6)
    model = mlp_onnx(hidden=8)
    want = tpu_rtl.fit(model, x, y, backend="rtl", **SMALL)
    with tpu_rtl.Device("rtl", training=True) as dev:
        with pytest.raises(tpu_rtl.DeviceError, match="in use by another open Device"):
            tpu_rtl.fit(model, x, y, backend="rtl", **SMALL)
        got = tpu_rtl.fit(model, x, y, device=dev, **SMALL)
        # The Device still works after the fit.
        out, _ = dev.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
        assert (out == 3).all()
    assert got.losses == want.losses and got.model == want.model
    assert got.step_cycles == want.step_cycles  # the chip's timing is the same
    with tpu_rtl.Device("model", training=True) as dev:  # a model Device: the same weights
        m = tpu_rtl.fit(model, x, y, device=dev, **SMALL)
    assert m.losses == want.losses and m.model == want.model and m.cycles_estimated


@needs_train_rtl
def test_fit_rtl_releases_the_gil():
    x, y = data(8, 7)
    model = mlp_onnx(hidden=8)
    h, took, ticks = ticks_while(lambda: tpu_rtl.fit(model, x, y, backend="rtl", epochs=1,
                                                     steps_per_epoch=2, batch_size=4))
    print(f"fit of 2 steps on rtl: {took:.2f} s; other thread ran {ticks} iterations")
    assert len(h.losses) == 2
    assert took > 0.1, "the run is too short to show anything"
    # A thread that sleeps 1 ms per tick ticks about once per ms while fit runs; with the GIL
    # held it would not tick at all (a generous bound: a tenth of that).
    assert ticks > took * 100, (ticks, took)
