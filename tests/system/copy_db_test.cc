// `sluiced copy-db` as an operator runs it (docs/operations.md, "Moving from SQLite to
// PostgreSQL"): refused while a sluiced runs on the file, then, with it stopped, the
// counts printed and a sluiced on PostgreSQL serving the same jobs and tokens; refused
// again once the target holds data, and for a --to that is not PostgreSQL.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "tests/testutil/pg_server.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

struct Run {
  int status = 0;
  std::string out;
  std::string err;
};

Run CopyDb(const TempDir& dir, const std::string& from, const std::string& to) {
  static int n = 0;
  const std::string out = dir.File("copy" + std::to_string(++n) + ".out");
  const std::string err = dir.File("copy" + std::to_string(n) + ".err");
  Subprocess p({SLUICED_BINARY, "copy-db", "--from", from, "--to", to}, {},
               Streams{"/dev/null", out, err});
  std::optional<int> status = p.Wait(std::chrono::seconds(60));
  REQUIRE(status);
  return Run{*status, ReadFile(out), ReadFile(err)};
}

TEST_CASE("sluiced copy-db moves a stopped server's SQLite file to PostgreSQL",
          "[postgres][copy_db]") {
  TempDir dir;
  ServerOptions sqlite_options;
  sqlite_options.db_path = dir.File("sluice.db");
  auto server = std::make_unique<ServerProcess>(sqlite_options);
  auto admin = server->Client(server->admin_token());
  REQUIRE(Call(*admin, "PUT", "/v1/admin/queues/q", {{"rate", 100}, {"capacity", 100}}).status ==
          200);
  auto submit_token =
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}});
  REQUIRE(submit_token.status == 201);
  const std::string token = submit_token.body["token"];
  auto c = server->Client(token);
  auto sub = Call(*c, "POST", "/v1/queues/q/jobs", {{"payload", {{"report", 7}}}},
                  {{"Idempotency-Key", "order-7"}});
  REQUIRE(sub.status == 202);
  const std::string id = sub.body["id"];

  const std::string uri = PgServer::Shared().CreateDatabase();
  // While the server runs on the file: refused, naming it.
  Run busy = CopyDb(dir, sqlite_options.db_path, uri);
  INFO(busy.err);
  CHECK(busy.status == 1);
  CHECK(busy.err.find("is in use by another sluiced (pid " + std::to_string(server->pid())) !=
        std::string::npos);
  CHECK(busy.out.empty());

  REQUIRE(server->Stop(SIGTERM) == 0);
  server.reset();
  Run copied = CopyDb(dir, sqlite_options.db_path, uri);
  INFO(copied.out << copied.err);
  REQUIRE(copied.status == 0);
  for (const char* line :
       {"  queues 1\n", "  buckets 1\n", "  jobs 1\n", "  tokens 1\n", "  idempotency_keys 1\n"}) {
    CHECK(copied.out.find(line) != std::string::npos);
  }

  // A sluiced on PostgreSQL serves what the SQLite one had.
  ServerOptions pg_options;
  pg_options.db_path = uri;
  ServerProcess pg(pg_options);
  auto c2 = pg.Client(token);  // the token carried over
  auto read = Call(*c2, "GET", "/v1/jobs/" + id);
  REQUIRE(read.status == 200);
  CHECK(read.body["state"] == "queued");
  CHECK(read.body["payload"] == json{{"report", 7}});
  auto replay = Call(*c2, "POST", "/v1/queues/q/jobs", {{"payload", {{"report", 7}}}},
                     {{"Idempotency-Key", "order-7"}});
  CHECK(replay.status == 202);
  CHECK(replay.body["id"] == id);
  CHECK(replay.header("Idempotent-Replayed") == "true");

  // The target holds data now: refused, nothing written.
  Run again = CopyDb(dir, sqlite_options.db_path, uri);
  CHECK(again.status == 1);
  CHECK(again.err.find("already holds sluice data") != std::string::npos);
  auto listed = Call(*pg.Client(pg.admin_token()), "GET", "/v1/jobs?limit=100");
  CHECK(listed.body["jobs"].size() == 1);

  Run not_pg = CopyDb(dir, sqlite_options.db_path, dir.File("other.db"));
  CHECK(not_pg.status == 2);
  CHECK(not_pg.err.find("--to must be a PostgreSQL URI") != std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
