// SPDX-License-Identifier: Apache-2.0
// Verilator's SystemC port types, chosen by bit width, and byte (de)serialisation for them.
//
// Verilator (without --pins-* options) maps a port of width W to
//   W == 1       -> bool
//   2  ..  32    -> uint32_t
//   33 ..  64    -> uint64_t
//   > 64         -> sc_dt::sc_bv<W>
// Testbench signals must use exactly these types or binding fails at elaboration, so every
// pin-level model here derives its types from PinType<W> rather than spelling them out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <systemc>
#include <type_traits>

namespace tpu::sim {

template <unsigned W>
struct PinType {
  static_assert(W >= 1, "a port has at least one bit");
  using type = std::conditional_t<
      W == 1, bool,
      std::conditional_t<(W <= 32), uint32_t,
                         std::conditional_t<(W <= 64), uint64_t, sc_dt::sc_bv<W>>>>;
};
template <unsigned W>
using PinType_t = typename PinType<W>::type;

// Little-endian: byte 0 of `bytes` is bits 7:0 of the pin value (AXI byte lanes).
inline void pin_to_bytes(uint32_t v, uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void pin_to_bytes(uint64_t v, uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
}
template <int W>
void pin_to_bytes(const sc_dt::sc_bv<W>& v, uint8_t* bytes, size_t n) {
  // get_word() hands out 32-bit chunks: far cheaper than per-bit access.
  for (size_t i = 0; i < n; i += 4) {
    const uint32_t word = static_cast<uint32_t>(v.get_word(static_cast<int>(i / 4)));
    for (size_t b = 0; b < 4 && i + b < n; ++b)
      bytes[i + b] = static_cast<uint8_t>(word >> (8 * b));
  }
}

inline void pin_from_bytes(const uint8_t* bytes, size_t n, uint32_t& v) {
  v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(bytes[i]) << (8 * i);
}
inline void pin_from_bytes(const uint8_t* bytes, size_t n, uint64_t& v) {
  v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes[i]) << (8 * i);
}
template <int W>
void pin_from_bytes(const uint8_t* bytes, size_t n, sc_dt::sc_bv<W>& v) {
  for (size_t i = 0; i < n; i += 4) {
    uint32_t word = 0;
    for (size_t b = 0; b < 4 && i + b < n; ++b)
      word |= static_cast<uint32_t>(bytes[i + b]) << (8 * b);
    v.set_word(static_cast<int>(i / 4), word);
  }
}

}  // namespace tpu::sim
