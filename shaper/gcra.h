// GCRA (virtual scheduling) for one bucket, in exact integer arithmetic.
// DESIGN.md rule 3: with T = c / rate and tau = (burst - 1) / rate, the head job is
// releasable at t >= TAT - tau; on release TAT = max(TAT, t) + T.
//
// Invariants:
//   1. A schedule instant is `us` microseconds plus `frac / rate_milli` of a microsecond,
//      0 <= frac < rate_milli, so emission intervals never round and never drift.
//   2. Functions are pure: time is passed in, nothing is read or written elsewhere.
//   3. Arithmetic saturates instead of overflowing, for any int64_t input (a TAT stored
//      under one policy may meet another, e.g. a backlog admitted at rate 1e9 meets a
//      rate of 0.001): every instant returned has `us` in [kMinTime, kMaxTime], every
//      duration is at most kMaxSpan, and an instant that would lie past kMaxTime is
//      kMaxTime exactly (frac 0), which reads as "not before the end of time".
//   4. A rate_milli below 1 is treated as 1 (policies never hold one; see policy.h).
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

// Duration of `cost` units at `rate_milli`, as (whole µs, remainder in 1/rate_milli µs);
// at most (kMaxSpan, 0). A cost below 0 counts as 0.
ScheduleInstant CostDuration(int64_t cost, int64_t rate_milli);

// `tat` moved later by `cost` units' emission interval (saturating at kMaxTime).
ScheduleInstant AdvanceBy(ScheduleInstant tat, int64_t cost, int64_t rate_milli);

// The earliest whole microsecond at which the bucket's head may be released.
Micros ReleaseAt(const BucketPolicy& p, ScheduleInstant tat);

// The bucket's TAT after releasing a job of `cost` at `now` (now >= ReleaseAt).
ScheduleInstant AfterRelease(const BucketPolicy& p, ScheduleInstant tat, int64_t cost, Micros now);

// Brings a stored TAT into range: frac into [0, rate_milli) (a policy's rate may have
// changed under it) and us into [kMinTime, kMaxTime] (invariant 3).
ScheduleInstant Normalize(ScheduleInstant tat, int64_t rate_milli);

}  // namespace sluice
