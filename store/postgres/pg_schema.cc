#include "store/postgres/pg_schema.h"

#include <optional>
#include <string>

#include "store/migrations.h"
#include "store/sql_files.h"
#include "store/statements.h"

namespace sluice {
namespace {

constexpr const char* kMigrateFile = "store/sql/postgres/migrate.sql";
constexpr const char* kSchemaFile = "store/sql/postgres/schema.sql";

}  // namespace

int64_t PreparePgSchema(pg::Connection& conn, Micros now) {
  const Statements sql(FindSqlFile(kMigrateFile).value_or(""), kMigrateFile);
  const std::vector<Migration> migrations = MigrationsOf("postgres");
  const int64_t latest = LatestVersion(migrations);

  // One step per transaction, each deciding under the lock what is left to do: another
  // process may have done some of it while this one waited.
  while (true) {
    conn.Exec("BEGIN");
    try {
      conn.Exec(sql.Get("lock_migrations"));
      conn.Exec(sql.Get("create_schema_migrations"));
      const int64_t version = conn.Exec(sql.Get("current_version")).Int(0, 0);
      if (version > latest) {
        throw pg::PgError("", "the database is at schema version " + std::to_string(version) +
                                  ", newer than this sluiced knows (" + std::to_string(latest) +
                                  "): upgrade sluiced");
      }
      if (version == latest) {
        conn.Exec("COMMIT");
        return version;
      }
      std::string_view script;
      int64_t to = 0;
      std::string name;
      if (version == 0) {
        script = FindSqlFile(kSchemaFile).value_or("");
        to = latest;
        name = "schema.sql";
      } else {
        for (const Migration& m : migrations) {
          if (m.version > version) {
            script = m.text;
            to = m.version;
            name = m.name;
            break;
          }
        }
      }
      if (script.empty() && version == 0) {
        throw pg::PgError("", std::string(kSchemaFile) + " is not compiled in");
      }
      if (!script.empty()) conn.Exec(std::string(script));
      conn.ExecParams(sql.Get("record_migration"), pg::Params(to, name, now));
      conn.Exec("COMMIT");
    } catch (...) {
      if (conn.ok() && conn.InTransaction()) {
        try {
          conn.Exec("ROLLBACK");
        } catch (const pg::PgError&) {  // the step's own error says more
        }
      }
      throw;
    }
  }
}

}  // namespace sluice
