// Admission (shaper/admission.h): DESIGN.md rules 1 (capacity, Retry-After) and 2
// (deadline-aware admission), the estimated start, and the RateLimit numbers.
#include "shaper/admission.h"

#include <catch2/catch.hpp>
#include <deque>
#include <random>

#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using testing::CeilDiv;
using testing::Int128;
using testing::IntervalUnits;
using testing::Uniform;
using testing::Units;

constexpr Micros kNow = 1'800'000'000'000'000;
constexpr Micros kSecond = kMicrosPerSecond;

using testing::Policy;

BucketState Bucket(ScheduleInstant tat, int64_t queued_cost) {
  BucketState b;
  b.tat = tat;
  b.queued_count = queued_cost;  // unit jobs unless a test says otherwise
  b.queued_cost = queued_cost;
  return b;
}

AdmissionRequest Request(int64_t cost, std::optional<Micros> deadline = std::nullopt) {
  AdmissionRequest r;
  r.cost = cost;
  r.deadline = deadline;
  return r;
}

// A bucket's queued jobs (their costs, head first) and its schedule.
struct Backlog {
  ScheduleInstant tat;
  std::deque<int64_t> costs;
  int64_t cost() const {
    int64_t s = 0;
    for (int64_t c : costs) s += c;
    return s;
  }
  BucketState State() const {
    BucketState b;
    b.tat = tat;
    b.queued_count = static_cast<int64_t>(costs.size());
    b.queued_cost = cost();
    return b;
  }
};

// Workers take the head the moment the bucket lets it out, from `from` up to and
// including `until`; nothing else arrives. Returns the release instants.
std::vector<Micros> DrainUntil(const BucketPolicy& p, Backlog* b, Micros from, Micros until) {
  std::vector<Micros> at;
  Micros t = from;
  while (!b->costs.empty()) {
    Micros r = std::max(t, ReleaseAt(p, b->tat));
    if (r > until) break;
    b->tat = AfterRelease(p, b->tat, b->costs.front(), r);
    b->costs.pop_front();
    at.push_back(r);
    t = r;
  }
  return at;
}

// A random, plausible bucket: a backlog of jobs of cost 1..3 and a TAT within a few
// seconds of now (workers may be a little behind or the schedule ahead).
Backlog RandomBacklog(std::mt19937_64& rng, const BucketPolicy& p, int64_t min_cost,
                      bool unit_costs = false) {
  Backlog b;
  b.tat = ScheduleInstant{kNow + Uniform<Micros>(rng, -3 * kSecond, 3 * kSecond),
                          Uniform<int64_t>(rng, 0, p.rate_milli - 1)};
  int64_t target = Uniform<int64_t>(rng, min_cost, p.capacity);
  while (b.cost() < target) {
    int64_t c = unit_costs ? 1 : Uniform<int64_t>(rng, 1, 3);
    b.costs.push_back(std::min(c, target - b.cost()));
  }
  return b;
}

TEST_CASE("Rule 1: admitted iff queued_cost + cost <= capacity, else queue_full", "[admission]") {
  for (int64_t capacity : {1, 5, 10}) {
    BucketPolicy p = Policy(1000, capacity);
    for (int64_t queued = 0; queued <= capacity; ++queued) {
      for (int64_t cost = 1; cost <= capacity; ++cost) {
        CAPTURE(capacity, queued, cost);
        AdmissionDecision d = Admit(p, Bucket({kNow, 0}, queued), Request(cost), kNow);
        if (queued + cost <= capacity) {
          CHECK(d.outcome == AdmissionOutcome::kAdmitted);
          CHECK(d.retry_after_s == 0);
        } else {
          CHECK(d.outcome == AdmissionOutcome::kQueueFull);
          CHECK(d.retry_after_s >= 1);
        }
      }
    }
  }
}

TEST_CASE("A job heavier than the bucket's capacity is cost_over_capacity", "[admission]") {
  BucketPolicy p = Policy(1000, 10);
  for (int64_t queued : {0, 3, 10}) {
    CAPTURE(queued);
    AdmissionDecision d = Admit(p, Bucket({kNow, 0}, queued), Request(11), kNow);
    CHECK(d.outcome == AdmissionOutcome::kCostOverCapacity);
  }
  CHECK(Admit(p, Bucket({kNow, 0}, 0), Request(10), kNow).outcome == AdmissionOutcome::kAdmitted);
}

