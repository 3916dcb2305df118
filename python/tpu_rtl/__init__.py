# SPDX-License-Identifier: Apache-2.0
"""tpu_rtl: the tpu-rtl chip from Python, NumPy arrays in and out (docs/python.md).

    import numpy as np, tpu_rtl
    with tpu_rtl.Device("rtl") as dev:
        out, stats = dev.matmul(a, w, shift=7, func="relu")

``Device`` runs tiled matmuls (int8/uint8, and float32 on the bf16 matrix unit of the training
chip, ``Device(..., training=True)``) and raw programs on the cycle-accurate chip ("rtl", the Verilated
RTL in SystemC) or the golden ISA model ("model"); ``Model`` imports and quantizes an ONNX model
once and runs it image by image with the figures of ``tpusim run-cnn --json``. Errors are
``ValueError`` (bad arguments), ``ModelError``, ``DeviceError``, ``ChipError`` (``.code``,
``.pc``) and ``TimeoutError``. Every simulation runs without the GIL.

SystemC builds one chip per process: one "rtl" Device can be open at a time (close it, or use
``with``); the next one reuses the chip. The "model" backend has no such limit.
"""

import atexit
import dataclasses
import importlib
import json as _json
import os
import threading
import weakref
from typing import Any, Dict, List, Optional

import numpy as np

from . import _config
from ._errors import ChipError, DeviceError, ModelError, TimeoutError  # noqa: F401 (API)

__all__ = ["Device", "Model", "MatmulStats", "RunResult", "ModelResult", "LayerStats",
           "assemble", "disassemble", "DeviceError", "ChipError", "TimeoutError",
           "ModelError", "CHIP_SIZES", "TRAIN_CHIP_SIZES", "DEFAULT_N", "DEFAULT_MAX_CYCLES", "fit", "History", "keras_example", "mlp_example"]

#: The MXU sizes N this build has an "rtl" chip for (the first is the default).
CHIP_SIZES = tuple(_config.CHIP_SIZES)
DEFAULT_N = _config.DEFAULT_N
#: The MXU sizes N this build has an "rtl" training chip for (VMEM, bf16 matrix unit).
TRAIN_CHIP_SIZES = tuple(getattr(_config, "TRAIN_CHIP_SIZES", ()))
#: The cycle limit of a run unless max_cycles is given (tpu::Device::kDefaultMaxCycles).
DEFAULT_MAX_CYCLES = 10_000_000
_U64_MAX = 2**64 - 1

_lock = threading.Lock()
_rtl_chip = None  # (N, training) of this process's rtl chip, once one was built
_open_rtl = weakref.WeakSet()  # closed at exit, so that a VCD file is complete


@atexit.register
def _close_rtl_devices():
    for dev in list(_open_rtl):
        dev.close()


def _ext(n, training=False):
    return importlib.import_module(f"tpu_rtl._chip_{'train_' if training else ''}n{n}")


def _chip_name(n, training):
    return f"the {'training' if training else 'int8'} chip with N = {n}"


def _module_for(backend, n, training=False):
    if backend == "rtl":
        sizes = TRAIN_CHIP_SIZES if training else CHIP_SIZES
        if n not in sizes:
            if training:
                raise ValueError(f"n={n}: this build has rtl training chips for N in {sizes} "
                                 "(configure with -DTPU_SIM_TRAIN_N_LIST=...) or use "
                                 "backend=\"model\"")
            raise ValueError(f"n={n}: this build has rtl chips for N in {sizes} "
                             "(configure with -DTPU_SIM_N_LIST=...) or use backend=\"model\"")
        return _ext(n, training)
    # The model backend takes any N; its code is the same in every module.
    return _ext(n if n in CHIP_SIZES else DEFAULT_N)


def _int(value, what, lo=0, hi=_U64_MAX):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what}: expected an integer, got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{what}: {value} is outside {lo}..{hi}")
    return int(value)


def _byte_array(x, what, ndim=None):
    """A C-contiguous int8/uint8 ndarray (ValueError for anything else)."""
    if not isinstance(x, np.ndarray):
        raise ValueError(f"{what}: expected a NumPy int8 or uint8 array, got {type(x).__name__}")
    if x.dtype not in (np.int8, np.uint8):
        hint = (" (a float matmul takes float32 for both a and w)"
                if x.dtype.kind == "f" and what in ("a", "w") else "")
        raise ValueError(f"{what}: expected dtype int8 or uint8, got {x.dtype}{hint}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{what}: expected a {ndim}-D array, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{what}: the array is empty (shape {x.shape})")
    return np.ascontiguousarray(x)


