// System tests: the real sluiced binary on a free loopback port, real HTTP, a real
// SQLite file. Walks the skeleton's path end to end (issue 2).
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "common/time.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/test_db.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

// A server with one queue and tokens for two tenants and a worker.
struct Fixture {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  std::string acme, globex, worker;

  explicit Fixture(const json& policy = {{"rate", 1000}, {"capacity", 100}},
                   ServerOptions options = {})
      : server(std::move(options)) {
    PutQueue("report-export", policy);
    acme = Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
    globex = Token({{"scopes", {"submit"}}, {"tenant", "globex"}});
    worker = Token({{"scopes", {"work"}}});
  }

  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return Call(*http, method, path, body, Bearer(server.admin_token()));
  }
  void PutQueue(const std::string& name, const json& policy) {
    auto r = Admin("PUT", "/v1/admin/queues/" + name, policy);
    REQUIRE(r.status == 200);
  }
  std::string Token(const json& body) {
    auto r = Admin("POST", "/v1/admin/tokens", body);
    REQUIRE(r.status == 201);
    return r.body["token"].get<std::string>();
  }
  HttpResult Submit(const std::string& token, const json& body,
                    const std::string& queue = "report-export") {
    return Call(*http, "POST", "/v1/queues/" + queue + "/jobs", body, Bearer(token));
  }
  HttpResult Lease(const json& body) {
    return Call(*http, "POST", "/v1/leases", body, Bearer(worker));
  }
  HttpResult Ack(const std::string& id, const std::string& verb, const json& body) {
    return Call(*http, "POST", "/v1/jobs/" + id + "/" + verb, body, Bearer(worker));
  }
  // Polls the admin API (with a deadline) until `n` long-polls are parked.
  bool WaitForParkedLeases(int n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Admin("GET", "/v1/admin/queues").body["waiting_leases"] == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  HttpResult GetJob(const std::string& token, const std::string& id) {
    return Call(*http, "GET", "/v1/jobs/" + id, nullptr, Bearer(token));
  }
};

TEST_CASE("submit, lease, complete: the job ends succeeded") {
  Fixture f;
  auto sub = f.Submit(f.acme, {{"payload", {{"rows", 3}}}, {"cost", 2}});
  REQUIRE(sub.status == 202);
  const std::string id = sub.body["id"];
  CHECK(sub.header("Location") == "/v1/jobs/" + id);
  CHECK(sub.body["state"] == "queued");
  CHECK(sub.body["tenant"] == "acme");
  CHECK(sub.body["cost"] == 2);
  CHECK(sub.body["estimated_start"].is_string());
  CHECK(sub.header("RateLimit-Policy") == "\"report-export\";q=100;w=1");
  CHECK(sub.header("RateLimit") == "\"report-export\";r=98;t=0");

  auto lease = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
  REQUIRE(lease.status == 200);
  REQUIRE(lease.body["jobs"].size() == 1);
  json job = lease.body["jobs"][0];
  CHECK(job["id"] == id);
  CHECK(job["attempt"] == 1);
  CHECK(job["payload"] == json{{"rows", 3}});
  CHECK(job["tenant"] == "acme");

  auto stale = f.Ack(id, "complete", {{"lease_id", "lse_not_mine"}});
  CHECK(stale.status == 409);
  CHECK(stale.body["error"] == "lease_lost");

  auto done = f.Ack(id, "complete", {{"lease_id", job["lease_id"]}, {"result", {{"ok", true}}}});
  REQUIRE(done.status == 200);
  CHECK(done.body["state"] == "succeeded");

  auto again = f.Ack(id, "complete", {{"lease_id", job["lease_id"]}});
  CHECK(again.status == 409);
  CHECK(again.body["error"] == "lease_lost");

  auto read = f.GetJob(f.acme, id);
  REQUIRE(read.status == 200);
  CHECK(read.body["state"] == "succeeded");
  CHECK(read.body["result"] == json{{"ok", true}});
  CHECK(read.body["attempt"] == 1);

  auto queues = f.Admin("GET", "/v1/admin/queues");
  REQUIRE(queues.status == 200);
  REQUIRE(queues.body["queues"].size() == 1);
  CHECK(queues.body["queues"][0]["stats"] ==
        json{{"queued", 0}, {"queued_cost", 0}, {"leased", 0}});
}

