#include "shaper/limiters/limiter.h"

#include <algorithm>
#include <array>
#include <utility>

#include "shaper/limiters/algorithms.h"

namespace sluice {
namespace {

constexpr std::array<std::pair<Algorithm, std::string_view>, 6> kNames{{
    {Algorithm::kFixedWindow, "fixed_window"},
    {Algorithm::kSlidingLog, "sliding_log"},
    {Algorithm::kSlidingWindowCounter, "sliding_window_counter"},
    {Algorithm::kTokenBucket, "token_bucket"},
    {Algorithm::kGcra, "gcra"},
    {Algorithm::kConcurrency, "concurrency"},
}};

bool Refills(Algorithm a) { return a == Algorithm::kTokenBucket || a == Algorithm::kGcra; }

// The state a new key of `a` starts from (the variant's alternatives are in
// Algorithm's order).
LimiterState Fresh(Algorithm a) {
  switch (a) {
    case Algorithm::kFixedWindow:
      return FixedWindowState{};
    case Algorithm::kSlidingLog:
      return SlidingLogState{};
    case Algorithm::kSlidingWindowCounter:
      return SlidingWindowCounterState{};
    case Algorithm::kTokenBucket:
      return TokenBucketState{};  // full: see InitialState
    case Algorithm::kGcra:
      return GcraState{};
    case Algorithm::kConcurrency:
      return ConcurrencyState{};
  }
  return FixedWindowState{};
}

}  // namespace

std::string_view AlgorithmName(Algorithm a) {
  for (const auto& [algorithm, name] : kNames) {
    if (algorithm == a) return name;
  }
  return "unknown";
}

std::optional<Algorithm> AlgorithmFromName(std::string_view name) {
  for (const auto& [algorithm, n] : kNames) {
    if (n == name) return algorithm;
  }
  return std::nullopt;
}

std::optional<std::string> ValidateLimit(const Limit& l) {
  const std::string max_count = std::to_string(kMaxLimitCount);
  if (l.limit < 1 || l.limit > kMaxLimitCount) {
    return "limit must be an integer from 1 to " + max_count;
  }
  if (l.algorithm == Algorithm::kConcurrency) return std::nullopt;
  if (l.window < 1 || l.window > kMaxLimitWindow) {
    return "window must be from 1 µs to " + std::to_string(kMaxLimitWindow / kMicrosPerSecond) +
           " s";
  }
  if (Refills(l.algorithm)) {
    if (l.burst < 1 || l.burst > kMaxLimitCount) {
      return "burst must be an integer from 1 to " + max_count;
    }
    // Refilling a whole burst must take at most kMaxSpan (the schedule fits the time type).
    if (static_cast<limiters::Int128>(l.burst) * l.window >
        static_cast<limiters::Int128>(kMaxSpan) * l.limit) {
      return "burst / limit x window must be at most 10000 years";
    }
  }
  return std::nullopt;
}

LimiterState InitialState(const Limit& limit) {
  LimiterState s = Fresh(limit.algorithm);
  if (auto* bucket = std::get_if<TokenBucketState>(&s)) bucket->tokens = limit.burst;
  return s;
}

LimitStep Decide(const Limit& limit, LimiterState state, Micros now, int64_t cost) {
  if (state.index() != static_cast<size_t>(limit.algorithm)) state = InitialState(limit);
  now = ClampTime(now);
  cost = std::max<int64_t>(1, cost);
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return limiters::DecideFixedWindow(limit, std::get<FixedWindowState>(state), now, cost);
    case Algorithm::kSlidingLog:
      return limiters::DecideSlidingLog(limit, std::move(std::get<SlidingLogState>(state)), now,
                                        cost);
    case Algorithm::kSlidingWindowCounter:
      return limiters::DecideSlidingWindowCounter(limit, std::get<SlidingWindowCounterState>(state),
                                                  now, cost);
    case Algorithm::kTokenBucket:
      return limiters::DecideTokenBucket(limit, std::get<TokenBucketState>(state), now, cost);
    case Algorithm::kGcra:
      return limiters::DecideGcra(limit, std::get<GcraState>(state), now, cost);
    case Algorithm::kConcurrency:
      return limiters::DecideConcurrency(limit, std::get<ConcurrencyState>(state), cost);
  }
  return LimitStep{};
}

LimiterState Release(const Limit& limit, LimiterState state, int64_t cost) {
  if (limit.algorithm != Algorithm::kConcurrency) return state;
  if (auto* c = std::get_if<ConcurrencyState>(&state)) {
    return limiters::ReleaseConcurrency(*c, std::max<int64_t>(1, cost));
  }
  return InitialState(limit);
}

size_t StateBytes(const LimiterState& state) {
  size_t bytes = std::visit([](const auto& s) { return sizeof(s); }, state);
  if (const auto* log = std::get_if<SlidingLogState>(&state)) {
    bytes += log->entries.capacity() * sizeof(SlidingLogEntry);
  }
  return bytes;
}

}  // namespace sluice
