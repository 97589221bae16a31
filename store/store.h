// The storage interface of sluice: queues, buckets, jobs and tokens, and every job
// state transition (the state machine lives behind this interface and nowhere else).
// Every time-dependent call takes `now`; no implementation reads a clock.
// Implementations are thread-safe: any method may be called from any thread.
// Kept narrow so that a PostgreSQL implementation can follow.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/time.h"
#include "shaper/admission.h"
#include "shaper/dispatch.h"
#include "shaper/limiters/limiter.h"
#include "shaper/policy.h"
#include "shaper/simulate.h"
#include "store/job_state.h"

namespace sluice {

// Totals since a bucket was created (summed over a queue's buckets for a queue).
struct Totals {
  int64_t admitted = 0;
  int64_t released = 0;
  int64_t succeeded = 0;
  int64_t failed = 0;  // for good: attempts exhausted, not retryable, or past deadline
  int64_t expired = 0;
  int64_t lease_timeouts = 0;
};

struct QueueStats {
  int64_t queued = 0;
  int64_t queued_cost = 0;
  int64_t leased = 0;
  Totals totals;
};

struct QueueInfo {
  std::string name;
  QueuePolicy policy;
  int64_t version = 1;
  bool paused = false;
  QueueStats stats;
  // The config file that manages this queue's policy (nullopt: the API does).
  std::optional<std::string> managed_by;
};

struct BucketInfo {
  std::string tenant;
  int64_t queued = 0;
  int64_t queued_cost = 0;
  int64_t leased = 0;
  std::optional<Micros> next_release_at;   // when the head may leave (if anything is queued)
  std::optional<Micros> oldest_queued_at;  // admission time of the oldest queued job
  BucketPolicy policy;                     // effective, after tenant overrides
  Totals totals;
};

struct JobRecord {
  std::string id;
  std::string queue;
  std::string tenant;
  JobState state = JobState::kQueued;
  std::string payload;  // JSON text
  int64_t cost = 1;
  int64_t attempt = 0;
  int64_t max_attempts = 1;
  int64_t lease_ms = 0;
  int64_t policy_version = 1;
  Micros created_at = 0;
  std::optional<Micros> not_before;
  Micros available_at = 0;
  std::optional<Micros> deadline;
  Micros estimated_start = 0;
  std::optional<std::string> lease_id;
  std::optional<Micros> lease_expires_at;
  std::optional<std::string> result;  // JSON text
  std::string errors = "[]";          // JSON array text
  std::optional<Micros> finished_at;
  std::optional<Micros> leased_at;         // when the current (or last) lease was released
  std::optional<std::string> traceparent;  // W3C trace context given at submit
};

// Where a queued job stands: what holds it (not yet knowing whether a worker is
// polling: kNone means releasable now) and when it would start if workers keep up.
struct QueuedJobExplanation {
  BlockedBy blocked_by = BlockedBy::kNone;
  Micros estimated_start = 0;
};

struct NewJob {
  std::string queue;
  std::string tenant;
  std::string payload = "null";  // JSON text, already validated
  int64_t cost = 1;
  std::optional<Micros> deadline;  // absolute; else deadline_in_ms, else the queue's default
  // Relative to the decision's now (the store's clock, which may not be the caller's).
  std::optional<int64_t> deadline_in_ms;
  std::optional<Micros> not_before;
  std::optional<int64_t> lease_ms;             // else the queue's lease_ms
  std::optional<int64_t> max_attempts;         // else the queue's max_attempts
  std::optional<std::string> idempotency_key;  // per tenant
  std::string body_hash;                       // of the request, to detect a reused key
  std::optional<std::string> traceparent;      // W3C trace context, stored as given
};

// The outcome of an admission: the shaper's decision, the bucket's effective policy
// (for the RateLimit fields) and, when admitted, the stored job.
struct SubmitOutcome {
  AdmissionDecision decision;
  BucketPolicy policy;
  int64_t policy_version = 0;
  std::optional<JobRecord> job;
  bool replayed = false;  // an Idempotency-Key seen before: `job` is the original
};

struct JobFilter {
  std::optional<std::string> tenant;  // empty: every tenant (admin)
  std::optional<std::string> queue;
  std::optional<JobState> state;
  int64_t limit = 100;
  int64_t after_seq = 0;  // the cursor: jobs admitted after this one
};

struct JobPage {
  std::vector<JobRecord> jobs;
  std::optional<int64_t> next_after_seq;  // set when there may be more
};

// What one maintenance pass changed.
// What a limiter decided, and how long until one more unit would pass (0: at once;
// empty: no wait is known, as for a concurrency limit, or none helps).
struct LimitOutcome {
  LimitDecision decision;
  std::optional<Micros> next_unit_after;
};

// One layer's part of a request: `cost` against the limiter state under `key`.
struct LimitAsk {
  std::string key;
  Limit limit;
  int64_t cost = 1;
};

// The decisions of several layers on one request, in the order asked, up to the first
// that refused (the last then). All or nothing: a refused request spends nothing in
// any layer.
struct LimitsOutcome {
  std::vector<LimitOutcome> outcomes;
  bool allowed = true;
};

// The declared intake-protection layers as stored: JSON, and the version of the
// latest change.
struct StoredLayers {
  int64_t version = 0;
  std::string body;
};

// Intake limiter keys in use, and the bytes the sliding logs among them hold.
struct LimitStats {
  int64_t keys = 0;
  int64_t log_bytes = 0;
};

struct MaintenanceCounts {
  int64_t leases_requeued = 0;  // lease ran out: back to queued
  int64_t leases_failed = 0;    // lease ran out with no attempts or time left
  int64_t expired = 0;          // queued past the deadline
  int64_t cleaned = 0;          // finished jobs past retention, deleted
};

struct LeaseRequest {
  std::vector<std::string> queues;
  int64_t max_jobs = 1;
  std::optional<int64_t> lease_ms;  // else each job's lease_ms
  std::string worker_id;
};

struct LeaseOutcome {
  std::vector<JobRecord> jobs;
  // When nothing was released: the earliest time something may become releasable
  // by the clock alone (rate, not_before, backoff). Empty: only an event can help
  // (a submit, a lease ending, a policy change).
  std::optional<Micros> wake_at;
  // Some bucket had work it could release but for a concurrency cap: a lease ending
  // may let it out.
  bool cap_blocked = false;
  // The store's time the decision was made at (the database's clock on PostgreSQL):
  // wake_at and each job's leased_at are on that clock, not necessarily the caller's.
  Micros now = 0;
};

struct FailRequest {
  std::string error;
  bool retryable = true;
  std::optional<int64_t> retry_in_ms;
};

// One acknowledgement of a batch (Store::AckManyAsync): how a leased attempt ended.
struct AckItem {
  std::string id;
  std::string lease_id;
  bool succeeded = true;
  std::optional<std::string> result;  // JSON text; when succeeded
  FailRequest fail;                   // when not succeeded
};

// Token scopes. `metrics` is read-only: /metrics and the admin views that change nothing
// and show no token or job (queues, tenants, limits).
enum class Scope { kSubmit, kWork, kAdmin, kMetrics };

struct TokenRecord {
  std::string id;
  std::string secret_hash;
  std::optional<std::string> tenant;
  std::vector<Scope> scopes;
  std::optional<std::vector<std::string>> queues;  // work: limited to these
  Micros created_at = 0;
  bool revoked = false;
  std::optional<Micros> revoked_at;
};

// What may have changed in the store, as an instance hears of changes another instance
// made on the same database (PostgreSQL), so that it wakes its long-polls and drops
// what it caches. kResync: changes may have been missed (the channel was lost); act
// as if everything changed.
// kWork: something may be releasable (a submit, a requeue, a resume, a policy change);
// kLeaseEnded: a lease ended, freeing a concurrency cap; kLimits: the intake layers.
enum class StoreChange { kWork, kLeaseEnded, kQueues, kTokens, kLimits, kResync };

class Store {
 public:
  virtual ~Store() = default;

