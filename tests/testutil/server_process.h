// Boots the real sluiced binary on a free loopback port, on a database in a fresh
// temporary directory, and stops it (SIGTERM, then SIGKILL) when the object dies.
// Readiness is awaited by polling the port file and /healthz with a deadline.
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

struct ServerOptions {
  std::string admin_token = "test-admin-token";
  std::vector<std::string> extra_args;
  std::string db_path;  // empty: a file in the server's own temp dir
  // Runs sluiced through this command, e.g. {"prlimit", "--nofile=128:128", "--"}; it
  // must exec sluiced in its own process (the pid stays sluiced's). The `faketime`
  // wrapper forks instead (its pid is not sluiced's): use FaketimeEnv() as `env`.
  std::vector<std::string> command_prefix;
  // Entries "NAME=value" added to (or replacing) the inherited environment.
  std::vector<std::string> env;
  // The loopback port to listen on; 0 picks a free one.
  int port = 0;
  // Where sluiced's stdout and stderr are appended; empty: a file in the temp dir.
  std::string log_path;
};

// The environment that runs sluiced under libfaketime with its clock shifted by `offset`
// behind only (e.g. "-7s"; see the definition for why), as `faketime -f OFFSET` would,
// but in sluiced's own process.
std::vector<std::string> FaketimeEnv(const std::string& offset);

class ServerProcess {
 public:
  explicit ServerProcess(ServerOptions options = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& admin_token() const { return options_.admin_token; }
  const std::string& db_path() const { return db_path_; }
  const std::string& log_path() const { return log_path_; }
  std::string ReadLog() const;

  // A keep-alive client with TCP_NODELAY, optionally with a bearer token.
  std::unique_ptr<httplib::Client> Client(const std::string& token = "") const;

  // Sends `signo` and waits for the exit; returns the exit status (or -signal).
  int Stop(int signo = SIGTERM);

 private:
  ServerOptions options_;
  TempDir dir_;
  std::string db_path_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The Authorization header for a bearer token, plus any `extra` headers.
httplib::Headers Bearer(const std::string& token, httplib::Headers extra = {});

// Convenience for JSON requests in tests.
struct HttpResult {
  int status = 0;
  nlohmann::json body;
  httplib::Headers headers;
  std::string header(const std::string& name) const;
};

HttpResult Call(httplib::Client& c, const std::string& method, const std::string& path,
                const nlohmann::json& body = nullptr, const httplib::Headers& headers = {});

}  // namespace sluice::testing
