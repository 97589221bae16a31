// The route table: literal segments, captures, suffix captures, 404 versus 405.
#include "server/router.h"

#include <catch2/catch.hpp>

namespace sluice {
namespace {

Router Table() {
  Router r;
  auto none = [](const HttpRequest&, HttpResponse&) {};
  r.Add("GET", "/healthz", none);
  r.Add("POST", "/v1/queues/{}/jobs", none);
  r.Add("GET", "/v1/jobs/{}", none);
  r.Add("DELETE", "/v1/jobs/{}", none);
  r.Add("GET", "/v1/jobs", none);
  r.Add("POST", "/v1/admin/queues/{}:simulate", none);
  r.Add("GET", "/v1/admin/queues/{}", none);
  return r;
}

TEST_CASE("routes match literal segments and capture the others", "[router]") {
  Router r = Table();
  const Router::Route* route = nullptr;
  std::vector<std::string> caps;
  REQUIRE(r.Find("POST", "/v1/queues/report-export/jobs", &route, &caps) == Router::Found::kRoute);
  CHECK(route->method == "POST");
  CHECK(caps == std::vector<std::string>{"report-export"});

  REQUIRE(r.Find("DELETE", "/v1/jobs/job_1", &route, &caps) == Router::Found::kRoute);
  CHECK(route->method == "DELETE");
  CHECK(caps == std::vector<std::string>{"job_1"});

  REQUIRE(r.Find("GET", "/v1/jobs", &route, &caps) == Router::Found::kRoute);
  CHECK(caps.empty());
}

TEST_CASE("a suffix capture takes what precedes the suffix", "[router]") {
  Router r = Table();
  const Router::Route* route = nullptr;
  std::vector<std::string> caps;
  REQUIRE(r.Find("POST", "/v1/admin/queues/exports:simulate", &route, &caps) ==
          Router::Found::kRoute);
  CHECK(caps == std::vector<std::string>{"exports"});
  // A plain capture never swallows a ':' verb.
  CHECK(r.Find("GET", "/v1/admin/queues/exports:simulate", &route, &caps) ==
        Router::Found::kWrongMethod);
  CHECK(r.Find("POST", "/v1/admin/queues/:simulate", &route, &caps) == Router::Found::kNoPath);
}

TEST_CASE("unknown paths are 404, known paths with another verb 405", "[router]") {
  Router r = Table();
  const Router::Route* route = nullptr;
  std::vector<std::string> caps;
  CHECK(r.Find("GET", "/nope", &route, &caps) == Router::Found::kNoPath);
  CHECK(r.Find("GET", "/v1/queues//jobs", &route, &caps) == Router::Found::kNoPath);
  CHECK(r.Find("GET", "/v1/jobs/a/b", &route, &caps) == Router::Found::kNoPath);
  CHECK(r.Find("PUT", "/healthz", &route, &caps) == Router::Found::kWrongMethod);
  CHECK(r.Find("GET", "healthz", &route, &caps) == Router::Found::kNoPath);
}

TEST_CASE("captures and query parameters are percent-decoded", "[router]") {
  Router r = Table();
  const Router::Route* route = nullptr;
  std::vector<std::string> caps;
  REQUIRE(r.Find("GET", "/v1/jobs/a%2Fb%20c", &route, &caps) == Router::Found::kRoute);
  CHECK(caps == std::vector<std::string>{"a/b c"});
  auto q = ParseQuery("queue=report%2Dexport&state=queued&x=a+b&flag&bad=%zz");
  CHECK(q.find("queue")->second == "report-export");
  CHECK(q.find("state")->second == "queued");
  CHECK(q.find("x")->second == "a b");
  CHECK(q.find("flag")->second.empty());
  CHECK(q.find("bad")->second == "%zz");
}

TEST_CASE("header names compare without case", "[router]") {
  HttpRequest req;
  req.headers = {{"Idempotency-Key", "k1"}, {"authorization", "Bearer t"}};
  CHECK(req.has_header("idempotency-key"));
  CHECK(req.get_header_value("Authorization") == "Bearer t");
  CHECK(req.get_header_value("missing").empty());
  HttpResponse res;
  res.set_header("Retry-After", "3");
  CHECK(res.get_header_value("retry-after") == "3");
}

}  // namespace
}  // namespace sluice
