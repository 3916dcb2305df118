// SPDX-License-Identifier: Apache-2.0
// Small strict parsers for checking what the tools write: JSON (RFC 8259, into a tree) and XML
// well-formedness (nesting, quoting, entities; no DTD). Test support only: throws
// std::runtime_error("... at offset K") on the first problem.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mini {

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string text;                    // String; for Number the literal as written
  std::vector<Json> items;             // Array
  std::map<std::string, Json> fields;  // Object (a repeated key is an error)

  bool has(const std::string& k) const { return fields.count(k) != 0; }
  const Json& operator[](const std::string& k) const {
    auto it = fields.find(k);
    if (it == fields.end()) throw std::runtime_error("JSON: no key '" + k + "'");
    return it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse() {
    Json v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* w) {
    const std::string word(w);
    if (s_.compare(i_, word.size(), word) == 0) {
      i_ += word.size();
      return true;
    }
    return false;
  }
  std::string str() {
    expect('"');
    std::string o;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return o;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        o += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          o += '"';
          break;
        case '\\':
          o += '\\';
          break;
        case '/':
          o += '/';
          break;
        case 'b':
          o += '\b';
          break;
        case 'f':
          o += '\f';
          break;
        case 'n':
          o += '\n';
          break;
        case 'r':
          o += '\r';
          break;
        case 't':
          o += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          for (int k = 0; k < 4; ++k)
            if (!std::isxdigit(static_cast<unsigned char>(s_[i_ + size_t(k)])))
              fail("bad \\u escape");
          const long cp = std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          o += cp < 0x80 ? char(cp) : '?';
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
  Json value() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type = Json::Type::Object;
      if (eat('}')) return v;
      do {
        ws();
        const std::string k = str();
        expect(':');
        if (v.fields.count(k)) fail("repeated key '" + k + "'");
        v.fields[k] = value();
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = Json::Type::Array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = Json::Type::String;
      v.text = str();
    } else if (literal("true")) {
      v.type = Json::Type::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = Json::Type::Bool;
    } else if (literal("null")) {
      v.type = Json::Type::Null;
    } else {
      // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
      const size_t b = i_;
      auto digits = [&] {
        const size_t d = i_;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ == d) fail("expected a digit");
      };
      if (s_[i_] == '-') ++i_;
      if (i_ < s_.size() && s_[i_] == '0')
        ++i_;
      else
        digits();
      if (i_ < s_.size() && s_[i_] == '.') {
        ++i_;
        digits();
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
        digits();
      }
      v.type = Json::Type::Number;
      v.text = s_.substr(b, i_ - b);
      v.number = std::strtod(v.text.c_str(), nullptr);
    }
    return v;
  }

  const std::string& s_;
  size_t i_ = 0;
};

inline Json parse_json(const std::string& s) { return JsonParser(s).parse(); }

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
