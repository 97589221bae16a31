#include "store/engine/release.h"

#include <map>
#include <set>
#include <string>

#include "common/random.h"
#include "shaper/dispatch.h"
#include "store/engine/stored_policy.h"

namespace sluice {
namespace {

// Jobs released this close together may share one lease answer (handed out at the
// latest of their release times).
constexpr Micros kCoalesceMicros = 1000;

// The counter changes of a bucket's releases in this transaction, applied once at the
// end (ReleasedCounters), in (queue, tenant) byte order: the order admissions take
// bucket rows in too, so a lease and a batch of admissions never wait for each other.
struct Released {
  ScheduleInstant tat;
  int64_t cost = 0;
  int64_t count = 0;
};
using ReleasedCounters = std::map<std::pair<std::string, std::string>, Released>;

BucketView ToView(size_t queue_index, const QueueInfo& q, const BucketHeadRow& row) {
  BucketView v;
  v.queue = queue_index;
  v.policy = q.policy.ForTenant(row.tenant);
  v.tat = row.tat;
  v.leased = row.leased;
  v.head_seq = row.head_seq;
  v.head_cost = row.head_cost;
  v.head_deadline = row.head_deadline;
  return v;
}

// Leases for a group of requests that name the same queues, in one pass: one scan of
// the buckets, then release after release (earliest release time first) handed to the
// requests in FIFO order until each has its max_jobs or nothing more is releasable.
void LeaseGroup(Tx& tx, const std::vector<std::string>& queue_names,
                const std::vector<const LeaseRequest*>& reqs, std::vector<LeaseOutcome*>& outs,
                Micros now, Micros horizon, ReleasedCounters& released) {
  std::vector<QueueInfo> queues;
  std::vector<QueueView> qviews;
  std::vector<BucketView> bviews;
  std::vector<std::string> tenants;  // parallel to bviews
  std::optional<Micros> wake_at;
  for (const std::string& name : queue_names) {
    auto row = tx.LoadQueue(name);
    if (!row) continue;
    QueueInfo q = QueueFromRowOrThrow(*row);
    QueueView qv;
    qv.leased = tx.LoadQueueStats(name).leased;
    // Releases an earlier group of this transaction made are not in the rows yet.
    for (auto it = released.lower_bound({name, ""});
         it != released.end() && it->first.first == name; ++it) {
      qv.leased += it->second.count;
    }
    qv.max_inflight = q.policy.max_inflight;
    qv.paused = q.paused;
    size_t qi = queues.size();
    queues.push_back(std::move(q));
    qviews.push_back(qv);
    if (qv.paused) continue;
    for (const BucketHeadRow& head : tx.BucketHeads(name, now)) {
      bviews.push_back(ToView(qi, queues[qi], head));
      tenants.push_back(head.tenant);
      if (auto it = released.find({name, head.tenant}); it != released.end()) {
        bviews.back().tat = it->second.tat;
        bviews.back().leased += it->second.count;
      }
    }
    if (auto at = tx.NextAvailable(name, now)) {
      if (!wake_at || *at < *wake_at) wake_at = at;
    }
  }

  // The bucket's view after its head left (or lost a race): its next head, or gone.
  auto refresh = [&](size_t i, ScheduleInstant tat, int64_t leased) {
    BucketView& b = bviews[i];
    if (auto next = tx.BucketHead(queues[b.queue].name, tenants[i], now)) {
      b.tat = tat;
      b.leased = leased;
      b.head_seq = next->seq;
      b.head_cost = next->cost;
      b.head_deadline = next->deadline;
    } else {
      bviews.erase(bviews.begin() + static_cast<std::ptrdiff_t>(i));
      tenants.erase(tenants.begin() + static_cast<std::ptrdiff_t>(i));
    }
  };

  size_t r = 0;  // the request being filled
  while (r < reqs.size()) {
    if (static_cast<int64_t>(outs[r]->jobs.size()) >= reqs[r]->max_jobs) {
      ++r;
      continue;
    }
    DispatchChoice choice = ChooseRelease(qviews, bviews, now, horizon);
    if (!choice.release) {
      if (choice.wake_at && (!wake_at || *choice.wake_at < *wake_at)) wake_at = choice.wake_at;
      break;
    }
    size_t i = *choice.release;
    BucketView& b = bviews[i];
    const std::string& queue = queues[b.queue].name;
    const Micros released_at = ReleaseTime(b, now);
    // One answer holds jobs released within kCoalesceMicros of its first, so no job is
    // handed out much later than its time for the sake of another: the next waiter
    // takes it.
    if (!outs[r]->jobs.empty() &&
        released_at > *outs[r]->jobs.front().leased_at + kCoalesceMicros) {
      ++r;
      continue;
    }
    auto job = tx.LeaseJob(b.head_seq, RandomId("lse_", 12), released_at, reqs[r]->lease_ms,
                           reqs[r]->worker_id);
    if (!job) {
      // The head left meanwhile (canceled or expired by another process): look again.
      refresh(i, b.tat, b.leased);
      continue;
    }
    outs[r]->jobs.push_back(std::move(*job));
    ScheduleInstant tat = AfterRelease(b.policy, b.tat, b.head_cost, released_at);
    Released& counters = released[{queue, tenants[i]}];
    counters.tat = tat;
    counters.cost += b.head_cost;
    counters.count += 1;
    qviews[b.queue].leased += 1;
    refresh(i, tat, b.leased + 1);
  }
  bool cap_blocked = false;
  for (const BucketView& b : bviews) {
    BlockedBy why = BucketBlockedBy(qviews[b.queue], b, now);
    cap_blocked = cap_blocked || why == BlockedBy::kQueueCap || why == BlockedBy::kTenantCap;
  }
  // Requests left without jobs learn when to look again.
  for (LeaseOutcome* out : outs) {
    if (out->jobs.empty()) out->wake_at = wake_at;
    out->cap_blocked = cap_blocked;
  }
}

}  // namespace

void LockRequestedQueues(Tx& tx, const std::vector<LeaseRequest>& requests) {
  std::set<std::string> all;
  for (const LeaseRequest& r : requests) all.insert(r.queues.begin(), r.queues.end());
  for (const std::string& name : all) (void)tx.LockQueue(name);
}

void LeaseAll(Tx& tx, const std::vector<LeaseRequest>& requests, std::vector<LeaseOutcome>& outs,
              Micros now, Micros horizon) {
  std::map<std::vector<std::string>,
           std::pair<std::vector<const LeaseRequest*>, std::vector<LeaseOutcome*>>>
      groups;
  std::vector<const std::vector<std::string>*> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    std::set<std::string> uniq(requests[i].queues.begin(), requests[i].queues.end());
    std::vector<std::string> key(uniq.begin(), uniq.end());
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) order.push_back(&it->first);
    it->second.first.push_back(&requests[i]);
    it->second.second.push_back(&outs[i]);
  }
  ReleasedCounters released;
  for (const auto* key : order) {
    auto& [reqs, group_outs] = groups[*key];
    LeaseGroup(tx, *key, reqs, group_outs, now, horizon, released);
  }
  for (const auto& [bucket, r] : released) {
    tx.BucketReleased(bucket.first, bucket.second, r.tat, r.cost, r.count);
  }
}

}  // namespace sluice
