// The six algorithms behind limiter.h, one file each, and the exact arithmetic they
// share. Private to shaper/limiters/: callers use Decide and Release of limiter.h, which
// clamp `now` into [kMinTime, kMaxTime] and `cost` to at least 1 before calling these.
// Pure; thread-compatible.
#pragma once

#include <cstdint>

#include "shaper/limiters/limiter.h"

namespace sluice::limiters {

__extension__ typedef __int128 Int128;

// floor(a / b) and ceil(a / b) for b > 0 and a of any sign.
inline Int128 FloorDiv(Int128 a, Int128 b) {
  Int128 q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}
inline Int128 CeilDiv(Int128 a, Int128 b) {
  Int128 q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return q;
}

// The start of the window of length `window` that holds `now` (windows are aligned to
// multiples of their length since the epoch, as every instance computes them alike).
inline Micros WindowStart(Micros now, Micros window) {
  return static_cast<Micros>(FloorDiv(now, window) * window);
}

// Whole cost units, clamped to [0, kMaxLimitCount] (a stored count from another limit,
// or damaged, stays in range).
inline int64_t ClampCount(Int128 v) {
  return v < 0 ? 0 : v > kMaxLimitCount ? kMaxLimitCount : static_cast<int64_t>(v);
}

LimitStep DecideFixedWindow(const Limit& l, FixedWindowState s, Micros now, int64_t cost);
LimitStep DecideSlidingLog(const Limit& l, SlidingLogState s, Micros now, int64_t cost);
LimitStep DecideSlidingWindowCounter(const Limit& l, SlidingWindowCounterState s, Micros now,
                                     int64_t cost);
LimitStep DecideTokenBucket(const Limit& l, TokenBucketState s, Micros now, int64_t cost);
LimitStep DecideGcra(const Limit& l, GcraState s, Micros now, int64_t cost);
LimitStep DecideConcurrency(const Limit& l, ConcurrencyState s, int64_t cost);
ConcurrencyState ReleaseConcurrency(ConcurrencyState s, int64_t cost);

}  // namespace sluice::limiters
