# SPDX-License-Identifier: Apache-2.0
"""Device.matmul with float32 operands on the bf16 matrix unit (docs/python.md "Float matmul"):
bit for bit against the NumPy reference written from docs/isa.md (float_ref.py), rtl (the
training chip) == model bit for bit, the run statistics, the tiling cases (several row chunks,
W streamed through VMEM, K cut into pieces), special values (NaN, infinities, subnormals,
ties, overflow, flush to zero, signed zeros) and the argument errors. This process's rtl chip
is the training chip with N = DEFAULT_N; N = 4 runs in a second process."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tpu_rtl
from conftest import rss_growth_kib, run_json, ticks_while, tool
from float_ref import bf16, bits, float_matmul

RNG = np.random.default_rng(30)
N_RTL = tpu_rtl.DEFAULT_N
needs_rtl = pytest.mark.skipif(N_RTL not in tpu_rtl.TRAIN_CHIP_SIZES,
                               reason="this build has no training chip (TPU_SIM_TRAIN_N_LIST)")


@pytest.fixture(scope="module")
def rtl():
    if N_RTL not in tpu_rtl.TRAIN_CHIP_SIZES:
        pytest.skip("this build has no training chip (TPU_SIM_TRAIN_N_LIST)")
    with tpu_rtl.Device("rtl", n=N_RTL, training=True) as dev:
        yield dev


@pytest.fixture(scope="module")
def model():
    with tpu_rtl.Device("model", n=N_RTL, training=True) as dev:
        yield dev


def wide_range(shape):
    """Random signs and magnitudes over 2^-20 .. 2^20: the summation order shows in the bits."""
    mag = np.exp2(RNG.uniform(-20, 20, shape))
    return (mag * RNG.choice([-1.0, 1.0], shape)).astype(np.float32)


def kt_nt(m, k, n, tile):
    return -(-k // tile), -(-n // tile)


def check_stats(st, dev, m, k, n, rtl_backend):
    tile = dev.params["n"]
    kt, nt = kt_nt(m, k, n, tile)
    assert st.useful_macs == m * k * n
    assert st.cycles > 0 and st.cycles_estimated == (not rtl_backend)
    assert st.utilization == pytest.approx(m * k * n / (st.cycles * tile * tile))
    assert st.plan.startswith(f"bf16 tile {tile}: {kt} K tiles x {nt} column blocks")
    if rtl_backend:
        c = st.counters
        assert c["mxu_macs"] == kt * nt * m * tile * tile  # every row of every tile, N x N
        assert c["instr_retired"] == st.instructions
        assert c["dma_wr_bytes"] == nt * m * tile * 4  # the fp32 output blocks
        if "resident" in st.plan:  # A and W read once (fp32 or bf16), plus the program
            size = 2 if "bf16 transfer" in st.plan else 4
            assert c["dma_rd_bytes"] == (m * kt + kt * nt * tile) * tile * size + 16 * st.instructions


SHAPES = [(1, 1, 1), (37, 50, 23), (16, 16, 16), (5, 100, 40), (64, 33, 70)]


@needs_rtl
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_rtl_equals_model_and_reference(rtl, model, m, k, n):
    a, w = wide_range((m, k)), wide_range((k, n))
    out, st = rtl.matmul(a, w)
    want, mst = model.matmul(a, w)
    assert out.dtype == np.float32 and out.shape == (m, n)
    np.testing.assert_array_equal(bits(out), bits(float_matmul(a, w, N_RTL)))
    np.testing.assert_array_equal(bits(out), bits(want))
    check_stats(st, rtl, m, k, n, True)
    check_stats(mst, model, m, k, n, False)
    if rtl.params == model.params:  # the same chip: the same program (test_same_params)
        assert st.instructions == mst.instructions and st.plan == mst.plan
    # The model's estimate is an estimate, but of the same program: same order of magnitude.
    assert st.cycles / 3 < mst.cycles < st.cycles * 3


def cpp_float_matmul(backend, a, w, transfer):
    """What the C++ API (driver/float_matmul.h run_float_matmul) returns for the same operands:
    tests/python/float_matmul_ref.cpp, a separate process (its own chip)."""
    m, k = a.shape
    head = f"{backend} {m} {k} {w.shape[1]} {transfer}"
    words = " ".join(map(str, np.concatenate([bits(a).ravel(), bits(w).ravel()])))
    return run_json([tool("TPU_PY_FLOAT_MATMUL_REF")], head + "\n" + words + "\n")


@pytest.mark.parametrize("backend", ["rtl", "model"])
@pytest.mark.parametrize("transfer", ["float32", "bfloat16"])
@pytest.mark.parametrize("m,k,n", [(37, 50, 23), (64, 33, 70)])
def test_equals_cpp_api(request, backend, transfer, m, k, n):
    """Python and C++ are the same code: the same bits, cycles, counters and program."""
    a, w = wide_range((m, k)), wide_range((k, n))
    a[0, 0], w[1, 2] = np.nan, np.inf
    dev = request.getfixturevalue(backend)
    out, st = dev.matmul(a, w, transfer=transfer)
    j = cpp_float_matmul(backend, a, w, transfer)
    np.testing.assert_array_equal(bits(out).ravel(), np.array(j["out"], np.uint32))
    assert st.cycles == j["cycles"] and st.cycles_estimated == j["cycles_estimated"]
    assert st.counters == j["counters"]
    assert st.instructions == j["instructions"] and st.plan == j["plan"]
    assert st.utilization == j["utilization"]


@needs_rtl
def test_same_params(rtl, model):
    """The rtl training chip (PARAM registers) and the model's ChipParams::training(n) are the
    same chip (docs/isa.md "Status"), so both backends run the same float matmul program."""
    assert rtl.params == model.params
    assert rtl.params["vmem_rows"] > 0
    # The VMEM port carries one fp32 VMEM row per cycle (docs/architecture.md "The VMEM port").
    assert rtl.params["vmem_port_bytes"] == 4 * rtl.params["n"]
    assert rtl.params["ici_links"] == 0 and rtl.params["training_ops"] == 0x7F


def test_reference_sees_the_order():
    """The test can fail: NumPy's own float32 matmul of the bf16 operands differs in the bits."""
    a, w = wide_range((20, 70)), wide_range((70, 20))
    naive = bf16(a) @ bf16(w)
    assert (bits(naive) != bits(float_matmul(a, w, 16))).any()
    assert (bits(float_matmul(a, w, 4)) != bits(float_matmul(a, w, 16))).any()


