// One process per SQLite file (store/sqlite/file_lock.h): a second store on a file that
// a store holds is refused before it creates or writes anything, naming the holder; once
// the first closes, the file opens again. Other spellings of the same file are the same
// file. (Two real sluiced, and kill -9: tests/system/single_instance_test.cc.)
#include "store/sqlite/file_lock.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::FileExists;
using testing::ReadFile;
using testing::TempDir;

Result<std::unique_ptr<SqliteStore>> OpenAt(const std::string& path) {
  SqliteStoreOptions options;
  options.path = path;
  return SqliteStore::Open(options);
}

std::unique_ptr<SqliteStore> MustOpen(const std::string& path) {
  auto opened = OpenAt(path);
  INFO((opened.ok() ? std::string() : opened.error().detail));
  REQUIRE(opened.ok());
  return std::move(opened.value());
}

QueuePolicy Policy() {
  QueuePolicy p;
  p.bucket.rate_milli = 1000;
  return p;
}

TEST_CASE("a second SQLite store on one file is refused, naming the holder, and writes nothing",
          "[sqlite]") {
  TempDir dir;
  const std::string path = dir.File("one.db");
  auto first = MustOpen(path);
  REQUIRE(first->PutQueue("export", Policy(), 1000).ok());

  struct stat before {};
  REQUIRE(stat(path.c_str(), &before) == 0);
  const std::string bytes = ReadFile(path);
  const std::string wal = ReadFile(path + "-wal");

  auto second = OpenAt(path);
  REQUIRE_FALSE(second.ok());
  const std::string& detail = second.error().detail;
  INFO(detail);
  CHECK(second.error().code == ErrorCode::kConflict);
  CHECK(detail.find("database " + path + " is in use by another sluiced") != std::string::npos);
  CHECK(detail.find("pid " + std::to_string(getpid())) != std::string::npos);
  CHECK(detail.find("SQLite allows one server per file") != std::string::npos);
  CHECK(detail.find("--db postgres://") != std::string::npos);

  struct stat after {};
  REQUIRE(stat(path.c_str(), &after) == 0);
  CHECK(ReadFile(path) == bytes);
  CHECK(ReadFile(path + "-wal") == wal);
  CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);

  // The first store is unharmed by the attempt.
  CHECK(first->GetQueue("export").ok());
  REQUIRE(first->PutQueue("export", Policy(), 2000).ok());

  // Closing releases the lock: the file opens again, with what the first wrote.
  first.reset();
  auto again = MustOpen(path);
  auto q = again->GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().version == 2);
}

TEST_CASE("a store refused by the lock creates no database file", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.File("new.db");
  auto held = SqliteFileLock::Acquire(path);
  REQUIRE(held.ok());
  CHECK(held.value()->path() == SqliteFileLock::LockPathFor(path));

  auto refused = OpenAt(path);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kConflict);
  CHECK_FALSE(FileExists(path));
  CHECK_FALSE(FileExists(path + "-wal"));
  CHECK_FALSE(FileExists(path + "-shm"));

  held.value().reset();
  MustOpen(path);
  CHECK(FileExists(path));
}

TEST_CASE("the lock file names its holder and is the same for every spelling of the file",
          "[sqlite]") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  auto store = MustOpen(path);

  const std::string lock_path = SqliteFileLock::LockPathFor(path);
  CHECK(lock_path.size() > 5);
  CHECK(lock_path.substr(lock_path.size() - 10) == "/a.db.lock");
  const std::string text = ReadFile(lock_path);
  CHECK(text.find("pid " + std::to_string(getpid()) + "\n") == 0);
  CHECK(text.find("\nhost ") != std::string::npos);
  CHECK(text.find("\nsince ") != std::string::npos);

  // Through a symlink, a "./" and a "..": the same file, so the same lock.
  REQUIRE(symlink(path.c_str(), dir.File("link.db").c_str()) == 0);
  REQUIRE(mkdir(dir.File("sub").c_str(), 0755) == 0);
  for (const std::string& other :
       {dir.File("link.db"), dir.path() + "/./a.db", dir.File("sub") + "/../a.db"}) {
    INFO(other);
    CHECK(SqliteFileLock::LockPathFor(other) == lock_path);
    auto refused = OpenAt(other);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kConflict);
  }

  // A file not yet there resolves through its directory.
  CHECK(SqliteFileLock::LockPathFor(dir.File("sub") + "/../b.db") ==
        lock_path.substr(0, lock_path.size() - 9) + "b.db.lock");
  // SQLite's private databases take no lock.
  CHECK(SqliteFileLock::LockPathFor(":memory:").empty());
  CHECK(SqliteFileLock::LockPathFor("").empty());

  // Released, the lock file stays (removing it could let two holders lock two files of
  // one name) and names nobody.
  store.reset();
  CHECK(FileExists(lock_path));
  CHECK(ReadFile(lock_path).empty());
}

}  // namespace
}  // namespace sluice
