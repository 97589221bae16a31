// The one writer: every change to the database runs on this thread. Concurrent
// requests are batched into one transaction (group commit), so one fsync serves a
// whole batch; a caller's Run() returns only after the commit that holds its change.
//
// Invariants:
//   1. Each operation runs inside its own SAVEPOINT: an operation that fails leaves
//      nothing behind, and does not undo the others in its batch.
//   2. If the COMMIT (or the transaction) fails, every operation of the batch gets
//      storage_unavailable: nothing is reported durable that is not on disk.
//   3. A caller hears back only once every commit before its own is as durable as its
//      own: a kDurable operation once a flush that began after its commit has ended; a
//      kCommitted one once no earlier commit still waits for a flush. So no answer
//      reveals a change (a job to lease, say) that a power loss could still take back.
//
// Pipelined flushing: with synchronous FULL (or EXTRA) on a WAL database, the writer
// commits with synchronous=NORMAL (no flush inside COMMIT) and a second thread, the
// syncer, flushes the WAL file (fdatasync) while the writer runs the next batch; each
// flush serves every commit made before it began. SQLite's own WAL recovery keeps a
// commit only if all its frames are intact, so a commit whose frames the flush did not
// cover is dropped whole on a power loss, and none of its callers was answered. If a
// flush fails, the kernel may have dropped pages of the WAL, so no later flush can be
// trusted either: the writer fails every later durable operation with
// storage_unavailable until the process restarts (and recovers from the file).
// Thread-safe: Run() may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
  // `on_flush`, if set, hears of every flush the syncer makes (pipelined flushing), on
  // the syncer thread: its duration in seconds and the commits it made durable.
  using CommitObserver = std::function<void(double seconds, size_t operations, bool flushed)>;
  using FlushObserver = std::function<void(double seconds, size_t commits)>;
  explicit Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch = 512,
                  Executor completions = nullptr, CommitObserver on_commit = nullptr,
                  FlushObserver on_flush = nullptr);
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
  uint64_t flushed_commits() const;  // commits whose callers waited for the disk
  uint64_t flushes() const;          // flushes of the WAL by the syncer (pipelined only)
  uint64_t operations() const;
  // Whether flushes run on the syncer thread (see above).
  bool pipelined() const { return wal_fd_ >= 0; }

  // Tests only, before the first operation: flushes the WAL with `flush` (returns 0, or
  // -1 with errno set, like fdatasync) instead of fdatasync, to make a disk error that
  // a real disk here will not.
  void SetFlushForTesting(std::function<int(int fd)> flush) { flush_ = std::move(flush); }

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
  // Runs a batch; returns the operations it committed (the others are finished).
  std::vector<Op> RunBatch(std::deque<Op>& batch, bool durable);
  // Finishes `op` now, or queues its finish for the batch's delivery.
  void Finish(Op& op, const std::optional<Error>& e);
  void DeliverFinished();
  // Sets the connection to flush the next commit or not.
  void SetFlushing(bool flush);

  // Pipelined flushing.
  bool OpenWal();  // opens wal_fd_ on the connection's WAL file; false if there is none
  // Commits `ops` need (or, `durable` false, must wait for) a flush: hands them to the
  // syncer, unless they need none and none is pending (then they finish now).
  void HandToSyncer(std::vector<Op> ops, bool durable);
  void SyncLoop();
  std::optional<Error> FlushWal();  // syncer thread only

  std::unique_ptr<sqlite::Db> db_;
  const size_t max_batch_;
  Executor completions_;
  CommitObserver on_commit_;
  FlushObserver on_flush_;
  bool flushes_ = false;       // the connection's synchronous level flushes commits
  bool flushing_now_ = false;  // the level currently set (writer thread only)
  std::vector<std::function<void()>> finished_;  // writer thread only
  std::string wal_path_;
  int wal_fd_ = -1;  // >= 0: pipelined flushing
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  std::vector<Op> to_sync_;            // guarded by sync_mu_
  size_t commits_to_sync_ = 0;         // commits behind to_sync_; guarded by sync_mu_
  bool syncing_ = false;               // a flush is under way; guarded by sync_mu_
  bool sync_stopping_ = false;         // guarded by sync_mu_
  std::function<int(int)> flush_;      // set by tests only
  std::optional<Error> flush_failed_;  // syncer thread only
  std::thread syncer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> pending_;     // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  uint64_t commits_ = 0;       // guarded by mu_
  uint64_t flushed_ = 0;       // guarded by mu_
  uint64_t flushes_done_ = 0;  // guarded by mu_
  uint64_t operations_ = 0;    // guarded by mu_
  std::thread thread_;
};

}  // namespace sluice
