#include "store/engine/release.h"

#include <algorithm>
#include <deque>
#include <iterator>
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
  v.head_seq = row.heads.front().seq;
  v.head_cost = row.heads.front().cost;
  v.head_deadline = row.heads.front().deadline;
  return v;
}

// A bucket in a pass, beside its view: the jobs read after its head.
struct Candidate {
  std::string tenant;
  std::deque<HeadRow> ahead;
  bool more = false;  // jobs may follow the last of `ahead` (read on when it runs out)
};

// A release decided in a pass, before its job is leased.
struct Decided {
  size_t request = 0;
  std::pair<std::string, std::string> bucket;  // (queue, tenant)
  int64_t cost = 1;
};

// Leases for a group of requests that name the same queues, in one pass: one read of
// the buckets and their first jobs, then release after release (earliest release time
// first) handed to the requests in FIFO order until each has its max_jobs or nothing
// more is releasable, then one write of the releases. The decisions read nothing but
// what the pass read at its start, so a pass costs a few statements, not some per job.
void LeaseGroup(Tx& tx, const std::vector<std::string>& queue_names,
                const std::vector<const LeaseRequest*>& reqs, std::vector<LeaseOutcome*>& outs,
                Micros now, Micros horizon, ReleasedCounters& released) {
  int64_t want = 0;  // the most this pass can hand out
  for (const LeaseRequest* req : reqs) want += std::max<int64_t>(0, req->max_jobs);
  std::vector<QueueInfo> queues;
  std::vector<QueueView> qviews;
  std::vector<BucketView> bviews;
  std::vector<Candidate> cands;  // parallel to bviews
  std::optional<Micros> wake_at;
  for (const std::string& name : queue_names) {
    auto row = tx.LoadQueue(name);
    if (!row) continue;
    QueueInfo q = QueueFromRowOrThrow(*row);
    ReleaseInputs in = tx.ReadForRelease(name, now, want, !q.paused && want > 0);
    QueueView qv;
    qv.leased = in.stats.leased;
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
    if (qv.paused || want == 0) continue;
    for (BucketHeadRow& head : in.heads) {
      if (head.heads.empty()) continue;
      bviews.push_back(ToView(qi, queues[qi], head));
      cands.push_back(
          Candidate{head.tenant, {head.heads.begin() + 1, head.heads.end()}, head.more});
      if (auto it = released.find({name, head.tenant}); it != released.end()) {
        bviews.back().tat = it->second.tat;
        bviews.back().leased += it->second.count;
      }
    }
    if (in.next_available && (!wake_at || *in.next_available < *wake_at)) {
      wake_at = in.next_available;
    }
  }

  std::vector<LeaseGrant> grants;
  std::vector<Decided> decided;  // parallel to grants
  // A bucket's view once its head is released: its next job (read ahead, or read on
  // now), or the bucket leaves the pass.
  auto advance = [&](size_t i) {
    BucketView& b = bviews[i];
    Candidate& c = cands[i];
    if (c.ahead.empty() && c.more) {
      const int64_t limit = std::max<int64_t>(1, want - static_cast<int64_t>(grants.size()));
      std::vector<HeadRow> next =
          tx.BucketHeadsAfter(queues[b.queue].name, c.tenant, b.head_seq, now, limit);
      c.more = static_cast<int64_t>(next.size()) >= limit;
      c.ahead.assign(next.begin(), next.end());
    }
    if (c.ahead.empty()) {
      bviews.erase(bviews.begin() + static_cast<std::ptrdiff_t>(i));
      cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
    b.head_seq = c.ahead.front().seq;
    b.head_cost = c.ahead.front().cost;
    b.head_deadline = c.ahead.front().deadline;
    c.ahead.pop_front();
  };

  std::vector<int64_t> given(reqs.size(), 0);
  std::vector<std::optional<Micros>> first_at(reqs.size());
  size_t r = 0;  // the request being filled
  while (r < reqs.size()) {
    if (given[r] >= reqs[r]->max_jobs) {
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
    if (first_at[r] && released_at > *first_at[r] + kCoalesceMicros) {
      ++r;
      continue;
    }
    if (!first_at[r]) first_at[r] = released_at;
    grants.push_back(LeaseGrant{b.head_seq, RandomId("lse_", 12), released_at, reqs[r]->lease_ms,
                                reqs[r]->worker_id});
    decided.push_back(Decided{r, {queue, cands[i].tenant}, b.head_cost});
    ++given[r];
    ScheduleInstant tat = AfterRelease(b.policy, b.tat, b.head_cost, released_at);
    Released& counters = released[{queue, cands[i].tenant}];
    counters.tat = tat;
    counters.cost += b.head_cost;
    counters.count += 1;
    qviews[b.queue].leased += 1;
    b.tat = tat;
    b.leased += 1;
    advance(i);
  }

  // The releases in one write. A job that left the queue since the pass read it (a
  // cancel) is not leased: its bucket's counters drop it, its TAT keeps it (the bucket
  // waits a little longer than it had to, never less).
  std::vector<std::optional<JobRecord>> jobs = tx.LeaseJobs(grants);
  for (size_t k = 0; k < grants.size(); ++k) {
    if (jobs[k]) {
      outs[decided[k].request]->jobs.push_back(std::move(*jobs[k]));
    } else {
      Released& counters = released[decided[k].bucket];
      counters.cost -= decided[k].cost;
      counters.count -= 1;
    }
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
  // Each queue's buckets in one write, in (queue, tenant) byte order.
  std::vector<BucketRelease> batch;
  for (auto it = released.begin(); it != released.end(); ++it) {
    batch.push_back(
        BucketRelease{it->first.second, it->second.tat, it->second.cost, it->second.count});
    auto next = std::next(it);
    if (next == released.end() || next->first.first != it->first.first) {
      tx.BucketsReleased(it->first.first, batch);
      batch.clear();
    }
  }
}

}  // namespace sluice
