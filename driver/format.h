// printf into a std::string, for error messages and disassembly (never on a hot path).
// Internal to the driver library: not installed.
#pragma once

#include <cstdio>
#include <string>

namespace tpu::detail {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace tpu::detail
