// Store on one SQLite file: WAL, synchronous=FULL by default, every write through the
// group-committing Writer, reads on a small pool of read-only connections.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/checkpointer.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/writer.h"

namespace sluice {

struct SqliteStoreOptions {
  std::string path;                     // the database file (created if missing)
  std::string synchronous = "FULL";     // FULL: an acknowledged job survives power loss
  int busy_timeout_ms = 5000;           // how long a statement waits on a lock
  size_t max_batch = 512;               // operations per group commit
  std::function<double()> unit_random;  // retry jitter source in [0,1); default: random_device
  // Where the completions of asynchronous writes run, once per group commit (see
  // Writer); default: on the thread that finishes them. Must outlive the store.
  Writer::Executor completions;
  Writer::CommitObserver on_commit;  // see Writer
  Writer::FlushObserver on_flush;    // see Writer
};

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<SqliteStore>> Open(SqliteStoreOptions options);
  ~SqliteStore() override;

  Result<QueueInfo> PutQueue(const std::string& name, const QueuePolicy& policy,
                             Micros now) override;
  Result<QueueInfo> GetQueue(const std::string& name) override;
  Status CheckQueue(const std::string& name) override;
  Result<std::vector<QueueInfo>> ListQueues() override;
  Result<std::vector<BucketInfo>> ListBuckets(const std::string& queue) override;
  Status SetPaused(const std::string& queue, bool paused, Micros now) override;
  Status DeleteQueue(const std::string& queue) override;
  Result<std::vector<TenantBacklog>> Backlog(const std::string& queue) override;

  void SubmitAsync(NewJob job, Micros now, Done<SubmitOutcome> done) override;
  Result<JobRecord> GetJob(const std::string& id) override;
  Result<QueuedJobExplanation> ExplainQueued(const JobRecord& job, Micros now) override;

  using Store::LeaseMany;
  std::vector<Result<LeaseOutcome>> LeaseMany(const std::vector<LeaseRequest>& requests, Micros now,
                                              Micros horizon) override;
  void CompleteAsync(std::string id, std::string lease_id, std::optional<std::string> result,
                     Micros now, Done<JobRecord> done) override;
  void FailAsync(std::string id, std::string lease_id, FailRequest fail, Micros now,
                 Done<JobRecord> done) override;
  void HeartbeatAsync(std::string id, std::string lease_id, std::optional<int64_t> extend_ms,
                      Micros now, Done<JobRecord> done) override;
  Result<JobRecord> Cancel(const std::string& id, Micros now) override;
  Result<JobRecord> Retry(const std::string& id, Micros now) override;
  Result<JobPage> ListJobs(const JobFilter& filter) override;
  Result<MaintenanceCounts> ReapLeases(Micros now) override;
  Result<MaintenanceCounts> ExpireDeadlines(Micros now) override;
  Result<MaintenanceCounts> Clean(Micros finished_before, int64_t limit) override;
  Status Probe(Micros now) override;

  Status CreateToken(const TokenRecord& token) override;
  // Served from memory after the first read: every token change goes through this
  // store, and each one drops the token from the cache once it is committed.
  Result<std::optional<TokenRecord>> FindToken(const std::string& id) override;
  Result<std::vector<TokenRecord>> ListTokens() override;
  Result<TokenRecord> RevokeToken(const std::string& id, Micros now) override;

  const Writer& writer() const { return *writer_; }

 private:
  explicit SqliteStore(SqliteStoreOptions options);

  // Runs `fn` on a pooled read connection, turning SqliteError into an Error.
  template <typename T>
  Result<T> Read(const std::function<Result<T>(sqlite::Db&)>& fn);

  Result<std::optional<TokenRecord>> ReadToken(const std::string& id);
  void ForgetToken(const std::string& id);

  static constexpr size_t kTokenCacheSize = 10000;

  SqliteStoreOptions options_;
  std::unique_ptr<Checkpointer> checkpointer_;  // declared before writer_: outlives it
  std::unique_ptr<Writer> writer_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<sqlite::Db>> idle_readers_;  // guarded by readers_mu_
  std::mutex tokens_mu_;
  std::unordered_map<std::string, TokenRecord> token_cache_;  // guarded by tokens_mu_
};

}  // namespace sluice