def _per_column(values, what, lo, hi):
    """None, one integer or a 1-D sequence of integers -> list of ints in lo..hi."""
    if values is None:
        return []
    arr = np.asarray(values)
    if arr.ndim > 1 or arr.dtype.kind not in "iub":
        raise ValueError(f"{what}: expected an integer or a 1-D sequence of integers, "
                         f"got {values!r}")
    flat = [int(v) for v in np.atleast_1d(arr)]
    for v in flat:
        if not lo <= v <= hi:
            raise ValueError(f"{what}: {v} is outside {lo}..{hi}")
    return flat


def _out_unsigned(out_dtype):
    dt = np.dtype(out_dtype)
    if dt not in (np.int8, np.uint8):
        raise ValueError(f"out_dtype: expected int8 or uint8, got {dt}")
    return dt == np.uint8


def _program_bytes(program):
    if isinstance(program, str):
        return assemble(program)
    if isinstance(program, (bytes, bytearray, memoryview)):
        return bytes(program)
    if isinstance(program, np.ndarray):
        if program.dtype != np.uint8:
            raise ValueError(f"program: expected the encoded instructions as uint8 (16 bytes "
                             f"each), got dtype {program.dtype}")
        return program.tobytes()
    raise ValueError("program: expected assembly text (str), encoded instructions (bytes) or a "
                     f"NumPy array of them, got {type(program).__name__}")


def assemble(text: str) -> bytes:
    """Assembles a program (docs/isa.md syntax) into its encoding, 16 bytes per instruction."""
    if not isinstance(text, str):
        raise ValueError(f"assemble: expected a str, got {type(text).__name__}")
    return _ext(DEFAULT_N).assemble(text)


def disassemble(program) -> str:
    """One line per 16-byte instruction; ``assemble(disassemble(b)) == b``."""
    if isinstance(program, np.ndarray):
        program = _program_bytes(program)
    if not isinstance(program, (bytes, bytearray, memoryview)):
        raise ValueError(f"disassemble: expected bytes, got {type(program).__name__}")
    return _ext(DEFAULT_N).disassemble(bytes(program))


@dataclasses.dataclass
class MatmulStats:
    """What a Device.matmul cost (the driver's MatmulRun and RunStats)."""
    cycles: int                 # rtl: the CYCLES counter; model: an estimate
    cycles_estimated: bool      # True on the model backend (no timing)
    utilization: float          # useful MACs / (cycles * N^2)
    useful_macs: int            # m * k * n
    instructions: int           # the program's length
    wall_seconds: float         # host time in the run
    counters: Dict[str, int]    # the chip's performance counters (docs/architecture.md)
    plan: str                   # the tiling (MatmulPlan::describe)


@dataclasses.dataclass
class RunResult:
    """The outcome of Device.run: how the program ended, its counters and host memory."""
    status: str                 # "done", "error" or "timeout"
    error: Optional[str]        # the isa.md error name when status == "error"
    pc: Optional[int]           # the faulting instruction when status == "error"
    message: str                # one line when status != "done"
    cycles: int
    cycles_estimated: bool
    counters: Dict[str, int]
    host_memory: Any            # the final host memory, shaped like the argument
    stats: Dict[str, Any]       # the keys of `tpusim run --json`

    @property
    def done(self):
        return self.status == "done"


