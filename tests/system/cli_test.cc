// System tests of the `sluice` CLI: the real binary, run as a subprocess against the real
// sluiced on a free loopback port. Each test checks stdout, stderr and the exit code.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/time.h"
#include "tests/system/load.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "adm-cli-test-Q7w3Zr9x";

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the sluice binary with `args`; `env` ("NAME=value") replaces any SLUICE_URL /
// SLUICE_TOKEN of this process; `input` is its stdin. Waits up to 30 s for it to exit.
CliRun RunCli(const std::vector<std::string>& args, const std::vector<std::string>& env,
              const std::string& input = "") {
  TempDir dir;
  const std::string in_path = dir.File("stdin"), out_path = dir.File("stdout"),
                    err_path = dir.File("stderr");
  std::ofstream(in_path) << input;

  std::vector<std::string> argv = {SLUICE_CLI_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env_all = {"SLUICE_URL", "SLUICE_TOKEN"};  // none of this process's
  env_all.insert(env_all.end(), env.begin(), env.end());
  Subprocess cli(std::move(argv), std::move(env_all), Streams{in_path, out_path, err_path});
  std::optional<int> status = cli.Wait(std::chrono::seconds(30));
  if (!status) FAIL("sluice did not exit within 30 s");  // killed as `cli` goes
  CliRun run;
  run.exit_code = *status;
  run.out = ReadFile(out_path);
  run.err = ReadFile(err_path);
  return run;
}

// The rows of a table printed by the CLI, by header name. Lines with another number of
// words than the header (a footer such as "workers waiting: 0") are not rows.
std::vector<std::map<std::string, std::string>> Rows(const std::string& table) {
  std::istringstream lines(table);
  std::string line;
  std::vector<std::string> headers;
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string w; words >> w;) cells.push_back(w);
    if (headers.empty()) {
      headers = cells;
      continue;
    }
    if (cells.size() != headers.size()) continue;
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < cells.size(); ++i) row[headers[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

// The row whose first column is `key`; an empty map if there is none.
std::map<std::string, std::string> Row(const std::string& table, const std::string& key) {
  std::istringstream header(table.substr(0, table.find('\n')));
  std::string first;
  header >> first;
  for (auto& row : Rows(table)) {
    if (row[first] == key) return row;
  }
  return {};
}

// "key  value" lines of a detail view.
std::map<std::string, std::string> Fields(const std::string& text) {
  std::istringstream lines(text);
  std::map<std::string, std::string> fields;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string key, value;
    words >> key;
    std::getline(words >> std::ws, value);
    fields[key] = value;
  }
  return fields;
}

// A server with queue `report-export` (policy as given), submit tokens for acme and globex
// and a work token. Sluice() runs the CLI with SLUICE_URL and the admin SLUICE_TOKEN.
struct Fixture {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  std::string acme, globex, worker;

  explicit Fixture(const json& policy = {{"rate", 0.01}, {"capacity", 100}})
      : server(ServerOptions{kAdminToken, {}, "", {}, {}, 0, ""}) {
    PutQueue("report-export", policy);
    acme = Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
    globex = Token({{"scopes", {"submit"}}, {"tenant", "globex"}});
    worker = Token({{"scopes", {"work"}}});
  }

  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return Call(*http, method, path, body, Bearer(kAdminToken));
  }
  void PutQueue(const std::string& name, const json& policy) {
    REQUIRE(Admin("PUT", "/v1/admin/queues/" + name, policy).status == 200);
  }
  std::string Token(const json& body) {
    auto r = Admin("POST", "/v1/admin/tokens", body);
    REQUIRE(r.status == 201);
    return r.body["token"].get<std::string>();
  }
  std::string Submit(const std::string& token, const std::string& queue = "report-export") {
    auto r = Call(*http, "POST", "/v1/queues/" + queue + "/jobs", {{"payload", {{"n", 1}}}},
                  Bearer(token));
    REQUIRE(r.status == 202);
    return r.body["id"].get<std::string>();
  }
  HttpResult Lease(int64_t wait_ms) {
    return Call(*http, "POST", "/v1/leases",
                {{"queues", {"report-export"}}, {"max_jobs", 1}, {"wait_ms", wait_ms}},
                Bearer(worker));
  }

  CliRun Sluice(const std::vector<std::string>& args, const std::string& input = "") {
    return SluiceAs(kAdminToken, args, input);
  }
  CliRun SluiceAs(const std::string& token, const std::vector<std::string>& args,
                  const std::string& input = "") {
    return RunCli(args, {"SLUICE_URL=" + server.url(), "SLUICE_TOKEN=" + token}, input);
  }
};

