// The PostgreSQL driver's schema and its versions: a new database gets
// store/sql/postgres/schema.sql at the latest version; an older one is upgraded in place
// by store/sql/postgres/migrations/, one transaction per file, each under a
// transaction-level advisory lock so that several sluiced starting at once take turns
// (store/sql/postgres/migrate.sql says how versions are kept).
#pragma once

#include <cstdint>

#include "common/time.h"
#include "store/postgres/pg.h"

namespace sluice {

// Brings the database on `conn` (outside a transaction) to the latest schema version;
// returns that version. Throws pg::PgError when a step fails (that step is rolled back)
// or when the database is at a version newer than this binary knows.
int64_t PreparePgSchema(pg::Connection& conn, Micros now);

}  // namespace sluice
