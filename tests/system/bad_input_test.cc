// Hostile input against the real sluiced (issue 14): a table of malformed or hostile
// requests (JSON, names, times, HTTP framing, auth, scopes, tenant isolation, the
// worker protocol, honest 429s) plus positive controls, run under both log formats.
// Every case checks the status, the `error` code, the problem+json shape, that the
// server is still up and that no job was created; afterwards every log line is valid
// UTF-8 (and, in the json format, a JSON object).
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/utf8.h"
#include "tests/testutil/raw_http.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

constexpr int kMaxBodyBytes = 204800;  // room for the 100k-deep payload, small enough to pass
constexpr int kMaxWaitMs = 2000;
const std::string kWrongLease = "lse_000000000000000000000000";

// One request of the table and what it must get.
struct Case {
  std::string name;
  // Either a whole request (`raw`, placeholders substituted, sent as is) or its parts
  // (rendered by BuildRequest after substitution, so Content-Length stays right).
  std::string raw;
  std::string method, target, token, body;
  std::vector<std::string> headers;

  std::vector<std::pair<int, std::string>> want;  // acceptable (status, error); "" = success
  std::string allow;                              // methods the Allow header must list
  bool www_authenticate = false;
  bool retry_after = false;
  bool no_body = false;
  int jobs_created = 0;

  Case& Want(int status, std::string error = "") {
    want.emplace_back(status, std::move(error));
    return *this;
  }
  Case& Bad() { return Want(400, "bad_request"); }
  Case& Allow(std::string methods) {
    allow = std::move(methods);
    return *this;
  }
  Case& Unauthorized() {
    www_authenticate = true;
    return Want(401, "unauthorized");
  }
  Case& RetryAfter() {
    retry_after = true;
    return *this;
  }
  Case& NoBody() {
    no_body = true;
    return *this;
  }
  Case& Creates(int jobs) {
    jobs_created = jobs;
    return *this;
  }
  Case& Header(std::string h) {
    headers.push_back(std::move(h));
    return *this;
  }
};

// A request by parts; `token` is a placeholder name ("SUBMIT") or "" for none.
Case Req(std::string name, std::string method, std::string target, std::string token = "",
         std::string body = "") {
  Case c;
  c.name = std::move(name);
  c.method = std::move(method);
  c.target = std::move(target);
  c.token = std::move(token);
  c.body = std::move(body);
  return c;
}

Case Raw(std::string name, std::string bytes) {
  Case c;
  c.name = std::move(name);
  c.raw = std::move(bytes);
  return c;
}

std::string Nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inner +
         std::string(static_cast<size_t>(depth), ']');
}

// A JSON endpoint and a body it would take, for the JSON classes run on every endpoint.
struct Endpoint {
  std::string label, method, target, token;
  std::string fields;    // valid members, without braces
  std::string dup;       // a known member, duplicated at the top level
  std::string nested;    // members with a duplicate key inside a nested object ("": none)
  std::string deep;      // a member whose value nests (depth) levels: "%" is replaced
  std::string bad_utf8;  // members with ill-formed UTF-8 inside a string
};

