// SPDX-License-Identifier: Apache-2.0
// The tpu_rtl extension (docs/python.md): thin pybind11 bindings of the driver's public API.
// Argument parsing, dtypes and result objects live in python/tpu_rtl/__init__.py; this side
// takes contiguous NumPy buffers, releases the GIL around every simulation, and turns the
// driver's exceptions into Python ones (errors.cpp).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device.h"
#include "device_rtl.h"

namespace tpu_py {

namespace py = pybind11;

void register_errors(py::module_& m);
void bind_device(py::module_& m);
void bind_model(py::module_& m);
void bind_train(py::module_& m);  // train.cpp, when tpu_train_io is built (TPU_PY_TRAIN)

// RunStats as a dict: cycles, cycles_estimated, instructions, wall_seconds, counters {name: n}
// (the keys of `tpusim run --json`).
py::dict stats_dict(const tpu::RunStats& s);

// The bytes of a contiguous 1-byte array (uint8 or int8), any shape.
std::vector<uint8_t> array_bytes(const py::array& a, const char* what);

// A Python Device: a ModelDevice of its own, or a lease of the process's one RtlDevice
// (device.cpp). Calls from several Python threads take turns on its lock.
class PyDevice {
 public:
  // training: the training configuration (model: ChipParams::training(n); rtl: this module
  // must be a training chip, tpu_rtl._chip_train_n<N>).
  PyDevice(const std::string& backend, uint32_t n, bool training, const tpu::RtlOptions& o);
  ~PyDevice() { close(); }
  PyDevice(const PyDevice&) = delete;
  PyDevice& operator=(const PyDevice&) = delete;

  void close();  // returns the chip (rtl); later calls raise DeviceError
  bool closed() const { return dev_ == nullptr; }
  // The device, locked by `lock` (call without the GIL when the work is long).
  tpu::Device& device(std::unique_lock<std::mutex>& lock);
  // The same for the rtl backend's own calls (fault injection); ValueError naming `what` on
  // the model backend.
  tpu::RtlDevice& rtl_device(std::unique_lock<std::mutex>& lock, const char* what);

 private:
  std::mutex mu_;
  tpu::Device* dev_ = nullptr;
  std::unique_ptr<tpu::Device> model_;
  bool rtl_ = false;
};

}  // namespace tpu_py
