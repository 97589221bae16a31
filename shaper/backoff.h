// Retry backoff: full jitter, random(0, min(max, base * 2^(attempt-1))).
// Pure: the random draw is passed in. Thread-safe.
#pragma once

#include <cstdint>

namespace sluice {

// `attempt` counts from 1; `unit_random` is uniform in [0, 1). For any inputs (NaN and
// out-of-range draws are clamped into [0, 1]) the result is in
// [0, min(max_ms, base_ms * 2^(attempt-1))], computed without overflow.
int64_t FullJitterBackoffMs(int64_t base_ms, int64_t max_ms, int64_t attempt, double unit_random);

}  // namespace sluice
