// Crash safety (issue 4): the real sluiced is killed with SIGKILL at random moments while
// submitters and workers keep running against it, and restarted on the same SQLite file.
// Afterwards every acknowledged job exists and has succeeded, no job was completed twice or
// under two leases, and no job was held by two live leases at once (DESIGN.md rule 7, intake).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/time.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/test_db.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kQueue[] = "crash";
constexpr int64_t kLeaseMs = 2000;
constexpr int kKills = 12;
constexpr int kSubmitters = 3;
constexpr int kWorkers = 3;
constexpr int64_t kMaxSubmitsPerThread = 3000;
constexpr auto kProgressTimeout = std::chrono::seconds(15);
constexpr auto kDrainTimeout = std::chrono::seconds(45);

// Where the server listens now: the main thread publishes a new port after each restart,
// and 0 while the server is down. Thread-safe.
class CurrentServer {
 public:
  void Publish(int port) {
    std::lock_guard<std::mutex> lock(mu_);
    port_ = port;
    ++generation_;
  }
  // (port, generation); port 0 while the server is down.
  std::pair<int, int64_t> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {port_, generation_};
  }

 private:
  mutable std::mutex mu_;
  int port_ = 0;            // guarded by mu_
  int64_t generation_ = 0;  // guarded by mu_
};

// One lease a worker received.
struct Grant {
  std::string lease_id;
  int64_t attempt = 0;
  Micros leased_at = 0;
  Micros expires_at = 0;
  int64_t seq = -1;  // the payload's client-side sequence number
};

// What the clients saw, for the checks at the end. Thread-safe.
class Ledger {
 public:
  void Acknowledged(const std::string& id, int64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!acked_.emplace(id, seq).second) anomalies_.push_back("job id acknowledged twice: " + id);
  }
  void Granted(const std::string& id, Grant g) {
    std::lock_guard<std::mutex> lock(mu_);
    grants_[id].push_back(std::move(g));
  }
  void Completed(const std::string& id, const std::string& lease_id) {
    std::lock_guard<std::mutex> lock(mu_);
    completed_[id].push_back(lease_id);
    ++completes_;
  }
  void Count(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[what];
  }
  void Anomaly(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (anomalies_.size() < 50) anomalies_.push_back(std::move(what));
    ++anomaly_count_;
  }

  size_t acked_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_.size();
  }
  int64_t complete_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return completes_;
  }
  // Copies, taken once every thread has stopped.
  std::map<std::string, int64_t> acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  std::map<std::string, std::vector<std::string>> completed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_;
  }
  std::map<std::string, std::vector<Grant>> grants() const {
    std::lock_guard<std::mutex> lock(mu_);
    return grants_;
  }
  std::map<std::string, int64_t> counts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }
  std::vector<std::string> anomalies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return anomalies_;
  }
  int64_t anomaly_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return anomaly_count_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> acked_;                       // job id → seq; guarded by mu_
  std::map<std::string, std::vector<std::string>> completed_;  // job id → lease ids of 200s
  std::map<std::string, std::vector<Grant>> grants_;           // guarded by mu_
  std::map<std::string, int64_t> counts_;                      // "submit 503" → n; guarded
  std::vector<std::string> anomalies_;                         // guarded by mu_
  int64_t anomaly_count_ = 0;                                  // guarded by mu_
  int64_t completes_ = 0;                                      // guarded by mu_
};

// One thread's connection to whichever server is current. A transport error drops the
// client; the next request builds one for the port published then. Not thread-safe.
class Connection {
 public:
  Connection(const CurrentServer& current, Ledger& ledger, std::string token)
      : current_(current), ledger_(ledger), token_(std::move(token)) {}

  // nullopt when the server is down or the request did not get an answer.
  std::optional<HttpResult> Post(const std::string& path, const json& body) {
    return Send("POST", path, body);
  }
  std::optional<HttpResult> Get(const std::string& path) { return Send("GET", path, nullptr); }

