// SPDX-License-Identifier: Apache-2.0
// A small strict parser for checking what the tools write: XML well-formedness (nesting,
// quoting, entities; no DTD). Test support only: throws std::runtime_error("... at offset K") on
// the first problem. (JSON is read with nlohmann-json, the project's JSON library.)
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mini {

// Checks that `s` is a well-formed XML document (optional <?xml ...?> prolog and comments, one
// root element, every tag closed in order, attribute values quoted, attribute names unique per
// element, only the five predefined entities and numeric references). Returns the number of
// elements with each name.
inline std::map<std::string, int> check_xml(const std::string& s) {
  size_t i = 0;
  auto fail = [&](const std::string& what) -> void {
    throw std::runtime_error("XML: " + what + " at offset " + std::to_string(i));
  };
  auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' ||
           c == '.';
  };
  auto check_text = [&](size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) {
      if (s[k] == '<') fail("'<' in text");
      if (s[k] != '&') continue;
      const size_t semi = s.find(';', k);
      if (semi == std::string::npos || semi > e) fail("unterminated entity");
      const std::string ent = s.substr(k + 1, semi - k - 1);
      if (!(ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" ||
            (ent.size() > 1 && ent[0] == '#')))
        fail("unknown entity &" + ent + ";");
    }
  };
  std::vector<std::string> open;
  std::map<std::string, int> count;
  bool root_seen = false;
  while (i < s.size()) {
    const size_t lt = s.find('<', i);
    if (lt == std::string::npos) {
      if (!open.empty()) fail("document ends inside <" + open.back() + ">");
      for (size_t k = i; k < s.size(); ++k)
        if (!std::isspace(static_cast<unsigned char>(s[k]))) fail("text after the root element");
      break;
    }
    if (open.empty()) {
      for (size_t k = i; k < lt; ++k)
        if (!std::isspace(static_cast<unsigned char>(s[k]))) fail("text outside the root element");
    } else {
      check_text(i, lt);
    }
    i = lt;
    if (s.compare(i, 4, "<!--") == 0) {
      const size_t e = s.find("-->", i + 4);
      if (e == std::string::npos) fail("unterminated comment");
      i = e + 3;
      continue;
    }
    if (s.compare(i, 2, "<?") == 0) {
      const size_t e = s.find("?>", i + 2);
      if (e == std::string::npos) fail("unterminated processing instruction");
      i = e + 2;
      continue;
    }
    const bool closing = s.compare(i, 2, "</") == 0;
    i += closing ? 2 : 1;
    const size_t nb = i;
    while (i < s.size() && is_name(s[i])) ++i;
    const std::string name = s.substr(nb, i - nb);
    if (name.empty()) fail("tag without a name");
    if (closing) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size() || s[i] != '>') fail("bad closing tag </" + name);
      ++i;
      if (open.empty() || open.back() != name)
        fail("</" + name + "> closes " +
             (open.empty() ? std::string("nothing") : "<" + open.back() + ">"));
      open.pop_back();
      continue;
    }
    if (open.empty() && root_seen) fail("a second root element <" + name + ">");
    root_seen = true;
    ++count[name];
    std::vector<std::string> attrs;
    while (true) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) fail("unterminated tag <" + name);
      if (s[i] == '>') {
        ++i;
        open.push_back(name);
        break;
      }
      if (s.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      const size_t ab = i;
      while (i < s.size() && is_name(s[i])) ++i;
      const std::string an = s.substr(ab, i - ab);
      if (an.empty()) fail("bad attribute in <" + name + ">");
      for (const auto& a : attrs)
        if (a == an) fail("repeated attribute " + an + " in <" + name + ">");
      attrs.push_back(an);
      if (i >= s.size() || s[i] != '=') fail("attribute " + an + " without a value");
      ++i;
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) fail("unquoted attribute " + an);
      const char q = s[i++];
      const size_t ve = s.find(q, i);
      if (ve == std::string::npos) fail("unterminated attribute " + an);
      check_text(i, ve);
      i = ve + 1;
    }
  }
  if (!root_seen) fail("no root element");
  return count;
}

}  // namespace mini
