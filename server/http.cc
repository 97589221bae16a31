#include "server/http.h"

#include <algorithm>
#include <string_view>

#include "common/strict_json.h"
#include "common/utf8.h"
#include "shaper/policy.h"

namespace sluice {

using nlohmann::json;

Result<json> ParseJsonObject(const HttpRequest& req) {
  if (req.body.empty()) return json::object();
  auto j = ParseStrictJson(req.body);
  if (!j.ok()) return j;
  if (!j.value().is_object()) {
    return MakeError(ErrorCode::kBadRequest, "the body must be a JSON object");
  }
  return j;
}

void RenderJson(HttpResponse& res, int status, const json& body) {
  res.status = status;
  // Text from outside is checked at the edge; should any ill-formed UTF-8 slip through,
  // it is replaced rather than thrown on while answering.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

Result<std::optional<int64_t>> IntField(const json& j, const char* name, int64_t min, int64_t max) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::optional<int64_t>();
  const Error out_of_range =
      MakeError(ErrorCode::kBadRequest, std::string("'") + name + "' must be an integer from " +
                                            std::to_string(min) + " to " + std::to_string(max));
  int64_t v;
  if (it->is_number_unsigned()) {
    // Non-negative integers arrive unsigned, up to 2^64-1: compare before narrowing.
    const uint64_t u = it->get<uint64_t>();
    if (max < 0 || u > static_cast<uint64_t>(max)) return out_of_range;
    v = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else {
    return out_of_range;  // a float (even 1.0), a string, ...
  }
  if (v < min || v > max) return out_of_range;
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

Result<std::optional<std::string>> NameField(const json& j, const char* name, NameKind kind) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return MakeError(ErrorCode::kBadRequest, std::string("'") + name + "' must be a string");
  }
  std::string v = it->get<std::string>();
  Status valid = CheckName(kind, v);
  if (!valid.ok()) {
    return MakeError(ErrorCode::kBadRequest,
                     std::string("'") + name + "': " + valid.error().detail);
  }
  return std::optional<std::string>(std::move(v));
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

Status RefuseUnknownFields(const json& j, std::initializer_list<std::string_view> known) {
  if (!j.is_object()) return Ok{};
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return MakeError(ErrorCode::kBadRequest, "unknown field " + QuoteForMessage(key));
    }
  }
  return Ok{};
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

// A job's failed attempts as the API shows them: the store keeps each entry's "at" in
// microseconds; the wire has RFC 3339, like every other time.
json ErrorsToJson(std::string_view stored) {
  json errors = json::parse(stored, nullptr, false);
  if (!errors.is_array()) return json::array();
  for (json& e : errors) {
    auto at = e.is_object() ? e.find("at") : e.end();
    if (e.is_object() && at != e.end() && at->is_number_integer()) {
      *at = FormatRfc3339(at->get<int64_t>());
    }
  }
  return errors;
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
            {"errors", ErrorsToJson(job.errors)},
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

namespace {

// A JSON string, as nlohmann::json prints it: plain ASCII as is, anything else (escapes,
// UTF-8 checks) through nlohmann::json itself.
void AppendString(std::string& out, std::string_view s) {
  const bool plain = std::all_of(
      s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

void AppendOptString(std::string& out, const std::optional<std::string>& s) {
  if (s) return AppendString(out, std::string_view(*s));
  out += "null";
}

void AppendTime(std::string& out, const std::optional<Micros>& t) {
  if (!t) {
    out += "null";
    return;
  }
  out += '"';
  out += FormatRfc3339(*t);
  out += '"';
}

// Stored JSON text (written by nlohmann::json::dump) as is; like ParseStored, text that
// is not JSON becomes a string and a missing value null.
void AppendStored(std::string& out, std::string_view text) {
  if (json::accept(text)) {
    out += text;
  } else {
    AppendString(out, text);
  }
}

void AppendStored(std::string& out, const std::optional<std::string>& text) {
  if (text) return AppendStored(out, std::string_view(*text));
  out += "null";
}

// Keys in nlohmann::json's (sorted) order; each value appended by the caller.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  ~ObjectWriter() { out_ += '}'; }
  std::string& Key(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += key;
    out_ += "\":";
    return out_;
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace

std::string JobJson(const JobRecord& job) {
  std::string out;
  out.reserve(512 + job.payload.size());
  {
    ObjectWriter o(out);
    o.Key("attempt") += std::to_string(job.attempt);
    o.Key("cost") += std::to_string(job.cost);
    AppendTime(o.Key("created_at"), job.created_at);
    AppendTime(o.Key("deadline"), job.deadline);
    if (job.errors == "[]") {  // the common case, without a parse
      o.Key("errors") += "[]";
    } else {
      o.Key("errors") += ErrorsToJson(job.errors).dump();
    }
    AppendTime(o.Key("estimated_start"), job.estimated_start);
    AppendTime(o.Key("finished_at"), job.finished_at);
    AppendString(o.Key("id"), job.id);
    AppendTime(o.Key("lease_expires_at"), job.lease_expires_at);
    o.Key("lease_ms") += std::to_string(job.lease_ms);
    o.Key("max_attempts") += std::to_string(job.max_attempts);
    AppendTime(o.Key("not_before"), job.not_before);
    AppendStored(o.Key("payload"), std::string_view(job.payload));
    o.Key("policy_version") += std::to_string(job.policy_version);
    AppendString(o.Key("queue"), job.queue);
    AppendStored(o.Key("result"), job.result);
    AppendString(o.Key("state"), JobStateName(job.state));
    AppendString(o.Key("tenant"), job.tenant);
    AppendOptString(o.Key("traceparent"), job.traceparent);
  }
  return out;
}

std::string BatchAdmittedJson(const JobRecord& job, bool replayed, int64_t remaining,
                              int64_t reset_s) {
  std::string out;
  out.reserve(160);
  {
    ObjectWriter o(out);
    AppendTime(o.Key("estimated_start"), job.estimated_start);
    AppendString(o.Key("id"), job.id);
    o.Key("remaining") += std::to_string(remaining);
    if (replayed) o.Key("replayed") += "true";
    o.Key("reset_s") += std::to_string(reset_s);
    AppendString(o.Key("state"), JobStateName(job.state));
    o.Key("status") += "202";
  }
  return out;
}

void RenderJob(HttpResponse& res, int status, const JobRecord& job) {
  res.status = status;
  res.set_content(JobJson(job), "application/json");
}

std::string LeasedJobJson(const JobRecord& job) {
  std::string out;
  out.reserve(384 + job.payload.size());
  {
    ObjectWriter o(out);
    o.Key("attempt") += std::to_string(job.attempt);
    o.Key("cost") += std::to_string(job.cost);
    AppendTime(o.Key("deadline"), job.deadline);
    AppendString(o.Key("id"), job.id);
    AppendTime(o.Key("lease_expires_at"), job.lease_expires_at);
    AppendString(o.Key("lease_id"), job.lease_id.value_or(""));
    AppendTime(o.Key("leased_at"), job.leased_at);
    AppendStored(o.Key("payload"), std::string_view(job.payload));
    AppendString(o.Key("queue"), job.queue);
    AppendString(o.Key("tenant"), job.tenant);
    AppendOptString(o.Key("traceparent"), job.traceparent);
  }
  return out;
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
  // The config file that manages the policy (a PUT is refused: managed_by_config).
  j["managed_by"] = q.managed_by ? json(*q.managed_by) : json(nullptr);
  return j;
}

}  // namespace sluice