TEST_CASE("cli: queues shows every queue with its depth after submits") {
  Fixture f;
  f.PutQueue("reindex", {{"rate", 0.5}, {"capacity", 10}});
  auto before = f.Sluice({"queues"});
  REQUIRE(before.exit_code == 0);
  CHECK(Row(before.out, "report-export")["QUEUED"] == "0");

  for (int i = 0; i < 3; ++i) f.Submit(f.acme);
  auto after = f.Sluice({"queues"});
  INFO(after.out << after.err);
  REQUIRE(after.exit_code == 0);
  auto row = Row(after.out, "report-export");
  CHECK(row["QUEUED"] == "3");
  CHECK(row["QUEUED_COST"] == "3");
  CHECK(row["LEASED"] == "0");
  CHECK(row["PAUSED"] == "no");
  CHECK(row["RATE/S"] == "0.01");
  CHECK(row["CAPACITY"] == "100");
  CHECK(row["VERSION"] == "1");
  auto reindex = Row(after.out, "reindex");
  CHECK(reindex["QUEUED"] == "0");
  CHECK(reindex["RATE/S"] == "0.5");
  CHECK(after.out.find("workers waiting: 0") != std::string::npos);

  auto as_json = f.Sluice({"queues", "--json"});
  REQUIRE(as_json.exit_code == 0);
  json j = json::parse(as_json.out);
  REQUIRE(j["queues"].is_array());
  bool found = false;
  for (const json& q : j["queues"]) {
    if (q["name"] == "report-export") {
      found = true;
      CHECK(q["stats"]["queued"] == 3);
    }
  }
  CHECK(found);
}

TEST_CASE("cli: tenants shows each tenant's depth in a queue") {
  Fixture f;
  for (int i = 0; i < 2; ++i) f.Submit(f.acme);
  for (int i = 0; i < 3; ++i) f.Submit(f.globex);
  auto run = f.Sluice({"tenants", "report-export"});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  auto acme = Row(run.out, "acme");
  auto globex = Row(run.out, "globex");
  CHECK(acme["QUEUED"] == "2");
  CHECK(acme["QUEUED_COST"] == "2");
  CHECK(globex["QUEUED"] == "3");
  CHECK(globex["LEASED"] == "0");
  CHECK(globex["CAPACITY"] == "100");
  CHECK(globex["NEXT_RELEASE"] != "-");
  CHECK(globex["OLDEST_AGE"] != "-");

  auto as_json = f.Sluice({"--json", "tenants", "report-export"});
  REQUIRE(as_json.exit_code == 0);
  CHECK(json::parse(as_json.out)["tenants"].size() == 2);
}

