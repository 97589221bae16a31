// Property tests of DESIGN.md rule 3 on virtual time: one bucket with a random policy
// and random arrivals, drained by always-ready workers that take the head the moment
// ReleaseAt allows. The bounds are derived from the rule, not from the code:
//   - a release at t needs t >= TAT - tau, and each release adds c/rate to the TAT,
//     so in any window [t_i, t_j] the cost released before the last one is at most
//     rate * (t_j - t_i) + burst - 1;
//   - with burst 1, release i+1 comes at least c_i/rate after release i;
//   - after idle, the bucket holds at most `burst` units of credit.
// Release instants are whole µs (rounded up, never early); bounds allow 1 µs for that.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shaper/gcra.h"
#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using testing::Arrival;
using testing::Int128;
using testing::Release;
using testing::Uniform;

constexpr Micros kT0 = 1'800'000'000'000'000;

struct Scenario {
  BucketPolicy policy;
  std::vector<Arrival> jobs;
};

// Arrivals in clumps separated by gaps from 0 to hours, so that the bucket is at
// times backlogged, at times partly rested and at times idle for long.
Scenario RandomScenario(std::mt19937_64& rng, bool unit_cost, std::optional<int64_t> burst) {
  Scenario s;
  s.policy.rate_milli = Uniform<int64_t>(rng, 500, 200'000);  // 0.5/s .. 200/s
  s.policy.burst = burst ? *burst : Uniform<int64_t>(rng, 1, 5);
  s.policy.capacity = 1'000'000;
  Micros t = kT0;
  int clumps = Uniform<int>(rng, 1, 12);
  for (int c = 0; c < clumps; ++c) {
    switch (Uniform<int>(rng, 0, 3)) {
      case 0:
        break;  // back to back
      case 1:
        t += Uniform<Micros>(rng, 0, 2'000'000);
        break;  // up to 2 s
      case 2:
        t += Uniform<Micros>(rng, 0, 60'000'000);
        break;  // up to a minute
      default:
        t += Uniform<Micros>(rng, 0, 10'000'000'000);
        break;  // hours
    }
    int n = Uniform<int>(rng, 1, 25);
    for (int k = 0; k < n; ++k) {
      if (Uniform<int>(rng, 0, 3) == 0) t += Uniform<Micros>(rng, 0, 500'000);
      s.jobs.push_back(Arrival{t, unit_cost ? 1 : Uniform<int64_t>(rng, 1, 3)});
    }
  }
  return s;
}

std::vector<Release> Drain(const Scenario& s) {
  ScheduleInstant tat{0, 0};  // a bucket that never released anything
  return testing::DrainInOrder(s.policy, &tat, s.jobs);
}

std::string Describe(const std::vector<Release>& r, size_t from, size_t to) {
  std::ostringstream o;
  for (size_t k = from; k <= to && k < r.size(); ++k) {
    o << "[" << k << "] t0+" << (r[k].at - kT0) << "us cost " << r[k].cost << "\n";
  }
  return o.str();
}

// Windows [t_i, t_i + w] starting at each release (the worst windows start at one).
// Returns a description of the first window over `limit`, or "" when none is.
// `limit(sum_before_last, sum_all, span_us)` returns true when the window is fine.
template <typename Limit>
std::string FirstBadWindow(const std::vector<Release>& r, Micros w, Limit limit) {
  size_t j = 0;
  int64_t sum = 0;  // cost of releases [i, j)
  for (size_t i = 0; i < r.size(); ++i) {
    if (j < i) {
      j = i;
      sum = 0;
    }
    while (j < r.size() && r[j].at - r[i].at <= w) sum += r[j++].cost;
    // releases i..j-1 are in the window; j-1 >= i always.
    Micros span = r[j - 1].at - r[i].at;
    if (!limit(sum - r[j - 1].cost, sum, span)) {
      std::ostringstream o;
      o << "window of " << w << "us from release " << i << " holds cost " << sum << " over " << span
        << "us:\n"
        << Describe(r, i, j - 1);
      return o.str();
    }
    sum -= r[i].cost;
  }
  return "";
}

std::vector<Micros> Windows(const BucketPolicy& p) {
  Micros t = CostDuration(1, p.rate_milli).us;
  return {1, t / 2, t, t + 1, 3 * t, 10 * t + 7, 1'000'000, 60'000'000};
}

TEST_CASE("Property: unit jobs released in any window w number at most rate*w + burst",
          "[gcra][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  for (uint64_t c = 0; c < 3000; ++c) {
    std::mt19937_64 rng(seed * 1'000'003 + c);
    Scenario s = RandomScenario(rng, /*unit_cost=*/true, std::nullopt);
    std::vector<Release> r = Drain(s);
    CAPTURE(c, s.policy.rate_milli, s.policy.burst, s.jobs.size());
    for (Micros w : Windows(s.policy)) {
      // count <= rate*(w + 1µs) + burst, in units of 1e-9 cost (rate_milli / 1e9 per µs).
      auto fits = [&](int64_t, int64_t all, Micros) {
        return static_cast<Int128>(all - s.policy.burst) * testing::kMicrosPer1000s <=
               static_cast<Int128>(s.policy.rate_milli) * (w + 1);
      };
      std::string bad = FirstBadWindow(r, w, fits);
      INFO(bad);
      REQUIRE(bad.empty());
    }
  }
}

TEST_CASE("Property: with costs, cost before a window's last release <= rate*span + burst-1",
          "[gcra][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  for (uint64_t c = 0; c < 3000; ++c) {
    std::mt19937_64 rng(seed * 1'000'033 + c);
    Scenario s = RandomScenario(rng, /*unit_cost=*/false, std::nullopt);
    std::vector<Release> r = Drain(s);
    CAPTURE(c, s.policy.rate_milli, s.policy.burst, s.jobs.size());
    for (Micros w : Windows(s.policy)) {
      auto fits = [&](int64_t before_last, int64_t, Micros span) {
        return static_cast<Int128>(before_last - (s.policy.burst - 1)) * testing::kMicrosPer1000s <=
               static_cast<Int128>(s.policy.rate_milli) * (span + 1);
      };
      std::string bad = FirstBadWindow(r, w, fits);
      INFO(bad);
      REQUIRE(bad.empty());
    }
  }
}

TEST_CASE("Property: with burst 1, consecutive releases are at least cost/rate apart",
          "[gcra][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  for (uint64_t c = 0; c < 3000; ++c) {
    std::mt19937_64 rng(seed * 1'000'037 + c);
    Scenario s = RandomScenario(rng, /*unit_cost=*/false, /*burst=*/1);
    std::vector<Release> r = Drain(s);
    CAPTURE(c, s.policy.rate_milli, s.jobs.size());
    for (size_t i = 0; i + 1 < r.size(); ++i) {
      // gap >= c_i / rate, allowing the 1 µs of rounding to whole microseconds.
      Int128 gap_units = static_cast<Int128>(r[i + 1].at - r[i].at + 1) * s.policy.rate_milli;
      if (gap_units < testing::IntervalUnits(r[i].cost)) {
        INFO(Describe(r, i, i + 1));
        REQUIRE(gap_units >= testing::IntervalUnits(r[i].cost));
      }
    }
  }
}

