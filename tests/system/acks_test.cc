// System tests of batch acknowledgements on the real sluiced: POST /v1/acks answers
// each ack on its own, in order; acks riding on POST /v1/leases are applied before
// the lease; a body that does not read is a 400 that changes nothing; a token limited
// to some queues gets not_found for a job of another queue.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

struct Acks {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  std::string acme, worker;

  Acks() {
    REQUIRE(Admin("PUT", "/v1/admin/queues/q", {{"rate", 1000}, {"capacity", 1000}, {"burst", 10}})
                .status == 200);
    acme = Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
    worker = Token({{"scopes", {"work"}}});
  }
  HttpResult Admin(const std::string& m, const std::string& path, const json& body = nullptr) {
    return Call(*http, m, path, body, Bearer(server.admin_token()));
  }
  std::string Token(const json& body) {
    return Admin("POST", "/v1/admin/tokens", body).body["token"];
  }
  std::string Submit() {
    auto r = Call(*http, "POST", "/v1/queues/q/jobs", {{"payload", 1}}, Bearer(acme));
    REQUIRE(r.status == 202);
    return r.body["id"];
  }
  HttpResult Lease(const json& body, const std::string& token = "") {
    return Call(*http, "POST", "/v1/leases", body, Bearer(token.empty() ? worker : token));
  }
  // Leases exactly n jobs.
  json LeaseJobs(size_t n) {
    auto r = Lease({{"queues", {"q"}}, {"max_jobs", n}, {"wait_ms", 5000}});
    REQUIRE(r.status == 200);
    REQUIRE(r.body["jobs"].size() == n);
    CHECK_FALSE(r.body.contains("acks"));  // none carried, none answered
    return r.body["jobs"];
  }
  HttpResult PostAcks(const json& body, const std::string& token = "") {
    return Call(*http, "POST", "/v1/acks", body, Bearer(token.empty() ? worker : token));
  }
  json Job(const std::string& id) {
    auto r = Call(*http, "GET", "/v1/jobs/" + id, nullptr, Bearer(acme));
    REQUIRE(r.status == 200);
    return r.body;
  }
};

json Ack(const json& job, const std::string& outcome) {
  return {{"id", job["id"]}, {"lease_id", job["lease_id"]}, {"outcome", outcome}};
}

TEST_CASE("acks: one result per ack, in order; a lost or unknown one changes nothing") {
  Acks f;
  for (int i = 0; i < 3; ++i) f.Submit();
  json jobs = f.LeaseJobs(3);
  json done = Ack(jobs[0], "succeeded");
  done["result"] = {{"rows", 3}};
  json failed = Ack(jobs[1], "failed");
  failed["error"] = "bad input";
  failed["retryable"] = false;
  json lost = Ack(jobs[2], "succeeded");
  lost["lease_id"] = "lse_not_mine";
  json unknown = {{"id", "job_nope"}, {"lease_id", "lse_1"}, {"outcome", "succeeded"}};
  json odd = {{"id", "../x"}, {"lease_id", "lse_1"}, {"outcome", "failed"}};

  auto r = f.PostAcks({{"acks", {done, failed, lost, unknown, odd}}});
  REQUIRE(r.status == 200);
  const json& results = r.body["results"];
  REQUIRE(results.size() == 5);
  CHECK(results[0] == json{{"id", jobs[0]["id"]}, {"state", "succeeded"}});
  CHECK(results[1] == json{{"id", jobs[1]["id"]}, {"state", "failed"}});
  CHECK(results[2]["id"] == jobs[2]["id"]);
  CHECK(results[2]["error"] == "lease_lost");
  CHECK(results[2]["status"] == 409);
  CHECK(results[2]["detail"].is_string());
  CHECK(results[3]["id"] == "job_nope");
  CHECK(results[3]["error"] == "not_found");
  CHECK(results[3]["status"] == 404);
  CHECK(results[4]["id"] == "../x");
  CHECK(results[4]["error"] == "not_found");

  json j0 = f.Job(jobs[0]["id"]);
  CHECK(j0["state"] == "succeeded");
  CHECK(j0["result"] == json{{"rows", 3}});
  CHECK(f.Job(jobs[1]["id"])["state"] == "failed");
  json j2 = f.Job(jobs[2]["id"]);
  CHECK(j2["state"] == "leased");
  CHECK(j2["lease_expires_at"] == jobs[2]["lease_expires_at"]);

  // The job whose ack was lost is still its lease's to end.
  auto later = f.PostAcks({{"acks", {Ack(jobs[2], "succeeded")}}});
  REQUIRE(later.status == 200);
  CHECK(later.body["results"][0]["state"] == "succeeded");
}

