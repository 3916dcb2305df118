// SPDX-License-Identifier: Apache-2.0
#include "layout.h"

#include <stdexcept>
#include <string>

namespace tpu::train {

uint32_t VmemArena::rows(uint32_t count) {
  if (count == 0 || uint64_t{next_} + count > end_) {
    throw std::invalid_argument("VmemArena: " + std::to_string(count) + " rows from row " +
                                std::to_string(next_) +
                                " do not fit VMEM (VmemRows = " + std::to_string(end_) + ")");
  }
  const uint32_t first = next_;
  next_ += count;
  return first;
}

VMat VmemArena::matrix(uint32_t r, uint32_t c) {
  VMat m{0, r, c, round_up(r, n_)};
  m.base = rows(m.span(n_));
  return m;
}

VMat VmemArena::row_vector(uint32_t c) {
  VMat m{0, 1, c, 1};
  m.base = rows(m.span(n_));
  return m;
}

std::vector<float> pack(const VMat& m, uint32_t n, const std::vector<float>& values) {
  if (values.size() != size_t{m.rows} * m.cols) {
    throw std::invalid_argument("pack: expected " + std::to_string(m.rows * m.cols) +
                                " values, got " + std::to_string(values.size()));
  }
  std::vector<float> image(size_t{m.span(n)} * n, 0.0f);
  for (uint32_t r = 0; r < m.rows; ++r) {
    for (uint32_t c = 0; c < m.cols; ++c) {
      image[(size_t{c / n} * m.pitch + r) * n + c % n] = values[size_t{r} * m.cols + c];
    }
  }
  return image;
}

std::vector<float> unpack(const VMat& m, uint32_t n, const std::vector<float>& image) {
  if (image.size() != size_t{m.span(n)} * n) {
    throw std::invalid_argument("unpack: image has " + std::to_string(image.size()) +
                                " lanes, expected " + std::to_string(m.span(n) * n));
  }
  std::vector<float> values(size_t{m.rows} * m.cols);
  for (uint32_t r = 0; r < m.rows; ++r) {
    for (uint32_t c = 0; c < m.cols; ++c) {
      values[size_t{r} * m.cols + c] = image[(size_t{c / n} * m.pitch + r) * n + c % n];
    }
  }
  return values;
}

void load(ProgramBuilder& pb, const VMat& m, uint32_t host_addr) {
  pb.read_vmem(m.base, m.span(pb.params().N), host_addr);
}

void store(ProgramBuilder& pb, const VMat& m, uint32_t host_addr) {
  pb.write_vmem(m.base, m.span(pb.params().N), host_addr);
}

void clear_padding_rows(ProgramBuilder& pb, const VMat& m) {
  if (m.pitch == m.rows) return;
  Vector v;
  v.func = static_cast<uint8_t>(VecFunc::And);
  v.bmode = BMode::Imm;
  v.dst = static_cast<uint16_t>(m.base + m.rows);
  v.a = v.dst;
  v.inner = static_cast<uint8_t>(m.pitch - m.rows);  // < N <= 256 for VmemArena::matrix
  v.outer = static_cast<uint16_t>(m.blocks(pb.params().N));
  v.a_inner_stride = 1;
  v.a_outer_stride = static_cast<uint16_t>(m.pitch);
  v.dst_outer_stride = static_cast<uint16_t>(m.pitch);
  v.b = 0;
  pb.vector(v);
}

}  // namespace tpu::train