TEST_CASE("Retry-After: full bucket at 1/s, next release now, need 3 units -> 2 s", "[admission]") {
  // Rate 1/s, head releasable now: releases at now, now+1s, now+2s, ... A job of cost
  // 3 into a full bucket of 10 needs 3 units out; the third leaves at now+2s.
  BucketPolicy p = Policy(1000, 10);
  AdmissionDecision d = Admit(p, Bucket({kNow, 0}, 10), Request(3), kNow);
  REQUIRE(d.outcome == AdmissionOutcome::kQueueFull);
  CHECK(d.retry_after_s == 2);
  // Fractional: 1.5 s until the needed unit leaves rounds up to 2 s.
  d = Admit(p, Bucket({kNow + 1'500'000, 0}, 10), Request(1), kNow);
  REQUIRE(d.outcome == AdmissionOutcome::kQueueFull);
  CHECK(d.retry_after_s == 2);
  // Never 0, even when the head may leave right now.
  d = Admit(p, Bucket({kNow, 0}, 10), Request(1), kNow);
  REQUIRE(d.outcome == AdmissionOutcome::kQueueFull);
  CHECK(d.retry_after_s == 1);
}

TEST_CASE("Property: a client that waits exactly Retry-After is admitted",
          "[admission][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  int rejected = 0, multi_second = 0;
  for (uint64_t c = 0; c < 5000; ++c) {
    std::mt19937_64 rng(seed * 7'919 + c);
    BucketPolicy p = Policy(Uniform<int64_t>(rng, 500, 200'000), Uniform<int64_t>(rng, 1, 60),
                            Uniform<int64_t>(rng, 1, 5));
    int64_t cost = Uniform<int64_t>(rng, 1, std::min<int64_t>(3, p.capacity));
    // Full enough that this job does not fit.
    bool unit_costs = Uniform<int>(rng, 0, 1) == 1;
    Backlog b = RandomBacklog(rng, p, p.capacity - cost + 1, unit_costs);
    CAPTURE(c, unit_costs, p.rate_milli, p.capacity, p.burst, cost, b.cost(), b.tat.us - kNow,
            b.tat.frac);
    AdmissionDecision d = Admit(p, b.State(), Request(cost), kNow);
    REQUIRE(d.outcome == AdmissionOutcome::kQueueFull);
    REQUIRE(d.retry_after_s >= 1);
    ++rejected;
    Backlog later = b;
    Micros retry_at = kNow + d.retry_after_s * kSecond;
    std::vector<Micros> released = DrainUntil(p, &later, kNow, retry_at);
    CAPTURE(d.retry_after_s, released.size(), later.cost());
    CHECK(Admit(p, later.State(), Request(cost), retry_at).outcome == AdmissionOutcome::kAdmitted);
    // And the answer is not padded: one second earlier the job would not have fit.
    // (Admit knows only the queued cost, not how it splits into jobs, so this holds
    // when the queued jobs are unit jobs; a cost-3 head may free 3 units at once.)
    if (unit_costs && d.retry_after_s > 1) {
      ++multi_second;
      Backlog earlier = b;
      Micros early_at = retry_at - kSecond;
      DrainUntil(p, &earlier, kNow, early_at);
      CHECK(Admit(p, earlier.State(), Request(cost), early_at).outcome ==
            AdmissionOutcome::kQueueFull);
    }
  }
  CHECK(rejected == 5000);
  CHECK(multi_second > 250);
}

// At 3/s with burst 1 the releases of a backlogged bucket are at now, now + 1/3 s,
// now + 2/3 s and now + 1 s exactly (rule 3). Four unit jobs queued, capacity 4, a
// job of cost 4 needs all four out: the fourth leaves at now + 1 s, so Retry-After is
// 1 s, and DESIGN.md promises that coming back after 1 s is not answered 429 again.
// Fails today because AfterRelease drops the 1/3 µs fraction at every release (see
// gcra_test.cc "no per-release rounding drift"): the fourth leaves at now + 1000002 µs.
TEST_CASE("Retry-After is honest when the drain ends on a whole second", "[admission]") {
  BucketPolicy p = Policy(3000, 4);
  Backlog b;
  b.tat = ScheduleInstant{kNow, 0};
  b.costs = {1, 1, 1, 1};
  AdmissionDecision d = Admit(p, b.State(), Request(4), kNow);
  REQUIRE(d.outcome == AdmissionOutcome::kQueueFull);
  REQUIRE(d.retry_after_s == 1);
  std::vector<Micros> released = DrainUntil(p, &b, kNow, kNow + kSecond);
  CHECK(released == std::vector<Micros>{kNow, kNow + 333'334, kNow + 666'667, kNow + kSecond});
  CHECK(Admit(p, b.State(), Request(4), kNow + kSecond).outcome == AdmissionOutcome::kAdmitted);
}

TEST_CASE("Rule 2: a deadline before the estimated start is deadline_unreachable", "[admission]") {
  // 1/s, five unit jobs ahead, next release now: this job would start at now + 5 s.
  BucketPolicy p = Policy(1000, 100);
  BucketState b = Bucket({kNow, 0}, 5);
  AdmissionDecision d = Admit(p, b, Request(1, kNow + 5 * kSecond - 1), kNow);
  CHECK(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
  CHECK(d.estimated_start == kNow + 5 * kSecond);

  d = Admit(p, b, Request(1, kNow + 6 * kSecond), kNow);
  CHECK(d.outcome == AdmissionOutcome::kAdmitted);
  CHECK(d.estimated_start == kNow + 5 * kSecond);

  // not_before moves the estimate later (and a not_before at or after the deadline
  // can never succeed: see "Deadlines that can never be met").
  AdmissionRequest r = Request(1, kNow + 6 * kSecond);
  r.not_before = kNow + 5 * kSecond + 500'000;
  d = Admit(p, b, r, kNow);
  CHECK(d.outcome == AdmissionOutcome::kAdmitted);
  CHECK(d.estimated_start == kNow + 5 * kSecond + 500'000);
}

// "A job must *start* before its deadline" (rule 6), and the store expires a queued
// job once deadline_at <= now. A job whose estimated start equals its deadline can
// only expire, so rule 2 should not admit it. Admit compares `start > deadline`.
TEST_CASE("Rule 2: a job estimated to start exactly at its deadline is not admitted",
          "[admission]") {
  BucketPolicy p = Policy(1000, 100);
  AdmissionDecision d = Admit(p, Bucket({kNow, 0}, 5), Request(1, kNow + 5 * kSecond), kNow);
  CHECK(d.estimated_start == kNow + 5 * kSecond);
  CHECK(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
  // An idle bucket starts the job now: a deadline of now is already past.
  d = Admit(p, Bucket({kNow, 0}, 0), Request(1, kNow), kNow);
  CHECK(d.outcome == AdmissionOutcome::kDeadlinePassed);
}

TEST_CASE("Property: no admitted job has estimated_start after its deadline",
          "[admission][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  int admitted = 0, unreachable = 0, invalid = 0;
  for (uint64_t c = 0; c < 5000; ++c) {
    std::mt19937_64 rng(seed * 104'729 + c);
    BucketPolicy p = Policy(Uniform<int64_t>(rng, 500, 200'000), Uniform<int64_t>(rng, 4, 60),
                            Uniform<int64_t>(rng, 1, 5));
    Backlog b = RandomBacklog(rng, p, 0);
    int64_t cost = Uniform<int64_t>(rng, 1, 3);
    if (b.cost() + cost > p.capacity) b.costs.clear();
    Micros estimate = EstimatedStart(p, b.tat, b.cost(), kNow);
    AdmissionRequest r = Request(cost, estimate + Uniform<Micros>(rng, -2 * kSecond, 2 * kSecond));
    if (Uniform<int>(rng, 0, 3) == 0) r.not_before = kNow + Uniform<Micros>(rng, 0, 10 * kSecond);
    CAPTURE(c, p.rate_milli, p.capacity, p.burst, b.cost(), cost, *r.deadline - kNow);
    AdmissionDecision d = Admit(p, b.State(), r, kNow);
    if (*r.deadline <= kNow) {
      ++invalid;
      REQUIRE(d.outcome == AdmissionOutcome::kDeadlinePassed);
      continue;
    }
    if (r.not_before && *r.not_before >= *r.deadline) {
      ++invalid;
      REQUIRE(d.outcome == AdmissionOutcome::kNotBeforeAfterDeadline);
      continue;
    }
    Micros expected_start = std::max(estimate, r.not_before.value_or(kNow));
    CHECK(d.estimated_start == expected_start);
    if (d.outcome == AdmissionOutcome::kAdmitted) {
      ++admitted;
      REQUIRE(d.estimated_start < *r.deadline);
    } else {
      ++unreachable;
      REQUIRE(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
      // A job must start *before* its deadline: starting at it is too late.
      REQUIRE(d.estimated_start >= *r.deadline);
    }
  }
  CHECK(admitted > 1000);
  CHECK(unreachable > 500);
  CHECK(invalid > 500);
}

TEST_CASE("Deadlines that can never be met are refused before anything else", "[admission]") {
  BucketPolicy p = Policy(1000, 10);
  // Whatever the bucket holds (empty, full, or the job heavier than capacity), a
  // deadline at or before now, or a not_before at or after the deadline, is the answer.
  for (int64_t queued : {0, 9, 10}) {
    for (int64_t cost : {1, 11}) {
      CAPTURE(queued, cost);
      BucketState b = Bucket({kNow + 3 * kSecond, 0}, queued);
      for (Micros deadline : {kNow, kNow - 1, kMinTime}) {
        AdmissionDecision d = Admit(p, b, Request(cost, deadline), kNow);
        CHECK(d.outcome == AdmissionOutcome::kDeadlinePassed);
        CHECK(d.deadline == deadline);
        CHECK(d.retry_after_s == 0);  // no wait helps
      }
      for (Micros not_before : {kNow + kSecond, kNow + 2 * kSecond}) {
        AdmissionRequest r = Request(cost, kNow + kSecond);
        r.not_before = not_before;
        AdmissionDecision d = Admit(p, b, r, kNow);
        CHECK(d.outcome == AdmissionOutcome::kNotBeforeAfterDeadline);
        CHECK(d.deadline == kNow + kSecond);
        CHECK(d.retry_after_s == 0);
      }
    }
  }
  // One microsecond either side: a deadline just after now and a not_before just
  // before the deadline are judged by the backlog as usual.
  CHECK(Admit(p, Bucket({kNow, 0}, 0), Request(1, kNow + 1), kNow).outcome ==
        AdmissionOutcome::kAdmitted);
  AdmissionRequest r = Request(1, kNow + kSecond);
  r.not_before = kNow + kSecond - 1;
  AdmissionDecision d = Admit(p, Bucket({kNow, 0}, 0), r, kNow);
  CHECK(d.outcome == AdmissionOutcome::kAdmitted);
  CHECK(d.estimated_start == kNow + kSecond - 1);
}

// 1/s, five unit jobs ahead, next release now: the job would start at now + 5 s. With a
// deadline 2.5 s away it is 2.5 s too late; a job with the same relative deadline
// fits once more than 2.5 s have passed, so Retry-After is 3 s (and 2 s is too soon).
TEST_CASE("Retry-After of deadline_unreachable: the same relative deadline fits after it",
          "[admission]") {
  BucketPolicy p = Policy(1000, 100);
  const Micros relative = 2 * kSecond + 500'000;
  Backlog b;
  b.tat = ScheduleInstant{kNow, 0};
  b.costs = {1, 1, 1, 1, 1};
  AdmissionDecision d = Admit(p, b.State(), Request(1, kNow + relative), kNow);
  REQUIRE(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
  CHECK(d.estimated_start == kNow + 5 * kSecond);
  CHECK(d.retry_after_s == 3);

  Backlog early = b;
  DrainUntil(p, &early, kNow, kNow + 2 * kSecond);
  CHECK(Admit(p, early.State(), Request(1, kNow + 2 * kSecond + relative), kNow + 2 * kSecond)
            .outcome == AdmissionOutcome::kDeadlineUnreachable);
  DrainUntil(p, &b, kNow, kNow + 3 * kSecond);
  CHECK(
      Admit(p, b.State(), Request(1, kNow + 3 * kSecond + relative), kNow + 3 * kSecond).outcome ==
      AdmissionOutcome::kAdmitted);

  // A deadline 1 µs short of the estimate still needs a whole second.
  CHECK(Admit(p, Bucket({kNow, 0}, 5), Request(1, kNow + 5 * kSecond - 1), kNow).retry_after_s ==
        1);
}

TEST_CASE("Property: a client that waits the deadline_unreachable Retry-After is admitted",
          "[admission][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  int cases = 0, tight = 0;
  for (uint64_t c = 0; c < 5000; ++c) {
    std::mt19937_64 rng(seed * 7'919 + c);
    BucketPolicy p = Policy(Uniform<int64_t>(rng, 500, 200'000), Uniform<int64_t>(rng, 4, 60),
                            Uniform<int64_t>(rng, 1, 5));
    Backlog b = RandomBacklog(rng, p, 1);
    const int64_t cost = Uniform<int64_t>(rng, 1, 3);
    if (b.cost() + cost > p.capacity) continue;
    const Micros estimate = EstimatedStart(p, b.tat, b.cost(), kNow);
    if (estimate <= kNow + 1) continue;
    // A relative deadline the backlog misses.
    const Micros relative = Uniform<Micros>(rng, 1, estimate - kNow);
    AdmissionRequest r = Request(cost, kNow + relative);
    if (Uniform<int>(rng, 0, 2) == 0) r.not_before = kNow + Uniform<Micros>(rng, 0, relative - 1);
    CAPTURE(c, p.rate_milli, p.capacity, p.burst, b.cost(), cost, estimate - kNow, relative);
    AdmissionDecision d = Admit(p, b.State(), r, kNow);
    REQUIRE(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
    REQUIRE(d.retry_after_s >= 1);
    ++cases;
    // Coming back after Retry-After with the same relative deadline (and not_before).
    const Micros retry_at = kNow + d.retry_after_s * kSecond;
    Backlog later = b;
    DrainUntil(p, &later, kNow, retry_at);
    AdmissionRequest again = Request(cost, retry_at + relative);
    if (r.not_before) again.not_before = *r.not_before + (retry_at - kNow);
    CAPTURE(d.retry_after_s, later.cost());
    REQUIRE(Admit(p, later.State(), again, retry_at).outcome == AdmissionOutcome::kAdmitted);
    // And it is not longer than it must be: a second earlier is still too late.
    if (d.retry_after_s > 1) {
      const Micros sooner = retry_at - kSecond;
      Backlog before = b;
      DrainUntil(p, &before, kNow, sooner);
      AdmissionRequest early = Request(cost, sooner + relative);
      CHECK(Admit(p, before.State(), early, sooner).outcome ==
            AdmissionOutcome::kDeadlineUnreachable);
      ++tight;
    }
  }
  CHECK(cases > 2000);
  CHECK(tight > 500);
}

TEST_CASE("EstimatedStart with burst 1 is max(now, TAT) + queued_cost/rate, rounded up",
          "[admission][property]") {
  // Concrete: 2/s, TAT 0.25 s from now, 3 units ahead: now + 0.25 s + 1.5 s.
  CHECK(EstimatedStart(Policy(2000, 100), {kNow + 250'000, 0}, 3, kNow) == kNow + 1'750'000);
  // TAT in the past counts from now.
  CHECK(EstimatedStart(Policy(2000, 100), {kNow - 9 * kSecond, 0}, 3, kNow) == kNow + 1'500'000);
  // Nothing ahead and a past TAT: now.
  CHECK(EstimatedStart(Policy(2000, 100), {kNow - 1, 0}, 0, kNow) == kNow);

  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5000; ++i) {
    BucketPolicy p = Policy(Uniform<int64_t>(rng, 1, 10'000'000), 1'000'000);
    ScheduleInstant tat{kNow + Uniform<Micros>(rng, -100 * kSecond, 100 * kSecond),
                        Uniform<int64_t>(rng, 0, p.rate_milli - 1)};
    int64_t ahead = Uniform<int64_t>(rng, 0, 1000);
    CAPTURE(p.rate_milli, tat.us - kNow, tat.frac, ahead);
    Int128 base = std::max(static_cast<Int128>(kNow) * p.rate_milli, Units(tat, p.rate_milli));
    Micros expected = static_cast<Micros>(CeilDiv(base + IntervalUnits(ahead), p.rate_milli));
    REQUIRE(EstimatedStart(p, tat, ahead, kNow) == expected);
  }
}

TEST_CASE("Property: EstimatedStart is when the bucket actually lets the job out",
          "[admission][property]") {
  // With burst >= 2 a release is never later than the TAT, so the schedule keeps its
  // fraction and the estimate must be exact. With burst 1 it is a lower bound.
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  for (uint64_t c = 0; c < 5000; ++c) {
    std::mt19937_64 rng(seed * 15'485'863 + c);
    BucketPolicy p = Policy(Uniform<int64_t>(rng, 500, 200'000), Uniform<int64_t>(rng, 1, 60),
                            Uniform<int64_t>(rng, 1, 5));
    Backlog b = RandomBacklog(rng, p, 0);
    int64_t ahead = b.cost();
    Micros estimate = EstimatedStart(p, b.tat, ahead, kNow);
    b.costs.push_back(1);  // the new job, last in line
    size_t n = b.costs.size();
    std::vector<Micros> released = DrainUntil(p, &b, kNow, kNow + 1000 * kSecond);
    REQUIRE(released.size() == n);
    CAPTURE(c, p.rate_milli, p.burst, ahead, estimate - kNow, released.back() - kNow);
    if (p.burst >= 2) {
      CHECK(released.back() == estimate);
    } else {
      CHECK(released.back() >= estimate);
    }
  }
}

TEST_CASE("RateLimit numbers: remaining and reset after a decision", "[admission]") {
  BucketPolicy p = Policy(2000, 20);  // 2/s
  SECTION("admitted: remaining = capacity - queued_cost - cost") {
    AdmissionDecision d = Admit(p, Bucket({kNow, 0}, 7), Request(3), kNow);
    REQUIRE(d.outcome == AdmissionOutcome::kAdmitted);
    CHECK(d.remaining == 20 - 7 - 3);
    // The new job is the bucket's last: it leaves at now + 7/2 s -> t = 4 s.
    CHECK(d.estimated_start == kNow + 3'500'000);
    CHECK(d.reset_s == 4);
  }
  SECTION("queue_full: remaining is the free capacity now") {
    AdmissionDecision d = Admit(p, Bucket({kNow, 0}, 18), Request(3), kNow);
    REQUIRE(d.outcome == AdmissionOutcome::kQueueFull);
    CHECK(d.remaining == 2);
  }
  SECTION("property: remaining and reset for random admissions") {
    const uint64_t seed = testing::PropertySeed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 2000; ++i) {
      BucketPolicy q = Policy(Uniform<int64_t>(rng, 500, 200'000), Uniform<int64_t>(rng, 3, 60),
                              Uniform<int64_t>(rng, 1, 5));
      int64_t queued = Uniform<int64_t>(rng, 0, q.capacity - 3);
      int64_t cost = Uniform<int64_t>(rng, 1, 3);
      ScheduleInstant tat{kNow + Uniform<Micros>(rng, -kSecond, kSecond), 0};
      CAPTURE(q.rate_milli, q.capacity, q.burst, queued, cost, tat.us - kNow);
      AdmissionDecision d = Admit(q, Bucket(tat, queued), Request(cost), kNow);
      REQUIRE(d.outcome == AdmissionOutcome::kAdmitted);
      CHECK(d.remaining == q.capacity - queued - cost);
      CHECK(d.reset_s == CeilSeconds(EstimatedStart(q, tat, queued, kNow) - kNow));
    }
  }
}

TEST_CASE("DrainWindowSeconds = ceil(capacity / rate) when it is not whole", "[admission]") {
  CHECK(DrainWindowSeconds(Policy(3000, 100)) == 34);  // 33.3 s
  CHECK(DrainWindowSeconds(Policy(700, 10)) == 15);    // 14.28 s
  CHECK(DrainWindowSeconds(Policy(200'000, 1)) == 1);  // 5 ms
}

// RateLimit-Policy w must mean exactly what the bucket does: 100 units at 1/s drain in
// 100 s, not 101. DrainWindowSeconds adds 1 µs before rounding up, which is one second
// too many whenever capacity/rate is a whole number of seconds (e.g. the defaults).
TEST_CASE("DrainWindowSeconds = ceil(capacity / rate) when it is whole", "[admission]") {
  CHECK(DrainWindowSeconds(Policy(1000, 100)) == 100);
  CHECK(DrainWindowSeconds(Policy(2000, 100)) == 50);
  CHECK(DrainWindowSeconds(Policy(500, 10)) == 20);

  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2000; ++i) {
    BucketPolicy p = Policy(Uniform<int64_t>(rng, 1, 1'000'000), Uniform<int64_t>(rng, 1, 100'000));
    CAPTURE(p.rate_milli, p.capacity);
    Int128 ms = static_cast<Int128>(p.capacity) * 1000;  // capacity / rate in s = this / rate_milli
    REQUIRE(DrainWindowSeconds(p) == static_cast<int64_t>(CeilDiv(ms, p.rate_milli)));
  }
}

}  // namespace
}  // namespace sluice
