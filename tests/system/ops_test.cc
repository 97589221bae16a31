// The operations kit in examples/, each checked with the real tool (issue 19): the
// Prometheus alerting rules (promtool check and unit tests), a real Prometheus that
// scrapes sluiced with a read-only metrics token and answers a query for a sluice
// series, the Grafana dashboard's queries (each run by that Prometheus, each series it
// names exported by sluiced), and the hardened systemd unit (systemd-analyze verify).
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

const std::string kExamples = std::string(SLUICE_SOURCE_DIR) + "/examples";

struct Run {
  int status = -1;
  std::string out, err;
};

// Runs a tool to its end (at most `timeout`), its stdout and stderr kept apart.
Run RunTool(const std::vector<std::string>& argv, const TempDir& dir,
            std::chrono::seconds timeout = std::chrono::seconds(60)) {
  static int n = 0;
  const std::string base = dir.path() + "/run" + std::to_string(++n);
  Subprocess p(argv, {}, Streams{"/dev/null", base + ".out", base + ".err"});
  auto status = p.Wait(timeout);
  Run r;
  r.status = status ? *status : -1;
  r.out = ReadFile(base + ".out");
  r.err = ReadFile(base + ".err");
  return r;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("not in the example: " + from);
  return text.replace(at, from.size(), to);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  REQUIRE(out.good());
}

TEST_CASE("ops: the alerting rules pass promtool's check and their unit tests") {
  TempDir dir;
  const std::string rules = kExamples + "/prometheus/sluice-rules.yml";
  Run check = RunTool({"promtool", "check", "rules", rules}, dir);
  INFO(check.out << check.err);
  CHECK(check.status == 0);
  CHECK(check.out.find("SUCCESS: 7 rules found") != std::string::npos);

  // The unit tests: each alert fires on the series that should page, and a healthy
  // server's series page no one.
  Run test =
      RunTool({"promtool", "test", "rules", kExamples + "/prometheus/sluice-rules.test.yml"}, dir);
  INFO(test.out << test.err);
  CHECK(test.status == 0);
  CHECK(test.out.find("SUCCESS") != std::string::npos);

  // Every alert of the rules file has a case in its tests.
  const std::string text = ReadFile(rules);
  const std::string tests = ReadFile(kExamples + "/prometheus/sluice-rules.test.yml");
  std::regex alert("- alert: (\\w+)");
  int alerts = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), alert), end; it != end; ++it) {
    ++alerts;
    INFO((*it)[1]);
    CHECK(tests.find("alertname: " + (*it)[1].str() + "\n") != std::string::npos);
  }
  CHECK(alerts == 7);
}

TEST_CASE("ops: the systemd unit is hardened and passes systemd-analyze verify") {
  TempDir dir;
  const std::string unit = ReadFile(kExamples + "/systemd/sluiced.service");
  for (const char* line : {"DynamicUser=yes", "StateDirectory=sluice", "ProtectSystem=strict",
                           "NoNewPrivileges=yes", "ProtectHome=yes", "PrivateTmp=yes",
                           "CapabilityBoundingSet=\n", "LoadCredential=admin-token:"}) {
    INFO(line);
    CHECK(unit.find(line) != std::string::npos);
  }
  // verify checks that ExecStart's binary exists: point it at the one just built (the
  // package test runs it where the package puts it).
  const std::string copy = dir.path() + "/sluiced.service";
  WriteFile(copy, Replace(unit, "ExecStart=/usr/bin/sluiced ",
                          std::string("ExecStart=") + SLUICED_BINARY + " "));
  Run verify = RunTool({"systemd-analyze", "verify", copy}, dir);
  INFO(verify.out << verify.err);
  CHECK(verify.status == 0);
  CHECK(verify.err.empty());  // an unknown or misspelt directive is only a warning there
  // And its flags are ones sluiced takes.
  std::smatch exec;
  REQUIRE(std::regex_search(unit, exec, std::regex("ExecStart=/usr/bin/sluiced ([^\n]*)")));
  std::vector<std::string> argv = {SLUICED_BINARY, "--help"};
  Run help = RunTool(argv, dir);
  std::regex flag("(--[a-z-]+)");
  const std::string flags = exec[1];
  for (std::sregex_iterator it(flags.begin(), flags.end(), flag), end; it != end; ++it) {
    INFO((*it)[1]);
    CHECK(help.out.find((*it)[1].str()) != std::string::npos);
  }
}