std::vector<Endpoint> JsonEndpoints() {
  // A valid intake layer, its closing brace left off for members to be added.
  const std::string layer =
      "{\"name\":\"a\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_s\":60,"
      "\"key\":[\"ip\"]";
  const std::string lease = "\"lease_id\":\"" + kWrongLease + "\"";
  return {
      {"submit", "POST", "/v1/queues/q/jobs", "SUBMIT", "\"payload\":1", "\"cost\":1,\"cost\":1",
       "\"payload\":{\"a\":1,\"a\":2}", "\"payload\":%", "\"payload\":\"\xFF\""},
      {"batch submit", "POST", "/v1/queues/q/jobs:batch", "SUBMIT", "\"jobs\":[{\"payload\":1}]",
       "\"jobs\":[{\"payload\":1}],\"jobs\":[]", "\"jobs\":[{\"payload\":1,\"payload\":2}]",
       "\"jobs\":[{\"payload\":%}]", "\"jobs\":[{\"idempotency_key\":\"k\xFF\"}]"},
      {"lease", "POST", "/v1/leases", "WORK", "\"queues\":[\"qb\"],\"wait_ms\":0",
       "\"queues\":[\"qb\"],\"wait_ms\":0,\"wait_ms\":0", "",
       "\"queues\":[\"qb\"],\"wait_ms\":0,\"worker_id\":%",
       "\"queues\":[\"qb\"],\"wait_ms\":0,\"worker_id\":\"w\xC3\x28\""},
      {"heartbeat", "POST", "/v1/jobs/${LEASED}/heartbeat", "WORK", lease, lease + "," + lease, "",
       lease + ",\"extend_ms\":%", "\"lease_id\":\"lse_\xFF\""},
      {"complete", "POST", "/v1/jobs/${LEASED}/complete", "WORK", lease, lease + "," + lease,
       lease + ",\"result\":{\"x\":{\"a\":1,\"a\":2}}", lease + ",\"result\":%",
       lease + ",\"result\":\"\xED\xA0\x80\""},
      {"fail", "POST", "/v1/jobs/${LEASED}/fail", "WORK", lease + ",\"error\":\"e\"",
       lease + ",\"error\":\"e\",\"error\":\"e\"", "", lease + ",\"error\":%",
       lease + ",\"error\":\"\xC0\xAF\""},
      {"policy PUT", "PUT", "/v1/admin/queues/scratch", "ADMIN", "\"rate\":5",
       "\"rate\":5,\"rate\":5", "\"rate\":5,\"tenants\":{\"acme\":{\"rate\":1,\"rate\":2}}",
       "\"rate\":5,\"tenants\":%", "\"rate\":5,\"tenants\":{\"\xFF\":{\"rate\":1}}"},
      {"tokens", "POST", "/v1/admin/tokens", "ADMIN", "\"scopes\":[\"submit\"],\"tenant\":\"t\"",
       "\"scopes\":[\"submit\"],\"tenant\":\"t\",\"tenant\":\"t\"", "",
       "\"scopes\":[\"submit\"],\"tenant\":\"t\",\"queues\":%",
       "\"scopes\":[\"submit\"],\"tenant\":\"t\xFE\""},
      {"simulate", "POST", "/v1/admin/queues/q:simulate", "ADMIN", "\"rate\":5",
       "\"rate\":5,\"rate\":5", "\"rate\":5,\"tenants\":{\"acme\":{\"rate\":1,\"rate\":2}}",
       "\"rate\":5,\"tenants\":%", "\"rate\":5,\"tenants\":{\"\xFF\":{\"rate\":1}}"},
      {"limits PUT", "PUT", "/v1/admin/limits", "ADMIN", "\"layers\":[" + layer + "}]",
       "\"layers\":[],\"layers\":[]", "\"layers\":[" + layer + ",\"name\":\"b\"}]", "\"layers\":%",
       "\"layers\":[" + layer + ",\"cost\":{\"\xFF\":1}}]"},
  };
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::vector<Case> JsonCases() {
  std::vector<Case> out;
  for (const Endpoint& e : JsonEndpoints()) {
    auto add = [&](const std::string& what, const std::string& body) {
      out.push_back(Req("json/" + e.label + ": " + what, e.method, e.target, e.token, body).Bad());
    };
    const std::string obj = "{" + e.fields + "}";
    add("not JSON", "this is not json");
    add("an array, not an object", "[" + obj + "]");
    add("a string, not an object", "\"" + e.label + "\"");
    add("duplicate top-level key", "{" + e.dup + "}");
    if (!e.nested.empty()) add("duplicate nested key", "{" + e.nested + "}");
    add("a second value after the object", obj + " {}");
    add("garbage after the object", obj + "x");
    add("a NUL and garbage after the object", obj + std::string(1, '\0') + "garbage");
    // The top-level object is level 1, so 64 nested arrays make 65 levels.
    add("65 levels of nesting", "{" + ReplaceAll(e.deep, "%", Nested(64)) + "}");
    add("ill-formed UTF-8 in a string", "{" + e.bad_utf8 + "}");
    add("an unknown field", "{" + e.fields + ",\"bogus\":1}");
  }
  // The crash of the issue: 100k arrays deep, far under the body limit.
  out.push_back(Req("json/submit: 100k levels of nesting", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"payload\":" + Nested(100000) + "}")
                    .Bad());
  out.push_back(Req("json/submit: 100k unclosed arrays", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"payload\":" + std::string(100000, '['))
                    .Bad());
  out.push_back(Req("json/complete: 100k levels of nesting in result", "POST",
                    "/v1/jobs/${LEASED}/complete", "WORK",
                    "{\"lease_id\":\"" + kWrongLease + "\",\"result\":" + Nested(100000) + "}")
                    .Bad());

  // Numbers that do not fit their field.
  for (const char* n : {"1e400", "18446744073709551615", "9223372036854775808", "1.5", "-1"}) {
    out.push_back(Req(std::string("json/submit: cost ") + n, "POST", "/v1/queues/q/jobs", "SUBMIT",
                      std::string("{\"payload\":1,\"cost\":") + n + "}")
                      .Bad());
  }
  out.push_back(Req("json/submit: deadline_in_ms 9223372036854775808", "POST", "/v1/queues/q/jobs",
                    "SUBMIT", "{\"deadline_in_ms\":9223372036854775808}")
                    .Bad());
  out.push_back(Req("json/submit: max_attempts 1.5", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"max_attempts\":1.5}")
                    .Bad());
  out.push_back(Req("json/submit: lease_ms 1e400", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"lease_ms\":1e400}")
                    .Bad());
  out.push_back(Req("json/submit: cost as a string", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"cost\":\"1\"}")
                    .Bad());
  out.push_back(Req("json/lease: max_jobs 1.5", "POST", "/v1/leases", "WORK",
                    "{\"queues\":[\"qb\"],\"wait_ms\":0,\"max_jobs\":1.5}")
                    .Bad());
  out.push_back(Req("json/lease: wait_ms 1e400", "POST", "/v1/leases", "WORK",
                    "{\"queues\":[\"qb\"],\"wait_ms\":1e400}")
                    .Bad());
  out.push_back(Req("json/heartbeat: extend_ms 18446744073709551615", "POST",
                    "/v1/jobs/${LEASED}/heartbeat", "WORK",
                    "{\"lease_id\":\"" + kWrongLease + "\",\"extend_ms\":18446744073709551615}")
                    .Bad());
  out.push_back(Req("json/policy PUT: rate 1e400", "PUT", "/v1/admin/queues/scratch", "ADMIN",
                    "{\"rate\":1e400}")
                    .Bad());
  out.push_back(Req("json/policy PUT: capacity 18446744073709551615", "PUT",
                    "/v1/admin/queues/scratch", "ADMIN",
                    "{\"rate\":5,\"capacity\":18446744073709551615}")
                    .Bad());
  out.push_back(Req("json/policy PUT: burst -1", "PUT", "/v1/admin/queues/scratch", "ADMIN",
                    "{\"rate\":5,\"burst\":-1}")
                    .Bad());

  // Intake layers: numbers that do not fit, and a cost the layer cannot ever admit.
  const std::string limits_head =
      "{\"layers\":[{\"name\":\"a\",\"algorithm\":\"fixed_window\",\"key\":[\"ip\"],";
  for (const char* members :
       {"\"limit\":1e400,\"window_s\":60", "\"limit\":18446744073709551615,\"window_s\":60",
        "\"limit\":5,\"window_s\":1e400", "\"limit\":5,\"window_s\":-1",
        "\"limit\":5,\"window_s\":60,\"cost\":{\"read\":6}"}) {
    out.push_back(Req(std::string("json/limits PUT: ") + members, "PUT", "/v1/admin/limits",
                      "ADMIN", limits_head + members + "}]}")
                      .Bad());
  }

  // A policy PUT with read-only fields (pause/resume have their own routes).
  for (const char* field : {"\"name\":\"scratch\"", "\"version\":1", "\"paused\":false",
                            "\"stats\":{}", "\"totals\":{}"}) {
    out.push_back(Req(std::string("json/policy PUT: read-only ") + field, "PUT",
                      "/v1/admin/queues/scratch", "ADMIN",
                      std::string("{\"rate\":5,") + field + "}")
                      .Bad());
  }
  return out;
}

std::vector<Case> NameCases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, std::string>> names = {
      {".", "."},
      {"..", ".."},
      {"%2E", "%2E"},
      {"%2E%2E", "%2E%2E"},
      {"65 characters", std::string(65, 'a')},
      {"%01", "%01"},
      {"%FF", "%FF"},
      {"%C0%AF", "%C0%AF"},
  };
  for (const auto& [label, name] : names) {
    out.push_back(Req("names/submit to queue " + label, "POST", "/v1/queues/" + name + "/jobs",
                      "SUBMIT", "{\"payload\":1}")
                      .Bad());
    out.push_back(
        Req("names/PUT queue " + label, "PUT", "/v1/admin/queues/" + name, "ADMIN", "{\"rate\":5}")
            .Bad());
    out.push_back(
        Req("names/GET queue " + label, "GET", "/v1/admin/queues/" + name, "ADMIN").Bad());
  }
  for (const std::string& name : {std::string("%FF"), std::string(".."), std::string(65, 'b')}) {
    const std::string base = "/v1/admin/queues/" + name;
    out.push_back(Req("names/DELETE queue " + name.substr(0, 8), "DELETE", base, "ADMIN").Bad());
    out.push_back(
        Req("names/tenants of queue " + name.substr(0, 8), "GET", base + "/tenants", "ADMIN")
            .Bad());
    out.push_back(
        Req("names/pause queue " + name.substr(0, 8), "POST", base + "/pause", "ADMIN").Bad());
    out.push_back(
        Req("names/resume queue " + name.substr(0, 8), "POST", base + "/resume", "ADMIN").Bad());
    out.push_back(Req("names/simulate queue " + name.substr(0, 8), "POST", base + ":simulate",
                      "ADMIN", "{\"rate\":5}")
                      .Bad());
  }
  for (const auto& [label, q] : std::vector<std::pair<std::string, std::string>>{
           {".", "\".\""},
           {"..", "\"..\""},
           {"empty", "\"\""},
           {"65 characters", "\"" + std::string(65, 'c') + "\""},
           {"a control character", "\"q\\u0001\""},
           {"raw 0xFF", "\"q\xFF\""}}) {
    out.push_back(Req("names/lease of queue " + label, "POST", "/v1/leases", "WORK",
                      "{\"queues\":[" + q + "],\"wait_ms\":0}")
                      .Bad());
  }
  // Job and token ids: the route's 404 or a 400, never a 500.
  auto id_case = [&](std::string name, std::string method, std::string target, std::string token,
                     std::string body = "") {
    out.push_back(Req(std::move(name), std::move(method), std::move(target), std::move(token),
                      std::move(body))
                      .Want(404, "not_found")
                      .Bad());
  };
  id_case("names/GET job %FF", "GET", "/v1/jobs/%FF", "ADMIN");
  id_case("names/GET job garbage", "GET", "/v1/jobs/job_%00%22%3C%3E", "ADMIN");
  id_case("names/DELETE job %FF", "DELETE", "/v1/jobs/job_%FF", "SUBMIT");
  id_case("names/complete job %C0%AF", "POST", "/v1/jobs/%C0%AF/complete", "WORK",
          "{\"lease_id\":\"" + kWrongLease + "\"}");
  id_case("names/retry job %FF", "POST", "/v1/admin/jobs/%FF/retry", "ADMIN");
  id_case("names/revoke token %FF", "DELETE", "/v1/admin/tokens/tok_%FF", "ADMIN");
  id_case("names/revoke token garbage", "DELETE", "/v1/admin/tokens/..%2F..%2Fx", "ADMIN");

  out.push_back(Req("names/Idempotency-Key with a control character", "POST", "/v1/queues/q/jobs",
                    "SUBMIT", "{\"payload\":1}")
                    .Header("Idempotency-Key: key\x01one")
                    .Bad());
  out.push_back(Req("names/Idempotency-Key of 256 bytes", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"payload\":1}")
                    .Header("Idempotency-Key: " + std::string(256, 'k'))
                    .Bad());
  out.push_back(Req("names/Idempotency-Key with ill-formed UTF-8", "POST", "/v1/queues/q/jobs",
                    "SUBMIT", "{\"payload\":1}")
                    .Header("Idempotency-Key: key\xFF")
                    .Bad());
  out.push_back(Req("names/worker_id with a control character", "POST", "/v1/leases", "WORK",
                    "{\"queues\":[\"qb\"],\"wait_ms\":0,\"worker_id\":\"w\\u0007\"}")
                    .Bad());
  out.push_back(Req("names/token tenant ..", "POST", "/v1/admin/tokens", "ADMIN",
                    "{\"scopes\":[\"submit\"],\"tenant\":\"..\"}")
                    .Bad());
  out.push_back(Req("names/token tenant with a control character", "POST", "/v1/admin/tokens",
                    "ADMIN", "{\"scopes\":[\"submit\"],\"tenant\":\"a\\u0000b\"}")
                    .Bad());
  return out;
}

