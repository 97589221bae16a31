// Sliding log: every admitted request's time and cost, kept for one window; a request
// is admitted iff the cost admitted in (now - window, now] plus its own is at most
// `limit`. Exact in every window, at the price of one entry per admitted instant.
#include <algorithm>

#include "shaper/limiters/algorithms.h"

namespace sluice::limiters {

LimitStep DecideSlidingLog(const Limit& l, SlidingLogState s, Micros now, int64_t cost) {
  for (SlidingLogEntry& e : s.entries) e.at = ClampTime(e.at);  // a damaged state stays in range
  // Entries leave once `now - window` has reached them.
  auto live = std::find_if(s.entries.begin(), s.entries.end(),
                           [&](const SlidingLogEntry& e) { return e.at > now - l.window; });
  s.entries.erase(s.entries.begin(), live);
  Int128 used = 0;
  for (const SlidingLogEntry& e : s.entries) used += e.cost;

  LimitStep step;
  LimitDecision& d = step.decision;
  d.limit = l.limit;
  if (used + cost <= l.limit) {
    d.allowed = true;
    used += cost;
    // Kept in time order: after a clock that went back, the entry is recorded at the
    // newest instant (it then lives longer, which never admits more).
    if (!s.entries.empty() && s.entries.back().at >= now) {
      s.entries.back().cost += cost;
    } else {
      s.entries.push_back(SlidingLogEntry{now, cost});
    }
  } else if (cost > l.limit) {
    d.never = true;
  } else {
    // The oldest entries leave first: wait for as many as must go.
    Int128 left = used;
    for (const SlidingLogEntry& e : s.entries) {
      left -= e.cost;
      if (left + cost <= l.limit) {
        d.retry_after = e.at + l.window - now;
        break;
      }
    }
  }
  s.used = ClampCount(used);
  d.remaining = ClampCount(l.limit - used);
  d.reset_after = s.entries.empty() ? 0 : s.entries.back().at + l.window - now;
  step.state = std::move(s);
  return step;
}

}  // namespace sluice::limiters
