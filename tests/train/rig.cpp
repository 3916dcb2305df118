// SPDX-License-Identifier: Apache-2.0
#include "rig.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tpu::train::test {

namespace {

// Buffer sizes rounded up to alloc()'s 64-byte alignment, so consecutive buffers touch and
// share one DMA window (the chip has 8).
uint32_t padded(size_t bytes) { return static_cast<uint32_t>((bytes + 63) / 64 * 64); }

}  // namespace

ChipParams Rig::params(uint32_t n, uint32_t vmem_rows) {
  ChipParams p = ChipParams::training(n);
  p.vmem_rows = vmem_rows;
  return p;
}

uint32_t Rig::host(const VMat& m, const std::vector<uint32_t>& values) {
  std::vector<float> f(values.size());
  std::memcpy(f.data(), values.data(), values.size() * 4);
  const std::vector<float> image = pack(m, n(), f);
  const HostBuffer b = dev_.alloc(padded(image.size() * 4), "t" + std::to_string(buffers_++));
  dev_.write(b.addr, image.data(), image.size() * 4);
  return b.addr;
}

uint32_t Rig::put(const VMat& m, const std::vector<uint32_t>& values) {
  const uint32_t addr = host(m, values);
  load(pb_, m, addr);
  return addr;
}

uint32_t Rig::host_rows(const std::vector<uint32_t>& lanes) {
  const HostBuffer b = dev_.alloc(padded(lanes.size() * 4), "r" + std::to_string(buffers_++));
  dev_.write(b.addr, lanes.data(), lanes.size() * 4);
  return b.addr;
}

void Rig::put_rows(uint32_t row, const std::vector<uint32_t>& lanes) {
  pb_.read_vmem(row, static_cast<uint32_t>(lanes.size() / n()), host_rows(lanes));
}

void Rig::want(const VMat& m) {
  const HostBuffer b =
      dev_.alloc(padded(size_t{m.span(n())} * n() * 4), "o" + std::to_string(buffers_++));
  store(pb_, m, b.addr);
  outputs_.push_back({m, b.addr});
}

void Rig::run() { dev_.run(pb_.finish()); }

std::vector<uint32_t> Rig::got_image(const VMat& m) {
  for (const Output& o : outputs_) {
    if (o.m.base == m.base && o.m.span(n()) == m.span(n())) {
      std::vector<uint32_t> lanes(size_t{m.span(n())} * n());
      dev_.read(o.addr, lanes.data(), lanes.size() * 4);
      return lanes;
    }
  }
  throw std::logic_error("Rig::got: tensor was not stored (want())");
}

std::vector<uint32_t> Rig::got(const VMat& m) {
  const std::vector<uint32_t> lanes = got_image(m);
  std::vector<float> f(lanes.size());
  std::memcpy(f.data(), lanes.data(), lanes.size() * 4);
  const std::vector<float> values = unpack(m, n(), f);
  std::vector<uint32_t> out(values.size());
  std::memcpy(out.data(), values.data(), values.size() * 4);
  return out;
}

std::vector<uint32_t> random_values(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<uint32_t> v(count);
  for (uint32_t& x : v) x = ref::bits(dist(rng));
  return v;
}

ref::Mat random_mat(uint32_t rows, uint32_t cols, float scale, uint32_t seed) {
  return ref::Mat{rows, cols, random_values(size_t{rows} * cols, scale, seed)};
}

void expect_bits(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: chip 0x" << std::hex << got[i] << " ("
                    << ref::value(got[i]) << "), reference 0x" << want[i] << " ("
                    << ref::value(want[i]) << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

ref::Tensor random_tensor(uint32_t b, uint32_t c, uint32_t h, uint32_t w, float scale,
                          uint32_t seed) {
  ref::Tensor t = ref::tensor(b, c, h, w);
  t.v = random_values(t.v.size(), scale, seed);
  return t;
}

// Image layout (docs/training.md): row (y*w + x)*b + i, column = channel.
std::vector<uint32_t> to_image(const ref::Tensor& t) {
  std::vector<uint32_t> v(t.v.size());
  for (uint32_t i = 0; i < t.b; ++i)
    for (uint32_t c = 0; c < t.c; ++c)
      for (uint32_t y = 0; y < t.h; ++y)
        for (uint32_t x = 0; x < t.w; ++x)
          v[((y * t.w + x) * t.b + i) * t.c + c] = t.at(i, c, y, x);
  return v;
}

}  // namespace tpu::train::test