  // Other instances' changes. `listener` runs on a store thread, must be quick and never
  // block; set it once before serving (nullptr to stop hearing). A store one process
  // owns (SQLite) never calls it: every change is made here.
  virtual void OnChange(std::function<void(StoreChange)> listener) = 0;
  // Whether this instance is the one that should run the maintenance passes now: always
  // on a store one process owns; on PostgreSQL, the instance that holds the maintenance
  // lock (another takes it over within seconds once its holder is gone).
  virtual bool MaintenanceLeader() = 0;

  // Queues. PutQueue creates or replaces the policy and bumps its version.
  // Who owns what (server/config.h): a queue the config file declares is managed by it.
  // `config`: the file this change comes from; the queue is then recorded as managed by
  // it, and a policy equal to the stored one changes nothing (no new version). Without
  // it (the API), a queue a config file manages is refused with managed_by_config,
  // naming the file; so is DeleteQueue of one.
  virtual Result<QueueInfo> PutQueue(const std::string& name, const QueuePolicy& policy, Micros now,
                                     const std::optional<std::string>& config = std::nullopt) = 0;
  virtual Result<QueueInfo> GetQueue(const std::string& name) = 0;
  // Ok if the queue exists, not_found otherwise: GetQueue without the counts (which
  // sum over every bucket), for hot paths such as each lease request.
  virtual Status CheckQueue(const std::string& name) = 0;
  virtual Result<std::vector<QueueInfo>> ListQueues() = 0;
  virtual Result<std::vector<BucketInfo>> ListBuckets(const std::string& queue) = 0;
  virtual Status SetPaused(const std::string& queue, bool paused, Micros now) = 0;
  // Deletes a queue with nothing queued or leased (conflict otherwise); its finished
  // jobs stay until the retention cleans them.
  virtual Status DeleteQueue(const std::string& queue) = 0;
  // Every bucket's schedule and queued jobs (FIFO), for a policy dry-run.
  virtual Result<std::vector<TenantBacklog>> Backlog(const std::string& queue) = 0;

