// Named statements: the parser, and the SQLite driver's file against its list (every
// statement named in code is in the file and prepares on a new database, and the file
// holds nothing the code does not run).
#include "store/statements.h"

#include <catch2/catch.hpp>
#include <set>

#include "store/postgres/pg.h"
#include "store/postgres/pg_store.h"
#include "store/postgres/pg_tx.h"
#include "store/sql_files.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_tx.h"
#include "tests/testutil/pg_server.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

TEST_CASE("Statements are split at their name lines, comments kept, ';' dropped", "[statements]") {
  Statements s(
      "-- a file comment\n"
      "-- name: one\n"
      "-- what one does\n"
      "SELECT 1;\n"
      "\n"
      "-- name: two\n"
      "SELECT 2\n"
      "FROM t;\n",
      "test.sql");
  CHECK(s.Get("one") == "-- what one does\nSELECT 1");
  CHECK(s.Get("two") == "SELECT 2\nFROM t");
  CHECK(s.all().size() == 2);
  CHECK_THROWS_WITH(s.Get("three"), Catch::Contains("test.sql has no statement named three"));
}

TEST_CASE("A statement named twice or empty is refused", "[statements]") {
  CHECK_THROWS_WITH(Statements("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n", "f.sql"),
                    Catch::Contains("named twice"));
  CHECK_THROWS_WITH(Statements("-- name: a\n\n-- name: b\nSELECT 2;\n", "f.sql"),
                    Catch::Contains("a is empty"));
}

// A driver's statement file, and the names in it.
Statements LoadStatementFile(const char* path) {
  auto text = FindSqlFile(path);
  REQUIRE(text);
  return Statements(*text, path);
}

std::set<std::string> NamesIn(const Statements& file) {
  std::set<std::string> names;
  for (const auto& [name, sql] : file.all()) names.insert(name);
  return names;
}

#define SLUICE_NAME(name) in_code.insert(#name);

TEST_CASE("The SQLite driver runs every statement of its file and no other", "[statements]") {
  Statements file = LoadStatementFile("store/sql/sqlite/statements.sql");
  std::set<std::string> in_code;
  SLUICE_SQLITE_STATEMENTS(SLUICE_NAME)
  CHECK(NamesIn(file) == in_code);

  testing::TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("t.db");
  REQUIRE(SqliteStore::Open(options).ok());
  sqlite::Db db(options.path, "FULL", 5000);
  for (const auto& [name, sql] : file.all()) {
    INFO(name);
    CHECK_NOTHROW(db.Prepare(sql));
  }
}

TEST_CASE("The PostgreSQL driver runs every statement of its file and no other", "[postgres]") {
  Statements file = LoadStatementFile("store/sql/postgres/statements.sql");
  std::set<std::string> in_code;
  SLUICE_PG_STATEMENTS(SLUICE_NAME)
  CHECK(NamesIn(file) == in_code);

  PgStoreOptions options;
  options.uri = testing::PgServer::Shared().CreateDatabase();
  REQUIRE(PgStore::Open(options).ok());  // the schema
  pg::Connection conn(options.uri);
  for (const auto& [name, sql] : file.all()) {
    INFO(name);
    CHECK_NOTHROW(conn.Prepare(name, sql));
  }
}

#undef SLUICE_NAME

}  // namespace
}  // namespace sluice
