#include "shaper/gcra.h"

namespace sluice {
namespace {

__extension__ typedef __int128 Int128;
// rate_milli is cost per 1000 s = per 1e9 µs: T(µs) = cost * 1e9 / rate_milli.
constexpr Int128 kMicrosPerKilosecond = 1'000'000'000;

}  // namespace

ScheduleInstant CostDuration(int64_t cost, int64_t rate_milli) {
  Int128 num = static_cast<Int128>(cost) * kMicrosPerKilosecond;
  return ScheduleInstant{static_cast<Micros>(num / rate_milli),
                         static_cast<int64_t>(num % rate_milli)};
}

ScheduleInstant AdvanceBy(ScheduleInstant tat, int64_t cost, int64_t rate_milli) {
  ScheduleInstant d = CostDuration(cost, rate_milli);
  tat.us += d.us;
  tat.frac += d.frac;
  if (tat.frac >= rate_milli) {
    tat.frac -= rate_milli;
    tat.us += 1;
  }
  return tat;
}

Micros ReleaseAt(const BucketPolicy& p, ScheduleInstant tat) {
  tat = Normalize(tat, p.rate_milli);
  ScheduleInstant tau = CostDuration(p.burst - 1, p.rate_milli);
  Micros us = tat.us - tau.us;
  int64_t frac = tat.frac - tau.frac;
  if (frac < 0) {
    frac += p.rate_milli;
    us -= 1;
  }
  return frac > 0 ? us + 1 : us;  // round up: never early
}

ScheduleInstant AfterRelease(const BucketPolicy& p, ScheduleInstant tat, int64_t cost, Micros now) {
  tat = Normalize(tat, p.rate_milli);
  // Idle time earns no credit beyond burst. Releases happen on whole microseconds at
  // ceil(TAT), so a release at exactly ceil(TAT) is on schedule and keeps the fraction.
  if (tat.us + (tat.frac > 0 ? 1 : 0) < now) tat = ScheduleInstant{now, 0};
  return AdvanceBy(tat, cost, p.rate_milli);
}

ScheduleInstant Normalize(ScheduleInstant tat, int64_t rate_milli) {
  if (tat.frac < 0) tat.frac = 0;
  if (tat.frac >= rate_milli) tat.frac = rate_milli - 1;
  return tat;
}

}  // namespace sluice
