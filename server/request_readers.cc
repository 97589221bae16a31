#include "server/request_readers.h"

#include <algorithm>

#include "common/crypto.h"
#include "common/names.h"
#include "common/utf8.h"
#include "server/http.h"

namespace sluice {
namespace {

using nlohmann::json;

Status RequireObject(const json& body) {
  if (body.is_object()) return Ok{};
  return MakeError(ErrorCode::kBadRequest, "the body must be a JSON object");
}

// An array of queue names in `field`; "'queues'[2]: queue name ... is not valid ...".
Result<std::vector<std::string>> QueueNames(const json& array, const char* field) {
  std::vector<std::string> names;
  for (size_t i = 0; i < array.size(); ++i) {
    const json& q = array[i];
    const std::string where = std::string("'") + field + "'[" + std::to_string(i) + "]";
    if (!q.is_string()) return MakeError(ErrorCode::kBadRequest, where + " must be a queue name");
    Status valid = CheckName(NameKind::kQueue, q.get_ref<const std::string&>());
    if (!valid.ok()) return MakeError(ErrorCode::kBadRequest, where + ": " + valid.error().detail);
    names.push_back(q.get<std::string>());
  }
  return names;
}

// The lease_id every acknowledgement carries.
Result<std::string> LeaseId(const json& body) {
  auto lease_id = StringField(body, "lease_id", 200);
  if (!lease_id.ok()) return lease_id.error();
  if (!lease_id.value()) return MakeError(ErrorCode::kBadRequest, "'lease_id' is required");
  if (lease_id.value()->empty()) {
    return MakeError(ErrorCode::kBadRequest, "'lease_id' must not be empty");
  }
  return *lease_id.value();
}

// The fields of a failed ack, as POST /v1/jobs/{id}/fail has them.
Result<FailRequest> FailFields(const json& body) {
  FailRequest fail;
  auto error = StringField(body, "error", 4096);
  if (!error.ok()) return error.error();
  fail.error = error.value().value_or("");
  auto retryable = BoolField(body, "retryable");
  if (!retryable.ok()) return retryable.error();
  fail.retryable = retryable.value().value_or(true);
  auto retry_in = IntField(body, "retry_in_ms", 0, kMaxWorkerMs);
  if (!retry_in.ok()) return retry_in.error();
  fail.retry_in_ms = retry_in.value();
  return fail;
}

// The JSON text of a result, as it is stored.
std::string ResultText(const json& result) {
  return result.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<AckItem> ReadAckItem(const json& item) {
  if (!item.is_object()) return MakeError(ErrorCode::kBadRequest, "must be a JSON object");
  if (Status st = RefuseUnknownFields(
          item, {"id", "lease_id", "outcome", "result", "error", "retryable", "retry_in_ms"});
      !st.ok()) {
    return st.error();
  }
  AckItem ack;
  auto id = StringField(item, "id", 200);
  if (!id.ok()) return id.error();
  if (!id.value()) return MakeError(ErrorCode::kBadRequest, "'id' is required");
  ack.id = std::move(*id.value());
  auto lease_id = LeaseId(item);
  if (!lease_id.ok()) return lease_id.error();
  ack.lease_id = std::move(lease_id.value());
  auto outcome = StringField(item, "outcome", 16);
  if (!outcome.ok()) return outcome.error();
  if (outcome.value() != "succeeded" && outcome.value() != "failed") {
    return MakeError(ErrorCode::kBadRequest, "'outcome' must be \"succeeded\" or \"failed\"");
  }
  ack.succeeded = outcome.value() == "succeeded";
  if (ack.succeeded) {
    for (const char* f : {"error", "retryable", "retry_in_ms"}) {
      if (item.contains(f)) {
        return MakeError(ErrorCode::kBadRequest,
                         std::string("'") + f + "' is for a failed outcome only");
      }
    }
    if (auto it = item.find("result"); it != item.end()) ack.result = ResultText(*it);
    return ack;
  }
  if (item.contains("result")) {
    return MakeError(ErrorCode::kBadRequest, "'result' is for a succeeded outcome only");
  }
  auto fail = FailFields(item);
  if (!fail.ok()) return fail.error();
  ack.fail = std::move(fail.value());
  return ack;
}

Status CheckIdInPath(NameKind kind, std::string_view what, std::string_view id) {
  if (IsValidName(kind, id)) return Ok{};
  return MakeError(ErrorCode::kNotFound,
                   std::string(what) + " " + QuoteForMessage(id) + " does not exist");
}

}  // namespace

Result<std::vector<AckItem>> ReadAckItems(const json& acks) {
  if (!acks.is_array()) return MakeError(ErrorCode::kBadRequest, "'acks' must be an array");
  if (acks.size() > kMaxAcks) {
    return MakeError(ErrorCode::kBadRequest,
                     "'acks' may carry at most " + std::to_string(kMaxAcks) + " items");
  }
  std::vector<AckItem> out;
  out.reserve(acks.size());
  for (size_t i = 0; i < acks.size(); ++i) {
    auto ack = ReadAckItem(acks[i]);
    const std::string where = "'acks'[" + std::to_string(i) + "]: ";
    if (!ack.ok()) return MakeError(ErrorCode::kBadRequest, where + ack.error().detail);
    for (const AckItem& seen : out) {
      if (seen.id == ack.value().id) {
        return MakeError(ErrorCode::kBadRequest,
                         where + "job " + QuoteForMessage(seen.id) + " is acknowledged twice");
      }
    }
    out.push_back(std::move(ack.value()));
  }
  return out;
}

Result<std::vector<AckItem>> ReadAcks(const json& body) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(body, {"acks"}); !st.ok()) return st.error();
  auto acks = body.find("acks");
  if (acks == body.end() || !acks->is_array() || acks->empty()) {
    return MakeError(ErrorCode::kBadRequest, "'acks' must be a non-empty array of acks");
  }
  return ReadAckItems(*acks);
}

