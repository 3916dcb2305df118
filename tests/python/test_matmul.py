# SPDX-License-Identifier: Apache-2.0
"""tpu_rtl.Device.matmul against the C++ API (tests/python/matmul_ref.cpp: tiled_ops.h
run_matmul, same bytes, cycles and counters), the driver's C++ reference and NumPy; the
argument checks; chip errors; the one-chip-per-process rule; the GIL; memory over 10^4 calls."""


import numpy as np
import pytest

import tpu_rtl
from conftest import rss_growth_kib, run_json, ticks_while, tool

RNG = np.random.default_rng(2026)


def rand(shape, dtype):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape, dtype=dtype)


def cpp_matmul(backend, a, w, bias=(), mult=(), shift=(), zero_point=0, func="identity",
               clamp=(-128, 127), lut=None, out_dtype=np.int8):
    """What the C++ API returns for the same operands (a separate process)."""
    m, k = a.shape
    n = w.shape[1]
    head = [backend, m, k, n, int(a.dtype == np.uint8), int(w.dtype == np.uint8),
            int(np.dtype(out_dtype) == np.uint8), func, zero_point, clamp[0], clamp[1]]
    parts = [" ".join(map(str, head))]
    for values in (bias, mult, shift):
        values = list(np.atleast_1d(values)) if values is not None else []
        parts.append(" ".join(map(str, [len(values)] + [int(v) for v in values])))
    parts.append(" ".join(map(str, a.view(np.uint8).ravel())))
    parts.append(" ".join(map(str, w.view(np.uint8).ravel())))
    if lut is not None:
        parts.append(" ".join(map(str, lut.view(np.uint8).ravel())))
    j = run_json([tool("TPU_PY_MATMUL_REF")], "\n".join(parts) + "\n")
    to = lambda key: np.array(j[key], np.uint8).view(out_dtype).reshape(m, n)  # noqa: E731
    return to("out"), to("reference"), j


def numpy_matmul(a, w, bias, shift, func, out_dtype):
    """docs/isa.md activate with mult = 1 and zero point 0, in NumPy."""
    v = a.astype(np.int64) @ w.astype(np.int64) + np.asarray(bias, np.int64)
    if shift:
        v = np.sign(v) * ((np.abs(v) + (1 << (shift - 1))) >> shift)  # half away from zero
    info = np.iinfo(out_dtype)
    y = np.clip(v, info.min, info.max)
    if func == "relu":
        y = np.maximum(y, 0)
    return y.astype(out_dtype)


CASES = [  # m, k, n, a dtype, w dtype, out dtype, func
    (1, 1, 1, np.int8, np.int8, np.int8, "identity"),
    (37, 50, 23, np.int8, np.int8, np.int8, "relu"),
    (70, 33, 40, np.uint8, np.int8, np.uint8, "relu"),
    (16, 64, 48, np.int8, np.uint8, np.int8, "identity"),
    (130, 100, 17, np.uint8, np.uint8, np.uint8, "identity"),
]


@pytest.mark.parametrize("backend", ["rtl", "model"])
@pytest.mark.parametrize("m,k,n,adt,wdt,odt,func", CASES)
def test_matmul_equals_cpp_api(backend, m, k, n, adt, wdt, odt, func):
    a, w = rand((m, k), adt), rand((k, n), wdt)
    bias = RNG.integers(-5000, 5000, n)
    shift = 9 if k > 1 else 0
    with tpu_rtl.Device(backend) as dev:
        out, st = dev.matmul(a, w, bias=bias, shift=shift, func=func, out_dtype=odt)
    want, ref, j = cpp_matmul(backend, a, w, bias=bias, shift=[shift], func=func, out_dtype=odt)
    assert out.dtype == odt and out.shape == (m, n)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out, numpy_matmul(a, w, bias, shift, func, odt))
    assert st.cycles == j["cycles"]
    assert st.counters == j["counters"]
    assert st.instructions == j["instructions"]
    assert st.plan == j["plan"]
    assert st.useful_macs == m * k * n
    assert st.cycles_estimated == (backend == "model")
    assert st.utilization == pytest.approx(m * k * n / (st.cycles * 16 * 16))


@pytest.mark.parametrize("backend", ["rtl", "model"])
def test_matmul_clamp_lut_mult_per_column(backend):
    a, w = rand((20, 40), np.int8), rand((40, 24), np.int8)
    mult = RNG.integers(1, 300, 24)
    shift = RNG.integers(10, 20, 24)
    lut = rand(256, np.uint8)
    with tpu_rtl.Device(backend) as dev:
        for func, kw in (("clamp", {"clamp": (-20, 60)}), ("lut", {"lut": lut})):
            out, st = dev.matmul(a, w, mult=mult, shift=shift, zero_point=3, func=func, **kw)
            want, ref, j = cpp_matmul(backend, a, w, mult=mult, shift=shift, zero_point=3,
                                      func=func, clamp=kw.get("clamp", (-128, 127)),
                                      lut=kw.get("lut"))
            np.testing.assert_array_equal(out, want)
            np.testing.assert_array_equal(out, ref)
            assert st.cycles == j["cycles"] and st.counters == j["counters"]
            if func == "clamp":
                assert out.min() >= -20 and out.max() <= 60


