// Which bucket releases next (DESIGN.md rules 3, 4, 5): among buckets whose head job
// is available and whose caps allow, the one with the earliest release time; ties go
// to the older head job. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "shaper/gcra.h"
#include "shaper/policy.h"

namespace sluice {

struct QueueView {
  int64_t leased = 0;        // leased jobs in the whole queue
  int64_t max_inflight = 0;  // 0 = no cap
  bool paused = false;
};

struct BucketView {
  size_t queue = 0;  // index into the QueueView list
  BucketPolicy policy;
  ScheduleInstant tat;
  int64_t leased = 0;
  int64_t head_seq = 0;  // admission order of the bucket's first available job
  int64_t head_cost = 1;
  std::optional<Micros> head_deadline;  // the head must start before this
};

// Why a queued job is not leased now (DESIGN.md `blocked_by`, in its order of
// precedence). kNone: releasable now.
enum class BlockedBy { kNone, kPaused, kNotBefore, kQueueCap, kTenantCap, kRate, kNoWorker };

std::string_view BlockedByName(BlockedBy b);  // "rate", "tenant_cap", ...; "" for kNone

// Why a bucket's head is not releasing now (never kNotBefore or kNoWorker).
BlockedBy BucketBlockedBy(const QueueView& q, const BucketView& b, Micros now);

// Why one queued job is not released now: the first of paused, not_before (its own
// not_before or retry backoff), queue_cap, tenant_cap, rate (its estimated start is in
// the future), no_worker (releasable now but nobody is polling).
BlockedBy QueuedJobBlockedBy(const QueueView& q, const BucketView& b, Micros available_at,
                             Micros estimated_start, bool worker_waiting, Micros now);

struct DispatchChoice {
  std::optional<size_t> release;  // index of the bucket to release from now
  std::optional<Micros> wake_at;  // otherwise: earliest future release time, if any
};

// Chooses among heads releasable by `horizon` (default: now; a later horizon lets the
// caller commit a release ahead of time and hand it out at its release time). A head
// whose release time, max(now, ReleaseAt), is not before its deadline is never chosen.
DispatchChoice ChooseRelease(const std::vector<QueueView>& queues,
                             const std::vector<BucketView>& buckets, Micros now,
                             std::optional<Micros> horizon = std::nullopt);

// When the chosen head is released: never before `now`, never before its schedule.
Micros ReleaseTime(const BucketView& b, Micros now);

}  // namespace sluice
