// SPDX-License-Identifier: Apache-2.0
#include "json_text.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tpu {

std::string json_quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_number(double v, int digits) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

nlohmann::ordered_json parse_json_text(const std::string& text, const std::string& where,
                                       const std::string& what_expected) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 5: WHAT"
    std::string what = e.what();
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw std::runtime_error(where + ": JSON error at byte " + std::to_string(e.byte) + ": " +
                             what + (what_expected.empty() ? "" : " (" + what_expected + ")"));
  }
}

}  // namespace tpu
