// SPDX-License-Identifier: Apache-2.0
// json_text.h: the JSON string literals, numbers and parse errors of every JSON tpusim and the
// CNN stack write and read (nlohmann-json underneath).
#include "json_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace {

TEST(JsonText, QuoteEscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(tpu::json_quote("plain"), "\"plain\"");
  EXPECT_EQ(tpu::json_quote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(tpu::json_quote("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(tpu::json_quote(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\x7f\"");
  EXPECT_EQ(tpu::json_quote(std::string("a\0b", 3)), "\"a\\u0000b\"");
}

TEST(JsonText, QuoteKeepsUtf8AndReplacesOtherBytes) {
  EXPECT_EQ(tpu::json_quote("n\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82"),
            "\"n\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\"");
  // Not UTF-8 (a Latin-1 byte, a truncated sequence, an encoded surrogate): ASCII with \ufffd.
  EXPECT_EQ(tpu::json_quote("a\xff"
                            "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(tpu::json_quote("\xc3("), "\"\\ufffd(\"");
  EXPECT_EQ(tpu::json_quote("\xc3\xa9\xff"), "\"\\u00e9\\ufffd\"");
  const std::string quoted = tpu::json_quote("x\xed\xa0\x80y");
  EXPECT_EQ(quoted.find_first_not_of("\"xy\\ufd"), std::string::npos) << quoted;
  // Whatever goes in, what comes out reads back as JSON.
  for (const std::string& s :
       {std::string("\xff\xfe\x01\"\\"), std::string("\xe2\x82"), std::string()})
    EXPECT_NO_THROW(nlohmann::json::parse(tpu::json_quote(s))) << s;
  EXPECT_EQ(nlohmann::json::parse(tpu::json_quote("t\xc3\xa9\x01\t\"\\")).get<std::string>(),
            "t\xc3\xa9\x01\t\"\\");
}

TEST(JsonText, NumbersWithTheirDigitsAndNullForNonFinite) {
  EXPECT_EQ(tpu::json_number(2.0), "2");
  EXPECT_EQ(tpu::json_number(1.0 / 3), "0.333333");
  EXPECT_EQ(tpu::json_number(1234567.0), "1.23457e+06");
  EXPECT_EQ(tpu::json_number(1.0 / 3, 9), "0.333333333");
  EXPECT_EQ(tpu::json_number(0.1, 17), "0.10000000000000001");
  for (double v : {0.1, 1.0 / 3, 6.02214076e23, 5e-324, -0.0})
    EXPECT_EQ(std::strtod(tpu::json_number(v, 17).c_str(), nullptr),
              v);  // 17 digits read back bit for bit
  EXPECT_EQ(tpu::json_number(std::nan("")), "null");
  EXPECT_EQ(tpu::json_number(std::numeric_limits<double>::infinity(), 17), "null");
}

TEST(JsonText, DocumentLayouts) {
  nlohmann::ordered_json d = {{"name", "x"},
                              {"ratio", 1.0 / 3},
                              {"n", 3},
                              {"none", nullptr},
                              {"inner", {{"a", 1}, {"b", {1, 2}}}},
                              {"rows", {{{"k", 1}}, {{"k", 2.5}}}},
                              {"empty", nlohmann::ordered_json::array()}};
  EXPECT_EQ(tpu::json_document(d),
            "{\n  \"name\": \"x\",\n  \"ratio\": 0.333333,\n  \"n\": 3,\n  \"none\": null,\n"
            "  \"inner\": {\"a\": 1, \"b\": [1, 2]},\n  \"rows\": [\n    {\"k\": 1},\n    {\"k\": "
            "2.5}\n  ],\n"
            "  \"empty\": []\n}");
  const std::string compact = tpu::json_document(d, 17, tpu::JsonRows::Compact);
  EXPECT_NE(compact.find("\"ratio\": 0.33333333333333331,"), std::string::npos) << compact;
  EXPECT_NE(compact.find("[\n    {\"k\": 1},\n    {\"k\": 2.5}],\n  \"empty\": []\n}"),
            std::string::npos)
      << compact;
  const std::string always = tpu::json_document(d, 6, tpu::JsonRows::BlockAlways);
  EXPECT_NE(always.find("\"empty\": [\n  ]\n}"), std::string::npos) << always;
  EXPECT_EQ(tpu::json_document(nlohmann::ordered_json::object()), "{}");
  EXPECT_EQ(tpu::json_members({{"a", 0.5}, {"b", "q\""}}, "    ", 9),
            "    \"a\": 0.5,\n    \"b\": \"q\\\"\"");
  // NaN and infinity print as null (nlohmann holds them; JSON has no such numbers).
  EXPECT_EQ(tpu::json_one_line({{"u", std::nan("")}}), "{\"u\": null}");
}

TEST(JsonText, ParseKeepsKeyOrderAndNamesTheInputOnErrors) {
  const auto j = tpu::parse_json_text("{\"b\": 1, \"a\": [2.5, \"x\"]}", "f.json");
  EXPECT_EQ(j.begin().key(), "b");
  EXPECT_EQ(j.at("a").at(0).get<double>(), 2.5);
  try {
    tpu::parse_json_text("{\"b\": 1,", "cut.json", "expected a shard");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cut.json: JSON error at byte 9: ", 0), 0u) << what;
    EXPECT_NE(what.find("(expected a shard)"), std::string::npos) << what;
  }
  EXPECT_THROW(tpu::parse_json_text("[1] x", "t.json"), std::runtime_error);
  EXPECT_THROW(tpu::parse_json_text("", "t.json"), std::runtime_error);
}

}  // namespace
