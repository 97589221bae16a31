// The web dashboard end to end: the real sluiced serves /admin, and headless Chromium
// (tests/dashboard/dashboard.mjs, playwright-core driving Debian's chromium) signs in,
// sees two tenants' depth, presses pause and retries a failed job. Then this test checks
// through the API that dispatch stopped. scripts/setup.sh installs the browser and the
// script's node_modules.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Chromium() {
  const char* configured = std::getenv("SLUICE_CHROMIUM");
  return configured && *configured ? configured : "/usr/bin/chromium";
}

TEST_CASE("dashboard: the page and its assets are served with their types, uncached") {
  ServerProcess server;
  auto http = server.Client();
  struct Expected {
    const char* path;
    const char* type;
    const char* marker;
  };
  for (const Expected& e :
       {Expected{"/admin", "text/html; charset=utf-8", "<!doctype html>"},
        Expected{"/admin/", "text/html; charset=utf-8", "<!doctype html>"},
        Expected{"/admin/app.js", "text/javascript; charset=utf-8", "'use strict'"},
        Expected{"/admin/style.css", "text/css; charset=utf-8", ":root"}}) {
    INFO(e.path);
    auto res = http->Get(e.path);  // no token: the page itself is public
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Content-Type") == e.type);
    CHECK(res->get_header_value("Cache-Control") == "no-cache");
    CHECK(res->get_header_value("X-Content-Type-Options") == "nosniff");
    CHECK(res->get_header_value("Content-Security-Policy").find("default-src 'none'") !=
          std::string::npos);
    CHECK(res->body.find(e.marker) != std::string::npos);
  }
  CHECK(Call(*http, "GET", "/admin/missing.js").status == 404);
}

TEST_CASE(
    "dashboard: sign in, both tenants' depth, pause stops dispatch, read-only with a metrics token "
    "(headless Chromium)") {
  const std::string script = std::string(SLUICE_SOURCE_DIR) + "/tests/dashboard/dashboard.mjs";
  const std::string modules =
      std::string(SLUICE_SOURCE_DIR) + "/tests/dashboard/node_modules/playwright-core";
  if (!Exists(modules) || !Exists(Chromium())) {
    FAIL("the dashboard test needs " << Chromium() << " and " << modules
                                     << ": run scripts/setup.sh (apt-get chromium, npm ci)");
  }

  ServerProcess server;
  auto http = server.Client();
  auto admin = [&](const std::string& method, const std::string& path, const json& body = nullptr) {
    return Call(*http, method, path, body, Bearer(server.admin_token()));
  };

  // A slow queue: each tenant's first job is releasable at once, the rest one per 5 s.
  REQUIRE(admin("PUT", "/v1/admin/queues/exports", {{"rate", 0.2}, {"capacity", 50}}).status ==
          200);
  // A queue whose jobs fail at the first error, for the failed-jobs list.
  REQUIRE(admin("PUT", "/v1/admin/queues/fragile", {{"rate", 100}, {"max_attempts", 1}}).status ==
          200);
  // More queues than the expensive reads one token may run at once (the default layer,
  // 4): the page must not ask for every queue's tenants at the same moment.
  for (int i = 0; i < 8; ++i) {
    REQUIRE(admin("PUT", "/v1/admin/queues/more-" + std::to_string(i), {{"rate", 1}}).status ==
            200);
  }
  std::string acme =
      admin("POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}}).body["token"];
  std::string globex =
      admin("POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "globex"}})
          .body["token"];
  std::string work = admin("POST", "/v1/admin/tokens", {{"scopes", {"work"}}}).body["token"];
  std::string metrics = admin("POST", "/v1/admin/tokens", {{"scopes", {"metrics"}}}).body["token"];

  for (int i = 0; i < 5; ++i) {
    REQUIRE(Call(*http, "POST", "/v1/queues/exports/jobs", {{"payload", {{"n", i}}}}, Bearer(acme))
                .status == 202);
  }
  for (int i = 0; i < 3; ++i) {
    REQUIRE(
        Call(*http, "POST", "/v1/queues/exports/jobs", {{"payload", {{"n", i}}}}, Bearer(globex))
            .status == 202);
  }

  auto doomed =
      Call(*http, "POST", "/v1/queues/fragile/jobs", {{"payload", "will fail"}}, Bearer(acme));
  REQUIRE(doomed.status == 202);
  const std::string failed_id = doomed.body["id"];
  auto lease =
      Call(*http, "POST", "/v1/leases", {{"queues", {"fragile"}}, {"wait_ms", 5000}}, Bearer(work));
  REQUIRE(lease.body["jobs"].size() == 1);
  REQUIRE(Call(*http, "POST", "/v1/jobs/" + failed_id + "/fail",
               {{"lease_id", lease.body["jobs"][0]["lease_id"]},
                {"error", "renderer crashed: out of memory"},
                {"retryable", false}},
               Bearer(work))
              .status == 200);
  REQUIRE(admin("GET", "/v1/jobs/" + failed_id).body["state"] == "failed");

  const std::string artifacts = SLUICE_TEST_ARTIFACTS_DIR;
  const std::string screenshot = artifacts + "/dashboard.png";
  TempDir dir;
  Subprocess browser(
      {"node", script},
      {"SLUICE_URL=" + server.url(), "SLUICE_ADMIN_TOKEN=" + server.admin_token(),
       "SLUICE_METRICS_TOKEN=" + metrics, "SLUICE_QUEUE=exports", "SLUICE_DEPTHS=acme=5,globex=3",
       "SLUICE_SUBMIT_TOKENS=acme=" + acme + ",globex=" + globex, "SLUICE_FAILED_JOB=" + failed_id,
       "SLUICE_SCREENSHOT=" + screenshot, "SLUICE_CHROMIUM=" + Chromium()},
      dir.File("dashboard.log"));
  auto status = browser.Wait(std::chrono::seconds(180));
  INFO("dashboard.mjs output:\n" << browser.ReadLog() << "\nsluiced log:\n" << server.ReadLog());
  REQUIRE(status == 0);
  std::cout << "dashboard screenshot: " << screenshot << std::endl;
  CHECK(Exists(screenshot));

  // The page paused the queue: its JSON says so, and a worker gets nothing although
  // both tenants' head jobs are releasable.
  auto queue = admin("GET", "/v1/admin/queues/exports");
  CHECK(queue.body["paused"] == true);
  CHECK(queue.body["stats"]["queued"] == 11);
  auto nothing =
      Call(*http, "POST", "/v1/leases", {{"queues", {"exports"}}, {"wait_ms", 1500}}, Bearer(work));
  REQUIRE(nothing.status == 200);
  CHECK(nothing.body["jobs"].empty());

  // Resumed, the same poll is answered at once: the pause was what held the jobs.
  REQUIRE(admin("POST", "/v1/admin/queues/exports/resume").status == 200);
  auto some = Call(*http, "POST", "/v1/leases",
                   {{"queues", {"exports"}}, {"max_jobs", 2}, {"wait_ms", 10000}}, Bearer(work));
  REQUIRE(some.status == 200);
  CHECK(!some.body["jobs"].empty());

  // The job the page retried is back in its queue.
  CHECK(admin("GET", "/v1/jobs/" + failed_id).body["state"] == "queued");
}

}  // namespace
}  // namespace sluice::testing
