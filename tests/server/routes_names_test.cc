// Names and ids on the blocking routes (admin, job reads), driven through the real
// router on a fresh store: a queue name off the grammar is 400 before any lookup (so
// never the 404 a missing queue gets), an id that cannot exist is 404, and the JSON
// endpoints refuse unknown fields. The asynchronous routes (submit, leases, acks) call
// the same checks and readers (request_readers_test.cc); the system tests drive them.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "common/utf8.h"
#include "server/app.h"
#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/metrics.h"
#include "server/router.h"
#include "tests/store/store_fixture.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

const std::string kAdmin = "admin-token-for-the-route-test";

struct Answer {
  int status = 0;
  json body;
};

class RoutesFixture {
 public:
  RoutesFixture() {
    RegisterAdminRoutes(router_, app_);
    RegisterJobRoutes(router_, app_);
  }

  // Calls a blocking route as the HTTP server would: `path` as on the wire (captures
  // and query percent-decoded by the router).
  Answer Call(const std::string& method, const std::string& target, const json& body = nullptr,
              const std::string& token = kAdmin) {
    HttpRequest req;
    req.method = method;
    std::string path = target;
    if (size_t q = target.find('?'); q != std::string::npos) {
      path = target.substr(0, q);
      req.params = ParseQuery(target.substr(q + 1));
    }
    req.path = path;
    req.headers = {{"Authorization", "Bearer " + token}};
    if (!body.is_null()) req.body = body.dump();
    const Router::Route* route = nullptr;
    std::vector<std::string> captures;
    REQUIRE(router_.Find(method, path, &route, &captures) == Router::Found::kRoute);
    REQUIRE(route->handler);  // a blocking route
    req.matches = {path};
    req.matches.insert(req.matches.end(), captures.begin(), captures.end());
    HttpResponse res;
    route->handler(req, res);
    Answer a{res.status, json::parse(res.body, nullptr, false)};
    if (res.status >= 400) {
      CHECK(res.content_type == "application/problem+json");
      CHECK(IsValidUtf8(res.body));
    }
    return a;
  }

  StoreFixture& store() { return store_; }

 private:
  StoreFixture store_;
  boost::asio::io_context io_;  // never run: blocking routes only post to it
  Authenticator auth_{store_.store(), kAdmin};
  Dispatcher dispatcher_{io_, store_.store(), store_.clock()};
  Metrics metrics_;
  App app_{store_.store(), auth_, dispatcher_, store_.clock(), metrics_};
  Router router_;
};

bool Has(const json& problem, const std::string& part) {
  return problem.value("detail", "").find(part) != std::string::npos;
}

TEST_CASE("routes: a queue name off the grammar is 400 on every admin route, before a lookup") {
  RoutesFixture f;
  REQUIRE(f.Call("PUT", "/v1/admin/queues/q", {{"rate", 1}}).status == 200);
  CHECK(f.Call("GET", "/v1/admin/queues/missing").status == 404);  // valid but unknown

  // "." and ".." reach the router percent-encoded (a client normalizes them otherwise).
  for (const std::string& name :
       {std::string("%2E"), std::string("%2e%2E"), std::string("a%20b"), std::string("a%00b"),
        std::string("a%FFb"), std::string(65, 'q'), std::string("caf%C3%A9")}) {
    INFO(name);
    const std::string base = "/v1/admin/queues/" + name;
    for (const auto& [method, path, body] : std::vector<std::tuple<std::string, std::string, json>>{
             {"PUT", base, {{"rate", 1}}},
             {"GET", base, nullptr},
             {"DELETE", base, nullptr},
             {"POST", base + ":simulate", {{"rate", 1}}},
             {"GET", base + "/tenants", nullptr},
             {"POST", base + "/pause", nullptr},
             {"POST", base + "/resume", nullptr}}) {
      INFO(method << " " << path);
      Answer a = f.Call(method, path, body);
      CHECK(a.status == 400);
      CHECK(a.body["error"] == "bad_request");
      CHECK(Has(a.body, "queue name"));
    }
  }
  CHECK(f.Call("GET", "/v1/admin/queues").body["queues"].size() == 1);  // nothing was created
}

