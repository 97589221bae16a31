// Concurrency limiter: at most `limit` cost units in flight per key; a request takes
// its cost until Release gives it back. No window and no instant at which a slot frees:
// a denial has no retry_after (the server answers its own hint) and no reset.
#include "shaper/limiters/algorithms.h"

namespace sluice::limiters {

LimitStep DecideConcurrency(const Limit& l, ConcurrencyState s, int64_t cost) {
  s.in_flight = ClampCount(s.in_flight);
  LimitStep step;
  LimitDecision& d = step.decision;
  d.limit = l.limit;
  if (static_cast<Int128>(s.in_flight) + cost <= l.limit) {
    d.allowed = true;
    s.in_flight += cost;
  } else if (cost > l.limit) {
    d.never = true;
  }
  d.remaining = ClampCount(static_cast<Int128>(l.limit) - s.in_flight);
  step.state = s;
  return step;
}

ConcurrencyState ReleaseConcurrency(ConcurrencyState s, int64_t cost) {
  s.in_flight = ClampCount(static_cast<Int128>(ClampCount(s.in_flight)) - cost);
  return s;
}

}  // namespace sluice::limiters
