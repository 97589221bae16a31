#include "store/copy/sqlite_to_postgres.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "common/time.h"
#include "store/postgres/pg.h"
#include "store/postgres/pg_schema.h"
#include "store/sql_files.h"
#include "store/sqlite/file_lock.h"
#include "store/sqlite/sqlite.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/statements.h"

namespace sluice {
namespace {

using nlohmann::json;

constexpr const char* kExportFile = "store/sql/sqlite/export.sql";
constexpr const char* kImportFile = "store/sql/postgres/import.sql";

// The tables copied, in the order rows go in (buckets after their queues) and the order
// of import.sql's row_counts.
constexpr const char* kTables[] = {"queues", "buckets",          "jobs",
                                   "tokens", "idempotency_keys", "limit_layers"};
constexpr size_t kTableCount = sizeof kTables / sizeof kTables[0];

// A refusal or failure of the copy itself, with its code.
struct CopyError : std::runtime_error {
  CopyError(ErrorCode c, const std::string& what) : std::runtime_error(what), code(c) {}
  ErrorCode code;
};

// Whether `path` is a SQLite database with sluice's jobs table, looked at read-only so
// that a file that is not one is left exactly as it was.
bool HasJobsTable(const std::string& path) {
  sqlite::ConfigureOnce();
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  bool found = false;
  std::string why;
  if (rc == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    rc =
        sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'",
                           -1, &stmt, nullptr);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(stmt);
      found = rc == SQLITE_ROW;
      if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) why = sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
  } else {
    why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  }
  sqlite3_close(db);
  if (rc != SQLITE_OK) {
    throw CopyError(ErrorCode::kBadRequest, path + " is not a SQLite database: " + why);
  }
  return found;
}

// Every column of `table` is read by export.sql's block of that name.
void CheckColumns(sqlite::Db& db, const Statements& exported, const std::string& table) {
  std::set<std::string> read;
  {
    sqlite::Stmt s = db.Prepare(exported.Get(table));
    for (int c = 0; c < s.ColumnCount(); ++c) read.insert(s.ColumnName(c));
  }
  std::string missing;
  sqlite::Stmt s = db.Prepare(exported.Get("columns_of"));
  s.Bind(1, table);
  while (s.Step()) {
    if (read.count(s.Text(0)) == 0) missing += (missing.empty() ? "" : ", ") + s.Text(0);
  }
  if (!missing.empty()) {
    throw CopyError(ErrorCode::kInternal, "table " + table + " has columns " + kExportFile +
                                              " does not copy: " + missing);
  }
}

std::vector<int64_t> RowCounts(pg::Connection& conn, const Statements& imported) {
  pg::Rows r = conn.Exec(imported.Get("row_counts"));
  std::vector<int64_t> counts;
  for (size_t i = 0; i < kTableCount; ++i) counts.push_back(r.Int(0, static_cast<int>(i)));
  return counts;
}

// Refuses a target that holds any row: "3 queues, 120 jobs".
void RequireEmpty(const std::vector<int64_t>& counts) {
  std::string held;
  for (size_t i = 0; i < kTableCount; ++i) {
    if (counts[i] == 0) continue;
    held += (held.empty() ? "" : ", ") + std::to_string(counts[i]) + " " + kTables[i];
  }
  if (held.empty()) return;
  throw CopyError(ErrorCode::kConflict,
                  "the PostgreSQL database already holds sluice data (" + held +
                      "): copy-db fills only an empty database; nothing was written");
}

// Copies one table, in batches of JSON rows; returns the rows read.
int64_t CopyTable(sqlite::Db& src, const Statements& exported, pg::Connection& dst,
                  const Statements& imported, const std::string& table,
                  const CopyDbOptions& options) {
  sqlite::Stmt s = src.Prepare(exported.Get(table));
  const int columns = s.ColumnCount();
  std::vector<std::string> names;
  for (int c = 0; c < columns; ++c) names.push_back(s.ColumnName(c));
  const std::string& insert = imported.Get(table);

  json batch = json::array();
  size_t bytes = 0;
  int64_t rows = 0;
  auto flush = [&] {
    if (batch.empty()) return;
    std::string text;
    try {
      text = batch.dump(-1, ' ', false, json::error_handler_t::strict);
    } catch (const json::exception&) {
      throw CopyError(ErrorCode::kInternal,
                      "table " + table + ", rows " + std::to_string(rows - batch.size() + 1) +
                          " to " + std::to_string(rows) +
                          ": a text value is not valid UTF-8, which PostgreSQL refuses");
    }
    dst.ExecParams(insert, pg::Params(text));
    batch = json::array();
    bytes = 0;
  };
  while (s.Step()) {
    json row = json::object();
    for (int c = 0; c < columns; ++c) {
      switch (s.Type(c)) {
        case SQLITE_INTEGER:
          row[names[c]] = s.Int(c);
          bytes += 20;
          break;
        case SQLITE_TEXT: {
          std::string text = s.Text(c);
          bytes += text.size() + 2;
          row[names[c]] = std::move(text);
          break;
        }
        case SQLITE_NULL:
          row[names[c]] = nullptr;
          break;
        default:
          throw CopyError(ErrorCode::kInternal,
                          "table " + table + ", row " + std::to_string(rows + 1) + ": column " +
                              names[c] + " is neither integer, text nor NULL");
      }
    }
    batch.push_back(std::move(row));
    ++rows;
    if (batch.size() >= options.batch_rows || bytes >= options.batch_bytes) flush();
  }
  flush();
  return rows;
}

