// What the load tests share (crash_test.cc, cluster_crash_test.cc, cluster_limits_test.cc
// through cluster_load.h): a keep-alive client that follows a server across restarts, a
// ledger of what submitters and workers saw, thread crews, and the end-of-run tallies of
// completes and leases. Ledger and Crew are thread-safe; FollowingClient is one per thread.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/time.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing::load {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Polls `ready` every 10 ms until it holds or `timeout` passes.
template <typename F>
bool PollUntil(F ready, SteadyClock::duration timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ready();
}

// The seed in SLUICE_CRASH_SEED, else a random one.
inline uint64_t SeedFromEnvironmentOrRandom() {
  if (const char* s = std::getenv("SLUICE_CRASH_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

// A short pause of 5 to `max_ms` ms, jittered, before retrying after an error.
inline void Backoff(std::mt19937_64& rng, int max_ms) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::uniform_int_distribution<int>(5, max_ms)(rng)));
}

// The RFC 3339 time in `j[name]`, or -1 when it is missing or unreadable.
inline Micros TimeField(const json& j, const char* name) {
  if (!j.contains(name) || !j[name].is_string()) return -1;
  return ParseRfc3339(j[name].get<std::string>()).value_or(-1);
}

// A keep-alive client to a server whose port may change: rebuilt for the endpoint passed
// when the endpoint's generation changed or after a transport error. Not thread-safe.
class FollowingClient {
 public:
  FollowingClient(std::string token, int read_timeout_s)
      : token_(std::move(token)), read_timeout_s_(read_timeout_s) {}

  // nullopt when the port is 0 (server down) or the request got no answer. A null body
  // posts an empty one. `raw_body`, if given, receives the answer's text.
  std::optional<HttpResult> Send(std::pair<int, int64_t> endpoint, const std::string& method,
                                 const std::string& path, const json& body,
                                 std::string* raw_body = nullptr) {
    auto [port, generation] = endpoint;
    if (port == 0) return std::nullopt;
    if (!client_ || generation != generation_) {
      client_ = std::make_unique<httplib::Client>("127.0.0.1", port);
      client_->set_tcp_nodelay(true);
      client_->set_keep_alive(true);
      client_->set_connection_timeout(1, 0);
      client_->set_read_timeout(read_timeout_s_, 0);
      client_->set_write_timeout(5, 0);
      client_->set_bearer_token_auth(token_.c_str());
      generation_ = generation;
    }
    httplib::Result res(nullptr, httplib::Error::Unknown);
    if (method == "GET") {
      res = client_->Get(path.c_str());
    } else {
      res = client_->Post(path.c_str(), body.is_null() ? "" : body.dump(), "application/json");
    }
    if (!res) {
      client_.reset();
      return std::nullopt;
    }
    HttpResult out;
    out.status = res->status;
    out.headers = res->headers;
    out.body = json::parse(res->body, nullptr, false);
    if (out.body.is_discarded()) out.body = res->body;
    if (raw_body) *raw_body = res->body;
    return out;
  }

 private:
  const std::string token_;
  const int read_timeout_s_;
  std::unique_ptr<httplib::Client> client_;
  int64_t generation_ = -1;
};

// One lease a worker received, with the server's times (the database's clock).
struct ServerLease {
  std::string lease_id;
  int64_t attempt = 0;
  Micros leased_at = -1;
  Micros expires_at = -1;
  int64_t seq = -1;  // the payload's "seq", where the submitter put one
};

// The lease in one job of a POST /v1/leases answer.
inline ServerLease LeaseOf(const json& job) {
  ServerLease l;
  l.lease_id = job.value("lease_id", "");
  l.attempt = job.value("attempt", int64_t{0});
  l.leased_at = TimeField(job, "leased_at");
  l.expires_at = TimeField(job, "lease_expires_at");
  if (job.contains("payload") && job["payload"].is_object()) {
    l.seq = job["payload"].value("seq", int64_t{-1});
  }
  return l;
}

// What clients saw, for the checks at the end: the jobs acknowledged with a 202 (id →
// `Ack`, what the submitter sent), completes answered 200, leases received, counters and
// anomalies. Thread-safe.
template <typename Ack>
class Ledger {
 public:
  // Keeps the first `anomalies_kept` anomalies' texts (all are counted).
  explicit Ledger(size_t anomalies_kept = 20) : anomalies_kept_(anomalies_kept) {}

