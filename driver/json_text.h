// SPDX-License-Identifier: Apache-2.0
// JSON text through nlohmann-json, the project's one JSON library: documents built as
// nlohmann::ordered_json (keys in insertion order) printed in the layout of tpusim's JSON
// output, their string literals and numbers, and reading JSON with errors that name the input.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tpu {

// `s` as a JSON string literal, by nlohmann-json's serializer: quotes, backslashes and control
// characters escaped (\n \t \r \b \f, the others \u00xx), UTF-8 kept as it is. A string that
// is not UTF-8 (a file name in another encoding) prints in ASCII: its stray bytes as \ufffd, its
// other non-ASCII characters as \u escapes.
std::string json_quote(const std::string& s);

// A number with `digits` significant digits ("%.<digits>g": 6 for figures people read, 9 for
// float32 values, 17 to read a double back bit for bit); "null" for NaN and infinity.
std::string json_number(double v, int digits = 6);

// `v` on one line: {"k": v, "k2": [1, 2]}; strings by json_quote, floating-point values by
// json_number(v, digits), integers, true, false and null as they are.
std::string json_one_line(const nlohmann::ordered_json& v, int digits = 6);

// The members of `object` one per line, `indent` "key": value (json_one_line), joined by ",\n":
// the lines of a document's object, for documents that nest multi-line objects.
std::string json_members(const nlohmann::ordered_json& object, const std::string& indent,
                         int digits = 6);

// Where json_document closes an array of objects (one element per line).
enum class JsonRows {
  Block,        // "]" on a line of its own; an empty array "[]"
  Compact,      // "]" right after the last element; an empty array "[]" (run-cnn, run-onnx shards)
  BlockAlways,  // as Block, and an empty array too opens and closes on two lines (topology shards)
};

// An object as tpusim prints its JSON documents: one key per line (indented by two spaces); an
// array of objects one element per line (by four, closed as `rows` says); every other value on
// one line (json_one_line). No newline after the closing brace.
std::string json_document(const nlohmann::ordered_json& object, int digits = 6,
                          JsonRows rows = JsonRows::Block);

// `text` parsed as JSON (objects keep their key order); throws std::runtime_error("WHERE: JSON
// error at byte N: WHAT")
// (`what_expected` appended in parentheses if given).
nlohmann::ordered_json parse_json_text(const std::string& text, const std::string& where,
                                       const std::string& what_expected = "");

}  // namespace tpu
