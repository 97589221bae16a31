#include "store/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace sluice {

Writer::Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch, Executor completions,
               CommitObserver on_commit, FlushObserver on_flush)
    : db_(std::move(db)),
      max_batch_(max_batch),
      completions_(std::move(completions)),
      on_commit_(std::move(on_commit)),
      on_flush_(std::move(on_flush)) {
  // FULL (2) or EXTRA (3) flush each commit; the WAL's NORMAL (1) and OFF (0) do not.
  sqlite::Stmt level = db_->Prepare("PRAGMA synchronous");
  flushes_ = level.Step() && level.Int(0) >= 2;
  flushing_now_ = flushes_;
  if (flushes_ && OpenWal()) {
    db_->Exec("PRAGMA synchronous=NORMAL");  // the syncer flushes instead
    flushing_now_ = false;
    syncer_ = std::thread([this] { SyncLoop(); });
  }
  thread_ = std::thread([this] { Loop(); });
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
  // flush, which the syncer now makes).
  std::string dir = wal_path_.substr(0, wal_path_.find_last_of('/') + 1);
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return true;
}

void Writer::SetFlushing(bool flush) {
  flush = flush && flushes_ && !pipelined();
  if (flush == flushing_now_) return;
  db_->Exec(flush ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  flushing_now_ = flush;
}

Writer::~Writer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (syncer_.joinable()) {
    {
      std::lock_guard lock(sync_mu_);
      sync_stopping_ = true;
    }
    sync_cv_.notify_all();
    syncer_.join();
  }
  if (wal_fd_ >= 0) ::close(wal_fd_);
}

void Writer::Enqueue(Op op) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      op.finish(MakeError(ErrorCode::kStorageUnavailable, "store is shutting down"));
      return;
    }
    pending_.push_back(std::move(op));
  }
  cv_.notify_one();
}

uint64_t Writer::commits() const {
  std::lock_guard lock(mu_);
  return commits_;
}

uint64_t Writer::flushed_commits() const {
  std::lock_guard lock(mu_);
  return flushed_;
}

uint64_t Writer::flushes() const {
  std::lock_guard lock(mu_);
  return flushes_done_;
}

uint64_t Writer::operations() const {
  std::lock_guard lock(mu_);
  return operations_;
}

void Writer::Loop() {
  for (;;) {
    std::deque<Op> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping and drained
      while (!pending_.empty() && batch.size() < max_batch_) {
        batch.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
    }
    const bool durable = std::any_of(batch.begin(), batch.end(),
                                     [](const Op& op) { return op.sync == Sync::kDurable; });
    std::vector<Op> committed = RunBatch(batch, durable);
    if (pipelined()) {
      if (!committed.empty()) HandToSyncer(std::move(committed), durable);
    } else {
      for (Op& op : committed) Finish(op, std::nullopt);
    }
    DeliverFinished();
  }
}

void Writer::HandToSyncer(std::vector<Op> ops, bool durable) {
  {
    std::lock_guard lock(sync_mu_);
    if (durable || syncing_ || !to_sync_.empty()) {
      ++commits_to_sync_;
      for (Op& op : ops) to_sync_.push_back(std::move(op));
      ops.clear();
    }
  }
  if (ops.empty()) {
    sync_cv_.notify_one();
    return;
  }
  // Nothing committed before these waits for a flush: they may be answered now.
  for (Op& op : ops) Finish(op, std::nullopt);
}

void Writer::SyncLoop() {
  for (;;) {
    std::vector<Op> ops;
    size_t commits = 0;
    {
      std::unique_lock lock(sync_mu_);
      sync_cv_.wait(lock, [&] { return sync_stopping_ || !to_sync_.empty(); });
      if (to_sync_.empty()) return;  // stopping and drained
      ops.swap(to_sync_);
      std::swap(commits, commits_to_sync_);
      syncing_ = true;
    }
    // Every commit of `ops` ended before this flush began, so the flush covers it.
    const auto started = std::chrono::steady_clock::now();
    std::optional<Error> err = FlushWal();
    if (!err && on_flush_) {
      on_flush_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                commits);
    }
    {
      std::lock_guard lock(sync_mu_);
      syncing_ = false;
    }
    if (!err) {
      std::lock_guard lock(mu_);
      ++flushes_done_;
    }
    std::vector<std::function<void()>> deferred;
    for (Op& op : ops) {
      if (op.deferred && completions_) {
        deferred.push_back([finish = std::move(op.finish), err] { finish(err); });
      } else {
        op.finish(err);
      }
    }
    if (!deferred.empty()) {
      completions_([fns = std::move(deferred)] {
        for (const auto& f : fns) f();
      });
    }
  }
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

