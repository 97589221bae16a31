// Admin and observability on the real sluiced (issue 6): tokens listed and revoked,
// queues deleted, totals, Prometheus /metrics, traceparent, and logs that never hold
// a token.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "common/crypto.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

struct Fixture {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();

  explicit Fixture(ServerOptions options = {}) : server(std::move(options)) {}
  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return Call(*http, method, path, body, Bearer(server.admin_token()));
  }
  json NewToken(const json& body) {
    auto r = Admin("POST", "/v1/admin/tokens", body);
    REQUIRE(r.status == 201);
    return r.body;
  }
  HttpResult Submit(const std::string& token, const std::string& queue, const json& body,
                    httplib::Headers headers = {}) {
    headers.emplace("Authorization", "Bearer " + token);
    return Call(*http, "POST", "/v1/queues/" + queue + "/jobs", body, headers);
  }
  std::string Metrics() {
    auto r = http->Get("/metrics", Bearer(server.admin_token()));
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(r->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
    return r->body;
  }
};

// The value of one sample line `name{labels} value` in an exposition, or -1.
double SampleValue(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST_CASE("admin: tokens are listed without secrets and revoked on the next request") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 100}, {"capacity", 10}}).status == 200);
  json minted = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}});
  const std::string token = minted["token"];
  REQUIRE(f.Submit(token, "q", {{"payload", 1}}).status == 202);

  auto list = f.Admin("GET", "/v1/admin/tokens");
  REQUIRE(list.status == 200);
  REQUIRE(list.body["tokens"].size() == 1);
  const json& t = list.body["tokens"][0];
  CHECK(t["id"] == minted["id"]);
  CHECK(t["tenant"] == "acme");
  CHECK(t["revoked_at"].is_null());
  CHECK(list.body.dump().find(token.substr(token.find('.') + 1)) == std::string::npos);
  CHECK_FALSE(t.contains("secret_hash"));

  auto revoked = f.Admin("DELETE", "/v1/admin/tokens/" + minted["id"].get<std::string>());
  REQUIRE(revoked.status == 200);
  CHECK(revoked.body["revoked_at"].is_string());
  auto refused = f.Submit(token, "q", {{"payload", 2}});
  CHECK(refused.status == 401);
  CHECK(refused.body["error"] == "unauthorized");
  CHECK(f.Admin("GET", "/v1/admin/tokens").body["tokens"][0]["revoked_at"].is_string());
  CHECK(f.Admin("DELETE", "/v1/admin/tokens/tok_nosuch").status == 404);
}

TEST_CASE("admin: a queue with work cannot be deleted; an idle one can") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 10}}).status == 200);
  std::string token = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
  auto job = f.Submit(token, "q", {{"payload", 1}});
  REQUIRE(job.status == 202);
  auto busy = f.Admin("DELETE", "/v1/admin/queues/q");
  CHECK(busy.status == 409);
  CHECK(busy.body["error"] == "conflict");
  REQUIRE(Call(*f.http, "DELETE", "/v1/jobs/" + job.body["id"].get<std::string>(), nullptr,
               Bearer(token))
              .status == 200);
  CHECK(f.Admin("DELETE", "/v1/admin/queues/q").status == 200);
  CHECK(f.Admin("GET", "/v1/admin/queues/q").status == 404);
  CHECK(f.Admin("DELETE", "/v1/admin/queues/q").status == 404);
}

