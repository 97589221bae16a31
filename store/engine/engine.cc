#include "store/engine/engine.h"

#include <algorithm>
#include <map>
#include <random>

#include "common/random.h"
#include "common/utf8.h"
#include "shaper/backoff.h"
#include "shaper/dispatch.h"
#include "store/engine/attempts.h"
#include "store/engine/intake.h"
#include "store/engine/limits.h"
#include "store/engine/release.h"
#include "store/engine/stored_policy.h"

namespace sluice {
namespace {

// Why a guarded transition changed nothing: the job is unknown (not_found), or it is
// not in the state the transition needs (`otherwise`).
Error MissingOr(Tx& tx, const std::string& id, Error otherwise) {
  if (!tx.JobExists(id)) return MakeError(ErrorCode::kNotFound, "job '" + id + "' does not exist");
  return otherwise;
}

Error LostOrMissing(Tx& tx, const std::string& id) {
  return MissingOr(tx, id,
                   MakeError(ErrorCode::kLeaseLost,
                             "the lease is not held: it expired, was "
                             "never granted, or the job moved on"));
}

std::string QueueConfigKey(const std::string& queue) { return "queue:" + queue; }
constexpr const char* kLimitsConfigKey = "limits";

// A change through the API (`config` nullopt) to what a config file manages is refused,
// naming the file; a change from a config file is not.
Status RefuseIfManaged(const std::optional<std::string>& manager,
                       const std::optional<std::string>& config, const std::string& what) {
  if (!manager || config) return Ok{};
  return MakeError(ErrorCode::kManagedByConfig,
                   what + " is managed by the config file " + QuoteForMessage(*manager) +
                       ": change it there, and sluiced applies it at its next start (or "
                       "remove it from the file to manage it through the API)");
}

std::optional<QueueInfo> LoadQueue(Tx& tx, const std::string& name) {
  auto row = tx.LoadQueue(name);
  if (!row) return std::nullopt;
  return QueueFromRowOrThrow(*row);
}

// A worker's acknowledgements, as the single and the batch operations share them. Each
// is guarded (by the lease, then by the job's state) and writes nothing when the guard
// fails, so a lost ack in a batch leaves the others be.
Result<JobRecord> CompleteLeased(Tx& tx, const std::string& id, const std::string& lease_id,
                                 const std::optional<std::string>& result, Micros now) {
  auto job = tx.CompleteJob(id, lease_id, result, now);
  if (!job) return LostOrMissing(tx, id);
  tx.BucketLeaseEnded(job->queue, job->tenant, LeaseEnd{.succeeded = true});
  return std::move(*job);
}

Result<JobRecord> FailLeased(Tx& tx, const std::string& id, const std::string& lease_id,
                             const FailRequest& fail, Micros now,
                             const std::function<double()>& unit_random) {
  auto lease = tx.SelectLiveLease(id, lease_id, now);
  if (!lease) return LostOrMissing(tx, id);
  const AttemptEnd end{.error = fail.error,
                       .retryable = fail.retryable,
                       .timed_out = false,
                       .delay_ms = fail.retry_in_ms};
  auto backoff = [&] {
    auto q = LoadQueue(tx, lease->queue);
    if (!q) return int64_t{0};
    return FullJitterBackoffMs(q->policy.retry_backoff_ms, q->policy.retry_backoff_max_ms,
                               lease->attempt, unit_random());
  };
  auto job = EndLeasedAttempt(tx, *lease, end, now, backoff);
  if (!job) return LostOrMissing(tx, id);
  return std::move(*job);
}

}  // namespace

Engine::Engine(std::unique_ptr<Driver> driver, EngineOptions options)
    : driver_(std::move(driver)), live_driver_(driver_.get()), options_(std::move(options)) {
  if (!options_.unit_random) {
    auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
    auto mu = std::make_shared<std::mutex>();
    options_.unit_random = [rng, mu] {
      std::lock_guard lock(*mu);
      return std::uniform_real_distribution<double>(0.0, 1.0)(*rng);
    };
  }
  driver_->Subscribe([this](StoreChange change) { Heard(change); });
  if (const size_t batches = driver_->IntakeBatches(); batches > 0) {
    intake_ = std::make_unique<Coalescer<PendingSubmit>>(
        batches, kMaxIntakeBatch,
        [this](std::vector<PendingSubmit> batch, std::function<void()> finished) {
          SubmitBatch(std::move(batch), std::move(finished));
        });
  }
  limits_ = std::make_unique<Coalescer<PendingLimits>>(
      kLimitBatches, kMaxLimitBatch,
      [this](std::vector<PendingLimits> batch, std::function<void()> finished) {
        DecideLimitBatchAsync(std::move(batch), std::move(finished));
      });
}

void Engine::OnChange(std::function<void(StoreChange)> listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void Engine::Heard(StoreChange change) {
  if (change == StoreChange::kTokens || change == StoreChange::kResync) ForgetTokens();
  if (change == StoreChange::kQueues || change == StoreChange::kResync) ForgetQueues();
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_(change);
}

// The driver goes first: it may still run queued operations (PgDriver finishes them),
// and those reach this engine's members (options_, for a retry's jitter).
Engine::~Engine() { driver_.reset(); }

template <typename T>
void Engine::WriteAsync(std::function<Result<T>(Tx&)> fn, Done<T> done, Driver::Sync sync) {
  auto slot = std::make_shared<std::optional<Result<T>>>();
  live_driver_->Write(
      [fn = std::move(fn), slot](Tx& tx) -> std::optional<Error> {
        *slot = fn(tx);
        if (!(*slot)->ok()) return (*slot)->error();
        return std::nullopt;
      },
      [slot, done = std::move(done)](std::optional<Error> failure) {
        if (failure) {
          done(*failure);
        } else {
          done(std::move(**slot));
        }
      },
      sync);
}

template <typename T>
Result<T> Engine::Write(std::function<Result<T>(Tx&)> fn, Driver::Sync sync) {
  std::optional<Result<T>> slot;
  std::optional<Error> failure = driver_->WriteAndWait(
      [&slot, fn = std::move(fn)](Tx& tx) -> std::optional<Error> {
        slot = fn(tx);
        if (!slot->ok()) return slot->error();
        return std::nullopt;
      },
      sync);
  if (failure) return *failure;
  return std::move(*slot);
}

template <typename T>
Result<T> Engine::Read(const std::function<Result<T>(Tx&)>& fn) {
  std::optional<Result<T>> slot;
  std::optional<Error> failure = driver_->Read([&](Tx& tx) -> std::optional<Error> {
    slot = fn(tx);
    if (!slot->ok()) return slot->error();
    return std::nullopt;
  });
  if (failure) return *failure;
  return std::move(*slot);
}

// ---- Queues ------------------------------------------------------------------------

Result<QueueInfo> Engine::PutQueue(const std::string& name, const QueuePolicy& policy, Micros now,
                                   const std::optional<std::string>& config) {
  std::string text = PolicyToJson(policy).dump();
  bool changed = false;
  auto r = Write<QueueInfo>([name, text, now, config, &changed](Tx& tx) -> Result<QueueInfo> {
    const std::string key = QueueConfigKey(name);
    const std::optional<std::string> manager = tx.ConfigSource(key);
    if (Status st = RefuseIfManaged(manager, config, "queue " + QuoteForMessage(name)); !st.ok()) {
      return st.error();
    }
    auto existing = tx.LoadQueue(name);
    changed =
        !config || !existing || PolicyToJson(QueueFromRowOrThrow(*existing).policy).dump() != text;
    if (changed) {
      tx.UpsertQueue(name, text, tx.Now(now));
      // Rates, bursts and caps decide release times: the release index is checked again.
      tx.DirtyQueueBuckets(name);
    }
    if (config && manager != config) tx.SetConfigSource(key, config);
    QueueInfo q = *LoadQueue(tx, name);
    q.stats = tx.LoadQueueStats(name);
    q.managed_by = config;
    return q;
  });
  if (r.ok() && changed) Publish(StoreChange::kWork);  // a new rate or cap may let work out
  return r;
}

Result<QueueInfo> Engine::GetQueue(const std::string& name) {
  return Read<QueueInfo>([&](Tx& tx) -> Result<QueueInfo> {
    auto q = LoadQueue(tx, name);
    if (!q) return UnknownQueue(name);
    q->stats = tx.LoadQueueStats(name);
    q->managed_by = tx.ConfigSource(QueueConfigKey(name));
    return *q;
  });
}

// Served from memory for a while once seen (a lease request checks its queues each
// time): a deletion drops it here at once and on every other instance through the
// driver's channel, and the cache forgets it after token_ttl anyway. A queue that is
// not there is looked up every time.
Status Engine::CheckQueue(const std::string& name) {
  const auto read_at = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(queues_mu_);
    if (auto it = known_queues_.find(name); it != known_queues_.end()) {
      if (read_at - it->second < options_.token_ttl) return Ok{};
      known_queues_.erase(it);
    }
  }
  Status st = Read<Ok>([&](Tx& tx) -> Status {
    if (!tx.QueueExists(name)) return UnknownQueue(name);
    return Ok{};
  });
  if (st.ok()) {
    std::lock_guard lock(queues_mu_);
    if (known_queues_.size() >= kQueueCacheSize) known_queues_.clear();
    known_queues_.insert_or_assign(name, read_at);
  }
  return st;
}

void Engine::ForgetQueues() {
  std::lock_guard lock(queues_mu_);
  known_queues_.clear();
}

Result<std::vector<QueueInfo>> Engine::ListQueues() {
  return Read<std::vector<QueueInfo>>([&](Tx& tx) -> Result<std::vector<QueueInfo>> {
    std::vector<QueueInfo> out;
    std::map<std::string, std::string> managers;
    for (auto& [key, file] : tx.ConfigSources()) managers.emplace(std::move(key), std::move(file));
    for (auto& [row, stats] : tx.ListQueues()) {
      auto q = QueueFromRow(row);
      if (!q.ok()) return q.error();
      q.value().stats = stats;
      if (auto it = managers.find(QueueConfigKey(row.name)); it != managers.end()) {
        q.value().managed_by = it->second;
      }
      out.push_back(std::move(q.value()));
    }
    return out;
  });
}

Result<std::vector<BucketInfo>> Engine::ListBuckets(const std::string& queue) {
  return Read<std::vector<BucketInfo>>([&](Tx& tx) -> Result<std::vector<BucketInfo>> {
    auto q = LoadQueue(tx, queue);
    if (!q) return UnknownQueue(queue);
    std::vector<BucketInfo> out;
    for (const BucketRow& row : tx.ListBuckets(queue)) {
      BucketInfo b;
      b.tenant = row.tenant;
      b.queued = row.queued;
      b.queued_cost = row.queued_cost;
      b.leased = row.leased;
      b.policy = q->policy.ForTenant(b.tenant);
      if (b.queued > 0) b.next_release_at = ReleaseAt(b.policy, row.tat);
      b.oldest_queued_at = row.oldest_queued_at;
      b.totals = row.totals;
      out.push_back(std::move(b));
    }
    return out;
  });
}

Status Engine::SetPaused(const std::string& queue, bool paused, Micros now) {
  Status st = Write<Ok>([queue, paused, now](Tx& tx) -> Status {
    if (!tx.SetPaused(queue, paused, tx.Now(now))) return UnknownQueue(queue);
    return Ok{};
  });
  if (st.ok() && !paused) Publish(StoreChange::kWork);
  return st;
}

Status Engine::DeleteQueue(const std::string& queue) {
  Status st = Write<Ok>([queue](Tx& tx) -> Status {
    if (!tx.LockQueue(queue)) return UnknownQueue(queue);
    if (Status managed = RefuseIfManaged(tx.ConfigSource(QueueConfigKey(queue)), std::nullopt,
                                         "queue " + QuoteForMessage(queue));
        !managed.ok()) {
      return managed;
    }
    // A submit holds its bucket's lock until it commits: once every bucket is locked
    // here, no job can join the queue unseen by the check below.
    tx.LockQueueBuckets(queue);
    if (tx.QueueBusy(queue) > 0) {
      return MakeError(ErrorCode::kConflict, "queue '" + queue +
                                                 "' still has queued or leased jobs: pause it "
                                                 "and let it drain (or cancel them) first");
    }
    if (!tx.DeleteQueue(queue)) return UnknownQueue(queue);
    return Ok{};
  });
  ForgetQueues();
  if (st.ok()) Publish(StoreChange::kQueues);  // long-polls on it are answered not_found
  return st;
}

Result<std::vector<TenantBacklog>> Engine::Backlog(const std::string& queue) {
  return Read<std::vector<TenantBacklog>>([&](Tx& tx) -> Result<std::vector<TenantBacklog>> {
    if (!tx.QueueExists(queue)) return UnknownQueue(queue);
    std::vector<TenantBacklog> out;
    std::map<std::string, size_t> index;
    for (auto& [tenant, tat] : tx.BacklogBuckets(queue)) {
      index[tenant] = out.size();
      out.push_back(TenantBacklog{tenant, tat, {}});
    }
    for (auto& [tenant, job] : tx.BacklogJobs(queue)) {
      auto it = index.find(tenant);
      if (it == index.end()) continue;  // every queued job has a bucket
      out[it->second].jobs.push_back(job);
    }
    return out;
  });
}

// ---- Jobs --------------------------------------------------------------------------

void Engine::SubmitAsync(NewJob job, Micros caller_now, Done<SubmitOutcome> done) {
  if (intake_) return intake_->Add(PendingSubmit{std::move(job), caller_now, std::move(done)});
  std::vector<NewJob> one;
  one.push_back(std::move(job));
  SubmitManyAsync(std::move(one), caller_now,
                  [done = std::move(done)](Result<std::vector<Result<SubmitOutcome>>> r) {
                    if (!r.ok()) return done(r.error());
                    done(std::move(r.value().front()));
                  });
}

void Engine::SubmitManyAsync(std::vector<NewJob> jobs, Micros caller_now,
                             Done<std::vector<Result<SubmitOutcome>>> done) {
  SubmitShared(std::make_shared<const std::vector<NewJob>>(std::move(jobs)), caller_now,
               std::move(done));
}

void Engine::SubmitShared(std::shared_ptr<const std::vector<NewJob>> jobs, Micros caller_now,
                          Done<std::vector<Result<SubmitOutcome>>> done) {
  using Outcomes = std::vector<Result<SubmitOutcome>>;
  WriteAsync<Outcomes>([jobs = std::move(jobs), caller_now](
                           Tx& tx) -> Result<Outcomes> { return AdmitAll(tx, *jobs, caller_now); },
                       [this, done = std::move(done)](Result<Outcomes> r) {
                         if (r.ok()) {
                           for (const Result<SubmitOutcome>& o : r.value()) {
                             if (o.ok() && o.value().job && !o.value().replayed) {
                               Publish(StoreChange::kWork);
                               break;
                             }
                           }
                         }
                         done(std::move(r));
                       },
                       Driver::Sync::kDurable);
}

// One transaction for the submits that gathered. A batch that fails as a whole on its
// own account (internal: a statement the database refused) may owe that to one job:
// its jobs are then tried one by one, so that only that job fails.
void Engine::SubmitBatch(std::vector<PendingSubmit> batch, std::function<void()> finished) {
  auto jobs = std::make_shared<std::vector<NewJob>>();
  jobs->reserve(batch.size());
  Micros now = 0;
  for (PendingSubmit& p : batch) {
    now = std::max(now, p.now);
    jobs->push_back(std::move(p.job));
  }
  auto waiting = std::make_shared<std::vector<PendingSubmit>>(std::move(batch));
  SubmitShared(jobs, now,
               [this, jobs, waiting, now,
                finished = std::move(finished)](Result<std::vector<Result<SubmitOutcome>>> r) {
                 finished();
                 if (r.ok()) {
                   for (size_t i = 0; i < waiting->size(); ++i) {
                     (*waiting)[i].done(std::move(r.value()[i]));
                   }
                   return;
                 }
                 if (r.error().code != ErrorCode::kInternal || waiting->size() == 1) {
                   for (PendingSubmit& p : *waiting) p.done(r.error());
                   return;
                 }
                 for (size_t i = 0; i < waiting->size(); ++i) {
                   SubmitManyAsync({(*jobs)[i]}, now,
                                   [done = std::move((*waiting)[i].done)](
                                       Result<std::vector<Result<SubmitOutcome>>> single) {
                                     if (!single.ok()) return done(single.error());
                                     done(std::move(single.value().front()));
                                   });
                 }
               });
}

Result<JobRecord> Engine::GetJob(const std::string& id) {
  return Read<JobRecord>([&](Tx& tx) -> Result<JobRecord> {
    auto job = tx.SelectJob(id);
    if (!job) return MakeError(ErrorCode::kNotFound, "job '" + id + "' does not exist");
    return std::move(*job);
  });
}

Result<QueuedJobExplanation> Engine::ExplainQueued(const JobRecord& job, Micros caller_now) {
  return Read<QueuedJobExplanation>([&](Tx& tx) -> Result<QueuedJobExplanation> {
    const Micros now = tx.Now(caller_now);
    auto q = LoadQueue(tx, job.queue);
    if (!q) return UnknownQueue(job.queue);
    QueueView qv;
    qv.leased = tx.LoadQueueStats(job.queue).leased;
    qv.max_inflight = q->policy.max_inflight;
    qv.paused = q->paused;
    BucketState bucket = tx.LoadBucket(job.queue, job.tenant);
    BucketView bv;
    bv.policy = q->policy.ForTenant(job.tenant);
    bv.tat = bucket.tat;
    bv.leased = bucket.leased;
    const int64_t ahead = tx.CostAhead(job.queue, job.tenant, job.id, now);
    QueuedJobExplanation out;
    out.estimated_start =
        std::max(job.available_at, EstimatedStart(bv.policy, bucket.tat, ahead, now));
    out.blocked_by = QueuedJobBlockedBy(qv, bv, job.available_at, out.estimated_start,
                                        /*worker_waiting=*/true, now);
    return out;
  });
}

std::vector<Result<LeaseOutcome>> Engine::LeaseMany(const std::vector<LeaseRequest>& requests,
                                                    Micros caller_now, Micros horizon) {
  const Micros lookahead = std::max<Micros>(0, horizon - caller_now);
  // Release passes in order (first in, first out among waiters). With one connection for
  // every write (SQLite), a pass holds up every write queued behind it, and at a million
  // queued jobs a leased job costs the pass five times what it does at a thousand. So
  // consecutive requests share a pass up to the jobs that fit in kPassBudgetMicros at
  // the cost a job has had so far (at least one request a pass), and each pass is an
  // operation of its own, queued behind other writes: a submit waits for one pass at
  // most. Otherwise one pass for all, in one transaction (fewer round trips).
  // Leases are answered once committed, not flushed: a lease a power loss forgets
  // leaves its job queued, to be leased again (a worker holding the forgotten lease
  // gets lease_lost on its ack). Anything durable that follows flushes them too.
  const bool bounded = driver_->SharesOneWriter();
  const double jobs_per_pass =
      kPassBudgetMicros / std::max(0.1, pass_micros_per_job_.load(std::memory_order_relaxed));
  std::vector<LeaseOutcome> outs(requests.size());
  std::vector<size_t> first_of_op;
  std::vector<Driver::Op> ops;
  auto jobs_of = [&requests](size_t i) {
    return static_cast<double>(std::max<int64_t>(1, requests[i].max_jobs));
  };
  for (size_t begin = 0, end = 0; begin < requests.size(); begin = end) {
    double jobs = jobs_of(begin);
    for (end = begin + 1; end < requests.size(); ++end) {
      if (bounded && jobs + jobs_of(end) > jobs_per_pass) break;
      jobs += jobs_of(end);
    }
    first_of_op.push_back(begin);
    ops.push_back([this, &requests, &outs, begin, end, caller_now, lookahead,
                   bounded](Tx& tx) -> std::optional<Error> {
      const auto started = std::chrono::steady_clock::now();
      const std::vector<LeaseRequest> pass(requests.begin() + static_cast<ptrdiff_t>(begin),
                                           requests.begin() + static_cast<ptrdiff_t>(end));
      LockRequestedQueues(tx, pass);
      const Micros now = tx.Now(caller_now);
      (void)ReapLapsedLeases(tx, now);
      (void)ExpireDue(tx, now);
      std::vector<LeaseOutcome> out(pass.size());
      for (LeaseOutcome& o : out) o.now = now;
      LeaseAll(tx, pass, out, now, now + lookahead);
      size_t leased = 0;
      for (const LeaseOutcome& o : out) leased += o.jobs.size();
      if (bounded && leased >= 4) {  // a pass of a few jobs says little of their cost
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
                .count();
        const double seen = us / static_cast<double>(leased);
        const double was = pass_micros_per_job_.load(std::memory_order_relaxed);
        pass_micros_per_job_.store(was + 0.2 * (seen - was), std::memory_order_relaxed);
      }
      std::move(out.begin(), out.end(), outs.begin() + static_cast<ptrdiff_t>(begin));
      return std::nullopt;
    });
  }
  std::vector<std::optional<Error>> failures =
      driver_->WriteEachAndWait(std::move(ops), Driver::Sync::kCommitted);
  std::vector<Result<LeaseOutcome>> results;
  results.reserve(requests.size());
  for (size_t op = 0; op < first_of_op.size(); ++op) {
    const size_t end = op + 1 < first_of_op.size() ? first_of_op[op + 1] : requests.size();
    for (size_t i = first_of_op[op]; i < end; ++i) {
      if (failures[op]) {
        results.emplace_back(*failures[op]);
      } else {
        results.emplace_back(std::move(outs[i]));
      }
    }
  }
  return results;
}

void Engine::CompleteAsync(std::string id, std::string lease_id, std::optional<std::string> result,
                           Micros caller_now, Done<JobRecord> done) {
  WriteAsync<JobRecord>(
      [id = std::move(id), lease_id = std::move(lease_id), result = std::move(result),
       caller_now](Tx& tx) -> Result<JobRecord> {
        return CompleteLeased(tx, id, lease_id, result, tx.Now(caller_now));
      },
      [this, done = std::move(done)](Result<JobRecord> r) {
        if (r.ok()) Publish(StoreChange::kLeaseEnded);
        done(std::move(r));
      },
      Driver::Sync::kDurable);
}

void Engine::FailAsync(std::string id, std::string lease_id, FailRequest fail, Micros caller_now,
                       Done<JobRecord> done) {
  WriteAsync<JobRecord>(
      [this, id = std::move(id), lease_id = std::move(lease_id), fail = std::move(fail),
       caller_now](Tx& tx) -> Result<JobRecord> {
        return FailLeased(tx, id, lease_id, fail, tx.Now(caller_now), options_.unit_random);
      },
      [this, done = std::move(done)](Result<JobRecord> r) {
        if (r.ok()) Publish(StoreChange::kWork);  // a retry is queued, a cap freed
        done(std::move(r));
      },
      Driver::Sync::kDurable);
}

void Engine::AckManyAsync(std::vector<AckItem> acks, std::optional<std::vector<std::string>> queues,
                          Micros caller_now, Done<std::vector<Result<JobRecord>>> done) {
  using Results = std::vector<Result<JobRecord>>;
  WriteAsync<Results>(
      [this, acks = std::move(acks), queues = std::move(queues),
       caller_now](Tx& tx) -> Result<Results> {
        const Micros now = tx.Now(caller_now);
        auto allowed = [&](const std::string& id) {
          if (!queues) return true;
          auto job = tx.SelectJob(id);
          return job && std::find(queues->begin(), queues->end(), job->queue) != queues->end();
        };
        auto missing = [](const std::string& id) {  // someone else's job reads so too
          return MakeError(ErrorCode::kNotFound, "job '" + id + "' does not exist");
        };
        Results out;
        out.reserve(acks.size());
        // Completions in runs, each in one statement; a fail ends a run (acks take effect
        // in their order).
        std::vector<CompleteItem> run;
        auto flush = [&] {
          std::vector<std::optional<JobRecord>> jobs = tx.CompleteJobs(run, queues, now);
          std::vector<const JobRecord*> ended;
          for (const auto& j : jobs) {
            if (j) ended.push_back(&*j);
          }
          tx.BucketLeasesSucceeded(ended);
          for (size_t k = 0; k < run.size(); ++k) {
            if (jobs[k]) {
              out.emplace_back(std::move(*jobs[k]));
            } else {
              out.push_back(allowed(run[k].id) ? LostOrMissing(tx, run[k].id) : missing(run[k].id));
            }
          }
          run.clear();
        };
        for (const AckItem& a : acks) {
          if (a.succeeded) {
            run.push_back(CompleteItem{a.id, a.lease_id, a.result});
            continue;
          }
          flush();
          if (!allowed(a.id)) {
            out.push_back(missing(a.id));
            continue;
          }
          out.push_back(FailLeased(tx, a.id, a.lease_id, a.fail, now, options_.unit_random));
        }
        flush();
        return out;  // per-item errors are results: the transaction commits the rest
      },
      [this, done = std::move(done)](Result<Results> r) {
        if (r.ok()) {
          // As the single operations publish: a success ended a lease, a fail queued a
          // retry or freed a cap.
          bool lease_ended = false;
          bool work = false;
          for (const Result<JobRecord>& j : r.value()) {
            if (!j.ok()) continue;
            (j.value().state == JobState::kSucceeded ? lease_ended : work) = true;
          }
          if (lease_ended) Publish(StoreChange::kLeaseEnded);
          if (work) Publish(StoreChange::kWork);
        }
        done(std::move(r));
      },
      Driver::Sync::kDurable);
}

void Engine::HeartbeatAsync(std::string id, std::string lease_id, std::optional<int64_t> extend_ms,
                            Micros caller_now, Done<JobRecord> done) {
  WriteAsync<JobRecord>(
      [id = std::move(id), lease_id = std::move(lease_id), extend_ms,
       caller_now](Tx& tx) -> Result<JobRecord> {
        auto job = tx.Heartbeat(id, lease_id, extend_ms, tx.Now(caller_now));
        if (!job) return LostOrMissing(tx, id);
        return std::move(*job);
      },
      std::move(done), Driver::Sync::kDurable);
}

Result<JobRecord> Engine::Cancel(const std::string& id, Micros caller_now) {
  return Write<JobRecord>([id, caller_now](Tx& tx) -> Result<JobRecord> {
    auto job = tx.Cancel(id, tx.Now(caller_now));
    if (!job) {
      return MissingOr(tx, id,
                       MakeError(ErrorCode::kConflict, "only a queued job can be canceled"));
    }
    tx.BucketDequeued(job->queue, job->tenant, job->cost, /*expired=*/false);
    return std::move(*job);
  });
}

Result<JobRecord> Engine::Retry(const std::string& id, Micros caller_now) {
  auto r = Write<JobRecord>([id, caller_now](Tx& tx) -> Result<JobRecord> {
    auto job = tx.Retry(id, tx.Now(caller_now));
    if (!job) {
      return MissingOr(
          tx, id, MakeError(ErrorCode::kConflict, "only a failed or expired job can be retried"));
    }
    tx.BucketAdmitted(job->queue, job->tenant, job->cost, kReadyDirty);
    return std::move(*job);
  });
  if (r.ok()) Publish(StoreChange::kWork);
  return r;
}

Result<JobPage> Engine::ListJobs(const JobFilter& f) {
  return Read<JobPage>([&](Tx& tx) -> Result<JobPage> {
    JobPage page;
    int64_t last = 0;
    for (auto& [job, seq] : tx.ListJobs(f)) {
      page.jobs.push_back(std::move(job));
      last = seq;
    }
    if (static_cast<int64_t>(page.jobs.size()) == f.limit) page.next_after_seq = last;
    return page;
  });
}

// ---- Maintenance -------------------------------------------------------------------

Result<MaintenanceCounts> Engine::ReapLeases(Micros caller_now) {
  // First, in a transaction of its own (it locks bucket rows and nothing else): the
  // counter changes the driver kept aside.
  if (Status folded = Write<Ok>([](Tx& tx) -> Status {
        tx.FoldCounters();
        return Ok{};
      });
      !folded.ok()) {
    return folded.error();
  }
  auto r = Write<MaintenanceCounts>([caller_now](Tx& tx) -> Result<MaintenanceCounts> {
    return ReapLapsedLeases(tx, tx.Now(caller_now));
  });
  if (r.ok() && r.value().leases_requeued > 0) Publish(StoreChange::kWork);
  return r;
}

Result<MaintenanceCounts> Engine::ExpireDeadlines(Micros caller_now) {
  return Write<MaintenanceCounts>([caller_now](Tx& tx) -> Result<MaintenanceCounts> {
    MaintenanceCounts c;
    c.expired = ExpireDue(tx, tx.Now(caller_now));
    return c;
  });
}

Result<MaintenanceCounts> Engine::Clean(Micros finished_before, int64_t limit) {
  return Write<MaintenanceCounts>([finished_before, limit](Tx& tx) -> Result<MaintenanceCounts> {
    MaintenanceCounts c;
    c.cleaned = tx.CleanJobs(finished_before, limit);
    tx.CleanIdempotencyKeys(finished_before, limit);
    return c;
  });
}

Result<int64_t> Engine::CleanLimits(Micros caller_now, int64_t limit) {
  return Write<int64_t>([caller_now, limit](Tx& tx) -> Result<int64_t> {
    return tx.CleanLimits(tx.Now(caller_now), limit);
  });
}

// ---- Intake limiters (store/engine/limits.h) ----------------------------------------

void Engine::DecideLimitsAsync(std::vector<LimitAsk> asks, Micros caller_now,
                               Done<LimitsOutcome> done) {
  limits_->Add(PendingLimits{std::move(asks), caller_now, std::move(done)});
}

void Engine::DecideLimitBatchAsync(std::vector<PendingLimits> batch,
                                   std::function<void()> finished) {
  auto waiting = std::make_shared<std::vector<PendingLimits>>(std::move(batch));
  WriteAsync<std::vector<LimitsOutcome>>(
      [waiting](Tx& tx) -> Result<std::vector<LimitsOutcome>> {
        std::vector<LimitRequest> requests;
        requests.reserve(waiting->size());
        for (const PendingLimits& p : *waiting) requests.push_back({&p.asks, p.now});
        return DecideLimitBatch(tx, requests);
      },
      [waiting, finished = std::move(finished)](Result<std::vector<LimitsOutcome>> r) {
        finished();
        for (size_t i = 0; i < waiting->size(); ++i) {
          if (r.ok()) {
            (*waiting)[i].done(std::move(r.value()[i]));
          } else {
            (*waiting)[i].done(r.error());
          }
        }
      },
      Driver::Sync::kVolatile);
}

void Engine::ReleaseLimitsAsync(std::vector<LimitAsk> asks, Micros caller_now, Done<Ok> done) {
  WriteAsync<Ok>(
      [asks = std::move(asks), caller_now](Tx& tx) -> Result<Ok> {
        ReleaseLimits(tx, asks, caller_now);
        return Ok{};
      },
      std::move(done), Driver::Sync::kVolatile);
}

Result<LimitStats> Engine::GetLimitStats(Micros caller_now) {
  return Read<LimitStats>([caller_now](Tx& tx) -> Result<LimitStats> {
    return tx.SelectLimitStats(tx.Now(caller_now));
  });
}

Result<std::optional<StoredLayers>> Engine::GetLimitLayers() {
  return Read<std::optional<StoredLayers>>(
      [](Tx& tx) -> Result<std::optional<StoredLayers>> { return tx.SelectLayers(); });
}

Result<int64_t> Engine::PutLimitLayers(const std::string& body, Micros caller_now,
                                       const std::optional<std::string>& config) {
  bool changed = false;
  Result<int64_t> r = Write<int64_t>([&body, caller_now, &config,
                                      &changed](Tx& tx) -> Result<int64_t> {
    const std::optional<std::string> manager = tx.ConfigSource(kLimitsConfigKey);
    if (Status st = RefuseIfManaged(manager, config, "the intake-protection layers"); !st.ok()) {
      return st.error();
    }
    if (config && manager != config) tx.SetConfigSource(kLimitsConfigKey, config);
    if (config) {
      // The file's layers as the caller wrote them (server/config.cc compares them
      // read back): the same text is no change.
      if (auto stored = tx.SelectLayers(); stored && stored->body == body) {
        return stored->version;
      }
    }
    changed = true;
    return tx.PutLayers(body, tx.Now(caller_now));
  });
  if (r.ok() && changed) Publish(StoreChange::kLimits);
  return r;
}

Result<std::vector<std::string>> Engine::ReleaseFromConfig(const std::vector<std::string>& keep) {
  return Write<std::vector<std::string>>([&keep](Tx& tx) -> Result<std::vector<std::string>> {
    std::vector<std::string> released;
    for (const auto& [key, file] : tx.ConfigSources()) {
      if (std::find(keep.begin(), keep.end(), key) != keep.end()) continue;
      tx.SetConfigSource(key, std::nullopt);
      released.push_back(key);
    }
    return released;
  });
}

void Engine::DecideLimitAsync(std::string key, Limit limit, int64_t cost, Micros caller_now,
                              Done<LimitOutcome> done) {
  DecideLimitsAsync({LimitAsk{std::move(key), limit, cost}}, caller_now,
                    [done = std::move(done)](Result<LimitsOutcome> r) {
                      if (!r.ok()) return done(r.error());
                      done(std::move(r.value().outcomes.front()));
                    });
}

Status Engine::Probe(Micros caller_now) {
  return Write<Ok>([caller_now](Tx& tx) -> Status {
    tx.Probe(tx.Now(caller_now));
    return Ok{};
  });
}

// ---- Tokens ------------------------------------------------------------------------

Status Engine::CreateToken(const TokenRecord& t) {
  Status st = Write<Ok>([t](Tx& tx) -> Status {
    tx.InsertToken(t);
    return Ok{};
  });
  ForgetToken(t.id);
  if (st.ok()) Publish(StoreChange::kTokens);
  return st;
}

void Engine::ForgetToken(const std::string& id) {
  std::lock_guard lock(tokens_mu_);
  token_cache_.erase(id);
}

void Engine::ForgetTokens() {
  std::lock_guard lock(tokens_mu_);
  token_cache_.clear();
}

Result<std::optional<TokenRecord>> Engine::FindToken(const std::string& id) {
  {
    std::lock_guard lock(tokens_mu_);
    if (auto it = token_cache_.find(id); it != token_cache_.end()) {
      if (std::chrono::steady_clock::now() - it->second.read_at < options_.token_ttl) {
        return std::optional<TokenRecord>(it->second.token);
      }
      token_cache_.erase(it);
    }
  }
  const auto read_at = std::chrono::steady_clock::now();
  auto found = Read<std::optional<TokenRecord>>(
      [&](Tx& tx) -> Result<std::optional<TokenRecord>> { return tx.SelectToken(id); });
  if (found.ok() && found.value()) {
    std::lock_guard lock(tokens_mu_);
    if (token_cache_.size() >= kTokenCacheSize) token_cache_.clear();
    token_cache_.insert_or_assign(id, CachedToken{*found.value(), read_at});
  }
  return found;
}

Result<std::vector<TokenRecord>> Engine::ListTokens() {
  return Read<std::vector<TokenRecord>>(
      [&](Tx& tx) -> Result<std::vector<TokenRecord>> { return tx.ListTokens(); });
}

Result<TokenRecord> Engine::RevokeToken(const std::string& id, Micros caller_now) {
  auto r = Write<TokenRecord>([id, caller_now](Tx& tx) -> Result<TokenRecord> {
    auto t = tx.RevokeToken(id, tx.Now(caller_now));
    if (!t) return MakeError(ErrorCode::kNotFound, "token '" + id + "' does not exist");
    return std::move(*t);
  });
  ForgetToken(id);  // after the commit: the next request reads the revocation
  if (r.ok()) Publish(StoreChange::kTokens);
  return r;
}

}  // namespace sluice
