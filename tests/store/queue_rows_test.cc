// The writer's cache of queue rows (store/sqlite/queue_rows.h): exact across commits,
// failed operations and rolled-back transactions.
#include "store/sqlite/queue_rows.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite/sqlite.h"
#include "store/sqlite/sqlite_driver.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::TempDir;

QueueRow Row(const std::string& name, const std::string& policy) {
  return QueueRow{name, policy, 1, false};
}

std::optional<std::string> CachedPolicy(const QueueRows& rows, const std::string& name) {
  const std::optional<QueueRow>* row = rows.Find(name);
  if (!row || !*row) return std::nullopt;
  return (*row)->policy;
}

TEST_CASE("The queue rows cache stops serving at a change until its transaction ends",
          "[queue_rows]") {
  TempDir dir;
  sqlite::Db db(dir.File("q.db"), "NORMAL", 5000);
  db.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
  QueueRows rows;
  rows.Attach(db);

  rows.Put("a", Row("a", "A1"));
  rows.Put("gone", std::nullopt);
  CHECK(CachedPolicy(rows, "a") == "A1");
  REQUIRE(rows.Find("gone") != nullptr);
  CHECK_FALSE(rows.Find("gone")->has_value());  // "no such queue" is cached too
  CHECK(rows.Find("b") == nullptr);

  SECTION("a change, then a commit") {
    db.Exec("BEGIN IMMEDIATE");
    db.Exec("INSERT INTO t DEFAULT VALUES");
    rows.Changed();
    CHECK(rows.Find("a") == nullptr);
    rows.Put("a", Row("a", "A2 uncommitted"));  // ignored until the transaction ends
    CHECK(rows.Find("a") == nullptr);
    db.Exec("COMMIT");
    CHECK(rows.Find("a") == nullptr);  // emptied at the change
    rows.Put("a", Row("a", "A2"));
    CHECK(CachedPolicy(rows, "a") == "A2");
  }
  SECTION("a change, then a rollback") {
    db.Exec("BEGIN IMMEDIATE");
    db.Exec("INSERT INTO t DEFAULT VALUES");
    rows.Changed();
    rows.Put("a", Row("a", "A2 rolled back"));
    db.Exec("ROLLBACK");
    CHECK(rows.Find("a") == nullptr);
    rows.Put("a", Row("a", "A1"));
    CHECK(CachedPolicy(rows, "a") == "A1");
  }
  SECTION("a rollback without a change empties the cache too") {
    db.Exec("BEGIN IMMEDIATE");
    db.Exec("INSERT INTO t DEFAULT VALUES");
    CHECK(CachedPolicy(rows, "a") == "A1");
    db.Exec("ROLLBACK");
    CHECK(rows.Find("a") == nullptr);
    CHECK(rows.SizeForTesting() == 0);
  }
}

// Through the driver: what a write operation reads is the queue as the database holds it.
TEST_CASE("The SQLite writer reads a queue's row as changed, and as before a failed change",
          "[queue_rows]") {
  TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("s.db");
  options.synchronous = "NORMAL";
  auto opened = SqliteDriver::Open(options);
  REQUIRE(opened.ok());
  SqliteDriver& driver = *opened.value();

  auto write = [&](const Driver::Op& op) {
    return driver.WriteAndWait(op, Driver::Sync::kCommitted);
  };
  auto policy_of = [&](const std::string& name) {
    std::optional<QueueRow> row;
    REQUIRE_FALSE(write([&](Tx& tx) -> std::optional<Error> {
      row = tx.LoadQueue(name);
      return std::nullopt;
    }));
    return row ? std::optional<std::string>(row->policy + (row->paused ? " paused" : ""))
               : std::nullopt;
  };

  CHECK(policy_of("q") == std::nullopt);  // read, and remembered as missing
  REQUIRE_FALSE(write([](Tx& tx) -> std::optional<Error> {
    tx.UpsertQueue("q", "{\"v\":1}", 1);
    return std::nullopt;
  }));
  CHECK(policy_of("q") == "{\"v\":1}");

  // An operation that changes the queue, reads it back (its own change), then fails:
  // its savepoint is rolled back, and so is what it read.
  std::optional<std::string> seen_inside;
  std::optional<Error> failed = write([&](Tx& tx) -> std::optional<Error> {
    tx.UpsertQueue("q", "{\"v\":2}", 2);
    seen_inside = tx.LoadQueue("q")->policy;
    return MakeError(ErrorCode::kConflict, "changed my mind");
  });
  REQUIRE(failed);
  CHECK(seen_inside == "{\"v\":2}");
  CHECK(policy_of("q") == "{\"v\":1}");

  // The same when the change is not the transaction's first operation: only its
  // savepoint is rolled back, and the transaction commits the first one.
  std::vector<Driver::Op> ops;
  ops.push_back([](Tx& tx) -> std::optional<Error> {
    CHECK(tx.LoadQueue("q")->policy == "{\"v\":1}");
    return std::nullopt;
  });
  ops.push_back([](Tx& tx) -> std::optional<Error> {
    tx.UpsertQueue("q", "{\"v\":3}", 3);
    CHECK(tx.LoadQueue("q")->policy == "{\"v\":3}");
    return MakeError(ErrorCode::kConflict, "changed my mind again");
  });
  std::vector<std::optional<Error>> results =
      driver.WriteEachAndWait(std::move(ops), Driver::Sync::kCommitted);
  REQUIRE(results.size() == 2);
  CHECK_FALSE(results[0]);
  CHECK(results[1]);
  CHECK(policy_of("q") == "{\"v\":1}");

  REQUIRE_FALSE(write([](Tx& tx) -> std::optional<Error> {
    CHECK(tx.SetPaused("q", true, 3));
    return std::nullopt;
  }));
  CHECK(policy_of("q") == "{\"v\":1} paused");
  REQUIRE_FALSE(write([](Tx& tx) -> std::optional<Error> {
    CHECK(tx.DeleteQueue("q"));
    return std::nullopt;
  }));
  CHECK(policy_of("q") == std::nullopt);
}

}  // namespace
}  // namespace sluice
