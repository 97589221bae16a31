#include "shaper/limiters/limiter.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <type_traits>
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

namespace {

std::vector<int64_t> Integers(const LimiterState& state) {
  std::vector<int64_t> v{static_cast<int64_t>(state.index())};
  std::visit(
      [&v](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, FixedWindowState>) {
          v.insert(v.end(), {s.window_start, s.used});
        } else if constexpr (std::is_same_v<S, SlidingLogState>) {
          for (const SlidingLogEntry& e : s.entries) v.insert(v.end(), {e.at, e.cost});
        } else if constexpr (std::is_same_v<S, SlidingWindowCounterState>) {
          v.insert(v.end(), {s.window_start, s.current, s.previous});
        } else if constexpr (std::is_same_v<S, TokenBucketState>) {
          v.insert(v.end(), {s.updated_at, s.tokens, s.frac});
        } else if constexpr (std::is_same_v<S, GcraState>) {
          v.insert(v.end(), {s.tat_us, s.tat_frac});
        } else {
          v.push_back(s.in_flight);
        }
      },
      state);
  return v;
}

std::optional<std::vector<int64_t>> ParseIntegers(std::string_view text) {
  std::vector<int64_t> v;
  if (text.size() > 1'000'000) return std::nullopt;  // a sliding log of 30k+ instants at most
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int64_t x = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
    if (ec != std::errc() || end != item.data() + item.size()) return std::nullopt;
    v.push_back(x);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  return v;
}

}  // namespace

std::string EncodeState(const LimiterState& state) {
  std::string out;
  for (int64_t x : Integers(state)) {
    if (!out.empty()) out += ',';
    out += std::to_string(x);
  }
  return out;
}

LimiterState DecodeState(const Limit& limit, std::string_view text) {
  const auto v = ParseIntegers(text);
  const size_t want = static_cast<size_t>(limit.algorithm);
  if (!v || v->empty() || (*v)[0] != static_cast<int64_t>(want)) return InitialState(limit);
  const std::vector<int64_t>& x = *v;
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      if (x.size() == 3) return FixedWindowState{x[1], x[2]};
      break;
    case Algorithm::kSlidingLog:
      if (x.size() % 2 == 1) {
        SlidingLogState s;
        for (size_t i = 1; i + 1 < x.size(); i += 2) {
          s.entries.push_back(SlidingLogEntry{x[i], x[i + 1]});
          s.used += std::clamp<int64_t>(x[i + 1], 0, kMaxLimitCount);
        }
        return s;
      }
      break;
    case Algorithm::kSlidingWindowCounter:
      if (x.size() == 4) return SlidingWindowCounterState{x[1], x[2], x[3]};
      break;
    case Algorithm::kTokenBucket:
      if (x.size() == 4) return TokenBucketState{x[1], x[2], x[3]};
      break;
    case Algorithm::kGcra:
      if (x.size() == 3) return GcraState{x[1], x[2]};
      break;
    case Algorithm::kConcurrency:
      if (x.size() == 2) return ConcurrencyState{x[1]};
      break;
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