std::vector<Case> TimeCases() {
  std::vector<Case> out;
  // Impossible dates, offsets and years; most in the future, so that a parser that
  // rolls them over would admit the job rather than refuse it for another reason.
  for (const char* t :
       {"2026-02-31T00:00:00Z", "2027-02-29T00:00:00Z", "2099-04-31T00:00:00Z",
        "2099-06-01T00:00:00+24:00", "2099-06-01T00:00:00-24:00", "2099-06-01T00:00:00+23:60",
        "2099-06-01T25:00:00Z", "10000-01-01T00:00:00Z", "not-a-time"}) {
    out.push_back(Req(std::string("times/deadline ") + t, "POST", "/v1/queues/q/jobs", "SUBMIT",
                      std::string("{\"payload\":1,\"deadline\":\"") + t + "\"}")
                      .Bad());
  }
  out.push_back(Req("times/not_before 2026-13-01", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"not_before\":\"2026-13-01T00:00:00Z\"}")
                    .Bad());
  auto invalid = [&](std::string name, std::string body) {
    out.push_back(Req("times/" + name, "POST", "/v1/queues/q/jobs", "SUBMIT", std::move(body))
                      .Want(400, "deadline_invalid"));
  };
  invalid("deadline in the past", "{\"payload\":1,\"deadline\":\"2020-01-01T00:00:00Z\"}");
  invalid("deadline_in_ms 0", "{\"payload\":1,\"deadline_in_ms\":0}");
  invalid("deadline_in_ms -5", "{\"payload\":1,\"deadline_in_ms\":-5}");
  invalid("not_before after the deadline",
          "{\"payload\":1,\"not_before\":\"2099-06-01T00:00:00Z\","
          "\"deadline\":\"2099-01-01T00:00:00Z\"}");
  return out;
}

