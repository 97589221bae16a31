// Time as integer microseconds since the Unix epoch, the one unit of sluice.
// Formatting and parsing of RFC 3339 UTC with milliseconds. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

using Micros = int64_t;
inline constexpr Micros kMicrosPerMilli = 1000;
inline constexpr Micros kMicrosPerSecond = 1000000;

// "2026-11-29T20:23:53.123Z"
std::string FormatRfc3339(Micros t);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fff...](Z|+HH:MM|-HH:MM)".
std::optional<Micros> ParseRfc3339(std::string_view s);

// Whole seconds, rounded up, from a non-negative duration.
inline int64_t CeilSeconds(Micros d) {
  return d <= 0 ? 0 : (d + kMicrosPerSecond - 1) / kMicrosPerSecond;
}

// The wall clock, for the server's edge. Components below take `now` as an argument.
Micros WallNowMicros();

}  // namespace sluice
