#include "shaper/admission.h"

#include <algorithm>
#include <limits>

namespace sluice {
namespace {

// a + b for non-negative counts, saturating at the int64_t maximum.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::numeric_limits<int64_t>::max();
  return sum;
}

}  // namespace

Micros EstimatedStart(const BucketPolicy& p, ScheduleInstant tat, int64_t cost_ahead, Micros now) {
  now = ClampTime(now);
  tat = Normalize(tat, p.rate_milli);
  ScheduleInstant base = tat.us >= now ? tat : ScheduleInstant{now, 0};
  ScheduleInstant end = AdvanceBy(base, cost_ahead, p.rate_milli);
  return std::max(now, ReleaseAt(p, end));
}

AdmissionDecision Admit(const BucketPolicy& p, const BucketState& b, const AdmissionRequest& r,
                        Micros now) {
  now = ClampTime(now);
  AdmissionDecision d;
  const int64_t queued_cost = std::max<int64_t>(0, b.queued_cost);
  const int64_t cost = std::max<int64_t>(1, r.cost);
  std::optional<Micros> deadline;
  if (r.deadline) deadline = ClampTime(*r.deadline);
  // Free capacity now; negative when a policy change left more queued than fits.
  const int64_t free_now = p.capacity - std::min(queued_cost, p.capacity);
  // Seconds until the last job queued now would be released (cost >= 1 each).
  auto reset_for = [&](int64_t queued) -> int64_t {
    if (queued <= 0) return 0;
    return CeilSeconds(EstimatedStart(p, b.tat, queued - 1, now) - now);
  };
  // A job must start before its deadline (rule 6): one that cannot start before it
  // whatever the backlog is not "unreachable for now" but a request that cannot succeed.
  if (deadline) {
    d.deadline = *deadline;
    if (*deadline <= now) {
      d.outcome = AdmissionOutcome::kDeadlinePassed;
      return d;
    }
    if (r.not_before && *r.not_before >= *deadline) {
      d.outcome = AdmissionOutcome::kNotBeforeAfterDeadline;
      return d;
    }
  }
  if (cost > p.capacity) {
    d.outcome = AdmissionOutcome::kCostOverCapacity;
    d.remaining = free_now;
    d.reset_s = reset_for(queued_cost);
    return d;
  }
  const int64_t after = SaturatingAdd(queued_cost, cost);
  if (after > p.capacity) {
    // Enough must drain: the job that brings the drained cost to `need` has at most
    // need - 1 cost ahead of it, so it is released by EstimatedStart(need - 1).
    const int64_t need = after - p.capacity;
    const Micros drained_at = EstimatedStart(p, b.tat, need - 1, now);
    d.outcome = AdmissionOutcome::kQueueFull;
    d.retry_after_s = std::max<int64_t>(1, CeilSeconds(drained_at - now));
    d.remaining = free_now;
    d.reset_s = reset_for(queued_cost);
    return d;
  }
  Micros start = EstimatedStart(p, b.tat, queued_cost, now);
  if (r.not_before) start = std::max(start, ClampTime(*r.not_before));
  d.estimated_start = start;
  if (deadline && start >= *deadline) {
    // Here not_before < deadline <= start, so start is the backlog's estimate E.
    // Submitted at now + w with deadline + w, a job's estimate is at most
    // max(E, now + w) (the backlog only drains): admitted once E < deadline + w,
    // i.e. w > E - deadline.
    d.outcome = AdmissionOutcome::kDeadlineUnreachable;
    d.retry_after_s = std::max<int64_t>(1, CeilSeconds(start - *deadline + 1));
    d.remaining = free_now;
    d.reset_s = reset_for(queued_cost);
    return d;
  }
  d.outcome = AdmissionOutcome::kAdmitted;
  d.remaining = p.capacity - after;
  d.reset_s = CeilSeconds(start - now);
  return d;
}

int64_t DrainWindowSeconds(const BucketPolicy& p) {
  ScheduleInstant d = CostDuration(p.capacity, p.rate_milli);
  return CeilSeconds(d.us + (d.frac > 0 ? 1 : 0));
}

}  // namespace sluice
