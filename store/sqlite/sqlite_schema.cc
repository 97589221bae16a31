#include "store/sqlite/sqlite_schema.h"

#include <string>

#include "store/migrations.h"
#include "store/sql_files.h"
#include "store/statements.h"

namespace sluice {
namespace {

constexpr const char* kMigrateFile = "store/sql/sqlite/migrate.sql";

// Runs `script` and records `version` in one transaction.
void Apply(sqlite::Db& db, const Statements& sql, std::string_view script, int64_t version,
           const std::string& name, Micros now) {
  db.Exec("BEGIN IMMEDIATE");
  try {
    db.Exec(std::string(script));
    db.Prepare(sql.Get("record_migration")).BindAll(version, name, now).Exec();
    db.Exec("COMMIT");
  } catch (...) {
    if (db.InTransaction()) db.Exec("ROLLBACK");
    throw;
  }
}

}  // namespace

int64_t PrepareSqliteSchema(sqlite::Db& db, Micros now) {
  const Statements sql(FindSqlFile(kMigrateFile).value_or(""), kMigrateFile);
  const std::vector<Migration> migrations = MigrationsOf("sqlite");
  const int64_t latest = LatestVersion(migrations);

  db.Exec(sql.Get("create_schema_migrations"));
  int64_t version = 0;
  {
    sqlite::Stmt s = db.Prepare(sql.Get("current_version"));
    if (s.Step()) version = s.Int(0);
  }
  if (version == 0) {
    bool made_before_versions = false;
    {
      sqlite::Stmt s = db.Prepare(sql.Get("has_jobs_table"));
      made_before_versions = s.Step();
    }
    if (made_before_versions) {
      // The schema of 2026-12-01, when versions began: version 1.
      Apply(db, sql, "", 1, "baseline", now);
      version = 1;
    } else {
      Apply(db, sql, FindSqlFile("schema.sql").value_or(""), latest, "schema.sql", now);
      return latest;
    }
  }
  if (version > latest) {
    throw sqlite::SqliteError(SQLITE_ERROR, "the database is at schema version " +
                                                std::to_string(version) +
                                                ", newer than this sluiced knows (" +
                                                std::to_string(latest) + "): upgrade sluiced");
  }
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    Apply(db, sql, m.text, m.version, m.name, now);
    version = m.version;
  }
  return version;
}

}  // namespace sluice
