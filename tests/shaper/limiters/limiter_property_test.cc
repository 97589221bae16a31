// Property tests of the limiters on virtual time: random limits and random traffic
// (steady, bursty clumps, and requests on window boundaries), the bounds derived from
// each algorithm's definition (docs/algorithms.md), not from the code:
//   - sliding log: at most `limit` in every window (t - window, t];
//   - fixed window: at most `limit` in every aligned window, 2 x limit in any window;
//   - sliding window counter: at most 2 x limit in any window;
//   - token bucket, GCRA: at most burst + limit x (t_j - t_i) / window in [t_i, t_j];
//   - concurrency: at most `limit` in flight.
// And for every decision: retry_after honest and tight (admitted at now + R if nothing
// else arrived, denied at now + R - 1), `remaining` exact (that much passes now, one
// more does not), reset_after true (then the whole quota is free), `never` exactly when
// the cost exceeds the quota, and a denial spends nothing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "shaper/limiters/limiter.h"
#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using testing::Int128;
using testing::Uniform;

constexpr Micros kT0 = 1'800'000'000'000'000;

struct Hit {
  Micros at = 0;
  int64_t cost = 1;
};

enum class Traffic { kSteady, kBursty, kBoundary };

Limit RandomLimit(std::mt19937_64& rng, Algorithm a) {
  Limit l;
  l.algorithm = a;
  l.limit = Uniform<int64_t>(rng, 1, 40);
  l.window = Uniform<Micros>(rng, 1, 3) == 1 ? Uniform<Micros>(rng, 1, 50)  // tiny windows too
                                             : Uniform<Micros>(rng, 1'000, 5'000'000);
  l.burst = Uniform<int64_t>(rng, 1, 2 * l.limit);
  REQUIRE_FALSE(ValidateLimit(l));
  return l;
}

std::vector<Hit> RandomTraffic(std::mt19937_64& rng, const Limit& l, Traffic kind, int n) {
  std::vector<Hit> hits;
  Micros t = kT0 + Uniform<Micros>(rng, 0, l.window);
  const int64_t max_cost = std::max<int64_t>(
      l.algorithm == Algorithm::kTokenBucket || l.algorithm == Algorithm::kGcra ? l.burst : l.limit,
      1);
  for (int i = 0; i < n; ++i) {
    switch (kind) {
      case Traffic::kSteady:
        t += Uniform<Micros>(rng, 0, 2 * l.window / std::max<int64_t>(1, l.limit) + 1);
        break;
      case Traffic::kBursty:
        if (Uniform(rng, 0, 9) == 0)
          t += Uniform<Micros>(rng, 0, 3 * l.window);  // a gap
        else
          t += Uniform<Micros>(rng, 0, 2);  // a clump
        break;
      case Traffic::kBoundary: {
        // Just before or at the start of a window boundary.
        if (Uniform(rng, 0, 3) == 0) {
          const Micros next = (t / l.window + 1) * l.window;
          t = next - Uniform<Micros>(rng, 0, 1);
        }
        t += Uniform<Micros>(rng, 0, 1);
        break;
      }
    }
    // Mostly unit costs, now and then a heavy request, rarely one above the quota.
    int64_t cost = 1;
    const int r = Uniform(rng, 0, 19);
    if (r == 0)
      cost = max_cost + Uniform<int64_t>(rng, 1, 3);
    else if (r < 4)
      cost = Uniform<int64_t>(rng, 1, max_cost);
    hits.push_back(Hit{t, cost});
  }
  return hits;
}

int64_t Quota(const Limit& l) {
  return l.algorithm == Algorithm::kTokenBucket || l.algorithm == Algorithm::kGcra ? l.burst
                                                                                   : l.limit;
}

// Each decision's promises, on copies of the state before and after it.
void CheckDecision(const Limit& l, const LimiterState& before, const LimitStep& step, Micros now,
                   int64_t cost) {
  const LimitDecision& d = step.decision;
  CAPTURE(now, cost, d.allowed, d.remaining, d.never);
  REQUIRE(d.limit == Quota(l));
  REQUIRE(d.never == (cost > Quota(l)));
  REQUIRE(d.remaining >= 0);
  REQUIRE(d.remaining <= Quota(l));
  if (d.allowed) {
    REQUIRE_FALSE(d.retry_after.has_value());
  } else {
    // A denial spends nothing: the state after it decides as the state before it.
    const LimitStep again = Decide(l, before, now, cost);
    const LimitStep after = Decide(l, step.state, now, cost);
    REQUIRE(again.decision.allowed == after.decision.allowed);
    REQUIRE(again.decision.remaining == after.decision.remaining);
    if (l.algorithm == Algorithm::kConcurrency || d.never) {
      REQUIRE_FALSE(d.retry_after.has_value());
    } else {
      REQUIRE(d.retry_after.has_value());
      const Micros r = *d.retry_after;
      CAPTURE(r);
      REQUIRE(r >= 1);
      REQUIRE(Decide(l, step.state, now + r, cost).decision.allowed);
      REQUIRE_FALSE(Decide(l, step.state, now + r - 1, cost).decision.allowed);
    }
  }
  // `remaining` is exact: that much passes now, one unit more does not.
  if (d.remaining > 0) REQUIRE(Decide(l, step.state, now, d.remaining).decision.allowed);
  if (d.remaining < Quota(l)) {
    REQUIRE_FALSE(Decide(l, step.state, now, d.remaining + 1).decision.allowed);
  }
  // reset_after: then the whole quota is free (none for concurrency).
  if (l.algorithm == Algorithm::kConcurrency) {
    REQUIRE_FALSE(d.reset_after.has_value());
  } else {
    REQUIRE(d.reset_after.has_value());
    REQUIRE(*d.reset_after >= 0);
    REQUIRE(Decide(l, step.state, now + *d.reset_after, 1).decision.remaining == Quota(l) - 1);
  }
}

// The most cost admitted in any window (t - window, t] of the admitted hits.
Int128 MostInAnyWindow(const std::vector<Hit>& admitted, Micros window) {
  Int128 most = 0, sum = 0;
  size_t first = 0;
  for (size_t j = 0; j < admitted.size(); ++j) {
    sum += admitted[j].cost;
    while (admitted[first].at <= admitted[j].at - window) sum -= admitted[first++].cost;
    most = std::max(most, sum);
  }
  return most;
}

void CheckBound(const Limit& l, const std::vector<Hit>& admitted) {
  switch (l.algorithm) {
    case Algorithm::kSlidingLog:
      REQUIRE(MostInAnyWindow(admitted, l.window) <= l.limit);
      break;
    case Algorithm::kFixedWindow: {
      REQUIRE(MostInAnyWindow(admitted, l.window) <= 2 * static_cast<Int128>(l.limit));
      // Aligned windows hold the limit.
      Int128 sum = 0;
      Micros start = 0;
      for (const Hit& h : admitted) {
        const Micros s = h.at - h.at % l.window;
        if (s != start) sum = 0, start = s;
        sum += h.cost;
        REQUIRE(sum <= l.limit);
      }
      break;
    }
    case Algorithm::kSlidingWindowCounter:
      REQUIRE(MostInAnyWindow(admitted, l.window) <= 2 * static_cast<Int128>(l.limit));
      break;
    case Algorithm::kTokenBucket:
    case Algorithm::kGcra:
      for (size_t i = 0; i < admitted.size(); ++i) {
        Int128 sum = 0;
        for (size_t j = i; j < admitted.size(); ++j) {
          sum += admitted[j].cost;
          // sum <= burst + limit x (t_j - t_i) / window, multiplied out.
          REQUIRE(sum * l.window <=
                  static_cast<Int128>(l.burst) * l.window +
                      static_cast<Int128>(l.limit) * (admitted[j].at - admitted[i].at));
        }
      }
      break;
    case Algorithm::kConcurrency:
      break;  // checked as it runs
  }
}

TEST_CASE("limiters on random traffic keep their bounds and their answers honest",
          "[limiters][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (Algorithm a :
       {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindowCounter,
        Algorithm::kTokenBucket, Algorithm::kGcra}) {
    for (Traffic kind : {Traffic::kSteady, Traffic::kBursty, Traffic::kBoundary}) {
      for (int scenario = 0; scenario < 40; ++scenario) {
        const Limit l = RandomLimit(rng, a);
        const std::vector<Hit> hits = RandomTraffic(rng, l, kind, 300);
        CAPTURE(AlgorithmName(a), static_cast<int>(kind), scenario, l.limit, l.window, l.burst);
        LimiterState state = InitialState(l);
        std::vector<Hit> admitted;
        for (const Hit& h : hits) {
          LimitStep step = Decide(l, state, h.at, h.cost);
          CheckDecision(l, state, step, h.at, h.cost);
          if (step.decision.allowed) admitted.push_back(h);
          state = std::move(step.state);
        }
        CheckBound(l, admitted);
        // The traffic was heavy enough to be limited at times, and light enough to pass.
        if (kind == Traffic::kBursty) REQUIRE(admitted.size() < hits.size());
        REQUIRE_FALSE(admitted.empty());
      }
    }
  }
}