TEST_CASE("admin: totals per queue and tenant, and /metrics with them") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 2}}).status == 200);
  std::string acme = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
  std::string globex = f.NewToken({{"scopes", {"submit"}}, {"tenant", "globex"}})["token"];
  std::string work = f.NewToken({{"scopes", {"work"}}})["token"];
  for (int i = 0; i < 3; ++i) f.Submit(acme, "q", {{"payload", i}});  // the third is refused
  REQUIRE(f.Submit(globex, "q", {{"payload", 0}}).status == 202);
  auto leased =
      Call(*f.http, "POST", "/v1/leases", {{"queues", {"q"}}, {"max_jobs", 1}}, Bearer(work));
  REQUIRE(leased.status == 200);
  REQUIRE(leased.body["jobs"].size() == 1);
  const json& job = leased.body["jobs"][0];
  REQUIRE(Call(*f.http, "POST", "/v1/jobs/" + job["id"].get<std::string>() + "/complete",
               {{"lease_id", job["lease_id"]}}, Bearer(work))
              .status == 200);

  auto q = f.Admin("GET", "/v1/admin/queues/q");
  CHECK(q.body["totals"]["admitted"] == 3);
  CHECK(q.body["totals"]["rejected"] == 1);
  CHECK(q.body["totals"]["released"] == 1);
  CHECK(q.body["totals"]["succeeded"] == 1);
  auto tenants = f.Admin("GET", "/v1/admin/queues/q/tenants");
  int64_t admitted = 0;
  for (const json& t : tenants.body["tenants"]) admitted += t["totals"]["admitted"].get<int64_t>();
  CHECK(admitted == 3);

  std::string m = f.Metrics();
  const std::string leaser = job["tenant"];
  CHECK(SampleValue(m, "sluice_jobs_admitted_total{queue=\"q\",tenant=\"acme\"}") == 2);
  CHECK(SampleValue(m, "sluice_jobs_admitted_total{queue=\"q\",tenant=\"globex\"}") == 1);
  CHECK(SampleValue(m, "sluice_jobs_succeeded_total{queue=\"q\",tenant=\"" + leaser + "\"}") == 1);
  CHECK(SampleValue(
            m, "sluice_jobs_rejected_total{queue=\"q\",tenant=\"acme\",reason=\"queue_full\"}") ==
        1);
  CHECK(SampleValue(m, "sluice_queued_jobs{queue=\"q\",tenant=\"acme\"}") +
            SampleValue(m, "sluice_queued_jobs{queue=\"q\",tenant=\"globex\"}") ==
        2);
  CHECK(SampleValue(m, "sluice_release_lag_seconds_count") == 1);
  CHECK(SampleValue(m, "sluice_storage_commit_seconds_count") > 0);
  // synchronous FULL (the default) on a WAL file: the committer flushed the submits,
  // once per commit that had a durable operation.
  CHECK(SampleValue(m, "sluice_storage_flush_seconds_count") > 0);
  CHECK(SampleValue(m, "sluice_storage_flushed_commits_total") >=
        SampleValue(m, "sluice_storage_flush_seconds_count"));
  CHECK(m.find("sluice_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/queues/"
               "{}/jobs\",status=\"202\"}") != std::string::npos);
  CHECK(Call(*f.http, "GET", "/metrics").status == 401);
}