TEST_CASE("routes: ?queue= of the job listing follows the grammar") {
  RoutesFixture f;
  CHECK(f.Call("GET", "/v1/jobs?queue=q").status == 200);
  for (const char* bad :
       {"/v1/jobs?queue=", "/v1/jobs?queue=..", "/v1/jobs?queue=a%0Ab", "/v1/jobs?queue=a+b"}) {
    INFO(bad);
    Answer a = f.Call("GET", bad);
    CHECK(a.status == 400);
    CHECK(Has(a.body, "'queue': queue name"));
  }
}

TEST_CASE("routes: a job or token id that cannot exist is 404") {
  RoutesFixture f;
  for (const std::string& id : {std::string("job.1"), std::string("%2E%2E"), std::string("j%FF"),
                                std::string("a%20b"), std::string(65, 'j')}) {
    INFO(id);
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"GET", "/v1/jobs/" + id},
             {"DELETE", "/v1/jobs/" + id},
             {"POST", "/v1/admin/jobs/" + id + "/retry"},
             {"DELETE", "/v1/admin/tokens/" + id}}) {
      INFO(method << " " << path);
      Answer a = f.Call(method, path);
      CHECK(a.status == 404);
      CHECK(a.body["error"] == "not_found");
    }
  }
  CHECK(f.Call("GET", "/v1/jobs/job_nosuch").status == 404);  // well formed, looked up
}

TEST_CASE("routes: token creation refuses unknown fields and names off the grammar") {
  RoutesFixture f;
  Answer ok = f.Call("POST", "/v1/admin/tokens",
                     {{"scopes", {"submit"}}, {"tenant", "team@acme"}, {"queues", {"q"}}});
  REQUIRE(ok.status == 201);
  CHECK(ok.body["tenant"] == "team@acme");

  Answer unknown = f.Call("POST", "/v1/admin/tokens", {{"scopes", {"work"}}, {"name", "x"}});
  CHECK(unknown.status == 400);
  CHECK(unknown.body["detail"] == "unknown field 'name'");
  for (const json& bad : {json{{"scopes", {"submit"}}, {"tenant", ".."}},
                          json{{"scopes", {"submit"}}, {"tenant", "a b"}},
                          json{{"scopes", {"submit"}}, {"tenant", std::string(129, 't')}},
                          json{{"scopes", {"work"}}, {"queues", {"."}}}}) {
    INFO(bad.dump());
    CHECK(f.Call("POST", "/v1/admin/tokens", bad).status == 400);
  }
  CHECK(f.Call("GET", "/v1/admin/tokens").body["tokens"].size() == 1);  // only the first
}

TEST_CASE("routes: a policy's tenants are tenant names, on PUT and :simulate") {
  RoutesFixture f;
  REQUIRE(f.Call("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"tenants", {{"acme", {{"rate", 2}}}}}})
              .status == 200);
  const json bad = {{"rate", 1}, {"tenants", {{"a b", {{"rate", 2}}}}}};
  Answer put = f.Call("PUT", "/v1/admin/queues/q", bad);
  CHECK(put.status == 400);
  CHECK(Has(put.body, "tenant name 'a b'"));
  CHECK(f.Call("GET", "/v1/admin/queues/q").body["version"] == 1);  // unchanged
  CHECK(f.Call("POST", "/v1/admin/queues/q:simulate", bad).status == 400);
  Answer sim = f.Call("POST", "/v1/admin/queues/q:simulate", {{"rate", 1}, {"surprise", 1}});
  CHECK(sim.status == 400);
  CHECK(Has(sim.body, "surprise"));
}

}  // namespace
}  // namespace sluice::testing
