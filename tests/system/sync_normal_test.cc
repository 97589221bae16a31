// System test of the real sluiced at --synchronous NORMAL, where the I/O threads commit
// the writer's transactions themselves (store/sqlite/writer.h): concurrent submits,
// leases and acks over keep-alive connections are all answered, each job is leased once
// and ends succeeded, and what was answered is in the file once sluiced has stopped.
// (A commit left unposted is caught by the writer's own tests, which have no other
// thread to rescue it; in the server, other writes wake the committer too.)
#include <sqlite3.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

TEST_CASE("synchronous NORMAL: concurrent submits, leases and acks all commit and answer") {
  ServerOptions options;
  options.extra_args = {"--synchronous", "NORMAL"};
  ServerProcess server(options);
  auto admin = server.Client();
  auto call_admin = [&](const std::string& m, const std::string& path, const json& body) {
    return Call(*admin, m, path, body, Bearer(server.admin_token()));
  };
  REQUIRE(call_admin("PUT", "/v1/admin/queues/q",
                     {{"rate", 1000000}, {"capacity", 100000}, {"burst", 100000}})
              .status == 200);
  const std::string submit =
      call_admin("POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}})
          .body["token"];
  const std::string work =
      call_admin("POST", "/v1/admin/tokens", {{"scopes", {"work"}}}).body["token"];

  constexpr int kThreads = 8, kPerThread = 40, kJobs = kThreads * kPerThread;
  std::atomic<int> refused{0};
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        auto http = server.Client();  // one keep-alive connection per thread
        for (int i = 0; i < kPerThread; ++i) {
          auto r = Call(*http, "POST", "/v1/queues/q/jobs", {{"payload", {{"t", t}, {"i", i}}}},
                        Bearer(submit));
          if (r.status != 202) ++refused;
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  REQUIRE(refused == 0);

  // Workers on their own connections lease and ack concurrently, acks riding on the
  // next lease, until nothing is left.
  std::mutex seen_mu;
  std::multiset<std::string> leased;
  std::atomic<int> failures{0};
  {
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; ++w) {
      workers.emplace_back([&] {
        auto http = server.Client();
        json acks = json::array();
        for (;;) {
          json body = {{"queues", {"q"}}, {"max_jobs", 8}, {"wait_ms", 0}};
          if (!acks.empty()) body["acks"] = acks;
          auto r = Call(*http, "POST", "/v1/leases", body, Bearer(work));
          if (r.status != 200) {
            ++failures;
            return;
          }
          for (const json& a : r.body.value("acks", json::array())) {
            if (a.value("state", "") != "succeeded") ++failures;
          }
          acks = json::array();
          if (r.body["jobs"].empty()) return;
          std::lock_guard lock(seen_mu);
          for (const json& job : r.body["jobs"]) {
            leased.insert(job["id"].get<std::string>());
            acks.push_back(
                {{"id", job["id"]}, {"lease_id", job["lease_id"]}, {"outcome", "succeeded"}});
          }
        }
      });
    }
    for (auto& th : workers) th.join();
  }
  CHECK(failures == 0);
  CHECK(leased.size() == static_cast<size_t>(kJobs));
  CHECK(std::set<std::string>(leased.begin(), leased.end()).size() == leased.size());

  auto stats = call_admin("GET", "/v1/admin/queues/q", nullptr);
  REQUIRE(stats.status == 200);
  CAPTURE(stats.body.dump());
  CHECK(stats.body["stats"]["queued"] == 0);
  CHECK(stats.body["stats"]["leased"] == 0);
  CHECK(stats.body["totals"]["succeeded"] == kJobs);

  // What was answered is in the file once sluiced has stopped.
  REQUIRE(server.Stop() == 0);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(server.db_path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
          SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", -1, &st,
                             nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(sqlite3_column_int(st, 0) == kJobs);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

}  // namespace
}  // namespace sluice::testing
