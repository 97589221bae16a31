// A small C++ client for the sluice worker protocol (DESIGN.md "HTTP API v1"): long-poll
// leases, complete, fail. Errors come back as sluice::Error with the server's code.
// One Client per thread (it owns one keep-alive connection).
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace sluice {

struct LeasedJob {
  std::string id;
  std::string queue;
  std::string tenant;
  nlohmann::json payload;
  int64_t attempt = 0;
  std::string lease_id;
  std::string lease_expires_at;
  std::optional<std::string> deadline;
};

class WorkerClient {
 public:
  // `base_url` like "http://127.0.0.1:8080"; `token` a work-scoped token.
  WorkerClient(const std::string& base_url, std::string token, std::string worker_id);

  // Waits up to `wait_ms` for up to `max_jobs` jobs of `queues`.
  Result<std::vector<LeasedJob>> Lease(const std::vector<std::string>& queues, int max_jobs,
                                       int wait_ms);
  Status Complete(const LeasedJob& job, const nlohmann::json& result);
  Status Fail(const LeasedJob& job, const std::string& error, bool retryable = true,
              std::optional<int64_t> retry_in_ms = std::nullopt);

 private:
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);

  httplib::Client http_;
  std::string token_;
  std::string worker_id_;
};

// Turns an HTTP answer into an Error (problem+json when the server sent one).
Error ErrorFromResponse(int status, const std::string& body);

}  // namespace sluice
