// Keeps the WAL short without stalling the writer: the writer connection's automatic
// checkpoints are turned off (a checkpoint inside a COMMIT fsyncs the database file
// and would hold up every request in that batch), and this thread runs PASSIVE
// checkpoints on its own connection whenever the writer reports a long WAL.
//
// Under a steady stream of commits a background checkpoint never catches up: it copies
// the frames that were there when it began, and by its end the writer has appended
// more. SQLite starts the WAL over from its beginning only once every frame has been
// copied, so the file would grow without end (and appending to a growing file costs far
// more than overwriting one: new pages, new blocks, a new size to flush). So this
// thread passes again until only a short tail is left, flushes the database file
// itself (SQLite does so only in a checkpoint that copies the whole WAL), and then the
// writer copies the rest after its next commit, once that commit's callers heard back
// and before the next transaction (Writer::SetAfterCommit, CopyTail): the rest of the
// frames and two flushes (the WAL, the database), and the next transaction starts the
// WAL over.
// Thread-safe: the WAL hook runs inside the writer connection's COMMIT, under the
// writer's lock (whichever thread commits).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/sqlite/sqlite.h"

namespace sluice {

class Checkpointer {
 public:
  // Installs a WAL hook on `writer_db` and starts the thread on its own connection.
  Checkpointer(const std::string& path, sqlite::Db& writer_db, int wal_pages = 1000);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // The tail: once a background checkpoint has copied most of the WAL, the writer
  // copies what is left on its own connection, after a commit (Writer::SetAfterCommit):
  // TailDue() says a commit found it wanted; CopyTail() copies it. The WAL then starts
  // over with the next transaction. Both on the writer's connection, holding it.
  bool TailDue() const { return tail_due_; }
  void CopyTail(sqlite::Db& writer_db);

 private:
  static int WalHook(void* self, sqlite3* db, const char* name, int pages);
  void Loop();
  // fdatasync of db's file, best effort (the tail's own flush reports a failure).
  void FlushDatabase(sqlite::Db& db);  // thread_ only

  std::string path_;
  const int wal_pages_;
  // A background checkpoint left frames behind: the writer copies them (see above).
  std::atomic<bool> tail_wanted_{false};
  bool tail_due_ = false;           // a commit saw tail_wanted_; under the writer's connection
  std::atomic<int> wal_frames_{0};  // the WAL's length after the writer's last commit
  int pages_at_request_ = 0;        // WAL length at the last request (in the WAL hook only)
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false;    // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  int db_fd_ = -1;         // the database file, for FlushDatabase; thread_ only
  std::thread thread_;
};

}  // namespace sluice
