// What a storage driver gives the engine: transactions. Everything else a driver does
// (connections, statements, schema, migrations, how a commit is made durable) stays
// behind this interface; the engine never sees SQL.
//
// A write runs an operation inside a transaction and calls back once that transaction
// is committed (and, for kDurable, durable) or has failed. The operation may share its
// transaction with others (group commit on SQLite): its own failure (a returned Error)
// rolls back only its own changes. A driver may run an operation more than once (a
// PostgreSQL serialization failure or deadlock is retried), so an operation must do
// nothing but read and write through its Tx.
#pragma once

#include <functional>
#include <future>
#include <optional>
#include <vector>

#include "common/error.h"
#include "store/engine/tx.h"
#include "store/store.h"

namespace sluice {

class Driver {
 public:
  virtual ~Driver() = default;

  // Whether the caller hears back once the change is durable (kDurable) or once it is
  // committed and visible to every reader (kCommitted: a power loss may forget it; a
  // lease, whose loss leaves its job queued, is answered so). The least a driver gives:
  // PostgreSQL answers kCommitted as kDurable (PgDriver::Write says why). kVolatile:
  // committed and visible, but a crash of the database server itself may forget it —
  // for state whose loss costs nothing that matters (intake limiters' counts: a client
  // gets a few more requests), so that a hot key's row lock is not held across a flush.
  enum class Sync { kDurable, kCommitted, kVolatile };

  // An operation: reads and writes through the Tx; an Error rolls back its changes.
  using Op = std::function<std::optional<Error>(Tx&)>;
  // Called once: with nothing when the operation's transaction committed and the
  // operation succeeded, else with the operation's own Error or the transaction's
  // failure (storage_unavailable). Must be quick and never block; it runs on a driver
  // thread (or the driver's completions executor).
  using Done = std::function<void(std::optional<Error>)>;

  virtual void Write(Op op, Done done, Sync sync) = 0;
  // Write, waiting for the outcome on this thread. A driver whose `done` runs through an
  // executor (an event loop) overrides it, so that a caller can wait before that
  // executor runs (at start-up, say) and the wait costs no hand-off.
  virtual std::optional<Error> WriteAndWait(Op op, Sync sync) {
    std::promise<std::optional<Error>> promise;
    auto future = promise.get_future();
    Write(
        std::move(op), [&promise](std::optional<Error> e) { promise.set_value(std::move(e)); },
        sync);
    return future.get();
  }
  // Whether every write queues for one connection (SQLite's one writer), so that a long
  // operation holds up every write queued behind it.
  virtual bool SharesOneWriter() const { return false; }
  // Release passes: runs each of `ops` as WriteAndWait would, in order, and waits for
  // them all; returns each one's outcome. A driver that queues writes (SQLite's one
  // writer) runs them as operations of their own, queued behind other writes, so that
  // no submit waits behind a pass that reads and writes many rows. By default they run
  // as one operation: the first Error fails them all (and rolls all of them back).
  virtual std::vector<std::optional<Error>> WriteEachAndWait(std::vector<Op> ops, Sync sync) {
    std::optional<Error> e = WriteAndWait(
        [&ops](Tx& tx) -> std::optional<Error> {
          for (const Op& op : ops) {
            if (std::optional<Error> failed = op(tx)) return failed;
          }
          return std::nullopt;
        },
        sync);
    return std::vector<std::optional<Error>>(ops.size(), e);
  }
  // Runs `op` on a consistent read-only snapshot and returns its Error or nothing.
  virtual std::optional<Error> Read(const Op& op) = 0;

  // Changes other processes on the same database should hear of (committed ones only).
  // A driver one process owns has no one to tell.
  virtual void Publish(StoreChange /*change*/) {}
  // Where to deliver other processes' changes (called once, by the engine, before any
  // Publish); `listener` runs on a driver thread and must be quick.
  virtual void Subscribe(std::function<void(StoreChange)> /*listener*/) {}
  // How many batches of submits the engine keeps in flight at once, each gathering the
  // submits that arrived while the others ran (one transaction per batch); 0: each
  // submit is an operation of its own (a driver that shares transactions itself).
  virtual size_t IntakeBatches() const { return 0; }
  // See Store::MaintenanceLeader.
  virtual bool MaintenanceLeader() { return true; }
};

}  // namespace sluice
