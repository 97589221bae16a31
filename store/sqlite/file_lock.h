// One process per SQLite file: an exclusive flock(2) on a sidecar file "<db>.lock" next
// to the database, taken before the database is opened (so before anything is created,
// migrated or written) and held for the store's lifetime. The kernel releases it when
// the holder's descriptor closes, the holder dies included (kill -9): there is no stale
// lock to clean up by hand. flock locks belong to an open file description, so a second
// store in the same process is refused too, and they do not meet SQLite's own fcntl(2)
// locks on the database file. The holder writes who it is (pid, host, since when) into
// the lock file, so that a refusal names it. The lock file is left in place when the
// holder lets go: removing it would let two processes hold locks on two different files
// of the same name.
//
// The database path is resolved first (symlinks, "./", relative paths), so two spellings
// of one file take one lock. ":memory:" and "" (SQLite's private databases) take none.
// Thread-compatible; the lock is released when the object dies.
#pragma once

#include <memory>
#include <string>

#include "common/error.h"

namespace sluice {

class SqliteFileLock {
 public:
  // Takes the lock of the database file `db_path`. Fails with conflict ("database
  // ./x.db is in use by another sluiced (pid 1234 ...) ...") when another holder has it,
  // storage_unavailable when the lock file cannot be opened or locked.
  static Result<std::unique_ptr<SqliteFileLock>> Acquire(const std::string& db_path);
  ~SqliteFileLock();
  SqliteFileLock(const SqliteFileLock&) = delete;
  SqliteFileLock& operator=(const SqliteFileLock&) = delete;

  // The lock file ("" for a database that takes no lock).
  const std::string& path() const { return path_; }

  // The lock file of the database `db_path` (resolved as Acquire resolves it); "" for
  // ":memory:" and "".
  static std::string LockPathFor(const std::string& db_path);

 private:
  SqliteFileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
};

}  // namespace sluice