  // The hot writes come in two forms. The asynchronous one calls `done` once the change
  // is durable (or has failed), on a store thread: `done` must be quick and never
  // block. The synchronous one waits for it.
  template <typename T>
  using Done = std::function<void(Result<T>)>;

  // Jobs. Submit returns only after the admitted job is durable.
  virtual void SubmitAsync(NewJob job, Micros now, Done<SubmitOutcome> done) = 0;
  Result<SubmitOutcome> Submit(const NewJob& job, Micros now) {
    return Await<SubmitOutcome>([&](auto done) { SubmitAsync(job, now, std::move(done)); });
  }
  // Many jobs, each decided as if submitted alone after the ones before it (its own
  // outcome or error, in order), in one transaction: what was admitted is durable
  // together, before `done` hears of it.
  virtual void SubmitManyAsync(std::vector<NewJob> jobs, Micros now,
                               Done<std::vector<Result<SubmitOutcome>>> done) = 0;
  std::vector<Result<SubmitOutcome>> SubmitMany(std::vector<NewJob> jobs, Micros now) {
    auto r = Await<std::vector<Result<SubmitOutcome>>>(
        [&](auto done) { SubmitManyAsync(std::move(jobs), now, std::move(done)); });
    if (r.ok()) return std::move(r.value());
    return {r.error()};
  }
  virtual Result<JobRecord> GetJob(const std::string& id) = 0;
  // For a job in state queued: why it waits and when it would start (live).
  virtual Result<QueuedJobExplanation> ExplainQueued(const JobRecord& job, Micros now) = 0;

  // Leases, in order, in one transaction: fairness across callers follows the order.
  // Jobs whose release time falls in [now, horizon] are released at that time (their
  // leased_at), so a caller can commit a release just ahead and hand it out on time.
  virtual std::vector<Result<LeaseOutcome>> LeaseMany(const std::vector<LeaseRequest>& requests,
                                                      Micros now, Micros horizon) = 0;
  std::vector<Result<LeaseOutcome>> LeaseMany(const std::vector<LeaseRequest>& requests,
                                              Micros now) {
    return LeaseMany(requests, now, now);
  }
  // Guarded by lease_id: a stale or unknown lease is lease_lost (409).
  virtual void CompleteAsync(std::string id, std::string lease_id,
                             std::optional<std::string> result, Micros now,
                             Done<JobRecord> done) = 0;
  virtual void FailAsync(std::string id, std::string lease_id, FailRequest fail, Micros now,
                         Done<JobRecord> done) = 0;
  // Every ack in one durable transaction, each exactly as CompleteAsync or FailAsync
  // would: one result per ack, in order. An ack that fails (lease_lost, not_found)
  // changes nothing and leaves the others be; only a failed transaction
  // (storage_unavailable) is an error of the whole, and then nothing changed.
  // `queues`, if set: the caller may only ack jobs of these queues; another queue's job
  // is not_found (as a missing one is) and is left as it is.
  virtual void AckManyAsync(std::vector<AckItem> acks,
                            std::optional<std::vector<std::string>> queues, Micros now,
                            Done<std::vector<Result<JobRecord>>> done) = 0;
  Result<std::vector<Result<JobRecord>>> AckMany(
      const std::vector<AckItem>& acks, Micros now,
      const std::optional<std::vector<std::string>>& queues = std::nullopt) {
    return Await<std::vector<Result<JobRecord>>>(
        [&](auto done) { AckManyAsync(acks, queues, now, std::move(done)); });
  }
  // Extends a live lease to now + extend_ms (default: the job's lease_ms).
  virtual void HeartbeatAsync(std::string id, std::string lease_id,
                              std::optional<int64_t> extend_ms, Micros now,
                              Done<JobRecord> done) = 0;
  Result<JobRecord> Complete(const std::string& id, const std::string& lease_id,
                             const std::optional<std::string>& result, Micros now) {
    return Await<JobRecord>(
        [&](auto done) { CompleteAsync(id, lease_id, result, now, std::move(done)); });
  }
  Result<JobRecord> Fail(const std::string& id, const std::string& lease_id,
                         const FailRequest& fail, Micros now) {
    return Await<JobRecord>(
        [&](auto done) { FailAsync(id, lease_id, fail, now, std::move(done)); });
  }
  Result<JobRecord> Heartbeat(const std::string& id, const std::string& lease_id,
                              std::optional<int64_t> extend_ms, Micros now) {
    return Await<JobRecord>(
        [&](auto done) { HeartbeatAsync(id, lease_id, extend_ms, now, std::move(done)); });
  }
  // queued -> canceled; conflict once leased or finished.
  virtual Result<JobRecord> Cancel(const std::string& id, Micros now) = 0;
  // failed | expired -> queued, attempts and deadline reset (an admin's decision).
  virtual Result<JobRecord> Retry(const std::string& id, Micros now) = 0;
  virtual Result<JobPage> ListJobs(const JobFilter& filter) = 0;