TEST_CASE("a full bucket answers 429 queue_full with an honest Retry-After") {
  Fixture f({{"rate", 0.5}, {"capacity", 2}});
  REQUIRE(f.Submit(f.acme, {{"payload", 1}}).status == 202);
  REQUIRE(f.Submit(f.acme, {{"payload", 2}}).status == 202);
  auto full = f.Submit(f.acme, {{"payload", 3}});
  REQUIRE(full.status == 429);
  CHECK(full.body["error"] == "queue_full");
  CHECK(full.body["status"] == 429);
  const std::string retry_after = full.header("Retry-After");
  REQUIRE(!retry_after.empty());
  CHECK(std::stoi(retry_after) >= 1);
  CHECK(full.body["retry_after"] == std::stoi(retry_after));
  CHECK(full.header("RateLimit").find(";r=0;") != std::string::npos);

  // Another tenant's bucket is its own: globex is not affected by acme's backlog.
  CHECK(f.Submit(f.globex, {{"payload", 4}}).status == 202);

  // Tenant depth is visible to the admin.
  auto tenants = f.Admin("GET", "/v1/admin/queues/report-export/tenants");
  REQUIRE(tenants.status == 200);
  REQUIRE(tenants.body["tenants"].size() == 2);
  CHECK(tenants.body["tenants"][0]["tenant"] == "acme");
  CHECK(tenants.body["tenants"][0]["queued"] == 2);
  CHECK(tenants.body["tenants"][1]["queued"] == 1);
}

TEST_CASE("a job whose deadline cannot be met is refused with its estimate") {
  Fixture f({{"rate", 1}, {"capacity", 100}});
  for (int i = 0; i < 5; ++i) REQUIRE(f.Submit(f.acme, {{"payload", i}}).status == 202);
  auto late = f.Submit(f.acme, {{"payload", "late"}, {"deadline_in_ms", 1000}});
  REQUIRE(late.status == 429);
  CHECK(late.body["error"] == "deadline_unreachable");
  CHECK(late.body["estimated_start"].is_string());
  // Every 429 says when to come back: here, when a job with the same 1 s relative
  // deadline would fit. Five jobs ahead at 1/s (nothing released yet): it would start
  // 5 s from now, 4 s after its deadline, so once more than 4 s have drained: 5 s.
  CHECK(late.header("Retry-After") == "5");
  CHECK(late.body["retry_after"] == 5);
  CHECK(f.Submit(f.acme, {{"payload", "fine"}, {"deadline_in_ms", 60000}}).status == 202);
}

TEST_CASE("a deadline that can never be met is 400 deadline_invalid and creates nothing") {
  Fixture f({{"rate", 1}, {"capacity", 100}, {"default_deadline_ms", 60000}});
  const Micros now = WallNowMicros();
  const std::string past = FormatRfc3339(now - kMicrosPerSecond);
  const std::string soon = FormatRfc3339(now + 30 * kMicrosPerSecond);
  const std::string later = FormatRfc3339(now + 120 * kMicrosPerSecond);
  const json cases[] = {
      {{"deadline", past}},
      {{"deadline_in_ms", 0}},
      {{"deadline_in_ms", -1}},
      {{"deadline", soon}, {"not_before", soon}},
      {{"deadline", soon}, {"not_before", later}},
      {{"deadline_in_ms", 1000}, {"not_before", soon}},
      // No deadline of its own: the queue's default (60 s from now) applies.
      {{"not_before", later}},
  };
  for (const json& body : cases) {
    CAPTURE(body.dump());
    auto r = f.Submit(f.acme, body);
    CHECK(r.status == 400);
    CHECK(r.body["error"] == "deadline_invalid");
    CHECK(r.header("Content-Type") == "application/problem+json");
    CHECK(r.header("Retry-After").empty());
  }
  auto q = f.Admin("GET", "/v1/admin/queues/report-export");
  CHECK(q.body["stats"]["queued"] == 0);
  // A not_before inside the default deadline is fine.
  CHECK(f.Submit(f.acme, {{"not_before", soon}}).status == 202);
}

