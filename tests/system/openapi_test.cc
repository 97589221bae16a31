// The real sluiced's answers against docs/openapi.yaml: a scripted conversation with a
// fresh sluiced touches every route and many error paths (400, 401, 403, 404, 405, 409,
// 413, 415, 422, 429 of each kind, 503), each exchange recorded (method, path, status,
// headers, body) to a JSON file; then tests/openapi/check_exchanges.mjs (ajv) checks every
// one against the document and that every operation was exercised. The script's own
// expectations (each exchange's status) are checked here, so an error path that stopped
// happening fails this test rather than going unchecked.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "tests/testutil/raw_http.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

// Who sends a request: a token and the scopes it was made with (none: no valid token).
struct Caller {
  std::string token;
  std::optional<std::vector<std::string>> scopes;
};

struct Answer {
  int status = 0;
  json body;  // parsed when it is JSON, else null
  std::string text;
  httplib::Headers headers;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// Sends requests to one sluiced and records each exchange for check_exchanges.mjs.
class Recorder {
 public:
  explicit Recorder(const ServerProcess& server) : server_(server), http_(server.Client()) {}

  // One request; `body` is sent as is (application/json unless `extra` says otherwise).
  Answer Send(const std::string& name, const std::string& method, const std::string& target,
              const Caller& who, const std::string& body = "", httplib::Headers extra = {}) {
    httplib::Request req;
    req.method = method;
    req.path = target;
    req.headers = std::move(extra);
    if (!who.token.empty()) req.headers.emplace("Authorization", "Bearer " + who.token);
    if (!body.empty()) {
      req.body = body;
      if (req.headers.find("Content-Type") == req.headers.end()) {
        req.headers.emplace("Content-Type", "application/json");
      }
    }
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool sent = http_->send(req, res, err);
    INFO(name << ": " << method << " " << target);
    REQUIRE(sent);
    Answer a{res.status, json(nullptr), res.body, res.headers};
    if (res.get_header_value("Content-Type").find("json") != std::string::npos) {
      a.body = json::parse(res.body, nullptr, false);
    }
    std::vector<std::pair<std::string, std::string>> headers(res.headers.begin(),
                                                             res.headers.end());
    Record(name, method, target, who, body, res.status, headers, res.body);
    return a;
  }

  // Like Send, expecting `status`.
  Answer Expect(int status, const std::string& name, const std::string& method,
                const std::string& target, const Caller& who, const std::string& body = "",
                httplib::Headers extra = {}) {
    Answer a = Send(name, method, target, who, body, std::move(extra));
    INFO(name << ": " << method << " " << target << " answered " << a.status << " " << a.text);
    CHECK(a.status == status);
    return a;
  }

  // An answer read with testutil/raw_http.h, for what the HTTP client cannot be made to do.
  void RecordRaw(const std::string& name, const std::string& method, const std::string& target,
                 const RawResponse& r) {
    Record(name, method, target, Caller{}, "", r.status, r.headers, r.body);
  }

  size_t size() const { return exchanges_.size(); }
  json ToJson() const { return {{"exchanges", exchanges_}}; }

 private:
  void Record(const std::string& name, const std::string& method, const std::string& target,
              const Caller& who, const std::string& body, int status,
              const std::vector<std::pair<std::string, std::string>>& headers,
              const std::string& response_body) {
    const size_t q = target.find('?');
    json header_list = json::array();
    for (const auto& [k, v] : headers) header_list.push_back({k, v});
    exchanges_.push_back(
        {{"name", name},
         {"method", method},
         {"path", target.substr(0, q)},
         {"query", q == std::string::npos ? json(nullptr) : json(target.substr(q + 1))},
         {"token_scopes", who.scopes ? json(*who.scopes) : json(nullptr)},
         {"request_body", body.empty() ? json(nullptr) : json(body)},
         {"status", status},
         {"headers", header_list},
         {"body", response_body}});
  }

