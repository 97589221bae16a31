// A private PostgreSQL server for tests: initdb in a fresh directory under /tmp, then the
// server on a free loopback port (fsync and synchronous_commit on), stopped and removed
// when the object dies. Run as root, every server command runs as the `postgres` user
// (PostgreSQL refuses root). Tests share one server per process (Shared()) and each takes
// its own database (CreateDatabase()).
// Thread-safety: port(), uri() and CreateDatabase() are safe from any thread; Stop() and
// Start() must not race with each other, with CreateDatabase() or with the destructor.
//
// Environment:
//   SLUICE_TEST_PG_URI     e.g. postgresql://postgres@127.0.0.1:5432/postgres. When set,
//                          Shared() starts no server and uses that one: CreateDatabase()
//                          creates databases through it (its role needs CREATEDB) and
//                          drops them again at process exit; Stop() and Start() throw.
//                          A PgServer constructed directly always starts its own.
//   SLUICE_TEST_PG_BINDIR  where initdb and pg_ctl are; default /usr/lib/postgresql/15/bin.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

class PgServer {
 public:
  // Creates the cluster and starts the server, awaiting its first accepted connection.
  // Throws std::runtime_error (with the server's log) if it cannot, and names
  // scripts/setup.sh if the PostgreSQL binaries are missing.
  PgServer();
  // Stops the server (pg_ctl stop -m fast) and removes its directory.
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // The process-wide server, started on first use (thread-safe) and stopped at exit; or
  // the one SLUICE_TEST_PG_URI names. A failed start throws here, on every call.
  static PgServer& Shared();

  int port() const { return port_; }
  // postgresql://postgres@127.0.0.1:PORT/DBNAME (for SLUICE_TEST_PG_URI: that URI with
  // its database replaced by `dbname`).
  std::string uri(const std::string& dbname) const;
  // Creates a fresh, uniquely named, empty database (from template0) and returns its URI.
  std::string CreateDatabase();

  // Stops the server (fast: open connections are cut) and starts it again on the same
  // port and data directory, for outage tests. Stop() on a stopped server does nothing.
  // `immediate`: pg_ctl stop -m immediate, as a crash (no checkpoint; recovery on start).
  void Stop(bool immediate = false);
  void Start();
  bool running() const { return running_; }

 private:
  struct External {};
  PgServer(External, std::string base_uri);

  bool StartOn(int port);
  int RunAsPostgres(std::vector<std::string> argv);
  std::string ReadLogs() const;

  std::string base_uri_;  // SLUICE_TEST_PG_URI; empty when this object owns the server
  std::string bindir_;
  std::optional<TempDir> dir_;  // owned by postgres: data/, the socket, the logs
  int port_ = 0;
  bool running_ = false;
  std::atomic<int> next_database_{0};
  std::mutex mu_;
  std::vector<std::string> created_;  // GUARDED_BY(mu_): external databases to drop
};

}  // namespace sluice::testing
