// Fixed window counter: at most `limit` per aligned window of length `window`. One
// counter and the window's start per key. Its consequence: a client may spend a whole
// window's quota at the end of one window and again at the start of the next, so up to
// 2 x limit in a span of one window length (docs/algorithms.md).
#include <algorithm>

#include "shaper/limiters/algorithms.h"

namespace sluice::limiters {

LimitStep DecideFixedWindow(const Limit& l, FixedWindowState s, Micros now, int64_t cost) {
  const Micros start = WindowStart(now, l.window);
  s.window_start = std::clamp<Micros>(s.window_start, kMinTime - l.window, kMaxTime);
  // A window later than the stored one starts from nothing; an earlier one (a clock
  // that went back) counts in the stored window, which never admits more.
  if (start > s.window_start) {
    s.window_start = start;
    s.used = 0;
  }
  s.used = ClampCount(s.used);
  const Micros window_end = s.window_start + l.window;

  LimitStep step;
  LimitDecision& d = step.decision;
  d.limit = l.limit;
  if (static_cast<Int128>(s.used) + cost <= l.limit) {
    d.allowed = true;
    s.used += cost;
  } else if (cost > l.limit) {
    d.never = true;
  } else {
    d.retry_after = window_end - now;  // the next window starts empty
  }
  d.remaining = ClampCount(static_cast<Int128>(l.limit) - s.used);
  d.reset_after = s.used > 0 ? window_end - now : 0;
  step.state = s;
  return step;
}

}  // namespace sluice::limiters