TEST_CASE("tenants are isolated: another tenant's job is 404") {
  Fixture f;
  auto sub = f.Submit(f.acme, {{"payload", "secret"}});
  REQUIRE(sub.status == 202);
  auto theirs = f.GetJob(f.globex, sub.body["id"]);
  CHECK(theirs.status == 404);
  CHECK(theirs.body["error"] == "not_found");
  CHECK(f.GetJob(f.acme, sub.body["id"]).status == 200);
  CHECK(f.Admin("GET", "/v1/jobs/" + sub.body["id"].get<std::string>()).status == 200);
}

TEST_CASE("authentication and scopes") {
  Fixture f;
  SECTION("no token is 401 with WWW-Authenticate") {
    auto r = Call(*f.http, "POST", "/v1/queues/report-export/jobs", {{"payload", 1}});
    CHECK(r.status == 401);
    CHECK(r.body["error"] == "unauthorized");
    CHECK(r.header("WWW-Authenticate").rfind("Bearer", 0) == 0);
  }
  SECTION("a wrong token is 401") {
    auto bad = f.acme;
    bad.back() = bad.back() == 'a' ? 'b' : 'a';
    CHECK(f.Submit(bad, {{"payload", 1}}).status == 401);
    CHECK(f.Submit("nonsense", {{"payload", 1}}).status == 401);
  }
  SECTION("a wrong scope is 403") {
    auto r = f.Submit(f.worker, {{"payload", 1}});
    CHECK(r.status == 403);
    CHECK(r.body["error"] == "forbidden");
    auto lease =
        Call(*f.http, "POST", "/v1/leases", {{"queues", {"report-export"}}}, Bearer(f.acme));
    CHECK(lease.status == 403);
    CHECK(Call(*f.http, "GET", "/v1/admin/queues", nullptr, Bearer(f.acme)).status == 403);
  }
  SECTION("a work token limited to other queues may not lease this one") {
    auto limited = f.Token({{"scopes", {"work"}}, {"queues", {"other"}}});
    auto r = Call(*f.http, "POST", "/v1/leases", {{"queues", {"report-export"}}}, Bearer(limited));
    CHECK(r.status == 403);
  }
}

TEST_CASE("bad input gets a clear problem+json error") {
  Fixture f;
  auto raw = f.http->Post("/v1/queues/report-export/jobs", Bearer(f.acme), "{not json",
                          "application/json");
  REQUIRE(raw);
  CHECK(raw->status == 400);
  CHECK(raw->get_header_value("Content-Type") == "application/problem+json");

  CHECK(f.Submit(f.acme, {{"cost", 0}}).body["error"] == "bad_request");
  CHECK(f.Submit(f.acme, {{"cost", "heavy"}}).status == 400);
  CHECK(f.Submit(f.acme, {{"deadline", "tomorrow"}}).status == 400);
  CHECK(f.Submit(f.acme, {{"surprise", 1}}).status == 400);
  CHECK(f.Submit(f.acme, {{"cost", 1000}}).body["error"] == "cost_exceeds_capacity");
  CHECK(f.Submit(f.acme, {{"payload", 1}}, "no-such-queue").status == 404);
  CHECK(f.Admin("PUT", "/v1/admin/queues/bad", {{"capacity", 5}}).status == 400);  // no rate
  CHECK(f.Admin("PUT", "/v1/admin/queues/bad", {{"rate", -1}}).status == 400);
  CHECK(f.Admin("POST", "/v1/admin/tokens", {{"scopes", {"submit"}}}).status == 400);  // no tenant
  CHECK(f.Lease({{"queues", json::array()}}).status == 400);
  CHECK(f.Lease({{"queues", {"report-export"}}, {"wait_ms", -5}}).status == 400);
  CHECK(Call(*f.http, "GET", "/v1/nothing/here").status == 404);

  std::string huge(2 << 20, 'x');
  auto big =
      f.http->Post("/v1/queues/report-export/jobs", Bearer(f.acme), huge, "application/json");
  REQUIRE(big);
  CHECK(big->status == 413);
  CHECK(big->get_header_value("Content-Type") == "application/problem+json");
}