@pytest.mark.parametrize("bad,match", [
    (dict(a=np.zeros((4, 4), np.float32)), "a: expected dtype int8 or uint8, got float32"),
    (dict(a=np.zeros((4, 4), np.int16)), "dtype int8 or uint8, got int16"),
    (dict(a=[[1, 2], [3, 4]]), "a: expected a NumPy int8 or uint8 array, got list"),
    (dict(a=np.zeros((2, 4, 4), np.int8)), "a: expected a 2-D array, got shape"),
    (dict(w=np.zeros((5, 3), np.int8)), "a is 4 x 4 but w is 5 x 3"),
    (dict(a=np.zeros((0, 4), np.int8)), "empty"),
    (dict(bias=[1, 2]), "bias: 2 values for 3 columns"),
    (dict(bias=2**31), "bias: 2147483648 is outside"),
    (dict(shift=64), "shift: 64 is outside 0..63"),
    (dict(shift=[1.5]), "shift: expected an integer"),
    (dict(func="tanh"), "func 'tanh' is not an activation"),
    (dict(func="lut"), "func='lut' needs lut="),
    (dict(func="lut", lut=np.zeros(255, np.uint8)), "lut: expected 256 values"),
    (dict(out_dtype=np.int16), "out_dtype: expected int8 or uint8"),
    (dict(zero_point=1.0), "zero_point: expected an integer"),
    # Checked by the C++ MatmulSpec::validate (std::invalid_argument -> ValueError).
    (dict(func="clamp", clamp=(-200, 10)), "matmul spec: clamp_lo"),
    (dict(zero_point=1000), "matmul spec: zero_point"),
])
def test_matmul_bad_arguments_raise_value_error(bad, match):
    args = dict(a=np.zeros((4, 4), np.int8), w=np.zeros((4, 3), np.int8))
    args.update(bad)
    with tpu_rtl.Device("model") as dev:
        with pytest.raises(ValueError, match=match):
            dev.matmul(**args)


def test_bad_device_arguments():
    with pytest.raises(ValueError, match="backend 'gpu' is not a backend"):
        tpu_rtl.Device("gpu")
    with pytest.raises(ValueError, match="vcd and vcd_window need backend='rtl'"):
        tpu_rtl.Device("model", vcd="x.vcd")
    with pytest.raises(ValueError, match="rtl chips for N in"):
        tpu_rtl.Device("rtl", n=8 if 8 not in tpu_rtl.CHIP_SIZES else 512)
    with pytest.raises(ValueError, match="N must be a power of two|power of two"):
        tpu_rtl.Device("model", n=12)
    assert tpu_rtl.Device("model", n=8).params["n"] == 8


def test_chip_error_carries_code_and_pc():
    program = "nop\nread_host ub=8191 rows=2 host=0x10000\nhalt\n"
    with tpu_rtl.Device("rtl") as dev:
        r = dev.run(program, np.zeros(64, np.uint8), base=0x10000)
        assert (r.status, r.error, r.pc) == ("error", "ERR_UB_RANGE", 1)
        assert "UB rows 8191..8192 out of range" in r.message
        # Runs that raise: a matmul that cannot finish in 10 cycles.
        with pytest.raises(tpu_rtl.TimeoutError) as e:
            dev.matmul(rand((32, 32), np.int8), rand((32, 32), np.int8), max_cycles=10)
        assert e.value.max_cycles == 10 and e.value.stats["cycles"] >= 10
        assert isinstance(e.value, tpu_rtl.DeviceError)
        out, _ = dev.matmul(rand((3, 3), np.int8), rand((3, 3), np.int8))  # usable again
        assert out.shape == (3, 3)


