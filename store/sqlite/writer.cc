#include "store/sqlite/writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Error StorageDown() {
  return MakeError(ErrorCode::kStorageUnavailable, "storage is unavailable; try again later");
}

}  // namespace

Writer::Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch, Executor completions,
               CommitObserver on_commit, FlushObserver on_flush)
    : db_(std::move(db)),
      max_batch_(std::max<size_t>(1, max_batch)),
      completions_(std::move(completions)),
      on_commit_(std::move(on_commit)),
      on_flush_(std::move(on_flush)) {
  // FULL (2) or EXTRA (3) flush each commit; the WAL's NORMAL (1) and OFF (0) do not.
  sqlite::Stmt level = db_->Prepare("PRAGMA synchronous");
  flushes_ = level.Step() && level.Int(0) >= 2;
  if (flushes_ && OpenWal()) db_->Exec("PRAGMA synchronous=NORMAL");  // the committer flushes
  // Nothing to flush before answering: the threads that run operations commit them too.
  inline_ = !flushes_ && completions_ != nullptr;
  inline_commit_->writer = this;
  // Every write goes through this connection: 32 MiB of page cache (SQLite's default is
  // 2 MiB) keeps the upper levels of the jobs table's indexes in memory at a million
  // jobs. Measured (bench/scale.sh, 1M jobs over 10k tenants): lease p50 1.7 -> 0.55 ms,
  // RSS 27 -> 62 MiB.
  db_->Exec("PRAGMA cache_size=-32768");
  // Each operation runs in a SAVEPOINT, whose statement journal keeps the original of
  // every page the operation changes; past 64 KiB SQLite spills it to a temporary file
  // (open, write, unlink), which a lease of many jobs in a million-row table does.
  // In memory, it is freed at RELEASE.
  db_->Exec("PRAGMA temp_store=MEMORY");
  committer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "sluice-commit");
    CommitLoop();
  });
}

bool Writer::OpenWal() {
  sqlite::Stmt mode = db_->Prepare("PRAGMA journal_mode");
  if (!mode.Step() || mode.Text(0) != "wal") return false;
  const char* main_file = sqlite3_db_filename(db_->raw(), "main");
  if (main_file == nullptr || *main_file == '\0') return false;  // in memory
  wal_path_ = std::string(main_file) + "-wal";
  wal_fd_ = ::open(wal_path_.c_str(), O_RDWR | O_CLOEXEC);
  if (wal_fd_ < 0) return false;  // not there yet: SQLite flushes inside COMMIT instead
  // The WAL's directory entry must be on disk too (SQLite syncs it with the file's first
  // flush, which the committer now makes).
  std::string dir = wal_path_.substr(0, wal_path_.find_last_of('/') + 1);
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return true;
}

