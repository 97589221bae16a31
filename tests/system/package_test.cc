// The Debian package (packaging/CMakeLists.txt, issue 19): built with CPack, installed
// with dpkg -i on this machine, and the installed sluiced started as the package's
// systemd unit starts it (its ExecStart, its config, the admin token postinst made),
// then a submit -> lease -> complete through it. Purged at the end. Needs root (CI runs
// as root), like dpkg.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

struct Run {
  int status = -1;
  std::string out;
};

Run RunTool(const std::vector<std::string>& argv, const TempDir& dir, const std::string& name,
            std::chrono::seconds timeout = std::chrono::seconds(300)) {
  Subprocess p(argv, {}, dir.File(name + ".log"));
  auto status = p.Wait(timeout);
  return Run{status ? *status : -1, p.ReadLog()};
}

// Removes the package however the test ends.
struct Purge {
  TempDir& dir;
  ~Purge() { RunTool({"dpkg", "--purge", "sluice"}, dir, "purge"); }
};

TEST_CASE("package: the .deb installs with dpkg -i and its sluiced serves a job end to end",
          "[package]") {
  if (::geteuid() != 0) FAIL("dpkg -i needs root: run the system tests as root (CI does)");
  TempDir dir;
  Run built = RunTool({"cmake", "--build", SLUICE_BUILD_DIR, "--target", "package"}, dir, "cpack");
  INFO(built.out);
  REQUIRE(built.status == 0);
  std::smatch deb;
  REQUIRE(std::regex_search(built.out, deb, std::regex("package: (\\S+\\.deb) generated")));
  const std::string package = deb[1];

  // What it holds.
  Run contents = RunTool({"dpkg-deb", "-c", package}, dir, "contents");
  for (const char* path : {"./usr/bin/sluiced", "./usr/bin/sluice", "./usr/bin/sluice-worker",
                           "./usr/lib/systemd/system/sluiced.service", "./etc/sluice/sluice.json",
                           "./usr/share/doc/sluice/README.md", "./usr/share/doc/sluice/api.md"}) {
    INFO(path);
    CHECK(std::regex_search(contents.out, std::regex(std::string(" ") + path + "\n")));
  }
  Run control = RunTool({"dpkg-deb", "-f", package, "Depends"}, dir, "depends");
  CHECK(control.out.find("libsqlite3-0") != std::string::npos);

  Purge purge{dir};
  Run installed = RunTool({"dpkg", "-i", package}, dir, "install");
  INFO(installed.out);
  REQUIRE(installed.status == 0);
  CHECK(ReadFile("/etc/sluice/admin-token").size() == 48);  // made by postinst
  Run version = RunTool({"/usr/bin/sluice", "--help"}, dir, "cli");
  CHECK(version.status == 0);

  // The unit's command line, as installed, but for the port and the database file.
  const std::string unit = ReadFile("/usr/lib/systemd/system/sluiced.service");
  std::smatch exec;
  REQUIRE(std::regex_search(unit, exec, std::regex("\nExecStart=(/usr/bin/sluiced [^\n]*)")));
  std::vector<std::string> argv;
  {
    std::istringstream words(exec[1].str());
    for (std::string w; words >> w;) argv.push_back(w);
  }
  const int port = FreeLoopbackPort();
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--listen") argv[i + 1] = "127.0.0.1:" + std::to_string(port);
    if (argv[i] == "--db") argv[i + 1] = dir.File("sluice.db");
  }
  CHECK(std::find(argv.begin(), argv.end(), "/etc/sluice/sluice.json") != argv.end());
  Subprocess server(argv, {"SLUICE_ADMIN_TOKEN", "SLUICE_ADMIN_TOKEN_FILE=/etc/sluice/admin-token"},
                    dir.File("sluiced.log"));
  httplib::Client http("127.0.0.1", port);
  http.set_connection_timeout(2);
  const bool up = Eventually(
      [&] {
        auto r = http.Get("/healthz");
        return r && r->status == 200;
      },
      std::chrono::seconds(20));
  INFO("sluiced log:\n" << server.ReadLog());
  REQUIRE(up);

  // submit -> lease -> complete, with the token the package made.
  const httplib::Headers admin = Bearer(ReadFile("/etc/sluice/admin-token"));
  REQUIRE(Call(http, "PUT", "/v1/admin/queues/exports", {{"rate", 100}}, admin).status == 200);
  auto submit =
      Call(http, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}}, admin);
  auto work = Call(http, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}, admin);
  REQUIRE(submit.status == 201);
  REQUIRE(work.status == 201);
  auto job = Call(http, "POST", "/v1/queues/exports/jobs", {{"payload", {{"n", 1}}}},
                  Bearer(submit.body["token"]));
  REQUIRE(job.status == 202);
  auto lease = Call(http, "POST", "/v1/leases", {{"queues", {"exports"}}, {"wait_ms", 5000}},
                    Bearer(work.body["token"]));
  REQUIRE(lease.status == 200);
  REQUIRE(lease.body["jobs"].size() == 1);
  CHECK(lease.body["jobs"][0]["id"] == job.body["id"]);
  auto done = Call(http, "POST", "/v1/jobs/" + job.body["id"].get<std::string>() + "/complete",
                   {{"lease_id", lease.body["jobs"][0]["lease_id"]}}, Bearer(work.body["token"]));
  CHECK(done.status == 200);
  CHECK(done.body["state"] == "succeeded");
  server.Signal(SIGTERM);
  CHECK(server.Wait(std::chrono::seconds(20)) == 0);
}

}  // namespace
}  // namespace sluice::testing
