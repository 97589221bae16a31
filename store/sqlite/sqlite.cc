#include "store/sqlite/sqlite.h"

#include <mutex>

#include "store/sqlite/page_cache.h"

namespace sluice::sqlite {
namespace {

[[noreturn]] void Throw(sqlite3* db, int rc, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw SqliteError(rc, msg);
}

}  // namespace

Error ToError(const SqliteError& e) {
  switch (e.code() & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_PROTOCOL:
    case SQLITE_NOMEM:
      return MakeError(ErrorCode::kStorageUnavailable, "storage is unavailable; try again later");
    default:
      return MakeError(ErrorCode::kInternal, std::string("store: ") + e.what());
  }
}

Stmt& Stmt::Bind(int i, int64_t v) {
  if (int rc = sqlite3_bind_int64(stmt_, i, v); rc != SQLITE_OK) Throw(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::Bind(int i, std::string_view v) {
  if (int rc = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
      rc != SQLITE_OK) {
    Throw(db_, rc, "bind");
  }
  return *this;
}

Stmt& Stmt::Bind(int i, std::optional<int64_t> v) { return v ? Bind(i, *v) : BindNull(i); }

Stmt& Stmt::Bind(int i, const std::optional<std::string>& v) {
  return v ? Bind(i, std::string_view(*v)) : BindNull(i);
}

Stmt& Stmt::BindNull(int i) {
  if (int rc = sqlite3_bind_null(stmt_, i); rc != SQLITE_OK) Throw(db_, rc, "bind");
  return *this;
}

bool Stmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Throw(db_, rc, "step");
}

int Stmt::Exec() {
  while (Step()) {
  }
  return sqlite3_changes(db_);
}

std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::optional<int64_t> Stmt::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

std::optional<std::string> Stmt::OptText(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Text(col);
}

void ConfigureOnce() {
  // SQLite's memory statistics take a global mutex on every allocation, on every
  // connection; nothing here reads them. The page cache: see page_cache.h. Both are
  // only possible before SQLite initializes.
  static std::once_flag configured;
  std::call_once(configured, [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    InstallPageCache();
  });
}

Db::Db(const std::string& path, const std::string& synchronous, int busy_timeout_ms,
       const char* vfs) {
  ConfigureOnce();
  int rc = sqlite3_open_v2(path.c_str(), &db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(rc, "open " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  Exec("PRAGMA journal_mode=WAL");
  Exec("PRAGMA synchronous=" + synchronous);
  Exec("PRAGMA foreign_keys=ON");
}

Db::~Db() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

Stmt Db::Prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) Throw(db_, rc, "prepare");
    it = cache_.emplace(std::string(sql), stmt).first;
  }
  return Stmt(db_, it->second);
}

void Db::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError(rc, sql.substr(0, 40) + ": " + msg);
  }
}

}  // namespace sluice::sqlite
