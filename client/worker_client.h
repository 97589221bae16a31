// The sluice worker protocol (DESIGN.md "HTTP API v1") over one Connection: long-poll
// leases (acks riding along), heartbeat, complete, fail, batch acks. One call = one HTTP
// request, no retries: errors come back as sluice::Error with the server's code
// (client/problem.h; IsTransient says whether to back off and retry, worker/worker.h
// does that). One WorkerClient per thread: it owns one keep-alive connection and its
// calls are serialized; only Interrupt() may be called from another thread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.h"
#include "common/error.h"

namespace sluice {

struct LeasedJob {
  std::string id;
  std::string queue;
  std::string tenant;
  nlohmann::json payload;
  int64_t cost = 1;
  int64_t attempt = 0;  // counts from 1
  std::string lease_id;
  std::string leased_at;         // RFC 3339, server clock
  std::string lease_expires_at;  // RFC 3339, server clock
  std::optional<std::string> deadline;
  std::optional<std::string> traceparent;  // W3C trace context, when the job carries one

  // The lease length the server granted (lease_expires_at - leased_at), if both parse.
  std::optional<int64_t> LeaseMs() const;
};

struct LeaseOptions {
  std::vector<std::string> queues;
  int max_jobs = 1;                 // the server accepts 1..kMaxJobsPerLease
  int64_t wait_ms = 0;              // long-poll up to this long (server caps it)
  std::optional<int64_t> lease_ms;  // default: the job's own lease_ms
};

// How a job ended, as one item of POST /v1/acks (or of a lease request's "acks").
struct JobAck {
  std::string id;
  std::string lease_id;
  bool succeeded = true;
  nlohmann::json result;  // when succeeded
  std::string error;      // when not
  bool retryable = true;
  std::optional<int64_t> retry_in_ms;
};

// What one ack came to: the job's new state ("succeeded"; "queued" or "failed"), or the
// server's error for that job (kLeaseLost, kNotFound, ...).
using AckResult = Result<std::string>;

class WorkerClient {
 public:
  static constexpr int kMaxJobsPerLease = 100;
  static constexpr size_t kMaxAcksPerRequest = 100;  // the server's kMaxAcks

  // `token` a work-scoped token (kept in memory only, never logged); `worker_id` names
  // this worker in the server's records; `longest_wait_ms` the longest long-poll it
  // will ask for (the read timeout outlasts it).
  WorkerClient(const ServerUrl& server, std::string_view token, std::string worker_id,
               int64_t longest_wait_ms = 30000);

  // Waits up to `wait_ms` for up to `max_jobs` jobs; an empty vector when none came.
  Result<std::vector<LeasedJob>> Lease(const LeaseOptions& options);
  // Lease, carrying `acks` (at most kMaxAcksPerRequest) that the server applies first;
  // their results, in order, go to `ack_results`. On an error of the whole request the
  // acks' fate is unknown unless it is kStorageUnavailable from the server (a 503:
  // nothing was applied) or a 4xx (nothing was).
  Result<std::vector<LeasedJob>> Lease(const LeaseOptions& options, const std::vector<JobAck>& acks,
                                       std::vector<AckResult>& ack_results);
  // POST /v1/acks: 1..kMaxAcksPerRequest acks in one request and one server
  // transaction; one result per ack, in order.
  Result<std::vector<AckResult>> Acks(const std::vector<JobAck>& acks);
  // Extends the lease to now + `extend_ms` (default: the job's lease_ms); returns the
  // new lease_expires_at. kLeaseLost when the lease is gone: stop working on the job.
  Result<std::string> Heartbeat(const LeasedJob& job, std::optional<int64_t> extend_ms);
  // Both return the job's new state: "succeeded"; "queued" (to be retried) or "failed".
  Result<std::string> Complete(const LeasedJob& job, const nlohmann::json& result);
  // `retryable` false fails the job for good; otherwise the server retries it after
  // `retry_in_ms` (or its full-jitter backoff) while attempts and deadline allow.
  Result<std::string> Fail(const LeasedJob& job, const std::string& error, bool retryable = true,
                           std::optional<int64_t> retry_in_ms = std::nullopt);

  // Aborts the request in flight (e.g. a long-poll) from another thread; it returns an
  // error. Later calls reconnect.
  void Interrupt() { connection_.Interrupt(); }

 private:
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  // "/v1/jobs/<id>/<action>", the id percent-encoded.
  static std::string JobPath(const LeasedJob& job, const char* action);

  Connection connection_;
  std::string worker_id_;
};

// The answer readers WorkerClient uses, pure (tests/fuzz/fuzz_client.cc drives them):
// the jobs of a lease answer, and the per-item results of acks (`expected` of them). An
// answer of the wrong shape is kInternal, never an exception.
Result<std::vector<LeasedJob>> ReadLeasedJobs(const nlohmann::json& answer);
Result<std::vector<AckResult>> ReadAckResults(const nlohmann::json& results, size_t expected);

}  // namespace sluice
