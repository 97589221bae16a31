// The shaper at the edges of its ranges and beyond them (gcra.h invariant 3): policies
// built directly as BucketPolicy, bypassing PolicyFromJson's bounds; state stored under
// one policy meeting another; costs up to 1e9 and INT64_MAX; `now` near the end of the
// representable range. Nothing may overflow (these tests also run under UBSan), no
// time may leave [kMinTime, kMaxTime], and no job that can only expire is admitted.
#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "shaper/admission.h"
#include "shaper/backoff.h"
#include "shaper/dispatch.h"
#include "shaper/gcra.h"
#include "shaper/simulate.h"
#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using testing::CeilDiv;
using testing::Int128;
using testing::IntervalUnits;
using testing::Uniform;
using testing::Units;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr Micros kNow = 1'800'000'000'000'000;  // 2027
constexpr Micros kSecond = kMicrosPerSecond;
constexpr ScheduleInstant kEnd{kMaxTime, 0};

using testing::Policy;

BucketState Backlog(ScheduleInstant tat, int64_t queued_cost) {
  BucketState b;
  b.tat = tat;
  b.queued_count = 1;
  b.queued_cost = queued_cost;
  return b;
}

bool InRange(Micros t) { return t >= kMinTime && t <= kMaxTime; }

// A printed time has a four-digit year: "YYYY-MM-DDTHH:MM:SS.mmmZ".
void RequirePrintable(Micros t) {
  const std::string s = FormatRfc3339(t);
  CAPTURE(t, s);
  REQUIRE(s.size() == 24);
  REQUIRE(s[4] == '-');
  REQUIRE(ParseRfc3339(s));
}

