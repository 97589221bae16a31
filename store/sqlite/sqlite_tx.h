// The SQLite driver's transaction: each Tx method is one named statement of
// store/sql/sqlite/statements.sql on the writer's (or a reader's) connection. SQLite
// errors are thrown as sqlite::SqliteError; the writer rolls the operation back.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "store/engine/tx.h"
#include "store/sqlite/queue_rows.h"
#include "store/sqlite/sqlite.h"
#include "store/statements.h"

namespace sluice {

// Every statement the driver runs, by name. Adding one: a block in statements.sql and
// a name here (tests/store/statements_test.cc checks the two lists agree).
#define SLUICE_SQLITE_STATEMENTS(X)                                                              \
  X(select_queue)                                                                                \
  X(queue_exists)                                                                                \
  X(queue_stats)                                                                                 \
  X(list_queues)                                                                                 \
  X(upsert_queue)                                                                                \
  X(set_paused)                                                                                  \
  X(queue_busy)                                                                                  \
  X(delete_queue)                                                                                \
  X(select_bucket)                                                                               \
  X(list_buckets)                                                                                \
  X(ready_buckets)                                                                               \
  X(bucket_heads_fresh) X(bucket_heads_waiting) X(backlog_buckets) X(backlog_jobs)               \
      X(bucket_admitted) X(bucket_released) X(bucket_lease_ended) X(bucket_leases_succeeded)     \
          X(bucket_requeued) X(bucket_dequeued) X(dirty_queue_buckets) X(bucket_cursor_back)     \
              X(insert_job) X(select_job) X(job_exists) X(cost_ahead) X(next_available)          \
                  X(lease_job) X(select_job_by_seq) X(complete_job) X(select_live_lease)         \
                      X(end_attempt) X(leases_due) X(any_expire_due) X(expire_due) X(heartbeat)  \
                          X(cancel_job) X(retry_job) X(list_jobs) X(clean_jobs)                  \
                              X(clean_idempotency_keys) X(select_idempotency)                    \
                                  X(insert_idempotency) X(probe) X(insert_token) X(select_token) \
                                      X(list_tokens) X(revoke_token) X(select_limit)             \
                                          X(insert_limit) X(update_limit) X(clean_limits)        \
                                              X(select_layers) X(put_layers) X(limit_stats)      \
                                                  X(select_config_source) X(set_config_source)   \
                                                      X(clear_config_source)                     \
                                                          X(list_config_sources)

struct SqliteStatements {
  // From store/sql/sqlite/statements.sql; throws if one is missing.
  static const SqliteStatements& Get();
  explicit SqliteStatements(const Statements& file);
#define SLUICE_DECLARE(name) std::string name;
  SLUICE_SQLITE_STATEMENTS(SLUICE_DECLARE)
#undef SLUICE_DECLARE
};

class SqliteTx final : public Tx {
 public:
  // `queue_rows`: the writer connection's cache of queue rows (store/sqlite/queue_rows.h);
  // nullptr on a reader's connection.
  SqliteTx(sqlite::Db& db, const SqliteStatements& sql, QueueRows* queue_rows = nullptr)
      : db_(db), sql_(sql), queue_rows_(queue_rows) {}

  Micros Now(Micros caller) override { return caller; }  // one process: the caller's clock

  std::optional<QueueRow> LoadQueue(const std::string& name) override;
  std::optional<QueueRow> LockQueue(const std::string& name) override { return LoadQueue(name); }
  // One writer: no admission is in flight while this transaction runs.
  void LockQueueBuckets(const std::string&) override {}
  bool QueueExists(const std::string& name) override;
  QueueStats LoadQueueStats(const std::string& name) override;
  std::vector<std::pair<QueueRow, QueueStats>> ListQueues() override;
  void UpsertQueue(const std::string& name, const std::string& policy, Micros now) override;
  bool SetPaused(const std::string& name, bool paused, Micros now) override;
  int64_t QueueBusy(const std::string& name) override;
  bool DeleteQueue(const std::string& name) override;