TEST_CASE("concurrency limiter on random acquire and release never exceeds its limit",
          "[limiters][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int scenario = 0; scenario < 100; ++scenario) {
    Limit l;
    l.algorithm = Algorithm::kConcurrency;
    l.limit = Uniform<int64_t>(rng, 1, 20);
    LimiterState state = InitialState(l);
    std::vector<int64_t> running;  // costs in flight, by the model
    int64_t in_flight = 0, denied = 0;
    for (int step_no = 0; step_no < 400; ++step_no) {
      if (!running.empty() && Uniform(rng, 0, 2) == 0) {
        const size_t i = Uniform<size_t>(rng, 0, running.size() - 1);
        state = Release(l, state, running[i]);
        in_flight -= running[i];
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const int64_t cost = Uniform<int64_t>(rng, 1, l.limit + 1);
        LimitStep step = Decide(l, state, kT0 + step_no, cost);
        CheckDecision(l, state, step, kT0 + step_no, cost);
        REQUIRE(step.decision.allowed == (in_flight + cost <= l.limit));
        if (step.decision.allowed) {
          running.push_back(cost);
          in_flight += cost;
        } else {
          ++denied;
        }
        state = std::move(step.state);
      }
      REQUIRE(in_flight <= l.limit);
      REQUIRE(std::get<ConcurrencyState>(state).in_flight == in_flight);
    }
    REQUIRE(denied > 0);
  }
}

