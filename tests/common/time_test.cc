// RFC 3339 times (common/time.h): real calendar dates only, offsets within ±23:59,
// years 0000-9999 after the offset, bounded fractions, no leap second; formatting
// never leaves the representable range; CeilSeconds never overflows.
#include "common/time.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <limits>
#include <random>
#include <string>

namespace sluice {
namespace {

constexpr Micros kDay = 86'400 * kMicrosPerSecond;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

Micros Parse(const std::string& s) {
  INFO(s);
  std::optional<Micros> t = ParseRfc3339(s);
  REQUIRE(t);
  return *t;
}

void RequireRefused(const std::string& s) {
  INFO(s);
  CHECK_FALSE(ParseRfc3339(s));
}

std::string Date(int y, int m, int d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT00:00:00Z", y, m, d);
  return buf;
}

// The proleptic Gregorian rule, written out for the test.
bool Leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

TEST_CASE("ParseRfc3339 reads the instants it should", "[time]") {
  CHECK(Parse("1970-01-01T00:00:00Z") == 0);
  CHECK(Parse("1970-01-01T00:00:01.5Z") == 1'500'000);
  CHECK(Parse("1969-12-31T23:59:59.999999Z") == -1);
  CHECK(Parse("2026-11-29T20:23:53.123Z") == 1'795'983'833'123'000);
  CHECK(Parse("2026-11-29t20:23:53.123z") == 1'795'983'833'123'000);  // RFC 3339 allows
  // Offsets: local time minus the offset is UTC.
  CHECK(Parse("2026-01-01T01:30:00+01:30") == Parse("2026-01-01T00:00:00Z"));
  CHECK(Parse("2025-12-31T20:00:00-04:00") == Parse("2026-01-01T00:00:00Z"));
  CHECK(Parse("2026-01-01T00:00:00-00:00") == Parse("2026-01-01T00:00:00Z"));
}

TEST_CASE("ParseRfc3339 refuses impossible calendar dates", "[time]") {
  for (const char* s : {"2026-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-02-31T00:00:00Z",
                        "2026-04-31T00:00:00Z", "2026-06-31T00:00:00Z", "2026-09-31T00:00:00Z",
                        "2026-11-31T00:00:00Z", "1900-02-29T00:00:00Z", "2100-02-29T00:00:00Z",
                        "2026-00-10T00:00:00Z", "2026-13-10T00:00:00Z", "2026-01-00T00:00:00Z",
                        "2026-01-32T00:00:00Z"}) {
    RequireRefused(s);
  }
  // Leap years: every fourth, not centuries, but every fourth century (year 0 too).
  for (const char* s : {"2024-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "1600-02-29T00:00:00Z",
                        "0000-02-29T00:00:00Z"}) {
    Parse(s);
  }
}

TEST_CASE("ParseRfc3339: every month's last day exists and the next one does not",
          "[time][property]") {
  // A whole 400-year cycle and the ends of the range: each month's last day is a day
  // before the next month's first, and its successor is refused.
  std::vector<int> years;
  for (int y = 1800; y < 2200; ++y) years.push_back(y);
  for (int y : {0, 1, 4, 100, 400, 9996, 9999}) years.push_back(y);
  for (int y : years) {
    for (int m = 1; m <= 12; ++m) {
      const int last = m == 2                                    ? (Leap(y) ? 29 : 28)
                       : (m == 4 || m == 6 || m == 9 || m == 11) ? 30
                                                                 : 31;
      CAPTURE(y, m, last);
      const Micros end = Parse(Date(y, m, last));
      RequireRefused(Date(y, m, last + 1));
      if (y < 9999 || m < 12) {
        CHECK(Parse(Date(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1)) == end + kDay);
      }
    }
  }
}

TEST_CASE("ParseRfc3339 refuses out-of-range clock fields and offsets", "[time]") {
  for (const char* s :
       {"2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z",
        // A leap second: Unix time has no instant for it.
        "2016-12-31T23:59:60Z", "2026-01-01T00:00:60Z",
        // Offsets beyond ±23:59.
        "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00-24:00", "2026-01-01T00:00:00+99:00",
        "2026-01-01T00:00:00+00:60", "2026-01-01T00:00:00+05:99"}) {
    RequireRefused(s);
  }
  CHECK(Parse("2026-01-01T00:00:00+23:59") == Parse("2025-12-31T00:01:00Z"));
  CHECK(Parse("2026-01-01T00:00:00-23:59") == Parse("2026-01-01T23:59:00Z"));
  CHECK(Parse("2016-12-31T23:59:59Z") + kMicrosPerSecond == Parse("2017-01-01T00:00:00Z"));
}

TEST_CASE("ParseRfc3339: the result is within years 0000-9999 once the offset applies", "[time]") {
  CHECK(Parse("0000-01-01T00:00:00Z") == kMinTime);
  CHECK(Parse("9999-12-31T23:59:59.999999Z") == kMaxTime);
  CHECK(Parse("0000-01-01T00:00:00-01:00") == kMinTime + 3600 * kMicrosPerSecond);
  CHECK(Parse("9999-12-31T23:59:59+00:01") == Parse("9999-12-31T23:58:59Z"));
  // Before 0000-01-01T00:00:00Z, after 9999-12-31T23:59:59.999999Z.
  RequireRefused("0000-01-01T00:00:00+00:01");
  RequireRefused("0000-01-01T00:59:59.999999+01:00");
  RequireRefused("9999-12-31T23:59:59-00:01");
  RequireRefused("9999-12-31T23:00:00-23:59");
  // Five-digit or signed years are not RFC 3339.
  RequireRefused("10000-01-01T00:00:00Z");
  RequireRefused("+2026-01-01T00:00:00Z");
  RequireRefused("-0001-01-01T00:00:00Z");
}

TEST_CASE("ParseRfc3339: fractions of 1 to 9 digits, truncated to microseconds", "[time]") {
  const Micros base = Parse("2026-01-01T00:00:00Z");
  CHECK(Parse("2026-01-01T00:00:00.1Z") == base + 100'000);
  CHECK(Parse("2026-01-01T00:00:00.000001Z") == base + 1);
  CHECK(Parse("2026-01-01T00:00:00.1234567Z") == base + 123'456);
  CHECK(Parse("2026-01-01T00:00:00.999999999Z") == base + 999'999);
  CHECK(Parse("2026-01-01T00:00:00.123456789+01:00") == base - 3600 * kMicrosPerSecond + 123'456);
  RequireRefused("2026-01-01T00:00:00.1234567890Z");  // 10 digits
  RequireRefused("2026-01-01T00:00:00." + std::string(10'000, '0') + "Z");
  RequireRefused("2026-01-01T00:00:00.Z");
  RequireRefused("2026-01-01T00:00:00,5Z");
}

TEST_CASE("ParseRfc3339 refuses malformed text", "[time]") {
  for (const char* s : {"", "2026", "2026-01-01", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z",
                        "2026-01-01T00:00Z", "2026-1-01T00:00:00Z", "2026-01-01T00:00:00ZZ",
                        "2026-01-01T00:00:00+01", "2026-01-01T00:00:00+0100",
                        "2026-01-01T00:00:00+01:00:00", "2026-01-01T00:00:00+01:0",
                        "2026-01-01T00:00:00+", "2026-01-01T00:00:00Z ", " 2026-01-01T00:00:00Z",
                        "2026-01-01T00:00:00.5", "2O26-01-01T00:00:00Z", "2026-01-01T0a:00:00Z"}) {
    RequireRefused(s);
  }
  RequireRefused(std::string("2026-01-01T00:00:00Z\0", 21));
}

TEST_CASE("FormatRfc3339 prints UTC milliseconds and never a year outside 0000-9999", "[time]") {
  CHECK(FormatRfc3339(0) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339(1'795'983'833'123'999) == "2026-11-29T20:23:53.123Z");
  CHECK(FormatRfc3339(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(FormatRfc3339(kMinTime) == "0000-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339(kMaxTime) == "9999-12-31T23:59:59.999Z");
  // Beyond the range: the nearest end.
  CHECK(FormatRfc3339(kMaxTime + 1) == "9999-12-31T23:59:59.999Z");
  CHECK(FormatRfc3339(kInt64Max) == "9999-12-31T23:59:59.999Z");
  CHECK(FormatRfc3339(kMinTime - 1) == "0000-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339(kInt64Min) == "0000-01-01T00:00:00.000Z");
  CHECK(ClampTime(kInt64Max) == kMaxTime);
  CHECK(ClampTime(kInt64Min) == kMinTime);
  CHECK(ClampTime(12345) == 12345);
}

TEST_CASE("Property: FormatRfc3339 agrees with gmtime and round-trips through ParseRfc3339",
          "[time][property]") {
  unsigned int s = Catch::rngSeed();
  const uint64_t seed = s != 0 ? s : 0x5111CE;
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<Micros> any_time(kMinTime, kMaxTime);
  std::uniform_int_distribution<Micros> any_int(kInt64Min, kInt64Max);
  for (int i = 0; i < 100'000; ++i) {
    const Micros t = i % 10 == 0 ? any_int(rng) : any_time(rng);
    CAPTURE(t);
    const std::string text = FormatRfc3339(t);
    CAPTURE(text);
    REQUIRE(text.size() == 24);
    const Micros c = ClampTime(t);
    // The oracle: glibc's gmtime_r (64-bit time_t) for the calendar fields.
    Micros secs = c / kMicrosPerSecond, rem = c % kMicrosPerSecond;
    if (rem < 0) rem += kMicrosPerSecond, secs -= 1;
    std::time_t tt = static_cast<std::time_t>(secs);
    std::tm tm{};
    REQUIRE(gmtime_r(&tt, &tm) != nullptr);
    char expected[64];
    std::snprintf(expected, sizeof expected, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(rem / kMicrosPerMilli));
    REQUIRE(text == expected);
    // Parsing the text gives the instant truncated to the millisecond.
    REQUIRE(ParseRfc3339(text) == c - rem % kMicrosPerMilli);
  }
}

TEST_CASE("CeilSeconds rounds up without overflow", "[time]") {
  CHECK(CeilSeconds(0) == 0);
  CHECK(CeilSeconds(-5) == 0);
  CHECK(CeilSeconds(kInt64Min) == 0);
  CHECK(CeilSeconds(1) == 1);
  CHECK(CeilSeconds(kMicrosPerSecond) == 1);
  CHECK(CeilSeconds(kMicrosPerSecond + 1) == 2);
  CHECK(CeilSeconds(kInt64Max) == kInt64Max / kMicrosPerSecond + 1);
  CHECK(CeilSeconds(kMaxSpan) == 315'569'520'000);
}

}  // namespace
}  // namespace sluice
