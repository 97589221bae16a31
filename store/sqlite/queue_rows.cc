#include "store/sqlite/queue_rows.h"

namespace sluice {

void QueueRows::Attach(sqlite::Db& db) {
  sqlite3_commit_hook(db.raw(), &QueueRows::OnCommit, this);
  sqlite3_rollback_hook(db.raw(), &QueueRows::OnRollback, this);
}

const std::optional<QueueRow>* QueueRows::Find(const std::string& name) const {
  if (changed_in_tx_) return nullptr;
  auto it = rows_.find(name);
  return it == rows_.end() ? nullptr : &it->second;
}

void QueueRows::Put(const std::string& name, const std::optional<QueueRow>& row) {
  if (changed_in_tx_) return;
  if (rows_.size() >= 4096) rows_.clear();  // bounded: a burst of unknown names
  rows_.insert_or_assign(name, row);
}

void QueueRows::Changed() {
  rows_.clear();
  changed_in_tx_ = true;
}

// What committed is what the rows read since Changed() would be: reading may resume.
// (Should the COMMIT itself then fail and leave the transaction open, its end is a
// rollback, which empties the cache.)
int QueueRows::OnCommit(void* self) {
  static_cast<QueueRows*>(self)->changed_in_tx_ = false;
  return 0;  // go on with the commit
}

void QueueRows::OnRollback(void* self) {
  auto* rows = static_cast<QueueRows*>(self);
  rows->rows_.clear();
  rows->changed_in_tx_ = false;
}

}  // namespace sluice