class Device:
    """A tpu-rtl chip: backend "rtl" (cycle-accurate RTL) or "model" (golden ISA model).

    n: the MXU size (rtl: one of CHIP_SIZES; model: any power of two 4..256).
    vcd: write a waveform of the rtl chip to this file (complete after close()).
    vcd_window: (from_cycle, to_cycle) of the waveform, cycles since the chip was built.
    mem_latency, mem_bandwidth: host memory timing of the rtl chip (cycles, bytes per cycle).
    backpressure, seed: random AXI backpressure probability of the rtl chip.
    max_cycles: the default cycle limit of runs.
    training: the training configuration (VMEM, the bf16 matrix unit, the vector unit;
    docs/isa.md "Training configuration"), which float32 matmuls need. rtl: the training chip
    (N in TRAIN_CHIP_SIZES); model: ChipParams::training(n). It runs int8 programs as well.
    """

    def __init__(self, backend: str = "rtl", n: Optional[int] = None, vcd=None,
                 vcd_window=None, mem_latency: int = 10, mem_bandwidth: int = 16,
                 backpressure: float = 0.0, seed: int = 1,
                 max_cycles: int = DEFAULT_MAX_CYCLES, training: bool = False):
        global _rtl_chip
        if backend not in ("rtl", "model"):
            raise ValueError(f"backend {backend!r} is not a backend (expected 'rtl' or 'model')")
        n = DEFAULT_N if n is None else _int(n, "n", 1, 256)
        if backend == "model" and (vcd is not None or vcd_window is not None):
            raise ValueError("vcd and vcd_window need backend='rtl' (the model has no waveform)")
        vcd_from, vcd_to = 0, _U64_MAX
        if vcd_window is not None:
            if vcd is None:
                raise ValueError("vcd_window needs vcd=FILE")
            try:
                vcd_from, vcd_to = vcd_window
            except (TypeError, ValueError):
                raise ValueError(f"vcd_window: expected (from_cycle, to_cycle), "
                                 f"got {vcd_window!r}") from None
            vcd_from, vcd_to = _int(vcd_from, "vcd_window[0]"), _int(vcd_to, "vcd_window[1]")
            if vcd_from > vcd_to:
                raise ValueError(f"vcd_window: {vcd_from} is after {vcd_to}")
        if not isinstance(training, (bool, np.bool_)):
            raise ValueError(f"training: expected True or False, got {training!r}")
        training = bool(training)
        self.backend = backend
        self.n = n
        self.training = training
        self.max_cycles = _int(max_cycles, "max_cycles", 1)
        self.mem_latency = _int(mem_latency, "mem_latency", 0, 2**32 - 1)
        self.mem_bandwidth = _int(mem_bandwidth, "mem_bandwidth", 1, 2**32 - 1)
        module = _module_for(backend, n, training)
        with _lock:
            if backend == "rtl" and _rtl_chip is not None and _rtl_chip != (n, training):
                if _rtl_chip[1] == training:  # the message tests of other N rely on
                    raise DeviceError(f"rtl: this process's chip has N = {_rtl_chip[0]}; SystemC "
                                      f"builds one chip per process: use another process for "
                                      f"N = {n}")
                raise DeviceError(f"rtl: this process's chip is {_chip_name(*_rtl_chip)}; "
                                  f"SystemC builds one chip per process: use another process "
                                  f"for {_chip_name(n, training)}")
            self._dev = module.Device(backend, n, training,
                                      os.fspath(vcd) if vcd is not None else "",
                                      vcd_from, vcd_to, self.mem_latency, self.mem_bandwidth,
                                      float(backpressure), _int(seed, "seed"))
            if backend == "rtl":
                _rtl_chip = (n, training)
                _open_rtl.add(self)
        self._module = module

    # ---- lifetime
    def close(self):
        """Returns the chip (rtl: the next Device reuses it; a VCD file is completed)."""
        self._dev.close()

    @property
    def closed(self) -> bool:
        return self._dev.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self.closed else "open"
        training = " training" if self.training else ""
        return f"<tpu_rtl.Device backend={self.backend!r} n={self.n}{training} {state}>"

    @property
    def params(self) -> Dict[str, int]:
        """The chip's parameters: n, ub_rows, acc_rows, wfifo_tiles, qp_slots, axi_width,
        vmem_rows (0: the int8 chip, no float hardware). rtl: read from the PARAM registers."""
        return self._dev.params()

    # ---- fault injection (rtl)
    #: The host addresses the driver places its buffers at (tpu::Device::kArenaBase ..
    #: kArenaEnd): data, weights and results of matmul, Model and fit, not the program.
    ARENA = (0x8000_0000, 0xF000_0000)

    def inject_bus_error(self, base: int = ARENA[0], size: int = ARENA[1] - ARENA[0]):
        """Testing the error paths: from the next run on, host memory answers the chip's
        accesses that touch [base, base + size) with an AXI error (SLVERR), so the instruction
        faults with ERR_AXI_READ / ERR_AXI_WRITE and the call raises ChipError (``.code``,
        ``.pc``). The host's own reads and writes are unaffected. Until clear_bus_errors() or
        close(). rtl only (ValueError on the model backend)."""
        base = _int(base, "base", 0, 2**32 - 1)
        self._dev.inject_bus_error(base, _int(size, "size", 1, 2**32 - base))

    def clear_bus_errors(self):
        """Host memory answers every access again (see inject_bus_error)."""
        self._dev.clear_bus_errors()

    # ---- operations
    def matmul(self, a: np.ndarray, w: np.ndarray, bias=None, shift=0, mult=None,
               zero_point: int = 0, func: str = "identity", clamp=(-128, 127), lut=None,
               out_dtype=None, max_cycles: Optional[int] = None, nan_policy: str = "propagate",
               transfer: str = "float32"):
        """``func(sat(round((a @ w + bias) * mult / 2**shift) + zero_point))`` on the chip,
        or for float32 operands ``a @ w`` on the bf16 matrix unit.

        int8: a (m, k) int8 or uint8; w (k, n) int8 or uint8. bias and mult (int32), shift
        (0..63): one value or one per output column. func: "identity", "relu", "clamp"
        (clamp=(lo, hi) in the output type) or "lut" (lut: 256 bytes). Exactly docs/isa.md's
        activate. out_dtype: int8 (default) or uint8.

        float32 (a and w both float32; needs ``training=True``): the chip rounds both to bf16
        (round to nearest even, subnormals read as zero, NaN -> canonical NaN), multiplies
        exactly and sums in fp32 in docs/isa.md's order: per N-wide K tile (K padded with +0)
        a column sum from +0, tile sums added to the fp32 accumulator in K order; results
        below 2^-126 flush to zero, NaN is 0x7FC00000. The int8 options do not apply.
        nan_policy: "propagate" (NaN in, canonical NaN out) or "raise" (ValueError if a or w
        holds a NaN). out_dtype: float32 (default). transfer: "float32" (the operands travel
        as fp32 and the chip rounds them) or "bfloat16" (the host rounds them with the chip's
        rounding and sends half the bytes: the same bits, fewer cycles; N >= 8).

        Returns (out, MatmulStats), out an (m, n) array of out_dtype.
        """
        floats = [isinstance(x, np.ndarray) and x.dtype.kind == "f" for x in (a, w)]
        if all(floats):
            return self._matmul_float(a, w, locals(), max_cycles, nan_policy, transfer)
        if nan_policy != "propagate":
            raise ValueError("nan_policy applies to float32 matmuls only")
        if transfer != "float32":
            raise ValueError("transfer applies to float32 matmuls only")
        a = _byte_array(a, "a", 2)
        w = _byte_array(w, "w", 2)
        if a.shape[1] != w.shape[0]:
            raise ValueError(f"matmul: a is {a.shape[0]} x {a.shape[1]} but w is "
                             f"{w.shape[0]} x {w.shape[1]} (expected {a.shape[1]} rows)")
        cols = w.shape[1]
        lists = {}
        for name, value, lo, hi in (("bias", bias, -2**31, 2**31 - 1),
                                    ("mult", mult, -2**31, 2**31 - 1),
                                    ("shift", shift, 0, 63)):
            lists[name] = _per_column(value, name, lo, hi)
            if len(lists[name]) not in (0, 1, cols):
                raise ValueError(f"{name}: {len(lists[name])} values for {cols} columns "
                                 "(expected 1 or one per column)")
        if len(lists["bias"]) == 1:  # the driver takes no bias or one per column
            lists["bias"] *= cols
        if func not in ("identity", "relu", "clamp", "lut"):
            raise ValueError(f"func {func!r} is not an activation "
                             "(expected 'identity', 'relu', 'clamp' or 'lut')")
        if func == "lut":
            if lut is None:
                raise ValueError("func='lut' needs lut= (256 int8 or uint8 values)")
            lut = _byte_array(lut, "lut", 1)
            if lut.size != 256:
                raise ValueError(f"lut: expected 256 values, got {lut.size}")
        elif lut is not None:
            raise ValueError("lut= is only used with func='lut'")
        try:
            lo, hi = clamp
        except (TypeError, ValueError):
            raise ValueError(f"clamp: expected (lo, hi), got {clamp!r}") from None
        unsigned = _out_unsigned(np.int8 if out_dtype is None else out_dtype)
        limit = self.max_cycles if max_cycles is None else _int(max_cycles, "max_cycles", 1)
        out, st = self._dev.matmul(a, w, a.dtype == np.uint8, w.dtype == np.uint8,
                                   lists["bias"], lists["mult"], lists["shift"],
                                   _int(zero_point, "zero_point", -2**31, 2**31 - 1), func,
                                   _int(lo, "clamp[0]", -2**31, 2**31 - 1),
                                   _int(hi, "clamp[1]", -2**31, 2**31 - 1), lut, unsigned, limit)
        out = out.view(np.uint8 if unsigned else np.int8)
        return out, MatmulStats(cycles=st["cycles"], cycles_estimated=st["cycles_estimated"],
                                utilization=st["utilization"], useful_macs=st["useful_macs"],
                                instructions=st["program_instructions"],
                                wall_seconds=st["wall_seconds"], counters=st["counters"],
                                plan=st["plan"])

    _FLOAT_DEFAULTS = {"bias": None, "shift": 0, "mult": None, "zero_point": 0,
                       "func": "identity", "clamp": (-128, 127), "lut": None}

    def _matmul_float(self, a, w, args, max_cycles, nan_policy, transfer):
        for name, x in (("a", a), ("w", w)):
            if x.dtype != np.float32:
                raise ValueError(f"{name}: expected float32 (a float matmul takes float32 a and "
                                 f"w; convert with .astype(np.float32), which rounds once more "
                                 f"before the chip's bf16 rounding), got {x.dtype}")
            if x.ndim != 2:
                raise ValueError(f"{name}: expected a 2-D array, got shape {x.shape}")
            if x.size == 0:
                raise ValueError(f"{name}: the array is empty (shape {x.shape})")
        if a.shape[1] != w.shape[0]:
            raise ValueError(f"matmul: a is {a.shape[0]} x {a.shape[1]} but w is "
                             f"{w.shape[0]} x {w.shape[1]} (expected {a.shape[1]} rows)")
        for name, default in self._FLOAT_DEFAULTS.items():
            value = args[name]
            same = value is None if default is None else (
                value is not None and np.array_equal(np.asarray(value, dtype=object),
                                                     np.asarray(default, dtype=object)))
            if not same:
                raise ValueError(f"{name}={value!r} applies to int8 matmuls only (a float32 "
                                 "matmul returns a @ w in fp32)")
        out_dtype = args["out_dtype"]
        if out_dtype is not None and np.dtype(out_dtype) != np.float32:
            raise ValueError(f"out_dtype: a float32 matmul returns float32, not "
                             f"{np.dtype(out_dtype)}")
        if transfer not in ("float32", "bfloat16"):
            raise ValueError(f"transfer: {transfer!r} is not 'float32' or 'bfloat16'")
        if nan_policy not in ("propagate", "raise"):
            raise ValueError(f"nan_policy: {nan_policy!r} is not 'propagate' or 'raise'")
        if nan_policy == "raise":
            for name, x in (("a", a), ("w", w)):
                bad = np.argwhere(np.isnan(x))
                if len(bad):
                    raise ValueError(f"{name}[{bad[0][0]}, {bad[0][1]}] is NaN "
                                     f"({len(bad)} NaN values; nan_policy='raise')")
        if not self.params["vmem_rows"]:
            raise DeviceError(f"matmul: float32 operands need the training chip (VMEM and the "
                              f"bf16 matrix unit); this Device is {_chip_name(self.n, False)}: "
                              f"open tpu_rtl.Device({self.backend!r}, n={self.n}, "
                              f"training=True)")
        limit = self.max_cycles if max_cycles is None else _int(max_cycles, "max_cycles", 1)
        out, st = self._dev.matmul_float(np.ascontiguousarray(a), np.ascontiguousarray(w),
                                         transfer == "bfloat16", limit)
        return out, MatmulStats(cycles=st["cycles"], cycles_estimated=st["cycles_estimated"],
                                utilization=st["utilization"], useful_macs=st["useful_macs"],
                                instructions=st["program_instructions"],
                                wall_seconds=st["wall_seconds"], counters=st["counters"],
                                plan=st["plan"])

    def run(self, program, host_memory=None, base: int = 0,
            max_cycles: Optional[int] = None, check: bool = False) -> RunResult:
        """Runs a raw program until halt; faults and timeouts come back in the result, or
        with ``check=True`` raise ChipError (``.code``, ``.pc``) and TimeoutError.

        program: assembly text, or encoded instructions (bytes / uint8 array, 16 per
        instruction). host_memory: a uint8 array mapped at host address ``base``, or a dict
        {address: uint8 array}; these ranges are the chip's DMA windows (a DMA elsewhere faults
        with ERR_HOST_RANGE). The arrays are not modified: the result holds copies after the run.
        """
        code = _program_bytes(program)
        if host_memory is None:
            blocks, as_dict = [], None
        elif isinstance(host_memory, dict):
            blocks = [(_int(k, "host_memory address", 0, 2**32 - 1),
                       _byte_array(v, f"host_memory[{k:#x}]").reshape(-1))
                      for k, v in sorted(host_memory.items())]
            as_dict = True
        else:
            arr = _byte_array(host_memory, "host_memory")
            blocks, as_dict = [(_int(base, "base", 0, 2**32 - 1), arr.reshape(-1))], False
        limit = self.max_cycles if max_cycles is None else _int(max_cycles, "max_cycles", 1)
        status, error, pc, message, stats, after = self._dev.run(code, blocks, limit,
                                                                 bool(check))
        if as_dict is None:
            memory = None
        elif as_dict:
            memory = {addr: a.view(src.dtype).reshape(host_memory[addr].shape)
                      for (addr, src), a in zip(blocks, after)}
        else:
            memory = after[0].view(blocks[0][1].dtype).reshape(host_memory.shape)
        return RunResult(status=status, error=error, pc=pc, message=message,
                         cycles=stats["cycles"], cycles_estimated=stats["cycles_estimated"],
                         counters=stats["counters"], host_memory=memory, stats=stats)


