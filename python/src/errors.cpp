// SPDX-License-Identifier: Apache-2.0
// The driver's exceptions as Python exceptions, with the C++ message:
//   std::invalid_argument (bad arguments, tpu::ProgramError), tpu::AsmError, tpu::BinaryError
//       -> ValueError
//   tpu::ChipError   -> tpu_rtl.ChipError(DeviceError): .code (name), .code_value, .pc, .stats
//   tpu::TimeoutError -> tpu_rtl.TimeoutError(DeviceError): .max_cycles, .stats
//   tpu::DeviceError -> tpu_rtl.DeviceError(RuntimeError)
//   tpu::cnn::Error  -> tpu_rtl.ModelError(ValueError) (a model the compiler cannot take, ...)
// Anything else keeps pybind11's translation (std::runtime_error -> RuntimeError, ...).
#include <exception>

#include "assembler.h"
#include "bind.h"
#include "network.h"

namespace tpu_py {

namespace {

PyObject* g_device_error = nullptr;
PyObject* g_chip_error = nullptr;
PyObject* g_timeout_error = nullptr;
PyObject* g_model_error = nullptr;

// The class `name` of tpu_rtl/_errors.py (shared by every _chip_n<N> module), kept for good.
PyObject* error_class(const py::module_& errors, const char* name) {
  py::object cls = errors.attr(name);
  return cls.release().ptr();
}

// Raises `type(message)` with extra attributes.
void raise_with(PyObject* type, const char* message, const py::dict& attrs) {
  py::object e = py::reinterpret_borrow<py::object>(type)(message);
  for (auto item : attrs) e.attr(item.first) = item.second;
  PyErr_SetObject(type, e.ptr());
}

py::object stats_or_none(const tpu::DeviceError& e) {
  return e.stats() ? py::object(stats_dict(*e.stats())) : py::object(py::none());
}

}  // namespace

void register_errors(py::module_& /*m*/) {
  const py::module_ errors = py::module_::import("tpu_rtl._errors");
  g_device_error = error_class(errors, "DeviceError");
  g_chip_error = error_class(errors, "ChipError");
  g_timeout_error = error_class(errors, "TimeoutError");
  g_model_error = error_class(errors, "ModelError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tpu::ChipError& e) {
      py::dict a;
      a["code"] = std::string(tpu::error_name(e.code()));
      a["code_value"] = static_cast<int>(e.code());
      a["pc"] = e.pc();
      a["stats"] = stats_or_none(e);
      raise_with(g_chip_error, e.what(), a);
    } catch (const tpu::TimeoutError& e) {
      py::dict a;
      a["max_cycles"] = e.max_cycles();
      a["stats"] = stats_or_none(e);
      raise_with(g_timeout_error, e.what(), a);
    } catch (const tpu::DeviceError& e) {
      py::dict a;
      a["stats"] = stats_or_none(e);
      raise_with(g_device_error, e.what(), a);
    } catch (const tpu::cnn::Error& e) {
      PyErr_SetString(g_model_error, e.what());
    } catch (const tpu::AsmError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const tpu::BinaryError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

py::dict stats_dict(const tpu::RunStats& s) {
  py::dict d;
  d["cycles"] = s.cycles;
  d["cycles_estimated"] = s.cycles_estimated;
  d["instructions"] = s.instructions;
  d["wall_seconds"] = s.wall_seconds;
  py::dict c;
  for (int i = 0; i < tpu::PerfCounters::kCount; ++i)
    c[tpu::PerfCounters::name(i)] = s.counters.get(i);
  d["counters"] = c;
  return d;
}

std::vector<uint8_t> array_bytes(const py::array& a, const char* what) {
  if (a.itemsize() != 1)
    throw std::invalid_argument(std::string(what) + ": expected a uint8 or int8 array, got dtype " +
                                std::string(py::str(a.dtype())));
  if (!(a.flags() & py::array::c_style))
    throw std::invalid_argument(std::string(what) + ": expected a C-contiguous array");
  const auto* p = static_cast<const uint8_t*>(a.data());
  return std::vector<uint8_t>(p, p + a.size());
}

}  // namespace tpu_py
