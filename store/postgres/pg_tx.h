// The PostgreSQL driver's transaction: each Tx method is one named statement of
// store/sql/postgres/statements.sql (LockBucket: two), prepared once per connection
// under its name and run with PQexecPrepared. libpq and server errors are thrown as
// pg::PgError; the driver rolls the transaction back and may run it again.
// A PgTx is used by one thread at a time, for one transaction.
#pragma once

#include <map>
#include <string>

#include "store/engine/tx.h"
#include "store/postgres/pg.h"
#include "store/statements.h"

namespace sluice {

// Every statement the driver runs, by name (each is also its prepared statement's name).
// Adding one: a block in statements.sql and a name here (tests/store/pg_store_test.cc
// checks the two lists agree).
// clang-format off
#define SLUICE_PG_STATEMENTS(X)                                                                \
  X(now) X(select_queue) X(lock_queue) X(queue_exists) X(queue_stats) X(list_queues)           \
  X(upsert_queue) X(set_paused) X(lock_queue_buckets) X(queue_busy) X(delete_queue)            \
  X(select_bucket) X(lock_bucket_key) X(lock_bucket) X(lock_bucket_keys) X(select_buckets)     \
  X(list_buckets) X(ready_buckets) X(unblocked_buckets) X(bucket_heads_after) X(backlog_buckets) X(backlog_jobs)     \
  X(bucket_admitted) X(buckets_admitted) X(bucket_released) X(buckets_released)                \
  X(bucket_lease_ended) X(bucket_leases_succeeded) X(fold_bucket_deltas) X(bucket_requeued)    \
  X(bucket_dequeued) X(dirty_queue_buckets) X(insert_job) X(insert_jobs) X(select_job) X(job_exists) X(cost_ahead)    \
  X(next_available) X(lease_job) X(lease_jobs) X(complete_job) X(complete_jobs)                \
  X(select_live_lease) X(end_attempt) X(leases_due) X(expire_due) X(heartbeat) X(cancel_job)   \
  X(retry_job) X(list_jobs) X(clean_jobs) X(clean_idempotency_keys) X(select_idempotency)      \
  X(insert_idempotency) X(probe) X(insert_token) X(select_token) X(list_tokens)                \
  X(revoke_token) X(lock_limit) X(insert_limit) X(update_limit) X(clean_limits)               \
  X(select_layers) X(put_layers) X(limit_stats) X(select_config_source) X(set_config_source)   \
  X(clear_config_source) X(list_config_sources)
// clang-format on

// Whose clock a transaction's decisions use.
enum class PgClock {
  kDatabase,  // the database server's (statement `now`): one clock for every process
  kCaller,    // the `now` each Store call passes (tests on virtual time)
};

struct PgStatements {
  // From store/sql/postgres/statements.sql; throws if one is missing.
  static const PgStatements& Get();
  explicit PgStatements(const Statements& file);

  // Prepares every statement on `conn` under its name; throws pg::PgError.
  void PrepareOn(pg::Connection& conn) const;

#define SLUICE_DECLARE(name) std::string name;
  SLUICE_PG_STATEMENTS(SLUICE_DECLARE)
#undef SLUICE_DECLARE
};

class PgTx final : public Tx {
 public:
  // `conn` has PgStatements prepared and is inside a transaction.
  PgTx(pg::Connection& conn, PgClock clock) : conn_(conn), clock_(clock) {}

  Micros Now(Micros caller) override;

  std::optional<QueueRow> LoadQueue(const std::string& name) override;
  std::optional<QueueRow> LockQueue(const std::string& name) override;
  void LockQueueBuckets(const std::string& name) override;
  bool QueueExists(const std::string& name) override;
  QueueStats LoadQueueStats(const std::string& name) override;
  std::vector<std::pair<QueueRow, QueueStats>> ListQueues() override;
  void UpsertQueue(const std::string& name, const std::string& policy, Micros now) override;
  bool SetPaused(const std::string& name, bool paused, Micros now) override;
  int64_t QueueBusy(const std::string& name) override;
  bool DeleteQueue(const std::string& name) override;