@pytest.mark.parametrize("backend", ["rtl", "model"])
def test_chip_error_exception(backend):
    memory = np.zeros(32, np.uint8)
    with tpu_rtl.Device(backend) as dev:
        # A DMA past the host buffer: ERR_HOST_RANGE, in the result or raised with check=True.
        program = "nop\nnop\nread_host ub=0 rows=4 host=0x20000\nhalt\n"
        r = dev.run(program, memory, base=0x20000)
        assert (r.status, r.error, r.pc) == ("error", "ERR_HOST_RANGE", 2)
        with pytest.raises(tpu_rtl.ChipError, match="ERR_HOST_RANGE at instruction 2") as e:
            dev.run(program, memory, base=0x20000, check=True)
        assert (e.value.code, e.value.code_value, e.value.pc) == ("ERR_HOST_RANGE", 8, 2)
        assert e.value.stats["counters"]["instr_retired"] == r.counters["instr_retired"]
        assert isinstance(e.value, tpu_rtl.DeviceError) and isinstance(e.value, RuntimeError)
        if backend == "rtl":
            with pytest.raises(tpu_rtl.TimeoutError):
                dev.run("nop\n" * 3000 + "halt\n", max_cycles=50, check=True)
        assert dev.run("halt\n", check=True).done  # usable again


def test_program_errors_raise_value_error():
    with tpu_rtl.Device("model") as dev:
        with pytest.raises(ValueError, match="<text>:1:1: "):
            dev.run("frobnicate ub=0\nhalt\n")
        with pytest.raises(ValueError, match="not a multiple of 16"):
            dev.run(b"\0" * 17)
        with pytest.raises(ValueError, match="program: expected the encoded instructions as "
                                             "uint8"):
            dev.run(np.zeros(4, np.uint32))
        code = np.frombuffer(tpu_rtl.assemble("nop\nhalt\n"), np.uint8)
        assert dev.run(code).stats["instructions"] == 2
        with pytest.raises(ValueError, match="program: expected assembly text"):
            dev.run(12)
        with pytest.raises(ValueError, match="host_memory: expected dtype int8 or uint8"):
            dev.run("halt\n", np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="not a multiple of 16"):
        tpu_rtl.disassemble(b"\1\2\3")


def test_one_rtl_chip_per_process():
    with tpu_rtl.Device("rtl") as first:
        with pytest.raises(tpu_rtl.DeviceError, match="SystemC builds one chip per process: "
                                                      "close the other Device first"):
            tpu_rtl.Device("rtl")
        assert first.run("halt\n").done
    # Closed: the next Device reuses the chip, with its buffers released.
    with tpu_rtl.Device("rtl") as again:
        assert again.run("halt\n").done
    dropped = tpu_rtl.Device("rtl")
    del dropped  # not closed, but garbage: the chip is free again
    tpu_rtl.Device("rtl").close()
    with pytest.raises(tpu_rtl.DeviceError, match="VCD file and the memory timing are fixed"):
        tpu_rtl.Device("rtl", vcd="later.vcd")
    with pytest.raises(tpu_rtl.DeviceError, match="closed"):
        again.run("halt\n")


def test_gil_released_during_simulation():
    a, w = rand((1200, 256), np.int8), rand((256, 256), np.int8)
    with tpu_rtl.Device("rtl") as dev:
        _, took, ticks = ticks_while(lambda: dev.matmul(a, w, shift=10))
    print(f"matmul 1200x256x256 on rtl: {took:.2f} s; other thread ran {ticks} iterations")
    assert took > 0.1, "the run is too short to show anything"
    # Holding the GIL for the whole call would leave this thread 0 or 1 iterations.
    assert ticks >= 10


def test_no_leak_over_10k_calls():
    a, w = rand((8, 20), np.int8), rand((20, 12), np.int8)
    bad = np.zeros((3, 3), np.float64)
    with tpu_rtl.Device("model") as model, tpu_rtl.Device("rtl") as rtl:
        def calls(count):
            for i in range(count):
                model.matmul(a, w, shift=4)
                if i % 10 == 0:
                    rtl.matmul(a, w, shift=4)
                    rtl.run("nop\nhalt\n", np.zeros(64, np.uint8), base=0x1000)
                    try:
                        model.matmul(bad, w)
                    except ValueError:
                        pass
                    r = rtl.run("read_host ub=0 rows=9 host=0x1000\nhalt\n",
                                np.zeros(16, np.uint8), base=0x1000)
                    assert r.error == "ERR_HOST_RANGE"
        grew = rss_growth_kib(calls, 1000, 10_000)
    print(f"RSS over 10^4 matmul calls (+10^3 of each rtl call and error): {grew:+d} KiB")
    assert grew < 2048  # a leak of 200 bytes per call would show


def test_float_matmul_needs_the_training_chip():
    """This process's chip is the int8 chip: no VMEM, no bf16 unit; a float32 matmul says so."""
    with tpu_rtl.Device("rtl") as dev:
        assert dev.params["vmem_rows"] == 0 and dev.params["vmem_port_bytes"] == 0
        with pytest.raises(tpu_rtl.DeviceError, match=r"the int8 chip .*training=True"):
            dev.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
        out, _ = dev.matmul(np.ones((2, 3), np.int8), np.ones((3, 2), np.int8))  # still usable
        assert (out == 3).all()
