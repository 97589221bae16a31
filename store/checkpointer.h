// Keeps the WAL short without stalling the writer: the writer connection's automatic
// checkpoints are turned off (a checkpoint inside a COMMIT fsyncs the database file
// and would hold up every request in that batch), and this thread runs PASSIVE
// checkpoints on its own connection whenever the writer reports a long WAL.
// Thread-safe: OnCommit is called from the writer thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/sqlite.h"

namespace sluice {

class Checkpointer {
 public:
  // Installs a WAL hook on `writer_db` and starts the thread on its own connection.
  Checkpointer(const std::string& path, sqlite::Db& writer_db, int wal_pages = 1000);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

 private:
  static int WalHook(void* self, sqlite3* db, const char* name, int pages);
  void Loop();

  std::string path_;
  const int wal_pages_;
  int pages_at_request_ = 0;  // WAL length at the last request (writer thread only)
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false;    // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sluice