TEST_CASE("admin: a metrics token reads /metrics and the queue views, and changes nothing") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 5}}).status == 200);
  std::string acme = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
  REQUIRE(f.Submit(acme, "q", {{"payload", 1}}).status == 202);
  json minted = f.NewToken({{"scopes", {"metrics"}}});
  CHECK(minted["scopes"] == json::array({"metrics"}));
  CHECK(minted["tenant"].is_null());
  const std::string reader = minted["token"];

  // What it may read.
  auto scrape = f.http->Get("/metrics", Bearer(reader));
  REQUIRE(scrape);
  CHECK(scrape->status == 200);
  CHECK(SampleValue(scrape->body, "sluice_queued_jobs{queue=\"q\",tenant=\"acme\"}") == 1);
  CHECK(SampleValue(scrape->body, "process_resident_memory_bytes") > 0);
  CHECK(SampleValue(scrape->body, "process_open_fds") > 0);
  CHECK(SampleValue(scrape->body, "process_start_time_seconds") > 0);
  CHECK(SampleValue(scrape->body, "process_cpu_seconds_total") >= 0);
  for (const char* path : {"/v1/admin/queues", "/v1/admin/queues/q", "/v1/admin/queues/q/tenants",
                           "/v1/admin/limits"}) {
    INFO(path);
    CHECK(Call(*f.http, "GET", path, nullptr, Bearer(reader)).status == 200);
  }

  // What it may not: every change, tokens, jobs (payloads) and the dry-run.
  const json policy = {{"rate", 100}, {"capacity", 100}};
  struct Refused {
    const char* method;
    std::string path;
    json body;
  };
  auto queued = f.Admin("GET", "/v1/jobs?queue=q");
  REQUIRE(queued.body["jobs"].size() == 1);
  const std::string job = queued.body["jobs"][0]["id"];
  const std::vector<Refused> refused = {
      {"PUT", "/v1/admin/queues/q", policy},
      {"PUT", "/v1/admin/queues/new", policy},
      {"DELETE", "/v1/admin/queues/q", nullptr},
      {"POST", "/v1/admin/queues/q/pause", nullptr},
      {"POST", "/v1/admin/queues/q:simulate", policy},
      {"POST", "/v1/admin/tokens", {{"scopes", {"admin"}}}},
      {"GET", "/v1/admin/tokens", nullptr},
      {"DELETE", "/v1/admin/tokens/" + minted["id"].get<std::string>(), nullptr},
      {"PUT", "/v1/admin/limits", {{"layers", json::array()}}},
      {"GET", "/v1/jobs", nullptr},
      {"GET", "/v1/jobs/" + job, nullptr},
      {"DELETE", "/v1/jobs/" + job, nullptr},
      {"POST", "/v1/admin/jobs/" + job + "/retry", nullptr},
      {"POST", "/v1/queues/q/jobs", {{"payload", 1}}},
      {"POST", "/v1/leases", {{"queues", {"q"}}}},
  };
  for (const Refused& r : refused) {
    INFO(r.method << " " << r.path);
    auto answer = Call(*f.http, r.method, r.path, r.body, Bearer(reader));
    CHECK(answer.status == 403);
    CHECK(answer.body["error"] == "forbidden");
  }
  // Nothing changed: the queue, its job and the tokens are as they were.
  auto q = f.Admin("GET", "/v1/admin/queues/q");
  CHECK(q.body["version"] == 1);
  CHECK(q.body["paused"] == false);
  CHECK(f.Admin("GET", "/v1/jobs/" + job).body["state"] == "queued");
  CHECK(f.Admin("GET", "/v1/admin/tokens").body["tokens"].size() == 2);
}

TEST_CASE("admin: /metrics passes promtool's check, le labels and process metrics included") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 5}}).status == 200);
  std::string acme = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
  REQUIRE(f.Submit(acme, "q", {{"payload", 1}}).status == 202);
  const std::string text = f.Metrics();
  CHECK(text.find("le=\"0.00025\"") != std::string::npos);
  // No bound prints as 0.00025000000000000001 (the %.17g of old).
  CHECK_FALSE(std::regex_search(text, std::regex("le=\"[0-9.]*0000000[1-9]")));
  TempDir dir;
  const std::string scrape = dir.path() + "/scrape.txt";
  std::ofstream(scrape) << text;
  Subprocess check({"promtool", "check", "metrics"}, {},
                   Streams{scrape, dir.path() + "/out.txt", dir.path() + "/err.txt"});
  auto status = check.Wait(std::chrono::seconds(30));
  std::ifstream err(dir.path() + "/err.txt");
  std::string problems((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  INFO(problems);
  REQUIRE(status);
  CHECK(*status == 0);
}

TEST_CASE("admin: tenant labels are capped; the rest count as tenant=\"other\"") {
  ServerOptions options;
  options.extra_args = {"--metrics-max-tenants", "2"};
  Fixture f(options);
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 100}}).status == 200);
  for (int i = 0; i < 5; ++i) {
    std::string t =
        f.NewToken({{"scopes", {"submit"}}, {"tenant", "t" + std::to_string(i)}})["token"];
    for (int k = 0; k <= i; ++k) REQUIRE(f.Submit(t, "q", {{"payload", k}}).status == 202);
  }
  std::string m = f.Metrics();
  std::set<std::string> tenants;
  std::regex label("sluice_queued_jobs\\{queue=\"q\",tenant=\"([^\"]+)\"\\}");
  for (std::sregex_iterator it(m.begin(), m.end(), label), end; it != end; ++it) {
    tenants.insert((*it)[1]);
  }
  // The two deepest keep their names: t4 (5 jobs) and t3 (4); t0..t2 (6 jobs) are other.
  CHECK(tenants == std::set<std::string>{"t4", "t3", "other"});
  CHECK(SampleValue(m, "sluice_queued_jobs{queue=\"q\",tenant=\"other\"}") == 6);
}