  void Acknowledged(const std::string& id, const Ack& ack) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!acked_.emplace(id, ack).second) Anomaly("job id acknowledged twice: " + id, lock);
  }
  void Leased(const std::string& id, ServerLease l) {
    std::lock_guard<std::mutex> lock(mu_);
    leases_[id].push_back(std::move(l));
  }
  void Completed(const std::string& id, const std::string& lease_id) {
    std::lock_guard<std::mutex> lock(mu_);
    completed_[id].push_back(lease_id);
    ++completes_;
  }
  void Count(const std::string& what, int64_t n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[what] += n;
  }
  // Keeps the largest `value` seen under `what` (read back with count()).
  void Max(const std::string& what, int64_t value) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[what] = std::max(counts_[what], value);
  }
  void Anomaly(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    Anomaly(what, lock);
  }

  size_t acked_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_.size();
  }
  int64_t complete_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return completes_;
  }
  // 0 for a counter never counted.
  int64_t count(const std::string& what) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(what);
    return it == counts_.end() ? 0 : it->second;
  }
  // Copies, for the checks once the threads have stopped.
  std::map<std::string, Ack> acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  std::map<std::string, std::vector<ServerLease>> leases() const {
    std::lock_guard<std::mutex> lock(mu_);
    return leases_;
  }
  std::map<std::string, std::vector<std::string>> completed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_;
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
  void Anomaly(const std::string& what, const std::lock_guard<std::mutex>&) {
    if (anomalies_.size() < anomalies_kept_) anomalies_.push_back(what);
    ++anomaly_count_;
  }

  const size_t anomalies_kept_;
  mutable std::mutex mu_;
  std::map<std::string, Ack> acked_;                           // guarded by mu_
  std::map<std::string, std::vector<ServerLease>> leases_;     // job id → leases; guarded
  std::map<std::string, std::vector<std::string>> completed_;  // job id → lease ids of 200s
  std::map<std::string, int64_t> counts_;                      // "submit 503" → n; guarded
  std::vector<std::string> anomalies_;                         // guarded by mu_
  int64_t anomaly_count_ = 0;                                  // guarded by mu_
  int64_t completes_ = 0;                                      // guarded by mu_
};

// The jobs of a POST /v1/leases answer, each one's lease recorded in `ledger`; nullopt
// when nothing was leased (an answer other than 200 or 503 is noted as an anomaly).
template <typename Ack>
std::optional<json> LeasedJobs(Ledger<Ack>& ledger, const std::optional<HttpResult>& r) {
  if (!r || r->status != 200) {
    if (r && r->status != 503) {
      ledger.Anomaly("lease answered " + std::to_string(r->status) + ": " + r->body.dump());
    }
    return std::nullopt;
  }
  json jobs = r->body.value("jobs", json::array());
  for (const json& job : jobs) ledger.Leased(job.value("id", ""), LeaseOf(job));
  return jobs;
}

// Threads started together that poll stopping() and end when it holds. Stop() (and the
// destructor) raises it and joins them: declare a crew after what its threads use, so it
// is destroyed first. Thread-safe.
class Crew {
 public:
  Crew() = default;
  ~Crew() { Stop(); }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  template <typename F>
  void Spawn(F f) {
    threads_.emplace_back(std::move(f));
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  bool stopping() const { return stop_; }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;  // spawned and joined by the owner's thread only
};

// Keeps at most five examples for the printed report.
inline void AddExample(std::vector<std::string>& examples, std::string e) {
  if (examples.size() < 5) examples.push_back(std::move(e));
}

// The completes answered 200, per job (job id → lease ids).
struct CompleteTally {
  int64_t completes = 0;
  int64_t completed_twice = 0;      // jobs with more than one 200
  int64_t two_lease_completes = 0;  // jobs with 200s under different leases
};
inline CompleteTally TallyCompletes(
    const std::map<std::string, std::vector<std::string>>& completed,
    std::vector<std::string>& examples) {
  CompleteTally t;
  for (const auto& [id, leases] : completed) {
    t.completes += static_cast<int64_t>(leases.size());
    if (leases.size() > 1) {
      ++t.completed_twice;
      if (std::set<std::string>(leases.begin(), leases.end()).size() > 1) ++t.two_lease_completes;
      AddExample(examples, "completed twice: " + id);
    }
  }
  return t;
}

// Two leases on one job the server handed out while both were live.
struct LeaseOverlap {
  std::string job_id;
  ServerLease earlier;
  ServerLease later;
};
// The leases received, per job (job id → leases), against rule 7: a job is leased again
// only once its previous lease has run out, under a new lease id and a later attempt.
struct LeaseTally {
  int64_t grants = 0;
  int64_t leased_again = 0;  // jobs leased more than once
  std::vector<LeaseOverlap> overlaps;
};
inline LeaseTally TallyLeases(std::map<std::string, std::vector<ServerLease>> leases) {
  LeaseTally t;
  for (auto& [id, list] : leases) {
    t.grants += static_cast<int64_t>(list.size());
    if (list.size() > 1) ++t.leased_again;
    std::sort(list.begin(), list.end(),
              [](const ServerLease& a, const ServerLease& b) { return a.leased_at < b.leased_at; });
    for (size_t i = 1; i < list.size(); ++i) {
      if (list[i].leased_at < list[i - 1].expires_at || list[i].lease_id == list[i - 1].lease_id ||
          list[i].attempt <= list[i - 1].attempt) {
        t.overlaps.push_back({id, list[i - 1], list[i]});
      }
    }
  }
  return t;
}

}  // namespace sluice::testing::load