// Requests an HTTP client library would not send.
std::vector<Case> FramingCases() {
  std::vector<Case> out;
  const std::string close = "Connection: close\r\n";
  const std::string host = "Host: 127.0.0.1\r\n";
  auto either = [](Case c) { return c.Want(404, "not_found").Bad(); };
  out.push_back(either(Raw("http/raw 0xFF in a GET path",
                           "GET /v1/jobs/job_\xFF HTTP/1.1\r\n" + host +
                               "Authorization: Bearer ${ADMIN}\r\n" + close + "\r\n")));
  out.push_back(either(Raw("http/raw 0xFF in a GET path, unauthenticated",
                           "GET /\xFF HTTP/1.1\r\n" + host + close + "\r\n")));
  out.push_back(either(Raw("http/raw 0xFF in a PATCH path, unauthenticated",
                           "PATCH /v1/\xFF HTTP/1.1\r\n" + host + close + "\r\n")));
  out.push_back(either(Raw("http/raw 0xFF in a PATCH path of a job",
                           "PATCH /v1/jobs/\xFF\xFE HTTP/1.1\r\n" + host + close + "\r\n")));
  out.push_back(either(
      Raw("http/raw 0xFF in a POST path", "POST /v1/queues/\xFF/jobs HTTP/1.1\r\n" + host +
                                              "Authorization: Bearer ${SUBMIT}\r\nContent-Type: "
                                              "application/json\r\nContent-Length: 13\r\n" +
                                              close + "\r\n{\"payload\":1}")));
  out.push_back(either(
      Raw("http/raw 0xFF in a query", "GET /v1/jobs?queue=q\xFF HTTP/1.1\r\n" + host +
                                          "Authorization: Bearer ${ADMIN}\r\n" + close + "\r\n")));
  out.push_back(either(Req("http/%FF in a query", "GET", "/v1/jobs?queue=%FF", "ADMIN")));
  out.push_back(
      either(Raw("http/raw 0xFF in the X-Request-Id",
                 "GET /nope HTTP/1.1\r\n" + host + "X-Request-Id: id\xFF\r\n" + close + "\r\n")));
  out.push_back(
      Raw("http/HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\n" + close + "\r\n").Bad());
  out.push_back(Raw("http/HTTP/1.1 submit without Host",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\nAuthorization: Bearer ${SUBMIT}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 13\r\n" +
                        close + "\r\n{\"payload\":1}")
                    .Bad());
  out.push_back(Req("http/DELETE on /healthz", "DELETE", "/healthz")
                    .Want(405, "method_not_allowed")
                    .Allow("GET"));
  out.push_back(Req("http/PATCH on a job", "PATCH", "/v1/jobs/${JOB}", "ADMIN")
                    .Want(405, "method_not_allowed")
                    .Allow("GET,DELETE"));
  out.push_back(Req("http/GET on /v1/leases", "GET", "/v1/leases", "WORK")
                    .Want(405, "method_not_allowed")
                    .Allow("POST"));
  out.push_back(Req("http/GET on a submit path", "GET", "/v1/queues/q/jobs", "SUBMIT")
                    .Want(405, "method_not_allowed")
                    .Allow("POST"));
  out.push_back(Raw("http/not HTTP", "NOT-HTTP\r\n\r\n").Bad());
  out.push_back(
      Raw("http/request line without a target", "GET HTTP/1.1\r\n" + host + "\r\n").Bad());
  out.push_back(
      Raw("http/request line with a space in the target", "GET /a b HTTP/1.1\r\n" + host + "\r\n")
          .Bad());
  out.push_back(
      Raw("http/a NUL in the method", std::string("GE\0T / HTTP/1.1\r\n", 17) + host + "\r\n")
          .Bad());
  out.push_back(Raw("http/a header without a colon",
                    "GET /healthz HTTP/1.1\r\n" + host + "NoColonHere\r\n\r\n")
                    .Bad());
  out.push_back(Raw("http/broken chunked body",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Transfer-Encoding: chunked\r\n" +
                        close + "\r\nzz\r\n{\"payload\":1}\r\n0\r\n\r\n")
                    .Bad());
  out.push_back(Raw("http/chunk shorter than its size",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Transfer-Encoding: chunked\r\n" +
                        close + "\r\n3\r\n{\"payload\":1}\r\n0\r\n\r\n")
                    .Bad());
  out.push_back(Raw("http/Content-Length not a number",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Content-Length: thirteen\r\n" +
                        close + "\r\n{\"payload\":1}")
                    .Bad());
  out.push_back(Raw("http/Content-Length negative",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Content-Length: -13\r\n" +
                        close + "\r\n{\"payload\":1}")
                    .Bad());
  out.push_back(Raw("http/two different Content-Lengths",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Content-Length: 13\r\nContent-Length: 2\r\n" +
                        close + "\r\n{\"payload\":1}")
                    .Bad());
  out.push_back(Req("http/headers over the limit", "GET", "/healthz")
                    .Header("X-Filler: " + std::string(20000, 'f'))
                    .Bad()
                    .Want(431));
  out.push_back(Raw("http/body over --max-body-bytes, announced",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Content-Length: " +
                        std::to_string(kMaxBodyBytes + 1) + "\r\n" + close + "\r\n{\"payload\":")
                    .Want(413, "payload_too_large"));
  out.push_back(Req("http/body over --max-body-bytes, sent", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"payload\":\"" + std::string(kMaxBodyBytes, 'p') + "\"}")
                    .Want(413, "payload_too_large"));
  out.push_back(Raw("http/chunked body over --max-body-bytes",
                    "POST /v1/queues/q/jobs HTTP/1.1\r\n" + host +
                        "Authorization: Bearer ${SUBMIT}\r\nContent-Type: application/json\r\n"
                        "Transfer-Encoding: chunked\r\n" +
                        close + "\r\n40000\r\n" + std::string(0x40000, ' ') + "\r\n0\r\n\r\n")
                    .Want(413, "payload_too_large"));
  out.push_back(Req("http/Content-Encoding gzip on a submit", "POST", "/v1/queues/q/jobs", "SUBMIT",
                    "{\"payload\":1}")
                    .Header("Content-Encoding: gzip")
                    .Want(415, "unsupported_media_type"));
  out.push_back(Req("http/Content-Encoding br on a policy PUT", "PUT", "/v1/admin/queues/scratch",
                    "ADMIN", "{\"rate\":5}")
                    .Header("Content-Encoding: br")
                    .Want(415, "unsupported_media_type"));
  return out;
}

