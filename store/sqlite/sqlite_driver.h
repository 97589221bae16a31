// The SQLite driver: one file, WAL, every write through the group-committing Writer
// (store/sqlite/writer.h), reads on a small pool of read-only connections. Statements
// are store/sql/sqlite/statements.sql; the schema is schema.sql plus the numbered
// migrations. One process per file: Open takes the file's lock (store/sqlite/file_lock.h)
// before it opens the database, and the driver holds it until it is destroyed.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/engine/driver.h"
#include "store/sqlite/checkpointer.h"
#include "store/sqlite/file_lock.h"
#include "store/sqlite/queue_rows.h"
#include "store/sqlite/sqlite.h"
#include "store/sqlite/writer.h"

namespace sluice {

struct SqliteStoreOptions {
  std::string path;                  // the database file (created if missing)
  std::string synchronous = "FULL";  // FULL: an acknowledged job survives power loss
  int busy_timeout_ms = 5000;        // how long a statement waits on a lock
  size_t max_batch = 512;            // operations per group commit
  // Batches of concurrent submits in flight at once, each one operation of the writer
  // (Driver::IntakeBatches); 0: each submit an operation of its own. -1: 1 at NORMAL
  // (or OFF), where a commit waits for no flush, else 0: at FULL a batch would wait for
  // the flush of the one before it. Concurrent A/B runs (bench/ab.sh, 2026-12-07) at
  // NORMAL: batches -4 % CPU per job against none; one in flight -5 % against two (the
  // next batch gathers while one commits), four +5 %. At FULL, two: -20 % jobs/s.
  int intake_batches = -1;
  // WAL pages that start a background checkpoint (Checkpointer). -1: 4000 (16 MiB) at
  // NORMAL (or OFF), else 1000. Concurrent A/B runs (bench/ab.sh, 2026-12-07) at NORMAL,
  // 4000 against 1000: intake -3.4 % CPU per job and +4.8 % jobs/s, end to end -4.5 %
  // CPU per job (a longer WAL holds more rewrites of the same pages, which a checkpoint
  // copies once); 16000 no better than 4000. At FULL, where every commit waits for a
  // flush of the WAL, a checkpoint's flush of the database competes with it on the disk:
  // 4000 gained nothing there (intake: 0.996x CPU per job), and in bench/scale.sh at a
  // million jobs (docs/performance.md) its submit p99 came out worse, so FULL keeps 1000.
  int wal_pages = -1;
  std::function<double()> unit_random;  // retry jitter source in [0,1); default: random_device
  // Where the completions of asynchronous writes run, one task each (see Writer);
  // default: on the thread that finishes them. Must outlive the store.
  Writer::Executor completions;
  Writer::CommitObserver on_commit;  // see Writer
  Writer::FlushObserver on_flush;    // see Writer
};

class SqliteDriver final : public Driver {
 public:
  // Takes the file's lock, then opens (creating) the file and brings its schema to the
  // latest version. A file another store holds is refused (conflict, naming the other
  // process) before anything is created or written.
  static Result<std::unique_ptr<SqliteDriver>> Open(const SqliteStoreOptions& options);
  ~SqliteDriver() override;

  void Write(Op op, Done done, Sync sync) override;
  // Answered on this thread, not through the completions executor.
  std::optional<Error> WriteAndWait(Op op, Sync sync) override;
  bool SharesOneWriter() const override { return true; }
  size_t IntakeBatches() const override { return intake_batches_; }
  // Each op an operation of the writer's own, queued behind the others (ExecuteBehind,
  // store/sqlite/writer.h).
  std::vector<std::optional<Error>> WriteEachAndWait(std::vector<Op> ops, Sync sync) override;
  std::optional<Error> Read(const Op& op) override;

  const Writer& writer() const { return *writer_; }

 private:
  explicit SqliteDriver(const SqliteStoreOptions& options);
  // `op` as an operation of the writer: a transaction on its connection, with its cache.
  std::function<Result<Ok>(sqlite::Db&)> OnWriter(Op op);

  std::string path_;
  std::string synchronous_;
  int busy_timeout_ms_;
  size_t intake_batches_;
  // Declared first: released only once every connection below is closed.
  std::unique_ptr<SqliteFileLock> lock_;
  std::unique_ptr<Checkpointer> checkpointer_;  // declared before writer_: outlives it
  QueueRows queue_rows_;  // the writer connection's hooks point here: outlives writer_
  std::unique_ptr<Writer> writer_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<sqlite::Db>> idle_readers_;  // guarded by readers_mu_
};

}  // namespace sluice
