// System tests of the job lifecycle (issue 4) on the real sluiced: heartbeat, cancel,
// admin retry, listing with a cursor, Idempotency-Key, deadlines that expire without
// any worker polling, and /readyz.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "common/time.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

struct Life {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  std::string acme, globex, worker;

  explicit Life(const json& policy) {
    REQUIRE(Admin("PUT", "/v1/admin/queues/q", policy).status == 200);
    acme = Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
    globex = Token({{"scopes", {"submit"}}, {"tenant", "globex"}});
    worker = Token({{"scopes", {"work"}}});
  }
  HttpResult Admin(const std::string& m, const std::string& path, const json& body = nullptr) {
    return Call(*http, m, path, body, Bearer(server.admin_token()));
  }
  std::string Token(const json& body) {
    return Admin("POST", "/v1/admin/tokens", body).body["token"];
  }
  HttpResult Submit(const std::string& token, const json& body, httplib::Headers h = {}) {
    return Call(*http, "POST", "/v1/queues/q/jobs", body, Bearer(token, std::move(h)));
  }
  json LeaseOne() {
    auto r =
        Call(*http, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 5000}}, Bearer(worker));
    REQUIRE(r.status == 200);
    REQUIRE(r.body["jobs"].size() == 1);
    return r.body["jobs"][0];
  }
  HttpResult Work(const std::string& id, const std::string& verb, const json& body) {
    return Call(*http, "POST", "/v1/jobs/" + id + "/" + verb, body, Bearer(worker));
  }
  HttpResult Get(const std::string& token, const std::string& path) {
    return Call(*http, "GET", path, nullptr, Bearer(token));
  }
  // Polls (with a deadline) until the job is in `state`.
  bool WaitForState(const std::string& id, const std::string& state, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Get(acme, "/v1/jobs/" + id).body["state"] == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
};

const json kFast = {{"rate", 1000}, {"capacity", 1000}};

TEST_CASE("heartbeat extends a live lease; a stale one is lease_lost") {
  Life f(kFast);
  auto sub = f.Submit(f.acme, {{"payload", 1}});
  json job = f.LeaseOne();
  auto hb = f.Work(job["id"], "heartbeat", {{"lease_id", job["lease_id"]}, {"extend_ms", 60000}});
  REQUIRE(hb.status == 200);
  CHECK(ParseRfc3339(hb.body["lease_expires_at"].get<std::string>()) >
        ParseRfc3339(job["lease_expires_at"].get<std::string>()));
  auto stale = f.Work(job["id"], "heartbeat", {{"lease_id", "lse_nope"}});
  CHECK(stale.status == 409);
  CHECK(stale.body["error"] == "lease_lost");
  CHECK(f.Work(job["id"], "heartbeat", json::object()).status == 400);  // no lease_id
}

TEST_CASE("a lease naming a queue that does not exist is not_found, and takes nothing") {
  Life f(kFast);
  auto sub = f.Submit(f.acme, {{"payload", 1}});
  auto r = Call(*f.http, "POST", "/v1/leases", {{"queues", {"q", "nope"}}, {"wait_ms", 0}},
                Bearer(f.worker));
  CHECK(r.status == 404);
  CHECK(r.body["error"] == "not_found");
  CHECK(r.body["detail"].get<std::string>().find("nope") != std::string::npos);
  json job = f.LeaseOne();  // the job in "q" is still there for a valid request
  CHECK(job["id"] == sub.body["id"]);
}

TEST_CASE("a lease that runs out goes back to queued, and its lease_id is lost") {
  Life f({{"rate", 1000}, {"capacity", 1000}, {"lease_ms", 300}});
  auto sub = f.Submit(f.acme, {{"payload", 1}});
  json first = f.LeaseOne();
  // Nobody heartbeats: the reaper returns the job within a few hundred ms.
  REQUIRE(f.WaitForState(sub.body["id"], "queued", std::chrono::seconds(10)));
  json second = f.LeaseOne();
  CHECK(second["id"] == first["id"]);
  CHECK(second["attempt"] == 2);
  CHECK(f.Work(first["id"], "complete", {{"lease_id", first["lease_id"]}}).status == 409);
  CHECK(f.Work(second["id"], "complete", {{"lease_id", second["lease_id"]}}).status == 200);
}

TEST_CASE("a queued job past its deadline expires without any worker polling") {
  Life f(kFast);
  auto sub = f.Submit(f.acme, {{"payload", 1}, {"deadline_in_ms", 300}});
  REQUIRE(sub.status == 202);
  REQUIRE(f.WaitForState(sub.body["id"], "expired", std::chrono::seconds(10)));
  auto lease =
      Call(*f.http, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 0}}, Bearer(f.worker));
  CHECK(lease.body["jobs"].empty());  // never leased

  SECTION("an admin can put an expired job back") {
    auto retried =
        f.Admin("POST", "/v1/admin/jobs/" + sub.body["id"].get<std::string>() + "/retry");
    REQUIRE(retried.status == 200);
    CHECK(retried.body["state"] == "queued");
    CHECK(f.LeaseOne()["id"] == sub.body["id"]);
  }
}

