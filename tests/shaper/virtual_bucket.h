// Test helpers for the shaper: exact rational arithmetic on schedules (to derive
// expectations from DESIGN.md's rules instead of from the implementation) and a
// virtual-time model of one bucket drained by always-ready workers.
// Header-only; used by tests/shaper/*_test.cc only.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "common/time.h"
#include "shaper/gcra.h"
#include "shaper/policy.h"

namespace sluice::testing {

// A bucket policy with the given rate (milli-units per second), capacity and burst.
inline BucketPolicy Policy(int64_t rate_milli, int64_t capacity, int64_t burst = 1) {
  BucketPolicy p;
  p.rate_milli = rate_milli;
  p.capacity = capacity;
  p.burst = burst;
  return p;
}

__extension__ typedef __int128 Int128;

// rate_milli is cost per 1000 s, i.e. per 1e9 µs.
inline constexpr Int128 kMicrosPer1000s = 1'000'000'000;

// ceil(a / b) for b > 0 and any sign of a.
inline Int128 CeilDiv(Int128 a, Int128 b) {
  Int128 q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return q;
}

// A schedule instant as an exact count of 1/rate_milli µs.
inline Int128 Units(ScheduleInstant s, int64_t rate_milli) {
  return static_cast<Int128>(s.us) * rate_milli + s.frac;
}

// `cost` units' emission interval in 1/rate_milli µs: cost / rate, exactly.
inline Int128 IntervalUnits(int64_t cost) { return static_cast<Int128>(cost) * kMicrosPer1000s; }

// The seed of a property test: Catch's --rng-seed when given, else a fixed default, so
// that a failure can be replayed (every property test CAPTUREs the seeds it uses).
inline uint64_t PropertySeed() {
  unsigned int s = Catch::rngSeed();
  return s != 0 ? s : 0x5111CE;
}

template <typename Int>
Int Uniform(std::mt19937_64& rng, Int lo, Int hi) {
  return std::uniform_int_distribution<Int>(lo, hi)(rng);
}

struct Arrival {
  Micros at = 0;
  int64_t cost = 1;
};

struct Release {
  Micros at = 0;
  int64_t cost = 1;
};

// Releases `jobs` (sorted by arrival) first-in first-out, each at the first whole
// microsecond its bucket allows and not before it arrived: virtual time jumps to
// exactly max(arrival, ReleaseAt(tat)). `tat` is updated in place.
inline std::vector<Release> DrainInOrder(const BucketPolicy& p, ScheduleInstant* tat,
                                         const std::vector<Arrival>& jobs, Micros start = 0) {
  std::vector<Release> out;
  out.reserve(jobs.size());
  Micros t = start;
  for (const Arrival& a : jobs) {
    t = std::max({t, a.at, ReleaseAt(p, *tat)});
    out.push_back(Release{t, a.cost});
    *tat = AfterRelease(p, *tat, a.cost, t);
  }
  return out;
}

}  // namespace sluice::testing
