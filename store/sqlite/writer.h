// The one writer: every change to the database goes through it, one transaction at a
// time. Concurrent requests share transactions (group commit), so one fsync serves many
// requests; a caller hears back only after the commit that holds its change.
//
// How: a caller's operation runs at once inside the open transaction, on the caller's
// thread, or, if another thread holds the connection just then, on that thread before
// it lets go (so no caller waits for the connection, and operations run one at a time).
// A committer thread commits that transaction whenever it is free, flushes it, and
// answers its callers; meanwhile the next callers' operations already run inside the
// next transaction. So a request meets no hand-off on its way in, and waits only for
// the commit and flush that follow it.
//
// When nothing is flushed before answering (synchronous NORMAL or OFF) and there is a
// completions executor (the server's I/O threads), the committer is not woken: the
// thread that opens a transaction posts its commit to that executor, so the commit runs
// after the handlers already queued there, whose operations join it, and hands their
// answers back to that executor. That saves two wake-ups per commit (measured: 0.83 ->
// 0.50 context switches per job at 16 connections). A caller blocked in Run() may be
// one of the executor's threads, so a transaction holding one is committed by the
// committer, as is whatever is left when the writer closes.
//
// Invariants:
//   1. An operation that fails leaves nothing behind, and does not undo the others in
//      its transaction: each runs inside its own SAVEPOINT, except the first of a
//      transaction, which has nothing to keep and on failure rolls the whole one back.
//   2. If the COMMIT (or the transaction) fails, every operation of the transaction gets
//      storage_unavailable: nothing is reported durable that is not on disk.
//   3. A caller hears back only once every commit before its own is as durable as its
//      own: the committer commits, flushes and answers one transaction after the other,
//      so a kDurable operation is answered once a flush that began after its commit has
//      ended, and a kCommitted one once its commit has ended (every earlier durable
//      commit was flushed before). An operation that fails on its own (a conflict, say)
//      is answered with the transaction it ran in, in the same way, since its answer
//      may tell of that transaction or of an earlier commit. So no answer reveals a
//      durable change (a job to lease, say) that a power loss could still take back.
//
// Lanes: an operation that finds the connection taken queues in its lane. Most are in
// turn (arrival order); a release pass (RunEachBehind), which may read and write many
// rows, is queued behind them: every operation in turn, queued before or after it, runs
// first. And once the committer wants the connection, no more passes start in the
// transaction it is about to commit: the thread that holds the connection lets go
// instead of starting one, and the committer runs only the operations in turn before
// its COMMIT; passes left queued run on the completions executor (when there is one)
// during the commit's flush, in the next transaction. So a submit waits for at most
// the one operation running, never for queued release passes. (Measured at a million
// queued jobs, before: one pass for every parked worker held the connection 1.2 ms at
// the median and 3.4 ms at p99; the engine now sizes passes to about a millisecond.)
//
// Flushing: with synchronous FULL (or EXTRA) on a WAL database, the connection commits
// with synchronous=NORMAL (no flush inside COMMIT) and the committer flushes the WAL
// file itself (fdatasync) after the COMMIT, outside the mutex, so that operations go on
// running into the next transaction while the disk works. SQLite's own WAL recovery
// keeps a commit only if all its frames are intact, so a commit whose frames no flush
// covered is dropped whole on a power loss, and none of its callers was answered. If a
// flush fails, the kernel may have dropped pages of the WAL, so no later flush can be
// trusted either: the writer fails every later operation, durable or not, with
// storage_unavailable until the process restarts (and recovers from the file).
// Thread-safe: Run() and RunAsync() may be called from any thread (RunEachBehind() from
// any but the completions executor's), but not from inside an operation (it would wait
// for itself). Destroy the writer only once every call has returned, and not from a
// `done` callback.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "store/sqlite/sqlite.h"

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

  // Takes ownership of the write connection. `max_batch` bounds one transaction: an
  // operation that finds it full waits for its commit, to run in the next one.
  // `completions`: where the `done` callbacks of RunAsync run, each handed over on its
  // own, so that every thread of the executor answers its share of a commit's callers
  // at once (measured: durable intake at 16 connections +7-10 % jobs/s against one task
  // that ran them all, 7.2 jobs per flush against 6.4-7.0); by default on the thread
  // that finishes them: the committer, or, for the operations of a transaction lost
  // while an operation ran, whichever thread ran that one. No callback may throw.
  // `on_commit`, if set, hears of every commit on the committer thread: the COMMIT's
  // duration in seconds (flush included when SQLite flushes inside it), its operations,
  // and whether its callers waited for a flush.
  // `on_flush`, if set, hears of every flush the committer makes of the WAL, on the
  // committer thread: its duration in seconds.
  using CommitObserver = std::function<void(double seconds, size_t operations, bool flushed)>;
  using FlushObserver = std::function<void(double seconds)>;
  explicit Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch = 512,
                  Executor completions = nullptr, CommitObserver on_commit = nullptr,
                  FlushObserver on_flush = nullptr);
  ~Writer();  // commits what is running, then stops

  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Runs `fn` inside the open transaction, without waiting: now, on this thread, if
  // the connection is free; else on the thread that holds it, before that thread lets
  // go (or, if the transaction is full, after its commit). Once that transaction is
  // committed (and flushed, for kDurable) or has failed, calls `done` with the result
  // (also when `fn` fails: see invariant 3), through the completions executor: `done`
  // must be quick and never block.
  // `fn` may throw sqlite::SqliteError; it becomes an Error. Any other exception is a
  // bug: `fn`'s changes are rolled back and `done` gets internal_error.
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

  // Runs each of `fns` like Run, each an operation of its own (a failure rolls back only
  // its own changes), queued in order behind the others, and waits for them all. They
  // may be committed in more than one transaction. Not from a thread of the completions
  // executor: those behind may be left for that executor to run.
  template <typename T>
  std::vector<Result<T>> RunEachBehind(std::vector<std::function<Result<T>(sqlite::Db&)>> fns,
                                       Sync sync = Sync::kDurable) {
    std::vector<std::promise<Result<T>>> promises(fns.size());
    std::vector<Op> ops;
    ops.reserve(fns.size());
    for (size_t i = 0; i < fns.size(); ++i) {
      std::promise<Result<T>>* promise = &promises[i];
      ops.push_back(MakeOp<T>(
          std::move(fns[i]), [promise](Result<T> r) { promise->set_value(std::move(r)); },
          /*deferred=*/false, sync));
    }
    ExecuteBehind(std::move(ops));
    std::vector<Result<T>> results;
    results.reserve(promises.size());
    for (auto& promise : promises) results.push_back(promise.get_future().get());
    return results;
  }

  // Work on the connection that must follow a commit before the next transaction
  // begins, but need not delay that commit's callers (the Checkpointer's tail): after a
  // commit for which `due()` holds, the writer keeps the connection, flushes, answers
  // the commit's callers, then calls `run` outside any transaction, and only then lets
  // other operations in. Both are called holding the connection. Before the first
  // operation.
  void SetAfterCommit(std::function<bool()> due, std::function<void(sqlite::Db&)> run) {
    after_commit_due_ = std::move(due);
    after_commit_ = std::move(run);
  }

  // Counters for benchmarks and metrics.
  uint64_t commits() const;
  uint64_t flushed_commits() const;  // commits whose callers waited for the disk
  uint64_t flushes() const;          // flushes of the WAL by the committer (pipelined only)
  uint64_t operations() const;
  // Whether the committer flushes the WAL after COMMIT (see above), rather than SQLite
  // inside it (a database not in WAL mode) or nobody (synchronous NORMAL or OFF).
  bool pipelined() const { return wal_fd_ >= 0; }

  // Tests only, before the first operation: flushes the WAL with `flush` (returns 0, or
  // -1 with errno set, like fdatasync) instead of fdatasync, to make a disk error that
  // a real disk here will not.
  void SetFlushForTesting(std::function<int(int fd)> flush) { flush_ = std::move(flush); }
  // Tests only: operations queued behind and not run yet; whether the committer waits
  // for the connection (see "Lanes" above).
  size_t QueuedBehindForTesting() {
    std::lock_guard lock(queue_mu_);
    return behind_.size();
  }
  bool CommitWantedForTesting() const { return commits_waiting_.load() > 0; }
  // Tests only: the committer calls `hook` each time it has found nothing to do, just
  // before it sleeps, to let a test act in that moment. It runs holding the lock of the
  // queue: another thread's call into the writer waits until the committer sleeps.
  void SetBeforeSleepForTesting(std::function<void()> hook) {
    std::lock_guard lock(queue_mu_);
    before_sleep_ = std::move(hook);
  }

 private:
  template <typename T>
  void Submit(std::function<Result<T>(sqlite::Db&)> fn, std::function<void(Result<T>)> done,
              bool deferred, Sync sync) {
    Execute(MakeOp<T>(std::move(fn), std::move(done), deferred, sync));
  }

  struct Op;
  template <typename T>
  static Op MakeOp(std::function<Result<T>(sqlite::Db&)> fn, std::function<void(Result<T>)> done,
                   bool deferred, Sync sync) {
    auto slot = std::make_shared<std::optional<Result<T>>>();
    return Op{[fn = std::move(fn), slot](sqlite::Db& db) -> std::optional<Error> {
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
              deferred, sync};
  }

  struct Op {
    // Runs the change; returns the error if it failed (its writes are rolled back).
    std::function<std::optional<Error>(sqlite::Db&)> run;
    // Called after the commit: with an error when it could not be committed.
    std::function<void(const std::optional<Error>&)> finish;
    bool deferred = false;  // finish through completions_ (else on the finishing thread)
    Sync sync = Sync::kDurable;
  };

  // Operations to finish, each with its error (none: its result is its answer).
  using Finished = std::vector<std::pair<Op, std::optional<Error>>>;

  // Queues `op`, and runs the queued operations inside the open transaction (opening one
  // if need be) unless another thread holds the connection: that thread runs them
  // before it lets go. So a caller never waits for the connection.
  void Execute(Op op);
  void ExecuteBehind(std::vector<Op> ops);  // queues them all behind, then as Execute
  // Both: `ops` into `lane` (queued_ or behind_), or refused once stopping; then runs.
  void Queue(std::deque<Op>& lane, std::span<Op> ops);
  // Runs queued operations (those in turn first) in the open transaction until none is
  // left (returns false), or the transaction is full, or (unless `committing`) the
  // committer wants the connection (true); db_mu_ held. `committing`: for the commit
  // about to be made, so only the operations in turn, unless nobody else would run
  // those behind (no completions executor, or stopping). Adds those to finish now.
  bool RunQueuedLocked(Finished* finished, bool committing = false);
  // Has an executor thread run what is queued (after a commit: during its flush).
  void PostRunQueued();
  // Takes the connection, if it is free, to run what is queued, and again while callers
  // queue more; leaves the commit to the committer or to a posted commit.
  void RunQueued();
  bool HasQueued();
  bool HasQueuedBehind();
  // Asks the committer to look for work (records it under queue_mu_, then notifies).
  void WakeCommitter();
  // The committer: sleeps until asked to look, an operation is queued, or stopping.
  void WaitForWork();
  // Runs `op` in the open transaction; db_mu_ held. Returns the operations to finish
  // now, with their error: `op` itself if the storage failed it, and every earlier
  // operation of the transaction (riders too) if the transaction was lost. An `op` that
  // fails on its own becomes a rider.
  Finished ExecuteLocked(Op& op);
  // Finishes `ops` (through completions_ when deferred, one call each).
  void Finish(Finished ops);
  void CommitLoop();
  // Runs what is queued, commits the open transaction (flushing if need be) and answers
  // its callers; returns true once the writer is stopping and nothing is left.
  // `post_rest`: has an executor thread run what is left queued (else the caller will).
  bool CommitOnce(bool post_rest = true);
  // Commits the open transaction; db_mu_ held. Returns the error if it failed, else
  // sets `seconds` to the COMMIT's duration.
  std::optional<Error> CommitLocked(double* seconds);

  bool OpenWal();  // opens wal_fd_ on the connection's WAL file; false if there is none
  std::optional<Error> FlushWal();  // committer thread only

  std::unique_ptr<sqlite::Db> db_;
  const size_t max_batch_;
  Executor completions_;
  CommitObserver on_commit_;
  FlushObserver on_flush_;
  bool flushes_ = false;  // the configured synchronous level flushes commits
  std::string wal_path_;
  int wal_fd_ = -1;                    // >= 0: pipelined flushing
  std::function<int(int)> flush_;      // set by tests only
  std::optional<Error> flush_failed_;  // committer thread only

  std::mutex db_mu_;                 // the connection, and what follows
  std::condition_variable work_cv_;  // the committer sleeps on it, with queue_mu_
  std::vector<Op> in_txn_;           // operations in the open transaction; by db_mu_
  bool txn_durable_ = false;         // one of them is kDurable; guarded by db_mu_
  // Operations that failed on their own, answered with the transaction they ran in
  // (their answer may tell of it, or of a commit not flushed yet); guarded by db_mu_.
  Finished riders_;
  bool riders_durable_ = false;  // one of them is kDurable; guarded by db_mu_
  bool unflushed_ = false;       // a commit not flushed yet; committer thread only
  std::mutex queue_mu_;          // taken after db_mu_, never before
  std::deque<Op> queued_;        // operations in turn not run yet; by queue_mu_
  std::deque<Op> behind_;        // operations behind not run yet; by queue_mu_
  // Commits waiting for the connection (the committer's, or a posted one): holders let
  // go after their operation.
  std::atomic<int> commits_waiting_{0};
  bool stopping_ = false;                   // written under db_mu_ and queue_mu_
  bool wake_ = false;                       // the committer should look; guarded by queue_mu_
  std::function<void()> before_sleep_;      // tests only; guarded by queue_mu_
  std::function<bool()> after_commit_due_;  // see SetAfterCommit
  std::function<void(sqlite::Db&)> after_commit_;  // see SetAfterCommit
  std::thread committer_;
  // When nothing is flushed before answering (synchronous NORMAL or OFF), the thread
  // that runs an operation posts the commit to the completions executor, instead of
  // waking the committer: the commit runs on that thread after the handlers already
  // queued there. The committer still commits what callers that found the connection
  // taken left queued. A posted commit finds the writer through `inline_commit_`, which
  // the destructor clears.
  struct InlineCommit {
    std::mutex mu;
    Writer* writer = nullptr;  // guarded by mu
  };
  bool inline_ = false;
  bool commit_posted_ = false;  // a commit is posted and has not run; guarded by db_mu_
  bool waiter_ = false;         // a Run() caller waits on the open transaction; by db_mu_
  std::shared_ptr<InlineCommit> inline_commit_ = std::make_shared<InlineCommit>();

  mutable std::mutex stats_mu_;
  uint64_t commits_ = 0;       // guarded by stats_mu_
  uint64_t flushed_ = 0;       // guarded by stats_mu_
  uint64_t flushes_done_ = 0;  // guarded by stats_mu_
  uint64_t operations_ = 0;    // guarded by stats_mu_
};

}  // namespace sluice
