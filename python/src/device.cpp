// SPDX-License-Identifier: Apache-2.0
// tpu_rtl._chip_n<N>.Device: a tpu::Device ("rtl" or "model") with tiled matmul, raw program
// runs, and the assembler.
//
// SystemC elaborates once per process (driver/device_rtl.h: a second RtlDevice throws), so the
// process's one RtlDevice lives here and Python Devices lease it: one open "rtl" Device at a
// time; after close() the next one reuses the chip (buffers released, same memory timing).
// A chip built with a VCD file is destroyed by close() (that completes the file), so it cannot
// be reused: the error says to use another process.
#include <memory>
#include <mutex>
#include <optional>

#include "assembler.h"
#include "bind.h"
#include "device_model.h"
#include "device_rtl.h"
#include "float_matmul.h"
#include "tiled_ops.h"

namespace tpu_py {

namespace {

constexpr const char* kOnePerProcess =
    "SystemC builds one chip per process: close the other Device first (dev.close() or a "
    "`with tpu_rtl.Device(...)` block), pass it to the call that needs it, or use a second "
    "process (multiprocessing with the 'spawn' start method) or backend=\"model\"";

struct ChipSlot {
  std::unique_ptr<tpu::RtlDevice> chip;
  tpu::RtlOptions options;
  bool leased = false;
  bool destroyed = false;  // a chip with a VCD was closed: no other chip in this process
};

ChipSlot& chip_slot() {
  static ChipSlot* slot = new ChipSlot;  // never destroyed: the chip may outlive the module's
  return *slot;                          // statics at exit (SystemC's own teardown order)
}

bool same_timing(const tpu::RtlOptions& a, const tpu::RtlOptions& b) {
  return a.mem_latency_cycles == b.mem_latency_cycles &&
         a.mem_bytes_per_cycle == b.mem_bytes_per_cycle;
}

tpu::RtlDevice& lease_chip(const tpu::RtlOptions& o) {
  ChipSlot& s = chip_slot();
  if (s.leased)
    throw tpu::DeviceError(std::string("rtl: this process's chip is in use by another "
                                       "open Device; ") +
                           kOnePerProcess);
  if (s.destroyed)
    throw tpu::DeviceError(std::string("rtl: this process's chip was closed after writing its VCD "
                                       "file and cannot be built again; ") +
                           kOnePerProcess);
  if (s.chip && (!o.vcd_file.empty() || !same_timing(o, s.options)))
    throw tpu::DeviceError(
        std::string("rtl: this process's chip was built with mem_latency=") +
        std::to_string(s.options.mem_latency_cycles) +
        ", mem_bandwidth=" + std::to_string(s.options.mem_bytes_per_cycle) +
        " and no VCD; a VCD file and the memory timing are fixed when the chip is built; " +
        kOnePerProcess);
  if (!s.chip) {
    s.chip = std::make_unique<tpu::RtlDevice>(o);
    s.options = o;
  } else {
    s.chip->release_all();
    s.chip->record_timeline(false);
  }
  s.chip->set_backpressure(o.backpressure, o.seed);
  s.chip->clear_bus_errors();
  s.leased = true;
  return *s.chip;
}

void return_chip() {
  ChipSlot& s = chip_slot();
  s.leased = false;
  if (s.chip && !s.options.vcd_file.empty()) {
    s.chip.reset();  // closes the VCD file
    s.destroyed = true;
  } else if (s.chip) {
    s.chip->release_all();
    s.chip->record_timeline(false);
    s.chip->clear_bus_errors();
  }
}

}  // namespace

PyDevice::PyDevice(const std::string& backend, uint32_t n, bool training,
                   const tpu::RtlOptions& o) {
  if (backend == "model") {
    tpu::ChipParams p = training ? tpu::ChipParams::training(n) : tpu::ChipParams::with_n(n);
    p.validate();
    model_ = std::make_unique<tpu::ModelDevice>(p);
    dev_ = model_.get();
  } else if (backend == "rtl") {
    if (n != tpu::RtlDevice::compiled_n())
      throw std::invalid_argument(
          "rtl: this module is the chip with N = " + std::to_string(tpu::RtlDevice::compiled_n()) +
          ", not " + std::to_string(n));
    if (training != (tpu::RtlDevice::compiled_vmem_rows() > 0))
      throw std::invalid_argument(
          std::string("rtl: this module is the ") +
          (training ? "int8 chip, not the training chip" : "training chip, not the int8 chip"));
    dev_ = &lease_chip(o);
    rtl_ = true;
  } else {
    throw std::invalid_argument("backend '" + backend +
                                "' is not a backend (expected rtl or model)");
  }
}

void PyDevice::close() {
  std::lock_guard<std::mutex> g(mu_);
  if (rtl_ && dev_) return_chip();
  dev_ = nullptr;
  model_.reset();
}

tpu::RtlDevice& PyDevice::rtl_device(std::unique_lock<std::mutex>& lock, const char* what) {
  tpu::Device& d = device(lock);
  if (!rtl_)
    throw std::invalid_argument(std::string(what) +
                                " needs backend='rtl' (the chip's host "
                                "memory model), not '" +
                                std::string(d.backend()) + "'");
  return static_cast<tpu::RtlDevice&>(d);
}

tpu::Device& PyDevice::device(std::unique_lock<std::mutex>& lock) {
  lock = std::unique_lock<std::mutex>(mu_);
  if (!dev_) throw tpu::DeviceError("the Device is closed");
  return *dev_;
}

namespace {

tpu::ActFunc parse_func(const std::string& f) {
  for (auto a :
       {tpu::ActFunc::Identity, tpu::ActFunc::Relu, tpu::ActFunc::Clamp, tpu::ActFunc::Lut})
    if (tpu::act_func_name(a) == f) return a;
  throw std::invalid_argument("func '" + f +
                              "' is not an activation (expected identity, relu, "
                              "clamp or lut)");
}

// a: m x k, w: k x n (1-byte dtypes, C-contiguous; shapes checked by the caller).
py::tuple matmul(PyDevice& self, const py::array& a, const py::array& w, bool a_unsigned,
                 bool w_unsigned, std::vector<int32_t> bias, std::vector<int32_t> mult,
                 std::vector<uint8_t> shift, int zero_point, const std::string& func, int clamp_lo,
                 int clamp_hi, const py::object& lut, bool out_unsigned, uint64_t max_cycles) {
  if (a.ndim() != 2 || w.ndim() != 2) throw std::invalid_argument("matmul: a and w must be 2-D");
  if (a.shape(1) != w.shape(0))
    throw std::invalid_argument("matmul: a is " + std::to_string(a.shape(0)) + " x " +
                                std::to_string(a.shape(1)) + " but w has " +
                                std::to_string(w.shape(0)) + " rows (expected " +
                                std::to_string(a.shape(1)) + ")");
  tpu::MatmulSpec spec;
  spec.m = static_cast<uint32_t>(a.shape(0));
  spec.k = static_cast<uint32_t>(a.shape(1));
  spec.n = static_cast<uint32_t>(w.shape(1));
  spec.a_unsigned = a_unsigned;
  spec.w_unsigned = w_unsigned;
  spec.bias = std::move(bias);
  spec.mult = std::move(mult);
  spec.shift = std::move(shift);
  spec.zero_point = zero_point;
  spec.func = parse_func(func);
  spec.clamp_lo = clamp_lo;
  spec.clamp_hi = clamp_hi;
  if (!lut.is_none()) spec.lut = array_bytes(lut.cast<py::array>(), "lut");
  spec.out_unsigned = out_unsigned;
  std::vector<uint8_t> av = array_bytes(a, "a"), wv = array_bytes(w, "w");
  tpu::MatmulRun r;
  {
    py::gil_scoped_release nogil;
    std::unique_lock<std::mutex> lock;
    tpu::Device& dev = self.device(lock);
    r = tpu::run_matmul(dev, spec, av, wv, max_cycles);
  }
  py::array_t<uint8_t> out({static_cast<py::ssize_t>(spec.m), static_cast<py::ssize_t>(spec.n)});
  std::copy(r.out.begin(), r.out.end(), out.mutable_data());
  py::dict st = stats_dict(r.stats);
  st["useful_macs"] = r.useful_macs;
  st["utilization"] = r.mxu_utilization;
  st["program_instructions"] = r.instructions;
  st["plan"] = r.plan.describe();
  return py::make_tuple(out, st);
}

// a: m x k, w: k x n float32 (C-contiguous; shapes checked by the caller): the driver's
// run_float_matmul (driver/float_matmul.h), the same code as the C++ API.
py::tuple matmul_float(PyDevice& self, const py::array_t<float, py::array::c_style>& a,
                       const py::array_t<float, py::array::c_style>& w, bool bf16_transfer,
                       uint64_t max_cycles) {
  if (a.ndim() != 2 || w.ndim() != 2 || a.shape(1) != w.shape(0))
    throw std::invalid_argument("matmul: a and w must be 2-D with a.shape[1] == w.shape[0]");
  const auto m = static_cast<uint32_t>(a.shape(0)), k = static_cast<uint32_t>(a.shape(1)),
             n = static_cast<uint32_t>(w.shape(1));
  const std::vector<float> av(a.data(), a.data() + a.size()), wv(w.data(), w.data() + w.size());
  tpu::FloatMatmulRun r;
  {
    py::gil_scoped_release nogil;
    std::unique_lock<std::mutex> lock;
    tpu::Device& dev = self.device(lock);
    r = tpu::run_float_matmul(
        dev, av, wv, m, k, n,
        bf16_transfer ? tpu::FloatTransfer::Bfloat16 : tpu::FloatTransfer::Float32, max_cycles);
  }
  py::array_t<float> out({static_cast<py::ssize_t>(m), static_cast<py::ssize_t>(n)});
  std::copy(r.out.begin(), r.out.end(), out.mutable_data());
  py::dict st = stats_dict(r.stats);
  st["useful_macs"] = r.useful_macs;
  st["utilization"] = r.mxu_utilization;
  st["program_instructions"] = r.instructions;
  st["plan"] = r.plan.describe();
  return py::make_tuple(out, st);
}

// Runs `program` with each (addr, bytes) block of host memory registered and written; returns
// (status, error code name or None, pc, message, stats, [blocks after the run]). With `check`,
// a fault raises ChipError and a timeout TimeoutError instead (as Device::run).
py::tuple run_program(PyDevice& self, const py::bytes& program,
                      const std::vector<std::pair<uint32_t, py::array>>& blocks,
                      uint64_t max_cycles, bool check) {
  const std::string pb = program;
  const std::vector<tpu::Instruction> prog =
      tpu::decode_program(std::vector<uint8_t>(pb.begin(), pb.end()), "<program>");
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> mem;
  for (const auto& [addr, arr] : blocks) mem.emplace_back(addr, array_bytes(arr, "host_memory"));
  tpu::RunOutcome r;
  {
    py::gil_scoped_release nogil;
    std::unique_lock<std::mutex> lock;
    tpu::Device& dev = self.device(lock);
    dev.release_all();
    for (const auto& [addr, bytes] : mem) {
      dev.register_buffer(addr, static_cast<uint32_t>(bytes.size()), "host_memory");
      dev.write(addr, bytes);
    }
    r = dev.try_run(prog, max_cycles);
    for (auto& [addr, bytes] : mem) dev.read(addr, bytes.data(), bytes.size());
    dev.release_all();
    if (check && r.status == tpu::RunOutcome::Status::Error) {
      tpu::ChipError e(r.error, r.pc, r.message);
      e.set_stats(r.stats);
      throw e;
    }
    if (check && r.status == tpu::RunOutcome::Status::Timeout) {
      tpu::TimeoutError e(max_cycles, r.message);
      e.set_stats(r.stats);
      throw e;
    }
  }
  py::list after;
  for (const auto& [addr, bytes] : mem) {
    py::array_t<uint8_t> a(static_cast<py::ssize_t>(bytes.size()));
    std::copy(bytes.begin(), bytes.end(), a.mutable_data());
    after.append(a);
  }
  const bool err = r.status == tpu::RunOutcome::Status::Error;
  return py::make_tuple(
      tpu::to_string(r.status),
      err ? py::object(py::str(std::string(tpu::error_name(r.error)))) : py::object(py::none()),
      err ? py::object(py::int_(r.pc)) : py::object(py::none()), r.message, stats_dict(r.stats),
      after);
}

py::dict params_dict(PyDevice& self) {
  std::unique_lock<std::mutex> lock;
  const tpu::ChipParams& p = self.device(lock).params();
  py::dict d;
  d["n"] = p.N;
  d["ub_rows"] = p.ub_rows;
  d["acc_rows"] = p.acc_rows;
  d["wfifo_tiles"] = p.wfifo_tiles;
  d["qp_slots"] = p.qp_slots;
  d["axi_width"] = p.axi_width;
  d["vmem_rows"] = p.vmem_rows;
  d["vmem_port_bytes"] = p.vmem_port_bytes;  // 0: read_vmem / write_vmem share the AXI port
  d["training_ops"] = p.training_ops;
  d["ici_links"] = p.ici_links;
  return d;
}

}  // namespace

void bind_device(py::module_& m) {
  // module_local: every _chip_n<N> module has its own Device and Model types.
  py::class_<PyDevice>(m, "Device", py::module_local())
      .def(
          py::init([](const std::string& backend, uint32_t n, bool training, const std::string& vcd,
                      uint64_t vcd_from, uint64_t vcd_to, uint32_t mem_latency,
                      uint32_t mem_bandwidth, double backpressure, uint64_t seed) {
            tpu::RtlOptions o;
            o.vcd_file = vcd;
            o.vcd_from = vcd_from;
            o.vcd_to = vcd_to;
            o.mem_latency_cycles = mem_latency;
            o.mem_bytes_per_cycle = mem_bandwidth;
            o.backpressure = backpressure;
            o.seed = seed;
            return std::make_unique<PyDevice>(backend, n, training, o);
          }),
          py::arg("backend"), py::arg("n"), py::arg("training"), py::arg("vcd"),
          py::arg("vcd_from"), py::arg("vcd_to"), py::arg("mem_latency"), py::arg("mem_bandwidth"),
          py::arg("backpressure"), py::arg("seed"))
      .def("close", &PyDevice::close)
      .def_property_readonly("closed", &PyDevice::closed)
      .def("params", &params_dict)
      .def("backend",
           [](PyDevice& d) {
             std::unique_lock<std::mutex> lock;
             return std::string(d.device(lock).backend());
           })
      .def("matmul", &matmul)
      .def("matmul_float", &matmul_float)
      .def("run", &run_program)
      .def("inject_bus_error",
           [](PyDevice& d, uint64_t base, uint64_t size) {
             std::unique_lock<std::mutex> lock;
             d.rtl_device(lock, "inject_bus_error").inject_bus_error(base, size);
           })
      .def("clear_bus_errors", [](PyDevice& d) {
        std::unique_lock<std::mutex> lock;
        d.rtl_device(lock, "clear_bus_errors").clear_bus_errors();
      });
  m.def("assemble", [](const std::string& text) {
    const auto bytes = tpu::encode_program(tpu::assemble(text, "<text>"));
    return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });
  m.def("disassemble", [](const py::bytes& b) {
    const std::string s = b;
    return tpu::disassemble_program(std::vector<uint8_t>(s.begin(), s.end()), "<bytes>");
  });
  m.def("compiled_n", &tpu::RtlDevice::compiled_n);
  m.def("compiled_with_vcd", &tpu::RtlDevice::compiled_with_vcd);
  m.def("compiled_vmem_rows", &tpu::RtlDevice::compiled_vmem_rows);
}

}  // namespace tpu_py
