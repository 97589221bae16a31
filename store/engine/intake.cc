#include "store/engine/intake.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/random.h"
#include "store/engine/stored_policy.h"

namespace sluice {
namespace {

// One queue's part of the batch: its policy and the state of its buckets, which the
// decisions update in memory as they admit.
struct QueuePart {
  std::optional<QueueInfo> queue;  // empty: no such queue
  std::map<std::string, BucketState> buckets;
};

Result<SubmitOutcome> Replay(const SubmitOutcome& base, JobRecord job, const BucketState& b) {
  SubmitOutcome out = base;
  out.replayed = true;
  out.decision.outcome = AdmissionOutcome::kAdmitted;
  out.decision.estimated_start = job.estimated_start;
  out.decision.remaining = std::max<int64_t>(0, out.policy.capacity - b.queued_cost);
  out.job = std::move(job);
  return out;
}

Error KeyReused() {
  return MakeError(ErrorCode::kIdempotencyKeyReused,
                   "this Idempotency-Key was used with a different request body");
}

}  // namespace

std::vector<Result<SubmitOutcome>> AdmitAll(Tx& tx, const std::vector<NewJob>& jobs,
                                            Micros caller_now) {
  // Locks, queue by queue in name order, buckets in tenant order: every admission
  // (and every lease's counter changes) takes them in this one order.
  std::map<std::string, QueuePart> parts;
  for (const NewJob& j : jobs) parts[j.queue];
  for (auto& [name, part] : parts) {
    auto row = tx.LoadQueue(name);
    if (!row) continue;
    part.queue = QueueFromRowOrThrow(*row);
    std::set<std::string> tenants;
    for (const NewJob& j : jobs) {
      if (j.queue == name) tenants.insert(j.tenant);
    }
    part.buckets = tx.LockBuckets(name, std::vector<std::string>(tenants.begin(), tenants.end()));
  }
  const Micros now = tx.Now(caller_now);  // read once the locks are held

  std::vector<Result<SubmitOutcome>> outcomes;
  outcomes.reserve(jobs.size());
  std::map<std::string, std::vector<JobRecord>> admitted;  // by queue
  // Keys this batch admitted a job under: (tenant, key) -> (body hash, job).
  std::map<std::pair<std::string, std::string>, std::pair<std::string, JobRecord>> keys;
  for (const NewJob& job : jobs) {
    QueuePart& part = parts[job.queue];
    if (!part.queue) {
      outcomes.emplace_back(UnknownQueue(job.queue));
      continue;
    }
    const QueueInfo& q = *part.queue;
    BucketState& bucket = part.buckets[job.tenant];
    SubmitOutcome out;
    out.policy = q.policy.ForTenant(job.tenant);
    out.policy_version = q.version;
    if (job.idempotency_key) {
      const auto key = std::make_pair(job.tenant, *job.idempotency_key);
      if (auto it = keys.find(key); it != keys.end()) {
        if (it->second.first != job.body_hash) {
          outcomes.emplace_back(KeyReused());
        } else {
          outcomes.emplace_back(Replay(out, it->second.second, bucket));
        }
        continue;
      }
      if (auto seen = tx.SelectIdempotency(job.tenant, *job.idempotency_key)) {
        if (seen->body_hash != job.body_hash) {
          outcomes.emplace_back(KeyReused());
          continue;
        }
        auto original = tx.SelectJob(seen->job_id);
        if (!original) {
          outcomes.emplace_back(MakeError(ErrorCode::kInternal, "idempotent job vanished"));
          continue;
        }
        outcomes.emplace_back(Replay(out, std::move(*original), bucket));
        continue;
      }
    }
    AdmissionRequest req;
    req.cost = job.cost;
    req.not_before = job.not_before;
    req.deadline = job.deadline;
    if (!req.deadline && job.deadline_in_ms) {
      req.deadline = now + *job.deadline_in_ms * kMicrosPerMilli;
    }
    if (!req.deadline && q.policy.default_deadline_ms > 0) {
      req.deadline = now + q.policy.default_deadline_ms * kMicrosPerMilli;
    }
    out.decision = Admit(out.policy, bucket, req, now);
    if (out.decision.outcome != AdmissionOutcome::kAdmitted) {
      outcomes.emplace_back(std::move(out));
      continue;
    }
    JobRecord& j = out.job.emplace();
    j.id = TimeOrderedId("job_", now, 6);
    j.queue = job.queue;
    j.tenant = job.tenant;
    j.payload = job.payload;
    j.cost = job.cost;
    j.max_attempts = job.max_attempts.value_or(q.policy.max_attempts);
    j.lease_ms = job.lease_ms.value_or(q.policy.lease_ms);
    j.policy_version = q.version;
    j.created_at = now;
    j.not_before = job.not_before;
    j.available_at = std::max(now, job.not_before.value_or(now));
    j.deadline = req.deadline;
    j.estimated_start = out.decision.estimated_start;
    j.traceparent = job.traceparent;
    // The next job of this bucket is decided as if this one were stored already.
    bucket.queued_count += 1;
    bucket.queued_cost += job.cost;
    if (job.idempotency_key) {
      keys.emplace(std::make_pair(job.tenant, *job.idempotency_key),
                   std::make_pair(job.body_hash, j));
    }
    admitted[job.queue].push_back(j);
    outcomes.emplace_back(std::move(out));
  }

  for (auto& [queue, records] : admitted) {
    QueuePart& part = parts[queue];
    std::vector<AdmittedJob> counts;
    counts.reserve(records.size());
    for (const JobRecord& j : records) {
      // The bucket releases no earlier than its schedule allows (ReleaseAt does not depend
      // on the job): the release index entry comes down to that at most.
      const Micros bound =
          ReleaseAt(part.queue->policy.ForTenant(j.tenant), part.buckets[j.tenant].tat);
      counts.push_back(AdmittedJob{j.tenant, j.cost, bound});
    }
    std::sort(counts.begin(), counts.end(),
              [](const AdmittedJob& a, const AdmittedJob& b) { return a.tenant < b.tenant; });
    // The counters first: a bucket's row lock is taken here (in tenant order), and a
    // queue deleted meanwhile fails the change (its bucket is gone) before a job exists.
    tx.BucketsAdmitted(queue, counts);
    tx.InsertJobs(records);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const NewJob& job = jobs[i];
    if (!job.idempotency_key || !outcomes[i].ok()) continue;
    const SubmitOutcome& o = outcomes[i].value();
    if (!o.job || o.replayed) continue;
    tx.InsertIdempotency(job.tenant, *job.idempotency_key, job.body_hash, o.job->id, now);
  }
  return outcomes;
}

}  // namespace sluice
