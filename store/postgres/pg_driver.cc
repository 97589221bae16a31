#include "store/postgres/pg_driver.h"

#include <algorithm>
#include <future>
#include <random>

#include "store/postgres/pg_schema.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

Micros WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Error Unavailable(const std::string& why) {
  return MakeError(ErrorCode::kStorageUnavailable,
                   "storage is unavailable; try again later (postgres: " + why + ")");
}

// A race with another transaction: running the operation again decides it afresh.
bool Retryable(const pg::PgError& e) {
  const std::string& s = e.sqlstate();
  return s == pg::kSerializationFailure || s == pg::kDeadlockDetected ||
         s == pg::kUniqueViolation || s == pg::kForeignKeyViolation;
}

// The server or the way to it failed (storage_unavailable), or it refused a statement
// for a reason that is a bug here (internal): a constraint, a type, a syntax error.
Error ToError(const pg::PgError& e) {
  const std::string& s = e.sqlstate();
  const std::string cls = s.substr(0, 2);
  if (s.empty() ||     // libpq: no connection, lost, no memory
      cls == "08" ||   // connection exception
      cls == "40" ||   // still racing after every attempt
      cls == "53" ||   // insufficient resources (disk full)
      cls == "57" ||   // shutdown, crash, cannot connect now
      cls == "58" ||   // system error (I/O)
      cls == "XX" ||   // internal error, data corrupted
      s == "55P03" ||  // lock not available
      s == "25006") {  // read-only transaction (a standby)
    return Unavailable(e.what());
  }
  return MakeError(ErrorCode::kInternal, std::string("store: ") + e.what());
}

// A pause before running a transaction again after a serialization failure or deadlock,
// so that the two do not meet again at once: 1 .. 4·attempt ms.
void PauseBeforeRetry(int attempt) {
  thread_local std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> ms(1, 4 * attempt);
  std::this_thread::sleep_for(milliseconds(ms(rng)));
}

// Ends the open transaction (if any) without keeping it; false if the connection is gone.
bool Rollback(pg::Connection& conn) {
  if (!conn.ok()) return false;
  if (!conn.InTransaction()) return true;
  try {
    conn.Exec("ROLLBACK");
    return true;
  } catch (const pg::PgError&) {
    return conn.ok();
  }
}

}  // namespace

PgDriver::PgDriver(const PgStoreOptions& options, std::unique_ptr<pg::Connection> first)
    : uri_(options.uri),
      clock_(options.clock),
      intake_batches_(static_cast<size_t>(std::max(0, options.intake_batches))) {
  const int n = std::max(1, options.pool);
  workers_.reserve(static_cast<size_t>(n));
  workers_.emplace_back([this, conn = std::move(first)]() mutable { WorkerLoop(std::move(conn)); });
  for (int i = 1; i < n; ++i) {
    workers_.emplace_back([this] { WorkerLoop(nullptr); });
  }
}

PgDriver::~PgDriver() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

Result<std::unique_ptr<PgDriver>> PgDriver::Open(const PgStoreOptions& options) {
  std::unique_ptr<pg::Connection> conn;
  try {
    const PgStatements& statements = PgStatements::Get();  // every statement is there
    conn = std::make_unique<pg::Connection>(options.uri);
    // Only the migration record's applied_at reads this process's clock.
    PreparePgSchema(*conn, WallMicros());
    statements.PrepareOn(*conn);
  } catch (const pg::PgError& e) {
    Error err = ToError(e);
    err.detail = std::string("cannot open database: ") + e.what();
    return err;
  } catch (const std::exception& e) {  // a statement file that does not parse: a bug
    return MakeError(ErrorCode::kInternal, std::string("cannot open database: ") + e.what());
  }
  return std::unique_ptr<PgDriver>(new PgDriver(options, std::move(conn)));
}

void PgDriver::Publish(StoreChange change) {
  if (channel_) channel_->Publish(change);
}

void PgDriver::Subscribe(std::function<void(StoreChange)> listener) {
  channel_ = std::make_unique<PgChannel>(uri_, std::move(listener));
}

bool PgDriver::MaintenanceLeader() { return channel_ && channel_->leader(); }