// The server, or the way to it, failed (rather than a statement).
bool Unreachable(const pg::PgError& e) {
  const std::string cls = e.sqlstate().substr(0, 2);
  return e.sqlstate().empty() || cls == "08" || cls == "57" || cls == "53" || cls == "58";
}

void RollbackQuietly(pg::Connection& conn) {
  if (!conn.ok() || !conn.InTransaction()) return;
  try {
    conn.Exec("ROLLBACK");
  } catch (const pg::PgError&) {  // the error that brought us here says more
  }
}

Result<CopyDbReport> Copy(const CopyDbOptions& options) {
  const Statements exported(FindSqlFile(kExportFile).value_or(""), kExportFile);
  const Statements imported(FindSqlFile(kImportFile).value_or(""), kImportFile);
  const std::string& path = options.sqlite_path;

  // 1. No sluiced on the file, now or during the copy (a file that is not there gets no
  // lock file either).
  auto is_file = [&path] {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  if (!is_file()) return MakeError(ErrorCode::kNotFound, "no SQLite database at " + path);
  auto lock = SqliteFileLock::Acquire(path);
  if (!lock.ok()) return lock.error();

  // 2. The source: a sluice database, at this binary's schema version.
  if (!is_file()) return MakeError(ErrorCode::kNotFound, "no SQLite database at " + path);
  if (!HasJobsTable(path)) {
    throw CopyError(ErrorCode::kBadRequest,
                    path + " is not a sluice database (it has no jobs table)");
  }
  CopyDbReport report;
  sqlite::Db src(path, "FULL", 5000);
  report.sqlite_version = PrepareSqliteSchema(src, WallNowMicros());
  for (const char* table : kTables) CheckColumns(src, exported, table);

  // 3. The target: no rows anywhere, checked before anything is written; then its schema.
  pg::Connection dst(options.pg_uri);
  if (dst.Exec(imported.Get("has_schema")).Bool(0, 0)) RequireEmpty(RowCounts(dst, imported));
  report.postgres_version = PreparePgSchema(dst, WallNowMicros());

  // 4. One transaction on each side: a snapshot of the source, all or nothing on the target.
  dst.Exec("BEGIN");
  src.Exec("BEGIN");
  try {
    dst.Exec(imported.Get("lock_tables"));
    RequireEmpty(RowCounts(dst, imported));  // nobody wrote since the check above
    for (const char* table : kTables) {
      report.tables.push_back(
          CopiedTable{table, CopyTable(src, exported, dst, imported, table, options)});
    }
    dst.Exec(imported.Get("restart_job_seq"));
    const std::vector<int64_t> counts = RowCounts(dst, imported);
    for (size_t i = 0; i < kTableCount; ++i) {
      if (counts[i] != report.tables[i].rows) {
        throw CopyError(ErrorCode::kInternal, std::string("table ") + kTables[i] + ": " +
                                                  std::to_string(report.tables[i].rows) +
                                                  " rows read, " + std::to_string(counts[i]) +
                                                  " in PostgreSQL");
      }
    }
  } catch (const std::exception& e) {
    RollbackQuietly(dst);
    if (src.InTransaction()) src.Exec("ROLLBACK");
    const auto* copy = dynamic_cast<const CopyError*>(&e);
    if (copy && copy->code == ErrorCode::kConflict) throw;
    const auto* pg = dynamic_cast<const pg::PgError*>(&e);
    const ErrorCode code = copy                     ? copy->code
                           : pg && Unreachable(*pg) ? ErrorCode::kStorageUnavailable
                                                    : ErrorCode::kInternal;
    throw CopyError(code, std::string(pg ? "PostgreSQL: " : "") + e.what() +
                              "; the copy was rolled back: the target holds none of it");
  }
  try {
    dst.Exec("COMMIT");
  } catch (const pg::PgError& e) {
    // The server may have committed before the connection broke: say so, not "rolled back".
    throw CopyError(Unreachable(e) ? ErrorCode::kStorageUnavailable : ErrorCode::kInternal,
                    std::string("PostgreSQL: COMMIT failed: ") + e.what() +
                        "; if it went through, the target holds the whole copy (another "
                        "copy-db refuses it), else nothing of it");
  }
  src.Exec("COMMIT");
  return report;
}

}  // namespace

Result<CopyDbReport> CopySqliteToPostgres(const CopyDbOptions& options) {
  try {
    return Copy(options);
  } catch (const CopyError& e) {
    return MakeError(e.code, e.what());
  } catch (const sqlite::SqliteError& e) {
    return MakeError(ErrorCode::kStorageUnavailable,
                     "SQLite database " + options.sqlite_path + ": " + e.what());
  } catch (const pg::PgError& e) {
    return MakeError(Unreachable(e) ? ErrorCode::kStorageUnavailable : ErrorCode::kInternal,
                     std::string("PostgreSQL: ") + e.what());
  } catch (const std::exception& e) {  // a statement file that does not parse: a bug
    return MakeError(ErrorCode::kInternal, std::string("copy-db: ") + e.what());
  }
}

}  // namespace sluice
