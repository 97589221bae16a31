#include "store/engine/release.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
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

// Buckets read per page of a queue's release index: what the pass may hand out and a
// few more, at most 64. Each bucket read costs a lookup of its head job (a page of the
// jobs table that, at a million queued, is rarely in the cache), so a pass for one job
// reads 9 rather than 64 (bench/scale, 1M jobs over 10k tenants: lease p50 0.58 -> 0.43
// ms, 100 -> 93 µs of CPU per job drained; one run each).
int64_t IndexPage(int64_t want) { return std::clamp<int64_t>(want + 8, 1, 64); }

// What a transaction's passes did to a bucket they read: its releases (counters applied
// once at the end, in (queue, tenant) byte order: the order admissions take bucket rows
// in too, so a lease and a batch of admissions never wait for each other), and its
// release index entry, written back when it changed (guarded by the counters as read).
struct Released {
  ScheduleInstant tat;
  int64_t cost = 0;
  int64_t count = 0;
  int64_t seen_queued = 0;
  int64_t seen_admitted = 0;
  Micros read_ready = kReadyDirty;
  Micros ready = kReadyDirty;
};
using ReleasedCounters = std::map<std::pair<std::string, std::string>, Released>;

BucketView ToView(size_t queue_index, const QueueInfo& q, const ReadyBucketRow& row) {
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
  // Queued jobs of the bucket not read yet (its counter, less what this transaction
  // released and what was read): none left, no read on.
  int64_t unread = 0;
  // How many jobs the next read on asks for. It starts small and doubles with each read
  // on: a bucket among many releases a job a pass and needs only its next head, one that
  // releases a burst reads it in a few statements. (Reading as many as the pass could
  // hand out read ~19 rows per job leased, 18 of them unused, at 1M jobs over 10k
  // tenants: a jobs-table lookup each.)
  int64_t read_next = 2;
};

// A release decided in a pass, before its job is leased.
struct Decided {
  size_t request = 0;
  std::pair<std::string, std::string> bucket;  // (queue, tenant)
  int64_t cost = 1;
};

// Where a pass is in a queue's release index: the last entry read (every entry not
// read sorts after it, so its ready_at is a lower bound of theirs).
struct IndexCursor {
  size_t queue = 0;
  Micros last_ready = std::numeric_limits<Micros>::min();
  std::string last_tenant;
  bool exhausted = false;
};

// The release index entry of a bucket with an available head, as a pass leaves it: at
// its tenant cap, held until a lease ends; a head that can only expire, its deadline
// (the expiry checks the bucket again); else its schedule, exact.
Micros ReadyOf(const QueueView& q, const BucketView& b, Micros now) {
  if (BucketBlockedBy(q, b, now) == BlockedBy::kTenantCap) return kReadyBlocked;
  if (b.head_deadline && ReleaseTime(b, now) >= *b.head_deadline) return *b.head_deadline;
  return ReleaseAt(b.policy, b.tat);
}

