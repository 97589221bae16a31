// The strict JSON reader: what it refuses, and that it refuses deep nesting without
// recursing.
#include "common/strict_json.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/utf8.h"

namespace sluice {
namespace {

std::string Detail(std::string_view text) {
  auto r = ParseStrictJson(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kBadRequest);
  CHECK(IsValidUtf8(r.error().detail));
  return r.error().detail;
}

TEST_CASE("strict JSON reads what plain JSON reads") {
  auto r =
      ParseStrictJson(R"({"a":[1,2,{"b":null}],"c":"\u00e9","d":-1.5e3,"e":18446744073709551615})");
  REQUIRE(r.ok());
  CHECK(r.value()["a"][2].contains("b"));
  CHECK(r.value()["c"] == "\xC3\xA9");
  CHECK(r.value()["d"] == -1500.0);
  CHECK(r.value()["e"].is_number_unsigned());
  CHECK(ParseStrictJson("[]").ok());
  CHECK(ParseStrictJson("  \"x\"  ").ok());
}

TEST_CASE("duplicate keys are refused at any level") {
  CHECK(Detail(R"({"a":1,"a":2})").find("duplicate key 'a'") != std::string::npos);
  CHECK(Detail(R"({"x":{"b":1,"b":1}})").find("duplicate key 'b'") != std::string::npos);
  CHECK(Detail(R"([{"k":[{"z":1,"z":{}}]}])").find("duplicate key 'z'") != std::string::npos);
  CHECK(ParseStrictJson(R"({"a":{"a":1}})").ok());  // the same key in different objects
}

TEST_CASE("anything after the top-level value is refused") {
  Detail(R"({"a":1} {"b":2})");
  Detail(R"({"a":1}x)");
  Detail(std::string("{\"a\":1}\0garbage", 15));
  Detail(std::string("{\"a\":1}\0", 8));
  Detail("");
}

TEST_CASE("nesting deeper than the limit is refused without recursing") {
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  CHECK(ParseStrictJson(ok).ok());
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  CHECK(Detail(deep).find("deeper than 64") != std::string::npos);
  // 100k levels (the crash of issue 14), unterminated and terminated.
  std::string huge(100000, '[');
  Detail(huge);
  Detail(huge + std::string(100000, ']'));
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  Detail(objects);
}

TEST_CASE("ill-formed UTF-8 and out-of-range numbers are refused with a printable detail") {
  Detail("{\"a\":\"\xFF\"}");
  Detail("{\"\xC0\xAF\":1}");
  Detail("\"\xED\xA0\x80\"");  // a surrogate
  Detail("{\"a\":1e400}");
  Detail("{\"a\":-1e400}");
  Detail("{\"a\xFF");
}

TEST_CASE("UTF-8 validation and sanitizing") {
  CHECK(IsValidUtf8("plain"));
  CHECK(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  CHECK_FALSE(IsValidUtf8("\xFF"));
  CHECK_FALSE(IsValidUtf8("\xC0\x80"));          // overlong NUL
  CHECK_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  CHECK_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  CHECK_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(IsValidUtf8("\xE2\x82"));          // cut short
  CHECK(SanitizeUtf8("a\xFF"
                     "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(IsValidUtf8(SanitizeUtf8("\xE2\x82")));
  CHECK(QuoteForMessage("a\nb\xFF'") == "'a\\x0Ab\\xFF\\''");
  CHECK(IsValidUtf8(QuoteForMessage(std::string(100, '\xE2'))));
}

}  // namespace
}  // namespace sluice