TEST_CASE("admin: a traceparent given at submit reaches the worker with the lease") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 100}, {"capacity", 10}}).status == 200);
  std::string acme = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
  std::string work = f.NewToken({{"scopes", {"work"}}})["token"];
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto job = f.Submit(acme, "q", {{"payload", 1}}, {{"traceparent", tp}});
  REQUIRE(job.status == 202);
  CHECK(job.body["traceparent"] == tp);
  auto bad = f.Submit(acme, "q", {{"payload", 2}}, {{"traceparent", "not-a-trace"}});
  REQUIRE(bad.status == 202);
  CHECK(bad.body["traceparent"].is_null());  // malformed: ignored, as W3C says
  std::map<std::string, json> by_id;         // leases, one release at a time at 100/s
  for (int i = 0; i < 10 && by_id.size() < 2; ++i) {
    auto leased = Call(*f.http, "POST", "/v1/leases",
                       {{"queues", {"q"}}, {"max_jobs", 2}, {"wait_ms", 1000}}, Bearer(work));
    REQUIRE(leased.status == 200);
    for (const json& j : leased.body["jobs"]) by_id[j["id"]] = j;
  }
  REQUIRE(by_id.size() == 2);
  CHECK(by_id[job.body["id"]]["traceparent"] == tp);
  CHECK(by_id[bad.body["id"]]["traceparent"].is_null());
}

TEST_CASE("admin: a policy dry-run projects drain times and deadline misses, changing nothing") {
  Fixture f;
  REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 10}, {"capacity", 100}}).status == 200);
  std::string acme = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}})["token"];
  for (int i = 0; i < 5; ++i) {
    REQUIRE(f.Submit(acme, "q", {{"payload", i}, {"deadline_in_ms", 2000}}).status == 202);
  }
  auto sim = f.Admin("POST", "/v1/admin/queues/q:simulate", {{"rate", 1}, {"capacity", 100}});
  REQUIRE(sim.status == 200);
  CHECK(sim.body["current"]["missed_deadlines"] == 0);
  CHECK(sim.body["current"]["drain_seconds"].get<double>() <= 0.5);
  // At 1/s the jobs leave at about +0, +1, +2, +3, +4 s: the last three miss +2 s.
  CHECK(sim.body["proposed"]["missed_deadlines"] == 3);
  CHECK(sim.body["proposed"]["drain_seconds"].get<double>() >= 3.5);
  REQUIRE(sim.body["tenants"].size() == 1);
  CHECK(sim.body["tenants"][0]["tenant"] == "acme");
  CHECK(sim.body["tenants"][0]["queued"] == 5);
  auto q = f.Admin("GET", "/v1/admin/queues/q");
  CHECK(q.body["version"] == 1);
  CHECK(q.body["rate"] == 10.0);
  CHECK(f.Admin("POST", "/v1/admin/queues/q:simulate", {{"rate", -1}}).status == 400);
  CHECK(f.Admin("POST", "/v1/admin/queues/nope:simulate", {{"rate", 1}}).status == 404);
}

