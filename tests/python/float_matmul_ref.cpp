// SPDX-License-Identifier: Apache-2.0
// The C++ side of tests/python/test_float_matmul.py: runs one float32 matmul with the driver's
// C++ API (float_matmul.h run_float_matmul) on the training chip of this build's default N (rtl)
// or on the golden model of ChipParams::training(N) (model, as tpu_rtl.Device("model",
// training=True)), and prints what it returned as JSON, so the test can check that
// tpu_rtl.Device.matmul gives the same bits, cycles and counters. No files: the operands come on
// stdin as whitespace-separated words:
//   backend m k n transfer(float32|bfloat16) a[m*k]... w[k*n]...   (fp32 bit patterns, decimal)
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device_model.h"
#include "device_rtl.h"
#include "float_matmul.h"

namespace {

std::vector<float> read_floats(std::istream& in, size_t count) {
  std::vector<float> v(count);
  for (auto& x : v) {
    uint32_t bits = 0;
    in >> bits;
    std::memcpy(&x, &bits, 4);
  }
  return v;
}

}  // namespace

int main() {
  std::string backend, transfer;
  uint32_t m = 0, k = 0, n = 0;
  std::cin >> backend >> m >> k >> n >> transfer;
  const auto a = read_floats(std::cin, size_t{m} * k);
  const auto w = read_floats(std::cin, size_t{k} * n);
  if (!std::cin || (transfer != "float32" && transfer != "bfloat16") ||
      (backend != "rtl" && backend != "model")) {
    std::cerr << "float_matmul_ref: malformed input\n";
    return 2;
  }
  std::unique_ptr<tpu::Device> dev;
  if (backend == "rtl")
    dev = std::make_unique<tpu::RtlDevice>();
  else
    dev =
        std::make_unique<tpu::ModelDevice>(tpu::ChipParams::training(tpu::RtlDevice::compiled_n()));
  const tpu::FloatMatmulRun r = tpu::run_float_matmul(
      *dev, a, w, m, k, n,
      transfer == "bfloat16" ? tpu::FloatTransfer::Bfloat16 : tpu::FloatTransfer::Float32);
  nlohmann::json j;
  std::vector<uint32_t> out(r.out.size());
  std::memcpy(out.data(), r.out.data(), out.size() * 4);
  j["out"] = out;
  j["cycles"] = r.stats.cycles;
  j["cycles_estimated"] = r.stats.cycles_estimated;
  j["utilization"] = r.mxu_utilization;
  j["instructions"] = r.instructions;
  j["plan"] = r.plan.describe();
  for (int i = 0; i < tpu::PerfCounters::kCount; ++i)
    j["counters"][tpu::PerfCounters::name(i)] = r.stats.counters.get(i);
  std::cout << j.dump() << "\n";
  return 0;
}
