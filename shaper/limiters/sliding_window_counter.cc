// Sliding window counter: the fixed window's counter plus the previous window's,
// weighted by how much of the sliding window still overlaps it: admitted iff
//   previous x (window - elapsed) / window + current + cost <= limit
// (compared exactly, multiplied out by `window`). Two counters per key. The weighting
// assumes the previous window's requests were spread evenly; when they were not, up to
// 2 x limit can fall in one window length (docs/algorithms.md derives the bound).
#include <algorithm>

#include "shaper/limiters/algorithms.h"

namespace sluice::limiters {
namespace {

// The smallest elapsed time e in [0, window] at which `weight` x (window - e) <=
// `room` x window, for room >= 0 (weight 0: at once).
Int128 FirstFit(Int128 weight, Int128 room, Micros window) {
  if (weight <= 0) return 0;
  return std::max<Int128>(0, window - FloorDiv(room * window, weight));
}

}  // namespace

LimitStep DecideSlidingWindowCounter(const Limit& l, SlidingWindowCounterState s, Micros now,
                                     int64_t cost) {
  const Micros w = l.window;
  const Micros start = WindowStart(now, w);
  s.window_start = std::clamp<Micros>(s.window_start, kMinTime - w, kMaxTime);
  if (start > s.window_start) {
    s.previous = (start - s.window_start == w) ? s.current : 0;
    s.current = 0;
    s.window_start = start;
  }
  s.current = ClampCount(s.current);
  s.previous = ClampCount(s.previous);
  // A clock that went back counts as the start of the stored window (all of the
  // previous window's weight: never more admitted).
  const Micros elapsed = std::max<Micros>(0, now - s.window_start);
  const Int128 prev_weight = static_cast<Int128>(s.previous) * (w - elapsed);

  LimitStep step;
  LimitDecision& d = step.decision;
  d.limit = l.limit;
  if (prev_weight + (static_cast<Int128>(s.current) + cost) * w <=
      static_cast<Int128>(l.limit) * w) {
    d.allowed = true;
    s.current += cost;
  } else if (cost > l.limit) {
    d.never = true;
  } else {
    const Int128 room = static_cast<Int128>(l.limit) - s.current - cost;
    Int128 at;  // since s.window_start
    if (room >= 0 && FirstFit(s.previous, room, w) < w) {
      at = FirstFit(s.previous, room, w);  // later in this window
    } else if (const Int128 e = FirstFit(s.current, static_cast<Int128>(l.limit) - cost, w);
               e < w) {
      at = w + e;  // in the next window, this one's count then weighted
    } else {
      at = 2 * static_cast<Int128>(w);  // once this window's count has left too
    }
    d.retry_after = static_cast<Micros>(s.window_start + at - now);
  }
  const Int128 estimate = CeilDiv(static_cast<Int128>(s.previous) * (w - elapsed), w) + s.current;
  d.remaining = ClampCount(l.limit - estimate);
  d.reset_after = s.current > 0    ? s.window_start + 2 * w - now
                  : s.previous > 0 ? s.window_start + w - now
                                   : 0;
  step.state = s;
  return step;
}

}  // namespace sluice::limiters
