#include "shaper/simulate.h"

#include <algorithm>
#include <limits>

namespace sluice {

std::vector<DrainProjection> ProjectDrain(const QueuePolicy& policy,
                                          const std::vector<TenantBacklog>& backlog, Micros now) {
  std::vector<DrainProjection> out;
  out.reserve(backlog.size());
  for (const TenantBacklog& b : backlog) {
    const BucketPolicy p = policy.ForTenant(b.tenant);
    DrainProjection d;
    d.tenant = b.tenant;
    d.last_release = now;
    ScheduleInstant tat = b.tat;
    for (const BacklogJob& j : b.jobs) {
      const Micros at = std::max(now, ReleaseAt(p, tat));
      if (j.deadline && at >= *j.deadline) ++d.missed_deadlines;
      tat = AfterRelease(p, tat, j.cost, at);
      d.last_release = at;
      ++d.jobs;
      // Saturating: a backlog read from the store is not bounded by the policy.
      if (__builtin_add_overflow(d.cost, std::max<int64_t>(0, j.cost), &d.cost)) {
        d.cost = std::numeric_limits<int64_t>::max();
      }
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace sluice