std::vector<Case> AuthCases() {
  std::vector<Case> out;
  auto submit = [&](std::string name, std::string authorization) {
    Case c = Req("auth/" + std::move(name), "POST", "/v1/queues/q/jobs", "", "{\"payload\":1}");
    if (!authorization.empty()) c.Header("Authorization: " + authorization);
    out.push_back(c.Unauthorized());
  };
  submit("no Authorization header", "");
  submit("empty bearer token", "Bearer ");
  submit("unknown token", "Bearer tok_0000000000000000.000000000000000000000000000000000000000000");
  submit("a token without a dot", "Bearer notokenhere");
  submit("Basic credentials", "Basic dXNlcjpwYXNz");
  submit("a revoked token", "Bearer ${REVOKED}");
  submit("a token with ill-formed UTF-8", "Bearer tok_\xFF\xFE.abc");
  submit("a bearer scheme without a token", "Bearer");
  out.push_back(Req("auth/admin API without a token", "GET", "/v1/admin/queues").Unauthorized());
  out.push_back(Req("auth/lease without a token", "POST", "/v1/leases", "",
                    "{\"queues\":[\"qb\"],\"wait_ms\":0}")
                    .Unauthorized());
  out.push_back(Req("auth/metrics with an unknown token", "GET", "/metrics", "")
                    .Header("Authorization: Bearer nope.nope")
                    .Unauthorized());

  auto forbidden = [&](std::string name, std::string method, std::string target, std::string token,
                       std::string body = "") {
    out.push_back(Req("scopes/" + std::move(name), std::move(method), std::move(target),
                      std::move(token), std::move(body))
                      .Want(403, "forbidden"));
  };
  forbidden("a work token submitting", "POST", "/v1/queues/q/jobs", "WORK", "{\"payload\":1}");
  forbidden("a submit token on the admin API", "GET", "/v1/admin/queues", "SUBMIT");
  forbidden("a submit token putting a policy", "PUT", "/v1/admin/queues/scratch", "SUBMIT",
            "{\"rate\":5}");
  forbidden("a submit token minting a token", "POST", "/v1/admin/tokens", "SUBMIT",
            "{\"scopes\":[\"admin\"]}");
  forbidden("a submit token leasing", "POST", "/v1/leases", "SUBMIT",
            "{\"queues\":[\"qb\"],\"wait_ms\":0}");
  forbidden("a work token for queue qa leasing qb", "POST", "/v1/leases", "WORK_QA",
            "{\"queues\":[\"qb\"],\"wait_ms\":0}");
  forbidden("a work token for queue qa leasing qa and qb", "POST", "/v1/leases", "WORK_QA",
            "{\"queues\":[\"qa\",\"qb\"],\"wait_ms\":0}");

  auto isolated = [&](std::string name, std::string method, std::string target) {
    out.push_back(
        Req("tenants/" + std::move(name), std::move(method), std::move(target), "SUBMIT_B")
            .Want(404, "not_found"));
  };
  isolated("tenant B reading tenant A's job", "GET", "/v1/jobs/${JOB}");
  isolated("tenant B cancelling tenant A's job", "DELETE", "/v1/jobs/${JOB}");
  return out;
}

