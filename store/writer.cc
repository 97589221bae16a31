#include "store/writer.h"

#include <algorithm>
#include <chrono>

namespace sluice {

Writer::Writer(std::unique_ptr<sqlite::Db> db, size_t max_batch, Executor completions,
               CommitObserver on_commit)
    : db_(std::move(db)),
      max_batch_(max_batch),
      completions_(std::move(completions)),
      on_commit_(std::move(on_commit)) {
  // FULL (2) or EXTRA (3) flush each commit; the WAL's NORMAL (1) and OFF (0) do not.
  sqlite::Stmt level = db_->Prepare("PRAGMA synchronous");
  flushes_ = level.Step() && level.Int(0) >= 2;
  flushing_now_ = flushes_;
  thread_ = std::thread([this] { Loop(); });
}

void Writer::SetFlushing(bool flush) {
  flush = flush && flushes_;
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
    RunBatch(batch);
    DeliverFinished();
  }
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

void Writer::RunBatch(std::deque<Op>& batch) {
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
    SetFlushing(std::any_of(batch.begin(), batch.end(),
                            [](const Op& op) { return op.sync == Sync::kDurable; }));
    db_->Exec("BEGIN IMMEDIATE");
  } catch (const sqlite::SqliteError& e) {
    fail_all(batch, sqlite::ToError(e));
    return;
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
    return;
  }
  try {
    db_->Exec("COMMIT");
  } catch (const sqlite::SqliteError& e) {
    try {
      db_->Exec("ROLLBACK");
    } catch (const sqlite::SqliteError&) {
    }
    fail_all(in_txn, sqlite::ToError(e).code == ErrorCode::kStorageUnavailable
                         ? storage_down
                         : sqlite::ToError(e));
    return;
  }
  if (on_commit_) {
    on_commit_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
               in_txn.size(), flushing_now_);
  }
  {
    std::lock_guard lock(mu_);
    ++commits_;
    if (flushing_now_) ++flushed_;
    operations_ += in_txn.size();
  }
  for (Op& op : in_txn) Finish(op, std::nullopt);
}

}  // namespace sluice
