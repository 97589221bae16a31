#include "worker/client.h"

namespace sluice {

using nlohmann::json;

Error ErrorFromResponse(int status, const std::string& body) {
  json j = json::parse(body, nullptr, false);
  std::string code = j.is_object() ? j.value("error", "") : "";
  std::string detail = j.is_object() ? j.value("detail", body) : body;
  ErrorCode ec = ParseErrorCode(code).value_or(ErrorCode::kInternal);
  if (code.empty() && status == 503) ec = ErrorCode::kStorageUnavailable;
  Error e = MakeError(ec, "HTTP " + std::to_string(status) + ": " + detail);
  if (j.is_object() && j.contains("retry_after") && j["retry_after"].is_number_integer()) {
    e.retry_after_s = j["retry_after"].get<int64_t>();
  }
  return e;
}

WorkerClient::WorkerClient(const std::string& base_url, std::string token, std::string worker_id)
    : http_(base_url), token_(std::move(token)), worker_id_(std::move(worker_id)) {
  http_.set_tcp_nodelay(true);  // NOTES.md pitfall 1
  http_.set_keep_alive(true);
  http_.set_connection_timeout(5, 0);
  http_.set_read_timeout(65, 0);  // longer than any long-poll
  http_.set_bearer_token_auth(token_.c_str());
}

Result<json> WorkerClient::Post(const std::string& path, const json& body) {
  auto res = http_.Post(path.c_str(), body.dump(), "application/json");
  if (!res) {
    return MakeError(ErrorCode::kStorageUnavailable,
                     "cannot reach sluice: " + httplib::to_string(res.error()));
  }
  if (res->status >= 300) return ErrorFromResponse(res->status, res->body);
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return MakeError(ErrorCode::kInternal, "server sent invalid JSON");
  return j;
}

Result<std::vector<LeasedJob>> WorkerClient::Lease(const std::vector<std::string>& queues,
                                                   int max_jobs, int wait_ms) {
  auto r = Post("/v1/leases", {{"queues", queues},
                               {"max_jobs", max_jobs},
                               {"wait_ms", wait_ms},
                               {"worker_id", worker_id_}});
  if (!r.ok()) return r.error();
  std::vector<LeasedJob> jobs;
  for (const json& j : r.value().value("jobs", json::array())) {
    LeasedJob l;
    l.id = j.value("id", "");
    l.queue = j.value("queue", "");
    l.tenant = j.value("tenant", "");
    l.payload = j.value("payload", json());
    l.attempt = j.value("attempt", 0);
    l.lease_id = j.value("lease_id", "");
    l.lease_expires_at = j.value("lease_expires_at", "");
    if (j.contains("deadline") && j["deadline"].is_string())
      l.deadline = j["deadline"].get<std::string>();
    jobs.push_back(std::move(l));
  }
  return jobs;
}

Status WorkerClient::Complete(const LeasedJob& job, const json& result) {
  auto r =
      Post("/v1/jobs/" + job.id + "/complete", {{"lease_id", job.lease_id}, {"result", result}});
  if (!r.ok()) return r.error();
  return Ok{};
}

Status WorkerClient::Fail(const LeasedJob& job, const std::string& error, bool retryable,
                          std::optional<int64_t> retry_in_ms) {
  json body = {{"lease_id", job.lease_id}, {"error", error}, {"retryable", retryable}};
  if (retry_in_ms) body["retry_in_ms"] = *retry_in_ms;
  auto r = Post("/v1/jobs/" + job.id + "/fail", body);
  if (!r.ok()) return r.error();
  return Ok{};
}

}  // namespace sluice