TEST_CASE("policy PUT bumps the version") {
  Fixture f;
  auto v2 = f.Admin("PUT", "/v1/admin/queues/report-export", {{"rate", 5}, {"capacity", 10}});
  REQUIRE(v2.status == 200);
  CHECK(v2.body["version"] == 2);
  CHECK(v2.body["rate"] == 5.0);
  auto got = f.Admin("GET", "/v1/admin/queues/report-export");
  CHECK(got.body["version"] == 2);
  CHECK(got.body["capacity"] == 10);
}

TEST_CASE("a waiting long-poll is woken by a submit") {
  Fixture f;
  auto waiting = std::async(std::launch::async, [&] {
    auto c = f.server.Client(f.worker);
    return Call(*c, "POST", "/v1/leases", {{"queues", {"report-export"}}, {"wait_ms", 20000}});
  });
  // Submit once the long-poll is parked; the lease must come back with this job.
  REQUIRE(f.WaitForParkedLeases(1));
  auto sub = f.Submit(f.acme, {{"payload", "wake"}});
  REQUIRE(sub.status == 202);
  auto got = waiting.get();
  REQUIRE(got.status == 200);
  REQUIRE(got.body["jobs"].size() == 1);
  CHECK(got.body["jobs"][0]["id"] == sub.body["id"]);
}

TEST_CASE("caps: nothing is released while the tenant cap is full") {
  Fixture f({{"rate", 1000}, {"capacity", 10}, {"max_inflight_per_tenant", 1}});
  REQUIRE(f.Submit(f.acme, {{"payload", 1}}).status == 202);
  REQUIRE(f.Submit(f.acme, {{"payload", 2}}).status == 202);
  auto first = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
  REQUIRE(first.body["jobs"].size() == 1);
  auto blocked = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 0}});
  CHECK(blocked.body["jobs"].empty());
  json j = first.body["jobs"][0];
  REQUIRE(f.Ack(j["id"], "complete", {{"lease_id", j["lease_id"]}}).status == 200);
  auto second = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
  REQUIRE(second.body["jobs"].size() == 1);
  CHECK(second.body["jobs"][0]["payload"] == 2);
}

TEST_CASE("fail: retryable goes back to queued, then fails for good") {
  Fixture f({{"rate", 1000}, {"capacity", 10}, {"max_attempts", 2}});
  auto sub = f.Submit(f.acme, {{"payload", "flaky"}});
  const std::string id = sub.body["id"];
  auto l1 = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
  REQUIRE(l1.body["jobs"].size() == 1);
  auto r1 = f.Ack(id, "fail",
                  {{"lease_id", l1.body["jobs"][0]["lease_id"]},
                   {"error", "downstream timeout"},
                   {"retry_in_ms", 0}});
  REQUIRE(r1.status == 200);
  CHECK(r1.body["state"] == "queued");
  auto l2 = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
  REQUIRE(l2.body["jobs"].size() == 1);
  CHECK(l2.body["jobs"][0]["attempt"] == 2);
  auto r2 = f.Ack(id, "fail", {{"lease_id", l2.body["jobs"][0]["lease_id"]}, {"error", "again"}});
  REQUIRE(r2.status == 200);
  CHECK(r2.body["state"] == "failed");
  CHECK(r2.body["errors"].size() == 2);
  CHECK(r2.body["errors"][1]["error"] == "again");
  // Times on the wire are RFC 3339, a failed attempt's included.
  REQUIRE(r2.body["errors"][1]["at"].is_string());
  CHECK(ParseRfc3339(r2.body["errors"][1]["at"].get<std::string>()).has_value());
}

