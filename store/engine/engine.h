// The store engine: every rule of the Store contract (store/store.h) that decides —
// admission, idempotency, release selection across buckets, caps, the end of an
// attempt (retry, fail, lapsed lease), expiry, cleaning — over a Driver's transactions.
// The shaper (pure) makes each decision; the driver (storage only) reads and writes the
// rows. Caches of stored policies and tokens live here, for every driver alike.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/engine/coalescer.h"
#include "store/engine/driver.h"
#include "store/store.h"

namespace sluice {

struct EngineOptions {
  std::function<double()> unit_random;  // retry jitter source in [0,1); default: random_device
  // How long a token (or the fact that a queue exists) read from the store is served
  // from memory. Another instance's change (a revocation, a deleted queue) reaches this
  // one at once through the driver's channel; this bounds it when the channel is lost
  // (docs/api.md: within one second).
  std::chrono::milliseconds token_ttl{500};
};

class Engine : public Store {
 public:
  Engine(std::unique_ptr<Driver> driver, EngineOptions options);
  ~Engine() override;

  void OnChange(std::function<void(StoreChange)> listener) override;
  bool MaintenanceLeader() override { return driver_->MaintenanceLeader(); }

  Result<QueueInfo> PutQueue(const std::string& name, const QueuePolicy& policy, Micros now,
                             const std::optional<std::string>& config = std::nullopt) override;
  Result<QueueInfo> GetQueue(const std::string& name) override;
  Status CheckQueue(const std::string& name) override;
  Result<std::vector<QueueInfo>> ListQueues() override;
  Result<std::vector<BucketInfo>> ListBuckets(const std::string& queue) override;
  Status SetPaused(const std::string& queue, bool paused, Micros now) override;
  Status DeleteQueue(const std::string& queue) override;
  Result<std::vector<TenantBacklog>> Backlog(const std::string& queue) override;

  void SubmitAsync(NewJob job, Micros now, Done<SubmitOutcome> done) override;
  void SubmitManyAsync(std::vector<NewJob> jobs, Micros now,
                       Done<std::vector<Result<SubmitOutcome>>> done) override;
  Result<JobRecord> GetJob(const std::string& id) override;
  Result<QueuedJobExplanation> ExplainQueued(const JobRecord& job, Micros now) override;

  using Store::LeaseMany;
  std::vector<Result<LeaseOutcome>> LeaseMany(const std::vector<LeaseRequest>& requests, Micros now,
                                              Micros horizon) override;
  void CompleteAsync(std::string id, std::string lease_id, std::optional<std::string> result,
                     Micros now, Done<JobRecord> done) override;
  void FailAsync(std::string id, std::string lease_id, FailRequest fail, Micros now,
                 Done<JobRecord> done) override;
  void AckManyAsync(std::vector<AckItem> acks, std::optional<std::vector<std::string>> queues,
                    Micros now, Done<std::vector<Result<JobRecord>>> done) override;
  void HeartbeatAsync(std::string id, std::string lease_id, std::optional<int64_t> extend_ms,
                      Micros now, Done<JobRecord> done) override;
  Result<JobRecord> Cancel(const std::string& id, Micros now) override;
  Result<JobRecord> Retry(const std::string& id, Micros now) override;
  Result<JobPage> ListJobs(const JobFilter& filter) override;
  Result<MaintenanceCounts> ReapLeases(Micros now) override;
  Result<MaintenanceCounts> ExpireDeadlines(Micros now) override;
  Result<MaintenanceCounts> Clean(Micros finished_before, int64_t limit) override;
  Result<int64_t> CleanLimits(Micros now, int64_t limit) override;
  void DecideLimitAsync(std::string key, Limit limit, int64_t cost, Micros now,
                        Done<LimitOutcome> done) override;
  void DecideLimitsAsync(std::vector<LimitAsk> asks, Micros now, Done<LimitsOutcome> done) override;
  void ReleaseLimitsAsync(std::vector<LimitAsk> asks, Micros now, Done<Ok> done) override;
  Result<LimitStats> GetLimitStats(Micros now) override;
  Result<std::optional<StoredLayers>> GetLimitLayers() override;
  Result<int64_t> PutLimitLayers(const std::string& body, Micros now,
                                 const std::optional<std::string>& config = std::nullopt) override;
  Result<std::vector<std::string>> ReleaseFromConfig(const std::vector<std::string>& keep) override;
  Status Probe(Micros now) override;