Result<LeaseAsk> ReadLeaseRequest(const json& body, int64_t max_wait_ms) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(
          body, {"queues", "max_jobs", "wait_ms", "lease_ms", "worker_id", "acks"});
      !st.ok()) {
    return st.error();
  }
  LeaseAsk ask;
  auto queues = body.find("queues");
  if (queues == body.end() || !queues->is_array() || queues->empty()) {
    return MakeError(ErrorCode::kBadRequest, "'queues' must be a non-empty array of queue names");
  }
  if (queues->size() > kMaxLeaseQueues) {
    return MakeError(ErrorCode::kBadRequest,
                     "'queues' may name at most " + std::to_string(kMaxLeaseQueues) + " queues");
  }
  auto names = QueueNames(*queues, "queues");
  if (!names.ok()) return names.error();
  ask.lease.queues = std::move(names.value());

  auto max_jobs = IntField(body, "max_jobs", 1, 100);
  if (!max_jobs.ok()) return max_jobs.error();
  ask.lease.max_jobs = max_jobs.value().value_or(1);
  auto wait_ms = IntField(body, "wait_ms", 0, max_wait_ms);
  if (!wait_ms.ok()) return wait_ms.error();
  ask.wait = std::chrono::milliseconds(wait_ms.value().value_or(0));
  auto lease_ms = IntField(body, "lease_ms", 100, kMaxWorkerMs);
  if (!lease_ms.ok()) return lease_ms.error();
  ask.lease.lease_ms = lease_ms.value();
  auto worker_id = NameField(body, "worker_id", NameKind::kWorkerId);
  if (!worker_id.ok()) return worker_id.error();
  ask.lease.worker_id = worker_id.value().value_or("");
  if (auto acks = body.find("acks"); acks != body.end()) {
    auto items = ReadAckItems(*acks);
    if (!items.ok()) return items.error();
    ask.acks = std::move(items.value());
  }
  return ask;
}