TEST_CASE("an acknowledged job survives kill -9") {
  TempDir dir;
  const std::string db = TestDb(dir, "durable.db");
  std::string id;
  std::string acme;
  {
    ServerOptions o;
    o.db_path = db;
    Fixture f({{"rate", 1}, {"capacity", 10}}, o);
    auto sub = f.Submit(f.acme, {{"payload", "keep me"}});
    REQUIRE(sub.status == 202);
    id = sub.body["id"];
    acme = f.acme;
    CHECK(f.server.Stop(SIGKILL) == -SIGKILL);
  }
  ServerOptions o;
  o.db_path = db;
  ServerProcess again(o);
  auto c = again.Client();
  auto read = Call(*c, "GET", "/v1/jobs/" + id, nullptr, Bearer(acme));
  REQUIRE(read.status == 200);
  CHECK(read.body["payload"] == "keep me");
  CHECK(read.body["state"] == "queued");
}

TEST_CASE("SIGTERM drains: a parked long-poll is answered and the exit is clean") {
  Fixture f;
  auto waiting = std::async(std::launch::async, [&] {
    auto c = f.server.Client(f.worker);
    return c->Post("/v1/leases", R"({"queues":["report-export"],"wait_ms":20000})",
                   "application/json");
  });
  // Wait until the server holds the long-poll, then stop.
  REQUIRE(f.WaitForParkedLeases(1));
  f.http.reset();  // an idle keep-alive connection would delay the drain by its timeout
  CHECK(f.server.Stop(SIGTERM) == 0);
  auto res = waiting.get();
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["jobs"].empty());
}

}  // namespace
}  // namespace sluice::testing

namespace sluice::testing {
namespace {

TEST_CASE("a queued job says what holds it: blocked_by and a live estimated_start") {
  Fixture f({{"rate", 1}, {"capacity", 10}, {"max_inflight_per_tenant", 1}});
  auto first = f.Submit(f.acme, {{"payload", 1}});
  auto second = f.Submit(f.acme, {{"payload", 2}});
  const std::string id1 = first.body["id"], id2 = second.body["id"];

  auto j1 = f.GetJob(f.acme, id1);
  CHECK(j1.body["blocked_by"] == "no_worker");  // releasable, nobody polling
  auto j2 = f.GetJob(f.acme, id2);
  CHECK(j2.body["blocked_by"] == "rate");  // one job ahead at 1 job/s
  CHECK(ParseRfc3339(j2.body["estimated_start"].get<std::string>()) >
        ParseRfc3339(j1.body["estimated_start"].get<std::string>()));

  SECTION("paused comes first, and pause stops dispatch") {
    REQUIRE(f.Admin("POST", "/v1/admin/queues/report-export/pause").body["paused"] == true);
    CHECK(f.GetJob(f.acme, id1).body["blocked_by"] == "paused");
    CHECK(f.Lease({{"queues", {"report-export"}}, {"wait_ms", 0}}).body["jobs"].empty());
    CHECK(f.Submit(f.acme, {{"payload", 3}}).status == 202);  // intake goes on
    REQUIRE(f.Admin("POST", "/v1/admin/queues/report-export/resume").body["paused"] == false);
    auto got = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
    REQUIRE(got.body["jobs"].size() == 1);
    CHECK(got.body["jobs"][0]["id"] == id1);
  }
  SECTION("tenant_cap while the bucket's lease is held") {
    auto got = f.Lease({{"queues", {"report-export"}}, {"wait_ms", 5000}});
    REQUIRE(got.body["jobs"].size() == 1);
    CHECK(f.GetJob(f.acme, id2).body["blocked_by"] == "tenant_cap");
    CHECK(f.GetJob(f.acme, id1).body["blocked_by"].is_null());  // leased: holds nothing
  }
  SECTION("not_before holds only its own job") {
    auto later = f.Submit(f.globex, {{"payload", "later"}, {"not_before", "2099-01-01T00:00:00Z"}});
    REQUIRE(later.status == 202);
    CHECK(f.GetJob(f.globex, later.body["id"]).body["blocked_by"] == "not_before");
    auto now_job = f.Submit(f.globex, {{"payload", "now"}});
    CHECK(f.GetJob(f.globex, now_job.body["id"]).body["blocked_by"] == "no_worker");
  }
}

}  // namespace
}  // namespace sluice::testing
