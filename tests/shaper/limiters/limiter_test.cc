// The six limiters on hand-made traces: what the article's test plan asks of each
// (under the limit, exactly at it, the fixed window's boundary, token bucket burst and
// recovery, cost weighting), with every figure derived from the parameters.
#include "shaper/limiters/limiter.h"

#include <catch2/catch.hpp>
#include <vector>

namespace sluice {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kT0 = 1'800'000'000LL * kSecond;  // a window boundary for 1 s windows

Limit MakeLimit(Algorithm a, int64_t limit, Micros window, int64_t burst = 1) {
  Limit l;
  l.algorithm = a;
  l.limit = limit;
  l.window = window;
  l.burst = burst;
  return l;
}

// Runs one request and keeps the new state.
struct Key {
  Limit limit;
  LimiterState state = InitialState(limit);
  LimitDecision Hit(Micros now, int64_t cost = 1) {
    LimitStep step = Decide(limit, state, now, cost);
    state = std::move(step.state);
    return step.decision;
  }
};

TEST_CASE("limiter names round-trip and unknown names are refused", "[limiters]") {
  for (Algorithm a :
       {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindowCounter,
        Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kConcurrency}) {
    REQUIRE(AlgorithmFromName(AlgorithmName(a)) == a);
  }
  REQUIRE_FALSE(AlgorithmFromName("leaky").has_value());
  REQUIRE_FALSE(AlgorithmFromName("").has_value());
}

TEST_CASE("ValidateLimit enforces the documented ranges", "[limiters]") {
  REQUIRE_FALSE(ValidateLimit(MakeLimit(Algorithm::kFixedWindow, 1, 1)));
  REQUIRE_FALSE(ValidateLimit(MakeLimit(Algorithm::kFixedWindow, kMaxLimitCount, kMaxLimitWindow)));
  REQUIRE(ValidateLimit(MakeLimit(Algorithm::kFixedWindow, 0, kSecond)));
  REQUIRE(ValidateLimit(MakeLimit(Algorithm::kFixedWindow, kMaxLimitCount + 1, kSecond)));
  REQUIRE(ValidateLimit(MakeLimit(Algorithm::kSlidingLog, 5, 0)));
  REQUIRE(ValidateLimit(MakeLimit(Algorithm::kSlidingLog, 5, kMaxLimitWindow + 1)));
  REQUIRE(ValidateLimit(MakeLimit(Algorithm::kTokenBucket, 5, kSecond, 0)));
  // A burst that would take longer than kMaxSpan to refill.
  REQUIRE(ValidateLimit(MakeLimit(Algorithm::kGcra, 1, kMaxLimitWindow, kMaxLimitCount)));
  REQUIRE_FALSE(ValidateLimit(MakeLimit(Algorithm::kGcra, 1, kMaxLimitWindow, 9000)));
  // Concurrency has no window.
  REQUIRE_FALSE(ValidateLimit(MakeLimit(Algorithm::kConcurrency, 3, 0, 0)));
}

TEST_CASE("fixed window: the limit per window, then 429 until the next window", "[limiters]") {
  Key k{MakeLimit(Algorithm::kFixedWindow, 3, kSecond)};
  for (int i = 0; i < 3; ++i) {
    const LimitDecision d = k.Hit(kT0 + 100'000);
    REQUIRE(d.allowed);
    REQUIRE(d.remaining == 2 - i);
    REQUIRE(d.reset_after == kSecond - 100'000);
  }
  const LimitDecision denied = k.Hit(kT0 + 400'000);
  REQUIRE_FALSE(denied.allowed);
  REQUIRE(denied.retry_after == kSecond - 400'000);
  REQUIRE(denied.remaining == 0);
  REQUIRE_FALSE(k.Hit(kT0 + kSecond - 1).allowed);
  REQUIRE(k.Hit(kT0 + kSecond).allowed);
}

TEST_CASE("fixed window: the boundary admits up to twice the limit in one window length",
          "[limiters]") {
  // The algorithm's documented consequence, not a bug: 3 at the end of one window and 3
  // at the start of the next, 2 µs apart.
  Key k{MakeLimit(Algorithm::kFixedWindow, 3, kSecond)};
  int admitted = 0;
  for (int i = 0; i < 4; ++i) admitted += k.Hit(kT0 + kSecond - 1).allowed ? 1 : 0;
  for (int i = 0; i < 4; ++i) admitted += k.Hit(kT0 + kSecond).allowed ? 1 : 0;
  REQUIRE(admitted == 6);
  // The sliding log, on the same trace, admits the limit.
  Key log{MakeLimit(Algorithm::kSlidingLog, 3, kSecond)};
  admitted = 0;
  for (int i = 0; i < 4; ++i) admitted += log.Hit(kT0 + kSecond - 1).allowed ? 1 : 0;
  for (int i = 0; i < 4; ++i) admitted += log.Hit(kT0 + kSecond).allowed ? 1 : 0;
  REQUIRE(admitted == 3);
}

TEST_CASE("sliding log: exact in every window; retry when the oldest entries leave", "[limiters]") {
  Key k{MakeLimit(Algorithm::kSlidingLog, 3, kSecond)};
  REQUIRE(k.Hit(kT0).allowed);
  REQUIRE(k.Hit(kT0 + 200'000).allowed);
  REQUIRE(k.Hit(kT0 + 500'000).allowed);
  const LimitDecision d = k.Hit(kT0 + 600'000);
  REQUIRE_FALSE(d.allowed);
  REQUIRE(d.retry_after == 400'000);  // the entry at kT0 leaves at kT0 + 1 s
  REQUIRE(d.reset_after == 900'000);  // the newest leaves at kT0 + 1.5 s
  REQUIRE_FALSE(k.Hit(kT0 + kSecond - 1).allowed);
  REQUIRE(k.Hit(kT0 + kSecond).allowed);
  // A request of cost 2 waits for two entries to leave.
  const LimitDecision two = k.Hit(kT0 + kSecond, 2);
  REQUIRE_FALSE(two.allowed);
  REQUIRE(two.retry_after == 500'000);
}

TEST_CASE("sliding window counter: the previous window weighted by its overlap", "[limiters]") {
  Key k{MakeLimit(Algorithm::kSlidingWindowCounter, 10, kSecond)};
  for (int i = 0; i < 10; ++i) REQUIRE(k.Hit(kT0 + 500'000).allowed);
  REQUIRE_FALSE(k.Hit(kT0 + 900'000).allowed);
  // 300 ms into the next window the previous 10 weigh 7: 3 more fit.
  const LimitDecision first = k.Hit(kT0 + kSecond + 300'000);
  REQUIRE(first.allowed);
  REQUIRE(first.remaining == 2);
  REQUIRE(k.Hit(kT0 + kSecond + 300'000).allowed);
  REQUIRE(k.Hit(kT0 + kSecond + 300'000).allowed);
  const LimitDecision d = k.Hit(kT0 + kSecond + 300'000);
  REQUIRE_FALSE(d.allowed);
  // Room for one more once the previous window weighs 6: at 400 ms.
  REQUIRE(d.retry_after == 100'000);
  REQUIRE(k.Hit(kT0 + kSecond + 400'000).allowed);
}

TEST_CASE("token bucket: a full burst at once, then the refill rate", "[limiters]") {
  // 10 per second (one per 100 ms), burst 5.
  Key k{MakeLimit(Algorithm::kTokenBucket, 10, kSecond, 5)};
  for (int i = 0; i < 5; ++i) {
    const LimitDecision d = k.Hit(kT0);
    REQUIRE(d.allowed);
    REQUIRE(d.limit == 5);
    REQUIRE(d.remaining == 4 - i);
  }
  const LimitDecision d = k.Hit(kT0);
  REQUIRE_FALSE(d.allowed);
  REQUIRE(d.retry_after == 100'000);
  REQUIRE(d.reset_after == 500'000);
  // Recovery at the refill rate: one every 100 ms, never sooner.
  for (int i = 1; i <= 20; ++i) {
    REQUIRE_FALSE(k.Hit(kT0 + i * 100'000 - 1).allowed);
    REQUIRE(k.Hit(kT0 + i * 100'000).allowed);
  }
  // Idle time earns no more than the burst.
  int burst = 0;
  while (k.Hit(kT0 + 3600 * kSecond).allowed) ++burst;
  REQUIRE(burst == 5);
}

TEST_CASE("gcra: the token bucket's decisions with one number of state", "[limiters]") {
  Key gcra{MakeLimit(Algorithm::kGcra, 10, kSecond, 5)};
  Key bucket{MakeLimit(Algorithm::kTokenBucket, 10, kSecond, 5)};
  const std::vector<Micros> at = {0,       0,       0,       10,      20,      30,
                                  99'999,  100'000, 150'000, 199'999, 200'000, 200'000,
                                  900'000, 900'000, 900'000, 900'001};
  for (Micros t : at) {
    const LimitDecision g = gcra.Hit(kT0 + t);
    const LimitDecision b = bucket.Hit(kT0 + t);
    CAPTURE(t);
    REQUIRE(g.allowed == b.allowed);
    REQUIRE(g.remaining == b.remaining);
    REQUIRE(g.retry_after == b.retry_after);
  }
}

TEST_CASE("cost weighting: a request of cost c spends c units", "[limiters]") {
  for (Algorithm a :
       {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindowCounter,
        Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kConcurrency}) {
    CAPTURE(AlgorithmName(a));
    Key k{MakeLimit(a, 10, kSecond, 10)};
    REQUIRE(k.Hit(kT0, 4).remaining == 6);
    REQUIRE(k.Hit(kT0, 6).remaining == 0);
    const LimitDecision over = k.Hit(kT0, 1);
    REQUIRE_FALSE(over.allowed);
    // A cost above the limit can never pass, and says so.
    const LimitDecision never = Decide(k.limit, InitialState(k.limit), kT0, 11).decision;
    REQUIRE_FALSE(never.allowed);
    REQUIRE(never.never);
    REQUIRE_FALSE(never.retry_after.has_value());
  }
}

TEST_CASE("concurrency: slots return on release; no retry_after or reset is invented",
          "[limiters]") {
  Key k{MakeLimit(Algorithm::kConcurrency, 2, 0, 0)};
  REQUIRE(k.Hit(kT0).allowed);
  REQUIRE(k.Hit(kT0).allowed);
  const LimitDecision d = k.Hit(kT0 + kSecond);
  REQUIRE_FALSE(d.allowed);
  REQUIRE_FALSE(d.never);
  REQUIRE_FALSE(d.retry_after.has_value());
  REQUIRE_FALSE(d.reset_after.has_value());
  k.state = Release(k.limit, k.state, 1);
  REQUIRE(k.Hit(kT0 + kSecond).allowed);
  REQUIRE_FALSE(k.Hit(kT0 + kSecond).allowed);
  // Releasing more than was taken never goes below zero.
  for (int i = 0; i < 5; ++i) k.state = Release(k.limit, k.state, 1);
  REQUIRE(std::get<ConcurrencyState>(k.state).in_flight == 0);
}

TEST_CASE("a state of another algorithm counts as a new key", "[limiters]") {
  const Limit fixed = MakeLimit(Algorithm::kFixedWindow, 1, kSecond);
  const Limit bucket = MakeLimit(Algorithm::kTokenBucket, 1, kSecond, 1);
  LimitStep spent = Decide(fixed, InitialState(fixed), kT0, 1);
  REQUIRE(spent.decision.allowed);
  // The layer's algorithm changed: the token bucket starts full.
  REQUIRE(Decide(bucket, spent.state, kT0, 1).decision.allowed);
}

TEST_CASE("the sliding log's memory is one entry per admitted instant in the window",
          "[limiters]") {
  Key k{MakeLimit(Algorithm::kSlidingLog, 1000, kSecond)};
  for (int i = 0; i < 100; ++i) REQUIRE(k.Hit(kT0 + i * 1000).allowed);
  for (int i = 0; i < 5; ++i) REQUIRE(k.Hit(kT0 + 99 * 1000).allowed);  // merged
  REQUIRE(std::get<SlidingLogState>(k.state).entries.size() == 100);
  REQUIRE(StateBytes(k.state) >= sizeof(SlidingLogState) + 100 * sizeof(SlidingLogEntry));
  REQUIRE(StateBytes(InitialState(Limit{Algorithm::kGcra, 1, 1, 1})) == sizeof(GcraState));
  // One window later only the new entry is left.
  REQUIRE(k.Hit(kT0 + 2 * kSecond).allowed);
  REQUIRE(std::get<SlidingLogState>(k.state).entries.size() == 1);
}

TEST_CASE("a state stored as text reads back as the same state", "[limiters]") {
  for (Algorithm a :
       {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindowCounter,
        Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kConcurrency}) {
    CAPTURE(AlgorithmName(a));
    Key k{MakeLimit(a, 5, kSecond, 5)};
    k.Hit(kT0, 2);
    k.Hit(kT0 + 300'000, 1);
    const std::string text = EncodeState(k.state);
    const LimiterState back = DecodeState(k.limit, text);
    REQUIRE(EncodeState(back) == text);
    // The same decisions follow from either.
    for (Micros t : {kT0 + 300'000, kT0 + 900'000, kT0 + 2 * kSecond}) {
      const LimitDecision x = Decide(k.limit, k.state, t, 2).decision;
      const LimitDecision y = Decide(k.limit, back, t, 2).decision;
      REQUIRE(x.allowed == y.allowed);
      REQUIRE(x.remaining == y.remaining);
      REQUIRE(x.retry_after == y.retry_after);
    }
  }
  // Damaged text, or another algorithm's, reads as a new key.
  const Limit fixed = MakeLimit(Algorithm::kFixedWindow, 5, kSecond);
  for (std::string_view bad : {"", "0", "0,1", "0,1,2,3", "0,x,2", "0,1,", ",0,1,2", "3,1,2,3",
                               "0,99999999999999999999,1", "0, 1,2"}) {
    CAPTURE(bad);
    REQUIRE(EncodeState(DecodeState(fixed, bad)) == EncodeState(InitialState(fixed)));
  }
}

}  // namespace
}  // namespace sluice