@dataclasses.dataclass
class LayerStats:
    """One layer of a Model run (a "layers" entry of run-cnn's JSON), per image."""
    name: str
    op: str
    macs: int
    cycles: float
    utilization: Optional[float]   # None on the model backend (no timing)
    ideal_cycles: float
    scalesim_ws_cycles: float
    dma_in_bytes: int
    dma_out_bytes: int
    dma: Dict[str, int]


@dataclasses.dataclass
class ModelResult:
    """Model.run / Model.evaluate: outputs and the figures of `tpusim run-cnn --json`."""
    outputs: np.ndarray            # (images, classes) int32: the chip's quantized outputs
    scores: np.ndarray             # (images, classes) float32: outputs dequantized
    predicted: np.ndarray          # (images,) argmax of outputs
    float_predicted: np.ndarray    # (images,) argmax of the float model
    matches_reference: np.ndarray  # (images,) bool: outputs equal the integer reference
    layers: List[LayerStats]       # per-layer profile of the first batch (empty: profile=False)
    cycles_total: int
    cycles_per_image: float
    cycles_estimated: bool
    mxu_utilization: Optional[float]
    accuracy: Optional[float]      # with labels
    report: Dict[str, Any]         # the whole run-cnn JSON object


class Model:
    """An ONNX model imported and quantized once, run on a Device image by image.

    model: a path to a .onnx file or its bytes. calibration: images for post-training
    quantization of a float model (uint8 pixels, divided by 255, or float32 model inputs;
    shape (n, H, W) for one channel or (n, C, H, W)); not needed for a QDQ/QLinear model.
    """

    def __init__(self, model, calibration: Optional[np.ndarray] = None,
                 name: Optional[str] = None):
        if isinstance(model, (bytes, bytearray, memoryview)):
            self._source, self._is_path = bytes(model), False
            self.name = name or "<bytes>"
        elif isinstance(model, (str, os.PathLike)):
            self._source, self._is_path = os.fspath(model), True
            self.name = name or self._source
        else:
            raise ValueError(f"model: expected a path or the ONNX bytes, got {type(model).__name__}")
        if calibration is not None:
            calibration = self._images(calibration, "calibration")
        self._calibration = calibration
        self._impls = {}
        impl = self._impl(_ext(DEFAULT_N))  # import and quantize now: errors show here
        info = impl.info()
        self.input_shape = tuple(info["input_shape"])
        self.classes = info["classes"]
        self.quantization = info["quantization"]
        self.output_scale = info["output_scale"]
        self.output_zero_point = info["output_zero_point"]
        self.layers = info["layers"]

    @staticmethod
    def _images(x, what):
        if not isinstance(x, np.ndarray):
            raise ValueError(f"{what}: expected a NumPy array of images, got {type(x).__name__}")
        if x.dtype not in (np.uint8, np.float32):
            raise ValueError(f"{what}: expected dtype uint8 (pixels) or float32, got {x.dtype}")
        return np.ascontiguousarray(x)

    def _impl(self, module):
        impl = self._impls.get(module.__name__)
        if impl is None:
            impl = module.Model(self._source, self._is_path, self.name, self._calibration)
            self._impls[module.__name__] = impl
        return impl

    def __repr__(self):
        return (f"<tpu_rtl.Model {self.name!r} input {self.input_shape}, {len(self.layers)} "
                f"layers, {self.classes} classes>")

    def run(self, x: np.ndarray, backend="rtl", batch: int = 8, profile: bool = True,
            max_cycles: Optional[int] = None, labels=None) -> ModelResult:
        """Runs the images ``x`` (like calibration) on the chip, ``batch`` images per program.

        backend: "rtl", "model" or an open Device (an "rtl" string needs the process's chip
        free: pass your open rtl Device instead). profile: per-layer cycles of the first batch.
        max_cycles: per batch program (default: derived from the program, as run-cnn).
        """
        x = self._images(x, "x")
        if labels is not None:
            labels = np.asarray(labels)
            if labels.ndim != 1 or labels.dtype.kind not in "iu":
                raise ValueError(f"labels: expected a 1-D integer array, got {labels!r}")
            labels = [int(v) for v in labels]
        batch = _int(batch, "batch", 1, 4095)
        limit = 0 if max_cycles is None else _int(max_cycles, "max_cycles", 1)
        if isinstance(backend, Device):
            return self._run_on(backend, x, labels, batch, profile, limit)
        with Device(backend) as dev:
            return self._run_on(dev, x, labels, batch, profile, limit)

    def evaluate(self, x: np.ndarray, labels, **kwargs) -> ModelResult:
        """run() with labels: ``result.accuracy`` is the fraction the chip classified right."""
        if labels is None:
            raise ValueError("evaluate: labels are needed (use run() without them)")
        return self.run(x, labels=labels, **kwargs)

    def _run_on(self, dev, x, labels, batch, profile, limit):
        if dev.closed:
            raise DeviceError("the Device is closed")
        rtl = dev.backend == "rtl"
        js, logits, fpred, matches = self._impl(dev._module).evaluate(
            dev._dev, x, labels, batch, bool(profile), limit,
            dev.mem_latency if rtl else -1, dev.mem_bandwidth if rtl else -1)
        report = _json.loads(js)
        scores = ((logits.astype(np.float64) - self.output_zero_point)
                  * self.output_scale).astype(np.float32)
        layers = [LayerStats(**layer) for layer in report["layers"]]
        return ModelResult(outputs=logits, scores=scores,
                           predicted=np.asarray(report["predictions"], dtype=np.int64),
                           float_predicted=fpred.astype(np.int64), matches_reference=matches,
                           layers=layers, cycles_total=report["cycles_total"],
                           cycles_per_image=report["cycles_per_image"],
                           cycles_estimated=report["cycles_estimated"],
                           mxu_utilization=report["mxu_utilization"],
                           accuracy=report["accuracy"] if labels is not None else None,
                           report=report)