TEST_CASE("admin: queues and tokens declared in the config file, once") {
  TempDir dir;
  const std::string token = "tok_cfg.a-long-random-secret-for-the-test";
  json config = {{"queues", {{"exports", {{"rate", 5}, {"capacity", 10}}}}},
                 {"tokens",
                  {{{"id", "tok_cfg"},
                    {"sha256", Sha256Hex(token)},
                    {"scopes", {"submit"}},
                    {"tenant", "acme"}}}}};
  const std::string path = dir.File("sluice.json");
  std::ofstream(path) << config.dump();
  ServerOptions options;
  options.db_path = dir.File("sluice.db");
  options.extra_args = {"--config", path};
  for (int start = 0; start < 2; ++start) {  // a restart applies the file again
    Fixture f(options);
    REQUIRE(f.Submit(token, "exports", {{"payload", start}}).status == 202);
    CHECK(f.Admin("GET", "/v1/admin/tokens").body["tokens"].size() == 1);
    CHECK(f.Admin("GET", "/v1/admin/queues/exports").body["version"] == 1);
  }
  // The same id with another secret: the server refuses to start.
  config["tokens"][0]["sha256"] = Sha256Hex("tok_cfg.another-secret");
  std::ofstream(path) << config.dump();
  const std::string cmd = std::string(SLUICED_BINARY) + " --listen 127.0.0.1:0 --db " +
                          options.db_path + " --config " + path + " 2>" + dir.File("err.log");
  CHECK(std::system(cmd.c_str()) != 0);
  std::ifstream err(dir.File("err.log"));
  std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  CHECK(text.find("another secret") != std::string::npos);
  CHECK(text.find("a-long-random-secret") == std::string::npos);
}

TEST_CASE("admin: what the config file declares is managed by it; a restart never undoes the API") {
  TempDir dir;
  const std::string token = "tok_cfg.a-long-random-secret-for-the-test";
  const json layers = {{"layers",
                        {{{"name", "per_token"},
                          {"algorithm", "token_bucket"},
                          {"key", {"token"}},
                          {"route_groups", {"submit"}},
                          {"limit", 1000},
                          {"window_s", 1}}}}};
  json config = {{"queues", {{"exports", {{"rate", 5}, {"capacity", 10}}}}},
                 {"tokens",
                  {{{"id", "tok_cfg"},
                    {"sha256", Sha256Hex(token)},
                    {"scopes", {"submit"}},
                    {"tenant", "acme"}}}},
                 {"limits", layers}};
  const std::string path = dir.File("sluice.json");
  std::ofstream(path) << config.dump();
  ServerOptions options;
  options.db_path = dir.File("sluice.db");
  options.extra_args = {"--config", path};
  {
    Fixture f(options);
    auto exports = f.Admin("GET", "/v1/admin/queues/exports");
    CHECK(exports.body["managed_by"] == path);
    // The file's queue and layers: the API's changes are refused, naming the file.
    for (auto [method, target, body] :
         {std::tuple<std::string, std::string, json>{
              "PUT", "/v1/admin/queues/exports", {{"rate", 50}, {"capacity", 10}}},
          {"DELETE", "/v1/admin/queues/exports", nullptr},
          {"PUT", "/v1/admin/limits", {{"layers", json::array()}}}}) {
      INFO(method << " " << target);
      auto refused = f.Admin(method, target, body);
      CHECK(refused.status == 409);
      CHECK(refused.body["error"] == "managed_by_config");
      CHECK(refused.body["detail"].get<std::string>().find(path) != std::string::npos);
    }
    // Pausing is an operation: allowed. A queue the file does not declare is the API's.
    CHECK(f.Admin("POST", "/v1/admin/queues/exports/pause").status == 200);
    auto adhoc = f.Admin("PUT", "/v1/admin/queues/adhoc", {{"rate", 2}});
    REQUIRE(adhoc.status == 200);
    CHECK(adhoc.body["managed_by"].is_null());
    CHECK(f.Admin("PUT", "/v1/admin/queues/adhoc", {{"rate", 3}}).body["version"] == 2);
    // A declared token may be revoked (a leak must end at once).
    CHECK(f.Admin("DELETE", "/v1/admin/tokens/tok_cfg").status == 200);
  }
  {  // Restarted with the same file: nothing the API did is undone, and the log says why
     // the declared token stays revoked.
    Fixture f(options);
    auto exports = f.Admin("GET", "/v1/admin/queues/exports");
    CHECK(exports.body["version"] == 1);
    CHECK(exports.body["paused"] == true);
    auto adhoc = f.Admin("GET", "/v1/admin/queues/adhoc");
    CHECK(adhoc.body["version"] == 2);
    CHECK(adhoc.body["rate"] == 3);
    CHECK(f.Submit(token, "exports", {{"payload", 1}}).status == 401);
    CHECK(f.Admin("GET", "/v1/admin/limits").body["version"] == 1);
    const std::string log = f.server.ReadLog();
    CHECK(log.find("config_not_followed") != std::string::npos);
    CHECK(log.find("tok_cfg") != std::string::npos);
    CHECK(log.find("stays revoked") != std::string::npos);
  }
  // The file no longer declares the queue or the layers: they are the API's now.
  config.erase("limits");
  config["queues"] = json::object();
  std::ofstream(path) << config.dump();
  {
    Fixture f(options);
    const std::string log = f.server.ReadLog();
    CHECK(log.find("config_released") != std::string::npos);
    auto exports = f.Admin("PUT", "/v1/admin/queues/exports", {{"rate", 50}, {"capacity", 10}});
    CHECK(exports.status == 200);
    CHECK(exports.body["managed_by"].is_null());
    CHECK(exports.body["version"] == 2);
    CHECK(f.Admin("PUT", "/v1/admin/limits", {{"layers", json::array()}}).status == 200);
  }
}