 private:
  std::optional<HttpResult> Send(const std::string& method, const std::string& path,
                                 const json& body) {
    auto [port, generation] = current_.Get();
    if (port == 0) return std::nullopt;
    if (!client_ || generation != generation_) {
      client_ = std::make_unique<httplib::Client>("127.0.0.1", port);
      client_->set_tcp_nodelay(true);
      client_->set_keep_alive(true);
      client_->set_connection_timeout(1, 0);
      client_->set_read_timeout(5, 0);
      client_->set_write_timeout(5, 0);
      client_->set_bearer_token_auth(token_.c_str());
      generation_ = generation;
    }
    httplib::Result res(nullptr, httplib::Error::Unknown);
    if (method == "GET") {
      res = client_->Get(path.c_str());
    } else {
      res = client_->Post(path.c_str(), body.dump(), "application/json");
    }
    if (!res) {
      client_.reset();
      ledger_.Count("transport error");
      return std::nullopt;
    }
    HttpResult out;
    out.status = res->status;
    out.headers = res->headers;
    out.body = json::parse(res->body, nullptr, false);
    if (out.body.is_discarded()) out.body = res->body;
    if (res->status >= 400 &&
        (res->get_header_value("Content-Type") != "application/problem+json" ||
         !out.body.is_object() || !out.body.contains("error"))) {
      ledger_.Anomaly(method + " " + path + " answered " + std::to_string(res->status) +
                      " without a problem+json body: " + res->body);
    }
    return out;
  }

  const CurrentServer& current_;
  Ledger& ledger_;
  const std::string token_;
  std::unique_ptr<httplib::Client> client_;
  int64_t generation_ = -1;
};

// A short, jittered pause before retrying after an error.
void Backoff(std::mt19937_64& rng) {
  std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(5, 25)(rng)));
}

Micros TimeField(const json& j, const char* name) {
  if (!j.contains(name) || !j[name].is_string()) return -1;
  return ParseRfc3339(j[name].get<std::string>()).value_or(-1);
}