std::vector<Case> WorkerCases() {
  std::vector<Case> out;
  const std::string wrong = "{\"lease_id\":\"" + kWrongLease + "\"";
  auto ack = [&](std::string name, std::string verb, std::string body) {
    return Req("worker/" + std::move(name), "POST", "/v1/jobs/${LEASED}/" + verb, "WORK",
               std::move(body));
  };
  out.push_back(
      ack("complete with a wrong lease_id", "complete", wrong + "}").Want(409, "lease_lost"));
  out.push_back(
      ack("heartbeat with a wrong lease_id", "heartbeat", wrong + "}").Want(409, "lease_lost"));
  out.push_back(ack("fail with a wrong lease_id", "fail", wrong + ",\"error\":\"e\"}")
                    .Want(409, "lease_lost"));
  // Lease ids of today's form (common/random.h) name a seq, which SQLite reads the row
  // by: one naming no job, one naming the first job (not the leased one's lease).
  for (const std::string& named : {"lse_7fffffffffffffff" + std::string(24, '0'),
                                   "lse_0000000000000001" + std::string(24, '0')}) {
    const std::string with_seq = "{\"lease_id\":\"" + named + "\"";
    out.push_back(ack("complete with a lease_id naming a seq " + named.substr(4, 16), "complete",
                      with_seq + "}")
                      .Want(409, "lease_lost"));
    out.push_back(ack("heartbeat with a lease_id naming a seq " + named.substr(4, 16), "heartbeat",
                      with_seq + "}")
                      .Want(409, "lease_lost"));
    out.push_back(ack("fail with a lease_id naming a seq " + named.substr(4, 16), "fail",
                      with_seq + ",\"error\":\"e\"}")
                      .Want(409, "lease_lost"));
  }
  out.push_back(ack("complete without lease_id", "complete", "{\"result\":1}").Bad());
  out.push_back(ack("heartbeat without lease_id", "heartbeat", "{\"extend_ms\":1000}").Bad());
  out.push_back(ack("fail without lease_id", "fail", "{\"error\":\"e\"}").Bad());
  out.push_back(ack("lease_id not a string", "complete", "{\"lease_id\":17}").Bad());
  out.push_back(ack("retryable not a bool", "fail", wrong + ",\"retryable\":\"yes\"}").Bad());
  out.push_back(ack("retry_in_ms negative", "fail", wrong + ",\"retry_in_ms\":-1}").Bad());
  out.push_back(ack("extend_ms 0", "heartbeat", wrong + ",\"extend_ms\":0}").Bad());
  auto lease = [&](std::string name, std::string body) {
    return Req("worker/lease " + std::move(name), "POST", "/v1/leases", "WORK", std::move(body));
  };
  out.push_back(lease("with empty queues", "{\"queues\":[],\"wait_ms\":0}").Bad());
  out.push_back(lease("without queues", "{\"wait_ms\":0}").Bad());
  out.push_back(lease("with queues not an array", "{\"queues\":\"qb\",\"wait_ms\":0}").Bad());
  out.push_back(lease("max_jobs 0", "{\"queues\":[\"qb\"],\"wait_ms\":0,\"max_jobs\":0}").Bad());
  out.push_back(
      lease("max_jobs 101", "{\"queues\":[\"qb\"],\"wait_ms\":0,\"max_jobs\":101}").Bad());
  out.push_back(lease("wait_ms above --max-wait-ms",
                      "{\"queues\":[\"qb\"],\"wait_ms\":" + std::to_string(kMaxWaitMs + 1) + "}")
                    .Bad());
  out.push_back(lease("wait_ms -1", "{\"queues\":[\"qb\"],\"wait_ms\":-1}").Bad());
  out.push_back(lease("of an unknown queue", "{\"queues\":[\"nosuchqueue\"],\"wait_ms\":0}")
                    .Want(404, "not_found"));
  return out;
}

std::vector<Case> HonestRefusalCases() {
  std::vector<Case> out;
  out.push_back(
      Req("429/a full bucket", "POST", "/v1/queues/full/jobs", "SUBMIT", "{\"payload\":1}")
          .Want(429, "queue_full")
          .RetryAfter());
  out.push_back(Req("429/a deadline the backlog makes unreachable", "POST", "/v1/queues/slow/jobs",
                    "SUBMIT", "{\"payload\":1,\"deadline_in_ms\":60000}")
                    .Want(429, "deadline_unreachable")
                    .RetryAfter());
  out.push_back(Req("400/a job heavier than its bucket", "POST", "/v1/queues/full/jobs", "SUBMIT",
                    "{\"payload\":1,\"cost\":2}")
                    .Want(400, "cost_exceeds_capacity"));
  return out;
}

// The other way: what must be accepted.
std::vector<Case> PositiveCases() {
  std::vector<Case> out;
  out.push_back(Req("ok/lowercase bearer scheme reads a job", "GET", "/v1/jobs/${JOB}")
                    .Header("Authorization: bearer ${SUBMIT}")
                    .Want(200));
  out.push_back(Req("ok/uppercase BEARER scheme reads a job", "GET", "/v1/jobs/${JOB}")
                    .Header("Authorization: BEARER ${SUBMIT}")
                    .Want(200));
  out.push_back(Req("ok/lowercase bearer scheme submits", "POST", "/v1/queues/q/jobs", "",
                    "{\"payload\":\"lowercase\"}")
                    .Header("Content-Type: application/json")
                    .Header("Authorization: bearer ${SUBMIT}")
                    .Want(202)
                    .Creates(1));
  out.push_back(Req("ok/HEAD /healthz", "HEAD", "/healthz").Want(200).NoBody());
  out.push_back(Req("ok/HEAD of a job", "HEAD", "/v1/jobs/${JOB}", "SUBMIT").Want(200).NoBody());
  out.push_back(Raw("ok/absolute-form target",
                    "GET http://127.0.0.1:${PORT}/healthz HTTP/1.1\r\nHost: 127.0.0.1:${PORT}\r\n"
                    "Connection: close\r\n\r\n")
                    .Want(200));
  out.push_back(Raw("ok/HTTP/1.0 without Host", "GET /healthz HTTP/1.0\r\n\r\n").Want(200));
  out.push_back(Req("ok/Content-Encoding identity", "GET", "/v1/jobs/${JOB}", "SUBMIT")
                    .Header("Content-Encoding: identity")
                    .Want(200));
  return out;
}

std::vector<Case> AllCases() {
  std::vector<Case> all;
  for (auto part : {JsonCases(), NameCases(), TimeCases(), FramingCases(), AuthCases(),
                    WorkerCases(), HonestRefusalCases(), PositiveCases()}) {
    for (Case& c : part) all.push_back(std::move(c));
  }
  return all;
}

// A server set up for the table: queues, tokens, a queued job of tenant A and a job
// leased for a long time.
class Env {
 public:
  explicit Env(std::string format) : format_(std::move(format)) { Boot(); }
  ~Env() { Shutdown(); }

  // The server died: keep its log and start another, so later cases still run.
  void Restart() {
    Shutdown();
    Boot();
  }

