// System tests of batch intake on the real sluiced: POST /v1/queues/{queue}/jobs:batch
// decides each job in order as if it came alone (its own status, error code and quota
// fields), honours an idempotency key per item, and refuses a body that does not read
// as a whole, naming the item, without creating anything.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

struct Batch {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  std::string acme, worker;

  // Queue q: a backlog of 5 per tenant, draining at 1 per second.
  Batch() {
    REQUIRE(
        Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 5}, {"burst", 1}}).status ==
        200);
    acme = Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
    worker = Token({{"scopes", {"work"}}});
  }
  HttpResult Admin(const std::string& m, const std::string& path, const json& body = nullptr) {
    return Call(*http, m, path, body, Bearer(server.admin_token()));
  }
  std::string Token(const json& body) {
    return Admin("POST", "/v1/admin/tokens", body).body["token"];
  }
  HttpResult Post(const json& body, const std::string& queue = "q", const std::string& token = "") {
    return Call(*http, "POST", "/v1/queues/" + queue + "/jobs:batch", body,
                Bearer(token.empty() ? acme : token));
  }
  // Jobs of tenant acme in queue q, whatever their state.
  size_t JobCount() {
    auto r = Call(*http, "GET", "/v1/jobs?queue=q&limit=1000", nullptr, Bearer(acme));
    REQUIRE(r.status == 200);
    return r.body["jobs"].size();
  }
};

json Jobs(int n) {
  json jobs = json::array();
  for (int i = 0; i < n; ++i) jobs.push_back({{"payload", {{"n", i}}}});
  return {{"jobs", jobs}};
}

TEST_CASE("jobs:batch: each job decided in order as if alone, with its own quota fields") {
  Batch b;
  auto r = b.Post(Jobs(8));
  REQUIRE(r.status == 200);
  const json& results = r.body["results"];
  REQUIRE(results.size() == 8);
  std::vector<std::string> ids;
  for (size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i, results[i].dump());
    if (i < 5) {
      // The backlog takes 5: each admitted job's id, state and estimated start;
      // remaining counts down.
      CHECK(results[i]["status"] == 202);
      CHECK(results[i]["state"] == "queued");
      CHECK(results[i]["estimated_start"].is_string());
      CHECK(results[i]["remaining"] == 4 - static_cast<int>(i));
      CHECK_FALSE(results[i].contains("replayed"));
      ids.push_back(results[i]["id"]);
    } else {
      // Then the backlog is full: the single submit's 429, item by item.
      CHECK(results[i]["status"] == 429);
      CHECK(results[i]["error"] == "queue_full");
      CHECK(results[i]["retry_after"].get<int64_t>() >= 1);
      CHECK(results[i]["remaining"] == 0);
      CHECK_FALSE(results[i].contains("id"));
    }
    CHECK(results[i]["reset_s"].get<int64_t>() >= 0);
  }
  // The answer's RateLimit fields are the bucket's after the batch.
  CHECK(r.header("RateLimit-Policy") == "\"q\";q=5;w=5");
  CHECK(r.header("RateLimit").rfind("\"q\";r=0;", 0) == 0);
  CHECK(b.JobCount() == 5);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto job = Call(*b.http, "GET", "/v1/jobs/" + ids[i], nullptr, Bearer(b.acme));
    CHECK(job.status == 200);
    CHECK(job.body["payload"] == json{{"n", i}});
  }

  // A worker gets them (the batch woke the dispatcher) and they complete.
  auto lease = Call(*b.http, "POST", "/v1/leases",
                    {{"queues", {"q"}}, {"max_jobs", 1}, {"wait_ms", 5000}}, Bearer(b.worker));
  REQUIRE(lease.status == 200);
  REQUIRE(lease.body["jobs"].size() == 1);
  CHECK(lease.body["jobs"][0]["id"] == ids.front());
}