  // Maintenance, each one transaction: lapsed leases (rule 7), queued jobs past their
  // deadline (rule 6), finished jobs older than `finished_before` (at most `limit`).
  virtual Result<MaintenanceCounts> ReapLeases(Micros now) = 0;
  virtual Result<MaintenanceCounts> ExpireDeadlines(Micros now) = 0;
  virtual Result<MaintenanceCounts> Clean(Micros finished_before, int64_t limit) = 0;
  // Forgets up to `limit` intake-limiter keys whose quota is whole again at `now`;
  // returns how many.
  virtual Result<int64_t> CleanLimits(Micros now, int64_t limit) = 0;

  // ---- Intake-protection limiters (shaper/limiters/limiter.h) ----
  // One request of `cost` against the limiter state stored under `key` (rl:v1:...),
  // decided atomically with every other decision on that key, from any process sharing
  // the database, on the store's clock. A denial stores nothing.
  virtual void DecideLimitAsync(std::string key, Limit limit, int64_t cost, Micros now,
                                Done<LimitOutcome> done) = 0;
  // Several layers of one request at once, all or nothing. Requests that arrive while
  // a batch is deciding are decided together in the next (store/engine/limits.h): one
  // lock and one write per distinct key, committed without waiting for a flush on
  // PostgreSQL (a crash of the database may forget the last decisions; Driver::Sync).
  virtual void DecideLimitsAsync(std::vector<LimitAsk> asks, Micros now,
                                 Done<LimitsOutcome> done) = 0;
  // Concurrency layers: requests admitted with these asks have ended.
  virtual void ReleaseLimitsAsync(std::vector<LimitAsk> asks, Micros now, Done<Ok> done) = 0;
  virtual Result<LimitStats> GetLimitStats(Micros now) = 0;
  // The declared layers (nullopt: none declared, the defaults hold); PutLimitLayers
  // replaces them, bumps the version (returned) and tells the other instances.
  virtual Result<std::optional<StoredLayers>> GetLimitLayers() = 0;
  // `config` as for PutQueue: from the config file, equal layers change nothing (the
  // stored version is returned); from the API, layers a file manages are refused.
  virtual Result<int64_t> PutLimitLayers(
      const std::string& body, Micros now,
      const std::optional<std::string>& config = std::nullopt) = 0;
  // Forgets that a config file manages anything but `keep` ("queue:<name>", "limits"):
  // the API manages those from now on. Returns the keys it released.
  virtual Result<std::vector<std::string>> ReleaseFromConfig(
      const std::vector<std::string>& keep) = 0;
  // A small durable write: can the store commit right now? (/readyz)
  virtual Status Probe(Micros now) = 0;

  // Tokens. The plaintext never reaches the store, only its hash.
  virtual Status CreateToken(const TokenRecord& token) = 0;
  virtual Result<std::optional<TokenRecord>> FindToken(const std::string& id) = 0;
  virtual Result<std::vector<TokenRecord>> ListTokens() = 0;
  // Revoked from the next request on; not_found for an unknown id. Idempotent.
  virtual Result<TokenRecord> RevokeToken(const std::string& id, Micros now) = 0;

 private:
  // Starts an asynchronous operation with a completion and waits for it.
  template <typename T, typename Start>
  static Result<T> Await(Start start) {
    std::promise<Result<T>> promise;
    auto future = promise.get_future();
    start(Done<T>([&promise](Result<T> r) { promise.set_value(std::move(r)); }));
    return future.get();
  }
};

}  // namespace sluice

namespace sluice {

inline std::string_view ScopeName(Scope s) {
  switch (s) {
    case Scope::kSubmit:
      return "submit";
    case Scope::kWork:
      return "work";
    case Scope::kAdmin:
      return "admin";
    case Scope::kMetrics:
      return "metrics";
  }
  return "submit";
}

inline std::optional<Scope> ParseScope(std::string_view s) {
  for (Scope x : {Scope::kSubmit, Scope::kWork, Scope::kAdmin, Scope::kMetrics}) {
    if (ScopeName(x) == s) return x;
  }
  return std::nullopt;
}

}  // namespace sluice
