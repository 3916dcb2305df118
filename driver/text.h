// SPDX-License-Identifier: Apache-2.0
// Small text helpers shared by the driver's sources (internal: not installed).
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

namespace tpu::detail {

// printf into a std::string, for error messages and disassembly (never on a hot path).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// Decimal or 0x hex into a uint64_t; nullopt if malformed or above 2^64 - 1 (assembler
// operands, host image addresses and sizes).
inline std::optional<uint64_t> parse_number(std::string_view s) {
  uint64_t base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    uint64_t d;
    if (c >= '0' && c <= '9') {
      d = uint64_t(c - '0');
    } else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c))) {
      d = uint64_t(std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    } else {
      return std::nullopt;
    }
    if (v > (~uint64_t{0} - d) / base) return std::nullopt;  // would overflow
    v = v * base + d;
  }
  return v;
}

// Echoed user text in an error message, cut to a readable length:
// "abcdefgh...wxyz (200000 characters)" (assembler tokens, host image tokens).
inline std::string echo(std::string_view t) {
  constexpr size_t kMax = 48;
  if (t.size() <= kMax) return std::string(t);
  return std::string(t.substr(0, 32)) + "..." + std::string(t.substr(t.size() - 8)) + " (" +
         std::to_string(t.size()) + " characters)";
}

// Reads the rest of `in` into `out`, at most `limit` bytes: false if there is more (a huge file
// or an endless device such as /dev/zero, found without reading it all).
inline bool read_at_most(std::istream& in, uint64_t limit, std::string* out) {
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out->append(buf, static_cast<size_t>(in.gcount()));
    if (out->size() > limit) return false;
  }
  return true;
}

}  // namespace tpu::detail