  BucketState LoadBucket(const std::string& queue, const std::string& tenant) override;
  // An advisory lock on the bucket's name, then its row (if any) FOR UPDATE.
  BucketState LockBucket(const std::string& queue, const std::string& tenant) override;
  std::vector<ReadyBucketRow> ReadyBuckets(const std::string& queue, Micros now, Micros after_ready,
                                           const std::string& after_tenant, int64_t limit) override;
  // Tenants with a lease end still in bucket_deltas.
  std::vector<ReadyBucketRow> UnblockedBuckets(const std::string& queue, Micros now) override;
  std::vector<HeadRow> BucketHeadsAfter(const std::string& queue, const std::string& tenant,
                                        int64_t after_seq, Micros now, int64_t limit) override;
  // The reads in one round trip.
  ReleaseInputs ReadForRelease(const std::string& queue, Micros now, int64_t page, bool index,
                               bool stats) override;
  std::vector<BucketRow> ListBuckets(const std::string& queue) override;
  std::vector<std::pair<std::string, ScheduleInstant>> BacklogBuckets(
      const std::string& queue) override;
  std::vector<std::pair<std::string, BacklogJob>> BacklogJobs(const std::string& queue) override;
  std::map<std::string, BucketState> LockBuckets(const std::string& queue,
                                                 const std::vector<std::string>& tenants) override;
  void BucketsAdmitted(const std::string& queue, const std::vector<AdmittedJob>& jobs) override;
  void BucketAdmitted(const std::string& queue, const std::string& tenant, int64_t cost,
                      Micros ready_bound) override;
  void DirtyQueueBuckets(const std::string& queue) override;
  void BucketReleased(const std::string& queue, const BucketRelease& r) override;
  void BucketsReleased(const std::string& queue,
                       const std::vector<BucketRelease>& releases) override;
  void BucketLeaseEnded(const std::string& queue, const std::string& tenant, LeaseEnd end) override;
  void BucketLeasesSucceeded(const std::vector<const JobRecord*>& jobs) override;
  void BucketRequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                      bool timed_out) override;
  void BucketDequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                      bool expired) override;

  void InsertJob(const JobRecord& job) override;
  void InsertJobs(const std::vector<JobRecord>& jobs) override;
  void FoldCounters() override;
  std::optional<JobRecord> SelectJob(const std::string& id) override;
  bool JobExists(const std::string& id) override;
  int64_t CostAhead(const std::string& queue, const std::string& tenant, const std::string& id,
                    Micros now) override;
  std::optional<Micros> NextAvailable(const std::string& queue, Micros now) override;
  std::optional<JobRecord> LeaseJob(int64_t seq, const std::string& lease_id, Micros released_at,
                                    std::optional<int64_t> lease_ms,
                                    const std::string& worker_id) override;
  std::vector<std::optional<JobRecord>> LeaseJobs(const std::vector<LeaseGrant>& grants) override;
  std::vector<std::optional<JobRecord>> CompleteJobs(
      const std::vector<CompleteItem>& items, const std::optional<std::vector<std::string>>& queues,
      Micros now) override;
  std::optional<JobRecord> CompleteJob(const std::string& id, const std::string& lease_id,
                                       const std::optional<std::string>& result,
                                       Micros now) override;
  std::optional<LeaseRow> SelectLiveLease(const std::string& id, const std::string& lease_id,
                                          Micros now) override;
  std::optional<JobRecord> EndAttempt(int64_t seq, bool retry, std::optional<Micros> available_at,
                                      Micros now, const std::string& error) override;
  std::vector<LeaseRow> LeasesDue(Micros now) override;
  std::vector<ExpiredRow> ExpireDue(Micros now) override;
  std::optional<JobRecord> Heartbeat(const std::string& id, const std::string& lease_id,
                                     std::optional<int64_t> extend_ms, Micros now) override;
  std::optional<JobRecord> Cancel(const std::string& id, Micros now) override;
  std::optional<JobRecord> Retry(const std::string& id, Micros now) override;
  std::vector<std::pair<JobRecord, int64_t>> ListJobs(const JobFilter& filter) override;
  int64_t CleanJobs(Micros finished_before, int64_t limit) override;
  void CleanIdempotencyKeys(Micros created_before, int64_t limit) override;
  std::optional<IdempotencyRow> SelectIdempotency(const std::string& tenant,
                                                  const std::string& key) override;
  void InsertIdempotency(const std::string& tenant, const std::string& key,
                         const std::string& body_hash, const std::string& job_id,
                         Micros now) override;
  void Probe(Micros now) override;
  std::optional<StoredLimit> LockLimit(const std::string& key) override;
  bool InsertLimit(const std::string& key, const std::string& state, Micros expires_at) override;
  void UpdateLimit(const std::string& key, const std::string& state, Micros expires_at) override;
  int64_t CleanLimits(Micros now, int64_t limit) override;
  std::optional<StoredLayers> SelectLayers() override;
  int64_t PutLayers(const std::string& body, Micros now) override;
  LimitStats SelectLimitStats(Micros now) override;
  std::optional<std::string> ConfigSource(const std::string& key) override;
  void SetConfigSource(const std::string& key, const std::optional<std::string>& file) override;
  std::vector<std::pair<std::string, std::string>> ConfigSources() override;

  void InsertToken(const TokenRecord& token) override;
  std::optional<TokenRecord> SelectToken(const std::string& id) override;
  std::vector<TokenRecord> ListTokens() override;
  std::optional<TokenRecord> RevokeToken(const std::string& id, Micros now) override;

 private:
  template <typename... Args>
  pg::Rows Run(const char* name, Args&&... args) {
    clock_read_.reset();
    return conn_.ExecPrepared(name, pg::Params(std::forward<Args>(args)...));
  }
  // A write whose result nothing reads: sent with the next statement (or the COMMIT),
  // in one round trip.
  template <typename... Args>
  void Later(const char* name, Args&&... args) {
    clock_read_.reset();
    conn_.Defer(name, pg::Params(std::forward<Args>(args)...));
  }
  // Runs `name` and, on the database's clock, `now` right after it in the same round
  // trip (kept for the Now that follows: a locking read's caller reads the clock next).
  pg::Rows RunThenReadClock(const char* name, pg::Params params);
  std::optional<JobRecord> OneJob(const pg::Rows& rows);
  std::optional<QueueRow> OneQueue(const pg::Rows& rows);
  BucketState OneBucket(const pg::Rows& rows);

  pg::Connection& conn_;
  std::map<std::string, QueueRow> locked_queues_;  // rows LockQueue read (and locked)
  PgClock clock_;
  std::optional<Micros> clock_read_;  // `now`, read after the last statement (no other since)
};

}  // namespace sluice
