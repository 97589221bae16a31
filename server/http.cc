#include "server/http.h"

#include "shaper/policy.h"

namespace sluice {

using nlohmann::json;

Result<json> ParseJsonObject(const HttpRequest& req) {
  if (req.body.empty()) return json::object();
  json j = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return MakeError(ErrorCode::kBadRequest, "the body is not valid JSON");
  if (!j.is_object()) return MakeError(ErrorCode::kBadRequest, "the body must be a JSON object");
  return j;
}

void RenderJson(HttpResponse& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

Result<std::optional<int64_t>> IntField(const json& j, const char* name, int64_t min, int64_t max) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::optional<int64_t>();
  if (!it->is_number_integer()) {
    return MakeError(ErrorCode::kBadRequest, std::string("'") + name + "' must be an integer");
  }
  int64_t v = it->get<int64_t>();
  if (v < min || v > max) {
    return MakeError(ErrorCode::kBadRequest, std::string("'") + name + "' must be between " +
                                                 std::to_string(min) + " and " +
                                                 std::to_string(max));
  }
  return std::optional<int64_t>(v);
}

Result<std::optional<std::string>> StringField(const json& j, const char* name, size_t max_len) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return MakeError(ErrorCode::kBadRequest, std::string("'") + name + "' must be a string");
  }
  std::string v = it->get<std::string>();
  if (v.size() > max_len) {
    return MakeError(ErrorCode::kBadRequest,
                     std::string("'") + name + "' is longer than " + std::to_string(max_len));
  }
  return std::optional<std::string>(v);
}

Result<std::optional<Micros>> TimeField(const json& j, const char* name) {
  auto s = StringField(j, name, 64);
  if (!s.ok()) return s.error();
  if (!s.value()) return std::optional<Micros>();
  auto t = ParseRfc3339(*s.value());
  if (!t) {
    return MakeError(
        ErrorCode::kBadRequest,
        std::string("'") + name + "' must be an RFC 3339 time, e.g. 2026-01-02T03:04:05Z");
  }
  return std::optional<Micros>(*t);
}

Result<std::optional<bool>> BoolField(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) {
    return MakeError(ErrorCode::kBadRequest, std::string("'") + name + "' must be true or false");
  }
  return std::optional<bool>(it->get<bool>());
}

bool ValidQueueName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool ValidTraceparent(const std::string& tp) {
  if (tp.size() != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-') return false;
  auto hex = [&](size_t from, size_t n) {
    bool nonzero = false;
    for (size_t i = from; i < from + n; ++i) {
      char c = tp[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
      nonzero = nonzero || c != '0';
    }
    return nonzero || n == 2;
  };
  return tp.compare(0, 2, "00") == 0 && hex(3, 32) && hex(36, 16) && hex(53, 2);
}

namespace {

json TimeOrNull(const std::optional<Micros>& t) {
  return t ? json(FormatRfc3339(*t)) : json(nullptr);
}

json ParseStored(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  json j = json::parse(*text, nullptr, false);
  return j.is_discarded() ? json(*text) : j;
}

}  // namespace

json JobToJson(const JobRecord& job) {
  json j = {{"id", job.id},
            {"queue", job.queue},
            {"tenant", job.tenant},
            {"state", JobStateName(job.state)},
            {"payload", ParseStored(job.payload)},
            {"cost", job.cost},
            {"attempt", job.attempt},
            {"max_attempts", job.max_attempts},
            {"lease_ms", job.lease_ms},
            {"policy_version", job.policy_version},
            {"created_at", FormatRfc3339(job.created_at)},
            {"not_before", TimeOrNull(job.not_before)},
            {"deadline", TimeOrNull(job.deadline)},
            {"estimated_start", FormatRfc3339(job.estimated_start)},
            {"lease_expires_at", TimeOrNull(job.lease_expires_at)},
            {"result", ParseStored(job.result)},
            {"errors", ParseStored(job.errors)},
            {"finished_at", TimeOrNull(job.finished_at)},
            {"traceparent", job.traceparent ? json(*job.traceparent) : json()}};
  return j;
}

json LeasedJobToJson(const JobRecord& job) {
  return {{"id", job.id},
          {"queue", job.queue},
          {"tenant", job.tenant},
          {"payload", ParseStored(job.payload)},
          {"cost", job.cost},
          {"attempt", job.attempt},
          {"lease_id", job.lease_id.value_or("")},
          {"lease_expires_at", TimeOrNull(job.lease_expires_at)},
          {"leased_at", TimeOrNull(job.leased_at)},
          {"deadline", TimeOrNull(job.deadline)},
          {"traceparent", job.traceparent ? json(*job.traceparent) : json()}};
}

json TotalsToJson(const Totals& t) {
  return {{"admitted", t.admitted}, {"released", t.released}, {"succeeded", t.succeeded},
          {"failed", t.failed},     {"expired", t.expired},   {"lease_timeouts", t.lease_timeouts}};
}

json TokenToJson(const TokenRecord& t) {
  json scopes = json::array();
  for (Scope s : t.scopes) scopes.push_back(ScopeName(s));
  return {{"id", t.id},
          {"tenant", t.tenant ? json(*t.tenant) : json()},
          {"scopes", scopes},
          {"queues", t.queues ? json(*t.queues) : json()},
          {"created_at", FormatRfc3339(t.created_at)},
          {"revoked_at", TimeOrNull(t.revoked_at)}};
}

json QueueToJson(const QueueInfo& q) {
  json j = PolicyToJson(q.policy);
  j["name"] = q.name;
  j["version"] = q.version;
  j["paused"] = q.paused;
  j["stats"] = {
      {"queued", q.stats.queued}, {"queued_cost", q.stats.queued_cost}, {"leased", q.stats.leased}};
  j["totals"] = TotalsToJson(q.stats.totals);
  return j;
}

}  // namespace sluice
