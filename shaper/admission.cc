#include "shaper/admission.h"

#include <algorithm>

namespace sluice {

Micros EstimatedStart(const BucketPolicy& p, ScheduleInstant tat, int64_t cost_ahead, Micros now) {
  tat = Normalize(tat, p.rate_milli);
  ScheduleInstant base = tat.us >= now ? tat : ScheduleInstant{now, 0};
  ScheduleInstant end = AdvanceBy(base, cost_ahead, p.rate_milli);
  return std::max(now, ReleaseAt(p, end));
}

AdmissionDecision Admit(const BucketPolicy& p, const BucketState& b, const AdmissionRequest& r,
                        Micros now) {
  AdmissionDecision d;
  // Seconds until the last job queued now would be released (cost >= 1 each).
  auto reset_for = [&](int64_t queued_cost) -> int64_t {
    if (queued_cost <= 0) return 0;
    return CeilSeconds(EstimatedStart(p, b.tat, queued_cost - 1, now) - now);
  };
  if (r.cost > p.capacity) {
    d.outcome = AdmissionOutcome::kCostOverCapacity;
    d.remaining = std::max<int64_t>(0, p.capacity - b.queued_cost);
    d.reset_s = reset_for(b.queued_cost);
    return d;
  }
  if (b.queued_cost + r.cost > p.capacity) {
    // Enough must drain: the job that brings the drained cost to `need` has at most
    // need - 1 cost ahead of it, so it is released by EstimatedStart(need - 1).
    int64_t need = b.queued_cost + r.cost - p.capacity;
    Micros drained_at = EstimatedStart(p, b.tat, need - 1, now);
    d.outcome = AdmissionOutcome::kQueueFull;
    d.retry_after_s = std::max<int64_t>(1, CeilSeconds(drained_at - now));
    d.remaining = std::max<int64_t>(0, p.capacity - b.queued_cost);
    d.reset_s = reset_for(b.queued_cost);
    return d;
  }
  Micros start = EstimatedStart(p, b.tat, b.queued_cost, now);
  if (r.not_before) start = std::max(start, *r.not_before);
  d.estimated_start = start;
  // A job must start before its deadline (rule 6): starting at it is too late.
  if (r.deadline && start >= *r.deadline) {
    d.outcome = AdmissionOutcome::kDeadlineUnreachable;
    d.remaining = p.capacity - b.queued_cost;
    d.reset_s = reset_for(b.queued_cost);
    return d;
  }
  d.outcome = AdmissionOutcome::kAdmitted;
  d.remaining = p.capacity - b.queued_cost - r.cost;
  d.reset_s = CeilSeconds(start - now);
  return d;
}

int64_t DrainWindowSeconds(const BucketPolicy& p) {
  ScheduleInstant d = CostDuration(p.capacity, p.rate_milli);
  return CeilSeconds(d.us + (d.frac > 0 ? 1 : 0));
}

}  // namespace sluice