  BucketState LoadBucket(const std::string& queue, const std::string& tenant) override;
  // One writer at a time: the write transaction is the lock.
  BucketState LockBucket(const std::string& queue, const std::string& tenant) override {
    return LoadBucket(queue, tenant);
  }
  std::vector<ReadyBucketRow> ReadyBuckets(const std::string& queue, Micros now, Micros after_ready,
                                           const std::string& after_tenant, int64_t limit) override;
  std::vector<HeadRow> BucketHeadsAfter(const std::string& queue, const std::string& tenant,
                                        int64_t after_seq, Micros now, int64_t limit) override;
  std::vector<BucketRow> ListBuckets(const std::string& queue) override;
  std::vector<std::pair<std::string, ScheduleInstant>> BacklogBuckets(
      const std::string& queue) override;
  std::vector<std::pair<std::string, BacklogJob>> BacklogJobs(const std::string& queue) override;
  void BucketsAdmitted(const std::string& queue, const std::vector<AdmittedJob>& jobs) override;
  void BucketAdmitted(const std::string& queue, const std::string& tenant, int64_t cost,
                      Micros ready_bound) override;
  void DirtyQueueBuckets(const std::string& queue) override;
  void BucketReleased(const std::string& queue, const BucketRelease& r) override;
  void BucketLeaseEnded(const std::string& queue, const std::string& tenant, LeaseEnd end) override;
  // One statement per bucket, not per job.
  void BucketLeasesSucceeded(const std::vector<const JobRecord*>& jobs) override;
  void BucketRequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                      bool timed_out) override;
  void BucketDequeued(const std::string& queue, const std::string& tenant, int64_t cost,
                      bool expired) override;

  void InsertJob(const JobRecord& job) override;
  std::optional<JobRecord> SelectJob(const std::string& id) override;
  bool JobExists(const std::string& id) override;
  int64_t CostAhead(const std::string& queue, const std::string& tenant, const std::string& id,
                    Micros now) override;
  std::optional<Micros> NextAvailable(const std::string& queue, Micros now) override;
  std::optional<JobRecord> LeaseJob(int64_t seq, const std::string& lease_id, Micros released_at,
                                    std::optional<int64_t> lease_ms,
                                    const std::string& worker_id) override;
  std::optional<JobRecord> CompleteJob(const std::string& id, const std::string& lease_id,
                                       const std::optional<std::string>& result,
                                       Micros now) override;
  // One statement per item, the queue checked in it (no read of the job first).
  std::vector<std::optional<JobRecord>> CompleteJobs(
      const std::vector<CompleteItem>& items, const std::optional<std::vector<std::string>>& queues,
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
  std::optional<JobRecord> OneJob(sqlite::Stmt& s);
  std::optional<JobRecord> SelectJobBySeq(int64_t seq);
  // complete_job for one item (`allowed`: its ?5), then the job as it now is.
  std::optional<JobRecord> CompleteOne(const CompleteItem& c,
                                       const std::optional<std::string>& allowed, Micros now);

  // A queue row is about to change: the writer's cache stops serving it.
  void QueueChanging() {
    if (queue_rows_) queue_rows_->Changed();
  }

  sqlite::Db& db_;
  const SqliteStatements& sql_;
  QueueRows* queue_rows_;
  // Per bucket (queue, tenant), what this operation learned for the bucket's cursor
  // (schema.sql, buckets.head_seq), which BucketReleased moves.
  struct CursorNews {
    int64_t leased_upto = 0;  // one past the highest seq leased
    // The last BucketHeadsAfter: its first fresh jobs after seq `fresh_after`, every one
    // there is up to the last of them.
    int64_t fresh_after = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> fresh;
  };
  std::map<std::pair<std::string, std::string>, CursorNews> cursor_news_;
};

}  // namespace sluice
