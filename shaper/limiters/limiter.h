// The request limiters of the intake-protection layers (DESIGN.md "Intake protection
// layers", docs/algorithms.md): fixed window, sliding log, sliding window counter, token
// bucket, GCRA and concurrency, behind one pure interface. Given a key's stored state,
// `now` and a request's cost, Decide returns the decision and the key's new state; it
// reads no clock and touches nothing else, so every algorithm runs on virtual time in
// tests and on the database's clock in a store.
//
// Invariants (checked by tests/shaper/limiters/*_test.cc, on virtual time):
//   1. Arithmetic is exact (integers, remainders carried) and never overflows, for any
//      Limit that ValidateLimit accepts, any cost >= 1 and any now (clamped to
//      [kMinTime, kMaxTime]); a state stored under another Limit is brought into range.
//   2. A denial changes no state (the sliding log and windows only drop what has aged
//      out, which changes no decision).
//   3. retry_after is honest and tight: a request denied with retry_after R is admitted
//      at now + R if nothing else arrived, and denied at now + R - 1 µs.
//   4. The admitted cost in any window obeys the algorithm's bound (docs/algorithms.md):
//      sliding log <= limit in every window of length `window`; fixed window and
//      sliding window counter <= 2 x limit in such a window (the fixed window's boundary
//      burst; the counter's weighting assumes the previous window was uniform);
//      token bucket and GCRA <= burst + limit x d / window over any span d;
//      concurrency <= limit in flight at once.
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/time.h"

namespace sluice {

enum class Algorithm {
  kFixedWindow,
  kSlidingLog,
  kSlidingWindowCounter,
  kTokenBucket,
  kGcra,
  kConcurrency,
};

// "fixed_window", "sliding_log", "sliding_window_counter", "token_bucket", "gcra",
// "concurrency": the names of the config file and the admin API.
std::string_view AlgorithmName(Algorithm a);
std::optional<Algorithm> AlgorithmFromName(std::string_view name);

// Ranges ValidateLimit enforces: wide enough for any API quota, narrow enough that every
// product of two of them fits the 128-bit intermediates (invariant 1).
inline constexpr int64_t kMaxLimitCount = 1'000'000'000'000'000;                 // 1e15 cost units
inline constexpr Micros kMaxLimitWindow = 366LL * 24 * 3600 * kMicrosPerSecond;  // a year

// One limiter's parameters. `limit` cost units per `window`:
//   fixed_window, sliding_log, sliding_window_counter: at most `limit` per window (each
//     algorithm's own reading of "per window", invariant 4);
//   token_bucket, gcra: refill (emission) at limit / window, holding at most `burst`;
//   concurrency: at most `limit` in flight; `window` and `burst` are not used.
struct Limit {
  Algorithm algorithm = Algorithm::kFixedWindow;
  int64_t limit = 1;
  Micros window = kMicrosPerSecond;
  int64_t burst = 1;  // token_bucket, gcra only
};

// Empty when valid, else what is wrong, naming the field and its range.
std::optional<std::string> ValidateLimit(const Limit& limit);

// Per-algorithm state of one key. A new key starts from InitialState.
struct FixedWindowState {
  Micros window_start = kMinTime;  // start of the window `used` counts in
  int64_t used = 0;
};
struct SlidingLogEntry {
  Micros at = 0;
  int64_t cost = 0;  // admitted at `at` (entries at one instant are merged)
};
struct SlidingLogState {
  std::vector<SlidingLogEntry>
      entries;       // oldest first, each within one window of the last decision
  int64_t used = 0;  // the sum of their costs
};
struct SlidingWindowCounterState {
  Micros window_start = kMinTime;  // start of the current window
  int64_t current = 0;             // admitted in the current window
  int64_t previous = 0;            // admitted in the window before it
};
struct TokenBucketState {
  Micros updated_at = kMinTime;  // when `tokens` was last refilled
  int64_t tokens = 0;            // whole tokens, at most burst
  int64_t frac = 0;              // plus frac / window of a token, 0 <= frac < window
};
struct GcraState {
  Micros tat_us = kMinTime;  // theoretical arrival time: tat_us + tat_frac / limit µs
  int64_t tat_frac = 0;      // 0 <= tat_frac < limit
};
struct ConcurrencyState {
  int64_t in_flight = 0;
};
using LimiterState = std::variant<FixedWindowState, SlidingLogState, SlidingWindowCounterState,
                                  TokenBucketState, GcraState, ConcurrencyState>;

// A key never seen: nothing used, a full bucket.
LimiterState InitialState(const Limit& limit);

// What one request is told. Durations are µs from `now`.
struct LimitDecision {
  bool allowed = false;
  int64_t limit = 0;      // the quota the layer describes (q of RateLimit-Policy)
  int64_t remaining = 0;  // cost units still admissible at `now`, after this decision
  // When denied: how long until the same request is admitted if nothing else arrives
  // (invariant 3). Empty when no wait helps (`never`) or no wait can be known
  // (concurrency: it depends on when requests in flight end).
  std::optional<Micros> retry_after;
  bool never = false;  // the cost is above what this limit can ever admit
  // How long until the quota is whole again if nothing else arrives; empty when the
  // algorithm has no such instant (concurrency).
  std::optional<Micros> reset_after;
};

struct LimitStep {
  LimitDecision decision;
  LimiterState state;  // to store for the key (unchanged but for aged-out data on a denial)
};

// One request of `cost` (>= 1; lower counts as 1) at `now`. A state of another
// algorithm than `limit`'s counts as a new key's.
LimitStep Decide(const Limit& limit, LimiterState state, Micros now, int64_t cost);

// Concurrency only: a request admitted with `cost` has ended. Other algorithms: no change.
LimiterState Release(const Limit& limit, LimiterState state, int64_t cost);

// A state as text for a store: its algorithm and integers, comma-separated
// ("0,1800000000000000,3" is a fixed window's). DecodeState gives EncodeState's state
// back; text of another algorithm than `limit`'s, or damaged, reads as a new key's
// state (what Decide does with such a state too).
std::string EncodeState(const LimiterState& state);
LimiterState DecodeState(const Limit& limit, std::string_view text);

// Bytes one key's state takes: its algorithm's struct plus what it owns (the sliding
// log's entries), without the variant's tag and padding.
size_t StateBytes(const LimiterState& state);

}  // namespace sluice
