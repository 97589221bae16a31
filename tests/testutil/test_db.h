// The database a test's sluiced runs on, by the driver the environment names
// (SLUICE_TEST_DRIVER=sqlite, the default: `file` in `dir`; =postgres: a new database
// on the shared test server, testutil/pg_server.h). Tests that restart a server on the
// same data pass the returned string on as --db.
#pragma once

#include <cstdlib>
#include <string>

#include "tests/testutil/pg_server.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

inline bool TestOnPostgres() {
  const char* d = std::getenv("SLUICE_TEST_DRIVER");
  return d && std::string(d) == "postgres";
}

inline std::string TestDb(const TempDir& dir, const std::string& file) {
  if (TestOnPostgres()) return PgServer::Shared().CreateDatabase();
  return dir.File(file);
}

}  // namespace sluice::testing
