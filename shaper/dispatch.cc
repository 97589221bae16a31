#include "shaper/dispatch.h"

#include <algorithm>

namespace sluice {

std::string_view BlockedByName(BlockedBy b) {
  switch (b) {
    case BlockedBy::kNone:
      return "";
    case BlockedBy::kPaused:
      return "paused";
    case BlockedBy::kNotBefore:
      return "not_before";
    case BlockedBy::kQueueCap:
      return "queue_cap";
    case BlockedBy::kTenantCap:
      return "tenant_cap";
    case BlockedBy::kRate:
      return "rate";
    case BlockedBy::kNoWorker:
      return "no_worker";
  }
  return "";
}

BlockedBy QueuedJobBlockedBy(const QueueView& q, const BucketView& b, Micros available_at,
                             Micros estimated_start, bool worker_waiting, Micros now) {
  if (q.paused) return BlockedBy::kPaused;
  if (available_at > now) return BlockedBy::kNotBefore;
  BlockedBy bucket = BucketBlockedBy(q, b, now);
  if (bucket == BlockedBy::kQueueCap || bucket == BlockedBy::kTenantCap) return bucket;
  if (estimated_start > now) return BlockedBy::kRate;
  return worker_waiting ? BlockedBy::kNone : BlockedBy::kNoWorker;
}

BlockedBy BucketBlockedBy(const QueueView& q, const BucketView& b, Micros now) {
  if (q.paused) return BlockedBy::kPaused;
  if (q.max_inflight > 0 && q.leased >= q.max_inflight) return BlockedBy::kQueueCap;
  if (b.policy.max_inflight_per_tenant > 0 && b.leased >= b.policy.max_inflight_per_tenant) {
    return BlockedBy::kTenantCap;
  }
  if (ReleaseAt(b.policy, b.tat) > now) return BlockedBy::kRate;
  return BlockedBy::kNone;
}

Micros ReleaseTime(const BucketView& b, Micros now) {
  return std::max(now, ReleaseAt(b.policy, b.tat));
}

DispatchChoice ChooseRelease(const std::vector<QueueView>& queues,
                             const std::vector<BucketView>& buckets, Micros now,
                             std::optional<Micros> horizon) {
  const Micros by = std::max(now, horizon.value_or(now));
  DispatchChoice c;
  Micros best_at = 0;
  int64_t best_seq = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const BucketView& b = buckets[i];
    BlockedBy why = BucketBlockedBy(queues[b.queue], b, by);
    if (why != BlockedBy::kNone && why != BlockedBy::kRate) continue;  // caps, pause: events
    if (b.head_deadline && ReleaseTime(b, now) >= *b.head_deadline) continue;  // can only expire
    // Order by the schedule itself, not by max(now, ·): the bucket due longest ago first.
    Micros at = ReleaseAt(b.policy, b.tat);
    if (why == BlockedBy::kRate) {
      if (!c.wake_at || at < *c.wake_at) c.wake_at = at;
      continue;
    }
    if (!c.release || at < best_at || (at == best_at && b.head_seq < best_seq)) {
      c.release = i;
      best_at = at;
      best_seq = b.head_seq;
    }
  }
  if (c.release) c.wake_at.reset();
  return c;
}

}  // namespace sluice
