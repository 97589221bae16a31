// The SQL files of sluice, compiled into the binary (store/CMakeLists.txt): schema.sql
// (the SQLite schema) and store/sql/<driver>/ (statements, schemas, numbered
// migrations), each under its path in the source tree.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace sluice {

struct SqlFile {
  std::string_view path;  // e.g. "store/sql/sqlite/statements.sql"
  std::string_view text;
};

// Every file, in path order.
const std::vector<SqlFile>& SqlFiles();

// The text of one file, if compiled in.
inline std::optional<std::string_view> FindSqlFile(std::string_view path) {
  for (const SqlFile& f : SqlFiles()) {
    if (f.path == path) return f.text;
  }
  return std::nullopt;
}

}  // namespace sluice
