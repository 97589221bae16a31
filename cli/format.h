// How the sluice CLI shows numbers and durations in its tables. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::cli {

// A duration for people: "850ms", "12.3s", "4m05s", "2h03m", "3d04h". Negative: "-".
std::string FormatDurationMs(int64_t ms);

// A number without noise: 2 → "2", 0.5 → "0.5", 1/3 → "0.333" (at most 3 decimals).
std::string FormatNumber(double value);

}  // namespace sluice::cli