Result<HeartbeatAsk> ReadHeartbeat(const json& body) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(body, {"lease_id", "extend_ms"}); !st.ok()) {
    return st.error();
  }
  auto lease_id = LeaseId(body);
  if (!lease_id.ok()) return lease_id.error();
  auto extend = IntField(body, "extend_ms", 100, kMaxWorkerMs);
  if (!extend.ok()) return extend.error();
  return HeartbeatAsk{std::move(lease_id.value()), extend.value()};
}

Result<CompleteAsk> ReadComplete(const json& body) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(body, {"lease_id", "result"}); !st.ok()) return st.error();
  auto lease_id = LeaseId(body);
  if (!lease_id.ok()) return lease_id.error();
  CompleteAsk ask{std::move(lease_id.value()), std::nullopt};
  if (auto it = body.find("result"); it != body.end()) ask.result = ResultText(*it);
  return ask;
}

Result<FailAsk> ReadFail(const json& body) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(body, {"lease_id", "error", "retryable", "retry_in_ms"});
      !st.ok()) {
    return st.error();
  }
  auto lease_id = LeaseId(body);
  if (!lease_id.ok()) return lease_id.error();
  auto fail = FailFields(body);
  if (!fail.ok()) return fail.error();
  return FailAsk{std::move(lease_id.value()), std::move(fail.value())};
}

Result<TokenRecord> ReadTokenRequest(const json& body) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(body, {"scopes", "tenant", "queues"}); !st.ok()) {
    return st.error();
  }
  TokenRecord rec;
  auto scopes = body.find("scopes");
  if (scopes == body.end() || !scopes->is_array() || scopes->empty()) {
    return MakeError(ErrorCode::kBadRequest,
                     "'scopes' must be a non-empty array of submit, work, admin, metrics");
  }
  for (const json& s : *scopes) {
    std::optional<Scope> scope = s.is_string() ? ParseScope(s.get<std::string>()) : std::nullopt;
    if (!scope) {
      return MakeError(ErrorCode::kBadRequest,
                       "unknown scope " +
                           QuoteForMessage(s.is_string() ? s.get<std::string>()
                                                         : s.dump(-1, ' ', false,
                                                                  json::error_handler_t::replace)) +
                           ": use submit, work, admin or metrics");
    }
    rec.scopes.push_back(*scope);
  }
  auto tenant = NameField(body, "tenant", NameKind::kTenant);
  if (!tenant.ok()) return tenant.error();
  rec.tenant = tenant.value();
  const bool wants_submit =
      std::find(rec.scopes.begin(), rec.scopes.end(), Scope::kSubmit) != rec.scopes.end();
  if (wants_submit && !rec.tenant) {
    return MakeError(ErrorCode::kBadRequest, "a token with the submit scope needs a 'tenant'");
  }
  if (auto q = body.find("queues"); q != body.end() && !q->is_null()) {
    if (!q->is_array()) {
      return MakeError(ErrorCode::kBadRequest, "'queues' must be an array of queue names");
    }
    auto names = QueueNames(*q, "queues");
    if (!names.ok()) return names.error();
    rec.queues = std::move(names.value());
  }
  return rec;
}

Result<QueuePolicy> ReadPolicy(const json& body) {
  auto policy = PolicyFromJson(body);
  if (!policy.ok()) return policy;
  for (const auto& [tenant, override_] : policy.value().tenants) {
    (void)override_;
    Status valid = CheckName(NameKind::kTenant, tenant);
    if (!valid.ok()) {
      return MakeError(ErrorCode::kBadRequest, "policy field 'tenants': " + valid.error().detail);
    }
  }
  return policy;
}

Status CheckJobIdInPath(std::string_view id) { return CheckIdInPath(NameKind::kJobId, "job", id); }

Status CheckTokenIdInPath(std::string_view id) {
  return CheckIdInPath(NameKind::kTokenId, "token", id);
}

