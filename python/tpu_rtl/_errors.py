# SPDX-License-Identifier: Apache-2.0
"""The exceptions of tpu_rtl (raised by the C++ extension with the driver's message)."""


class DeviceError(RuntimeError):
    """The device refused a request or its backend failed.

    ``stats`` holds the run statistics up to the stop when the error comes from a run, else None.
    """

    stats = None


class ChipError(DeviceError):
    """The chip stopped with STATUS.error.

    ``code`` is the isa.md name (e.g. ``'ERR_UB_RANGE'``), ``code_value`` its number, ``pc`` the
    instruction that faulted, ``stats`` the run up to the fault.
    """

    code = None
    code_value = None
    pc = None


class TimeoutError(DeviceError):  # noqa: A001 (the driver's name; builtins.TimeoutError is OSError)
    """The run did not finish within ``max_cycles``; the device was reset and can run again."""

    max_cycles = None


class ModelError(ValueError):
    """A model that cannot be imported, quantized or compiled for the chip."""
