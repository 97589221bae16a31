// The narrow transaction interface between the engine and a storage driver: every row
// operation the engine needs, typed, and nothing that decides. A driver implements each
// method with one named statement (store/sql/<driver>/statements.sql) or two; the engine
// (store/engine/) holds every rule. A Tx lives for one transaction (or one read
// snapshot) on one connection and is used by one thread at a time.
//
// Guarded transitions return std::nullopt (or false, or 0) when no row matched: the
// caller lost a race or named something that is not in the needed state; the engine
// turns that into the caller's error. A driver error (lost connection, disk) is thrown
// as the driver's own exception and becomes storage_unavailable (or internal) at the
// driver boundary, which rolls the operation back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "shaper/admission.h"
#include "shaper/gcra.h"
#include "store/store.h"

namespace sluice {

// A queue row as stored: the policy is its JSON text (the engine parses it).
// An intake limiter key's row: its state (EncodeState's text) and when it may be
// forgotten.
struct StoredLimit {
  std::string state;
  Micros expires_at = 0;
};

struct QueueRow {
  std::string name;
  std::string policy;
  int64_t version = 1;
  bool paused = false;
};

// A queued job as release selection sees it.
struct HeadRow {
  int64_t seq = 0;
  int64_t cost = 1;
  std::optional<Micros> deadline;
};

// The release index's sentinels (ReadyBuckets, store/engine/release.cc): a bucket whose
// next release is to be checked again sorts first; a bucket at its tenant cap sorts
// last until one of its leases ends. Every other value is a lower bound of the time of
// the bucket's next release.
inline constexpr Micros kReadyDirty = -(int64_t{1} << 62);
inline constexpr Micros kReadyBlocked = int64_t{1} << 62;

// A bucket of the release index and its first available queued jobs (its head first, or
// none when no job of it is available), for release selection. `queued` and `admitted`
// are its counters as read, which the write of the pass's outcome checks.
struct ReadyBucketRow {
  std::string tenant;
  ScheduleInstant tat;
  int64_t leased = 0;
  int64_t queued = 0;
  int64_t admitted = 0;
  Micros ready_at = kReadyDirty;
  std::vector<HeadRow> heads;  // FIFO
  bool more = false;           // more may follow the last of them (BucketHeadsAfter)
};

// A completion: job `id`, guarded by `lease_id`, with its result.
struct CompleteItem {
  std::string id;
  std::string lease_id;
  std::optional<std::string> result;
};

// What a lease pass reads of a queue: its stats, the first page of its release index
// (ReadyBuckets) and the buckets a lease end unblocked (UnblockedBuckets), and the
// earliest time a delayed job becomes available (NextAvailable).
struct ReleaseInputs {
  QueueStats stats;
  std::vector<ReadyBucketRow> page;
  std::vector<ReadyBucketRow> unblocked;
  std::optional<Micros> next_available;
};

// A release: job `seq` leased from `released_at`.
struct LeaseGrant {
  int64_t seq = 0;
  std::string lease_id;
  Micros released_at = 0;
  std::optional<int64_t> lease_ms;
  std::string worker_id;
};

// The outcome of a lease pass for one bucket: `count` jobs of total `cost` left it (0:
// it was only checked), its TAT now `tat`, its release index entry `ready_at`, written
// only if its counters are still `seen_queued` and `seen_admitted` (else it is to be
// checked again).
struct BucketRelease {
  std::string tenant;
  ScheduleInstant tat;
  int64_t cost = 0;
  int64_t count = 0;
  Micros ready_at = kReadyDirty;
  int64_t seen_queued = 0;
  int64_t seen_admitted = 0;
};

// An admitted job's share of its bucket's counters, with a lower bound of the bucket's
// next release (ReleaseAt of its TAT; kReadyDirty when unknown).
struct AdmittedJob {
  std::string tenant;
  int64_t cost = 1;
  Micros ready_bound = kReadyDirty;
};

// A bucket as the admin views list it.
struct BucketRow {
  std::string tenant;
  int64_t queued = 0;
  int64_t queued_cost = 0;
  int64_t leased = 0;
  ScheduleInstant tat;
  std::optional<Micros> oldest_queued_at;
  Totals totals;
};

// A live lease (or one that ran out), with what the retry decision needs.
struct LeaseRow {
  int64_t seq = 0;
  std::string queue, tenant;
  int64_t cost = 1, attempt = 0, max_attempts = 1;
  std::optional<Micros> deadline;
};

struct ExpiredRow {
  std::string queue, tenant;
  int64_t cost = 1;
};

struct IdempotencyRow {
  std::string body_hash;
  std::string job_id;
};

// How a lease ended, for a bucket's counters.
struct LeaseEnd {
  bool succeeded = false;
  bool failed = false;     // for good
  bool timed_out = false;  // the lease ran out
};

class Tx {
 public:
  virtual ~Tx() = default;