  int port() const { return server_->port(); }
  std::string Substitute(std::string s) const {
    for (const auto& [name, value] : vars_) s = ReplaceAll(s, "${" + name + "}", value);
    return s;
  }
  std::string Render(const Case& c) const {
    if (!c.raw.empty()) return Substitute(c.raw);
    std::vector<std::string> headers;
    if (!c.token.empty()) headers.push_back("Authorization: Bearer ${" + c.token + "}");
    if (!c.body.empty()) headers.push_back("Content-Type: application/json");
    for (const std::string& h : c.headers) headers.push_back(h);
    for (std::string& h : headers) h = Substitute(h);
    return BuildRequest(c.method, Substitute(c.target), headers, Substitute(c.body));
  }

  RawResponse Send(const Case& c) const { return RawExchange(port(), Render(c)); }

  // Jobs in the store and, over all queues, admitted and queued totals; nullopt when
  // the server does not answer.
  std::optional<std::array<int64_t, 3>> Counts() const {
    const std::vector<std::string> auth = {"Authorization: Bearer " + vars_.at("ADMIN")};
    RawResponse jobs = RawExchange(port(), BuildRequest("GET", "/v1/jobs?limit=1000", auth));
    RawResponse queues = RawExchange(port(), BuildRequest("GET", "/v1/admin/queues", auth));
    if (jobs.status != 200 || queues.status != 200) return std::nullopt;
    json j = json::parse(jobs.body, nullptr, false);
    json q = json::parse(queues.body, nullptr, false);
    if (!j.is_object() || !j["jobs"].is_array() || !q.is_object() || !q["queues"].is_array()) {
      return std::nullopt;
    }
    std::array<int64_t, 3> out{static_cast<int64_t>(j["jobs"].size()), 0, 0};
    for (const json& queue : q["queues"]) {
      out[1] += queue["totals"]["admitted"].get<int64_t>();
      out[2] += queue["stats"]["queued"].get<int64_t>();
    }
    return out;
  }

  // Whether the server process still runs (a zombie has ended).
  bool Alive() const {
    std::ifstream stat("/proc/" + std::to_string(server_->pid()) + "/stat");
    std::string pid, comm, state;
    return static_cast<bool>(stat >> pid >> comm >> state) && state != "Z" && state != "X";
  }

