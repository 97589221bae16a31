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

#include "common/error.h"
#include "store/sqlite.h"

namespace sluice {

class Writer {
 public:
  // Takes ownership of the write connection. `max_batch` bounds one transaction.
  explicit Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch = 512);
  ~Writer();  // drains queued operations, then stops

  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Runs `fn` on the writer thread inside a transaction and waits for its commit.
  // `fn` may throw sqlite::SqliteError; it becomes an Error.
  template <typename T>
  Result<T> Run(std::function<Result<T>(sqlite::Db&)> fn) {
    auto slot = std::make_shared<std::optional<Result<T>>>();
    auto done = std::make_shared<std::promise<Result<T>>>();
    auto future = done->get_future();
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
               [slot, done](const std::optional<Error>& batch_failure) {
                 if (batch_failure) {
                   done->set_value(*batch_failure);
                 } else {
                   done->set_value(std::move(**slot));
                 }
               }});
    return future.get();
  }

  // Counters for benchmarks and metrics.
  uint64_t commits() const;
  uint64_t operations() const;

 private:
  struct Op {
    // Runs the change; returns the error if it failed (its savepoint is rolled back).
    std::function<std::optional<Error>(sqlite::Db&)> run;
    // Called after the batch: with an error when the batch could not be committed.
    std::function<void(const std::optional<Error>&)> finish;
  };

  void Enqueue(Op op);
  void Loop();
  void RunBatch(std::deque<Op>& batch);

  std::unique_ptr<sqlite::Db> db_;
  const size_t max_batch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> pending_;   // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  uint64_t commits_ = 0;     // guarded by mu_
  uint64_t operations_ = 0;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sluice