  // The time of this transaction's decisions: `caller` on a driver whose clock is the
  // caller's (SQLite: one process), the database's own clock on a driver shared by
  // several processes (PostgreSQL), read inside this transaction.
  virtual Micros Now(Micros caller) = 0;

  // Queues.
  virtual std::optional<QueueRow> LoadQueue(const std::string& name) = 0;
  // LoadQueue holding a lock on the queue row until the transaction ends, so that
  // releases from one queue are decided one transaction at a time across processes.
  // Callers lock queues in name order.
  virtual std::optional<QueueRow> LockQueue(const std::string& name) = 0;
  virtual bool QueueExists(const std::string& name) = 0;
  virtual QueueStats LoadQueueStats(const std::string& name) = 0;
  virtual std::vector<std::pair<QueueRow, QueueStats>> ListQueues() = 0;
  virtual void UpsertQueue(const std::string& name, const std::string& policy, Micros now) = 0;
  virtual bool SetPaused(const std::string& name, bool paused, Micros now) = 0;
  // Locks every bucket row of the queue until the transaction ends (after LockQueue):
  // waits for the admissions in flight to commit.
  virtual void LockQueueBuckets(const std::string& name) = 0;
  virtual int64_t QueueBusy(const std::string& name) = 0;  // queued + leased jobs
  virtual bool DeleteQueue(const std::string& name) = 0;