@dataclasses.dataclass
class History:
    """What fit() returns, as Keras' History: ``history["loss"]`` (mean loss per epoch) and
    ``history["test_accuracy"]`` (after each epoch, None without validation_data); ``losses``
    every step's loss as the chip computed it; ``model`` the trained model (ONNX bytes, the
    initial model with the trained weights: tpu_rtl.Model takes it); ``step_cycles`` every
    step's cycles (exact on rtl, ``cycles_estimated`` on model); ``matches_golden`` whether the
    rtl chip gave the golden model's losses and weights bit for bit (None without
    golden_check)."""
    history: Dict[str, List[Any]]
    losses: List[float]
    initial_test_accuracy: Optional[float]
    steps_per_epoch: int
    cycles_total: int
    wall_seconds: float
    model: bytes
    step_cycles: List[int] = dataclasses.field(default_factory=list)
    cycles_estimated: bool = True
    matches_golden: Optional[bool] = None


def keras_example(seed: int = 1) -> bytes:
    """The default model of ``tpusim train``: the Keras Fashion-MNIST CNN as float ONNX bytes,
    Glorot-uniform weights from ``seed`` (docs/training.md)."""
    return _ext(DEFAULT_N).keras_example(_int(seed, "seed"))


def mlp_example(hidden: int = 128, seed: int = 1) -> bytes:
    """A float MLP for Fashion-MNIST (Flatten, Dense ``hidden`` + ReLU, Dense 10) as ONNX bytes,
    Glorot-uniform weights from ``seed``: trains with what the training compiler has today."""
    return _ext(DEFAULT_N).mlp_example(_int(hidden, "hidden", 1, 65536), _int(seed, "seed"))