// Submitters and workers running against the current server. The destructor stops and
// joins every thread, so a failed REQUIRE on the main thread never leaves one running.
class Load {
 public:
  Load(const CurrentServer& current, Ledger& ledger, uint64_t seed, std::string submit_token,
       std::string work_token)
      : current_(current),
        ledger_(ledger),
        submit_token_(std::move(submit_token)),
        work_token_(std::move(work_token)) {
    for (int i = 0; i < kSubmitters; ++i) {
      submitters_.emplace_back([this, seed, i] { Submitter(seed * 31 + i); });
    }
    for (int i = 0; i < kWorkers; ++i) {
      workers_.emplace_back([this, seed, i] { Worker(seed * 37 + i, i); });
    }
  }
  ~Load() {
    StopSubmitters();
    StopWorkers();
  }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void StopSubmitters() {
    stop_submitters_ = true;
    for (auto& t : submitters_) {
      if (t.joinable()) t.join();
    }
  }
  void StopWorkers() {
    stop_workers_ = true;
    for (auto& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Submitter(uint64_t seed) {
    std::mt19937_64 rng(seed);
    Connection conn(current_, ledger_, submit_token_);
    const std::string path = std::string("/v1/queues/") + kQueue + "/jobs";
    for (int64_t n = 0; n < kMaxSubmitsPerThread && !stop_submitters_; ++n) {
      const int64_t seq = next_seq_++;
      auto r = conn.Post(path, {{"payload", {{"seq", seq}}}});
      if (!r) {
        ledger_.Count("submit unanswered");
        Backoff(rng);
        continue;
      }
      if (r->status == 202) {
        const std::string id = r->body.value("id", "");
        if (id.empty() || r->header("Location") != "/v1/jobs/" + id ||
            r->body.value("state", "") != "queued") {
          ledger_.Anomaly("a 202 without a proper job: " + r->body.dump());
          continue;
        }
        ledger_.Acknowledged(id, seq);
      } else if (r->status == 503) {
        ledger_.Count("submit 503");
        Backoff(rng);
      } else {
        ledger_.Anomaly("submit answered " + std::to_string(r->status) + ": " + r->body.dump());
        Backoff(rng);
      }
    }
  }

  void Worker(uint64_t seed, int index) {
    std::mt19937_64 rng(seed);
    Connection conn(current_, ledger_, work_token_);
    const json lease_request = {{"queues", {kQueue}},
                                {"max_jobs", 5},
                                {"wait_ms", 200},
                                {"worker_id", "crash-worker-" + std::to_string(index)}};
    while (!stop_workers_) {
      auto r = conn.Post("/v1/leases", lease_request);
      if (!r || r->status != 200) {
        if (r && r->status != 503) {
          ledger_.Anomaly("lease answered " + std::to_string(r->status) + ": " + r->body.dump());
        }
        Backoff(rng);
        continue;
      }
      const json jobs = r->body.value("jobs", json::array());
      for (const json& job : jobs) {
        Grant g;
        g.lease_id = job.value("lease_id", "");
        g.attempt = job.value("attempt", int64_t{0});
        g.leased_at = TimeField(job, "leased_at");
        g.expires_at = TimeField(job, "lease_expires_at");
        if (job.contains("payload") && job["payload"].is_object()) {
          g.seq = job["payload"].value("seq", int64_t{-1});
        }
        ledger_.Granted(job.value("id", ""), g);
      }
      for (const json& job : jobs) Complete(conn, rng, job["id"], job["lease_id"]);
    }
  }

  // Completes one job, retrying through a crash until its lease must have run out. Half the
  // time a crash makes the worker drop the job instead, as if it had died too: its lease
  // must run out and the job come back.
  void Complete(Connection& conn, std::mt19937_64& rng, const std::string& id,
                const std::string& lease_id) {
    const auto give_up = SteadyClock::now() + milliseconds(kLeaseMs + 500);
    const std::string path = "/v1/jobs/" + id + "/complete";
    while (!stop_workers_) {
      auto r = conn.Post(path, {{"lease_id", lease_id}, {"result", {{"ok", true}}}});
      if (r && r->status == 200) {
        if (r->body.value("state", "") != "succeeded") {
          ledger_.Anomaly("complete answered 200 but not succeeded: " + r->body.dump());
        }
        ledger_.Completed(id, lease_id);
        return;
      }
      if (r && r->status == 409 && r->body.value("error", "") == "lease_lost") {
        ledger_.Count("complete 409 lease_lost");
        return;
      }
      if (r && r->status != 503) {
        ledger_.Anomaly("complete answered " + std::to_string(r->status) + ": " + r->body.dump());
        return;
      }
      if (!r && std::bernoulli_distribution(0.5)(rng)) {
        ledger_.Count("complete dropped");
        return;
      }
      if (SteadyClock::now() > give_up) {
        ledger_.Count("complete abandoned");
        return;
      }
      Backoff(rng);
    }
  }

  const CurrentServer& current_;
  Ledger& ledger_;
  const std::string submit_token_;
  const std::string work_token_;
  std::atomic<int64_t> next_seq_{0};
  std::atomic<bool> stop_submitters_{false};
  std::atomic<bool> stop_workers_{false};
  std::vector<std::thread> submitters_;
  std::vector<std::thread> workers_;
};

// Polls `ready` until it holds or `timeout` passes.
template <typename F>
bool PollUntil(F ready, SteadyClock::duration timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return ready();
}

uint64_t SeedFromEnvironmentOrRandom() {
  if (const char* s = std::getenv("SLUICE_CRASH_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

TEST_CASE("crash: SIGKILL at random moments loses no acknowledged job", "[crash]") {
  const auto started = SteadyClock::now();
  const uint64_t seed = SeedFromEnvironmentOrRandom();
  std::printf("crash test seed %llu (rerun with SLUICE_CRASH_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);

  TempDir dir;
  ServerOptions options;
  options.db_path = TestDb(dir, "crash.db");
  auto server = std::make_unique<ServerProcess>(options);

  std::string submit_token, work_token;
  {
    auto admin = server->Client();
    const auto as_admin = Bearer(server->admin_token());
    auto q = Call(*admin, "PUT", std::string("/v1/admin/queues/") + kQueue,
                  {{"rate", 2000},
                   {"capacity", 100000},
                   {"burst", 100},
                   {"lease_ms", kLeaseMs},
                   {"max_attempts", 100}},
                  as_admin);
    REQUIRE(q.status == 200);
    auto s = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "crash"}},
                  as_admin);
    REQUIRE(s.status == 201);
    submit_token = s.body["token"];
    auto w = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}, as_admin);
    REQUIRE(w.status == 201);
    work_token = w.body["token"];
  }

  CurrentServer current;
  Ledger ledger;
  current.Publish(server->port());
  auto load = std::make_unique<Load>(current, ledger, seed, submit_token, work_token);

  // Both sides must have moved on the current server before it is killed again.
  auto await_progress = [&] {
    const size_t acked = ledger.acked_count();
    const int64_t completes = ledger.complete_count();
    return PollUntil(
        [&] { return ledger.acked_count() > acked && ledger.complete_count() > completes; },
        kProgressTimeout);
  };

  int kills = 0;
  int64_t slowest_restart_ms = 0;
  for (int i = 0; i < kKills; ++i) {
    INFO("kill " << i);
    REQUIRE(await_progress());
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(100, 400)(rng)));
    current.Publish(0);
    REQUIRE(server->Stop(SIGKILL) == -SIGKILL);
    ++kills;
    const auto restart = SteadyClock::now();
    server.reset();
    server = std::make_unique<ServerProcess>(options);
    slowest_restart_ms = std::max<int64_t>(
        slowest_restart_ms,
        std::chrono::duration_cast<milliseconds>(SteadyClock::now() - restart).count());
    current.Publish(server->port());
  }
  REQUIRE(await_progress());
  load->StopSubmitters();

  // Workers drain: jobs leased when the server died come back once their lease runs out.
  const std::map<std::string, int64_t> acked = ledger.acked();
  auto reader = server->Client(submit_token);
  std::set<std::string> lost, unfinished;
  for (const auto& [id, seq] : acked) unfinished.insert(id);
  const auto drain_deadline = SteadyClock::now() + kDrainTimeout;
  {
    auto admin = server->Client(server->admin_token());
    PollUntil(
        [&] {
          auto q = Call(*admin, "GET", std::string("/v1/admin/queues/") + kQueue);
          return q.status == 200 && q.body["stats"]["queued"] == 0 &&
                 q.body["stats"]["leased"] == 0;
        },
        kDrainTimeout);
  }
  while (!unfinished.empty() && SteadyClock::now() < drain_deadline) {
    for (auto it = unfinished.begin(); it != unfinished.end();) {
      auto r = Call(*reader, "GET", "/v1/jobs/" + *it);
      if (r.status == 404) {
        lost.insert(*it);
        it = unfinished.erase(it);
      } else if (r.status == 200 && r.body["state"] == "succeeded") {
        it = unfinished.erase(it);
      } else {
        ++it;
      }
    }
    if (!unfinished.empty()) std::this_thread::sleep_for(milliseconds(50));
  }
  load->StopWorkers();

  // Tally what the clients saw.
  const auto completed = ledger.completed();
  const auto grants = ledger.grants();
  const auto counts = ledger.counts();
  int64_t completes = 0, duplicates = 0, two_lease_completes = 0, overlaps = 0, grant_count = 0,
          leased_twice = 0, later_attempts = 0, payload_mismatches = 0;
  std::vector<std::string> examples;
  for (const auto& [id, leases] : completed) {
    completes += static_cast<int64_t>(leases.size());
    if (leases.size() > 1) {
      ++duplicates;
      if (std::set<std::string>(leases.begin(), leases.end()).size() > 1) ++two_lease_completes;
      if (examples.size() < 5) examples.push_back("completed twice: " + id);
    }
  }
  for (auto [id, list] : grants) {
    grant_count += static_cast<int64_t>(list.size());
    if (list.size() > 1) ++leased_twice;
    std::sort(list.begin(), list.end(),
              [](const Grant& a, const Grant& b) { return a.leased_at < b.leased_at; });
    for (size_t i = 1; i < list.size(); ++i) {
      // Rule 7: a job is leased again only once its previous lease has run out.
      if (list[i].leased_at < list[i - 1].expires_at || list[i].lease_id == list[i - 1].lease_id ||
          list[i].attempt <= list[i - 1].attempt) {
        ++overlaps;
        if (examples.size() < 5) {
          examples.push_back("two live leases on " + id + ": " + list[i - 1].lease_id +
                             " (attempt " + std::to_string(list[i - 1].attempt) + ", until " +
                             FormatRfc3339(list[i - 1].expires_at) + ") and " + list[i].lease_id +
                             " (attempt " + std::to_string(list[i].attempt) + ", from " +
                             FormatRfc3339(list[i].leased_at) + ")");
        }
      }
    }
    auto a = acked.find(id);
    for (const Grant& g : list) {
      if (g.attempt > 1) ++later_attempts;
      if (a != acked.end() && g.seq != a->second) ++payload_mismatches;
    }
  }
  auto count = [&](const char* what) {
    auto it = counts.find(what);
    return it == counts.end() ? int64_t{0} : it->second;
  };
  const double wall_s = std::chrono::duration<double>(SteadyClock::now() - started).count();

  const std::vector<std::pair<const char*, int64_t>> report = {
      {"kills", kills},
      {"acknowledged (202)", static_cast<int64_t>(acked.size())},
      {"completed (200)", completes},
      {"lost", static_cast<int64_t>(lost.size())},
      {"unfinished", static_cast<int64_t>(unfinished.size())},
      {"duplicates", duplicates},
      {"completed under two leases", two_lease_completes},
      {"overlapping leases", overlaps},
      {"leases received", grant_count},
      {"jobs leased twice", leased_twice},
      {"leases of attempt > 1", later_attempts},
      {"payload mismatches", payload_mismatches},
      {"complete 409 lease_lost", count("complete 409 lease_lost")},
      {"complete dropped by worker", count("complete dropped")},
      {"complete abandoned", count("complete abandoned")},
      {"submit unanswered", count("submit unanswered")},
      {"submit 503", count("submit 503")},
      {"transport errors", count("transport error")},
      {"anomalies", ledger.anomaly_count()},
      {"slowest restart (ms)", slowest_restart_ms},
  };
  std::printf("crash test, seed %llu:\n", static_cast<unsigned long long>(seed));
  for (const auto& [name, value] : report) {
    std::printf("  %-28s %lld\n", name, static_cast<long long>(value));
  }
  std::printf("  %-28s %.1f\n", "wall time (s)", wall_s);
  for (const auto& e : examples) std::printf("  %s\n", e.c_str());
  for (const auto& a : ledger.anomalies()) std::printf("  anomaly: %s\n", a.c_str());
  std::fflush(stdout);

  INFO("kills " << kills << ", acknowledged " << acked.size() << ", completed " << completes
                << ", lost " << lost.size() << ", unfinished " << unfinished.size()
                << ", duplicates " << duplicates);
  CHECK(kills >= 10);
  CHECK(acked.size() > 0);
  // 1 and 4: every job that got a 202 exists after the restarts.
  CHECK(lost.empty());
  // 2: every acknowledged job reaches succeeded once workers drain.
  CHECK(unfinished.empty());
  // 3: no job completed under two leases, at most one 200 complete per job, and no job was
  // held by two live leases.
  CHECK(two_lease_completes == 0);
  CHECK(duplicates == 0);
  CHECK(overlaps == 0);
  // The server spoke the protocol throughout: payloads intact, only expected answers.
  CHECK(payload_mismatches == 0);
  CHECK(ledger.anomaly_count() == 0);
  CHECK(wall_s < 90);
}

}  // namespace
}  // namespace sluice::testing