// Leases for a group of requests that name the same queues, in one pass. Each queue's
// buckets are read from its release index (buckets with queued jobs by a lower bound of
// their next release time), a page at a time and only as far as a release could come
// from there: a pass reads the few buckets due first, not every bucket. Then release
// after release (earliest release time first; ties to the older head, among the
// buckets read) is handed to the requests in FIFO order until each has its max_jobs or
// nothing more is releasable, and one write records the releases and the index entries
// the pass learned. The decisions read nothing but the buckets and heads read, so a
// pass costs a few statements, not some per job.
void LeaseGroup(Tx& tx, const std::vector<std::string>& queue_names,
                const std::vector<const LeaseRequest*>& reqs, std::vector<LeaseOutcome*>& outs,
                Micros now, Micros horizon, ReleasedCounters& released) {
  int64_t want = 0;  // the most this pass can hand out
  for (const LeaseRequest* req : reqs) want += std::max<int64_t>(0, req->max_jobs);
  const int64_t index_page = IndexPage(want);
  std::vector<QueueInfo> queues;
  std::vector<QueueView> qviews;
  std::vector<BucketView> bviews;
  std::vector<Candidate> cands;  // parallel to bviews
  std::vector<IndexCursor> cursors;
  std::optional<Micros> wake_at;
  bool cap_blocked = false;
  const Micros by = std::max(now, horizon);

  std::set<std::pair<std::string, std::string>> read;  // (queue, tenant) of the buckets read
  // A bucket read from the index joins the pass (once): a candidate when a job of it is
  // available; else its entry becomes the next time one may be (`next_available`).
  auto add = [&](size_t qi, ReadyBucketRow& row, std::optional<Micros> next_available) {
    const QueueInfo& q = queues[qi];
    const auto key = std::make_pair(q.name, row.tenant);
    if (!read.insert(key).second) return;
    auto [it, fresh] = released.try_emplace(key);
    Released& rec = it->second;
    if (fresh) {
      rec.tat = row.tat;
      rec.seen_queued = row.queued;
      rec.seen_admitted = row.admitted;
      rec.read_ready = row.ready_at;
      rec.ready = row.ready_at;
    } else {
      // Releases an earlier group of this transaction made are not in the rows yet.
      row.tat = rec.tat;
      row.leased += rec.count;
    }
    const BucketPolicy policy = q.policy.ForTenant(row.tenant);
    if (row.heads.empty()) {
      const Micros scheduled = ReleaseAt(policy, row.tat);
      rec.ready = std::max(scheduled, next_available.value_or(scheduled));
      return;
    }
    bviews.push_back(ToView(qi, q, row));
    const int64_t unread =
        row.queued - (fresh ? 0 : rec.count) - static_cast<int64_t>(row.heads.size());
    cands.push_back(Candidate{
        row.tenant, {row.heads.begin() + 1, row.heads.end()}, row.more && unread > 0, unread});
  };
  std::vector<std::optional<Micros>> next_available;  // by queue
  auto read_page = [&](IndexCursor& c, std::vector<ReadyBucketRow> rows) {
    c.exhausted = static_cast<int64_t>(rows.size()) < index_page;
    if (!rows.empty()) {
      c.last_ready = rows.back().ready_at;
      c.last_tenant = rows.back().tenant;
    }
    for (ReadyBucketRow& row : rows) add(c.queue, row, next_available[c.queue]);
  };

  for (const std::string& name : queue_names) {
    auto row = tx.LoadQueue(name);
    if (!row) continue;
    QueueInfo q = QueueFromRowOrThrow(*row);
    // A queue at its cap or paused releases nothing: its index is not read.
    const int64_t cap = q.policy.max_inflight;
    ReleaseInputs in =
        tx.ReadForRelease(name, now, index_page, !q.paused && want > 0, /*stats=*/cap > 0);
    QueueView qv;
    qv.leased = in.stats.leased;
    for (auto it = released.lower_bound({name, ""});
         it != released.end() && it->first.first == name; ++it) {
      qv.leased += it->second.count;
    }
    qv.max_inflight = cap;
    qv.paused = q.paused;
    const size_t qi = queues.size();
    queues.push_back(std::move(q));
    qviews.push_back(qv);
    next_available.push_back(in.next_available);
    if (qv.paused || want == 0) continue;
    if (in.next_available && (!wake_at || *in.next_available < *wake_at)) {
      wake_at = in.next_available;
    }
    if (cap > 0 && qv.leased >= cap) {
      cap_blocked = true;
      continue;
    }
    IndexCursor& c = cursors.emplace_back();
    c.queue = qi;
    for (ReadyBucketRow& u : in.unblocked) add(qi, u, in.next_available);
    read_page(c, std::move(in.page));
  }

  std::vector<LeaseGrant> grants;
  std::vector<Decided> decided;  // parallel to grants
  // Erases bucket `i` from the pass, its index entry its schedule from now on.
  auto leave = [&](size_t i) {
    const BucketView& b = bviews[i];
    released[{queues[b.queue].name, cands[i].tenant}].ready = ReleaseAt(b.policy, b.tat);
    bviews.erase(bviews.begin() + static_cast<std::ptrdiff_t>(i));
    cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(i));
  };
  // A bucket's view once its head is released: its next job (read ahead, or read on
  // now), or the bucket leaves the pass.
  auto advance = [&](size_t i) {
    BucketView& b = bviews[i];
    Candidate& c = cands[i];
    if (c.ahead.empty() && c.more) {
      const int64_t left = std::max<int64_t>(1, want - static_cast<int64_t>(grants.size()));
      const int64_t limit = std::max<int64_t>(1, std::min({c.read_next, left, c.unread}));
      std::vector<HeadRow> next =
          tx.BucketHeadsAfter(queues[b.queue].name, c.tenant, b.head_seq, now, limit);
      c.unread -= static_cast<int64_t>(next.size());
      c.more = static_cast<int64_t>(next.size()) >= limit && c.unread > 0;
      c.read_next = std::min<int64_t>(c.read_next * 2, 1 << 16);
      c.ahead.assign(next.begin(), next.end());
    }
    if (c.ahead.empty()) return leave(i);
    b.head_seq = c.ahead.front().seq;
    b.head_cost = c.ahead.front().cost;
    b.head_deadline = c.ahead.front().deadline;
    c.ahead.pop_front();
  };
  // Reads the next page of every queue whose unread entries may hold a bucket due
  // before `before` (strictly: ties among buckets not yet read go by index order).
  auto read_on = [&](Micros before) {
    bool more = false;
    for (IndexCursor& c : cursors) {
      if (c.exhausted || c.last_ready >= before) continue;
      read_page(
          c, tx.ReadyBuckets(queues[c.queue].name, now, c.last_ready, c.last_tenant, index_page));
      more = true;
    }
    return more;
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
      // Buckets not read yet may be releasable by the horizon.
      if (read_on(by + 1)) continue;
      if (choice.wake_at && (!wake_at || *choice.wake_at < *wake_at)) wake_at = choice.wake_at;
      for (const IndexCursor& c : cursors) {
        if (c.exhausted || c.last_ready >= kReadyBlocked) continue;
        if (!wake_at || c.last_ready < *wake_at) wake_at = c.last_ready;
      }
      break;
    }
    size_t i = *choice.release;
    if (read_on(ReleaseAt(bviews[i].policy, bviews[i].tat))) continue;
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
    grants.push_back(LeaseGrant{b.head_seq, NewLeaseId(b.head_seq), released_at, reqs[r]->lease_ms,
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

  // The index entries of the buckets still in the pass.
  for (size_t i = 0; i < bviews.size(); ++i) {
    const BucketView& b = bviews[i];
    released[{queues[b.queue].name, cands[i].tenant}].ready = ReadyOf(qviews[b.queue], b, now);
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
  // Each queue's buckets in one write, in (queue, tenant) byte order: those released
  // from and those whose index entry changed.
  std::vector<BucketRelease> batch;
  for (auto it = released.begin(); it != released.end(); ++it) {
    const Released& x = it->second;
    if (x.count != 0 || x.cost != 0 || x.ready != x.read_ready) {
      batch.push_back(BucketRelease{it->first.second, x.tat, x.cost, x.count, x.ready,
                                    x.seen_queued, x.seen_admitted});
    }
    auto next = std::next(it);
    if (next == released.end() || next->first.first != it->first.first) {
      if (!batch.empty()) tx.BucketsReleased(it->first.first, batch);
      batch.clear();
    }
  }
}

}  // namespace sluice