TEST_CASE("acks: a body that does not read is a 400 and changes nothing") {
  Acks f;
  f.Submit();
  json job = f.LeaseJobs(1)[0];
  json good = Ack(job, "succeeded");
  json too_many = json::array();
  for (int i = 0; i < 101; ++i) {
    too_many.push_back(
        {{"id", "job_" + std::to_string(i)}, {"lease_id", "l"}, {"outcome", "failed"}});
  }
  json bad_item = good;
  bad_item["outcome"] = "maybe";
  json result_on_fail = Ack(job, "failed");
  result_on_fail["result"] = 1;
  for (const json& body :
       {json{{"acks", {good, bad_item}}}, json{{"acks", {good, result_on_fail}}},
        json{{"acks", {good, good}}},  // one id twice
        json{{"acks", too_many}}, json{{"acks", json::array()}},
        json{{"acks", {good}}, {"extra", true}}, json{{"acks", "all of them"}}}) {
    INFO(body.dump());
    auto r = f.PostAcks(body);
    CHECK(r.status == 400);
    CHECK(r.header("Content-Type") == "application/problem+json");
    CHECK(r.body["error"] == "bad_request");
  }
  auto not_json = f.http->Post("/v1/acks", Bearer(f.worker), "{\"acks\":[", "application/json");
  REQUIRE(not_json);
  CHECK(not_json->status == 400);
  CHECK(f.PostAcks({{"acks", {good}}}, f.acme).status == 403);  // a submit token

  json still = f.Job(job["id"]);
  CHECK(still["state"] == "leased");
  CHECK(still["attempt"] == 1);
  CHECK(still["errors"].empty());
  auto after = f.PostAcks({{"acks", {good}}});
  REQUIRE(after.status == 200);
  CHECK(after.body["results"][0]["state"] == "succeeded");
}

TEST_CASE("acks: a token limited to other queues gets not_found for each such job") {
  Acks f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/other", {{"rate", 1000}, {"capacity", 1000}}).status ==
          200);
  const std::string other = f.Token({{"scopes", {"work"}}, {"queues", {"other"}}});
  f.Submit();
  json job = f.LeaseJobs(1)[0];
  auto r = f.PostAcks({{"acks", {Ack(job, "succeeded")}}}, other);
  REQUIRE(r.status == 200);
  CHECK(r.body["results"][0]["error"] == "not_found");
  auto riding = f.Lease({{"queues", {"other"}}, {"acks", {Ack(job, "failed")}}}, other);
  REQUIRE(riding.status == 200);
  CHECK(riding.body["acks"][0]["error"] == "not_found");
  CHECK(f.Job(job["id"])["state"] == "leased");
}

TEST_CASE("acks on a lease request: applied first, answered beside the new jobs") {
  Acks f;
  const std::string first = f.Submit();
  json job = f.LeaseJobs(1)[0];
  REQUIRE(job["id"] == first);
  const std::string second = f.Submit();

  SECTION("the acks' results come back with the next lease") {
    json stale = Ack(job, "succeeded");
    stale["id"] = "job_nope";
    auto r =
        f.Lease({{"queues", {"q"}}, {"wait_ms", 5000}, {"acks", {Ack(job, "succeeded"), stale}}});
    REQUIRE(r.status == 200);
    REQUIRE(r.body["jobs"].size() == 1);
    CHECK(r.body["jobs"][0]["id"] == second);
    REQUIRE(r.body["acks"].size() == 2);
    CHECK(r.body["acks"][0] == json{{"id", first}, {"state", "succeeded"}});
    CHECK(r.body["acks"][1]["error"] == "not_found");
    CHECK(f.Job(first)["state"] == "succeeded");
  }
  SECTION("an empty acks array is answered with an empty one") {
    auto r = f.Lease({{"queues", {"q"}}, {"acks", json::array()}});
    REQUIRE(r.status == 200);
    CHECK(r.body["acks"] == json::array());
  }
  SECTION("a bad ack refuses the whole request: nothing acked, nothing leased") {
    json bad = Ack(job, "succeeded");
    bad["retry_in_ms"] = 5;
    auto r = f.Lease({{"queues", {"q"}}, {"acks", {Ack(job, "succeeded"), bad}}});
    CHECK(r.status == 400);
    CHECK(r.body["error"] == "bad_request");
    CHECK(f.Job(first)["state"] == "leased");
    CHECK(f.Job(second)["state"] == "queued");
  }
}

}  // namespace
}  // namespace sluice::testing
