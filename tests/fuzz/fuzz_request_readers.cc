// Fuzzes the JSON body readers of the endpoints (server/request_readers.h): the input
// is a request body, read as ParseJsonObject reads it, then given to every reader (a
// submit, batch submit, lease, heartbeat, complete, fail, batch of acks, token creation, policy),
// and the input's text is checked as a job id and a token id in a path, and as a lease id whose
// seq the SQLite driver reads (it names one only in NewLeaseId's form). Properties: no crash,
// exception or sanitizer report; a refusal is a 400 (a path id: 404; a submit's deadline that can
// never be met: deadline_invalid) with a valid UTF-8 detail;
// what a reader accepts keeps its documented bounds and name grammars; an accepted
// policy reads back from its own JSON form.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/names.h"
#include "common/random.h"
#include "common/strict_json.h"
#include "common/time.h"
#include "common/utf8.h"
#include "server/request_readers.h"
#include "tests/fuzz/fuzz_check.h"

namespace sluice {
namespace {

constexpr int64_t kMaxWaitMs = 30000;  // the server's default --max-wait-ms

template <typename T>
bool Refused(const Result<T>& r, ErrorCode code = ErrorCode::kBadRequest) {
  if (r.ok()) return false;
  FUZZ_CHECK(r.error().code == code);
  FUZZ_CHECK(IsValidUtf8(r.error().detail));
  return true;
}

// A submit's refusal: 400, or deadline_invalid for a deadline that can never be met.
template <typename T>
bool SubmitRefused(const Result<T>& r) {
  if (r.ok()) return false;
  FUZZ_CHECK(r.error().code == ErrorCode::kBadRequest ||
             r.error().code == ErrorCode::kDeadlineInvalid);
  FUZZ_CHECK(IsValidUtf8(r.error().detail));
  return true;
}

void CheckJob(const NewJob& j) {
  FUZZ_CHECK(ParseStrictJson(j.payload).ok());
  FUZZ_CHECK(j.cost >= 1 && j.cost <= 1'000'000'000);
  if (j.lease_ms) FUZZ_CHECK(*j.lease_ms >= 100 && *j.lease_ms <= kMaxJobMs);
  if (j.max_attempts) FUZZ_CHECK(*j.max_attempts >= 1 && *j.max_attempts <= 1000);
  if (j.deadline_in_ms) FUZZ_CHECK(!j.deadline && *j.deadline_in_ms >= 1);
  // Every time a submit accepts prints back within a millisecond (years 0000-9999).
  for (const std::optional<Micros>& t : {j.deadline, j.not_before}) {
    if (!t) continue;
    auto back = ParseRfc3339(FormatRfc3339(*t));
    FUZZ_CHECK(back && *back - *t < kMicrosPerMilli && *t - *back < kMicrosPerMilli);
  }
}

void CheckSubmit(const nlohmann::json& body) {
  auto r = ReadNewJob(body);
  if (SubmitRefused(r)) return;
  FUZZ_CHECK(!r.value().idempotency_key && r.value().body_hash.empty());
  CheckJob(r.value());
}

// What a batch accepts: 1..kMaxBatchJobs jobs, each as a submit, a key only with the
// hash of its item.
void CheckSubmitBatch(const nlohmann::json& body) {
  auto r = ReadBatchJobs(body);
  if (SubmitRefused(r)) return;
  FUZZ_CHECK(!r.value().empty() && r.value().size() <= kMaxBatchJobs);
  for (const NewJob& j : r.value()) {
    CheckJob(j);
    if (j.idempotency_key) {
      FUZZ_CHECK(IsValidName(NameKind::kIdempotencyKey, *j.idempotency_key));
      FUZZ_CHECK(j.body_hash.size() == 64);
    } else {
      FUZZ_CHECK(j.body_hash.empty());
    }
  }
}

// What ReadAckItems accepts: at most kMaxAcks items, no id twice, each with a lease id
// and only the fields of its outcome, within the bounds of complete and fail.
void CheckAckItems(const std::vector<AckItem>& acks) {
  FUZZ_CHECK(acks.size() <= kMaxAcks);
  for (size_t i = 0; i < acks.size(); ++i) {
    const AckItem& a = acks[i];
    FUZZ_CHECK(a.id.size() <= 200);
    FUZZ_CHECK(!a.lease_id.empty() && a.lease_id.size() <= 200);
    for (size_t k = 0; k < i; ++k) FUZZ_CHECK(acks[k].id != a.id);
    if (a.succeeded) {
      if (a.result) FUZZ_CHECK(ParseStrictJson(*a.result).ok());
      FUZZ_CHECK(a.fail.error.empty() && a.fail.retryable && !a.fail.retry_in_ms);
    } else {
      FUZZ_CHECK(!a.result);
      FUZZ_CHECK(a.fail.error.size() <= 4096);
      if (a.fail.retry_in_ms) {
        FUZZ_CHECK(*a.fail.retry_in_ms >= 0 && *a.fail.retry_in_ms <= kMaxWorkerMs);
      }
    }
  }
}

void CheckBatchAcks(const nlohmann::json& body) {
  auto r = ReadAcks(body);
  if (Refused(r)) return;
  FUZZ_CHECK(!r.value().empty());
  CheckAckItems(r.value());
}

void CheckLease(const nlohmann::json& body) {
  auto r = ReadLeaseRequest(body, kMaxWaitMs);
  if (Refused(r)) return;
  const LeaseAsk& a = r.value();
  FUZZ_CHECK(!a.lease.queues.empty() && a.lease.queues.size() <= kMaxLeaseQueues);
  for (const std::string& q : a.lease.queues) FUZZ_CHECK(IsValidName(NameKind::kQueue, q));
  FUZZ_CHECK(a.lease.max_jobs >= 1 && a.lease.max_jobs <= 100);
  FUZZ_CHECK(a.wait.count() >= 0 && a.wait.count() <= kMaxWaitMs);
  if (a.lease.lease_ms) FUZZ_CHECK(*a.lease.lease_ms >= 100 && *a.lease.lease_ms <= kMaxWorkerMs);
  if (!a.lease.worker_id.empty()) FUZZ_CHECK(IsValidName(NameKind::kWorkerId, a.lease.worker_id));
  if (a.acks) CheckAckItems(*a.acks);
}

void CheckAcks(const nlohmann::json& body) {
  if (auto r = ReadHeartbeat(body); !Refused(r)) {
    FUZZ_CHECK(!r.value().lease_id.empty());
    if (r.value().extend_ms) {
      FUZZ_CHECK(*r.value().extend_ms >= 100 && *r.value().extend_ms <= kMaxWorkerMs);
    }
  }
  if (auto r = ReadComplete(body); !Refused(r)) {
    FUZZ_CHECK(!r.value().lease_id.empty());
    if (r.value().result) FUZZ_CHECK(ParseStrictJson(*r.value().result).ok());
  }
  if (auto r = ReadFail(body); !Refused(r)) {
    FUZZ_CHECK(!r.value().lease_id.empty());
    FUZZ_CHECK(r.value().fail.error.size() <= 4096);
    if (r.value().fail.retry_in_ms) {
      FUZZ_CHECK(*r.value().fail.retry_in_ms >= 0 && *r.value().fail.retry_in_ms <= kMaxWorkerMs);
    }
  }
}

void CheckToken(const nlohmann::json& body) {
  auto r = ReadTokenRequest(body);
  if (Refused(r)) return;
  const TokenRecord& t = r.value();
  FUZZ_CHECK(!t.scopes.empty());
  if (std::find(t.scopes.begin(), t.scopes.end(), Scope::kSubmit) != t.scopes.end()) {
    FUZZ_CHECK(t.tenant.has_value());
  }
  if (t.tenant) FUZZ_CHECK(IsValidName(NameKind::kTenant, *t.tenant));
  if (t.queues) {
    for (const std::string& q : *t.queues) FUZZ_CHECK(IsValidName(NameKind::kQueue, q));
  }
}

void CheckPolicy(const nlohmann::json& body) {
  auto r = ReadPolicy(body);
  if (Refused(r)) return;
  for (const auto& [tenant, o] : r.value().tenants) {
    (void)o;
    FUZZ_CHECK(IsValidName(NameKind::kTenant, tenant));
  }
  fuzz::CheckPolicyRoundTrip(r.value(), [](const nlohmann::json& j) { return ReadPolicy(j); });
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string_view text = fuzz::AsText(data, size);
  FUZZ_CHECK(CheckJobIdInPath(text).ok() ||
             CheckJobIdInPath(text).error().code == ErrorCode::kNotFound);
  FUZZ_CHECK(CheckTokenIdInPath(text).ok() ||
             CheckTokenIdInPath(text).error().code == ErrorCode::kNotFound);
  // As a lease id of an ack (the SQLite driver reads its seq): a seq only from the one form.
  if (const std::optional<int64_t> seq = SeqOfLeaseId(text)) {
    FUZZ_CHECK(*seq >= 0 && text.size() == 44);
    FUZZ_CHECK(NewLeaseId(*seq).substr(0, 20) == text.substr(0, 20));
  }
  // As ParseJsonObject reads a body: strictly, and only an object.
  auto body = ParseStrictJson(text);
  if (!body.ok() || !body.value().is_object()) return 0;
  CheckSubmit(body.value());
  CheckSubmitBatch(body.value());
  CheckLease(body.value());
  CheckAcks(body.value());
  CheckBatchAcks(body.value());
  CheckToken(body.value());
  CheckPolicy(body.value());
  return 0;
}
