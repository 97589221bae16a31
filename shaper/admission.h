// Admission of one job into one bucket (DESIGN.md rules 1 and 2) and the numbers an
// honest intake answer carries: estimated start, Retry-After, RateLimit fields.
// Pure functions of (policy, bucket state, request, now); thread-safe. Any int64_t
// input is safe: times saturate at [kMinTime, kMaxTime] (gcra.h invariant 3) and
// counts at int64_t, so no answer overflows or lies outside the representable range.
#pragma once

#include <cstdint>
#include <optional>

#include "common/time.h"
#include "shaper/gcra.h"
#include "shaper/policy.h"

namespace sluice {

// What the shaper needs to know about a bucket.
struct BucketState {
  ScheduleInstant tat;  // theoretical arrival time of the next release
  int64_t queued_count = 0;
  int64_t queued_cost = 0;  // cost of jobs in state queued
  int64_t leased = 0;       // jobs in state leased
};

struct AdmissionRequest {
  int64_t cost = 1;
  std::optional<Micros> deadline;    // the job must start before this (its own or the
                                     // queue's default_deadline_ms from now)
  std::optional<Micros> not_before;  // the job may not start before this
};

enum class AdmissionOutcome {
  kAdmitted,
  kQueueFull,               // rule 1
  kDeadlineUnreachable,     // rule 2: the backlog ends too late; a later try may fit
  kCostOverCapacity,        // cost > capacity: no wait would ever admit it
  kDeadlinePassed,          // deadline <= now: no wait would ever admit it
  kNotBeforeAfterDeadline,  // not_before >= deadline: no wait would ever admit it
};

struct AdmissionDecision {
  AdmissionOutcome outcome = AdmissionOutcome::kAdmitted;
  Micros estimated_start = 0;  // admitted / deadline_unreachable: when it would start
  Micros deadline = 0;         // deadline_*, not_before_*: the deadline judged against
  // queue_full: seconds until enough has drained for the job to fit.
  // deadline_unreachable: seconds until a job with the same relative deadline
  // (deadline - now) would be admitted, if nothing else arrives and workers keep up.
  // Whole seconds, rounded up, >= 1; 0 for the other outcomes.
  int64_t retry_after_s = 0;
  int64_t remaining = 0;  // RateLimit r: free capacity after the decision
  int64_t reset_s = 0;    // RateLimit t: seconds until the last queued job leaves
};

// When a job with `cost_ahead` queued cost in front of it would start, if workers take
// work as fast as the bucket lets it out (a lower bound: caps are ignored). In
// [now, kMaxTime] for `now` in range; kMaxTime means "not within the representable range".
Micros EstimatedStart(const BucketPolicy& p, ScheduleInstant tat, int64_t cost_ahead, Micros now);

// The checks in order: deadline_passed, not_before_after_deadline (these two are 400s:
// the request can never succeed), cost_over_capacity, queue_full,
// deadline_unreachable, else admitted.
AdmissionDecision Admit(const BucketPolicy& p, const BucketState& b, const AdmissionRequest& r,
                        Micros now);

// RateLimit-Policy w: seconds to drain a full bucket at `rate`, rounded up.
int64_t DrainWindowSeconds(const BucketPolicy& p);

}  // namespace sluice