TEST_CASE("limiters at extreme parameters and instants neither overflow nor lie",
          "[limiters][property]") {
  // Run under UBSan in CI (scripts/sanitize.sh): a signed overflow fails there.
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> counts = {1, 2, 3, 1'000'000'007, kMaxLimitCount - 1, kMaxLimitCount};
  const std::vector<Micros> windows = {1, 2, 999, kMicrosPerSecond, kMaxLimitWindow};
  const std::vector<Micros> instants = {kMinTime,     kMinTime + 1, -1,        0,        kT0,
                                        kMaxTime - 1, kMaxTime,     INT64_MIN, INT64_MAX};
  const std::vector<int64_t> costs = {INT64_MIN, -1, 0, 1, 2, kMaxLimitCount, INT64_MAX};
  for (Algorithm a :
       {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindowCounter,
        Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kConcurrency}) {
    int valid = 0;
    for (int64_t limit : counts) {
      for (Micros window : windows) {
        for (int64_t burst : counts) {
          Limit l{a, limit, window, burst};
          if (ValidateLimit(l)) continue;
          ++valid;
          CAPTURE(AlgorithmName(a), limit, window, burst);
          LimiterState state = InitialState(l);
          for (int i = 0; i < 40; ++i) {
            const Micros now = instants[Uniform<size_t>(rng, 0, instants.size() - 1)];
            const int64_t cost = costs[Uniform<size_t>(rng, 0, costs.size() - 1)];
            LimitStep step = Decide(l, state, now, cost);
            const LimitDecision& d = step.decision;
            REQUIRE(d.remaining >= 0);
            REQUIRE(d.remaining <= Quota(l));
            if (d.retry_after) REQUIRE(*d.retry_after >= 1);
            if (d.reset_after) REQUIRE(*d.reset_after >= 0);
            state = Release(l, std::move(step.state), cost);
          }
        }
      }
    }
    REQUIRE(valid > 0);
  }
}

}  // namespace
}  // namespace sluice