TEST_CASE("jobs:batch: an idempotency key per item; a replay creates nothing") {
  Batch b;
  const json first = {{"jobs",
                       {{{"payload", "a"}, {"idempotency_key", "k-a"}},
                        {{"payload", "b"}, {"idempotency_key", "k-b"}},
                        {{"payload", "c"}}}}};
  auto r1 = b.Post(first);
  REQUIRE(r1.status == 200);
  REQUIRE(r1.body["results"].size() == 3);
  for (const json& item : r1.body["results"]) CHECK(item["status"] == 202);

  // The same keyed items again: the original jobs, marked replayed; the unkeyed item is
  // a new job.
  auto r2 = b.Post(first);
  REQUIRE(r2.status == 200);
  const json& again = r2.body["results"];
  CHECK(again[0]["status"] == 202);
  CHECK(again[0]["replayed"] == true);
  CHECK(again[0]["id"] == r1.body["results"][0]["id"]);
  CHECK(again[1]["replayed"] == true);
  CHECK(again[1]["id"] == r1.body["results"][1]["id"]);
  CHECK_FALSE(again[2].contains("replayed"));
  CHECK(again[2]["id"] != r1.body["results"][2]["id"]);
  CHECK(b.JobCount() == 4);

  // A key reused with another job is that item's 422; the rest of the batch goes on.
  auto r3 = b.Post({{"jobs",
                     {{{"payload", "other"}, {"idempotency_key", "k-a"}},
                      {{"payload", "d"}, {"idempotency_key", "k-d"}}}}});
  REQUIRE(r3.status == 200);
  CHECK(r3.body["results"][0]["status"] == 422);
  CHECK(r3.body["results"][0]["error"] == "idempotency_key_reused");
  CHECK(r3.body["results"][1]["status"] == 202);
  CHECK(b.JobCount() == 5);

  // The same key twice in one batch: one job, the second item its replay.
  Batch fresh;
  auto twice = fresh.Post(
      {{"jobs",
        {{{"payload", 1}, {"idempotency_key", "k"}}, {{"payload", 1}, {"idempotency_key", "k"}}}}});
  REQUIRE(twice.status == 200);
  CHECK(twice.body["results"][1]["replayed"] == true);
  CHECK(twice.body["results"][1]["id"] == twice.body["results"][0]["id"]);
  CHECK(fresh.JobCount() == 1);
}

TEST_CASE("jobs:batch: a deadline that cannot be met is that item's refusal, with its start") {
  Batch b;
  auto r = b.Post({{"jobs",
                    {{{"payload", 1}},
                     {{"payload", 2}},
                     {{"payload", 3}, {"deadline_in_ms", 100}},
                     {{"payload", 4}, {"cost", 6}}}}});
  REQUIRE(r.status == 200);
  const json& results = r.body["results"];
  CHECK(results[0]["status"] == 202);
  CHECK(results[1]["status"] == 202);
  // Behind two jobs at 1 per second, a job cannot start within 100 ms.
  CHECK(results[2]["status"] == 429);
  CHECK(results[2]["error"] == "deadline_unreachable");
  CHECK(results[2]["estimated_start"].is_string());
  CHECK(results[3]["status"] == 400);
  CHECK(results[3]["error"] == "cost_exceeds_capacity");
  CHECK(b.JobCount() == 2);
}

TEST_CASE("jobs:batch: a body that does not read is a 400 naming the item; nothing is created") {
  Batch b;
  json too_many = Jobs(1001);
  json bad_key = Jobs(3);
  bad_key["jobs"][2]["idempotency_key"] = "";
  json bad_cost = Jobs(3);
  bad_cost["jobs"][1]["cost"] = 0;
  json unknown = Jobs(2);
  unknown["jobs"][1]["colour"] = "red";
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "'jobs'"},
      {{{"jobs", json::array()}}, "'jobs'"},
      {{{"jobs", "x"}}, "'jobs'"},
      {{{"jobs", json::array({1})}}, "'jobs'[0]"},
      {too_many, "at most 1000"},
      {bad_key, "'jobs'[2]"},
      {bad_cost, "'jobs'[1]"},
      {unknown, "'jobs'[1]"},
      {{{"jobs", json::array({json::object()})}, {"extra", 1}}, "extra"},
  };
  for (const auto& [body, names] : cases) {
    CAPTURE(body.dump().substr(0, 200));
    auto r = b.Post(body);
    CHECK(r.status == 400);
    CHECK(r.header("Content-Type") == "application/problem+json");
    CHECK(r.body["error"] == "bad_request");
    CHECK(r.body["detail"].get<std::string>().find(names) != std::string::npos);
  }
  CHECK(b.JobCount() == 0);

  // Who may, and where: the submit scope, a queue that exists.
  auto by_worker = b.Post(Jobs(1), "q", b.worker);
  CHECK(by_worker.status == 403);
  CHECK(by_worker.body["error"] == "forbidden");
  auto nowhere = b.Post(Jobs(2), "nowhere");
  CHECK(nowhere.status == 404);
  CHECK(nowhere.body["error"] == "not_found");
  auto no_token = Call(*b.http, "POST", "/v1/queues/q/jobs:batch", Jobs(1));
  CHECK(no_token.status == 401);
  CHECK(b.JobCount() == 0);
}

}  // namespace
}  // namespace sluice::testing