  // Polls until the process has ended or `timeout` passed.
  void WaitForExit(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (Alive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  bool Healthy() const {
    return RawExchange(port(), BuildRequest("GET", "/healthz"), std::chrono::seconds(3)).status ==
           200;
  }

  // The logs of every server this Env ran, the current one last.
  std::vector<std::string> Logs() const {
    std::vector<std::string> logs = old_logs_;
    if (server_) logs.push_back(server_->ReadLog());
    return logs;
  }

 private:
  void Shutdown() {
    if (!server_) return;
    server_->Stop();
    old_logs_.push_back(server_->ReadLog());
    server_.reset();
  }

  void Boot() {
    ServerOptions options;
    options.extra_args = {"--log-format",     format_,
                          "--max-body-bytes", std::to_string(kMaxBodyBytes),
                          "--max-wait-ms",    std::to_string(kMaxWaitMs)};
    server_ = std::make_unique<ServerProcess>(options);
    auto http = server_->Client();
    const auto admin = Bearer(server_->admin_token());
    auto ok = [&](const HttpResult& r, int status) {
      INFO(r.body.dump());
      REQUIRE(r.status == status);
      return r.body;
    };
    for (const auto& [name, policy] : std::vector<std::pair<std::string, json>>{
             {"q", {{"rate", 1000}, {"capacity", 100000}}},
             {"qa", {{"rate", 1000}, {"capacity", 100}}},
             {"qb", {{"rate", 1000}, {"capacity", 100}}},
             {"lq", {{"rate", 1000}, {"capacity", 100}}},
             {"full", {{"rate", 0.001}, {"capacity", 1}}},
             {"slow", {{"rate", 0.001}, {"capacity", 1000}}}}) {
      ok(Call(*http, "PUT", "/v1/admin/queues/" + name, policy, admin), 200);
    }
    auto mint = [&](const json& body) {
      return ok(Call(*http, "POST", "/v1/admin/tokens", body, admin), 201);
    };
    vars_ = {{"ADMIN", server_->admin_token()}, {"PORT", std::to_string(server_->port())}};
    vars_["SUBMIT"] = mint({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
    vars_["SUBMIT_B"] = mint({{"scopes", {"submit"}}, {"tenant", "beta"}})["token"];
    vars_["WORK"] = mint({{"scopes", {"work"}}})["token"];
    vars_["WORK_QA"] = mint({{"scopes", {"work"}}, {"queues", {"qa"}}})["token"];
    json revoked = mint({{"scopes", {"submit"}}, {"tenant", "acme"}});
    vars_["REVOKED"] = revoked["token"];
    ok(Call(*http, "DELETE", "/v1/admin/tokens/" + revoked["id"].get<std::string>(), nullptr,
            admin),
       200);

    const auto submit = Bearer(vars_["SUBMIT"]);
    vars_["JOB"] =
        ok(Call(*http, "POST", "/v1/queues/q/jobs", {{"payload", "a's"}}, submit), 202)["id"];
    ok(Call(*http, "POST", "/v1/queues/full/jobs", {{"payload", "fills"}}, submit), 202);
    ok(Call(*http, "POST", "/v1/queues/slow/jobs", {{"payload", "backlog"}}, submit), 202);
    ok(Call(*http, "POST", "/v1/queues/lq/jobs", {{"payload", "leased"}, {"lease_ms", 3600000}},
            submit),
       202);
    json leased = ok(Call(*http, "POST", "/v1/leases",
                          {{"queues", {"lq"}}, {"wait_ms", kMaxWaitMs}, {"lease_ms", 3600000}},
                          Bearer(vars_["WORK"])),
                     200);
    REQUIRE(leased["jobs"].size() == 1);
    vars_["LEASED"] = leased["jobs"][0]["id"];
    vars_["LEASE"] = leased["jobs"][0]["lease_id"];
  }

  std::string format_;
  std::unique_ptr<ServerProcess> server_;
  std::map<std::string, std::string> vars_;
  std::vector<std::string> old_logs_;
};

std::string Summary(const RawResponse& r) {
  std::string s = r.status_line + "\n";
  for (const auto& [n, v] : r.headers) s += n + ": " + v + "\n";
  s += r.body.substr(0, 400);
  if (!r.error.empty()) s += "\n(client: " + r.error + ")";
  return SanitizeUtf8(s);
}

// Runs one case; returns what is wrong with the answer (empty: all as the contract says).
std::vector<std::string> RunCase(Env& env, const Case& c) {
  std::vector<std::string> problems;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) problems.push_back(what);
  };
  auto before = env.Counts();
  if (!before) {  // it died after the previous case answered
    env.Restart();
    before = env.Counts();
    REQUIRE(before.has_value());
  }
  RawResponse r = env.Send(c);

  std::string error;
  json body = json::parse(r.body, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    error = body["error"];
  }
  bool wanted = false;
  std::string want_text;
  for (const auto& [status, code] : c.want) {
    if (r.status == status && (code.empty() || code == error)) wanted = true;
    want_text += (want_text.empty() ? "" : " or ") + std::to_string(status) +
                 (code.empty() ? "" : " " + code);
  }
  expect(wanted, "status/error: want " + want_text + ", got " +
                     (r.status ? std::to_string(r.status) + " " + error : "no response"));
  expect(r.HasHeader("X-Request-Id"), "no X-Request-Id");

  if (r.status >= 400) {
    expect(r.Header("Content-Type") == "application/problem+json",
           "Content-Type is '" + r.Header("Content-Type") + "'");
    if (!body.is_object()) body = json::object();
    for (const char* field : {"type", "title", "error", "detail"}) {
      expect(body.contains(field) && body[field].is_string(),
             std::string("problem field '") + field + "' missing or not a string");
    }
    expect(body.contains("status") && body["status"] == r.status,
           "problem 'status' is not the HTTP status");
    if (body.contains("detail") && body["detail"].is_string()) {
      expect(IsValidUtf8(body["detail"].get<std::string>()), "detail is not valid UTF-8");
    }
  }
  if (!c.allow.empty()) {
    const std::string allow = r.Header("Allow");
    std::stringstream methods(c.allow);
    for (std::string m; std::getline(methods, m, ',');) {
      expect(allow.find(m) != std::string::npos, "Allow '" + allow + "' does not list " + m);
    }
  }
  if (c.www_authenticate) {
    expect(r.Header("WWW-Authenticate").rfind("Bearer", 0) == 0,
           "WWW-Authenticate is '" + r.Header("WWW-Authenticate") + "'");
  }
  if (c.retry_after) {
    const std::string after = r.Header("Retry-After");
    expect(!after.empty() && after.size() < 10 &&
               after.find_first_not_of("0123456789") == std::string::npos && std::stoll(after) >= 1,
           "Retry-After is '" + after + "', not a whole number of seconds >= 1");
  }
  if (c.no_body) expect(r.body.empty(), "a body came with the answer");

  // A crash may take a moment to end the process: without an answer, give it one.
  if (r.status == 0) env.WaitForExit(std::chrono::seconds(2));
  auto after = env.Alive() ? env.Counts() : std::nullopt;
  if (!after || !env.Healthy()) {
    problems.push_back("the server is down afterwards (restarted for the next case)");
    env.Restart();
    return problems;
  }
  const auto& b = *before;
  const auto& a = *after;
  expect(a[0] == b[0] + c.jobs_created && a[1] == b[1] + c.jobs_created &&
             a[2] == b[2] + c.jobs_created,
         "jobs listed/admitted/queued went from " + std::to_string(b[0]) + "/" +
             std::to_string(b[1]) + "/" + std::to_string(b[2]) + " to " + std::to_string(a[0]) +
             "/" + std::to_string(a[1]) + "/" + std::to_string(a[2]) + " (want +" +
             std::to_string(c.jobs_created) + ")");
  if (!problems.empty()) problems.push_back("response:\n" + Summary(r));
  return problems;
}

TEST_CASE("bad input: every hostile request is refused as the contract says, in both log formats",
          "[bad_input]") {
  const std::string format = GENERATE(as<std::string>{}, "text", "json");
  INFO("log format: " << format);
  const std::vector<Case> cases = AllCases();
  CHECK(cases.size() >= 90);
  Env env(format);
  std::string failed;
  size_t failures = 0;
  for (const Case& c : cases) {
    std::vector<std::string> problems = RunCase(env, c);
    std::string text;
    for (const std::string& p : problems) text += "\n  - " + p;
    INFO("case: " << c.name << text);
    CHECK(problems.empty());
    if (!problems.empty()) {
      ++failures;
      failed += "\n  " + c.name + ":";
      for (const std::string& p : problems) {
        if (p.rfind("response:", 0) != 0) failed += " " + p + ";";
      }
    }
  }
  {
    INFO(failures << " of " << cases.size() << " cases failed:" << failed);
    CHECK(failures == 0);
  }

  size_t lines = 0, bad_utf8 = 0, not_json = 0;
  std::string examples;
  for (const std::string& log : env.Logs()) {
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
      ++lines;
      const bool utf8 = IsValidUtf8(line);
      const bool object = format != "json" || json::parse(line, nullptr, false).is_object();
      bad_utf8 += utf8 ? 0 : 1;
      not_json += object ? 0 : 1;
      if ((!utf8 || !object) && examples.size() < 2000) {
        examples += "\n  " + SanitizeUtf8(line.substr(0, 300));
      }
    }
  }
  INFO(lines << " log lines; " << bad_utf8 << " not valid UTF-8, " << not_json
             << " not a JSON object; for example:" << examples);
  CHECK(bad_utf8 == 0);
  CHECK(not_json == 0);
  CHECK(lines > cases.size());  // the access log saw the table
}

}  // namespace
}  // namespace sluice::testing
