// GCRA schedule arithmetic (shaper/gcra.h): exact emission intervals, release times
// with and without burst tolerance, and the idle reset of DESIGN.md rule 3.
#include "shaper/gcra.h"

#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using testing::CeilDiv;
using testing::Int128;
using testing::IntervalUnits;
using testing::Units;

constexpr Micros kT0 = 1'800'000'000'000'000;  // an instant in 2027

BucketPolicy Policy(int64_t rate_milli, int64_t burst) {
  BucketPolicy p;
  p.rate_milli = rate_milli;
  p.burst = burst;
  return p;
}

TEST_CASE("CostDuration splits cost/rate into whole µs and an exact remainder", "[gcra]") {
  // 1 unit at 3/s is 1/3 s = 333333 µs + 1/3 µs; 1/3 µs is 1000 of 1/3000 µs.
  CHECK(CostDuration(1, 3000) == ScheduleInstant{333'333, 1000});
  // 2 units at 1/s is exactly 2 s.
  CHECK(CostDuration(2, 1000) == ScheduleInstant{2'000'000, 0});
  // The slowest rate, 0.001/s: one unit takes 1000 s.
  CHECK(CostDuration(1, 1) == ScheduleInstant{1'000'000'000, 0});
  // A rate faster than 1 unit per µs: 1 unit at 2,000,000/s is half a µs.
  CHECK(CostDuration(1, 2'000'000'000) == ScheduleInstant{0, 1'000'000'000});

  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5000; ++i) {
    int64_t cost = testing::Uniform<int64_t>(rng, 0, 1'000'000);
    int64_t rate_milli = testing::Uniform<int64_t>(rng, 1, 1'000'000'000'000);
    ScheduleInstant d = CostDuration(cost, rate_milli);
    CAPTURE(cost, rate_milli, d.us, d.frac);
    REQUIRE(d.frac >= 0);
    REQUIRE(d.frac < rate_milli);
    REQUIRE(Units(d, rate_milli) == IntervalUnits(cost));
  }
}

TEST_CASE("A million AdvanceBy steps at 3/s land exactly on t0 + 333333333333 1/3 µs", "[gcra]") {
  ScheduleInstant tat{kT0, 0};
  for (int i = 0; i < 1'000'000; ++i) tat = AdvanceBy(tat, 1, 3000);
  // 10^6 × (1/3 s) = 333333.333... s: no rounding accumulated over the steps.
  CHECK(tat.us == kT0 + 333'333'333'333);
  CHECK(tat.frac == 1000);
}

TEST_CASE("AdvanceBy step by step equals one step of the summed cost", "[gcra]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2000; ++i) {
    int64_t rate_milli = testing::Uniform<int64_t>(rng, 1, 10'000'000);
    ScheduleInstant start{testing::Uniform<Micros>(rng, 0, kT0),
                          testing::Uniform<int64_t>(rng, 0, rate_milli - 1)};
    ScheduleInstant stepwise = start;
    int64_t total = 0;
    int steps = testing::Uniform<int>(rng, 1, 50);
    for (int s = 0; s < steps; ++s) {
      int64_t cost = testing::Uniform<int64_t>(rng, 1, 5);
      stepwise = AdvanceBy(stepwise, cost, rate_milli);
      total += cost;
    }
    CAPTURE(i, rate_milli, start.us, start.frac, total);
    REQUIRE(stepwise == AdvanceBy(start, total, rate_milli));
    REQUIRE(Units(stepwise, rate_milli) == Units(start, rate_milli) + IntervalUnits(total));
  }
}

TEST_CASE("ReleaseAt with burst 1 is the TAT rounded up to a whole µs", "[gcra]") {
  BucketPolicy p = Policy(3000, 1);
  CHECK(ReleaseAt(p, ScheduleInstant{kT0, 0}) == kT0);
  CHECK(ReleaseAt(p, ScheduleInstant{kT0, 1}) == kT0 + 1);
  CHECK(ReleaseAt(p, ScheduleInstant{kT0, 2999}) == kT0 + 1);

  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5000; ++i) {
    BucketPolicy q = Policy(testing::Uniform<int64_t>(rng, 1, 1'000'000'000), 1);
    ScheduleInstant tat{testing::Uniform<Micros>(rng, 0, kT0),
                        testing::Uniform<int64_t>(rng, 0, q.rate_milli - 1)};
    CAPTURE(q.rate_milli, tat.us, tat.frac);
    REQUIRE(ReleaseAt(q, tat) ==
            static_cast<Micros>(CeilDiv(Units(tat, q.rate_milli), q.rate_milli)));
  }
}

TEST_CASE("ReleaseAt with burst b is TAT - (b-1)/rate, rounded up", "[gcra]") {
  // 2/s, burst 3: tau = 2 units / (2/s) = 1 s before the TAT.
  CHECK(ReleaseAt(Policy(2000, 3), ScheduleInstant{kT0, 0}) == kT0 - 1'000'000);
  // 3/s, burst 2: tau = 1/3 s; TAT - tau = kT0 - 333333 1/3 µs, rounded up.
  CHECK(ReleaseAt(Policy(3000, 2), ScheduleInstant{kT0, 0}) == kT0 - 333'333);
  // A fraction on the TAT that exactly cancels tau's: kT0 + 1/3 - 1/3 s is whole.
  CHECK(ReleaseAt(Policy(3000, 2), ScheduleInstant{kT0, 1000}) == kT0 - 333'333);
  CHECK(ReleaseAt(Policy(3000, 2), ScheduleInstant{kT0, 1001}) == kT0 - 333'332);

  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5000; ++i) {
    BucketPolicy p = Policy(testing::Uniform<int64_t>(rng, 1, 1'000'000'000),
                            testing::Uniform<int64_t>(rng, 1, 1000));
    ScheduleInstant tat{testing::Uniform<Micros>(rng, 0, kT0),
                        testing::Uniform<int64_t>(rng, 0, p.rate_milli - 1)};
    CAPTURE(p.rate_milli, p.burst, tat.us, tat.frac);
    Int128 release_units = Units(tat, p.rate_milli) - IntervalUnits(p.burst - 1);
    REQUIRE(ReleaseAt(p, tat) == static_cast<Micros>(CeilDiv(release_units, p.rate_milli)));
  }
}

TEST_CASE("AfterRelease: TAT = max(TAT, now) + cost/rate", "[gcra]") {
  BucketPolicy p = Policy(3000, 3);
  SECTION("from idle the schedule restarts at now: idle earns no credit") {
    ScheduleInstant stale{kT0 - 3'600'000'000, 7};  // an hour ago
    CHECK(AfterRelease(p, stale, 1, kT0) == ScheduleInstant{kT0 + 333'333, 1000});
    CHECK(AfterRelease(p, ScheduleInstant{0, 0}, 2, kT0) == ScheduleInstant{kT0 + 666'666, 2000});
  }
  SECTION("a release ahead of the TAT (burst credit) moves the TAT, not now") {
    ScheduleInstant ahead{kT0 + 500'000, 1500};
    CHECK(AfterRelease(p, ahead, 1, kT0) == ScheduleInstant{kT0 + 833'333, 2500});
  }
  SECTION("a release exactly at a whole-µs TAT") {
    CHECK(AfterRelease(p, ScheduleInstant{kT0, 0}, 3, kT0) == ScheduleInstant{kT0 + 1'000'000, 0});
  }
}

TEST_CASE("After any idle period exactly `burst` unit jobs may leave at once", "[gcra]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2000; ++i) {
    BucketPolicy p =
        Policy(testing::Uniform<int64_t>(rng, 500, 200'000), testing::Uniform<int64_t>(rng, 1, 5));
    // Some history: a few releases at random times, leaving the TAT somewhere.
    ScheduleInstant tat{testing::Uniform<Micros>(rng, 0, kT0), 0};
    Micros t = tat.us;
    for (int k = testing::Uniform<int>(rng, 0, 10); k > 0; --k) {
      t = std::max(t + testing::Uniform<Micros>(rng, 0, 3'000'000), ReleaseAt(p, tat));
      tat = AfterRelease(p, tat, testing::Uniform<int64_t>(rng, 1, 3), t);
    }
    // Idle long enough for the TAT to pass, plus anything from 0 to ~11 days more.
    Micros now = std::max(t, ReleaseAt(Policy(p.rate_milli, 1), tat)) +
                 testing::Uniform<Micros>(rng, 0, 1'000'000'000'000);
    CAPTURE(i, p.rate_milli, p.burst, tat.us, tat.frac, now);
    int64_t released_now = 0;
    while (released_now <= p.burst && ReleaseAt(p, tat) <= now) {
      tat = AfterRelease(p, tat, 1, now);
      ++released_now;
    }
    REQUIRE(released_now == p.burst);
  }
}

// DESIGN.md rule 3 with the exact schedule of gcra.h's invariant 1: a bucket that is
// always backlogged (burst 1) releases its n-th job at TAT0 + n·T, rounded up to the
// µs; releasing at whole microseconds must not push the schedule later each time.
// Today AfterRelease treats a release at ceil(TAT) as "after idle" (tat.us < now) and
// restarts the schedule at now, dropping the fraction: every release loses up to 1 µs,
// so the long-run rate is 1/ceil(T) instead of the configured rate.
TEST_CASE("A backlogged bucket keeps its exact long-run rate (no per-release rounding drift)",
          "[gcra]") {
  for (int64_t rate_milli : {3000, 7000, 700, 150'000, 300'000'000}) {
    BucketPolicy p = Policy(rate_milli, 1);
    ScheduleInstant tat{kT0, 0};
    std::vector<testing::Arrival> jobs(3000, testing::Arrival{kT0, 1});
    std::vector<testing::Release> releases = testing::DrainInOrder(p, &tat, jobs, kT0);
    int first_bad = -1;
    for (size_t n = 0; n < releases.size() && first_bad < 0; ++n) {
      Micros ideal = static_cast<Micros>(
          CeilDiv(static_cast<Int128>(kT0) * rate_milli + IntervalUnits(static_cast<int64_t>(n)),
                  rate_milli));
      if (releases[n].at != ideal) first_bad = static_cast<int>(n);
    }
    CAPTURE(rate_milli, first_bad);
    if (first_bad >= 0) {
      CAPTURE(releases[static_cast<size_t>(first_bad)].at - kT0);
    }
    CHECK(first_bad == -1);
  }
}

TEST_CASE("Normalize keeps a stored fraction inside [0, rate_milli)", "[gcra]") {
  CHECK(Normalize(ScheduleInstant{kT0, -5}, 1000).frac == 0);
  CHECK(Normalize(ScheduleInstant{kT0, 5000}, 1000).frac == 999);
  CHECK(Normalize(ScheduleInstant{kT0, 999}, 1000) == ScheduleInstant{kT0, 999});
  // A rate lowered under a stored TAT never moves the release more than 1 µs.
  BucketPolicy p = Policy(1000, 1);
  CHECK(ReleaseAt(p, ScheduleInstant{kT0, 2999}) == kT0 + 1);
}

}  // namespace
}  // namespace sluice
