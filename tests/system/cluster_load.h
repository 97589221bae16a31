// Clients for the cluster tests (cluster_limits_test.cc, cluster_crash_test.cc): a
// connection to one instance of a testutil/cluster.h Cluster that follows its restarts,
// and a ledger of what submitters and workers saw.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/testutil/cluster.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing::cluster_load {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// One thread's keep-alive connection to one instance, rebuilt on the port the instance
// has now after a transport error or a restart. Not thread-safe (one per thread).
class InstanceConn {
 public:
  InstanceConn(const ClusterInstance& instance, std::string token, int read_timeout_s = 10)
      : instance_(instance), token_(std::move(token)), read_timeout_s_(read_timeout_s) {}

  // nullopt when the instance is down or the request got no answer.
  std::optional<HttpResult> Send(const std::string& method, const std::string& path,
                                 const json& body = nullptr) {
    auto [port, generation] = instance_.endpoint();
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
    return out;
  }
  std::optional<HttpResult> Post(const std::string& path, const json& body) {
    return Send("POST", path, body);
  }

 private:
  const ClusterInstance& instance_;
  const std::string token_;
  const int read_timeout_s_;
  std::unique_ptr<httplib::Client> client_;
  int64_t generation_ = -1;
};

// One lease a worker received, with the worker's own view of when it held it: from the
// moment the grant arrived to the moment it sent the complete (inside the server's lease,
// so overlaps counted on these intervals are real ones).
struct Grant {
  std::string job_id;
  std::string tenant;
  std::string lease_id;
  int64_t attempt = 0;
  int instance = -1;
  SteadyClock::time_point granted;
  SteadyClock::time_point released;  // complete sent; granted if never sent
  // How long after the lease's leased_at (the database's clock) the grant arrived, on
  // this machine's wall clock (the database runs here too); -1 if unknown.
  int64_t handout_delay_us = -1;
};

// What clients saw. Thread-safe.
class Ledger {
 public:
  void Acknowledged(const std::string& id, const std::string& tenant) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!acked_.emplace(id, tenant).second) Anomaly("job id acknowledged twice: " + id, lock);
  }
  void Granted(Grant g) {
    std::lock_guard<std::mutex> lock(mu_);
    grants_.push_back(std::move(g));
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
  int64_t count(const std::string& what) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(what);
    return it == counts_.end() ? 0 : it->second;
  }
  std::map<std::string, std::string> acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  std::map<std::string, std::vector<std::string>> completed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_;
  }
  std::vector<Grant> grants() const {
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
  void Anomaly(const std::string& what, const std::lock_guard<std::mutex>&) {
    if (anomalies_.size() < 20) anomalies_.push_back(what);
    ++anomaly_count_;
  }

  mutable std::mutex mu_;
  std::map<std::string, std::string> acked_;                   // id → tenant; guarded by mu_
  std::map<std::string, std::vector<std::string>> completed_;  // id → lease ids answered 200
  std::vector<Grant> grants_;                                  // guarded by mu_
  std::map<std::string, int64_t> counts_;                      // guarded by mu_
  std::vector<std::string> anomalies_;                         // guarded by mu_
  int64_t anomaly_count_ = 0;                                  // guarded by mu_
  int64_t completes_ = 0;                                      // guarded by mu_
};

// The largest number of intervals [granted, released) open at once, over `grants` that
// `pick` selects.
template <typename Pick>
int MaxOverlap(const std::vector<Grant>& grants, Pick pick) {
  std::vector<std::pair<SteadyClock::time_point, int>> events;
  for (const Grant& g : grants) {
    if (!pick(g) || g.released <= g.granted) continue;
    events.emplace_back(g.granted, +1);
    events.emplace_back(g.released, -1);
  }
  // Ends sort before starts at the same instant.
  std::sort(events.begin(), events.end());
  int open = 0, most = 0;
  for (const auto& e : events) {
    open += e.second;
    most = std::max(most, open);
  }
  return most;
}

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

}  // namespace sluice::testing::cluster_load
