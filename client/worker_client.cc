#include "client/worker_client.h"

#include <algorithm>

#include "common/encoding.h"
#include "common/time.h"

namespace sluice {

using nlohmann::json;

namespace {

std::string StringOr(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<std::string> OptionalString(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

json AckJson(const JobAck& a) {
  json j = {
      {"id", a.id}, {"lease_id", a.lease_id}, {"outcome", a.succeeded ? "succeeded" : "failed"}};
  if (a.succeeded) {
    j["result"] = a.result;
  } else {
    j["error"] = a.error;
    j["retryable"] = a.retryable;
    if (a.retry_in_ms) j["retry_in_ms"] = *a.retry_in_ms;
  }
  return j;
}

json AcksJson(const std::vector<JobAck>& acks) {
  json out = json::array();
  for (const JobAck& a : acks) out.push_back(AckJson(a));
  return out;
}

// An integer field, or `fallback` when absent; nullopt when present but not an integer.
std::optional<int64_t> IntegerOr(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

Error BadAnswer(const std::string& what) {
  return MakeError(ErrorCode::kInternal, "the server's answer is malformed: " + what);
}

}  // namespace

// The per-item results of a batch: {"id","state"} or {"id","error","status","detail"}.
Result<std::vector<AckResult>> ReadAckResults(const json& results, size_t expected) {
  if (!results.is_array() || results.size() != expected) {
    return BadAnswer("the acks' results are missing or miscounted");
  }
  std::vector<AckResult> out;
  for (const json& r : results) {
    if (!r.is_object()) return BadAnswer("an ack's result is not an object");
    if (r.contains("state")) {
      out.emplace_back(StringOr(r, "state"));
      continue;
    }
    const std::optional<int64_t> status = IntegerOr(r, "status", 0);
    out.emplace_back(
        MakeError(ParseErrorCode(StringOr(r, "error")).value_or(ErrorCode::kInternal),
                  "HTTP " + std::to_string(status.value_or(0)) + ": " + StringOr(r, "detail")));
  }
  return out;
}

Result<std::vector<LeasedJob>> ReadLeasedJobs(const json& answer) {
  if (!answer.is_object()) return BadAnswer("not an object");
  auto list = answer.find("jobs");
  if (list == answer.end()) return std::vector<LeasedJob>{};
  if (!list->is_array()) return BadAnswer("'jobs' is not an array");
  std::vector<LeasedJob> jobs;
  for (const json& j : *list) {
    if (!j.is_object()) return BadAnswer("a job is not an object");
    LeasedJob l;
    l.id = StringOr(j, "id");
    l.lease_id = StringOr(j, "lease_id");
    const std::optional<int64_t> cost = IntegerOr(j, "cost", 1);
    const std::optional<int64_t> attempt = IntegerOr(j, "attempt", 0);
    if (l.id.empty() || l.lease_id.empty() || !cost || !attempt) {
      return BadAnswer("a job without an id, a lease_id, or an integer cost and attempt");
    }
    l.cost = *cost;
    l.attempt = *attempt;
    l.queue = StringOr(j, "queue");
    l.tenant = StringOr(j, "tenant");
    if (auto payload = j.find("payload"); payload != j.end()) l.payload = *payload;
    l.leased_at = StringOr(j, "leased_at");
    l.lease_expires_at = StringOr(j, "lease_expires_at");
    l.deadline = OptionalString(j, "deadline");
    l.traceparent = OptionalString(j, "traceparent");
    jobs.push_back(std::move(l));
  }
  return jobs;
}

std::optional<int64_t> LeasedJob::LeaseMs() const {
  auto from = ParseRfc3339(leased_at);
  auto to = ParseRfc3339(lease_expires_at);
  if (!from || !to || *to <= *from) return std::nullopt;
  return (*to - *from) / kMicrosPerMilli;
}

WorkerClient::WorkerClient(const ServerUrl& server, std::string_view token, std::string worker_id,
                           int64_t longest_wait_ms)
    // The read timeout outlasts the longest long-poll, with room for a slow answer.
    : connection_(server, token,
                  ConnectionOptions{.read_timeout_s = static_cast<int>(
                                        std::min<int64_t>(longest_wait_ms, 86400000) / 1000 + 35)}),
      worker_id_(std::move(worker_id)) {}

Result<json> WorkerClient::Post(const std::string& path, const json& body) {
  ApiResult r = connection_.Post(path, body);
  if (!r.ok()) return ToError(r.failure());
  if (!r.value().body.is_object()) {
    return MakeError(ErrorCode::kInternal, "the server answered without a JSON object");
  }
  return r.value().body;
}

std::string WorkerClient::JobPath(const LeasedJob& job, const char* action) {
  return "/v1/jobs/" + PercentEncode(job.id) + "/" + action;
}

Result<std::vector<LeasedJob>> WorkerClient::Lease(const LeaseOptions& options) {
  std::vector<AckResult> none;
  return Lease(options, {}, none);
}

Result<std::vector<AckResult>> WorkerClient::Acks(const std::vector<JobAck>& acks) {
  auto r = Post("/v1/acks", {{"acks", AcksJson(acks)}});
  if (!r.ok()) return r.error();
  auto results = r.value().find("results");
  return ReadAckResults(results == r.value().end() ? json() : *results, acks.size());
}

Result<std::vector<LeasedJob>> WorkerClient::Lease(const LeaseOptions& options,
                                                   const std::vector<JobAck>& acks,
                                                   std::vector<AckResult>& ack_results) {
  json body = {{"queues", options.queues},
               {"max_jobs", options.max_jobs},
               {"wait_ms", options.wait_ms},
               {"worker_id", worker_id_}};
  if (options.lease_ms) body["lease_ms"] = *options.lease_ms;
  if (!acks.empty()) body["acks"] = AcksJson(acks);
  auto r = Post("/v1/leases", body);
  if (!r.ok()) return r.error();
  ack_results.clear();
  if (!acks.empty()) {
    auto carried = r.value().find("acks");
    auto results = ReadAckResults(carried == r.value().end() ? json() : *carried, acks.size());
    if (results.ok()) {
      ack_results = std::move(results.value());
    } else {  // the jobs leased are still this worker's
      ack_results.assign(acks.size(), results.error());
    }
  }
  return ReadLeasedJobs(r.value());
}

Result<std::string> WorkerClient::Heartbeat(const LeasedJob& job,
                                            std::optional<int64_t> extend_ms) {
  json body = {{"lease_id", job.lease_id}};
  if (extend_ms) body["extend_ms"] = *extend_ms;
  auto r = Post(JobPath(job, "heartbeat"), body);
  if (!r.ok()) return r.error();
  return StringOr(r.value(), "lease_expires_at");
}

Result<std::string> WorkerClient::Complete(const LeasedJob& job, const json& result) {
  auto r = Post(JobPath(job, "complete"), {{"lease_id", job.lease_id}, {"result", result}});
  if (!r.ok()) return r.error();
  return StringOr(r.value(), "state");
}

Result<std::string> WorkerClient::Fail(const LeasedJob& job, const std::string& error,
                                       bool retryable, std::optional<int64_t> retry_in_ms) {
  json body = {{"lease_id", job.lease_id}, {"error", error}, {"retryable", retryable}};
  if (retry_in_ms) body["retry_in_ms"] = *retry_in_ms;
  auto r = Post(JobPath(job, "fail"), body);
  if (!r.ok()) return r.error();
  return StringOr(r.value(), "state");
}

}  // namespace sluice
