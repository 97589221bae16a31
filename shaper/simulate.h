// Policy dry-run: how a queue's live backlog would drain under a policy, without
// changing anything. Pure; time passed in.
//
// Each tenant's queued jobs leave in FIFO order at the policy's rate from the
// bucket's current schedule (its TAT), assuming workers keep taking work (the same
// assumption as estimated_start); caps and not_before are not modelled. A job whose
// projected release is at or after its deadline is counted as a miss (rule 2: it
// must start before its deadline). Times saturate at kMaxTime (gcra.h invariant 3).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "shaper/gcra.h"
#include "shaper/policy.h"

namespace sluice {

struct BacklogJob {
  int64_t cost = 1;
  std::optional<Micros> deadline;
};

struct TenantBacklog {
  std::string tenant;
  ScheduleInstant tat;           // the bucket's schedule now
  std::vector<BacklogJob> jobs;  // queued, oldest first
};

struct DrainProjection {
  std::string tenant;
  int64_t jobs = 0;
  int64_t cost = 0;
  Micros last_release = 0;  // when the last queued job would leave (now if none)
  int64_t missed_deadlines = 0;
};

std::vector<DrainProjection> ProjectDrain(const QueuePolicy& policy,
                                          const std::vector<TenantBacklog>& backlog, Micros now);

}  // namespace sluice
