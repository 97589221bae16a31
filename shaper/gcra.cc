#include "shaper/gcra.h"

#include <algorithm>

namespace sluice {
namespace {

__extension__ typedef __int128 Int128;
// rate_milli is cost per 1000 s = per 1e9 µs: T(µs) = cost * 1e9 / rate_milli.
constexpr Int128 kMicrosPerKilosecond = 1'000'000'000;

int64_t SaneRate(int64_t rate_milli) { return std::max<int64_t>(1, rate_milli); }

constexpr ScheduleInstant kEndOfTime{kMaxTime, 0};

}  // namespace

ScheduleInstant CostDuration(int64_t cost, int64_t rate_milli) {
  rate_milli = SaneRate(rate_milli);
  if (cost <= 0) return ScheduleInstant{};
  // |cost * 1e9| < 9.3e27: fits Int128 (1.7e38).
  const Int128 num = static_cast<Int128>(cost) * kMicrosPerKilosecond;
  const Int128 us = num / rate_milli;
  if (us >= kMaxSpan) return ScheduleInstant{kMaxSpan, 0};
  return ScheduleInstant{static_cast<Micros>(us), static_cast<int64_t>(num % rate_milli)};
}

ScheduleInstant AdvanceBy(ScheduleInstant tat, int64_t cost, int64_t rate_milli) {
  rate_milli = SaneRate(rate_milli);
  tat = Normalize(tat, rate_milli);
  if (tat == kEndOfTime) return tat;
  const ScheduleInstant d = CostDuration(cost, rate_milli);
  // Both terms are bounded (invariant 3): the sum is at most kMaxTime + kMaxSpan + 1.
  tat.us += d.us;
  // tat.frac + d.frac >= rate_milli, without the sum (it may not fit for a huge rate).
  if (tat.frac >= rate_milli - d.frac) {
    tat.frac -= rate_milli - d.frac;
    tat.us += 1;
  } else {
    tat.frac += d.frac;
  }
  if (tat.us >= kMaxTime) return kEndOfTime;
  return tat;
}

Micros ReleaseAt(const BucketPolicy& p, ScheduleInstant tat) {
  const int64_t rate = SaneRate(p.rate_milli);
  tat = Normalize(tat, rate);
  // A saturated schedule has no true instant to subtract the tolerance from.
  if (tat == kEndOfTime) return kMaxTime;
  const ScheduleInstant tau = CostDuration(p.burst - 1, rate);
  Micros us = tat.us - tau.us;  // >= kMinTime - kMaxSpan: no overflow
  int64_t frac = tat.frac - tau.frac;
  if (frac < 0) {
    frac += rate;
    us -= 1;
  }
  return ClampTime(frac > 0 ? us + 1 : us);  // round up: never early
}

ScheduleInstant AfterRelease(const BucketPolicy& p, ScheduleInstant tat, int64_t cost, Micros now) {
  const int64_t rate = SaneRate(p.rate_milli);
  tat = Normalize(tat, rate);
  now = ClampTime(now);
  // Idle time earns no credit beyond burst. Releases happen on whole microseconds at
  // ceil(TAT), so a release at exactly ceil(TAT) is on schedule and keeps the fraction.
  if (tat.us + (tat.frac > 0 ? 1 : 0) < now) tat = ScheduleInstant{now, 0};
  return AdvanceBy(tat, cost, rate);
}

ScheduleInstant Normalize(ScheduleInstant tat, int64_t rate_milli) {
  rate_milli = SaneRate(rate_milli);
  if (tat.frac < 0) tat.frac = 0;
  if (tat.frac >= rate_milli) tat.frac = rate_milli - 1;
  if (tat.us < kMinTime) return ScheduleInstant{kMinTime, 0};
  if (tat.us >= kMaxTime) return kEndOfTime;
  return tat;
}

}  // namespace sluice
