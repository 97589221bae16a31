// The coalescing WAL VFS (store/wal_vfs.h): one write per commit, every commit readable
// by another connection as soon as it returns, and a write the kernel refuses fails
// the commit instead of being lost in a buffer.
#include "store/sqlite/wal_vfs.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>

#include "store/sqlite/sqlite.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::TempDir;

int64_t Count(sqlite::Db& db) {
  sqlite::Stmt s = db.Prepare("SELECT count(*), coalesce(sum(length(v)), 0) FROM t");
  REQUIRE(s.Step());
  CHECK(s.Int(1) == s.Int(0) * 1500);  // every row whole
  return s.Int(0);
}

// Commits `rows` rows of 1500 bytes each (several pages) in one transaction.
void CommitRows(sqlite::Db& db, int rows) {
  db.Exec("BEGIN IMMEDIATE");
  for (int i = 0; i < rows; ++i) db.Exec("INSERT INTO t (v) VALUES (randomblob(1500))");
  db.Exec("COMMIT");
}

TEST_CASE("The coalescing VFS writes each commit's WAL frames with one write", "[wal_vfs]") {
  TempDir dir;
  const std::string path = dir.File("w.db");
  sqlite::Db writer(path, "NORMAL", 5000, sqlite::RegisterCoalescingWalVfs());
  writer.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)");
  sqlite::Db reader(path, "NORMAL", 5000);  // the default VFS, as the store's readers

  const sqlite::WalWriteCounts before = sqlite::CoalescingWalWriteCounts();
  constexpr int kCommits = 40;
  for (int c = 1; c <= kCommits; ++c) {
    CommitRows(writer, 3);
    // Another connection reads the frames from the file: they are there, whole.
    CHECK(Count(reader) == 3 * c);
  }
  const sqlite::WalWriteCounts after = sqlite::CoalescingWalWriteCounts();
  CHECK(after.issued - before.issued == kCommits);
  // SQLite asked for a header and a page per frame, and each commit has several.
  CHECK(after.requested - before.requested >= 6 * kCommits);
}

TEST_CASE("A WAL write the kernel refuses fails the commit and publishes nothing", "[wal_vfs]") {
  TempDir dir;
  const std::string path = dir.File("f.db");
  sqlite::Db writer(path, "NORMAL", 5000, sqlite::RegisterCoalescingWalVfs());
  writer.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)");
  sqlite::Db reader(path, "NORMAL", 5000);
  CommitRows(writer, 2);
  REQUIRE(Count(reader) == 2);

  // A real write error: the file size limit, just past the WAL's current end, so the
  // next commit's write comes back short (EFBIG) from the kernel.
  struct stat st {};
  REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
  struct rlimit old_limit {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit tight = old_limit;
  tight.rlim_cur = static_cast<rlim_t>(st.st_size) + 100;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &tight) == 0);
  bool failed = false;
  try {
    CommitRows(writer, 2);
  } catch (const sqlite::SqliteError& e) {
    failed = true;
    // EFBIG: SQLITE_IOERR (SQLITE_FULL is for ENOSPC); storage_unavailable either way.
    CHECK(sqlite::ToError(e).code == ErrorCode::kStorageUnavailable);
  }
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  std::signal(SIGXFSZ, old_handler);
  CHECK(failed);
  if (writer.InTransaction()) writer.Exec("ROLLBACK");
  CHECK(Count(reader) == 2);
  CHECK(Count(writer) == 2);

  // With room again, the next commit goes through and is read whole.
  CommitRows(writer, 2);
  CHECK(Count(reader) == 4);
}

}  // namespace
}  // namespace sluice