Writer::~Writer() {
  {
    std::lock_guard alive(inline_commit_->mu);
    inline_commit_->writer = nullptr;
  }
  {
    std::lock_guard db(db_mu_);
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  committer_.join();
  if (wal_fd_ >= 0) ::close(wal_fd_);
}

uint64_t Writer::commits() const {
  std::lock_guard lock(stats_mu_);
  return commits_;
}

uint64_t Writer::flushed_commits() const {
  std::lock_guard lock(stats_mu_);
  return flushed_;
}

uint64_t Writer::flushes() const {
  std::lock_guard lock(stats_mu_);
  return flushes_done_;
}

uint64_t Writer::operations() const {
  std::lock_guard lock(stats_mu_);
  return operations_;
}

void Writer::Execute(Op op) { Queue(queued_, std::span<Op>(&op, 1)); }

void Writer::ExecuteBehind(std::vector<Op> ops) { Queue(behind_, ops); }

void Writer::Queue(std::deque<Op>& lane, std::span<Op> ops) {
  bool refused = false;
  {
    std::lock_guard lock(queue_mu_);
    refused = stopping_;
    if (!refused) {
      for (Op& op : ops) lane.push_back(std::move(op));
    }
  }
  if (refused) {
    Finished late;
    for (Op& op : ops) {
      late.emplace_back(std::move(op),
                        MakeError(ErrorCode::kStorageUnavailable, "store is shutting down"));
    }
    return Finish(std::move(late));
  }
  RunQueued();
}

void Writer::RunQueued() {
  for (;;) {
    Finished finished;
    bool full = false, work = false;
    {
      std::unique_lock db(db_mu_, std::try_to_lock);
      if (!db.owns_lock()) {
        // Whoever holds the connection runs what is queued once it lets go: a caller
        // here, a posted commit (which then calls this), or the committer, which looks
        // at the queue before it sleeps. Without posted commits the committer is woken
        // all the same, in case try_lock failed spuriously (glibc's does not).
        if (!inline_) WakeCommitter();
        return;
      }
      full = RunQueuedLocked(&finished);
      work = !in_txn_.empty() || !riders_.empty();
      if (work && inline_ && !waiter_) {
        // Commit through the completions executor, after the handlers already queued
        // there: their operations join this transaction, and the committer sleeps. (A
        // caller blocked in Run() may be one of the executor's threads: the committer
        // commits for it.)
        if (!commit_posted_) {
          commit_posted_ = true;
          completions_([inline_commit = inline_commit_] {
            std::lock_guard alive(inline_commit->mu);
            if (Writer* w = inline_commit->writer) {
              w->CommitOnce(/*post_rest=*/false);
              w->RunQueued();  // what came while it committed
            }
          });
        }
        work = false;
      }
    }
    if (work) WakeCommitter();
    Finish(std::move(finished));
    // An operation queued while this thread held the connection found it taken: run it
    // now (unless the transaction is full: the committer runs it after its commit).
    std::lock_guard lock(queue_mu_);
    if ((queued_.empty() && behind_.empty()) || full) return;
  }
}

bool Writer::RunQueuedLocked(Finished* finished, bool committing) {
  for (;;) {
    Op op;
    {
      std::lock_guard lock(queue_mu_);
      const bool behind_too = !committing || !completions_ || stopping_;
      if (queued_.empty() && (behind_.empty() || !behind_too)) return false;
      if (in_txn_.size() >= max_batch_) return true;
      // A commit waits for the connection: a pass left behind goes in the next transaction.
      // (Operations in turn are short, and a waiting commit would run them anyway.)
      if (queued_.empty() && !committing && !in_txn_.empty() &&
          commits_waiting_.load(std::memory_order_relaxed) > 0) {
        return true;
      }
      std::deque<Op>& lane = queued_.empty() ? behind_ : queued_;
      op = std::move(lane.front());
      lane.pop_front();
    }
    for (auto& f : ExecuteLocked(op)) finished->push_back(std::move(f));
  }
}

void Writer::PostRunQueued() {
  completions_([inline_commit = inline_commit_] {
    std::lock_guard alive(inline_commit->mu);
    if (Writer* w = inline_commit->writer) w->RunQueued();
  });
}

void Writer::WakeCommitter() {
  {
    std::lock_guard lock(queue_mu_);
    wake_ = true;
  }
  work_cv_.notify_one();
}

void Writer::WaitForWork() {
  // The committer sleeps on queue_mu_, under which every wake-up is recorded, not on
  // db_mu_: a caller that finds the connection taken cannot take db_mu_ to record
  // anything, so a notification it sent between the committer's last look and its
  // sleep would be lost, and its operation stranded.
  std::unique_lock lock(queue_mu_);
  // Operations behind, with a completions executor, are run there (PostRunQueued).
  while (!stopping_ && !wake_ && queued_.empty() && (behind_.empty() || completions_)) {
    if (before_sleep_) before_sleep_();
    work_cv_.wait(lock);
  }
  wake_ = false;
}

bool Writer::HasQueued() {
  std::lock_guard lock(queue_mu_);
  return !queued_.empty() || !behind_.empty();
}

bool Writer::HasQueuedBehind() {
  std::lock_guard lock(queue_mu_);
  return !behind_.empty();
}

Writer::Finished Writer::ExecuteLocked(Op& op) {
  Finished finished;
  // The transaction is gone (SQLite rolled it back, or it cannot be told what it holds):
  // every operation in it is lost.
  auto lose_txn = [&] {
    if (db_->InTransaction()) {
      try {
        db_->Exec("ROLLBACK");
      } catch (const sqlite::SqliteError&) {
      }
    }
    for (Op& lost : in_txn_) finished.emplace_back(std::move(lost), StorageDown());
    in_txn_.clear();
    txn_durable_ = false;
    // What they found may have been the lost transaction's doing.
    for (auto& rider : riders_) finished.emplace_back(std::move(rider.first), StorageDown());
    riders_.clear();
    riders_durable_ = false;
  };
  // A savepoint keeps earlier operations' writes when this one fails. The first
  // operation of a transaction has none to keep: if it fails, the whole transaction
  // rolls back (below), which saves two statements on most commits.
  const bool guarded = !in_txn_.empty();
  try {
    if (!db_->InTransaction()) db_->Prepare("BEGIN IMMEDIATE").Exec();
    if (guarded) db_->Prepare("SAVEPOINT op").Exec();
  } catch (const sqlite::SqliteError& e) {
    if (!db_->InTransaction()) {
      lose_txn();
    } else if (in_txn_.empty()) {
      try {
        db_->Exec("ROLLBACK");  // holds nothing: do not keep the write lock
      } catch (const sqlite::SqliteError&) {
        lose_txn();
      }
    }
    finished.emplace_back(std::move(op), sqlite::ToError(e));
    return finished;
  }
  std::optional<Error> err;
  std::optional<Error> thrown;  // it threw something else: a bug, answered as one
  try {
    err = op.run(*db_);
  } catch (...) {
    thrown = MakeError(ErrorCode::kInternal, "internal error");
    err = thrown;
  }
  if (!db_->InTransaction()) {
    // SQLite rolled the whole transaction back (e.g. an I/O error): earlier operations
    // of this transaction are gone too.
    lose_txn();
    finished.emplace_back(std::move(op), err ? *err : StorageDown());
    return finished;
  }
  try {
    if (guarded && err) db_->Prepare("ROLLBACK TO op").Exec();
    if (guarded) db_->Prepare("RELEASE op").Exec();
  } catch (const sqlite::SqliteError& e) {
    lose_txn();
    finished.emplace_back(std::move(op), sqlite::ToError(e));
    return finished;
  }
  if (err) {
    // Its own error value is its answer, and nothing to commit. But that answer may
    // tell of a commit not flushed yet, or of this transaction (a conflict, say): it
    // rides with this transaction and hears back with it (invariant 3). A transaction
    // that holds nothing else ends now rather than hold the write lock until the next
    // operation.
    if (in_txn_.empty()) {
      try {
        db_->Exec("ROLLBACK");
      } catch (const sqlite::SqliteError&) {
        lose_txn();
      }
    }
    riders_durable_ = riders_durable_ || op.sync == Sync::kDurable;
    waiter_ = waiter_ || !op.deferred;
    riders_.emplace_back(std::move(op), thrown);
    return finished;
  }
  txn_durable_ = txn_durable_ || op.sync == Sync::kDurable;
  waiter_ = waiter_ || !op.deferred;
  in_txn_.push_back(std::move(op));
  return finished;
}

void Writer::Finish(Finished ops) {
  for (auto& [op, err] : ops) {
    if (op.deferred && completions_) {
      // One task each, so that every thread of the executor takes its share of the
      // answers at once (each writes its response), rather than one thread all of them
      // one after the other while the next requests wait for it.
      completions_([finish = std::move(op.finish), e = std::move(err)] { finish(e); });
    } else {
      op.finish(err);
    }
  }
}

void Writer::CommitLoop() {
  for (;;) {
    WaitForWork();
    if (CommitOnce()) return;
  }
}

bool Writer::CommitOnce(bool post_rest) {
  std::vector<Op> ops;
  Finished failed;  // lost with their transaction: answered at once
  Finished riders;  // failed on their own: answered with the transaction they ran in
  bool durable = false;
  bool stop = false;
  std::optional<Error> err;
  double commit_seconds = 0;
  commits_waiting_.fetch_add(1, std::memory_order_relaxed);
  // Held past the commit when work must follow it (SetAfterCommit).
  std::unique_lock db(db_mu_);
  {
    commits_waiting_.fetch_sub(1, std::memory_order_relaxed);
    commit_posted_ = false;
    waiter_ = false;
    // Operations still queued in turn (the transaction was full, or their callers found
    // the connection taken) join this commit; those behind wait for the next one.
    RunQueuedLocked(&failed, /*committing=*/true);
    riders.swap(riders_);
    durable = riders_durable_;
    riders_durable_ = false;
    if (!in_txn_.empty()) {
      ops.swap(in_txn_);
      durable = durable || txn_durable_;
      txn_durable_ = false;
      err = CommitLocked(&commit_seconds);
    } else if (stopping_ && !HasQueued()) {  // nothing left to commit
      stop = true;
      if (db_->InTransaction()) {
        try {
          db_->Exec("ROLLBACK");  // only failed operations ran in it
        } catch (const sqlite::SqliteError&) {
        }
      }
    }
    // Riders with no transaction saw only commits of this thread: all flushed by now,
    // but for kCommitted ones, which a durable rider's flush below covers.
  }
  const bool after = !ops.empty() && !err && !stop && after_commit_ && after_commit_due_();
  if (!after) db.unlock();
  Finish(std::move(failed));
  // Passes left behind run while this commit flushes, in the next transaction.
  if (post_rest && completions_ && !stop && HasQueuedBehind()) PostRunQueued();
  if (!ops.empty() && !err) {
    const bool waits_for_flush = pipelined() ? durable : flushes_;
    if (on_commit_) on_commit_(commit_seconds, ops.size(), waits_for_flush);
    if (pipelined()) unflushed_ = true;
    std::lock_guard lock(stats_mu_);
    ++commits_;
    if (waits_for_flush) ++flushed_;
    operations_ += ops.size();
  }
  // Every commit so far was made before this flush began, so it covers them. After a
  // failed flush nothing is answered as done, committed or not (see the header).
  if (!err && pipelined() && (flush_failed_ || (durable && unflushed_))) {
    const auto started = Clock::now();
    err = FlushWal();
    if (!err) {
      unflushed_ = false;
      if (on_flush_) on_flush_(SecondsSince(started));
      std::lock_guard lock(stats_mu_);
      ++flushes_done_;
    }
  }
  Finished finished;
  finished.reserve(ops.size() + riders.size());
  for (Op& op : ops) finished.emplace_back(std::move(op), err);
  for (auto& [op, own] : riders) finished.emplace_back(std::move(op), err ? err : own);
  Finish(std::move(finished));
  if (after) {
    after_commit_(*db_);
    db.unlock();
    RunQueued();  // operations queued meanwhile found the connection taken
  }
  return stop;
}

std::optional<Error> Writer::CommitLocked(double* seconds) {
  const auto started = Clock::now();
  try {
    db_->Prepare("COMMIT").Exec();
  } catch (const sqlite::SqliteError& e) {
    try {
      db_->Exec("ROLLBACK");
    } catch (const sqlite::SqliteError&) {
    }
    Error err = sqlite::ToError(e);
    return err.code == ErrorCode::kStorageUnavailable ? StorageDown() : err;
  }
  *seconds = SecondsSince(started);
  return std::nullopt;
}

std::optional<Error> Writer::FlushWal() {
  if (flush_failed_) return flush_failed_;
  // SQLite keeps its WAL file while a connection is open. Should it ever have been
  // removed all the same, commits may sit in a file that no longer exists: fail closed.
  struct stat st {};
  if (::fstat(wal_fd_, &st) == 0 && st.st_nlink == 0) {
    flush_failed_ = MakeError(ErrorCode::kStorageUnavailable,
                              "the write-ahead log file was removed under sluiced: nothing "
                              "more can be made durable until sluiced restarts");
    return flush_failed_;
  }
  int rc;
  do {
    rc = flush_ ? flush_(wal_fd_) : ::fdatasync(wal_fd_);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return std::nullopt;
  flush_failed_ =
      MakeError(ErrorCode::kStorageUnavailable,
                std::string("flushing the write-ahead log failed (") + std::strerror(errno) +
                    "): nothing more can be made durable until sluiced restarts");
  return flush_failed_;
}

}  // namespace sluice
