// Named statements: the parser, and the SQLite driver's file against its list (every
// statement named in code is in the file and prepares on a new database, and the file
// holds nothing the code does not run).
#include "store/statements.h"

#include <catch2/catch.hpp>
#include <set>

#include "store/sql_files.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_tx.h"
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

TEST_CASE("The SQLite driver runs every statement of its file and no other", "[statements]") {
  const char* kFile = "store/sql/sqlite/statements.sql";
  auto text = FindSqlFile(kFile);
  REQUIRE(text);
  Statements file(*text, kFile);
  std::set<std::string> in_file;
  for (const auto& [name, sql] : file.all()) in_file.insert(name);
  std::set<std::string> in_code;
#define SLUICE_NAME(name) in_code.insert(#name);
  SLUICE_SQLITE_STATEMENTS(SLUICE_NAME)
#undef SLUICE_NAME
  CHECK(in_file == in_code);

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

}  // namespace
}  // namespace sluice
