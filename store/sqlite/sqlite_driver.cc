#include "store/sqlite/sqlite_driver.h"

#include <chrono>

#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_tx.h"
#include "store/sqlite/wal_vfs.h"

namespace sluice {
namespace {

Micros WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether a commit at this synchronous level waits for a flush of the WAL (FULL, EXTRA)
// or not (the WAL's NORMAL, OFF): what the intake batches and the checkpoint threshold
// are chosen by.
bool FlushesEachCommit(const std::string& synchronous) {
  return synchronous != "NORMAL" && synchronous != "OFF";
}

Writer::Sync WriterSync(Driver::Sync sync) {
  return sync == Driver::Sync::kDurable ? Writer::Sync::kDurable : Writer::Sync::kCommitted;
}

}  // namespace

SqliteDriver::SqliteDriver(const SqliteStoreOptions& options)
    : path_(options.path),
      synchronous_(options.synchronous),
      busy_timeout_ms_(options.busy_timeout_ms),
      intake_batches_(options.intake_batches >= 0
                          ? static_cast<size_t>(options.intake_batches)
                          : (FlushesEachCommit(options.synchronous) ? 0 : 1)) {}

SqliteDriver::~SqliteDriver() = default;

Result<std::unique_ptr<SqliteDriver>> SqliteDriver::Open(const SqliteStoreOptions& options) {
  std::unique_ptr<SqliteDriver> driver(new SqliteDriver(options));
  // Before anything touches the file: a second process on it is refused here.
  auto lock = SqliteFileLock::Acquire(options.path);
  if (!lock.ok()) return lock.error();
  driver->lock_ = std::move(lock.value());
  try {
    (void)SqliteStatements::Get();  // every statement is there, or fail now
    // The writer's WAL writes go out one system call per commit (store/sqlite/wal_vfs.h).
    auto db =
        std::make_unique<sqlite::Db>(options.path, options.synchronous, options.busy_timeout_ms,
                                     sqlite::RegisterCoalescingWalVfs());
    // Only the migration record's applied_at reads the wall clock.
    PrepareSqliteSchema(*db, WallMicros());
    const int wal_pages = options.wal_pages > 0                    ? options.wal_pages
                          : FlushesEachCommit(options.synchronous) ? 1000
                                                                   : 4000;
    driver->checkpointer_ = std::make_unique<Checkpointer>(options.path, *db, wal_pages);
    driver->queue_rows_.Attach(*db);
    driver->writer_ = std::make_unique<Writer>(
        std::move(db), options.max_batch, options.completions, options.on_commit, options.on_flush);
    Checkpointer* checkpointer = driver->checkpointer_.get();
    driver->writer_->SetAfterCommit([checkpointer] { return checkpointer->TailDue(); },
                                    [checkpointer](sqlite::Db& d) { checkpointer->CopyTail(d); });
  } catch (const sqlite::SqliteError& e) {
    Error err = sqlite::ToError(e);
    err.detail = std::string("cannot open database: ") + e.what();
    return err;
  } catch (const std::exception& e) {  // a statement file that does not parse: a bug
    return MakeError(ErrorCode::kInternal, std::string("cannot open database: ") + e.what());
  }
  return driver;
}

std::function<Result<Ok>(sqlite::Db&)> SqliteDriver::OnWriter(Op op) {
  return [this, op = std::move(op)](sqlite::Db& db) -> Result<Ok> {
    SqliteTx tx(db, SqliteStatements::Get(), &queue_rows_);
    if (std::optional<Error> e = op(tx)) return *e;
    return Ok{};
  };
}

void SqliteDriver::Write(Op op, Done done, Sync sync) {
  writer_->RunAsync<Ok>(
      OnWriter(std::move(op)),
      [done = std::move(done)](Result<Ok> r) {
        if (r.ok()) {
          done(std::nullopt);
        } else {
          done(r.error());
        }
      },
      WriterSync(sync));
}

std::optional<Error> SqliteDriver::WriteAndWait(Op op, Sync sync) {
  Result<Ok> r = writer_->Run<Ok>(OnWriter(std::move(op)), WriterSync(sync));
  if (r.ok()) return std::nullopt;
  return r.error();
}

std::vector<std::optional<Error>> SqliteDriver::WriteEachAndWait(std::vector<Op> ops, Sync sync) {
  std::vector<std::function<Result<Ok>(sqlite::Db&)>> fns;
  fns.reserve(ops.size());
  for (Op& op : ops) fns.push_back(OnWriter(std::move(op)));
  std::vector<Result<Ok>> results = writer_->RunEachBehind<Ok>(std::move(fns), WriterSync(sync));
  std::vector<std::optional<Error>> out;
  out.reserve(results.size());
  for (Result<Ok>& r : results) {
    if (r.ok()) {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(r.error());
    }
  }
  return out;
}

std::optional<Error> SqliteDriver::Read(const Op& op) {
  std::unique_ptr<sqlite::Db> db;
  {
    std::lock_guard lock(readers_mu_);
    if (!idle_readers_.empty()) {
      db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    }
  }
  try {
    if (!db) db = std::make_unique<sqlite::Db>(path_, synchronous_, busy_timeout_ms_);
    SqliteTx tx(*db, SqliteStatements::Get());
    std::optional<Error> r = op(tx);
    std::lock_guard lock(readers_mu_);
    idle_readers_.push_back(std::move(db));
    return r;
  } catch (const sqlite::SqliteError& e) {
    return sqlite::ToError(e);  // drop the connection: it may be in a bad state
  }
}

}  // namespace sluice
