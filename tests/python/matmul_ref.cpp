// SPDX-License-Identifier: Apache-2.0
// The C++ side of tests/python/test_matmul.py: runs one tiled matmul with the driver's C++ API
// (tiled_ops.h run_matmul on open_device) and prints what it returned as JSON, so the test can
// check that tpu_rtl.Device.matmul gives the same bytes, cycles and counters. Also prints the
// driver's plain C++ reference (reference_matmul). No files: the operands come on stdin as
// whitespace-separated integers:
//   backend m k n a_unsigned w_unsigned out_unsigned func zero_point clamp_lo clamp_hi
//   nbias bias... nmult mult... nshift shift... a[m*k]... w[k*n]... [lut[256]... if func is lut]
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device_rtl.h"
#include "tiled_ops.h"

namespace {

template <typename T>
std::vector<T> read_list(std::istream& in, size_t count) {
  std::vector<T> v(count);
  for (auto& x : v) {
    long long value = 0;
    in >> value;
    x = static_cast<T>(value);
  }
  return v;
}

}  // namespace

int main() {
  std::string backend, func;
  tpu::MatmulSpec spec;
  int a_uns = 0, w_uns = 0, out_uns = 0;
  size_t count = 0;
  std::cin >> backend >> spec.m >> spec.k >> spec.n >> a_uns >> w_uns >> out_uns >> func >>
      spec.zero_point >> spec.clamp_lo >> spec.clamp_hi;
  spec.a_unsigned = a_uns != 0;
  spec.w_unsigned = w_uns != 0;
  spec.out_unsigned = out_uns != 0;
  for (auto f :
       {tpu::ActFunc::Identity, tpu::ActFunc::Relu, tpu::ActFunc::Clamp, tpu::ActFunc::Lut})
    if (tpu::act_func_name(f) == func) spec.func = f;
  std::cin >> count;
  spec.bias = read_list<int32_t>(std::cin, count);
  std::cin >> count;
  spec.mult = read_list<int32_t>(std::cin, count);
  std::cin >> count;
  spec.shift = read_list<uint8_t>(std::cin, count);
  const auto a = read_list<uint8_t>(std::cin, size_t{spec.m} * spec.k);
  const auto w = read_list<uint8_t>(std::cin, size_t{spec.k} * spec.n);
  if (spec.func == tpu::ActFunc::Lut) spec.lut = read_list<uint8_t>(std::cin, 256);
  if (!std::cin) {
    std::cerr << "matmul_ref: malformed input\n";
    return 2;
  }
  auto dev = tpu::open_device(backend);
  const tpu::MatmulRun r = tpu::run_matmul(*dev, spec, a, w);
  nlohmann::json j;
  j["out"] = r.out;
  j["reference"] = tpu::reference_matmul(spec, a, w);
  j["cycles"] = r.stats.cycles;
  j["utilization"] = r.mxu_utilization;
  j["instructions"] = r.instructions;
  j["plan"] = r.plan.describe();
  for (int i = 0; i < tpu::PerfCounters::kCount; ++i)
    j["counters"][tpu::PerfCounters::name(i)] = r.stats.counters.get(i);
  std::cout << j.dump() << "\n";
  return 0;
}