TEST_CASE("admin: no token ever appears in a log line; rejections and requests are logged") {
  ServerOptions options;
  options.extra_args = {"--log-format", "json"};
  std::vector<std::string> secrets = {options.admin_token};
  std::string log;
  {
    Fixture f(options);
    REQUIRE(f.Admin("PUT", "/v1/admin/queues/q", {{"rate", 1}, {"capacity", 1}}).status == 200);
    json acme = f.NewToken({{"scopes", {"submit"}}, {"tenant", "acme"}});
    json work = f.NewToken({{"scopes", {"work"}}});
    const std::string token = acme["token"], worker = work["token"];
    secrets.push_back(token);
    secrets.push_back(worker);
    secrets.push_back(token.substr(token.find('.') + 1));
    secrets.push_back(worker.substr(worker.find('.') + 1));
    REQUIRE(f.Submit(token, "q", {{"payload", 1}}).status == 202);
    REQUIRE(f.Submit(token, "q", {{"payload", 2}}).status == 429);  // full: logged
    const std::string forged = acme["id"].get<std::string>() + ".forged-secret-value";
    secrets.push_back(forged);
    REQUIRE(f.Submit(forged, "q", {{"payload", 3}}).status == 401);  // logged too
    auto leased = Call(*f.http, "POST", "/v1/leases", {{"queues", {"q"}}}, Bearer(worker));
    REQUIRE(leased.body["jobs"].size() == 1);
    REQUIRE(f.Admin("DELETE", "/v1/admin/tokens/" + acme["id"].get<std::string>()).status == 200);
    REQUIRE(f.server.Stop() == 0);  // flushes the log
    log = f.server.ReadLog();
  }
  for (const std::string& s : secrets) CHECK(log.find(s) == std::string::npos);
  // Every line is a JSON object with an event; the rejections name their reason.
  std::istringstream in(log);
  int rejected = 0, requests = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    if (j.value("event", "") == "rejected") {
      ++rejected;
      CHECK(j["instance"].is_string());
      CHECK(j["token"].get<std::string>().size() == 12);
    }
    if (j.value("event", "") == "request") {
      ++requests;
      CHECK(j["request_id"].is_string());
    }
  }
  CHECK(rejected == 2);
  CHECK(requests >= 8);
}

}  // namespace
}  // namespace sluice::testing
