// A PostgreSQL outage under load, on the real sluiced and a real PostgreSQL server of
// its own (testutil/pg_server.h): while submitters run, the database is stopped and
// started again. Meanwhile intake answers 503 storage_unavailable with Retry-After and
// /readyz fails; afterwards both recover without a restart of sluiced, and every job
// that was acknowledged (202) is there: none lost.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/testutil/pg_server.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Polls `pred` every 20 ms until it holds or `limit` passes.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST_CASE(
    "postgres outage: 503 with Retry-After while the database is down, no acknowledged "
    "job lost, recovery without a restart",
    "[postgres]") {
  PgServer pg;
  ServerOptions options;
  options.db_path = pg.CreateDatabase();
  options.extra_args = {"--db-pool", "4"};
  ServerProcess server(options);
  auto admin = server.Client();
  REQUIRE(Call(*admin, "PUT", "/v1/admin/queues/q", {{"rate", 100000}, {"capacity", 1000000}},
               Bearer(server.admin_token()))
              .status == 200);
  const std::string token =
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}},
           Bearer(server.admin_token()))
          .body["token"];

  std::mutex mu;
  std::set<std::string> acknowledged;  // guarded by mu
  std::atomic<int> unavailable{0}, unavailable_without_retry_after{0}, other{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      auto c = server.Client();
      c->set_read_timeout(30, 0);
      while (!stop) {
        auto r = Call(*c, "POST", "/v1/queues/q/jobs", {{"payload", 1}}, Bearer(token));
        if (r.status == 202) {
          std::lock_guard lock(mu);
          acknowledged.insert(r.body["id"].get<std::string>());
        } else if (r.status == 503 && r.body.value("error", "") == "storage_unavailable") {
          ++unavailable;
          if (r.header("Retry-After").empty()) ++unavailable_without_retry_after;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        } else {
          ++other;
        }
      }
    });
  }
  auto acked = [&] {
    std::lock_guard lock(mu);
    return acknowledged.size();
  };
  auto ready = [&] { return Call(*admin, "GET", "/readyz").status == 200; };

  REQUIRE(Eventually([&] { return acked() >= 200; }, std::chrono::seconds(30)));
  pg.Stop();
  CHECK(Eventually([&] { return unavailable > 0; }, std::chrono::seconds(30)));
  CHECK(Eventually([&] { return !ready(); }, std::chrono::seconds(30)));
  const size_t during = acked();
  pg.Start();
  CHECK(Eventually(ready, std::chrono::seconds(60)));
  CHECK(Eventually([&] { return acked() >= during + 200; }, std::chrono::seconds(60)));
  stop = true;
  for (auto& t : submitters) t.join();

  CHECK(unavailable_without_retry_after == 0);
  CHECK(other == 0);
  // Every acknowledged job is stored.
  std::set<std::string> stored;
  std::string cursor;
  for (;;) {
    std::string path = "/v1/jobs?limit=1000" + (cursor.empty() ? "" : "&cursor=" + cursor);
    auto page = Call(*admin, "GET", path, nullptr, Bearer(token));
    REQUIRE(page.status == 200);
    for (const auto& j : page.body["jobs"]) stored.insert(j["id"].get<std::string>());
    if (!page.body.contains("next_cursor") || page.body["next_cursor"].is_null()) break;
    cursor = page.body["next_cursor"].get<std::string>();
  }
  size_t lost = 0;
  for (const std::string& id : acknowledged) lost += stored.count(id) == 0 ? 1 : 0;
  INFO("acknowledged " << acknowledged.size() << ", 503s " << unavailable.load());
  CHECK(lost == 0);
}

}  // namespace
}  // namespace sluice::testing