void Writer::Finish(Op& op, const std::optional<Error>& e) {
  if (!op.deferred || !completions_) return op.finish(e);
  finished_.push_back([finish = std::move(op.finish), e] { finish(e); });
}

void Writer::DeliverFinished() {
  if (finished_.empty()) return;
  completions_([fns = std::move(finished_)] {
    for (const auto& f : fns) f();
  });
  finished_ = {};
}

std::vector<Writer::Op> Writer::RunBatch(std::deque<Op>& batch, bool durable) {
  // Operations whose changes live in the open transaction, waiting for its commit.
  std::deque<Op> in_txn;
  const auto started = std::chrono::steady_clock::now();
  auto fail_all = [&](std::deque<Op>& ops, const Error& e) {
    for (Op& op : ops) Finish(op, e);
    ops.clear();
  };
  const Error storage_down =
      MakeError(ErrorCode::kStorageUnavailable, "storage is unavailable; try again later");

  try {
    SetFlushing(durable);
    db_->Prepare("BEGIN IMMEDIATE").Exec();
  } catch (const sqlite::SqliteError& e) {
    fail_all(batch, sqlite::ToError(e));
    return {};
  }
  for (Op& op : batch) {
    try {
      db_->Prepare("SAVEPOINT op").Exec();
    } catch (const sqlite::SqliteError& e) {
      Finish(op, sqlite::ToError(e));
      continue;
    }
    std::optional<Error> err = op.run(*db_);
    if (!db_->InTransaction()) {
      // SQLite rolled the whole transaction back (e.g. an I/O error): earlier
      // operations of this batch are gone too.
      fail_all(in_txn, storage_down);
      Finish(op, err ? *err : storage_down);
      try {
        db_->Exec("BEGIN IMMEDIATE");
      } catch (const sqlite::SqliteError&) {
        // Fall through: the remaining operations will fail at their SAVEPOINT.
      }
      continue;
    }
    try {
      if (err) db_->Prepare("ROLLBACK TO op").Exec();
      db_->Prepare("RELEASE op").Exec();
    } catch (const sqlite::SqliteError& e) {
      // Cannot tell what the savepoint holds: give up the whole transaction.
      if (db_->InTransaction()) {
        try {
          db_->Exec("ROLLBACK");
        } catch (const sqlite::SqliteError&) {
        }
      }
      fail_all(in_txn, storage_down);
      Finish(op, sqlite::ToError(e));
      continue;
    }
    if (err) {
      Finish(op, std::nullopt);  // its own error value is the answer; nothing to commit
    } else {
      in_txn.push_back(std::move(op));
    }
  }
  if (!db_->InTransaction()) {
    fail_all(in_txn, storage_down);
    return {};
  }
  try {
    db_->Prepare("COMMIT").Exec();
  } catch (const sqlite::SqliteError& e) {
    try {
      db_->Exec("ROLLBACK");
    } catch (const sqlite::SqliteError&) {
    }
    fail_all(in_txn, sqlite::ToError(e).code == ErrorCode::kStorageUnavailable
                         ? storage_down
                         : sqlite::ToError(e));
    return {};
  }
  const bool waits_for_flush = flushing_now_ || (pipelined() && durable);
  if (on_commit_) {
    on_commit_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
               in_txn.size(), waits_for_flush);
  }
  {
    std::lock_guard lock(mu_);
    ++commits_;
    if (waits_for_flush) ++flushed_;
    operations_ += in_txn.size();
  }
  return {std::make_move_iterator(in_txn.begin()), std::make_move_iterator(in_txn.end())};
}

}  // namespace sluice
