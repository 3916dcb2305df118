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
  // A Latin-1 byte, a truncated sequence, an encoded surrogate: U+FFFD (EF BF BD) each.
  EXPECT_EQ(tpu::json_quote("a\xff"
                            "b"),
            "\"a\xef\xbf\xbd"
            "b\"");
  EXPECT_EQ(tpu::json_quote("\xc3("), "\"\xef\xbf\xbd(\"");
  const std::string quoted = tpu::json_quote("x\xed\xa0\x80y");
  EXPECT_EQ(quoted.find('\xed'), std::string::npos) << quoted;
  // Whatever goes in, what comes out reads back as JSON.
  for (const std::string s :
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
