// common/encoding.h: hex and percent-encoding, against RFC 3986's examples and round trips.
#include "common/encoding.h"

#include <catch2/catch.hpp>
#include <string>

namespace sluice {
namespace {

TEST_CASE("hex is two lower-case digits per byte, in order", "[encoding]") {
  const unsigned char bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  std::string out = "x:";
  AppendHexLower(out, bytes, sizeof bytes);
  CHECK(out == "x:00017f80abff");
  AppendHexLower(out, bytes, 0);
  CHECK(out == "x:00017f80abff");
  CHECK(HexDigitLower(0) == '0');
  CHECK(HexDigitLower(10) == 'a');
  CHECK(HexDigitLower(0x1f) == 'f');  // the low four bits only
}

TEST_CASE("hex digits read back in either case; anything else is -1", "[encoding]") {
  for (int v = 0; v < 16; ++v) {
    CHECK(HexValue(HexDigitLower(v)) == v);
    CHECK(HexValue("0123456789ABCDEF"[v]) == v);
  }
  for (char c : std::string("gG/:@` \x7f")) CHECK(HexValue(c) == -1);
}

TEST_CASE("a path segment keeps RFC 3986's unreserved bytes and escapes the rest", "[encoding]") {
  CHECK(PercentEncode("job_abc-1.2~") == "job_abc-1.2~");
  CHECK(PercentEncode("a/b c?") == "a%2Fb%20c%3F");
  CHECK(PercentEncode("%+&=#") == "%25%2B%26%3D%23");
  CHECK(PercentEncode("\xc3\xa9") == "%C3%A9");  // UTF-8 bytes, upper-case hex
  CHECK(PercentEncode(std::string("\0\xff", 2)) == "%00%FF");
  CHECK(PercentEncode("").empty());
}

TEST_CASE("decoding undoes encoding for every byte, and keeps malformed escapes", "[encoding]") {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  CHECK(PercentDecode(PercentEncode(all), false) == all);
  CHECK(PercentDecode(PercentEncode(all), true) == all);
  CHECK(PercentDecode("%41%62%2f", false) == "Ab/");
  CHECK(PercentDecode("a+b", false) == "a+b");
  CHECK(PercentDecode("a+b", true) == "a b");
  CHECK(PercentDecode("%zz%4", false) == "%zz%4");
  CHECK(PercentDecode("100%", true) == "100%");
}

}  // namespace
}  // namespace sluice
