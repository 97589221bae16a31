#include "worker/client.h"

#include <charconv>

#include "common/time.h"

namespace sluice {

using nlohmann::json;

namespace {

// JSON text safe for any string the caller handed us (invalid UTF-8 is replaced).
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::optional<int64_t> ParseSeconds(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

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

// The per-item results of a batch: {"id","state"} or {"id","error","status","detail"}.
Result<std::vector<AckResult>> ReadAckResults(const json& results, size_t expected) {
  if (!results.is_array() || results.size() != expected) {
    return MakeError(ErrorCode::kInternal, "the server answered the acks without their results");
  }
  std::vector<AckResult> out;
  for (const json& r : results) {
    if (r.is_object() && r.contains("state")) {
      out.emplace_back(StringOr(r, "state"));
      continue;
    }
    const std::string code = r.is_object() ? StringOr(r, "error") : "";
    const int64_t status = r.is_object() ? r.value("status", int64_t{0}) : 0;
    out.emplace_back(MakeError(
        ParseErrorCode(code).value_or(ErrorCode::kInternal),
        "HTTP " + std::to_string(status) + ": " + (r.is_object() ? StringOr(r, "detail") : "")));
  }
  return out;
}

}  // namespace

std::optional<int64_t> LeasedJob::LeaseMs() const {
  auto from = ParseRfc3339(leased_at);
  auto to = ParseRfc3339(lease_expires_at);
  if (!from || !to || *to <= *from) return std::nullopt;
  return (*to - *from) / kMicrosPerMilli;
}

Error ErrorFromResponse(int status, const std::string& body,
                        const std::string& retry_after_header) {
  json j = json::parse(body, nullptr, false);
  std::string code = j.is_object() ? j.value("error", "") : "";
  std::string detail = j.is_object() ? j.value("detail", body) : body;
  ErrorCode ec = ParseErrorCode(code).value_or(ErrorCode::kInternal);
  if (code.empty() && status == 503) ec = ErrorCode::kStorageUnavailable;
  Error e = MakeError(ec, "HTTP " + std::to_string(status) + ": " + detail);
  if (j.is_object() && j.contains("retry_after") && j["retry_after"].is_number_integer()) {
    e.retry_after_s = j["retry_after"].get<int64_t>();
  } else if (auto s = ParseSeconds(retry_after_header)) {
    e.retry_after_s = *s;
  }
  return e;
}

bool IsTransient(const Error& e) {
  return e.code == ErrorCode::kStorageUnavailable || e.code == ErrorCode::kQueueFull ||
         e.code == ErrorCode::kRateLimited || e.code == ErrorCode::kInternal;
}

WorkerClient::WorkerClient(const std::string& base_url, std::string token, std::string worker_id)
    : http_(base_url), worker_id_(std::move(worker_id)) {
  http_.set_tcp_nodelay(true);  // NOTES.md pitfall 1
  http_.set_keep_alive(true);
  http_.set_connection_timeout(5, 0);
  http_.set_read_timeout(65, 0);  // longer than any long-poll (the server caps wait_ms)
  http_.set_write_timeout(10, 0);
  http_.set_bearer_token_auth(token);
}

Result<json> WorkerClient::Post(const std::string& path, const json& body) {
  auto res = http_.Post(path.c_str(), Dump(body), "application/json");
  if (!res) {
    return MakeError(ErrorCode::kStorageUnavailable,
                     "cannot reach sluice: " + httplib::to_string(res.error()));
  }
  if (res->status >= 300) {
    return ErrorFromResponse(res->status, res->body, res->get_header_value("Retry-After"));
  }
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return MakeError(ErrorCode::kInternal, "server sent invalid JSON");
  return j;
}

Result<std::vector<LeasedJob>> WorkerClient::Lease(const LeaseOptions& options) {
  std::vector<AckResult> none;
  return Lease(options, {}, none);
}

Result<std::vector<AckResult>> WorkerClient::Acks(const std::vector<JobAck>& acks) {
  auto r = Post("/v1/acks", {{"acks", AcksJson(acks)}});
  if (!r.ok()) return r.error();
  return ReadAckResults(r.value().value("results", json()), acks.size());
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
    auto results = ReadAckResults(r.value().value("acks", json()), acks.size());
    if (results.ok()) {
      ack_results = std::move(results.value());
    } else {  // the jobs leased are still this worker's
      ack_results.assign(acks.size(), results.error());
    }
  }
  std::vector<LeasedJob> jobs;
  for (const json& j : r.value().value("jobs", json::array())) {
    LeasedJob l;
    l.id = StringOr(j, "id");
    l.queue = StringOr(j, "queue");
    l.tenant = StringOr(j, "tenant");
    l.payload = j.value("payload", json());
    l.cost = j.value("cost", int64_t{1});
    l.attempt = j.value("attempt", int64_t{0});
    l.lease_id = StringOr(j, "lease_id");
    l.leased_at = StringOr(j, "leased_at");
    l.lease_expires_at = StringOr(j, "lease_expires_at");
    l.deadline = OptionalString(j, "deadline");
    l.traceparent = OptionalString(j, "traceparent");
    jobs.push_back(std::move(l));
  }
  return jobs;
}

Result<std::string> WorkerClient::Heartbeat(const LeasedJob& job,
                                            std::optional<int64_t> extend_ms) {
  json body = {{"lease_id", job.lease_id}};
  if (extend_ms) body["extend_ms"] = *extend_ms;
  auto r = Post("/v1/jobs/" + job.id + "/heartbeat", body);
  if (!r.ok()) return r.error();
  return StringOr(r.value(), "lease_expires_at");
}

Result<std::string> WorkerClient::Complete(const LeasedJob& job, const json& result) {
  auto r =
      Post("/v1/jobs/" + job.id + "/complete", {{"lease_id", job.lease_id}, {"result", result}});
  if (!r.ok()) return r.error();
  return StringOr(r.value(), "state");
}

Result<std::string> WorkerClient::Fail(const LeasedJob& job, const std::string& error,
                                       bool retryable, std::optional<int64_t> retry_in_ms) {
  json body = {{"lease_id", job.lease_id}, {"error", error}, {"retryable", retryable}};
  if (retry_in_ms) body["retry_in_ms"] = *retry_in_ms;
  auto r = Post("/v1/jobs/" + job.id + "/fail", body);
  if (!r.ok()) return r.error();
  return StringOr(r.value(), "state");
}

}  // namespace sluice