TEST_CASE("cli: jobs lists jobs, pages with --limit, follows cursors with --all") {
  Fixture f;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(f.Submit(i == 1 ? f.globex : f.acme));

  auto run = f.Sluice({"jobs", "--queue", "report-export"});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(Rows(run.out).size() == 3);
  for (const auto& id : ids) {
    auto row = Row(run.out, id);
    CHECK(row["STATE"] == "queued");
    CHECK(row["QUEUE"] == "report-export");
  }
  CHECK(Row(run.out, ids[1])["TENANT"] == "globex");

  auto page = f.Sluice({"jobs", "--limit", "2", "--json"});
  REQUIRE(page.exit_code == 0);
  json p = json::parse(page.out);
  CHECK(p["jobs"].size() == 2);
  CHECK(p["next_cursor"].is_string());

  auto page_table = f.Sluice({"jobs", "--limit", "2"});
  CHECK(Rows(page_table.out).size() == 2);
  CHECK(page_table.err.find("--all") != std::string::npos);

  auto all = f.Sluice({"jobs", "--limit", "2", "--all", "--json"});
  REQUIRE(all.exit_code == 0);
  json a = json::parse(all.out);
  REQUIRE(a["jobs"].size() == 3);
  CHECK(a["next_cursor"].is_null());
  for (size_t i = 0; i < ids.size(); ++i) CHECK(a["jobs"][i]["id"] == ids[i]);

  auto none = f.Sluice({"jobs", "--state", "succeeded"});
  REQUIRE(none.exit_code == 0);
  CHECK(none.out == "no jobs\n");
}