  // Buckets. LockBucket reads the bucket's state holding a lock on it (a missing bucket
  // reads as empty; whether a row lock is taken for it then is the driver's concern:
  // the admission that follows adds it with BucketAdmitted).
  virtual BucketState LoadBucket(const std::string& queue, const std::string& tenant) = 0;
  virtual BucketState LockBucket(const std::string& queue, const std::string& tenant) = 0;
  // A page of the queue's release index: its buckets with queued jobs in (ready_at,
  // tenant) order after (`after_ready`, `after_tenant`), at most `limit`, each with its
  // first jobs available at `now` (at least its head, if any; a driver may read more).
  virtual std::vector<ReadyBucketRow> ReadyBuckets(const std::string& queue, Micros now,
                                                   Micros after_ready,
                                                   const std::string& after_tenant,
                                                   int64_t limit) = 0;
  // Buckets held at their tenant cap (kReadyBlocked) that a lease end not yet written
  // to their row unblocked, as ReadyBuckets reads them. A driver that writes every
  // lease end to its bucket's row (turning kReadyBlocked into kReadyDirty) has none.
  virtual std::vector<ReadyBucketRow> UnblockedBuckets(const std::string& /*queue*/,
                                                       Micros /*now*/) {
    return {};
  }
  // LoadQueueStats (if `stats`: it sums every bucket, which only a queue cap needs),
  // then (unless `index` is false) the first page of ReadyBuckets and UnblockedBuckets,
  // then NextAvailable: a driver may read them at once.
  virtual ReleaseInputs ReadForRelease(const std::string& queue, Micros now, int64_t page,
                                       bool index, bool stats) {
    ReleaseInputs in;
    if (stats) in.stats = LoadQueueStats(queue);
    if (index) {
      in.page = ReadyBuckets(queue, now, std::numeric_limits<Micros>::min(), "", page);
      in.unblocked = UnblockedBuckets(queue, now);
    }
    in.next_available = NextAvailable(queue, now);
    return in;
  }
  // A bucket's jobs available at `now` after job `after_seq`, FIFO, at most `limit`.
  virtual std::vector<HeadRow> BucketHeadsAfter(const std::string& queue, const std::string& tenant,
                                                int64_t after_seq, Micros now, int64_t limit) = 0;
  virtual std::vector<BucketRow> ListBuckets(const std::string& queue) = 0;
  virtual std::vector<std::pair<std::string, ScheduleInstant>> BacklogBuckets(
      const std::string& queue) = 0;
  // Queued jobs of a queue by tenant, FIFO: (tenant, cost, deadline).
  virtual std::vector<std::pair<std::string, BacklogJob>> BacklogJobs(const std::string& queue) = 0;
  // Several buckets of one queue at once, `tenants` distinct and in byte order (the
  // order every transaction takes bucket locks in, so that two never wait for each
  // other): the admission lock on each, then each one's state (missing: empty). A
  // driver that locks nothing per bucket (one writer) may read them one by one.
  virtual std::map<std::string, BucketState> LockBuckets(const std::string& queue,
                                                         const std::vector<std::string>& tenants) {
    std::map<std::string, BucketState> out;
    for (const std::string& t : tenants) out.emplace(t, LockBucket(queue, t));
    return out;
  }
  // Counter changes, each in step with a job transition in the same transaction.
  // BucketsAdmitted: BucketAdmitted for each job, applied in tenant byte order. An
  // admission lowers the bucket's release index entry to `ready_bound` (never raises it).
  virtual void BucketsAdmitted(const std::string& queue, const std::vector<AdmittedJob>& jobs) {
    for (const AdmittedJob& j : jobs) BucketAdmitted(queue, j.tenant, j.cost, j.ready_bound);
  }
  virtual void BucketAdmitted(const std::string& queue, const std::string& tenant, int64_t cost,
                              Micros ready_bound) = 0;
  // A queue's policy changed: every bucket's release index entry is to be checked again.
  virtual void DirtyQueueBuckets(const std::string& queue) = 0;
  // A lease pass's outcome for one bucket (BucketRelease).
  virtual void BucketReleased(const std::string& queue, const BucketRelease& r) = 0;
  // BucketReleased for each, `releases` in tenant byte order (the order of every bucket
  // lock).
  virtual void BucketsReleased(const std::string& queue,
                               const std::vector<BucketRelease>& releases) {
    for (const BucketRelease& r : releases) BucketReleased(queue, r);
  }
  // A driver may keep counter changes aside (so that an ack does not write its bucket's
  // row) and show them in every read; this moves them into the buckets. Maintenance
  // calls it; a driver that keeps nothing aside does nothing.
  virtual void FoldCounters() {}
  virtual void BucketLeaseEnded(const std::string& queue, const std::string& tenant,
                                LeaseEnd end) = 0;
  // BucketLeaseEnded for the bucket of each job, all succeeded.
  virtual void BucketLeasesSucceeded(const std::vector<const JobRecord*>& jobs) {
    for (const JobRecord* j : jobs)
      BucketLeaseEnded(j->queue, j->tenant, LeaseEnd{.succeeded = true});
  }
  virtual void BucketRequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                              bool timed_out) = 0;
  virtual void BucketDequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                              bool expired) = 0;

  // Jobs.
  virtual void InsertJob(const JobRecord& job) = 0;
  virtual void InsertJobs(const std::vector<JobRecord>& jobs) {
    for (const JobRecord& j : jobs) InsertJob(j);
  }
  virtual std::optional<JobRecord> SelectJob(const std::string& id) = 0;
  virtual bool JobExists(const std::string& id) = 0;
  // Queued cost ahead of job `id` in its bucket, among jobs available at `now`.
  virtual int64_t CostAhead(const std::string& queue, const std::string& tenant,
                            const std::string& id, Micros now) = 0;
  // The earliest available_at after `now` of a delayed queued job of the queue.
  virtual std::optional<Micros> NextAvailable(const std::string& queue, Micros now) = 0;
  // queued -> leased, guarded by state; the lease runs from `released_at`.
  virtual std::optional<JobRecord> LeaseJob(int64_t seq, const std::string& lease_id,
                                            Micros released_at, std::optional<int64_t> lease_ms,
                                            const std::string& worker_id) = 0;
  // LeaseJob for each grant: out[i] is grants[i]'s job, or nothing if it was no longer
  // queued.
  virtual std::vector<std::optional<JobRecord>> LeaseJobs(const std::vector<LeaseGrant>& grants) {
    std::vector<std::optional<JobRecord>> out;
    out.reserve(grants.size());
    for (const LeaseGrant& g : grants) {
      out.push_back(LeaseJob(g.seq, g.lease_id, g.released_at, g.lease_ms, g.worker_id));
    }
    return out;
  }
  // leased -> succeeded, guarded by the lease id and its expiry.
  virtual std::optional<JobRecord> CompleteJob(const std::string& id, const std::string& lease_id,
                                               const std::optional<std::string>& result,
                                               Micros now) = 0;
  // CompleteJob for each item, in order: out[i] is items[i]'s job, or nothing if its
  // guard failed (or, with `queues`, the job is of another queue: then it is untouched).
  virtual std::vector<std::optional<JobRecord>> CompleteJobs(
      const std::vector<CompleteItem>& items, const std::optional<std::vector<std::string>>& queues,
      Micros now) {
    std::vector<std::optional<JobRecord>> out;
    out.reserve(items.size());
    for (const CompleteItem& c : items) {
      if (queues) {
        auto job = SelectJob(c.id);
        if (!job || std::find(queues->begin(), queues->end(), job->queue) == queues->end()) {
          out.emplace_back();
          continue;
        }
      }
      out.push_back(CompleteJob(c.id, c.lease_id, c.result, now));
    }
    return out;
  }
  virtual std::optional<LeaseRow> SelectLiveLease(const std::string& id,
                                                  const std::string& lease_id, Micros now) = 0;
  // leased -> queued (retry, available from `available_at`) or failed, the error
  // appended to the job's errors; guarded by state.
  virtual std::optional<JobRecord> EndAttempt(int64_t seq, bool retry,
                                              std::optional<Micros> available_at, Micros now,
                                              const std::string& error) = 0;
  // Leases that ran out by `now`; on a shared database, rows another transaction
  // holds are skipped.
  virtual std::vector<LeaseRow> LeasesDue(Micros now) = 0;
  // queued -> expired for every queued job past its deadline.
  virtual std::vector<ExpiredRow> ExpireDue(Micros now) = 0;
  virtual std::optional<JobRecord> Heartbeat(const std::string& id, const std::string& lease_id,
                                             std::optional<int64_t> extend_ms, Micros now) = 0;
  virtual std::optional<JobRecord> Cancel(const std::string& id, Micros now) = 0;
  virtual std::optional<JobRecord> Retry(const std::string& id, Micros now) = 0;
  // Jobs after the cursor, with each one's seq.
  virtual std::vector<std::pair<JobRecord, int64_t>> ListJobs(const JobFilter& filter) = 0;
  virtual int64_t CleanJobs(Micros finished_before, int64_t limit) = 0;
  virtual void CleanIdempotencyKeys(Micros created_before, int64_t limit) = 0;
  virtual std::optional<IdempotencyRow> SelectIdempotency(const std::string& tenant,
                                                          const std::string& key) = 0;
  virtual void InsertIdempotency(const std::string& tenant, const std::string& key,
                                 const std::string& body_hash, const std::string& job_id,
                                 Micros now) = 0;
  virtual void Probe(Micros now) = 0;

  // ---- Intake-limiter state (rate_limits) ----
  // The key's stored state (EncodeState's text) and when it may be forgotten, its row
  // locked until the transaction ends; nullopt when there is none.
  virtual std::optional<StoredLimit> LockLimit(const std::string& key) = 0;
  // Creates the key's row, unless one exists: false then (another transaction made it
  // meanwhile: lock it and decide again).
  virtual bool InsertLimit(const std::string& key, const std::string& state, Micros expires_at) = 0;
  virtual void UpdateLimit(const std::string& key, const std::string& state, Micros expires_at) = 0;
  // Deletes up to `limit` rows expired at `now`; how many.
  virtual int64_t CleanLimits(Micros now, int64_t limit) = 0;
  // The declared layers (limit_layers), if any; PutLayers replaces them and returns
  // the new version.
  virtual std::optional<StoredLayers> SelectLayers() = 0;
  virtual int64_t PutLayers(const std::string& body, Micros now) = 0;
  // Keys whose state is still in use at `now`, and the bytes of the sliding logs.
  virtual LimitStats SelectLimitStats(Micros now) = 0;

  // What the config file manages (config_sources): the file that manages `key`
  // ("queue:<name>" or "limits"), if one does; SetConfigSource records it (nullopt:
  // forgets it); ConfigSources lists every (key, file).
  virtual std::optional<std::string> ConfigSource(const std::string& key) = 0;
  virtual void SetConfigSource(const std::string& key, const std::optional<std::string>& file) = 0;
  virtual std::vector<std::pair<std::string, std::string>> ConfigSources() = 0;

  // Tokens.
  virtual void InsertToken(const TokenRecord& token) = 0;
  virtual std::optional<TokenRecord> SelectToken(const std::string& id) = 0;
  virtual std::vector<TokenRecord> ListTokens() = 0;
  virtual std::optional<TokenRecord> RevokeToken(const std::string& id, Micros now) = 0;
};

}  // namespace sluice