  Status CreateToken(const TokenRecord& token) override;
  // Served from memory for at most token_ttl after a read; a token change made through
  // this engine drops it once committed, one made by another instance once heard of.
  Result<std::optional<TokenRecord>> FindToken(const std::string& id) override;
  Result<std::vector<TokenRecord>> ListTokens() override;
  Result<TokenRecord> RevokeToken(const std::string& id, Micros now) override;

 protected:
  Driver& driver() { return *driver_; }

 private:
  template <typename T>
  void WriteAsync(std::function<Result<T>(Tx&)> fn, Done<T> done, Driver::Sync sync);
  template <typename T>
  Result<T> Write(std::function<Result<T>(Tx&)> fn, Driver::Sync sync = Driver::Sync::kDurable);
  template <typename T>
  Result<T> Read(const std::function<Result<T>(Tx&)>& fn);

  void ForgetToken(const std::string& id);
  void ForgetTokens();
  void ForgetQueues();
  // Another process's change, from the driver.
  void Heard(StoreChange change);
  // A change committed here, for other processes.
  void Publish(StoreChange change) { live_driver_->Publish(change); }

  // A submit waiting for its batch (when the driver asks for batches).
  struct PendingSubmit {
    NewJob job;
    Micros now;
    Done<SubmitOutcome> done;
  };
  void SubmitBatch(std::vector<PendingSubmit> batch, std::function<void()> finished);
  // Intake-limiter decisions that arrive while a batch runs go together into the next
  // (store/engine/limits.h): one lock and one write per distinct key per batch.
  struct PendingLimits {
    std::vector<LimitAsk> asks;
    Micros now;
    Done<LimitsOutcome> done;
  };
  static constexpr size_t kLimitBatches = 2;
  static constexpr size_t kMaxLimitBatch = 512;
  void DecideLimitBatchAsync(std::vector<PendingLimits> batch, std::function<void()> finished);
  void SubmitShared(std::shared_ptr<const std::vector<NewJob>> jobs, Micros now,
                    Done<std::vector<Result<SubmitOutcome>>> done);

  // Release passes on a driver whose writes share one connection are sized to hold it
  // about this long (store/engine/engine.cc, LeaseMany), from what a job has cost the
  // passes so far: the connection's time a leased job took, in µs (a moving average).
  static constexpr double kPassBudgetMicros = 1000;
  std::atomic<double> pass_micros_per_job_{10};

  static constexpr size_t kTokenCacheSize = 10000;
  static constexpr size_t kQueueCacheSize = 10000;
  static constexpr size_t kMaxIntakeBatch = 256;

  std::unique_ptr<Driver> driver_;
  // = driver_.get(), for as long as the driver lives. Completions use it: the driver's
  // destructor still runs queued operations, whose completions publish and start the
  // next intake batch, while driver_ is already empty.
  Driver* const live_driver_;
  EngineOptions options_;
  std::mutex tokens_mu_;
  struct CachedToken {
    TokenRecord token;
    std::chrono::steady_clock::time_point read_at;
  };
  std::unordered_map<std::string, CachedToken> token_cache_;  // guarded by tokens_mu_
  std::mutex queues_mu_;
  // Queues seen to exist, and when (CheckQueue).
  std::unordered_map<std::string, std::chrono::steady_clock::time_point>
      known_queues_;  // guarded by queues_mu_
  std::mutex listener_mu_;
  std::function<void(StoreChange)> listener_;         // guarded by listener_mu_
  std::unique_ptr<Coalescer<PendingSubmit>> intake_;  // when the driver asks for batches
  std::unique_ptr<Coalescer<PendingLimits>> limits_;
};

}  // namespace sluice