@pytest.mark.parametrize("tile", [4, 8, 16, 32])
def test_model_other_sizes(tile):
    m, k, n = 19, 3 * tile + 5, 2 * tile + 1
    a, w = wide_range((m, k)), wide_range((k, n))
    with tpu_rtl.Device("model", n=tile, training=True) as dev:
        out, st = dev.matmul(a, w)
        check_stats(st, dev, m, k, n, False)
    np.testing.assert_array_equal(bits(out), bits(float_matmul(a, w, tile)))


def test_tiling_cases_on_model():
    """Row chunks, W streamed through VMEM and K cut into pieces, sized from the chip's
    parameters (VmemRows, AccRows) so that each case is what it claims on any build."""
    with tpu_rtl.Device("model", n=N_RTL, training=True) as dev:
        p = dev.params
        t, v = p["n"], p["vmem_rows"]
        cases = {
            "chunks": (p["acc_rows"] // 2 + 7, t, t),  # more rows than half the ACC
            "streamed": (3, t * (v // (16 * t) + 1), 8 * t),  # W > half of VMEM
            "pieces": (2, t * (v // (2 * t) + 1), 3),  # one W panel > half of VMEM
        }
        for name, (m, k, n) in cases.items():
            a, w = wide_range((m, k)), wide_range((k, n))
            out, st = dev.matmul(a, w)
            kt, nt = kt_nt(m, k, n, t)
            if name == "chunks":
                assert "1 row chunks" not in st.plan and "resident" in st.plan, st.plan
            elif name == "streamed":
                assert "streamed" in st.plan and f"({kt} K tiles per piece)" in st.plan, st.plan
            else:
                assert "streamed" in st.plan and f"({kt} K tiles" not in st.plan, st.plan
            np.testing.assert_array_equal(bits(out), bits(float_matmul(a, w, t)), err_msg=name)


@needs_rtl
def test_tiling_cases_on_rtl(rtl, model):
    """A W streamed through VMEM and several row chunks on the RTL, against the model."""
    t, v = rtl.params["n"], rtl.params["vmem_rows"]
    for m, k, n in [(2, t * (v // (16 * t) + 1), 8 * t - 3), (rtl.params["acc_rows"] // 2 + 3, 5, 3)]:
        a, w = wide_range((m, k)), wide_range((k, n))
        out, st = rtl.matmul(a, w)
        want, mst = model.matmul(a, w)
        assert st.plan == mst.plan or rtl.params != model.params
        assert ("streamed" in st.plan) == (k > 5) and ("1 row chunks" in st.plan) == (k > 5)
        np.testing.assert_array_equal(bits(out), bits(want))
        check_stats(st, rtl, m, k, n, True)


def f32(bits_value):
    return np.array([bits_value], np.uint32).view(np.float32)[0]


# (a row, w column, expected output bits): K = the row's length, one output element.
SPECIAL = [
    ([1 + 2.0 ** -8], [1.0], 0x3F800000),            # bf16 tie -> even (down)
    ([1 + 3 * 2.0 ** -8], [1.0], 0x3F820000),        # bf16 tie -> even (up)
    ([f32(0x3F80FFFF)], [1.0], 0x3F810000),          # above the tie: up
    ([1e-40], [1e30], 0x00000000),                   # a subnormal reads as +0 (DAZ)
    ([-1e-40], [1e30], 0x00000000),                  # -0 * x = -0, then +0 + -0 = +0
    ([3e38], [2.0], 0x7F800000),                     # product >= 2^128: +inf
    ([-3e38], [2.0], 0xFF800000),
    ([2e38, 2e38], [1.0, 1.0], 0x7F800000),          # the fp32 sum overflows
    ([2.0 ** -64], [2.0 ** -63], 0x00000000),        # product 2^-127 flushes to zero
    ([2.0 ** -63], [2.0 ** -63], 0x00800000),        # product 2^-126 is kept
    ([np.inf, -np.inf], [1.0, 1.0], 0x7FC00000),     # inf - inf: canonical NaN
    ([0.0], [np.inf], 0x7FC00000),                   # 0 * inf
    ([f32(0xFFC12345)], [1.0], 0x7FC00000),          # a NaN of another sign and payload
    ([f32(0x7F7FFFFF)], [1.0], 0x7F800000),          # rounds to bf16 infinity
    ([1.0, -1.0], [5.0, 5.0], 0x00000000),           # x + (-x) = +0
    # N = 16: 2^24 in tile 0; tile 1's sixteen ones sum to 16 first, then 2^24 + 16 is
    # exact. Adding the ones one by one to 2^24 would give 2^24 (each + 1 a tie to even).
    ([1.0] * 32, [2.0 ** 24] + [0.0] * 15 + [1.0] * 16, 0x4B800008),
]


@pytest.mark.parametrize("row,col,want", SPECIAL)
def test_special_values_reference(row, col, want):
    """The reference itself against values worked out by hand from isa.md (N = 16)."""
    a = np.array([row], np.float32)
    w = np.array(col, np.float32).reshape(-1, 1)
    got = bits(float_matmul(a, w, 16))[0, 0]
    assert got == want, f"{got:#010x} != {want:#010x}"


def test_flush_gives_negative_zero():
    """A column sum that flushes to zero keeps its sign (-0) when it is the tile's last add."""
    a = np.zeros((1, 16), np.float32)
    w = np.zeros((16, 1), np.float32)
    a[0, 14], a[0, 15] = 2.0 ** -62, -1.25 * 2.0 ** -62
    w[14, 0] = w[15, 0] = 2.0 ** -63
    assert bits(float_matmul(a, w, 16))[0, 0] == 0x80000000
    with tpu_rtl.Device("model", n=16, training=True) as dev:
        out, _ = dev.matmul(a, w)
    assert bits(out)[0, 0] == 0x80000000


@pytest.mark.parametrize("backend", ["model", pytest.param("rtl", marks=needs_rtl)])
def test_special_values_on_chip(backend, request):
    dev = request.getfixturevalue(backend)
    tile = dev.params["n"]
    width = max(len(r) for r, _, _ in SPECIAL)
    a = np.zeros((len(SPECIAL), width), np.float32)
    w = np.zeros((width, len(SPECIAL)), np.float32)
    for i, (row, col, _) in enumerate(SPECIAL):
        a[i, :len(row)] = row
        w[:len(col), i] = col
    # Random rows and columns mixed in: every special value meets ordinary ones as well.
    a = np.vstack([a, wide_range((9, width))])
    w = np.hstack([w, wide_range((width, 5))])
    a[-1, 3], w[2, -1] = np.nan, -np.inf
    out, _ = dev.matmul(a, w)
    ref = float_matmul(a, w, tile)
    np.testing.assert_array_equal(bits(out), bits(ref))
    assert (bits(out)[np.isnan(out)] == 0x7FC00000).all()
    assert np.isnan(out).any() and np.isinf(out).any()


def test_random_specials_model():
    """Matrices drawn from special values (zeros of both signs, subnormals, ties, huge, tiny,
    infinities, NaN) against the reference."""
    pool = np.array([0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 2.0 ** -63, -2.0 ** -64, 3e38,
                     -2e38, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 0.1, -7.5, np.inf, np.nan],
                    np.float32)
    p = np.r_[np.full(14, 0.07), 0.01, 0.01]
    p /= p.sum()
    a, w = RNG.choice(pool, (23, 40), p=p), RNG.choice(pool, (40, 19), p=p)
    with tpu_rtl.Device("model", n=8, training=True) as dev:
        out, _ = dev.matmul(a, w)
    np.testing.assert_array_equal(bits(out), bits(float_matmul(a, w, 8)))


def test_errors(model):
    a, w = wide_range((4, 5)), wide_range((5, 3))
    with pytest.raises(ValueError, match="a: expected dtype int8 or uint8, got float32 .*float32 "
                                         "for both"):
        model.matmul(a, w.astype(np.int8))
    with pytest.raises(ValueError, match="w: expected dtype int8 or uint8, got float32"):
        model.matmul(a.astype(np.int8), w)
    with pytest.raises(ValueError, match="a: expected float32 .*astype.*got float64"):
        model.matmul(a.astype(np.float64), w)
    with pytest.raises(ValueError, match="w: expected float32 .*got float16"):
        model.matmul(a, np.ones((5, 3), np.float16))
    with pytest.raises(ValueError, match="expected 5 rows"):
        model.matmul(a, wide_range((4, 3)))
    with pytest.raises(ValueError, match="2-D"):
        model.matmul(a[0], w)
    with pytest.raises(ValueError, match="empty"):
        model.matmul(np.zeros((0, 5), np.float32), w)
    for kwargs in ({"shift": 3}, {"func": "relu"}, {"bias": [1, 2, 3]}, {"mult": 2},
                   {"zero_point": 1}, {"clamp": (0, 1)}, {"lut": np.zeros(256, np.int8)}):
        with pytest.raises(ValueError, match="applies to int8 matmuls only"):
            model.matmul(a, w, **kwargs)
    with pytest.raises(ValueError, match="returns float32, not int8"):
        model.matmul(a, w, out_dtype=np.int8)
    out, _ = model.matmul(a, w, out_dtype=np.float32, shift=0, func="identity")
    assert out.dtype == np.float32
    a[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"a\[2, 1\] is NaN"):
        model.matmul(a, w, nan_policy="raise")
    assert np.isnan(model.matmul(a, w)[0][2]).all()  # propagate: the whole row is NaN
    with pytest.raises(ValueError, match="nan_policy"):
        model.matmul(a, w, nan_policy="omit")
    with pytest.raises(ValueError, match="transfer: 'bf16' is not"):
        model.matmul(a, w, transfer="bf16")
    with pytest.raises(ValueError, match="transfer applies to float32"):
        model.matmul(np.ones((4, 5), np.int8), np.ones((5, 3), np.int8), transfer="bfloat16")
    with tpu_rtl.Device("model", n=4, training=True) as small:
        with pytest.raises(ValueError, match="transfer='bfloat16' needs N >= 8"):
            small.matmul(a, w, transfer="bfloat16")
    with pytest.raises(ValueError, match="nan_policy applies to float32"):
        model.matmul(np.ones((4, 5), np.int8), np.ones((5, 3), np.int8), nan_policy="raise")
    with pytest.raises(ValueError, match="training: expected True or False"):
        tpu_rtl.Device("model", training="yes")
    missing = [n for n in (8, 32) if n not in tpu_rtl.TRAIN_CHIP_SIZES][0]
    with pytest.raises(ValueError, match="rtl training chips for N in"):
        tpu_rtl.Device("rtl", n=missing, training=True)


def test_float_on_the_int8_chip_model():
    with tpu_rtl.Device("model") as dev:
        assert dev.params["vmem_rows"] == 0
        with pytest.raises(tpu_rtl.DeviceError, match=r"training=True"):
            dev.matmul(wide_range((2, 2)), wide_range((2, 2)))


@needs_rtl
def test_rtl_timeout_and_one_chip_per_process(rtl):
    with pytest.raises(tpu_rtl.TimeoutError):
        rtl.matmul(wide_range((40, 40)), wide_range((40, 40)), max_cycles=50)
    out, _ = rtl.matmul(wide_range((3, 3)), wide_range((3, 3)))  # the chip still works
    with pytest.raises(tpu_rtl.DeviceError, match="the training chip with N = .*the int8 chip"):
        tpu_rtl.Device("rtl", n=N_RTL)


@needs_rtl
def test_int8_matmul_on_the_training_chip(rtl):
    """The training chip runs the int8 path too: same bytes as the model's int8 chip."""
    a = RNG.integers(-128, 128, (30, 40), dtype=np.int8)
    w = RNG.integers(-128, 128, (40, 20), dtype=np.int8)
    out, st = rtl.matmul(a, w, shift=8, func="relu")
    with tpu_rtl.Device("model", n=N_RTL) as int8_model:
        want, _ = int8_model.matmul(a, w, shift=8, func="relu")
    np.testing.assert_array_equal(out, want)
    assert out.dtype == np.int8 and not st.cycles_estimated


def test_other_training_chip_in_a_second_process():
    """N = 4's training chip (a process holds one rtl chip): rtl == model == reference."""
    other = [n for n in tpu_rtl.TRAIN_CHIP_SIZES if n != N_RTL]
    if not other:
        pytest.skip("this build has one training chip size")
    script = textwrap.dedent(f"""
        import numpy as np, tpu_rtl, sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from float_ref import bf16, bits, float_matmul
        rng = np.random.default_rng(4)
        a = (rng.standard_normal((21, 13)) * 100).astype(np.float32)
        w = (rng.standard_normal((13, 10)) / 7).astype(np.float32)
        with tpu_rtl.Device("rtl", n={other[0]}, training=True) as rtl:
            out, st = rtl.matmul(a, w)
        with tpu_rtl.Device("model", n={other[0]}, training=True) as model:
            want, _ = model.matmul(a, w)
        assert (bits(out) == bits(want)).all() and (bits(out) == bits(float_matmul(a, w, {other[0]}))).all()
        assert st.counters["mxu_macs"] == 4 * 3 * 21 * {other[0]}**2
        print("ok", st.cycles)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok")


@needs_rtl
def test_gil_released_during_float_simulation(rtl):
    a, w = wide_range((300, 160)), wide_range((160, 96))
    _, took, ticks = ticks_while(lambda: rtl.matmul(a, w))
    print(f"float matmul 300x160x96 on rtl: {took:.2f} s; other thread ran {ticks} iterations")
    assert took > 0.1, "the run is too short to show anything"
    assert ticks >= 10


def test_memory_over_many_float_calls(model):
    a, w = wide_range((5, 20)), wide_range((20, 7))

    def calls(count):
        for _ in range(count):
            model.matmul(a, w)
            with pytest.raises(ValueError):
                model.matmul(a, w, shift=1)

    grew = rss_growth_kib(calls, 200, 3000)
    print(f"RSS grew {grew} KiB over 3000 float matmuls and 3000 errors")
    assert grew < 2048


@pytest.mark.parametrize("backend", ["model", pytest.param("rtl", marks=needs_rtl)])
def test_bf16_transfer_gives_the_same_bits(backend, request):
    """transfer="bfloat16": the host rounds (the chip's rounding: ties, subnormals, NaN,
    overflow to infinity) and sends half the input bytes; the bits are those of the fp32
    transfer, in fewer cycles on rtl."""
    dev = request.getfixturevalue(backend)
    specials = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1e-40, -1e-40, np.nan, np.inf,
                         f32(0x7F7FFFFF), f32(0xFFC12345), -0.0, 2.0 ** -126], np.float32)
    for m, k, n in [(37, 50, 23), (70, 130, 33)]:
        a, w = wide_range((m, k)), wide_range((k, n))
        a.flat[RNG.choice(a.size, len(specials), replace=False)] = specials
        w.flat[RNG.choice(w.size, len(specials), replace=False)] = specials
        out, st = dev.matmul(a, w)
        out2, st2 = dev.matmul(a, w, transfer="bfloat16")
        np.testing.assert_array_equal(bits(out2), bits(out))
        np.testing.assert_array_equal(bits(out2), bits(float_matmul(a, w, dev.params["n"])))
        assert "bf16 transfer" in st2.plan and "bf16 transfer" not in st.plan
        check_stats(st2, dev, m, k, n, backend == "rtl")
        if backend == "rtl":
            assert st2.cycles < st.cycles


@pytest.mark.parametrize("tile", [4, 8])
def test_random_shapes_model(tile):
    """Random shapes (edges of tiles, one row or column, W resident or streamed) at small N."""
    shapes = [(1, 1, 1), (1, tile, tile), (tile + 1, tile - 1, 1)]
    shapes += [tuple(int(v) for v in RNG.integers(1, hi, 3)) for hi in (40, 120, 300) * 3]
    shapes.append((3, 260, 70 * tile))  # W larger than half of VMEM at N = 4 and 8: streamed
    with tpu_rtl.Device("model", n=tile, training=True) as dev:
        for m, k, n in shapes:
            a, w = wide_range((m, k)), wide_range((k, n))
            out, st = dev.matmul(a, w, transfer="bfloat16" if tile >= 8 else "float32")
            np.testing.assert_array_equal(bits(out), bits(float_matmul(a, w, tile)),
                                          err_msg=f"{m} x {k} x {n}: {st.plan}")