  const ServerProcess& server_;
  std::unique_ptr<httplib::Client> http_;
  json exchanges_ = json::array();
};

// A connection that sends nothing: it only takes one of the server's connection slots.
class IdleConnection {
 public:
  explicit IdleConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~IdleConnection() { ::close(fd_); }
  IdleConnection(const IdleConnection&) = delete;
  IdleConnection& operator=(const IdleConnection&) = delete;

 private:
  int fd_;
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The lease of one job: {"id", "lease_id"} from a lease answer's first job.
std::pair<std::string, std::string> FirstLease(const Answer& a) {
  REQUIRE(a.body.is_object());
  REQUIRE(a.body["jobs"].size() >= 1);
  return {a.body["jobs"][0]["id"], a.body["jobs"][0]["lease_id"]};
}

TEST_CASE("openapi: every route's real answers, error paths included, match docs/openapi.yaml") {
  const std::string dir = std::string(SLUICE_SOURCE_DIR) + "/tests/openapi";
  if (!Exists(dir + "/node_modules/ajv") || !Exists(dir + "/node_modules/yaml")) {
    FAIL("the OpenAPI check needs " << dir << "/node_modules: run scripts/setup.sh (npm ci)");
  }
  TempDir tmp;
  // A queue the config file declares: the API's changes to it are 409 managed_by_config.
  {
    std::ofstream config(tmp.File("sluice.json"));
    config << R"({"queues": {"configured": {"rate": 10, "capacity": 10}}})";
  }
  constexpr int kAuthFailureLimit = 30;
  ServerOptions options;
  options.extra_args = {"--config",
                        tmp.File("sluice.json"),
                        "--max-body-bytes",
                        "16384",
                        "--max-connections",
                        "8",
                        "--auth-failure-limit",
                        std::to_string(kAuthFailureLimit)};
  ServerProcess server(options);
  Recorder r(server);

  const Caller none;
  const Caller bogus{"tok_nope.not-a-secret", std::nullopt};
  const Caller admin{server.admin_token(), std::vector<std::string>{"admin"}};
  auto json_of = [](const json& j) { return j.dump(); };

  // ---- Public routes ----------------------------------------------------------------
  r.Expect(200, "liveness", "GET", "/healthz", none);
  r.Expect(200, "readiness", "GET", "/readyz", none);
  Answer spec = r.Expect(200, "the document", "GET", "/v1/openapi.json", none);
  CHECK(spec.body["openapi"] == "3.1.0");
  for (const char* page : {"/admin", "/admin/", "/admin/app.js", "/admin/style.css"}) {
    r.Expect(200, "dashboard", "GET", page, none);
  }

  // ---- Queues and tokens --------------------------------------------------------------
  const json main_policy = {{"rate", 1000},
                            {"capacity", 100},
                            {"burst", 10},
                            {"tenants", {{"acme", {{"rate", 500}, {"capacity", 50}}}}}};
  r.Expect(200, "create queue", "PUT", "/v1/admin/queues/oa", admin, json_of(main_policy));
  r.Expect(200, "a full bucket after one job", "PUT", "/v1/admin/queues/tiny", admin,
           json_of({{"rate", 0.01}, {"capacity", 1}}));
  r.Expect(200, "slow drain", "PUT", "/v1/admin/queues/slow", admin,
           json_of({{"rate", 0.1}, {"capacity", 100}}));
  r.Expect(200, "one attempt", "PUT", "/v1/admin/queues/fragile", admin,
           json_of({{"rate", 1000}, {"max_attempts", 1}}));
  r.Expect(200, "to delete", "PUT", "/v1/admin/queues/doomed", admin, json_of({{"rate", 1}}));

  auto mint = [&](const std::string& name, const json& request) {
    Answer a = r.Expect(201, name, "POST", "/v1/admin/tokens", admin, json_of(request));
    std::vector<std::string> scopes = request["scopes"];
    return std::make_pair(Caller{a.body["token"], scopes}, std::string(a.body["id"]));
  };
  const Caller submit = mint("submit token", {{"scopes", {"submit"}}, {"tenant", "acme"}}).first;
  const auto [globex, globex_id] =
      mint("another tenant", {{"scopes", {"submit"}}, {"tenant", "globex"}});
  const Caller work = mint("work token", {{"scopes", {"work"}}}).first;
  const Caller tiny_worker =
      mint("work token of one queue", {{"scopes", {"work"}}, {"queues", {"tiny"}}}).first;
  const Caller metrics = mint("metrics token", {{"scopes", {"metrics"}}}).first;
  r.Expect(200, "list tokens", "GET", "/v1/admin/tokens", admin);

  // ---- Intake -------------------------------------------------------------------------
  const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const json job_body = {{"payload", {{"report", 1}}}, {"deadline_in_ms", 600000}};
  Answer first = r.Expect(202, "submit", "POST", "/v1/queues/oa/jobs", submit, json_of(job_body),
                          {{"Idempotency-Key", "k-1"}, {"traceparent", traceparent}});
  const std::string job = first.body["id"];
  Answer replay = r.Expect(202, "idempotent replay", "POST", "/v1/queues/oa/jobs", submit,
                           json_of(job_body), {{"Idempotency-Key", "k-1"}});
  CHECK(replay.header("Idempotent-Replayed") == "true");
  r.Expect(422, "key reused", "POST", "/v1/queues/oa/jobs", submit, json_of({{"cost", 2}}),
           {{"Idempotency-Key", "k-1"}});
  Answer batch = r.Expect(200, "batch", "POST", "/v1/queues/oa/jobs:batch", submit,
                          json_of({{"jobs",
                                    {{{"payload", "a"}, {"idempotency_key", "b-1"}},
                                     {{"cost", 2}},
                                     {{"cost", 50}},
                                     {{"cost", 80}}}}}));
  // acme's bucket holds 50: 4 are queued, and no job of 80 ever fits.
  CHECK(batch.body["results"][2]["error"] == "queue_full");
  CHECK(batch.body["results"][3]["error"] == "cost_exceeds_capacity");
  r.Expect(400, "batch of nothing", "POST", "/v1/queues/oa/jobs:batch", submit,
           json_of({{"jobs", json::array()}}));
  r.Expect(400, "batch item deadline", "POST", "/v1/queues/oa/jobs:batch", submit,
           json_of({{"jobs", {{{"deadline_in_ms", 0}}}}}));
  r.Expect(404, "batch unknown queue", "POST", "/v1/queues/nope/jobs:batch", submit,
           json_of({{"jobs", {json::object()}}}));
  r.Expect(400, "bad JSON", "POST", "/v1/queues/oa/jobs", submit, "{\"payload\": ");
  r.Expect(400, "unknown field", "POST", "/v1/queues/oa/jobs", submit, json_of({{"colour", 1}}));
  r.Expect(400, "cost out of range", "POST", "/v1/queues/oa/jobs", submit, json_of({{"cost", 0}}));
  r.Expect(400, "deadline invalid", "POST", "/v1/queues/oa/jobs", submit,
           json_of({{"deadline_in_ms", 0}}));
  r.Expect(400, "cost over capacity", "POST", "/v1/queues/oa/jobs", submit,
           json_of({{"cost", 1000}}));
  r.Expect(400, "bad queue name", "POST", "/v1/queues/bad%20name/jobs", submit);
  r.Expect(404, "unknown queue", "POST", "/v1/queues/nope/jobs", submit);
  r.Expect(403, "wrong scope", "POST", "/v1/queues/oa/jobs", work);
  r.Expect(401, "no token", "POST", "/v1/queues/oa/jobs", none);
  r.Expect(401, "unknown token", "POST", "/v1/queues/oa/jobs", bogus);
  r.Expect(413, "body too large", "POST", "/v1/queues/oa/jobs", submit,
           json_of({{"payload", std::string(20000, 'x')}}));
  r.Expect(415, "compressed body", "POST", "/v1/queues/oa/jobs", submit, json_of(job_body),
           {{"Content-Encoding", "gzip"}});
  r.Expect(202, "fills the bucket", "POST", "/v1/queues/tiny/jobs", submit);
  Answer full = r.Expect(429, "queue full", "POST", "/v1/queues/tiny/jobs", submit);
  CHECK(full.body["error"] == "queue_full");
  CHECK_FALSE(full.header("Retry-After").empty());
  r.Expect(202, "a backlog of 10 s", "POST", "/v1/queues/slow/jobs", submit);
  r.Expect(202, "a backlog of 20 s", "POST", "/v1/queues/slow/jobs", submit);
  Answer late = r.Expect(429, "deadline unreachable", "POST", "/v1/queues/slow/jobs", submit,
                         json_of({{"deadline_in_ms", 2000}}));
  CHECK(late.body["error"] == "deadline_unreachable");

  // ---- Reading and cancelling jobs ----------------------------------------------------
  r.Expect(200, "read a job", "GET", "/v1/jobs/" + job, submit);
  r.Expect(200, "admin reads a job", "GET", "/v1/jobs/" + job, admin);
  r.Expect(404, "someone else's job", "GET", "/v1/jobs/" + job, globex);
  r.Expect(404, "no such job", "GET", "/v1/jobs/job_nope", submit);
  r.Expect(403, "work token reads jobs", "GET", "/v1/jobs/" + job, work);
  Answer page = r.Expect(200, "first page", "GET", "/v1/jobs?queue=oa&limit=1", submit);
  REQUIRE(page.body["next_cursor"].is_string());
  r.Expect(200, "next page", "GET",
           "/v1/jobs?limit=1&cursor=" + page.body["next_cursor"].get<std::string>(), submit);
  r.Expect(200, "by state", "GET", "/v1/jobs?state=queued", admin);
  r.Expect(400, "bad state", "GET", "/v1/jobs?state=sleeping", submit);
  r.Expect(400, "bad limit", "GET", "/v1/jobs?limit=0", submit);
  Answer doomed_job = r.Expect(202, "to cancel", "POST", "/v1/queues/oa/jobs", submit);
  const std::string cancel_id = doomed_job.body["id"];
  r.Expect(200, "cancel", "DELETE", "/v1/jobs/" + cancel_id, submit);
  r.Expect(409, "cancel twice", "DELETE", "/v1/jobs/" + cancel_id, submit);
  r.Expect(401, "cancel without a token", "DELETE", "/v1/jobs/" + cancel_id, none);

  // ---- Workers ------------------------------------------------------------------------
  const std::string lease_one = json_of({{"queues", {"oa"}}, {"max_jobs", 1}, {"wait_ms", 0}});
  auto [leased, lease_id] = FirstLease(r.Expect(
      200, "lease", "POST", "/v1/leases", work,
      json_of({{"queues", {"oa"}}, {"max_jobs", 1}, {"wait_ms", 0}, {"worker_id", "w1"}})));
  r.Expect(200, "heartbeat", "POST", "/v1/jobs/" + leased + "/heartbeat", work,
           json_of({{"lease_id", lease_id}, {"extend_ms", 60000}}));
  r.Expect(409, "heartbeat a lost lease", "POST", "/v1/jobs/" + leased + "/heartbeat", work,
           json_of({{"lease_id", "lease_nope"}}));
  r.Expect(400, "heartbeat without lease", "POST", "/v1/jobs/" + leased + "/heartbeat", work);
  r.Expect(409, "cancel a leased job", "DELETE", "/v1/jobs/" + leased, submit);
  r.Expect(200, "complete", "POST", "/v1/jobs/" + leased + "/complete", work,
           json_of({{"lease_id", lease_id}, {"result", {{"rows", 42}}}}));
  r.Expect(409, "complete twice", "POST", "/v1/jobs/" + leased + "/complete", work,
           json_of({{"lease_id", lease_id}}));
  r.Expect(404, "complete no such job", "POST", "/v1/jobs/no.such/complete", work,
           json_of({{"lease_id", lease_id}}));
  r.Expect(403, "complete with a submit token", "POST", "/v1/jobs/" + leased + "/complete", submit,
           json_of({{"lease_id", lease_id}}));

  // A job that fails for good, then an admin retry.
  Answer fragile = r.Expect(202, "one attempt only", "POST", "/v1/queues/fragile/jobs", submit);
  auto [failing, failing_lease] =
      FirstLease(r.Expect(200, "lease it", "POST", "/v1/leases", work,
                          json_of({{"queues", {"fragile"}}, {"wait_ms", 0}})));
  CHECK(failing == fragile.body["id"]);
  r.Expect(400, "fail with a bad field", "POST", "/v1/jobs/" + failing + "/fail", work,
           json_of({{"lease_id", failing_lease}, {"retry_in_ms", -1}}));
  Answer failed = r.Expect(200, "fail", "POST", "/v1/jobs/" + failing + "/fail", work,
                           json_of({{"lease_id", failing_lease}, {"error", "downstream 503"}}));
  CHECK(failed.body["state"] == "failed");
  r.Expect(409, "fail twice", "POST", "/v1/jobs/" + failing + "/fail", work,
           json_of({{"lease_id", failing_lease}, {"error", "again"}}));
  r.Expect(200, "a failed job", "GET", "/v1/jobs/" + failing, submit);
  r.Expect(200, "retry", "POST", "/v1/admin/jobs/" + failing + "/retry", admin);
  r.Expect(409, "retry a queued job", "POST", "/v1/admin/jobs/" + failing + "/retry", admin);
  r.Expect(404, "retry no such job", "POST", "/v1/admin/jobs/job_nope/retry", admin);
  r.Expect(403, "retry with a work token", "POST", "/v1/admin/jobs/" + failing + "/retry", work);

  // Batch acks, alone and riding on a lease request.
  auto [a1, l1] =
      FirstLease(r.Expect(200, "lease for acks", "POST", "/v1/leases", work, lease_one));
  Answer acks = r.Expect(
      200, "acks", "POST", "/v1/acks", work,
      json_of({{"acks",
                {{{"id", a1}, {"lease_id", l1}, {"outcome", "succeeded"}, {"result", {1, 2}}},
                 {{"id", "job_nope"}, {"lease_id", "x"}, {"outcome", "failed"}}}}}));
  CHECK(acks.body["results"][1]["error"] == "not_found");
  r.Expect(400, "acks of nothing", "POST", "/v1/acks", work, json_of({{"acks", json::array()}}));
  r.Expect(401, "acks without a token", "POST", "/v1/acks", none, json_of({{"acks", {1}}}));
  auto [a2, l2] = FirstLease(r.Expect(200, "lease again", "POST", "/v1/leases", work, lease_one));
  Answer ride = r.Expect(
      200, "ack and lease", "POST", "/v1/leases", work,
      json_of({{"queues", {"oa"}},
               {"wait_ms", 0},
               {"acks", {{{"id", a2}, {"lease_id", l2}, {"outcome", "failed"}, {"error", "x"}}}}}));
  CHECK(ride.body["acks"].size() == 1);
  r.Expect(200, "nothing to lease", "POST", "/v1/leases", work,
           json_of({{"queues", {"doomed"}}, {"wait_ms", 0}}));
  r.Expect(400, "lease of no queue", "POST", "/v1/leases", work,
           json_of({{"queues", json::array()}}));
  r.Expect(404, "lease an unknown queue", "POST", "/v1/leases", work,
           json_of({{"queues", {"nope"}}}));
  r.Expect(403, "lease with a submit token", "POST", "/v1/leases", submit, lease_one);
  r.Expect(403, "lease a queue the token may not", "POST", "/v1/leases", tiny_worker, lease_one);

  // ---- Admin --------------------------------------------------------------------------
  r.Expect(200, "queues", "GET", "/v1/admin/queues", admin);
  r.Expect(200, "queues, read-only", "GET", "/v1/admin/queues", metrics);
  r.Expect(403, "queues for a submitter", "GET", "/v1/admin/queues", submit);
  r.Expect(200, "one queue", "GET", "/v1/admin/queues/oa", metrics);
  r.Expect(200, "a configured queue", "GET", "/v1/admin/queues/configured", admin);
  r.Expect(404, "no such queue", "GET", "/v1/admin/queues/nope", admin);
  r.Expect(400, "not a queue name", "GET", "/v1/admin/queues/bad%20name", admin);
  r.Expect(200, "tenants", "GET", "/v1/admin/queues/oa/tenants", metrics);
  r.Expect(404, "tenants of no queue", "GET", "/v1/admin/queues/nope/tenants", admin);
  r.Expect(200, "simulate", "POST", "/v1/admin/queues/slow:simulate", admin,
           json_of({{"rate", 1}, {"capacity", 10}}));
  r.Expect(400, "simulate a bad policy", "POST", "/v1/admin/queues/oa:simulate", admin,
           json_of({{"rate", -1}}));
  r.Expect(403, "simulate read-only", "POST", "/v1/admin/queues/oa:simulate", metrics,
           json_of({{"rate", 1}}));
  r.Expect(404, "simulate no queue", "POST", "/v1/admin/queues/nope:simulate", admin,
           json_of({{"rate", 1}}));
  r.Expect(200, "pause", "POST", "/v1/admin/queues/oa/pause", admin);
  Answer paused = r.Expect(202, "into a paused queue", "POST", "/v1/queues/oa/jobs", submit);
  Answer held = r.Expect(200, "a paused queue's job", "GET",
                         "/v1/jobs/" + paused.body["id"].get<std::string>(), submit);
  CHECK(held.body["blocked_by"] == "paused");
  r.Expect(200, "resume", "POST", "/v1/admin/queues/oa/resume", admin);
  r.Expect(404, "pause no queue", "POST", "/v1/admin/queues/nope/pause", admin);
  r.Expect(403, "resume read-only", "POST", "/v1/admin/queues/oa/resume", metrics);
  r.Expect(400, "read-only policy fields", "PUT", "/v1/admin/queues/oa", admin,
           json_of({{"rate", 1}, {"version", 3}}));
  r.Expect(409, "a configured queue's policy", "PUT", "/v1/admin/queues/configured", admin,
           json_of({{"rate", 1}}));
  r.Expect(409, "delete a configured queue", "DELETE", "/v1/admin/queues/configured", admin);
  r.Expect(409, "delete a busy queue", "DELETE", "/v1/admin/queues/oa", admin);
  r.Expect(200, "delete", "DELETE", "/v1/admin/queues/doomed", admin);
  r.Expect(404, "delete twice", "DELETE", "/v1/admin/queues/doomed", admin);
  r.Expect(400, "token of no scope", "POST", "/v1/admin/tokens", admin,
           json_of({{"scopes", {"root"}}}));
  r.Expect(403, "tokens read-only", "GET", "/v1/admin/tokens", metrics);
  r.Expect(200, "revoke", "DELETE", "/v1/admin/tokens/" + globex_id, admin);
  r.Expect(404, "revoke no token", "DELETE", "/v1/admin/tokens/tok_nope", admin);
  r.Expect(401, "a revoked token", "GET", "/v1/jobs", Caller{globex.token, std::nullopt});
  r.Expect(200, "metrics", "GET", "/metrics", metrics);
  r.Expect(401, "metrics without a token", "GET", "/metrics", none);
  r.Expect(403, "metrics for a worker", "GET", "/metrics", work);
  r.Expect(200, "limits", "GET", "/v1/admin/limits", metrics);
  r.Expect(400, "a bad layer", "PUT", "/v1/admin/limits", admin,
           json_of({{"layers", {{{"name", "x"}, {"algorithm", "magic"}}}}}));
  r.Expect(403, "limits for a worker", "PUT", "/v1/admin/limits", work,
           json_of({{"layers", json::array()}}));

  // ---- Transport ----------------------------------------------------------------------
  r.Expect(404, "no such path", "GET", "/v1/nothing/here", admin);
  r.Expect(405, "a method the path lacks", "DELETE", "/healthz", none);
  r.Expect(405, "another", "PATCH", "/v1/jobs/" + job, submit);
  r.Expect(200, "HEAD works where GET does", "HEAD", "/v1/admin/queues/oa", admin);

  // ---- An intake-protection layer refuses --------------------------------------------
  const json one_read = {{"name", "one_read"}, {"algorithm", "fixed_window"},
                         {"limit", 1},         {"window_s", 60},
                         {"key", {"token"}},   {"route_groups", {"read"}}};
  r.Expect(200, "declare a layer", "PUT", "/v1/admin/limits", admin,
           json_of({{"layers", {one_read}}}));
  r.Expect(200, "the layer's quota", "GET", "/v1/jobs/" + job, submit);
  Answer limited = r.Expect(429, "the layer refuses", "GET", "/v1/jobs/" + job, submit);
  CHECK(limited.body["error"] == "rate_limited");
  CHECK_FALSE(limited.header("Retry-After").empty());
  r.Expect(200, "no layers", "PUT", "/v1/admin/limits", admin,
           json_of({{"layers", json::array()}}));

  // ---- Too many connections (--max-connections 8) ------------------------------------
  {
    std::vector<std::unique_ptr<IdleConnection>> held_open;
    RawResponse refused;
    Eventually(
        [&] {
          held_open.push_back(std::make_unique<IdleConnection>(server.port()));
          refused = RawExchange(server.port(), BuildRequest("GET", "/healthz"));
          return refused.status == 503 || held_open.size() > 16;
        },
        std::chrono::seconds(10));
    INFO(refused.status_line << refused.error);
    REQUIRE(refused.status == 503);
    r.RecordRaw("too many connections", "GET", "/healthz", refused);
  }

  // ---- Failed authentications from this address, last: the address is then blocked --
  // Each 401 is counted in the background: poll until the block is in force.
  Answer blocked;
  Eventually(
      [&] {
        blocked = r.Send("failed authentication", "GET", "/v1/jobs", bogus);
        return blocked.status == 429;
      },
      std::chrono::seconds(10));
  INFO(blocked.text);
  REQUIRE(blocked.status == 429);
  CHECK(blocked.body["error"] == "rate_limited");

  // ---- The check ----------------------------------------------------------------------
  const std::string artifacts = SLUICE_TEST_ARTIFACTS_DIR;
  ::mkdir(artifacts.c_str(), 0755);
  const std::string recording = artifacts + "/openapi-exchanges.json";
  {
    std::ofstream out(recording);
    out << r.ToJson().dump(1);
  }
  Subprocess check({"node", dir + "/check_exchanges.mjs",
                    std::string(SLUICE_SOURCE_DIR) + "/docs/openapi.yaml", recording},
                   {}, tmp.File("check.log"));
  auto status = check.Wait(std::chrono::seconds(60));
  std::cout << check.ReadLog();  // the coverage, also when everything matches
  INFO("check_exchanges.mjs (" << r.size() << " exchanges, " << recording << "):\n"
                               << check.ReadLog());
  REQUIRE(status.has_value());
  CHECK(*status == 0);
}

}  // namespace
}  // namespace sluice::testing
