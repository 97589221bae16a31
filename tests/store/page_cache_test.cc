// The page cache wrapper (store/sqlite/page_cache.h): a COMMIT after a B-tree split no
// longer hands SQLite's cache a truncation that walks all of it, and a truncation that
// has pages to drop still reaches it. ctest runs each case in a process of its own, in
// which sqlite::Db installs the wrapper before SQLite initializes.
#include "store/sqlite/page_cache.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "store/sqlite/sqlite.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::TempDir;

std::string Value(std::mt19937_64& rng) {
  std::string v(48, 'a');
  for (char& c : v) c = static_cast<char>('a' + rng() % 26);
  return v;
}

int64_t Rows(sqlite::Db& db) {
  sqlite::Stmt s = db.Prepare("SELECT count(*) FROM t");
  REQUIRE(s.Step());
  return s.Int(0);
}

void RequireIntact(sqlite::Db& db) {
  sqlite::Stmt check = db.Prepare("PRAGMA integrity_check");
  REQUIRE(check.Step());
  REQUIRE(check.Text(0) == "ok");
}

// Rows in random order into a table and an index on random text: most transactions
// split leaves, and many of those splits swap two pages' numbers through the lock page.
void InsertRandomly(sqlite::Db& db, std::mt19937_64& rng, int transactions, int rows_each) {
  for (int t = 0; t < transactions; ++t) {
    db.Exec("BEGIN");
    for (int r = 0; r < rows_each; ++r) {
      db.Prepare("INSERT OR IGNORE INTO t (k, v) VALUES (?1, ?2)")
          .Bind(1, static_cast<int64_t>(rng() % 1000000000))
          .Bind(2, Value(rng))
          .Exec();
    }
    db.Exec("COMMIT");
  }
}

TEST_CASE("A commit after a B-tree split does not hand SQLite's cache a truncation",
          "[sqlite][page_cache]") {
  TempDir dir;
  sqlite::Db db(dir.File("p.db"), "NORMAL", 1000);  // installs the wrapper first
  REQUIRE(sqlite::InstallPageCache());
  db.Exec("PRAGMA cache_size=-8192");
  db.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  db.Exec("CREATE INDEX t_v ON t (v)");
  std::mt19937_64 rng(7);
  InsertRandomly(db, rng, 20, 200);  // a tree deep enough to split all the time

  const sqlite::PageCacheStats before = sqlite::GetPageCacheStats();
  constexpr int kTransactions = 200;
  InsertRandomly(db, rng, kTransactions, 50);
  const sqlite::PageCacheStats after = sqlite::GetPageCacheStats();

  // The workload did renumber pages through the lock page (what made every such
  // commit walk the cache before)...
  CHECK(after.lock_page_renumberings - before.lock_page_renumberings >= kTransactions / 4);
  // ...and no commit passed its truncation on: nothing is past the database's end.
  CHECK(after.truncations_skipped - before.truncations_skipped >= kTransactions);
  CHECK(after.truncations_passed - before.truncations_passed == 0);
  RequireIntact(db);
}

TEST_CASE("A rollback still drops the cached pages past the database's end",
          "[sqlite][page_cache]") {
  TempDir dir;
  const std::string path = dir.File("r.db");
  sqlite::Db db(path, "NORMAL", 1000);
  REQUIRE(sqlite::InstallPageCache());
  db.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  db.Exec("CREATE INDEX t_v ON t (v)");
  std::mt19937_64 rng(11);
  InsertRandomly(db, rng, 5, 200);
  const int64_t kept = Rows(db);

  // A transaction that grows the file by many pages, rolled back: SQLite then asks its
  // cache to drop every page past the restored end, and the wrapper must pass that on.
  const sqlite::PageCacheStats before = sqlite::GetPageCacheStats();
  db.Exec("BEGIN");
  for (int r = 0; r < 2000; ++r) {
    db.Prepare("INSERT INTO t (v) VALUES (?1)").Bind(1, Value(rng)).Exec();
  }
  db.Exec("ROLLBACK");
  const sqlite::PageCacheStats after = sqlite::GetPageCacheStats();
  CHECK(after.truncations_passed - before.truncations_passed >= 1);

  // The file grows again over those page numbers: what is read back is the new rows.
  InsertRandomly(db, rng, 10, 200);
  const int64_t total = Rows(db);
  CHECK(total > kept);
  RequireIntact(db);
  sqlite::Db other(path, "NORMAL", 1000);  // a cold cache agrees
  CHECK(Rows(other) == total);
  RequireIntact(other);
}

}  // namespace
}  // namespace sluice
