// One sluiced per SQLite file (DESIGN.md "Architecture"; store/sqlite/file_lock.h), with
// real processes: a second sluiced on the file of a running one exits at start with a
// message naming the file and the first one's pid, leaves the database byte for byte as
// it was, and the first keeps serving; after kill -9 of the holder the kernel has
// released the lock and a new sluiced starts on the file.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

// A queue, a submit token and one job on `server`; returns the token.
std::string Seed(const ServerProcess& server) {
  auto admin = server.Client(server.admin_token());
  REQUIRE(Call(*admin, "PUT", "/v1/admin/queues/q", {{"rate", 100}, {"capacity", 100}}).status ==
          200);
  auto token =
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}});
  REQUIRE(token.status == 201);
  return token.body["token"];
}

std::string Submit(const ServerProcess& server, const std::string& token, const json& payload) {
  auto c = server.Client(token);
  auto sub = Call(*c, "POST", "/v1/queues/q/jobs", {{"payload", payload}});
  REQUIRE(sub.status == 202);
  return sub.body["id"];
}

struct Exit {
  int status = 0;
  std::string log;
};

// Starts sluiced on `db` and awaits its exit (it must exit within 20 s).
Exit RunToExit(const TempDir& dir, const std::string& name, const std::string& db) {
  const std::string port_file = dir.File(name + ".port");
  Subprocess p({SLUICED_BINARY, "--listen", "127.0.0.1:0", "--db", db, "--port-file", port_file},
               {"SLUICE_ADMIN_TOKEN=test-admin-token"}, dir.File(name + ".log"));
  std::optional<int> status = p.Wait(std::chrono::seconds(20));
  INFO(p.ReadLog());
  REQUIRE(status);
  CHECK_FALSE(FileExists(port_file));  // it never listened
  return Exit{*status, p.ReadLog()};
}

TEST_CASE("a second sluiced on one SQLite file exits at start naming the first, and writes nothing",
          "[single_instance]") {
  TempDir dir;
  const std::string db = dir.File("sluice.db");
  ServerOptions options;
  options.db_path = db;
  ServerProcess first(options);
  const std::string token = Seed(first);
  const std::string before_id = Submit(first, token, "before");

  struct stat before {};
  REQUIRE(stat(db.c_str(), &before) == 0);
  const std::string bytes = ReadFile(db);

  // The same file, as given and spelled another way.
  for (const std::string& spelling : {db, dir.path() + "/./sluice.db"}) {
    Exit second = RunToExit(dir, "second", spelling);
    INFO(second.log);
    CHECK(second.status != 0);
    CHECK(second.log.find("database " + spelling + " is in use by another sluiced (pid " +
                          std::to_string(first.pid())) != std::string::npos);
    CHECK(second.log.find("storage_open_failed") != std::string::npos);
    CHECK(second.log.find("SQLite allows one server per file") != std::string::npos);
    CHECK(second.log.find("--db postgres://") != std::string::npos);
  }

  struct stat after {};
  REQUIRE(stat(db.c_str(), &after) == 0);
  CHECK(ReadFile(db) == bytes);
  CHECK(after.st_size == before.st_size);
  CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);

  // The first one serves on: reads, intake, leases.
  auto c = first.Client(token);
  CHECK(Call(*c, "GET", "/v1/jobs/" + before_id).body["state"] == "queued");
  Submit(first, token, "after");
  auto admin = first.Client(first.admin_token());
  auto worker = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}});
  REQUIRE(worker.status == 201);
  auto w = first.Client(worker.body["token"]);
  auto leased = Call(*w, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 5000}});
  REQUIRE(leased.status == 200);
  REQUIRE(leased.body["jobs"].size() == 1);
  CHECK(leased.body["jobs"][0]["id"] == before_id);
  CHECK(Call(*admin, "GET", "/readyz").status == 200);
}

TEST_CASE("after kill -9 of the sluiced holding a SQLite file, a new one starts on it",
          "[single_instance]") {
  TempDir dir;
  ServerOptions options;
  options.db_path = dir.File("sluice.db");
  auto first = std::make_unique<ServerProcess>(options);
  const std::string token = Seed(*first);
  const std::string id = Submit(*first, token, "keep me");
  const pid_t first_pid = first->pid();
  REQUIRE(first->Stop(SIGKILL) == -SIGKILL);
  first.reset();

  ServerProcess again(options);  // would not come up if the lock were still held
  CHECK(again.pid() != first_pid);
  auto c = again.Client(token);
  auto read = Call(*c, "GET", "/v1/jobs/" + id);
  REQUIRE(read.status == 200);
  CHECK(read.body["payload"] == "keep me");
  // And it holds the file now: a third one is refused, naming it.
  Exit third = RunToExit(dir, "third", options.db_path);
  CHECK(third.status != 0);
  CHECK(third.log.find("(pid " + std::to_string(again.pid())) != std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