TEST_CASE("CostDuration and AdvanceBy saturate instead of overflowing", "[gcra][extremes]") {
  // 1e12 units at 0.001/s is 1e15 s = 1e21 µs: past int64_t, so kMaxSpan.
  CHECK(CostDuration(1'000'000'000'000, 1) == ScheduleInstant{kMaxSpan, 0});
  CHECK(CostDuration(kInt64Max, 1) == ScheduleInstant{kMaxSpan, 0});
  CHECK(CostDuration(kInt64Max, kInt64Max).us == 1'000'000'000);
  // The largest duration that fits exactly is kept exactly.
  const int64_t cost = kMaxSpan / 1'000'000'000;  // whole units at rate_milli 1
  CHECK(CostDuration(cost, 1) == ScheduleInstant{cost * 1'000'000'000, 0});
  // Negative costs take no time; a rate of 0 or less counts as rate_milli 1.
  CHECK(CostDuration(-5, 1000) == ScheduleInstant{0, 0});
  CHECK(CostDuration(kInt64Min, 1000) == ScheduleInstant{0, 0});
  CHECK(CostDuration(1, 0) == CostDuration(1, 1));
  CHECK(CostDuration(1, kInt64Min) == CostDuration(1, 1));

  // Advancing past the end of time stops at it; the end stays the end.
  CHECK(AdvanceBy(ScheduleInstant{kMaxTime - 10, 0}, 1, 1) == kEnd);
  CHECK(AdvanceBy(ScheduleInstant{kNow, 0}, kInt64Max, 1) == kEnd);
  CHECK(AdvanceBy(kEnd, 0, 1000) == kEnd);
  CHECK(AdvanceBy(ScheduleInstant{kInt64Max, kInt64Max}, kInt64Max, 1) == kEnd);
  // From the far past forwards: still exact.
  CHECK(AdvanceBy(ScheduleInstant{kMinTime, 0}, 2, 1000) ==
        ScheduleInstant{kMinTime + 2 * kSecond, 0});
}

TEST_CASE("Normalize brings any stored TAT into range", "[gcra][extremes]") {
  CHECK(Normalize(ScheduleInstant{kInt64Max, 5}, 1000) == kEnd);
  CHECK(Normalize(ScheduleInstant{kMaxTime, 999}, 1000) == kEnd);
  CHECK(Normalize(ScheduleInstant{kInt64Min, -1}, 1000) == ScheduleInstant{kMinTime, 0});
  CHECK(Normalize(ScheduleInstant{kNow, kInt64Max}, 1000) == ScheduleInstant{kNow, 999});
  CHECK(Normalize(ScheduleInstant{kNow, 7}, 0) == ScheduleInstant{kNow, 0});
  // A TAT stored at rate 1e9/s (frac up to 1e12 - 1) met by 0.001/s keeps frac < 1.
  CHECK(Normalize(ScheduleInstant{kNow, 999'999'999'999}, 1) == ScheduleInstant{kNow, 0});
}

TEST_CASE("ReleaseAt and AfterRelease at the end of time", "[gcra][extremes]") {
  const BucketPolicy p = Policy(1000, 100, 1'000'000'000'000);  // a huge tolerance
  // A saturated schedule is "not before the end of time": the tolerance is not
  // subtracted from an instant that is not the true one.
  CHECK(ReleaseAt(p, kEnd) == kMaxTime);
  CHECK(ReleaseAt(p, ScheduleInstant{kInt64Max, 0}) == kMaxTime);
  // Subtracting a tolerance larger than the whole range stops at its start.
  CHECK(ReleaseAt(p, ScheduleInstant{kMinTime + 1, 0}) == kMinTime);
  CHECK(ReleaseAt(Policy(1, 1, kInt64Max), ScheduleInstant{kNow, 0}) == kMinTime);
  // Releasing at the last instant, or with any `now`, stays in range.
  CHECK(AfterRelease(p, ScheduleInstant{kNow, 0}, 1, kMaxTime) == kEnd);
  CHECK(AfterRelease(p, ScheduleInstant{kNow, 0}, 1, kInt64Max) == kEnd);
  CHECK(AfterRelease(p, ScheduleInstant{kInt64Min, 0}, 1, kInt64Min) ==
        ScheduleInstant{kMinTime + kSecond, 0});
}

TEST_CASE("Property: GCRA and admission stay in range and in order for any inputs",
          "[gcra][admission][extremes][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  // Values at the edges more often than uniform draws would give them.
  auto pick = [&](std::initializer_list<int64_t> edges, int64_t lo, int64_t hi) {
    if (Uniform<int>(rng, 0, 2) == 0) {
      return *(edges.begin() + Uniform<size_t>(rng, 0, edges.size() - 1));
    }
    return Uniform<int64_t>(rng, lo, hi);
  };
  int admitted = 0, refused = 0, saturated = 0;
  for (int i = 0; i < 20'000; ++i) {
    const BucketPolicy p =
        Policy(pick({1, 2, 3, 999, 1'000'000'000'000, kInt64Max}, 1, 1'000'000'000'000),
               pick({1, 1'000'000'000, 1'000'000'000'000, kInt64Max}, 1, 1'000'000'000'000),
               pick({1, 2, 1'000'000'000'000, kInt64Max}, 1, 1'000'000'000'000));
    const ScheduleInstant tat{
        pick({kInt64Min, kMinTime, kNow, kMaxTime - 1, kMaxTime, kInt64Max}, kInt64Min, kInt64Max),
        pick({kInt64Min, -1, 0, 1, kInt64Max}, kInt64Min, kInt64Max)};
    const Micros now =
        pick({kMinTime, kNow, kMaxTime - kSecond, kMaxTime - 1, kMaxTime}, kMinTime, kMaxTime);
    const int64_t queued = pick({0, 1, 1'000'000'000'000, kInt64Max - 1, kInt64Max}, 0, kInt64Max);
    const int64_t cost = pick({1, 1'000'000'000}, 1, 1'000'000'000);
    CAPTURE(i, p.rate_milli, p.capacity, p.burst, tat.us, tat.frac, now, queued, cost);

    const ScheduleInstant n = Normalize(tat, p.rate_milli);
    REQUIRE(InRange(n.us));
    REQUIRE((n.frac >= 0 && n.frac < p.rate_milli));
    const ScheduleInstant later = AdvanceBy(tat, cost, p.rate_milli);
    REQUIRE(InRange(later.us));
    REQUIRE((later.frac >= 0 && later.frac < p.rate_milli));
    // Saturation keeps the order: later is never before the normalized TAT.
    REQUIRE(Units(later, p.rate_milli) >= Units(n, p.rate_milli));
    const Micros release = ReleaseAt(p, tat);
    REQUIRE(InRange(release));
    REQUIRE(InRange(AfterRelease(p, tat, cost, now).us));

    // Estimates are in [now, kMaxTime] and grow with the cost ahead.
    const Micros e0 = EstimatedStart(p, tat, 0, now);
    const Micros e1 = EstimatedStart(p, tat, queued, now);
    REQUIRE((e0 >= now && e0 <= kMaxTime));
    REQUIRE((e1 >= e0 && e1 <= kMaxTime));
    RequirePrintable(e1);
    if (e1 == kMaxTime) ++saturated;

    AdmissionRequest r;
    r.cost = cost;
    if (Uniform<int>(rng, 0, 1)) {
      r.deadline = pick({now + 1, kMaxTime, kInt64Max}, std::min(now + 1, kMaxTime), kMaxTime);
    }
    const AdmissionDecision d = Admit(p, Backlog(tat, queued), r, now);
    REQUIRE(InRange(d.estimated_start));
    RequirePrintable(d.estimated_start);
    REQUIRE(d.retry_after_s >= 0);
    REQUIRE(d.retry_after_s <= CeilSeconds(kMaxSpan) + 1);
    REQUIRE(d.reset_s >= 0);
    REQUIRE(d.reset_s <= CeilSeconds(kMaxSpan));
    REQUIRE(d.remaining >= 0);
    REQUIRE(DrainWindowSeconds(p) >= 0);
    REQUIRE(DrainWindowSeconds(p) <= CeilSeconds(kMaxSpan));
    if (d.outcome == AdmissionOutcome::kAdmitted) {
      ++admitted;
      REQUIRE(d.estimated_start >= now);
      // Never a job that can only expire.
      if (r.deadline) REQUIRE(d.estimated_start < std::min(*r.deadline, kMaxTime));
    } else {
      ++refused;
      if (d.outcome == AdmissionOutcome::kQueueFull ||
          d.outcome == AdmissionOutcome::kDeadlineUnreachable) {
        REQUIRE(d.retry_after_s >= 1);
      }
    }
  }
  CHECK(admitted > 1000);
  CHECK(refused > 1000);
  CHECK(saturated > 1000);
}

// The example: rate 0.001/s with a capacity of 1e12 (PolicyFromJson would
// refuse it: 3e10 years to drain) and a nearly full bucket.
TEST_CASE("rate 0.001 with capacity 1e12: no job that can only expire, no 5-digit year",
          "[admission][extremes]") {
  const BucketPolicy p = Policy(1, 1'000'000'000'000);
  const BucketState b = Backlog(ScheduleInstant{kNow, 0}, 1'000'000'000'000 - 1);
  AdmissionRequest r;
  r.cost = 1;
  r.deadline = kMaxTime;  // the latest deadline there is
  AdmissionDecision d = Admit(p, b, r, kNow);
  CHECK(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
  CHECK(d.estimated_start == kMaxTime);
  CHECK(FormatRfc3339(d.estimated_start) == "9999-12-31T23:59:59.999Z");
  CHECK(d.retry_after_s >= 1);
  // The RateLimit numbers are the most the range can say, not wrapped negatives.
  CHECK(d.reset_s == CeilSeconds(kMaxTime - kNow));
  CHECK(DrainWindowSeconds(p) == CeilSeconds(kMaxSpan));
  // The full bucket says when it would fit, in range.
  r.cost = 2;
  d = Admit(p, b, r, kNow);
  CHECK(d.outcome == AdmissionOutcome::kQueueFull);
  CHECK(d.retry_after_s == 1);  // the head leaves now, and the job fits after it
  // Without a deadline the estimate is still printable.
  r = AdmissionRequest{};
  d = Admit(p, b, r, kNow);
  CHECK(d.outcome == AdmissionOutcome::kAdmitted);
  RequirePrintable(d.estimated_start);
}

TEST_CASE("A backlog admitted at rate 1e9/s meets a rate of 0.001/s", "[admission][extremes]") {
  // Admitted at 1e9/s: 1e12 units queued and a TAT with a 1e12-scale fraction.
  const BucketPolicy fast = Policy(1'000'000'000'000, 1'000'000'000'000, 1'000'000'000);
  ScheduleInstant tat{kNow, 0};
  tat = AfterRelease(fast, tat, 1'000'000'000, kNow);  // a big job just left
  tat = AdvanceBy(tat, 333, fast.rate_milli);
  REQUIRE(tat.frac > 1);
  const BucketState b = Backlog(tat, 1'000'000'000'000);

  const BucketPolicy slow = Policy(1, 1'000'000'000'000, 1'000'000'000'000);
  CHECK(ReleaseAt(slow, tat) == kMinTime);  // a 3e10-year tolerance: clamped
  const Micros e = EstimatedStart(slow, tat, b.queued_cost, kNow);
  CHECK(e == kMaxTime);
  AdmissionRequest r;
  r.deadline = kNow + 3600 * kSecond;
  AdmissionDecision d = Admit(slow, b, r, kNow);
  CHECK(d.outcome == AdmissionOutcome::kQueueFull);  // 1e12 + 1 > capacity
  CHECK(InRange(kNow + d.retry_after_s * kSecond));

  // The policy's dry run of the same backlog saturates too, and adds costs safely.
  QueuePolicy q;
  q.bucket = slow;
  TenantBacklog backlog{
      "acme", tat, {{kInt64Max, std::nullopt}, {kInt64Max, kMaxTime}, {1, kNow + kSecond}}};
  std::vector<DrainProjection> proj = ProjectDrain(q, {backlog}, kNow);
  REQUIRE(proj.size() == 1);
  CHECK(proj[0].jobs == 3);
  CHECK(proj[0].cost == kInt64Max);
  CHECK(proj[0].last_release == kMaxTime);
  CHECK(proj[0].missed_deadlines == 2);  // the one due at kMaxTime cannot start before it
  RequirePrintable(proj[0].last_release);
}

TEST_CASE("now near the end of the range", "[admission][dispatch][extremes]") {
  const Micros now = kMaxTime - kSecond;
  const BucketPolicy p = Policy(1000, 100);  // 1/s
  // An idle bucket starts a job now; the next would start at the end of time.
  AdmissionDecision d = Admit(p, Backlog(ScheduleInstant{now - 5 * kSecond, 0}, 0), {}, now);
  CHECK(d.outcome == AdmissionOutcome::kAdmitted);
  CHECK(d.estimated_start == now);
  AdmissionRequest r;
  r.deadline = kMaxTime;
  d = Admit(p, Backlog(ScheduleInstant{now, 0}, 1), r, now);
  CHECK(d.outcome == AdmissionOutcome::kDeadlineUnreachable);
  CHECK(d.estimated_start == kMaxTime);
  CHECK(d.retry_after_s == 1);
  // Two seconds ahead saturates.
  CHECK(EstimatedStart(p, ScheduleInstant{now, 0}, 2, now) == kMaxTime);

  // Dispatch never picks a head that can only expire, even at the end of time.
  std::vector<QueueView> queues(1);
  BucketView head;
  head.policy = p;
  head.tat = kEnd;
  head.head_deadline = kMaxTime;
  DispatchChoice c = ChooseRelease(queues, std::vector<BucketView>{head}, now, kInt64Max);
  CHECK_FALSE(c.release);
  head.tat = ScheduleInstant{now, 0};
  c = ChooseRelease(queues, std::vector<BucketView>{head}, now, kInt64Max);
  REQUIRE(c.release);
  CHECK(ReleaseTime(head, now) == now);
}

TEST_CASE("Property: within PolicyFromJson's ranges nothing saturates before year 9000",
          "[admission][extremes][property]") {
  // A full bucket drains within 100 years and a TAT is at most that plus the burst
  // tolerance ahead, so estimates for now <= 9000-01-01 are exact (not clamped).
  const Micros year_9000 = *ParseRfc3339("9000-01-01T00:00:00Z");
  const int64_t span_s = kMaxPolicySpanSeconds;
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20'000; ++i) {
    BucketPolicy p;
    p.rate_milli = Uniform<int64_t>(rng, kMinRateMilli, kMaxRateMilli);
    const int64_t max_units = static_cast<int64_t>(
        std::min<Int128>(static_cast<Int128>(span_s) * p.rate_milli / 1000, kMaxPolicyCount));
    p.capacity = Uniform<int64_t>(rng, 1, std::max<int64_t>(1, max_units));
    p.burst = Uniform<int64_t>(rng, 1, max_units + 1);
    const Micros now = Uniform<Micros>(rng, kMinTime, year_9000);
    // Past the furthest a TAT gets ahead under this policy (releases happen from
    // TAT - tau on, and each adds at most a full bucket's cost / rate).
    const ScheduleInstant tat{now + CostDuration(p.burst - 1, p.rate_milli).us +
                                  CostDuration(p.capacity, p.rate_milli).us +
                                  Uniform<Micros>(rng, 0, kSecond),
                              0};
    CAPTURE(p.rate_milli, p.capacity, p.burst, now, tat.us);
    const Micros e = EstimatedStart(p, tat, p.capacity, now);
    const Int128 exact =
        CeilDiv(Units(tat, p.rate_milli) + IntervalUnits(p.capacity) - IntervalUnits(p.burst - 1),
                p.rate_milli);
    REQUIRE(e < kMaxTime);
    REQUIRE(static_cast<Int128>(e) == std::max<Int128>(now, exact));
  }
}

TEST_CASE("Backoff with NaN, infinite or out-of-range draws", "[backoff][extremes]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(FullJitterBackoffMs(1000, 60'000, 1, nan) == 0);
  CHECK(FullJitterBackoffMs(1000, 60'000, 1, -inf) == 0);
  CHECK(FullJitterBackoffMs(1000, 60'000, 1, -0.5) == 0);
  CHECK(FullJitterBackoffMs(1000, 60'000, 1, inf) == 1000);
  CHECK(FullJitterBackoffMs(1000, 60'000, 1, 2.0) == 1000);
  CHECK(FullJitterBackoffMs(kInt64Max, kInt64Max, kInt64Max, 0.999) <= kInt64Max);
  CHECK(FullJitterBackoffMs(1000, 60'000, kInt64Min, 0.5) == 500);
}

}  // namespace
}  // namespace sluice