TEST_CASE("cancel: a queued job is canceled; once leased it is a conflict") {
  Life f(kFast);
  auto a = f.Submit(f.acme, {{"payload", "a"}});
  auto b = f.Submit(f.acme, {{"payload", "b"}});
  const std::string ida = a.body["id"], idb = b.body["id"];
  CHECK(Call(*f.http, "DELETE", "/v1/jobs/" + ida, nullptr, Bearer(f.globex)).status == 404);
  auto canceled = Call(*f.http, "DELETE", "/v1/jobs/" + ida, nullptr, Bearer(f.acme));
  REQUIRE(canceled.status == 200);
  CHECK(canceled.body["state"] == "canceled");
  json leased = f.LeaseOne();
  CHECK(leased["id"] == idb);  // the canceled job is never leased
  auto late = Call(*f.http, "DELETE", "/v1/jobs/" + idb, nullptr, Bearer(f.acme));
  CHECK(late.status == 409);
  CHECK(late.body["error"] == "conflict");
  auto q = f.Admin("GET", "/v1/admin/queues/q");
  CHECK(q.body["stats"]["queued"] == 0);
  CHECK(q.body["stats"]["leased"] == 1);
}

TEST_CASE("list: own jobs only, filtered, with an opaque cursor") {
  Life f(kFast);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(f.Submit(f.acme, {{"payload", i}}).body["id"]);
  f.Submit(f.globex, {{"payload", "theirs"}});
  std::vector<std::string> seen;
  std::string path = "/v1/jobs?limit=2";
  for (int page = 0; page < 10; ++page) {
    auto r = f.Get(f.acme, path);
    REQUIRE(r.status == 200);
    for (const json& j : r.body["jobs"]) {
      CHECK(j["tenant"] == "acme");
      seen.push_back(j["id"]);
    }
    if (r.body["next_cursor"].is_null()) break;
    path = "/v1/jobs?limit=2&cursor=" + r.body["next_cursor"].get<std::string>();
  }
  CHECK(seen == ids);
  CHECK(f.Get(f.acme, "/v1/jobs?state=succeeded").body["jobs"].empty());
  CHECK(f.Get(f.acme, "/v1/jobs?state=queued&queue=q").body["jobs"].size() == 5);
  CHECK(f.Get(f.acme, "/v1/jobs?state=bogus").status == 400);
  CHECK(f.Get(f.acme, "/v1/jobs?cursor=zz").status == 400);
  CHECK(f.Get(f.server.admin_token(), "/v1/jobs").body["jobs"].size() == 6);
}

TEST_CASE("Idempotency-Key: a replay returns the original; another body is 422") {
  Life f(kFast);
  httplib::Headers key = {{"Idempotency-Key", "export-2026-11"}};
  auto first = f.Submit(f.acme, {{"payload", {{"month", 11}}}}, key);
  REQUIRE(first.status == 202);
  CHECK(first.header("Idempotent-Replayed").empty());
  auto again = f.Submit(f.acme, {{"payload", {{"month", 11}}}}, key);
  REQUIRE(again.status == 202);
  CHECK(again.header("Idempotent-Replayed") == "true");
  CHECK(again.body["id"] == first.body["id"]);
  auto other = f.Submit(f.acme, {{"payload", {{"month", 12}}}}, key);
  CHECK(other.status == 422);
  CHECK(other.body["error"] == "idempotency_key_reused");
  // Keys are per tenant: globex may use the same key for its own job.
  auto theirs = f.Submit(f.globex, {{"payload", {{"month", 11}}}}, key);
  REQUIRE(theirs.status == 202);
  CHECK(theirs.body["id"] != first.body["id"]);
  CHECK(f.Submit(f.acme, {{"payload", 1}}, {{"Idempotency-Key", std::string(300, 'k')}}).status ==
        400);
}

TEST_CASE("Idempotency-Key: concurrent duplicates create one job") {
  Life f(kFast);
  std::vector<std::future<HttpResult>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      auto c = f.server.Client(f.acme);
      return Call(*c, "POST", "/v1/queues/q/jobs", {{"payload", "once"}},
                  {{"Idempotency-Key", "same-key"}});
    }));
  }
  std::set<std::string> ids;
  for (auto& c : calls) {
    HttpResult r = c.get();
    REQUIRE(r.status == 202);
    ids.insert(r.body["id"]);
  }
  CHECK(ids.size() == 1);
  CHECK(f.Admin("GET", "/v1/admin/queues/q").body["stats"]["queued"] == 1);
}

TEST_CASE("readyz: the store can commit") {
  Life f(kFast);
  auto r = Call(*f.http, "GET", "/readyz");
  CHECK(r.status == 200);
  CHECK(r.body["status"] == "ready");
}

}  // namespace
}  // namespace sluice::testing
