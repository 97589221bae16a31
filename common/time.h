// Time as integer microseconds since the Unix epoch, the one unit of sluice, and its
// RFC 3339 text form. Representable times are years 0000-9999 ([kMinTime, kMaxTime]):
// parsing refuses anything outside, formatting clamps to it. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

using Micros = int64_t;
inline constexpr Micros kMicrosPerMilli = 1000;
inline constexpr Micros kMicrosPerSecond = 1000000;

// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z: the times RFC 3339's four-digit
// year can write. Every time sluice parses or prints lies in [kMinTime, kMaxTime].
inline constexpr Micros kMinTime = -62'167'219'200LL * kMicrosPerSecond;
inline constexpr Micros kMaxTime = 253'402'300'800LL * kMicrosPerSecond - 1;
// The longest span between two representable times (about 10 000 years, 3.2e17 µs):
// a sum of two such spans and a representable time still fits int64_t (9.2e18).
inline constexpr Micros kMaxSpan = kMaxTime - kMinTime;

// `t` moved into [kMinTime, kMaxTime].
inline Micros ClampTime(Micros t) { return t < kMinTime ? kMinTime : t > kMaxTime ? kMaxTime : t; }

// "2026-11-29T20:23:53.123Z" (milliseconds, truncated). Times outside the representable
// range print as its nearest end, so the year always has four digits.
std::string FormatRfc3339(Micros t);
// Accepts "YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)" ('t' and 'z' also), a real
// calendar date, offsets up to ±23:59, and a result (after the offset) in
// [kMinTime, kMaxTime]. Digits beyond microseconds are truncated. A leap second
// (":60") is refused: Unix time, which sluice keeps, has no instant for it.
std::optional<Micros> ParseRfc3339(std::string_view s);

// Whole seconds, rounded up, from a non-negative duration (0 for negative ones).
inline int64_t CeilSeconds(Micros d) {
  return d <= 0 ? 0 : d / kMicrosPerSecond + (d % kMicrosPerSecond != 0 ? 1 : 0);
}

// The wall clock, for the server's edge. Components below take `now` as an argument.
Micros WallNowMicros();

}  // namespace sluice
