#include "store/engine/attempts.h"

#include <vector>

namespace sluice {

bool MayRetry(const LeaseRow& lease, const AttemptEnd& end, Micros now) {
  return end.retryable && lease.attempt < lease.max_attempts &&
         (!lease.deadline || *lease.deadline > now);
}

std::optional<JobRecord> EndLeasedAttempt(Tx& tx, const LeaseRow& lease, const AttemptEnd& end,
                                          Micros now, const std::function<int64_t()>& backoff_ms) {
  const bool retry = MayRetry(lease, end, now);
  std::optional<Micros> available_at;
  if (retry) {
    const int64_t delay_ms = end.delay_ms ? *end.delay_ms : backoff_ms();
    available_at = now + delay_ms * kMicrosPerMilli;
  }
  auto job = tx.EndAttempt(lease.seq, retry, available_at, now, end.error);
  if (!job) return std::nullopt;
  if (retry) {
    tx.BucketRequeued(lease.queue, lease.tenant, lease.cost, end.timed_out);
  } else {
    tx.BucketLeaseEnded(lease.queue, lease.tenant,
                        LeaseEnd{.succeeded = false, .failed = true, .timed_out = end.timed_out});
  }
  return job;
}

MaintenanceCounts ReapLapsedLeases(Tx& tx, Micros now) {
  MaintenanceCounts counts;
  const AttemptEnd lapsed{
      .error = "lease expired", .retryable = true, .timed_out = true, .delay_ms = 0};
  for (const LeaseRow& lease : tx.LeasesDue(now)) {
    auto job = EndLeasedAttempt(tx, lease, lapsed, now, [] { return int64_t{0}; });
    if (!job) continue;
    if (job->state == JobState::kQueued) {
      ++counts.leases_requeued;
    } else {
      ++counts.leases_failed;
    }
  }
  return counts;
}

int64_t ExpireDue(Tx& tx, Micros now) {
  std::vector<ExpiredRow> rows = tx.ExpireDue(now);
  for (const ExpiredRow& r : rows) tx.BucketDequeued(r.queue, r.tenant, r.cost, /*expired=*/true);
  return static_cast<int64_t>(rows.size());
}

}  // namespace sluice
