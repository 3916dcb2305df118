// SPDX-License-Identifier: Apache-2.0
// Text in the SVG and HTML the tools write (driver/cnn/report.h, tools/tpusim/svg_plot.h): the
// one XML escaper.
#pragma once

#include <string>

namespace tpu {

// `s` as XML character data or an attribute value: & < > " ' as entities; the control
// characters XML 1.0 does not allow (below 0x20 but tab and newline) dropped; UTF-8 kept.
inline std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') o += c;
    }
  }
  return o;
}

}  // namespace tpu
