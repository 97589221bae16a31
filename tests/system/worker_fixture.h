// What the worker and example system tests share: the real sluiced with one queue `q`,
// a submit token for tenant acme, a work token, and launchers for the real
// sluice-worker and the example binaries, each logging to a file in a temp dir.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

struct WorkerRig {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  TempDir dir;
  std::string submit, work;
  int launched = 0;

  explicit WorkerRig(const nlohmann::json& policy) {
    REQUIRE(Admin("PUT", "/v1/admin/queues/q", policy).status == 200);
    submit = Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
    work = Token({{"scopes", {"work"}}});
  }
  HttpResult Admin(const std::string& m, const std::string& path,
                   const nlohmann::json& body = nullptr) {
    return Call(*http, m, path, body, {{"Authorization", "Bearer " + server.admin_token()}});
  }
  std::string Token(const nlohmann::json& body) {
    return Admin("POST", "/v1/admin/tokens", body).body["token"];
  }
  std::string Submit(const nlohmann::json& payload,
                     nlohmann::json extra = nlohmann::json::object()) {
    extra["payload"] = payload;
    auto r =
        Call(*http, "POST", "/v1/queues/q/jobs", extra, {{"Authorization", "Bearer " + submit}});
    REQUIRE(r.status == 202);
    return r.body["id"];
  }
  nlohmann::json Job(const std::string& id) { return Admin("GET", "/v1/jobs/" + id).body; }
  std::vector<nlohmann::json> Jobs() {
    return Admin("GET", "/v1/jobs?queue=q&limit=1000")
        .body["jobs"]
        .get<std::vector<nlohmann::json>>();
  }
  bool AllInState(const std::vector<std::string>& ids, const std::string& state,
                  std::chrono::milliseconds timeout) {
    return Eventually(
        [&] {
          for (const auto& id : ids) {
            if (Job(id)["state"] != state) return false;
          }
          return true;
        },
        timeout);
  }
  // The real sluice-worker on queue q: `flags` before `--`, then the command.
  // `env`: more "NAME=value" entries for the worker's environment.
  std::unique_ptr<Subprocess> Worker(std::vector<std::string> flags,
                                     std::vector<std::string> command,
                                     std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {SLUICE_WORKER_BINARY, "--server", server.url(), "--queue", "q",
                                     "--wait-ms",          "2000"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    env.push_back("SLUICE_TOKEN=" + work);
    return Launch(argv, std::move(env));
  }
  std::unique_ptr<Subprocess> Launch(std::vector<std::string> argv, std::vector<std::string> env) {
    return std::make_unique<Subprocess>(std::move(argv), std::move(env),
                                        dir.File("proc-" + std::to_string(++launched) + ".log"));
  }
  // Lines of a file the test's commands append to (empty if it does not exist yet).
  std::vector<std::string> Lines(const std::string& name) {
    std::ifstream in(dir.File(name));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
};

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace sluice::testing
