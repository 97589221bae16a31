// `sluiced copy-db`: moves a SQLite database into an empty PostgreSQL database, every
// table in one PostgreSQL transaction. This file owns the steps and their refusals; the
// SQL is store/sql/sqlite/export.sql (what is read) and store/sql/postgres/import.sql
// (what is written, and how each type changes on the way).
//
//   1. The SQLite file's lock (store/sqlite/file_lock.h), held to the end: refused while
//      a sluiced runs on the file, and no sluiced starts on it during the copy.
//   2. The file must exist and hold a sluice database; nothing is created. Its schema is
//      brought to this binary's version first, as starting sluiced on it would (a file
//      newer than this binary is refused).
//   3. The target is refused if any of sluice's tables holds a row, before anything is
//      written to it. Then its schema is created (or upgraded): store/postgres/pg_schema.h.
//   4. One transaction: the tables locked against any sluiced already on the target,
//      checked empty again, every row copied (queues, buckets, jobs, tokens,
//      idempotency_keys, limit_layers: every column as stored, job seq and ids
//      included; the intake limiters' counts, rate_limits, start afresh), the job
//      sequence moved past the copied seqs, the counts compared; then COMMIT. Any
//      failure rolls it back and the target holds no row.
//
// Leased jobs keep their lease (lease_id, expiry, worker): a worker that finishes while
// the copy runs completes the job on PostgreSQL, and a lease that lapses meanwhile is
// requeued there by the lease reaper, as on any restart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace sluice {

struct CopyDbOptions {
  std::string sqlite_path;               // the SQLite file (no sluiced may run on it)
  std::string pg_uri;                    // the PostgreSQL database to fill (must hold no rows)
  size_t batch_rows = 1000;              // rows per INSERT
  size_t batch_bytes = size_t{8} << 20;  // or about this much text per INSERT
};

struct CopiedTable {
  std::string table;
  int64_t rows = 0;
};

struct CopyDbReport {
  int64_t sqlite_version = 0;    // the source's schema version (after its migrations)
  int64_t postgres_version = 0;  // the target's
  std::vector<CopiedTable> tables;
};

// Runs the copy. Errors: conflict (the file is in use; the target is not empty),
// not_found (no such file), bad_request (not a sluice database), storage_unavailable
// (a database cannot be reached), internal (a statement failed: the target holds no row).
Result<CopyDbReport> CopySqliteToPostgres(const CopyDbOptions& options);

}  // namespace sluice