Result<NewJob> ReadNewJob(const nlohmann::json& body) {
  using nlohmann::json;
  if (Status known = RefuseUnknownFields(body, {"payload", "cost", "deadline", "deadline_in_ms",
                                                "not_before", "lease_ms", "max_attempts"});
      !known.ok()) {
    return known.error();
  }
  NewJob job;
  if (auto it = body.find("payload"); it != body.end()) job.payload = it->dump();
  auto cost = IntField(body, "cost", 1, 1'000'000'000);
  if (!cost.ok()) return cost.error();
  job.cost = cost.value().value_or(1);

  auto deadline = TimeField(body, "deadline");
  if (!deadline.ok()) return deadline.error();
  // A relative deadline of zero or less can never be met. (Whether an absolute one is
  // already past, or not after not_before, Admit decides against the `now` of the
  // decision, after an idempotent replay has had its chance.)
  if (auto it = body.find("deadline_in_ms"); it != body.end() && it->is_number_integer()) {
    const bool positive =
        it->is_number_unsigned() ? it->get<uint64_t>() > 0 : it->get<int64_t>() > 0;
    if (!positive) {
      return MakeError(ErrorCode::kDeadlineInvalid,
                       "'deadline_in_ms' must be positive: a job must start before its deadline");
    }
  }
  auto deadline_in = IntField(body, "deadline_in_ms", 1, kMaxJobMs);
  if (!deadline_in.ok()) return deadline_in.error();
  if (deadline.value() && deadline_in.value()) {
    return MakeError(ErrorCode::kBadRequest, "give 'deadline' or 'deadline_in_ms', not both");
  }
  job.deadline = deadline.value();
  job.deadline_in_ms = deadline_in.value();

  auto not_before = TimeField(body, "not_before");
  if (!not_before.ok()) return not_before.error();
  job.not_before = not_before.value();

  auto lease_ms = IntField(body, "lease_ms", 100, kMaxJobMs);
  if (!lease_ms.ok()) return lease_ms.error();
  job.lease_ms = lease_ms.value();
  auto max_attempts = IntField(body, "max_attempts", 1, 1000);
  if (!max_attempts.ok()) return max_attempts.error();
  job.max_attempts = max_attempts.value();

  return job;
}

Result<std::vector<NewJob>> ReadBatchJobs(const nlohmann::json& body) {
  if (Status st = RequireObject(body); !st.ok()) return st.error();
  if (Status st = RefuseUnknownFields(body, {"jobs"}); !st.ok()) return st.error();
  auto items = body.find("jobs");
  if (items == body.end() || !items->is_array() || items->empty()) {
    return MakeError(ErrorCode::kBadRequest, "'jobs' must be a non-empty array of jobs");
  }
  if (items->size() > kMaxBatchJobs) {
    return MakeError(ErrorCode::kBadRequest,
                     "'jobs' may carry at most " + std::to_string(kMaxBatchJobs) + " jobs");
  }
  std::vector<NewJob> out;
  out.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const std::string where = "'jobs'[" + std::to_string(i) + "]: ";
    const nlohmann::json& item = (*items)[i];
    if (!item.is_object()) return MakeError(ErrorCode::kBadRequest, where + "must be an object");
    std::optional<std::string> key;
    auto key_it = item.find("idempotency_key");
    if (key_it != item.end()) {
      if (!key_it->is_string()) {
        return MakeError(ErrorCode::kBadRequest, where + "'idempotency_key' must be a string");
      }
      key = key_it->get<std::string>();
      if (Status st = CheckName(NameKind::kIdempotencyKey, *key); !st.ok()) {
        return MakeError(st.error().code, where + st.error().detail);
      }
    }
    nlohmann::json fields = item;
    if (key) fields.erase("idempotency_key");
    auto job = ReadNewJob(fields);
    if (!job.ok()) return MakeError(job.error().code, where + job.error().detail);
    if (key) {
      job.value().idempotency_key = std::move(key);
      job.value().body_hash = Sha256Hex(fields.dump());
    }
    out.push_back(std::move(job.value()));
  }
  return out;
}

}  // namespace sluice
