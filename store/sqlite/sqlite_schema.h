// The SQLite driver's schema and its versions: a new file gets schema.sql at the latest
// version; an older one is upgraded in place by store/sql/sqlite/migrations/, one
// transaction per file (store/sql/sqlite/migrate.sql says how versions are kept).
#pragma once

#include <cstdint>

#include "common/time.h"
#include "store/sqlite/sqlite.h"

namespace sluice {

// Brings the database on `db` to the latest schema version; returns that version.
// Throws sqlite::SqliteError when a step fails (that step's changes are rolled back)
// or when the file is at a version newer than this binary knows.
int64_t PrepareSqliteSchema(sqlite::Db& db, Micros now);

}  // namespace sluice
