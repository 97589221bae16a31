// The one writer: every change to the database runs on this thread. Concurrent
// requests are batched into one transaction (group commit), so one fsync serves a
// whole batch; a caller's Run() returns only after the commit that holds its change.
//
// Invariants:
//   1. Each operation runs inside its own SAVEPOINT: an operation that fails leaves
//      nothing behind, and does not undo the others in its batch.
//   2. If the COMMIT (or the transaction) fails, every operation of the batch gets
//      storage_unavailable: nothing is reported durable that is not on disk.
// Thread-safe: Run() may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/error.h"
#include "store/sqlite.h"

namespace sluice {

class Writer {
 public:
  // Runs a function elsewhere (e.g. posts it to an event loop).
  using Executor = std::function<void(std::function<void()>)>;

  // Whether an operation's caller must hear back only once its change is on disk
  // (kDurable: the commit is flushed, with synchronous=FULL), or once it is committed
  // (kCommitted: visible to every reader, flushed by the next durable commit or
  // checkpoint; a power loss may forget it). A batch of kCommitted operations only
  // skips the flush; one kDurable operation in a batch flushes the batch.
  enum class Sync { kDurable, kCommitted };

  // Takes ownership of the write connection. `max_batch` bounds one transaction.
  // `completions`: where the `done` callbacks of RunAsync run — once per batch, with one
  // function that runs them all, so that a batch wakes its callers' thread once; by
  // default on the writer thread itself.
  // `on_commit`, if set, hears of every commit on the writer thread: its duration in
  // seconds (from BEGIN to the end of COMMIT, flush included), its operations, and
  // whether it was flushed.
  using CommitObserver = std::function<void(double seconds, size_t operations, bool flushed)>;
  explicit Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch = 512,
                  Executor completions = nullptr, CommitObserver on_commit = nullptr);
  ~Writer();  // drains queued operations, then stops

  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Runs `fn` on the writer thread inside a transaction; once the transaction is
  // committed (or has failed), calls `done` with the result, through the completions
  // executor: `done` must be quick and never block.
  // `fn` may throw sqlite::SqliteError; it becomes an Error.
  template <typename T>
  void RunAsync(std::function<Result<T>(sqlite::Db&)> fn, std::function<void(Result<T>)> done,
                Sync sync = Sync::kDurable) {
    Submit<T>(std::move(fn), std::move(done), /*deferred=*/true, sync);
  }

  // Runs `fn` like RunAsync and waits for its commit.
  template <typename T>
  Result<T> Run(std::function<Result<T>(sqlite::Db&)> fn, Sync sync = Sync::kDurable) {
    std::promise<Result<T>> promise;
    auto future = promise.get_future();
    Submit<T>(
        std::move(fn), [&promise](Result<T> r) { promise.set_value(std::move(r)); },
        /*deferred=*/false, sync);
    return future.get();
  }

  // Counters for benchmarks and metrics.
  uint64_t commits() const;
  uint64_t flushed_commits() const;  // commits that waited for the disk
  uint64_t operations() const;

 private:
  template <typename T>
  void Submit(std::function<Result<T>(sqlite::Db&)> fn, std::function<void(Result<T>)> done,
              bool deferred, Sync sync) {
    auto slot = std::make_shared<std::optional<Result<T>>>();
    Enqueue(Op{[fn = std::move(fn), slot](sqlite::Db& db) -> std::optional<Error> {
                 try {
                   *slot = fn(db);
                   if (!(*slot)->ok()) return (*slot)->error();
                   return std::nullopt;
                 } catch (const sqlite::SqliteError& e) {
                   *slot = sqlite::ToError(e);
                   return (*slot)->error();
                 }
               },
               [slot, done = std::move(done)](const std::optional<Error>& batch_failure) {
                 if (batch_failure) {
                   done(*batch_failure);
                 } else {
                   done(std::move(**slot));
                 }
               },
               deferred, sync});
  }

  struct Op {
    // Runs the change; returns the error if it failed (its savepoint is rolled back).
    std::function<std::optional<Error>(sqlite::Db&)> run;
    // Called after the batch: with an error when the batch could not be committed.
    std::function<void(const std::optional<Error>&)> finish;
    bool deferred = false;  // finish through completions_ (else on the writer thread)
    Sync sync = Sync::kDurable;
  };

  void Enqueue(Op op);
  void Loop();
  void RunBatch(std::deque<Op>& batch);
  // Finishes `op` now, or queues its finish for the batch's delivery.
  void Finish(Op& op, const std::optional<Error>& e);
  void DeliverFinished();
  // Sets the connection to flush the next commit or not.
  void SetFlushing(bool flush);

  std::unique_ptr<sqlite::Db> db_;
  const size_t max_batch_;
  Executor completions_;
  CommitObserver on_commit_;
  bool flushes_ = false;       // the connection's synchronous level flushes commits
  bool flushing_now_ = false;  // the level currently set (writer thread only)
  std::vector<std::function<void()>> finished_;  // writer thread only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> pending_;   // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  uint64_t commits_ = 0;     // guarded by mu_
  uint64_t flushed_ = 0;     // guarded by mu_
  uint64_t operations_ = 0;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sluice
