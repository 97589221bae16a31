// Token bucket: a bucket of at most `burst` tokens, refilled at limit / window per µs
// (exactly: whole tokens plus frac / window of one); a request takes `cost` tokens or
// is denied. Bursts up to `burst` at once, then the refill rate. Three integers per key.
#include "shaper/limiters/algorithms.h"

namespace sluice::limiters {

LimitStep DecideTokenBucket(const Limit& l, TokenBucketState s, Micros now, int64_t cost) {
  const Micros w = l.window;
  // In 1/window of a token: the stored tokens, brought into range, plus the refill.
  Int128 tokens = static_cast<Int128>(ClampCount(s.tokens)) * w + (s.frac < 0    ? 0
                                                                   : s.frac >= w ? w - 1
                                                                                 : s.frac);
  const Int128 full = static_cast<Int128>(l.burst) * w;
  if (now > s.updated_at) {
    // elapsed <= 2 x kMaxSpan, limit <= 1e15: the product fits with room to spare.
    tokens += (static_cast<Int128>(now) - s.updated_at) * l.limit;
    s.updated_at = now;
  }  // a clock that went back refills nothing until it has caught up
  if (tokens > full) tokens = full;

  LimitStep step;
  LimitDecision& d = step.decision;
  d.limit = l.burst;
  const Int128 need = static_cast<Int128>(cost) * w;
  if (need <= tokens) {
    d.allowed = true;
    tokens -= need;
  } else if (cost > l.burst) {
    d.never = true;
  } else {
    d.retry_after = static_cast<Micros>(CeilDiv(need - tokens, l.limit));
  }
  s.tokens = static_cast<int64_t>(tokens / w);
  s.frac = static_cast<int64_t>(tokens % w);
  d.remaining = s.tokens;
  d.reset_after = static_cast<Micros>(CeilDiv(full - tokens, l.limit));
  step.state = s;
  return step;
}

}  // namespace sluice::limiters