TEST_CASE("Property: after an idle period of any length at most `burst` units leave at once",
          "[gcra][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  int rested_clumps = 0;
  for (uint64_t c = 0; c < 3000; ++c) {
    std::mt19937_64 rng(seed * 1'000'039 + c);
    Scenario s = RandomScenario(rng, /*unit_cost=*/false, std::nullopt);
    std::vector<Release> r = Drain(s);
    CAPTURE(c, s.policy.rate_milli, s.policy.burst, s.jobs.size());
    // Releases sharing one instant left back to back: all but the last of them
    // must fit in the burst tolerance, i.e. cost before the last <= burst - 1.
    for (size_t i = 0; i < r.size();) {
      size_t j = i;
      int64_t sum = 0;
      while (j < r.size() && r[j].at == r[i].at) sum += r[j++].cost;
      int64_t before_last = sum - r[j - 1].cost;
      if (before_last > s.policy.burst - 1) {
        INFO(Describe(r, i, j - 1));
        REQUIRE(before_last <= s.policy.burst - 1);
      }
      if (j - i > 1) ++rested_clumps;
      i = j;
    }
  }
  // The scenarios do contain back-to-back releases (otherwise this proves nothing).
  CHECK(rested_clumps > 100);
}

}  // namespace
}  // namespace sluice
