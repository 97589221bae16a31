// Several real sluiced on one fresh PostgreSQL database, as DESIGN.md's "many instances
// on PostgreSQL" runs them: same admin token, each on its own loopback port, each with
// its own log (kept across restarts, in the cluster's temp dir). An instance can be
// killed and restarted (same port or a new one); the test reads the database directly
// (Query) for its checks.
//
// Thread-safety: Instance::endpoint(), url() and Client() may be called from any thread
// while the main thread kills and restarts; Kill(), Stop(), Restart() and the Cluster's
// constructor and destructor belong to one thread. Query() is safe from any thread (one
// connection, kept and shared under a mutex; a new one after the server hung up).
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/testutil/pg_server.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

struct ClusterOptions {
  int instances = 3;
  // The server the database is created on; nullptr: PgServer::Shared(). Must outlive
  // the Cluster.
  PgServer* pg = nullptr;
  std::string admin_token = "test-admin-token";
  // Added to every instance's command line (e.g. {"--db-pool", "4"}).
  std::vector<std::string> extra_args;
  // Per instance (index → options), e.g. {{1, FaketimeEnv("-7s")}}.
  std::vector<std::pair<int, std::vector<std::string>>> env;
  std::vector<std::pair<int, std::vector<std::string>>> command_prefix;
};

class Cluster;

// One sluiced of the cluster.
class ClusterInstance {
 public:
  ClusterInstance(int index, ServerOptions options);
  ClusterInstance(const ClusterInstance&) = delete;
  ClusterInstance& operator=(const ClusterInstance&) = delete;

  int index() const { return index_; }
  // The current port (0 while stopped) and how many times it was (re)started. Thread-safe.
  std::pair<int, int64_t> endpoint() const;
  int port() const { return endpoint().first; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  pid_t pid() const;
  bool running() const { return port() != 0; }
  const std::string& admin_token() const { return options_.admin_token; }
  const std::string& log_path() const { return options_.log_path; }
  std::string ReadLog() const;

  // A keep-alive client with TCP_NODELAY on the current port, with a bearer token.
  std::unique_ptr<httplib::Client> Client(const std::string& token = "") const;

  // Sends `signo` (SIGKILL: a crash) and waits for the exit; the exit status or -signal.
  int Kill(int signo = SIGKILL);
  // Starts it again (after Kill, or kills it first), on the same port unless
  // `new_port`. Awaits /healthz.
  void Restart(bool new_port = false);

  // utime + stime of the running process, in seconds (/proc/PID/stat); -1 if stopped.
  double CpuSeconds() const;

  // The options the next Restart() uses (env, command prefix, extra args).
  ServerOptions& options() { return options_; }

 private:
  void Start();

  const int index_;
  ServerOptions options_;
  int last_port_ = 0;
  std::unique_ptr<ServerProcess> process_;
  mutable std::mutex mu_;
  int port_ = 0;            // guarded by mu_
  int64_t generation_ = 0;  // guarded by mu_
};

// Rows of text (nullopt = NULL).
using PgRows = std::vector<std::vector<std::optional<std::string>>>;

class Cluster {
 public:
  // Creates the database and starts the instances one after another (the first applies
  // the schema). Throws std::runtime_error, with the logs, if one does not come up.
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int size() const { return static_cast<int>(instances_.size()); }
  ClusterInstance& operator[](int i) { return *instances_.at(static_cast<size_t>(i)); }
  const ClusterInstance& operator[](int i) const { return *instances_.at(static_cast<size_t>(i)); }
  const std::string& db_uri() const { return db_uri_; }
  const std::string& admin_token() const { return options_.admin_token; }
  PgServer& pg() { return *pg_; }

  // Runs one statement ($1.. parameters, text) on the cluster's database. Throws
  // std::runtime_error with the server's message on failure.
  PgRows Query(const std::string& sql, const std::vector<std::string>& params = {}) const;
  // The first column of the first row as an integer (a count, a max).
  int64_t QueryInt(const std::string& sql, const std::vector<std::string>& params = {}) const;

  // An admin request through instance `i` that must succeed (2xx); its JSON body.
  nlohmann::json Admin(int i, const std::string& method, const std::string& path,
                       const nlohmann::json& body = nullptr);
  // A new token with `scopes` (and `tenant`, unless empty), created through instance 0.
  std::string CreateToken(const std::vector<std::string>& scopes, const std::string& tenant = "");

 private:
  ClusterOptions options_;
  PgServer* pg_;
  TempDir dir_;  // the instances' logs
  std::string db_uri_;
  std::vector<std::unique_ptr<ClusterInstance>> instances_;
  mutable std::mutex query_mu_;
  mutable void* conn_ = nullptr;  // PGconn*; guarded by query_mu_
};

}  // namespace sluice::testing
