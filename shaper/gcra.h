// GCRA (virtual scheduling) for one bucket, in exact integer arithmetic.
// DESIGN.md rule 3: with T = c / rate and tau = (burst - 1) / rate, the head job is
// releasable at t >= TAT - tau; on release TAT = max(TAT, t) + T.
//
// Invariants:
//   1. A schedule instant is `us` microseconds plus `frac / rate_milli` of a microsecond,
//      0 <= frac < rate_milli, so emission intervals never round and never drift.
//   2. Functions are pure: time is passed in, nothing is read or written elsewhere.
#pragma once

#include <cstdint>

#include "common/time.h"
#include "shaper/policy.h"

namespace sluice {

// A point on a bucket's virtual schedule (TAT). frac is in 1/rate_milli µs.
struct ScheduleInstant {
  Micros us = 0;
  int64_t frac = 0;
  bool operator==(const ScheduleInstant&) const = default;
};

// Duration of `cost` units at `rate_milli`, as (whole µs, remainder in 1/rate_milli µs).
ScheduleInstant CostDuration(int64_t cost, int64_t rate_milli);

// `tat` moved later by `cost` units' emission interval.
ScheduleInstant AdvanceBy(ScheduleInstant tat, int64_t cost, int64_t rate_milli);

// The earliest whole microsecond at which the bucket's head may be released.
Micros ReleaseAt(const BucketPolicy& p, ScheduleInstant tat);

// The bucket's TAT after releasing a job of `cost` at `now` (now >= ReleaseAt).
ScheduleInstant AfterRelease(const BucketPolicy& p, ScheduleInstant tat, int64_t cost, Micros now);

// Keeps frac in range when a policy's rate changed under a stored TAT.
ScheduleInstant Normalize(ScheduleInstant tat, int64_t rate_milli);

}  // namespace sluice
