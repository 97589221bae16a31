// The PostgreSQL driver: a bounded pool of connections, each owned by one worker thread,
// and one queue of operations they take in turn. Every operation is its own transaction
// (READ COMMITTED for writes, a REPEATABLE READ READ ONLY snapshot for reads) on the
// statements of store/sql/postgres/statements.sql; the schema is
// store/sql/postgres/schema.sql plus the numbered migrations. Several processes may share
// one database: the statements lock what they decide on (see statements.sql).
//
// Invariants:
//   1. An operation's `done` is called once, on a worker thread: with nothing only after
//      its COMMIT returned, with synchronous_commit on: durable, for Sync::kCommitted
//      too (a lease, see Write).
//   2. An operation that fails with serialization_failure, deadlock_detected,
//      unique_violation or foreign_key_violation (it raced another transaction), or that
//      lost its connection before COMMIT, runs again in a fresh transaction, up to
//      kMaxAttempts times in all.
//   3. A connection that failed is dropped; its worker connects again when it next has an
//      operation, no sooner than a backoff (shared by the workers, kMinBackoff doubling to
//      kMaxBackoff) after the last failed attempt. Until then operations fail at once with
//      storage_unavailable: no thread waits on, or spins against, a database that is down.
//      While it is down, one worker at a time tries it.
//   4. Other instances hear of committed changes through the channel (pg_channel.h),
//      which also holds the maintenance lock; it outlives the workers, so that the
//      operations they finish at destruction are announced too.
// Thread-safe: Write and Read may be called from any thread but a worker (from `done`).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/engine/driver.h"
#include "store/postgres/pg.h"
#include "store/postgres/pg_channel.h"
#include "store/postgres/pg_tx.h"

namespace sluice {

struct PgStoreOptions {
  std::string uri;                      // libpq URI, e.g. postgresql://user@host:5432/db
  int pool = 8;                         // connections (and worker threads), at least 1
  PgClock clock = PgClock::kDatabase;   // whose clock decides (see PgClock)
  std::function<double()> unit_random;  // retry jitter source in [0,1); default: random_device
  // Batches of concurrent submits in flight at once (Driver::IntakeBatches); 0: none.
  int intake_batches = 2;
};

class PgDriver final : public Driver {
 public:
  static constexpr int kMaxAttempts = 5;
  static constexpr std::chrono::milliseconds kMinBackoff{25};
  static constexpr std::chrono::milliseconds kMaxBackoff{1000};

  // Connects, brings the schema to the latest version and prepares the statements;
  // storage_unavailable ("cannot open database: ...") if it cannot.
  static Result<std::unique_ptr<PgDriver>> Open(const PgStoreOptions& options);
  // Runs every queued operation (or fails it, if the database is gone), then joins the
  // workers and closes the connections.
  ~PgDriver() override;

  // Queues `op` and returns at once.
  void Write(Op op, Done done, Sync sync) override;
  // Queues `op` and waits for it.
  std::optional<Error> Read(const Op& op) override;

  // Through the channel (store/postgres/pg_channel.h) that Subscribe opens.
  void Publish(StoreChange change) override;
  void Subscribe(std::function<void(StoreChange)> listener) override;
  bool MaintenanceLeader() override;
  size_t IntakeBatches() const override { return intake_batches_; }

 private:
  enum class Kind { kDurable, kVolatile, kRead };
  struct Task {
    Op op;
    Done done;
    Kind kind = Kind::kDurable;
  };

  PgDriver(const PgStoreOptions& options, std::unique_ptr<pg::Connection> first);
  void Enqueue(Task task);
  void WorkerLoop(std::unique_ptr<pg::Connection> conn);
  // Runs `task` to its outcome on `conn` (connecting it if need be).
  std::optional<Error> Run(std::unique_ptr<pg::Connection>& conn, const Task& task);
  // A fresh connection with the statements prepared, or the reason there is none (also
  // while the backoff after a failed attempt lasts).
  std::unique_ptr<pg::Connection> Connect(std::string* why);

  const std::string uri_;
  const PgClock clock_;
  const size_t intake_batches_;

  std::mutex mu_;
  std::condition_variable work_cv_;  // workers sleep on it, with mu_
  std::deque<Task> queue_;           // guarded by mu_
  bool stopping_ = false;            // guarded by mu_

  std::mutex connect_mu_;
  std::chrono::steady_clock::time_point next_connect_;  // guarded by connect_mu_
  std::chrono::milliseconds backoff_{0};                // guarded by connect_mu_
  std::string last_connect_error_;                      // guarded by connect_mu_
  bool probing_ = false;  // a worker tries the database found down; guarded by connect_mu_

  std::vector<std::thread> workers_;
  std::unique_ptr<PgChannel> channel_;  // set once, by Subscribe; dies after the workers
};

}  // namespace sluice
