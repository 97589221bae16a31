// Thin RAII wrappers over the SQLite C API, private to store/. Errors inside the store
// are thrown as SqliteError and turned into sluice::Error values at the store boundary.
// A Db is used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/error.h"

namespace sluice::sqlite {

class SqliteError : public std::runtime_error {
 public:
  SqliteError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Storage faults (full disk, I/O, busy) become storage_unavailable; anything else is a bug.
Error ToError(const SqliteError& e);

class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Stmt() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Stmt& Bind(int i, std::string_view v);
  Stmt& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, std::optional<int64_t> v);
  Stmt& Bind(int i, const std::optional<std::string>& v);
  Stmt& BindNull(int i);

  template <typename... Args>
  Stmt& BindAll(Args&&... args) {
    int i = 1;
    (Bind(i++, std::forward<Args>(args)), ...);
    return *this;
  }

  // True while a row is available.
  bool Step();
  // Runs to completion; returns the number of rows changed.
  int Exec();

  int ColumnCount() const { return sqlite3_column_count(stmt_); }
  std::string ColumnName(int col) const { return sqlite3_column_name(stmt_, col); }
  int Type(int col) const { return sqlite3_column_type(stmt_, col); }  // SQLITE_INTEGER...

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::optional<int64_t> OptInt(int col) const;
  std::optional<std::string> OptText(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

// Process-wide SQLite settings that must precede SQLite's initialization; every
// path into SQLite here calls it first.
void ConfigureOnce();

class Db {
 public:
  // Opens (creating) the file in WAL mode with the given synchronous level, through the
  // named registered VFS (nullptr: the default).
  Db(const std::string& path, const std::string& synchronous, int busy_timeout_ms,
     const char* vfs = nullptr);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // A cached prepared statement, reset when the returned Stmt dies.
  Stmt Prepare(std::string_view sql);
  void Exec(const std::string& sql);  // one-off statements (pragmas, BEGIN, COMMIT)
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  sqlite3* raw() { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*, std::less<>> cache_;
};

}  // namespace sluice::sqlite