def fit(model, x: np.ndarray, y, epochs: int = 5, steps_per_epoch: Optional[int] = None,
        batch_size: int = 32, optimizer: str = "adam", lr: Optional[float] = None,
        momentum: float = 0.0, weight_decay: float = 0.0, shuffle: Optional[int] = None,
        validation_data=None, test_images: Optional[int] = None, n: Optional[int] = None,
        backend: str = "model", device: Optional["Device"] = None,
        golden_check: bool = False) -> History:
    """Trains a float ONNX model on the chip, as ``tpusim train`` does (driver/train/io/fit.h).

    model: a path or ONNX bytes (e.g. keras_example()). x: images (n, C, H, W), float32 or uint8
    pixels (divided by 255); y: integer labels. steps_per_epoch: default len(x) // batch_size;
    each epoch continues where the last stopped. shuffle: None (file order) or a seed.
    validation_data: (x, y) for the test accuracy after each epoch (its first ``test_images``).
    lr: default 0.001 (adam) or 0.01 (sgd).

    backend: "model" (the golden model of ChipParams::training(n)) or "rtl" (the rtl training
    chip with N = n, tpu_rtl._chip_train_n<N>: this process's one rtl chip, leased for the fit as
    by ``Device("rtl", n, training=True)``). Both give the same losses and weights bit for bit;
    rtl cycles are exact, model cycles estimated. device: an open ``Device(..., training=True)``
    to train on instead (then backend and n are its own). golden_check (rtl): rerun every step
    on the golden model in lockstep and compare losses and final weights bit for bit, as
    ``tpusim train --backend rtl`` does (History.matches_golden; a difference raises
    RuntimeError). The simulation runs without the GIL.

    Raises ValueError for bad arguments and data, RuntimeError if training diverges (a loss or
    weight not finite: the message names the step), ChipError / TimeoutError if the chip faults
    or does not halt, DeviceError if the rtl chip is in use by an open Device (pass it as
    ``device``).
    """
    if device is not None:
        if not isinstance(device, Device):
            raise ValueError(f"device: expected a tpu_rtl.Device, got {type(device).__name__}")
        if not device.training:
            raise ValueError(f"device: {device!r} is not a training Device (open it with "
                             "training=True)")
        backend, n = device.backend, device.n
    if backend not in ("rtl", "model"):
        raise ValueError(f"backend={backend!r} is not a backend (expected 'rtl' or 'model')")
    if not isinstance(golden_check, (bool, np.bool_)):
        raise ValueError(f"golden_check: expected True or False, got {golden_check!r}")
    if golden_check and backend != "rtl":
        raise ValueError("golden_check applies to backend='rtl' (the model backend is the "
                         "golden model)")
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            model = f.read()
    elif isinstance(model, (bytearray, memoryview)):
        model = bytes(model)
    if not isinstance(model, bytes):
        raise ValueError(f"model: expected a path or the ONNX bytes, got {type(model).__name__}")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer: {optimizer!r} is not 'sgd' or 'adam'")
    if lr is None:
        lr = 0.01 if optimizer == "sgd" else 0.001
    for name, v in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
        if not np.isfinite(v):
            raise ValueError(f"{name}: {v} is not a finite number")
    x = Model._images(x, "x")
    y = np.asarray(y)
    tx = ty = None
    if validation_data is not None:
        tx, ty = validation_data
        tx, ty = Model._images(tx, "validation_data"), np.asarray(ty)
    n = DEFAULT_N if n is None else _int(n, "n", 4, 256)
    args = (model, x, y, tx, ty, n, _int(epochs, "epochs", 1, 1 << 31),
            0 if steps_per_epoch is None else _int(steps_per_epoch, "steps_per_epoch", 1, 1 << 31),
            _int(batch_size, "batch_size", 1, 4095), optimizer, float(lr), float(momentum),
            float(weight_decay), None if shuffle is None else _int(shuffle, "shuffle"),
            (1 << 32) - 1 if test_images is None else _int(test_images, "test_images", 0,
                                                            (1 << 32) - 1))
    if device is not None:
        h = device._module.fit(*args, device._dev, bool(golden_check))
    elif backend == "rtl":
        with Device("rtl", n=n, training=True) as dev:
            h = dev._module.fit(*args, dev._dev, bool(golden_check))
    else:
        h = _ext(DEFAULT_N).fit(*args, None, False)
    if h["diverged"]:
        raise RuntimeError(h["divergence"])
    if h["matches_golden"] is False:
        raise RuntimeError(f"fit: the rtl chip differs from the golden model at "
                           f"{h['golden_mismatch']}")
    return History(history={"loss": h["loss"], "test_accuracy": h["test_accuracy"]},
                   losses=h["losses"], initial_test_accuracy=h["initial_test_accuracy"],
                   steps_per_epoch=h["steps_per_epoch"], cycles_total=h["cycles_total"],
                   wall_seconds=h["wall_seconds"], model=h["model"],
                   step_cycles=h["step_cycles"], cycles_estimated=h["cycles_estimated"],
                   matches_golden=h["matches_golden"])
