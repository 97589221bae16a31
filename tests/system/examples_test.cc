// System tests of the examples (issue 5): the report-export worker as a script under
// sluice-worker and in-process in C++, and the submitting clients (C++ and curl), which
// back off on 429 and get every job accepted exactly once.
#include <signal.h>

#include <fstream>
#include <set>
#include <sstream>

#include "tests/system/worker_fixture.h"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const json kReport = {{"report", "monthly usage"},
                      {"columns", {"day", "account", "units"}},
                      {"rows", {{"2024-05-01", "acme \"main\"", 42}, {"2024-05-02", "b,c", 7}}}};

TEST_CASE("report-export: the script and the C++ worker write the same CSV") {
  WorkerRig rig({{"rate", 1000}, {"capacity", 1000}, {"max_attempts", 2}});
  const std::string out = rig.dir.File("reports");
  std::string by_script = rig.Submit(kReport);
  std::string bad = rig.Submit({{"report", "x"}, {"rows", 3}});
  auto script =
      rig.Launch({SLUICE_WORKER_BINARY, "--server", rig.server.url(), "--queue", "q", "--wait-ms",
                  "1000", "--", SLUICE_SOURCE_DIR "/examples/report_export.sh"},
                 {"SLUICE_TOKEN=" + rig.work, "REPORT_DIR=" + out});
  REQUIRE(rig.AllInState({by_script}, "succeeded", seconds(30)));
  REQUIRE(rig.AllInState({bad}, "failed", seconds(30)));
  CHECK(rig.Job(bad)["attempt"] == 1);  // exit 65: not retried
  script->Signal(SIGTERM);
  REQUIRE(script->Wait(seconds(20)) == 0);

  std::string in_process = rig.Submit(kReport);
  auto cpp = rig.Launch({SLUICE_REPORT_WORKER_BINARY, "--server", rig.server.url(), "--queue", "q",
                         "--out", out, "--ms-per-row", "1"},
                        {"SLUICE_TOKEN=" + rig.work});
  if (!rig.AllInState({in_process}, "succeeded", seconds(30))) {
    FAIL(cpp->ReadLog() + "\n" + rig.Job(in_process).dump());
  }
  cpp->Signal(SIGTERM);
  REQUIRE(cpp->Wait(seconds(20)) == 0);

  json a = rig.Job(by_script)["result"], b = rig.Job(in_process)["result"];
  CHECK(a["path"] == out + "/acme/monthly_usage-" + by_script + ".csv");
  CHECK(b["path"] == out + "/acme/monthly_usage-" + in_process + ".csv");
  CHECK(a["rows"] == 2);
  CHECK(b["rows"] == 2);
  const std::string csv = ReadFile(a["path"]);
  CHECK(csv ==
        "\"day\",\"account\",\"units\"\n\"2024-05-01\",\"acme \"\"main\"\"\",42\n"
        "\"2024-05-02\",\"b,c\",7\n");
  CHECK(ReadFile(b["path"]) == csv);
  CHECK(a["bytes"] == csv.size());
  CHECK(b["bytes"] == csv.size());
}

TEST_CASE("the C++ submitter backs off on 429 and every job is accepted exactly once") {
  WorkerRig rig({{"rate", 20}, {"capacity", 3}});
  auto worker = rig.Worker({"--concurrency", "2"}, {"sh", "-c", "cat > /dev/null"});
  auto submitter =
      rig.Launch({SLUICE_SUBMIT_BINARY, "--server", rig.server.url(), "--queue", "q", "--tenant",
                  "acme", "--jobs", "20", "--rows-max", "5", "--run-id", "cpp-run"},
                 {"SLUICE_TOKEN_ACME=" + rig.submit});
  REQUIRE(submitter->Wait(seconds(120)) == 0);
  std::string out = submitter->ReadLog();
  INFO(out);
  CHECK(out.find("done acme: accepted=20 gave_up=0") != std::string::npos);
  CHECK(out.find("answered_429=0") == std::string::npos);  // it did meet 429s
  std::set<int> seqs;
  int jobs = 0;
  for (const json& job : rig.Jobs()) {
    if (job["payload"]["run"] != "cpp-run") continue;
    ++jobs;
    seqs.insert(job["payload"]["seq"].get<int>());
  }
  CHECK(jobs == 20);
  CHECK(seqs.size() == 20);
  CHECK(out.find(rig.submit) == std::string::npos);
}

TEST_CASE("the curl submitter backs off on 429; its Idempotency-Key never duplicates a job") {
  WorkerRig rig({{"rate", 5}, {"capacity", 2}});
  auto worker = rig.Worker({}, {"sh", "-c", "cat > /dev/null"});
  const std::string script = SLUICE_SOURCE_DIR "/examples/submit.sh";
  std::vector<std::unique_ptr<Subprocess>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(
        rig.Launch({script, rig.server.url(), "q", "{\"seq\":" + std::to_string(i) + "}"},
                   {"SLUICE_TOKEN=" + rig.submit, "BACKOFF_BASE_MS=100"}));
  }
  std::string logs;
  for (auto& c : clients) {
    CHECK(c->Wait(seconds(120)) == 0);
    logs += c->ReadLog();
  }
  INFO(logs);
  CHECK(Count(logs, "202 accepted") == 6);
  CHECK(Count(logs, ": 429 queue_full, Retry-After") >= 1);
  CHECK(rig.Jobs().size() == 6);

  // The same key and body twice (a retry after a lost answer): one job.
  std::vector<std::string> env = {"SLUICE_TOKEN=" + rig.submit, "IDEMPOTENCY_KEY=report-77",
                                  "DEADLINE=2100-01-01T00:00:00.000Z"};
  auto once = rig.Launch({script, rig.server.url(), "q", "{\"seq\":77}"}, env);
  REQUIRE(once->Wait(seconds(120)) == 0);
  auto twice = rig.Launch({script, rig.server.url(), "q", "{\"seq\":77}"}, env);
  REQUIRE(twice->Wait(seconds(120)) == 0);
  CHECK(twice->ReadLog().find("replayed") != std::string::npos);
  CHECK(rig.Jobs().size() == 7);
}

TEST_CASE("the curl submitter gives up at the job's deadline") {
  WorkerRig rig({{"rate", 0.1}, {"capacity", 1}});  // no worker: the bucket stays full
  const std::string script = SLUICE_SOURCE_DIR "/examples/submit.sh";
  // The first job outlives the test (were it to expire, its room would free up and the
  // second could get in before its own deadline, as the honest Retry-After says).
  auto first = rig.Launch({script, rig.server.url(), "q", "{\"seq\":1}"},
                          {"SLUICE_TOKEN=" + rig.submit, "DEADLINE_IN_MS=600000"});
  REQUIRE(first->Wait(seconds(60)) == 0);
  auto second = rig.Launch({script, rig.server.url(), "q", "{\"seq\":2}"},
                           {"SLUICE_TOKEN=" + rig.submit, "DEADLINE_IN_MS=3000"});
  auto code = second->Wait(seconds(60));
  INFO(second->ReadLog());
  CHECK((code == 1 || code == 2));  // gave up: deadline passing first, or unreachable
  CHECK(rig.Jobs().size() == 1);
}

}  // namespace
}  // namespace sluice::testing
