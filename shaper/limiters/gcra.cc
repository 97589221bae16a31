// GCRA (virtual scheduling) as a request limiter: a theoretical arrival time TAT per
// key; a request of `cost` is admitted iff max(TAT, now) + cost x T - now <= burst x T
// with T = window / limit, and then moves TAT there. The token bucket's decisions with
// one number of state. Exact: times are counted in 1/limit µs.
// (The job shaper's GCRA, shaper/gcra.h, releases queued work instead: it lets the head
// go at TAT - tau whatever its cost; see docs/shaping.md.)
#include <algorithm>

#include "shaper/limiters/algorithms.h"

namespace sluice::limiters {

LimitStep DecideGcra(const Limit& l, GcraState s, Micros now, int64_t cost) {
  const Int128 per_us = l.limit;  // units per µs
  const Int128 now_u = static_cast<Int128>(now) * per_us;
  // The stored TAT, brought into range: no earlier than the start of time, no later
  // than a full burst after the end of it (ValidateLimit bounds burst x T by kMaxSpan).
  Int128 tat =
      static_cast<Int128>(std::clamp<Micros>(s.tat_us, kMinTime, kMaxTime + kMaxSpan)) * per_us +
      std::clamp<int64_t>(s.tat_frac, 0, l.limit - 1);
  const Int128 tolerance = static_cast<Int128>(l.burst) * l.window;  // burst x T, in units
  const Int128 base = std::max(tat, now_u);
  const Int128 next = base + static_cast<Int128>(cost) * l.window;

  LimitStep step;
  LimitDecision& d = step.decision;
  d.limit = l.burst;
  if (next - now_u <= tolerance) {
    d.allowed = true;
    tat = next;
  } else if (cost > l.burst) {
    d.never = true;
  } else {
    // The first µs t with TAT + cost x T - t <= burst x T.
    d.retry_after = static_cast<Micros>(
        CeilDiv(tat + (static_cast<Int128>(cost) - l.burst) * l.window, per_us) - now);
  }
  const Int128 ahead = std::max(tat, now_u) - now_u;  // units the schedule is ahead of now
  d.remaining = ClampCount((tolerance - ahead) / l.window);
  d.reset_after = static_cast<Micros>(CeilDiv(ahead, per_us));
  s.tat_us = static_cast<Micros>(FloorDiv(tat, per_us));
  s.tat_frac = static_cast<int64_t>(tat - static_cast<Int128>(s.tat_us) * per_us);
  step.state = s;
  return step;
}

}  // namespace sluice::limiters
