// SPDX-License-Identifier: Apache-2.0
// Field access on the flat vector ports of Verilated blocks (element i in bits [w*i +: w]):
// Verilator gives a port as an integer (up to 64 bits) or a VlWide.
#pragma once

#include <cstdint>
#include <type_traits>

template <typename T>
void set_field(T& port, unsigned lsb, unsigned width, uint32_t value) {
  for (unsigned b = 0; b < width; ++b) {
    unsigned bit = lsb + b;
    bool v = (value >> b) & 1u;
    if constexpr (std::is_integral_v<T>) {
      port = v ? T(port | (T(1) << bit)) : T(port & ~(T(1) << bit));
    } else {
      if (v)
        port[bit / 32] |= (1u << (bit % 32));
      else
        port[bit / 32] &= ~(1u << (bit % 32));
    }
  }
}
template <typename T>
uint32_t get_field(const T& port, unsigned lsb, unsigned width) {
  uint32_t r = 0;
  for (unsigned b = 0; b < width; ++b) {
    unsigned bit = lsb + b;
    uint32_t v;
    if constexpr (std::is_integral_v<T>)
      v = uint32_t((uint64_t(port) >> bit) & 1u);
    else
      v = (port[bit / 32] >> (bit % 32)) & 1u;
    r |= v << b;
  }
  return r;
}

// 32-bit word x of a wide (VlWide) or narrow port, as set_field / get_field but a word at once
// (the S x N-lane data ports are thousands of bits).
template <typename T>
void set_word(T& port, uint32_t x, uint32_t value) {
  if constexpr (std::is_integral_v<T>) {
    set_field(port, 32 * x, 32, value);
  } else {
    port[x] = value;
  }
}
template <typename T>
uint32_t get_word(const T& port, uint32_t x) {
  if constexpr (std::is_integral_v<T>) {
    return get_field(port, 32 * x, 32);
  } else {
    return port[x];
  }
}