TEST_CASE(
    "ops: a real Prometheus scrapes sluiced with a metrics token; the dashboard's "
    "queries run") {
  ServerProcess server;
  auto http = server.Client();
  auto admin = [&](const std::string& method, const std::string& path, const json& body) {
    return Call(*http, method, path, body, Bearer(server.admin_token()));
  };
  REQUIRE(admin("PUT", "/v1/admin/queues/exports", {{"rate", 1}, {"capacity", 10}}).status == 200);
  const std::string acme =
      admin("POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}}).body["token"];
  for (int i = 0; i < 3; ++i) {
    REQUIRE(Call(*http, "POST", "/v1/queues/exports/jobs", {{"payload", i}}, Bearer(acme)).status ==
            202);
  }
  const std::string reader =
      admin("POST", "/v1/admin/tokens", {{"scopes", {"metrics"}}}).body["token"];

  // examples/prometheus as shipped, but for the target, the token file and a 1 s
  // interval.
  TempDir dir;
  WriteFile(dir.path() + "/token", reader);
  std::string config = ReadFile(kExamples + "/prometheus/prometheus.yml");
  config = Replace(config, "scrape_interval: 15s", "scrape_interval: 1s");
  config = Replace(config, "/etc/prometheus/sluice-metrics-token", dir.path() + "/token");
  config = Replace(config, "\"127.0.0.1:8080\"", "\"" + server.url().substr(7) + "\"");
  WriteFile(dir.path() + "/prometheus.yml", config);
  WriteFile(dir.path() + "/sluice-rules.yml", ReadFile(kExamples + "/prometheus/sluice-rules.yml"));
  Run check = RunTool({"promtool", "check", "config", dir.path() + "/prometheus.yml"}, dir);
  INFO(check.out << check.err);
  REQUIRE(check.status == 0);

  const int port = FreeLoopbackPort();
  Subprocess prometheus({"prometheus", "--config.file=" + dir.path() + "/prometheus.yml",
                         "--storage.tsdb.path=" + dir.path() + "/data",
                         "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                        {}, dir.File("prometheus.log"));
  httplib::Client prom("127.0.0.1", port);
  prom.set_connection_timeout(2);
  auto query = [&](const std::string& promql) -> json {
    auto r = prom.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  };

  // The sluice series comes back through Prometheus's API: 3 jobs queued for acme.
  const std::string series = "sluice_queued_jobs{job=\"sluice\",queue=\"exports\",tenant=\"acme\"}";
  json answer;
  const bool scraped = Eventually(
      [&] {
        answer = query(series);
        return answer.is_object() && answer["data"]["result"].size() == 1;
      },
      std::chrono::seconds(60));
  INFO("prometheus log:\n" << prometheus.ReadLog());
  REQUIRE(scraped);
  CHECK(answer["data"]["result"][0]["value"][1] == "3");
  CHECK(query("up{job=\"sluice\"}")["data"]["result"][0]["value"][1] == "1");
  CHECK(query("process_resident_memory_bytes{job=\"sluice\"} > 0")["data"]["result"].size() == 1);

  // It loaded the alerting rules beside the config.
  auto rules = prom.Get("/api/v1/rules");
  REQUIRE(rules);
  json groups = json::parse(rules->body)["data"]["groups"];
  REQUIRE(groups.size() == 1);
  CHECK(groups[0]["rules"].size() == 7);

  // The Grafana dashboard: every query parses and runs in this Prometheus, and every
  // sluice_* or process_* series it names is one sluiced exports.
  const std::string exposition =
      http->Get("/metrics", {{"Authorization", "Bearer " + reader}})->body;
  json dashboard = json::parse(ReadFile(kExamples + "/grafana/sluice-dashboard.json"));
  REQUIRE(dashboard["panels"].size() >= 10);
  std::regex name("\\b((sluice|process)_[a-z_]+)");
  int queries = 0;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) {
      std::string expr = target["expr"];
      INFO(panel["title"] << ": " << expr);
      for (auto [from, to] : {std::pair{"$__rate_interval", "1m"}, std::pair{"$queue", ".*"}}) {
        for (size_t at; (at = expr.find(from)) != std::string::npos;) {
          expr.replace(at, std::string(from).size(), to);
        }
      }
      json ran = query(expr);
      CHECK(ran["status"] == "success");
      for (std::sregex_iterator it(expr.begin(), expr.end(), name), end; it != end; ++it) {
        std::string metric = (*it)[1];
        for (const char* suffix : {"_bucket", "_count", "_sum"}) {
          if (metric.size() > std::string(suffix).size() &&
              metric.compare(metric.size() - std::string(suffix).size(), std::string::npos,
                             suffix) == 0 &&
              exposition.find("# TYPE " +
                              metric.substr(0, metric.size() - std::string(suffix).size()) +
                              " histogram") != std::string::npos) {
            metric = metric.substr(0, metric.size() - std::string(suffix).size());
          }
        }
        INFO(metric);
        CHECK(exposition.find("# TYPE " + metric + " ") != std::string::npos);
      }
      ++queries;
    }
  }
  CHECK(queries >= 15);
}

}  // namespace
}  // namespace sluice::testing
