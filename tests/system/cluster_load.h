// Clients for the cluster tests (cluster_limits_test.cc, cluster_crash_test.cc): a
// connection to one instance of a testutil/cluster.h Cluster that follows its restarts,
// and a ledger of what submitters and workers saw (on load.h's).
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

#include "tests/system/load.h"
#include "tests/testutil/cluster.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing::cluster_load {

using load::AddExample;
using load::Backoff;
using load::CompleteTally;
using load::Crew;
using load::LeasedJobs;
using load::LeaseOf;
using load::LeaseTally;
using load::PollUntil;
using load::SeedFromEnvironmentOrRandom;
using load::ServerLease;
using load::TallyCompletes;
using load::TallyLeases;
using load::TimeField;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// One thread's keep-alive connection to one instance, rebuilt on the port the instance
// has now after a transport error or a restart. Not thread-safe (one per thread).
class InstanceConn {
 public:
  InstanceConn(const ClusterInstance& instance, std::string token, int read_timeout_s = 10)
      : instance_(instance), client_(std::move(token), read_timeout_s) {}

  // nullopt when the instance is down or the request got no answer.
  std::optional<HttpResult> Send(const std::string& method, const std::string& path,
                                 const json& body = nullptr) {
    return client_.Send(instance_.endpoint(), method, path, body);
  }
  std::optional<HttpResult> Post(const std::string& path, const json& body) {
    return Send("POST", path, body);
  }

 private:
  const ClusterInstance& instance_;
  load::FollowingClient client_;
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

// What clients saw (acknowledged jobs map to their tenant), and the grants with the
// worker's own times. Thread-safe.
class Ledger : public load::Ledger<std::string> {
 public:
  void Granted(Grant g) {
    std::lock_guard<std::mutex> lock(grants_mu_);
    grants_.push_back(std::move(g));
  }
  std::vector<Grant> grants() const {
    std::lock_guard<std::mutex> lock(grants_mu_);
    return grants_;
  }

 private:
  mutable std::mutex grants_mu_;
  std::vector<Grant> grants_;  // guarded by grants_mu_
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

}  // namespace sluice::testing::cluster_load
