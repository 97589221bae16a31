// The writer connection's queue rows, read from SQL once per change rather than by every
// submit and every release pass (the SELECT was 3 % of a submit's CPU).
// Thread-safety: none of its own. It is used only with the writer's connection held
// (SqliteTx on the writer, and that connection's commit and rollback hooks).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "store/engine/tx.h"
#include "store/sqlite/sqlite.h"

namespace sluice {

// Exact, not a time-bounded cache: one process writes the file (SqliteFileLock), and on
// that process's writer connection every change of a queue row goes through SqliteTx,
// which calls Changed() first. Invariants:
//  1. An entry is the row as committed, or as this connection's open transaction reads
//     it while that transaction has changed no queue row.
//  2. After Changed(), nothing is read from or put into the cache until the transaction
//     ends: its changes may still be rolled back (a failed operation's savepoint, a
//     failed commit).
//  3. A rollback of the whole transaction empties the cache.
class QueueRows {
 public:
  QueueRows() = default;
  QueueRows(const QueueRows&) = delete;
  QueueRows& operator=(const QueueRows&) = delete;

  // Installs the commit and rollback hooks on the writer's connection, which has no
  // other such hooks. This must outlive the connection.
  void Attach(sqlite::Db& db);

  // The cached row (nullopt inside: no such queue), or nullptr: read it from SQL.
  const std::optional<QueueRow>* Find(const std::string& name) const;
  void Put(const std::string& name, const std::optional<QueueRow>& row);
  // A queue row is about to change in the open transaction.
  void Changed();

  size_t SizeForTesting() const { return rows_.size(); }

 private:
  static int OnCommit(void* self);
  static void OnRollback(void* self);

  std::map<std::string, std::optional<QueueRow>, std::less<>> rows_;
  bool changed_in_tx_ = false;  // invariant 2
};

}  // namespace sluice