void PgDriver::Write(Op op, Done done, Sync sync) {
  // kCommitted is answered as kDurable here. On SQLite a commit that is not flushed
  // yet survives a crash of any process (only a power loss forgets it); on PostgreSQL,
  // synchronous_commit off is lost to a crash of the server itself, which would hand a
  // leased job out again while its first worker still runs it (two live leases: over
  // the concurrency caps). The flush is group-committed and leases are committed
  // ahead of their release time (the lookahead), so it costs little. kVolatile commits
  // with synchronous_commit off: the row locks it took are let go without waiting for
  // the flush.
  Enqueue(Task{std::move(op), std::move(done),
               sync == Sync::kVolatile ? Kind::kVolatile : Kind::kDurable});
}

std::optional<Error> PgDriver::Read(const Op& op) {
  std::promise<std::optional<Error>> promise;
  auto future = promise.get_future();
  Enqueue(Task{[&op](Tx& tx) { return op(tx); },
               [&promise](std::optional<Error> r) { promise.set_value(std::move(r)); },
               Kind::kRead});
  return future.get();
}

void PgDriver::Enqueue(Task task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

void PgDriver::WorkerLoop(std::unique_ptr<pg::Connection> conn) {
  while (true) {
    Task task;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued operation has run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::optional<Error> outcome = Run(conn, task);
    task.done(std::move(outcome));
  }
}

std::unique_ptr<pg::Connection> PgDriver::Connect(std::string* why) {
  {
    std::lock_guard lock(connect_mu_);
    const auto now = steady_clock::now();
    if (now < next_connect_) {
      const auto wait = std::chrono::duration_cast<milliseconds>(next_connect_ - now);
      *why = last_connect_error_ + " (next attempt in " + std::to_string(wait.count()) + " ms)";
      return nullptr;
    }
    if (backoff_ > milliseconds(0)) {
      // The database was down at the last attempt: one worker looks at a time (an attempt
      // may take up to connect_timeout), the others answer at once.
      if (probing_) {
        *why = last_connect_error_ + " (reconnecting)";
        return nullptr;
      }
      probing_ = true;
    }
  }
  std::string error;
  try {
    auto conn = std::make_unique<pg::Connection>(uri_);
    PgStatements::Get().PrepareOn(*conn);
    std::lock_guard lock(connect_mu_);
    backoff_ = milliseconds(0);
    probing_ = false;
    return conn;
  } catch (const pg::PgError& e) {
    error = e.what();
  }
  std::lock_guard lock(connect_mu_);
  probing_ = false;
  backoff_ = std::clamp(backoff_ * 2, kMinBackoff, kMaxBackoff);
  next_connect_ = steady_clock::now() + backoff_;
  last_connect_error_ = error;
  *why = error;
  return nullptr;
}

std::optional<Error> PgDriver::Run(std::unique_ptr<pg::Connection>& conn, const Task& task) {
  const char* begin = "BEGIN ISOLATION LEVEL READ COMMITTED";
  if (task.kind == Kind::kRead) {
    begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
  }
  for (int attempt = 1;; ++attempt) {
    if (conn && !conn->ok()) conn.reset();
    if (!conn) {
      std::string why;
      conn = Connect(&why);
      if (!conn) return Unavailable(why);
    }
    bool committing = false;
    try {
      conn->BeginLazily(begin);
      if (task.kind == Kind::kVolatile) conn->DeferSql("SET LOCAL synchronous_commit = off");
      PgTx tx(*conn, clock_);
      if (std::optional<Error> e = task.op(tx)) {
        if (!Rollback(*conn)) conn.reset();
        return e;
      }
      committing = true;
      conn->Exec("COMMIT");
      return std::nullopt;
    } catch (const pg::PgError& e) {
      const bool lost = !Rollback(*conn);
      if (lost) conn.reset();
      if (lost && committing) {
        // The COMMIT was sent and no answer came: it may or may not have happened.
        return Unavailable(std::string("the connection was lost during COMMIT, whose "
                                       "outcome is unknown: ") +
                           e.what());
      }
      if (attempt < kMaxAttempts && (lost || Retryable(e))) {
        // Nothing was committed: run it again, on a fresh connection if this one is gone
        // (an idle connection the server dropped when it restarted, say).
        if (!lost &&
            (e.sqlstate() == pg::kSerializationFailure || e.sqlstate() == pg::kDeadlockDetected)) {
          PauseBeforeRetry(attempt);
        }
        continue;
      }
      return ToError(e);
    } catch (const std::exception& e) {
      if (!Rollback(*conn)) conn.reset();
      return MakeError(ErrorCode::kInternal, std::string("store: ") + e.what());
    }
  }
}

}  // namespace sluice