TEST_CASE("cli: job shows what holds a queued job") {
  Fixture f({{"rate", 1000}, {"capacity", 100}});
  std::string id = f.Submit(f.acme);
  auto idle = f.Sluice({"job", id});
  INFO(idle.out << idle.err);
  REQUIRE(idle.exit_code == 0);
  auto fields = Fields(idle.out);
  CHECK(fields["id"] == id);
  CHECK(fields["state"] == "queued");
  CHECK(fields["blocked_by"] == "no_worker");
  CHECK(fields["estimated_start"] != "-");
  CHECK(fields["payload"] == R"({"n":1})");

  REQUIRE(f.Sluice({"pause", "report-export"}).exit_code == 0);
  auto paused = f.Sluice({"job", id});
  REQUIRE(paused.exit_code == 0);
  CHECK(Fields(paused.out)["blocked_by"] == "paused");
  auto as_json = f.Sluice({"job", id, "--json"});
  CHECK(json::parse(as_json.out)["blocked_by"] == "paused");

  auto missing = f.Sluice({"job", "job_does_not_exist"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("not_found (HTTP 404)") != std::string::npos);
  CHECK(missing.out.empty());
}

TEST_CASE("cli: pause stops dispatch and resume restarts it") {
  Fixture f({{"rate", 1000}, {"capacity", 100}});
  auto pause = f.Sluice({"pause", "report-export"});
  INFO(pause.out << pause.err);
  REQUIRE(pause.exit_code == 0);
  CHECK(pause.out.find("paused") != std::string::npos);
  CHECK(Row(f.Sluice({"queues"}).out, "report-export")["PAUSED"] == "yes");

  std::string id = f.Submit(f.acme);  // intake goes on while paused
  auto held = f.Lease(500);
  REQUIRE(held.status == 200);
  CHECK(held.body["jobs"].empty());

  auto resume = f.Sluice({"resume", "report-export"});
  REQUIRE(resume.exit_code == 0);
  CHECK(resume.out.find("dispatching") != std::string::npos);
  CHECK(Row(f.Sluice({"queues"}).out, "report-export")["PAUSED"] == "no");
  auto got = f.Lease(10000);
  REQUIRE(got.status == 200);
  REQUIRE(got.body["jobs"].size() == 1);
  CHECK(got.body["jobs"][0]["id"] == id);

  auto unknown = f.Sluice({"pause", "no-such-queue"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("not_found") != std::string::npos);
}

TEST_CASE("cli: tokens create mints a token that works for submit") {
  Fixture f;
  auto created = f.Sluice({"tokens", "create", "--scope", "submit", "--tenant", "initech"});
  INFO(created.out << created.err);
  REQUIRE(created.exit_code == 0);
  auto fields = Fields(created.out);
  const std::string plaintext = fields["token"];
  REQUIRE(plaintext.size() > 10);
  CHECK(fields["tenant"] == "initech");
  CHECK(fields["scopes"] == "submit");
  CHECK(created.err.find("shown only") != std::string::npos);

  auto submit = f.SluiceAs(plaintext, {"submit", "report-export", R"({"report":"usage"})"});
  INFO(submit.out << submit.err);
  REQUIRE(submit.exit_code == 0);
  std::string id = submit.out.substr(0, submit.out.find(' '));
  auto job = f.Admin("GET", "/v1/jobs/" + id);
  REQUIRE(job.status == 200);
  CHECK(job.body["tenant"] == "initech");

  auto quiet = f.Sluice({"tokens", "create", "--scope", "work", "--queue", "report-export",
                         "--queue", "other", "--secret-only"});
  REQUIRE(quiet.exit_code == 0);
  std::string work = quiet.out.substr(0, quiet.out.find('\n'));
  CHECK(quiet.out == work + "\n");
  auto lease = Call(*f.http, "POST", "/v1/leases", {{"queues", {"report-export"}}, {"wait_ms", 0}},
                    Bearer(work));
  CHECK(lease.status == 200);

  auto as_json = f.Sluice({"tokens", "create", "--scope", "work", "--scope", "admin", "--json"});
  REQUIRE(as_json.exit_code == 0);
  json j = json::parse(as_json.out);
  CHECK(j["scopes"] == json({"work", "admin"}));
  CHECK(j["token"].is_string());

  auto refused = f.Sluice({"tokens", "create", "--scope", "submit"});  // no tenant
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("bad_request (HTTP 400)") != std::string::npos);
}

TEST_CASE("cli: tokens list shows every token and never a secret") {
  Fixture f;
  auto created = f.Sluice({"tokens", "create", "--scope", "submit", "--tenant", "acme", "--json"});
  REQUIRE(created.exit_code == 0);
  json c = json::parse(created.out);
  const std::string id = c["id"], plaintext = c["token"];

  auto list = f.Sluice({"tokens", "list"});
  INFO(list.out << list.err);
  REQUIRE(list.exit_code == 0);
  auto row = Row(list.out, id);
  CHECK(row["TENANT"] == "acme");
  CHECK(row["SCOPES"] == "submit");
  CHECK(row["REVOKED"] == "-");
  CHECK(Rows(list.out).size() >= 4);  // three from the fixture, one from the CLI
  CHECK(list.out.find(plaintext) == std::string::npos);

  auto as_json = f.Sluice({"tokens", "list", "--json"});
  REQUIRE(as_json.exit_code == 0);
  CHECK(as_json.out.find(plaintext) == std::string::npos);
  CHECK(as_json.out.find(f.acme) == std::string::npos);
  json l = json::parse(as_json.out);
  REQUIRE(l["tokens"].is_array());
  bool found = false;
  for (const json& t : l["tokens"]) {
    CHECK_FALSE(t.contains("token"));
    if (t["id"] == id) found = true;
  }
  CHECK(found);
}

TEST_CASE("cli: a revoked token is refused on its next request") {
  Fixture f;
  auto created = f.Sluice({"tokens", "create", "--scope", "submit", "--tenant", "acme", "--json"});
  REQUIRE(created.exit_code == 0);
  json c = json::parse(created.out);
  const std::string id = c["id"], plaintext = c["token"];
  REQUIRE(f.SluiceAs(plaintext, {"submit", "report-export"}).exit_code == 0);

  auto revoke = f.Sluice({"tokens", "revoke", id});
  INFO(revoke.out << revoke.err);
  REQUIRE(revoke.exit_code == 0);
  CHECK(revoke.out.find("token " + id + " revoked at ") == 0);

  auto refused = f.SluiceAs(plaintext, {"submit", "report-export"});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("unauthorized (HTTP 401)") != std::string::npos);
  CHECK(refused.out.empty());
  CHECK(Row(f.Sluice({"tokens", "list"}).out, id)["REVOKED"] != "-");

  auto unknown = f.Sluice({"tokens", "revoke", "tok_does_not_exist"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("not_found (HTTP 404)") != std::string::npos);
}

TEST_CASE("cli: submit admits a job from an argument or stdin, with its options") {
  Fixture f;
  auto run = f.SluiceAs(f.acme, {"submit", "report-export", R"({"report":"usage"})", "--cost", "2",
                                 "--deadline-in-ms", "600000", "--idempotency-key", "k-1"});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  std::istringstream words(run.out);
  std::string id, state;
  words >> id >> state;
  CHECK(state == "queued");
  auto job = f.Admin("GET", "/v1/jobs/" + id);
  REQUIRE(job.status == 200);
  CHECK(job.body["payload"] == json({{"report", "usage"}}));
  CHECK(job.body["cost"] == 2);
  CHECK(job.body["deadline"].is_string());

  auto replay = f.SluiceAs(f.acme, {"submit", "report-export", R"({"report":"usage"})", "--cost",
                                    "2", "--deadline-in-ms", "600000", "--idempotency-key", "k-1"});
  REQUIRE(replay.exit_code == 0);
  CHECK(replay.out.find(id) == 0);
  CHECK(replay.out.find("idempotent replay") != std::string::npos);

  auto from_stdin =
      f.SluiceAs(f.acme, {"submit", "report-export", "-", "--json"}, R"({"rows": [1, 2]})");
  INFO(from_stdin.err);
  REQUIRE(from_stdin.exit_code == 0);
  json j = json::parse(from_stdin.out);
  CHECK(j["state"] == "queued");
  CHECK(j["payload"] == json({{"rows", {1, 2}}}));
}

TEST_CASE("cli: a full bucket is exit 1 with queue_full and the Retry-After") {
  Fixture f;
  f.PutQueue("tiny", {{"rate", 0.01}, {"capacity", 2}});
  for (int i = 0; i < 2; ++i) REQUIRE(f.SluiceAs(f.acme, {"submit", "tiny"}).exit_code == 0);
  auto full = f.SluiceAs(f.acme, {"submit", "tiny", "{}"});
  INFO(full.out << full.err);
  CHECK(full.exit_code == 1);
  CHECK(full.out.empty());
  CHECK(full.err.find("queue_full (HTTP 429)") != std::string::npos);
  auto at = full.err.find("Retry-After: ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoll(full.err.substr(at + 13)) >= 1);
}

// An intake layer allows one submit per token per 2 s window. `sluice submit` refused
// with 429 rate_limited waits the Retry-After (plus jitter) and tries again with the same
// Idempotency-Key: the server refuses it exactly once (a retry before the window ended
// would be refused again), and one job is made.
TEST_CASE("cli: submit retries a 429 no earlier than Retry-After, making one job") {
  Fixture f({{"rate", 1000}, {"capacity", 1000}});
  const json layer = {{"name", "per_token"}, {"algorithm", "fixed_window"},
                      {"limit", 1},          {"window_s", 2},
                      {"key", {"token"}},    {"route_groups", {"submit"}}};
  REQUIRE(f.Admin("PUT", "/v1/admin/limits", {{"layers", json::array({layer})}}).status == 200);
  // Windows are aligned to the clock (shaper/limiters/algorithms.h): the first submit goes
  // early in one, so that the next is refused in it however slow the machine is today (a
  // submit late in a window let the next one into the following window: no 429 to retry).
  REQUIRE(testing::load::PollUntil(
      [] { return WallNowMicros() % (2 * kMicrosPerSecond) < 300 * kMicrosPerMilli; },
      std::chrono::seconds(3)));
  REQUIRE(f.SluiceAs(f.acme, {"submit", "report-export", "{}"}).exit_code == 0);
  SECTION("with retries (the default)") {
    auto run = f.SluiceAs(f.acme, {"submit", "report-export", "{}"});
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    const std::string retry = "rate_limited (HTTP 429); retrying in";
    const size_t first = run.err.find(retry);
    CHECK(first != std::string::npos);
    CHECK(run.err.find(retry, first + 1) == std::string::npos);
    auto res = f.http->Get("/metrics", Bearer(kAdminToken));
    REQUIRE(res);
    CHECK(res->body.find("sluice_limiter_decisions_total{layer=\"per_token\",route_group="
                         "\"submit\",outcome=\"rejected\"} 1\n") != std::string::npos);
    CHECK(f.Admin("GET", "/v1/jobs?queue=report-export").body["jobs"].size() == 2);
  }
  SECTION("--retries 0 reports the refusal at once") {
    auto run = f.SluiceAs(f.acme, {"submit", "report-export", "{}", "--retries", "0"});
    CHECK(run.exit_code == 1);
    CHECK(run.err.find("rate_limited (HTTP 429)") != std::string::npos);
    CHECK(run.err.find("Retry-After: ") != std::string::npos);
  }
}

TEST_CASE("cli: an unreachable server is exit 3") {
  // A bound port that does not listen: connections to it are refused.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  auto run = RunCli({"queues"}, {"SLUICE_URL=" + url, "SLUICE_TOKEN=whatever-Zk3"});
  ::close(fd);
  INFO(run.err);
  CHECK(run.exit_code == 3);
  CHECK(run.err.find("cannot reach " + url) != std::string::npos);
  CHECK(run.out.empty());
}

TEST_CASE("cli: usage errors are exit 2 and send nothing") {
  Fixture f;
  CHECK(f.Sluice({}).exit_code == 2);
  CHECK(f.Sluice({"frobnicate"}).exit_code == 2);
  CHECK(f.Sluice({"tenants"}).exit_code == 2);  // QUEUE missing
  CHECK(f.Sluice({"jobs", "--state", "sleeping"}).exit_code == 2);
  CHECK(f.Sluice({"jobs", "--limit", "0"}).exit_code == 2);
  CHECK(f.Sluice({"tokens"}).exit_code == 2);
  CHECK(f.Sluice({"tokens", "create", "--scope", "root"}).exit_code == 2);
  auto bad_payload = f.SluiceAs(f.acme, {"submit", "report-export", "{not json"});
  CHECK(bad_payload.exit_code == 2);
  CHECK(bad_payload.err.find("not valid JSON") != std::string::npos);
  auto bad_stdin = f.SluiceAs(f.acme, {"submit", "report-export", "-"}, "[1,");
  CHECK(bad_stdin.exit_code == 2);
  auto bad_url =
      RunCli({"queues"}, {"SLUICE_URL=localhost:8080", std::string("SLUICE_TOKEN=") + kAdminToken});
  CHECK(bad_url.exit_code == 2);
  CHECK(bad_url.err.find("http://HOST") != std::string::npos);
  auto no_token = RunCli({"queues"}, {"SLUICE_URL=" + f.server.url()});
  CHECK(no_token.exit_code == 2);
  CHECK(no_token.err.find("SLUICE_TOKEN") != std::string::npos);
  // Nothing reached the server: the bucket is still empty.
  auto q = f.Admin("GET", "/v1/admin/queues/report-export");
  CHECK(q.body["stats"]["queued"] == 0);
  // Help is not an error.
  auto help = f.Sluice({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("tenants") != std::string::npos);
}

TEST_CASE("cli: flags win over the environment, and the token is never printed") {
  Fixture f;
  // SLUICE_URL points nowhere; --server and --token name the real server and token.
  auto run = RunCli({"--server", f.server.url(), "--token", kAdminToken, "queues", "--json"},
                    {"SLUICE_URL=http://127.0.0.1:1", "SLUICE_TOKEN=wrong-token"});
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find(kAdminToken) == std::string::npos);
  CHECK(run.err.find(kAdminToken) == std::string::npos);

  const std::string bad = "bad-token-Vq81LmZ";
  auto refused = RunCli({"queues", "--token", bad, "--server", f.server.url()}, {});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("unauthorized (HTTP 401)") != std::string::npos);
  CHECK(refused.err.find(bad) == std::string::npos);
  CHECK(refused.out.find(bad) == std::string::npos);
  auto env_refused = f.SluiceAs(bad, {"jobs"});
  CHECK(env_refused.exit_code == 1);
  CHECK((env_refused.out + env_refused.err).find(bad) == std::string::npos);
  CHECK(f.server.ReadLog().find(bad) == std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
