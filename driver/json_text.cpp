// SPDX-License-Identifier: Apache-2.0
#include "json_text.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tpu {

std::string json_quote(const std::string& s) {
  try {
    return nlohmann::json(s).dump();  // UTF-8 as it is; throws on bytes that are not UTF-8
  } catch (const nlohmann::json::type_error&) {
    // Not UTF-8 (a file name in another encoding): ASCII only, each stray byte \ufffd.
    return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  }
}

std::string json_number(double v, int digits) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

std::string json_one_line(const nlohmann::ordered_json& v, int digits) {
  if (v.is_string()) return json_quote(v.get<std::string>());
  if (v.is_number_float()) return json_number(v.get<double>(), digits);
  if (!v.is_structured()) return v.dump();  // integers, true, false, null
  std::string out;
  for (const auto& m : v.items()) {
    out += out.empty() ? "" : ", ";
    if (v.is_object()) out += json_quote(m.key()) + ": ";
    out += json_one_line(m.value(), digits);
  }
  return v.is_object() ? "{" + out + "}" : "[" + out + "]";
}

std::string json_members(const nlohmann::ordered_json& object, const std::string& indent,
                         int digits) {
  std::string out;
  for (const auto& m : object.items()) {
    out += (out.empty() ? "" : ",\n") + indent + json_quote(m.key()) + ": ";
    out += json_one_line(m.value(), digits);
  }
  return out;
}

namespace {
bool is_rows(const nlohmann::ordered_json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& e : v)
    if (!e.is_object()) return false;
  return true;
}
}  // namespace

std::string json_document(const nlohmann::ordered_json& object, int digits, JsonRows rows) {
  if (object.empty()) return "{}";
  std::string out = "{";
  for (const auto& m : object.items()) {
    out += out.size() > 1 ? ",\n  " : "\n  ";
    out += json_quote(m.key()) + ": ";
    const bool empty_block =
        rows == JsonRows::BlockAlways && m.value().is_array() && m.value().empty();
    if (!is_rows(m.value()) && !empty_block) {
      out += json_one_line(m.value(), digits);
      continue;
    }
    std::string lines;
    for (const auto& e : m.value())
      lines += (lines.empty() ? "\n    " : ",\n    ") + json_one_line(e, digits);
    out += "[" + lines + (rows == JsonRows::Compact ? "]" : "\n  ]");
  }
  return out + "\n}";
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
